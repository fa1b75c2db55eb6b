//! Shared informers: one cache and one watch per resource, any number of
//! event handlers.
//!
//! Data flows one way: [`Reflector`] → transform → [`StoreWriter`] (with its
//! indexes) → dispatcher → one queue per handler → handler. Every handler
//! receives the very `Arc<DynamicObject>` the store holds; nothing is deep
//! cloned on fan-out.
//!
//! # Guarantees
//!
//! - **Replay**: a handler added at any time — before start, during the
//!   initial list, or long after — first receives an
//!   [`Event::Add`] with `in_initial_list = true` for every object already
//!   cached, then the live events, with no gap and no duplicate. Store updates
//!   and the enqueueing of their events happen under one lock, and a new
//!   handler takes its snapshot under the same lock.
//! - **Isolation**: each handler has its own unbounded queue and its own
//!   thread. A slow handler delays neither the others nor the cache; its
//!   backlog is visible through [`Registration::backlog`]. A handler that
//!   panics is caught, logged and counted ([`Registration::panics`]), and
//!   receives the next event as usual.
//! - **Relists reconcile**: after a relist the cache equals the server;
//!   objects that vanished are delivered as [`Event::Delete`] with
//!   `final_state_unknown = true` and their last known state (client-go's
//!   tombstone); changed objects as updates; unchanged ones produce nothing.
//! - **Resync** re-delivers the cache from memory as
//!   `Update { is_resync: true }` (see [`crate::resync`] for the period
//!   rules); it never contacts the API server.
//!
//! [`Reflector`]: crate::reflector::Reflector
//! [`StoreWriter`]: crate::store::StoreWriter

use std::collections::BTreeMap;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use kube_client::{Api, Client};
use kube_core::{ApiResource, DynamicObject};
use parking_lot::Mutex;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::index::IndexFn;
use crate::object_key::object_key;
use crate::reflector::{
    ApiListWatch, Delta, ListWatch, Reflector, ReflectorConfig, ReflectorStats, ReflectorStatus,
};
use crate::resync::ResyncClock;
use crate::store::{Store, StoreError, StoreWriter};

/// A change delivered to handlers.
///
/// Objects are shared: every handler gets the same `Arc` the cache holds.
#[derive(Clone, Debug)]
pub enum Event {
    /// An object appeared in the cache.
    Add {
        /// The object.
        object: Arc<DynamicObject>,
        /// True when the object was part of the cache's first list, or of the
        /// replay a late handler receives when it is added.
        in_initial_list: bool,
    },
    /// An object changed, or a resync re-delivered it.
    Update {
        /// The cached state before the change (for a resync: the same object
        /// as `new`).
        old: Arc<DynamicObject>,
        /// The new state.
        new: Arc<DynamicObject>,
        /// True for a resync: nothing changed on the server.
        is_resync: bool,
    },
    /// An object left the cache.
    Delete {
        /// The object's final state, or, when `final_state_unknown`, the
        /// last state the cache knew.
        object: Arc<DynamicObject>,
        /// True when the deletion was inferred from a relist (the watch missed
        /// it), so `object` may be stale — client-go's
        /// `DeletedFinalStateUnknown`.
        final_state_unknown: bool,
    },
}

impl Event {
    /// The object the event is about (the new state for an update).
    pub fn object(&self) -> &Arc<DynamicObject> {
        match self {
            Event::Add { object, .. } | Event::Delete { object, .. } => object,
            Event::Update { new, .. } => new,
        }
    }

    /// A short name of the event type: `Add`, `Update`, `Resync` or `Delete`.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Add { .. } => "Add",
            Event::Update {
                is_resync: true, ..
            } => "Resync",
            Event::Update { .. } => "Update",
            Event::Delete { .. } => "Delete",
        }
    }
}

/// Receives an informer's events, one at a time, on the handler's own thread.
///
/// Closures `Fn(Event)` implement it.
///
/// ```
/// use kube_dynamic_informer::informer::{Event, EventHandler};
///
/// struct Printer;
/// impl EventHandler for Printer {
///     fn on_event(&self, event: Event) {
///         println!("{} {:?}", event.kind(), event.object().metadata.name);
///     }
/// }
/// let _closure_handler = |event: Event| println!("{}", event.kind());
/// ```
pub trait EventHandler: Send + Sync + 'static {
    /// Handles one event. A panic is caught, logged and counted; the handler
    /// then receives the next event.
    fn on_event(&self, event: Event);
}

impl<F: Fn(Event) + Send + Sync + 'static> EventHandler for F {
    fn on_event(&self, event: Event) {
        self(event)
    }
}

/// A function applied to each object before it is cached, e.g. to drop
/// fields nobody reads. It changes cache memory, not network traffic.
pub type Transform = Arc<dyn Fn(DynamicObject) -> DynamicObject + Send + Sync>;

/// The ready-made transform that removes `metadata.managedFields`, often the
/// largest part of an object and rarely read by informer users.
///
/// ```
/// use kube_dynamic_informer::informer::strip_managed_fields;
/// let strip = strip_managed_fields();
/// let obj: kube_core::DynamicObject = serde_json::from_value(serde_json::json!({
///     "metadata": { "name": "a", "managedFields": [{ "manager": "kubectl" }] }
/// })).unwrap();
/// assert!(strip(obj).metadata.managed_fields.is_none());
/// ```
pub fn strip_managed_fields() -> Transform {
    Arc::new(|mut obj: DynamicObject| {
        obj.metadata.managed_fields = None;
        obj
    })
}

/// Whether a resource's objects live in namespaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Objects belong to a namespace (pods, deployments).
    Namespaced,
    /// Objects are cluster-wide (nodes, namespaces, CRDs).
    Cluster,
}

/// How an informer lists, watches and resyncs.
#[derive(Clone, Default)]
pub struct InformerConfig {
    /// Watch only this namespace (namespaced resources only); `None` = all.
    pub namespace: Option<String>,
    /// Selectors, page size, streaming lists, backoff and the error hook.
    pub reflector: ReflectorConfig,
    /// Default resync period of handlers; zero (the default, as client-go's
    /// `NewSharedIndexInformer(..., 0, ...)`) disables resync for every
    /// handler.
    pub resync: Duration,
    /// Applied to each object before it is cached.
    pub transform: Option<Transform>,
    /// Indexes besides the namespace index, by name.
    pub indexes: BTreeMap<String, IndexFn>,
}

impl InformerConfig {
    /// Restricts the informer to one namespace.
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Sets the label selector for list and watch.
    #[must_use]
    pub fn label_selector(mut self, selector: impl Into<String>) -> Self {
        self.reflector.label_selector = Some(selector.into());
        self
    }

    /// Sets the field selector for list and watch.
    #[must_use]
    pub fn field_selector(mut self, selector: impl Into<String>) -> Self {
        self.reflector.field_selector = Some(selector.into());
        self
    }

    /// Sets the default resync period (zero disables resync).
    #[must_use]
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = period;
        self
    }

    /// Sets the transform applied before caching.
    #[must_use]
    pub fn transform(mut self, transform: Transform) -> Self {
        self.transform = Some(transform);
        self
    }

    /// Strips `metadata.managedFields` before caching.
    #[must_use]
    pub fn strip_managed_fields(self) -> Self {
        self.transform(strip_managed_fields())
    }

    /// Adds an index.
    #[must_use]
    pub fn index(mut self, name: impl Into<String>, func: IndexFn) -> Self {
        self.indexes.insert(name.into(), func);
        self
    }

    /// Objects per list page (0: one unpaged list; default 500, as
    /// client-go). With [`ApiListWatch`] and
    /// the factory's informers, page *k + 1* is requested as soon as page
    /// *k* has arrived, so the server prepares it while page *k* is decoded.
    #[must_use]
    pub fn page_size(mut self, page_size: u32) -> Self {
        self.reflector.page_size = page_size;
        self
    }

    /// Uses streaming lists (`sendInitialEvents`) where the server has them
    /// (off by default). The server then answers the initial list from its
    /// watch cache as a stream of events, without building pages: less
    /// memory on the server for very large lists. A server that refuses it
    /// gets a paged list instead. Off by default because a paged list with
    /// the next page requested ahead syncs at least as fast (see
    /// BENCHMARKS.md), and because a server or proxy that ignores
    /// `sendInitialEvents` would never send the bookmark that ends the
    /// initial events.
    #[must_use]
    pub fn streaming_list(mut self, enabled: bool) -> Self {
        self.reflector.streaming_list = enabled;
        self
    }
}

impl fmt::Debug for InformerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerConfig")
            .field("namespace", &self.namespace)
            .field("reflector", &self.reflector)
            .field("resync", &self.resync)
            .field("transform", &self.transform.as_ref().map(|_| "<fn>"))
            .field("indexes", &self.indexes)
            .finish()
    }
}

/// Errors of informer construction and use.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InformerError {
    /// A namespace was given for a cluster-scoped resource.
    #[error("{resource} is cluster-scoped: it cannot be restricted to namespace {namespace:?}")]
    NamespaceOnClusterScoped {
        /// The resource.
        resource: String,
        /// The namespace asked for.
        namespace: String,
    },
    /// An index could not be added.
    #[error("{resource}: {source}")]
    Index {
        /// The resource.
        resource: String,
        /// The store's error.
        #[source]
        source: StoreError,
    },
    /// `run` or `start` was called on an informer that already ran.
    #[error("informer for {resource} was already started")]
    AlreadyStarted {
        /// The resource.
        resource: String,
    },
    /// The cache did not sync in time.
    #[error("{resource} did not sync within {timeout:?}; last status: {status}")]
    SyncTimeout {
        /// The resource.
        resource: String,
        /// How long was waited.
        timeout: Duration,
        /// What the informer was doing then (e.g. backing off after a 403).
        status: InformerStatus,
    },
    /// The informer stopped before its cache synced.
    #[error("{resource} stopped before its cache synced")]
    StoppedBeforeSync {
        /// The resource.
        resource: String,
    },
}

/// What an informer is doing.
#[derive(Clone, Debug, PartialEq)]
pub enum InformerStatus {
    /// Created, not started.
    NotStarted,
    /// Listing; `listed` objects received so far.
    Syncing {
        /// Objects received so far in the current list.
        listed: usize,
    },
    /// The cache holds a complete list and the watch is running.
    Synced,
    /// The last list or watch failed; retrying after a backoff.
    BackingOff {
        /// The error, as text.
        error: String,
        /// HTTP status code of the error, when there is one (403, 404, ...).
        code: Option<u16>,
        /// Failures in a row.
        attempt: u32,
        /// Wait before the next try.
        retry_in: Duration,
        /// Whether the cache had synced before (it is then still served,
        /// possibly stale).
        synced_before: bool,
    },
    /// The resource is not served (yet) — a CRD that is not installed, say;
    /// the informer sends no request and starts by itself once discovery
    /// sees the resource. Only informers given an availability channel
    /// ([`ReflectorConfig::availability`], as the
    /// [factory](crate::factory) does) report this; others see 404s.
    Pending {
        /// Why the resource is not served.
        reason: String,
    },
    /// The resource was synced and is no longer served (its CRD was
    /// deleted): the cache was emptied (handlers got the deletes), and the
    /// informer waits, without requests, until the resource is served again.
    Gone {
        /// Why the resource is not served.
        reason: String,
    },
    /// Stopped.
    Stopped,
}

impl fmt::Display for InformerStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InformerStatus::NotStarted => write!(f, "not started"),
            InformerStatus::Syncing { listed } => write!(f, "syncing ({listed} objects listed)"),
            InformerStatus::Synced => write!(f, "synced"),
            InformerStatus::BackingOff {
                error,
                attempt,
                retry_in,
                ..
            } => write!(
                f,
                "backing off after failure {attempt} (retry in {retry_in:?}): {error}"
            ),
            InformerStatus::Pending { reason } => write!(f, "pending: {reason}"),
            InformerStatus::Gone { reason } => write!(f, "gone: {reason}"),
            InformerStatus::Stopped => write!(f, "stopped"),
        }
    }
}

/// Options of one handler registration.
#[derive(Clone, Debug, Default)]
pub struct HandlerOptions {
    /// This handler's resync period; `None` uses the informer's default.
    /// Zero disables resync for this handler.
    pub resync: Option<Duration>,
}

/// What the dispatcher pushes into a handler's queue.
enum Item {
    Event(Event),
    /// All initial Adds were queued before this marker: once the consumer
    /// reaches it, the registration has synced.
    Synced,
}

/// The shared counters of one registration.
#[derive(Debug, Default)]
struct ListenerState {
    id: u64,
    backlog: AtomicUsize,
    delivered: AtomicU64,
    panics: AtomicU64,
    synced: AtomicBool,
    removed: AtomicBool,
}

/// Where a listener's events go.
enum Sink {
    /// A queue drained by a handler thread or an event stream.
    Queue(mpsc::UnboundedSender<Item>),
    /// Called in place (non-shared informer).
    Inline(Arc<dyn EventHandler>),
}

struct Listener {
    state: Arc<ListenerState>,
    sink: Sink,
    /// Requested resync period (`None`: informer default).
    requested_resync: Option<Duration>,
    /// Effective resync period; zero = never.
    resync: Duration,
    next_resync: Option<Instant>,
    /// The Synced marker was sent.
    sync_marked: bool,
}

impl Listener {
    /// Queues an event; false when the consumer is gone.
    fn push(&self, event: Event, resource: &str) -> bool {
        match &self.sink {
            Sink::Queue(tx) => {
                self.state.backlog.fetch_add(1, Ordering::Relaxed);
                if tx.send(Item::Event(event)).is_err() {
                    self.state.backlog.fetch_sub(1, Ordering::Relaxed);
                    return false;
                }
                true
            }
            Sink::Inline(handler) => {
                deliver(handler.as_ref(), event, &self.state, resource);
                true
            }
        }
    }

    fn mark_synced(&mut self) {
        if self.sync_marked {
            return;
        }
        self.sync_marked = true;
        match &self.sink {
            Sink::Queue(tx) => {
                let _ = tx.send(Item::Synced);
            }
            Sink::Inline(_) => self.state.synced.store(true, Ordering::Release),
        }
    }

    fn is_closed(&self) -> bool {
        self.state.removed.load(Ordering::Acquire)
            || matches!(&self.sink, Sink::Queue(tx) if tx.is_closed())
    }
}

/// Calls the handler, catching and counting a panic.
fn deliver(handler: &dyn EventHandler, event: Event, state: &ListenerState, resource: &str) {
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| handler.on_event(event)));
    state.delivered.fetch_add(1, Ordering::Relaxed);
    if let Err(panic) = result {
        state.panics.fetch_add(1, Ordering::Relaxed);
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "<non-string panic>".into());
        tracing::error!(resource, registration = state.id, panic = %message, "event handler panicked; it will receive the next event");
    }
}

/// Everything guarded by the dispatch lock.
struct Dispatch {
    listeners: Vec<Listener>,
    clock: ResyncClock,
    started: bool,
    synced: bool,
    next_id: u64,
}

struct Shared {
    resource: ApiResource,
    resource_name: String,
    config: InformerConfig,
    lw: Mutex<Option<Box<dyn FnOnce() -> BoxedRun + Send>>>,
    store: Store,
    writer: Mutex<Option<StoreWriter>>,
    dispatch: Mutex<Dispatch>,
    status: watch::Sender<InformerStatus>,
    stats: Mutex<Option<Arc<ReflectorStats>>>,
    /// Handler threads, joined on stop.
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
    /// Resync ticks wake up when the check period changes.
    resync_changed: tokio::sync::Notify,
}

/// Where the reflector hands its deltas.
type DeltaSink = Box<dyn FnMut(Delta) + Send>;

/// A type-erased reflector's run function.
type RunFn =
    Box<dyn FnOnce(CancellationToken, DeltaSink) -> futures::future::BoxFuture<'static, ()> + Send>;

/// A type-erased reflector ready to run.
type BoxedRun = (Arc<ReflectorStats>, watch::Receiver<ReflectorStatus>, RunFn);

/// One cache and one watch for a resource, shared by any number of handlers.
///
/// Cheap to clone; clones share everything.
///
/// ```no_run
/// # async fn demo(client: kube_client::Client) -> Result<(), Box<dyn std::error::Error>> {
/// use kube_core::ApiResource;
/// use kube_dynamic_informer::index::IndexFn;
/// use kube_dynamic_informer::informer::{Event, InformerConfig, Scope, SharedInformer};
/// use tokio_util::sync::CancellationToken;
///
/// let pods = ApiResource {
///     group: "".into(), version: "v1".into(), api_version: "v1".into(),
///     kind: "Pod".into(), plural: "pods".into(),
/// };
/// let config = InformerConfig::default()
///     .strip_managed_fields()
///     .index("node", IndexFn::jmespath("node", "spec.nodeName")?);
/// let informer = SharedInformer::new(client, pods, Scope::Namespaced, config)?;
/// informer.add_handler(|event: Event| println!("{} {:?}", event.kind(), event.object().metadata.name));
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
pub struct SharedInformer {
    shared: Arc<Shared>,
}

impl SharedInformer {
    /// An informer for `resource` through `client`.
    ///
    /// # Errors
    /// A namespace restriction on a cluster-scoped resource; an index that
    /// cannot be added.
    pub fn new(
        client: Client,
        resource: ApiResource,
        scope: Scope,
        config: InformerConfig,
    ) -> Result<Self, InformerError> {
        let api = match (&config.namespace, scope) {
            (Some(ns), Scope::Namespaced) => {
                Api::<DynamicObject>::namespaced_with(client, ns, &resource)
            }
            (Some(ns), Scope::Cluster) => {
                return Err(InformerError::NamespaceOnClusterScoped {
                    resource: display_resource(&resource),
                    namespace: ns.clone(),
                });
            }
            (None, _) => Api::<DynamicObject>::all_with(client, &resource),
        };
        Self::with_list_watch(ApiListWatch::new(api), resource, config)
    }

    /// An informer over any [`ListWatch`] (for instance one that counts or
    /// rewrites requests). The namespace restriction of `config` is the
    /// `ListWatch`'s business here.
    ///
    /// # Errors
    /// An index that cannot be added.
    pub fn with_list_watch<L: ListWatch>(
        lw: L,
        resource: ApiResource,
        config: InformerConfig,
    ) -> Result<Self, InformerError> {
        let writer = StoreWriter::new();
        let store = writer.reader();
        let resource_name = display_resource(&resource);
        for (name, func) in &config.indexes {
            store
                .add_index(name.clone(), func.clone())
                .map_err(|source| InformerError::Index {
                    resource: resource_name.clone(),
                    source,
                })?;
        }
        let mut reflector_config = config.reflector.clone();
        // The reflector transforms each object as it arrives (list pages
        // included), so raw objects never pile up before the cache.
        if reflector_config.transform.is_none() {
            reflector_config.transform.clone_from(&config.transform);
        }
        let ar = resource.clone();
        let make: Box<dyn FnOnce() -> BoxedRun + Send> = Box::new(move || {
            let reflector = Reflector::new(lw, ar, reflector_config);
            let stats = reflector.stats();
            let status = reflector.status();
            let run: RunFn = Box::new(move |cancel, sink| Box::pin(reflector.run(cancel, sink)));
            (stats, status, run)
        });
        Ok(Self {
            shared: Arc::new(Shared {
                resource_name,
                resource,
                dispatch: Mutex::new(Dispatch {
                    listeners: Vec::new(),
                    clock: ResyncClock::new(config.resync),
                    started: false,
                    synced: false,
                    next_id: 1,
                }),
                config,
                lw: Mutex::new(Some(make)),
                store,
                writer: Mutex::new(Some(writer)),
                status: watch::Sender::new(InformerStatus::NotStarted),
                stats: Mutex::new(None),
                threads: Mutex::new(Vec::new()),
                resync_changed: tokio::sync::Notify::new(),
            }),
        })
    }

    /// The resource this informer caches.
    pub fn resource(&self) -> &ApiResource {
        &self.shared.resource
    }

    /// The read-only cache, with its indexes.
    pub fn store(&self) -> Store {
        self.shared.store.clone()
    }

    /// Adds an index, at any time; existing objects are indexed at once.
    ///
    /// # Errors
    /// A duplicate name.
    pub fn add_index(&self, name: impl Into<String>, func: IndexFn) -> Result<(), InformerError> {
        self.shared
            .store
            .add_index(name, func)
            .map_err(|source| InformerError::Index {
                resource: self.shared.resource_name.clone(),
                source,
            })
    }

    /// Adds a handler with the informer's default resync period. See
    /// [`add_handler_with`](Self::add_handler_with).
    pub fn add_handler(&self, handler: impl EventHandler) -> Registration {
        self.add_handler_with(handler, HandlerOptions::default())
    }

    /// Adds a handler, before or after start. It first receives an Add (with
    /// `in_initial_list = true`) for every cached object, then live events.
    /// It runs on a thread of its own until [`Registration::remove`] or the
    /// informer stops.
    pub fn add_handler_with(
        &self,
        handler: impl EventHandler,
        options: HandlerOptions,
    ) -> Registration {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let state = self.register(Sink::Queue(tx), options.resync);
        let thread_state = state.clone();
        let resource = self.shared.resource_name.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("kdi-handler-{}", state.id))
            .spawn(move || {
                while let Some(item) = rx.blocking_recv() {
                    if thread_state.removed.load(Ordering::Acquire) {
                        break;
                    }
                    match item {
                        Item::Event(event) => {
                            deliver(&handler, event, &thread_state, &resource);
                            thread_state.backlog.fetch_sub(1, Ordering::Relaxed);
                        }
                        Item::Synced => thread_state.synced.store(true, Ordering::Release),
                    }
                }
            });
        match spawned {
            Ok(handle) => self.shared.threads.lock().push(handle),
            Err(e) => {
                tracing::error!(resource = %self.shared.resource_name, error = %e, "could not start a handler thread");
                state.removed.store(true, Ordering::Release);
            }
        }
        Registration {
            state,
            informer: Arc::downgrade(&self.shared),
        }
    }

    /// A stream of events with the same replay guarantee as a handler: first
    /// an Add for every cached object, then live events. Dropping the stream
    /// unregisters it.
    pub fn events(&self) -> EventStream {
        self.events_with(HandlerOptions::default())
    }

    /// [`events`](Self::events) with handler options (its own resync period).
    pub fn events_with(&self, options: HandlerOptions) -> EventStream {
        let (tx, rx) = mpsc::unbounded_channel();
        let state = self.register(Sink::Queue(tx), options.resync);
        EventStream {
            rx,
            state,
            informer: Arc::downgrade(&self.shared),
        }
    }

    fn register(&self, sink: Sink, requested_resync: Option<Duration>) -> Arc<ListenerState> {
        let mut d = self.shared.dispatch.lock();
        let id = d.next_id;
        d.next_id += 1;
        let state = Arc::new(ListenerState {
            id,
            ..ListenerState::default()
        });
        let started = d.started;
        let requested = requested_resync.unwrap_or(self.shared.config.resync);
        let r = d.clock.add_handler(requested, started);
        if r.check_period_lowered {
            let clock = d.clock;
            let default = self.shared.config.resync;
            for l in &mut d.listeners {
                l.resync = clock.effective(l.requested_resync.unwrap_or(default));
            }
            self.shared.resync_changed.notify_one();
        }
        let mut listener = Listener {
            state: state.clone(),
            sink,
            requested_resync,
            resync: r.period,
            next_resync: (!r.period.is_zero()).then(|| Instant::now() + r.period),
            sync_marked: false,
        };
        // Replay under the dispatch lock: no event can slip between the
        // snapshot and the registration.
        for object in self.shared.store.list() {
            listener.push(
                Event::Add {
                    object,
                    in_initial_list: true,
                },
                &self.shared.resource_name,
            );
        }
        if d.synced {
            listener.mark_synced();
        }
        d.listeners.push(listener);
        state
    }

    /// Whether the cache holds a complete list (it stays true through later
    /// relists and backoffs).
    pub fn has_synced(&self) -> bool {
        self.shared.dispatch.lock().synced
    }

    /// The current status.
    pub fn status(&self) -> InformerStatus {
        self.shared.status.borrow().clone()
    }

    /// A receiver that sees every status change.
    pub fn watch_status(&self) -> watch::Receiver<InformerStatus> {
        self.shared.status.subscribe()
    }

    /// The reflector's counters (lists, relists, watches, errors); `None`
    /// before start.
    pub fn stats(&self) -> Option<Arc<ReflectorStats>> {
        self.shared.stats.lock().clone()
    }

    /// Waits until the cache has synced.
    ///
    /// # Errors
    /// [`InformerError::SyncTimeout`] with the last status (which names a
    /// 403 or a 404 when that is what is happening), or
    /// [`InformerError::StoppedBeforeSync`].
    pub async fn wait_for_sync(&self, timeout: Duration) -> Result<(), InformerError> {
        let mut rx = self.shared.status.subscribe();
        let synced = tokio::time::timeout(timeout, async {
            loop {
                if self.has_synced() {
                    return true;
                }
                if *rx.borrow_and_update() == InformerStatus::Stopped {
                    return false;
                }
                if rx.changed().await.is_err() {
                    return self.has_synced();
                }
            }
        })
        .await;
        match synced {
            Ok(true) => Ok(()),
            Ok(false) => Err(InformerError::StoppedBeforeSync {
                resource: self.shared.resource_name.clone(),
            }),
            Err(_) => Err(InformerError::SyncTimeout {
                resource: self.shared.resource_name.clone(),
                timeout,
                status: self.status(),
            }),
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

    /// Lists, watches and dispatches until `cancel` fires, then stops every
    /// handler thread (waiting up to 5 s for handlers still running) and
    /// returns.
    ///
    /// # Errors
    /// [`InformerError::AlreadyStarted`].
    pub async fn run(&self, cancel: CancellationToken) -> Result<(), InformerError> {
        let run = self.prepare()?;
        self.run_prepared(run, cancel).await;
        Ok(())
    }

    fn prepare(&self) -> Result<(BoxedRun, StoreWriter), InformerError> {
        let already = || InformerError::AlreadyStarted {
            resource: self.shared.resource_name.clone(),
        };
        let make = self.shared.lw.lock().take().ok_or_else(already)?;
        let writer = self.shared.writer.lock().take().ok_or_else(already)?;
        let run = make();
        *self.shared.stats.lock() = Some(run.0.clone());
        self.shared.dispatch.lock().started = true;
        self.shared
            .status
            .send_replace(InformerStatus::Syncing { listed: 0 });
        Ok((run, writer))
    }

    async fn run_prepared(&self, prepared: (BoxedRun, StoreWriter), cancel: CancellationToken) {
        let ((_stats, mut reflector_status, run), mut writer) = prepared;
        let shared = self.shared.clone();
        let sink: DeltaSink = Box::new(move |delta| shared.process(&mut writer, delta));
        let reflect = run(cancel.clone(), sink);
        let status = async {
            while reflector_status.changed().await.is_ok() {
                let s = reflector_status.borrow_and_update().clone();
                self.shared.forward_status(s);
            }
        };
        let resync = self.shared.resync_loop(cancel.clone());
        tokio::select! {
            _ = reflect => {}
            _ = status => {}
            _ = resync => {}
        }
        self.shared.stop_listeners().await;
        self.shared.status.send_replace(InformerStatus::Stopped);
    }
}

impl Shared {
    /// Applies one delta to the store and queues its events, under the
    /// dispatch lock.
    fn process(&self, writer: &mut StoreWriter, delta: Delta) {
        // Objects arrive transformed (see ReflectorConfig::transform).
        let mut d = self.dispatch.lock();
        let mut events = Vec::new();
        let mut first_sync = false;
        match delta {
            Delta::Replace(objects) => {
                let objects = objects.into_iter().map(Arc::new).collect();
                let outcome = writer.replace(objects);
                let initial = !d.synced;
                events.reserve(outcome.added.len() + outcome.updated.len() + outcome.deleted.len());
                events.extend(outcome.added.into_iter().map(|object| Event::Add {
                    object,
                    in_initial_list: initial,
                }));
                events.extend(outcome.updated.into_iter().map(|(old, new)| Event::Update {
                    old,
                    new,
                    is_resync: false,
                }));
                events.extend(outcome.deleted.into_iter().map(|object| Event::Delete {
                    object,
                    final_state_unknown: true,
                }));
                if !d.synced {
                    d.synced = true;
                    first_sync = true;
                }
            }
            Delta::Upsert(object) => {
                let new = Arc::new(object);
                events.push(match writer.upsert(new.clone()) {
                    Some(old) => Event::Update {
                        old,
                        new,
                        is_resync: false,
                    },
                    None => Event::Add {
                        object: new,
                        in_initial_list: false,
                    },
                });
            }
            Delta::Delete(object) => {
                if let Some(key) = object_key(&object)
                    && writer.delete(&key).is_some()
                {
                    events.push(Event::Delete {
                        object: Arc::new(object),
                        final_state_unknown: false,
                    });
                }
            }
        }
        let resource = &self.resource_name;
        d.listeners.retain_mut(|l| {
            if l.is_closed() {
                return false;
            }
            for e in &events {
                if !l.push(e.clone(), resource) {
                    return false;
                }
            }
            if first_sync {
                l.mark_synced();
            }
            true
        });
        drop(d);
        if first_sync {
            self.status.send_replace(InformerStatus::Synced);
        }
    }

    fn forward_status(&self, s: ReflectorStatus) {
        let synced = self.dispatch.lock().synced;
        let status = match s {
            ReflectorStatus::Idle => return,
            ReflectorStatus::Listing { objects } if !synced => {
                InformerStatus::Syncing { listed: objects }
            }
            // A relist of a synced cache: the cache is still served.
            ReflectorStatus::Listing { .. } => InformerStatus::Synced,
            ReflectorStatus::Watching => {
                if synced {
                    InformerStatus::Synced
                } else {
                    return;
                }
            }
            ReflectorStatus::BackingOff {
                error,
                code,
                attempt,
                retry_in,
            } => InformerStatus::BackingOff {
                error,
                code,
                attempt,
                retry_in,
                synced_before: synced,
            },
            ReflectorStatus::Pending { reason } => InformerStatus::Pending { reason },
            ReflectorStatus::Gone { reason } => InformerStatus::Gone { reason },
            ReflectorStatus::Stopped => InformerStatus::Stopped,
        };
        self.status.send_if_modified(|cur| {
            if *cur == status {
                false
            } else {
                *cur = status;
                true
            }
        });
    }

    /// Delivers due resyncs every check period.
    async fn resync_loop(&self, cancel: CancellationToken) {
        loop {
            let check = self.dispatch.lock().clock.check_period();
            if check.is_zero() {
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = self.resync_changed.notified() => continue,
                }
            }
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = self.resync_changed.notified() => continue,
                _ = tokio::time::sleep(check) => {}
            }
            self.resync_due(Instant::now());
        }
    }

    fn resync_due(&self, now: Instant) {
        let mut d = self.dispatch.lock();
        if !d.synced {
            return;
        }
        let due: Vec<usize> = d
            .listeners
            .iter()
            .enumerate()
            .filter(|(_, l)| l.next_resync.is_some_and(|t| t <= now))
            .map(|(i, _)| i)
            .collect();
        if due.is_empty() {
            return;
        }
        let objects = self.store.list();
        for i in due {
            let l = &mut d.listeners[i];
            for o in &objects {
                l.push(
                    Event::Update {
                        old: o.clone(),
                        new: o.clone(),
                        is_resync: true,
                    },
                    &self.resource_name,
                );
            }
            l.next_resync = Some(now + l.resync);
        }
    }

    /// Closes every queue and waits (up to 5 s) for handler threads to end.
    async fn stop_listeners(&self) {
        {
            let mut d = self.dispatch.lock();
            for l in &d.listeners {
                l.state.removed.store(true, Ordering::Release);
            }
            d.listeners.clear();
        }
        let handles = std::mem::take(&mut *self.threads.lock());
        let deadline = Instant::now() + Duration::from_secs(5);
        for h in handles {
            while !h.is_finished() && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            if h.is_finished() {
                let _ = h.join();
            } else {
                tracing::warn!(resource = %self.resource_name, "an event handler is still running after stop; its thread is left to finish");
            }
        }
    }
}

/// The handle of one handler registration.
pub struct Registration {
    state: Arc<ListenerState>,
    informer: std::sync::Weak<Shared>,
}

impl Registration {
    /// True once the handler has returned from every initial Add (the
    /// informer must have synced first).
    pub fn has_synced(&self) -> bool {
        self.state.synced.load(Ordering::Acquire)
    }

    /// Events queued for this handler and not yet handled (including one in
    /// progress).
    pub fn backlog(&self) -> usize {
        self.state.backlog.load(Ordering::Relaxed)
    }

    /// Events handled so far.
    pub fn delivered(&self) -> u64 {
        self.state.delivered.load(Ordering::Relaxed)
    }

    /// Panics caught in this handler.
    pub fn panics(&self) -> u64 {
        self.state.panics.load(Ordering::Relaxed)
    }

    /// Stops delivering events to this handler. Queued events are dropped;
    /// an event being handled finishes.
    pub fn remove(self) {
        self.state.removed.store(true, Ordering::Release);
        if let Some(shared) = self.informer.upgrade() {
            shared
                .dispatch
                .lock()
                .listeners
                .retain(|l| l.state.id != self.state.id);
        }
    }
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("id", &self.state.id)
            .field("synced", &self.has_synced())
            .field("backlog", &self.backlog())
            .field("panics", &self.panics())
            .finish()
    }
}

/// An async stream of an informer's events (see [`SharedInformer::events`]).
pub struct EventStream {
    rx: mpsc::UnboundedReceiver<Item>,
    state: Arc<ListenerState>,
    informer: std::sync::Weak<Shared>,
}

impl EventStream {
    /// True once every initial Add has been taken from the stream.
    pub fn has_synced(&self) -> bool {
        self.state.synced.load(Ordering::Acquire)
    }

    /// Events queued and not yet taken.
    pub fn backlog(&self) -> usize {
        self.state.backlog.load(Ordering::Relaxed)
    }
}

impl Stream for EventStream {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        loop {
            match self.rx.poll_recv(cx) {
                Poll::Ready(Some(Item::Event(e))) => {
                    self.state.backlog.fetch_sub(1, Ordering::Relaxed);
                    self.state.delivered.fetch_add(1, Ordering::Relaxed);
                    return Poll::Ready(Some(e));
                }
                Poll::Ready(Some(Item::Synced)) => {
                    self.state.synced.store(true, Ordering::Release);
                }
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        self.state.removed.store(true, Ordering::Release);
        if let Some(shared) = self.informer.upgrade() {
            shared
                .dispatch
                .lock()
                .listeners
                .retain(|l| l.state.id != self.state.id);
        }
    }
}

impl fmt::Debug for EventStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventStream")
            .field("id", &self.state.id)
            .field("synced", &self.has_synced())
            .field("backlog", &self.backlog())
            .finish()
    }
}

impl fmt::Debug for SharedInformer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedInformer")
            .field("resource", &self.shared.resource_name)
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

/// `plural.version.group` (`plural.version` for the core group).
pub(crate) fn display_resource(r: &ApiResource) -> String {
    if r.group.is_empty() {
        format!("{}.{}", r.plural, r.version)
    } else {
        format!("{}.{}.{}", r.plural, r.version, r.group)
    }
}

/// An informer with one fixed handler, called in place by the dispatch loop:
/// no queues, no threads, no fan-out — cheaper when sharing is not needed.
/// A slow handler here slows the cache's updates.
pub struct Informer {
    inner: SharedInformer,
    handler: Arc<dyn EventHandler>,
}

impl Informer {
    /// A non-shared informer for `resource` with `handler`.
    ///
    /// # Errors
    /// As [`SharedInformer::new`].
    pub fn new(
        client: Client,
        resource: ApiResource,
        scope: Scope,
        config: InformerConfig,
        handler: impl EventHandler,
    ) -> Result<Self, InformerError> {
        Ok(Self {
            inner: SharedInformer::new(client, resource, scope, config)?,
            handler: Arc::new(handler),
        })
    }

    /// A non-shared informer over any [`ListWatch`].
    ///
    /// # Errors
    /// As [`SharedInformer::with_list_watch`].
    pub fn with_list_watch<L: ListWatch>(
        lw: L,
        resource: ApiResource,
        config: InformerConfig,
        handler: impl EventHandler,
    ) -> Result<Self, InformerError> {
        Ok(Self {
            inner: SharedInformer::with_list_watch(lw, resource, config)?,
            handler: Arc::new(handler),
        })
    }

    /// The read-only cache.
    pub fn store(&self) -> Store {
        self.inner.store()
    }

    /// The current status.
    pub fn status(&self) -> InformerStatus {
        self.inner.status()
    }

    /// Whether the cache holds a complete list.
    pub fn has_synced(&self) -> bool {
        self.inner.has_synced()
    }

    /// Runs until `cancel` fires, calling the handler for every event.
    ///
    /// # Errors
    /// [`InformerError::AlreadyStarted`].
    pub async fn run(&self, cancel: CancellationToken) -> Result<(), InformerError> {
        // Claim the run first, so that a second `run` adds no second handler.
        let run = self.inner.prepare()?;
        let state = self
            .inner
            .register(Sink::Inline(self.handler.clone()), None);
        drop(state);
        self.inner.run_prepared(run, cancel).await;
        Ok(())
    }
}

impl fmt::Debug for Informer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Informer")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
