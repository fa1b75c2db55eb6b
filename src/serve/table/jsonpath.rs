//! The JSONPath of a CRD's printer columns, as client-go's `jsonpath`
//! package evaluates it for the API server's tables: `.spec.replicas`,
//! `.metadata.labels.app\.kubernetes\.io/name`, `.spec.items[0]`,
//! `.spec.items[-1]`, `.spec.items[*].name`, `.spec.items[1:3]`,
//! `.spec['key']`, `..name`, and filters such as
//! `.status.conditions[?(@.type=="Ready")].status`.
//!
//! A column shows the first value found, or nothing; a path this reader
//! does not understand is refused when the columns are read (its cells stay
//! empty), and no object makes evaluation fail.

use std::cmp::Ordering;

use serde_json::Value;

/// A parsed path.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct JsonPath {
    steps: Vec<Step>,
}

#[derive(Clone, Debug, PartialEq)]
enum Step {
    /// `.name`, `['name']`.
    Field(String),
    /// `..name`: the field in the value and everything below it.
    Recursive(String),
    /// `.*`, `[*]`: every element or member.
    All,
    /// `[0]`, `[-1]`, `[2,0]`.
    Indexes(Vec<i64>),
    /// `[start:end:step]`.
    Slice {
        start: Option<i64>,
        end: Option<i64>,
        step: Option<i64>,
    },
    /// `[?(@.path OP literal)]`, or `[?(@.path)]` for presence.
    Filter {
        path: Vec<Step>,
        test: Option<(Op, Literal)>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Clone, Debug, PartialEq)]
enum Literal {
    String(String),
    Number(f64),
    Bool(bool),
}

/// Why a path was not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("JSONPath {path:?} at byte {at}: {why}")]
pub(super) struct PathError {
    path: String,
    at: usize,
    why: &'static str,
}

impl JsonPath {
    /// Parses `path`, with or without the `{...}` that templates wrap it in.
    pub(super) fn parse(path: &str) -> Result<JsonPath, PathError> {
        let trimmed = path.trim();
        let inner = trimmed
            .strip_prefix('{')
            .and_then(|p| p.strip_suffix('}'))
            .unwrap_or(trimmed);
        let inner = inner.strip_prefix('$').unwrap_or(inner);
        let mut parser = Parser {
            text: inner,
            at: 0,
            path,
        };
        let steps = parser.steps(false)?;
        if parser.at < inner.len() {
            return Err(parser.error("unexpected text"));
        }
        Ok(JsonPath { steps })
    }

    /// The first value the path finds in `root`.
    pub(super) fn first<'a>(&self, root: &'a Value) -> Option<&'a Value> {
        evaluate(&self.steps, vec![root]).into_iter().next()
    }
}

struct Parser<'p> {
    text: &'p str,
    at: usize,
    path: &'p str,
}

impl Parser<'_> {
    fn error(&self, why: &'static str) -> PathError {
        PathError {
            path: self.path.to_owned(),
            at: self.at,
            why,
        }
    }

    fn rest(&self) -> &str {
        &self.text[self.at..]
    }

    fn eat(&mut self, token: &str) -> bool {
        if self.rest().starts_with(token) {
            self.at += token.len();
            true
        } else {
            false
        }
    }

    fn skip_spaces(&mut self) {
        let spaces = self.rest().len() - self.rest().trim_start().len();
        self.at += spaces;
    }

    /// Steps until the end, or (inside a filter) until what ends the
    /// filter's path: a space, an operator or `)`.
    fn steps(&mut self, in_filter: bool) -> Result<Vec<Step>, PathError> {
        let mut steps = Vec::new();
        loop {
            if self.rest().is_empty() {
                break;
            }
            if self.eat("..") {
                let name = self.name();
                if name.is_empty() {
                    return Err(self.error("a name must follow .."));
                }
                steps.push(Step::Recursive(name));
            } else if self.eat(".") {
                if self.eat("*") {
                    steps.push(Step::All);
                } else {
                    let name = self.name();
                    if name.is_empty() {
                        // A lone `.` is the value itself.
                        if !self.rest().is_empty() && !self.rest().starts_with('[') {
                            return Err(self.error("a name must follow ."));
                        }
                    } else {
                        steps.push(Step::Field(name));
                    }
                }
            } else if self.eat("[") {
                steps.push(self.bracket()?);
            } else if in_filter {
                break;
            } else {
                return Err(self.error("expected . or ["));
            }
        }
        Ok(steps)
    }

    /// A field name, up to an unescaped `.` or `[` (or, in a filter, a
    /// space, an operator or `)`); `\.` is a dot in the name.
    fn name(&mut self) -> String {
        let mut name = String::new();
        let mut chars = self.rest().char_indices().peekable();
        let mut end = self.rest().len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, next)) = chars.next() {
                        name.push(next);
                    }
                }
                '.' | '[' | ']' | ' ' | ')' | '=' | '!' | '<' | '>' | ',' => {
                    end = i;
                    break;
                }
                c => name.push(c),
            }
        }
        self.at += end;
        name
    }

    /// What follows `[`, up to and including its `]`.
    fn bracket(&mut self) -> Result<Step, PathError> {
        self.skip_spaces();
        let step = if self.eat("*") {
            Step::All
        } else if self.eat("?(") {
            self.filter()?
        } else if self.rest().starts_with('\'') || self.rest().starts_with('"') {
            Step::Field(self.quoted()?)
        } else {
            self.indexes()?
        };
        self.skip_spaces();
        if !self.eat("]") {
            return Err(self.error("expected ]"));
        }
        Ok(step)
    }

    fn quoted(&mut self) -> Result<String, PathError> {
        let quote = self.rest().chars().next().unwrap_or('"');
        self.at += 1;
        let Some(end) = self.rest().find(quote) else {
            return Err(self.error("unterminated quote"));
        };
        let text = self.rest()[..end].to_owned();
        self.at += end + 1;
        Ok(text)
    }

    /// `n`, `n,m,...` or `start:end:step`.
    fn indexes(&mut self) -> Result<Step, PathError> {
        let end = self.rest().find(']').unwrap_or(self.rest().len());
        let inside = &self.rest()[..end];
        let number = |s: &str| -> Result<Option<i64>, PathError> {
            let s = s.trim();
            if s.is_empty() {
                return Ok(None);
            }
            s.parse()
                .map(Some)
                .map_err(|_| self.error("an index must be an integer"))
        };
        let step = if inside.contains(':') {
            let parts: Vec<&str> = inside.split(':').collect();
            if parts.len() > 3 {
                return Err(self.error("a slice has at most three parts"));
            }
            Step::Slice {
                start: number(parts[0])?,
                end: number(parts.get(1).copied().unwrap_or(""))?,
                step: number(parts.get(2).copied().unwrap_or(""))?,
            }
        } else {
            let indexes = inside
                .split(',')
                .map(|part| number(part)?.ok_or_else(|| self.error("an empty index")))
                .collect::<Result<Vec<i64>, PathError>>()?;
            Step::Indexes(indexes)
        };
        self.at += end;
        Ok(step)
    }

    /// `?(` read; the filter up to and including `)`.
    fn filter(&mut self) -> Result<Step, PathError> {
        self.skip_spaces();
        if !self.eat("@") {
            return Err(self.error("a filter starts with @"));
        }
        let path = self.steps(true)?;
        self.skip_spaces();
        let op = [
            ("==", Op::Eq),
            ("!=", Op::Ne),
            ("<=", Op::Le),
            (">=", Op::Ge),
            ("<", Op::Lt),
            (">", Op::Gt),
        ]
        .into_iter()
        .find(|(token, _)| self.rest().starts_with(token));
        let test = match op {
            Some((token, op)) => {
                self.at += token.len();
                self.skip_spaces();
                Some((op, self.literal()?))
            }
            None => None,
        };
        self.skip_spaces();
        if !self.eat(")") {
            return Err(self.error("expected ) to end the filter"));
        }
        Ok(Step::Filter { path, test })
    }

    fn literal(&mut self) -> Result<Literal, PathError> {
        if self.rest().starts_with('\'') || self.rest().starts_with('"') {
            return self.quoted().map(Literal::String);
        }
        let end = self
            .rest()
            .find(|c: char| c == ')' || c.is_whitespace())
            .unwrap_or(self.rest().len());
        let word = &self.rest()[..end];
        let literal = match word {
            "true" => Literal::Bool(true),
            "false" => Literal::Bool(false),
            number => Literal::Number(
                number
                    .parse()
                    .map_err(|_| self.error("a filter compares with a string, number or bool"))?,
            ),
        };
        self.at += end;
        Ok(literal)
    }
}

/// Applies `steps` to each of `values`, in order.
fn evaluate<'a>(steps: &[Step], mut values: Vec<&'a Value>) -> Vec<&'a Value> {
    for step in steps {
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
        Step::All => match value {
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

fn compare(left: &Value, op: Op, right: &Literal) -> bool {
    let ordering = match (left, right) {
        (Value::String(l), Literal::String(r)) => Some(l.as_str().cmp(r.as_str())),
        (Value::Number(l), Literal::Number(r)) => l.as_f64().and_then(|l| l.partial_cmp(r)),
        (Value::Bool(l), Literal::Bool(r)) => Some(l.cmp(r)),
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
