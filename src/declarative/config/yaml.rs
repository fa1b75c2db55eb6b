//! A YAML (and so JSON) reader that remembers where every value came from.
//!
//! serde's YAML deserializers stop at the first error and forget positions
//! once a value is built. Config validation wants the opposite: every error
//! in the file at once, each with its line and column. So the file is read
//! into a small tree of spanned nodes, converted to a `serde_json::Value` for
//! validation, with a side table from JSON pointer to position.

use std::collections::HashMap;

use serde_json::{Map, Number, Value};
use serde_saphyr::granit_parser::{Event, Options, Parser, ScalarStyle, Span};

/// A 1-based line and column in the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1.
    pub column: usize,
}

impl Position {
    fn from_span(span: &Span) -> Self {
        Position {
            line: span.start.line().max(1),
            column: span.start.col() + 1,
        }
    }
}

/// The parsed document: its JSON value and the position of every node.
#[derive(Debug, Default)]
pub(crate) struct Spanned {
    pub(crate) value: Value,
    /// JSON pointer of a value → where the value starts.
    pub(crate) values: HashMap<String, Position>,
    /// JSON pointer of a mapping entry → where its key starts.
    pub(crate) keys: HashMap<String, Position>,
    /// Problems found while reading (duplicate keys, non-string keys, ...):
    /// pointer, position, message.
    pub(crate) problems: Vec<(String, Position, String)>,
}

impl Spanned {
    /// The best position for a pointer: the value's, else the nearest
    /// ancestor's.
    pub(crate) fn position(&self, pointer: &str) -> Position {
        let mut p = pointer.to_string();
        loop {
            if let Some(pos) = self.values.get(&p) {
                return *pos;
            }
            match p.rfind('/') {
                Some(i) => p.truncate(i),
                None => return Position { line: 1, column: 1 },
            }
        }
    }
}

/// A syntax error: the file is not YAML.
#[derive(Debug)]
pub(crate) struct SyntaxError {
    pub(crate) position: Position,
    pub(crate) message: String,
}

/// Most nested levels accepted; deeper input is refused rather than risk
/// exhausting the stack.
const MAX_DEPTH: usize = 64;

/// Reads the first document of `text`.
pub(crate) fn parse(text: &str) -> Result<Spanned, SyntaxError> {
    let mut events = Vec::new();
    // Comments would arrive as events between a key and its value.
    let mut options = Options::default();
    options.set_emit_comments(false);
    for item in Parser::new_from_str_with_options(text, options) {
        match item {
            Ok((event, span)) => events.push((event, span)),
            Err(e) => {
                return Err(SyntaxError {
                    position: Position {
                        line: e.marker().line().max(1),
                        column: e.marker().col() + 1,
                    },
                    message: e.info().to_string(),
                });
            }
        }
    }
    let mut out = Spanned::default();
    let mut i = 0;
    // Skip to the first node of the first document.
    while i < events.len() {
        match events[i].0 {
            Event::StreamStart | Event::DocumentStart(..) => i += 1,
            _ => break,
        }
    }
    if i >= events.len() || matches!(events[i].0, Event::StreamEnd | Event::DocumentEnd) {
        out.value = Value::Null;
        return Ok(out);
    }
    let mut reader = Reader {
        events: &events,
        pos: i,
        out: &mut out,
    };
    let value = reader.node("", 0)?;
    out.value = value;
    Ok(out)
}

struct Reader<'a, 'e> {
    events: &'a [(Event<'e>, Span)],
    pos: usize,
    out: &'a mut Spanned,
}

impl<'a, 'e> Reader<'a, 'e> {
    fn next(&mut self) -> Result<(&'a Event<'e>, Span), SyntaxError> {
        let events: &'a [(Event<'e>, Span)] = self.events;
        match events.get(self.pos) {
            Some((e, s)) => {
                self.pos += 1;
                Ok((e, *s))
            }
            None => Err(SyntaxError {
                position: Position::default(),
                message: "unexpected end of document".into(),
            }),
        }
    }

    fn node(&mut self, pointer: &str, depth: usize) -> Result<Value, SyntaxError> {
        let (event, span) = self.next()?;
        let position = Position::from_span(&span);
        if depth > MAX_DEPTH {
            return Err(SyntaxError {
                position,
                message: format!("nested more than {MAX_DEPTH} levels deep"),
            });
        }
        self.out.values.insert(pointer.to_string(), position);
        match event {
            Event::Scalar(text, style, _, tag) => {
                let plain = matches!(style, ScalarStyle::Plain) && tag.is_none();
                Ok(scalar(text, plain))
            }
            Event::Alias(_) => Err(SyntaxError {
                position,
                message: "YAML aliases are not supported in config files".into(),
            }),
            Event::SequenceStart(..) => {
                let mut items = Vec::new();
                loop {
                    if matches!(self.events.get(self.pos), Some((Event::SequenceEnd, _))) {
                        self.pos += 1;
                        return Ok(Value::Array(items));
                    }
                    let child = format!("{pointer}/{}", items.len());
                    items.push(self.node(&child, depth + 1)?);
                }
            }
            Event::MappingStart(..) => {
                let mut map = Map::new();
                loop {
                    if matches!(self.events.get(self.pos), Some((Event::MappingEnd, _))) {
                        self.pos += 1;
                        return Ok(Value::Object(map));
                    }
                    let (key_event, key_span) = self.next()?;
                    let key_position = Position::from_span(&key_span);
                    let key = match key_event {
                        Event::Scalar(text, ..) => text.to_string(),
                        _ => {
                            // Skip the complex key's node and its value.
                            self.pos -= 1;
                            let _ = self.node(&format!("{pointer}/?"), depth + 1)?;
                            let _ = self.node(&format!("{pointer}/?"), depth + 1)?;
                            self.out.problems.push((
                                pointer.to_string(),
                                key_position,
                                "mapping keys must be plain strings".into(),
                            ));
                            continue;
                        }
                    };
                    let child = format!("{pointer}/{}", escape(&key));
                    if map.contains_key(&key) {
                        self.out.problems.push((
                            child.clone(),
                            key_position,
                            format!("duplicate key {key:?}"),
                        ));
                        // Read and drop the duplicate's value; the first wins.
                        let first = self.out.values.get(&child).copied();
                        let _ = self.node(&child, depth + 1)?;
                        if let Some(p) = first {
                            self.out.values.insert(child, p);
                        }
                        continue;
                    }
                    self.out.keys.insert(child.clone(), key_position);
                    let value = self.node(&child, depth + 1)?;
                    map.insert(key, value);
                }
            }
            other => Err(SyntaxError {
                position,
                message: format!("unexpected {other:?}"),
            }),
        }
    }
}

/// A JSON pointer token for `key` (RFC 6901).
pub(crate) fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// YAML 1.2 core schema resolution of a scalar: plain scalars may be null,
/// booleans or numbers; quoted ones are strings.
fn scalar(text: &str, plain: bool) -> Value {
    if !plain {
        return Value::String(text.to_string());
    }
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    if let Ok(i) = text.parse::<i64>() {
        return Value::Number(i.into());
    }
    let looks_numeric = text
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E'))
        && text.chars().any(|c| c.is_ascii_digit());
    if looks_numeric
        && let Ok(f) = text.parse::<f64>()
        && let Some(n) = Number::from_f64(f)
    {
        return Value::Number(n);
    }
    Value::String(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_values_with_positions() {
        let doc = parse("a: 1\nb:\n  - x\n  - 'true'\n  - true\nc: {d: null}\n").unwrap();
        assert_eq!(
            doc.value,
            json!({ "a": 1, "b": ["x", "true", true], "c": { "d": null } })
        );
        assert_eq!(doc.values["/b/1"], Position { line: 4, column: 5 });
        assert_eq!(doc.keys["/c"], Position { line: 6, column: 1 });
        assert_eq!(doc.position("/b/9/zz"), Position { line: 3, column: 3 });
    }

    #[test]
    fn json_is_read_too() {
        let doc = parse(r#"{"a": [1, 2.5, "s"], "b": {"c": false}}"#).unwrap();
        assert_eq!(
            doc.value,
            json!({ "a": [1, 2.5, "s"], "b": { "c": false } })
        );
    }

    #[test]
    fn duplicate_keys_are_reported_where_they_repeat() {
        let doc = parse("a: 1\nb: 2\na: 3\n").unwrap();
        assert_eq!(doc.value, json!({ "a": 1, "b": 2 }));
        assert_eq!(doc.problems.len(), 1);
        assert_eq!(doc.problems[0].1, Position { line: 3, column: 1 });
        assert!(doc.problems[0].2.contains("duplicate key \"a\""));
    }

    #[test]
    fn comments_between_keys_and_values_are_ignored() {
        let doc = parse("# head\na: # after the key\n  # own line\n  1\nb: [1, # in flow\n 2]\n")
            .unwrap();
        assert_eq!(doc.value, json!({ "a": 1, "b": [1, 2] }));
        assert_eq!(doc.values["/a"], Position { line: 4, column: 3 });
        assert!(doc.problems.is_empty(), "{:?}", doc.problems);
    }

    #[test]
    fn syntax_errors_have_a_position() {
        let err = parse("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(err.position.line >= 1, "{err:?}");
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let text = "[".repeat(10_000) + &"]".repeat(10_000);
        assert!(parse(&text).is_err());
    }

    #[test]
    fn keys_with_slashes_are_escaped_in_pointers() {
        let doc = parse("a/b: 1\n").unwrap();
        assert!(doc.values.contains_key("/a~1b"));
    }
}
