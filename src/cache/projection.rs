//! Projections: the fields of each object a cache keeps.
//!
//! The [layer docs](crate::cache) say more.

use std::collections::BTreeMap;
use std::fmt;
use std::hash::Hash;

use crate::cache::CacheError;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_core::DynamicObject;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// Fields kept whatever the paths of a [`Projection`] say (see the
/// [module docs](crate::cache)).
pub const ALWAYS_KEPT: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "metadata.resourceVersion",
    "metadata.deletionTimestamp",
];

/// The most fields a path may have. Objects are rarely a tenth as deep; the
/// limit bounds the recursion of applying a projection.
pub const MAX_PATH_FIELDS: usize = 64;

/// The fields of each object a cache keeps; see the [module docs](crate::cache).
///
/// Built from paths with [`Projection::new`]; read from and written to a
/// config file as the list of its paths (`projection: [spec.nodeName,
/// metadata.labels]`). Compares by the fields it keeps.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Projection {
    fields: Fields,
}

/// What a projection keeps of an object: field name → what it keeps of that
/// field's value.
type Fields = BTreeMap<String, Keep>;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Keep {
    /// The whole value.
    All,
    /// These fields of the value, when it is an object; nothing otherwise.
    Some(Fields),
}

impl Projection {
    /// A projection keeping the subtrees `paths` name, and the
    /// [`ALWAYS_KEPT`] fields; no paths keep only those.
    ///
    /// ```
    /// use kube_dynamic_informer::cache::{CacheError, Projection};
    ///
    /// let a = Projection::new(["metadata.labels", "spec.nodeName", "metadata.labels['app']"])?;
    /// let b = Projection::new(["spec.nodeName", "metadata.labels"])?;
    /// assert_eq!(a, b);
    /// assert_eq!(a.paths(), ["metadata.labels", "spec.nodeName"]);
    ///
    /// let err = Projection::new(["metadata.labels.app.kubernetes.io/name"]).unwrap_err();
    /// assert!(matches!(err, CacheError::Projection { column: 34, .. })); // the `/`
    /// # Ok::<(), kube_dynamic_informer::cache::CacheError>(())
    /// ```
    ///
    /// # Errors
    /// The first path that does not follow the [grammar](crate::cache), or
    /// that has more than [`MAX_PATH_FIELDS`] fields, with the column of the
    /// problem.
    pub fn new<I>(paths: I) -> Result<Self, CacheError>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let mut fields = Fields::new();
        for path in paths {
            let path = path.as_ref();
            let parsed = parse_path(path).map_err(|(column, reason)| CacheError::Projection {
                path: path.to_owned(),
                column,
                reason,
            })?;
            insert(&mut fields, parsed);
        }
        Ok(Self { fields })
    }

    /// The paths of the fields kept (beside the [`ALWAYS_KEPT`] ones), in
    /// order and without overlaps, written as [`Projection::new`] reads them.
    #[must_use]
    pub fn paths(&self) -> Vec<String> {
        let mut out = Vec::new();
        write_paths(&self.fields, &mut String::new(), &mut out);
        out
    }

    /// The object with only the fields this projection keeps.
    #[must_use]
    pub fn apply(&self, object: DynamicObject) -> DynamicObject {
        let DynamicObject {
            types,
            metadata,
            data,
        } = object;
        let metadata = match self.fields.get("metadata") {
            Some(Keep::All) => metadata,
            Some(Keep::Some(fields)) => project_metadata(metadata, fields),
            None => project_metadata(metadata, &Fields::new()),
        };
        let data = match data {
            Value::Object(map) => Value::Object(project_data(map, &self.fields)),
            // Nothing to choose from.
            other => other,
        };
        DynamicObject {
            types,
            metadata,
            data,
        }
    }
}

impl fmt::Debug for Projection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Projection").field(&self.paths()).finish()
    }
}

impl Serialize for Projection {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.paths())
    }
}

impl<'de> Deserialize<'de> for Projection {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let paths = Vec::<String>::deserialize(deserializer)?;
        Projection::new(&paths).map_err(serde::de::Error::custom)
    }
}

#[cfg(feature = "config")]
impl schemars::JsonSchema for Projection {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Projection".into()
    }

    // Inline, so that `Option<Projection>` is an array or null rather than
    // an `anyOf`, and a wrong item is reported as itself.
    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "array",
            "items": {
                "type": "string",
                "minLength": 1,
                "description": "A path: fields separated by dots (`spec.nodeName`); a key with other characters than letters, digits, `_` and `-` in brackets and quotes (`metadata.labels[\"app.kubernetes.io/name\"]`)."
            }
        })
    }
}

/// Adds a parsed path: it keeps its whole subtree, which takes in any longer
/// path under it.
fn insert(fields: &mut Fields, path: Vec<String>) {
    let mut fields = fields;
    let last = path.len().saturating_sub(1);
    for (i, field) in path.into_iter().enumerate() {
        if i == last {
            fields.insert(field, Keep::All);
            return;
        }
        let keep = fields
            .entry(field)
            .or_insert_with(|| Keep::Some(Fields::new()));
        match keep {
            // A shorter path keeps all of this already.
            Keep::All => return,
            Keep::Some(inner) => fields = inner,
        }
    }
}

fn write_paths(fields: &Fields, prefix: &mut String, out: &mut Vec<String>) {
    for (field, keep) in fields {
        let len = prefix.len();
        write_field(prefix, field);
        match keep {
            Keep::All => out.push(prefix.clone()),
            Keep::Some(inner) => write_paths(inner, prefix, out),
        }
        prefix.truncate(len);
    }
}

/// Appends `.field`, or `field` at the start, or `["field"]` for a field
/// that is not written plain.
fn write_field(path: &mut String, field: &str) {
    if !field.is_empty() && field.chars().all(is_plain) {
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(field);
        return;
    }
    path.push_str("[\"");
    for c in field.chars() {
        if matches!(c, '"' | '\\') {
            path.push('\\');
        }
        path.push(c);
    }
    path.push_str("\"]");
}

/// A character of a field written without brackets.
fn is_plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// The fields of `path`, or the 1-based column of its first problem and
/// what it is.
fn parse_path(path: &str) -> Result<Vec<String>, (usize, String)> {
    const BRACKETS: &str = r#"write a field with other characters than letters, digits, `_` and `-` in brackets and quotes, as in metadata.labels["app.kubernetes.io/name"]"#;
    let mut chars = path.chars().enumerate().map(|(i, c)| (i + 1, c)).peekable();
    let mut fields = Vec::new();
    if chars.peek().is_none() {
        return Err((1, "the path is empty".into()));
    }
    loop {
        // A field: plain (at the start or after a dot) or in brackets.
        let (column, c) = match chars.next() {
            Some(next) => next,
            None => {
                let end = path.chars().count() + 1;
                return Err((end, "a field name is missing after `.`".into()));
            }
        };
        let after_dot = !fields.is_empty();
        if c == '[' {
            if after_dot {
                return Err((
                    column,
                    r#"expected a field name after `.`; a field in brackets follows the one before it directly, as in metadata.labels["app"]"#.into(),
                ));
            }
            fields.push(bracketed(&mut chars, column)?);
        } else if is_plain(c) {
            let mut field = String::from(c);
            while let Some(&(_, c)) = chars.peek() {
                if !is_plain(c) {
                    break;
                }
                field.push(c);
                chars.next();
            }
            fields.push(field);
        } else {
            let hint = if c == '.' { "" } else { BRACKETS };
            return Err((column, unexpected(c, "a field name", hint)));
        }
        // Fields in brackets, one after the other.
        while let Some(&(column, '[')) = chars.peek() {
            chars.next();
            fields.push(bracketed(&mut chars, column)?);
        }
        if fields.len() > MAX_PATH_FIELDS {
            return Err((
                column,
                format!("the path has more than {MAX_PATH_FIELDS} fields"),
            ));
        }
        match chars.next() {
            None => return Ok(fields),
            Some((_, '.')) => {}
            Some((column, c)) => {
                return Err((column, unexpected(c, "`.`, `[` or the end", BRACKETS)));
            }
        }
    }
}

/// The field of `["..."]` or `['...']`, the `[` at `open` already read.
fn bracketed(
    chars: &mut impl Iterator<Item = (usize, char)>,
    open: usize,
) -> Result<String, (usize, String)> {
    let quote = match chars.next() {
        Some((_, q @ ('"' | '\''))) => q,
        Some((column, c)) if c.is_ascii_digit() || c == '*' => {
            return Err((
                column,
                "array elements cannot be chosen: a path ends at an array, which is kept whole"
                    .into(),
            ));
        }
        Some((column, c)) => {
            return Err((
                column,
                unexpected(
                    c,
                    "a quoted field name after `[`",
                    r#"as in ["app.kubernetes.io/name"]"#,
                ),
            ));
        }
        None => return Err((open, "`[` is not closed".into())),
    };
    let mut field = String::new();
    loop {
        match chars.next() {
            None => {
                return Err((
                    open,
                    format!("the quoted field is not closed with {quote}]"),
                ));
            }
            Some((_, c)) if c == quote => break,
            Some((column, '\\')) => match chars.next() {
                Some((_, c)) if c == quote || c == '\\' => field.push(c),
                _ => {
                    return Err((
                        column,
                        format!(r"a backslash in a quoted field escapes only {quote} or \"),
                    ));
                }
            },
            Some((_, c)) => field.push(c),
        }
    }
    match chars.next() {
        Some((_, ']')) => Ok(field),
        Some((column, c)) => Err((column, unexpected(c, "`]` after the quoted field", ""))),
        None => Err((open, "`[` is not closed".into())),
    }
}

fn unexpected(c: char, expected: &str, hint: &str) -> String {
    let found = if c.is_whitespace() {
        format!("{:?}", c.to_string())
    } else {
        format!("`{c}`")
    };
    if hint.is_empty() {
        format!("expected {expected}, found {found}")
    } else {
        format!("expected {expected}, found {found} ({hint})")
    }
}

/// The metadata fields `fields` name, and the [`ALWAYS_KEPT`] ones.
fn project_metadata(mut old: ObjectMeta, fields: &Fields) -> ObjectMeta {
    let mut kept = ObjectMeta {
        name: old.name.take(),
        namespace: old.namespace.take(),
        uid: old.uid.take(),
        resource_version: old.resource_version.take(),
        deletion_timestamp: old.deletion_timestamp.take(),
        ..ObjectMeta::default()
    };
    for (field, keep) in fields {
        // Labels and annotations are maps: their keys can be chosen.
        let map = match field.as_str() {
            "labels" => Some((&mut old.labels, &mut kept.labels)),
            "annotations" => Some((&mut old.annotations, &mut kept.annotations)),
            _ => None,
        };
        if let Some((from, to)) = map {
            *to = match keep {
                Keep::All => from.take(),
                Keep::Some(keys) => from.as_mut().and_then(|from| {
                    let chosen: BTreeMap<String, String> = keys
                        .iter()
                        // A path past a label's value names nothing.
                        .filter(|(_, keep)| matches!(keep, Keep::All))
                        .filter_map(|(key, _)| from.remove_entry(key))
                        .collect();
                    (!chosen.is_empty()).then_some(chosen)
                }),
            };
            continue;
        }
        // The other fields hold strings, numbers, timestamps and arrays: a
        // path keeps them only by ending at them.
        if !matches!(keep, Keep::All) {
            continue;
        }
        match field.as_str() {
            "creationTimestamp" => kept.creation_timestamp = old.creation_timestamp.take(),
            "deletionGracePeriodSeconds" => {
                kept.deletion_grace_period_seconds = old.deletion_grace_period_seconds.take();
            }
            "finalizers" => kept.finalizers = old.finalizers.take(),
            "generateName" => kept.generate_name = old.generate_name.take(),
            "generation" => kept.generation = old.generation.take(),
            "managedFields" => kept.managed_fields = old.managed_fields.take(),
            "ownerReferences" => kept.owner_references = old.owner_references.take(),
            "selfLink" => kept.self_link = old.self_link.take(),
            // Always kept already, or not a field of ObjectMeta.
            _ => {}
        }
    }
    kept
}

/// The fields of the object's data that `fields` name.
fn project_data(mut map: Map<String, Value>, fields: &Fields) -> Map<String, Value> {
    let mut kept = Map::new();
    // The decoder leaves half a TypeMeta in the data: still the object's
    // apiVersion or kind.
    for always in ["apiVersion", "kind"] {
        if let Some((key, value)) = map.remove_entry(always) {
            kept.insert(key, value);
        }
    }
    keep_fields(map, fields, &mut kept);
    kept
}

/// Moves the fields of `map` that `fields` name into `kept`.
fn keep_fields(mut map: Map<String, Value>, fields: &Fields, kept: &mut Map<String, Value>) {
    for (field, keep) in fields {
        let Some((key, value)) = map.remove_entry(field) else {
            continue;
        };
        match (keep, value) {
            (Keep::All, value) => {
                kept.insert(key, value);
            }
            (Keep::Some(inner), Value::Object(object)) => {
                let mut chosen = Map::new();
                keep_fields(object, inner, &mut chosen);
                if !chosen.is_empty() {
                    kept.insert(key, Value::Object(chosen));
                }
            }
            // A path past an array, a string, a number: nothing there.
            (Keep::Some(_), _) => {}
        }
    }
}

#[cfg(test)]
mod tests;
