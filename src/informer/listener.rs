//! One handler registration: its queue and who drains it (the handler
//! pool, a task, or an event stream), its counters, and the handles users
//! hold ([`Registration`], [`EventStream`]).

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use futures::task::AtomicWaker;
use parking_lot::Mutex;
use tokio::time::Instant;

use super::Shared;
use super::event::{Event, EventHandler};
use super::filter::{Dropped, FilterMistake, MistakeHook};
use super::pool::{HandlerPool, Runnable, TURN};
use super::queue::{Item, Queue};
use crate::cache::store::CachedObject;
use crate::cache::{ChangePredicate, Condition};
use crate::informer::telemetry::HandlerMetrics;
use crate::vocabulary::resource::ResourceKey;
use crate::vocabulary::setters;
use crate::vocabulary::shard::Settlement;

/// Options of one handler registration.
///
/// ```
/// use std::time::Duration;
/// use kube_dynamic_informer::cache::{ChangePredicate, Condition};
/// use kube_dynamic_informer::informer::HandlerOptions;
///
/// let options = HandlerOptions::default()
///     .name("audit")
///     .resync(Duration::from_secs(600))
///     .coalesce(true)
///     .filter(Condition::new("metadata.labels.tier == 'web'")?)
///     .changes(ChangePredicate::generation().or(ChangePredicate::labels()));
/// assert!(options.coalesce);
/// # Ok::<(), kube_dynamic_informer::cache::CacheError>(())
/// ```
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct HandlerOptions {
    /// This handler's resync period; `None` uses the informer's default.
    /// Zero disables resync for this handler.
    pub resync: Option<Duration>,
    /// Coalesce by object key when the handler falls behind: the queue then
    /// keeps, per object, at most a delete (of the state the handler last
    /// saw) and the latest add or update, so its length is bounded by the
    /// number of objects, not of events. The handler sees the latest state
    /// of each object, never an older one after a newer; deletes are never
    /// dropped (an object added and deleted before the handler got to it
    /// arrives as a delete only); a pending update keeps the `old` the
    /// handler last saw; resyncs of an object with events pending are
    /// dropped. Off by default: every event is delivered.
    pub coalesce: bool,
    /// A name for logs and metrics (`handler` label); by default
    /// `handler-<id>`.
    pub name: Option<String>,
    /// Skip the replay: a handler added to a running informer gets no Add
    /// for the objects already cached, only the changes after it was
    /// added (and is synced at once if the informer is). For a handler
    /// that reads the cache itself and wants only what changes, such as a
    /// record of changes. Off by default: a late handler gets the cache
    /// first, as client-go's.
    pub skip_replay: bool,
    /// Only the objects that meet this condition (client-go's
    /// `FilteringResourceEventHandler`): the handler sees the cache through
    /// it. An object that starts to meet it arrives as an
    /// [`Event::Add`] (`entered_filter`), one that stops as an
    /// [`Event::Delete`] (`left_filter`, with the new state, the one that
    /// does not meet it); the others' events never reach the handler. A
    /// late handler's replay and a resync hold only the objects that meet
    /// it. A condition that is not a boolean on an object, or fails on it,
    /// is not met; it is said once per object ([`FilterMistake`],
    /// [`on_mistake`](Self::on_mistake)). See the
    /// [informer docs](crate::informer#filters-and-change-predicates).
    ///
    /// [`FilterMistake`]: super::FilterMistake
    pub filter: Option<Condition>,
    /// Only the updates that change one of these values (see
    /// [`ChangePredicate`]): an update of an object the handler sees that
    /// changes none of them does not reach it. Adds, deletes, an object
    /// entering or leaving the filter's view and resyncs always do (a
    /// handler that wants no resync sets its [`resync`](Self::resync) to
    /// zero).
    pub changes: Option<ChangePredicate>,
    /// Told of the filter's mistakes, once per object.
    pub(super) on_mistake: Option<MistakeHook>,
}

impl HandlerOptions {
    setters! {
        /// Sets [`resync`](Self::resync).
        resync(period: Duration) => Some(period);

        /// Sets [`coalesce`](Self::coalesce).
        coalesce(coalesce: bool) => coalesce;

        /// Sets [`name`](Self::name).
        name(name: impl Into<String>) => Some(name.into());

        /// Sets [`skip_replay`](Self::skip_replay).
        skip_replay(skip: bool) => skip;

        /// Sets [`filter`](Self::filter).
        filter(condition: Condition) => Some(condition);

        /// Sets [`changes`](Self::changes).
        changes(predicate: ChangePredicate) => Some(predicate);
    }

    /// Calls `hook` once for each object the [`filter`](Self::filter) is
    /// not a boolean on, or fails on (it is then not met), besides the
    /// `tracing` warning. Handlers that share a filter share its reports: a
    /// mistake is found once per object, and said to the hooks of the
    /// handlers registered with that filter then.
    ///
    /// ```
    /// use kube_dynamic_informer::cache::Condition;
    /// use kube_dynamic_informer::informer::HandlerOptions;
    ///
    /// let options = HandlerOptions::default()
    ///     .filter(Condition::new("status.phase")?) // meant: status.phase == 'Running'
    ///     .on_mistake(|mistake| eprintln!("{mistake}"));
    /// # Ok::<(), kube_dynamic_informer::cache::CacheError>(())
    /// ```
    #[must_use]
    pub fn on_mistake(mut self, hook: impl Fn(&FilterMistake) + Send + Sync + 'static) -> Self {
        self.on_mistake = Some(MistakeHook(Arc::new(hook)));
        self
    }

    /// Whether the handler asks for a filter or a change predicate.
    pub(super) fn filters(&self) -> bool {
        self.filter.is_some() || self.changes.is_some()
    }
}

/// The shared counters of one registration.
#[derive(Debug, Default)]
pub(super) struct ListenerState {
    pub(super) id: u64,
    pub(super) name: String,
    pub(super) backlog: AtomicUsize,
    pub(super) delivered: AtomicU64,
    /// Events its filter or change predicate held back.
    pub(super) filtered: AtomicU64,
    pub(super) panics: AtomicU64,
    pub(super) synced: AtomicBool,
    pub(super) removed: AtomicBool,
    /// Woken when `synced` or `removed` is set.
    pub(super) settled: tokio::sync::Notify,
    pub(super) metrics: HandlerMetrics,
}

impl ListenerState {
    /// The handler has every initial Add.
    pub(super) fn mark_synced(&self) {
        self.synced.store(true, Ordering::Release);
        self.settled.notify_waiters();
    }

    /// The registration is removed.
    pub(super) fn mark_removed(&self) {
        self.removed.store(true, Ordering::Release);
        self.settled.notify_waiters();
    }

    /// `count` events held back for `why`.
    pub(super) fn filtered(&self, why: Dropped, count: u64) {
        if count > 0 {
            self.filtered.fetch_add(count, Ordering::Relaxed);
            self.metrics.filtered(why, count);
        }
    }

    /// Publishes the backlog to its gauge.
    fn publish_backlog(&self) {
        self.metrics.backlog(self.backlog.load(Ordering::Relaxed));
    }
}

/// A handler of the objects events name: the object, and for an update
/// the state before it.
pub(crate) type ObjectsHandler = Box<dyn Fn(&CachedObject, Option<&CachedObject>) + Send + Sync>;

/// Who drains a mailbox.
pub(super) enum Target {
    /// A handler run on the process's handler pool.
    Pool(Box<dyn EventHandler>),
    /// A handler called in place, by whoever queued the event (the
    /// non-shared informer's dispatch, under its lock).
    InPlace(Box<dyn EventHandler>),
    /// A handler of the objects events name, as handles (nothing decoded),
    /// called in place like [`InPlace`](Self::InPlace): a controller's,
    /// which only queues their keys.
    Objects(ObjectsHandler),
    /// A task on the tokio runtime (async handlers), woken by the notify.
    Task(tokio::sync::Notify),
    /// An [`EventStream`]'s consumer.
    Stream(AtomicWaker),
}

struct MailboxInner {
    queue: Queue,
    /// Queued for a turn (pool), or a wake-up is pending (task, stream).
    scheduled: bool,
    /// A turn is being delivered.
    running: bool,
}

/// One registration's queue and whoever drains it.
pub(super) struct Mailbox {
    pub(super) state: Arc<ListenerState>,
    inner: Mutex<MailboxInner>,
    target: Target,
    resource: ResourceKey,
}

impl Mailbox {
    pub(super) fn new(
        state: Arc<ListenerState>,
        coalesce: bool,
        target: Target,
        resource: ResourceKey,
    ) -> Arc<Self> {
        Arc::new(Self {
            state,
            inner: Mutex::new(MailboxInner {
                queue: Queue::new(coalesce),
                scheduled: false,
                running: false,
            }),
            target,
            resource,
        })
    }

    /// Queues an event; false once the registration is removed.
    fn push(self: &Arc<Self>, event: Event) -> bool {
        if self.state.removed.load(Ordering::Acquire) {
            return false;
        }
        let backlog = &self.state.backlog;
        self.enqueue(|queue| {
            let grew = queue.push(event);
            if grew >= 0 {
                backlog.fetch_add(grew.unsigned_abs(), Ordering::Relaxed);
            } else {
                backlog.fetch_sub(grew.unsigned_abs(), Ordering::Relaxed);
            }
        });
        self.state.publish_backlog();
        true
    }

    fn push_synced(self: &Arc<Self>) {
        self.push_marker(|queue| queue.push_synced());
    }

    fn push_marker(self: &Arc<Self>, push: impl FnOnce(&mut Queue)) {
        if !self.state.removed.load(Ordering::Acquire) {
            self.enqueue(push);
        }
    }

    /// Changes the queue under its lock, and wakes the consumer unless a
    /// wake-up is already pending.
    fn enqueue(self: &Arc<Self>, change: impl FnOnce(&mut Queue)) {
        let wake = {
            let mut m = self.inner.lock();
            change(&mut m.queue);
            !std::mem::replace(&mut m.scheduled, true)
        };
        if wake {
            self.wake();
        }
    }

    fn wake(self: &Arc<Self>) {
        match &self.target {
            Target::Pool(_) => HandlerPool::global().schedule(self.clone()),
            Target::InPlace(_) | Target::Objects(_) => while self.run_turn() {},
            Target::Task(notify) => notify.notify_one(),
            Target::Stream(waker) => waker.wake(),
        }
    }

    /// Whether the handler runs on another thread or task than the
    /// dispatch.
    pub(super) fn runs_elsewhere(&self) -> bool {
        !matches!(self.target, Target::InPlace(_) | Target::Objects(_))
    }

    /// Takes the next turn's items; an empty turn clears `scheduled`, so the
    /// next push wakes the consumer again.
    pub(super) fn take_turn(&self, out: &mut Vec<Item>) {
        let mut m = self.inner.lock();
        m.queue.take(TURN, out);
        if out.is_empty() {
            m.scheduled = false;
        } else {
            m.running = true;
        }
    }

    /// Ends a turn; true when more items wait.
    pub(super) fn end_turn(&self) -> bool {
        let mut m = self.inner.lock();
        m.running = false;
        if m.queue.is_empty() {
            m.scheduled = false;
            false
        } else {
            true
        }
    }

    /// Whether a turn is being delivered.
    pub(super) fn is_running(&self) -> bool {
        self.inner.lock().running
    }

    /// Marks the registration removed and drops what is queued for a
    /// handler (a stream's consumer still takes what was queued, then ends).
    pub(super) fn close(self: &Arc<Self>) {
        self.state.mark_removed();
        if !matches!(self.target, Target::Stream(_)) {
            let mut m = self.inner.lock();
            m.queue.clear();
            self.state.backlog.store(0, Ordering::Relaxed);
        }
        match &self.target {
            Target::Pool(_) | Target::InPlace(_) | Target::Objects(_) => {}
            Target::Task(notify) => notify.notify_one(),
            Target::Stream(waker) => waker.wake(),
        }
        self.state.publish_backlog();
    }

    /// One queued event was handled.
    pub(super) fn handed_event(&self) {
        self.state.backlog.fetch_sub(1, Ordering::Relaxed);
        self.state.publish_backlog();
    }

    pub(super) fn resource(&self) -> &ResourceKey {
        &self.resource
    }
}

impl Runnable for Mailbox {
    fn run_turn(&self) -> bool {
        if matches!(self.target, Target::Task(_) | Target::Stream(_)) {
            return false;
        }
        let mut items = Vec::with_capacity(TURN);
        self.take_turn(&mut items);
        if items.is_empty() {
            return false;
        }
        let mut items = items.into_iter();
        match &self.target {
            Target::Pool(handler) | Target::InPlace(handler) => {
                self.handler_turn(handler.as_ref(), &mut items);
            }
            Target::Objects(handler) => self.hand_over(&mut items, |event| {
                let (object, old) = super::queue::objects(&event);
                self.counted(event.kind(), || handler(object, old));
            }),
            Target::Task(_) | Target::Stream(_) => {}
        }
        self.end_turn()
    }
}

impl Mailbox {
    /// A turn of an [`EventHandler`]: its items as events, inside its
    /// [`around_turn`](EventHandler::around_turn).
    fn handler_turn(&self, handler: &dyn EventHandler, items: &mut std::vec::IntoIter<Item>) {
        let call = |event: Event| {
            self.counted(event.kind(), || handler.on_event(event));
        };
        let mut deliver = || self.hand_over(items, call);
        let turn = std::panic::catch_unwind(AssertUnwindSafe(|| handler.around_turn(&mut deliver)));
        if let Err(panic) = turn {
            note_panic(panic.as_ref(), &self.state, &self.resource);
        }
        // What the turn did not deliver (its handler skipped `deliver`, or
        // panicked before it).
        self.hand_over(items, call);
    }

    /// Hands a turn's items on, each event through `call`, until they run
    /// out or the registration is removed.
    fn hand_over(&self, items: &mut std::vec::IntoIter<Item>, mut call: impl FnMut(Event)) {
        for item in items {
            if self.state.removed.load(Ordering::Acquire) {
                break;
            }
            match item {
                Item::Event(event) => {
                    call(event);
                    self.handed_event();
                }
                Item::Synced => self.state.mark_synced(),
                Item::Settlement(_) => {}
            }
        }
    }

    /// Calls a handler with an event of `kind`, catching and counting a
    /// panic, and records the time it took.
    fn counted(&self, kind: &str, call: impl FnOnce()) {
        let started = std::time::Instant::now();
        let result = std::panic::catch_unwind(AssertUnwindSafe(call));
        self.state.delivered.fetch_add(1, Ordering::Relaxed);
        if let Err(panic) = result {
            note_panic(panic.as_ref(), &self.state, &self.resource);
        }
        self.state.metrics.delivered(kind, started.elapsed());
    }
}

pub(super) struct Listener {
    pub(super) mailbox: Arc<Mailbox>,
    /// Requested resync period (`None`: informer default).
    pub(super) requested_resync: Option<Duration>,
    /// Effective resync period; zero = never.
    pub(super) resync: Duration,
    pub(super) next_resync: Option<Instant>,
    /// The Synced marker was sent.
    pub(super) sync_marked: bool,
    /// The [`Gate`](super::filter::Gate) its events pass, with a filter or a
    /// change predicate.
    pub(super) gate: Option<u64>,
}

impl Listener {
    /// Queues an event; false when the consumer is gone.
    pub(super) fn push(&self, event: Event) -> bool {
        self.mailbox.push(event)
    }

    pub(super) fn mark_synced(&mut self) {
        if !std::mem::replace(&mut self.sync_marked, true) {
            self.mailbox.push_synced();
        }
    }

    /// Queues a hand-over's settlement behind the events queued so far.
    pub(super) fn push_settlement(&self, settlement: &Settlement) {
        let settlement = settlement.clone();
        self.mailbox
            .push_marker(|queue| queue.push_settlement(settlement));
    }

    pub(super) fn is_closed(&self) -> bool {
        self.mailbox.state.removed.load(Ordering::Acquire)
    }
}

/// Counts and logs a handler's panic.
pub(super) fn note_panic(
    panic: &(dyn std::any::Any + Send),
    state: &ListenerState,
    resource: &ResourceKey,
) {
    state.panics.fetch_add(1, Ordering::Relaxed);
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "<non-string panic>".into());
    state.metrics.panics.increment(1);
    tracing::error!(resource = %resource, handler = %state.name, panic = %message, "event handler panicked; it will receive the next event");
}

/// The handle of one handler registration.
///
/// Dropping it leaves the handler registered (as client-go's
/// registrations): the handler keeps receiving events for as long as the
/// informer runs. [`remove`](Self::remove) stops it.
///
/// ```no_run
/// # async fn demo(informer: kube_dynamic_informer::informer::SharedInformer) {
/// use std::time::Duration;
/// use kube_dynamic_informer::informer::Event;
///
/// let registration = informer.add_handler(|e: Event| println!("{}", e.kind()));
/// // Once the handler has had every object of the cache as an initial Add:
/// let synced = tokio::time::timeout(Duration::from_secs(30), registration.synced()).await;
/// assert!(matches!(synced, Ok(true)));
/// # }
/// ```
pub struct Registration {
    pub(super) state: Arc<ListenerState>,
    pub(super) informer: std::sync::Weak<Shared>,
}

impl Registration {
    /// True once the handler has returned from every initial Add (the
    /// informer must have synced first).
    pub fn has_synced(&self) -> bool {
        self.state.synced.load(Ordering::Acquire)
    }

    /// Waits until [`has_synced`](Self::has_synced): true then; false if
    /// the registration is removed first (by [`remove`](Self::remove), or
    /// as the informer stops). Wrap it in a timeout to bound the wait.
    pub async fn synced(&self) -> bool {
        loop {
            let settled = self.state.settled.notified();
            if self.state.synced.load(Ordering::Acquire) {
                return true;
            }
            if self.state.removed.load(Ordering::Acquire) {
                return false;
            }
            settled.await;
        }
    }

    /// The resync period this handler gets: what it asked for (or the
    /// informer's default) as the informer could honour it (see the
    /// [informer docs](crate::informer) for the rules; an adjustment is
    /// logged as a warning naming the handler). Zero: no resync, also once
    /// the registration is removed.
    pub fn resync_period(&self) -> Duration {
        let Some(shared) = self.informer.upgrade() else {
            return Duration::ZERO;
        };
        let d = shared.dispatch.lock();
        d.listeners
            .iter()
            .find(|l| l.mailbox.state.id == self.state.id)
            .map_or(Duration::ZERO, |l| l.resync)
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

    /// Events its [filter](HandlerOptions::filter) or
    /// [change predicate](HandlerOptions::changes) held back so far (they
    /// never reached its queue).
    pub fn filtered(&self) -> u64 {
        self.state.filtered.load(Ordering::Relaxed)
    }

    /// Panics caught in this handler.
    pub fn panics(&self) -> u64 {
        self.state.panics.load(Ordering::Relaxed)
    }

    /// Stops delivering events to this handler. Queued events are dropped;
    /// an event being handled finishes.
    pub fn remove(self) {
        unregister(&self.informer, &self.state);
    }
}

/// Marks a registration removed (its consumer stops at the next event) and
/// takes it out of the informer's listeners.
fn unregister(informer: &std::sync::Weak<Shared>, state: &ListenerState) {
    state.mark_removed();
    if let Some(shared) = informer.upgrade() {
        let mut d = shared.dispatch.lock();
        if let Some(i) = d
            .listeners
            .iter()
            .position(|l| l.mailbox.state.id == state.id)
        {
            d.listeners.swap_remove(i).mailbox.close();
            d.drop_unused_gates();
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

/// An async stream of an informer's events (see
/// [`SharedInformer::events`](super::SharedInformer::events)).
pub struct EventStream {
    pub(super) mailbox: Arc<Mailbox>,
    /// Items taken from the mailbox and not yet handed out.
    pub(super) buffer: std::collections::VecDeque<Item>,
    pub(super) informer: std::sync::Weak<Shared>,
}

impl EventStream {
    /// True once every initial Add has been taken from the stream.
    pub fn has_synced(&self) -> bool {
        self.mailbox.state.synced.load(Ordering::Acquire)
    }

    /// Events queued and not yet taken.
    pub fn backlog(&self) -> usize {
        self.mailbox.state.backlog.load(Ordering::Relaxed)
    }
}

/// What an [`EventStream`] hands its consumer: an event, or the mark that
/// every initial Add came before it.
pub(super) enum Delivery {
    Event(Event),
    Synced,
}

impl EventStream {
    /// The next event, or the synced mark where it falls among them (which
    /// [`Stream::poll_next`] passes over): a consumer that must act the
    /// moment it has the whole cache reads the stream through this.
    pub(super) fn poll_delivery(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Delivery>> {
        loop {
            match self.buffer.pop_front() {
                Some(Item::Event(event)) => {
                    self.mailbox.handed_event();
                    self.mailbox.state.delivered.fetch_add(1, Ordering::Relaxed);
                    self.mailbox
                        .state
                        .metrics
                        .delivered(event.kind(), Duration::ZERO);
                    return Poll::Ready(Some(Delivery::Event(event)));
                }
                Some(Item::Synced) => {
                    self.mailbox.state.mark_synced();
                    return Poll::Ready(Some(Delivery::Synced));
                }
                Some(Item::Settlement(_)) => continue,
                None => {}
            }
            if let Target::Stream(waker) = &self.mailbox.target {
                waker.register(cx.waker());
            }
            let mut items = Vec::with_capacity(TURN);
            self.mailbox.take_turn(&mut items);
            if items.is_empty() {
                if self.mailbox.state.removed.load(Ordering::Acquire) {
                    return Poll::Ready(None);
                }
                return Poll::Pending;
            }
            self.mailbox.end_turn();
            self.buffer.extend(items);
        }
    }
}

impl Stream for EventStream {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        loop {
            match std::task::ready!(self.as_mut().poll_delivery(cx)) {
                Some(Delivery::Event(event)) => return Poll::Ready(Some(event)),
                Some(Delivery::Synced) => {}
                None => return Poll::Ready(None),
            }
        }
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        unregister(&self.informer, &self.mailbox.state);
        self.mailbox.close();
    }
}

impl fmt::Debug for EventStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventStream")
            .field("id", &self.mailbox.state.id)
            .field("synced", &self.has_synced())
            .field("backlog", &self.backlog())
            .finish()
    }
}

/// Hands an async handler its events, one future at a time, until the
/// registration is removed.
pub(super) async fn drain_async<F, Fut>(mailbox: Arc<Mailbox>, handler: F)
where
    F: Fn(Event) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    use futures::FutureExt;

    let Target::Task(notify) = &mailbox.target else {
        return;
    };
    let mut items = Vec::with_capacity(TURN);
    loop {
        mailbox.take_turn(&mut items);
        if items.is_empty() {
            if mailbox.state.removed.load(Ordering::Acquire) {
                return;
            }
            notify.notified().await;
            continue;
        }
        for item in items.drain(..) {
            if mailbox.state.removed.load(Ordering::Acquire) {
                break;
            }
            let event = match item {
                Item::Event(event) => event,
                Item::Synced => {
                    mailbox.state.mark_synced();
                    continue;
                }
                Item::Settlement(_) => continue,
            };
            let kind = event.kind();
            let started = std::time::Instant::now();
            let call = std::panic::catch_unwind(AssertUnwindSafe(|| handler(event)));
            let outcome = match call {
                Ok(future) => AssertUnwindSafe(future).catch_unwind().await,
                Err(panic) => Err(panic),
            };
            mailbox.state.delivered.fetch_add(1, Ordering::Relaxed);
            if let Err(panic) = outcome {
                note_panic(panic.as_ref(), &mailbox.state, mailbox.resource());
            }
            mailbox.state.metrics.delivered(kind, started.elapsed());
            mailbox.handed_event();
        }
        items.clear();
        mailbox.end_turn();
    }
}
