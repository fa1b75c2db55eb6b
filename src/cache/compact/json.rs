//! An object's JSON, written straight from its bytes, and its `Serialize`:
//! what `serde_json` writes, and serialisers are given, for the
//! `DynamicObject` it was built from.

use super::object::{Parts, to_time};
use super::*;

/// Writes the JSON of an object's parts into `out`.
pub(super) fn write_object(parts: &Parts<'_>, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
    let data = match parts.data {
        Node::Map(data) => Some(data),
        Node::Null => None,
        _ => return Err(not_flattenable()),
    };
    out.push(b'{');
    if let Some((api_version, kind)) = parts.types {
        out.extend_from_slice(br#""apiVersion":"#);
        string(out, api_version);
        out.extend_from_slice(br#","kind":"#);
        string(out, kind);
        out.push(b',');
    }
    out.extend_from_slice(br#""metadata":"#);
    match parts.meta {
        Some(meta) => value(out, Node::Map(meta))?,
        None => out.extend_from_slice(b"{}"),
    }
    if let Some(data) = data.filter(|d| d.len() > 0) {
        out.push(b',');
        entries(out, data)?;
    }
    out.push(b'}');
    Ok(())
}

/// A map's entries, `"key":value` separated by commas.
fn entries(out: &mut Vec<u8>, map: Seq<'_>) -> Result<(), serde_json::Error> {
    for (i, (k, v)) in map.entries().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        string(out, k.text);
        out.push(b':');
        value(out, v)?;
    }
    Ok(())
}

/// What `serde_json` says of a `DynamicObject` whose data it cannot flatten.
fn not_flattenable() -> serde_json::Error {
    serde_json::Error::custom("can only flatten structs and maps: the object's data is neither")
}

fn value(out: &mut Vec<u8>, node: Node<'_>) -> Result<(), serde_json::Error> {
    match node {
        Node::Null => out.extend_from_slice(b"null"),
        Node::Bool(true) => out.extend_from_slice(b"true"),
        Node::Bool(false) => out.extend_from_slice(b"false"),
        Node::Uint(n) => out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes()),
        Node::Neg(n) => out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes()),
        Node::Float(f) => serde_json::to_writer(&mut *out, &f)?,
        Node::Str(s) => string(out, s),
        Node::Time(..) => time(out, node)?,
        Node::Array(items) => {
            out.push(b'[');
            for (i, item) in items.items().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                value(out, item)?;
            }
            out.push(b']');
        }
        Node::Map(entries) => match entries.tree {
            Some(id) => tree(out, entries, id)?,
            None => map(out, entries)?,
        },
    }
    Ok(())
}

fn map(out: &mut Vec<u8>, entries: Seq<'_>) -> Result<(), serde_json::Error> {
    out.push(b'{');
    self::entries(out, entries)?;
    out.push(b'}');
    Ok(())
}

/// A shared tree (a `fieldsV1`): its JSON written once for the tables and
/// copied for every object that holds it.
fn tree(out: &mut Vec<u8>, entries: Seq<'_>, id: usize) -> Result<(), serde_json::Error> {
    let tables = entries.tables();
    if let Some(json) = tables.tree_json(id) {
        out.extend_from_slice(json);
        return Ok(());
    }
    let start = out.len();
    map(out, entries)?;
    tables.keep_tree_json(id, &out[start..]);
    Ok(())
}

/// What each byte becomes in a JSON string, as `serde_json` writes it: 0
/// for itself, `u` for `\u00XX`, else the letter after a backslash.
const ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

/// A JSON string, escaped as `serde_json` escapes: `"`, `\` and control
/// characters, nothing else.
fn string(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape = ESCAPE[usize::from(b)];
        if escape == 0 {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        if escape == b'u' {
            let hex = [HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]];
            out.extend_from_slice(br"\u00");
            out.extend_from_slice(&hex);
        } else {
            out.extend_from_slice(&[b'\\', escape]);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// A timestamp as `Time` serialises it (`"2026-01-01T00:00:00Z"`: seconds,
/// in UTC), written without formatting machinery for years 0 to 9999.
fn time(out: &mut Vec<u8>, node: Node<'_>) -> Result<(), serde_json::Error> {
    let Some(time) = to_time(node) else {
        out.extend_from_slice(b"null");
        return Ok(());
    };
    let t = k8s_openapi::jiff::tz::Offset::UTC.to_datetime(time.0);
    let Ok(year) = u16::try_from(t.year()) else {
        return serde_json::to_writer(&mut *out, &time);
    };
    if year > 9999 {
        return serde_json::to_writer(&mut *out, &time);
    }
    let two = |n: i8| {
        let n = n.unsigned_abs();
        [b'0' + n / 10, b'0' + n % 10]
    };
    let (y, m, d) = (year, two(t.month()), two(t.day()));
    let (h, min, sec) = (two(t.hour()), two(t.minute()), two(t.second()));
    let digits = |n: u16, div: u16| b'0' + ((n / div) % 10) as u8;
    out.extend_from_slice(&[
        b'"',
        digits(y, 1000),
        digits(y, 100),
        digits(y, 10),
        digits(y, 1),
        b'-',
        m[0],
        m[1],
        b'-',
        d[0],
        d[1],
        b'T',
        h[0],
        h[1],
        b':',
        min[0],
        min[1],
        b':',
        sec[0],
        sec[1],
        b'Z',
        b'"',
    ]);
    Ok(())
}

// ---------------------------------------------------------------------------
// Serialize: the calls DynamicObject's and k8s-openapi's impls make
// ---------------------------------------------------------------------------

impl Serialize for CompactObject {
    /// Serialises as the `DynamicObject` would: a map of the type fields,
    /// `metadata`, then the entries of the data (flattened).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let parts = self.parts();
        let data = match parts.data {
            Node::Map(data) => Some(data),
            Node::Null => None,
            _ => {
                return Err(S::Error::custom(
                    "can only flatten structs and maps: the object's data is neither",
                ));
            }
        };
        let mut map = s.serialize_map(None)?;
        if let Some((api_version, kind)) = parts.types {
            map.serialize_entry("apiVersion", api_version)?;
            map.serialize_entry("kind", kind)?;
        }
        match parts.meta {
            Some(meta) => map.serialize_entry("metadata", &NodeSer(Node::Map(meta)))?,
            None => map.serialize_entry("metadata", &ObjectMeta::default())?,
        }
        for (k, v) in data.into_iter().flat_map(Seq::entries) {
            map.serialize_entry(k.text, &NodeSer(v))?;
        }
        map.end()
    }
}

/// A value of the bytes, serialised.
pub(super) struct NodeSer<'a>(pub(super) Node<'a>);

impl Serialize for NodeSer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Node::Null => s.serialize_unit(),
            Node::Bool(b) => s.serialize_bool(b),
            Node::Uint(n) => s.serialize_u64(n),
            Node::Neg(n) => s.serialize_i64(n),
            Node::Float(f) => s.serialize_f64(f),
            Node::Str(v) => s.serialize_str(v),
            Node::Time(..) => match to_time(self.0) {
                Some(time) => time.serialize(s),
                None => s.serialize_unit(),
            },
            Node::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items.items() {
                    seq.serialize_element(&NodeSer(item))?;
                }
                seq.end()
            }
            Node::Map(entries) => {
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries.entries() {
                    map.serialize_entry(k.text, &NodeSer(v))?;
                }
                map.end()
            }
        }
    }
}
