//! The writing side of the store: upserts and deletes, and relists applied
//! page by page and reconciled at their end.

use super::*;

impl StoreWriter {
    /// The bytes of the tables its compact objects share.
    #[cfg(test)]
    pub(super) fn table_bytes(&self) -> usize {
        self.interner.lock().table_bytes()
    }

    /// An empty cache with the [`NAMESPACE_INDEX`], holding objects in the
    /// default [`Storage`].
    pub fn new() -> Self {
        Self::with_storage(Storage::default())
    }

    /// An empty cache with the [`NAMESPACE_INDEX`], holding objects as
    /// `storage` says.
    pub fn with_storage(storage: Storage) -> Self {
        Self {
            store: Store {
                shared: Arc::new(RwLock::new(State::new(storage))),
                sync: Arc::new(watch::Sender::new(SyncPoint::default())),
            },
            storage,
            interner: Arc::new(Mutex::new(Interner::new())),
            listing: None,
            writes_since_forget: 0,
        }
    }

    /// Records the resourceVersion the cache now reflects (a list's, then
    /// each event's and bookmark's); ends a relist's
    /// [`SyncPoint::relisting`].
    pub fn set_resource_version(&mut self, resource_version: &str) {
        self.store.sync.send_if_modified(|sync| {
            if sync.resource_version.as_deref() == Some(resource_version) && !sync.relisting {
                return false;
            }
            sync.resource_version = Some(resource_version.into());
            sync.relisting = false;
            true
        });
    }

    /// A read handle on this cache (cheap; clone it freely).
    #[must_use]
    pub fn reader(&self) -> Store {
        self.store.clone()
    }

    /// How this cache holds its objects.
    pub fn storage(&self) -> Storage {
        self.storage
    }

    /// The stored form of `object`.
    pub(super) fn hold(
        &mut self,
        object: &Arc<DynamicObject>,
        digested: &[Box<str>],
    ) -> CachedObject {
        match self.storage {
            Storage::Objects => CachedObject(Held::Object(object.clone())),
            Storage::Compact => {
                let compact = CompactObject::digesting(object, &mut self.interner.lock(), digested);
                CachedObject(Held::Compact(CompactEntry::new(compact, Some(object))))
            }
        }
    }

    /// Counts writes; with [`Storage::Compact`], once as many writes as half
    /// the cache's size have happened since the last pass, frees what the
    /// decoded objects nobody holds any more still keep (amortised: a pass
    /// visits each object once).
    pub(super) fn wrote(&mut self, writes: usize) {
        if self.storage != Storage::Compact {
            return;
        }
        self.writes_since_forget += writes;
        // The size is read only once a pass may be due.
        if self.writes_since_forget >= FORGET_EVERY
            && self.writes_since_forget >= self.store.len() / 2
        {
            self.forget_dropped();
        }
    }

    /// With [`Storage::Compact`], frees the few hundred bytes that each
    /// object decoded from the wire keeps in its cache entry once nobody
    /// holds it any more. The writer does this by
    /// itself as it writes; this is for a caller that knows the objects were
    /// just dropped (say, after a burst).
    pub fn forget_dropped(&mut self) {
        self.writes_since_forget = 0;
        if self.storage == Storage::Compact {
            self.store.forget_dropped();
        }
    }

    /// Adds or replaces an object (a watch Added or Modified event) and returns
    /// the object it replaced. The given `Arc` is stored as is
    /// ([`Storage::Objects`]) or remembered beside its compact form
    /// ([`Storage::Compact`], where the object replaced is decoded if nobody
    /// holds it any more).
    ///
    /// An object without a name cannot be keyed: it is skipped with a warning
    /// and `None` is returned.
    pub fn upsert(&mut self, object: Arc<DynamicObject>) -> Option<CachedObject> {
        self.upsert_held(object).and_then(|(_, old)| old)
    }

    /// [`upsert`](Self::upsert), handing back the cache's own handle on the
    /// object stored beside the one it replaced; `None` for an object
    /// without a name.
    pub(crate) fn upsert_held(
        &mut self,
        object: Arc<DynamicObject>,
    ) -> Option<(CachedObject, Option<CachedObject>)> {
        let Some(key) = object_key(&object) else {
            tracing::warn!("skipping an object without metadata.name");
            return None;
        };
        let (defs, digested) = self.store.plan();
        let computed = evaluate_all(&defs, &key, &object);
        let held = self.hold(&object, &digested);
        Some(self.file(&key, held, computed))
    }

    /// An object built by this cache's [`JsonBuilder`], held as it is, with
    /// its index values under `key`.
    fn hold_built(
        defs: &[Arc<IndexDef>],
        key: &str,
        object: CompactObject,
    ) -> (CachedObject, Vec<Vec<String>>) {
        let held = CachedObject(Held::Compact(CompactEntry::new(object, None)));
        let computed = evaluate_held(defs, key, &held);
        (held, computed)
    }

    /// Stores `held` under `key` with its index values `computed`; returns
    /// it beside the object it replaced.
    fn file(
        &mut self,
        key: &str,
        held: CachedObject,
        computed: Vec<Vec<String>>,
    ) -> (CachedObject, Option<CachedObject>) {
        let old = self
            .store
            .shared
            .write()
            .insert(key, held.clone(), computed);
        self.wrote(1);
        (held, old)
    }

    /// What builds this cache's objects from their JSON text, with the keys
    /// and trees of its compact objects, for [`upsert_compact`](Self::upsert_compact);
    /// `None` unless its storage is [`Storage::Compact`].
    pub(crate) fn json_builder(&self) -> Option<JsonBuilder> {
        (self.storage == Storage::Compact).then(|| JsonBuilder {
            interner: self.interner.clone(),
            store: self.store.clone(),
        })
    }

    /// [`upsert_held`](Self::upsert_held) of an object built by this
    /// cache's [`JsonBuilder`] (the cache holds it as it is); `None` for an
    /// object without a name.
    pub(crate) fn upsert_compact(
        &mut self,
        object: CompactObject,
    ) -> Option<(CachedObject, Option<CachedObject>)> {
        let Some(name) = object.name() else {
            tracing::warn!("skipping an object without metadata.name");
            return None;
        };
        let key = key_from_parts(object.namespace(), name);
        let (held, computed) = Self::hold_built(&self.store.defs(), &key, object);
        Some(self.file(&key, held, computed))
    }

    /// Removes the object with this key (a watch Deleted event) and returns
    /// its last known state.
    pub fn delete(&mut self, key: &str) -> Option<CachedObject> {
        self.store.shared.write().remove(key)
    }

    /// Removes the object with this key; returns whether there was one.
    pub fn remove(&mut self, key: &str) -> bool {
        self.store.shared.write().remove(key).is_some()
    }

    /// Makes the cache equal to `objects` (a relist) and reports the
    /// difference, for the informer to turn into Add, Update and Delete
    /// events: [`StoreWriter::begin_list`], one [`StoreWriter::list_page`]
    /// and [`StoreWriter::end_list`], their outcomes merged.
    ///
    /// An object counts as changed when its `resourceVersion` differs from the
    /// cached one, or, when neither has a `resourceVersion`, when its content
    /// differs. **Changed and new objects are stored as given; for an unchanged
    /// object the cached one is kept**, so handlers holding it still see the
    /// object the store serves, and its index values are not recomputed.
    ///
    /// Readers see the cache either entirely before or entirely after the
    /// relist. When a key appears more than once in `objects`, the last one
    /// wins; objects without a name are skipped with a warning.
    pub fn replace(&mut self, objects: Vec<Arc<DynamicObject>>) -> ReplaceOutcome {
        self.begin_list();
        let mut outcome = self.list_page(objects);
        let end = self.end_list();
        outcome.added.extend(end.added);
        outcome.updated.extend(end.updated);
        outcome.deleted = end.deleted;
        outcome.unchanged += end.unchanged;
        outcome.decoded.extend(end.decoded);
        outcome
    }

    /// Starts a list that [`StoreWriter::list_page`] hands over page by page
    /// and [`StoreWriter::end_list`] completes: afterwards the cache holds
    /// exactly the objects listed. Starting again before the end (a paged
    /// list that fell back to one full list) forgets the pages given since
    /// the previous start; what they already changed in the cache is
    /// reconciled by the new list.
    ///
    /// A list into an **empty** cache (the first list) fills it page by page:
    /// each page's objects are readable, and their Add events can be
    /// delivered, as soon as the page is given, so the list is never held
    /// whole in memory (client-go's cache fills the same way). A list into a
    /// cache that holds objects (a relist) is applied at once by
    /// [`StoreWriter::end_list`], so readers see the cache entirely before or
    /// entirely after it; until then the writer keeps the keys of the
    /// unchanged objects and the changed objects themselves, not a second
    /// copy of the cache.
    pub fn begin_list(&mut self) {
        self.store.sync.send_if_modified(|sync| {
            let was = sync.relisting;
            sync.relisting = sync.resource_version.is_some();
            was != sync.relisting
        });
        self.listing = Some(Listing {
            fill: self.store.is_empty(),
            seen: HashSet::new(),
            staged: IndexMap::new(),
        });
    }

    /// Hands over one page of the list started by [`StoreWriter::begin_list`]
    /// (started now if none is). Returns what the page changed in the cache
    /// at once: the added objects (and, for a key listed twice, the update)
    /// when the list fills an empty cache, nothing otherwise (see
    /// [`StoreWriter::end_list`]).
    pub fn list_page(&mut self, objects: Vec<Arc<DynamicObject>>) -> ReplaceOutcome {
        self.list_page_of(objects.into_iter().map(ListItem::Decoded).collect())
    }

    /// [`list_page`](Self::list_page) of objects decoded or built by this
    /// cache's [`JsonBuilder`].
    pub(crate) fn list_page_of(&mut self, objects: Vec<ListItem>) -> ReplaceOutcome {
        let fill = self.listing_fills();
        let keyed = objects.into_iter().filter_map(|object| match object.key() {
            Some(key) => Some((key, object)),
            None => {
                tracing::warn!("skipping a listed object without metadata.name");
                None
            }
        });
        if fill {
            // A key listed twice in a page: the last object, in the first
            // one's place.
            self.fill_page(keyed.collect::<IndexMap<_, _>>())
        } else {
            let keyed: Vec<_> = keyed.collect();
            let state = self.store.shared.read();
            if let Some(listing) = self.listing.as_mut() {
                for (key, object) in keyed {
                    match state.objects.get_full(key.as_str()) {
                        Some((_, stored_key, entry)) if !changed(&entry.held, &object) => {
                            listing.staged.shift_remove(key.as_str());
                            listing.seen.insert(stored_key.clone());
                        }
                        _ => {
                            listing.seen.remove(key.as_str());
                            listing.staged.insert(key, object);
                        }
                    }
                }
            }
            ReplaceOutcome::default()
        }
    }

    /// Whether the list in progress (started now if none is) fills an
    /// empty cache.
    fn listing_fills(&mut self) -> bool {
        if self.listing.is_none() {
            self.begin_list();
        }
        self.listing.as_ref().is_some_and(|l| l.fill)
    }

    pub(super) fn fill_page(
        &mut self,
        keyed: impl IntoIterator<Item = (String, ListItem)>,
    ) -> ReplaceOutcome {
        let prepared = self.prepare(keyed);
        let written = prepared.len();
        let outcome = apply(&mut self.store.shared.write(), prepared);
        self.wrote(written);
        outcome
    }

    /// Index values and stored form of objects about to be written, computed
    /// before the write lock is taken.
    pub(super) fn prepare(
        &mut self,
        keyed: impl IntoIterator<Item = (String, ListItem)>,
    ) -> Vec<Prepared> {
        let (defs, digested) = self.store.plan();
        keyed
            .into_iter()
            .map(|(key, object)| match object {
                ListItem::Decoded(object) => {
                    let computed = evaluate_all(&defs, &key, &object);
                    let held = self.hold(&object, &digested);
                    Prepared {
                        key,
                        object: Some(object),
                        held,
                        computed,
                    }
                }
                ListItem::Built(object) => {
                    let (held, computed) = Self::hold_built(&defs, &key, object);
                    Prepared {
                        key,
                        object: None,
                        held,
                        computed,
                    }
                }
            })
            .collect()
    }

    /// Hands over one page of a snapshot read back in compact form
    /// (the reflector's snapshot pages), as
    /// [`StoreWriter::list_page`] does a list's page. A cache with compact
    /// storage filling from empty takes the objects as they are, evaluating
    /// its indexes on the compact form where it can, and gives back their
    /// handles (all added); `interner`, on the last page, is what it builds
    /// its next objects with. Otherwise the objects are decoded and listed
    /// as any page.
    pub(crate) fn snapshot_page(
        &mut self,
        objects: Vec<CompactObject>,
        interner: Option<Interner>,
    ) -> SnapshotFill {
        let fill = self.listing_fills();
        if !fill || self.storage != Storage::Compact {
            let objects = objects.iter().map(|o| Arc::new(o.to_object())).collect();
            return SnapshotFill::Listed(self.list_page(objects));
        }
        if let Some(interner) = interner {
            *self.interner.lock() = interner;
        }
        let outcome = self.list_page_of(objects.into_iter().map(ListItem::Built).collect());
        SnapshotFill::Filled(outcome.added)
    }

    /// Completes the list started by [`StoreWriter::begin_list`] (an empty
    /// list if none was started: the cache empties): the cache now holds
    /// exactly the objects listed. Returns what changed that
    /// [`StoreWriter::list_page`] did not already return: new and changed
    /// objects of a relist, in list order; the last known state of the
    /// objects no longer listed; how many were unchanged.
    pub fn end_list(&mut self) -> ReplaceOutcome {
        let Some(listing) = self.listing.take() else {
            self.begin_list();
            return self.end_list();
        };
        self.store
            .sync
            .send_if_modified(|sync| std::mem::replace(&mut sync.relisting, false));
        if listing.fill {
            self.forget_dropped();
            return ReplaceOutcome::default();
        }
        let changes = self.prepare(listing.staged);
        let written = changes.len();
        let (replaced, gone) = {
            let mut state = self.store.shared.write();
            let listed: HashSet<&str> = changes.iter().map(|c| c.key.as_str()).collect();
            let gone: Vec<Key> = state
                .objects
                .keys()
                .filter(|key| !listing.seen.contains(&***key) && !listed.contains(&***key))
                .cloned()
                .collect();
            let gone: Vec<CachedObject> = gone.iter().filter_map(|key| state.remove(key)).collect();
            (apply(&mut state, changes), gone)
        };
        self.wrote(written);
        ReplaceOutcome {
            deleted: gone,
            unchanged: listing.seen.len(),
            ..replaced
        }
    }
}

/// What a snapshot page did to the cache (see [`StoreWriter::snapshot_page`]).
pub(crate) enum SnapshotFill {
    /// The objects went in as they were: their handles, all added.
    Filled(Vec<CachedObject>),
    /// The objects were decoded and listed.
    Listed(ReplaceOutcome),
}

/// An object of a list page (see [`StoreWriter::list_page_of`]).
pub(crate) enum ListItem {
    /// Decoded: the cache builds its stored form.
    Decoded(Arc<DynamicObject>),
    /// Built by the cache's [`JsonBuilder`]: held as it is.
    Built(CompactObject),
}

impl fmt::Debug for ListItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListItem::Decoded(object) => f.debug_tuple("Decoded").field(object).finish(),
            ListItem::Built(object) => f.debug_tuple("Built").field(&object.name()).finish(),
        }
    }
}

impl ListItem {
    /// The object, decoded.
    #[cfg(test)]
    pub(crate) fn to_object(&self) -> DynamicObject {
        match self {
            ListItem::Decoded(object) => (**object).clone(),
            ListItem::Built(object) => object.to_object(),
        }
    }

    /// The object's key; `None` without a name.
    pub(crate) fn key(&self) -> Option<String> {
        match self {
            ListItem::Decoded(object) => object_key(object),
            ListItem::Built(object) => Some(key_from_parts(object.namespace(), object.name()?)),
        }
    }
}

/// An object about to be written, with its stored form and index values.
pub(super) struct Prepared {
    key: String,
    /// The object as decoded, when it was.
    object: Option<Arc<DynamicObject>>,
    held: CachedObject,
    computed: Vec<Vec<String>>,
}

/// Writes prepared objects; returns what they changed.
pub(super) fn apply(state: &mut State, prepared: Vec<Prepared>) -> ReplaceOutcome {
    let mut outcome = ReplaceOutcome::default();
    outcome.decoded.reserve(prepared.len());
    for p in prepared {
        match state.insert(&p.key, p.held.clone(), p.computed) {
            Some(old) => outcome.updated.push((old, p.held)),
            None => outcome.added.push(p.held),
        }
        outcome.decoded.extend(p.object);
    }
    outcome
}

/// A list in progress (see [`StoreWriter::begin_list`]).
pub(super) struct Listing {
    /// The cache was empty when the list began: pages go straight in.
    fill: bool,
    /// Keys listed whose object is unchanged.
    seen: HashSet<Key>,
    /// Objects listed that are new or changed, by key, in list order.
    staged: IndexMap<String, ListItem>,
}

/// The fewest writes between two passes of [`StoreWriter::forget_dropped`].
pub(super) const FORGET_EVERY: usize = 1024;

pub(super) fn changed(old: &CachedObject, new: &ListItem) -> bool {
    let new_rv = match new {
        ListItem::Decoded(object) => object.metadata.resource_version.as_deref(),
        ListItem::Built(object) => object.resource_version(),
    };
    match (old.resource_version(), new_rv) {
        (Some(old_rv), Some(new_rv)) => old_rv != new_rv,
        (None, None) => old.with_object(|old| match new {
            ListItem::Decoded(new) => old != &**new,
            ListItem::Built(new) => *old != new.to_object(),
        }),
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

/// Builds the compact objects of one cache straight from the JSON the server
/// sent ([`CompactObject::from_json`]), with the keys and trees the cache's
/// objects share and the digests its change predicates read, for
/// [`StoreWriter::upsert_compact`]. Cheap to clone.
#[derive(Clone)]
pub(crate) struct JsonBuilder {
    interner: Arc<Mutex<Interner>>,
    store: Store,
}

impl JsonBuilder {
    /// The compact form of the object `json` holds, with `types`
    /// (apiVersion, kind) when it has none (list items); `None` for JSON
    /// that must be decoded instead (see [`CompactObject::from_json`]).
    pub(crate) fn build(&self, json: &str, types: (&str, &str)) -> Option<CompactObject> {
        let digested = self.store.shared.read().digested.clone();
        CompactObject::from_json_digesting(json, Some(types), &mut self.interner.lock(), &digested)
    }
}
