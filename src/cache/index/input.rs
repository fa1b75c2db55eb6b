//! [`IndexInput`]: one object, converted for JMESPath lazily, partly, and
//! at most once per part.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

use jmespath::{Rcvar, Variable};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_core::DynamicObject;
use serde_json::{Map, Value};

use super::needs::Needs;

/// One object prepared for evaluation by any number of index functions.
///
/// JMESPath expressions that are not plain field paths need the object as a
/// `jmespath::Variable` tree. The input converts, lazily, only the parts of the
/// object an expression can observe (for `spec.containers[].image`, just
/// `spec.containers`), and keeps every converted part for the following
/// expressions: a store with ten JMESPath indexes converts each part of an
/// object at most once, and never the parts no index reads (such as
/// `metadata.managedFields`). Field-path expressions, closures and the
/// namespace index never convert anything.
///
/// What an expression gives does not depend on what the input converted
/// before it: every index of an object sees the object as it is.
///
/// An input is meant to live for the indexing of one object on one thread (it
/// is not `Sync`).
pub struct IndexInput<'a> {
    object: &'a DynamicObject,
    /// Fully converted parts of the object by path from the root (the empty
    /// path is the whole object).
    pub(super) parts: RefCell<HashMap<Box<[String]>, Rcvar>>,
}

impl<'a> IndexInput<'a> {
    /// Wraps an object; nothing is converted yet.
    pub fn new(object: &'a DynamicObject) -> Self {
        Self {
            object,
            parts: RefCell::new(HashMap::new()),
        }
    }

    /// The wrapped object.
    pub fn object(&self) -> &'a DynamicObject {
        self.object
    }

    /// Whether any part of the object has been converted for JMESPath (mostly
    /// useful in tests and benchmarks).
    pub fn is_converted(&self) -> bool {
        !self.parts.borrow().is_empty()
    }

    /// The object as a JMESPath value, complete wherever `needs` says the
    /// expression may look. Elsewhere an object may lack fields; nothing else
    /// differs from the full conversion (see [`Self::json_part`]).
    pub(super) fn converted(&self, needs: &Needs) -> Result<Rcvar, String> {
        let data = data_fields(self.object)?;
        let mut path = Vec::new();
        if let Some(whole) = self.cached(&path) {
            return Ok(whole);
        }
        if needs.full {
            return Ok(self.cache(path, whole_object(self.object, data)?));
        }
        // The root is a map of `apiVersion`, `kind`, `metadata` and the keys
        // of `data`, a key of `data` shadowing the others (it is serialised
        // last).
        let mut root = BTreeMap::new();
        let types = self.object.types.as_ref();
        for (field, child) in &needs.fields {
            path.push(field.clone());
            let value = match data.and_then(|map| map.get(field)) {
                Some(value) => Some(self.json_part(value, child, &mut path)),
                None => match field.as_str() {
                    "apiVersion" => types.map(|t| string_var(&t.api_version)),
                    "kind" => types.map(|t| string_var(&t.kind)),
                    "metadata" => Some(self.metadata_part(child, &mut path)?),
                    _ => None,
                },
            };
            path.pop();
            if let Some(value) = value {
                root.insert(field.clone(), value);
            }
        }
        Ok(Rcvar::new(Variable::Object(root)))
    }

    pub(super) fn cached(&self, path: &[String]) -> Option<Rcvar> {
        self.parts.borrow().get(path).cloned()
    }

    fn cache(&self, path: Vec<String>, value: Variable) -> Rcvar {
        let value = Rcvar::new(value);
        self.parts
            .borrow_mut()
            .insert(path.into_boxed_slice(), value.clone());
        value
    }

    /// `value` converted as far as `needs` says.
    ///
    /// Only an object is ever converted in part, keeping just the fields
    /// `needs` lists, so whatever an expression does with a value it does not
    /// observe whole (read a field, test for null) gives what it gives on the
    /// full conversion. Any other value is converted whole even when `needs`
    /// asks only for its fields: an empty object standing in for a `null`
    /// would make `x.[a]` an array where it is null. (Only an array can be
    /// large, and reading fields of an array is a mistake in the expression.)
    fn json_part(&self, value: &Value, needs: &Needs, path: &mut Vec<String>) -> Rcvar {
        if let Some(done) = self.cached(path) {
            return done;
        }
        match value {
            Value::Object(map) if !needs.full => {
                let mut fields = BTreeMap::new();
                for (field, child) in &needs.fields {
                    if let Some(inner) = map.get(field) {
                        path.push(field.clone());
                        fields.insert(field.clone(), self.json_part(inner, child, path));
                        path.pop();
                    }
                }
                Rcvar::new(Variable::Object(fields))
            }
            _ => self.cache(path.clone(), json_to_variable(value)),
        }
    }

    fn metadata_part(&self, needs: &Needs, path: &mut Vec<String>) -> Result<Rcvar, String> {
        if let Some(done) = self.cached(path) {
            return Ok(done);
        }
        let meta = &self.object.metadata;
        if needs.full {
            let converted = Variable::from_serializable(meta).map_err(conversion_error)?;
            return Ok(self.cache(path.clone(), converted));
        }
        // Metadata fields are small (except managedFields, which is converted
        // only when read): each needed one is converted whole.
        let mut fields = BTreeMap::new();
        for field in needs.fields.keys() {
            path.push(field.clone());
            let value = match self.cached(path) {
                Some(done) => Some(done),
                None => metadata_field(meta, field)?.map(|v| self.cache(path.clone(), v)),
            };
            path.pop();
            if let Some(value) = value {
                fields.insert(field.clone(), value);
            }
        }
        Ok(Rcvar::new(Variable::Object(fields)))
    }

    pub(in crate::cache) fn describe(&self) -> String {
        let meta = &self.object.metadata;
        describe(meta.namespace.as_deref(), meta.name.as_deref())
    }
}

impl<'a> From<&'a DynamicObject> for IndexInput<'a> {
    fn from(object: &'a DynamicObject) -> Self {
        Self::new(object)
    }
}

impl fmt::Debug for IndexInput<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IndexInput")
            .field("object", &self.describe())
            .field("converted_parts", &self.parts.borrow().len())
            .finish()
    }
}

/// The fields of the object's `data`, which JMESPath sees beside (and over)
/// `apiVersion`, `kind` and `metadata`; `None` when there is no data.
///
/// # Errors
///
/// Data that is neither an object nor null: serde cannot flatten it into
/// the object's map, so the `jmespath` crate's own conversion fails; fail
/// the same way.
#[inline]
pub(super) fn data_fields(object: &DynamicObject) -> Result<Option<&Map<String, Value>>, String> {
    match &object.data {
        Value::Object(map) => Ok(Some(map)),
        Value::Null => Ok(None),
        _ => Err(DATA_NOT_AN_OBJECT.to_owned()),
    }
}

/// Why an object whose data is neither an object nor null cannot be
/// evaluated.
pub(super) const DATA_NOT_AN_OBJECT: &str =
    "converting the object for JMESPath: object data is not a JSON object";

/// An object's key as evaluation errors name it: `namespace/name`, `name`,
/// or `<unnamed>`.
pub(super) fn describe(namespace: Option<&str>, name: Option<&str>) -> String {
    match name {
        Some(name) => crate::vocabulary::object_key::key_from_parts(namespace, name),
        None => "<unnamed>".to_owned(),
    }
}

fn conversion_error(err: jmespath::JmespathError) -> String {
    format!("converting the object for JMESPath: {}", err.reason)
}

fn string_var(s: &str) -> Rcvar {
    Rcvar::new(Variable::String(s.to_owned()))
}

/// The whole object, as `Variable::from_serializable(obj)` builds it (the
/// tests check that), but converting `data` directly rather than through
/// serde's serializer.
fn whole_object(
    obj: &DynamicObject,
    data: Option<&Map<String, Value>>,
) -> Result<Variable, String> {
    let mut root = BTreeMap::new();
    if let Some(types) = &obj.types {
        root.insert("apiVersion".to_owned(), string_var(&types.api_version));
        root.insert("kind".to_owned(), string_var(&types.kind));
    }
    let metadata = Variable::from_serializable(&obj.metadata).map_err(conversion_error)?;
    root.insert("metadata".to_owned(), Rcvar::new(metadata));
    for (field, value) in data.into_iter().flatten() {
        root.insert(field.clone(), Rcvar::new(json_to_variable(value)));
    }
    Ok(Variable::Object(root))
}

/// What serialising `value` into a `Variable` gives, without serde. Recursive
/// like serde's own conversion (JSON from the API server nests at most 128
/// levels).
fn json_to_variable(value: &Value) -> Variable {
    match value {
        Value::Null => Variable::Null,
        Value::Bool(b) => Variable::Bool(*b),
        Value::Number(n) => Variable::Number(n.clone()),
        Value::String(s) => Variable::String(s.clone()),
        Value::Array(items) => Variable::Array(
            items
                .iter()
                .map(|item| Rcvar::new(json_to_variable(item)))
                .collect(),
        ),
        Value::Object(map) => Variable::Object(
            map.iter()
                .map(|(field, item)| (field.clone(), Rcvar::new(json_to_variable(item))))
                .collect(),
        ),
    }
}

/// One field of `metadata` as its serialised form, `None` when absent.
fn metadata_field(meta: &ObjectMeta, field: &str) -> Result<Option<Variable>, String> {
    fn convert<T: serde::Serialize>(value: Option<&T>) -> Result<Option<Variable>, String> {
        value
            .map(|v| Variable::from_serializable(v).map_err(conversion_error))
            .transpose()
    }
    match field {
        "annotations" => convert(meta.annotations.as_ref()),
        "creationTimestamp" => convert(meta.creation_timestamp.as_ref()),
        "deletionGracePeriodSeconds" => convert(meta.deletion_grace_period_seconds.as_ref()),
        "deletionTimestamp" => convert(meta.deletion_timestamp.as_ref()),
        "finalizers" => convert(meta.finalizers.as_ref()),
        "generateName" => convert(meta.generate_name.as_ref()),
        "generation" => convert(meta.generation.as_ref()),
        "labels" => convert(meta.labels.as_ref()),
        "managedFields" => convert(meta.managed_fields.as_ref()),
        "name" => convert(meta.name.as_ref()),
        "namespace" => convert(meta.namespace.as_ref()),
        "ownerReferences" => convert(meta.owner_references.as_ref()),
        "resourceVersion" => convert(meta.resource_version.as_ref()),
        "selfLink" => convert(meta.self_link.as_ref()),
        "uid" => convert(meta.uid.as_ref()),
        _ => Ok(None),
    }
}
