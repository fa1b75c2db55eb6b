//! The informer's cache: a thread-safe key → object map with named indexes.
//!
//! # Reader and writer
//!
//! As in kube-runtime, the cache is split in two handles over the same data:
//!
//! - [`StoreWriter`] is the only handle that changes objects. It is not
//!   `Clone`; the informer's task owns it and applies watch events and
//!   relists to it.
//! - [`Store`] is a cheap `Clone` read handle handed to everybody else. It
//!   gives out `Arc<DynamicObject>`s, so nobody can modify a cached object
//!   (client-go returns mutable pointers and its docs have to ask users not
//!   to write through them). The one thing a reader may change is the set of
//!   indexes ([`Store::add_index`]), which never changes an object.
//!
//! Every object is held once, in an `Arc`; the store, every event handler and
//! every query result share it.
//!
//! # Keys
//!
//! An object's key is `namespace/name`, or `name` for a cluster-scoped object
//! (client-go's `MetaNamespaceKeyFunc`); see [`object_key`] and
//! [`key_from_parts`].
//!
//! # Indexes
//!
//! A named index files each object under zero or more string values computed
//! by an [`IndexFn`] (many-to-many: one pod can be under each of its label
//! keys, and one value holds many pods). The [`NAMESPACE_INDEX`] is always
//! there. Indexes can be added at any time; existing objects are indexed at
//! once. When an index function fails on an object — an expression that
//! returns an object, a closure returning an error — that object is left out
//! of that index, the index's failure counter ([`Store::index_failures`]) is
//! incremented and a `tracing` warning names the index, the object and the
//! error. Nothing in the store panics.
//!
//! ## Memory use
//!
//! Each key is one `Arc<str>` allocation shared by the object map and every
//! index entry that refers to it; each distinct index value is one `Arc<str>`
//! shared by the value map and the objects filed under it. A value held by a
//! single object costs no map allocation. Objects are never copied.
//!
//! An index entry holds the object's `Arc` next to its key, so
//! [`Store::by_index`] clones pointers it already holds instead of looking
//! each key up again in the object map. That pointer costs 8 bytes a bucket in
//! the map of a value held by several objects, and nothing for a value held by
//! one. Updates pay for it too: an update that leaves an object's index values
//! alone still swaps the `Arc` in each index entry of that object.
//!
//! ## Locking
//!
//! One `parking_lot::RwLock` guards the data: reads run in parallel, and every
//! read method takes the lock once, so a result (for instance [`Store::list`])
//! is a consistent snapshot with respect to writer operations. Index functions
//! are evaluated *before* the write lock is taken; the lock is held only to
//! move prepared values into the maps. Each object's JMESPath indexes are
//! evaluated against one conversion of the object (see [`IndexInput`]).
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use kube_core::DynamicObject;
//! use kube_dynamic_informer::index::IndexFn;
//! use kube_dynamic_informer::store::StoreWriter;
//!
//! let pod = |ns: &str, name: &str, node: &str| -> Arc<DynamicObject> {
//!     Arc::new(serde_json::from_value(serde_json::json!({
//!         "apiVersion": "v1", "kind": "Pod",
//!         "metadata": { "name": name, "namespace": ns, "resourceVersion": "1" },
//!         "spec": { "nodeName": node }
//!     })).unwrap())
//! };
//!
//! let mut writer = StoreWriter::new();
//! let store = writer.reader(); // Clone + Send + Sync, hand it out freely
//! store.add_index("by-node", IndexFn::jmespath("by-node", "spec.nodeName")?)?;
//!
//! writer.upsert(pod("shop", "web-0", "node-1"));
//! writer.upsert(pod("shop", "web-1", "node-2"));
//! writer.upsert(pod("kube-system", "dns-0", "node-1"));
//!
//! let on_node_1 = store.index_keys("by-node", "node-1")?;
//! assert_eq!(on_node_1.len(), 2);
//! assert_eq!(store.by_index("namespace", "shop")?.len(), 2);
//! assert!(store.get("shop/web-0").is_some());
//!
//! // A relist: afterwards the store holds exactly these objects.
//! let outcome = writer.replace(vec![pod("shop", "web-0", "node-1")]);
//! assert_eq!((outcome.added.len(), outcome.updated.len(), outcome.deleted.len(), outcome.unchanged), (0, 0, 2, 1));
//! assert_eq!(store.keys(), ["shop/web-0"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use indexmap::IndexMap;
use kube_core::DynamicObject;
use parking_lot::RwLock;

use crate::index::{IndexFn, IndexInput, NAMESPACE_INDEX};
use crate::object_key::{key_from_parts, object_key};

/// Errors of store queries and index declarations.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No index has this name.
    #[error("unknown index {name:?}; the store has: {}", known.join(", "))]
    UnknownIndex {
        /// The name asked for.
        name: String,
        /// The indexes the store has, in declaration order.
        known: Vec<String>,
    },
    /// An index with this name already exists (the namespace index always
    /// does).
    #[error("index {name:?} already exists")]
    DuplicateIndex {
        /// The name declared twice.
        name: String,
    },
}

/// What a [`StoreWriter::replace`] changed. Objects are the store's own
/// `Arc`s, ready to hand to event handlers.
#[derive(Debug, Default, Clone)]
#[non_exhaustive]
pub struct ReplaceOutcome {
    /// Objects whose key was not in the store, in list order.
    pub added: Vec<Arc<DynamicObject>>,
    /// `(old, new)` for objects that changed, in list order: their
    /// `resourceVersion` differs, or, when neither has one, their content.
    pub updated: Vec<(Arc<DynamicObject>, Arc<DynamicObject>)>,
    /// The last known state of objects whose key is missing from the list
    /// (client-go's "final state unknown" tombstones), in no particular order.
    pub deleted: Vec<Arc<DynamicObject>>,
    /// How many objects were in the list and unchanged.
    pub unchanged: usize,
}

impl ReplaceOutcome {
    /// Whether the relist changed nothing.
    pub fn is_unchanged(&self) -> bool {
        self.added.is_empty() && self.updated.is_empty() && self.deleted.is_empty()
    }
}

type Key = Arc<str>;

/// Read handle on the cache: cheap to clone, `Send + Sync`, never mutates an
/// object. Obtained from [`StoreWriter::reader`].
///
/// Every method takes the lock once, so each result is consistent with
/// respect to writer operations. Methods returning several items return them
/// in no particular order.
#[derive(Clone)]
pub struct Store {
    shared: Arc<RwLock<State>>,
}

/// The only handle that changes the cache's objects. Not `Clone`: one task
/// owns it. Hand [`StoreWriter::reader`] to everyone else.
pub struct StoreWriter {
    store: Store,
}

struct State {
    objects: IndexMap<Key, Entry>,
    /// Index definitions in declaration order; position = slot. Replaced, not
    /// mutated, when an index is added, so the writer can evaluate against a
    /// snapshot without holding the lock.
    defs: Arc<[Arc<IndexDef>]>,
    /// Value maps, same order as `defs`.
    indexes: Vec<IndexData>,
}

struct Entry {
    object: Arc<DynamicObject>,
    /// Per index slot, the distinct values this object is filed under (the
    /// reverse map, so an update or delete knows what to remove).
    values: Box<[Box<[Arc<str>]>]>,
}

struct IndexDef {
    name: String,
    func: IndexFn,
    failures: AtomicU64,
}

#[derive(Default)]
struct IndexData {
    by_value: IndexMap<Arc<str>, Members>,
}

/// The objects filed under one value, by key: always the `Arc`s the object
/// map holds. Most values of selective indexes (by uid, by owner) hold one
/// object, which needs no map.
enum Members {
    One(Key, Arc<DynamicObject>),
    Many(HashMap<Key, Arc<DynamicObject>>),
}

impl IndexDef {
    /// Sorted, distinct values of `object`; on failure none, counted and
    /// logged.
    fn values(&self, key: &str, input: &IndexInput<'_>) -> Vec<String> {
        match self.func.evaluate(&self.name, input) {
            Ok(mut values) => {
                values.sort_unstable();
                values.dedup();
                values
            }
            Err(err) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    index = %self.name,
                    object = key,
                    error = %err,
                    "index function failed; the object is left out of this index"
                );
                Vec::new()
            }
        }
    }
}

fn evaluate_all(defs: &[Arc<IndexDef>], key: &str, object: &DynamicObject) -> Vec<Vec<String>> {
    let input = IndexInput::new(object);
    defs.iter().map(|def| def.values(key, &input)).collect()
}

impl Members {
    /// Files `object` under `key`, replacing what was filed under it.
    fn insert(&mut self, key: &Key, object: &Arc<DynamicObject>) {
        match self {
            Members::One(existing, filed) if **existing == **key => *filed = object.clone(),
            Members::One(existing, filed) => {
                let map = HashMap::from([
                    (existing.clone(), filed.clone()),
                    (key.clone(), object.clone()),
                ]);
                *self = Members::Many(map);
            }
            Members::Many(map) => {
                map.insert(key.clone(), object.clone());
            }
        }
    }

    /// Replaces the object filed under `key`, if there is one.
    fn refresh(&mut self, key: &str, object: &Arc<DynamicObject>) {
        let filed = match self {
            Members::One(existing, filed) if &**existing == key => Some(filed),
            Members::One(..) => None,
            Members::Many(map) => map.get_mut(key),
        };
        if let Some(filed) = filed {
            *filed = object.clone();
        }
    }

    /// Removes `key`; returns whether no object is left.
    fn remove(&mut self, key: &str) -> bool {
        match self {
            Members::One(existing, _) => &**existing == key,
            Members::Many(map) => {
                map.remove(key);
                if map.len() == 1
                    && let Some((last, object)) = map.iter().next()
                {
                    *self = Members::One(last.clone(), object.clone());
                    return false;
                }
                map.is_empty()
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Members::One(..) => 1,
            Members::Many(map) => map.len(),
        }
    }

    fn iter(&self) -> impl Iterator<Item = (&Key, &Arc<DynamicObject>)> {
        let (one, many) = match self {
            Members::One(key, object) => (Some((key, object)), None),
            Members::Many(map) => (None, Some(map.iter())),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }

    /// `f` of every member, allocated once (the chained iterator does not
    /// know its length up front).
    fn collect<T>(&self, f: impl FnMut((&Key, &Arc<DynamicObject>)) -> T) -> Vec<T> {
        let mut out = Vec::with_capacity(self.len());
        out.extend(self.iter().map(f));
        out
    }
}

impl IndexData {
    /// Files `object` under each value and returns the stored (shared)
    /// values.
    fn insert_all(
        &mut self,
        values: Vec<String>,
        key: &Key,
        object: &Arc<DynamicObject>,
    ) -> Box<[Arc<str>]> {
        values
            .into_iter()
            .map(|value| match self.by_value.get_full_mut(value.as_str()) {
                Some((_, stored, members)) => {
                    members.insert(key, object);
                    stored.clone()
                }
                None => {
                    let stored: Arc<str> = value.into();
                    self.by_value
                        .insert(stored.clone(), Members::One(key.clone(), object.clone()));
                    stored
                }
            })
            .collect()
    }

    /// Points the entries of `key` under `values` at `object`.
    fn refresh_all(&mut self, values: &[Arc<str>], key: &str, object: &Arc<DynamicObject>) {
        for value in values {
            if let Some(members) = self.by_value.get_mut(&**value) {
                members.refresh(key, object);
            }
        }
    }

    fn remove_all(&mut self, values: &[Arc<str>], key: &str) {
        for value in values {
            if let Some(members) = self.by_value.get_mut(&**value)
                && members.remove(key)
            {
                self.by_value.swap_remove(&**value);
            }
        }
    }
}

impl State {
    fn new() -> Self {
        Self {
            objects: IndexMap::new(),
            defs: Arc::from([Arc::new(IndexDef {
                name: NAMESPACE_INDEX.to_owned(),
                func: IndexFn::namespace(),
                failures: AtomicU64::new(0),
            })]),
            indexes: vec![IndexData::default()],
        }
    }

    fn slot(&self, index: &str) -> Result<usize, StoreError> {
        self.defs
            .iter()
            .position(|def| def.name == index)
            .ok_or_else(|| StoreError::UnknownIndex {
                name: index.to_owned(),
                known: self.index_names(),
            })
    }

    fn index_names(&self) -> Vec<String> {
        self.defs.iter().map(|def| def.name.clone()).collect()
    }

    /// Inserts or replaces an object with values computed for the first
    /// `computed.len()` indexes (indexes added since are computed here).
    fn insert(
        &mut self,
        key: &str,
        object: Arc<DynamicObject>,
        mut computed: Vec<Vec<String>>,
    ) -> Option<Arc<DynamicObject>> {
        if computed.len() < self.defs.len() {
            let missing = &self.defs[computed.len()..];
            computed.extend(evaluate_all(missing, key, &object));
        }
        match self.objects.get_full_mut(key) {
            Some((_, stored_key, entry)) => {
                for (slot, values) in computed.into_iter().enumerate() {
                    let old = &entry.values[slot];
                    let index = &mut self.indexes[slot];
                    // Most updates (status changes) leave index values alone;
                    // their entries only need the new `Arc`.
                    if old.len() == values.len() && old.iter().zip(&values).all(|(a, b)| **a == **b)
                    {
                        index.refresh_all(old, stored_key, &object);
                        continue;
                    }
                    index.remove_all(old, stored_key);
                    entry.values[slot] = index.insert_all(values, stored_key, &object);
                }
                Some(std::mem::replace(&mut entry.object, object))
            }
            None => {
                let stored_key: Key = key.into();
                let values = computed
                    .into_iter()
                    .zip(&mut self.indexes)
                    .map(|(values, index)| index.insert_all(values, &stored_key, &object))
                    .collect();
                self.objects.insert(stored_key, Entry { object, values });
                None
            }
        }
    }

    fn remove(&mut self, key: &str) -> Option<Arc<DynamicObject>> {
        let entry = self.objects.swap_remove(key)?;
        for (index, values) in self.indexes.iter_mut().zip(&entry.values) {
            index.remove_all(values, key);
        }
        Some(entry.object)
    }
}

impl Store {
    fn defs(&self) -> Arc<[Arc<IndexDef>]> {
        self.shared.read().defs.clone()
    }

    /// The object with this key (`namespace/name` or `name`).
    pub fn get(&self, key: &str) -> Option<Arc<DynamicObject>> {
        self.shared
            .read()
            .objects
            .get(key)
            .map(|entry| entry.object.clone())
    }

    /// The object with this namespace (`None` for cluster-scoped) and name.
    pub fn get_namespaced(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Arc<DynamicObject>> {
        self.get(&key_from_parts(namespace, name))
    }

    /// Every cached object: one consistent snapshot, taken under a single
    /// lock acquisition (no writer operation is half-visible in it).
    pub fn list(&self) -> Vec<Arc<DynamicObject>> {
        self.shared
            .read()
            .objects
            .values()
            .map(|entry| entry.object.clone())
            .collect()
    }

    /// Every key.
    pub fn keys(&self) -> Vec<String> {
        self.shared
            .read()
            .objects
            .keys()
            .map(|key| String::from(&**key))
            .collect()
    }

    /// Number of cached objects.
    pub fn len(&self) -> usize {
        self.shared.read().objects.len()
    }

    /// Whether the cache holds no object.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The objects filed under `value` in the index `index`.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownIndex`] when there is no such index.
    pub fn by_index(
        &self,
        index: &str,
        value: &str,
    ) -> Result<Vec<Arc<DynamicObject>>, StoreError> {
        let state = self.shared.read();
        let slot = state.slot(index)?;
        Ok(match state.indexes[slot].by_value.get(value) {
            Some(members) => members.collect(|(_, object)| object.clone()),
            None => Vec::new(),
        })
    }

    /// The keys of the objects filed under `value` in the index `index`.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownIndex`] when there is no such index.
    pub fn index_keys(&self, index: &str, value: &str) -> Result<Vec<String>, StoreError> {
        let state = self.shared.read();
        let slot = state.slot(index)?;
        Ok(match state.indexes[slot].by_value.get(value) {
            Some(members) => members.collect(|(key, _)| String::from(&**key)),
            None => Vec::new(),
        })
    }

    /// Every value of the index `index` that at least one object is filed
    /// under.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnknownIndex`] when there is no such index.
    pub fn index_values(&self, index: &str) -> Result<Vec<String>, StoreError> {
        let state = self.shared.read();
        let slot = state.slot(index)?;
        Ok(state.indexes[slot]
            .by_value
            .keys()
            .map(|value| String::from(&**value))
            .collect())
    }

    /// The names of all indexes, in declaration order; [`NAMESPACE_INDEX`]
    /// first.
    pub fn index_names(&self) -> Vec<String> {
        self.shared.read().index_names()
    }

    /// How many times the index function of `index` has failed on an object
    /// (each failure left that object out of the index), or `None` when there
    /// is no such index.
    pub fn index_failures(&self, index: &str) -> Option<u64> {
        let defs = self.defs();
        let def = defs.iter().find(|def| def.name == index)?;
        Some(def.failures.load(Ordering::Relaxed))
    }

    /// Declares an index. Objects already cached are indexed before this
    /// returns; later objects as they arrive. Allowed at any time, from any
    /// handle: it never changes an object.
    ///
    /// The existing objects are evaluated without holding the lock; only
    /// objects changed meanwhile are evaluated again under it.
    ///
    /// # Errors
    ///
    /// [`StoreError::DuplicateIndex`] when the name is taken (the
    /// [`NAMESPACE_INDEX`] always is).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use kube_dynamic_informer::index::IndexFn;
    /// use kube_dynamic_informer::store::{StoreError, StoreWriter};
    ///
    /// let mut writer = StoreWriter::new();
    /// writer.upsert(Arc::new(serde_json::from_value(serde_json::json!({
    ///     "metadata": { "name": "web-0", "namespace": "shop", "labels": { "app": "web", "tier": "front" } }
    /// }))?));
    ///
    /// let store = writer.reader();
    /// // Many-to-many: the pod is filed under each of its label keys.
    /// store.add_index("label-key", IndexFn::closure_infallible(|obj| {
    ///     obj.metadata.labels.iter().flat_map(|labels| labels.keys().cloned()).collect()
    /// }))?;
    /// assert_eq!(store.index_keys("label-key", "tier")?, ["shop/web-0"]);
    ///
    /// let again = store.add_index("label-key", IndexFn::namespace());
    /// assert!(matches!(again, Err(StoreError::DuplicateIndex { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add_index(&self, name: impl Into<String>, func: IndexFn) -> Result<(), StoreError> {
        let name = name.into();
        let duplicate = |state: &State| {
            if state.defs.iter().any(|def| def.name == name) {
                Err(StoreError::DuplicateIndex { name: name.clone() })
            } else {
                Ok(())
            }
        };
        let snapshot: Vec<(Key, Arc<DynamicObject>)> = {
            let state = self.shared.read();
            duplicate(&state)?;
            state
                .objects
                .iter()
                .map(|(key, entry)| (key.clone(), entry.object.clone()))
                .collect()
        };
        let def = Arc::new(IndexDef {
            name: name.clone(),
            func,
            failures: AtomicU64::new(0),
        });
        let mut precomputed: HashMap<Key, (Arc<DynamicObject>, Vec<String>)> = snapshot
            .into_iter()
            .map(|(key, object)| {
                let values = def.values(&key, &IndexInput::new(&object));
                (key, (object, values))
            })
            .collect();

        let mut state = self.shared.write();
        duplicate(&state)?;
        let mut index = IndexData::default();
        for (key, entry) in &mut state.objects {
            let values = match precomputed.remove(key) {
                Some((seen, values)) if Arc::ptr_eq(&seen, &entry.object) => values,
                _ => def.values(key, &IndexInput::new(&entry.object)),
            };
            let stored = index.insert_all(values, key, &entry.object);
            let mut slots = std::mem::take(&mut entry.values).into_vec();
            slots.push(stored);
            entry.values = slots.into_boxed_slice();
        }
        state.indexes.push(index);
        state.defs = state.defs.iter().cloned().chain([def]).collect();
        drop(state);
        Ok(())
    }
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.read();
        f.debug_struct("Store")
            .field("objects", &state.objects.len())
            .field("indexes", &state.index_names())
            .finish()
    }
}

impl StoreWriter {
    /// An empty cache with the [`NAMESPACE_INDEX`].
    pub fn new() -> Self {
        Self {
            store: Store {
                shared: Arc::new(RwLock::new(State::new())),
            },
        }
    }

    /// A read handle on this cache (cheap; clone it freely).
    #[must_use]
    pub fn reader(&self) -> Store {
        self.store.clone()
    }

    /// Adds or replaces an object (a watch Added or Modified event) and returns
    /// the object it replaced. The given `Arc` is stored as is.
    ///
    /// An object without a name cannot be keyed: it is skipped with a warning
    /// and `None` is returned.
    pub fn upsert(&mut self, object: Arc<DynamicObject>) -> Option<Arc<DynamicObject>> {
        let Some(key) = object_key(&object) else {
            tracing::warn!("skipping an object without metadata.name");
            return None;
        };
        let computed = evaluate_all(&self.store.defs(), &key, &object);
        self.store.shared.write().insert(&key, object, computed)
    }

    /// Removes the object with this key (a watch Deleted event) and returns
    /// its last known state.
    pub fn delete(&mut self, key: &str) -> Option<Arc<DynamicObject>> {
        self.store.shared.write().remove(key)
    }

    /// Makes the cache equal to `objects` (a relist) and reports the
    /// difference, for the informer to turn into Add, Update and Delete
    /// events.
    ///
    /// An object counts as changed when its `resourceVersion` differs from the
    /// cached one, or, when neither has a `resourceVersion`, when its content
    /// differs. **Changed and new objects are stored as given; for an unchanged
    /// object the cached `Arc` is kept**, so handlers holding it still see the
    /// object the store serves, and its index values are not recomputed.
    ///
    /// Readers see the cache either entirely before or entirely after the
    /// relist. When a key appears more than once in `objects`, the last one
    /// wins; objects without a name are skipped with a warning.
    pub fn replace(&mut self, objects: Vec<Arc<DynamicObject>>) -> ReplaceOutcome {
        let mut listed: IndexMap<String, Arc<DynamicObject>> =
            IndexMap::with_capacity(objects.len());
        for object in objects {
            match object_key(&object) {
                Some(key) => {
                    listed.insert(key, object);
                }
                None => tracing::warn!("skipping a listed object without metadata.name"),
            }
        }

        // Only this writer changes objects, so what we compare against cannot
        // change before we apply; indexes added meanwhile are handled by
        // `State::insert`.
        let (defs, previous): (_, Vec<Option<Arc<DynamicObject>>>) = {
            let state = self.store.shared.read();
            let previous = listed
                .keys()
                .map(|key| {
                    state
                        .objects
                        .get(key.as_str())
                        .map(|entry| entry.object.clone())
                })
                .collect();
            (state.defs.clone(), previous)
        };

        let mut outcome = ReplaceOutcome::default();
        let mut changes = Vec::new();
        for ((key, object), old) in listed.iter().zip(previous) {
            match old {
                Some(old) if !changed(&old, object) => outcome.unchanged += 1,
                old => {
                    let computed = evaluate_all(&defs, key, object);
                    match old {
                        Some(old) => outcome.updated.push((old, object.clone())),
                        None => outcome.added.push(object.clone()),
                    }
                    changes.push((key.as_str(), object.clone(), computed));
                }
            }
        }

        let mut state = self.store.shared.write();
        for (key, object, computed) in changes {
            state.insert(key, object, computed);
        }
        let gone: Vec<Key> = state
            .objects
            .keys()
            .filter(|key| !listed.contains_key(&***key))
            .cloned()
            .collect();
        outcome.deleted = gone.iter().filter_map(|key| state.remove(key)).collect();
        outcome
    }
}

fn changed(old: &DynamicObject, new: &DynamicObject) -> bool {
    if std::ptr::eq(old, new) {
        return false;
    }
    match (
        &old.metadata.resource_version,
        &new.metadata.resource_version,
    ) {
        (Some(old_rv), Some(new_rv)) => old_rv != new_rv,
        (None, None) => old != new,
        _ => true,
    }
}

impl Default for StoreWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for StoreWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("StoreWriter").field(&self.store).finish()
    }
}

#[cfg(test)]
mod tests;
