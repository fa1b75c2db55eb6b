//! [`CachedObject`]: one object as the store holds it, readable in place.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use kube_core::{DynamicObject, ObjectMeta};
use serde::Serialize;

use super::Storage;
use crate::cache::compact::{
    CompactEntry, CompactObject, OwnerRefView, StrMap, ValueRef, split_pointer,
};

/// One cached object as the store holds it: the decoded `DynamicObject`
/// ([`Storage::Objects`]) or its compact form ([`Storage::Compact`]).
///
/// Cheap to clone (one `Arc`). Its field reads — name, namespace, labels,
/// annotations, owner references, resourceVersion, a JSON-pointer lookup,
/// the JSON text — never decode the object, so selector matching, index
/// filtering and printing cost the same in both storage modes;
/// [`CachedObject::object`] gives the whole `DynamicObject` (a pointer copy
/// with [`Storage::Objects`]; with [`Storage::Compact`], the `Arc` decoded
/// from the wire while anyone still holds it, else a decode of its own,
/// freed whole when dropped).
///
/// ```
/// use std::sync::Arc;
/// use kube_dynamic_informer::cache::Storage;
/// use kube_dynamic_informer::cache::StoreWriter;
///
/// let mut writer = StoreWriter::with_storage(Storage::Compact);
/// writer.upsert(Arc::new(serde_json::from_value(serde_json::json!({
///     "apiVersion": "v1", "kind": "ConfigMap",
///     "metadata": { "name": "app", "namespace": "shop", "labels": { "tier": "web" } },
///     "data": { "mode": "fast" }
/// }))?));
///
/// let cached = writer.reader().get("shop/app").unwrap();
/// assert_eq!(cached.labels().get("tier"), Some("web"));
/// assert_eq!(cached.pointer("/data/mode").and_then(|v| v.as_str()), Some("fast"));
/// let mut json = Vec::new();
/// cached.write_json(&mut json)?;
/// assert!(json.starts_with(br#"{"apiVersion":"v1","kind":"ConfigMap""#));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct CachedObject(pub(super) Held);

#[derive(Clone)]
pub(super) enum Held {
    Object(Arc<DynamicObject>),
    Compact(CompactEntry),
}

impl CachedObject {
    /// Whether this handle is the only one left (nobody else, the store
    /// included, holds the object).
    pub(crate) fn is_unique(&self) -> bool {
        match &self.0 {
            Held::Object(object) => Arc::strong_count(object) == 1,
            Held::Compact(entry) => entry.handles() == 1,
        }
    }

    /// The object, to read once (indexing, comparing): a decode with
    /// [`Storage::Compact`] that leaves no `Weak` behind.
    pub(crate) fn with_object<T>(&self, f: impl FnOnce(&DynamicObject) -> T) -> T {
        match &self.0 {
            Held::Object(object) => f(object),
            Held::Compact(entry) => f(&entry.compact().to_object()),
        }
    }

    /// Whether `self` and `other` hold the very same object (not merely an
    /// equal one).
    pub(crate) fn same(&self, other: &CachedObject) -> bool {
        match (&self.0, &other.0) {
            (Held::Object(a), Held::Object(b)) => Arc::ptr_eq(a, b),
            (Held::Compact(a), Held::Compact(b)) => a.ptr_eq(b),
            _ => false,
        }
    }

    /// Frees what a dropped decoded object still keeps (see
    /// [`CompactEntry::forget_dropped`]).
    pub(super) fn forget_dropped(&self) -> bool {
        match &self.0 {
            Held::Compact(entry) => entry.forget_dropped(),
            Held::Object(_) => false,
        }
    }
}

/// A handle over an object already decoded, as [`Storage::Objects`] holds
/// it: any `DynamicObject` read through the same methods as a cached one.
///
/// ```
/// use std::sync::Arc;
/// use kube_dynamic_informer::prelude::{CachedObject, DynamicObject};
///
/// let object: DynamicObject = serde_json::from_value(serde_json::json!({
///     "apiVersion": "v1", "kind": "ConfigMap",
///     "metadata": {"name": "settings", "namespace": "shop", "labels": {"app": "web"}},
/// }))?;
/// let handle = CachedObject::from(Arc::new(object));
/// assert_eq!(handle.key().as_deref(), Some("shop/settings"));
/// assert_eq!(handle.labels().get("app"), Some("web"));
/// # Ok::<(), serde_json::Error>(())
/// ```
impl From<Arc<DynamicObject>> for CachedObject {
    fn from(object: Arc<DynamicObject>) -> Self {
        CachedObject(Held::Object(object))
    }
}

impl CachedObject {
    /// The whole object (see the type's docs for what it costs).
    pub fn object(&self) -> Arc<DynamicObject> {
        match &self.0 {
            Held::Object(object) => object.clone(),
            Held::Compact(entry) => entry.get(),
        }
    }

    /// How the store holds this object.
    pub fn storage(&self) -> Storage {
        match self.0 {
            Held::Object(_) => Storage::Objects,
            Held::Compact(_) => Storage::Compact,
        }
    }

    /// The compact form, with [`Storage::Compact`].
    pub fn compact(&self) -> Option<&CompactObject> {
        match &self.0 {
            Held::Object(_) => None,
            Held::Compact(entry) => Some(entry.compact()),
        }
    }

    /// `apiVersion`, if the object has its type fields.
    pub fn api_version(&self) -> Option<&str> {
        match &self.0 {
            Held::Object(o) => o.types.as_ref().map(|t| t.api_version.as_str()),
            Held::Compact(e) => e.compact().api_version(),
        }
    }

    /// `kind`, if the object has its type fields.
    pub fn kind(&self) -> Option<&str> {
        match &self.0 {
            Held::Object(o) => o.types.as_ref().map(|t| t.kind.as_str()),
            Held::Compact(e) => e.compact().kind(),
        }
    }

    /// `metadata.name`.
    pub fn name(&self) -> Option<&str> {
        match &self.0 {
            Held::Object(o) => o.metadata.name.as_deref(),
            Held::Compact(e) => e.compact().name(),
        }
    }

    /// `metadata.namespace`.
    pub fn namespace(&self) -> Option<&str> {
        match &self.0 {
            Held::Object(o) => o.metadata.namespace.as_deref(),
            Held::Compact(e) => e.compact().namespace(),
        }
    }

    /// The cache key: `namespace/name`, or `name` for a cluster-scoped
    /// object.
    pub fn key(&self) -> Option<String> {
        let name = self.name().filter(|name| !name.is_empty())?;
        Some(crate::vocabulary::object_key::key_from_parts(
            self.namespace(),
            name,
        ))
    }

    /// `metadata.uid`.
    pub fn uid(&self) -> Option<&str> {
        match &self.0 {
            Held::Object(o) => o.metadata.uid.as_deref(),
            Held::Compact(e) => e.compact().uid(),
        }
    }

    /// `metadata.resourceVersion`.
    pub fn resource_version(&self) -> Option<&str> {
        match &self.0 {
            Held::Object(o) => o.metadata.resource_version.as_deref(),
            Held::Compact(e) => e.compact().resource_version(),
        }
    }

    /// `metadata.labels` (empty when absent); a selector matches them in
    /// place ([`Selector::matches`](crate::vocabulary::selector::Selector::matches)).
    pub fn labels(&self) -> StrMap<'_> {
        match &self.0 {
            Held::Object(o) => o.metadata.labels.as_ref().map_or(EMPTY, StrMap::from),
            Held::Compact(e) => e.compact().labels(),
        }
    }

    /// `metadata.annotations` (empty when absent).
    pub fn annotations(&self) -> StrMap<'_> {
        match &self.0 {
            Held::Object(o) => o.metadata.annotations.as_ref().map_or(EMPTY, StrMap::from),
            Held::Compact(e) => e.compact().annotations(),
        }
    }

    /// `metadata.ownerReferences`.
    pub fn owner_references(&self) -> Vec<OwnerRefView<'_>> {
        match &self.0 {
            Held::Object(o) => o
                .metadata
                .owner_references
                .iter()
                .flatten()
                .map(OwnerRefView::from)
                .collect(),
            Held::Compact(e) => e.compact().owner_references().collect(),
        }
    }

    /// The value at a JSON pointer (RFC 6901) into the object as it is
    /// serialised: `/metadata/labels/app`, `/spec/replicas`,
    /// `/status/conditions/0/type`. Borrowed, except for timestamps and
    /// other typed metadata, which are built for the occasion
    /// ([`ValueRef::Owned`]).
    pub fn pointer(&self, pointer: &str) -> Option<ValueRef<'_>> {
        match &self.0 {
            Held::Object(o) => decoded_pointer(o, pointer),
            Held::Compact(e) => e.compact().pointer(pointer),
        }
    }

    /// Appends the object's JSON to `out`: the bytes `serde_json::to_vec`
    /// writes for the `DynamicObject`, in both storage modes. Fails, leaving
    /// `out` as it was, where that fails too.
    ///
    /// # Errors
    ///
    /// The serialiser's error: an object whose `data` is neither an object
    /// nor null.
    pub fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        match &self.0 {
            Held::Object(o) => {
                let len = out.len();
                let written = serde_json::to_writer(&mut *out, &**o);
                if written.is_err() {
                    out.truncate(len);
                }
                written
            }
            Held::Compact(e) => e.compact().write_json(out),
        }
    }
}

const EMPTY: StrMap<'static> = StrMap::EMPTY;

/// A JSON pointer into a decoded object: borrowed, except in `metadata`
/// (typed, so serialised first) and for the whole object.
fn decoded_pointer<'a>(object: &'a DynamicObject, pointer: &str) -> Option<ValueRef<'a>> {
    let Some((first, tail)) = split_pointer(pointer) else {
        return pointer
            .is_empty()
            .then(|| serde_json::to_value(object).ok().map(ValueRef::Owned))
            .flatten();
    };
    match &*first {
        "apiVersion" | "kind" => {
            let types = object.types.as_ref()?;
            let value = if first == "kind" {
                &types.kind
            } else {
                &types.api_version
            };
            tail.is_empty().then_some(ValueRef::String(value))
        }
        "metadata" => decoded_metadata_pointer(&object.metadata, tail),
        _ => object.data.pointer(pointer).map(ValueRef::Json),
    }
}

/// A JSON pointer into typed metadata: its strings borrowed, the rest built
/// for the occasion.
fn decoded_metadata_pointer<'a>(meta: &'a ObjectMeta, pointer: &str) -> Option<ValueRef<'a>> {
    let string = |s: &'a Option<String>| s.as_deref().map(ValueRef::String);
    let from_map = |map: &'a Option<BTreeMap<String, String>>, key: &str| {
        map.as_ref()?.get(key).map(|v| ValueRef::String(v))
    };
    let (field, rest) = split_pointer(pointer)?;
    let key = split_pointer(rest).filter(|(_, tail)| tail.is_empty());
    match (&*field, rest, key) {
        ("name", "", _) => string(&meta.name),
        ("namespace", "", _) => string(&meta.namespace),
        ("uid", "", _) => string(&meta.uid),
        ("resourceVersion", "", _) => string(&meta.resource_version),
        ("generateName", "", _) => string(&meta.generate_name),
        ("generation", "", _) => meta.generation.map(|g| ValueRef::Number(g.into())),
        ("labels", _, Some((key, _))) => from_map(&meta.labels, &key),
        ("annotations", _, Some((key, _))) => from_map(&meta.annotations, &key),
        // The one field serialised, not the whole metadata (whose
        // managedFields may be most of the object).
        _ => {
            let value = metadata_field_json(meta, &field)?;
            if rest.is_empty() {
                return Some(ValueRef::Owned(value));
            }
            value.pointer(rest).cloned().map(ValueRef::Owned)
        }
    }
}

/// One field of the metadata as it serialises; `None` when absent.
fn metadata_field_json(meta: &ObjectMeta, field: &str) -> Option<serde_json::Value> {
    fn json<T: Serialize>(value: Option<&T>) -> Option<serde_json::Value> {
        value.and_then(|v| serde_json::to_value(v).ok())
    }
    match field {
        "annotations" => json(meta.annotations.as_ref()),
        "creationTimestamp" => json(meta.creation_timestamp.as_ref()),
        "deletionGracePeriodSeconds" => json(meta.deletion_grace_period_seconds.as_ref()),
        "deletionTimestamp" => json(meta.deletion_timestamp.as_ref()),
        "finalizers" => json(meta.finalizers.as_ref()),
        "generateName" => json(meta.generate_name.as_ref()),
        "generation" => json(meta.generation.as_ref()),
        "labels" => json(meta.labels.as_ref()),
        "managedFields" => json(meta.managed_fields.as_ref()),
        "name" => json(meta.name.as_ref()),
        "namespace" => json(meta.namespace.as_ref()),
        "ownerReferences" => json(meta.owner_references.as_ref()),
        "resourceVersion" => json(meta.resource_version.as_ref()),
        "selfLink" => json(meta.self_link.as_ref()),
        "uid" => json(meta.uid.as_ref()),
        _ => None,
    }
}

impl Serialize for CachedObject {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Held::Object(o) => o.serialize(s),
            Held::Compact(e) => e.compact().serialize(s),
        }
    }
}

impl fmt::Debug for CachedObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Held::Object(o) => fmt::Debug::fmt(o, f),
            Held::Compact(e) => fmt::Debug::fmt(e.compact(), f),
        }
    }
}
