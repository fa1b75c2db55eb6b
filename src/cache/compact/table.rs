//! What the objects of one store share: keys and `fieldsV1` trees, each
//! numbered once ([`Tables`]), and the writer that numbers them
//! ([`Interner`]).

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use hashbrown::{DefaultHashBuilder, HashTable};

/// Slots in the first bucket of an [`AppendOnly`]; bucket `b` has
/// `FIRST << b`.
const FIRST: usize = 64;

/// Buckets of an [`AppendOnly`]: room for `FIRST * (2^BUCKETS - 1)` entries.
const BUCKETS: usize = 16;

/// An append-only list that readers read without a lock while its one
/// writer appends: an entry, once written, never moves nor changes, so an
/// id read from an object's bytes stays valid as long as the list lives.
pub(super) struct AppendOnly<T> {
    buckets: [OnceLock<Box<[OnceLock<T>]>>; BUCKETS],
    len: AtomicUsize,
}

impl<T> AppendOnly<T> {
    fn new() -> Self {
        Self {
            buckets: std::array::from_fn(|_| OnceLock::new()),
            len: AtomicUsize::new(0),
        }
    }

    /// The bucket of entry `id`, and its place in it.
    fn locate(id: usize) -> (usize, usize) {
        let n = id / FIRST + 1;
        let bucket = (usize::BITS - 1 - n.leading_zeros()) as usize;
        (bucket, id - FIRST * ((1 << bucket) - 1))
    }

    pub(super) fn get(&self, id: usize) -> Option<&T> {
        let (bucket, at) = Self::locate(id);
        self.buckets.get(bucket)?.get()?.get(at)?.get()
    }

    pub(super) fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    /// Appends `value`, giving its id; `None` when the list is full (or,
    /// were two writers to append at once, for the one that lost).
    fn push(&self, value: T) -> Option<usize> {
        let id = self.len.load(Ordering::Acquire);
        let (bucket, at) = Self::locate(id);
        let slots = self
            .buckets
            .get(bucket)?
            .get_or_init(|| (0..FIRST << bucket).map(|_| OnceLock::new()).collect());
        slots.get(at)?.set(value).ok()?;
        self.len.store(id + 1, Ordering::Release);
        Some(id)
    }
}

/// The most keys one store numbers; later keys are written into each object
/// that uses them. The end of a bucket, so that no bucket is allocated for a
/// few keys.
pub(super) const MAX_KEYS: usize = FIRST * ((1 << 10) - 1);

/// Longer keys are written into each object that uses them.
pub(super) const MAX_KEY_LEN: usize = 128;

/// The most bytes of keys one store numbers.
const MAX_KEY_BYTES: usize = 8 << 20;

/// The most shared trees one store numbers.
pub(super) const MAX_TREES: usize = FIRST * ((1 << 10) - 1);

/// The most bytes of shared trees one store holds.
const MAX_TREE_BYTES: usize = 64 << 20;

/// Keys numbered in every table, in this order, so that reads of the
/// metadata compare numbers rather than text.
pub(super) const WELL_KNOWN: [&str; 24] = [
    "apiVersion",
    "kind",
    "metadata",
    "annotations",
    "creationTimestamp",
    "deletionGracePeriodSeconds",
    "deletionTimestamp",
    "finalizers",
    "generateName",
    "generation",
    "labels",
    "managedFields",
    "name",
    "namespace",
    "ownerReferences",
    "resourceVersion",
    "selfLink",
    "uid",
    "fieldsType",
    "fieldsV1",
    "manager",
    "operation",
    "subresource",
    "time",
];

/// The numbers of [`WELL_KNOWN`]'s keys.
pub(super) mod id {
    pub(crate) const ANNOTATIONS: u32 = 3;
    pub(crate) const CREATION_TIMESTAMP: u32 = 4;
    pub(crate) const DELETION_GRACE_PERIOD_SECONDS: u32 = 5;
    pub(crate) const DELETION_TIMESTAMP: u32 = 6;
    pub(crate) const FINALIZERS: u32 = 7;
    pub(crate) const GENERATE_NAME: u32 = 8;
    pub(crate) const GENERATION: u32 = 9;
    pub(crate) const LABELS: u32 = 10;
    pub(crate) const MANAGED_FIELDS: u32 = 11;
    pub(crate) const NAME: u32 = 12;
    pub(crate) const NAMESPACE: u32 = 13;
    pub(crate) const OWNER_REFERENCES: u32 = 14;
    pub(crate) const RESOURCE_VERSION: u32 = 15;
    pub(crate) const SELF_LINK: u32 = 16;
    pub(crate) const UID: u32 = 17;
    pub(crate) const FIELDS_TYPE: u32 = 18;
    pub(crate) const FIELDS_V1: u32 = 19;
    pub(crate) const MANAGER: u32 = 20;
    pub(crate) const OPERATION: u32 = 21;
    pub(crate) const SUBRESOURCE: u32 = 22;
    pub(crate) const TIME: u32 = 23;
    pub(crate) const API_VERSION: u32 = 0;
    pub(crate) const KIND: u32 = 1;
}

/// The keys and shared trees of one store's objects, by number. Objects
/// hold an `Arc` of it: reading one needs it, and it lives as long as any
/// object of the store.
pub(super) struct Tables {
    keys: AppendOnly<Box<str>>,
    trees: AppendOnly<Tree>,
    /// Two seeds for the digests of fields (see [`Tables::digest`]).
    digest_seeds: [foldhash::quality::RandomState; 2],
}

/// A shared tree: its bytes, and, for the first trees, the value decoded
/// once for every object that is decoded (see [`Tables::tree_value`]) and
/// its JSON text, written once for every object written
/// ([`Tables::tree_json`]).
struct Tree {
    bytes: Box<[u8]>,
    decoded: OnceLock<serde_json::Value>,
    json: OnceLock<Box<[u8]>>,
}

impl From<&[u8]> for Tree {
    fn from(bytes: &[u8]) -> Self {
        Tree {
            bytes: bytes.into(),
            decoded: OnceLock::new(),
            json: OnceLock::new(),
        }
    }
}

/// The shared trees whose decoded value is kept: the first ones, which most
/// objects share (objects written by the same managers with the same fields).
/// Bounded, as a decoded tree costs ten times its bytes.
const DECODED_TREES: usize = 256;

impl Tables {
    fn new() -> Self {
        let tables = Tables {
            keys: AppendOnly::new(),
            trees: AppendOnly::new(),
            digest_seeds: Default::default(),
        };
        for key in WELL_KNOWN {
            tables.keys.push(key.into());
        }
        tables
    }

    /// A 128-bit digest of `bytes`: two 64-bit hashes, each keyed with a
    /// seed drawn at random for these tables (foldhash's quality hasher).
    /// Two different values' bytes get the same digest with a chance of
    /// about 2^-128, and one cannot be chosen to match another without the
    /// seeds, which never leave the process.
    pub(super) fn digest(&self, bytes: &[u8]) -> u128 {
        let [a, b] = &self.digest_seeds;
        (u128::from(a.hash_one(bytes)) << 64) | u128::from(b.hash_one(bytes))
    }

    /// Key `id`.
    pub(super) fn key(&self, id: usize) -> Option<&str> {
        self.keys.get(id).map(|k| &**k)
    }

    /// The bytes of shared tree `id` (one value).
    pub(super) fn tree(&self, id: usize) -> Option<&[u8]> {
        self.trees.get(id).map(|t| &*t.bytes)
    }

    /// The value of shared tree `id`, decoded by `decode` the first time it
    /// is asked for; `None` past the trees whose value is kept.
    pub(super) fn tree_value(
        &self,
        id: usize,
        decode: impl FnOnce() -> serde_json::Value,
    ) -> Option<&serde_json::Value> {
        let tree = self.trees.get(id).filter(|_| id < DECODED_TREES)?;
        Some(tree.decoded.get_or_init(decode))
    }

    /// The JSON text of shared tree `id`, once [`keep_tree_json`](Self::keep_tree_json)
    /// has kept it.
    pub(super) fn tree_json(&self, id: usize) -> Option<&[u8]> {
        self.trees.get(id)?.json.get().map(|json| &**json)
    }

    /// Keeps `json`, the JSON text of shared tree `id`, for the objects
    /// written later; only for the first trees, as [`Tables::tree_value`].
    pub(super) fn keep_tree_json(&self, id: usize, json: &[u8]) {
        if let Some(tree) = self.trees.get(id).filter(|_| id < DECODED_TREES) {
            // Written by another thread meanwhile: the same text.
            let _ = tree.json.set(json.into());
        }
    }

    /// How many keys are numbered, the well-known ones included.
    pub(super) fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// How many trees are shared.
    pub(super) fn tree_count(&self) -> usize {
        self.trees.len()
    }
}

/// What builds the objects of one store: numbers each key and shared tree
/// once, in tables its objects read.
///
/// The tables only grow, up to a bound (65,472 keys of at most 128 bytes,
/// 65,472 trees, 8 MiB of keys, 64 MiB of trees); what comes after is
/// written into each object that uses it. A `fieldsV1` tree is shared from
/// its second sighting, so that trees no other object has (a ConfigMap's own
/// data keys) do not fill the table.
pub struct Interner {
    tables: Arc<Tables>,
    /// Seeded per interner (foldhash): keys come from the server.
    hasher: DefaultHashBuilder,
    keys: HashTable<u32>,
    key_bytes: usize,
    trees: Option<TreeIndex>,
    /// The buffers objects are built in: kept between objects, so that
    /// building one allocates only the object itself.
    pub(super) scratch: super::parse::Scratch,
}

struct TreeIndex {
    ids: HashTable<u32>,
    /// Hashes of trees seen once and not shared yet.
    seen: HashTable<u64>,
    bytes: usize,
}

/// Trees seen once that are remembered; past this the memory is cleared.
const MAX_SEEN: usize = 1 << 16;

impl Default for Interner {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Interner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interner")
            .field("keys", &self.keys())
            .field("shared_trees", &self.shared_trees())
            .finish()
    }
}

impl Interner {
    /// An interner that also shares identical `fieldsV1` trees between objects.
    pub fn new() -> Self {
        Self::with_new_tables(true)
    }

    /// An interner that shares keys only: every object keeps its own
    /// `fieldsV1` trees.
    pub fn without_shared_trees() -> Self {
        Self::with_new_tables(false)
    }

    /// An interner over new tables, which hold the well-known keys.
    fn with_new_tables(share_trees: bool) -> Self {
        let tables = Arc::new(Tables::new());
        let hasher = DefaultHashBuilder::default();
        let mut keys = HashTable::new();
        for (id, key) in WELL_KNOWN.iter().enumerate() {
            keys.insert_unique(hasher.hash_one(key), id as u32, |id| {
                hasher.hash_one(WELL_KNOWN[*id as usize])
            });
        }
        Interner {
            tables,
            hasher,
            keys,
            key_bytes: 0,
            trees: share_trees.then(|| TreeIndex {
                ids: HashTable::new(),
                seen: HashTable::new(),
                bytes: 0,
            }),
            scratch: Default::default(),
        }
    }

    /// How many distinct keys are numbered (the well-known ones included).
    pub fn keys(&self) -> usize {
        self.tables.key_count()
    }

    /// How many distinct `fieldsV1` trees are shared (0 without sharing).
    pub fn shared_trees(&self) -> usize {
        self.tables.tree_count()
    }

    /// The bytes the tables hold: each key's and tree's text and its slot.
    pub fn table_bytes(&self) -> usize {
        let slot = std::mem::size_of::<OnceLock<Box<str>>>();
        let keys = (0..self.tables.key_count())
            .filter_map(|id| self.tables.key(id))
            .map(|k| k.len() + slot)
            .sum::<usize>();
        let trees = (0..self.tables.tree_count())
            .filter_map(|id| self.tables.tree(id))
            .map(|t| t.len() + slot)
            .sum::<usize>();
        keys + trees
    }

    pub(super) fn tables(&self) -> &Arc<Tables> {
        &self.tables
    }

    /// The number of `key`, numbered now if it is new and there is room.
    pub(super) fn key(&mut self, key: &str) -> Option<u32> {
        let Interner {
            tables,
            hasher,
            keys,
            key_bytes,
            ..
        } = self;
        let hash = hasher.hash_one(key);
        if let Some(id) = keys.find(hash, |id| tables.key(*id as usize) == Some(key)) {
            return Some(*id);
        }
        if key.len() > MAX_KEY_LEN
            || tables.key_count() >= MAX_KEYS
            || *key_bytes + key.len() > MAX_KEY_BYTES
        {
            return None;
        }
        let id = u32::try_from(tables.keys.push(key.into())?).ok()?;
        *key_bytes += key.len();
        keys.insert_unique(hash, id, |id| {
            hasher.hash_one(tables.key(*id as usize).unwrap_or_default())
        });
        Some(id)
    }

    /// The number of the shared tree of these bytes (one encoded value):
    /// found, or numbered now if this is its second sighting and there is
    /// room; `None` otherwise, and without sharing.
    pub(super) fn tree(&mut self, bytes: &[u8]) -> Option<u32> {
        let Interner {
            tables,
            hasher,
            trees,
            ..
        } = self;
        let index = trees.as_mut()?;
        let hash = hasher.hash_one(bytes);
        if let Some(id) = index
            .ids
            .find(hash, |id| tables.tree(*id as usize) == Some(bytes))
        {
            return Some(*id);
        }
        let seen_before = index.seen.find_entry(hash, |h| *h == hash).map(|e| {
            e.remove();
        });
        if seen_before.is_err() {
            if index.seen.len() >= MAX_SEEN {
                index.seen.clear();
            }
            index.seen.insert_unique(hash, hash, |h| *h);
            return None;
        }
        if tables.tree_count() >= MAX_TREES || index.bytes + bytes.len() > MAX_TREE_BYTES {
            return None;
        }
        let id = u32::try_from(tables.trees.push(bytes.into())?).ok()?;
        index.bytes += bytes.len();
        index.ids.insert_unique(hash, id, |id| {
            hasher.hash_one(tables.tree(*id as usize).unwrap_or_default())
        });
        Some(id)
    }

    /// Appends a key read back from a snapshot, which numbered it `id`.
    pub(super) fn adopt_key(&mut self, id: usize, key: &str) -> Result<(), String> {
        if id != self.tables.key_count() {
            return Err(format!("key {id} is out of order"));
        }
        if self.key(key) != u32::try_from(id).ok() {
            return Err(format!(
                "key {id} ({key:?}) is defined twice or past the table"
            ));
        }
        Ok(())
    }

    /// Appends a shared tree read back from a snapshot, which numbered it
    /// `id` (its bytes checked by the caller).
    pub(super) fn adopt_tree(&mut self, id: usize, bytes: &[u8]) -> Result<(), String> {
        if id != self.tables.tree_count() {
            return Err(format!("tree {id} is out of order"));
        }
        let pushed = self
            .tables
            .trees
            .push(bytes.into())
            .filter(|pushed| *pushed == id);
        if pushed.is_none() {
            return Err(format!("tree {id} is past the table"));
        }
        if let Some(index) = &mut self.trees {
            let (tables, hasher) = (&self.tables, &self.hasher);
            index.bytes += bytes.len();
            index
                .ids
                .insert_unique(hasher.hash_one(bytes), id as u32, |id| {
                    hasher.hash_one(tables.tree(*id as usize).unwrap_or_default())
                });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_only_lists_keep_every_entry_in_place() {
        let list = AppendOnly::new();
        for i in 0..5000usize {
            assert_eq!(list.push(i), Some(i));
        }
        assert_eq!(list.len(), 5000);
        assert!((0..5000).all(|i| list.get(i) == Some(&i)));
        assert_eq!(list.get(5000), None);
        assert_eq!(AppendOnly::<u8>::locate(0), (0, 0));
        assert_eq!(AppendOnly::<u8>::locate(63), (0, 63));
        assert_eq!(AppendOnly::<u8>::locate(64), (1, 0));
        assert_eq!(AppendOnly::<u8>::locate(191), (1, 127));
        assert_eq!(AppendOnly::<u8>::locate(192), (2, 0));
    }

    #[test]
    fn well_known_keys_have_their_numbers() {
        let interner = Interner::new();
        let t = interner.tables();
        for (i, key) in WELL_KNOWN.iter().enumerate() {
            assert_eq!(t.key(i), Some(*key));
        }
        assert_eq!(t.key(id::NAME as usize), Some("name"));
        assert_eq!(t.key(id::TIME as usize), Some("time"));
        assert_eq!(t.key(id::UID as usize), Some("uid"));
    }

    #[test]
    fn keys_are_numbered_once_and_long_ones_not_at_all() {
        let mut interner = Interner::new();
        let a = interner.key("spec");
        assert_eq!(interner.key("spec"), a);
        assert_eq!(interner.key("name"), Some(id::NAME));
        assert_eq!(interner.key(&"x".repeat(MAX_KEY_LEN + 1)), None);
        assert_eq!(interner.keys(), WELL_KNOWN.len() + 1);
    }

    #[test]
    fn trees_are_shared_from_their_second_sighting() {
        let mut interner = Interner::new();
        assert_eq!(interner.tree(b"tree"), None);
        let id = interner.tree(b"tree");
        assert_eq!(id, Some(0));
        assert_eq!(interner.tree(b"tree"), id);
        assert_eq!(interner.shared_trees(), 1);
        let mut plain = Interner::without_shared_trees();
        assert_eq!(plain.tree(b"tree"), None);
        assert_eq!(plain.tree(b"tree"), None);
    }
}
