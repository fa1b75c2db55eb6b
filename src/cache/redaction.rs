//! What of a cached object may be shown: the policy of the `sensitive`
//! option, for any program that prints or exports objects.

use serde::Serialize;
use serde_json::Value;

use crate::vocabulary::resource::ResourceKey;

/// The annotation `kubectl apply` writes: the whole applied manifest,
/// Secret `stringData` in plain text included.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// What of an informer's objects may be shown.
///
/// Core Secrets are always sensitive; any other resource is when it is
/// marked so (`sensitive: true` in a config file). Of a sensitive object
/// only what cannot carry its content is shown: for a Secret everything but
/// `data` and `stringData`, for other resources only `apiVersion`, `kind` and
/// `metadata`. In every case the `kubectl apply` annotation (a copy of the
/// manifest) and the object's index values are redacted too; each redacted
/// value is replaced by a note of its size.
///
/// ```
/// use kube_dynamic_informer::cache::Redaction;
/// use kube_dynamic_informer::vocabulary::ResourceKey;
///
/// let secrets = ResourceKey::new("", "v1", "secrets");
/// let redaction = Redaction::for_resource(&secrets, false, false);
/// assert_eq!(redaction, Redaction::SecretData);
/// let shown = redaction.object(&serde_json::json!({
///     "kind": "Secret",
///     "metadata": { "name": "db" },
///     "data": { "password": "aHVudGVyMg==" },
/// }));
/// assert_eq!(shown["data"]["password"], "<redacted: 12 bytes>");
/// assert_eq!(shown["metadata"]["name"], "db");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Redaction {
    /// Show everything: not sensitive, or asked to show secrets.
    None,
    /// A core Secret: redact `data`, `stringData`, the last-applied
    /// annotation and index values.
    SecretData,
    /// A resource marked sensitive: redact every top-level field but
    /// `apiVersion`, `kind` and `metadata`, the last-applied annotation
    /// and index values.
    AllButMetadata,
}

impl Redaction {
    /// The redaction for objects of `resource`, marked `sensitive` or not,
    /// unless `show_secrets`.
    #[must_use]
    pub fn for_resource(resource: &ResourceKey, sensitive: bool, show_secrets: bool) -> Self {
        if show_secrets {
            Redaction::None
        } else if resource.group.is_empty() && resource.resource == "secrets" {
            Redaction::SecretData
        } else if sensitive {
            Redaction::AllButMetadata
        } else {
            Redaction::None
        }
    }

    /// The object as JSON, with what must not be shown replaced by a note
    /// of its size.
    #[must_use]
    pub fn object(self, o: &impl Serialize) -> Value {
        let mut value = serde_json::to_value(o).unwrap_or(Value::Null);
        let Value::Object(map) = &mut value else {
            return value;
        };
        match self {
            Redaction::None => return value,
            Redaction::SecretData => {
                for field in ["data", "stringData"] {
                    if let Some(Value::Object(entries)) = map.get_mut(field) {
                        entries.values_mut().for_each(redact_value);
                    }
                }
            }
            Redaction::AllButMetadata => {
                for (field, v) in map.iter_mut() {
                    if !matches!(field.as_str(), "apiVersion" | "kind" | "metadata") {
                        redact_value(v);
                    }
                }
            }
        }
        if let Some(v) = map
            .get_mut("metadata")
            .and_then(|m| m.get_mut("annotations"))
            .and_then(|a| a.get_mut(LAST_APPLIED))
        {
            redact_value(v);
        }
        value
    }

    /// An object's values for one index, as they may be shown.
    #[must_use]
    pub fn index_values(self, values: Vec<String>) -> Vec<String> {
        match self {
            Redaction::None => values,
            _ => values.iter().map(|v| note(v.len())).collect(),
        }
    }
}

/// What stands in for a redacted value of `len` bytes.
fn note(len: usize) -> String {
    format!("<redacted: {len} bytes>")
}

/// Replaces a value by a note of its size (of its JSON text when it is not
/// a string).
fn redact_value(v: &mut Value) {
    let len = match &*v {
        Value::String(s) => s.len(),
        other => other.to_string().len(),
    };
    *v = Value::String(note(len));
}
