//! Whether two values are the same JSON value, whatever holds them: the
//! bytes of a compact object, a decoded object's `serde_json::Value`, or a
//! value built for the occasion (a timestamp).

use std::collections::HashMap;

use serde_json::{Map, Number, Value};

use super::view::{ArrayRef, ObjectRef, ValueRef};

/// Past this many entries, an object of compact bytes is looked up through
/// a map of its entries, built once, rather than by stepping over its
/// entries for each key.
const FEW_ENTRIES: usize = 16;

/// Deeper than this, values are taken to differ: the comparison recurses,
/// and no object the API server serves nests this deep.
const MAX_DEPTH: usize = 512;

impl PartialEq for ValueRef<'_> {
    /// Whether both are the same JSON value, however each is held: numbers
    /// by value (`3` equals `3.0`), objects whatever the order of their
    /// entries. Two maps or arrays written alike in one cache compare by
    /// their bytes, without reading them.
    ///
    /// ```
    /// use kube_dynamic_informer::cache::ValueRef;
    ///
    /// let json = serde_json::json!({ "replicas": 3, "tags": ["a", "b"] });
    /// let floats = serde_json::json!({ "tags": ["a", "b"], "replicas": 3.0 });
    /// assert_eq!(ValueRef::Json(&json), ValueRef::Owned(floats));
    /// assert_ne!(ValueRef::Json(&json), ValueRef::Null);
    /// ```
    fn eq(&self, other: &Self) -> bool {
        same(self, other, 0)
    }
}

/// What a value is, borrowed, whatever holds it.
enum Shape<'a> {
    Null,
    Bool(bool),
    Number(&'a Number),
    Str(&'a str),
    Array(Array<'a>),
    Object(Object<'a>),
}

#[derive(Clone, Copy)]
enum Array<'a> {
    Compact(ArrayRef<'a>),
    Json(&'a [Value]),
}

#[derive(Clone, Copy)]
enum Object<'a> {
    Compact(ObjectRef<'a>),
    Json(&'a Map<String, Value>),
}

fn shape<'b>(value: &'b ValueRef<'_>) -> Shape<'b> {
    match value {
        ValueRef::Null => Shape::Null,
        ValueRef::Bool(b) => Shape::Bool(*b),
        ValueRef::Number(n) => Shape::Number(n),
        ValueRef::String(s) => Shape::Str(s),
        ValueRef::Array(items) => Shape::Array(Array::Compact(*items)),
        ValueRef::Object(entries) => Shape::Object(Object::Compact(*entries)),
        ValueRef::Owned(v) => json_shape(v),
        ValueRef::Json(v) => json_shape(v),
    }
}

fn json_shape(value: &Value) -> Shape<'_> {
    match value {
        Value::Null => Shape::Null,
        Value::Bool(b) => Shape::Bool(*b),
        Value::Number(n) => Shape::Number(n),
        Value::String(s) => Shape::Str(s),
        Value::Array(items) => Shape::Array(Array::Json(items)),
        Value::Object(entries) => Shape::Object(Object::Json(entries)),
    }
}

fn same(a: &ValueRef<'_>, b: &ValueRef<'_>, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    match (shape(a), shape(b)) {
        (Shape::Null, Shape::Null) => true,
        (Shape::Bool(x), Shape::Bool(y)) => x == y,
        (Shape::Number(x), Shape::Number(y)) => same_number(x, y),
        (Shape::Str(x), Shape::Str(y)) => x == y,
        (Shape::Array(x), Shape::Array(y)) => same_array(x, y, depth),
        (Shape::Object(x), Shape::Object(y)) => same_object(x, y, depth),
        _ => false,
    }
}

/// Equal numbers: the same representation, or an integer and a float of
/// the same value (JMESPath's `3 == 3.0`).
fn same_number(x: &Number, y: &Number) -> bool {
    x == y || ((x.is_f64() || y.is_f64()) && x.as_f64() == y.as_f64())
}

fn same_array(x: Array<'_>, y: Array<'_>, depth: usize) -> bool {
    let pairwise = |a: &mut dyn Iterator<Item = ValueRef<'_>>,
                    b: &mut dyn Iterator<Item = ValueRef<'_>>| {
        a.zip(b).all(|(a, b)| same(&a, &b, depth + 1))
    };
    match (x, y) {
        (Array::Compact(x), Array::Compact(y)) => {
            x.0.same_bytes(y.0) || (x.len() == y.len() && pairwise(&mut x.iter(), &mut y.iter()))
        }
        (Array::Json(x), Array::Json(y)) => {
            x == y
                || (x.len() == y.len()
                    && pairwise(
                        &mut x.iter().map(ValueRef::Json),
                        &mut y.iter().map(ValueRef::Json),
                    ))
        }
        (Array::Compact(x), Array::Json(y)) | (Array::Json(y), Array::Compact(x)) => {
            x.len() == y.len() && pairwise(&mut x.iter(), &mut y.iter().map(ValueRef::Json))
        }
    }
}

fn same_object(x: Object<'_>, y: Object<'_>, depth: usize) -> bool {
    let len = |o: Object<'_>| match o {
        Object::Compact(entries) => entries.len(),
        Object::Json(entries) => entries.len(),
    };
    match (x, y) {
        (Object::Compact(a), Object::Compact(b)) if a.0.same_bytes(b.0) => return true,
        (Object::Json(a), Object::Json(b)) if a == b => return true,
        _ if len(x) != len(y) => return false,
        _ => {}
    }
    let other = Lookup::of(y);
    let found = |key: &str, value: ValueRef<'_>| {
        other
            .get(key)
            .is_some_and(|theirs| same(&value, &theirs, depth + 1))
    };
    match x {
        Object::Compact(entries) => entries.iter().all(|(key, value)| found(key, value)),
        Object::Json(entries) => entries
            .iter()
            .all(|(key, value)| found(key, ValueRef::Json(value))),
    }
}

/// An object's entries looked up by key.
enum Lookup<'a> {
    Compact(ObjectRef<'a>),
    Json(&'a Map<String, Value>),
    Many(HashMap<&'a str, ValueRef<'a>>),
}

impl<'a> Lookup<'a> {
    fn of(object: Object<'a>) -> Self {
        match object {
            Object::Compact(entries) if entries.len() > FEW_ENTRIES => {
                Lookup::Many(entries.iter().collect())
            }
            Object::Compact(entries) => Lookup::Compact(entries),
            Object::Json(entries) => Lookup::Json(entries),
        }
    }

    fn get(&self, key: &str) -> Option<ValueRef<'a>> {
        match self {
            Lookup::Compact(entries) => entries.get(key),
            Lookup::Json(entries) => entries.get(key).map(ValueRef::Json),
            Lookup::Many(entries) => entries.get(key).cloned(),
        }
    }
}
