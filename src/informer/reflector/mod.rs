//! The list/watch loop that keeps a cache in step with the API server.
//!
//! The [layer docs](crate::informer) say more.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::StreamExt;
use kube_client::api::{ListParams, WatchParams};
use kube_core::{ApiResource, DynamicObject, ObjectMeta, TypeMeta};
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::cache::store::{JsonBuilder, ListItem};
use crate::cache::transform::TransformFn;
use crate::informer::InformerError;
use crate::informer::backoff::Backoff;
use crate::informer::options::{InformerOptions, ShardFeed};
use crate::informer::snapshot::{self as snapshots, SnapshotStart};
use crate::informer::status::InformerStatus;
use crate::informer::telemetry::{InformerMetrics, ListReason, Received};
use crate::vocabulary::object_key::object_key;
use crate::vocabulary::resource::ResourceKey;
use crate::vocabulary::scope::Namespaces;
use crate::vocabulary::scope::ResourceAvailability;
use crate::vocabulary::shard::{Settlement, ShardFiltering, ShardSelector};
use crate::wire::list_watch::{
    ListWatch, ListWatchError, UndecodableObject, WatchEvent, WireObject,
};

mod listing;
mod shard;
mod snapshot;
mod watching;

/// A change for the cache, in the order the server reported it.
///
/// A list arrives as [`Delta::ListBegin`], its pages ([`Delta::ListPage`])
/// and [`Delta::ListEnd`], so that the cache can take each page as it comes
/// (see [`StoreWriter::begin_list`](crate::cache::store::StoreWriter::begin_list))
/// instead of the whole list at once.
#[derive(Debug)]
pub enum Delta {
    /// A list begins: the pages up to the next [`Delta::ListEnd`] are the
    /// complete current list. Sent again, before any end, when a list starts
    /// over (a paged list falling back to one full list, a list that failed
    /// half-way and is retried).
    ListBegin,
    /// One page of the list, each object transformed, or built from its
    /// JSON in the compact form of the cache (see
    /// [`Reflector::build_from_json`]).
    ListPage(Vec<ListItem>),
    /// One page of a snapshot the informer resumes from, served as a page
    /// of its first list (see [`SnapshotPage`]).
    SnapshotPage(SnapshotPage),
    /// The list is complete: after it the cache must hold exactly the objects
    /// of the pages since the last [`Delta::ListBegin`]. Sent after the first
    /// list and after every relist.
    ListEnd,
    /// An object was added or modified.
    Upsert(DynamicObject),
    /// An object was added or modified, built from the server's JSON in
    /// the compact form of the cache (see [`Reflector::build_from_json`]).
    UpsertBuilt(crate::cache::compact::CompactObject),
    /// An object was deleted; this is its final state.
    Delete(DynamicObject),
    /// The cache now reflects the server up to this resourceVersion: sent
    /// after each complete list (the list's), each event and each bookmark.
    ResourceVersion(String),
    /// A sharded informer's ranges changed (or were set for the first
    /// time): the list that follows is of `current`. Objects of the cache
    /// that it does not hold left the shard; objects it adds outside
    /// `previous` entered it.
    Reshard {
        /// The selector before, `None` before the first list.
        previous: Option<ShardSelector>,
        /// The selector from now on.
        current: ShardSelector,
        /// For a source with a [hand-over](crate::vocabulary::Handover):
        /// dropped once every handler received the `leftShard` deletes of
        /// the objects outside `current`.
        settlement: Option<Settlement>,
    },
}

/// Objects of a snapshot, read back in the compact form a cache holds
/// ([`Storage::Compact`](crate::cache::Storage::Compact)), so that a cache
/// holding that form takes them as they are: no JSON is parsed and no
/// `DynamicObject` built until a reader or handler asks for one.
pub struct SnapshotPage {
    pub(crate) objects: Vec<crate::cache::compact::CompactObject>,
    /// On the last page: what the snapshot's objects share (keys and
    /// trees), for the cache to build its next objects with.
    pub(crate) interner: Option<crate::cache::compact::Interner>,
}

#[cfg(test)]
impl SnapshotPage {
    /// Whether the page holds no object.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// The objects, decoded.
    #[must_use]
    pub fn to_objects(&self) -> Vec<DynamicObject> {
        self.objects
            .iter()
            .map(crate::cache::compact::CompactObject::to_object)
            .collect()
    }
}

impl std::fmt::Debug for SnapshotPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotPage")
            .field("objects", &self.objects.len())
            .finish_non_exhaustive()
    }
}

/// Counters of what a reflector did, for observability and tests.
#[derive(Debug, Default)]
pub struct ReflectorStats {
    /// List requests (pages count one each).
    pub list_requests: AtomicU64,
    /// Complete lists delivered (first list and relists).
    pub lists: AtomicU64,
    /// Lists forced by 410 Gone / Expired.
    pub relists_after_gone: AtomicU64,
    /// Watch requests.
    pub watch_requests: AtomicU64,
    /// Watch events received (bookmarks included).
    pub watch_events: AtomicU64,
    /// Errors (each one led to a backoff or a relist).
    pub errors: AtomicU64,
    /// Objects skipped because their apiVersion or kind did not match, they
    /// had no name, or they could not be decoded (see
    /// [`crate::wire::list_watch::MAX_OBJECT_DEPTH`]).
    pub skipped_objects: AtomicU64,
    /// Sharded informers: list pages the server filtered by shard (they
    /// carried `shardInfo`).
    pub shard_pages_filtered_by_server: AtomicU64,
    /// Sharded informers: list pages the server sent whole (no
    /// `shardInfo`), filtered here.
    pub shard_pages_filtered_by_client: AtomicU64,
    /// Sharded informers: objects received and dropped here because they
    /// belong to another shard (the traffic server-side filtering saves).
    pub shard_objects_dropped: AtomicU64,
    /// The filtering of the last list page: 0 none yet, 1 server, 2 client.
    shard_last_filtering: std::sync::atomic::AtomicU8,
    /// The selector of the current list and watch.
    shard_selector: Mutex<Option<ShardSelector>>,
    /// Deletes handed to handlers with `final_state_unknown`: objects a
    /// relist found gone (client-go's tombstones).
    pub tombstones: AtomicU64,
    /// Snapshots written (informers with
    /// [`InformerOptions::snapshot`]).
    pub snapshots_written: AtomicU64,
    /// Snapshots that could not be written (each logged).
    pub snapshot_write_errors: AtomicU64,
    /// How the informer started, with snapshots.
    snapshot_start: Mutex<Option<SnapshotStart>>,
    /// Where the informer's snapshot is written, once known.
    pub(crate) snapshot_target: Mutex<Option<snapshots::Target>>,
}

impl ReflectorStats {
    /// Where the last list page of a sharded informer was filtered; `None`
    /// before its first page, and for an informer that is not sharded.
    #[must_use]
    pub fn shard_filtering(&self) -> Option<ShardFiltering> {
        match self.shard_last_filtering.load(Ordering::Relaxed) {
            1 => Some(ShardFiltering::Server),
            2 => Some(ShardFiltering::Client),
            _ => None,
        }
    }

    /// The ranges a sharded informer keeps now (a shard group member's
    /// change as it gains and gives up slots); `None` before its first
    /// list, and for an informer that is not sharded.
    #[must_use]
    pub fn shard_selector(&self) -> Option<ShardSelector> {
        self.shard_selector.lock().clone()
    }

    /// Every counter, read at once into plain numbers.
    ///
    /// ```
    /// use kube_dynamic_informer::informer::ReflectorStats;
    ///
    /// let stats = ReflectorStats::default();
    /// let counters = stats.counters();
    /// assert_eq!(counters.lists, 0);
    /// assert_eq!(counters.tombstones, 0);
    /// ```
    #[must_use]
    pub fn counters(&self) -> ReflectorCounters {
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ReflectorCounters {
            list_requests: n(&self.list_requests),
            lists: n(&self.lists),
            relists_after_gone: n(&self.relists_after_gone),
            watch_requests: n(&self.watch_requests),
            watch_events: n(&self.watch_events),
            errors: n(&self.errors),
            skipped_objects: n(&self.skipped_objects),
            tombstones: n(&self.tombstones),
            shard_pages_filtered_by_server: n(&self.shard_pages_filtered_by_server),
            shard_pages_filtered_by_client: n(&self.shard_pages_filtered_by_client),
            shard_objects_dropped: n(&self.shard_objects_dropped),
            snapshots_written: n(&self.snapshots_written),
            snapshot_write_errors: n(&self.snapshot_write_errors),
        }
    }

    /// For an informer with [`InformerOptions::snapshot`]: whether it
    /// resumed from its snapshot or listed, and why; `None` before it
    /// decided (and without snapshots).
    #[must_use]
    pub fn snapshot_start(&self) -> Option<SnapshotStart> {
        self.snapshot_start.lock().clone()
    }

    fn record_filtering(&self, filtering: ShardFiltering) {
        let (counter, code) = match filtering {
            ShardFiltering::Server => (&self.shard_pages_filtered_by_server, 1),
            ShardFiltering::Client => (&self.shard_pages_filtered_by_client, 2),
        };
        Self::inc(counter);
        self.shard_last_filtering.store(code, Ordering::Relaxed);
    }

    fn inc(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// The counters of [`ReflectorStats`] at one moment, as plain numbers
/// ([`ReflectorStats::counters`]); each field is documented there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
#[allow(missing_docs)]
pub struct ReflectorCounters {
    pub list_requests: u64,
    pub lists: u64,
    pub relists_after_gone: u64,
    pub watch_requests: u64,
    pub watch_events: u64,
    pub errors: u64,
    pub skipped_objects: u64,
    pub tombstones: u64,
    pub shard_pages_filtered_by_server: u64,
    pub shard_pages_filtered_by_client: u64,
    pub shard_objects_dropped: u64,
    pub snapshots_written: u64,
    pub snapshot_write_errors: u64,
}

/// A callback for list and watch errors; see
/// [`SharedInformer::on_error`](crate::informer::SharedInformer::on_error).
pub(crate) type ErrorHook = Arc<dyn Fn(&InformerError) + Send + Sync>;

/// The list/watch loop for one resource.
pub struct Reflector {
    lw: Arc<dyn ListWatch>,
    resource: ApiResource,
    key: ResourceKey,
    options: InformerOptions,
    transform: Option<TransformFn>,
    status: watch::Sender<InformerStatus>,
    stats: Arc<ReflectorStats>,
    metrics: InformerMetrics,
    error_hook: Arc<Mutex<Option<ErrorHook>>>,
    /// The server refused a streaming list once; use list-then-watch.
    streaming_unsupported: bool,
    /// Where a sharded informer's ranges come from.
    shard: Option<ShardFeed>,
    /// The shard selector of the current list and watch.
    active_shard: Option<ShardSelector>,
    /// A snapshot was looked for (once, before the first list).
    snapshot_tried: bool,
    /// A snapshot was handed on as the start of the first list, which ends
    /// once the watch from its resourceVersion is accepted; how the
    /// informer started, to record then.
    snapshot_pending: Option<SnapshotStart>,
    /// The snapshot's list ended after a grace without any watch item: a
    /// 410 as the first item still means the snapshot was too old.
    snapshot_unconfirmed: bool,
    /// Builds watched objects straight from their JSON for a cache with
    /// compact storage (see [`Reflector::build_from_json`]).
    builder: Option<JsonBuilder>,
}

/// Why a watch ended.
enum WatchEnd {
    /// The stream ended normally: resume from the last resourceVersion.
    Resume,
    /// 410: list again.
    Relist,
    /// Another error: back off, then resume (or relist if never listed).
    Failed(InformerError),
    /// The shard's ranges changed: list them.
    Reshard,
    /// Cancelled.
    Cancelled,
}

/// What a reflector carries across list/watch rounds.
struct Progress {
    backoff: Backoff,
    /// resourceVersion to resume the watch from; `None` = list first.
    resume_rv: Option<String>,
    /// A complete list was handed on at least once.
    listed: bool,
    /// Why the next complete list is made.
    next_list: ListReason,
    /// When the reflector started (for the first sync's duration).
    started: std::time::Instant,
}

/// What a sharded informer does before a list.
enum ShardStep {
    /// List (also what an informer that is not sharded does).
    List,
    /// It holds no range: nothing to list.
    Nothing,
    Cancelled,
}

/// What follows a list.
enum Listed {
    /// Watch from this resourceVersion.
    Watch(String),
    /// It failed and the backoff passed: start over.
    Retry,
    /// Cancelled.
    Stop,
}

/// Result of one list attempt.
enum ListOutcome {
    /// Every page was handed on; the list's resourceVersion, and objects
    /// deleted during a streaming list's initial events after their page was
    /// handed on (to hand on as deletes after the end).
    Listed(String, Vec<DynamicObject>),
    Failed(InformerError),
    Cancelled,
}

impl Reflector {
    /// A reflector for `resource` (its `ApiResource` gives the apiVersion and
    /// kind that every object must carry), listing and watching as `options`
    /// say, reporting to `status`. `error_hook` is read at every error, so
    /// it can be set after the reflector is built.
    pub(crate) fn new(
        lw: Arc<dyn ListWatch>,
        resource: ApiResource,
        options: &InformerOptions,
        status: watch::Sender<InformerStatus>,
        error_hook: Arc<Mutex<Option<ErrorHook>>>,
    ) -> Self {
        let metrics = InformerMetrics::new(
            &ResourceKey::from(&resource),
            &match &options.watch.namespaces {
                Namespaces::All => String::new(),
                Namespaces::Only(set) => set.iter().cloned().collect::<Vec<_>>().join(","),
            },
        );
        Self {
            lw,
            key: ResourceKey::from(&resource),
            resource,
            transform: options.cache.transform_fn(),
            options: options.clone(),
            status,
            stats: Arc::new(ReflectorStats::default()),
            metrics,
            error_hook,
            streaming_unsupported: false,
            shard: options.cache.shard_ranges(),
            active_shard: None,
            snapshot_tried: false,
            snapshot_pending: None,
            snapshot_unconfirmed: false,
            builder: None,
        }
    }

    /// From now on, builds the listed objects and those of Added and
    /// Modified events that the list-watch hands on as JSON with `builder`
    /// (the cache's, with compact storage), and hands them on as
    /// [`ListItem::Built`] and [`Delta::UpsertBuilt`]: no `DynamicObject` is
    /// decoded for them. Not with a transform, which takes a decoded object
    /// ([`CacheOptions::builds_from_json`](crate::informer::CacheOptions)).
    pub(crate) fn build_from_json(&mut self, builder: Option<JsonBuilder>) {
        self.builder = builder.filter(|_| self.options.cache.builds_from_json());
    }

    /// The reflector's counters.
    pub fn stats(&self) -> Arc<ReflectorStats> {
        self.stats.clone()
    }

    /// The informer's metric series, which this reflector records into.
    pub(crate) fn metrics(&self) -> InformerMetrics {
        self.metrics.clone()
    }

    /// Sets the status, notifying only on a change.
    fn set_status(&self, status: InformerStatus) {
        replace_status(&self.status, status);
    }

    /// A watch request that failed, or its stream's error.
    fn watch_failed(&self, source: ListWatchError) -> InformerError {
        InformerError::Watch {
            resource: self.key.clone(),
            source: Box::new(source),
        }
    }

    /// Runs until `cancel` fires, handing every change to `sink` in order.
    pub async fn run(mut self, cancel: CancellationToken, mut sink: impl FnMut(Delta) + Send) {
        let mut progress = Progress {
            backoff: Backoff::new(self.options.watch.backoff.clone()),
            resume_rv: None,
            listed: false,
            next_list: ListReason::First,
            started: std::time::Instant::now(),
        };
        match self.lw.availability() {
            None => self.run_served(&cancel, &mut sink, &mut progress).await,
            Some(availability) => {
                self.run_gated(availability, &cancel, &mut sink, &mut progress)
                    .await;
            }
        }
    }

    /// Alternates between waiting while the resource is not served and
    /// list/watch while it is.
    async fn run_gated(
        &mut self,
        mut availability: watch::Receiver<ResourceAvailability>,
        cancel: &CancellationToken,
        sink: &mut (impl FnMut(Delta) + Send),
        progress: &mut Progress,
    ) {
        // Whether the empty Replace for the current absence was handed on.
        let mut emptied = false;
        while !cancel.is_cancelled() {
            let current = availability.borrow_and_update().clone();
            match current {
                ResourceAvailability::NotServed { reason } => {
                    progress.resume_rv = None;
                    if progress.listed {
                        if !emptied {
                            tracing::info!(resource = %self.key, %reason, "resource no longer served; emptying the cache until it is served again");
                            sink(Delta::ListBegin);
                            sink(Delta::ListEnd);
                            emptied = true;
                        }
                        self.set_status(InformerStatus::Gone { reason });
                    } else {
                        self.set_status(InformerStatus::Pending { reason });
                    }
                    tokio::select! {
                        _ = cancel.cancelled() => return,
                        changed = availability.changed() => {
                            if changed.is_err() {
                                // Nobody will say it is served again.
                                cancel.cancelled().await;
                                return;
                            }
                        }
                    }
                }
                ResourceAvailability::Served { resource, .. } => {
                    if progress.listed && progress.resume_rv.is_none() {
                        progress.next_list = ListReason::ServedAgain;
                    }
                    if !resource.kind.is_empty() {
                        self.key = ResourceKey::from(&resource);
                        self.resource = resource;
                    }
                    emptied = false;
                    if !progress.listed {
                        self.set_status(InformerStatus::Syncing { listed: 0 });
                    }
                    let mut watcher = availability.clone();
                    let no_longer_served = async move {
                        loop {
                            if watcher.changed().await.is_err() {
                                futures::future::pending::<()>().await;
                            }
                            if !watcher.borrow_and_update().is_served() {
                                return;
                            }
                        }
                    };
                    tokio::select! {
                        _ = self.run_served(cancel, sink, progress) => return,
                        _ = no_longer_served => {}
                    }
                }
            }
        }
    }

    /// Lists and watches until `cancel` fires.
    async fn run_served(
        &mut self,
        cancel: &CancellationToken,
        sink: &mut (impl FnMut(Delta) + Send),
        progress: &mut Progress,
    ) {
        while !cancel.is_cancelled() {
            if self.ranges_differ() {
                // A watch cannot change its selector: list the new ranges.
                progress.resume_rv = None;
            }
            let rv = match progress.resume_rv.clone() {
                Some(rv) => rv,
                None => {
                    match self.take_shard_ranges(cancel, sink).await {
                        ShardStep::List => {}
                        ShardStep::Cancelled => break,
                        ShardStep::Nothing => {
                            // No range held: the cache is empty until one is.
                            progress.listed = true;
                            self.set_status(InformerStatus::Synced);
                            if !self.wait_ranges_changed(cancel).await {
                                break;
                            }
                            continue;
                        }
                    }
                    if !progress.listed
                        && let Some(rv) = self.resume_from_snapshot(sink).await
                    {
                        progress.resume_rv = Some(rv);
                        continue;
                    }
                    match self.list(cancel, sink, progress).await {
                        Listed::Watch(rv) => rv,
                        Listed::Retry => continue,
                        Listed::Stop => break,
                    }
                }
            };
            let mut last_rv = rv;
            let from_snapshot = self.snapshot_pending.is_some();
            let end = self
                .watch(&last_rv.clone(), &mut last_rv, cancel, sink)
                .await;
            if from_snapshot {
                self.after_snapshot_watch(&end, progress);
            }
            match end {
                WatchEnd::Cancelled => break,
                WatchEnd::Resume => progress.resume_rv = Some(last_rv),
                WatchEnd::Relist => {
                    ReflectorStats::inc(&self.stats.relists_after_gone);
                    progress.next_list = ListReason::Expired;
                    progress.resume_rv = None;
                }
                WatchEnd::Reshard => progress.resume_rv = None,
                WatchEnd::Failed(err) => {
                    progress.resume_rv = Some(last_rv);
                    if !self.wait_after(&err, progress, cancel).await {
                        break;
                    }
                }
            }
        }
    }

    /// Lists (in pages or streaming) and hands the list on; what to do next.
    async fn list(
        &mut self,
        cancel: &CancellationToken,
        sink: &mut (impl FnMut(Delta) + Send),
        progress: &mut Progress,
    ) -> Listed {
        let streaming = self.options.watch.streaming_list
            && self.lw.capabilities().streaming_list
            && !self.streaming_unsupported;
        let list_started = std::time::Instant::now();
        let outcome = if streaming {
            self.streaming_list(cancel, progress.listed, sink).await
        } else {
            self.paged_list(cancel, progress.listed, sink).await
        };
        match outcome {
            ListOutcome::Cancelled => Listed::Stop,
            ListOutcome::Failed(err) => {
                if progress.listed {
                    progress.next_list = ListReason::Error;
                }
                if self.wait_after(&err, progress, cancel).await {
                    Listed::Retry
                } else {
                    Listed::Stop
                }
            }
            ListOutcome::Listed(rv, deleted) => {
                ReflectorStats::inc(&self.stats.lists);
                sink(Delta::ListEnd);
                for object in deleted {
                    sink(Delta::Delete(object));
                }
                sink(Delta::ResourceVersion(rv.clone()));
                self.metrics
                    .listed(progress.next_list, list_started.elapsed());
                if !progress.listed {
                    self.metrics
                        .sync_duration
                        .set(progress.started.elapsed().as_secs_f64());
                }
                progress.listed = true;
                progress.next_list = ListReason::Error;
                // The cache now equals the server: synced, as
                // it stays while its watch opens. A watch
                // resumed after a failure says so only once it
                // is open (see `watch`).
                self.set_status(InformerStatus::Synced);
                Listed::Watch(rv)
            }
        }
    }

    /// Reports `err`, then waits out the backoff. False when cancelled.
    async fn wait_after(
        &self,
        err: &InformerError,
        progress: &mut Progress,
        cancel: &CancellationToken,
    ) -> bool {
        ReflectorStats::inc(&self.stats.errors);
        self.metrics.errors.increment(1);
        let hook = self.error_hook.lock().clone();
        if let Some(hook) = hook {
            hook(err);
        }
        // A hook that stops the informer has said what it had to.
        if cancel.is_cancelled() {
            return false;
        }
        let delay = progress.backoff.next_delay();
        let error = crate::vocabulary::error_chain(err);
        tracing::warn!(resource = %self.key, %error, retry_in = ?delay, "list/watch failed");
        self.set_status(InformerStatus::BackingOff {
            error,
            code: err.code(),
            attempt: progress.backoff.failures(),
            retry_in: delay,
            synced_before: progress.listed,
        });
        // A change of shard ranges ends the wait: the new ranges may need
        // no request at all (none held), or other requests.
        tokio::select! {
            _ = cancel.cancelled() => false,
            _ = tokio::time::sleep(delay) => true,
            () = self.ranges_changed() => true,
        }
    }
}

/// Sets `sender`'s status, notifying only on a change.
fn replace_status(sender: &watch::Sender<InformerStatus>, status: InformerStatus) {
    sender.send_if_modified(|current| {
        if *current == status {
            false
        } else {
            *current = status;
            true
        }
    });
}

/// Whether a streaming-list request was refused as such: the list-watch
/// cannot serve one, or the server does not know `sendInitialEvents`
/// (400/422, unknown or invalid parameter; 501).
fn refuses_streaming(err: &ListWatchError) -> bool {
    matches!(err, ListWatchError::StreamingListUnsupported(_))
        || matches!(err.code(), Some(400 | 422 | 501))
}

impl fmt::Debug for Reflector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reflector")
            .field("resource", &self.key)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
