//! Index functions read straight from a [`CompactObject`], without decoding
//! it: the namespace index and plain field paths ([`Plan::Direct`]). Each
//! gives what it gives on the decoded object.

use std::borrow::Cow;

use serde_json::Value;

use crate::cache::CacheError;
use crate::cache::compact::{CompactObject, ValueRef};

use super::compile::Plan;
use super::input::{DATA_NOT_AN_OBJECT, describe};
use super::values::{OBJECT_RESULT, Step, values_of_json, walk};
use super::{IndexFn, Kind, field_path, numbers};

impl IndexFn {
    /// The index values of `object` read straight from its compact form, when
    /// this function can be evaluated so (the namespace index, and JMESPath
    /// expressions planned as a plain field path, `Plan::Direct`); `None`
    /// when it needs the decoded object (closures, converted or interpreted
    /// expressions).
    ///
    /// When `Some`, the result is what [`IndexFn::evaluate`] gives on
    /// `object.to_object()`, errors included.
    pub(crate) fn evaluate_compact(
        &self,
        index: &str,
        object: &CompactObject,
    ) -> Option<Result<Vec<String>, CacheError>> {
        let result = match &self.kind {
            Kind::Namespace => Ok(object
                .namespace()
                .filter(|ns| !ns.is_empty())
                .map(|ns| vec![ns.to_owned()])
                .unwrap_or_default()),
            Kind::Jmespath(compiled) => match &compiled.plan {
                Plan::Direct(path) if field_path::is_direct(path) => evaluate(object, path),
                Plan::Direct(_) | Plan::Converted { .. } | Plan::Interpreted { .. } => {
                    return None;
                }
            },
            Kind::Closure(_) => return None,
        };
        Some(result.map_err(|message| CacheError::IndexEvaluation {
            index: index.to_owned(),
            object: describe(object.namespace(), object.name()),
            message,
        }))
    }
}

/// `field_path::evaluate` on the compact form: the keys of the data shadow
/// `apiVersion`, `kind` and `metadata`, as in the object JMESPath sees.
fn evaluate(object: &CompactObject, path: &[String]) -> Result<Vec<String>, String> {
    let data = match object.data() {
        ValueRef::Object(map) => Some(map),
        ValueRef::Null => None,
        _ => return Err(DATA_NOT_AN_OBJECT.to_owned()),
    };
    let Some((first, rest)) = path.split_first() else {
        return Ok(Vec::new());
    };
    if let Some(value) = data.and_then(|map| map.get(first)) {
        return values_at(value, rest);
    }
    let value = match first.as_str() {
        "apiVersion" => object.api_version().map(ValueRef::String),
        "kind" => object.kind().map(ValueRef::String),
        "metadata" => {
            let Some((field, rest)) = rest.split_first() else {
                // `metadata` itself always serialises as an object.
                return Err(OBJECT_RESULT.to_owned());
            };
            // One field of the metadata, without serialising the rest. The
            // fields `field_path::is_direct` excludes never get here.
            let value = object.pointer(&format!("/metadata/{}", escape(field)));
            return value.map_or(Ok(Vec::new()), |value| values_at(value, rest));
        }
        _ => None,
    };
    value.map_or(Ok(Vec::new()), |value| values_at(value, rest))
}

/// A field name as a JSON pointer token (RFC 6901).
fn escape(field: &str) -> Cow<'_, str> {
    if field.contains(['~', '/']) {
        Cow::Owned(field.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(field)
    }
}

/// The values at `path` below `value`, followed field by field: a field of
/// anything but an object, or a missing field, is null and gives no value.
fn values_at(mut value: ValueRef<'_>, path: &[String]) -> Result<Vec<String>, String> {
    for field in path {
        let inner = match value {
            ValueRef::Object(map) => map.get(field),
            ValueRef::Json(Value::Object(map)) => map.get(field).map(ValueRef::Json),
            ValueRef::Owned(Value::Object(mut map)) => map.remove(field).map(ValueRef::Owned),
            _ => None,
        };
        match inner {
            Some(inner) => value = inner,
            None => return Ok(Vec::new()),
        }
    }
    values_of_ref(value)
}

/// `values_of_json` for a [`ValueRef`], without converting it.
fn values_of_ref(result: ValueRef<'_>) -> Result<Vec<String>, String> {
    walk(result, |value| {
        Ok(match value {
            ValueRef::Null => Step::Nothing,
            ValueRef::String(s) => Step::Value(s.to_owned()),
            ValueRef::Bool(b) => Step::Value(b.to_string()),
            ValueRef::Number(n) => Step::Value(numbers::text(&n)),
            ValueRef::Array(items) => Step::Items(items.iter()),
            ValueRef::Object(_) => return Err(OBJECT_RESULT.to_owned()),
            ValueRef::Owned(v) => Step::Values(values_of_json(&v)?),
            ValueRef::Json(v) => Step::Values(values_of_json(v)?),
        })
    })
}
