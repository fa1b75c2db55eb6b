//! From an expression's result to index values (the table in the module
//! docs), for the interpreter's `Variable` and for the `serde_json::Value`
//! the field-path reader returns. Both must agree.

use jmespath::{Rcvar, Variable};
use serde_json::Value;

use super::numbers;

pub(super) const OBJECT_RESULT: &str =
    "result is an object; an index value must be a string, number, boolean, or an array of them";

/// Maps a JMESPath result to index values (see the module docs). Nested
/// arrays are walked with an explicit stack, so no input depth can overflow.
pub(super) fn values_of_variable(result: &Variable) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut pending: Vec<std::slice::Iter<'_, Rcvar>> = Vec::new();
    let mut next = Some(result);
    loop {
        if let Some(value) = next.take() {
            match value {
                Variable::Null => {}
                Variable::String(s) => out.push(s.clone()),
                Variable::Bool(b) => out.push(b.to_string()),
                Variable::Number(n) => out.push(numbers::text(n)),
                Variable::Array(items) => pending.push(items.iter()),
                Variable::Object(_) => return Err(OBJECT_RESULT.to_owned()),
                Variable::Expref(_) => {
                    return Err("result is an expression reference (&expr), not a value".to_owned());
                }
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

/// [`values_of_variable`] for a `serde_json::Value`; both must agree.
pub(super) fn values_of_json(result: &Value) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut pending: Vec<std::slice::Iter<'_, Value>> = Vec::new();
    let mut next = Some(result);
    loop {
        if let Some(value) = next.take() {
            match value {
                Value::Null => {}
                Value::String(s) => out.push(s.clone()),
                Value::Bool(b) => out.push(b.to_string()),
                Value::Number(n) => out.push(numbers::text(n)),
                Value::Array(items) => pending.push(items.iter()),
                Value::Object(_) => return Err(OBJECT_RESULT.to_owned()),
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
