//! `kubectl wait --for` forms, translated into conditions: what kubectl
//! checks, said in JMESPath.

use std::iter::Peekable;
use std::str::CharIndices;

use serde_json::Value;

use super::Condition;
use crate::cache::CacheError;

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
                [path, value] => {
                    let value = value.trim_matches(['\'', '"']);
                    if value.is_empty() {
                        return Err(refused(
                            "a value must follow the =, as in jsonpath={.status.readyReplicas}=3",
                        ));
                    }
                    (path.as_str(), Some(value))
                }
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

/// Translates a kubectl JSONPath (relaxed as kubectl relaxes it: braces and
/// the leading dot optional) into JMESPath. Errors say what, and where in
/// `path` (columns from 0).
fn translate(path: &str) -> Result<Translated, String> {
    let trimmed = path.trim();
    let (inner, start) = match trimmed.strip_prefix('{') {
        Some(rest) => match rest.strip_suffix('}') {
            Some(inner) => (inner, 1),
            None => return Err("a JSONPath that opens with { must close with }".to_owned()),
        },
        None => (trimmed, 0),
    };
    if inner.contains(['{', '}']) {
        return Err(
            "templates ({range}, several {...}) have no translation: write a JMESPath condition"
                .to_owned(),
        );
    }
    let offset = path.len() - path.trim_start().len() + start;
    let (inner, offset) = match inner.strip_prefix('.') {
        Some(rest) if !rest.starts_with('.') => (rest, offset + 1),
        _ => (inner, offset),
    };
    if inner.is_empty() {
        return Err("the JSONPath is empty".to_owned());
    }
    let mut reader = Reader {
        chars: inner.char_indices().peekable(),
        text: inner,
        offset: path[..offset].chars().count(),
    };
    let mut out = Translated {
        expression: String::new(),
        projects: false,
    };
    let mut first = true;
    loop {
        match reader.peek() {
            None if first => return Err("the JSONPath is empty".to_owned()),
            None => return Ok(out),
            Some('[') => reader.bracket(&mut out)?,
            Some('.') if first => {
                return Err(reader.at(
                    "recursive descent (..) has no JMESPath equivalent: write a JMESPath condition",
                ));
            }
            Some('.') => {
                reader.next();
                match reader.peek() {
                    Some('.') => {
                        return Err(reader.at(
                            "recursive descent (..) has no JMESPath equivalent: write a JMESPath condition",
                        ));
                    }
                    Some('*') => {
                        reader.next();
                        out.expression.push_str(".*");
                        out.projects = true;
                    }
                    Some('[') => return Err(reader.at("a field name must follow the dot")),
                    _ => {
                        let name = reader.field()?;
                        out.expression.push('.');
                        out.expression.push_str(&quoted_field(&name));
                    }
                }
            }
            Some('*') if first => {
                reader.next();
                out.expression.push('*');
                out.projects = true;
            }
            Some(_) if first => {
                let name = reader.field()?;
                out.expression.push_str(&quoted_field(&name));
            }
            Some(_) => return Err(reader.at("expected . or [")),
        }
        first = false;
    }
}

/// Reads a JSONPath's field spec, keeping track of columns for errors.
struct Reader<'a> {
    chars: Peekable<CharIndices<'a>>,
    text: &'a str,
    /// Characters of the whole path before `text`.
    offset: usize,
}

impl Reader<'_> {
    fn peek(&mut self) -> Option<char> {
        self.chars.peek().map(|&(_, c)| c)
    }

    fn next(&mut self) -> Option<char> {
        self.chars.next().map(|(_, c)| c)
    }

    /// The column (in characters of the whole path) of the next character.
    fn column(&mut self) -> usize {
        let byte = self.chars.peek().map_or(self.text.len(), |&(i, _)| i);
        self.offset + self.text[..byte].chars().count()
    }

    /// `what` at the next character's column.
    fn at(&mut self, what: &str) -> String {
        format!("{what} (column {})", self.column())
    }

    /// A field name, up to an unescaped `.`, `[`, space, `)` or operator
    /// (in a filter); `\` takes the next character as it is
    /// (`app\.kubernetes\.io`).
    fn field(&mut self) -> Result<String, String> {
        let mut name = String::new();
        while let Some(c) = self.peek() {
            match c {
                '.' | '[' | ')' | '=' | '!' | '<' | '>' | '&' | '|' => break,
                c if c.is_whitespace() => break,
                '\\' => {
                    self.next();
                    match self.next() {
                        Some(c) => name.push(c),
                        None => return Err(self.at("a \\ must be followed by a character")),
                    }
                }
                ']' | ',' | '(' | '@' | '?' | '\'' | '"' => {
                    return Err(self.at(&format!("unexpected {c:?} in a field name")));
                }
                c => {
                    self.next();
                    name.push(c);
                }
            }
        }
        if name.is_empty() {
            return Err(self.at("expected a field name"));
        }
        Ok(name)
    }

    /// A quoted string (`'...'` or `"..."`, `\` taking the next character
    /// as it is), the opening quote next.
    fn quoted(&mut self) -> Result<String, String> {
        let quote = self.next();
        let mut text = String::new();
        loop {
            match self.next() {
                None => return Err(self.at("the quoted name is not closed")),
                Some('\\') => match self.next() {
                    Some(c) => text.push(c),
                    None => return Err(self.at("the quoted name is not closed")),
                },
                Some(c) if Some(c) == quote => return Ok(text),
                Some(c) => text.push(c),
            }
        }
    }

    /// What a `[...]` says, the `[` next: a quoted field, `*`, a filter, an
    /// index or a slice.
    fn bracket(&mut self, out: &mut Translated) -> Result<(), String> {
        self.next();
        match self.peek() {
            Some('\'' | '"') => {
                let name = self.quoted()?;
                self.close()?;
                if !out.expression.is_empty() {
                    out.expression.push('.');
                }
                out.expression.push_str(&quoted_field(&name));
            }
            Some('*') => {
                self.next();
                self.close()?;
                out.expression.push_str("[*]");
                out.projects = true;
            }
            Some('?') => {
                self.next();
                let filter = self.filter()?;
                self.close()?;
                out.expression.push_str(&format!("[?{filter}]"));
                out.projects = true;
            }
            _ => {
                let column = self.column();
                let mut content = String::new();
                while let Some(c) = self.peek() {
                    if c == ']' {
                        break;
                    }
                    self.next();
                    content.push(c);
                }
                self.close()?;
                let content = content.trim();
                if content.contains(',') {
                    return Err(format!(
                        "unions ([a,b]) have no translation: write a JMESPath condition (column {column})"
                    ));
                }
                if content.contains(':') {
                    let parts: Vec<&str> = content.split(':').map(str::trim).collect();
                    if parts.len() > 3
                        || parts
                            .iter()
                            .any(|p| !p.is_empty() && p.parse::<i32>().is_err())
                    {
                        return Err(format!(
                            "expected a slice [start:end:step] of integers (column {column})"
                        ));
                    }
                    out.expression.push_str(&format!("[{}]", parts.join(":")));
                    out.projects = true;
                } else {
                    let index: i32 = content.parse().map_err(|_| {
                        format!("expected an index, '*', a quoted name or a filter in [...] (column {column})")
                    })?;
                    out.expression.push_str(&format!("[{index}]"));
                }
            }
        }
        Ok(())
    }

    /// The closing `]`.
    fn close(&mut self) -> Result<(), String> {
        match self.next() {
            Some(']') => Ok(()),
            _ => Err(self.at("expected ]")),
        }
    }

    /// A filter, `?` read, up to its closing `)`: `(@.a.b OP literal)` or
    /// `(@.a.b)`; as a JMESPath filter's condition.
    fn filter(&mut self) -> Result<String, String> {
        if self.next() != Some('(') {
            return Err(self.at("expected ( after ?"));
        }
        self.spaces();
        if self.next() != Some('@') {
            return Err(self.at("a filter must start with @ (the element)"));
        }
        let mut lhs = String::new();
        loop {
            match self.peek() {
                Some('.') => {
                    self.next();
                    let name = self.field()?;
                    push_field(&mut lhs, &name);
                }
                Some('[') => {
                    self.next();
                    if !matches!(self.peek(), Some('\'' | '"')) {
                        return Err(self.at("a filter's path takes fields only"));
                    }
                    let name = self.quoted()?;
                    self.close()?;
                    push_field(&mut lhs, &name);
                }
                _ => break,
            }
        }
        if lhs.is_empty() {
            lhs.push('@');
        }
        self.spaces();
        let op = match (self.next(), self.peek()) {
            (Some(')'), _) => return Ok(format!("{lhs} != null")),
            (Some(c @ ('=' | '!' | '<' | '>')), Some('=')) => {
                self.next();
                format!("{c}=")
            }
            (Some(c @ ('<' | '>')), _) => c.to_string(),
            (Some('&' | '|'), _) => {
                return Err(self.at(
                    "a filter that combines comparisons has no translation: write a JMESPath condition",
                ));
            }
            _ => return Err(self.at("expected ==, !=, <, <=, > or >= in the filter")),
        };
        self.spaces();
        let literal = match self.peek() {
            Some('\'' | '"') => Value::String(self.quoted()?),
            _ => {
                let mut text = String::new();
                while let Some(c) = self.peek() {
                    if c == ')' || c.is_whitespace() {
                        break;
                    }
                    self.next();
                    text.push(c);
                }
                match serde_json::from_str::<Value>(&text) {
                    Ok(v @ (Value::Number(_) | Value::Bool(_) | Value::Null)) => v,
                    _ => {
                        return Err(self.at(
                            "expected a quoted string, a number, true, false or null after the comparison",
                        ));
                    }
                }
            }
        };
        self.spaces();
        match self.next() {
            Some(')') => Ok(format!("{lhs} {op} {}", json_literal(&literal))),
            Some('&' | '|') => Err(self.at(
                "a filter that combines comparisons has no translation: write a JMESPath condition",
            )),
            _ => Err(self.at("expected ) to close the filter")),
        }
    }

    fn spaces(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.next();
        }
    }
}

/// Appends `.name` (or `name` first) to a relative path.
fn push_field(path: &mut String, name: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(&quoted_field(name));
}

#[cfg(test)]
mod tests;
