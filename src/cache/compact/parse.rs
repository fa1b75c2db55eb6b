//! Writing an object's bytes straight from its JSON, with no
//! `DynamicObject` in between: the bytes [`Builder`](super::build::Builder)
//! writes for the object the wire would decode from the same JSON.
//!
//! The JSON is read once. Maps are written as their entries come and sorted
//! in place at their end when they came unsorted (the server sorts the keys
//! of custom resources, not those of built-in types); the metadata keeps the
//! fields `ObjectMeta` reads, as it would. Whatever this cannot vouch for —
//! a key given twice, a metadata field of an unexpected type, half of
//! `apiVersion` and `kind`, JSON nested deeper than serde_json's limit — is
//! an error, and the caller decodes the object instead, which says what is
//! wrong with it, if anything.

use std::borrow::Cow;
use std::fmt;

use k8s_openapi::jiff::Timestamp;
use serde::de::{
    self, DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor,
};

use super::Interner;
use super::build::{float, integer, known, string, time_parts, write_key};
use super::node::*;
use super::table::{Tables, id};

/// Buffers kept between objects, so that building one from its JSON
/// allocates only the object itself.
#[derive(Default)]
pub(crate) struct Scratch {
    /// The object being built.
    pub(super) bytes: Vec<u8>,
    /// A `fieldsV1` tree, written apart to be looked up.
    pub(super) tree: Vec<u8>,
    meta: Vec<u8>,
    data: Vec<u8>,
    /// A map's entries, in key order, while they are sorted.
    sorted: Vec<u8>,
    /// Where the entries of the maps being written start and end.
    entries: Vec<(usize, usize)>,
}

/// Why an object's JSON was not read here.
type Error = serde_json::Error;

/// Appends to `scratch.bytes` the bytes of the object `json` holds, with
/// `types` (apiVersion, kind) as its types when it has none (list items).
pub(super) fn object(
    json: &str,
    types: Option<(&str, &str)>,
    interner: &mut Interner,
    scratch: &mut Scratch,
) -> Result<(), Error> {
    let Scratch {
        bytes,
        tree,
        meta,
        data,
        sorted,
        entries,
    } = scratch;
    meta.clear();
    data.clear();
    entries.clear();
    let mut cx = Cx {
        interner,
        tree,
        sorted,
        entries,
    };
    let mut de = serde_json::Deserializer::from_str(json);
    let read = Top {
        cx: &mut cx,
        meta,
        data,
    }
    .deserialize(&mut de)?;
    de.end()?;
    match (read, types) {
        ((Some(api_version), Some(kind)), _) => {
            bytes.push(1);
            write_key(cx.interner, bytes, &api_version);
            write_key(cx.interner, bytes, &kind);
        }
        ((None, None), Some((api_version, kind))) => {
            bytes.push(1);
            write_key(cx.interner, bytes, api_version);
            write_key(cx.interner, bytes, kind);
        }
        ((None, None), None) => bytes.push(0),
        _ => {
            return Err(Error::custom(
                "apiVersion without kind, or kind without apiVersion",
            ));
        }
    }
    bytes.extend_from_slice(meta);
    bytes.extend_from_slice(data);
    Ok(())
}

/// What the values written share.
struct Cx<'a> {
    interner: &'a mut Interner,
    tree: &'a mut Vec<u8>,
    sorted: &'a mut Vec<u8>,
    entries: &'a mut Vec<(usize, usize)>,
}

/// Starts an array or map (`tag`) in `out`, its count and size to be
/// written by [`close`]; returns where it starts.
fn open(out: &mut Vec<u8>, tag: u8) -> usize {
    let at = out.len();
    out.extend_from_slice(&[tag, 0, 0]);
    at
}

/// Ends the array or map started at `at` with `count` items: its count and
/// byte size, in one byte each when they fit, else in place of those two
/// bytes, the content moved along.
fn close(out: &mut Vec<u8>, at: usize, count: usize) {
    let size = out.len() - at - 3;
    if count < 0x80 && size < 0x80 {
        out[at + 1] = count as u8;
        out[at + 2] = size as u8;
        return;
    }
    let mut head = Vec::with_capacity(20);
    write_varint(&mut head, count as u64);
    write_varint(&mut head, size as u64);
    out.splice(at + 1..at + 3, head);
}

/// The text of the key reference at `at` in `out`.
fn key_at<'o>(tables: &'o Tables, out: &'o [u8], at: usize) -> Option<&'o str> {
    let mut n = 0u64;
    let mut pos = at;
    for shift in (0..64).step_by(7) {
        let byte = *out.get(pos)?;
        pos += 1;
        n |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            break;
        }
    }
    if n & 1 == 0 {
        tables.key(usize::try_from(n >> 1).ok()?)
    } else {
        let len = usize::try_from(n >> 1).ok()?;
        std::str::from_utf8(out.get(pos..pos.checked_add(len)?)?).ok()
    }
}

impl Cx<'_> {
    /// Ends the map started at `at` whose entries are `self.entries[base..]`:
    /// sorted by key, as `serde_json`'s maps and `ObjectMeta` are; an error
    /// for a key given twice.
    fn close_map(&mut self, out: &mut Vec<u8>, at: usize, base: usize) -> Result<(), Error> {
        let entries = &mut self.entries[base..];
        let count = entries.len();
        let tables = self.interner.tables();
        let key = |entry: &(usize, usize)| key_at(tables, out, entry.0);
        if !entries.windows(2).all(|w| key(&w[0]) < key(&w[1])) {
            entries.sort_by(|a, b| key(a).cmp(&key(b)));
            if entries.windows(2).any(|w| key(&w[0]) == key(&w[1])) {
                return Err(Error::custom("a key given twice"));
            }
            self.sorted.clear();
            for &(start, end) in entries.iter() {
                self.sorted.extend_from_slice(&out[start..end]);
            }
            out[at + 3..].copy_from_slice(self.sorted);
        }
        self.entries.truncate(base);
        close(out, at, count);
        Ok(())
    }

    /// Writes a map whose values `value` writes, sorted.
    fn map<'de, A: MapAccess<'de>>(
        &mut self,
        out: &mut Vec<u8>,
        mut access: A,
        mut value: impl FnMut(&mut Self, &mut Vec<u8>, &mut A) -> Result<(), A::Error>,
    ) -> Result<(), A::Error> {
        let at = open(out, MAP);
        let base = self.entries.len();
        while let Some(key) = access.next_key_seed(Text)? {
            let start = out.len();
            write_key(self.interner, out, &key);
            value(self, out, &mut access)?;
            self.entries.push((start, out.len()));
        }
        self.close_map(out, at, base).map_err(A::Error::custom)
    }

    /// Writes an array whose items `item` writes; `Ok(false)` from it ends
    /// the array.
    fn array<'de, A: SeqAccess<'de>>(
        &mut self,
        out: &mut Vec<u8>,
        mut access: A,
        mut item: impl FnMut(&mut Self, &mut Vec<u8>, &mut A) -> Result<bool, A::Error>,
    ) -> Result<(), A::Error> {
        let at = open(out, ARRAY);
        let mut count = 0;
        while item(self, out, &mut access)? {
            count += 1;
        }
        close(out, at, count);
        Ok(())
    }

    /// A string that repeats from object to object.
    fn interned(&mut self, out: &mut Vec<u8>, s: &str) {
        out.push(ISTR);
        write_key(self.interner, out, s);
    }

    /// A `fieldsV1` tree written in `self.tree`: shared with the objects
    /// that have the same one once it is seen twice, written in place
    /// otherwise.
    fn place_tree(&mut self, out: &mut Vec<u8>) {
        match self.interner.tree(self.tree) {
            Some(id) => {
                out.push(TREE);
                write_varint(out, u64::from(id));
            }
            None => out.extend_from_slice(self.tree),
        }
    }
}

/// A string, borrowed from the JSON when it has no escapes.
struct Text;

impl<'de> DeserializeSeed<'de> for Text {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Text {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

/// A string or `null` (`None`), as an `Option<String>` field reads.
struct OptText;

impl<'de> DeserializeSeed<'de> for OptText {
    type Value = Option<Cow<'de, str>>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for OptText {
    type Value = Option<Cow<'de, str>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string or null")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        Text.deserialize(d).map(Some)
    }
}

/// A timestamp, as `Time` reads one.
fn timestamp<E: de::Error>(text: &str) -> Result<Timestamp, E> {
    text.parse::<Timestamp>().map_err(E::custom)
}

fn write_time(out: &mut Vec<u8>, t: Timestamp) {
    time_parts(out, t.as_second(), t.subsec_nanosecond());
}

/// Any JSON value, written as `Builder::value` writes the `serde_json`
/// value it decodes to.
struct Any<'s, 'a> {
    cx: &'s mut Cx<'a>,
    out: &'s mut Vec<u8>,
}

impl<'de> DeserializeSeed<'de> for Any<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Any<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.out.push(NULL);
        Ok(())
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.out.push(if v { TRUE } else { FALSE });
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        integer(self.out, v);
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.out.push(UINT);
        write_varint(self.out, v);
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        if !v.is_finite() {
            // serde_json's value of it is `null`: leave that to the decoder.
            return Err(E::custom("a number that is not finite"));
        }
        float(self.out, v);
        Ok(())
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        string(self.out, v);
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, access: A) -> Result<(), A::Error> {
        self.cx.array(self.out, access, |cx, out, access| {
            Ok(access.next_element_seed(Any { cx, out })?.is_some())
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, access: A) -> Result<(), A::Error> {
        self.cx.map(self.out, access, |cx, out, access| {
            access.next_value_seed(Any { cx, out })
        })
    }
}

/// The object: its type fields read, its metadata written into `meta` and
/// everything else into `data`.
struct Top<'s, 'a> {
    cx: &'s mut Cx<'a>,
    meta: &'s mut Vec<u8>,
    data: &'s mut Vec<u8>,
}

type Types<'de> = (Option<Cow<'de, str>>, Option<Cow<'de, str>>);

impl<'de> DeserializeSeed<'de> for Top<'_, '_> {
    type Value = Types<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Top<'_, '_> {
    type Value = Types<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
        let Top { cx, meta, data } = self;
        let (mut api_version, mut kind, mut has_meta) = (None, None, false);
        let at = open(data, MAP);
        let base = cx.entries.len();
        while let Some(key) = access.next_key_seed(Text)? {
            let twice = match &*key {
                "apiVersion" => api_version.replace(access.next_value_seed(Text)?).is_some(),
                "kind" => kind.replace(access.next_value_seed(Text)?).is_some(),
                "metadata" => {
                    access.next_value_seed(Meta {
                        cx: &mut *cx,
                        out: &mut *meta,
                    })?;
                    std::mem::replace(&mut has_meta, true)
                }
                _ => {
                    let start = data.len();
                    write_key(cx.interner, data, &key);
                    access.next_value_seed(Any {
                        cx: &mut *cx,
                        out: &mut *data,
                    })?;
                    cx.entries.push((start, data.len()));
                    false
                }
            };
            if twice {
                return Err(A::Error::custom(format!("{key} given twice")));
            }
        }
        cx.close_map(data, at, base).map_err(A::Error::custom)?;
        if !has_meta {
            let at = open(meta, MAP);
            close(meta, at, 0);
        }
        Ok((api_version, kind))
    }
}

/// The kinds of value of the metadata's fields (and of a `managedFields`
/// entry's `fieldsV1`, [`Field::Any`]).
#[derive(Clone, Copy)]
enum Field {
    /// Any JSON value.
    Any,
    Text,
    Interned,
    Integer,
    Time,
    Texts,
    TextMap,
    ManagedFields,
    OwnerReferences,
}

/// The number and kind of the `ObjectMeta` field `key`.
fn meta_field(key: &str) -> Option<(u32, Field)> {
    Some(match key {
        "annotations" => (id::ANNOTATIONS, Field::TextMap),
        "creationTimestamp" => (id::CREATION_TIMESTAMP, Field::Time),
        "deletionGracePeriodSeconds" => (id::DELETION_GRACE_PERIOD_SECONDS, Field::Integer),
        "deletionTimestamp" => (id::DELETION_TIMESTAMP, Field::Time),
        "finalizers" => (id::FINALIZERS, Field::Texts),
        "generateName" => (id::GENERATE_NAME, Field::Text),
        "generation" => (id::GENERATION, Field::Integer),
        "labels" => (id::LABELS, Field::TextMap),
        "managedFields" => (id::MANAGED_FIELDS, Field::ManagedFields),
        "name" => (id::NAME, Field::Text),
        "namespace" => (id::NAMESPACE, Field::Interned),
        "ownerReferences" => (id::OWNER_REFERENCES, Field::OwnerReferences),
        "resourceVersion" => (id::RESOURCE_VERSION, Field::Text),
        "selfLink" => (id::SELF_LINK, Field::Text),
        "uid" => (id::UID, Field::Text),
        _ => return None,
    })
}

/// The metadata, or `null` (no metadata).
struct Meta<'s, 'a> {
    cx: &'s mut Cx<'a>,
    out: &'s mut Vec<u8>,
}

impl<'de> DeserializeSeed<'de> for Meta<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for Meta<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ObjectMeta")
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        let at = open(self.out, MAP);
        close(self.out, at, 0);
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.visit_none()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<(), A::Error> {
        let Meta { cx, out } = self;
        out.clear();
        let at = open(out, MAP);
        let base = cx.entries.len();
        let mut seen = 0u32;
        while let Some(key) = access.next_key_seed(Text)? {
            let Some((id, field)) = meta_field(&key) else {
                access.next_value::<IgnoredAny>()?;
                continue;
            };
            if seen & (1 << id) != 0 {
                return Err(A::Error::custom(format!("metadata.{key} given twice")));
            }
            seen |= 1 << id;
            let start = out.len();
            known(out, id);
            let present = access.next_value_seed(MetaValue {
                cx: &mut *cx,
                out: &mut *out,
                field,
            })?;
            if present {
                cx.entries.push((start, out.len()));
            } else {
                out.truncate(start);
            }
        }
        cx.close_map(out, at, base).map_err(A::Error::custom)
    }
}

/// The value of a metadata field (or a `fieldsV1` tree); `false` for
/// `null` (the field is then left out, as `ObjectMeta` leaves it `None`).
struct MetaValue<'s, 'a> {
    cx: &'s mut Cx<'a>,
    out: &'s mut Vec<u8>,
    field: Field,
}

impl<'de> DeserializeSeed<'de> for MetaValue<'_, '_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for MetaValue<'_, '_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a metadata field")
    }

    fn visit_none<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        let MetaValue { cx, out, field } = self;
        match field {
            Field::Any => Any { cx, out }.deserialize(d)?,
            Field::Text => string(out, &Text.deserialize(d)?),
            Field::Interned => cx.interned(out, &Text.deserialize(d)?),
            Field::Integer => integer(out, serde::Deserialize::deserialize(d)?),
            Field::Time => write_time(out, timestamp(&Text.deserialize(d)?)?),
            Field::Texts => d.deserialize_seq(Items {
                cx,
                out,
                item: Item::Text,
            })?,
            Field::TextMap => d.deserialize_map(TextMap { cx, out })?,
            Field::ManagedFields => d.deserialize_seq(Items {
                cx,
                out,
                item: Item::ManagedField,
            })?,
            Field::OwnerReferences => d.deserialize_seq(Items {
                cx,
                out,
                item: Item::OwnerReference,
            })?,
        }
        Ok(true)
    }
}

/// A map of strings to strings (labels, annotations).
struct TextMap<'s, 'a> {
    cx: &'s mut Cx<'a>,
    out: &'s mut Vec<u8>,
}

impl<'de> Visitor<'de> for TextMap<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of strings")
    }

    fn visit_map<A: MapAccess<'de>>(self, access: A) -> Result<(), A::Error> {
        self.cx.map(self.out, access, |_, out, access| {
            string(out, &access.next_value_seed(Text)?);
            Ok(())
        })
    }
}

/// What the items of a metadata array are.
#[derive(Clone, Copy)]
enum Item {
    Text,
    ManagedField,
    OwnerReference,
}

/// A metadata array.
struct Items<'s, 'a> {
    cx: &'s mut Cx<'a>,
    out: &'s mut Vec<u8>,
    item: Item,
}

impl<'de> Visitor<'de> for Items<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, access: A) -> Result<(), A::Error> {
        let item = self.item;
        self.cx.array(self.out, access, |cx, out, access| {
            Ok(match item {
                Item::Text => match access.next_element_seed(Text)? {
                    Some(text) => {
                        string(out, &text);
                        true
                    }
                    None => false,
                },
                Item::ManagedField => access
                    .next_element_seed(Entry {
                        cx,
                        out,
                        owner: false,
                    })?
                    .is_some(),
                Item::OwnerReference => access
                    .next_element_seed(Entry {
                        cx,
                        out,
                        owner: true,
                    })?
                    .is_some(),
            })
        })
    }
}

/// A `managedFields` entry, or an owner reference (`owner`).
struct Entry<'s, 'a> {
    cx: &'s mut Cx<'a>,
    out: &'s mut Vec<u8>,
    owner: bool,
}

impl<'de> DeserializeSeed<'de> for Entry<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

/// The fields of a `managedFields` entry and of an owner reference that
/// are strings, in the order they are written.
const ENTRY_TEXTS: [&str; 9] = [
    "apiVersion",
    "fieldsType",
    "manager",
    "operation",
    "subresource",
    "time",
    "kind",
    "name",
    "uid",
];

impl<'de> Visitor<'de> for Entry<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.owner {
            "an owner reference"
        } else {
            "a managedFields entry"
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<(), A::Error> {
        let Entry { cx, out, owner } = self;
        let mut texts: [Option<Cow<'de, str>>; ENTRY_TEXTS.len()] = Default::default();
        let mut flags: [Option<bool>; 2] = [None, None];
        let mut tree = false;
        let mut seen = 0u32;
        while let Some(key) = access.next_key_seed(Text)? {
            let slot = ENTRY_TEXTS.iter().position(|k| *k == key).filter(|i| {
                // The fields of the other kind of entry are not read.
                let for_owner = matches!(*i, 0 | 6 | 7 | 8);
                let for_managed = *i <= 5;
                if owner { for_owner } else { for_managed }
            });
            let bit = match (slot, &*key) {
                (Some(i), _) => {
                    texts[i] = access.next_value_seed(OptText)?;
                    i
                }
                (None, "blockOwnerDeletion" | "controller") if owner => {
                    let i = usize::from(key == "controller");
                    flags[i] = access.next_value()?;
                    9 + i
                }
                (None, "fieldsV1") if !owner => {
                    let mut bytes = std::mem::take(cx.tree);
                    bytes.clear();
                    tree = access.next_value_seed(MetaValue {
                        cx: &mut *cx,
                        out: &mut bytes,
                        field: Field::Any,
                    })?;
                    *cx.tree = bytes;
                    11
                }
                _ => {
                    access.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            if seen & (1 << bit) != 0 {
                return Err(A::Error::custom(format!("{key} given twice")));
            }
            seen |= 1 << bit;
        }
        if owner {
            owner_reference(cx, out, &texts, flags);
        } else {
            let time = texts[5].as_deref().map(timestamp::<A::Error>).transpose()?;
            managed_field(cx, out, &texts, tree, time);
        }
        Ok(())
    }
}

/// Writes an owner reference as `Builder::owner` does.
fn owner_reference(
    cx: &mut Cx<'_>,
    out: &mut Vec<u8>,
    texts: &[Option<Cow<'_, str>>; ENTRY_TEXTS.len()],
    flags: [Option<bool>; 2],
) {
    let text = |i: usize| texts[i].as_deref().unwrap_or_default();
    let fields = 4 + flags.iter().flatten().count();
    let at = open(out, MAP);
    known(out, id::API_VERSION);
    cx.interned(out, text(0));
    for (name, flag) in ["blockOwnerDeletion", "controller"].into_iter().zip(flags) {
        if let Some(v) = flag {
            write_key(cx.interner, out, name);
            out.push(if v { TRUE } else { FALSE });
        }
    }
    known(out, id::KIND);
    cx.interned(out, text(6));
    known(out, id::NAME);
    string(out, text(7));
    known(out, id::UID);
    string(out, text(8));
    close(out, at, fields);
}

/// Writes a `managedFields` entry as `Builder::managed_field` does, its
/// tree (if `tree`) in `cx.tree`, its `time` read from `texts` already.
fn managed_field(
    cx: &mut Cx<'_>,
    out: &mut Vec<u8>,
    texts: &[Option<Cow<'_, str>>; ENTRY_TEXTS.len()],
    tree: bool,
    time: Option<Timestamp>,
) {
    let fields = texts[..6].iter().flatten().count() + usize::from(tree);
    let at = open(out, MAP);
    for (i, id) in [(0, id::API_VERSION), (1, id::FIELDS_TYPE)] {
        if let Some(text) = &texts[i] {
            known(out, id);
            cx.interned(out, text);
        }
    }
    if tree {
        known(out, id::FIELDS_V1);
        cx.place_tree(out);
    }
    for (i, id) in [(2, id::MANAGER), (3, id::OPERATION), (4, id::SUBRESOURCE)] {
        if let Some(text) = &texts[i] {
            known(out, id);
            cx.interned(out, text);
        }
    }
    if let Some(time) = time {
        known(out, id::TIME);
        write_time(out, time);
    }
    close(out, at, fields);
}
