//! [`CompactObject`] and [`CompactEntry`].

use triomphe::ThinArc;

use super::build::Builder;
use super::node::{Cursor, Key, RawKey};
use super::parse;
use super::table::id;
use super::view::{OwnerRefView, node_value};
use super::*;

/// What an object's allocation holds besides its bytes.
struct Header {
    tables: Arc<Tables>,
    /// The last `DynamicObject` handed out for this object (see
    /// [`CompactEntry`]).
    recent: parking_lot::Mutex<Weak<DynamicObject>>,
}

/// One cached object in compact form, in one allocation; see the [layer
/// documentation](crate::cache) ("Compact storage"). Cheap to clone (a
/// reference count).
///
/// The allocation also holds the digests of the fields of the object's
/// data that change predicates of its store watch (see
/// [`ChangePredicate`](crate::cache::ChangePredicate)): a count, then each
/// field's key number and a 128-bit digest of the bytes its value is
/// written in (20 bytes a field), before the object's bytes.
#[derive(Clone)]
pub struct CompactObject(ThinArc<Header, u8>);

/// The bytes of one digest before an object's bytes: a key number (`u32`)
/// and the digest (`u128`), little-endian.
const DIGEST_LEN: usize = 4 + 16;

/// The most fields of one object that are digested.
pub(crate) const MAX_DIGESTS: usize = 8;

impl fmt::Debug for CompactObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = Vec::new();
        match self.write_json(&mut out) {
            Ok(()) => f.write_str(&String::from_utf8_lossy(&out)),
            Err(_) => f
                .debug_struct("CompactObject")
                .field("name", &self.name())
                .field("bytes", &self.bytes().len())
                .finish_non_exhaustive(),
        }
    }
}

impl PartialEq for CompactObject {
    /// Equal when they hold equal objects: the same bytes over the same
    /// tables, else the same decoded object.
    fn eq(&self, other: &Self) -> bool {
        if Arc::ptr_eq(self.tables(), other.tables()) && self.bytes() == other.bytes() {
            return true;
        }
        self.to_object() == other.to_object()
    }
}

impl Header {
    fn new(tables: Arc<Tables>) -> Self {
        Header {
            tables,
            recent: parking_lot::Mutex::new(Weak::new()),
        }
    }
}

/// Writes into `bytes` — a count, room for `fields.len()` digests, then an
/// object's bytes — the digests of the data's `fields` the object has,
/// moved up against the object's bytes, and their count before them.
/// Returns where the count now is: the object's slice starts there.
fn digest_fields(tables: &Tables, bytes: &mut [u8], fields: &[Box<str>]) -> usize {
    let prefix = 1 + fields.len() * DIGEST_LEN;
    let mut found = Vec::new();
    if !fields.is_empty() {
        let object = CompactObject::data_of(Doc {
            bytes: &bytes[prefix..],
            tables,
        });
        if let Some(data) = object.and_then(Node::as_map) {
            for field in fields {
                if let Some((RawKey::Id(id), value)) = data.entry_bytes(field) {
                    found.push((id, tables.digest(value)));
                }
            }
        }
    }
    let start = prefix - 1 - found.len() * DIGEST_LEN;
    bytes[start] = found.len() as u8;
    for (i, (id, digest)) in found.into_iter().enumerate() {
        let at = start + 1 + i * DIGEST_LEN;
        bytes[at..at + 4].copy_from_slice(&id.to_le_bytes());
        bytes[at + 4..at + DIGEST_LEN].copy_from_slice(&digest.to_le_bytes());
    }
    start
}

/// The parts of an object's bytes.
pub(super) struct Parts<'a> {
    pub(super) types: Option<(&'a str, &'a str)>,
    pub(super) meta: Option<Seq<'a>>,
    pub(super) data: Node<'a>,
}

impl CompactObject {
    /// The compact form of `object`, sharing keys and trees through `interner`.
    pub fn from_object(object: &DynamicObject, interner: &mut Interner) -> CompactObject {
        Self::digesting(object, interner, &[])
    }

    /// [`from_object`](Self::from_object), keeping a digest of each of the
    /// data's `fields` the object has (the first [`MAX_DIGESTS`]), so that
    /// [`same_field`](Self::same_field) compares two states of it without
    /// reading their bytes.
    pub(crate) fn digesting(
        object: &DynamicObject,
        interner: &mut Interner,
        fields: &[Box<str>],
    ) -> CompactObject {
        let built = Self::assemble(interner, fields, |interner, scratch| {
            let tree = std::mem::take(&mut scratch.tree);
            let mut builder = Builder::new(interner, tree);
            builder.object(object, &mut scratch.bytes);
            scratch.tree = builder.into_scratch();
            true
        });
        built.unwrap_or_else(|| unreachable!("building from a decoded object always succeeds"))
    }

    /// The compact form of the object whose JSON text is `json`, built
    /// without decoding it (no `DynamicObject` in between): the same
    /// object, in the same bytes, as [`from_object`](Self::from_object) of
    /// what the [wire](crate::wire) decodes from `json`.
    ///
    /// `None` for JSON this does not read directly — a key given twice,
    /// half of `apiVersion` and `kind`, a metadata field of an unexpected
    /// type, nesting deeper than 128 levels — and for text that is no JSON
    /// object at all: decode those, and build from the decoded object if it
    /// decodes.
    ///
    /// ```
    /// use kube_dynamic_informer::cache::{CompactObject, Interner};
    ///
    /// let mut interner = Interner::new();
    /// let json = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns"},"data":{"k":"v"}}"#;
    /// let object = CompactObject::from_json(json, &mut interner).expect("read directly");
    /// assert_eq!(object.name(), Some("a"));
    /// assert_eq!(object.pointer("/data/k").and_then(|v| v.as_str()), Some("v"));
    /// let twice = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","name":"b"}}"#;
    /// assert!(CompactObject::from_json(twice, &mut interner).is_none());
    /// ```
    #[must_use]
    pub fn from_json(json: &str, interner: &mut Interner) -> Option<CompactObject> {
        Self::from_json_digesting(json, None, interner, &[])
    }

    /// [`from_json`](Self::from_json), digesting `fields` as
    /// [`digesting`](Self::digesting) does; an object without apiVersion
    /// and kind (a list item) gets `types` when given.
    pub(crate) fn from_json_digesting(
        json: &str,
        types: Option<(&str, &str)>,
        interner: &mut Interner,
        fields: &[Box<str>],
    ) -> Option<CompactObject> {
        Self::assemble(interner, fields, |interner, scratch| {
            parse::object(json, types, interner, scratch).is_ok()
        })
    }

    /// An object whose bytes `write` appends to the scratch buffer after
    /// room for the digests of `fields`; `None` when `write` fails.
    fn assemble(
        interner: &mut Interner,
        fields: &[Box<str>],
        write: impl FnOnce(&mut Interner, &mut parse::Scratch) -> bool,
    ) -> Option<CompactObject> {
        let mut scratch = std::mem::take(&mut interner.scratch);
        scratch.bytes.clear();
        let fields = &fields[..fields.len().min(MAX_DIGESTS)];
        let prefix = 1 + fields.len() * DIGEST_LEN;
        scratch.bytes.resize(prefix, 0);
        let built = write(interner, &mut scratch).then(|| {
            let tables = Arc::clone(interner.tables());
            let digests = digest_fields(&tables, &mut scratch.bytes, fields);
            let header = Header::new(tables);
            CompactObject(ThinArc::from_header_and_slice(
                header,
                &scratch.bytes[digests..],
            ))
        });
        interner.scratch = scratch;
        built
    }

    /// An object of these bytes, read with `tables`.
    pub(super) fn from_bytes(tables: Arc<Tables>, bytes: &[u8]) -> CompactObject {
        thread_local! {
            static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        SCRATCH.with_borrow_mut(|scratch| {
            scratch.clear();
            scratch.push(0);
            scratch.extend_from_slice(bytes);
            CompactObject(ThinArc::from_header_and_slice(Header::new(tables), scratch))
        })
    }

    /// The object's bytes, after its digests.
    pub(super) fn bytes(&self) -> &[u8] {
        let slice = &self.0.slice;
        let digests = usize::from(slice.first().copied().unwrap_or(0));
        slice.get(1 + digests * DIGEST_LEN..).unwrap_or_default()
    }

    /// The digest of data field `field`, if one was kept.
    fn digest(&self, field: &str) -> Option<u128> {
        let slice = &self.0.slice;
        let count = usize::from(*slice.first()?);
        let tables = self.tables();
        slice
            .get(1..1 + count * DIGEST_LEN)?
            .chunks_exact(DIGEST_LEN)
            .find(|d| {
                let id = u32::from_le_bytes([d[0], d[1], d[2], d[3]]);
                tables.key(id as usize) == Some(field)
            })
            .and_then(|d| d[4..].try_into().ok())
            .map(u128::from_le_bytes)
    }

    /// Whether data field `field` holds the same value in `self` and
    /// `other` (two states of one object), told from the digests kept when
    /// each was built ([`Storage::Compact`](crate::cache::store::Storage)
    /// keeps them for the fields a change predicate watches): `Some(true)`
    /// when both digests are there and equal, `Some(false)` when they
    /// differ (the values may still be equal, written differently), `None`
    /// when either has none.
    pub(crate) fn same_field(&self, other: &CompactObject, field: &str) -> Option<bool> {
        if !Arc::ptr_eq(self.tables(), other.tables()) {
            return None;
        }
        Some(self.digest(field)? == other.digest(field)?)
    }

    /// The bytes of the one allocation's slice: digests and object.
    fn slice_len(&self) -> usize {
        self.0.slice.len()
    }

    pub(super) fn tables(&self) -> &Arc<Tables> {
        &self.0.header.header.tables
    }

    fn doc(&self) -> Doc<'_> {
        Doc {
            bytes: self.bytes(),
            tables: self.tables(),
        }
    }

    /// The type fields, metadata and data, read from the bytes. Bytes this
    /// module did not write read as an empty object.
    pub(super) fn parts(&self) -> Parts<'_> {
        let mut at = Cursor::new(self.doc());
        let types = match at.byte() {
            Some(1) => at.key().zip(at.key()).map(|(a, k)| (a.text, k.text)),
            _ => None,
        };
        let meta = at.node().and_then(Node::as_map);
        let data = at.node().unwrap_or(Node::Null);
        Parts { types, meta, data }
    }

    /// The metadata, without reading the type fields.
    fn meta(&self) -> Option<Seq<'_>> {
        let mut at = Cursor::new(self.doc());
        if at.byte()? == 1 {
            at.raw_key()?;
            at.raw_key()?;
        }
        at.node().and_then(Node::as_map)
    }

    /// The data, without reading the type fields or the metadata.
    fn data_node(&self) -> Node<'_> {
        Self::data_of(self.doc()).unwrap_or(Node::Null)
    }

    /// The data of the object `doc` holds, stepping over its type fields
    /// and metadata.
    fn data_of(doc: Doc<'_>) -> Option<Node<'_>> {
        let mut at = Cursor::new(doc);
        if at.byte()? == 1 {
            at.raw_key()?;
            at.raw_key()?;
        }
        at.skip()?;
        at.node()
    }

    fn meta_field(&self, id: u32) -> Option<Node<'_>> {
        self.meta()?.get_id(id)
    }

    fn meta_str(&self, id: u32) -> Option<&str> {
        self.meta_field(id).and_then(Node::as_str)
    }

    /// The object, decoded: equal (`==`) to the one this was built from.
    pub fn to_object(&self) -> DynamicObject {
        let parts = self.parts();
        DynamicObject {
            types: parts.types.map(|(api_version, kind)| TypeMeta {
                api_version: api_version.to_owned(),
                kind: kind.to_owned(),
            }),
            metadata: parts.meta.map(to_object_meta).unwrap_or_default(),
            data: node_value(parts.data),
        }
    }

    /// Writes the object's JSON: the bytes `serde_json::to_vec` writes for the
    /// `DynamicObject` it was built from. Fails, leaving `out` as it was, where
    /// that fails too: when the object's `data` is neither an object nor null.
    pub fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        let len = out.len();
        let written = json::write_object(&self.parts(), out);
        if written.is_err() {
            out.truncate(len);
        }
        written
    }

    /// `apiVersion`, if the object has its type fields.
    pub fn api_version(&self) -> Option<&str> {
        self.parts().types.map(|(a, _)| a)
    }

    /// `kind`, if the object has its type fields.
    pub fn kind(&self) -> Option<&str> {
        self.parts().types.map(|(_, k)| k)
    }

    /// `metadata.name`.
    pub fn name(&self) -> Option<&str> {
        self.meta_str(id::NAME)
    }

    /// `metadata.namespace`.
    pub fn namespace(&self) -> Option<&str> {
        self.meta_str(id::NAMESPACE)
    }

    /// `metadata.uid`.
    pub fn uid(&self) -> Option<&str> {
        self.meta_str(id::UID)
    }

    /// `metadata.resourceVersion`.
    pub fn resource_version(&self) -> Option<&str> {
        self.meta_str(id::RESOURCE_VERSION)
    }

    /// `metadata.generation`.
    pub fn generation(&self) -> Option<i64> {
        self.meta_field(id::GENERATION).and_then(Node::as_i64)
    }

    /// `metadata.creationTimestamp`.
    pub fn creation_timestamp(&self) -> Option<Time> {
        self.meta_field(id::CREATION_TIMESTAMP).and_then(to_time)
    }

    /// `metadata.deletionTimestamp`.
    pub fn deletion_timestamp(&self) -> Option<Time> {
        self.meta_field(id::DELETION_TIMESTAMP).and_then(to_time)
    }

    /// `metadata.generateName`.
    pub fn generate_name(&self) -> Option<&str> {
        self.meta_str(id::GENERATE_NAME)
    }

    /// `metadata.finalizers` (none when absent).
    pub fn finalizers(&self) -> impl ExactSizeIterator<Item = &str> {
        let items = self.meta_field(id::FINALIZERS).and_then(Node::as_array);
        let items = items.map(Seq::items).into_iter().flatten();
        items
            .filter_map(Node::as_str)
            .collect::<Vec<_>>()
            .into_iter()
    }

    /// `metadata.labels` (empty when absent).
    pub fn labels(&self) -> StrMap<'_> {
        StrMap::of(self.meta_field(id::LABELS).and_then(Node::as_map))
    }

    /// `metadata.annotations` (empty when absent).
    pub fn annotations(&self) -> StrMap<'_> {
        StrMap::of(self.meta_field(id::ANNOTATIONS).and_then(Node::as_map))
    }

    /// `metadata.ownerReferences`.
    pub fn owner_references(&self) -> impl ExactSizeIterator<Item = OwnerRefView<'_>> {
        let refs = self.meta_field(id::OWNER_REFERENCES);
        refs.and_then(|r| maps(r, OwnerRefView::of))
            .unwrap_or_default()
            .into_iter()
    }

    /// `metadata.managedFields`.
    pub fn managed_fields(&self) -> impl ExactSizeIterator<Item = ManagedFieldView<'_>> {
        let entries = self.meta_field(id::MANAGED_FIELDS);
        entries
            .and_then(|e| maps(e, ManagedFieldView))
            .unwrap_or_default()
            .into_iter()
    }

    /// Everything but the type fields and metadata: `spec`, `status`, `data`...
    pub fn data(&self) -> ValueRef<'_> {
        ValueRef::from_node(self.data_node())
    }

    /// The value at a JSON pointer (RFC 6901) into the object as
    /// `serde_json::to_value` would see it: `pointer("/spec/nodeName")`,
    /// `pointer("/metadata/labels/app")`. Values come back borrowed, but for
    /// timestamps, which are written out ([`ValueRef::Owned`]).
    pub fn pointer(&self, pointer: &str) -> Option<ValueRef<'_>> {
        if pointer.is_empty() {
            return serde_json::to_value(self).ok().map(ValueRef::Owned);
        }
        let (first, rest) = split_pointer(pointer)?;
        // The data's entries come after the type fields and metadata in the
        // serialised object, so a key of the data would win.
        if let Node::Map(data) = self.data_node()
            && let Some(v) = data.get(&first)
        {
            return ValueRef::from_node(v).pointer(rest);
        }
        let parts = self.parts();
        let types = parts.types;
        match &*first {
            "apiVersion" => ValueRef::String(types?.0).pointer(rest),
            "kind" => ValueRef::String(types?.1).pointer(rest),
            "metadata" if matches!(parts.data, Node::Map(_) | Node::Null) => {
                let meta = parts
                    .meta
                    .map_or(ValueRef::Owned(Value::Object(Default::default())), |m| {
                        ValueRef::from_node(Node::Map(m))
                    });
                meta.pointer(rest)
            }
            _ => None,
        }
    }
}

/// A timestamp as `Time`; `None` for one out of range.
pub(super) fn to_time(node: Node<'_>) -> Option<Time> {
    match node {
        Node::Time(seconds, nanos) => k8s_openapi::jiff::Timestamp::new(seconds, nanos)
            .ok()
            .map(Time),
        _ => None,
    }
}

fn string_map(node: Node<'_>) -> Option<BTreeMap<String, String>> {
    let map = node.as_map()?;
    Some(
        map.entries()
            .filter_map(|(k, v)| Some((k.text.to_owned(), v.as_str()?.to_owned())))
            .collect(),
    )
}

fn strings(node: Node<'_>) -> Option<Vec<String>> {
    let items = node.as_array()?.items();
    Some(items.filter_map(|s| Some(s.as_str()?.to_owned())).collect())
}

/// Each map of an array, as `f` makes it.
fn maps<'a, T>(node: Node<'a>, f: impl Fn(Seq<'a>) -> T) -> Option<Vec<T>> {
    let items = node.as_array()?.items();
    Some(items.filter_map(Node::as_map).map(f).collect())
}

fn owned_str(node: Node<'_>) -> Option<String> {
    node.as_str().map(str::to_owned)
}

/// The metadata's map, decoded.
fn to_object_meta(meta: Seq<'_>) -> ObjectMeta {
    let mut m = ObjectMeta::default();
    for (key, value) in meta.entries() {
        let Some(id) = key_id(key) else { continue };
        match id {
            id::ANNOTATIONS => m.annotations = string_map(value),
            id::CREATION_TIMESTAMP => m.creation_timestamp = to_time(value),
            id::DELETION_GRACE_PERIOD_SECONDS => m.deletion_grace_period_seconds = value.as_i64(),
            id::DELETION_TIMESTAMP => m.deletion_timestamp = to_time(value),
            id::FINALIZERS => m.finalizers = strings(value),
            id::GENERATE_NAME => m.generate_name = owned_str(value),
            id::GENERATION => m.generation = value.as_i64(),
            id::LABELS => m.labels = string_map(value),
            id::MANAGED_FIELDS => {
                m.managed_fields = maps(value, |e| ManagedFieldView(e).to_entry());
            }
            id::NAME => m.name = owned_str(value),
            id::NAMESPACE => m.namespace = owned_str(value),
            id::OWNER_REFERENCES => {
                m.owner_references = maps(value, |r| OwnerRefView::of(r).to_reference());
            }
            id::RESOURCE_VERSION => m.resource_version = owned_str(value),
            id::SELF_LINK => m.self_link = owned_str(value),
            id::UID => m.uid = owned_str(value),
            _ => {}
        }
    }
    m
}

/// The well-known number of a key, by number or (written in place) by text.
pub(super) fn key_id(key: Key<'_>) -> Option<u32> {
    key.id.or_else(|| {
        table::WELL_KNOWN
            .iter()
            .position(|k| *k == key.text)
            .and_then(|i| u32::try_from(i).ok())
    })
}

/// Splits `/first/rest...` into the unescaped first token and `/rest...`;
/// `None` for the empty pointer, and for one that does not start with `/`.
pub(crate) fn split_pointer(pointer: &str) -> Option<(Cow<'_, str>, &str)> {
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
pub(super) fn parse_index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return None;
    }
    token.parse().ok()
}

// ---------------------------------------------------------------------------
// Reads that need the whole object
// ---------------------------------------------------------------------------

/// A [`CompactObject`] with the `DynamicObject` it was built from (the one
/// decoded from the wire): a read that needs the whole object gets that same
/// `Arc` back while anyone still holds it, and decodes one of its own
/// otherwise.
///
/// A decode for a reader is not remembered: it is freed whole when the
/// reader drops it, on the reader's thread, in the order the reader drops
/// things (a reader that decoded every object and dropped them all gets its
/// memory back from the allocator at once). The remembered `Weak` of the
/// decoded object keeps that `Arc`'s allocation (the `DynamicObject` struct
/// itself, a few hundred bytes, not its contents) until the entry is
/// replaced or [`CompactEntry::forget_dropped`] clears it. It lives in the
/// object's own allocation: an entry is that one allocation, cheap to
/// clone.
#[derive(Clone)]
pub struct CompactEntry(CompactObject);

impl fmt::Debug for CompactEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompactEntry")
            .field("object", &self.0)
            .finish_non_exhaustive()
    }
}

impl CompactEntry {
    /// An entry for `object`, remembering `decoded` (the `DynamicObject` it
    /// was built from, as decoded from the wire) if given.
    pub fn new(object: CompactObject, decoded: Option<&Arc<DynamicObject>>) -> Self {
        if let Some(decoded) = decoded {
            *object.0.header.header.recent.lock() = Arc::downgrade(decoded);
        }
        CompactEntry(object)
    }

    /// The compact object, for the reads that need no `DynamicObject`.
    pub fn compact(&self) -> &CompactObject {
        &self.0
    }

    /// The whole object: the event's `Arc` if someone still holds it, else
    /// a new one, decoded (and not remembered).
    pub fn get(&self) -> Arc<DynamicObject> {
        let held = self.0.0.header.header.recent.lock().upgrade();
        held.unwrap_or_else(|| Arc::new(self.0.to_object()))
    }

    /// Forgets the last `DynamicObject` handed out if nobody holds it any
    /// more, freeing the allocation its `Weak` kept. Returns whether it did.
    pub fn forget_dropped(&self) -> bool {
        let mut recent = self.0.0.header.header.recent.lock();
        // `Weak::new()` points nowhere; only a `Weak` of a dropped `Arc` keeps
        // an allocation.
        if recent.strong_count() == 0 && !recent.ptr_eq(&Weak::new()) {
            *recent = Weak::new();
            true
        } else {
            false
        }
    }

    /// Whether `self` and `other` are the very same entry.
    pub(crate) fn ptr_eq(&self, other: &CompactEntry) -> bool {
        self.0.0.ptr() == other.0.0.ptr()
    }

    /// The bytes of the entry's one allocation: its reference count, header,
    /// length and bytes.
    pub(crate) fn allocated(&self) -> usize {
        2 * std::mem::size_of::<usize>() + std::mem::size_of::<Header>() + self.0.slice_len()
    }

    /// How many handles share this entry.
    pub(crate) fn handles(&self) -> usize {
        ThinArc::strong_count(&self.0.0)
    }
}
