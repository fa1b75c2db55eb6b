//! The bytes of a value, and reading them.
//!
//! A value is a tag byte and what the tag says follows:
//!
//! | tag | value | then |
//! |---|---|---|
//! | [`NULL`], [`FALSE`], [`TRUE`] | `null`, `false`, `true` | nothing |
//! | [`UINT`] | an integer ≥ 0 | the integer (varint) |
//! | [`NEG`] | an integer < 0 | `-(n + 1)` (varint) |
//! | [`FLOAT`] | another number | its `f64` bits (8 bytes, little-endian) |
//! | [`STR`] | a string | its length (varint), its UTF-8 bytes |
//! | [`ISTR`] | a string that repeats across objects | a key reference |
//! | [`TIME`] | a timestamp (`creationTimestamp`, ...) | seconds and nanoseconds (zigzag varints) |
//! | [`ARRAY`] | an array | the item count and the items' byte length (varints), the items |
//! | [`MAP`] | an object | the entry count and byte length, each entry's key reference and value |
//! | [`TREE`] | a shared tree (a `fieldsV1`) | its number in the tables (varint) |
//!
//! A key reference is a varint `n`: key `n / 2` of the tables when `n` is
//! even, else `n / 2` bytes of UTF-8 that follow. The byte length of arrays
//! and maps lets a read step over them without looking inside.

use super::table::{Tables, WELL_KNOWN};

pub(super) const NULL: u8 = 0;
pub(super) const FALSE: u8 = 1;
pub(super) const TRUE: u8 = 2;
pub(super) const UINT: u8 = 3;
pub(super) const NEG: u8 = 4;
pub(super) const FLOAT: u8 = 5;
pub(super) const STR: u8 = 6;
pub(super) const ISTR: u8 = 7;
pub(super) const TIME: u8 = 8;
pub(super) const ARRAY: u8 = 9;
pub(super) const MAP: u8 = 10;
pub(super) const TREE: u8 = 11;

/// Appends `n` as a varint (LEB128).
pub(super) fn write_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// `n` folded so that small magnitudes of either sign are small.
pub(super) fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

/// The inverse of [`zigzag`].
pub(super) fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

/// Bytes and the tables their numbers refer to.
#[derive(Clone, Copy)]
pub(super) struct Doc<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) tables: &'a Tables,
}

/// A key as written: its number in the tables, if it has one, and its text.
#[derive(Clone, Copy, Debug)]
pub(super) struct Key<'a> {
    pub(super) id: Option<u32>,
    pub(super) text: &'a str,
}

/// A key reference as written: a number, or the key's bytes.
#[derive(Clone, Copy)]
pub(super) enum RawKey<'a> {
    Id(u32),
    Inline(&'a [u8]),
}

/// One value, read.
#[derive(Clone, Copy)]
pub(super) enum Node<'a> {
    Null,
    Bool(bool),
    Uint(u64),
    Neg(i64),
    Float(f64),
    Str(&'a str),
    /// Seconds and nanoseconds since the Unix epoch.
    Time(i64, i32),
    Array(Seq<'a>),
    Map(Seq<'a>),
}

impl<'a> Node<'a> {
    pub(super) fn as_map(self) -> Option<Seq<'a>> {
        match self {
            Node::Map(map) => Some(map),
            _ => None,
        }
    }

    pub(super) fn as_array(self) -> Option<Seq<'a>> {
        match self {
            Node::Array(items) => Some(items),
            _ => None,
        }
    }

    pub(super) fn as_str(self) -> Option<&'a str> {
        match self {
            Node::Str(s) => Some(s),
            _ => None,
        }
    }

    pub(super) fn as_i64(self) -> Option<i64> {
        match self {
            Node::Uint(n) => i64::try_from(n).ok(),
            Node::Neg(n) => Some(n),
            _ => None,
        }
    }

    pub(super) fn as_bool(self) -> Option<bool> {
        match self {
            Node::Bool(b) => Some(b),
            _ => None,
        }
    }
}

/// The items of an array, or the entries of a map: where they are and how
/// many.
#[derive(Clone, Copy)]
pub(super) struct Seq<'a> {
    doc: Doc<'a>,
    start: usize,
    end: usize,
    len: usize,
    /// The shared tree this is the root of, if it is one.
    pub(super) tree: Option<usize>,
}

impl<'a> Seq<'a> {
    pub(super) fn len(self) -> usize {
        self.len
    }

    /// Whether `self` and `other` are written the same over the same
    /// tables: then they hold the same value (the converse does not hold:
    /// a key or string interned in one and written out in the other).
    pub(super) fn same_bytes(self, other: Seq<'_>) -> bool {
        std::ptr::eq(self.doc.tables, other.doc.tables)
            && self.len == other.len
            && self
                .doc
                .bytes
                .get(self.start..self.end)
                .is_some_and(|mine| other.doc.bytes.get(other.start..other.end) == Some(mine))
    }

    pub(super) fn tables(self) -> &'a Tables {
        self.doc.tables
    }

    /// An array's items.
    pub(super) fn items(self) -> Items<'a> {
        Items {
            at: self.cursor(),
            left: self.len,
        }
    }

    /// A map's entries.
    pub(super) fn entries(self) -> Entries<'a> {
        Entries {
            at: self.cursor(),
            left: self.len,
        }
    }

    /// The value of `key` in a map. Entries before it are stepped over,
    /// not read.
    pub(super) fn get(self, key: &str) -> Option<Node<'a>> {
        let tables = self.doc.tables;
        self.find(|raw| match raw {
            RawKey::Id(id) => tables.key(id as usize) == Some(key),
            RawKey::Inline(bytes) => bytes == key.as_bytes(),
        })
    }

    /// The value of well-known key `id` in a map.
    pub(super) fn get_id(self, id: u32) -> Option<Node<'a>> {
        let known = WELL_KNOWN.get(id as usize)?.as_bytes();
        self.find(|raw| match raw {
            RawKey::Id(own) => own == id,
            RawKey::Inline(bytes) => bytes == known,
        })
    }

    fn find(self, wanted: impl FnMut(RawKey<'_>) -> bool) -> Option<Node<'a>> {
        self.seek(wanted)?.1.node()
    }

    /// The key of the entry named `key` in a map, and the bytes its value
    /// is written in, as they are.
    pub(super) fn entry_bytes(self, key: &str) -> Option<(RawKey<'a>, &'a [u8])> {
        let tables = self.doc.tables;
        let (raw, mut at) = self.seek(|raw| match raw {
            RawKey::Id(id) => tables.key(id as usize) == Some(key),
            RawKey::Inline(bytes) => bytes == key.as_bytes(),
        })?;
        let start = at.pos;
        at.skip()?;
        Some((raw, self.doc.bytes.get(start..at.pos)?))
    }

    /// The first entry whose key is `wanted`: its key, and a cursor on its
    /// value.
    fn seek(self, mut wanted: impl FnMut(RawKey<'_>) -> bool) -> Option<(RawKey<'a>, Cursor<'a>)> {
        let mut at = self.cursor();
        for _ in 0..self.len {
            let raw = at.raw_key()?;
            if wanted(raw) {
                return Some((raw, at));
            }
            at.skip()?;
        }
        None
    }

    /// The string value of `key` in a map.
    pub(super) fn get_str(self, id: u32) -> Option<&'a str> {
        self.get_id(id).and_then(Node::as_str)
    }

    fn cursor(self) -> Cursor<'a> {
        Cursor {
            doc: self.doc,
            pos: self.start,
            end: self.end,
        }
    }
}

/// An array's items, in order.
#[derive(Clone)]
pub(super) struct Items<'a> {
    at: Cursor<'a>,
    left: usize,
}

impl<'a> Iterator for Items<'a> {
    type Item = Node<'a>;

    fn next(&mut self) -> Option<Node<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let node = self.at.node();
        if node.is_none() {
            self.left = 0;
        }
        node
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Items<'_> {}

/// A map's entries, in order (sorted by key, as `serde_json`'s maps and the
/// typed metadata are).
#[derive(Clone)]
pub(super) struct Entries<'a> {
    at: Cursor<'a>,
    left: usize,
}

impl<'a> Iterator for Entries<'a> {
    type Item = (Key<'a>, Node<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let entry = self.at.key().zip(self.at.node());
        if entry.is_none() {
            self.left = 0;
        }
        entry
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

/// A position in some bytes, read forwards. Every read is bounds-checked:
/// bytes that are not what this module writes read as `None`.
#[derive(Clone)]
pub(super) struct Cursor<'a> {
    pub(super) doc: Doc<'a>,
    pub(super) pos: usize,
    pub(super) end: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(doc: Doc<'a>) -> Self {
        Cursor {
            doc,
            pos: 0,
            end: doc.bytes.len(),
        }
    }

    pub(super) fn at_end(&self) -> bool {
        self.pos >= self.end
    }

    pub(super) fn byte(&mut self) -> Option<u8> {
        let byte = *self
            .doc
            .bytes
            .get(self.pos)
            .filter(|_| self.pos < self.end)?;
        self.pos += 1;
        Some(byte)
    }

    pub(super) fn varint(&mut self) -> Option<u64> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            n |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(n);
            }
        }
        None
    }

    fn take(&mut self, n: u64) -> Option<&'a [u8]> {
        let n = usize::try_from(n).ok()?;
        let end = self.pos.checked_add(n).filter(|end| *end <= self.end)?;
        let bytes = self.doc.bytes.get(self.pos..end)?;
        self.pos = end;
        Some(bytes)
    }

    fn text(&mut self, n: u64) -> Option<&'a str> {
        std::str::from_utf8(self.take(n)?).ok()
    }

    /// A key reference.
    pub(super) fn key(&mut self) -> Option<Key<'a>> {
        let n = self.varint()?;
        if n & 1 == 0 {
            let id = u32::try_from(n >> 1).ok()?;
            let text = self.doc.tables.key(id as usize)?;
            Some(Key { id: Some(id), text })
        } else {
            let text = self.text(n >> 1)?;
            Some(Key { id: None, text })
        }
    }

    /// A key reference, not looked up.
    pub(super) fn raw_key(&mut self) -> Option<RawKey<'a>> {
        let n = self.varint()?;
        if n & 1 == 0 {
            u32::try_from(n >> 1).ok().map(RawKey::Id)
        } else {
            self.take(n >> 1).map(RawKey::Inline)
        }
    }

    /// Steps over the next value without reading what is in it.
    pub(super) fn skip(&mut self) -> Option<()> {
        match self.byte()? {
            NULL | FALSE | TRUE => {}
            UINT | NEG | TREE => {
                self.varint()?;
            }
            FLOAT => {
                self.take(8)?;
            }
            STR => {
                let n = self.varint()?;
                self.take(n)?;
            }
            ISTR => {
                self.raw_key()?;
            }
            TIME => {
                self.varint()?;
                self.varint()?;
            }
            ARRAY | MAP => {
                self.varint()?;
                let size = self.varint()?;
                self.take(size)?;
            }
            _ => return None,
        }
        Some(())
    }

    /// The next value.
    pub(super) fn node(&mut self) -> Option<Node<'a>> {
        self.value(true)
    }

    /// The next value; a shared tree only if `trees` (a tree holds none).
    fn value(&mut self, trees: bool) -> Option<Node<'a>> {
        Some(match self.byte()? {
            NULL => Node::Null,
            FALSE => Node::Bool(false),
            TRUE => Node::Bool(true),
            UINT => Node::Uint(self.varint()?),
            NEG => Node::Neg(-i64::try_from(self.varint()?).ok()? - 1),
            FLOAT => Node::Float(f64::from_le_bytes(self.take(8)?.try_into().ok()?)),
            STR => {
                let n = self.varint()?;
                Node::Str(self.text(n)?)
            }
            ISTR => Node::Str(self.key()?.text),
            TIME => {
                let seconds = unzigzag(self.varint()?);
                let nanos = i32::try_from(unzigzag(self.varint()?)).ok()?;
                Node::Time(seconds, nanos)
            }
            tag @ (ARRAY | MAP) => {
                let len = usize::try_from(self.varint()?).ok()?;
                let size = self.varint()?;
                let start = self.pos;
                self.take(size)?;
                let seq = Seq {
                    doc: self.doc,
                    start,
                    end: self.pos,
                    len,
                    tree: None,
                };
                if tag == ARRAY {
                    Node::Array(seq)
                } else {
                    Node::Map(seq)
                }
            }
            TREE if trees => {
                let id = usize::try_from(self.varint()?).ok()?;
                let doc = Doc {
                    bytes: self.doc.tables.tree(id)?,
                    tables: self.doc.tables,
                };
                match Cursor::new(doc).value(false)? {
                    Node::Map(seq) => Node::Map(Seq {
                        tree: Some(id),
                        ..seq
                    }),
                    other => other,
                }
            }
            _ => return None,
        })
    }
}
