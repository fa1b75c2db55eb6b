//! The queue's guarantees, case by case, and against a model of client-go's
//! workqueue under random sequences of operations (proptest), with tokio's
//! clock paused so that delays are exact.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use futures::FutureExt;
use proptest::prelude::*;
use tokio::time::{Instant, advance, timeout};

use super::*;
use crate::reconcile::rate_limit::ItemExponentialBackoff;

type Key = u8;

const HOUR: Duration = Duration::from_secs(3600);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Whole milliseconds of `d`, exactly.
fn millis(d: Duration) -> u64 {
    assert_eq!(
        d.subsec_nanos() % 1_000_000,
        0,
        "{d:?} is not whole milliseconds"
    );
    u64::try_from(d.as_millis()).unwrap()
}

fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

/// The limiter of the model test: 1 ms doubling up to 64 ms.
fn limiter() -> ItemExponentialBackoff<Key> {
    ItemExponentialBackoff::new(ms(1), ms(64))
}

/// Every key `try_get` hands out now, each marked done at once.
fn take_all(queue: &WorkQueue<Key>) -> Vec<Key> {
    let mut keys = Vec::new();
    while let Some(key) = queue.try_get() {
        queue.done(&key);
        keys.push(key);
    }
    keys
}

#[test]
fn a_key_added_many_times_while_it_waits_is_handed_out_once() {
    let queue = WorkQueue::new("q");
    for key in [1, 2, 1, 3, 2, 1] {
        queue.add(key);
    }
    assert_eq!(queue.len(), 3);
    assert_eq!(take_all(&queue), [1, 2, 3]);
    assert!(queue.is_empty());
}

#[test]
fn a_key_added_while_it_is_processed_comes_back_once_after_done() {
    let queue = WorkQueue::new("q");
    queue.add(1);
    assert_eq!(queue.try_get(), Some(1));
    queue.add(1);
    queue.add(1);
    assert_eq!(queue.try_get(), None, "not handed out twice at once");
    assert_eq!(queue.len(), 0);
    queue.done(&1);
    assert_eq!(queue.try_get(), Some(1));
    queue.done(&1);
    assert_eq!(queue.try_get(), None, "once");
    queue.done(&1); // not processing: nothing
    assert_eq!(queue.try_get(), None);
}

#[tokio::test(start_paused = true)]
async fn a_delayed_key_comes_at_its_deadline_and_the_earlier_deadline_wins() {
    let queue = WorkQueue::new("q");
    let start = Instant::now();
    queue.add_after(1, ms(300));
    queue.add_after(2, ms(200));
    queue.add_after(1, ms(100)); // earlier: wins
    queue.add_after(2, ms(400)); // later: ignored
    assert_eq!(queue.len(), 0);
    assert_eq!(queue.get().await, Some(1));
    assert_eq!(start.elapsed(), ms(100));
    assert_eq!(queue.get().await, Some(2));
    assert_eq!(start.elapsed(), ms(200));
    queue.done(&1);
    queue.done(&2);
    let nothing = timeout(HOUR, queue.get()).await;
    assert!(nothing.is_err(), "the superseded deadlines bring nothing");
    queue.add_after(3, Duration::ZERO);
    assert_eq!(queue.try_get(), Some(3), "a zero delay adds at once");
}

#[tokio::test(start_paused = true)]
async fn a_key_due_before_another_is_added_comes_first() {
    let queue = WorkQueue::new("q");
    queue.add_after(1, ms(10));
    advance(ms(20)).await;
    queue.add(2);
    assert_eq!(take_all(&queue), [1, 2]);
}

#[tokio::test(start_paused = true)]
async fn a_waiting_getter_wakes_for_a_key_added_and_for_a_nearer_deadline() {
    let queue = WorkQueue::new("q");
    let getter = tokio::spawn({
        let queue = queue.clone();
        async move { (queue.get().await, queue.get().await) }
    });
    tokio::task::yield_now().await;
    queue.add_after(1, HOUR);
    queue.add_after(2, ms(50));
    let start = Instant::now();
    let (first, second) = getter.await.unwrap();
    assert_eq!((first, second), (Some(2), Some(1)));
    assert_eq!(start.elapsed(), HOUR);
}

#[tokio::test(start_paused = true)]
async fn rate_limited_keys_back_off_until_forgotten() {
    let queue = WorkQueue::with_rate_limiter("q", limiter());
    let start = Instant::now();
    let mut came_at = Vec::new();
    for _ in 0..4 {
        queue.add_rate_limited(7);
        assert_eq!(queue.get().await, Some(7));
        came_at.push(start.elapsed());
        queue.done(&7);
    }
    assert_eq!(came_at, [1, 3, 7, 15].map(ms));
    assert_eq!(queue.num_requeues(&7), 4);
    queue.forget(&7);
    assert_eq!(queue.num_requeues(&7), 0);
    queue.add_rate_limited(7);
    assert_eq!(queue.get().await, Some(7));
    assert_eq!(start.elapsed(), ms(16));
}

#[tokio::test(start_paused = true)]
async fn stopping_drops_waiting_keys_and_answers_none_to_getters() {
    let queue = WorkQueue::new("q");
    let waiting = tokio::spawn({
        let queue = queue.clone();
        async move { queue.get().await }
    });
    tokio::task::yield_now().await;
    queue.add(1);
    assert_eq!(waiting.await.unwrap(), Some(1));
    let waiting = tokio::spawn({
        let queue = queue.clone();
        async move { queue.get().await }
    });
    tokio::task::yield_now().await;
    queue.add(1); // comes back after done: dropped by the stop
    queue.add(2);
    queue.add_after(3, ms(10));
    // The spawned getter took 2.
    assert_eq!(waiting.await.unwrap(), Some(2));
    queue.add(4);
    let parked = tokio::spawn({
        let queue = queue.clone();
        async move { (queue.get().await, queue.get().await) }
    });
    tokio::task::yield_now().await;
    queue.shut_down();
    assert!(queue.is_shutting_down());
    assert_eq!(parked.await.unwrap(), (Some(4), None));
    assert_eq!(queue.len(), 0);
    queue.add(5);
    queue.add_after(6, ms(1));
    queue.add_rate_limited(7);
    advance(ms(20)).await;
    assert_eq!(queue.try_get(), None);
    assert_eq!(queue.get().await, None);
    queue.done(&1);
    queue.done(&2);
    assert_eq!(
        queue.get().await,
        None,
        "1 was added meanwhile, and is dropped"
    );
    assert_eq!(
        queue.num_requeues(&7),
        0,
        "no failure counted after shutdown"
    );
}

#[tokio::test(start_paused = true)]
async fn a_drain_hands_out_what_waits_and_ends_when_all_of_it_is_done() {
    let queue = WorkQueue::new("q");
    for key in [1, 2, 3] {
        queue.add(key);
    }
    queue.add_after(9, ms(10));
    assert_eq!(queue.try_get(), Some(1));
    queue.add(1); // comes back after done
    let mut drain = Box::pin(queue.shut_down_with_drain());
    assert!(queue.is_shutting_down());
    queue.add(4); // refused: nothing new
    assert!(drain.as_mut().now_or_never().is_none());
    assert_eq!(queue.try_get(), Some(2));
    assert_eq!(queue.try_get(), Some(3));
    // 1 is still processing, and comes back: a getter waits for it.
    let mut get = Box::pin(queue.get());
    assert!(get.as_mut().now_or_never().is_none());
    queue.done(&1);
    assert_eq!(get.await, Some(1));
    for key in [1, 2] {
        queue.done(&key);
        assert!(drain.as_mut().now_or_never().is_none(), "3 is in flight");
    }
    assert_eq!(queue.get().await, None, "nothing left, 9 was dropped");
    queue.done(&3);
    assert_eq!(drain.as_mut().now_or_never(), Some(()));
    advance(ms(20)).await;
    assert_eq!(queue.try_get(), None);
}

#[tokio::test(start_paused = true)]
async fn a_drain_after_a_stop_waits_for_the_keys_in_flight() {
    let queue = WorkQueue::new("q");
    queue.add(1);
    queue.add(2);
    assert_eq!(queue.try_get(), Some(1));
    queue.shut_down();
    let mut drain = Box::pin(queue.shut_down_with_drain());
    assert!(drain.as_mut().now_or_never().is_none());
    queue.done(&1);
    assert_eq!(drain.await, ());
    let empty = WorkQueue::<Key>::new("empty");
    assert_eq!(empty.shut_down_with_drain().now_or_never(), Some(()));
}

/// Workers on several threads, a producer adding keys: no key is
/// processed by two workers at once, and every key is processed after
/// its last add.
#[test]
fn concurrent_workers_never_hold_one_key_at_once_and_see_every_last_add() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        let queue = WorkQueue::<u16>::new("q");
        let held = Arc::new(Mutex::new(BTreeSet::new()));
        // Per key: (adds, the add count seen when it was last handed out).
        let seen = Arc::new(Mutex::new(BTreeMap::<u16, (u64, u64)>::new()));
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let (queue, held, seen) = (queue.clone(), held.clone(), seen.clone());
                tokio::spawn(async move {
                    while let Some(key) = queue.get().await {
                        assert!(held.lock().insert(key), "{key} handed out twice");
                        {
                            let mut seen = seen.lock();
                            let entry = seen.entry(key).or_default();
                            entry.1 = entry.0;
                        }
                        tokio::task::yield_now().await;
                        held.lock().remove(&key);
                        queue.done(&key);
                    }
                })
            })
            .collect();
        for i in 0..20_000u32 {
            let key = u16::try_from(i * 7919 % 50).unwrap();
            // Counted before the add, so a worker that takes the key sees it.
            seen.lock().entry(key).or_default().0 += 1;
            queue.add(key);
            if i % 64 == 0 {
                tokio::task::yield_now().await;
            }
        }
        timeout(Duration::from_secs(60), queue.shut_down_with_drain())
            .await
            .expect("drained");
        for worker in workers {
            worker.await.unwrap();
        }
        for (key, (adds, seen)) in seen.lock().iter() {
            assert_eq!(adds, seen, "key {key}: its last add not processed");
        }
    });
}

// The model.

/// An operation on the queue; keys and indexes are small so that they
/// collide.
#[derive(Clone, Debug)]
enum Op {
    Add(Key),
    AddAfter(Key, u16),
    AddRateLimited(Key),
    Forget(Key),
    TryGet,
    /// `get`, given an hour.
    Get,
    /// `done` of the n-th key being processed (modulo their number).
    Done(usize),
    Advance(u16),
    ShutDown,
    Drain,
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0..6u8;
    prop_oneof![
        6 => key.clone().prop_map(Op::Add),
        4 => (key.clone(), 0..200u16).prop_map(|(k, d)| Op::AddAfter(k, d)),
        2 => key.clone().prop_map(Op::AddRateLimited),
        1 => key.prop_map(Op::Forget),
        4 => Just(Op::TryGet),
        3 => Just(Op::Get),
        5 => (0..4usize).prop_map(Op::Done),
        3 => (0..150u16).prop_map(Op::Advance),
        1 => prop_oneof![Just(Op::ShutDown), Just(Op::Drain)],
    ]
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Life {
    #[default]
    Running,
    Draining,
    Stopped,
}

/// client-go's workqueue as its documentation tells it, in the plainest
/// data structures, on a clock of whole milliseconds. Every operation
/// first adds the keys due by then, in deadline order.
#[derive(Debug, Default)]
struct Model {
    now: u64,
    life: Life,
    ready: VecDeque<Key>,
    dirty: BTreeSet<Key>,
    processing: BTreeSet<Key>,
    /// (deadline, order delayed, key): at most one per key.
    delayed: Vec<(u64, u64, Key)>,
    seq: u64,
    failures: BTreeMap<Key, u32>,
}

/// What a `get` gives in the model.
#[derive(Debug, PartialEq)]
enum Got {
    Key {
        after: u64,
        key: Key,
    },
    Closed,
    /// Nothing within the hour.
    Nothing,
}

impl Model {
    fn promote(&mut self) {
        let now = self.now;
        let mut due: Vec<_> = self
            .delayed
            .iter()
            .copied()
            .filter(|d| d.0 <= now)
            .collect();
        due.sort_unstable();
        self.delayed.retain(|d| d.0 > now);
        for (_, _, key) in due {
            self.add_now(key);
        }
    }

    fn add_now(&mut self, key: Key) {
        if self.life == Life::Running && self.dirty.insert(key) && !self.processing.contains(&key) {
            self.ready.push_back(key);
        }
    }

    fn add(&mut self, key: Key) {
        self.promote();
        self.add_now(key);
    }

    fn add_after(&mut self, key: Key, delay: u64) {
        self.promote();
        if self.life != Life::Running {
            return;
        }
        if delay == 0 {
            return self.add_now(key);
        }
        let at = self.now + delay;
        let seq = self.seq;
        match self.delayed.iter_mut().find(|d| d.2 == key) {
            Some(d) if d.0 <= at => return,
            Some(d) => *d = (at, seq, key),
            None => self.delayed.push((at, seq, key)),
        }
        self.seq += 1;
    }

    fn add_rate_limited(&mut self, key: Key) {
        if self.life != Life::Running {
            return;
        }
        let failures = self.failures.entry(key).or_default();
        let delay = (1u64 << (*failures).min(10)).min(64);
        *failures += 1;
        self.add_after(key, delay);
    }

    fn try_get(&mut self) -> Got {
        self.promote();
        if self.life == Life::Stopped {
            return Got::Closed;
        }
        if let Some(key) = self.ready.pop_front() {
            self.dirty.remove(&key);
            self.processing.insert(key);
            return Got::Key { after: 0, key };
        }
        if self.life == Life::Draining && self.dirty.is_empty() {
            return Got::Closed;
        }
        Got::Nothing
    }

    fn get(&mut self) -> Got {
        let start = self.now;
        loop {
            match self.try_get() {
                Got::Key { key, .. } => {
                    return Got::Key {
                        after: self.now - start,
                        key,
                    };
                }
                Got::Closed => return Got::Closed,
                Got::Nothing => match self.delayed.iter().map(|d| d.0).min() {
                    Some(at) if at < start + 3_600_000 => self.now = at,
                    _ => {
                        self.now = start + 3_600_000;
                        self.promote();
                        return Got::Nothing;
                    }
                },
            }
        }
    }

    fn done(&mut self, key: Key) {
        self.promote();
        if self.processing.remove(&key) && self.dirty.contains(&key) {
            self.ready.push_back(key);
        }
    }

    fn shut_down(&mut self) {
        self.life = Life::Stopped;
        self.ready.clear();
        self.dirty.clear();
        self.delayed.clear();
    }

    fn drain(&mut self) {
        self.promote();
        if self.life == Life::Running {
            self.life = Life::Draining;
        }
        self.delayed.clear();
    }

    fn len(&mut self) -> usize {
        self.promote();
        self.ready.len()
    }

    /// Whether a drain started now would be over.
    fn drained(&self) -> bool {
        match self.life {
            Life::Running => false,
            Life::Draining => {
                self.ready.is_empty() && self.dirty.is_empty() && self.processing.is_empty()
            }
            Life::Stopped => self.processing.is_empty(),
        }
    }
}

type Drain = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Runs `ops` on a queue and on the model, comparing what each answers
/// after every step, and checking that no key is handed out while it is
/// being processed.
async fn queue_against_model(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let queue = WorkQueue::with_rate_limiter("model", limiter());
    let mut model = Model::default();
    let mut in_flight = BTreeSet::new();
    let (mut drain, mut drained): (Option<Drain>, bool) = (None, false);
    let mut drain_started = false;
    for op in ops {
        let got = match op {
            Op::Add(key) => {
                queue.add(key);
                model.add(key);
                None
            }
            Op::AddAfter(key, delay) => {
                queue.add_after(key, ms(u64::from(delay)));
                model.add_after(key, u64::from(delay));
                None
            }
            Op::AddRateLimited(key) => {
                queue.add_rate_limited(key);
                model.add_rate_limited(key);
                None
            }
            Op::Forget(key) => {
                queue.forget(&key);
                model.failures.remove(&key);
                None
            }
            Op::TryGet => {
                let got = queue
                    .try_get()
                    .map_or(Got::Nothing, |key| Got::Key { after: 0, key });
                let want = match model.try_get() {
                    Got::Closed => Got::Nothing, // try_get says None to both
                    want => want,
                };
                Some((got, want))
            }
            Op::Get => {
                let start = Instant::now();
                let got = match timeout(HOUR, queue.get()).await {
                    Ok(Some(key)) => Got::Key {
                        after: millis(start.elapsed()),
                        key,
                    },
                    Ok(None) => {
                        prop_assert_eq!(start.elapsed(), Duration::ZERO, "None at once");
                        Got::Closed
                    }
                    Err(_) => {
                        prop_assert_eq!(start.elapsed(), HOUR);
                        Got::Nothing
                    }
                };
                Some((got, model.get()))
            }
            Op::Done(n) => {
                if let Some(&key) = model
                    .processing
                    .iter()
                    .nth(n % model.processing.len().max(1))
                {
                    queue.done(&key);
                    model.done(key);
                    in_flight.remove(&key);
                }
                None
            }
            Op::Advance(by) => {
                advance(ms(u64::from(by))).await;
                model.now += u64::from(by);
                None
            }
            Op::ShutDown => {
                queue.shut_down();
                model.shut_down();
                None
            }
            Op::Drain => {
                if !drain_started {
                    drain = Some(Box::pin(queue.shut_down_with_drain()));
                    model.drain();
                    drain_started = true;
                }
                None
            }
        };
        if let Some((got, want)) = got {
            prop_assert_eq!(&got, &want);
            if let Got::Key { key, .. } = got {
                prop_assert!(
                    in_flight.insert(key),
                    "{} handed out twice before done",
                    key
                );
            }
        }
        prop_assert_eq!(queue.len(), model.len(), "keys waiting");
        prop_assert_eq!(queue.is_shutting_down(), model.life != Life::Running);
        if let Some(future) = drain.as_mut()
            && future.as_mut().now_or_never().is_some()
        {
            (drain, drained) = (None, true);
        }
        prop_assert_eq!(drained, drain_started && model.drained(), "drain over");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_queue_answers_as_its_model(ops in prop::collection::vec(op(), 1..80)) {
        paused_runtime().block_on(queue_against_model(ops))?;
    }
}

// The guarantees one by one, on random input.

/// Keys in the order of their first appearance.
fn first_seen(keys: &[Key]) -> Vec<Key> {
    let mut seen = BTreeSet::new();
    keys.iter().copied().filter(|k| seen.insert(*k)).collect()
}

proptest! {
    #[test]
    fn a_waiting_key_is_handed_out_once_however_often_it_was_added(
        adds in prop::collection::vec(0..8u8, 0..60),
    ) {
        let queue = WorkQueue::new("q");
        for &key in &adds {
            queue.add(key);
        }
        let distinct = first_seen(&adds);
        prop_assert_eq!(queue.len(), distinct.len());
        prop_assert_eq!(take_all(&queue), distinct);
    }

    #[test]
    fn a_key_added_while_it_is_processed_comes_back_exactly_once_after_done(
        times in 1..10usize,
        others in prop::collection::vec(1..8u8, 0..20),
    ) {
        let queue = WorkQueue::new("q");
        queue.add(0);
        prop_assert_eq!(queue.try_get(), Some(0));
        for (i, &other) in others.iter().enumerate() {
            if i < times {
                queue.add(0);
            }
            queue.add(other);
        }
        for _ in others.len()..times {
            queue.add(0);
        }
        prop_assert_eq!(take_all(&queue), first_seen(&others), "0 is not handed out before done");
        queue.done(&0);
        prop_assert_eq!(take_all(&queue), [0]);
    }

    #[test]
    fn delayed_keys_come_at_their_earliest_deadline_in_deadline_order(
        delays in prop::collection::vec((0..6u8, 1..500u64), 1..30),
    ) {
        paused_runtime().block_on(async {
            let queue = WorkQueue::new("q");
            // Per key, the deadline that wins and the order it was set in.
            let mut want: BTreeMap<Key, (u64, usize)> = BTreeMap::new();
            for (i, &(key, delay)) in delays.iter().enumerate() {
                queue.add_after(key, ms(delay));
                let entry = want.entry(key).or_insert((delay, i));
                if delay < entry.0 {
                    *entry = (delay, i);
                }
            }
            let mut want: Vec<_> = want.into_iter().map(|(k, (at, i))| (at, i, k)).collect();
            want.sort_unstable();
            let start = Instant::now();
            let mut got = Vec::new();
            while let Ok(Some(key)) = timeout(HOUR, queue.get()).await {
                got.push((millis(start.elapsed()), key));
                queue.done(&key);
            }
            let want: Vec<_> = want.into_iter().map(|(at, _, k)| (at, k)).collect();
            prop_assert_eq!(got, want);
            Ok(())
        })?;
    }

    #[test]
    fn a_stop_drops_what_waits_and_a_drain_hands_out_only_what_waited(
        before in prop::collection::vec(0..8u8, 0..20),
        in_flight in 0..4usize,
        again in prop::collection::vec(0..8u8, 0..10),
        stop in any::<bool>(),
    ) {
        paused_runtime().block_on(async {
            let queue = WorkQueue::new("q");
            for &key in &before {
                queue.add(key);
            }
            let held: Vec<Key> = (0..in_flight).map_while(|_| queue.try_get()).collect();
            for &key in &again {
                queue.add(key);
            }
            queue.add_after(100, ms(1));
            let waiting: BTreeSet<Key> =
                before.iter().chain(&again).copied().filter(|k| !held.contains(k)).collect();
            let mut drain = Box::pin(queue.shut_down_with_drain());
            if stop {
                queue.shut_down();
            }
            for key in 0..8 {
                queue.add(key + 50);
            }
            advance(ms(10)).await;
            let mut handed = BTreeSet::new();
            for &key in &held {
                prop_assert_eq!(drain.as_mut().now_or_never(), None, "{} is in flight", key);
                queue.done(&key);
                while let Some(key) = queue.try_get() {
                    handed.insert(key);
                    queue.done(&key);
                }
            }
            while let Some(key) = queue.try_get() {
                handed.insert(key);
                queue.done(&key);
            }
            let came_back: BTreeSet<Key> =
                held.iter().copied().filter(|k| again.contains(k)).collect();
            let want: BTreeSet<Key> = if stop {
                BTreeSet::new()
            } else {
                waiting.union(&came_back).copied().collect()
            };
            prop_assert_eq!(handed, want);
            prop_assert_eq!(drain.as_mut().now_or_never(), Some(()));
            prop_assert_eq!(queue.get().await, None);
            Ok(())
        })?;
    }
}
