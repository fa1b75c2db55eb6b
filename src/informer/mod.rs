//! Shared informers: one cache and one watch per resource, any number of
//! event handlers.
//!
//! Data flows one way: the reflector → transform → [`StoreWriter`] (with its
//! indexes) → dispatcher → one queue per handler → handler. Every handler
//! receives the very handle the store holds (a
//! [`CachedObject`](crate::cache::CachedObject): the decoded object or its
//! compact form); nothing is deep cloned on fan-out, and nothing is decoded
//! for a handler that does not ask.
//!
//! # Guarantees
//!
//! - **Replay**: a handler added at any time — before start, during the
//!   initial list, or long after — first receives an
//!   [`Event::Add`] with `in_initial_list = true` for every object already
//!   cached, then the live events, with no gap and no duplicate. Store updates
//!   and the enqueueing of their events happen under one lock, and a new
//!   handler takes its snapshot under the same lock.
//! - **Isolation**: each handler has its own queue, run in order by one
//!   worker at a time of the process's handler pool ([`HandlerPoolSettings`]):
//!   a bounded set of threads shared by every informer, which starts a worker
//!   in place of one that stays in a handler longer than its stall threshold.
//!   A slow or blocked handler delays neither the others nor the cache; its
//!   backlog is visible through [`Registration::backlog`], and
//!   [`HandlerOptions::coalesce`] bounds it by the number of objects. A
//!   handler that panics is caught, logged and counted
//!   ([`Registration::panics`]), and receives the next event as usual. Async
//!   handlers ([`SharedInformer::add_async_handler`]) run as tasks on the
//!   tokio runtime.
//! - **Atomic relists**: a relist is applied to the store as a whole before
//!   its events are queued, so a handler reading the store while it handles
//!   them sees the whole relisted state (as client-go's atomic FIFO).
//! - **Freshness**: the store knows the resourceVersion it reflects;
//!   [`SharedInformer::wait_for_object`] returns once a write shows in the
//!   cache; a watch silent for longer than
//!   [`InformerOptions::stale_after`] makes the status [`InformerStatus::Stale`].
//! - **Relists reconcile**: after a relist the cache equals the server;
//!   objects that vanished are delivered as [`Event::Delete`] with
//!   `final_state_unknown = true` and their last known state (client-go's
//!   tombstone); changed objects as updates; unchanged ones produce nothing.
//! - **Resync** re-delivers the cache from memory as
//!   `Update { is_resync: true }`; it never contacts the API server. The
//!   period rules are client-go's: an informer period of 0 disables resync
//!   for every handler; a handler may ask for its own period (0: none);
//!   periods under 1 s become 1 s; before start a smaller handler period
//!   lowers the informer's check period, after start it is raised to it;
//!   the effective period is rounded up to a multiple of the check period.
//!
//! [`StoreWriter`]: crate::cache::store::StoreWriter
//!
//! # Waiting for a state
//!
//! A [`Wait`] waits until [`WaitFor`] — a
//! [`Condition`](crate::cache::Condition) on an object, or its deletion —
//! is true of all, any or none ([`Quantifier`]) of some [`Objects`] of one
//! or several informers: one object by name, those a label selector, a
//! namespace or an index value picks, across informers of several
//! resources, and of a resource whose CRD is not installed yet. It is
//! answered from the caches as events arrive (a coalesced registration of
//! its own on each informer, read the moment an event is queued), without a
//! request of its own, and returns within moments of the event that makes
//! it hold. When the time runs out, [`InformerError::ConditionTimedOut`]
//! holds a [`WaitReport`]: every object that kept the wait from holding,
//! with why (not met, not a boolean, missing, still there), and every
//! cache that did not sync, with why. [`SharedInformer::wait_until`] is the
//! one-informer shortcut; `kdi wait` the command line over it.
//!
//! ```no_run
//! # async fn demo(pods: kube_dynamic_informer::informer::SharedInformer) -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use kube_dynamic_informer::informer::{InformerError, ObjectSelection, Wait, WaitFor};
//! use kube_dynamic_informer::vocabulary::Selector;
//!
//! let job = ObjectSelection::default().namespace("ci").labels(Selector::parse("job-name=build")?);
//! let wait = Wait::new(WaitFor::condition("status.phase == 'Pending'")?)
//!     .none()
//!     .on(&pods, job)
//!     .timeout(Duration::from_secs(120));
//! match wait.run().await {
//!     Ok(report) => println!("{report}"), // none of 4 objects holds 'status.phase == 'Pending''
//!     Err(InformerError::ConditionTimedOut { report }) => {
//!         for pod in report.blocking() {
//!             eprintln!("still pending: {}", pod.key);
//!         }
//!     }
//!     Err(other) => return Err(other.into()),
//! }
//! # Ok(()) }
//! ```
//!
//! # Filters and change predicates
//!
//! A handler may ask for the objects it wants and the updates it cares
//! about ([`HandlerOptions::filter`], [`HandlerOptions::changes`]): a
//! [`Condition`](crate::cache::Condition) the object must meet, and a
//! [`ChangePredicate`](crate::cache::ChangePredicate) whose values an
//! update must change. The handler then sees the cache through them, as
//! client-go's `FilteringResourceEventHandler` and controller-runtime's
//! predicates let it:
//!
//! | the event | the object met the filter before / after | the handler gets |
//! |---|---|---|
//! | Add | — / yes | the Add |
//! | Update | yes / yes | the Update, if a value of the change predicate differs (a resync always) |
//! | Update | no / yes | an Add of the new state, `entered_filter` |
//! | Update | yes / no | a Delete of the new state (the one that does not meet it), `left_filter` |
//! | Update | no / no | nothing |
//! | Delete (a tombstone of a relist, a shard's `left_shard` too) | yes / — | the Delete, as it is |
//! | Delete | no / — | nothing |
//!
//! A late handler's replay and its resyncs hold the objects that meet the
//! filter, marked as usual (`in_initial_list`, `is_resync`); a change
//! predicate drops no resync, since a handler that asked for resyncs wants
//! them (one that does not sets its resync period to zero). The relist
//! after a 410 is reconciled as a whole, then passed through the same
//! rules: a tombstone reaches the handlers that had the object.
//!
//! "Before" is the verdict the filter gave on the state before, taken when
//! that state arrived: a handler never receives a Delete or an Update of an
//! object it was not given, and the state before is never evaluated again
//! (a compact cache does not decode it). The dispatcher passes each event
//! once through each distinct pair of filter and change predicate, for all
//! the handlers that ask for it, before anything is queued: an event a
//! handler does not want costs it no queue, no wake-up and no call, and a
//! change predicate of plain field paths (`spec`) compares the two states
//! in place, in a compact cache by their bytes (BENCHMARKS.md, "Handler
//! filters"). A filter added to a running informer is evaluated once on
//! each cached object, when the first handler asks for it.
//!
//! A filter that is not a boolean on an object, or fails on it, is not met;
//! it is said once per object ([`FilterMistake`]: a `tracing` warning, and
//! to [`HandlerOptions::on_mistake`]). What the filters held back is
//! counted per handler ([`Registration::filtered`], and the metric
//! `kdi_handler_events_filtered_total`, see [`telemetry`]).
//!
//! ```no_run
//! # fn demo(widgets: kube_dynamic_informer::informer::SharedInformer) -> Result<(), Box<dyn std::error::Error>> {
//! use kube_dynamic_informer::cache::{ChangePredicate, Condition};
//! use kube_dynamic_informer::informer::{Event, HandlerOptions};
//!
//! // The web Widgets, and of their updates only those of spec or labels.
//! let options = HandlerOptions::default()
//!     .name("reconcile-web")
//!     .filter(Condition::new("metadata.labels.tier == 'web'")?)
//!     .changes(ChangePredicate::spec().or(ChangePredicate::labels()));
//! widgets.add_handler_with(
//!     |event: Event| match event {
//!         Event::Add { object, .. } => println!("reconcile {:?}", object.name()),
//!         Event::Update { new, .. } => println!("reconcile {:?}", new.name()),
//!         Event::Delete { object, left_filter, .. } => {
//!             println!("forget {:?} (left the filter: {left_filter})", object.name())
//!         }
//!     },
//!     options,
//! );
//! # Ok(()) }
//! ```
//!
//! # Warm restarts
//!
//! An informer with [`InformerOptions::snapshot`] writes its cache to a
//! file ([`SnapshotOptions`]) when it stops and periodically, and at its
//! next start serves that file as its initial list and watches from its
//! resourceVersion instead of listing: the server replays every change
//! since, deletions included. A snapshot made for another cluster,
//! resource or cache shape, or damaged, is refused; one older than the
//! server's history (410) leads to one relist reconciled with tombstones.
//! [`ReflectorStats::snapshot_start`] says which happened ([`SnapshotStart`]).
//!
//! # The reflector
//!
//! The list/watch loop that keeps a cache in step with the API server.
//!
//! The reflector (internal: an informer runs it, and the reflector is of use
//! to nothing else) lists a resource (in pages, or as a streaming list),
//! hands the list on page by page, then watches from the list's
//! resourceVersion and hands on each change. It owns every recovery
//! decision so that callers never have to:
//!
//! - a watch that ends normally (server timeout, randomised between 5 and 10
//!   minutes) is resumed from the last resourceVersion seen, without a new
//!   list;
//! - 410 Gone / Expired — when the watch starts or inside the stream — means
//!   the resourceVersion is compacted away: the reflector lists again, and
//!   the consumer reconciles (see [`crate::cache::store::StoreWriter::replace`]);
//! - an expired continue token in the middle of a paged list falls back to
//!   one full, unpaged list;
//! - any other error backs off (800 ms doubling to 30 s, with jitter, see
//!   [`BackoffConfig`]) and is reported in the
//!   informer's [`InformerStatus`] and to the optional hook
//!   ([`SharedInformer::on_error`]), so a
//!   403 or a 404 is visible at once instead of as a silent wait.
//!
//! When its [`ListWatch`] follows discovery
//! ([`ListWatch::availability`]), the reflector also knows whether its
//! resource is served at all: while it is not — a CRD not installed yet, or
//! deleted — it sends no request and reports [`InformerStatus::Pending`];
//! when a resource it had listed goes away it hands on an empty list (so the cache empties and handlers get the deletes) and
//! reports [`InformerStatus::Gone`] instead of retrying a 404 forever; once
//! the resource is served again it lists anew.
//!
//! The server side is the small [`ListWatch`] trait, so that the state
//! machine can be tested with scripted responses.
//!
//! # Options
//!
//! [`InformerOptions`]: how an informer lists, watches and caches — the one
//! options type of the crate.
//!
//! The same type configures a lone [`SharedInformer`],
//! the [factory](crate::factory) (its defaults, and any resource's own), and
//! each informer of a [config file](crate::declarative), which deserialises into
//! it (`labelSelector`, `resync: 10m`, `stripManagedFields: true`, ...).
//!
//! Two requests for the same resource with equal options share one informer
//! in a factory; options are `Eq` and `Hash` for that. Everything in them is
//! a value: selectors are strings, durations are durations, the built-in
//! `managedFields` stripping is a flag, a [`Projection`](crate::cache::Projection) compares by the
//! fields it keeps, and a custom [`Transform`](crate::cache::Transform) compares by its name.
//!
//! # Backoff
//!
//! Exponential backoff with jitter for list and watch failures.
//!
//! The figures copy client-go's reflector (`NewExponentialBackoffManager(800ms,
//! 30s, 2min, 2.0, 1.0)`): the first retry waits about 800 ms, each further
//! failure doubles the wait up to 30 s, and two minutes without a failure
//! start the sequence again. Jitter spreads the retries of many informers
//! that failed together (for example when the API server restarted), so they
//! do not all come back in the same instant.
//!
//! # Status
//!
//! What an informer is doing, in one enum that the reflector sets and every
//! layer above reads (the informer, the factory's sync report, `kdi`'s
//! progress lines).

pub(crate) mod backoff;
mod dispatch;
use dispatch::{Dispatcher, LastHeard};
mod error;
mod event;
mod filter;
mod freshness;
mod handlers;
mod listener;
mod lone;
pub(crate) mod options;
mod pool;
mod queue;
pub(crate) mod reflector;
pub(crate) mod resync;
pub(crate) mod snapshot;
pub(crate) mod status;
mod sync;
pub mod telemetry;
mod wait;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kube_client::Client;
use kube_core::ApiResource;
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub use backoff::BackoffConfig;
pub use error::InformerError;
pub use event::{Event, EventHandler};
pub use filter::FilterMistake;
pub use freshness::{ObjectTypes, WrittenObject};
pub use listener::{EventStream, HandlerOptions, Registration};
pub use lone::Informer;
pub use options::{CacheOptions, InformerOptions, WatchOptions, WhenNotServed};
pub use pool::{HandlerPoolSettings, HandlerPoolStats, handler_pool_stats};
use reflector::ErrorHook;
pub(crate) use reflector::Reflector;
pub use reflector::{ReflectorCounters, ReflectorStats};
pub use snapshot::{SnapshotOptions, SnapshotRefusal, SnapshotStart};
pub use sync::{NotSynced, SyncPolicy};
pub use wait::{
    DEFAULT_WAIT_TIMEOUT, InformerOutcome, ObjectOutcome, ObjectSelection, ObjectState, Objects,
    Quantifier, Wait, WaitFor, WaitProgress, WaitReport,
};

pub use crate::informer::status::InformerStatus;

use crate::cache::index::IndexFn;
use crate::cache::store::{Store, StoreWriter};
use crate::informer::resync::ResyncClock;
use crate::informer::telemetry::InformerMetrics;
use crate::vocabulary::resource::ResourceKey;
use crate::vocabulary::scope::{ResourceAvailability, Scope};
use crate::wire::list_watch::{ApiListWatch, ListWatch};

/// How often an informer with compact storage frees what dropped decoded
/// objects keep in its cache.
const FORGET_EVERY: Duration = Duration::from_secs(5);

struct Shared {
    /// The resource as given; [`SharedInformer::resource`] prefers what
    /// `availability` says once the resource is served.
    resource: ApiResource,
    /// Whether and as what the resource is served, for a list-watch that
    /// follows discovery.
    availability: Option<watch::Receiver<ResourceAvailability>>,
    key: ResourceKey,
    options: InformerOptions,
    /// The list/watch loop and the cache's writer, until `run` takes them.
    reflector: Mutex<Option<(Reflector, StoreWriter)>>,
    stats: Arc<ReflectorStats>,
    error_hook: Arc<Mutex<Option<ErrorHook>>>,
    store: Store,
    /// Snapshots written (with [`InformerOptions::snapshot`]).
    snapshots: snapshot::Writes,
    dispatch: Dispatcher,
    status: watch::Sender<InformerStatus>,
    metrics: InformerMetrics,
    /// When something last arrived from the server, for staleness.
    heard: LastHeard,
}

/// One cache and one watch for a resource, shared by any number of handlers.
///
/// Cheap to clone; clones share everything.
///
/// ```no_run
/// # async fn demo(client: kube_client::Client) -> Result<(), Box<dyn std::error::Error>> {
/// use kube_core::{ApiResource, DynamicObject};
/// use kube_dynamic_informer::prelude::*;
/// use tokio_util::sync::CancellationToken;
///
/// let pods = ApiResource {
///     group: "".into(), version: "v1".into(), api_version: "v1".into(),
///     kind: "Pod".into(), plural: "pods".into(),
/// };
/// let options = InformerOptions::default().strip_managed_fields();
/// let informer = SharedInformer::new(client, pods, Scope::Namespaced, options)?;
/// informer.add_index("node", IndexFn::jmespath("node", "spec.nodeName")?)?;
/// informer.add_handler(|event: Event| println!("{} {:?}", event.kind(), event.object().name()));
///
/// let cancel = CancellationToken::new();
/// informer.start(cancel.clone())?;
/// informer.wait_for_sync(std::time::Duration::from_secs(30)).await?;
/// let on_node = informer.store().by_index("node", "node-1")?;
/// println!("{} pods on node-1", on_node.len());
/// cancel.cancel();
/// # Ok(()) }
/// ```
#[derive(Clone)]
#[doc(alias = "SharedIndexInformer")]
pub struct SharedInformer {
    shared: Arc<Shared>,
}

impl SharedInformer {
    /// An informer for `resource` through `client`.
    ///
    /// # Errors
    /// A namespace restriction on a cluster-scoped resource.
    pub fn new(
        client: Client,
        resource: ApiResource,
        scope: Scope,
        options: InformerOptions,
    ) -> Result<Self, InformerError> {
        scope.check(ResourceKey::from(&resource), &options.watch.namespaces)?;
        let lw = options.list_watch(ApiListWatch::new(client, resource.clone(), scope));
        Ok(Self::with_list_watch(lw, resource, options))
    }

    /// An informer over any [`ListWatch`] (for instance one that counts or
    /// rewrites requests). The namespaces and metadata-only mode of
    /// `options` are the `ListWatch`'s business here; the rest applies.
    #[must_use]
    pub fn with_list_watch(
        lw: impl ListWatch,
        resource: ApiResource,
        options: InformerOptions,
    ) -> Self {
        let options = options.normalized();
        let availability = lw.availability();
        let writer = StoreWriter::with_storage(options.cache.storage);
        let store = writer.reader();
        let status = watch::Sender::new(InformerStatus::NotStarted);
        let error_hook = Arc::new(Mutex::new(None));
        let dispatch = Dispatcher::default();
        dispatch.lock().clock = ResyncClock::new(options.cache.resync);
        let mut reflector = Reflector::new(
            Arc::new(lw),
            resource.clone(),
            &options,
            status.clone(),
            error_hook.clone(),
        );
        reflector.build_from_json(writer.json_builder());
        Self {
            shared: Arc::new(Shared {
                key: ResourceKey::from(&resource),
                resource,
                availability,
                dispatch,
                options,
                stats: reflector.stats(),
                metrics: reflector.metrics(),
                reflector: Mutex::new(Some((reflector, writer))),
                error_hook,
                store,
                snapshots: snapshot::Writes::default(),
                status,
                heard: LastHeard::default(),
            }),
        }
    }

    /// Calls `hook` with every list or watch error (they also show in
    /// [`status`](Self::status) and the logs). Replaces an earlier hook.
    /// The hook runs before the error is logged: a hook that cancels the
    /// informer's token stops it there, without a retry or a warning.
    pub fn on_error(&self, hook: impl Fn(&InformerError) + Send + Sync + 'static) {
        *self.shared.error_hook.lock() = Some(Arc::new(hook));
    }

    /// The options this informer runs with.
    #[must_use]
    pub fn options(&self) -> &InformerOptions {
        &self.shared.options
    }

    /// The resource this informer caches. For one made before its resource
    /// was served (a CRD not installed yet, asked for by plural and group),
    /// what discovery says once it is served: the version it lists, its
    /// kind; before that, the resource as given.
    #[must_use]
    pub fn resource(&self) -> ApiResource {
        if let Some(availability) = &self.shared.availability
            && let ResourceAvailability::Served { resource, .. } = &*availability.borrow()
        {
            return resource.clone();
        }
        self.shared.resource.clone()
    }

    /// The read-only cache, with its indexes.
    pub fn store(&self) -> Store {
        self.shared.store.clone()
    }

    /// An estimate of the heap the cache holds, in bytes: its objects,
    /// their keys and its indexes ([`Store::approximate_bytes`], which says
    /// how it counts). One pass over the cache: for a status line or a
    /// gauge read now and then, not for every event.
    ///
    /// ```
    /// # use futures::{FutureExt, StreamExt, future::BoxFuture};
    /// # use kube_client::api::{ListParams, WatchParams};
    /// # use kube_dynamic_informer::prelude::*;
    /// # use kube_dynamic_informer::wire::{ListPage, ListWatch, ListWatchError, WatchStream, WireObject};
    /// # struct OneConfigMap;
    /// # impl ListWatch for OneConfigMap {
    /// #     fn list(&self, _: &ListParams) -> BoxFuture<'static, Result<ListPage, ListWatchError>> {
    /// #         let object = serde_json::json!({
    /// #             "metadata": { "name": "big", "namespace": "shop" },
    /// #             "data": { "blob": "x".repeat(1 << 20) }
    /// #         });
    /// #         let object = WireObject::from_json(object.to_string());
    /// #         let page = ListPage { objects: vec![object], resource_version: "1".into(), ..ListPage::default() };
    /// #         async move { Ok(page) }.boxed()
    /// #     }
    /// #     fn watch(&self, _: &WatchParams, _: &str) -> BoxFuture<'static, Result<WatchStream, ListWatchError>> {
    /// #         async { Ok(futures::stream::pending().boxed()) }.boxed()
    /// #     }
    /// # }
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let configmaps = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
    /// # let cancel = tokio_util::sync::CancellationToken::new();
    /// // An informer whose list holds one ConfigMap with 1 MiB of data.
    /// let informer = SharedInformer::with_list_watch(OneConfigMap, configmaps, InformerOptions::default());
    /// informer.start(cancel.clone())?;
    /// informer.wait_for_sync(std::time::Duration::from_secs(10)).await?;
    /// assert!(informer.cache_bytes() >= 1 << 20);
    /// println!("~{} MiB cached", informer.cache_bytes() >> 20);
    /// # cancel.cancel();
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn cache_bytes(&self) -> usize {
        self.shared.store.approximate_bytes()
    }

    /// Adds an index, at any time; existing objects are indexed at once.
    ///
    /// # Errors
    /// A duplicate name.
    pub fn add_index(&self, name: impl Into<String>, func: IndexFn) -> Result<(), InformerError> {
        let name = name.into();
        let counter = self.shared.metrics.index_failures(&name);
        self.shared
            .store
            .add_index_counted(name, func, counter)
            .map_err(|source| InformerError::Index {
                resource: self.shared.key.clone(),
                source: Box::new(source),
            })
    }

    /// Adds an index named `name` whose values are what the JMESPath
    /// `expression` gives for each object (see
    /// [`IndexFn::jmespath`](crate::cache::IndexFn::jmespath) for the rules):
    /// the name said once.
    ///
    /// ```no_run
    /// # fn demo(informer: kube_dynamic_informer::informer::SharedInformer) -> Result<(), Box<dyn std::error::Error>> {
    /// informer.add_jmespath_index("color", "spec.color")?;
    /// let red = informer.store().by_index("color", "red")?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// An expression that does not compile, or a duplicate name.
    pub fn add_jmespath_index(
        &self,
        name: impl Into<String>,
        expression: &str,
    ) -> Result<(), InformerError> {
        let name = name.into();
        let func = IndexFn::jmespath(&name, expression).map_err(|source| InformerError::Index {
            resource: self.shared.key.clone(),
            source: Box::new(source),
        })?;
        self.add_index(name, func)
    }

    /// Whether the cache holds a complete list (it stays true through later
    /// relists and backoffs).
    #[doc(alias = "HasSynced")]
    pub fn has_synced(&self) -> bool {
        self.shared.dispatch.lock().synced
    }

    /// How long ago the cache was last known current: the time since it last
    /// received something from the server (a list page, an event, a
    /// bookmark). A live watch on a quiet resource still receives a bookmark
    /// about once a minute; while the server cannot be reached this grows.
    /// `None` before anything was received.
    ///
    /// What a health check reads beside [`status`](Self::status): ready when
    /// the status is synced, and alarmed when this passes what the
    /// application tolerates.
    #[must_use]
    pub fn time_since_current(&self) -> Option<Duration> {
        self.shared.heard.silent_for()
    }

    /// The current status.
    pub fn status(&self) -> InformerStatus {
        self.shared.status.borrow().clone()
    }

    /// A receiver that sees every status change.
    pub fn watch_status(&self) -> watch::Receiver<InformerStatus> {
        self.shared.status.subscribe()
    }

    /// The reflector's counters (lists, relists, watches, errors).
    #[must_use]
    pub fn stats(&self) -> Arc<ReflectorStats> {
        self.shared.stats.clone()
    }

    /// Waits until the cache has synced, through every failure until
    /// `timeout` ([`SyncPolicy::KeepWaiting`]).
    ///
    /// # Errors
    /// [`InformerError::NotSynced`] saying why ([`NotSynced`]): the
    /// informer's last failure (a 403, a 401, another status, no answer),
    /// not served, still listing; at once when the resource is gone or the
    /// informer stops.
    #[doc(alias = "WaitForCacheSync")]
    pub async fn wait_for_sync(&self, timeout: Duration) -> Result<(), InformerError> {
        self.wait_for_sync_with(timeout, SyncPolicy::KeepWaiting)
            .await
    }

    /// [`wait_for_sync`](Self::wait_for_sync) under `policy`: with
    /// [`SyncPolicy::GiveUpWhenRefused`], the wait also ends at the first
    /// 403 or 401.
    ///
    /// # Errors
    /// [`InformerError::NotSynced`], as for `wait_for_sync`.
    pub async fn wait_for_sync_with(
        &self,
        timeout: Duration,
        policy: SyncPolicy,
    ) -> Result<(), InformerError> {
        let not_synced = |reason| InformerError::NotSynced {
            resource: self.shared.key.clone(),
            reason,
        };
        // A timeout too long to add to now (Duration::MAX) is no deadline.
        let deadline = tokio::time::Instant::now().checked_add(timeout);
        let mut rx = self.shared.status.subscribe();
        loop {
            let status = rx.borrow_and_update().clone();
            let why = match NotSynced::from_status(&status, timeout) {
                // Gone empties the cache, synced before or not.
                Some(gone @ NotSynced::Gone { .. }) => return Err(not_synced(gone)),
                Some(why) if !self.has_synced() => why,
                _ => return Ok(()),
            };
            if policy.gives_up(&why) {
                return Err(not_synced(why));
            }
            tokio::select! {
                changed = rx.changed() => if changed.is_err() {
                    return if self.has_synced() { Ok(()) } else { Err(not_synced(NotSynced::Stopped)) };
                },
                () = sync::deadline_passed(deadline) => {
                    return match NotSynced::from_status(&self.status(), timeout) {
                        Some(why) if !self.has_synced() => Err(not_synced(why)),
                        _ => Ok(()),
                    };
                }
            }
        }
    }

    /// Spawns [`run`](Self::run) on the current tokio runtime.
    ///
    /// # Errors
    /// [`InformerError::AlreadyStarted`].
    pub fn start(
        &self,
        cancel: CancellationToken,
    ) -> Result<tokio::task::JoinHandle<()>, InformerError> {
        let run = self.prepare()?;
        let this = self.clone();
        Ok(tokio::spawn(
            async move { this.run_prepared(run, cancel).await },
        ))
    }

    /// Lists, watches and dispatches until `cancel` fires, then closes every
    /// handler's queue (waiting up to 5 s for handlers in a call and async
    /// handlers' tasks) and returns.
    ///
    /// # Errors
    /// [`InformerError::AlreadyStarted`].
    pub async fn run(&self, cancel: CancellationToken) -> Result<(), InformerError> {
        let run = self.prepare()?;
        self.run_prepared(run, cancel).await;
        Ok(())
    }

    fn prepare(&self) -> Result<(Reflector, StoreWriter), InformerError> {
        let (reflector, writer) =
            self.shared
                .reflector
                .lock()
                .take()
                .ok_or_else(|| InformerError::AlreadyStarted {
                    resource: self.shared.key.clone(),
                })?;
        self.shared.dispatch.lock().started = true;
        // A resource not served yet is pending from the start, never
        // "syncing" first.
        let first = match self
            .shared
            .availability
            .as_ref()
            .map(|a| a.borrow().clone())
        {
            Some(ResourceAvailability::NotServed { reason }) => InformerStatus::Pending { reason },
            _ => InformerStatus::Syncing { listed: 0 },
        };
        self.shared.status.send_replace(first);
        Ok((reflector, writer))
    }

    async fn run_prepared(&self, prepared: (Reflector, StoreWriter), cancel: CancellationToken) {
        let (reflector, mut writer) = prepared;
        let shared = self.shared.clone();
        let reflect = reflector.run(cancel.clone(), move |delta| {
            shared.process(&mut writer, delta);
        });
        let resync = self.shared.resync_loop(cancel.clone());
        let staleness = self.shared.staleness_loop(cancel.clone());
        let forget = self.shared.forget_loop(cancel.clone());
        tokio::select! {
            () = reflect => {}
            () = resync => {}
            () = staleness => {}
            () = forget => {}
        }
        if self.shared.options.snapshot.is_some() {
            self.shared
                .snapshots
                .last(&self.shared.stats, &self.shared.metrics, &self.shared.store)
                .await;
        }
        self.shared.stop_listeners().await;
        self.shared.status.send_replace(InformerStatus::Stopped);
    }
}

impl fmt::Debug for SharedInformer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedInformer")
            .field("resource", &self.shared.key)
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
