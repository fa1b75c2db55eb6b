//! Declarative informers: a YAML or JSON file that lists what to watch and
//! how to index it.
//!
//! The [layer docs](crate::declarative) say more.

mod clusters;
mod overlay;
mod validate;

use validate::{Validation, display_path, with_defaults};
mod yaml;

pub use clusters::ClustersConfig;

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cache::index::{IndexFn, check_index_name};
use crate::cache::projection::Projection;
use crate::cache::{CacheError, ChangePredicate, Condition};
use crate::declarative::shard_group::ShardGroupConfig;
use crate::factory::pattern::ResourcePattern;
use crate::informer::options::InformerOptions;
use crate::vocabulary::duration::parse_duration;
use crate::vocabulary::resource::ResourceName;
use crate::vocabulary::selector::{Selector, validate_field_selector};
use crate::vocabulary::shard::StaticShard;

use crate::declarative::DeclarativeError;
pub use overlay::Overlay;
pub use yaml::Position;

/// The `apiVersion` of config files this version of the library reads.
pub const API_VERSION: &str = "kube-dynamic-informer.io/v1alpha1";

/// The `kind` of a config file.
pub const KIND: &str = "InformerSet";

/// The most indexes an informer of a config file may declare. Each index
/// is evaluated on every change of every object of its informer, so a file
/// with thousands is a mistake or an attack, not a configuration: past
/// this many, indexes are counted while the file is read, never built.
pub const MAX_INDEXES: usize = 100;

/// The most expressions an entry's `changes` may list: each is compared on
/// every update of every object its handlers see.
pub const MAX_CHANGES: usize = 20;

/// A config file: the informers to run and the indexes to keep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(
    title = "InformerSet",
    description = "Informers and indexes for kube-dynamic-informer."
)]
pub struct InformerSet {
    /// Always `kube-dynamic-informer.io/v1alpha1`.
    #[schemars(schema_with = "api_version_schema")]
    pub api_version: String,
    /// Always `InformerSet`.
    #[schemars(schema_with = "kind_schema")]
    pub kind: String,
    /// Options every informer inherits unless it sets its own. They are
    /// applied when the file is read: each entry of `informers` then holds
    /// its complete options. A [`ResourceSet`](crate::declarative::ResourceSet) makes them the factory's
    /// options too, so that a namespace restriction here is one that
    /// cluster-scoped resources ignore.
    #[serde(default)]
    pub defaults: InformerOptions,
    /// The informers named one by one. A file holds at least one informer
    /// or pattern.
    #[serde(default)]
    pub informers: Vec<InformerSpec>,
    /// Rules that designate resources by group, category or origin: each
    /// resource a pattern selects gets an informer with the pattern's
    /// options and indexes, and the set follows discovery (see
    /// [`crate::declarative`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<PatternSpec>,
    /// The clusters to watch the informers in (see [`ClustersConfig`]);
    /// when empty, the one cluster of the kubeconfig.
    #[serde(default, skip_serializing_if = "ClustersConfig::is_empty")]
    pub clusters: ClustersConfig,
    /// Join this shard group: every informer without a static `shard`
    /// keeps only the slots this member holds (see [`crate::vocabulary`]); one
    /// with `shard: 0/1` keeps everything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_group: Option<ShardGroupSpec>,
}

/// One pattern of the file: the resources it selects and the options and
/// indexes each of their informers gets.
///
/// ```yaml
/// patterns:
///   - name: example-crds
///     match:
///       groups: ["*.example.com"]
///       customResources: true
///       exclude: [gadgets.example.com]
///     namespaces: [shop]       # for namespaced resources; cluster-scoped ones ignore it
///     indexes:
///       color: spec.color      # objects without spec.color are in no color entry
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
// Unknown fields are refused by the schema (`additionalProperties`), which
// the loaders check first: serde cannot refuse them through the flattened
// options, which are made of flattened parts.
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct PatternSpec {
    /// A name for this pattern, unique among the file's informers and
    /// patterns.
    #[schemars(length(min = 1))]
    pub name: String,
    /// Which resources: see [`ResourcePattern`].
    #[serde(rename = "match")]
    pub pattern: ResourcePattern,
    /// Options of each informer (over `defaults`). A namespace restriction
    /// applies to the namespaced resources selected; cluster-scoped ones
    /// are watched whole.
    #[serde(flatten)]
    pub options: InformerOptions,
    /// Named indexes, as for an informer; an expression that gives nothing
    /// for a resource's objects leaves them out of that index.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("maxProperties" = MAX_INDEXES))]
    pub indexes: BTreeMap<String, String>,
    /// Which objects the handlers of this entry want (what `kdi watch`
    /// prints, and [`SetMember::handler_options`](crate::declarative::SetMember::handler_options)
    /// gives a program): a JMESPath condition, true or false (see
    /// [`Condition`](crate::cache::Condition)), e.g.
    /// `metadata.labels.tier == 'web'`. An object that starts or stops
    /// meeting it arrives as an add or a delete. It filters events, not
    /// the cache: the informer still caches every object its options
    /// select. Checked when the file is loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    /// Which updates the handlers of this entry want: those that change the
    /// value of one of these JMESPath expressions (see
    /// [`ChangePredicate`](crate::cache::ChangePredicate)), e.g.
    /// `[spec, metadata.labels]`, `[metadata.generation]`. Adds, deletes
    /// and resyncs always pass. Checked when the file is loaded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("maxItems" = MAX_CHANGES))]
    pub changes: Vec<String>,
}

impl PatternSpec {
    /// A pattern entry with default options and no indexes.
    #[must_use]
    pub fn new(name: impl Into<String>, pattern: ResourcePattern) -> Self {
        Self {
            name: name.into(),
            pattern,
            options: InformerOptions::default(),
            indexes: BTreeMap::new(),
            filter: None,
            changes: Vec::new(),
        }
    }
}

/// A shard group to join, in a config file.
///
/// ```yaml
/// shardGroup:
///   name: inventory
///   namespace: monitoring
///   # identity: defaults to $POD_NAME, then $HOSTNAME
///   leaseDuration: 15s
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ShardGroupSpec {
    /// The group's name (a DNS label of at most 40 characters).
    pub name: String,
    /// The namespace of the group's Leases.
    pub namespace: String,
    /// This member's identity, unique in the group; `$POD_NAME`, else
    /// `$HOSTNAME`, when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    /// How long a Lease stays valid without renewal (default `15s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::vocabulary::duration::go::schema")]
    pub lease_duration: Option<String>,
    /// Slots the hash space is cut into, the same for every member
    /// (default 32).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1024))]
    pub slots: Option<u32>,
}

impl ShardGroupSpec {
    /// The group configuration, with the identity from the environment when
    /// the file names none.
    ///
    /// # Errors
    /// No identity anywhere, a bad duration, or an invalid field.
    pub fn config(&self) -> Result<ShardGroupConfig, String> {
        let identity = self
            .identity
            .clone()
            .or_else(|| std::env::var("POD_NAME").ok())
            .or_else(|| std::env::var("HOSTNAME").ok())
            .filter(|i| !i.trim().is_empty())
            .ok_or_else(|| {
                "shardGroup: no identity: set `identity`, or POD_NAME or HOSTNAME in the environment".to_owned()
            })?;
        let mut config = ShardGroupConfig::new(&self.name, &self.namespace, identity);
        if let Some(d) = &self.lease_duration {
            config.lease_duration =
                parse_duration(d).map_err(|e| format!("shardGroup leaseDuration: {e}"))?;
        }
        config.slots = self.slots.unwrap_or(config.slots);
        config.validate().map_err(|e| e.to_string())?;
        Ok(config)
    }
}

/// One informer of the file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
// Unknown fields are refused by the schema (`additionalProperties`), which
// the loaders check first: serde cannot refuse them through the flattened
// options, which are made of flattened parts.
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct InformerSpec {
    /// A name for this informer, unique in the file; defaults to `resource`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The resource, in any form the factory accepts: `deployments.v1.apps`,
    /// `deployments.apps`, `apps/v1/deployments`, `pods`, a kind
    /// (`Deployment`) or a short name (`deploy`).
    #[schemars(length(min = 1))]
    pub resource: String,
    /// Options of this informer (over `defaults`).
    #[serde(flatten)]
    pub options: InformerOptions,
    /// Named indexes: index name → JMESPath expression, at most 100
    /// ([`MAX_INDEXES`], since each is evaluated on every change of every
    /// object), checked when the file is loaded; each object is filed under
    /// every string, number and boolean the expression gives (an array gives
    /// one value per element; null, a missing field or an empty array give
    /// none), with one spelling per number: integral numbers as integers (3,
    /// 3.0 and 3e0 give "3", 1e3 gives "1000", -0 gives "0"), others in
    /// shortest round-trip form (1.5, 1e-7).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("maxProperties" = MAX_INDEXES))]
    pub indexes: BTreeMap<String, String>,
    /// Which objects the handlers of this entry want (what `kdi watch`
    /// prints, and [`SetMember::handler_options`](crate::declarative::SetMember::handler_options)
    /// gives a program): a JMESPath condition, true or false (see
    /// [`Condition`](crate::cache::Condition)), e.g.
    /// `metadata.labels.tier == 'web'`. An object that starts or stops
    /// meeting it arrives as an add or a delete. It filters events, not
    /// the cache: the informer still caches every object its options
    /// select. Checked when the file is loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    /// Which updates the handlers of this entry want: those that change the
    /// value of one of these JMESPath expressions (see
    /// [`ChangePredicate`](crate::cache::ChangePredicate)), e.g.
    /// `[spec, metadata.labels]`, `[metadata.generation]`. Adds, deletes
    /// and resyncs always pass. Checked when the file is loaded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("maxItems" = MAX_CHANGES))]
    pub changes: Vec<String>,
}

impl InformerSpec {
    /// An entry for `resource` with default options and no indexes.
    #[must_use]
    pub fn new(resource: impl Into<String>) -> Self {
        Self {
            name: None,
            resource: resource.into(),
            options: InformerOptions::default(),
            indexes: BTreeMap::new(),
            filter: None,
            changes: Vec::new(),
        }
    }

    /// The informer's name: `name`, or else `resource`.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.resource)
    }
}

/// An entry's indexes, `filter` and `changes`, compiled: the one place
/// they become index functions, a condition and a change predicate, when a
/// file is loaded (to locate their mistakes) and when a resource set plans.
#[derive(Clone, Default)]
pub(crate) struct Compiled {
    pub(crate) indexes: BTreeMap<String, IndexFn>,
    pub(crate) filter: Option<Condition>,
    pub(crate) changes: Option<ChangePredicate>,
}

impl Compiled {
    /// Compiles the expressions of the entry at `at` (a JSON pointer): its
    /// indexes by name, its filter, and its changes by their place in the
    /// list; or says every one refused, each at its JSON pointer.
    pub(crate) fn entry<'a>(
        at: &str,
        indexes: impl IntoIterator<Item = (&'a String, &'a str)>,
        filter: Option<&str>,
        changes: impl IntoIterator<Item = (usize, &'a str)>,
    ) -> Result<Self, Vec<(String, CacheError)>> {
        let mut compiled = Self::default();
        let mut refused = Vec::new();
        for (name, expression) in indexes {
            match IndexFn::jmespath(name, expression) {
                Ok(func) => drop(compiled.indexes.insert(name.clone(), func)),
                Err(e) => refused.push((format!("{at}/indexes/{}", yaml::escape(name)), e)),
            }
        }
        match filter.map(Condition::new) {
            Some(Err(e)) => refused.push((format!("{at}/filter"), e)),
            filter => compiled.filter = filter.and_then(Result::ok),
        }
        for (i, expression) in changes {
            match ChangePredicate::new(expression) {
                Ok(one) => {
                    compiled.changes = Some(match compiled.changes.take() {
                        Some(all) => all.or(one),
                        None => one,
                    });
                }
                Err(e) => refused.push((format!("{at}/changes/{i}"), e)),
            }
        }
        if refused.is_empty() {
            Ok(compiled)
        } else {
            Err(refused)
        }
    }
}

fn api_version_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "string", "const": API_VERSION })
}

fn kind_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "string", "const": KIND })
}

/// The JSON Schema (draft 2020-12) of config files, as committed in
/// `schemas/informer-set.schema.json`.
pub fn json_schema() -> serde_json::Value {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<InformerSet>();
    let mut value = serde_json::to_value(schema).unwrap_or_default();
    if let Some(obj) = value.as_object_mut() {
        let id = "https://kube-dynamic-informer.io/schemas/informer-set.schema.json";
        obj.insert("$id".into(), id.into());
    }
    value
}

/// One problem in a config file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigProblem {
    /// The file (or `<input>` for text).
    pub file: PathBuf,
    /// Where the offending value (or key) starts; `None` for a problem with
    /// the file as a whole (it cannot be read, or it is empty).
    pub position: Option<Position>,
    /// Where in the document, e.g. `informers[1].labelSelector`.
    pub path: String,
    /// What is wrong, naming the offending value.
    pub message: String,
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.file.display())?;
        if let Some(Position { line, column }) = self.position {
            write!(f, "{line}:{column}:")?;
        }
        f.write_str(" ")?;
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        write!(f, "{}", self.message)
    }
}

impl InformerSet {
    /// Reads and validates a config file.
    ///
    /// # Errors
    /// Every problem in the file (or the I/O error, as one problem).
    pub fn load_file(path: impl AsRef<Path>) -> Result<InformerSet, DeclarativeError> {
        let path = path.as_ref();
        Self::load_str(&read_text(path)?, path)
    }

    /// Validates config text; `file` names it in errors.
    ///
    /// ```
    /// use kube_dynamic_informer::declarative::InformerSet;
    ///
    /// let text = r#"
    /// apiVersion: kube-dynamic-informer.io/v1alpha1
    /// kind: InformerSet
    /// informers:
    ///   - resource: pods
    ///     labelSelector: "app in (web"
    ///     indexes: { node: "spec.nodeName" }
    ///   - resource: pods
    ///     colour: blue
    /// "#;
    /// let errors = InformerSet::load_str(text, "set.yaml").unwrap_err();
    /// let report = errors.to_string();
    /// assert!(report.contains("set.yaml:6:20"), "{report}");  // the bad selector
    /// assert!(report.contains("colour"), "{report}");          // the unknown field
    /// assert!(report.contains("duplicate informer name"), "{report}");
    /// ```
    ///
    /// # Errors
    /// Every problem in the text.
    pub fn load_str(text: &str, file: impl AsRef<Path>) -> Result<InformerSet, DeclarativeError> {
        let file = file.as_ref().to_path_buf();
        let doc = yaml::parse(text, &entry_limit).map_err(|e| DeclarativeError::Config {
            errors: vec![ConfigProblem {
                file: file.clone(),
                position: Some(e.position),
                path: String::new(),
                message: format!("not valid YAML or JSON: {}", e.message),
            }],
            reason: "failed",
        })?;
        // Nothing but whitespace and comments.
        if doc.value.is_null() {
            return Err(DeclarativeError::whole_file(
                &file,
                format!(
                    "the file is empty; a config file holds `apiVersion: {API_VERSION}`, `kind: {KIND}` and `informers`"
                ),
            ));
        }
        let mut v = Validation {
            file,
            doc: &doc,
            errors: Vec::new(),
        };
        v.reader_problems();
        v.schema();
        v.semantics();
        if !v.errors.is_empty() {
            let mut errors = v.errors;
            errors.sort_by(|a, b| a.position.cmp(&b.position).then(a.message.cmp(&b.message)));
            errors.dedup();
            return Err(DeclarativeError::Config {
                errors,
                reason: "failed",
            });
        }
        serde_json::from_value(with_defaults(doc.value.clone())).map_err(|e| {
            DeclarativeError::whole_file(&v.file, format!("does not match the config types: {e}"))
        })
    }
}

/// The text of a config file, or why it cannot be read.
pub(crate) fn read_text(path: &Path) -> Result<String, DeclarativeError> {
    std::fs::read_to_string(path)
        .map_err(|e| DeclarativeError::whole_file(path, format!("cannot read the file: {e}")))
}

/// The mappings of a config file with a limit on their entries: the
/// indexes of an informer or a pattern. The reader keeps the first
/// [`MAX_INDEXES`] and only counts the rest, so that a file with hundreds of
/// thousands is refused at the cost of scanning it, without building them.
fn entry_limit(pointer: &str) -> Option<usize> {
    let mut tokens = pointer.split('/').skip(1);
    match (tokens.next(), tokens.next(), tokens.next(), tokens.next()) {
        (Some("informers" | "patterns"), Some(i), Some("indexes"), None)
            if !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()) =>
        {
            Some(MAX_INDEXES)
        }
        _ => None,
    }
}

/// Where the value at `pointer` (a JSON pointer such as
/// `/informers/1/resource`) starts in config `text`, or its nearest
/// ancestor present; `None` when `text` does not parse. For locating
/// problems found after a file was loaded, such as a resource the cluster
/// does not serve.
///
/// ```
/// use kube_dynamic_informer::declarative::{Position, position_of};
/// let text = "informers:\n  - resource: pods\n  - resource: nope\n";
/// assert_eq!(position_of(text, "/informers/1/resource"), Some(Position { line: 3, column: 15 }));
/// ```
#[must_use]
pub fn position_of(text: &str, pointer: &str) -> Option<Position> {
    yaml::parse(text, &entry_limit)
        .ok()
        .map(|doc| doc.position(pointer))
}

/// `/informers/1/labelSelector` → `informers[1].labelSelector`, as
/// [`ConfigProblem::path`] shows a place.
#[must_use]
pub fn pointer_path(pointer: &str) -> String {
    display_path(pointer)
}

#[cfg(test)]
mod tests;
