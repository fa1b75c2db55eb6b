//! kubectl's JSONPath, read once into [`Step`]s: `.spec.replicas`,
//! `.metadata.labels.app\.kubernetes\.io/name`, `['a.b']`, `[0]`, `[-1]`,
//! `[2,0]`, `[*]`, `.*`, `[1:3]`, `..name` and filters of one comparison
//! (`[?(@.type=="Ready")]`, `[?(@.port > 100)]`) or of a presence
//! (`[?(@.ready)]`).
//!
//! Two readers of the steps: a CRD's printer columns evaluate them on an
//! object as client-go's `jsonpath` package does (`serve::table`), and
//! `kubectl wait --for=jsonpath=` turns them into a JMESPath
//! [`Condition`](super::Condition), refusing the steps JMESPath cannot say.
//! What neither can read (templates, filters that combine comparisons) is
//! refused here, with where.

use serde_json::Value;

/// A parsed path: its steps, each with the byte of the path where it
/// starts (after its `.` or `[`), for errors that say where.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct JsonPath {
    pub(crate) steps: Vec<(usize, Step)>,
}

/// One step of a path, from a value to the values it selects.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Step {
    /// `.name`, `['name']`, or a first `name` in kubectl's relaxed form.
    Field(String),
    /// `..name`: the field in the value and everything below it.
    Recursive(String),
    /// A `.` followed by nothing or by `[`: the value itself.
    Current,
    /// `.*` or (`bracketed`) `[*]`: every member or element.
    All { bracketed: bool },
    /// `[0]`, `[-1]`, `[2,0]`.
    Indexes(Vec<i64>),
    /// `[start:end:step]`.
    Slice {
        start: Option<i64>,
        end: Option<i64>,
        step: Option<i64>,
    },
    /// `[?(@.path OP literal)]`, or `[?(@.path)]` for presence; the literal
    /// is a string, a number, a bool or null.
    Filter {
        path: Vec<(usize, Step)>,
        test: Option<(Op, Value)>,
    },
}

/// A filter's comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    /// Each comparison as written, the two-character ones first.
    const WRITTEN: [(&'static str, Op); 6] = [
        ("==", Op::Eq),
        ("!=", Op::Ne),
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("<", Op::Lt),
        (">", Op::Gt),
    ];

    /// How the comparison is written: `==`, `<=`, ...
    pub(crate) fn symbol(self) -> &'static str {
        Op::WRITTEN
            .iter()
            .find(|(_, op)| *op == self)
            .map_or("==", |(symbol, _)| symbol)
    }
}

/// Why a path was not understood, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("JSONPath {path:?} at byte {at}: {why}")]
pub(crate) struct JsonPathError {
    pub(crate) path: String,
    /// The byte of `path` where reading stopped.
    pub(crate) at: usize,
    pub(crate) why: String,
}

impl JsonPath {
    /// A path as client-go's templates write it: `{.a.b}` or `.a.b`, `$`
    /// for the object itself.
    #[cfg(feature = "serve")]
    pub(crate) fn parse(path: &str) -> Result<JsonPath, JsonPathError> {
        read(path, false)
    }

    /// A path as `kubectl wait --for=jsonpath=` relaxes it: the braces
    /// and the leading dot optional (`status.phase`), `$` a name as any
    /// other.
    pub(crate) fn relaxed(path: &str) -> Result<JsonPath, JsonPathError> {
        read(path, true)
    }
}

fn read(path: &str, relaxed: bool) -> Result<JsonPath, JsonPathError> {
    let end = path.trim_end().len();
    let mut parser = Parser {
        path,
        at: end - path[..end].trim_start().len(),
        end,
    };
    if parser.eat('{') {
        if !parser.rest().ends_with('}') {
            parser.at = parser.end;
            return Err(parser.error("a JSONPath that opens with { must close with }"));
        }
        parser.end -= 1;
    }
    if let Some(brace) = parser.rest().find(['{', '}']) {
        parser.at += brace;
        return Err(parser.error(
            "templates ({range}, several {...}) have no translation: write a JMESPath condition",
        ));
    }
    if !relaxed {
        parser.eat('$');
    }
    let steps = parser.steps(relaxed, false)?;
    Ok(JsonPath { steps })
}

struct Parser<'p> {
    path: &'p str,
    /// The next byte to read.
    at: usize,
    /// The byte where the path ends (before a closing `}`).
    end: usize,
}

impl<'p> Parser<'p> {
    fn error(&self, why: impl Into<String>) -> JsonPathError {
        JsonPathError {
            path: self.path.to_owned(),
            at: self.at,
            why: why.into(),
        }
    }

    fn rest(&self) -> &'p str {
        &self.path[self.at..self.end]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += c.len_utf8();
        Some(c)
    }

    fn eat(&mut self, c: char) -> bool {
        self.peek() == Some(c) && self.bump().is_some()
    }

    fn spaces(&mut self) {
        self.at += self.rest().len() - self.rest().trim_start().len();
    }

    /// Steps until the end, or (in a filter) until what ends the filter's
    /// path; `bare_first`: a first name or `*` may come without its dot.
    fn steps(
        &mut self,
        bare_first: bool,
        in_filter: bool,
    ) -> Result<Vec<(usize, Step)>, JsonPathError> {
        let mut steps = Vec::new();
        if bare_first && !matches!(self.peek(), None | Some('.' | '[')) {
            let at = self.at;
            let step = if self.eat('*') {
                Step::All { bracketed: false }
            } else {
                Step::Field(self.name()?)
            };
            steps.push((at, step));
        }
        loop {
            let at = self.at + 1;
            let step = if self.eat('[') {
                self.bracket()?
            } else if self.eat('.') {
                if self.eat('.') {
                    Step::Recursive(self.name()?)
                } else if self.eat('*') {
                    Step::All { bracketed: false }
                } else if matches!(self.peek(), None | Some('[')) {
                    Step::Current
                } else {
                    Step::Field(self.name()?)
                }
            } else if in_filter || self.peek().is_none() {
                return Ok(steps);
            } else {
                return Err(self.error("expected . or ["));
            };
            steps.push((at, step));
        }
    }

    /// A field name, up to an unescaped `.`, `[`, space, `)`, `&`, `|` or
    /// comparison; `\` takes the next character as it is
    /// (`app\.kubernetes\.io`).
    fn name(&mut self) -> Result<String, JsonPathError> {
        let mut name = String::new();
        while let Some(c) = self.peek() {
            match c {
                '.' | '[' | ')' | '=' | '!' | '<' | '>' | '&' | '|' => break,
                c if c.is_whitespace() => break,
                ']' | ',' | '(' | '@' | '?' | '\'' | '"' => {
                    return Err(self.error(format!("unexpected {c:?} in a field name")));
                }
                '\\' => {
                    self.bump();
                    let escaped = self.bump();
                    name.push(
                        escaped
                            .ok_or_else(|| self.error("a \\ must be followed by a character"))?,
                    );
                }
                c => {
                    self.bump();
                    name.push(c);
                }
            }
        }
        if name.is_empty() {
            return Err(self.error("expected a field name"));
        }
        Ok(name)
    }

    /// A quoted name or string, `'...'` or `"..."`, the quote next; `\`
    /// takes the next character as it is.
    fn quoted(&mut self) -> Result<String, JsonPathError> {
        let quote = self.bump();
        let mut text = String::new();
        loop {
            let c = match self.bump() {
                Some('\\') => self.bump(),
                c if c == quote => return Ok(text),
                c => c,
            };
            text.push(c.ok_or_else(|| self.error("the quoted name is not closed"))?);
        }
    }

    /// What follows `[`, up to and including its `]`.
    fn bracket(&mut self) -> Result<Step, JsonPathError> {
        self.spaces();
        let step = match self.peek() {
            Some('\'' | '"') => Step::Field(self.quoted()?),
            Some('*') => {
                self.bump();
                Step::All { bracketed: true }
            }
            Some('?') => {
                self.bump();
                self.filter()?
            }
            _ => self.indexes()?,
        };
        self.spaces();
        if !self.eat(']') {
            return Err(self.error("expected ]"));
        }
        Ok(step)
    }

    /// `n`, `n,m,...` or `start:end:step`, up to the `]`.
    fn indexes(&mut self) -> Result<Step, JsonPathError> {
        let rest = self.rest();
        let inside = &rest[..rest.find(']').unwrap_or(rest.len())];
        let step = if inside.contains(':') {
            let bounds: Option<Vec<Option<i64>>> = inside
                .split(':')
                .map(|part| match part.trim() {
                    "" => Some(None),
                    part => part.parse().ok().map(Some),
                })
                .collect();
            match bounds.as_deref() {
                Some(&[start, end]) => Step::Slice {
                    start,
                    end,
                    step: None,
                },
                Some(&[start, end, step]) => Step::Slice { start, end, step },
                _ => return Err(self.error("expected a slice [start:end:step] of integers")),
            }
        } else {
            let indexes: Option<Vec<i64>> =
                inside.split(',').map(|i| i.trim().parse().ok()).collect();
            Step::Indexes(indexes.ok_or_else(|| {
                self.error("expected an index, '*', a quoted name or a filter in [...]")
            })?)
        };
        self.at += inside.len();
        Ok(step)
    }

    /// A filter, `?` read: `(@.path OP literal)` or `(@.path)`, up to and
    /// including its `)`.
    fn filter(&mut self) -> Result<Step, JsonPathError> {
        if !self.eat('(') {
            return Err(self.error("expected ( after ?"));
        }
        self.spaces();
        if !self.eat('@') {
            return Err(self.error("a filter must start with @ (the element)"));
        }
        let path = self.steps(false, true)?;
        self.spaces();
        let rest = self.rest();
        let test = match Op::WRITTEN
            .into_iter()
            .find(|(written, _)| rest.starts_with(written))
        {
            Some((written, op)) => {
                self.at += written.len();
                self.spaces();
                Some((op, self.literal()?))
            }
            None => None,
        };
        self.spaces();
        match self.bump() {
            Some(')') => Ok(Step::Filter { path, test }),
            Some('&' | '|') => Err(self.error(
                "a filter that combines comparisons has no translation: write a JMESPath condition",
            )),
            _ if test.is_some() => Err(self.error("expected ) to close the filter")),
            _ => Err(self.error("expected ==, !=, <, <=, > or >= in the filter")),
        }
    }

    /// A filter's literal: a quoted string, a number, `true`, `false` or
    /// `null`.
    fn literal(&mut self) -> Result<Value, JsonPathError> {
        if matches!(self.peek(), Some('\'' | '"')) {
            return self.quoted().map(Value::String);
        }
        let rest = self.rest();
        let word = &rest[..rest
            .find(|c: char| c == ')' || c.is_whitespace())
            .unwrap_or(rest.len())];
        self.at += word.len();
        match serde_json::from_str(word) {
            Ok(value @ (Value::Number(_) | Value::Bool(_) | Value::Null)) => Ok(value),
            _ => Err(self.error(
                "expected a quoted string, a number, true, false or null after the comparison",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_step_says_where_it_starts_after_its_dot_or_bracket() {
        assert_eq!(
            JsonPath::relaxed("{.a[0]..b}").unwrap().steps,
            [
                (2, Step::Field("a".into())),
                (4, Step::Indexes(vec![0])),
                (7, Step::Recursive("b".into())),
            ]
        );
        let error = JsonPath::relaxed("{.a[?(@.b == 'c' || @.d)]}").unwrap_err();
        assert_eq!(error.at, 18, "{error}");
        assert!(error.why.contains("combines comparisons"), "{error}");
    }

    #[test]
    fn blank_paths_have_no_steps() {
        for blank in ["", "   ", " {} "] {
            assert_eq!(JsonPath::relaxed(blank).unwrap().steps, [], "{blank:?}");
        }
    }

    #[test]
    fn kubectl_reads_a_first_name_without_its_dot_and_dollar_as_a_name() {
        assert_eq!(
            JsonPath::relaxed("$.a").unwrap().steps,
            [(0, Step::Field("$".into())), (2, Step::Field("a".into()))]
        );
        assert_eq!(
            JsonPath::relaxed("*.a").unwrap().steps,
            [
                (0, Step::All { bracketed: false }),
                (2, Step::Field("a".into()))
            ]
        );
    }

    #[cfg(feature = "serve")]
    #[test]
    fn templates_read_dollar_as_the_object_and_need_the_first_dot() {
        assert_eq!(
            JsonPath::parse("{$.a}").unwrap().steps,
            [(3, Step::Field("a".into()))]
        );
        assert_eq!(JsonPath::parse("a").unwrap_err().why, "expected . or [");
    }
}
