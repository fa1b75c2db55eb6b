//! The informer's cache: a thread-safe key → object map with named indexes.
//!
//! The [layer docs](crate::cache) say more.

use std::cell::OnceCell;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use indexmap::IndexMap;
use kube_core::DynamicObject;
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::cache::CacheError;
use crate::cache::compact::{CompactEntry, CompactObject, Interner};
use crate::cache::index::{IndexFn, IndexInput, NAMESPACE_INDEX};
use crate::vocabulary::object_key::{key_from_parts, object_key};

mod cached;
mod size;
mod version;
mod writer;

use writer::Listing;
#[cfg(test)]
use writer::changed;
pub(crate) use writer::{JsonBuilder, ListItem, SnapshotFill};

/// How a cache holds its objects.
///
/// The choice trades CPU for memory; BENCHMARKS.md ("Storage modes") has
/// both measured side by side. The default is [`Storage::Compact`]: on
/// 50,000 Widgets it holds the cache in a fifth of client-go's memory, and
/// reads through [`CachedObject`] handles stay within about 2× of
/// [`Storage::Objects`]; objects mode spends less CPU on each update (about
/// 0.7× compact's under glibc's malloc) and gives every
/// [`CachedObject::object`] as a pointer copy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "config", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum Storage {
    /// Each object as the `Arc<DynamicObject>` decoded from the wire, shared
    /// with event handlers and readers: every read is a pointer copy.
    Objects,
    /// Each object in a compact form ([`crate::cache`]), a fraction of the
    /// memory: keys interned per cache, exact-size trees, identical
    /// `managedFields` trees stored once. Reads and events give handles
    /// that read the compact form in place (see [`CachedObject`]); one that
    /// needs a whole `DynamicObject` ([`CachedObject::object`]) gets one
    /// decoded on demand (microseconds an object, shared while anyone
    /// holds it), so no operation holds the whole cache decoded. A watched
    /// object is built straight from the server's JSON, with no
    /// `DynamicObject` in between. The default. An application on jemalloc (or another
    /// allocator that does not fragment like glibc's) spends less CPU on
    /// each update (BENCHMARKS.md, "Allocators").
    #[default]
    Compact,
}

pub use cached::CachedObject;
use cached::Held;
pub use version::{SyncPoint, compare_resource_versions};

/// What a [`StoreWriter::replace`] changed. Objects are the store's own
/// handles, ready to hand to event handlers: nothing is decoded unless
/// asked.
#[derive(Debug, Default, Clone)]
#[non_exhaustive]
pub struct ReplaceOutcome {
    /// Objects whose key was not in the store, in list order.
    pub added: Vec<CachedObject>,
    /// `(old, new)` for objects that changed, in list order: their
    /// `resourceVersion` differs, or, when neither has one, their content.
    pub updated: Vec<(CachedObject, CachedObject)>,
    /// The last known state of objects whose key is missing from the list
    /// (client-go's "final state unknown" tombstones), in no particular order.
    pub deleted: Vec<CachedObject>,
    /// How many objects were in the list and unchanged.
    pub unchanged: usize,
    /// The written objects as they were given, decoded: kept by the
    /// informer until its handler filters have read them, so that a
    /// compact handle's [`CachedObject::object`] finds them meanwhile.
    pub(crate) decoded: Vec<Arc<DynamicObject>>,
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
#[doc(alias = "Indexer")]
pub struct Store {
    shared: Arc<RwLock<State>>,
    sync: Arc<watch::Sender<SyncPoint>>,
}

/// The only handle that changes the cache's objects. Not `Clone`: one task
/// owns it. Hand [`StoreWriter::reader`] to everyone else.
pub struct StoreWriter {
    store: Store,
    storage: Storage,
    /// Keys and trees shared by the compact objects of this cache; shared
    /// with the [`JsonBuilder`]s it hands out.
    interner: Arc<Mutex<Interner>>,
    listing: Option<Listing>,
    writes_since_forget: usize,
}

/// The index definitions of a store, in slot order.
type Defs = Arc<[Arc<IndexDef>]>;

struct State {
    storage: Storage,
    objects: IndexMap<Key, Entry>,
    /// Index definitions in declaration order; position = slot. Replaced, not
    /// mutated, when an index is added, so the writer can evaluate against a
    /// snapshot without holding the lock.
    defs: Defs,
    /// Value maps, same order as `defs`.
    indexes: Vec<IndexData>,
    /// The fields of the data whose digest each compact object keeps (see
    /// [`Store::keep_digests`]); replaced, not mutated, as `defs`.
    digested: Arc<[Box<str>]>,
}

struct Entry {
    held: CachedObject,
    /// Per index slot, the distinct values this object is filed under (the
    /// reverse map, so an update or delete knows what to remove).
    values: Box<[Box<[Arc<str>]>]>,
}

struct IndexDef {
    name: String,
    func: IndexFn,
    failures: AtomicU64,
    /// The failures' metric series (see [`crate::informer::telemetry`]).
    failure_metric: metrics::Counter,
}

#[derive(Default)]
struct IndexData {
    by_value: IndexMap<Arc<str>, Members>,
}

/// The objects filed under one value, by key: always the `Arc`s the object
/// map holds. Most values of selective indexes (by uid, by owner) hold one
/// object, which needs no map.
enum Members {
    One(Key, CachedObject),
    Many(HashMap<Key, CachedObject>),
}

impl IndexDef {
    /// Sorted, distinct values of `object`; on failure none, counted and
    /// logged.
    fn values(&self, key: &str, input: &IndexInput<'_>) -> Vec<String> {
        self.accept(key, self.func.evaluate(&self.name, input))
    }

    /// [`IndexDef::values`] of a cached object, read in place when it is
    /// compact.
    fn values_of(&self, key: &str, held: &CachedObject) -> Vec<String> {
        match held.compact() {
            Some(compact) => self.values_of_compact(key, compact, &OnceCell::new()),
            None => held.with_object(|o| self.values(key, &IndexInput::new(o))),
        }
    }

    /// [`IndexDef::values`] of a compact object: read in place where the
    /// function can be, else on `decoded` (the object decoded once, for
    /// every index that needs it).
    fn values_of_compact(
        &self,
        key: &str,
        object: &CompactObject,
        decoded: &OnceCell<DynamicObject>,
    ) -> Vec<String> {
        match self.func.evaluate_compact(&self.name, object) {
            Some(result) => self.accept(key, result),
            None => self.values(
                key,
                &IndexInput::new(decoded.get_or_init(|| object.to_object())),
            ),
        }
    }

    /// The values of an evaluation, sorted and distinct; on failure none,
    /// counted and logged.
    fn accept(&self, key: &str, result: Result<Vec<String>, CacheError>) -> Vec<String> {
        match result {
            Ok(mut values) => {
                values.sort_unstable();
                values.dedup();
                values
            }
            Err(err) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                self.failure_metric.increment(1);
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

/// [`evaluate_all`] on a cached object, in place when it is compact.
fn evaluate_held(defs: &[Arc<IndexDef>], key: &str, held: &CachedObject) -> Vec<Vec<String>> {
    match held.compact() {
        Some(compact) => {
            let decoded = OnceCell::new();
            defs.iter()
                .map(|def| def.values_of_compact(key, compact, &decoded))
                .collect()
        }
        None => held.with_object(|o| evaluate_all(defs, key, o)),
    }
}

impl Members {
    /// Files `object` under `key`, replacing what was filed under it.
    fn insert(&mut self, key: &Key, object: &CachedObject) {
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
    fn refresh(&mut self, key: &str, object: &CachedObject) {
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

    fn iter(&self) -> impl Iterator<Item = (&Key, &CachedObject)> {
        let (one, many) = match self {
            Members::One(key, object) => (Some((key, object)), None),
            Members::Many(map) => (None, Some(map.iter())),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }

    /// `f` of every member, allocated once (the chained iterator does not
    /// know its length up front).
    fn collect<T>(&self, f: impl FnMut((&Key, &CachedObject)) -> T) -> Vec<T> {
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
        object: &CachedObject,
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
    fn refresh_all(&mut self, values: &[Arc<str>], key: &str, object: &CachedObject) {
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
    fn new(storage: Storage) -> Self {
        Self {
            storage,
            objects: IndexMap::new(),
            defs: Arc::from([Arc::new(IndexDef {
                name: NAMESPACE_INDEX.to_owned(),
                func: IndexFn::namespace(),
                failures: AtomicU64::new(0),
                failure_metric: metrics::Counter::noop(),
            })]),
            indexes: vec![IndexData::default()],
            digested: Arc::from([]),
        }
    }

    fn slot(&self, index: &str) -> Result<usize, CacheError> {
        self.defs
            .iter()
            .position(|def| def.name == index)
            .ok_or_else(|| CacheError::UnknownIndex {
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
        object: CachedObject,
        mut computed: Vec<Vec<String>>,
    ) -> Option<CachedObject> {
        if computed.len() < self.defs.len() {
            let missing = &self.defs[computed.len()..];
            computed.extend(evaluate_held(missing, key, &object));
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
                Some(std::mem::replace(&mut entry.held, object))
            }
            None => {
                let stored_key: Key = key.into();
                let values = computed
                    .into_iter()
                    .zip(&mut self.indexes)
                    .map(|(values, index)| index.insert_all(values, &stored_key, &object))
                    .collect();
                self.objects.insert(
                    stored_key,
                    Entry {
                        held: object,
                        values,
                    },
                );
                None
            }
        }
    }

    fn remove(&mut self, key: &str) -> Option<CachedObject> {
        let entry = self.objects.swap_remove(key)?;
        for (index, values) in self.indexes.iter_mut().zip(&entry.values) {
            index.remove_all(values, key);
        }
        Some(entry.held)
    }
}

impl Store {
    /// The resourceVersion this cache reflects (see [`SyncPoint`]): once the
    /// cache holds a write whose response carried resourceVersion *R*, this
    /// is *R* or later. `None` before the first list.
    pub fn resource_version(&self) -> Option<Arc<str>> {
        self.sync.borrow().resource_version.clone()
    }

    /// Where the cache stands: its resourceVersion, and whether a relist is
    /// being received.
    pub fn sync_point(&self) -> SyncPoint {
        self.sync.borrow().clone()
    }

    /// A receiver that sees every change of the [`SyncPoint`].
    pub fn watch_sync_point(&self) -> watch::Receiver<SyncPoint> {
        self.sync.subscribe()
    }

    fn defs(&self) -> Defs {
        self.shared.read().defs.clone()
    }

    /// What the writer computes for each object it writes: the index
    /// definitions, and the fields to digest.
    fn plan(&self) -> (Defs, Arc<[Box<str>]>) {
        let state = self.shared.read();
        (state.defs.clone(), state.digested.clone())
    }

    /// From now on, with [`Storage::Compact`], each object written keeps a
    /// digest of each of these fields of its data (`spec`, ...), so that a
    /// change predicate watching one tells two states of an object apart
    /// without reading them (see
    /// [`ChangePredicate`](crate::cache::ChangePredicate)). Fields asked
    /// for before are kept; the first few are digested.
    pub(crate) fn keep_digests<'a>(&self, fields: impl IntoIterator<Item = &'a str>) {
        let mut state = self.shared.write();
        if state.storage != Storage::Compact {
            return;
        }
        let mut all = state.digested.to_vec();
        for field in fields {
            if !all.iter().any(|f| &**f == field) {
                all.push(field.into());
            }
        }
        if all.len() > state.digested.len() {
            state.digested = all.into();
        }
    }

    /// How this store holds its objects.
    pub fn storage(&self) -> Storage {
        self.shared.read().storage
    }

    /// The object with this key (`namespace/name` or `name`): a handle that
    /// reads it in place and gives the whole `DynamicObject` on demand
    /// (see [`CachedObject`]).
    pub fn get(&self, key: &str) -> Option<CachedObject> {
        Some(self.shared.read().objects.get(key)?.held.clone())
    }

    /// Every cached object: one consistent snapshot, taken under a single
    /// lock acquisition (no writer operation is half-visible in it). Nothing
    /// is decoded: each is a handle (see [`CachedObject`]).
    pub fn list_all(&self) -> Vec<CachedObject> {
        self.list_where(|_| true)
    }

    /// The objects for which `keep` is true: one consistent snapshot. `keep`
    /// reads each object in place, under the store's read lock.
    pub(crate) fn list_where(
        &self,
        mut keep: impl FnMut(&CachedObject) -> bool,
    ) -> Vec<CachedObject> {
        self.shared
            .read()
            .objects
            .values()
            .filter(|entry| keep(&entry.held))
            .map(|entry| entry.held.clone())
            .collect()
    }

    /// With [`Storage::Compact`], frees what the decoded objects handed out
    /// and dropped since still keep in their entries (a few hundred bytes
    /// each); returns how many it freed. One pass over the cache under its
    /// read lock: the informer calls it every few seconds.
    pub(crate) fn forget_dropped(&self) -> usize {
        let state = self.shared.read();
        if state.storage != Storage::Compact {
            return 0;
        }
        state
            .objects
            .values()
            .filter(|entry| entry.held.forget_dropped())
            .count()
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

    /// An estimate of the heap this cache holds, in bytes: its objects
    /// (with [`Storage::Compact`], the length of their JSON, which is about
    /// what their compact form holds), their keys and its indexes. What
    /// RSS cannot say: which cache of a process holds its memory.
    ///
    /// One pass over the cache, O(objects): the read lock is held only to
    /// take a handle on each object, which is then measured without it.
    /// With compact storage each object's JSON is written to a counter
    /// (some 15 µs a Widget, BENCHMARKS.md). For an occasional figure (a
    /// status line, a gauge read every minute), not for every event.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use kube_dynamic_informer::cache::StoreWriter;
    ///
    /// let mut writer = StoreWriter::new();
    /// assert_eq!(writer.reader().approximate_bytes(), 0);
    /// writer.upsert(Arc::new(serde_json::from_value(serde_json::json!({
    ///     "metadata": { "name": "big", "namespace": "shop" },
    ///     "data": { "blob": "x".repeat(1 << 20) }
    /// }))?));
    /// assert!(writer.reader().approximate_bytes() >= 1 << 20);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn approximate_bytes(&self) -> usize {
        let (bookkeeping, objects) = {
            let state = self.shared.read();
            let objects: Vec<CachedObject> = state
                .objects
                .values()
                .map(|entry| entry.held.clone())
                .collect();
            (size::bookkeeping(&state), objects)
        };
        bookkeeping + objects.iter().map(size::object).sum::<usize>()
    }

    /// Whether the cache holds no object.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The objects filed under `value` in the index `index`, as handles
    /// (see [`CachedObject`]).
    ///
    /// # Errors
    ///
    /// [`CacheError::UnknownIndex`] when there is no such index.
    pub fn by_index(&self, index: &str, value: &str) -> Result<Vec<CachedObject>, CacheError> {
        let state = self.shared.read();
        let slot = state.slot(index)?;
        Ok(match state.indexes[slot].by_value.get(value) {
            Some(members) => members.collect(|(_, held)| held.clone()),
            None => Vec::new(),
        })
    }

    /// The keys of the objects filed under `value` in the index `index`.
    ///
    /// # Errors
    ///
    /// [`CacheError::UnknownIndex`] when there is no such index.
    pub fn index_keys(&self, index: &str, value: &str) -> Result<Vec<String>, CacheError> {
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
    /// [`CacheError::UnknownIndex`] when there is no such index.
    pub fn index_values(&self, index: &str) -> Result<Vec<String>, CacheError> {
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

    /// The function of the index `index`: to tell whether an object the
    /// store is not asked about (an event's) is filed under a value.
    ///
    /// ```
    /// use kube_dynamic_informer::cache::{IndexFn, IndexInput, StoreWriter};
    ///
    /// let store = StoreWriter::new().reader();
    /// store.add_index("color", IndexFn::jmespath("color", "spec.color")?)?;
    /// let color = store.index_function("color")?;
    /// assert_eq!(color.expression(), Some("spec.color"));
    /// assert!(store.index_function("size").is_err());
    /// # Ok::<(), kube_dynamic_informer::cache::CacheError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`CacheError::UnknownIndex`] when there is no such index.
    pub fn index_function(&self, index: &str) -> Result<IndexFn, CacheError> {
        let state = self.shared.read();
        let slot = state.slot(index)?;
        Ok(state.defs[slot].func.clone())
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
    /// [`CacheError::DuplicateIndex`] when the name is taken by another
    /// definition (the [`NAMESPACE_INDEX`] always is). The same definition
    /// again (see [`IndexFn::same_definition`]) is accepted and changes
    /// nothing.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use kube_dynamic_informer::cache::IndexFn;
    /// use kube_dynamic_informer::cache::{CacheError, StoreWriter};
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
    /// assert!(matches!(again, Err(CacheError::DuplicateIndex { .. })));
    /// store.add_index("color", IndexFn::jmespath("color", "spec.color")?)?;
    /// // The same expression again, as a second user of the store declares it.
    /// store.add_index("color", IndexFn::jmespath("color", "spec.color")?)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add_index(&self, name: impl Into<String>, func: IndexFn) -> Result<(), CacheError> {
        self.add_index_counted(name.into(), func, metrics::Counter::noop())
    }

    /// [`add_index`](Self::add_index), counting the function's failures in
    /// `failure_metric` too.
    pub(crate) fn add_index_counted(
        &self,
        name: String,
        func: IndexFn,
        failure_metric: metrics::Counter,
    ) -> Result<(), CacheError> {
        // The same definition again (two names of one shared informer
        // declaring one index) is already there; another is refused.
        let existing =
            |state: &State, func: &IndexFn| match state.defs.iter().find(|d| d.name == name) {
                None => Ok(false),
                Some(def) if def.func.same_definition(func) => Ok(true),
                Some(_) => Err(CacheError::DuplicateIndex { name: name.clone() }),
            };
        let snapshot: Vec<(Key, CachedObject)> = {
            let state = self.shared.read();
            if existing(&state, &func)? {
                return Ok(());
            }
            state
                .objects
                .iter()
                .map(|(key, entry)| (key.clone(), entry.held.clone()))
                .collect()
        };
        let def = Arc::new(IndexDef {
            name: name.clone(),
            func,
            failures: AtomicU64::new(0),
            failure_metric,
        });
        let mut precomputed: HashMap<Key, (CachedObject, Vec<String>)> = snapshot
            .into_iter()
            .map(|(key, held)| {
                let values = def.values_of(&key, &held);
                (key, (held, values))
            })
            .collect();

        let mut state = self.shared.write();
        if existing(&state, &def.func)? {
            return Ok(());
        }
        let mut index = IndexData::default();
        for (key, entry) in &mut state.objects {
            let values = match precomputed.remove(key) {
                Some((seen, values)) if seen.same(&entry.held) => values,
                _ => def.values_of(key, &entry.held),
            };
            let stored = index.insert_all(values, key, &entry.held);
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

#[cfg(test)]
mod tests;
