//! [`Controller`]: workers that reconcile the keys of a [`WorkQueue`] fed
//! by informers, with the object read from the cache. The type's docs say
//! what it does; here are its parts: `sources` (where keys come from, and
//! the informers a running controller reads), `worker` (one key at a
//! time: read, call, settle), `context` (what the function is handed).

mod context;
mod sources;
#[cfg(test)]
mod tests;
mod worker;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kube_client::Client;
use tokio::sync::watch;

#[cfg(feature = "config")]
use crate::declarative::ResourceSet;
use crate::factory::InformerHandle;
use crate::informer::HandlerOptions;
use crate::vocabulary::setters;

use super::error::ReconcileError;
use super::key::ObjectRef;
use super::queue::WorkQueue;
use super::rate_limit::RateLimiter;

pub use context::Context;
use sources::Source;

/// What a reconcile function answers for a key it reconciled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Reconciled: the key comes back at the next event about it.
    Done,
    /// Reconciled, and to be reconciled again after this long (earlier
    /// if an event queues it), whatever happens meanwhile: for what
    /// changes with time rather than with the object (a certificate
    /// about to expire, a state polled elsewhere). controller-runtime's
    /// `Result{RequeueAfter: d}`.
    RequeueAfter(Duration),
}

/// Which owners an event on an owned object queues, and which of its
/// events; see [`Controller::owns_with`].
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct OwnsOptions {
    /// Every owner reference whose kind the controller watches, not only
    /// the one marked `controller: true` (controller-runtime's
    /// `EnqueueRequestForOwner` without `OnlyControllerOwner`). Off by
    /// default.
    pub all_owners: bool,
    /// The owned objects' events to take, as for any handler: a filter and
    /// a change predicate (see [`HandlerOptions`]).
    pub handler: HandlerOptions,
}

impl OwnsOptions {
    setters! {
        /// Sets [`all_owners`](Self::all_owners).
        all_owners(all: bool) => all;

        /// Sets [`handler`](Self::handler).
        handler(options: HandlerOptions) => options;
    }
}

/// Workers reconciling the objects of informers, one key at a time each:
/// controller-runtime's reconciler, on this library's caches.
///
/// A controller is built from its sources — the informers whose events
/// queue their objects' keys ([`watch`](Controller::watch),
/// [`watch_set`](Controller::watch_set)), the informers of objects whose
/// events queue their owners' keys ([`owns`](Controller::owns)), and a
/// period after which every key is queued again
/// ([`requeue_all_every`](Controller::requeue_all_every)) — and
/// [run](Controller::run) with a reconcile function. Each of its
/// [workers](Controller::workers) takes a key from the queue, reads the
/// object from the cache of its resource (a handle on the cached object,
/// no copy: [`Context::object`], `None` once it is deleted) and calls the
/// function, which answers:
///
/// - `Ok(Action::Done)`: the key's backoff is forgotten; it comes back at
///   the next event;
/// - `Ok(Action::RequeueAfter(d))`: the same, and the key comes back after
///   `d` (earlier if an event queues it);
/// - `Err(e)`, or a panic: logged (a panic also counted) and the key
///   retried after its rate limiter's delay ([`WorkQueue::add_rate_limited`];
///   client-go's default limiter unless [`rate_limiter`](Controller::rate_limiter)
///   says otherwise), [`Context::retries`] counting the failures.
///
/// The queue sees to it that a key is never reconciled by two workers at
/// once, and that a key changed while it was reconciled is reconciled once
/// more afterwards, however many events arrived meanwhile.
///
/// ```no_run
/// # async fn demo(factory: kube_dynamic_informer::InformerFactory) -> Result<(), Box<dyn std::error::Error>> {
/// use std::convert::Infallible;
/// use std::time::Duration;
/// use kube_dynamic_informer::reconcile::{Action, Context, Controller};
///
/// let widgets = factory.for_resource("widgets.example.com").await?;
/// let config_maps = factory.for_resource("configmaps").await?;
/// factory.start()?;
/// let controller = Controller::new("widgets")
///     .workers(4)
///     .watch(&widgets)
///     .owns(&config_maps);
/// let shutdown = controller.shutdown_handle();
/// tokio::spawn(async move {
///     let _ = tokio::signal::ctrl_c().await;
///     shutdown.shut_down_with_drain().await;
/// });
/// controller
///     .run(|ctx: Context| async move {
///         match ctx.object() {
///             Some(widget) => println!("{}: generation {:?}", ctx.key(), widget.pointer("/metadata/generation")),
///             None => println!("{}: deleted", ctx.key()),
///         }
///         Ok::<_, Infallible>(Action::RequeueAfter(Duration::from_secs(300)))
///     })
///     .await?;
/// # Ok(()) }
/// ```
///
/// # Metrics
///
/// Besides the queue's `workqueue_*` series (label `name`, the
/// controller's name; its gauges of unfinished work and of the longest
/// running reconcile are refreshed every half second while the controller
/// runs, so that a reconcile stuck in its work shows), with label
/// `controller`:
///
/// | series | type | what | controller-runtime |
/// |---|---|---|---|
/// | `kdi_reconcile_total` | counter | reconciles, by `result`: `success`, `requeue_after`, `error`, `panic` | `controller_runtime_reconcile_total` |
/// | `kdi_reconcile_errors_total` | counter | reconciles that returned an error | `controller_runtime_reconcile_errors_total` |
/// | `kdi_reconcile_panics_total` | counter | panics caught in the reconcile function | `controller_runtime_reconcile_panics_total` |
/// | `kdi_reconcile_duration_seconds` | histogram | time in the reconcile function | `controller_runtime_reconcile_time_seconds` |
/// | `kdi_reconcile_active_workers` | gauge | workers reconciling a key now | `controller_runtime_active_workers` |
#[must_use = "a controller does nothing until it is run"]
#[doc(alias = "Reconciler")]
pub struct Controller {
    name: String,
    workers: usize,
    queue: WorkQueue<ObjectRef>,
    client: Option<Client>,
    sources: Vec<Source>,
    requeue_every: Option<Duration>,
    shutdown: ShutdownHandle,
}

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name)
            .field("workers", &self.workers)
            .field("sources", &self.sources.len())
            .field("requeue_every", &self.requeue_every)
            .finish_non_exhaustive()
    }
}

impl Controller {
    /// A controller named `name` (in logs, and the label of its metrics and
    /// of its queue's), with one worker and client-go's default rate
    /// limiter for retries ([`default_controller`](super::default_controller)).
    pub fn new(name: impl Into<String>) -> Self {
        let name = name.into();
        Controller {
            queue: WorkQueue::new(name.clone()),
            name,
            workers: 1,
            client: None,
            sources: Vec::new(),
            requeue_every: None,
            shutdown: ShutdownHandle::default(),
        }
    }

    /// Reconciles up to `n` keys at once (at least one; controller-runtime's
    /// `MaxConcurrentReconciles`). Never two of the same key.
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n.max(1);
        self
    }

    /// Retries failed keys after `limiter`'s delays. This makes a new
    /// queue: take [`queue`](Self::queue) after it.
    pub fn rate_limiter(mut self, limiter: impl RateLimiter<ObjectRef>) -> Self {
        self.queue = WorkQueue::with_rate_limiter(self.name.clone(), limiter);
        self
    }

    /// The client reconcile functions write with ([`Context::client`]).
    /// Without one, a controller uses the client of the factory of its
    /// first source (the first [`watch`](Self::watch), [`owns`](Self::owns)
    /// or resource set).
    pub fn client(mut self, client: Client) -> Self {
        self.client = Some(client);
        self
    }

    /// Queues the key of the object of every event of `handle`'s informer
    /// (at start, every object it holds, as a late handler's replay). The
    /// key is queued in place, as the informer hands the event on, from the
    /// cached handle: nothing is decoded for it, no handler-pool thread
    /// woken.
    pub fn watch(self, handle: &InformerHandle) -> Self {
        self.watch_with(handle, HandlerOptions::default())
    }

    /// [`watch`](Self::watch) through a handler with `options`: with a
    /// [filter](HandlerOptions::filter), only the objects that meet it
    /// (one that stops meeting it is queued once more, to be let go of);
    /// with [changes](HandlerOptions::changes), only the updates that
    /// change what it names (controller-runtime's predicates).
    pub fn watch_with(mut self, handle: &InformerHandle, options: HandlerOptions) -> Self {
        self.sources.push(Source::Watch {
            handle: handle.clone(),
            options,
        });
        self
    }

    /// Queues, for every event of an object of `handle`'s informer, the key
    /// of its controller: the owner reference marked `controller: true`,
    /// when its group and kind are those of a resource this controller
    /// [watches](Self::watch) (the owner in the owned object's namespace,
    /// or cluster-scoped). An update queues the owners of both states, so
    /// an owner that lost the object hears of it. The owned objects are
    /// read through [`Context::lister`].
    pub fn owns(self, handle: &InformerHandle) -> Self {
        self.owns_with(handle, OwnsOptions::default())
    }

    /// [`owns`](Self::owns) with `options`: every owner, not only the
    /// controller; a filter and change predicate on the owned objects'
    /// events.
    pub fn owns_with(mut self, handle: &InformerHandle, options: OwnsOptions) -> Self {
        self.sources.push(Source::Owns {
            handle: handle.clone(),
            options,
        });
        self
    }

    /// Watches every member of `set` (each through the handler options of
    /// its entry: its `filter:` and `changes:`), following members as they
    /// come and go: a member that joins is watched from then on (its
    /// objects queued), one that leaves is no longer; the keys of its
    /// objects still queued are reconciled as absent.
    #[cfg(feature = "config")]
    pub fn watch_set(mut self, set: &ResourceSet) -> Self {
        self.sources.push(Source::Set(set.clone()));
        self
    }

    /// Queues the key of every object of the watched resources every
    /// `period` (from the caches: nothing is asked of the server), as
    /// controller-runtime's `SyncPeriod` does: a safety net for what is
    /// not an event, such as changes outside the cluster.
    pub fn requeue_all_every(mut self, period: Duration) -> Self {
        self.requeue_every = Some(period).filter(|p| !p.is_zero());
        self
    }

    /// The controller's queue: to add keys by hand, or read its length.
    #[must_use]
    pub fn queue(&self) -> &WorkQueue<ObjectRef> {
        &self.queue
    }

    /// The controller's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What stops [`run`](Self::run), from anywhere.
    #[must_use]
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        self.shutdown.clone()
    }

    /// Registers the sources and runs the workers, each calling `reconcile`
    /// with one key at a time, until the [`ShutdownHandle`] says to stop;
    /// then the handlers are removed. Dropping the future stops the
    /// controller too (the reconciles running then finish on their own).
    ///
    /// # Errors
    /// [`ReconcileError::NothingWatched`] for a controller with no source.
    pub async fn run<F, Fut, E>(self, reconcile: F) -> Result<(), ReconcileError>
    where
        F: Fn(Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: std::error::Error + Send + Sync + 'static,
    {
        let client = self
            .client
            .clone()
            .or_else(|| self.sources.first().map(Source::client));
        let Some(client) = client else {
            return Err(ReconcileError::NothingWatched {
                controller: self.name,
            });
        };
        if !self.shutdown.start() {
            self.shutdown.mark_ended();
            return Ok(());
        }
        let shared = Arc::new(sources::Shared::new(self.name, self.queue, client));
        let mut running = sources::Running::new(shared.clone(), self.shutdown.clone());
        for source in self.sources {
            running.add(source).await;
        }
        running.spawn_upkeep(self.requeue_every);
        let reconcile = Arc::new(reconcile);
        let workers: Vec<_> = (0..self.workers)
            .map(|_| tokio::spawn(worker::work(shared.clone(), reconcile.clone())))
            .collect();
        let stopping = self
            .shutdown
            .clone()
            .stop_queue_when_asked(shared.queue.clone());
        let (_, ended) = futures::join!(stopping, futures::future::join_all(workers));
        for failed in ended.into_iter().filter_map(Result::err) {
            tracing::error!(controller = %shared.name, error = %failed, "a reconcile worker ended abnormally");
        }
        drop(running);
        Ok(())
    }
}

/// What was asked of a controller through its [`ShutdownHandle`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Asked {
    Run,
    Drain,
    Stop,
}

#[derive(Debug)]
struct Stop {
    asked: watch::Sender<Asked>,
    started: AtomicBool,
    ended: watch::Sender<bool>,
}

/// Stops a [`Controller`]'s [`run`](Controller::run), from anywhere. Cheap
/// to clone.
#[derive(Clone, Debug)]
pub struct ShutdownHandle {
    stop: Arc<Stop>,
}

impl Default for ShutdownHandle {
    fn default() -> Self {
        ShutdownHandle {
            stop: Arc::new(Stop {
                asked: watch::Sender::new(Asked::Run),
                started: AtomicBool::new(false),
                ended: watch::Sender::new(false),
            }),
        }
    }
}

impl ShutdownHandle {
    /// Stops now: keys waiting are dropped, no new key is handed out; the
    /// reconciles running finish, then `run` returns. Before `run` is
    /// called, it returns at once.
    pub fn shut_down(&self) {
        self.stop.asked.send_replace(Asked::Stop);
    }

    /// Stops taking keys (events and requeues are ignored from now on),
    /// reconciles the keys waiting, and returns once they are done and
    /// `run` has returned (at once if it never started).
    /// [`shut_down`](Self::shut_down) meanwhile stops at once.
    pub async fn shut_down_with_drain(&self) {
        let mut ended = self.stop.ended.subscribe();
        self.stop.asked.send_if_modified(|asked| {
            let first = *asked == Asked::Run;
            if first {
                *asked = Asked::Drain;
            }
            first
        });
        if !self.stop.started.load(Ordering::SeqCst) {
            return;
        }
        let _ = ended.wait_for(|ended| *ended).await;
    }

    /// Whether `run` has returned (or its future was dropped).
    #[must_use]
    pub fn has_ended(&self) -> bool {
        *self.stop.ended.borrow()
    }

    /// Marks the controller started; false when it was asked to stop
    /// before.
    fn start(&self) -> bool {
        self.stop.started.store(true, Ordering::SeqCst);
        *self.stop.asked.borrow() == Asked::Run
    }

    fn mark_ended(&self) {
        self.stop.ended.send_replace(true);
    }

    /// Shuts `queue` down as asked, when asked: at once, or once drained
    /// (at once if a stop is asked while it drains).
    async fn stop_queue_when_asked(self, queue: WorkQueue<ObjectRef>) {
        let mut asked = self.stop.asked.subscribe();
        let Ok(first) = asked.wait_for(|a| *a != Asked::Run).await.map(|a| *a) else {
            return queue.shut_down();
        };
        if first == Asked::Drain {
            let drained = queue.shut_down_with_drain();
            tokio::select! {
                () = drained => return,
                _ = asked.wait_for(|a| *a == Asked::Stop) => {}
            }
        }
        queue.shut_down();
    }
}
