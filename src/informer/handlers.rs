//! Adding handlers and event streams to a [`SharedInformer`]: each gets
//! the cache replayed first, then every event, in order.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::cache::store::CachedObject;

use super::dispatch::Dispatch;
use super::error::InformerError;
use super::event::{Event, EventHandler};
use super::filter::{Dropped, Gate};
use super::listener::{
    EventStream, HandlerOptions, Listener, ListenerState, Mailbox, Registration, Target,
};
use super::{SharedInformer, listener};

impl SharedInformer {
    /// Adds a handler with the informer's default resync period. See
    /// [`add_handler_with`](Self::add_handler_with).
    pub fn add_handler(&self, handler: impl EventHandler) -> Registration {
        self.add_handler_with(handler, HandlerOptions::default())
    }

    /// Adds a handler, before or after start. It first receives an Add (with
    /// `in_initial_list = true`) for every cached object, then live events,
    /// in order, until [`Registration::remove`] or the informer stops.
    ///
    /// Handlers run on the process's handler pool (see
    /// [`HandlerPoolSettings`](super::HandlerPoolSettings)): a bounded set of threads shared by every
    /// informer, not a thread per handler. Each handler has its own queue and
    /// is called by one worker at a time; one that blocks for longer than the
    /// pool's stall threshold has a worker started in its place, so it does
    /// not hold up the others. A handler that waits on I/O most of the time
    /// is better written as an [async handler](Self::add_async_handler).
    pub fn add_handler_with(
        &self,
        handler: impl EventHandler,
        options: HandlerOptions,
    ) -> Registration {
        let mailbox = self.register(&options, Target::Pool(Box::new(handler)));
        self.registration(&mailbox)
    }

    /// Adds a handler of the objects events name, called in place by
    /// whoever hands the informer's events on (the dispatch, under its
    /// lock, for live events; the caller, for the replay) with handles:
    /// nothing is decoded for it, and it is spared the hop to the handler
    /// pool. For a handler that only hands work on (queues a key) and never
    /// blocks.
    pub(crate) fn add_objects_handler(
        &self,
        handler: impl Fn(&CachedObject, Option<&CachedObject>) + Send + Sync + 'static,
        options: HandlerOptions,
    ) -> Registration {
        let mailbox = self.register(&options, Target::Objects(Box::new(handler)));
        self.registration(&mailbox)
    }

    /// Adds an async handler with the informer's default resync period. See
    /// [`add_async_handler_with`](Self::add_async_handler_with).
    ///
    /// # Errors
    /// [`InformerError::NoRuntime`] outside a tokio runtime.
    pub fn add_async_handler<F, Fut>(&self, handler: F) -> Result<Registration, InformerError>
    where
        F: Fn(Event) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        self.add_async_handler_with(handler, HandlerOptions::default())
    }

    /// Adds a handler that returns a future, run on the tokio runtime (one
    /// task per handler, no thread): each event's future is awaited before
    /// the next event is handed over. Same guarantees as
    /// [`add_handler_with`](Self::add_handler_with): replay, order, synced
    /// marker, panics caught (in the call and in the future) and counted.
    ///
    /// ```no_run
    /// # async fn demo(informer: kube_dynamic_informer::informer::SharedInformer) -> Result<(), Box<dyn std::error::Error>> {
    /// use kube_dynamic_informer::informer::Event;
    ///
    /// let registration = informer.add_async_handler(|event: Event| async move {
    ///     // e.g. call another service without blocking a thread
    ///     println!("{} {:?}", event.kind(), event.object().name());
    /// })?;
    /// # drop(registration); Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`InformerError::NoRuntime`] outside a tokio runtime.
    pub fn add_async_handler_with<F, Fut>(
        &self,
        handler: F,
        options: HandlerOptions,
    ) -> Result<Registration, InformerError>
    where
        F: Fn(Event) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| InformerError::NoRuntime {
                resource: self.shared.key.clone(),
            })?;
        let mailbox = self.register(&options, Target::Task(tokio::sync::Notify::new()));
        let registration = self.registration(&mailbox);
        let task = runtime.spawn(listener::drain_async(mailbox, handler));
        self.shared.dispatch.lock().tasks.push(task);
        Ok(registration)
    }

    /// The handle of the registration that `mailbox` serves.
    fn registration(&self, mailbox: &Mailbox) -> Registration {
        Registration {
            state: mailbox.state.clone(),
            informer: Arc::downgrade(&self.shared),
        }
    }

    /// A stream of events with the same replay guarantee as a handler: first
    /// an Add for every cached object, then live events. Dropping the stream
    /// unregisters it.
    pub fn events(&self) -> EventStream {
        self.events_with(HandlerOptions::default())
    }

    /// [`events`](Self::events) with handler options (its own resync period,
    /// coalescing).
    pub fn events_with(&self, options: HandlerOptions) -> EventStream {
        let mailbox = self.register(&options, Target::Stream(futures::task::AtomicWaker::new()));
        EventStream {
            mailbox,
            buffer: std::collections::VecDeque::new(),
            informer: Arc::downgrade(&self.shared),
        }
    }

    /// Registers a listener whose events go through a mailbox to `target`
    /// (the handler pool, a task, a stream, or a handler called in place),
    /// with the cache replayed first.
    pub(super) fn register(&self, options: &HandlerOptions, target: Target) -> Arc<Mailbox> {
        let mut d = self.shared.dispatch.lock();
        d.next_id += 1;
        let id = d.next_id;
        let name = options
            .name
            .clone()
            .unwrap_or_else(|| format!("handler-{id}"));
        let state = Arc::new(ListenerState {
            id,
            metrics: self.shared.metrics.handler(&name, options.filters()),
            name,
            ..ListenerState::default()
        });
        let mailbox = Mailbox::new(state, options.coalesce, target, self.shared.key.clone());
        let resync = self.admit_resync(&mut d, options.resync, &mailbox.state.name);
        // A snapshot's objects the others have not had yet go to them
        // first: the new one has them in its replay.
        d.hand_on_deferred();
        let cached = self.shared.store.list_all();
        let gate = options
            .filters()
            .then(|| self.gate_for(&mut d, options, id, &cached));
        let mut listener = Listener {
            mailbox: mailbox.clone(),
            requested_resync: options.resync,
            resync,
            next_resync: (!resync.is_zero()).then(|| Instant::now() + resync),
            sync_marked: false,
            gate,
        };
        // Replay under the dispatch lock: no event can slip between the
        // snapshot and the registration.
        if !options.skip_replay {
            let gate = gate.and_then(|g| d.gates.iter().find(|gate| gate.id == g));
            let mut dropped = 0;
            for object in cached {
                if gate.is_none_or(|g| g.admits(&object)) {
                    listener.push(Event::replay(object));
                } else {
                    dropped += 1;
                }
            }
            mailbox.state.filtered(Dropped::Condition, dropped);
        }
        if d.synced {
            listener.mark_synced();
        }
        d.listeners.push(listener);
        mailbox
    }

    /// The gate of registration `id`'s filter and change predicate: the
    /// one of the handlers that ask the same, or a new one that takes the
    /// verdict of each of the `cached` objects.
    fn gate_for(
        &self,
        d: &mut Dispatch,
        options: &HandlerOptions,
        id: u64,
        cached: &[CachedObject],
    ) -> u64 {
        let (filter, changes) = (options.filter.as_ref(), options.changes.as_ref());
        if let Some(gate) = d.gates.iter_mut().find(|g| g.is(filter, changes)) {
            if let Some(hook) = &options.on_mistake {
                gate.add_hook(id, hook.clone());
            }
            return gate.id;
        }
        if let Some(changes) = changes {
            self.shared.store.keep_digests(changes.digested_fields());
        }
        d.next_gate += 1;
        let mut gate = Gate::new(
            d.next_gate,
            self.shared.key.clone(),
            filter.cloned(),
            changes.cloned(),
        );
        if let Some(hook) = &options.on_mistake {
            gate.add_hook(id, hook.clone());
        }
        gate.fill(cached);
        d.gates.push(gate);
        d.next_gate
    }

    /// The resync period a new handler gets for what it asked
    /// (`requested_resync`), with a warning when it differs; a lowered
    /// check period changes every other handler's period too.
    fn admit_resync(
        &self,
        d: &mut Dispatch,
        requested_resync: Option<Duration>,
        handler: &str,
    ) -> Duration {
        let started = d.started;
        let requested = requested_resync.unwrap_or(self.shared.options.cache.resync);
        let r = d.clock.add_handler(requested, started);
        if r.period != requested && !requested.is_zero() {
            let why = if self.shared.options.cache.resync.is_zero() && requested_resync.is_some() {
                "the informer's resync period is 0, which turns resync off for every handler"
            } else if requested < Duration::from_secs(1) {
                "periods under 1s are raised to 1s"
            } else if started {
                "the informer has started: a period is at least its check period, and a multiple of it"
            } else {
                "a period is rounded up to a multiple of the informer's check period"
            };
            tracing::warn!(
                resource = %self.shared.key,
                handler = %handler,
                asked = ?requested,
                effective = ?r.period,
                "resync period adjusted: {why}"
            );
        }
        if r.check_period_lowered {
            let clock = d.clock;
            let default = self.shared.options.cache.resync;
            for l in &mut d.listeners {
                l.resync = clock.effective(l.requested_resync.unwrap_or(default));
            }
            self.shared.dispatch.resync_changed.notify_one();
        }
        r.period
    }
}
