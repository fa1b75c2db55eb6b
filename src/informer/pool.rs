//! The threads that run event handlers: a bounded set shared by every
//! informer of the process, which grows only while handlers block.
//!
//! Each registration's queue is run by at most one worker at a time (so a
//! handler sees its events in order), a turn at a time: a worker takes up to
//! [`TURN`] events of one queue, hands them to its handler, and puts the
//! queue back at the end of the line when more are waiting. A handler that
//! stays in one call longer than the pool's stall threshold counts as
//! blocked: the pool starts another worker in its place, so that blocked
//! handlers never hold up the others; workers beyond the pool's size leave
//! once they have been idle for a while.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::vocabulary::setters;

/// Events a worker hands to one handler before it turns to the next queue.
pub(super) const TURN: usize = 32;

/// How long a worker beyond the pool's size stays idle before it leaves.
const SPARE_IDLE: Duration = Duration::from_secs(10);

/// Workers at most, blocked ones included.
const MAX_WORKERS: usize = 1024;

/// Something a worker runs a turn of.
pub(super) trait Runnable: Send + Sync {
    /// Runs one turn; true when more work is waiting (the pool queues it
    /// again, at the end of the line).
    fn run_turn(&self) -> bool;
}

/// The settings of the process's handler pool.
///
/// ```
/// use std::time::Duration;
/// use kube_dynamic_informer::informer::HandlerPoolSettings;
///
/// // Before the first handler is added:
/// let _ = HandlerPoolSettings::default()
///     .workers(8)
///     .stall_after(Duration::from_millis(250))
///     .install();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandlerPoolSettings {
    workers: usize,
    stall_after: Duration,
}

impl Default for HandlerPoolSettings {
    /// As many workers as CPUs (at least 4); a handler counts as blocked
    /// after 100 ms in one call.
    fn default() -> Self {
        let cpus = std::thread::available_parallelism().map_or(4, std::num::NonZero::get);
        Self {
            workers: cpus.clamp(4, 64),
            stall_after: Duration::from_millis(100),
        }
    }
}

impl HandlerPoolSettings {
    setters! {
        /// Workers kept running (at least 1).
        workers(workers: usize) => workers.clamp(1, MAX_WORKERS);

        /// How long a handler may stay in one call before the pool starts
        /// another worker in its place (at least 10 ms).
        stall_after(stall_after: Duration) => stall_after.max(Duration::from_millis(10));
    }

    /// Makes these the settings of the process's pool.
    ///
    /// # Errors
    /// The settings in force, when the pool already runs (a handler was
    /// added before).
    pub fn install(self) -> Result<(), HandlerPoolSettings> {
        GLOBAL
            .set(HandlerPool::new(self))
            .map_err(|_| HandlerPool::global().inner.settings)
    }
}

static GLOBAL: OnceLock<HandlerPool> = OnceLock::new();

/// Counters of the handler pool, from [`handler_pool_stats`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandlerPoolStats {
    /// The pool's size.
    pub workers: usize,
    /// Worker threads running now (more than `workers` while handlers
    /// block).
    pub threads: usize,
    /// Workers in a handler call longer than the stall threshold.
    pub blocked: usize,
    /// Queues waiting for a worker.
    pub waiting: usize,
    /// Workers started beyond the pool's size because handlers blocked,
    /// since the process started.
    pub spares_started: u64,
}

/// What the process's handler pool is doing.
#[must_use]
pub fn handler_pool_stats() -> HandlerPoolStats {
    HandlerPool::global().stats()
}

#[derive(Clone)]
pub(super) struct HandlerPool {
    inner: Arc<Inner>,
}

struct Inner {
    settings: HandlerPoolSettings,
    state: Mutex<State>,
    work: Condvar,
    /// The zero of the workers' busy clocks.
    epoch: Instant,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Arc<dyn Runnable>>,
    /// One entry per worker thread: when its current call began (ms since
    /// `epoch`, plus 1), 0 when idle.
    busy: Vec<Arc<AtomicU64>>,
    idle: usize,
    spares_started: u64,
    watcher: bool,
}

impl HandlerPool {
    pub(super) fn global() -> &'static HandlerPool {
        GLOBAL.get_or_init(|| HandlerPool::new(HandlerPoolSettings::default()))
    }

    fn new(settings: HandlerPoolSettings) -> Self {
        Self {
            inner: Arc::new(Inner {
                settings,
                state: Mutex::new(State::default()),
                work: Condvar::new(),
                epoch: Instant::now(),
            }),
        }
    }

    /// Queues `job` for a turn.
    pub(super) fn schedule(&self, job: Arc<dyn Runnable>) {
        let mut state = self.inner.state.lock();
        state.queue.push_back(job);
        if state.idle > 0 {
            drop(state);
            self.inner.work.notify_one();
        } else if state.busy.len() < self.inner.settings.workers {
            self.spawn_worker(&mut state, false);
        }
    }

    fn stats(&self) -> HandlerPoolStats {
        let state = self.inner.state.lock();
        HandlerPoolStats {
            workers: self.inner.settings.workers,
            threads: state.busy.len(),
            blocked: self.inner.blocked(&state),
            waiting: state.queue.len(),
            spares_started: state.spares_started,
        }
    }

    fn spawn_worker(&self, state: &mut State, spare: bool) {
        let slot = Arc::new(AtomicU64::new(0));
        let inner = self.inner.clone();
        let own = slot.clone();
        let spawned = std::thread::Builder::new()
            .name("kdi-handlers".into())
            .spawn(move || inner.work_loop(&own));
        match spawned {
            Ok(_) => {
                state.busy.push(slot);
                if spare {
                    state.spares_started += 1;
                }
            }
            Err(e) => tracing::error!(error = %e, "could not start an event handler worker"),
        }
        if !state.watcher {
            let inner = self.inner.clone();
            let spawned = std::thread::Builder::new()
                .name("kdi-handlers-watch".into())
                .spawn(move || inner.watch_loop());
            match spawned {
                Ok(_) => state.watcher = true,
                Err(e) => tracing::error!(error = %e, "could not start the handler pool's watcher"),
            }
        }
    }
}

impl Inner {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Workers in one call for longer than the stall threshold.
    fn blocked(&self, state: &State) -> usize {
        let now = self.now_ms();
        let limit = u64::try_from(self.settings.stall_after.as_millis()).unwrap_or(u64::MAX);
        state
            .busy
            .iter()
            .filter(|b| {
                let since = b.load(Ordering::Relaxed);
                since != 0 && now.saturating_sub(since - 1) > limit
            })
            .count()
    }

    fn work_loop(self: Arc<Self>, slot: &Arc<AtomicU64>) {
        let mut state = self.state.lock();
        loop {
            let Some(job) = state.queue.pop_front() else {
                state.idle += 1;
                let timed_out = self.work.wait_for(&mut state, SPARE_IDLE).timed_out();
                state.idle -= 1;
                let active = state.busy.len() - self.blocked(&state);
                if timed_out && active > self.settings.workers && state.queue.is_empty() {
                    state.busy.retain(|b| !Arc::ptr_eq(b, slot));
                    return;
                }
                continue;
            };
            drop(state);
            slot.store(self.now_ms() + 1, Ordering::Relaxed);
            let again = job.run_turn();
            slot.store(0, Ordering::Relaxed);
            state = self.state.lock();
            if again {
                state.queue.push_back(job);
            }
        }
    }

    /// Starts a spare worker whenever queues wait while every worker of the
    /// pool's size is blocked in a handler.
    fn watch_loop(self: Arc<Self>) {
        let pool = HandlerPool {
            inner: self.clone(),
        };
        let period = self.settings.stall_after / 2;
        let threads = metrics::gauge!("kdi_handler_pool_threads");
        let blocked = metrics::gauge!("kdi_handler_pool_blocked");
        let waiting = metrics::gauge!("kdi_handler_pool_waiting");
        loop {
            std::thread::sleep(period);
            let mut state = self.state.lock();
            #[allow(clippy::cast_precision_loss)]
            {
                threads.set(state.busy.len() as f64);
                blocked.set(self.blocked(&state) as f64);
                waiting.set(state.queue.len() as f64);
            }
            if state.queue.is_empty() || state.idle > 0 {
                continue;
            }
            let active = state.busy.len() - self.blocked(&state);
            if active < self.settings.workers && state.busy.len() < MAX_WORKERS {
                pool.spawn_worker(&mut state, true);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_installed_once_and_then_reported() {
        // Whichever install came first (here or a handler elsewhere in this
        // process) is in force; a second one is refused with it.
        let _ = HandlerPoolSettings::default().workers(6).install();
        let refused = HandlerPoolSettings::default().workers(3).install();
        let in_force = refused.expect_err("the pool already runs");
        assert_eq!(in_force.workers, handler_pool_stats().workers);
    }

    #[test]
    fn settings_are_clamped() {
        let s = HandlerPoolSettings::default()
            .workers(0)
            .stall_after(Duration::ZERO);
        assert_eq!(s.workers, 1);
        assert_eq!(s.stall_after, Duration::from_millis(10));
        assert_eq!(
            HandlerPoolSettings::default().workers(usize::MAX).workers,
            MAX_WORKERS
        );
    }
}
