//! Plain field paths (`metadata.labels.app`, `spec.nodeName`,
//! `metadata."namespace"`): recognised when compiled and read straight from
//! the [`DynamicObject`], without converting anything and without
//! recursion, so they are exempt from the nesting limit.

use std::collections::BTreeMap;

use jmespath::ast::Ast;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_core::DynamicObject;
use serde_json::Value;

use super::input::data_fields;
use super::values::{OBJECT_RESULT, values_of_json};

/// The field names of an expression made only of field accesses joined by `.`
/// or `|` (`a.b`, `"a b".c`, `a | b`), in order; `None` for anything else.
/// Iterative: the tree of a long path is as deep as the path is long.
pub(super) fn of(ast: &Ast) -> Option<Vec<String>> {
    let mut path = Vec::new();
    let mut pending = vec![ast];
    while let Some(node) = pending.pop() {
        match node {
            Ast::Field { name, .. } => path.push(name.clone()),
            Ast::Subexpr { lhs, rhs, .. } => {
                pending.push(rhs);
                pending.push(lhs);
            }
            _ => return None,
        }
    }
    Some(path)
}

/// `metadata` fields whose serialised form [`evaluate`] does not reproduce
/// (timestamps and nested structs); paths into them follow the converted
/// field instead.
const METADATA_FIELDS_CONVERTED: &[&str] = &[
    "creationTimestamp",
    "deletionTimestamp",
    "managedFields",
    "ownerReferences",
];

/// Whether [`evaluate`] reads `path` exactly as the `jmespath` crate would.
pub(super) fn is_direct(path: &[String]) -> bool {
    !(path.len() >= 2
        && path[0] == "metadata"
        && METADATA_FIELDS_CONVERTED.contains(&path[1].as_str()))
}

/// Evaluates a field path on the object exactly as the `jmespath` crate would
/// on `Variable::from_serializable(obj)`, without converting anything.
///
/// That conversion serialises `types` (flattened: `apiVersion`, `kind`), then
/// `metadata`, then flattens `data` into the same map; a later key wins, so a
/// key present in `data` shadows the typed fields.
pub(super) fn evaluate(obj: &DynamicObject, path: &[String]) -> Result<Vec<String>, String> {
    let data = data_fields(obj)?;
    let Some((first, rest)) = path.split_first() else {
        return Ok(Vec::new());
    };
    if let Some(value) = data.and_then(|map| map.get(first)) {
        return json_path(value, rest);
    }
    let types = obj.types.as_ref();
    match first.as_str() {
        "apiVersion" => Ok(scalar_path(types.map(|t| t.api_version.as_str()), rest)),
        "kind" => Ok(scalar_path(types.map(|t| t.kind.as_str()), rest)),
        "metadata" => metadata_path(&obj.metadata, rest),
        _ => Ok(Vec::new()),
    }
}

fn json_path(mut value: &Value, path: &[String]) -> Result<Vec<String>, String> {
    for field in path {
        match value.as_object().and_then(|map| map.get(field)) {
            Some(inner) => value = inner,
            // A field of a non-object, or a missing field, is null.
            None => return Ok(Vec::new()),
        }
    }
    values_of_json(value)
}

/// A string or number field: its value when the path ends there; a field
/// of it is null.
fn scalar_path(value: Option<impl ToString>, rest: &[String]) -> Vec<String> {
    match value {
        Some(v) if rest.is_empty() => vec![v.to_string()],
        _ => Vec::new(),
    }
}

fn metadata_path(meta: &ObjectMeta, path: &[String]) -> Result<Vec<String>, String> {
    let Some((field, rest)) = path.split_first() else {
        // `metadata` itself always serialises as an object.
        return Err(OBJECT_RESULT.to_owned());
    };
    let labels_like = |map: Option<&BTreeMap<String, String>>| match (map, rest) {
        (None, _) => Ok(Vec::new()),
        (Some(_), []) => Err(OBJECT_RESULT.to_owned()),
        (Some(map), [key, deeper @ ..]) => {
            Ok(scalar_path(map.get(key).map(String::as_str), deeper))
        }
    };
    match field.as_str() {
        "name" => Ok(scalar_path(meta.name.as_deref(), rest)),
        "namespace" => Ok(scalar_path(meta.namespace.as_deref(), rest)),
        "generateName" => Ok(scalar_path(meta.generate_name.as_deref(), rest)),
        "resourceVersion" => Ok(scalar_path(meta.resource_version.as_deref(), rest)),
        "selfLink" => Ok(scalar_path(meta.self_link.as_deref(), rest)),
        "uid" => Ok(scalar_path(meta.uid.as_deref(), rest)),
        "generation" => Ok(scalar_path(meta.generation, rest)),
        "deletionGracePeriodSeconds" => Ok(scalar_path(meta.deletion_grace_period_seconds, rest)),
        "labels" => labels_like(meta.labels.as_ref()),
        "annotations" => labels_like(meta.annotations.as_ref()),
        "finalizers" => Ok(match &meta.finalizers {
            // A field of an array is null.
            Some(finalizers) if rest.is_empty() => finalizers.clone(),
            _ => Vec::new(),
        }),
        // Not an ObjectMeta field, so absent from the serialised object.
        // (The fields in METADATA_FIELDS_CONVERTED never get here.)
        _ => Ok(Vec::new()),
    }
}
