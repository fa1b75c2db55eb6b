//! [`CompactObject`] and [`CompactEntry`].

use super::ser::*;
use super::view::*;
use super::*;

// ---------------------------------------------------------------------------
// The object
// ---------------------------------------------------------------------------

/// One cached object in compact form; see the [module documentation](crate::cache).
#[derive(Clone, PartialEq)]
pub struct CompactObject {
    pub(super) types: Option<(Key, Key)>,
    pub(super) meta: Meta,
    pub(super) data: Node,
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
            .map(|r| OwnerRefView(Owner::Compact(r)))
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
                return OwnerRefView(Owner::Compact(r)).pointer(rest);
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
pub(super) fn owned<T: Serialize + ?Sized>(value: &T) -> Option<ValueRef<'static>> {
    serde_json::to_value(value).ok().map(ValueRef::Owned)
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
