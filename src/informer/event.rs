//! What handlers receive: [`Event`]s, through an [`EventHandler`].

use crate::cache::store::CachedObject;

/// A change delivered to handlers.
///
/// Objects are [`CachedObject`] handles, shared by every handler and, for
/// the new state of an object, by the cache: reading a name, a label, a
/// field or the JSON text decodes nothing, and [`CachedObject::object`]
/// gives the whole `DynamicObject` (a pointer copy with objects storage; with
/// compact storage, a decode only when a handler asks for it). A queue of
/// events waiting for a slow handler therefore holds no decoded objects.
#[derive(Clone, Debug)]
#[doc(alias = "DeletedFinalStateUnknown")]
pub enum Event {
    /// An object appeared in the cache (or, for a handler with a filter, in
    /// its view: see `entered_filter`).
    Add {
        /// The object.
        object: CachedObject,
        /// True when the object was part of the cache's first list, or of the
        /// replay a late handler receives when it is added.
        in_initial_list: bool,
        /// True when the object entered this informer's shard: the shard's
        /// ranges changed (see [`crate::vocabulary`]) and the object is outside
        /// the former ones. It was there before (or was created while the
        /// ranges changed): the server did not add it.
        entered_shard: bool,
        /// True when the object started to meet this handler's
        /// [filter](super::HandlerOptions::filter): an update made it match.
        /// It was in the cache before, unseen by this handler.
        entered_filter: bool,
    },
    /// An object changed, or a resync re-delivered it.
    Update {
        /// The cached state before the change (for a resync: the same object
        /// as `new`).
        old: CachedObject,
        /// The new state.
        new: CachedObject,
        /// True for a resync: nothing changed on the server.
        is_resync: bool,
    },
    /// An object left the cache (or, for a handler with a filter, its
    /// view: see `left_filter`).
    Delete {
        /// The object's final state, or, when `final_state_unknown`, the
        /// last state the cache knew.
        object: CachedObject,
        /// True when the deletion was inferred from a relist (the watch missed
        /// it), so `object` may be stale — client-go's
        /// `DeletedFinalStateUnknown`.
        final_state_unknown: bool,
        /// True when the object left this informer's shard (its ranges
        /// changed, see [`crate::vocabulary`]): another shard holds it now; it
        /// was not deleted on the server (unless that happened while the
        /// ranges changed). `final_state_unknown` is then false.
        left_shard: bool,
        /// True when the object stopped meeting this handler's
        /// [filter](super::HandlerOptions::filter): an update made it no
        /// longer match. It is still in the cache; `object` is its new
        /// state, the one that does not match (the handler saw the one
        /// before), and `final_state_unknown` is false.
        left_filter: bool,
    },
}

impl Event {
    /// The object the event is about (the new state for an update).
    pub fn object(&self) -> &CachedObject {
        match self {
            Event::Add { object, .. } | Event::Delete { object, .. } => object,
            Event::Update { new, .. } => new,
        }
    }

    /// The initial Add of a cached object: a late handler's replay, a
    /// snapshot's objects.
    pub(crate) fn replay(object: CachedObject) -> Self {
        Event::Add {
            object,
            in_initial_list: true,
            entered_shard: false,
            entered_filter: false,
        }
    }

    /// A resync of a cached object.
    pub(crate) fn resync(object: CachedObject) -> Self {
        Event::Update {
            old: object.clone(),
            new: object,
            is_resync: true,
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

/// Receives an informer's events, one at a time and in order, on a worker of the
/// process's handler pool (see [`HandlerPoolSettings`](super::HandlerPoolSettings)).
///
/// Closures `Fn(Event)` implement it.
///
/// ```
/// use kube_dynamic_informer::informer::{Event, EventHandler};
///
/// struct Printer;
/// impl EventHandler for Printer {
///     fn on_event(&self, event: Event) {
///         println!("{} {:?}", event.kind(), event.object().name());
///     }
/// }
/// let _closure_handler = |event: Event| println!("{}", event.kind());
/// ```
#[doc(alias = "ResourceEventHandler")]
#[doc(alias = "ResourceEventHandlerFuncs")]
pub trait EventHandler: Send + Sync + 'static {
    /// Handles one event. A panic is caught, logged and counted; the handler
    /// then receives the next event.
    fn on_event(&self, event: Event);

    /// Runs one turn of this handler's deliveries: `deliver` calls
    /// [`on_event`](Self::on_event) for each event of the turn (a few dozen
    /// at most, in order), and returns when they are handled. The pool calls
    /// this once per turn; the default just calls `deliver`.
    ///
    /// A handler that must enter a context before it can run — a language
    /// runtime's lock, a span, a connection checked out of a pool — enters it
    /// here once per turn instead of once per event. Events `deliver` was not
    /// called for are delivered after this returns (outside the context); a
    /// panic here is caught, logged and counted as one in `on_event` is.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::time::Instant;
    /// use kube_dynamic_informer::informer::{Event, EventHandler};
    ///
    /// /// Counts events, and the time spent in turns of them.
    /// #[derive(Default)]
    /// struct Counter {
    ///     events: AtomicU64,
    ///     busy_us: AtomicU64,
    /// }
    ///
    /// impl EventHandler for Counter {
    ///     fn on_event(&self, _event: Event) {
    ///         self.events.fetch_add(1, Ordering::Relaxed);
    ///     }
    ///
    ///     fn around_turn(&self, deliver: &mut dyn FnMut()) {
    ///         let started = Instant::now();
    ///         deliver();
    ///         let spent = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    ///         self.busy_us.fetch_add(spent, Ordering::Relaxed);
    ///     }
    /// }
    /// ```
    fn around_turn(&self, deliver: &mut dyn FnMut()) {
        deliver();
    }
}

impl<F: Fn(Event) + Send + Sync + 'static> EventHandler for F {
    fn on_event(&self, event: Event) {
        self(event)
    }
}
