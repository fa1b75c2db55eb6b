//! One handler registration: its queue, its thread, its counters, and the
//! handles users hold ([`Registration`], [`EventStream`]).

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::Shared;
use super::event::{Event, EventHandler};

/// Options of one handler registration.
#[derive(Clone, Debug, Default)]
pub struct HandlerOptions {
    /// This handler's resync period; `None` uses the informer's default.
    /// Zero disables resync for this handler.
    pub resync: Option<Duration>,
}

/// What the dispatcher pushes into a handler's queue.
pub(super) enum Item {
    Event(Event),
    /// All initial Adds were queued before this marker: once the consumer
    /// reaches it, the registration has synced.
    Synced,
}

/// The shared counters of one registration.
#[derive(Debug, Default)]
pub(super) struct ListenerState {
    pub(super) id: u64,
    pub(super) backlog: AtomicUsize,
    pub(super) delivered: AtomicU64,
    pub(super) panics: AtomicU64,
    pub(super) synced: AtomicBool,
    pub(super) removed: AtomicBool,
}

/// Where a listener's events go.
pub(super) enum Sink {
    /// A queue drained by a handler thread or an event stream.
    Queue(mpsc::UnboundedSender<Item>),
    /// Called in place (non-shared informer).
    Inline(Arc<dyn EventHandler>),
}

pub(super) struct Listener {
    pub(super) state: Arc<ListenerState>,
    pub(super) sink: Sink,
    /// Requested resync period (`None`: informer default).
    pub(super) requested_resync: Option<Duration>,
    /// Effective resync period; zero = never.
    pub(super) resync: Duration,
    pub(super) next_resync: Option<Instant>,
    /// The Synced marker was sent.
    pub(super) sync_marked: bool,
}

impl Listener {
    /// Queues an event; false when the consumer is gone.
    pub(super) fn push(&self, event: Event, resource: &crate::resource::ResourceKey) -> bool {
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

    pub(super) fn mark_synced(&mut self) {
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

    pub(super) fn is_closed(&self) -> bool {
        self.state.removed.load(Ordering::Acquire)
            || matches!(&self.sink, Sink::Queue(tx) if tx.is_closed())
    }
}

/// Calls the handler, catching and counting a panic.
pub(super) fn deliver(
    handler: &dyn EventHandler,
    event: Event,
    state: &ListenerState,
    resource: &crate::resource::ResourceKey,
) {
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| handler.on_event(event)));
    state.delivered.fetch_add(1, Ordering::Relaxed);
    if let Err(panic) = result {
        state.panics.fetch_add(1, Ordering::Relaxed);
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "<non-string panic>".into());
        tracing::error!(resource = %resource, registration = state.id, panic = %message, "event handler panicked; it will receive the next event");
    }
}

/// The handle of one handler registration.
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
        unregister(&self.informer, &self.state);
    }
}

/// Marks a registration removed (its consumer stops at the next event) and
/// takes it out of the informer's listeners.
fn unregister(informer: &std::sync::Weak<Shared>, state: &ListenerState) {
    state.removed.store(true, Ordering::Release);
    if let Some(shared) = informer.upgrade() {
        shared
            .dispatch
            .lock()
            .listeners
            .retain(|l| l.state.id != state.id);
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
    pub(super) rx: mpsc::UnboundedReceiver<Item>,
    pub(super) state: Arc<ListenerState>,
    pub(super) informer: std::sync::Weak<Shared>,
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
        unregister(&self.informer, &self.state);
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
