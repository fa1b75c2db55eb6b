//! Borrowed views into a [`CompactObject`].

use super::object::*;
use super::ser::*;
use super::*;

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
    /// A value borrowed from a decoded object (a
    /// [`CachedObject`](crate::cache::store::CachedObject) of a cache holding
    /// decoded objects).
    Json(&'a Value),
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
            ValueRef::Json(v) => (*v).clone(),
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
            ValueRef::Json(v) => v.serialize(s),
        }
    }
}

/// A borrowed array.
#[derive(Clone, Copy)]
pub struct ArrayRef<'a>(pub(super) &'a [Node]);

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
pub struct ObjectRef<'a>(pub(super) Entries<'a>);

#[derive(Clone, Copy)]
pub(super) enum Entries<'a> {
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
pub struct StrMap<'a>(pub(super) Pairs<'a>);

#[derive(Clone, Copy)]
pub(super) enum Pairs<'a> {
    Interned(&'a [(Key, Key)]),
    Owned(&'a [(Key, Str)]),
    Decoded(&'a BTreeMap<String, String>),
}

impl<'a> Pairs<'a> {
    fn len(self) -> usize {
        match self {
            Pairs::Interned(e) => e.len(),
            Pairs::Owned(e) => e.len(),
            Pairs::Decoded(e) => e.len(),
        }
    }

    fn get(self, key: &str) -> Option<&'a str> {
        match self {
            Pairs::Interned(e) => find(e, key).map(|v| &**v),
            Pairs::Owned(e) => find(e, key).map(Str::as_str),
            Pairs::Decoded(e) => e.get(key).map(String::as_str),
        }
    }

    fn at(self, i: usize) -> Option<(&'a str, &'a str)> {
        match self {
            Pairs::Interned(e) => e.get(i).map(|(k, v)| (&**k, &**v)),
            Pairs::Owned(e) => e.get(i).map(|(k, v)| (&**k, v.as_str())),
            Pairs::Decoded(e) => e.iter().nth(i).map(|(k, v)| (k.as_str(), v.as_str())),
        }
    }
}

impl fmt::Debug for StrMap<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<'a> StrMap<'a> {
    /// No labels or annotations.
    pub const EMPTY: StrMap<'static> = StrMap(Pairs::Interned(&[]));

    /// The value of `key` (a binary search).
    pub fn get(&self, key: &str) -> Option<&'a str> {
        self.0.get(key)
    }

    /// Whether `key` is there.
    pub fn contains_key(&self, key: &str) -> bool {
        self.0.get(key).is_some()
    }

    /// The entries, sorted by key.
    pub fn iter(&self) -> StrMapIter<'a> {
        match self.0 {
            Pairs::Decoded(map) => StrMapIter(PairsIter::Decoded(map.iter())),
            pairs => StrMapIter(PairsIter::Slice { pairs, next: 0 }),
        }
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
    Slice { pairs: Pairs<'a>, next: usize },
    Decoded(std::collections::btree_map::Iter<'a, String, String>),
}

impl<'a> Iterator for StrMapIter<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            PairsIter::Slice { pairs, next } => {
                let item = pairs.at(*next);
                *next += usize::from(item.is_some());
                item
            }
            PairsIter::Decoded(iter) => iter.next().map(|(k, v)| (k.as_str(), v.as_str())),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let len = match &self.0 {
            PairsIter::Slice { pairs, next } => pairs.len().saturating_sub(*next),
            PairsIter::Decoded(iter) => iter.len(),
        };
        (len, Some(len))
    }
}

impl ExactSizeIterator for StrMapIter<'_> {}

impl Serialize for StrMap<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.iter() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// One of `metadata.ownerReferences`, borrowed from a compact object or from
/// a decoded one.
#[derive(Clone, Copy)]
pub struct OwnerRefView<'a>(pub(super) Owner<'a>);

#[derive(Clone, Copy)]
pub(super) enum Owner<'a> {
    Compact(&'a OwnerRef),
    Decoded(&'a OwnerReference),
}

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

impl fmt::Debug for OwnerRefView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Owner::Compact(r) => fmt::Debug::fmt(r, f),
            Owner::Decoded(r) => fmt::Debug::fmt(r, f),
        }
    }
}

impl<'a> From<&'a OwnerReference> for OwnerRefView<'a> {
    fn from(reference: &'a OwnerReference) -> Self {
        OwnerRefView(Owner::Decoded(reference))
    }
}

impl<'a> OwnerRefView<'a> {
    /// `apiVersion`.
    pub fn api_version(&self) -> &'a str {
        match self.0 {
            Owner::Compact(r) => &r.api_version,
            Owner::Decoded(r) => &r.api_version,
        }
    }
    /// `kind`.
    pub fn kind(&self) -> &'a str {
        match self.0 {
            Owner::Compact(r) => &r.kind,
            Owner::Decoded(r) => &r.kind,
        }
    }
    /// `name`.
    pub fn name(&self) -> &'a str {
        match self.0 {
            Owner::Compact(r) => &r.name,
            Owner::Decoded(r) => &r.name,
        }
    }
    /// `uid`.
    pub fn uid(&self) -> &'a str {
        match self.0 {
            Owner::Compact(r) => &r.uid,
            Owner::Decoded(r) => &r.uid,
        }
    }
    /// `controller`.
    pub fn controller(&self) -> Option<bool> {
        match self.0 {
            Owner::Compact(r) => r.controller,
            Owner::Decoded(r) => r.controller,
        }
    }
    /// `blockOwnerDeletion`.
    pub fn block_owner_deletion(&self) -> Option<bool> {
        match self.0 {
            Owner::Compact(r) => r.block_owner_deletion,
            Owner::Decoded(r) => r.block_owner_deletion,
        }
    }
    /// The owner reference, decoded.
    pub fn to_reference(&self) -> OwnerReference {
        match self.0 {
            Owner::Compact(r) => r.to_reference(),
            Owner::Decoded(r) => r.clone(),
        }
    }

    pub(super) fn pointer(self, pointer: &str) -> Option<ValueRef<'a>> {
        let Some((field, rest)) = split_pointer(pointer) else {
            return match self.0 {
                Owner::Compact(r) => owned(&OwnerRefSer(r))?.pointer(pointer),
                Owner::Decoded(r) => owned(r)?.pointer(pointer),
            };
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
pub struct ManagedFieldView<'a>(pub(super) &'a ManagedField);

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

    pub(super) fn pointer(self, pointer: &str) -> Option<ValueRef<'a>> {
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
