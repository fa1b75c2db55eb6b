//! From an expression's result to index values (the table in the module
//! docs), for the interpreter's `Variable` and for the `serde_json::Value`
//! the field-path reader returns. Both must agree.

use jmespath::Variable;
use serde_json::Value;

use super::numbers;

pub(super) const OBJECT_RESULT: &str =
    "result is an object; an index value must be a string, number, boolean, or an array of them";

/// What one value of an expression's result gives the index.
pub(super) enum Step<I> {
    /// Nothing (null).
    Nothing,
    /// One value (a string, number or boolean).
    Value(String),
    /// These values, found by another walk.
    Values(Vec<String>),
    /// The values of these items, in order (an array).
    Items(I),
}

/// The index values of `result`: `step` says what each value gives, and
/// arrays are walked depth first with an explicit stack, so that no input
/// depth can overflow. The one walk of the three forms a result comes in
/// (the interpreter's `Variable`, a `serde_json::Value`, a compact
/// object's view), which must agree.
pub(super) fn walk<V, I: Iterator<Item = V>>(
    result: V,
    step: impl Fn(V) -> Result<Step<I>, String>,
) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut pending: Vec<I> = Vec::new();
    let mut next = Some(result);
    loop {
        if let Some(value) = next.take() {
            match step(value)? {
                Step::Nothing => {}
                Step::Value(value) => out.push(value),
                Step::Values(values) => out.extend(values),
                Step::Items(items) => pending.push(items),
            }
        }
        let Some(items) = pending.last_mut() else {
            return Ok(out);
        };
        match items.next() {
            Some(item) => next = Some(item),
            None => {
                pending.pop();
            }
        }
    }
}

/// Maps a JMESPath result to index values (see the module docs).
pub(super) fn values_of_variable(result: &Variable) -> Result<Vec<String>, String> {
    walk(result, |value| {
        Ok(match value {
            Variable::Null => Step::Nothing,
            Variable::String(s) => Step::Value(s.clone()),
            Variable::Bool(b) => Step::Value(b.to_string()),
            Variable::Number(n) => Step::Value(numbers::text(n)),
            Variable::Array(items) => Step::Items(items.iter().map(|item| &**item)),
            Variable::Object(_) => return Err(OBJECT_RESULT.to_owned()),
            Variable::Expref(_) => {
                return Err("result is an expression reference (&expr), not a value".to_owned());
            }
        })
    })
}

/// [`values_of_variable`] for a `serde_json::Value`; both must agree.
pub(super) fn values_of_json(result: &Value) -> Result<Vec<String>, String> {
    walk(result, |value| {
        Ok(match value {
            Value::Null => Step::Nothing,
            Value::String(s) => Step::Value(s.clone()),
            Value::Bool(b) => Step::Value(b.to_string()),
            Value::Number(n) => Step::Value(numbers::text(n)),
            Value::Array(items) => Step::Items(items.iter()),
            Value::Object(_) => return Err(OBJECT_RESULT.to_owned()),
        })
    })
}
