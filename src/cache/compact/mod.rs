//! A compact form for cached objects: what the store holds instead of a
//! decoded [`DynamicObject`] with
//! [`Storage::Compact`](crate::informer::options::Storage::Compact) (see "In the
//! store" below).
//!
//! The [layer docs](crate::cache) say more.

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
        Node::Object(entries) => {
            let pairs = entries
                .iter()
                .map(|(k, v)| (String::from(&**k), node_to_value(v)));
            if entries.len() <= FEW_ENTRIES {
                let mut map = serde_json::Map::new();
                for (k, v) in pairs {
                    map.insert(k, v);
                }
                Value::Object(map)
            } else {
                Value::Object(pairs.collect())
            }
        }
    }
}

/// Up to this many entries, a map is built by inserting them one by one;
/// beyond, by `collect`, which copies them into a `Vec`, checks their order
/// and builds the tree from it. The inserts cost more per entry (each scans
/// the keys before it) but need no `Vec`: a Widget decodes in 9.3 µs with 3,
/// 9.5 with 2 or 4, 9.8 with 11, 10.1 with 0 (`cargo bench --bench compact
/// -- --decode`). (A generic function for both kinds of map, through
/// `Extend`, measured 3% slower.)
const FEW_ENTRIES: usize = 3;

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

/// Exact structural equality of two nodes (numbers by representation, as
/// [`node_eq_value`]).
fn node_eq(a: &Node, b: &Node) -> bool {
    match (a, b) {
        (Node::Number(x), Node::Number(y)) => number_bits(x) == number_bits(y),
        (Node::Array(x), Node::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| node_eq(p, q))
        }
        (Node::Object(x), Node::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|((ka, p), (kb, q))| **ka == **kb && node_eq(p, q))
        }
        _ => a == b,
    }
}

/// [`hash_value`] of the value a node holds: equal for equal content.
fn hash_node(node: &Node, h: &mut impl Hasher) {
    match node {
        Node::Null => h.write_u8(0),
        Node::Bool(b) => {
            h.write_u8(1);
            h.write_u8(u8::from(*b));
        }
        Node::Number(n) => {
            let (kind, bits) = number_bits(n);
            h.write_u8(2 + kind);
            h.write_u64(bits);
        }
        Node::String(s) => {
            h.write_u8(5);
            s.as_str().hash(h);
        }
        Node::Array(items) => {
            h.write_u8(6);
            h.write_usize(items.len());
            for item in items {
                hash_node(item, h);
            }
        }
        Node::Object(entries) => {
            h.write_u8(7);
            h.write_usize(entries.len());
            for (k, v) in entries {
                (**k).hash(h);
                hash_node(v, h);
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

impl Trees {
    /// Forgets the trees no object uses any more.
    fn sweep(&mut self) {
        self.buckets.retain(|_, bucket| {
            bucket.retain(|t| Arc::strong_count(t) > 1);
            !bucket.is_empty()
        });
        self.len = self.buckets.values().map(Vec::len).sum();
        self.swept_at = self.len;
    }
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
        // Trees first: the keys of a tree swept are free to go too.
        if let Some(trees) = &mut self.trees {
            trees.sweep();
        }
        self.sweep_keys();
    }

    fn sweep_keys(&mut self) {
        // Nothing else can clone an `Arc` whose only owner is the interner, so
        // a count of 1 is final.
        self.keys.retain(|k| Arc::strong_count(k) > 1);
        self.keys_swept_at = self.keys.len();
    }

    fn key(&mut self, s: &str) -> Key {
        if let Some(k) = self.keys.get(s) {
            return Arc::clone(k);
        }
        if self.keys.len() >= self.keys_swept_at.saturating_mul(2).max(MIN_SWEEP) {
            self.sweep_keys();
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
        let Some(hash) = self.tree_hash(|h| hash_value(value, h)) else {
            return Arc::new(self.node(value));
        };
        if let Some(found) = self.shared_tree(hash, |t| node_eq_value(t, value)) {
            return found;
        }
        let tree = Arc::new(self.node(value));
        self.share(hash, &tree);
        tree
    }

    /// The shared tree equal to `node` (built with this interner's keys),
    /// `node` itself if there is none yet.
    fn adopt_tree(&mut self, node: Node) -> Arc<Node> {
        let Some(hash) = self.tree_hash(|h| hash_node(&node, h)) else {
            return Arc::new(node);
        };
        if let Some(found) = self.shared_tree(hash, |t| node_eq(t, &node)) {
            return found;
        }
        let tree = Arc::new(node);
        self.share(hash, &tree);
        tree
    }

    /// The structural hash `hash` writes; `None` without tree sharing.
    fn tree_hash(&self, hash: impl FnOnce(&mut std::hash::DefaultHasher)) -> Option<u64> {
        let trees = self.trees.as_ref()?;
        let mut h = trees.state.build_hasher();
        hash(&mut h);
        Some(h.finish())
    }

    /// The shared tree under `hash` that `equal` accepts.
    fn shared_tree(&self, hash: u64, equal: impl Fn(&Node) -> bool) -> Option<Arc<Node>> {
        let bucket = self.trees.as_ref()?.buckets.get(&hash)?;
        bucket.iter().find(|t| equal(t)).cloned()
    }

    /// Files a new tree under its hash, sweeping first when due.
    fn share(&mut self, hash: u64, tree: &Arc<Node>) {
        if let Some(trees) = &mut self.trees {
            if trees.len >= trees.swept_at.saturating_mul(2).max(MIN_SWEEP) {
                trees.sweep();
            }
            trees
                .buckets
                .entry(hash)
                .or_default()
                .push(Arc::clone(tree));
            trees.len += 1;
        }
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
    let pairs = entries
        .iter()
        .map(|(k, v)| (String::from(&**k), v.text().to_owned()));
    if entries.len() <= FEW_ENTRIES {
        let mut map = BTreeMap::new();
        for (k, v) in pairs {
            map.insert(k, v);
        }
        map
    } else {
        pairs.collect()
    }
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

pub(crate) mod binary;
mod object;
mod ser;
mod view;

pub(crate) use object::split_pointer;
pub use object::{CompactEntry, CompactObject};
pub use view::{
    ArrayRef, ManagedFieldView, ObjectIter, ObjectRef, OwnerRefView, StrMap, StrMapIter, ValueRef,
};

impl crate::vocabulary::selector::Labels for StrMap<'_> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key)
    }
}

#[cfg(test)]
mod tests;
