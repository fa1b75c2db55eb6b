//! A compact form for cached objects: what the store could hold instead of a
//! decoded [`DynamicObject`] (issue "Half of client-go's memory: a compact cache").
//!
//! A decoded `DynamicObject` keeps its data — and every `fieldsV1` tree of its
//! `managedFields` — as `serde_json::Value`s, whose maps are `BTreeMap`s: the
//! smallest B-tree node costs 632 bytes, so a 2.5 KB Widget costs ~24.5 KB.
//! [`CompactObject`] holds the same object, exactly, in a fraction of that:
//!
//! - **an exact-size tree**: arrays are `Box<[Node]>`, objects are
//!   `Box<[(Arc<str>, Node)]>` sorted by key (the order of `serde_json::Map`),
//!   so a lookup is a binary search; a node is 24 bytes and strings of up to
//!   22 bytes live inside it, with no allocation;
//! - **keys interned per store** ([`Interner`]): object keys, label and
//!   annotation keys, `apiVersion`, `kind`, field managers are one `Arc<str>`
//!   each, shared by every object of the store;
//! - **`fieldsV1` trees shared between objects**: identical trees (objects
//!   written by the same manager with the same fields, which is most of them)
//!   are stored once, hash-consed in the interner;
//! - **metadata kept typed**: name, namespace, uid, resourceVersion, labels,
//!   annotations, owner references and managed fields are fields of their own,
//!   read without any decoding; timestamps stay [`Time`]s, so that
//!   `to_object()` gives back exactly the `ObjectMeta` it was built from.
//!
//! Reads that need no `DynamicObject` are zero-copy ([`CompactObject::name`],
//! [`CompactObject::labels`], [`CompactObject::pointer`], ...); a read that
//! needs one decodes it ([`CompactObject::to_object`]), which
//! [`CompactEntry`] avoids while someone still holds the previous copy.
//!
//! Exactness: `CompactObject::from_object(&o, ..).to_object() == o` for every
//! `o`, numbers keeping their representation (`3.0` stays a float, `-0.0`
//! keeps its sign, `u64::MAX` and `i64::MIN` stay integers), and
//! [`CompactObject::write_json`] writes the bytes `serde_json::to_vec(&o)`
//! writes. Nothing here panics on any input; recursion is as deep as the
//! object, as in `serde_json` itself (the wire decodes objects up to
//! `MAX_OBJECT_DEPTH` levels deep).
//!
//! The order of keys relies on `serde_json::Map` being a `BTreeMap` (the crate
//! is built without serde_json's `preserve_order`; a test checks it).
//!
//! # What it costs
//!
//! `cargo bench --bench compact` (50k Widgets of the benchmark, ~2.4 KB of
//! JSON each with managedFields; glibc's bytes in use per object, interner
//! included): a decoded `DynamicObject` 25,050 B; `CompactObject` 2,815 B
//! (0.11×), 5,516 B (0.22×) when no `fieldsV1` tree is shared. Building one
//! from the decoded object takes ~6–7 µs (decoding it took ~20 µs); reading
//! name, namespace, resourceVersion costs what it costs today, a label a
//! nanosecond more, a pointer a quarter of `Value::pointer`; writing the JSON
//! costs what serde_json does. Decoding the whole object back (`to_object`)
//! costs ~11–14 µs against an `Arc` clone today: hence [`CompactEntry`].
//!
//! # In the store
//!
//! The store would keep a [`CompactEntry`] per object and one [`Interner`]
//! beside its writer. An event handler gets the `Arc<DynamicObject>` just
//! decoded from the wire (the entry remembers it); a lister read that needs
//! the whole object calls [`CompactEntry::get`], which hands out that same
//! `Arc` while anyone holds it, and decodes otherwise. Selectors, indexes,
//! keys and printed output read the compact object without decoding. A
//! periodic pass of [`CompactEntry::forget_dropped`] frees what dead `Weak`s
//! keep (~460 B per object).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher, RandomState};
use std::sync::{Arc, Weak};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    FieldsV1, ManagedFieldsEntry, ObjectMeta, OwnerReference, Time,
};
use kube_core::{DynamicObject, TypeMeta};
use serde::Serialize;
use serde::ser::{Error as _, SerializeMap, SerializeSeq, SerializeStruct, Serializer};
use serde_json::{Number, Value};

/// An interned string: a key, a label key, an `apiVersion`, a field manager.
type Key = Arc<str>;

/// Strings of up to this many bytes are stored inside their node.
const INLINE: usize = 22;

/// The interner sweeps entries no object uses once it has grown to twice its
/// size after the previous sweep, and never below this many entries.
const MIN_SWEEP: usize = 1024;

// ---------------------------------------------------------------------------
// Strings and nodes
// ---------------------------------------------------------------------------

/// A string of 24 bytes: inline up to [`INLINE`] bytes, boxed beyond.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Str {
    Inline { len: u8, buf: [u8; INLINE] },
    Heap(Box<str>),
}

impl Str {
    fn new(s: &str) -> Str {
        match u8::try_from(s.len()) {
            Ok(len) if s.len() <= INLINE => {
                let mut buf = [0u8; INLINE];
                if let Some(dst) = buf.get_mut(..s.len()) {
                    dst.copy_from_slice(s.as_bytes());
                }
                Str::Inline { len, buf }
            }
            _ => Str::Heap(s.into()),
        }
    }

    fn as_str(&self) -> &str {
        match self {
            Str::Inline { len, buf } => buf
                .get(..usize::from(*len))
                .and_then(|b| std::str::from_utf8(b).ok())
                .unwrap_or(""),
            Str::Heap(s) => s,
        }
    }
}

/// What labels and annotations hold as values: interned or not.
trait Text {
    fn text(&self) -> &str;
}

impl Text for Str {
    fn text(&self) -> &str {
        self.as_str()
    }
}

impl Text for Key {
    fn text(&self) -> &str {
        self
    }
}

impl fmt::Debug for Str {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// A JSON value, exact-size: 24 bytes, plus what its boxes hold.
#[derive(Clone, PartialEq)]
enum Node {
    Null,
    Bool(bool),
    Number(Number),
    String(Str),
    Array(Box<[Node]>),
    /// Sorted by key, as `serde_json::Map` iterates.
    Object(Box<[(Key, Node)]>),
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&ValueRef::from(self), f)
    }
}

/// Numbers compared by representation: `0.0` and `-0.0` differ, `1` and `1.0` differ.
fn number_bits(n: &Number) -> (u8, u64) {
    if let Some(u) = n.as_u64() {
        (0, u)
    } else if let Some(i) = n.as_i64() {
        (1, i as u64)
    } else {
        (2, n.as_f64().map_or(0, f64::to_bits))
    }
}

fn node_to_value(node: &Node) -> Value {
    match node {
        Node::Null => Value::Null,
        Node::Bool(b) => Value::Bool(*b),
        Node::Number(n) => Value::Number(n.clone()),
        Node::String(s) => Value::String(s.as_str().to_owned()),
        Node::Array(items) => Value::Array(items.iter().map(node_to_value).collect()),
        Node::Object(entries) => Value::Object(
            entries
                .iter()
                .map(|(k, v)| (String::from(&**k), node_to_value(v)))
                .collect(),
        ),
    }
}

/// Exact structural equality between a node and a value (numbers by representation).
fn node_eq_value(node: &Node, value: &Value) -> bool {
    match (node, value) {
        (Node::Null, Value::Null) => true,
        (Node::Bool(a), Value::Bool(b)) => a == b,
        (Node::Number(a), Value::Number(b)) => number_bits(a) == number_bits(b),
        (Node::String(a), Value::String(b)) => a.as_str() == b,
        (Node::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| node_eq_value(x, y))
        }
        (Node::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((ka, x), (kb, y))| **ka == **kb && node_eq_value(x, y))
        }
        _ => false,
    }
}

fn hash_value(value: &Value, h: &mut impl Hasher) {
    match value {
        Value::Null => h.write_u8(0),
        Value::Bool(b) => {
            h.write_u8(1);
            h.write_u8(u8::from(*b));
        }
        Value::Number(n) => {
            let (kind, bits) = number_bits(n);
            h.write_u8(2 + kind);
            h.write_u64(bits);
        }
        Value::String(s) => {
            h.write_u8(5);
            s.hash(h);
        }
        Value::Array(items) => {
            h.write_u8(6);
            h.write_usize(items.len());
            for item in items {
                hash_value(item, h);
            }
        }
        Value::Object(map) => {
            h.write_u8(7);
            h.write_usize(map.len());
            for (k, v) in map {
                k.hash(h);
                hash_value(v, h);
            }
        }
    }
}

/// The value of `key` in sorted entries. Small maps (labels, most objects of
/// a manifest) are scanned, comparing the lengths first, which need no read of
/// the keys' bytes; larger ones are searched by halves.
fn find<'a, T>(entries: &'a [(Key, T)], key: &str) -> Option<&'a T> {
    if entries.len() <= 8 {
        return entries
            .iter()
            .find(|(k, _)| k.len() == key.len() && **k == *key)
            .map(|(_, v)| v);
    }
    entries
        .binary_search_by(|(k, _)| (**k).cmp(key))
        .ok()
        .and_then(|i| entries.get(i))
        .map(|(_, v)| v)
}

// ---------------------------------------------------------------------------
// The interner
// ---------------------------------------------------------------------------

/// What the objects of one store share: interned keys and, unless built with
/// [`Interner::without_shared_trees`], the `fieldsV1` trees of their
/// `managedFields`.
///
/// Objects hold `Arc`s to what they share, so they never need the interner to
/// be read, decoded or written; it is needed only to build them (one per
/// store, behind the store writer's lock). Entries no object uses any more are
/// swept as the interner grows (amortised), or by [`Interner::sweep`].
pub struct Interner {
    keys: HashSet<Key>,
    keys_swept_at: usize,
    trees: Option<Trees>,
}

struct Trees {
    state: RandomState,
    /// Structural hash → trees with that hash.
    buckets: HashMap<u64, Vec<Arc<Node>>>,
    len: usize,
    swept_at: usize,
}

impl Default for Interner {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Interner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Interner")
            .field("keys", &self.keys.len())
            .field("shared_trees", &self.shared_trees())
            .finish()
    }
}

impl Interner {
    /// An interner that also shares identical `fieldsV1` trees between objects.
    pub fn new() -> Self {
        Interner {
            keys: HashSet::new(),
            keys_swept_at: 0,
            trees: Some(Trees {
                state: RandomState::new(),
                buckets: HashMap::new(),
                len: 0,
                swept_at: 0,
            }),
        }
    }

    /// An interner that shares keys only: every object keeps its own
    /// `fieldsV1` trees.
    pub fn without_shared_trees() -> Self {
        Interner {
            trees: None,
            ..Interner::new()
        }
    }

    /// How many distinct keys are interned.
    pub fn keys(&self) -> usize {
        self.keys.len()
    }

    /// How many distinct `fieldsV1` trees are shared (0 without sharing).
    pub fn shared_trees(&self) -> usize {
        self.trees.as_ref().map_or(0, |t| t.len)
    }

    /// Forgets the keys and trees that no object uses any more.
    pub fn sweep(&mut self) {
        // Nothing else can clone an `Arc` whose only owner is the interner, so
        // a count of 1 is final.
        // Trees first: the keys of a tree swept are free to go too.
        if let Some(trees) = &mut self.trees {
            trees.buckets.retain(|_, bucket| {
                bucket.retain(|t| Arc::strong_count(t) > 1);
                !bucket.is_empty()
            });
            trees.len = trees.buckets.values().map(Vec::len).sum();
            trees.swept_at = trees.len;
        }
        self.keys.retain(|k| Arc::strong_count(k) > 1);
        self.keys_swept_at = self.keys.len();
    }

    fn key(&mut self, s: &str) -> Key {
        if let Some(k) = self.keys.get(s) {
            return Arc::clone(k);
        }
        if self.keys.len() >= self.keys_swept_at.saturating_mul(2).max(MIN_SWEEP) {
            self.keys.retain(|k| Arc::strong_count(k) > 1);
            self.keys_swept_at = self.keys.len();
        }
        let k: Key = Arc::from(s);
        self.keys.insert(Arc::clone(&k));
        k
    }

    fn node(&mut self, value: &Value) -> Node {
        match value {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            Value::Number(n) => Node::Number(n.clone()),
            Value::String(s) => Node::String(Str::new(s)),
            Value::Array(items) => Node::Array(items.iter().map(|v| self.node(v)).collect()),
            Value::Object(map) => Node::Object(
                map.iter()
                    .map(|(k, v)| (self.key(k), self.node(v)))
                    .collect(),
            ),
        }
    }

    /// The shared tree equal to `value`, built if there is none yet.
    fn tree(&mut self, value: &Value) -> Arc<Node> {
        let Some(trees) = &self.trees else {
            return Arc::new(self.node(value));
        };
        let mut h = trees.state.build_hasher();
        hash_value(value, &mut h);
        let hash = h.finish();
        if let Some(found) = trees
            .buckets
            .get(&hash)
            .and_then(|b| b.iter().find(|t| node_eq_value(t, value)))
        {
            return Arc::clone(found);
        }
        let tree = Arc::new(self.node(value));
        if let Some(trees) = &mut self.trees {
            if trees.len >= trees.swept_at.saturating_mul(2).max(MIN_SWEEP) {
                trees.buckets.retain(|_, bucket| {
                    bucket.retain(|t| Arc::strong_count(t) > 1);
                    !bucket.is_empty()
                });
                trees.len = trees.buckets.values().map(Vec::len).sum();
                trees.swept_at = trees.len;
            }
            trees
                .buckets
                .entry(hash)
                .or_default()
                .push(Arc::clone(&tree));
            trees.len += 1;
        }
        tree
    }

    /// Annotations: values are often long and unique to their object.
    fn strings(&mut self, map: &BTreeMap<String, String>) -> Box<[(Key, Str)]> {
        map.iter()
            .map(|(k, v)| (self.key(k), Str::new(v)))
            .collect()
    }

    /// Labels: values repeat from object to object, and are read often.
    fn interned(&mut self, map: &BTreeMap<String, String>) -> Box<[(Key, Key)]> {
        map.iter()
            .map(|(k, v)| (self.key(k), self.key(v)))
            .collect()
    }
}

// ---------------------------------------------------------------------------
// Metadata
// ---------------------------------------------------------------------------

/// The metadata: the fields read most (name, namespace, resourceVersion,
/// labels) as `Box<str>` or interned `Arc<str>`, so that reading one is a
/// dereference (an inline string would need its UTF-8 checked on every read).
#[derive(Clone, PartialEq)]
struct Meta {
    name: Option<Box<str>>,
    /// Interned: a store holds few namespaces.
    namespace: Option<Key>,
    uid: Option<Box<str>>,
    resource_version: Option<Box<str>>,
    generation: Option<i64>,
    creation_timestamp: Option<Time>,
    /// Keys and values interned.
    labels: Option<Box<[(Key, Key)]>>,
    annotations: Option<Box<[(Key, Str)]>>,
    managed_fields: Option<Box<[ManagedField]>>,
    owner_references: Option<Box<[OwnerRef]>>,
    /// The fields most objects do not have, boxed so that they cost one
    /// pointer when absent.
    rare: Option<Box<RareMeta>>,
}

#[derive(Clone, PartialEq)]
struct RareMeta {
    deletion_grace_period_seconds: Option<i64>,
    deletion_timestamp: Option<Time>,
    finalizers: Option<Vec<String>>,
    generate_name: Option<String>,
    self_link: Option<String>,
}

#[derive(Clone, PartialEq)]
struct ManagedField {
    api_version: Option<Key>,
    fields_type: Option<Key>,
    fields_v1: Option<Arc<Node>>,
    manager: Option<Key>,
    operation: Option<Key>,
    subresource: Option<Key>,
    time: Option<Time>,
}

#[derive(Clone, PartialEq)]
struct OwnerRef {
    api_version: Key,
    kind: Key,
    name: Box<str>,
    uid: Box<str>,
    block_owner_deletion: Option<bool>,
    controller: Option<bool>,
}

fn string(s: &Option<Box<str>>) -> Option<String> {
    s.as_deref().map(str::to_owned)
}

fn key_string(k: &Option<Key>) -> Option<String> {
    k.as_deref().map(str::to_owned)
}

fn string_map<V: Text>(entries: &[(Key, V)]) -> BTreeMap<String, String> {
    entries
        .iter()
        .map(|(k, v)| (String::from(&**k), v.text().to_owned()))
        .collect()
}

impl Meta {
    fn new(m: &ObjectMeta, interner: &mut Interner) -> Meta {
        let rare = (m.deletion_grace_period_seconds.is_some()
            || m.deletion_timestamp.is_some()
            || m.finalizers.is_some()
            || m.generate_name.is_some()
            || m.self_link.is_some())
        .then(|| {
            Box::new(RareMeta {
                deletion_grace_period_seconds: m.deletion_grace_period_seconds,
                deletion_timestamp: m.deletion_timestamp.clone(),
                finalizers: m.finalizers.clone(),
                generate_name: m.generate_name.clone(),
                self_link: m.self_link.clone(),
            })
        });
        Meta {
            name: m.name.as_deref().map(Box::from),
            namespace: m.namespace.as_deref().map(|s| interner.key(s)),
            uid: m.uid.as_deref().map(Box::from),
            resource_version: m.resource_version.as_deref().map(Box::from),
            generation: m.generation,
            creation_timestamp: m.creation_timestamp.clone(),
            labels: m.labels.as_ref().map(|l| interner.interned(l)),
            annotations: m.annotations.as_ref().map(|a| interner.strings(a)),
            managed_fields: m.managed_fields.as_ref().map(|entries| {
                entries
                    .iter()
                    .map(|e| ManagedField {
                        api_version: e.api_version.as_deref().map(|s| interner.key(s)),
                        fields_type: e.fields_type.as_deref().map(|s| interner.key(s)),
                        fields_v1: e.fields_v1.as_ref().map(|f| interner.tree(&f.0)),
                        manager: e.manager.as_deref().map(|s| interner.key(s)),
                        operation: e.operation.as_deref().map(|s| interner.key(s)),
                        subresource: e.subresource.as_deref().map(|s| interner.key(s)),
                        time: e.time.clone(),
                    })
                    .collect()
            }),
            owner_references: m.owner_references.as_ref().map(|refs| {
                refs.iter()
                    .map(|r| OwnerRef {
                        api_version: interner.key(&r.api_version),
                        kind: interner.key(&r.kind),
                        name: Box::from(r.name.as_str()),
                        uid: Box::from(r.uid.as_str()),
                        block_owner_deletion: r.block_owner_deletion,
                        controller: r.controller,
                    })
                    .collect()
            }),
            rare,
        }
    }

    fn to_object_meta(&self) -> ObjectMeta {
        let rare = self.rare.as_deref();
        ObjectMeta {
            annotations: self.annotations.as_deref().map(string_map),
            creation_timestamp: self.creation_timestamp.clone(),
            deletion_grace_period_seconds: rare.and_then(|r| r.deletion_grace_period_seconds),
            deletion_timestamp: rare.and_then(|r| r.deletion_timestamp.clone()),
            finalizers: rare.and_then(|r| r.finalizers.clone()),
            generate_name: rare.and_then(|r| r.generate_name.clone()),
            generation: self.generation,
            labels: self.labels.as_deref().map(string_map),
            managed_fields: self
                .managed_fields
                .as_deref()
                .map(|entries| entries.iter().map(ManagedField::to_entry).collect()),
            name: string(&self.name),
            namespace: key_string(&self.namespace),
            owner_references: self
                .owner_references
                .as_deref()
                .map(|refs| refs.iter().map(OwnerRef::to_reference).collect()),
            resource_version: string(&self.resource_version),
            self_link: rare.and_then(|r| r.self_link.clone()),
            uid: string(&self.uid),
        }
    }
}

impl ManagedField {
    fn to_entry(&self) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            api_version: key_string(&self.api_version),
            fields_type: key_string(&self.fields_type),
            fields_v1: self
                .fields_v1
                .as_deref()
                .map(|t| FieldsV1(node_to_value(t))),
            manager: key_string(&self.manager),
            operation: key_string(&self.operation),
            subresource: key_string(&self.subresource),
            time: self.time.clone(),
        }
    }
}

impl OwnerRef {
    fn to_reference(&self) -> OwnerReference {
        OwnerReference {
            api_version: String::from(&*self.api_version),
            block_owner_deletion: self.block_owner_deletion,
            controller: self.controller,
            kind: String::from(&*self.kind),
            name: String::from(&*self.name),
            uid: String::from(&*self.uid),
        }
    }
}

// ---------------------------------------------------------------------------
// The object
// ---------------------------------------------------------------------------

/// One cached object in compact form; see the [module documentation](self).
#[derive(Clone, PartialEq)]
pub struct CompactObject {
    types: Option<(Key, Key)>,
    meta: Meta,
    data: Node,
}

impl fmt::Debug for CompactObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = Vec::new();
        match self.write_json(&mut out) {
            Ok(()) => f.write_str(&String::from_utf8_lossy(&out)),
            Err(_) => f
                .debug_struct("CompactObject")
                .field("name", &self.name())
                .field("data", &self.data)
                .finish_non_exhaustive(),
        }
    }
}

impl CompactObject {
    /// The compact form of `object`, sharing keys and trees through `interner`.
    pub fn from_object(object: &DynamicObject, interner: &mut Interner) -> CompactObject {
        CompactObject {
            types: object
                .types
                .as_ref()
                .map(|t| (interner.key(&t.api_version), interner.key(&t.kind))),
            meta: Meta::new(&object.metadata, interner),
            data: interner.node(&object.data),
        }
    }

    /// The object, decoded: equal (`==`) to the one this was built from.
    pub fn to_object(&self) -> DynamicObject {
        DynamicObject {
            types: self.types.as_ref().map(|(api_version, kind)| TypeMeta {
                api_version: String::from(&**api_version),
                kind: String::from(&**kind),
            }),
            metadata: self.meta.to_object_meta(),
            data: node_to_value(&self.data),
        }
    }

    /// Writes the object's JSON: the bytes `serde_json::to_vec` writes for the
    /// `DynamicObject` it was built from. Fails, leaving `out` as it was, where
    /// that fails too: when the object's `data` is neither an object nor null.
    pub fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        let len = out.len();
        let written = serde_json::to_writer(&mut *out, self);
        if written.is_err() {
            out.truncate(len);
        }
        written
    }

    /// `apiVersion`, if the object has its type fields.
    pub fn api_version(&self) -> Option<&str> {
        self.types.as_ref().map(|(a, _)| &**a)
    }

    /// `kind`, if the object has its type fields.
    pub fn kind(&self) -> Option<&str> {
        self.types.as_ref().map(|(_, k)| &**k)
    }

    /// `metadata.name`.
    pub fn name(&self) -> Option<&str> {
        self.meta.name.as_deref()
    }

    /// `metadata.namespace`.
    pub fn namespace(&self) -> Option<&str> {
        self.meta.namespace.as_deref()
    }

    /// `metadata.uid`.
    pub fn uid(&self) -> Option<&str> {
        self.meta.uid.as_deref()
    }

    /// `metadata.resourceVersion`.
    pub fn resource_version(&self) -> Option<&str> {
        self.meta.resource_version.as_deref()
    }

    /// `metadata.generation`.
    pub fn generation(&self) -> Option<i64> {
        self.meta.generation
    }

    /// `metadata.creationTimestamp`.
    pub fn creation_timestamp(&self) -> Option<&Time> {
        self.meta.creation_timestamp.as_ref()
    }

    /// `metadata.deletionTimestamp`.
    pub fn deletion_timestamp(&self) -> Option<&Time> {
        self.meta
            .rare
            .as_ref()
            .and_then(|r| r.deletion_timestamp.as_ref())
    }

    /// `metadata.generateName`.
    pub fn generate_name(&self) -> Option<&str> {
        self.meta
            .rare
            .as_ref()
            .and_then(|r| r.generate_name.as_deref())
    }

    /// `metadata.finalizers` (empty when absent).
    pub fn finalizers(&self) -> &[String] {
        self.meta
            .rare
            .as_ref()
            .and_then(|r| r.finalizers.as_deref())
            .unwrap_or_default()
    }

    /// `metadata.labels` (empty when absent).
    pub fn labels(&self) -> StrMap<'_> {
        StrMap(Pairs::Interned(
            self.meta.labels.as_deref().unwrap_or_default(),
        ))
    }

    /// `metadata.annotations` (empty when absent).
    pub fn annotations(&self) -> StrMap<'_> {
        StrMap(Pairs::Owned(
            self.meta.annotations.as_deref().unwrap_or_default(),
        ))
    }

    /// `metadata.ownerReferences`.
    pub fn owner_references(&self) -> impl ExactSizeIterator<Item = OwnerRefView<'_>> {
        self.meta
            .owner_references
            .as_deref()
            .unwrap_or_default()
            .iter()
            .map(OwnerRefView)
    }

    /// `metadata.managedFields`.
    pub fn managed_fields(&self) -> impl ExactSizeIterator<Item = ManagedFieldView<'_>> {
        self.meta
            .managed_fields
            .as_deref()
            .unwrap_or_default()
            .iter()
            .map(ManagedFieldView)
    }

    /// Everything but the type fields and metadata: `spec`, `status`, `data`...
    pub fn data(&self) -> ValueRef<'_> {
        ValueRef::from(&self.data)
    }

    /// The value at a JSON pointer (RFC 6901) into the object as
    /// `serde_json::to_value` would see it: `pointer("/spec/nodeName")`,
    /// `pointer("/metadata/labels/app")`. Values of the tree, strings of the
    /// metadata, labels and annotations come back borrowed; timestamps,
    /// finalizers and whole metadata entries are built
    /// ([`ValueRef::Owned`]).
    pub fn pointer(&self, pointer: &str) -> Option<ValueRef<'_>> {
        if pointer.is_empty() {
            return serde_json::to_value(self).ok().map(ValueRef::Owned);
        }
        let (first, rest) = split_pointer(pointer)?;
        // The data's entries come after the type fields and metadata in the
        // serialised object, so a key of the data would win.
        if let Node::Object(entries) = &self.data
            && let Some(v) = find(entries, &first)
        {
            return ValueRef::from(v).pointer(rest);
        }
        match &*first {
            "apiVersion" => ValueRef::String(self.api_version()?).pointer(rest),
            "kind" => ValueRef::String(self.kind()?).pointer(rest),
            "metadata" if matches!(self.data, Node::Object(_) | Node::Null) => {
                self.metadata_pointer(rest)
            }
            _ => None,
        }
    }

    fn metadata_pointer(&self, pointer: &str) -> Option<ValueRef<'_>> {
        let Some((field, rest)) = split_pointer(pointer) else {
            return owned(&MetaSer(&self.meta))?.pointer(pointer);
        };
        let m = &self.meta;
        let rare = m.rare.as_deref();
        let value = match &*field {
            "name" => ValueRef::String(self.name()?),
            "namespace" => ValueRef::String(self.namespace()?),
            "uid" => ValueRef::String(self.uid()?),
            "resourceVersion" => ValueRef::String(self.resource_version()?),
            "generation" => ValueRef::Number(m.generation?.into()),
            "labels" => ValueRef::Object(ObjectRef(Entries::Strings(Pairs::Interned(
                m.labels.as_deref()?,
            )))),
            "annotations" => ValueRef::Object(ObjectRef(Entries::Strings(Pairs::Owned(
                m.annotations.as_deref()?,
            )))),
            "generateName" => ValueRef::String(rare?.generate_name.as_deref()?),
            "selfLink" => ValueRef::String(rare?.self_link.as_deref()?),
            "deletionGracePeriodSeconds" => {
                ValueRef::Number(rare?.deletion_grace_period_seconds?.into())
            }
            "creationTimestamp" => owned(m.creation_timestamp.as_ref()?)?,
            "deletionTimestamp" => owned(rare?.deletion_timestamp.as_ref()?)?,
            "finalizers" => owned(rare?.finalizers.as_ref()?)?,
            "ownerReferences" => {
                let refs = m.owner_references.as_deref()?;
                let Some((index, rest)) = split_pointer(rest) else {
                    return owned(&Seq(refs, OwnerRefSer))?.pointer(rest);
                };
                let r = refs.get(parse_index(&index)?)?;
                return OwnerRefView(r).pointer(rest);
            }
            "managedFields" => {
                let entries = m.managed_fields.as_deref()?;
                let Some((index, rest)) = split_pointer(rest) else {
                    return owned(&Seq(entries, ManagedFieldSer))?.pointer(rest);
                };
                let e = entries.get(parse_index(&index)?)?;
                return ManagedFieldView(e).pointer(rest);
            }
            _ => return None,
        };
        value.pointer(rest)
    }
}

/// A typed value as JSON (`None` where serde_json could not serialise it either).
fn owned<T: Serialize + ?Sized>(value: &T) -> Option<ValueRef<'static>> {
    serde_json::to_value(value).ok().map(ValueRef::Owned)
}

/// Splits `/first/rest...` into the unescaped first token and `/rest...`;
/// `None` for the empty pointer, and for one that does not start with `/`.
fn split_pointer(pointer: &str) -> Option<(Cow<'_, str>, &str)> {
    let tail = pointer.strip_prefix('/')?;
    let (token, rest) = match tail.find('/') {
        Some(i) => tail.split_at(i),
        None => (tail, ""),
    };
    let token = if token.contains('~') {
        Cow::Owned(token.replace("~1", "/").replace("~0", "~"))
    } else {
        Cow::Borrowed(token)
    };
    Some((token, rest))
}

/// An array index as `serde_json::Value::pointer` reads one.
fn parse_index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return None;
    }
    token.parse().ok()
}

// ---------------------------------------------------------------------------
// Borrowed views
// ---------------------------------------------------------------------------

/// A value of a [`CompactObject`], borrowed where it can be.
#[derive(Clone, Debug)]
pub enum ValueRef<'a> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, in its representation (integer or float).
    Number(Number),
    /// A string.
    String(&'a str),
    /// An array.
    Array(ArrayRef<'a>),
    /// An object.
    Object(ObjectRef<'a>),
    /// A value built for the occasion: typed metadata that has no JSON form
    /// in the compact object (timestamps, finalizers, whole metadata entries).
    Owned(Value),
}

impl<'a> From<&'a Node> for ValueRef<'a> {
    fn from(node: &'a Node) -> Self {
        match node {
            Node::Null => ValueRef::Null,
            Node::Bool(b) => ValueRef::Bool(*b),
            Node::Number(n) => ValueRef::Number(n.clone()),
            Node::String(s) => ValueRef::String(s.as_str()),
            Node::Array(items) => ValueRef::Array(ArrayRef(items)),
            Node::Object(entries) => ValueRef::Object(ObjectRef(Entries::Tree(entries))),
        }
    }
}

impl<'a> ValueRef<'a> {
    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&'a str> {
        match self {
            ValueRef::String(s) => Some(s),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            ValueRef::Bool(b) => Some(*b),
            ValueRef::Owned(v) => v.as_bool(),
            _ => None,
        }
    }

    /// The number as an `i64`, if it is an integer that fits.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            ValueRef::Number(n) => n.as_i64(),
            ValueRef::Owned(v) => v.as_i64(),
            _ => None,
        }
    }

    /// The number as an `f64`, if this is a number.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            ValueRef::Number(n) => n.as_f64(),
            ValueRef::Owned(v) => v.as_f64(),
            _ => None,
        }
    }

    /// Whether this is `null`.
    pub fn is_null(&self) -> bool {
        match self {
            ValueRef::Null => true,
            ValueRef::Owned(v) => v.is_null(),
            _ => false,
        }
    }

    /// The object, if this is a borrowed one.
    pub fn as_object(&self) -> Option<ObjectRef<'a>> {
        match self {
            ValueRef::Object(o) => Some(*o),
            _ => None,
        }
    }

    /// The array, if this is a borrowed one.
    pub fn as_array(&self) -> Option<ArrayRef<'a>> {
        match self {
            ValueRef::Array(a) => Some(*a),
            _ => None,
        }
    }

    /// The value at `pointer` below this one (RFC 6901, as
    /// `serde_json::Value::pointer`).
    pub fn pointer(self, pointer: &str) -> Option<ValueRef<'a>> {
        if let ValueRef::Owned(v) = &self {
            return v.pointer(pointer).cloned().map(ValueRef::Owned);
        }
        let mut current = self;
        let mut rest = pointer;
        while let Some((token, tail)) = split_pointer(rest) {
            current = match current {
                ValueRef::Object(o) => o.get(&token)?,
                ValueRef::Array(a) => a.get(parse_index(&token)?)?,
                _ => return None,
            };
            rest = tail;
        }
        (rest.is_empty()).then_some(current)
    }

    /// The value as a `serde_json::Value`.
    pub fn to_value(&self) -> Value {
        match self {
            ValueRef::Null => Value::Null,
            ValueRef::Bool(b) => Value::Bool(*b),
            ValueRef::Number(n) => Value::Number(n.clone()),
            ValueRef::String(s) => Value::String((*s).to_owned()),
            ValueRef::Array(a) => Value::Array(a.0.iter().map(node_to_value).collect()),
            ValueRef::Object(o) => match o.0 {
                Entries::Tree(e) => Value::Object(
                    e.iter()
                        .map(|(k, v)| (String::from(&**k), node_to_value(v)))
                        .collect(),
                ),
                Entries::Strings(e) => Value::Object(
                    (0..e.len())
                        .filter_map(|i| e.at(i))
                        .map(|(k, v)| (k.to_owned(), Value::String(v.to_owned())))
                        .collect(),
                ),
            },
            ValueRef::Owned(v) => v.clone(),
        }
    }
}

impl Serialize for ValueRef<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ValueRef::Null => s.serialize_unit(),
            ValueRef::Bool(b) => s.serialize_bool(*b),
            ValueRef::Number(n) => n.serialize(s),
            ValueRef::String(v) => s.serialize_str(v),
            ValueRef::Array(a) => Seq(a.0, NodeSer).serialize(s),
            ValueRef::Object(o) => match o.0 {
                Entries::Tree(e) => TreeMapSer(e).serialize(s),
                Entries::Strings(e) => StrMap(e).serialize(s),
            },
            ValueRef::Owned(v) => v.serialize(s),
        }
    }
}

/// A borrowed array.
#[derive(Clone, Copy)]
pub struct ArrayRef<'a>(&'a [Node]);

impl fmt::Debug for ArrayRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> ArrayRef<'a> {
    /// The number of items.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the array is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The item at `index`.
    pub fn get(&self, index: usize) -> Option<ValueRef<'a>> {
        self.0.get(index).map(ValueRef::from)
    }

    /// The items, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = ValueRef<'a>> + 'a {
        self.0.iter().map(ValueRef::from)
    }
}

/// A borrowed object: a map of the tree, or labels and annotations.
#[derive(Clone, Copy)]
pub struct ObjectRef<'a>(Entries<'a>);

#[derive(Clone, Copy)]
enum Entries<'a> {
    Tree(&'a [(Key, Node)]),
    Strings(Pairs<'a>),
}

impl fmt::Debug for ObjectRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<'a> ObjectRef<'a> {
    /// The number of entries.
    pub fn len(&self) -> usize {
        match self.0 {
            Entries::Tree(e) => e.len(),
            Entries::Strings(e) => e.len(),
        }
    }

    /// Whether the object is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value of `key` (a binary search).
    pub fn get(&self, key: &str) -> Option<ValueRef<'a>> {
        match self.0 {
            Entries::Tree(e) => find(e, key).map(ValueRef::from),
            Entries::Strings(e) => e.get(key).map(ValueRef::String),
        }
    }

    /// The entries, sorted by key.
    pub fn iter(&self) -> ObjectIter<'a> {
        ObjectIter {
            entries: self.0,
            next: 0,
        }
    }
}

/// The entries of an [`ObjectRef`], sorted by key.
#[derive(Clone)]
pub struct ObjectIter<'a> {
    entries: Entries<'a>,
    next: usize,
}

impl<'a> Iterator for ObjectIter<'a> {
    type Item = (&'a str, ValueRef<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let item = match self.entries {
            Entries::Tree(e) => e.get(self.next).map(|(k, v)| (&**k, ValueRef::from(v))),
            Entries::Strings(e) => e.at(self.next).map(|(k, v)| (k, ValueRef::String(v))),
        };
        self.next += usize::from(item.is_some());
        item
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let len = ObjectRef(self.entries).len().saturating_sub(self.next);
        (len, Some(len))
    }
}

impl ExactSizeIterator for ObjectIter<'_> {}

/// Labels or annotations: a borrowed, sorted map of strings.
#[derive(Clone, Copy)]
pub struct StrMap<'a>(Pairs<'a>);

#[derive(Clone, Copy)]
enum Pairs<'a> {
    Interned(&'a [(Key, Key)]),
    Owned(&'a [(Key, Str)]),
}

impl<'a> Pairs<'a> {
    fn len(self) -> usize {
        match self {
            Pairs::Interned(e) => e.len(),
            Pairs::Owned(e) => e.len(),
        }
    }

    fn get(self, key: &str) -> Option<&'a str> {
        match self {
            Pairs::Interned(e) => find(e, key).map(|v| &**v),
            Pairs::Owned(e) => find(e, key).map(Str::as_str),
        }
    }

    fn at(self, i: usize) -> Option<(&'a str, &'a str)> {
        match self {
            Pairs::Interned(e) => e.get(i).map(|(k, v)| (&**k, &**v)),
            Pairs::Owned(e) => e.get(i).map(|(k, v)| (&**k, v.as_str())),
        }
    }
}

impl fmt::Debug for StrMap<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<'a> StrMap<'a> {
    /// The value of `key` (a binary search).
    pub fn get(&self, key: &str) -> Option<&'a str> {
        self.0.get(key)
    }

    /// Whether `key` is there.
    pub fn contains_key(&self, key: &str) -> bool {
        self.0.get(key).is_some()
    }

    /// The entries, sorted by key.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&'a str, &'a str)> + 'a {
        let pairs = self.0;
        (0..pairs.len()).map(move |i| pairs.at(i).unwrap_or(("", "")))
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.len() == 0
    }
}

impl Serialize for StrMap<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.iter() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// One of `metadata.ownerReferences`, borrowed.
#[derive(Clone, Copy, Debug)]
pub struct OwnerRefView<'a>(&'a OwnerRef);

impl fmt::Debug for OwnerRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnerReference")
            .field("api_version", &self.api_version)
            .field("kind", &self.kind)
            .field("name", &self.name)
            .field("uid", &self.uid)
            .field("controller", &self.controller)
            .finish()
    }
}

impl<'a> OwnerRefView<'a> {
    /// `apiVersion`.
    pub fn api_version(&self) -> &'a str {
        &self.0.api_version
    }
    /// `kind`.
    pub fn kind(&self) -> &'a str {
        &self.0.kind
    }
    /// `name`.
    pub fn name(&self) -> &'a str {
        &self.0.name
    }
    /// `uid`.
    pub fn uid(&self) -> &'a str {
        &self.0.uid
    }
    /// `controller`.
    pub fn controller(&self) -> Option<bool> {
        self.0.controller
    }
    /// `blockOwnerDeletion`.
    pub fn block_owner_deletion(&self) -> Option<bool> {
        self.0.block_owner_deletion
    }
    /// The owner reference, decoded.
    pub fn to_reference(&self) -> OwnerReference {
        self.0.to_reference()
    }

    fn pointer(self, pointer: &str) -> Option<ValueRef<'a>> {
        let Some((field, rest)) = split_pointer(pointer) else {
            return owned(&OwnerRefSer(self.0))?.pointer(pointer);
        };
        let value = match &*field {
            "apiVersion" => ValueRef::String(self.api_version()),
            "kind" => ValueRef::String(self.kind()),
            "name" => ValueRef::String(self.name()),
            "uid" => ValueRef::String(self.uid()),
            "controller" => ValueRef::Bool(self.controller()?),
            "blockOwnerDeletion" => ValueRef::Bool(self.block_owner_deletion()?),
            _ => return None,
        };
        value.pointer(rest)
    }
}

/// One of `metadata.managedFields`, borrowed.
#[derive(Clone, Copy)]
pub struct ManagedFieldView<'a>(&'a ManagedField);

impl fmt::Debug for ManagedFieldView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManagedFieldsEntry")
            .field("manager", &self.manager())
            .field("operation", &self.operation())
            .finish_non_exhaustive()
    }
}

impl<'a> ManagedFieldView<'a> {
    /// `manager`.
    pub fn manager(&self) -> Option<&'a str> {
        self.0.manager.as_deref()
    }
    /// `operation`.
    pub fn operation(&self) -> Option<&'a str> {
        self.0.operation.as_deref()
    }
    /// `apiVersion`.
    pub fn api_version(&self) -> Option<&'a str> {
        self.0.api_version.as_deref()
    }
    /// `subresource`.
    pub fn subresource(&self) -> Option<&'a str> {
        self.0.subresource.as_deref()
    }
    /// `time`.
    pub fn time(&self) -> Option<&'a Time> {
        self.0.time.as_ref()
    }
    /// `fieldsV1`, borrowed (possibly shared with other objects).
    pub fn fields_v1(&self) -> Option<ValueRef<'a>> {
        self.0.fields_v1.as_deref().map(ValueRef::from)
    }
    /// The entry, decoded.
    pub fn to_entry(&self) -> ManagedFieldsEntry {
        self.0.to_entry()
    }

    fn pointer(self, pointer: &str) -> Option<ValueRef<'a>> {
        let Some((field, rest)) = split_pointer(pointer) else {
            return owned(&ManagedFieldSer(self.0))?.pointer(pointer);
        };
        let e = self.0;
        let value = match &*field {
            "apiVersion" => ValueRef::String(e.api_version.as_deref()?),
            "fieldsType" => ValueRef::String(e.fields_type.as_deref()?),
            "fieldsV1" => ValueRef::from(e.fields_v1.as_deref()?),
            "manager" => ValueRef::String(e.manager.as_deref()?),
            "operation" => ValueRef::String(e.operation.as_deref()?),
            "subresource" => ValueRef::String(e.subresource.as_deref()?),
            "time" => owned(e.time.as_ref()?)?,
            _ => return None,
        };
        value.pointer(rest)
    }
}

// ---------------------------------------------------------------------------
// Serialisation: the calls DynamicObject's and k8s-openapi's impls make
// ---------------------------------------------------------------------------

impl Serialize for CompactObject {
    /// Serialises as the `DynamicObject` would: a map of the type fields,
    /// `metadata`, then the entries of the data (flattened).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        if let Some((api_version, kind)) = &self.types {
            map.serialize_entry("apiVersion", &**api_version)?;
            map.serialize_entry("kind", &**kind)?;
        }
        map.serialize_entry("metadata", &MetaSer(&self.meta))?;
        match &self.data {
            Node::Object(entries) => {
                for (k, v) in entries.iter() {
                    map.serialize_entry(&**k, &NodeSer(v))?;
                }
            }
            Node::Null => {}
            _ => {
                return Err(S::Error::custom(
                    "can only flatten structs and maps: the object's data is neither",
                ));
            }
        }
        map.end()
    }
}

/// A sequence of `T`s serialised through the wrapper `W`.
struct Seq<'a, T, W>(&'a [T], fn(&'a T) -> W);

impl<'a, T, W: Serialize> Serialize for Seq<'a, T, W> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for item in self.0 {
            seq.serialize_element(&(self.1)(item))?;
        }
        seq.end()
    }
}

struct NodeSer<'a>(&'a Node);

impl Serialize for NodeSer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Node::Null => s.serialize_unit(),
            Node::Bool(b) => s.serialize_bool(*b),
            Node::Number(n) => n.serialize(s),
            Node::String(v) => s.serialize_str(v.as_str()),
            Node::Array(items) => Seq(items, NodeSer).serialize(s),
            Node::Object(entries) => TreeMapSer(entries).serialize(s),
        }
    }
}

struct TreeMapSer<'a>(&'a [(Key, Node)]);

impl Serialize for TreeMapSer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            map.serialize_entry(&**k, &NodeSer(v))?;
        }
        map.end()
    }
}

struct MetaSer<'a>(&'a Meta);

impl Serialize for MetaSer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m = self.0;
        let rare = m.rare.as_deref();
        let grace = rare.and_then(|r| r.deletion_grace_period_seconds);
        let deletion = rare.and_then(|r| r.deletion_timestamp.as_ref());
        let finalizers = rare.and_then(|r| r.finalizers.as_ref());
        let generate_name = rare.and_then(|r| r.generate_name.as_ref());
        let self_link = rare.and_then(|r| r.self_link.as_ref());
        let n = [
            m.annotations.is_some(),
            m.creation_timestamp.is_some(),
            grace.is_some(),
            deletion.is_some(),
            finalizers.is_some(),
            generate_name.is_some(),
            m.generation.is_some(),
            m.labels.is_some(),
            m.managed_fields.is_some(),
            m.name.is_some(),
            m.namespace.is_some(),
            m.owner_references.is_some(),
            m.resource_version.is_some(),
            self_link.is_some(),
            m.uid.is_some(),
        ]
        .into_iter()
        .filter(|b| *b)
        .count();
        let mut st = s.serialize_struct("ObjectMeta", n)?;
        if let Some(v) = &m.annotations {
            st.serialize_field("annotations", &StrMap(Pairs::Owned(v)))?;
        }
        if let Some(v) = &m.creation_timestamp {
            st.serialize_field("creationTimestamp", v)?;
        }
        if let Some(v) = &grace {
            st.serialize_field("deletionGracePeriodSeconds", v)?;
        }
        if let Some(v) = deletion {
            st.serialize_field("deletionTimestamp", v)?;
        }
        if let Some(v) = finalizers {
            st.serialize_field("finalizers", v)?;
        }
        if let Some(v) = generate_name {
            st.serialize_field("generateName", v)?;
        }
        if let Some(v) = &m.generation {
            st.serialize_field("generation", v)?;
        }
        if let Some(v) = &m.labels {
            st.serialize_field("labels", &StrMap(Pairs::Interned(v)))?;
        }
        if let Some(v) = &m.managed_fields {
            st.serialize_field("managedFields", &Seq(v, ManagedFieldSer))?;
        }
        if let Some(v) = &m.name {
            st.serialize_field("name", &**v)?;
        }
        if let Some(v) = &m.namespace {
            st.serialize_field("namespace", &**v)?;
        }
        if let Some(v) = &m.owner_references {
            st.serialize_field("ownerReferences", &Seq(v, OwnerRefSer))?;
        }
        if let Some(v) = &m.resource_version {
            st.serialize_field("resourceVersion", &**v)?;
        }
        if let Some(v) = self_link {
            st.serialize_field("selfLink", v)?;
        }
        if let Some(v) = &m.uid {
            st.serialize_field("uid", &**v)?;
        }
        st.end()
    }
}

struct ManagedFieldSer<'a>(&'a ManagedField);

/// `FieldsV1` serialises as a newtype struct around its value.
struct FieldsV1Ser<'a>(&'a Node);

impl Serialize for FieldsV1Ser<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_struct("FieldsV1", &NodeSer(self.0))
    }
}

impl Serialize for ManagedFieldSer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let e = self.0;
        let n = [
            e.api_version.is_some(),
            e.fields_type.is_some(),
            e.fields_v1.is_some(),
            e.manager.is_some(),
            e.operation.is_some(),
            e.subresource.is_some(),
            e.time.is_some(),
        ]
        .into_iter()
        .filter(|b| *b)
        .count();
        let mut st = s.serialize_struct("ManagedFieldsEntry", n)?;
        if let Some(v) = &e.api_version {
            st.serialize_field("apiVersion", &**v)?;
        }
        if let Some(v) = &e.fields_type {
            st.serialize_field("fieldsType", &**v)?;
        }
        if let Some(v) = &e.fields_v1 {
            st.serialize_field("fieldsV1", &FieldsV1Ser(v))?;
        }
        if let Some(v) = &e.manager {
            st.serialize_field("manager", &**v)?;
        }
        if let Some(v) = &e.operation {
            st.serialize_field("operation", &**v)?;
        }
        if let Some(v) = &e.subresource {
            st.serialize_field("subresource", &**v)?;
        }
        if let Some(v) = &e.time {
            st.serialize_field("time", v)?;
        }
        st.end()
    }
}

struct OwnerRefSer<'a>(&'a OwnerRef);

impl Serialize for OwnerRefSer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let n =
            4 + usize::from(r.block_owner_deletion.is_some()) + usize::from(r.controller.is_some());
        let mut st = s.serialize_struct("OwnerReference", n)?;
        st.serialize_field("apiVersion", &*r.api_version)?;
        if let Some(v) = &r.block_owner_deletion {
            st.serialize_field("blockOwnerDeletion", v)?;
        }
        if let Some(v) = &r.controller {
            st.serialize_field("controller", v)?;
        }
        st.serialize_field("kind", &*r.kind)?;
        st.serialize_field("name", &*r.name)?;
        st.serialize_field("uid", &*r.uid)?;
        st.end()
    }
}

// ---------------------------------------------------------------------------
// Reads that need the whole object
// ---------------------------------------------------------------------------

/// A [`CompactObject`] with the last `DynamicObject` handed out for it: a read
/// that needs the whole object gets that same `Arc` back while anyone still
/// holds it, and decodes a new one otherwise.
///
/// The remembered `Weak` keeps the `Arc`'s allocation (the `DynamicObject`
/// struct itself, a few hundred bytes, not its contents) until it is replaced
/// or [`CompactEntry::forget_dropped`] clears it.
pub struct CompactEntry {
    object: CompactObject,
    recent: parking_lot::Mutex<Weak<DynamicObject>>,
}

impl fmt::Debug for CompactEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompactEntry")
            .field("object", &self.object)
            .finish_non_exhaustive()
    }
}

impl CompactEntry {
    /// An entry for `object`, remembering `decoded` (the `DynamicObject` it
    /// was built from, as handed to event handlers) if given.
    pub fn new(object: CompactObject, decoded: Option<&Arc<DynamicObject>>) -> Self {
        CompactEntry {
            object,
            recent: parking_lot::Mutex::new(decoded.map(Arc::downgrade).unwrap_or_default()),
        }
    }

    /// The compact object, for the reads that need no `DynamicObject`.
    pub fn compact(&self) -> &CompactObject {
        &self.object
    }

    /// The whole object: the `Arc` handed out last if someone still holds it,
    /// else a new one, decoded.
    pub fn get(&self) -> Arc<DynamicObject> {
        let mut recent = self.recent.lock();
        if let Some(object) = recent.upgrade() {
            return object;
        }
        let object = Arc::new(self.object.to_object());
        *recent = Arc::downgrade(&object);
        object
    }

    /// Forgets the last `DynamicObject` handed out if nobody holds it any
    /// more, freeing the allocation its `Weak` kept. Returns whether it did.
    pub fn forget_dropped(&self) -> bool {
        let mut recent = self.recent.lock();
        // `Weak::new()` points nowhere; only a `Weak` of a dropped `Arc` keeps
        // an allocation.
        if recent.strong_count() == 0 && !recent.ptr_eq(&Weak::new()) {
            *recent = Weak::new();
            true
        } else {
            false
        }
    }
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde::Deserialize;
    use serde_json::json;

    fn object(value: Value) -> DynamicObject {
        serde_json::from_value(value).expect("a DynamicObject")
    }

    fn decoded(text: &str) -> DynamicObject {
        serde_json::from_str(text).expect("a DynamicObject")
    }

    /// Round trip, JSON and every zero-copy read against the original.
    fn check(o: &DynamicObject, interner: &mut Interner) -> CompactObject {
        let c = CompactObject::from_object(o, interner);
        let back = c.to_object();
        assert_eq!(&back, o);
        let expected = serde_json::to_vec(o);
        let mut out = b"prefix".to_vec();
        let written = c.write_json(&mut out);
        match expected {
            Ok(expected) => {
                assert!(written.is_ok(), "{written:?}");
                assert_eq!(
                    String::from_utf8_lossy(&out[6..]),
                    String::from_utf8_lossy(&expected)
                );
                // The round trip keeps representations too (0.0 == -0.0 for ==).
                assert_eq!(serde_json::to_vec(&back).ok(), Some(expected.clone()));
                let mut de = serde_json::Deserializer::from_slice(&expected);
                de.disable_recursion_limit();
                let value = Value::deserialize(&mut de).expect("JSON");
                check_pointers(&c, &value, "", &value);
            }
            Err(_) => {
                assert!(written.is_err());
                assert_eq!(out, b"prefix");
            }
        }
        assert_eq!(c.name(), o.metadata.name.as_deref());
        assert_eq!(c.namespace(), o.metadata.namespace.as_deref());
        assert_eq!(c.uid(), o.metadata.uid.as_deref());
        assert_eq!(c.resource_version(), o.metadata.resource_version.as_deref());
        let labels: BTreeMap<String, String> = c
            .labels()
            .iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        assert_eq!(labels, o.metadata.labels.clone().unwrap_or_default());
        for (k, v) in o.metadata.labels.iter().flatten() {
            assert_eq!(c.labels().get(k), Some(v.as_str()));
        }
        for (k, v) in o.metadata.annotations.iter().flatten() {
            assert_eq!(c.annotations().get(k), Some(v.as_str()));
        }
        let refs: Vec<_> = c.owner_references().map(|r| r.to_reference()).collect();
        assert_eq!(
            refs,
            o.metadata.owner_references.clone().unwrap_or_default()
        );
        c
    }

    /// Every pointer into `value` reads the same through the compact object.
    fn check_pointers(c: &CompactObject, root: &Value, pointer: &str, value: &Value) {
        let got = c.pointer(pointer).map(|v| v.to_value());
        assert_eq!(got.as_ref(), root.pointer(pointer), "pointer {pointer:?}");
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    let token = k.replace('~', "~0").replace('/', "~1");
                    check_pointers(c, root, &format!("{pointer}/{token}"), v);
                }
                let missing = format!("{pointer}/no-such-key");
                assert!(c.pointer(&missing).is_none(), "{missing}");
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    check_pointers(c, root, &format!("{pointer}/{i}"), v);
                }
                for bad in ["/-", "/01", "/+0", "/x"] {
                    assert_eq!(
                        c.pointer(&format!("{pointer}{bad}"))
                            .map(|v| v.to_value())
                            .as_ref(),
                        root.pointer(&format!("{pointer}{bad}"))
                    );
                }
            }
            _ => {
                assert!(c.pointer(&format!("{pointer}/0")).is_none());
            }
        }
    }

    const WIDGET: &str = include_str!("../bench/peers/data/widget.json");

    #[test]
    fn sizes() {
        assert_eq!(std::mem::size_of::<Str>(), 24);
        assert_eq!(std::mem::size_of::<Option<Str>>(), 24);
        assert_eq!(std::mem::size_of::<Node>(), 24);
        assert_eq!(std::mem::size_of::<(Key, Node)>(), 40);
    }

    #[test]
    fn shareable_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<CompactObject>();
        send_sync::<CompactEntry>();
        send_sync::<Interner>();
        send_sync::<ValueRef<'static>>();
    }

    #[test]
    fn serde_json_maps_are_sorted() {
        // The tree's binary searches rely on serde_json's Map iterating in key
        // order: this fails if serde_json's `preserve_order` is ever enabled.
        let v = json!({"b": 1, "a": 2, "c": 3});
        let keys: Vec<_> = v
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(keys, ["a", "b", "c"]);
    }

    #[test]
    fn widget_round_trip_and_reads() {
        let mut interner = Interner::new();
        let o = decoded(WIDGET);
        let c = check(&o, &mut interner);
        assert_eq!(c.labels().get("app"), Some("app-13"));
        assert_eq!(
            c.pointer("/spec/nodeName").and_then(|v| v.as_str()),
            Some("node-13")
        );
        assert_eq!(
            c.pointer("/spec/replicas").and_then(|v| v.as_i64()),
            Some(4)
        );
        assert_eq!(
            c.pointer("/status/conditions/1/type")
                .and_then(|v| v.as_str()),
            Some("Progressing")
        );
        assert_eq!(
            c.pointer("/metadata/labels/app.kubernetes.io~1name")
                .and_then(|v| v.as_str()),
            Some("widget")
        );
        assert_eq!(
            c.pointer("/metadata/name").and_then(|v| v.as_str()),
            Some("widget-000013")
        );
        assert_eq!(
            c.pointer("/metadata/generation").and_then(|v| v.as_i64()),
            Some(1)
        );
        assert_eq!(
            c.pointer("/metadata/creationTimestamp")
                .map(|v| v.to_value()),
            Some(json!("2026-12-02T16:18:14Z"))
        );
        let mf: Vec<_> = c.managed_fields().collect();
        assert_eq!(mf.len(), 1);
        assert_eq!(mf[0].manager(), Some("bench-loader"));
        assert!(
            mf[0]
                .fields_v1()
                .and_then(|f| f.pointer("/f:spec/f:tags"))
                .is_some()
        );
        assert_eq!(c.api_version(), Some("bench.kdi.dev/v1"));
        assert_eq!(c.kind(), Some("Widget"));
        assert_eq!(c.generation(), Some(1));
    }

    #[test]
    fn identical_fields_v1_trees_are_shared_and_swept() {
        let mut interner = Interner::new();
        let a = decoded(WIDGET);
        let mut b = a.clone();
        b.metadata.name = Some("other".into());
        let ca = check(&a, &mut interner);
        let cb = check(&b, &mut interner);
        assert_eq!(interner.shared_trees(), 1);
        let (ta, tb) = (
            &ca.meta.managed_fields.as_ref().unwrap()[0],
            &cb.meta.managed_fields.as_ref().unwrap()[0],
        );
        assert!(Arc::ptr_eq(
            ta.fields_v1.as_ref().unwrap(),
            tb.fields_v1.as_ref().unwrap()
        ));
        drop((ca, cb));
        interner.sweep();
        assert_eq!(interner.shared_trees(), 0);
        assert_eq!(interner.keys(), 0);

        let mut plain = Interner::without_shared_trees();
        let ca = check(&a, &mut plain);
        let cb = check(&b, &mut plain);
        assert_eq!(plain.shared_trees(), 0);
        let (ta, tb) = (
            &ca.meta.managed_fields.as_ref().unwrap()[0],
            &cb.meta.managed_fields.as_ref().unwrap()[0],
        );
        assert!(!Arc::ptr_eq(
            ta.fields_v1.as_ref().unwrap(),
            tb.fields_v1.as_ref().unwrap()
        ));
    }

    #[test]
    fn trees_differing_only_in_number_representation_are_not_shared() {
        let mut interner = Interner::new();
        let mk = |n: Value| {
            object(json!({
                "apiVersion": "v1", "kind": "X",
                "metadata": {"name": "a", "managedFields": [{"fieldsV1": {"n": n}}]},
            }))
        };
        let values = [
            json!(0.0),
            json!(-0.0),
            json!(0),
            json!(1),
            json!(1.0),
            json!(-1),
        ];
        let objects: Vec<_> = values.iter().map(|v| mk(v.clone())).collect();
        let compact: Vec<_> = objects.iter().map(|o| check(o, &mut interner)).collect();
        assert_eq!(interner.shared_trees(), values.len());
        for (c, o) in compact.iter().zip(&objects) {
            assert_eq!(
                serde_json::to_vec(&c.to_object()).unwrap(),
                serde_json::to_vec(o).unwrap()
            );
        }
    }

    #[test]
    fn odd_objects() {
        let mut interner = Interner::new();
        let odd = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "ünïcödé-名前-🦀",
                "namespace": "",
                "labels": {},
                "annotations": {"a.b/c~d": "x\"y\\z\n\u{0}\u{1f}", "empty": ""},
                "finalizers": [],
                "generateName": "gen-",
                "selfLink": "/api/v1/x",
                "deletionGracePeriodSeconds": -30,
                "deletionTimestamp": "2026-01-01T00:00:01Z",
                "creationTimestamp": "1970-01-01T00:00:00Z",
                "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": true, "blockOwnerDeletion": false},
                    {"apiVersion": "v1", "kind": "X", "name": "a-name-that-is-longer-than-inline", "uid": ""},
                ],
                "managedFields": [
                    {},
                    {"manager": "m", "operation": "Update", "subresource": "status", "fieldsType": "FieldsV1", "fieldsV1": {}},
                    {"fieldsV1": null},
                    {"fieldsV1": [1, "two", {"three": 3.0}]},
                ],
            },
            "data": {
                "": "",
                "a.b/c": "keys with dots and slashes",
                "~1/0": "pointer escapes",
                "nums": [1e300, -0.0, 0.0, 3.0, 18446744073709551615u64, -9223372036854775808i64, 0, -1, 1.5e-300, 123456789012345678u64],
                "empty": {"o": {}, "a": [], "s": ""},
                "nul": null,
                "bools": [true, false],
                "exactly-22-bytes-long!": "exactly-22-bytes-long!",
                "exactly-23-bytes-long!!": "exactly-23-bytes-long!!",
                "🦀": "多字节字符串，比二十二个字节更长的字符串",
            },
        });
        check(&object(odd), &mut interner);
        // Missing metadata, no type fields, and data that is null.
        check(
            &DynamicObject {
                types: None,
                metadata: ObjectMeta::default(),
                data: Value::Null,
            },
            &mut interner,
        );
        check(&object(json!({})), &mut interner);
        // Floats that print in exponent form, from text (as the wire decodes them).
        check(
            &decoded(
                r#"{"apiVersion":"v1","kind":"X","metadata":{},"spec":{"a":1e300,"b":-0.0,"c":3.0,"d":-9223372036854775808,"e":18446744073709551615,"f":1E-7}}"#,
            ),
            &mut interner,
        );
    }

    #[test]
    fn data_that_cannot_be_flattened_fails_as_serde_json_does() {
        let mut interner = Interner::new();
        for data in [json!(true), json!(1), json!("s"), json!([1]), json!(-0.0)] {
            let o = DynamicObject {
                types: None,
                metadata: ObjectMeta::default(),
                data,
            };
            assert!(serde_json::to_vec(&o).is_err());
            check(&o, &mut interner);
        }
    }

    #[test]
    fn data_keys_named_like_the_typed_fields() {
        // Not something the wire produces (serde takes these keys for the
        // typed fields), but a DynamicObject can be built so; the JSON then
        // has the key twice, as serde_json writes it.
        let mut interner = Interner::new();
        let o = DynamicObject {
            types: None,
            metadata: ObjectMeta {
                name: Some("n".into()),
                ..Default::default()
            },
            data: json!({"apiVersion": "data/v1", "metadata": {"x": 1}}),
        };
        let c = CompactObject::from_object(&o, &mut interner);
        assert_eq!(c.to_object(), o);
        let mut out = Vec::new();
        c.write_json(&mut out).unwrap();
        assert_eq!(out, serde_json::to_vec(&o).unwrap());
        assert_eq!(c.pointer("/metadata/x").and_then(|v| v.as_i64()), Some(1));
        assert_eq!(
            c.pointer("/apiVersion").and_then(|v| v.as_str()),
            Some("data/v1")
        );
        assert_eq!(c.name(), Some("n"));
    }

    #[test]
    fn deep_nesting() {
        let mut interner = Interner::new();
        for depth in [1usize, 2, 100, 250] {
            let mut v = json!("leaf");
            for i in 0..depth {
                v = if i % 2 == 0 {
                    json!({ "k": v })
                } else {
                    json!([v])
                };
            }
            let o = object(
                json!({"apiVersion": "v1", "kind": "X", "metadata": {"managedFields": [{"fieldsV1": v.clone()}]}, "spec": v}),
            );
            check(&o, &mut interner);
        }
    }

    #[test]
    fn sub_second_timestamps_survive_the_round_trip() {
        // Time serialises to the second; the compact form keeps the value.
        let mut interner = Interner::new();
        let o = decoded(
            r#"{"metadata":{"creationTimestamp":"2026-01-01T00:00:00.123456789Z","managedFields":[{"time":"2026-01-01T00:00:00.5Z"}]}}"#,
        );
        let c = CompactObject::from_object(&o, &mut interner);
        assert_eq!(c.to_object(), o);
        let mut out = Vec::new();
        c.write_json(&mut out).unwrap();
        assert_eq!(out, serde_json::to_vec(&o).unwrap());
    }

    #[test]
    fn entry_hands_out_the_same_arc_while_held() {
        let mut interner = Interner::new();
        let o = Arc::new(decoded(WIDGET));
        let entry = CompactEntry::new(CompactObject::from_object(&o, &mut interner), Some(&o));
        assert!(Arc::ptr_eq(&entry.get(), &o));
        assert!(!entry.forget_dropped());
        drop(o);
        let fresh = entry.get();
        assert_eq!(*fresh, decoded(WIDGET));
        let again = entry.get();
        assert!(Arc::ptr_eq(&fresh, &again));
        drop((fresh, again));
        assert!(entry.forget_dropped());
        assert!(!entry.forget_dropped());
    }

    // ---- proptest --------------------------------------------------------

    fn arb_string() -> impl Strategy<Value = String> {
        prop_oneof!["[a-z./~-]{0,8}", ".{0,30}", "\\PC{20,40}",]
    }

    fn arb_number() -> impl Strategy<Value = Number> {
        prop_oneof![
            any::<u64>().prop_map(Number::from),
            any::<i64>().prop_map(Number::from),
            any::<f64>().prop_filter_map("finite", Number::from_f64),
            Just(Number::from_f64(-0.0).unwrap()),
            Just(Number::from_f64(3.0).unwrap()),
            Just(Number::from_f64(1e300).unwrap()),
        ]
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            arb_number().prop_map(Value::Number),
            arb_string().prop_map(Value::String),
        ];
        leaf.prop_recursive(6, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(arb_string(), inner, 0..12)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn arb_time() -> impl Strategy<Value = Time> {
        (0i64..4_000_000_000, 0i32..1_000_000_000)
            .prop_map(|(s, ns)| Time(k8s_openapi::jiff::Timestamp::new(s, ns).unwrap_or_default()))
    }

    fn arb_map() -> impl Strategy<Value = BTreeMap<String, String>> {
        prop::collection::btree_map(arb_string(), arb_string(), 0..12)
    }

    fn arb_meta() -> impl Strategy<Value = ObjectMeta> {
        let entry = (
            prop::option::of(arb_string()),
            prop::option::of(arb_string()),
            prop::option::of(arb_value()),
            prop::option::of(arb_string()),
            prop::option::of(arb_time()),
        )
            .prop_map(|(manager, operation, fields, subresource, time)| {
                ManagedFieldsEntry {
                    api_version: Some("v1".into()),
                    fields_type: Some("FieldsV1".into()),
                    fields_v1: fields.map(FieldsV1),
                    manager,
                    operation,
                    subresource,
                    time,
                }
            });
        let owner = (
            arb_string(),
            arb_string(),
            prop::option::of(any::<bool>()),
            prop::option::of(any::<bool>()),
        )
            .prop_map(|(name, uid, controller, block)| OwnerReference {
                api_version: "apps/v1".into(),
                kind: "ReplicaSet".into(),
                name,
                uid,
                controller,
                block_owner_deletion: block,
            });
        (
            (
                prop::option::of(arb_string()),
                prop::option::of(arb_string()),
                prop::option::of(arb_string()),
                prop::option::of(arb_string()),
                prop::option::of(any::<i64>()),
                prop::option::of(arb_time()),
            ),
            (
                prop::option::of(arb_map()),
                prop::option::of(arb_map()),
                prop::option::of(prop::collection::vec(entry, 0..3)),
                prop::option::of(prop::collection::vec(owner, 0..3)),
            ),
            (
                prop::option::of(any::<i64>()),
                prop::option::of(arb_time()),
                prop::option::of(prop::collection::vec(arb_string(), 0..3)),
                prop::option::of(arb_string()),
                prop::option::of(arb_string()),
            ),
        )
            .prop_map(
                |(
                    (name, namespace, uid, rv, generation, created),
                    (labels, annotations, mf, owners),
                    (grace, deleted, finalizers, gen_name, self_link),
                )| ObjectMeta {
                    name,
                    namespace,
                    uid,
                    resource_version: rv,
                    generation,
                    creation_timestamp: created,
                    labels,
                    annotations,
                    managed_fields: mf,
                    owner_references: owners,
                    deletion_grace_period_seconds: grace,
                    deletion_timestamp: deleted,
                    finalizers,
                    generate_name: gen_name,
                    self_link,
                },
            )
    }

    fn arb_object() -> impl Strategy<Value = DynamicObject> {
        (
            prop::option::of((arb_string(), arb_string())),
            arb_meta(),
            prop_oneof![
                4 => prop::collection::btree_map(
                    arb_string().prop_filter("typed keys", |k| !matches!(k.as_str(), "apiVersion" | "kind" | "metadata")),
                    arb_value(),
                    0..14,
                ).prop_map(|m| Value::Object(m.into_iter().collect())),
                1 => arb_value(),
            ],
        )
            .prop_map(|(types, metadata, data)| DynamicObject {
                types: types.map(|(api_version, kind)| TypeMeta { api_version, kind }),
                metadata,
                data,
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn round_trip(objects in prop::collection::vec(arb_object(), 1..4)) {
            // One interner for several objects, so that keys and trees are shared.
            let mut interner = Interner::new();
            let compact: Vec<_> = objects.iter().map(|o| check(o, &mut interner)).collect();
            for (c, o) in compact.iter().zip(&objects) {
                prop_assert_eq!(&c.to_object(), o);
            }
            drop(compact);
            interner.sweep();
            prop_assert_eq!(interner.keys(), 0);
            prop_assert_eq!(interner.shared_trees(), 0);
        }

        #[test]
        fn round_trip_through_json_text(objects in prop::collection::vec(arb_object(), 1..3)) {
            // What the wire does: objects decoded from JSON text.
            let mut interner = Interner::without_shared_trees();
            for o in &objects {
                if let Ok(text) = serde_json::to_string(o) {
                    if let Ok(decoded) = serde_json::from_str::<DynamicObject>(&text) {
                        check(&decoded, &mut interner);
                    }
                }
            }
        }
    }
}
