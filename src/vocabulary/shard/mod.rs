//! Sharding: one resource's cache split across replicas, each keeping the
//! objects whose key hashes into its ranges.
//!
//! The [layer docs](crate::vocabulary) say more.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use kube_core::DynamicObject;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

mod handover;

use crate::vocabulary::VocabularyError;
pub use handover::{Handover, HandoverFollower, Settlement};

/// Where the ranges of a dynamically sharded informer come from: a member
/// of a shard group (`ShardGroup` in the declarative layer) or any other
/// coordinator an application writes.
///
/// The informer follows [`ranges`](Self::ranges): it waits for the first
/// `Some`, keeps the objects whose hash falls in the ranges, and moves
/// objects in and out of its cache when they change.
pub trait ShardSource: Send + Sync {
    /// What tells two sources apart: informers with equal options and equal
    /// source identities share one cache in a factory.
    fn identity(&self) -> String;
    /// The ranges held now and every later change; `None` until the first
    /// assignment.
    fn ranges(&self) -> watch::Receiver<Option<Vec<ShardRange>>>;
    /// Where the source stands, in words, for status lines: e.g. `member
    /// pod-1 of shard group pods: active, 3 slots`.
    fn describe(&self) -> String;
    /// Lets go of what the source holds so that others take it over at
    /// once (a shard group member releases its Leases), when the process
    /// stops. Nothing by default.
    fn release(&self) -> futures::future::BoxFuture<'static, ()> {
        Box::pin(async {})
    }
    /// The source's [`Handover`], when it waits for its informers' handlers
    /// before letting a range go (a shard group member does); `None` by
    /// default.
    fn handover(&self) -> Option<Handover> {
        None
    }
}

/// A handle to a [`ShardSource`], as informer options hold it: cheap to
/// clone, equal when the sources' identities are.
#[derive(Clone)]
pub struct ShardAssignment(Arc<dyn ShardSource>);

impl ShardAssignment {
    /// Wraps a source.
    pub fn new(source: impl ShardSource + 'static) -> Self {
        Self(Arc::new(source))
    }

    /// The source's ranges (see [`ShardSource::ranges`]).
    #[must_use]
    pub fn ranges(&self) -> watch::Receiver<Option<Vec<ShardRange>>> {
        self.0.ranges()
    }

    /// The source's words (see [`ShardSource::describe`]).
    #[must_use]
    pub fn describe(&self) -> String {
        self.0.describe()
    }

    /// Lets go of what the source holds (see [`ShardSource::release`]).
    pub async fn release(&self) {
        self.0.release().await;
    }

    /// The source's hand-over (see [`ShardSource::handover`]).
    #[must_use]
    pub fn handover(&self) -> Option<Handover> {
        self.0.handover()
    }
}

impl fmt::Debug for ShardAssignment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ShardAssignment")
            .field(&self.0.identity())
            .finish()
    }
}

impl PartialEq for ShardAssignment {
    fn eq(&self, other: &Self) -> bool {
        self.0.identity() == other.0.identity()
    }
}

impl Eq for ShardAssignment {}

impl std::hash::Hash for ShardAssignment {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.identity().hash(state);
    }
}

/// The exclusive upper end of the hash space, 2^64.
pub const HASH_SPACE_END: u128 = 1 << 64;

/// 64-bit FNV-1a of `bytes`, as the API server hashes a shard key (its
/// `sharding.HashField`).
///
/// ```
/// use kube_dynamic_informer::vocabulary::fnv1a_64;
/// assert_eq!(fnv1a_64(b""), 0xcbf29ce484222325);
/// assert_eq!(fnv1a_64(b"a"), 0xaf63dc4c8601ec8c);
/// ```
#[must_use]
pub fn fnv1a_64(bytes: &[u8]) -> u64 {
    fnv1a_64_extend(FNV1A_64_OFFSET, bytes)
}

/// FNV-1a 64's starting value, for [`fnv1a_64_extend`].
pub(crate) const FNV1A_64_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a 64 fed piece by piece: the hash of what `hash` was the hash of,
/// followed by `bytes`.
pub(crate) fn fnv1a_64_extend(hash: u64, bytes: &[u8]) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(hash, |h, b| (h ^ u64::from(*b)).wrapping_mul(PRIME))
}

/// Which field of an object decides its shard.
///
/// ```
/// use kube_dynamic_informer::vocabulary::{ShardKey, fnv1a_64};
///
/// let mut pod = kube_core::DynamicObject::new("web-0", &kube_core::ApiResource::erase::<
///     k8s_openapi::api::core::v1::Pod,
/// >(&()));
/// pod.metadata.namespace = Some("shop".into());
/// assert_eq!(ShardKey::Namespace.hash(&pod), fnv1a_64(b"shop"));
/// assert_eq!(ShardKey::Namespace.field_path(), "object.metadata.namespace");
/// assert_eq!("uid".parse::<ShardKey>()?, ShardKey::Uid);
/// # Ok::<(), kube_dynamic_informer::vocabulary::VocabularyError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "config", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum ShardKey {
    /// `metadata.uid`: objects spread evenly, whatever their namespace.
    #[default]
    Uid,
    /// `metadata.namespace`: a namespace's objects stay together (a
    /// cluster-scoped object's namespace is empty, so all of them land in
    /// one shard). Shards are only as even as the namespaces: a few large
    /// ones weigh on their shards, and FNV-1a spreads names that differ in
    /// a last character or two (`team-1`, `team-2`) less evenly than it
    /// spreads random UIDs.
    Namespace,
}

impl ShardKey {
    /// The field as the server's selector names it.
    #[must_use]
    pub fn field_path(self) -> &'static str {
        match self {
            ShardKey::Uid => "object.metadata.uid",
            ShardKey::Namespace => "object.metadata.namespace",
        }
    }

    /// The hash of `object`'s key field (an absent field hashes as empty,
    /// as on the server).
    #[must_use]
    pub fn hash(self, object: &DynamicObject) -> u64 {
        let meta = &object.metadata;
        self.hash_parts(meta.uid.as_deref(), meta.namespace.as_deref())
    }

    /// [`hash`](Self::hash) of an object known by its uid and namespace.
    pub(crate) fn hash_parts(self, uid: Option<&str>, namespace: Option<&str>) -> u64 {
        let value = match self {
            ShardKey::Uid => uid,
            ShardKey::Namespace => namespace,
        };
        fnv1a_64(value.unwrap_or("").as_bytes())
    }
}

impl fmt::Display for ShardKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ShardKey::Uid => "uid",
            ShardKey::Namespace => "namespace",
        })
    }
}

impl FromStr for ShardKey {
    type Err = VocabularyError;

    fn from_str(s: &str) -> Result<Self, VocabularyError> {
        match s.trim() {
            "uid" | "object.metadata.uid" => Ok(ShardKey::Uid),
            "namespace" | "object.metadata.namespace" => Ok(ShardKey::Namespace),
            other => Err(VocabularyError::ShardKey(other.to_owned())),
        }
    }
}

/// A half-open range `[start, end)` of the 64-bit hash space.
///
/// ```
/// use kube_dynamic_informer::vocabulary::ShardRange;
/// let upper_half = ShardRange::new(1 << 63, 1 << 64)?;
/// assert!(upper_half.contains(u64::MAX));
/// assert!(!upper_half.contains(0));
/// # Ok::<(), kube_dynamic_informer::vocabulary::VocabularyError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShardRange {
    start: u64,
    end: u128,
}

impl ShardRange {
    /// The range `[start, end)`; `end` may be 2^64 ([`HASH_SPACE_END`]).
    ///
    /// # Errors
    /// `start >= end`, or `end` past 2^64.
    pub fn new(start: u64, end: u128) -> Result<Self, VocabularyError> {
        if end > HASH_SPACE_END {
            return Err(VocabularyError::EndTooLarge(end));
        }
        if u128::from(start) >= end {
            return Err(VocabularyError::EmptyRange { start, end });
        }
        Ok(Self { start, end })
    }

    /// The whole hash space.
    #[must_use]
    pub fn all() -> Self {
        Self {
            start: 0,
            end: HASH_SPACE_END,
        }
    }

    /// Part `index` of `count` equal parts of the hash space (the last one
    /// takes the remainder).
    ///
    /// # Errors
    /// `count` is 0, or `index >= count`.
    pub fn part(index: u32, count: u32) -> Result<Self, VocabularyError> {
        if count == 0 {
            return Err(VocabularyError::ZeroCount);
        }
        if index >= count {
            return Err(VocabularyError::ShardIndexOutOfRange { index, count });
        }
        let bound = |i: u32| HASH_SPACE_END * u128::from(i) / u128::from(count);
        let start = u64::try_from(bound(index)).unwrap_or(u64::MAX);
        Ok(Self {
            start,
            end: bound(index + 1),
        })
    }

    /// The first hash in the range.
    #[must_use]
    pub fn start(&self) -> u64 {
        self.start
    }

    /// The end of the range (exclusive; up to 2^64).
    #[must_use]
    pub fn end(&self) -> u128 {
        self.end
    }

    /// Whether `hash` is in the range.
    #[must_use]
    pub fn contains(&self, hash: u64) -> bool {
        hash >= self.start && u128::from(hash) < self.end
    }

    /// Whether the two ranges share a hash.
    #[must_use]
    pub fn overlaps(&self, other: &ShardRange) -> bool {
        u128::from(self.start) < other.end && u128::from(other.start) < self.end
    }
}

/// Writes a bound as the server reads it: `0x` and 16 lowercase hex digits,
/// or `0x10000000000000000` for 2^64.
fn hex_bound(v: u128) -> String {
    if v >= HASH_SPACE_END {
        "0x10000000000000000".to_owned()
    } else {
        format!("0x{v:016x}")
    }
}

/// A shard key and the hash ranges of one shard: what an informer keeps,
/// and the `shardSelector` it sends.
///
/// Ranges are kept sorted and merged. A selector without ranges keeps
/// nothing (a group member that holds no slot); it is never sent.
///
/// ```
/// use kube_dynamic_informer::vocabulary::{ShardKey, ShardRange, ShardSelector};
/// let s = ShardSelector::new(ShardKey::Uid, [ShardRange::part(1, 4)?]);
/// assert_eq!(
///     s.to_string(),
///     "shardRange(object.metadata.uid, '0x4000000000000000', '0x8000000000000000')"
/// );
/// assert_eq!(s.to_string().parse::<ShardSelector>()?, s);
/// # Ok::<(), kube_dynamic_informer::vocabulary::VocabularyError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ShardSelector {
    key: ShardKey,
    ranges: Vec<ShardRange>,
}

impl ShardSelector {
    /// The selector of `ranges` (in any order, overlapping or not) over
    /// `key`.
    #[must_use]
    pub fn new(key: ShardKey, ranges: impl IntoIterator<Item = ShardRange>) -> Self {
        let mut ranges: Vec<ShardRange> = ranges.into_iter().collect();
        ranges.sort();
        let mut merged: Vec<ShardRange> = Vec::with_capacity(ranges.len());
        for r in ranges {
            match merged.last_mut() {
                Some(last) if u128::from(r.start) <= last.end => last.end = last.end.max(r.end),
                _ => merged.push(r),
            }
        }
        Self {
            key,
            ranges: merged,
        }
    }

    /// The key field.
    #[must_use]
    pub fn key(&self) -> ShardKey {
        self.key
    }

    /// The ranges, sorted and merged.
    #[must_use]
    pub fn ranges(&self) -> &[ShardRange] {
        &self.ranges
    }

    /// True when the selector keeps nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Whether a hash is in one of the ranges.
    #[must_use]
    pub fn contains(&self, hash: u64) -> bool {
        self.ranges.iter().any(|r| r.contains(hash))
    }

    /// Whether `object` belongs to this shard.
    #[must_use]
    pub fn matches(&self, object: &DynamicObject) -> bool {
        self.contains(self.key.hash(object))
    }

    /// [`matches`](Self::matches) for an object known by its uid and
    /// namespace.
    pub(crate) fn matches_parts(&self, uid: Option<&str>, namespace: Option<&str>) -> bool {
        self.contains(self.key.hash_parts(uid, namespace))
    }

    /// The fraction of the hash space the ranges cover (0 to 1).
    #[must_use]
    pub fn share(&self) -> f64 {
        let covered: u128 = self
            .ranges
            .iter()
            .map(|r| r.end - u128::from(r.start))
            .sum();
        #[allow(clippy::cast_precision_loss)]
        let share = covered as f64 / HASH_SPACE_END as f64;
        share
    }
}

impl fmt::Display for ShardSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(" || ")?;
            }
            write!(
                f,
                "shardRange({}, '{}', '{}')",
                self.key.field_path(),
                hex_bound(u128::from(r.start)),
                hex_bound(r.end)
            )?;
        }
        Ok(())
    }
}

impl FromStr for ShardSelector {
    type Err = VocabularyError;

    /// Reads the server's grammar: `shardRange(FIELD, 'START', 'END')`
    /// terms joined by `||`, one field for all, bounds `0x` and 16 hex
    /// digits (or `0x10000000000000000`), in single or double quotes.
    fn from_str(s: &str) -> Result<Self, VocabularyError> {
        let fail = |reason: String| VocabularyError::ShardSelector {
            selector: s.to_owned(),
            reason,
        };
        if s.trim().is_empty() {
            return Err(fail("it is empty".to_owned()));
        }
        let mut key = None;
        let mut ranges = Vec::new();
        for term in s.split("||") {
            let term = term.trim();
            let args = term
                .strip_prefix("shardRange")
                .map(str::trim_start)
                .and_then(|t| t.strip_prefix('('))
                .and_then(|t| t.trim_end().strip_suffix(')'))
                .ok_or_else(|| {
                    fail(format!("{term:?} is not shardRange(field, 'start', 'end')"))
                })?;
            let parts: Vec<&str> = args.split(',').map(str::trim).collect();
            let [field, start, end] = parts.as_slice() else {
                return Err(fail(format!(
                    "shardRange takes 3 arguments, {term:?} has {}",
                    parts.len()
                )));
            };
            let this_key = [ShardKey::Uid, ShardKey::Namespace]
                .into_iter()
                .find(|k| k.field_path() == *field)
                .ok_or_else(|| {
                    fail(format!(
                        "unsupported field {field:?} (object.metadata.uid or object.metadata.namespace)"
                    ))
                })?;
            if key.is_some_and(|k| k != this_key) {
                return Err(fail("all ranges must use the same field".to_owned()));
            }
            key = Some(this_key);
            let start = parse_bound(start).map_err(&fail)?;
            let end = parse_bound(end).map_err(&fail)?;
            let start = u64::try_from(start)
                .map_err(|_| fail("a range cannot start at 2^64".to_owned()))?;
            ranges.push(ShardRange::new(start, end).map_err(|e| fail(e.to_string()))?);
        }
        Ok(ShardSelector::new(key.unwrap_or_default(), ranges))
    }
}

/// One quoted bound: `'0x<16 hex digits>'` or `'0x10000000000000000'`.
fn parse_bound(quoted: &str) -> Result<u128, String> {
    let inner = quoted
        .strip_prefix('\'')
        .and_then(|q| q.strip_suffix('\''))
        .or_else(|| quoted.strip_prefix('"').and_then(|q| q.strip_suffix('"')))
        .ok_or_else(|| format!("bound {quoted} is not a quoted string"))?;
    let hex = inner
        .strip_prefix("0x")
        .ok_or_else(|| format!("bound {inner:?} lacks the 0x prefix"))?;
    if !hex
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        || hex.is_empty()
    {
        return Err(format!("bound {inner:?} is not lowercase hex"));
    }
    match hex.len() {
        16 => u128::from_str_radix(hex, 16).map_err(|e| format!("bound {inner:?}: {e}")),
        17 if inner == "0x10000000000000000" => Ok(HASH_SPACE_END),
        _ => Err(format!(
            "bound {inner:?} must have 16 hex digits (or be 0x10000000000000000)"
        )),
    }
}

/// Shard `index` of `count` equal parts of the hash space: the static way
/// to split a resource across replicas. Written `I/N` (`1/4`), in config
/// files and on the command line.
///
/// ```
/// use kube_dynamic_informer::vocabulary::StaticShard;
/// let shard: StaticShard = "1/4".parse()?;
/// assert_eq!((shard.index(), shard.count()), (1, 4));
/// assert!("4/4".parse::<StaticShard>().is_err());
/// assert!("0/0".parse::<StaticShard>().is_err());
/// # Ok::<(), kube_dynamic_informer::vocabulary::VocabularyError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StaticShard {
    index: u32,
    count: u32,
}

impl StaticShard {
    /// Shard `index` (from 0) of `count`.
    ///
    /// # Errors
    /// `count` is 0, or `index >= count`.
    pub fn new(index: u32, count: u32) -> Result<Self, VocabularyError> {
        ShardRange::part(index, count)?;
        Ok(Self { index, count })
    }

    /// The shard's index, from 0.
    #[must_use]
    pub fn index(&self) -> u32 {
        self.index
    }

    /// The number of shards.
    #[must_use]
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The shard's range of the hash space.
    #[must_use]
    pub fn range(&self) -> ShardRange {
        // Checked by the constructor.
        ShardRange::part(self.index, self.count).unwrap_or_else(|_| ShardRange::all())
    }

    /// The selector of this shard over `key`.
    #[must_use]
    pub fn selector(&self, key: ShardKey) -> ShardSelector {
        ShardSelector::new(key, [self.range()])
    }
}

impl fmt::Display for StaticShard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for StaticShard {
    type Err = VocabularyError;

    fn from_str(s: &str) -> Result<Self, VocabularyError> {
        let syntax = || VocabularyError::ShardSyntax(s.to_owned());
        let (i, n) = s.trim().split_once('/').ok_or_else(syntax)?;
        let i: u32 = i.trim().parse().map_err(|_| syntax())?;
        let n: u32 = n.trim().parse().map_err(|_| syntax())?;
        StaticShard::new(i, n)
    }
}

impl Serialize for StaticShard {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for StaticShard {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(feature = "config")]
impl schemars::JsonSchema for StaticShard {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "StaticShard".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^[0-9]+/[0-9]+$",
            "description": "Shard INDEX/COUNT (from 0): this informer keeps part INDEX of COUNT equal parts of the hash space, e.g. 1/4."
        })
    }
}

/// Where a sharded informer's objects were filtered on its last list page
/// that told.
///
/// A server that applies the selector says so in the list's `shardInfo` —
/// for built-in resources: Kubernetes v1.37 filters custom resources as
/// well but does not echo the selector on their lists. A page without
/// `shardInfo` whose objects all belong to the shard counts as filtered by
/// the server; a page with objects of other shards, as filtered here.
///
/// ```no_run
/// # fn demo(informer: kube_dynamic_informer::informer::SharedInformer) {
/// use kube_dynamic_informer::vocabulary::ShardFiltering;
///
/// if informer.stats().shard_filtering() == Some(ShardFiltering::Client) {
///     eprintln!("the server sends every object; this replica drops most of them");
/// }
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShardFiltering {
    /// The server applied the selector: only this shard's objects crossed
    /// the network.
    Server,
    /// The server sent everything; the informer dropped the other shards'
    /// objects itself.
    Client,
}

impl fmt::Display for ShardFiltering {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ShardFiltering::Server => "server-side",
            ShardFiltering::Client => "client-side",
        })
    }
}

#[cfg(test)]
mod tests;
