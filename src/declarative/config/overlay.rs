//! Settings laid over a whole [`InformerSet`], as a command line lays its
//! flags over a config file, and sets made from resource names alone.

use std::collections::BTreeMap;

use super::{
    API_VERSION, InformerSet, InformerSpec, KIND, MAX_INDEXES, PatternSpec, ShardGroupSpec,
};
use crate::cache::index::{IndexFn, check_index_name};
use crate::cache::projection::Projection;
use crate::cache::store::Storage;
use crate::declarative::DeclarativeError;
use crate::factory::pattern::{ResourcePattern, ScopeFilter};
use crate::informer::options::InformerOptions;
use crate::informer::snapshot::SnapshotOptions;
use crate::vocabulary::scope::Namespaces;
use crate::vocabulary::shard::{ShardKey, StaticShard};

/// Settings laid over a whole [`InformerSet`]: each one given replaces the
/// value of the set's defaults, of every informer and of every pattern.
/// `kdi`'s flags (`-n`, `-l`, `--storage`, `--keep`, `--shard`, ...) are
/// one; any program that lets its users adjust a config file can use it.
///
/// ```
/// use kube_dynamic_informer::declarative::{InformerSet, Overlay};
/// use kube_dynamic_informer::vocabulary::Namespaces;
///
/// let shop = Namespaces::only(["shop".to_owned()]);
/// let mut set = InformerSet::from_names(&["pods".into()], Default::default(), &shop, &[], None)?;
/// set.overlay(&Overlay {
///     label_selector: Some("app=web".into()),
///     ..Overlay::default()
/// })?;
/// assert_eq!(set.informers[0].options.watch.label_selector.as_deref(), Some("app=web"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overlay {
    /// Only these namespaces, for the whole set: laid over the defaults
    /// (which cluster-scoped resources ignore, as a factory's) and every
    /// entry.
    pub namespaces: Option<Namespaces>,
    /// This label selector.
    pub label_selector: Option<String>,
    /// This field selector.
    pub field_selector: Option<String>,
    /// Cache only metadata (when true).
    pub metadata_only: bool,
    /// This storage.
    pub storage: Option<Storage>,
    /// This projection.
    pub projection: Option<Projection>,
    /// Mark the objects sensitive (when true).
    pub sensitive: bool,
    /// This static shard.
    pub shard: Option<StaticShard>,
    /// This shard key.
    pub shard_key: Option<ShardKey>,
    /// This shard group.
    pub shard_group: Option<ShardGroupSpec>,
    /// These snapshots (warm restarts).
    pub snapshot: Option<SnapshotOptions>,
}

impl Overlay {
    /// Lays the overlay over one informer's options.
    pub fn apply(&self, o: &mut InformerOptions) {
        if let Some(namespaces) = &self.namespaces {
            o.watch.namespaces = namespaces.clone();
        }
        o.watch.label_selector = self
            .label_selector
            .clone()
            .or(o.watch.label_selector.take());
        o.watch.field_selector = self
            .field_selector
            .clone()
            .or(o.watch.field_selector.take());
        o.watch.metadata_only |= self.metadata_only;
        o.cache.storage = self.storage.unwrap_or(o.cache.storage);
        o.cache.projection = self.projection.clone().or(o.cache.projection.take());
        o.sensitive |= self.sensitive;
        o.cache.shard = self.shard.or(o.cache.shard);
        o.cache.shard_key = self.shard_key.unwrap_or(o.cache.shard_key);
        o.snapshot = self.snapshot.clone().or(o.snapshot.take());
    }
}

impl InformerSet {
    /// An empty set (no informer, no pattern) whose entries inherit
    /// `defaults`.
    #[must_use]
    pub fn new(defaults: InformerOptions) -> Self {
        InformerSet {
            api_version: API_VERSION.into(),
            kind: KIND.into(),
            defaults,
            informers: Vec::new(),
            patterns: Vec::new(),
            shard_group: None,
            clusters: Default::default(),
        }
    }

    /// A set of the resources and patterns `names` designate, each with
    /// the indexes `indexes` (index name → JMESPath expression) and the
    /// namespaces `namespaces`. A name in a pattern form
    /// (`'*.example.com'`, `category:qa`, `custom:GROUP-GLOB`,
    /// `group:apps`) makes a pattern, with `exclude` and `scope` applied;
    /// any other a named informer.
    ///
    /// The namespaces are asked for the resources named: on a
    /// cluster-scoped one they are an error, as in a config file's entry.
    /// A pattern's cluster-scoped resources ignore them, as they ignore a
    /// file's `defaults`.
    ///
    /// # Errors
    /// No names, an expression that does not compile, an index named as
    /// the built-in one ([`check_index_name`]), more than [`MAX_INDEXES`]
    /// indexes, a malformed pattern, or `exclude`/`scope` without a
    /// pattern.
    ///
    /// ```
    /// use kube_dynamic_informer::declarative::InformerSet;
    /// use kube_dynamic_informer::vocabulary::Namespaces;
    ///
    /// let indexes = [("namespace".to_owned(), "metadata.name".to_owned())].into();
    /// let err = InformerSet::from_names(&["pods".into()], indexes, &Namespaces::All, &[], None)
    ///     .unwrap_err();
    /// assert_eq!(err.to_string(), r#"index name "namespace" is reserved: every informer has it built in"#);
    /// ```
    pub fn from_names(
        names: &[String],
        indexes: BTreeMap<String, String>,
        namespaces: &Namespaces,
        exclude: &[String],
        scope: Option<ScopeFilter>,
    ) -> Result<Self, DeclarativeError> {
        if names.is_empty() {
            return Err(DeclarativeError::NothingNamed);
        }
        for (name, expr) in &indexes {
            check_index_name(name)?;
            IndexFn::jmespath(name, expr)?;
        }
        if indexes.len() > MAX_INDEXES {
            return Err(DeclarativeError::TooManyIndexes {
                count: indexes.len(),
            });
        }
        let mut set = InformerSet::new(InformerOptions::default());
        let options = InformerOptions::default().namespaces(namespaces.clone());
        for name in names {
            let pattern_error = |source| DeclarativeError::Pattern {
                name: name.clone(),
                source: Box::new(source),
            };
            match ResourcePattern::parse(name).map_err(pattern_error)? {
                Some(mut pattern) => {
                    pattern.exclude.extend(exclude.iter().cloned());
                    pattern.scope = scope;
                    pattern.check().map_err(pattern_error)?;
                    set.patterns.push(PatternSpec {
                        options: options.clone(),
                        indexes: indexes.clone(),
                        ..PatternSpec::new(name.clone(), pattern)
                    });
                }
                None => set.informers.push(InformerSpec {
                    options: options.clone(),
                    indexes: indexes.clone(),
                    ..InformerSpec::new(name.clone())
                }),
            }
        }
        if set.patterns.is_empty() && (!exclude.is_empty() || scope.is_some()) {
            return Err(DeclarativeError::FilterWithoutPattern);
        }
        Ok(set)
    }

    /// Keeps only the informers named `names` (by name or resource) and the
    /// patterns named so.
    ///
    /// # Errors
    /// [`DeclarativeError::NoEntryNamed`] when nothing is left.
    pub fn select(&mut self, names: &[String]) -> Result<(), DeclarativeError> {
        self.informers
            .retain(|i| names.iter().any(|r| r == i.name() || *r == i.resource));
        self.patterns.retain(|p| names.contains(&p.name));
        if self.informers.is_empty() && self.patterns.is_empty() {
            return Err(DeclarativeError::NoEntryNamed {
                names: names.join(" or "),
            });
        }
        Ok(())
    }

    /// Lays `overlay` over the defaults, every informer and every pattern,
    /// and its shard group over the set's.
    ///
    /// # Errors
    /// [`DeclarativeError::ShardGroup`] when the resulting shard group is invalid.
    pub fn overlay(&mut self, overlay: &Overlay) -> Result<(), DeclarativeError> {
        overlay.apply(&mut self.defaults);
        for i in &mut self.informers {
            overlay.apply(&mut i.options);
        }
        for p in &mut self.patterns {
            overlay.apply(&mut p.options);
        }
        if let Some(group) = &overlay.shard_group {
            self.shard_group = Some(group.clone());
        }
        if let Some(group) = &self.shard_group {
            group.config().map_err(DeclarativeError::ShardGroup)?;
        }
        Ok(())
    }
}
