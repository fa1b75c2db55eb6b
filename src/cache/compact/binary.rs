//! The compact form in a file, as snapshot files hold it
//! ([`crate::informer::snapshot`]): an object's bytes are written as the
//! store holds them, and read back into an object as they are, once
//! checked, with no JSON to parse and nothing to encode again.
//!
//! A stream of records, each a tag byte, a length (LEB128) and a payload.
//! The keys and shared trees of the objects' tables are written in records
//! of their own, in the order of their numbers, before the first object
//! that may use them (the well-known keys every table starts with are not
//! written); an object's record holds its bytes.

use super::node::{ARRAY, Cursor, FALSE, FLOAT, ISTR, MAP, NEG, NULL, STR, TIME, TREE, TRUE, UINT};
use super::table::WELL_KNOWN;
use super::*;

/// A record defining the next key.
pub(crate) const KEY: u8 = b'k';
/// A record defining the next shared tree.
pub(crate) const TREE_RECORD: u8 = b't';
/// A record holding an object.
pub(crate) const OBJECT: u8 = b'o';

/// The deepest value read back: as deep as the objects decoded from the
/// wire can be.
const MAX_DEPTH: usize = crate::wire::MAX_OBJECT_DEPTH;

/// Appends one record.
pub(crate) fn write_record(out: &mut Vec<u8>, tag: u8, payload: &[u8]) {
    out.push(tag);
    node::write_varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// Reads a number [`node::write_varint`] wrote, a byte at a time from `next`.
pub(crate) fn read_varint(mut next: impl FnMut() -> Result<u8, String>) -> Result<u64, String> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = next()?;
        n |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(n);
        }
    }
    Err("a number is longer than 64 bits".to_owned())
}

/// Writes the objects of one store as records: their bytes as they are,
/// after the keys and trees of their tables not written yet.
pub(crate) struct Encoder {
    tables: Arc<Tables>,
    keys: usize,
    trees: usize,
}

impl Encoder {
    /// An encoder for the objects that share `object`'s tables.
    pub(crate) fn for_objects_like(object: &CompactObject) -> Self {
        Encoder {
            tables: Arc::clone(object.tables()),
            keys: WELL_KNOWN.len(),
            trees: 0,
        }
    }

    /// Whether `object` reads the tables this encoder writes.
    pub(crate) fn takes(&self, object: &CompactObject) -> bool {
        Arc::ptr_eq(&self.tables, object.tables())
    }

    /// Appends to `out` the records of `object`, which [`Encoder::takes`]:
    /// the keys and trees numbered since the last object, then the object.
    pub(crate) fn object(&mut self, object: &CompactObject, out: &mut Vec<u8>) {
        while let Some(key) = self.tables.key(self.keys) {
            write_record(out, KEY, key.as_bytes());
            self.keys += 1;
        }
        while let Some(tree) = self.tables.tree(self.trees) {
            write_record(out, TREE_RECORD, tree);
            self.trees += 1;
        }
        write_record(out, OBJECT, object.bytes());
    }
}

/// Reads records back into compact objects, with tables of their own.
#[derive(Default)]
pub(crate) struct Decoder {
    interner: Interner,
}

impl Decoder {
    /// Reads one record: the object for an object record, `None` for a
    /// definition. Fails, saying why, on a record that is not one this
    /// module writes.
    pub(crate) fn record(
        &mut self,
        tag: u8,
        payload: &[u8],
    ) -> Result<Option<CompactObject>, String> {
        let tables = Arc::clone(self.interner.tables());
        match tag {
            KEY => {
                let key = std::str::from_utf8(payload).map_err(|_| "a key is not UTF-8")?;
                self.interner.adopt_key(tables.key_count(), key)?;
                Ok(None)
            }
            TREE_RECORD => {
                let mut at = Cursor::new(Doc {
                    bytes: payload,
                    tables: &tables,
                });
                check_value(&mut at, 0, false)?;
                check_end(&at)?;
                self.interner.adopt_tree(tables.tree_count(), payload)?;
                Ok(None)
            }
            OBJECT => {
                check_object(Doc {
                    bytes: payload,
                    tables: &tables,
                })?;
                Ok(Some(CompactObject::from_bytes(tables, payload)))
            }
            other => Err(format!("unknown record type {other}")),
        }
    }

    /// The interner, with the keys and trees of the objects read.
    pub(crate) fn into_interner(self) -> Interner {
        self.interner
    }
}

/// Checks that `doc` holds one object as this module writes them.
fn check_object(doc: Doc<'_>) -> Result<(), String> {
    let mut at = Cursor::new(doc);
    match at.byte() {
        Some(0) => {}
        Some(1) => {
            check_key(&mut at)?;
            check_key(&mut at)?;
        }
        _ => return Err("an object does not start with its flags".to_owned()),
    }
    if at.clone().byte() != Some(MAP) {
        return Err("an object's metadata is not a map".to_owned());
    }
    check_value(&mut at, 0, true)?;
    check_value(&mut at, 0, true)?;
    check_end(&at)
}

fn check_end(at: &Cursor<'_>) -> Result<(), String> {
    if at.at_end() {
        Ok(())
    } else {
        Err(format!("{} bytes left over in a record", at.end - at.pos))
    }
}

fn check_key(at: &mut Cursor<'_>) -> Result<(), String> {
    let n = at.clone().varint().ok_or("a key is cut short")?;
    if n & 1 == 0
        && at
            .doc
            .tables
            .key(usize::try_from(n >> 1).unwrap_or(usize::MAX))
            .is_none()
    {
        return Err(format!("key {} is not defined", n >> 1));
    }
    at.key()
        .map(|_| ())
        .ok_or_else(|| "a key is cut short or not UTF-8".to_owned())
}

/// Checks one value and everything in it.
fn check_value(at: &mut Cursor<'_>, depth: usize, trees: bool) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("a value nested more than {MAX_DEPTH} levels deep"));
    }
    let short = || "a value is cut short".to_owned();
    let tag = at.clone().byte().ok_or_else(short)?;
    match tag {
        NULL | FALSE | TRUE | UINT | NEG | STR | ISTR => {
            at.node()
                .ok_or("a value is cut short, out of range or not UTF-8")?;
        }
        FLOAT => match at.node() {
            Some(Node::Float(f)) if f.is_finite() => {}
            _ => return Err("a number is not finite".to_owned()),
        },
        TIME => {
            let time = at.node().and_then(object::to_time);
            time.ok_or("a time is out of range")?;
        }
        TREE if trees => {
            at.byte();
            let id = at.varint().ok_or_else(short)?;
            let known = usize::try_from(id)
                .ok()
                .and_then(|id| at.doc.tables.tree(id));
            known.ok_or_else(|| format!("tree {id} is not defined"))?;
        }
        ARRAY | MAP => {
            at.byte();
            let len = at.varint().ok_or_else(short)?;
            let size = at.varint().ok_or_else(short)?;
            let end = usize::try_from(size)
                .ok()
                .and_then(|size| at.pos.checked_add(size))
                .filter(|end| *end <= at.end)
                .ok_or_else(|| format!("a length of {size} is beyond its record"))?;
            let mut inner = Cursor {
                doc: at.doc,
                pos: at.pos,
                end,
            };
            for _ in 0..len {
                if inner.at_end() {
                    return Err("an array or map holds fewer entries than it says".to_owned());
                }
                if tag == MAP {
                    check_key(&mut inner)?;
                }
                check_value(&mut inner, depth + 1, trees)?;
            }
            check_end(&inner)?;
            at.pos = end;
        }
        other => return Err(format!("unknown value type {other}")),
    }
    Ok(())
}
