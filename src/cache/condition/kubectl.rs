//! `kubectl wait --for` forms, translated into conditions: what kubectl
//! checks, said in JMESPath.

use serde_json::Value;

use super::Condition;
use crate::cache::CacheError;
use crate::cache::jsonpath::{JsonPath, Op, Step};

impl Condition {
    /// The condition a `kubectl wait --for` form of a condition says:
    ///
    /// - `condition=TYPE` or `condition=TYPE=STATUS`
    ///   ([`kubectl_condition`](Self::kubectl_condition));
    /// - `jsonpath=EXPR` or `jsonpath=EXPR=VALUE`
    ///   ([`kubectl_jsonpath`](Self::kubectl_jsonpath)), the value and the
    ///   expression split at the first `=` that is not part of `==`, as
    ///   kubectl splits them; quotes around the value are dropped.
    ///
    /// (`delete` and `create` are not conditions on an object; see
    /// [`WaitFor::parse`](crate::informer::WaitFor::parse).)
    ///
    /// ```
    /// use kube_dynamic_informer::cache::Condition;
    ///
    /// let ready = Condition::from_kubectl("condition=Ready")?;
    /// assert_eq!(ready.to_string(), "condition=Ready");
    /// let running = Condition::from_kubectl("jsonpath={.status.phase}=Running")?;
    /// assert_eq!(
    ///     running.expression(),
    ///     r#""status"."phase" != null && to_string("status"."phase") == `"Running"`"#
    /// );
    /// let err = Condition::from_kubectl("jsonpath={..name}=x").unwrap_err();
    /// assert!(err.to_string().contains("recursive descent"), "{err}");
    /// # Ok::<(), kube_dynamic_informer::cache::CacheError>(())
    /// ```
    ///
    /// # Errors
    /// [`CacheError::KubectlForm`] for a form that is neither, or that
    /// [`kubectl_condition`](Self::kubectl_condition) or
    /// [`kubectl_jsonpath`](Self::kubectl_jsonpath) refuses.
    pub fn from_kubectl(form: &str) -> Result<Self, CacheError> {
        let refused = |reason: &str| CacheError::KubectlForm {
            form: form.to_owned(),
            reason: reason.to_owned(),
        };
        if let Some(rest) = form.strip_prefix("condition=") {
            let (name, status) = rest.split_once('=').unwrap_or((rest, "true"));
            return condition(form, name, status);
        }
        if let Some(rest) = form.strip_prefix("jsonpath=") {
            let parts = split_at_single_equals(rest);
            let (path, value) = match parts.as_slice() {
                [path] => (path.as_str(), None),
                [path, value] => (path.as_str(), Some(value.trim_matches(['\'', '"']))),
                _ => {
                    return Err(refused(
                        "expected jsonpath={.status.readyReplicas}=3 or jsonpath={.status.readyReplicas}",
                    ));
                }
            };
            return jsonpath(form, path, value);
        }
        Err(refused(
            "expected condition=TYPE[=STATUS] or jsonpath=EXPR[=VALUE]",
        ))
    }

    /// `kubectl wait --for=condition=TYPE=STATUS`: the object's
    /// `status.conditions` has an entry whose `type` is `condition_type`
    /// and whose `status` is `status` (kubectl's default is `True`), both
    /// compared without regard to case, and that is not older than the
    /// object's spec: when the object has a `metadata.generation`, the
    /// entry's `observedGeneration` (or else `status.observedGeneration`),
    /// if there is one, is not below it. The first entry of that type with
    /// a status decides.
    ///
    /// ```
    /// use kube_dynamic_informer::cache::{Condition, Verdict};
    ///
    /// let pod: kube_core::DynamicObject = serde_json::from_value(serde_json::json!({
    ///     "metadata": { "name": "web-0", "generation": 2 },
    ///     "status": {
    ///         "observedGeneration": 2,
    ///         "conditions": [{ "type": "Ready", "status": "True" }]
    ///     }
    /// }))?;
    /// assert!(Condition::kubectl_condition("ready", "true")?.evaluate_object(&pod).is_met());
    /// assert_eq!(
    ///     Condition::kubectl_condition("Ready", "False")?.evaluate_object(&pod),
    ///     Verdict::NotMet
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`CacheError::KubectlForm`] for an empty type or status.
    pub fn kubectl_condition(condition_type: &str, status: &str) -> Result<Self, CacheError> {
        condition(
            &format!("condition={condition_type}={status}"),
            condition_type,
            status,
        )
    }

    /// `kubectl wait --for=jsonpath=PATH=VALUE` (`value` given) or
    /// `--for=jsonpath=PATH` (`None`): the value at `path` (a kubectl
    /// JSONPath: `{.status.phase}`, `.status.phase` or `status.phase`) is
    /// `value` when written as text (numbers in their one spelling, `true`,
    /// `false`), or, without a value, is there. A path that gives several
    /// results (`[*]`, a filter `[?(@.type=="Ready")]`) must give exactly
    /// one, as kubectl requires.
    ///
    /// The path is translated into JMESPath: fields (`.a`, `['a.b']`,
    /// `a\.b`), indexes (`[0]`, `[-1]`), `[*]`, `.*`, slices (`[1:3]`) and
    /// filters of one comparison of a field with a literal
    /// (`[?(@.type=="Ready")]`, `[?(@.port>8000)]`) or of a field's presence
    /// (`[?(@.ready)]`). Recursive descent (`..`), unions (`[a,b]`),
    /// templates (`{range}`) and filters that combine comparisons have no
    /// translation: write those as a JMESPath condition.
    ///
    /// ```
    /// use kube_dynamic_informer::cache::Condition;
    ///
    /// let pod: kube_core::DynamicObject = serde_json::from_value(serde_json::json!({
    ///     "metadata": { "name": "web-0" },
    ///     "status": { "phase": "Running", "conditions": [{ "type": "Ready", "status": "True" }] }
    /// }))?;
    /// let ready = Condition::kubectl_jsonpath(r#"{.status.conditions[?(@.type=="Ready")].status}"#, Some("True"))?;
    /// assert!(ready.evaluate_object(&pod).is_met());
    /// let phase = Condition::kubectl_jsonpath(".status.phase", None)?;
    /// assert!(phase.evaluate_object(&pod).is_met());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`CacheError::KubectlForm`] for a path that does not parse or has no
    /// translation, or an empty value.
    pub fn kubectl_jsonpath(path: &str, value: Option<&str>) -> Result<Self, CacheError> {
        let form = match value {
            Some(value) => format!("jsonpath={path}={value}"),
            None => format!("jsonpath={path}"),
        };
        jsonpath(&form, path, value)
    }
}

/// The condition of `condition=NAME=STATUS`, written as `form`.
fn condition(form: &str, name: &str, status: &str) -> Result<Condition, CacheError> {
    let refused = |reason: &str| CacheError::KubectlForm {
        form: form.to_owned(),
        reason: reason.to_owned(),
    };
    if name.is_empty() {
        return Err(refused(
            "the condition's type is missing, as in condition=Ready",
        ));
    }
    if status.is_empty() {
        return Err(refused(
            "the condition's status is missing after the =, as in condition=Ready=False",
        ));
    }
    let name = json_literal(&Value::String(name.to_lowercase()));
    let status = json_literal(&Value::String(status.to_lowercase()));
    let expression = format!(
        "{{c: status.conditions[?type(@.\"type\") == 'string' && type(@.\"status\") == 'string' \
         && lower(@.\"type\") == {name}] | [0], \
         o: status.observedGeneration, g: metadata.generation}} \
         | c != null && lower(c.\"status\") == {status} \
         && (type(g) != 'number' || (c.observedGeneration || o || g) >= g)"
    );
    translated(form, &expression)
}

/// The condition of `jsonpath=PATH[=VALUE]`, written as `form`.
fn jsonpath(form: &str, path: &str, value: Option<&str>) -> Result<Condition, CacheError> {
    let refused = |reason: String| CacheError::KubectlForm {
        form: form.to_owned(),
        reason,
    };
    let value = match value.map(str::trim) {
        Some("") => {
            return Err(refused(
                "a value must follow the =, as in jsonpath={.status.readyReplicas}=3".to_owned(),
            ));
        }
        other => other,
    };
    let Translated {
        expression: p,
        projects,
    } = translate(path).map_err(refused)?;
    let one = format!("length(not_null({p}, `[]`)) == `1`");
    let expression = match (value, projects) {
        (None, false) => format!("{p} != null"),
        (None, true) => one,
        (Some(value), false) => format!(
            "{p} != null && to_string({p}) == {}",
            json_literal(&Value::String(value.to_owned()))
        ),
        (Some(value), true) => format!(
            "{one} && to_string({p} | [0]) == {}",
            json_literal(&Value::String(value.to_owned()))
        ),
    };
    translated(form, &expression)
}

/// A condition of `expression`, translated from `form`; its compile error
/// (which a translation should never have) said as the form's.
fn translated(form: &str, expression: &str) -> Result<Condition, CacheError> {
    Condition::written_as(expression, form).map_err(|err| CacheError::KubectlForm {
        form: form.to_owned(),
        reason: format!("its translation does not compile: {err}"),
    })
}

/// `value` as a JMESPath JSON literal: `` `"Ready"` ``.
fn json_literal(value: &Value) -> String {
    format!("`{}`", value.to_string().replace('`', "\\`"))
}

/// A field name as a JMESPath quoted identifier: `"app.kubernetes.io/name"`.
fn quoted_field(name: &str) -> String {
    Value::String(name.to_owned()).to_string()
}

/// Splits at each `=` that is not part of `==` (kubectl's
/// `splitJSONPathInput`): `{.a}=b` gives `{.a}` and `b`;
/// `{.a[?(@.b=="c")]}=d` keeps the filter whole.
fn split_at_single_equals(input: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut part = String::new();
    let mut chars = input.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '=' if chars.peek() == Some(&'=') => {
                chars.next();
                part.push_str("==");
            }
            '=' => parts.push(std::mem::take(&mut part)),
            c => part.push(c),
        }
    }
    parts.push(part);
    parts
}

/// A JSONPath as JMESPath, and whether it gives a list of results.
#[derive(Debug, PartialEq)]
struct Translated {
    expression: String,
    projects: bool,
}

const RECURSIVE: &str =
    "recursive descent (..) has no JMESPath equivalent: write a JMESPath condition";

/// Translates a kubectl JSONPath (relaxed as kubectl relaxes it: braces and
/// the leading dot optional) into JMESPath. Errors say what, and where in
/// `path` (columns from 0).
fn translate(path: &str) -> Result<Translated, String> {
    let steps = JsonPath::relaxed(path)
        .map_err(|e| located(path, e.at, &e.why))?
        .steps;
    let mut out = Translated {
        expression: String::new(),
        projects: false,
    };
    for (i, (at, step)) in steps.iter().enumerate() {
        let e = &mut out.expression;
        match step {
            Step::Field(name) => push_field(e, name),
            Step::All { bracketed: false } => e.push_str(if e.is_empty() { "*" } else { ".*" }),
            Step::All { bracketed: true } => e.push_str("[*]"),
            Step::Indexes(indexes) => match indexes.as_slice() {
                [index] => e.push_str(&format!("[{index}]")),
                _ => {
                    let union = "unions ([a,b]) have no translation: write a JMESPath condition";
                    return Err(located(path, *at, union));
                }
            },
            Step::Slice { start, end, step } => {
                let bound = |b: &Option<i64>| b.map_or(String::new(), |b| b.to_string());
                let step = step.map_or(String::new(), |s| format!(":{s}"));
                e.push_str(&format!("[{}:{}{step}]", bound(start), bound(end)));
            }
            Step::Filter { path: lhs, test } => {
                e.push_str(&format!("[?{}]", filter(path, lhs, test)?));
            }
            Step::Recursive(_) => return Err(located(path, *at, RECURSIVE)),
            // The leading dot kubectl makes optional.
            Step::Current if i == 0 => {}
            Step::Current if i + 1 < steps.len() => {
                return Err(located(path, *at, "a field name must follow the dot"));
            }
            Step::Current => return Err(located(path, *at, "expected a field name")),
        }
        out.projects |= matches!(
            step,
            Step::All { .. } | Step::Slice { .. } | Step::Filter { .. }
        );
    }
    if out.expression.is_empty() {
        return Err("the JSONPath is empty".to_owned());
    }
    Ok(out)
}

/// A filter's test as the condition of a JMESPath filter: the field
/// compared with a JSON literal, or `"ready" != null` for presence. Its
/// path takes fields only.
fn filter(path: &str, lhs: &[(usize, Step)], test: &Option<(Op, Value)>) -> Result<String, String> {
    let mut field = String::new();
    for (at, step) in lhs {
        match step {
            Step::Field(name) => push_field(&mut field, name),
            Step::Recursive(_) => return Err(located(path, *at, RECURSIVE)),
            _ => return Err(located(path, *at, "a filter's path takes fields only")),
        }
    }
    if field.is_empty() {
        field.push('@');
    }
    Ok(match test {
        None => format!("{field} != null"),
        Some((op, literal)) => format!("{field} {} {}", op.symbol(), json_literal(literal)),
    })
}

/// `what` at byte `at` of `path`, said as a column (in characters).
fn located(path: &str, at: usize, what: &str) -> String {
    let column = path.get(..at).map_or(at, |before| before.chars().count());
    format!("{what} (column {column})")
}

/// Appends `.name` (or `name` first) to a path.
fn push_field(path: &mut String, name: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(&quoted_field(name));
}

#[cfg(test)]
mod tests;
