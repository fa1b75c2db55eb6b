//! [`WorkQueue`]: client-go's rate-limiting delaying work queue of keys.
//!
//! One lock holds the whole state: the keys waiting in order, what is known
//! of each key (waiting since, processing since, due at), and the delayed
//! keys in a heap by deadline. No task runs behind the queue: every
//! operation first moves the keys that have come due into the queue, in
//! deadline order (so a key due before another is added comes before it,
//! as behind client-go's background loop), and [`get`] sleeps until a key
//! is added or the earliest deadline (tokio's clock, so that tests run it
//! with paused time).
//!
//! [`get`]: WorkQueue::get

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BinaryHeap, HashMap, VecDeque};
use std::future::Future;
use std::hash::Hash;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::metrics::QueueMetrics;
use super::rate_limit::{RateLimiter, default_controller};

/// Delays beyond this many years are this many years (what tokio's timers
/// take for "never").
const FAR_FUTURE: Duration = Duration::from_secs(30 * 365 * 24 * 3600);

/// A queue of keys to work on, with client-go's guarantees
/// (`workqueue.RateLimitingInterface`): a key waiting is queued once
/// however often it is added; a key handed out by [`get`](Self::get) is not
/// handed out again until [`done`](Self::done), and comes back once then
/// if it was added meanwhile; keys can be added after a delay, or after
/// their [rate limiter](RateLimiter)'s delay for one more failure.
///
/// Cheap to clone: the clones are the same queue.
///
/// ```
/// use kube_dynamic_informer::reconcile::WorkQueue;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let queue = WorkQueue::new("widgets");
/// queue.add("shop/a");
/// queue.add("shop/b");
/// queue.add("shop/a"); // already waiting: queued once
/// assert_eq!(queue.len(), 2);
/// let key = queue.get().await.unwrap();
/// assert_eq!(key, "shop/a");
/// queue.add("shop/a"); // being processed: comes back after done
/// assert_eq!(queue.try_get(), Some("shop/b"));
/// assert_eq!(queue.try_get(), None);
/// queue.done(&key);
/// assert_eq!(queue.try_get(), Some("shop/a"));
/// queue.shut_down();
/// assert_eq!(queue.get().await, None);
/// # }
/// ```
#[doc(alias = "RateLimitingInterface")]
#[doc(alias = "TypedRateLimitingInterface")]
#[doc(alias = "workqueue")]
pub struct WorkQueue<K> {
    shared: Arc<Shared<K>>,
}

impl<K> Clone for WorkQueue<K> {
    fn clone(&self) -> Self {
        WorkQueue {
            shared: Arc::clone(&self.shared),
        }
    }
}

struct Shared<K> {
    name: String,
    limiter: Box<dyn RateLimiter<K>>,
    state: Mutex<State<K>>,
    /// A key joined the queue, the earliest deadline moved closer, or the
    /// queue began to shut down: getters look again.
    ready: Notify,
    /// A key was done, or the queue stopped: drains look again.
    settled: Notify,
    metrics: QueueMetrics,
}

/// Where the queue is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Running,
    /// Adds ignored; keys waiting still handed out.
    Draining,
    /// Adds ignored; nothing handed out.
    Stopped,
}

struct State<K> {
    phase: Phase,
    /// Every key waiting, processing or delayed, and what of the three.
    entries: HashMap<K, Entry>,
    /// Keys waiting and not processing, in the order they are handed out.
    ready: VecDeque<K>,
    /// Delayed keys by deadline; an entry whose key's `due` differs is
    /// stale (an earlier deadline replaced it, or the key was dropped).
    delayed: BinaryHeap<Reverse<Due<K>>>,
    next_seq: u64,
    /// Keys that joined `ready` since the last look, a getter to wake for
    /// each.
    queued: usize,
    /// Keys added (not coalesced) since the last look, for the metrics.
    added: u64,
    /// When the keys in flight were handed out (how many at each instant).
    started: BTreeMap<Instant, usize>,
}

/// What the queue knows of one key.
#[derive(Debug, Default)]
struct Entry {
    /// Added since it was last handed out (client-go's dirty set): since
    /// when.
    waiting: Option<Instant>,
    /// Handed out and not done: since when.
    processing: Option<Instant>,
    /// Delayed: its deadline and the sequence number of its heap entry.
    due: Option<(Instant, u64)>,
}

/// A delayed key in the heap, ordered by deadline, then by when it was
/// delayed.
struct Due<K> {
    at: Instant,
    seq: u64,
    key: K,
}

impl<K> PartialEq for Due<K> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl<K> Eq for Due<K> {}
impl<K> PartialOrd for Due<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<K> Ord for Due<K> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

/// What [`State::add`] did with a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Added {
    /// It was waiting already.
    Coalesced,
    /// It is being processed: it comes back when done.
    WhileProcessing,
    /// It joined the queue.
    Queued,
}

/// What [`State::take`] found.
enum Take<K> {
    /// A key, and how long it waited.
    Key(K, Duration),
    /// Nothing, ever again.
    Closed,
    /// Nothing yet; the earliest deadline, if any key is delayed.
    Wait(Option<Instant>),
}

impl<K: Clone + Eq + Hash> State<K> {
    fn new() -> Self {
        State {
            phase: Phase::Running,
            entries: HashMap::new(),
            ready: VecDeque::new(),
            delayed: BinaryHeap::new(),
            next_seq: 0,
            queued: 0,
            added: 0,
            started: BTreeMap::new(),
        }
    }

    /// Marks `key` waiting since `now`.
    fn add(&mut self, key: K, now: Instant) -> Added {
        let added = self.waiting(key, now);
        if added != Added::Coalesced {
            self.added += 1;
        }
        added
    }

    /// [`add`](Self::add), uncounted.
    fn waiting(&mut self, key: K, now: Instant) -> Added {
        let entry = match self.entries.get_mut(&key) {
            Some(entry) => entry,
            None => self.entries.entry(key.clone()).or_default(),
        };
        if entry.waiting.is_some() {
            return Added::Coalesced;
        }
        entry.waiting = Some(now);
        if entry.processing.is_some() {
            return Added::WhileProcessing;
        }
        self.ready.push_back(key);
        self.queued += 1;
        Added::Queued
    }

    /// Delays `key` until `at`, unless it is due earlier already; true
    /// when `at` is now the earliest deadline.
    fn add_at(&mut self, key: K, at: Instant) -> bool {
        if let Some(Entry {
            due: Some((due, _)),
            ..
        }) = self.entries.get(&key)
            && *due <= at
        {
            return false;
        }
        let earliest = self.delayed.peek().is_none_or(|Reverse(d)| at < d.at);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.entries.entry(key.clone()).or_default().due = Some((at, seq));
        self.delayed.push(Reverse(Due { at, seq, key }));
        earliest
    }

    /// Adds the keys due by `now`, in deadline order, each waiting since
    /// its deadline.
    fn promote(&mut self, now: Instant) {
        while self.delayed.peek().is_some_and(|Reverse(d)| d.at <= now) {
            let Some(Reverse(due)) = self.delayed.pop() else {
                break;
            };
            let Some(entry) = self.entries.get_mut(&due.key) else {
                continue;
            };
            if entry.due != Some((due.at, due.seq)) {
                continue;
            }
            entry.due = None;
            self.add(due.key, due.at);
        }
    }

    /// The next key, marked processing since `now`.
    fn take(&mut self, now: Instant) -> Take<K> {
        if self.phase == Phase::Stopped {
            return Take::Closed;
        }
        if let Some(key) = self.ready.pop_front() {
            self.queued = self.queued.saturating_sub(1);
            let mut waited = Duration::ZERO;
            if let Some(entry) = self.entries.get_mut(&key) {
                waited = now.saturating_duration_since(entry.waiting.take().unwrap_or(now));
                entry.processing = Some(now);
                *self.started.entry(now).or_default() += 1;
            }
            return Take::Key(key, waited);
        }
        // Draining: a key added while it was processing still comes back.
        if self.phase == Phase::Draining && self.entries.values().all(|e| e.waiting.is_none()) {
            return Take::Closed;
        }
        Take::Wait(self.delayed.peek().map(|Reverse(d)| d.at))
    }

    /// Ends the processing of `key`: how long it took, and whether the key
    /// joined the queue again; `None` when it was not being processed.
    fn done(&mut self, key: &K, now: Instant) -> Option<(Duration, bool)> {
        let entry = self.entries.get_mut(key)?;
        let started = entry.processing.take()?;
        if let Some(count) = self.started.get_mut(&started) {
            *count -= 1;
            if *count == 0 {
                self.started.remove(&started);
            }
        }
        let requeued = entry.waiting.is_some();
        if requeued {
            self.ready.push_back(key.clone());
            self.queued += 1;
        } else if entry.due.is_none() {
            self.entries.remove(key);
        }
        Some((now.saturating_duration_since(started), requeued))
    }

    /// How long the keys in flight have been processed by `now`, in all
    /// and the longest.
    fn in_flight(&self, now: Instant) -> (Duration, Duration) {
        let mut unfinished = Duration::ZERO;
        for (&since, &count) in &self.started {
            let count = u32::try_from(count).unwrap_or(u32::MAX);
            unfinished = unfinished.saturating_add(now.saturating_duration_since(since) * count);
        }
        let longest = self.started.keys().next().map_or(Duration::ZERO, |&since| {
            now.saturating_duration_since(since)
        });
        (unfinished, longest)
    }

    /// Stops: drops the keys waiting and delayed; keys being processed
    /// stay until done, and do not come back.
    fn stop(&mut self) {
        self.phase = Phase::Stopped;
        self.ready.clear();
        self.delayed.clear();
        self.entries.retain(|_, entry| {
            entry.waiting = None;
            entry.due = None;
            entry.processing.is_some()
        });
    }

    /// Drains: drops the delayed keys; keys waiting are still handed out.
    fn drain(&mut self) {
        if self.phase == Phase::Running {
            self.phase = Phase::Draining;
        }
        self.delayed.clear();
        self.entries.retain(|_, entry| {
            entry.due = None;
            entry.waiting.is_some() || entry.processing.is_some()
        });
    }
}

impl<K> WorkQueue<K>
where
    K: Clone + Eq + Hash + Send + Sync + 'static,
{
    /// A queue named `name` (the `name` label of its metrics), retrying
    /// with client-go's default controller rate limiter
    /// ([`default_controller`]).
    #[must_use]
    pub fn new(name: impl Into<String>) -> Self {
        Self::with_rate_limiter(name, default_controller())
    }

    /// A queue named `name` (the `name` label of its metrics), retrying
    /// with `limiter`.
    #[must_use]
    pub fn with_rate_limiter(name: impl Into<String>, limiter: impl RateLimiter<K>) -> Self {
        let name = name.into();
        WorkQueue {
            shared: Arc::new(Shared {
                metrics: QueueMetrics::new(&name),
                name,
                limiter: Box::new(limiter),
                state: Mutex::new(State::new()),
                ready: Notify::new(),
                settled: Notify::new(),
            }),
        }
    }

    /// The queue's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Adds `key`: queued at the back unless it is waiting already; a key
    /// being processed is marked and comes back once it is
    /// [done](Self::done). Ignored once the queue
    /// [shuts down](Self::is_shutting_down).
    pub fn add(&self, key: K) {
        self.update(|state, now| {
            if state.phase == Phase::Running {
                state.add(key, now);
            }
        });
    }

    /// Adds `key` once `delay` has passed; at once when `delay` is zero.
    /// A key already delayed keeps the earlier of its two deadlines.
    /// Delayed keys come in deadline order (in the order they were
    /// delayed for the same deadline). Ignored once the queue shuts down,
    /// which drops delayed keys.
    pub fn add_after(&self, key: K, delay: Duration) {
        if delay.is_zero() {
            return self.add(key);
        }
        let earliest = self.update(|state, now| {
            let at = now.checked_add(delay.min(FAR_FUTURE)).unwrap_or(now);
            state.phase == Phase::Running && state.add_at(key, at)
        });
        if earliest {
            // Getters sleep until the earliest deadline: a nearer one now.
            self.shared.ready.notify_waiters();
        }
    }

    /// Adds `key` after its rate limiter's delay for one more failure
    /// ([`RateLimiter::when`]).
    pub fn add_rate_limited(&self, key: K) {
        if self.is_shutting_down() {
            return;
        }
        let delay = self.shared.limiter.when(&key);
        self.shared.metrics.retried();
        self.add_after(key, delay);
    }

    /// Forgets `key`'s failures: its next rate-limited delay is the first
    /// one again. Call it when the key's work succeeded.
    pub fn forget(&self, key: &K) {
        self.shared.limiter.forget(key);
    }

    /// How many failures of `key` its rate limiter remembers.
    #[must_use]
    pub fn num_requeues(&self, key: &K) -> u32 {
        self.shared.limiter.retries(key)
    }

    /// The next key, marked processing: call [`done`](Self::done) with it
    /// when its work ends. Waits until one is waiting (or a delayed one is
    /// due). `None` once the queue is stopped, or, when it drains, once
    /// nothing is left to hand out.
    ///
    /// Cancel-safe: dropping the future before it is ready takes no key.
    pub async fn get(&self) -> Option<K> {
        loop {
            let mut notified = pin!(self.shared.ready.notified());
            notified.as_mut().enable();
            match self.take() {
                Take::Key(key, _) => return Some(key),
                Take::Closed => return None,
                Take::Wait(None) => notified.await,
                Take::Wait(Some(at)) => {
                    tokio::select! {
                        () = notified => {}
                        () = tokio::time::sleep_until(at) => {}
                    }
                }
            }
        }
    }

    /// The next key if one is waiting now, marked processing as with
    /// [`get`](Self::get); `None` otherwise.
    #[must_use]
    pub fn try_get(&self) -> Option<K> {
        match self.take() {
            Take::Key(key, _) => Some(key),
            Take::Closed | Take::Wait(_) => None,
        }
    }

    fn take(&self) -> Take<K> {
        let take = self.update(|state, now| {
            let take = state.take(now);
            (take, state.in_flight(now))
        });
        if let (Take::Key(_, waited), (unfinished, longest)) = &take {
            self.shared.metrics.handed_out(*waited);
            self.shared.metrics.in_flight(*unfinished, *longest);
        }
        take.0
    }

    /// Runs `f` on the state at `now`, the keys due by then added first;
    /// then wakes a getter for each key that joined the queue.
    fn update<R>(&self, f: impl FnOnce(&mut State<K>, Instant) -> R) -> R {
        let now = Instant::now();
        let mut state = self.shared.state.lock();
        state.promote(now);
        let result = f(&mut state, now);
        let queued = std::mem::take(&mut state.queued);
        let added = std::mem::take(&mut state.added);
        let depth = state.ready.len();
        drop(state);
        self.shared.metrics.updated(added, depth);
        for _ in 0..queued {
            self.shared.ready.notify_one();
        }
        result
    }

    /// Ends the processing of `key`; if it was added meanwhile, it is
    /// queued again. Nothing for a key not being processed.
    pub fn done(&self, key: &K) {
        let (phase, done, in_flight) = self.update(|state, now| {
            let done = state.done(key, now);
            (state.phase, done, state.in_flight(now))
        });
        if let Some((worked, _)) = done {
            self.shared.metrics.done(worked);
            self.shared.metrics.in_flight(in_flight.0, in_flight.1);
        }
        if phase != Phase::Running {
            // A drain may be over, and getters may have nothing left.
            self.shared.ready.notify_waiters();
            self.shared.settled.notify_waiters();
        }
    }

    /// Sets the gauges of the keys in flight
    /// (`workqueue_unfinished_work_seconds`,
    /// `workqueue_longest_running_processor_seconds`, see
    /// [the metrics](crate::reconcile#metrics)) to how long they have been
    /// processed by now. The queue sets them when a key is handed out or
    /// done; call this periodically (client-go: every 500 ms) so that a key
    /// stuck in its work shows.
    pub fn update_unfinished_work(&self) {
        let (unfinished, longest) = self.update(|state, now| state.in_flight(now));
        self.shared.metrics.in_flight(unfinished, longest);
    }

    /// How many keys wait to be handed out: not processing, not delayed
    /// (a delayed key counts once it is due).
    #[must_use]
    pub fn len(&self) -> usize {
        self.update(|state, _| state.ready.len())
    }

    /// Whether no key waits to be handed out.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether [`shut_down`](Self::shut_down) or
    /// [`shut_down_with_drain`](Self::shut_down_with_drain) was called.
    #[must_use]
    pub fn is_shutting_down(&self) -> bool {
        self.shared.state.lock().phase != Phase::Running
    }

    /// Stops the queue: keys waiting or delayed are dropped, adds are
    /// ignored and [`get`](Self::get) answers `None` (at once, to those
    /// waiting in it too). Keys being processed may still be
    /// [done](Self::done); they do not come back.
    pub fn shut_down(&self) {
        self.shared.state.lock().stop();
        self.shared.ready.notify_waiters();
        self.shared.settled.notify_waiters();
    }

    /// Shuts the queue down once its work is done: adds are ignored from
    /// now on and delayed keys dropped, while the keys waiting (and those
    /// added while they were processing) are still handed out;
    /// [`get`](Self::get) answers `None` once nothing is left. The future
    /// ends when every key handed out is [done](Self::done) and none
    /// waits, or, after [`shut_down`](Self::shut_down), when every key
    /// being processed is done.
    ///
    /// The queue stops taking keys when this is called, not when the
    /// future is first polled. Keys waiting keep the future waiting until
    /// someone gets them: call [`shut_down`](Self::shut_down) to drop them.
    #[doc(alias = "ShutDownWithDrain")]
    pub fn shut_down_with_drain(&self) -> impl Future<Output = ()> + Send + 'static {
        self.update(|state, _| state.drain());
        self.shared.ready.notify_waiters();
        let shared = Arc::clone(&self.shared);
        async move {
            loop {
                let mut settled = pin!(shared.settled.notified());
                settled.as_mut().enable();
                if shared.state.lock().entries.is_empty() {
                    return;
                }
                settled.await;
            }
        }
    }
}

impl<K> std::fmt::Debug for WorkQueue<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.shared.state.lock();
        f.debug_struct("WorkQueue")
            .field("name", &self.shared.name)
            .field("phase", &state.phase)
            .field("waiting", &state.ready.len())
            .field("keys", &state.entries.len())
            .finish()
    }
}

#[cfg(test)]
mod tests;
