//! The JSONPath of a CRD's printer columns, evaluated as client-go's
//! `jsonpath` package evaluates it for the API server's tables; the path is
//! read by [`JsonPath::parse`] (what it reads is listed there).
//!
//! A column shows the first value found, or nothing; a path that cannot be
//! read is refused when the columns are read (its cells stay empty), and no
//! object makes evaluation fail.

use std::cmp::Ordering;

use serde_json::Value;

pub(super) use crate::cache::jsonpath::JsonPath;
use crate::cache::jsonpath::{Op, Step};

impl JsonPath {
    /// The first value the path finds in `root`.
    pub(super) fn first<'a>(&self, root: &'a Value) -> Option<&'a Value> {
        evaluate(&self.steps, vec![root]).into_iter().next()
    }
}

/// Applies `steps` to each of `values`, in order.
fn evaluate<'a>(steps: &[(usize, Step)], mut values: Vec<&'a Value>) -> Vec<&'a Value> {
    for (_, step) in steps {
        values = values
            .into_iter()
            .flat_map(|value| apply(step, value))
            .collect();
        if values.is_empty() {
            break;
        }
    }
    values
}

fn apply<'a>(step: &Step, value: &'a Value) -> Vec<&'a Value> {
    match step {
        Step::Field(name) => value.get(name.as_str()).into_iter().collect(),
        Step::Recursive(name) => {
            let mut containers = Vec::new();
            descend(value, &mut containers);
            containers
                .into_iter()
                .filter_map(|v| v.as_object()?.get(name.as_str()))
                .collect()
        }
        Step::Current => vec![value],
        Step::All { .. } => match value {
            Value::Array(items) => items.iter().collect(),
            Value::Object(map) => map.values().collect(),
            _ => Vec::new(),
        },
        Step::Indexes(indexes) => {
            let Some(items) = value.as_array() else {
                return Vec::new();
            };
            indexes
                .iter()
                .filter_map(|&i| items.get(position(i, items.len())?))
                .collect()
        }
        Step::Slice { start, end, step } => {
            let Some(items) = value.as_array() else {
                return Vec::new();
            };
            slice(items, *start, *end, *step)
        }
        Step::Filter { path, test } => {
            let Some(items) = value.as_array() else {
                return Vec::new();
            };
            items
                .iter()
                .filter(|item| {
                    let found = evaluate(path, vec![item]);
                    match (test, found.first()) {
                        (None, first) => first.is_some(),
                        (Some((op, literal)), Some(left)) => compare(left, *op, literal),
                        (Some(_), None) => false,
                    }
                })
                .collect()
        }
    }
}

/// An index from the end when negative; `None` out of range.
fn position(index: i64, len: usize) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let index = if index < 0 { len + index } else { index };
    usize::try_from(index).ok().filter(|_| index < len)
}

fn slice(items: &[Value], start: Option<i64>, end: Option<i64>, step: Option<i64>) -> Vec<&Value> {
    let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
    let clamp = |i: i64| if i < 0 { (len + i).max(0) } else { i.min(len) };
    let start = clamp(start.unwrap_or(0));
    let end = clamp(end.unwrap_or(len));
    let step = step.unwrap_or(1);
    if step <= 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut i = start;
    while i < end {
        if let Some(item) = items.get(i as usize) {
            out.push(item);
        }
        i = i.saturating_add(step);
    }
    out
}

/// `value` and every object or list below it that is not empty, depth
/// first, as client-go's recursive descent visits them.
fn descend<'a>(value: &'a Value, out: &mut Vec<&'a Value>) {
    let children: Vec<&Value> = match value {
        Value::Object(map) => map.values().collect(),
        Value::Array(items) => items.iter().collect(),
        _ => return,
    };
    if children.is_empty() {
        return;
    }
    out.push(value);
    for child in children {
        descend(child, out);
    }
}

fn compare(left: &Value, op: Op, right: &Value) -> bool {
    let ordering = match (left, right) {
        (Value::String(l), Value::String(r)) => Some(l.cmp(r)),
        (Value::Number(l), Value::Number(r)) => l
            .as_f64()
            .zip(r.as_f64())
            .and_then(|(l, r)| l.partial_cmp(&r)),
        (Value::Bool(l), Value::Bool(r)) => Some(l.cmp(r)),
        (Value::Null, Value::Null) => Some(Ordering::Equal),
        _ => None,
    };
    let Some(ordering) = ordering else {
        // Values of different types are only ever unequal.
        return op == Op::Ne;
    };
    match op {
        Op::Eq => ordering == Ordering::Equal,
        Op::Ne => ordering != Ordering::Equal,
        Op::Lt => ordering == Ordering::Less,
        Op::Le => ordering != Ordering::Greater,
        Op::Gt => ordering == Ordering::Greater,
        Op::Ge => ordering != Ordering::Less,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn first(path: &str, value: &Value) -> Option<Value> {
        JsonPath::parse(path).unwrap().first(value).cloned()
    }

    fn gadget() -> Value {
        json!({
            "metadata": { "name": "g1", "labels": { "app.kubernetes.io/name": "gg" } },
            "spec": {
                "replicas": 3,
                "items": ["x", "y", "z"],
                "ports": [{ "name": "http", "port": 80 }, { "name": "https", "port": 443 }],
                "map": { "a": 1 },
            },
            "status": { "conditions": [
                { "type": "Other", "status": "False" },
                { "type": "Ready", "status": "True", "since": 5 },
            ]},
        })
    }

    #[test]
    fn paths_find_what_client_go_finds() {
        let g = gadget();
        assert_eq!(first(".spec.replicas", &g), Some(json!(3)));
        assert_eq!(first("{.spec.replicas}", &g), Some(json!(3)));
        assert_eq!(first("$.spec.replicas", &g), Some(json!(3)));
        assert_eq!(
            first(r".metadata.labels.app\.kubernetes\.io/name", &g),
            Some(json!("gg"))
        );
        assert_eq!(first(".spec['replicas']", &g), Some(json!(3)));
        assert_eq!(first(".spec.items[0]", &g), Some(json!("x")));
        assert_eq!(first(".spec.items[-1]", &g), Some(json!("z")));
        assert_eq!(first(".spec.items[*]", &g), Some(json!("x")));
        assert_eq!(first(".spec.items[1:]", &g), Some(json!("y")));
        assert_eq!(first(".spec.items[2,0]", &g), Some(json!("z")));
        assert_eq!(first(".spec.ports[*].port", &g), Some(json!(80)));
        assert_eq!(first(".spec.map.*", &g), Some(json!(1)));
        assert_eq!(first("..port", &g), Some(json!(80)));
        assert_eq!(
            first(r#".status.conditions[?(@.type=="Ready")].status"#, &g),
            Some(json!("True"))
        );
        assert_eq!(
            first(".status.conditions[?(@.type != 'Ready')].status", &g),
            Some(json!("False"))
        );
        assert_eq!(
            first(".status.conditions[?(@.since)].type", &g),
            Some(json!("Ready"))
        );
        assert_eq!(
            first(".spec.ports[?(@.port > 100)].name", &g),
            Some(json!("https"))
        );
        assert_eq!(
            first(".", &g).map(|v| v["spec"]["replicas"].clone()),
            Some(json!(3))
        );
    }

    #[test]
    fn what_is_missing_or_of_another_shape_finds_nothing() {
        let g = gadget();
        for path in [
            ".spec.nope",
            ".spec.nope.deeper",
            ".spec.items[7]",
            ".spec.items[-9]",
            ".spec.replicas.x",
            ".spec.map[0]",
            ".spec.replicas[*]",
            ".spec.replicas[?(@.x)]",
            r#".status.conditions[?(@.type=="Gone")].status"#,
            ".status.conditions[?(@.since == 'five')].type",
        ] {
            assert_eq!(first(path, &g), None, "{path}");
        }
    }

    #[test]
    fn paths_that_cannot_be_read_are_refused_with_where() {
        for path in [
            "spec",
            ".spec[",
            ".spec[x]",
            ".spec['x",
            ".a[?(@.b == )]",
            ".a[?(b)]",
            ".a[1:2:3:4]",
            "..",
            ".a.[0]x",
        ] {
            let error = JsonPath::parse(path).unwrap_err();
            assert!(error.to_string().contains("at byte"), "{path}: {error}");
        }
    }
}
