//! [`InformerOptions`]: how an informer lists, watches and caches — the one
//! options type of the crate.
//!
//! The [layer docs](crate::informer) say more.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::snapshot::SnapshotOptions;
use crate::cache::projection::Projection;
pub use crate::cache::store::Storage;
use crate::cache::transform::{Transform, TransformFn};
use crate::informer::backoff::BackoffConfig;
use crate::vocabulary::duration::go;
use crate::vocabulary::scope::Namespaces;
use crate::vocabulary::setters;
use crate::vocabulary::shard::{
    HandoverFollower, ShardAssignment, ShardKey, ShardRange, StaticShard,
};
use crate::wire::list_watch::ApiListWatch;

/// Where a sharded informer's ranges come from: its key, and the ranges
/// (`None` until a shard group has its first assignment). A static shard's
/// never change.
#[derive(Debug, Clone)]
pub(crate) struct ShardFeed {
    pub(crate) key: ShardKey,
    pub(crate) ranges: watch::Receiver<Option<Vec<ShardRange>>>,
    /// Who assigns the ranges; none for a static shard.
    pub(crate) assignment: Option<ShardAssignment>,
    /// This informer's place in the source's hand-over, when it has one.
    pub(crate) follower: Option<Arc<HandoverFollower>>,
}

/// What a [factory](crate::factory) does when a resource is not served (a
/// CRD not installed yet).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "config", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum WhenNotServed {
    /// Hand out an informer that reports pending and starts as soon as the
    /// resource is served.
    #[default]
    Wait,
    /// Refuse ([`FactoryError::NotServed`](crate::factory::FactoryError::NotServed));
    /// a config file leaves this informer out and goes on with the others.
    Skip,
    /// Refuse ([`FactoryError::NotServed`](crate::factory::FactoryError::NotServed));
    /// a config file fails as a whole.
    Fail,
}

/// How an informer lists, watches and caches; see the [module docs](crate::informer).
/// Made of what the wire needs ([`WatchOptions`]), what the cache needs
/// ([`CacheOptions`]), and, beside them, the snapshots, what a factory does
/// for a resource not served, and how the objects may be shown. In a
/// config file they are one flat map.
///
/// Build with the `#[must_use]` methods, or set the public fields:
///
/// ```
/// use std::time::Duration;
/// use kube_dynamic_informer::informer::InformerOptions;
///
/// let options = InformerOptions::default()
///     .namespace("shop")
///     .label_selector("app in (web, api)")
///     .strip_managed_fields()
///     .resync(Duration::from_secs(600));
/// assert_eq!(options.watch.page_size, 500);
/// ```
///
/// The default is the defaults of [`WatchOptions`] and [`CacheOptions`], no
/// snapshot, and waiting for resources that are not served.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "config", derive(schemars::JsonSchema))]
#[serde(default, rename_all = "camelCase")]
pub struct InformerOptions {
    /// What the list and watch requests ask of the server.
    #[serde(flatten)]
    pub watch: WatchOptions,
    /// What the cache keeps, and how.
    #[serde(flatten)]
    pub cache: CacheOptions,
    /// What a factory does when the resource is not served.
    pub when_not_served: WhenNotServed,
    /// The objects hold secrets: tools that print them (`kdi`) show only
    /// their `apiVersion`, `kind` and `metadata`, without the
    /// `kubectl.kubernetes.io/last-applied-configuration` annotation, and
    /// redact index values, and snapshots are not written unless
    /// [`SnapshotOptions::include_sensitive`] says so. Core Secrets are
    /// always treated so. A factory does not share a sensitive informer
    /// with a request that does not mark its objects so.
    pub sensitive: bool,
    /// Write the cache to a file in this directory (when the informer stops
    /// and periodically), and resume from it at the next start: the
    /// informer serves the file's objects as its initial list and watches
    /// from its resourceVersion instead of listing (see [`SnapshotOptions`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<SnapshotOptions>,
}

/// What an informer's list and watch requests ask of the server, and how
/// they are retried: the part of [`InformerOptions`] the wire needs. Two
/// informers share a cache only if these are equal.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "config", derive(schemars::JsonSchema))]
#[serde(default, rename_all = "camelCase")]
pub struct WatchOptions {
    /// Watch only these namespaces; all namespaces when absent or empty.
    /// Several namespaces are listed at one resourceVersion and watched into
    /// one cache (no cluster-wide permission needed). A restriction on a
    /// cluster-scoped resource is an error, except in a factory's defaults,
    /// which cluster-scoped resources ignore.
    #[serde(skip_serializing_if = "Namespaces::is_all")]
    pub namespaces: Namespaces,
    /// Label selector for list and watch (server-side), e.g.
    /// `app in (web, api), !canary`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
    /// Field selector for list and watch (server-side), e.g.
    /// `status.phase=Running`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field_selector: Option<String>,
    /// Ask for and cache metadata only (`PartialObjectMetadata`): cuts both
    /// traffic and memory for objects whose weight is in their spec or data.
    pub metadata_only: bool,
    /// Use streaming lists (`sendInitialEvents`) where the server has them.
    /// Off by default: a paged list with the next page requested ahead
    /// syncs at least as fast (see BENCHMARKS.md), and a server or proxy that
    /// ignores `sendInitialEvents` never ends the initial events: the
    /// informer then lists in pages once that watch ends (at its server-side
    /// timeout), so it syncs late.
    pub streaming_list: bool,
    /// Objects per list page; `0` lists everything in one response.
    /// client-go: 500.
    pub page_size: u32,
    /// Shortest server-side watch timeout; each watch asks for a random
    /// timeout between this and twice this. client-go: 5 minutes.
    #[serde(with = "go")]
    #[cfg_attr(feature = "config", schemars(schema_with = "go::schema"))]
    pub min_watch_timeout: Duration,
    /// A synced informer that has received no event, bookmark or list for
    /// this long reports [`InformerStatus::Stale`](crate::informer::status::InformerStatus::Stale)
    /// (and `kdi_informer_stale` 1) until the next one arrives. The API
    /// server sends a bookmark on a quiet watch about once a minute, and a
    /// watch ends (and is reopened) every `minWatchTimeout`–twice that, so
    /// silence beyond a few minutes means the watch is not delivering.
    /// Zero turns the signal off. Default: 3 minutes.
    #[serde(with = "go")]
    #[cfg_attr(feature = "config", schemars(schema_with = "go::schema"))]
    pub stale_after: Duration,
    /// Retry backoff after list and watch errors.
    pub backoff: BackoffConfig,
}

/// What an informer's cache keeps, and how it holds and re-delivers it:
/// the part of [`InformerOptions`] the cache needs. Two informers share a
/// cache only if these are equal. The default is as client-go's
/// informers: no transform, no resync, whole objects; the compact storage.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "config", derive(schemars::JsonSchema))]
#[serde(default, rename_all = "camelCase")]
pub struct CacheOptions {
    /// Default resync period of handlers, e.g. `30s`, `10m`; `0` (the
    /// default, as client-go's `NewSharedIndexInformer(..., 0, ...)`)
    /// disables resync. Resync re-delivers the cache from memory; it never
    /// contacts the server.
    #[serde(with = "go")]
    #[cfg_attr(feature = "config", schemars(schema_with = "go::schema"))]
    pub resync: Duration,
    /// Remove `metadata.managedFields` before caching (often the largest
    /// part of an object, rarely read).
    pub strip_managed_fields: bool,
    /// Keep only these fields of each object, as a list of paths
    /// (`[spec.nodeName, metadata.labels]`), applied after
    /// `stripManagedFields`; `apiVersion`, `kind` and the metadata that
    /// identifies an object (name, namespace, uid, resourceVersion,
    /// deletionTimestamp) are always kept, other metadata only when listed.
    /// Indexes, listers and handlers see the projected object. An empty
    /// list keeps only the fields always kept; without a list, objects are
    /// cached whole. See [`Projection`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub projection: Option<Projection>,
    /// A transform applied to each object before caching, after
    /// `stripManagedFields` and `projection`. Not available in config files.
    #[serde(skip)]
    pub transform: Option<Transform>,
    /// How the cache holds its objects: `compact` (the default: a fraction
    /// of the memory) or `objects` (decoded: less CPU an update, every
    /// `object()` a pointer copy).
    pub storage: Storage,
    /// Keep only one static shard of the objects, `INDEX/COUNT` (`1/4`):
    /// those whose [`shardKey`](Self::shard_key) hashes into part INDEX of
    /// COUNT equal parts of the hash space (see [`crate::vocabulary`]). Run
    /// COUNT replicas, each with its own INDEX, to split a resource.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<StaticShard>,
    /// The field a sharded informer hashes: `uid` (the default) or
    /// `namespace`.
    #[serde(skip_serializing_if = "is_default_key")]
    pub shard_key: ShardKey,
    /// Keep only the slots this member of a shard group holds, and follow
    /// them as members join and leave. A static `shard` wins over it (so
    /// `shard: 0/1` keeps everything in an informer of a group). Not
    /// available in config files, which name their group once
    /// (`shardGroup`).
    #[serde(skip)]
    pub shard_group: Option<ShardAssignment>,
}

fn is_default_key(key: &ShardKey) -> bool {
    *key == ShardKey::default()
}

impl Default for WatchOptions {
    /// As client-go's informers: all namespaces, no selectors, pages of 500,
    /// list-then-watch, watch timeouts of 5–10 minutes, client-go's backoff
    /// (with half its jitter), full objects.
    fn default() -> Self {
        Self {
            namespaces: Namespaces::All,
            label_selector: None,
            field_selector: None,
            metadata_only: false,
            streaming_list: false,
            page_size: 500,
            min_watch_timeout: Duration::from_secs(300),
            stale_after: Duration::from_secs(180),
            backoff: BackoffConfig::default(),
        }
    }
}

impl InformerOptions {
    setters! {
        /// Writes the cache to snapshots and resumes from them (see
        /// [`SnapshotOptions`]).
        snapshot(snapshot: SnapshotOptions) => Some(snapshot);

        /// Sets what a factory does when the resource is not served.
        when_not_served(when: WhenNotServed) => when;

        /// Marks the objects as holding secrets (see the field).
        sensitive(sensitive: bool) => sensitive;
    }

    setters! {
        in watch:
        /// Sets the namespaces to watch.
        namespaces(namespaces: Namespaces) => namespaces;

        /// Sets the label selector (`""`: everything).
        label_selector(selector: impl Into<String>) => Some(selector.into());

        /// Sets the field selector (`""`: everything).
        field_selector(selector: impl Into<String>) => Some(selector.into());

        /// Turns metadata-only mode on or off.
        metadata_only(enabled: bool) => enabled;

        /// Turns streaming lists on or off.
        streaming_list(enabled: bool) => enabled;

        /// Sets the list page size (0: unpaged). Page *k + 1* is requested as
        /// soon as page *k* has arrived, so the server prepares it while page *k*
        /// is decoded.
        page_size(page_size: u32) => page_size;

        /// Sets the shortest server-side watch timeout.
        min_watch_timeout(timeout: Duration) => timeout;

        /// Sets how long a synced informer may go without an event, bookmark or
        /// list before it reports itself stale (zero: never).
        stale_after(silence: Duration) => silence;

        /// Sets the retry backoff.
        backoff(backoff: BackoffConfig) => backoff;
    }

    setters! {
        in cache:
        /// Sets the default resync period (zero disables resync).
        resync(period: Duration) => period;

        /// Keeps only the fields `projection` names (after managedFields
        /// stripping, before the transform).
        ///
        /// ```
        /// use kube_dynamic_informer::informer::InformerOptions;
        /// use kube_dynamic_informer::cache::Projection;
        ///
        /// let options = InformerOptions::default()
        ///     .projection(Projection::new(["spec.nodeName", "metadata.labels"])?);
        /// # Ok::<(), kube_dynamic_informer::cache::CacheError>(())
        /// ```
        projection(projection: Projection) => Some(projection);

        /// Sets the transform applied before caching (after managedFields
        /// stripping and the projection, when they are on).
        transform(transform: Transform) => Some(transform);

        /// Sets how the cache holds its objects.
        storage(storage: Storage) => storage;

        /// Keeps only static shard `shard` (see the field).
        ///
        /// ```
        /// use kube_dynamic_informer::informer::InformerOptions;
        /// use kube_dynamic_informer::vocabulary::{ShardKey, StaticShard};
        ///
        /// let options = InformerOptions::default()
        ///     .shard(StaticShard::new(1, 4)?)
        ///     .shard_key(ShardKey::Namespace);
        /// # Ok::<(), kube_dynamic_informer::vocabulary::VocabularyError>(())
        /// ```
        shard(shard: StaticShard) => Some(shard);

        /// Sets the field a sharded informer hashes.
        shard_key(key: ShardKey) => key;

        /// Keeps only the slots this member of `group` holds (see the field).
        shard_group(group: impl Into<ShardAssignment>) => Some(group.into());

    }

    /// Watches only this namespace.
    #[must_use]
    pub fn namespace(self, namespace: impl Into<String>) -> Self {
        self.namespaces(Namespaces::only([namespace.into()]))
    }

    /// Watches all namespaces.
    #[must_use]
    pub fn all_namespaces(self) -> Self {
        self.namespaces(Namespaces::All)
    }

    /// Strips `metadata.managedFields` before caching.
    #[must_use]
    pub fn strip_managed_fields(mut self) -> Self {
        self.cache.strip_managed_fields = true;
        self
    }

    /// Removes the transform and the projection, and turns managedFields
    /// stripping off: whole objects are cached.
    #[must_use]
    pub fn no_transform(mut self) -> Self {
        self.cache.transform = None;
        self.cache.projection = None;
        self.cache.strip_managed_fields = false;
        self
    }

    /// These options with empty selectors as none and selectors trimmed, so
    /// that equal requests compare equal.
    #[must_use]
    pub(crate) fn normalized(mut self) -> Self {
        let clean = |s: Option<String>| {
            s.map(|s| s.trim().to_owned())
                .filter(|s: &String| !s.is_empty())
        };
        self.watch.label_selector = clean(self.watch.label_selector);
        self.watch.field_selector = clean(self.watch.field_selector);
        self
    }

    /// `lw` asking the server for what these options ask: the one place a
    /// list-watch of the API server is set up from options.
    pub(crate) fn list_watch(&self, lw: ApiListWatch) -> ApiListWatch {
        lw.namespaces(self.watch.namespaces.clone())
            .metadata_only(self.watch.metadata_only)
            .decode_lists_apart(self.cache.storage == Storage::Compact)
            .lists_as_json(self.cache.builds_from_json())
    }

    /// What a factory shares informers by: the wire's and the cache's
    /// options, and the `sensitive` mark (a sensitive cache is not written
    /// to disk, so it is not shared with a request that would write it).
    /// Requests that differ only in what a factory does when the resource
    /// is not served, or where snapshots go, get one informer.
    #[must_use]
    pub(crate) fn sharing_key(&self) -> (WatchOptions, CacheOptions, bool) {
        (self.watch.clone(), self.cache.clone(), self.sensitive)
    }
}

impl CacheOptions {
    /// Where this informer's shard ranges come from, when it is sharded: a
    /// static shard, else a shard group.
    pub(crate) fn shard_ranges(&self) -> Option<ShardFeed> {
        if let Some(shard) = self.shard {
            let (tx, ranges) = watch::channel(Some(vec![shard.range()]));
            drop(tx);
            return Some(ShardFeed {
                key: self.shard_key,
                ranges,
                assignment: None,
                follower: None,
            });
        }
        self.shard_group.as_ref().map(|group| ShardFeed {
            key: self.shard_key,
            ranges: group.ranges(),
            assignment: Some(group.clone()),
            follower: group.handover().map(|h| Arc::new(h.follow())),
        })
    }

    /// The transform steps these options ask for, as one function.
    pub(crate) fn transform_fn(&self) -> Option<TransformFn> {
        crate::cache::transform::pipeline(
            self.strip_managed_fields,
            self.projection.as_ref(),
            self.transform.as_ref(),
        )
    }

    /// Whether the cache builds its objects straight from the server's
    /// JSON: compact storage with nothing to transform (a transform takes
    /// a decoded object). The list-watch then hands list items on as JSON,
    /// and the reflector builds them and the watched objects with the
    /// cache's builder.
    pub(crate) fn builds_from_json(&self) -> bool {
        self.storage == Storage::Compact && self.transform_fn().is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_read_shards_from_json() {
        let o: InformerOptions = serde_json::from_value(serde_json::json!({
            "shard": "1/4", "shardKey": "namespace",
        }))
        .unwrap();
        assert_eq!(o.cache.shard, Some(StaticShard::new(1, 4).unwrap()));
        assert_eq!(o.cache.shard_key, ShardKey::Namespace);
        let back = serde_json::to_value(&o).unwrap();
        assert_eq!(back["shard"], "1/4");
        let err = serde_json::from_value::<InformerOptions>(serde_json::json!({ "shard": "4/4" }))
            .unwrap_err();
        assert!(err.to_string().contains("out of range"), "{err}");
    }

    #[test]
    fn equal_requests_are_equal_options() {
        let a = InformerOptions::default()
            .strip_managed_fields()
            .label_selector(" app=x ");
        let b = InformerOptions::default()
            .label_selector("app=x")
            .strip_managed_fields();
        assert_eq!(a.clone().normalized(), b.clone().normalized());
        let t = |name: &str| Transform::new(name.to_string(), |o| o);
        assert_eq!(
            InformerOptions::default().transform(t("x")),
            InformerOptions::default().transform(t("x"))
        );
        assert_ne!(
            InformerOptions::default().transform(t("x")),
            InformerOptions::default().transform(t("y"))
        );
        assert_eq!(
            InformerOptions::default().label_selector("  ").normalized(),
            InformerOptions::default()
        );
    }

    #[test]
    fn projections_keeping_the_same_fields_are_equal_options() {
        use std::collections::HashSet;
        let with =
            |paths: &[&str]| InformerOptions::default().projection(Projection::new(paths).unwrap());
        let a = with(&["spec.nodeName", "metadata.labels"]);
        let b = with(&[
            "metadata.labels",
            r#"metadata.labels["app"]"#,
            "spec['nodeName']",
        ]);
        assert_eq!(a, b);
        let requests: HashSet<InformerOptions> = [
            a.clone(),
            b,
            with(&["spec"]),
            with(&[]),
            InformerOptions::default(),
        ]
        .into();
        assert_eq!(requests.len(), 4, "{requests:?}");
        assert!(requests.contains(&a));
        assert_ne!(
            with(&[]),
            InformerOptions::default(),
            "keeps less than no projection"
        );
        assert_eq!(a.no_transform(), InformerOptions::default());
    }

    #[test]
    fn a_projection_reads_from_json_as_its_paths_and_checks_them() {
        let o: InformerOptions = serde_json::from_value(serde_json::json!({
            "projection": ["spec.nodeName", "metadata.labels['app.kubernetes.io/name']"],
        }))
        .unwrap();
        let paths = o.cache.projection.as_ref().unwrap().paths();
        assert_eq!(
            paths,
            [
                "metadata.labels[\"app.kubernetes.io/name\"]",
                "spec.nodeName"
            ]
        );
        let back = serde_json::to_value(&o).unwrap();
        assert_eq!(back["projection"], serde_json::json!(paths));
        assert!(
            serde_json::to_value(InformerOptions::default())
                .unwrap()
                .get("projection")
                .is_none()
        );
        let err = serde_json::from_value::<InformerOptions>(serde_json::json!({
            "projection": ["spec.nodeName", "spec/nodeName"],
        }))
        .unwrap_err();
        assert!(
            err.to_string().contains("\"spec/nodeName\", column 5"),
            "{err}"
        );
    }

    #[test]
    fn options_read_from_json_with_go_durations() {
        let o: InformerOptions = serde_json::from_value(serde_json::json!({
            "namespaces": ["b", "a"],
            "resync": "1m30s",
            "stripManagedFields": true,
            "minWatchTimeout": "2s",
            "backoff": { "initial": "100ms", "max": "1s" },
            "whenNotServed": "skip",
        }))
        .unwrap();
        assert_eq!(o.watch.namespaces, Namespaces::only(["a", "b"]));
        assert_eq!(o.cache.resync, Duration::from_secs(90));
        assert!(o.cache.strip_managed_fields);
        assert_eq!(o.watch.min_watch_timeout, Duration::from_secs(2));
        assert_eq!(o.watch.backoff.initial, Duration::from_millis(100));
        assert_eq!(
            o.watch.backoff.reset_after,
            BackoffConfig::default().reset_after
        );
        assert_eq!(o.when_not_served, WhenNotServed::Skip);
        assert_eq!(o.watch.page_size, 500);
        let back: InformerOptions =
            serde_json::from_value(serde_json::to_value(&o).unwrap()).unwrap();
        assert_eq!(back, o);
        let err =
            serde_json::from_value::<InformerOptions>(serde_json::json!({ "resync": "1e400h" }))
                .unwrap_err();
        assert!(err.to_string().contains("1e400h"), "{err}");
    }
}
