//! Borrowed views into a [`CompactObject`].

use super::node::Entries as NodeEntries;
use super::object::{key_id, parse_index, to_time};
use super::table::id;
use super::*;

// ---------------------------------------------------------------------------
// Values
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
    /// A value built for the occasion: a timestamp, written out as its
    /// JSON says it, or the whole object.
    Owned(Value),
    /// A value borrowed from a decoded object (a
    /// [`CachedObject`](crate::cache::store::CachedObject) of a cache holding
    /// decoded objects).
    Json(&'a Value),
}

/// A timestamp as `Time` serialises it.
fn time_text(seconds: i64, nanos: i32) -> Value {
    let time = to_time(Node::Time(seconds, nanos));
    time.and_then(|t| serde_json::to_value(t).ok())
        .unwrap_or(Value::Null)
}

impl<'a> ValueRef<'a> {
    pub(super) fn from_node(node: Node<'a>) -> Self {
        match node {
            Node::Null => ValueRef::Null,
            Node::Bool(b) => ValueRef::Bool(b),
            Node::Uint(n) => ValueRef::Number(n.into()),
            Node::Neg(n) => ValueRef::Number(n.into()),
            Node::Float(f) => Number::from_f64(f).map_or(ValueRef::Null, ValueRef::Number),
            Node::Str(s) => ValueRef::String(s),
            Node::Time(seconds, nanos) => ValueRef::Owned(time_text(seconds, nanos)),
            Node::Array(items) => ValueRef::Array(ArrayRef(items)),
            Node::Map(entries) => ValueRef::Object(ObjectRef(entries)),
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&'a str> {
        match self {
            ValueRef::String(s) => Some(s),
            ValueRef::Json(v) => v.as_str(),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            ValueRef::Bool(b) => Some(*b),
            ValueRef::Owned(v) => v.as_bool(),
            ValueRef::Json(v) => v.as_bool(),
            _ => None,
        }
    }

    /// The number as an `i64`, if it is an integer that fits.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            ValueRef::Number(n) => n.as_i64(),
            ValueRef::Owned(v) => v.as_i64(),
            ValueRef::Json(v) => v.as_i64(),
            _ => None,
        }
    }

    /// The number as an `f64`, if this is a number.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            ValueRef::Number(n) => n.as_f64(),
            ValueRef::Owned(v) => v.as_f64(),
            ValueRef::Json(v) => v.as_f64(),
            _ => None,
        }
    }

    /// Whether this is `null`.
    pub fn is_null(&self) -> bool {
        match self {
            ValueRef::Null => true,
            ValueRef::Owned(v) => v.is_null(),
            ValueRef::Json(v) => v.is_null(),
            _ => false,
        }
    }

    /// The object, if this is one borrowed from a compact object (for
    /// [`ValueRef::Json`] and [`ValueRef::Owned`], match on the value).
    pub fn as_object(&self) -> Option<ObjectRef<'a>> {
        match self {
            ValueRef::Object(o) => Some(*o),
            _ => None,
        }
    }

    /// The array, if this is one borrowed from a compact object (for
    /// [`ValueRef::Json`] and [`ValueRef::Owned`], match on the value).
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
        if let ValueRef::Json(v) = self {
            return v.pointer(pointer).map(ValueRef::Json);
        }
        let mut current = self;
        let mut rest = pointer;
        while let Some((token, tail)) = split_pointer(rest) {
            current = match current {
                ValueRef::Object(o) => o.get(&token)?,
                ValueRef::Array(a) => a.get(parse_index(&token)?)?,
                ValueRef::Owned(v) => return v.pointer(rest).cloned().map(ValueRef::Owned),
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
            ValueRef::Array(a) => node_value(Node::Array(a.0)),
            ValueRef::Object(o) => node_value(Node::Map(o.0)),
            ValueRef::Owned(v) => v.clone(),
            ValueRef::Json(v) => (*v).clone(),
        }
    }
}

/// Up to this many entries, a map is built by inserting them one by one;
/// beyond, by `collect`, which copies them into a `Vec`, checks their order
/// and builds the tree from it. The inserts cost more per entry (each scans
/// the keys before it) but need no `Vec`.
const FEW_ENTRIES: usize = 3;

/// A value of the bytes as a `serde_json::Value`.
pub(super) fn node_value(node: Node<'_>) -> Value {
    match node {
        Node::Null => Value::Null,
        Node::Bool(b) => Value::Bool(b),
        Node::Uint(n) => Value::Number(n.into()),
        Node::Neg(n) => Value::Number(n.into()),
        Node::Float(f) => Number::from_f64(f).map_or(Value::Null, Value::Number),
        Node::Str(s) => Value::String(s.to_owned()),
        Node::Time(seconds, nanos) => time_text(seconds, nanos),
        Node::Array(items) => Value::Array(items.items().map(node_value).collect()),
        Node::Map(entries) => {
            let pairs = entries
                .entries()
                .map(|(k, v)| (k.text.to_owned(), node_value(v)));
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

impl Serialize for ValueRef<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ValueRef::Null => s.serialize_unit(),
            ValueRef::Bool(b) => s.serialize_bool(*b),
            ValueRef::Number(n) => n.serialize(s),
            ValueRef::String(v) => s.serialize_str(v),
            ValueRef::Array(a) => json::NodeSer(Node::Array(a.0)).serialize(s),
            ValueRef::Object(o) => json::NodeSer(Node::Map(o.0)).serialize(s),
            ValueRef::Owned(v) => v.serialize(s),
            ValueRef::Json(v) => v.serialize(s),
        }
    }
}

// ---------------------------------------------------------------------------
// Arrays and objects
// ---------------------------------------------------------------------------

/// A borrowed array.
#[derive(Clone, Copy)]
pub struct ArrayRef<'a>(pub(super) Seq<'a>);

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
        self.0.len() == 0
    }

    /// The item at `index` (found by stepping over the items before it).
    pub fn get(&self, index: usize) -> Option<ValueRef<'a>> {
        self.0.items().nth(index).map(ValueRef::from_node)
    }

    /// The items, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = ValueRef<'a>> + use<'a> {
        self.0.items().map(ValueRef::from_node)
    }
}

/// A borrowed object: a map of the compact object.
#[derive(Clone, Copy)]
pub struct ObjectRef<'a>(pub(super) Seq<'a>);

impl fmt::Debug for ObjectRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<'a> ObjectRef<'a> {
    /// The number of entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the object is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<ValueRef<'a>> {
        self.0.get(key).map(ValueRef::from_node)
    }

    /// The entries, sorted by key.
    pub fn iter(&self) -> ObjectIter<'a> {
        ObjectIter(self.0.entries())
    }
}

/// The entries of an [`ObjectRef`], sorted by key.
#[derive(Clone)]
pub struct ObjectIter<'a>(NodeEntries<'a>);

impl<'a> Iterator for ObjectIter<'a> {
    type Item = (&'a str, ValueRef<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(k, v)| (k.text, ValueRef::from_node(v)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl ExactSizeIterator for ObjectIter<'_> {}

// ---------------------------------------------------------------------------
// Labels and annotations
// ---------------------------------------------------------------------------

/// Labels or annotations: a borrowed, sorted map of strings.
#[derive(Clone, Copy)]
pub struct StrMap<'a>(Pairs<'a>);

#[derive(Clone, Copy)]
enum Pairs<'a> {
    Empty,
    Node(Seq<'a>),
    Decoded(&'a BTreeMap<String, String>),
}

impl fmt::Debug for StrMap<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<'a> StrMap<'a> {
    /// No labels or annotations.
    pub const EMPTY: StrMap<'static> = StrMap(Pairs::Empty);

    /// The strings of a map of the bytes (none if there is none).
    pub(super) fn of(map: Option<Seq<'a>>) -> Self {
        StrMap(map.map_or(Pairs::Empty, Pairs::Node))
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&'a str> {
        match self.0 {
            Pairs::Empty => None,
            Pairs::Node(e) => e.get(key).and_then(Node::as_str),
            Pairs::Decoded(e) => e.get(key).map(String::as_str),
        }
    }

    /// Whether `key` is there.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The entries, sorted by key.
    pub fn iter(&self) -> StrMapIter<'a> {
        StrMapIter(match self.0 {
            Pairs::Empty => PairsIter::Empty,
            Pairs::Node(e) => PairsIter::Node(e.entries()),
            Pairs::Decoded(map) => PairsIter::Decoded(map.iter()),
        })
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        match self.0 {
            Pairs::Empty => 0,
            Pairs::Node(e) => e.len(),
            Pairs::Decoded(e) => e.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<'a> From<&'a BTreeMap<String, String>> for StrMap<'a> {
    /// Labels or annotations of a decoded object, as a `StrMap`.
    fn from(map: &'a BTreeMap<String, String>) -> Self {
        StrMap(Pairs::Decoded(map))
    }
}

/// The entries of a [`StrMap`], sorted by key.
#[derive(Clone)]
pub struct StrMapIter<'a>(PairsIter<'a>);

#[derive(Clone)]
enum PairsIter<'a> {
    Empty,
    Node(NodeEntries<'a>),
    Decoded(std::collections::btree_map::Iter<'a, String, String>),
}

impl<'a> Iterator for StrMapIter<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            PairsIter::Empty => None,
            PairsIter::Node(e) => e
                .next()
                .map(|(k, v)| (k.text, v.as_str().unwrap_or_default())),
            PairsIter::Decoded(iter) => iter.next().map(|(k, v)| (k.as_str(), v.as_str())),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            PairsIter::Empty => (0, Some(0)),
            PairsIter::Node(e) => e.size_hint(),
            PairsIter::Decoded(iter) => iter.size_hint(),
        }
    }
}

impl ExactSizeIterator for StrMapIter<'_> {}

impl Serialize for StrMap<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.len()))?;
        for (k, v) in self.iter() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

// ---------------------------------------------------------------------------
// Owner references and managed fields
// ---------------------------------------------------------------------------

/// One of `metadata.ownerReferences`, borrowed from a compact object or from
/// a decoded one.
#[derive(Clone, Copy)]
pub struct OwnerRefView<'a>(Owner<'a>);

#[derive(Clone, Copy)]
enum Owner<'a> {
    Compact(Seq<'a>),
    Decoded(&'a OwnerReference),
}

impl fmt::Debug for OwnerRefView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnerReference")
            .field("api_version", &self.api_version())
            .field("kind", &self.kind())
            .field("name", &self.name())
            .field("uid", &self.uid())
            .field("controller", &self.controller())
            .finish()
    }
}

impl<'a> From<&'a OwnerReference> for OwnerRefView<'a> {
    fn from(reference: &'a OwnerReference) -> Self {
        OwnerRefView(Owner::Decoded(reference))
    }
}

impl<'a> OwnerRefView<'a> {
    pub(super) fn of(map: Seq<'a>) -> Self {
        OwnerRefView(Owner::Compact(map))
    }

    fn text(&self, id: u32, decoded: impl FnOnce(&'a OwnerReference) -> &'a str) -> &'a str {
        match self.0 {
            Owner::Compact(m) => m.get_str(id).unwrap_or_default(),
            Owner::Decoded(r) => decoded(r),
        }
    }

    fn flag(
        &self,
        key: &str,
        decoded: impl FnOnce(&'a OwnerReference) -> Option<bool>,
    ) -> Option<bool> {
        match self.0 {
            Owner::Compact(m) => m.get(key).and_then(Node::as_bool),
            Owner::Decoded(r) => decoded(r),
        }
    }

    /// `apiVersion`.
    pub fn api_version(&self) -> &'a str {
        self.text(id::API_VERSION, |r| &r.api_version)
    }
    /// `kind`.
    pub fn kind(&self) -> &'a str {
        self.text(id::KIND, |r| &r.kind)
    }
    /// `name`.
    pub fn name(&self) -> &'a str {
        self.text(id::NAME, |r| &r.name)
    }
    /// `uid`.
    pub fn uid(&self) -> &'a str {
        self.text(id::UID, |r| &r.uid)
    }
    /// `controller`.
    pub fn controller(&self) -> Option<bool> {
        self.flag("controller", |r| r.controller)
    }
    /// `blockOwnerDeletion`.
    pub fn block_owner_deletion(&self) -> Option<bool> {
        self.flag("blockOwnerDeletion", |r| r.block_owner_deletion)
    }
    /// The owner reference, decoded.
    pub fn to_reference(&self) -> OwnerReference {
        match self.0 {
            Owner::Compact(_) => OwnerReference {
                api_version: self.api_version().to_owned(),
                block_owner_deletion: self.block_owner_deletion(),
                controller: self.controller(),
                kind: self.kind().to_owned(),
                name: self.name().to_owned(),
                uid: self.uid().to_owned(),
            },
            Owner::Decoded(r) => r.clone(),
        }
    }
}

/// A `fieldsV1` tree as a value: for a tree most objects share, a copy of
/// the value decoded once (a clone costs less than a decode).
fn fields_v1(node: Node<'_>) -> Value {
    match node {
        Node::Map(tree) => match tree.tree {
            Some(id) => tree
                .tables()
                .tree_value(id, || node_value(node))
                .cloned()
                .unwrap_or_else(|| node_value(node)),
            None => node_value(node),
        },
        _ => node_value(node),
    }
}

/// One of `metadata.managedFields`, borrowed.
#[derive(Clone, Copy)]
pub struct ManagedFieldView<'a>(pub(super) Seq<'a>);

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
        self.0.get_str(id::MANAGER)
    }
    /// `operation`.
    pub fn operation(&self) -> Option<&'a str> {
        self.0.get_str(id::OPERATION)
    }
    /// `apiVersion`.
    pub fn api_version(&self) -> Option<&'a str> {
        self.0.get_str(id::API_VERSION)
    }
    /// `subresource`.
    pub fn subresource(&self) -> Option<&'a str> {
        self.0.get_str(id::SUBRESOURCE)
    }
    /// `time`.
    pub fn time(&self) -> Option<Time> {
        self.0.get_id(id::TIME).and_then(to_time)
    }
    /// `fieldsV1`, borrowed (possibly shared with other objects).
    pub fn fields_v1(&self) -> Option<ValueRef<'a>> {
        self.0.get_id(id::FIELDS_V1).map(ValueRef::from_node)
    }
    /// The entry, decoded.
    pub fn to_entry(&self) -> ManagedFieldsEntry {
        let mut e = ManagedFieldsEntry::default();
        for (key, value) in self.0.entries() {
            let text = || value.as_str().map(str::to_owned);
            match key_id(key) {
                Some(id::API_VERSION) => e.api_version = text(),
                Some(id::FIELDS_TYPE) => e.fields_type = text(),
                Some(id::FIELDS_V1) => e.fields_v1 = Some(FieldsV1(fields_v1(value))),
                Some(id::MANAGER) => e.manager = text(),
                Some(id::OPERATION) => e.operation = text(),
                Some(id::SUBRESOURCE) => e.subresource = text(),
                Some(id::TIME) => e.time = to_time(value),
                _ => {}
            }
        }
        e
    }
}
