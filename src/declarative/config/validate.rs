//! Checking a config document: what the reader found, the JSON Schema,
//! then what a schema cannot say (selectors, expressions, names), every
//! problem located.

use super::*;
use crate::vocabulary::selector::is_dns_label;

/// The document with each informer's unset options taken from `defaults`:
/// keys are merged, so every option is inherited the same way.
pub(super) fn with_defaults(mut doc: serde_json::Value) -> serde_json::Value {
    let Some(defaults) = doc.get("defaults").and_then(|d| d.as_object()).cloned() else {
        return doc;
    };
    for list in ["informers", "patterns"] {
        if let Some(entries) = doc.get_mut(list).and_then(|i| i.as_array_mut()) {
            for entry in entries.iter_mut().filter_map(|i| i.as_object_mut()) {
                for (key, value) in &defaults {
                    entry.entry(key.clone()).or_insert_with(|| value.clone());
                }
            }
        }
    }
    doc
}

pub(super) struct Validation<'a> {
    pub(super) file: PathBuf,
    pub(super) doc: &'a yaml::Spanned,
    pub(super) errors: Vec<ConfigProblem>,
}

impl Validation<'_> {
    pub(super) fn error(&mut self, pointer: &str, message: String) {
        self.push(pointer, self.doc.position(pointer), message);
    }

    pub(super) fn key_error(&mut self, pointer: &str, message: String) {
        let position = self.doc.keys.get(pointer).copied();
        self.push(
            pointer,
            position.unwrap_or_else(|| self.doc.position(pointer)),
            message,
        );
    }

    fn push(&mut self, pointer: &str, position: Position, message: String) {
        self.errors.push(ConfigProblem {
            file: self.file.clone(),
            position: Some(position),
            path: display_path(pointer),
            message,
        });
    }

    /// What the reader found: duplicate and complex keys, and mappings
    /// past their limit (said as the schema says `maxProperties`).
    pub(super) fn reader_problems(&mut self) {
        let doc = self.doc;
        for (pointer, position, message) in &doc.problems {
            self.push(pointer, *position, message.clone());
        }
        for over in &doc.oversized {
            let message = over_limit(&object_of(over.entries), over.limit);
            self.push(&over.pointer, over.position, message);
        }
    }

    /// Structure and types, against the JSON Schema.
    pub(super) fn schema(&mut self) {
        let schema = json_schema();
        let validator = match jsonschema::draft202012::new(&schema) {
            Ok(v) => v,
            Err(e) => {
                self.error(
                    "",
                    format!("internal error: the config schema does not compile: {e}"),
                );
                return;
            }
        };
        let doc = self.doc;
        let mut errors = Vec::new();
        for e in validator.iter_errors(&doc.value) {
            flatten_nullable(e, &mut errors);
        }
        for e in &errors {
            let pointer = e.instance_path().to_string();
            let message = schema_message(e);
            // A malformed duration is said by the semantic check, in words
            // rather than the schema's regular expression.
            if message.contains(DURATION_PATTERN_MARK) {
                continue;
            }
            match e.kind() {
                jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected }
                | jsonschema::error::ValidationErrorKind::UnevaluatedProperties { unexpected }
                    if !unexpected.is_empty() =>
                {
                    for key in unexpected {
                        let child = format!("{pointer}/{}", yaml::escape(key));
                        self.key_error(&child, format!("unknown field {key:?}"));
                    }
                }
                _ => self.error(&pointer, message),
            }
        }
    }

    /// What the schema cannot say: selectors, expressions, durations,
    /// projection paths, resource names, uniqueness.
    pub(super) fn semantics(&mut self) {
        let value = &self.doc.value;
        if let Some(group) = value.get("shardGroup") {
            self.shard_group(group);
        }
        if let Some(defaults) = value.get("defaults") {
            self.options("/defaults", defaults);
        }
        let list = |key| {
            value
                .get(key)
                .and_then(|l| l.as_array())
                .map_or(&[][..], Vec::as_slice)
        };
        let (informers, patterns) = (list("informers"), list("patterns"));
        if informers.is_empty() && patterns.is_empty() && value.is_object() {
            let at = value.get("informers").map_or("", |_| "/informers");
            self.error(
                at,
                "no informers and no patterns: declare at least one of them".to_string(),
            );
        }
        let mut names = HashSet::new();
        for (i, informer) in informers.iter().enumerate() {
            let at = format!("/informers/{i}");
            self.options(&at, informer);
            if let Some(resource) = informer.get("resource").and_then(|r| r.as_str()) {
                // An empty name is the schema's to report.
                if !resource.is_empty()
                    && let Err(e) = ResourceName::parse(resource)
                {
                    self.error(&format!("{at}/resource"), e.to_string());
                }
                let name = informer.get("name");
                let name_at = format!("{at}/{}", if name.is_some() { "name" } else { "resource" });
                let name = name.and_then(|n| n.as_str()).unwrap_or(resource);
                self.unique_name(&mut names, name.to_string(), &name_at);
            }
            self.expressions(&at, informer);
        }
        for (i, entry) in patterns.iter().enumerate() {
            let at = format!("/patterns/{i}");
            self.options(&at, entry);
            if let Some(name) = entry.get("name").and_then(|n| n.as_str()) {
                self.unique_name(&mut names, name.to_string(), &format!("{at}/name"));
            }
            // Unknown fields and wrong types are the schema's to report;
            // the rest of the pattern is still checked.
            if let Some(Ok(pattern)) = entry.get("match").and_then(|m| m.as_object()).map(|m| {
                let known: serde_json::Map<String, serde_json::Value> = m
                    .iter()
                    .filter(|(k, _)| PATTERN_FIELDS.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                serde_json::from_value::<ResourcePattern>(known.into())
            }) {
                for (field, index, problem) in pattern.problems() {
                    let mut pointer = format!("{at}/match");
                    if !field.is_empty() {
                        pointer = format!("{pointer}/{field}");
                    }
                    if let Some(index) = index {
                        pointer = format!("{pointer}/{index}");
                    }
                    self.error(&pointer, problem.to_string());
                }
            }
            self.expressions(&at, entry);
        }
    }

    /// An entry's index names, and its indexes', `filter`'s and `changes`'
    /// expressions compiled as a resource set compiles them, each refusal
    /// located. Past their limits (which the schema reports) they are not
    /// compiled: there may be hundreds of thousands; another type is the
    /// schema's to report.
    pub(super) fn expressions(&mut self, at: &str, entry: &serde_json::Value) {
        let indexes = entry
            .get("indexes")
            .and_then(|x| x.as_object())
            .filter(|x| x.len() <= MAX_INDEXES);
        for name in indexes.into_iter().flat_map(|x| x.keys()) {
            if let Err(e) = check_index_name(name) {
                let at = format!("{at}/indexes/{}", yaml::escape(name));
                self.key_error(&at, e.to_string());
            }
        }
        let changes = entry
            .get("changes")
            .and_then(|c| c.as_array())
            .filter(|c| c.len() <= MAX_CHANGES);
        let compiled = Compiled::entry(
            at,
            indexes
                .into_iter()
                .flatten()
                .filter_map(|(n, e)| Some((n, e.as_str()?))),
            entry.get("filter").and_then(|f| f.as_str()),
            changes
                .into_iter()
                .flatten()
                .enumerate()
                .filter_map(|(i, e)| Some((i, e.as_str()?))),
        );
        for (pointer, e) in compiled.err().into_iter().flatten() {
            self.error(&pointer, e.to_string());
        }
    }

    /// The shard group's names and lease duration.
    fn shard_group(&mut self, group: &serde_json::Value) {
        self.check("/shardGroup", group, "name", |name| {
            ShardGroupConfig::new(name, "namespace", "identity").validate()
        });
        self.check("/shardGroup", group, "namespace", |namespace| {
            ShardGroupConfig::new("group", namespace, "identity").validate()
        });
        self.check("/shardGroup", group, "leaseDuration", parse_duration);
    }

    /// Reports what `parse` says against the string at `value[field]`, if
    /// there is one (another type is the schema's to report).
    fn check<T, E: fmt::Display>(
        &mut self,
        at: &str,
        value: &serde_json::Value,
        field: &str,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) {
        if let Some(s) = value.get(field).and_then(|s| s.as_str())
            && let Err(e) = parse(s)
        {
            self.error(&format!("{at}/{field}"), e.to_string());
        }
    }

    pub(super) fn unique_name(&mut self, names: &mut HashSet<String>, name: String, at: &str) {
        if !names.insert(name.clone()) {
            self.error(
                at,
                format!("duplicate informer name {name:?}; give one of them a distinct `name`"),
            );
        }
    }

    pub(super) fn options(&mut self, at: &str, value: &serde_json::Value) {
        self.check(at, value, "labelSelector", Selector::parse);
        self.check(at, value, "fieldSelector", validate_field_selector);
        self.check(at, value, "shard", str::parse::<StaticShard>);
        for field in ["resync", "minWatchTimeout", "staleAfter"] {
            self.check(at, value, field, parse_duration);
        }
        if let Some(backoff) = value.get("backoff") {
            for field in ["initial", "max", "resetAfter"] {
                self.check(&format!("{at}/backoff"), backoff, field, parse_duration);
            }
        }
        if let Some(snapshot) = value.get("snapshot").filter(|s| s.is_object()) {
            let at = format!("{at}/snapshot");
            self.check(&at, snapshot, "interval", parse_duration);
            if snapshot
                .get("dir")
                .and_then(|d| d.as_str())
                .is_none_or(|d| d.trim().is_empty())
            {
                self.error(
                    &at,
                    "a snapshot needs `dir`: the directory of the snapshot files".to_owned(),
                );
            }
        }
        if let Some(paths) = value.get("projection").and_then(|p| p.as_array()) {
            for (i, path) in paths.iter().enumerate() {
                // An empty path or another type is the schema's to report.
                if let Some(path) = path.as_str().filter(|p| !p.is_empty())
                    && let Err(e) = Projection::new([path])
                {
                    self.error(&format!("{at}/projection/{i}"), e.to_string());
                }
            }
        }
        if let Some(namespaces) = value.get("namespaces").and_then(|n| n.as_array()) {
            let mut seen = HashSet::new();
            for (i, ns) in namespaces.iter().enumerate() {
                let Some(ns) = ns.as_str() else { continue };
                let ns_at = format!("{at}/namespaces/{i}");
                if !is_dns_label(ns, 63) {
                    self.error(
                        &ns_at,
                        format!("namespace {ns:?} is not a valid name (lowercase letters, digits and '-', at most 63, starting and ending with a letter or digit)"),
                    );
                }
                if !seen.insert(ns) {
                    self.error(&ns_at, format!("namespace {ns:?} is listed twice"));
                }
            }
        }
    }
}

/// A schema error as a person can act on it: the allowed values of an
/// enumeration rather than "not valid under any of the schemas listed in
/// the 'oneOf' keyword", and a large offending value described by its size
/// rather than quoted whole.
/// An optional value (`anyOf: [{...}, {type: null}]`) that is not null
/// fails its null branch by type: its errors are the other branch's, said
/// where they are rather than as one "not valid under any of the schemas".
fn flatten_nullable<'a>(
    e: jsonschema::ValidationError<'a>,
    out: &mut Vec<jsonschema::ValidationError<'a>>,
) {
    use jsonschema::error::ValidationErrorKind as Kind;
    fn typed(branch: &[jsonschema::ValidationError<'_>]) -> bool {
        !branch.is_empty() && branch.iter().all(|b| matches!(b.kind(), Kind::Type { .. }))
    }
    let nullable = matches!(e.kind(), Kind::AnyOf { context }
        if context.iter().filter(|b| typed(b)).count() == 1
            && context.iter().filter(|b| !typed(b)).count() == 1);
    if !nullable {
        out.push(e);
        return;
    }
    if let Kind::AnyOf { context } = e.into_parts().kind {
        for branch in context.into_iter().filter(|b| !typed(b)) {
            for inner in branch {
                flatten_nullable(inner, out);
            }
        }
    }
}

/// A piece of the schema's pattern for durations, by which its mismatches
/// are recognised.
const DURATION_PATTERN_MARK: &str = "(ns|us|µs|μs|ms|s|m|h)";

pub(super) fn schema_message(e: &jsonschema::ValidationError<'_>) -> String {
    use jsonschema::error::ValidationErrorKind as Kind;
    let allowed: Option<Vec<String>> = match e.kind() {
        Kind::OneOfNotValid { context } | Kind::AnyOf { context } => context
            .iter()
            .map(|branch| {
                branch.iter().find_map(|b| match b.kind() {
                    Kind::Constant { expected_value } => Some(expected_value.to_string()),
                    _ => None,
                })
            })
            .collect(),
        Kind::Enum { options } => options
            .as_array()
            .map(|o| o.iter().map(ToString::to_string).collect()),
        _ => None,
    };
    let value = short_value(e.instance());
    if let Some(allowed) = allowed.filter(|a| !a.is_empty()) {
        return format!("{value} is not one of {}", allowed.join(", "));
    }
    if let Kind::MaxProperties { limit } = e.kind() {
        return over_limit(&value, limit);
    }
    let message = e.to_string();
    let quoted = e.instance().to_string();
    match message.strip_prefix(&quoted) {
        Some(rest) if quoted.len() > MAX_QUOTED => format!("{value}{rest}"),
        _ => message,
    }
}

/// `value` has more entries than `limit` allows.
fn over_limit(value: &str, limit: impl fmt::Display) -> String {
    format!("{value}: at most {limit} are allowed")
}

/// An object named by its size.
fn object_of(entries: usize) -> String {
    format!("an object of {entries} entries")
}

/// Longest value quoted whole in a message.
pub(super) const MAX_QUOTED: usize = 80;

/// A value as a message names it: quoted when short, else by its size.
pub(super) fn short_value(value: &serde_json::Value) -> String {
    let text = value.to_string();
    if text.len() <= MAX_QUOTED {
        return text;
    }
    match value {
        serde_json::Value::Object(map) => object_of(map.len()),
        serde_json::Value::Array(items) => format!("a list of {} items", items.len()),
        serde_json::Value::String(s) => format!("a string of {} characters", s.chars().count()),
        _ => text,
    }
}

/// `/informers/1/labelSelector` → `informers[1].labelSelector`.
pub(super) fn display_path(pointer: &str) -> String {
    let mut out = String::new();
    for token in pointer.split('/').skip(1) {
        let token = token.replace("~1", "/").replace("~0", "~");
        if token.chars().all(|c| c.is_ascii_digit()) && !token.is_empty() {
            out.push_str(&format!("[{token}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&token);
        }
    }
    out
}

/// The fields of a pattern's `match`.
pub(super) const PATTERN_FIELDS: &[&str] = &[
    "groups",
    "categories",
    "customResources",
    "include",
    "exclude",
    "scope",
    "version",
];
