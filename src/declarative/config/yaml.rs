//! A YAML (and so JSON) reader that remembers where every value came from.
//!
//! serde's YAML deserializers stop at the first error and forget positions
//! once a value is built. Config validation wants the opposite: every error
//! in the file at once, each with its line and column. So the file is read
//! into a small tree of spanned nodes, converted to a `serde_json::Value` for
//! validation, with a side table from JSON pointer to position.

use std::collections::HashMap;

use serde_json::{Map, Number, Value};
use serde_saphyr::granit_parser::{
    Event, Marker, Options, Parser, ScalarStyle, ScanError, Span, StrInput,
};

/// A 1-based line and column in the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1.
    pub column: usize,
}

impl Position {
    fn at(marker: &Marker) -> Self {
        Position {
            line: marker.line().max(1),
            column: marker.col() + 1,
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
    /// Mappings with more entries than their [`EntryLimit`] allows.
    pub(crate) oversized: Vec<Oversized>,
}

/// The most entries the mapping at a JSON pointer may hold (`None`: no
/// limit). Past it, entries are counted while the file is read, not kept:
/// an oversized mapping costs the time to scan it, not memory.
pub(crate) type EntryLimit<'a> = &'a dyn Fn(&str) -> Option<usize>;

/// A mapping over its limit: the value holds its first `limit` entries.
#[derive(Debug)]
pub(crate) struct Oversized {
    /// JSON pointer of the mapping.
    pub(crate) pointer: String,
    /// Where the mapping starts.
    pub(crate) position: Position,
    /// How many entries it has.
    pub(crate) entries: usize,
    /// How many it may have.
    pub(crate) limit: usize,
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

impl From<ScanError> for SyntaxError {
    fn from(e: ScanError) -> Self {
        SyntaxError {
            position: Position::at(e.marker()),
            message: e.info().to_string(),
        }
    }
}

/// Most nested levels accepted; deeper input is refused rather than risk
/// exhausting the stack.
const MAX_DEPTH: usize = 64;

/// Reads the first document of `text`, keeping at most `limit` entries of
/// the mappings it names. Events are read one at a time, never all held:
/// what a limit leaves out is never stored. The rest of the stream is
/// still checked for syntax.
pub(crate) fn parse(text: &str, limit: EntryLimit<'_>) -> Result<Spanned, SyntaxError> {
    // Comments would arrive as events between a key and its value.
    let mut options = Options::default();
    options.set_emit_comments(false);
    let mut reader = Reader {
        parser: Parser::new_from_str_with_options(text, options),
        out: Spanned::default(),
        limit,
    };
    // Skip to the first node of the first document.
    while reader.next_if(|e| matches!(e, Event::StreamStart | Event::DocumentStart(..)))? {}
    let empty = reader.peek_is(|e| matches!(e, Event::StreamEnd | Event::DocumentEnd))?;
    if !empty && reader.parser.peek().is_some() {
        reader.out.value = reader.node("", 0)?;
    }
    for item in reader.parser.by_ref() {
        item?;
    }
    Ok(reader.out)
}

struct Reader<'e, 'l> {
    parser: Parser<'e, StrInput<'e>>,
    out: Spanned,
    limit: EntryLimit<'l>,
}

impl<'e> Reader<'e, '_> {
    fn next(&mut self) -> Result<(Event<'e>, Span), SyntaxError> {
        match self.parser.next_event() {
            Some(item) => Ok(item?),
            None => Err(SyntaxError {
                position: Position::default(),
                message: "unexpected end of document".into(),
            }),
        }
    }

    /// Whether the next event is one `is` accepts (false at the end).
    fn peek_is(&mut self, is: fn(&Event<'e>) -> bool) -> Result<bool, SyntaxError> {
        match self.parser.peek() {
            Some(Ok((event, _))) => Ok(is(event)),
            Some(Err(e)) => Err(e.into()),
            None => Ok(false),
        }
    }

    /// Consumes the next event if `is` accepts it.
    fn next_if(&mut self, is: fn(&Event<'e>) -> bool) -> Result<bool, SyntaxError> {
        let yes = self.peek_is(is)?;
        if yes {
            self.next()?;
        }
        Ok(yes)
    }

    fn node(&mut self, pointer: &str, depth: usize) -> Result<Value, SyntaxError> {
        let (event, span) = self.next()?;
        self.node_from(event, &span, pointer, depth)
    }

    /// The node that starts with `event`.
    fn node_from(
        &mut self,
        event: Event<'e>,
        span: &Span,
        pointer: &str,
        depth: usize,
    ) -> Result<Value, SyntaxError> {
        let position = Position::at(&span.start);
        if depth > MAX_DEPTH {
            return Err(too_deep(position));
        }
        self.out.values.insert(pointer.to_string(), position);
        match event {
            Event::Scalar(text, style, _, tag) => {
                let plain = matches!(style, ScalarStyle::Plain) && tag.is_none();
                Ok(scalar(&text, plain))
            }
            Event::Alias(_) => Err(alias(position)),
            Event::SequenceStart(..) => {
                let mut items = Vec::new();
                while !self.next_if(|e| matches!(e, Event::SequenceEnd))? {
                    let child = format!("{pointer}/{}", items.len());
                    items.push(self.node(&child, depth + 1)?);
                }
                Ok(Value::Array(items))
            }
            Event::MappingStart(..) => self.mapping(pointer, position, depth),
            other => Err(SyntaxError {
                position,
                message: format!("unexpected {other:?}"),
            }),
        }
    }

    /// The entries of a mapping, up to its limit; past it, the entries are
    /// counted and skipped.
    fn mapping(
        &mut self,
        pointer: &str,
        position: Position,
        depth: usize,
    ) -> Result<Value, SyntaxError> {
        let limit = (self.limit)(pointer);
        let mut map = Map::new();
        let mut skipped = 0;
        while !self.next_if(|e| matches!(e, Event::MappingEnd))? {
            if limit.is_some_and(|limit| map.len() >= limit) {
                self.skip(depth + 1)?;
                self.skip(depth + 1)?;
                skipped += 1;
                continue;
            }
            self.entry(&mut map, pointer, depth)?;
        }
        if let Some(limit) = limit.filter(|_| skipped > 0) {
            self.out.oversized.push(Oversized {
                pointer: pointer.to_string(),
                position,
                entries: map.len() + skipped,
                limit,
            });
        }
        Ok(Value::Object(map))
    }

    /// One key and its value, into `map`.
    fn entry(
        &mut self,
        map: &mut Map<String, Value>,
        pointer: &str,
        depth: usize,
    ) -> Result<(), SyntaxError> {
        let (key_event, key_span) = self.next()?;
        let key_position = Position::at(&key_span.start);
        let key = match key_event {
            Event::Scalar(text, ..) => text.to_string(),
            other => {
                // Skip the complex key's node and its value.
                let _ = self.node_from(other, &key_span, &format!("{pointer}/?"), depth + 1)?;
                let _ = self.node(&format!("{pointer}/?"), depth + 1)?;
                self.out.problems.push((
                    pointer.to_string(),
                    key_position,
                    "mapping keys must be plain strings".into(),
                ));
                return Ok(());
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
            return Ok(());
        }
        self.out.keys.insert(child.clone(), key_position);
        let value = self.node(&child, depth + 1)?;
        map.insert(key, value);
        Ok(())
    }

    /// Reads past one node, keeping nothing of it; refuses what reading it
    /// would refuse (aliases, too deep a nesting).
    fn skip(&mut self, depth: usize) -> Result<(), SyntaxError> {
        let mut open = 0;
        loop {
            let (event, span) = self.next()?;
            let position = Position::at(&span.start);
            match event {
                Event::SequenceStart(..) | Event::MappingStart(..) => {
                    if depth + open > MAX_DEPTH {
                        return Err(too_deep(position));
                    }
                    open += 1;
                }
                Event::SequenceEnd | Event::MappingEnd => open = open.saturating_sub(1),
                Event::Alias(_) => return Err(alias(position)),
                _ if depth + open > MAX_DEPTH => return Err(too_deep(position)),
                _ => {}
            }
            if open == 0 {
                return Ok(());
            }
        }
    }
}

fn too_deep(position: Position) -> SyntaxError {
    SyntaxError {
        position,
        message: format!("nested more than {MAX_DEPTH} levels deep"),
    }
}

fn alias(position: Position) -> SyntaxError {
    SyntaxError {
        position,
        message: "YAML aliases are not supported in config files".into(),
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

    /// The document, with no mapping limited.
    fn parse(text: &str) -> Result<Spanned, SyntaxError> {
        super::parse(text, &|_| None)
    }

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

    #[test]
    fn entries_past_a_limit_are_counted_not_kept() {
        let limit = |pointer: &str| (pointer == "/a").then_some(2);
        let text = "a: {x: 1, y: [2], z: {q: 3}, w: 4}\nb: {x: 1, y: 2, z: 3}\n";
        let doc = super::parse(text, &limit).unwrap();
        assert_eq!(
            doc.value,
            json!({ "a": { "x": 1, "y": [2] }, "b": { "x": 1, "y": 2, "z": 3 } })
        );
        assert!(!doc.values.contains_key("/a/z/q"), "{:?}", doc.values);
        let [over] = doc.oversized.as_slice() else {
            panic!("{:?}", doc.oversized)
        };
        assert_eq!(
            (
                over.pointer.as_str(),
                over.position,
                over.entries,
                over.limit
            ),
            ("/a", Position { line: 1, column: 4 }, 4, 2)
        );
    }

    #[test]
    fn what_a_limit_skips_is_still_checked() {
        let limit = |pointer: &str| (pointer.is_empty()).then_some(1);
        let deep = "[".repeat(100) + &"]".repeat(100);
        for text in [
            format!("a: 1\nb: {deep}\n"),
            "a: &x 1\nb: *x\n".to_string(),
            "a: 1\nb: [1, 2\n".to_string(),
            "a: 1\n---\nb: [\n".to_string(),
        ] {
            assert!(super::parse(&text, &limit).is_err(), "{text}");
        }
    }
}
