//! The dispatcher, which owns the listeners: what the informer does with
//! each delta (store, indexes, handlers), and its timers: resync and
//! staleness.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kube_core::DynamicObject;
use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::cache::store::{CachedObject, ReplaceOutcome, SnapshotFill, Storage, StoreWriter};
use crate::informer::resync::ResyncClock;
use crate::informer::status::InformerStatus;
use crate::vocabulary::object_key::{key_from_parts, object_key};
use crate::vocabulary::shard::{Settlement, ShardSelector};

use super::event::Event;
use super::filter::{Dropped, Gate, Passed};
use super::listener::{Listener, Mailbox};
use super::reflector::Delta;
use super::{FORGET_EVERY, Shared};

/// Everything guarded by the dispatch lock.
#[derive(Default)]
pub(super) struct Dispatch {
    pub(super) listeners: Vec<Listener>,
    pub(super) clock: ResyncClock,
    pub(super) started: bool,
    pub(super) synced: bool,
    /// The id of the last registration.
    pub(super) next_id: u64,
    /// The shard ranges before and after a change, until the end of the
    /// list that follows it.
    pub(super) reshard: Option<Reshard>,
    /// The objects of the events handed to handlers, kept until the
    /// handlers are done with them (see [`Retired`]).
    pub(super) retired: Retired,
    /// A snapshot's objects, in the cache and not yet handed to the
    /// handlers: they are, as initial Adds, at the next other delta (the
    /// end of the snapshot) or registration, so that the handlers' decoding
    /// does not hold back the cache's filling.
    pub(super) deferred: Vec<CachedObject>,
    /// Async handlers' tasks, awaited on stop.
    pub(super) tasks: Vec<tokio::task::JoinHandle<()>>,
    /// The filters and change predicates of the listeners that have them,
    /// one per distinct pair.
    pub(super) gates: Vec<Gate>,
    /// The id of the last gate.
    pub(super) next_gate: u64,
}

impl Dispatch {
    /// Hands the deferred objects of a snapshot to every handler, as
    /// initial Adds decoded only when the handler is about to run. A closed
    /// handler's queue refuses them; the next delta's dispatch drops it.
    pub(super) fn hand_on_deferred(&mut self) {
        let deferred = std::mem::take(&mut self.deferred);
        if deferred.is_empty() {
            return;
        }
        // Which objects each gate lets through, taken once per gate.
        let admitted: Vec<(u64, Vec<bool>)> = self
            .gates
            .iter_mut()
            .map(|g| (g.id, deferred.iter().map(|o| g.offered(o)).collect()))
            .collect();
        for l in &mut self.listeners {
            let admitted = l
                .gate
                .and_then(|id| admitted.iter().find(|(g, _)| *g == id))
                .map(|(_, admitted)| admitted);
            let mut dropped = 0;
            for (i, object) in deferred.iter().enumerate() {
                if admitted.is_none_or(|a| a[i]) {
                    l.push(Event::replay(object.clone()));
                } else {
                    dropped += 1;
                }
            }
            l.mailbox.state.filtered(Dropped::Condition, dropped);
        }
    }

    /// Drops the gates no listener passes any more, and the hooks of
    /// listeners gone.
    pub(super) fn drop_unused_gates(&mut self) {
        let listeners = &self.listeners;
        self.gates
            .retain(|g| listeners.iter().any(|l| l.gate == Some(g.id)));
        for gate in &mut self.gates {
            gate.keep_hooks(|id| listeners.iter().any(|l| l.mailbox.state.id == id));
        }
    }
}

/// A shard's selector before (none before the first list) and after a
/// change of its ranges.
pub(super) type Reshard = (Option<ShardSelector>, ShardSelector);

/// The dispatcher: the listeners and what they are owed, behind one lock.
#[derive(Default)]
pub(super) struct Dispatcher {
    state: Mutex<Dispatch>,
    /// Resync ticks wake up when the check period changes.
    pub(super) resync_changed: tokio::sync::Notify,
}

impl Dispatcher {
    pub(super) fn lock(&self) -> parking_lot::MutexGuard<'_, Dispatch> {
        self.state.lock()
    }
}

/// When something last arrived from the server, for staleness.
#[derive(Default)]
pub(super) struct LastHeard {
    at: Mutex<Option<Instant>>,
    /// The status was set to stale (cleared by the next delta).
    stale: AtomicBool,
}

impl LastHeard {
    /// Something arrived now; true when the status was stale.
    fn now(&self) -> bool {
        *self.at.lock() = Some(Instant::now());
        self.stale.swap(false, Ordering::Relaxed)
    }

    /// The time since something last arrived; `None` before anything did.
    pub(super) fn silent_for(&self) -> Option<Duration> {
        self.at.lock().map(|at| at.elapsed())
    }
}

/// What one delta did to the cache: the events it makes, and what the
/// handlers learn besides.
#[derive(Default)]
struct Applied {
    events: Vec<Event>,
    /// The first complete list ended: every handler has synced.
    first_sync: bool,
    /// A shard hand-over the handlers confirm once they have seen it.
    settlement: Option<Settlement>,
    /// Objects a relist found gone, delivered with a final state unknown.
    tombstones: u64,
    /// The new states as decoded from the wire, kept until the handler
    /// filters have read them (a compact handle finds them meanwhile), then
    /// freed here.
    decoded: Vec<Arc<DynamicObject>>,
}

impl Applied {
    /// The events of a list page or a list's end (initial Adds until the
    /// first sync).
    fn listed(
        mut outcome: ReplaceOutcome,
        in_initial_list: bool,
        reshard: Option<&Reshard>,
    ) -> Self {
        let mut applied = Applied {
            decoded: std::mem::take(&mut outcome.decoded),
            ..Applied::default()
        };
        applied.tombstones = push_outcome(&mut applied.events, outcome, in_initial_list, reshard);
        applied
    }

    /// The event of an upsert that stored `new` in place of `old`;
    /// `decoded`, the object decoded from the wire, kept until the handler
    /// filters have read it.
    fn upserted(
        upserted: Option<(CachedObject, Option<CachedObject>)>,
        decoded: Option<Arc<DynamicObject>>,
    ) -> Self {
        let Some((new, old)) = upserted else {
            return Applied::default();
        };
        let mut applied = Applied::event(match old {
            Some(old) => Event::Update {
                old,
                new,
                is_resync: false,
            },
            None => Event::Add {
                object: new,
                in_initial_list: false,
                entered_shard: false,
                entered_filter: false,
            },
        });
        applied.decoded.extend(decoded);
        applied
    }

    fn event(event: Event) -> Self {
        Applied {
            events: vec![event],
            ..Applied::default()
        }
    }
}

impl Shared {
    /// Applies one delta to the store and queues its events, under the
    /// dispatch lock.
    pub(super) fn process(&self, writer: &mut StoreWriter, delta: Delta) {
        // Objects arrive transformed (InformerOptions::transform, applied by
        // the reflector).
        self.heard_from_server();
        if let Delta::ResourceVersion(rv) = &delta {
            self.reached(writer, rv);
            return;
        }
        let mut d = self.dispatch.lock();
        if !matches!(delta, Delta::SnapshotPage(_)) {
            d.hand_on_deferred();
        }
        let applied = self.apply(writer, &mut d, delta);
        if applied.tombstones > 0 {
            self.stats
                .tombstones
                .fetch_add(applied.tombstones, Ordering::Relaxed);
        }
        #[allow(clippy::cast_precision_loss)]
        self.metrics.objects.set(self.store.len() as f64);
        self.hand_to_listeners(&mut d, applied);
    }

    /// Changes the store as `delta` says, and says what that makes.
    fn apply(&self, writer: &mut StoreWriter, d: &mut Dispatch, delta: Delta) -> Applied {
        match delta {
            Delta::ResourceVersion(_) => Applied::default(),
            Delta::ListBegin => {
                writer.begin_list();
                Applied::default()
            }
            Delta::ListPage(objects) => {
                let outcome = writer.list_page_of(objects);
                Applied::listed(outcome, !d.synced, d.reshard.as_ref())
            }
            Delta::SnapshotPage(page) => match writer.snapshot_page(page.objects, page.interner) {
                // A snapshot is read only before the first list, and never
                // by a shard group's member: its objects are initial Adds,
                // in no shard before.
                SnapshotFill::Filled(added) => {
                    d.deferred.extend(added);
                    Applied::default()
                }
                SnapshotFill::Listed(outcome) => {
                    Applied::listed(outcome, !d.synced, d.reshard.as_ref())
                }
            },
            Delta::Reshard {
                previous,
                current,
                settlement,
            } => {
                let mut applied = Applied {
                    settlement,
                    ..Applied::default()
                };
                self.leave_shard(writer, &current, &mut applied.events);
                d.reshard = Some((previous, current));
                applied
            }
            Delta::ListEnd => {
                let outcome = writer.end_list();
                let reshard = d.reshard.take();
                let mut applied = Applied::listed(outcome, !d.synced, reshard.as_ref());
                applied.first_sync = !d.synced;
                d.synced = true;
                applied
            }
            Delta::Upsert(object) => {
                let decoded = Arc::new(object);
                let upserted = writer.upsert_held(decoded.clone());
                // Only a handler filter reads it.
                let decoded = (!d.gates.is_empty()).then_some(decoded);
                Applied::upserted(upserted, decoded)
            }
            Delta::UpsertBuilt(object) => Applied::upserted(writer.upsert_compact(object), None),
            Delta::Delete(object) => match object_key(&object) {
                Some(key) if writer.remove(&key) => Applied::event(Event::Delete {
                    object: CachedObject::from(Arc::new(object)),
                    final_state_unknown: false,
                    left_shard: false,
                    left_filter: false,
                }),
                _ => Applied::default(),
            },
        }
    }

    /// Queues what a delta made to every listener, dropping those that
    /// closed. A listener with a filter or a change predicate gets what its
    /// gate lets through, each gate passed once.
    fn hand_to_listeners(&self, d: &mut Dispatch, applied: Applied) {
        let Dispatch {
            listeners,
            gates,
            retired,
            ..
        } = d;
        let passed: Vec<(u64, Passed)> = if applied.events.is_empty() {
            Vec::new()
        } else {
            gates
                .iter_mut()
                .map(|g| (g.id, g.pass(&applied.events)))
                .collect()
        };
        let passed_by = |gate: Option<u64>| {
            gate.and_then(|id| passed.iter().find(|(g, _)| *g == id))
                .map(|(_, p)| p)
        };
        retire(retired, listeners, &applied.events, &passed_by);
        listeners.retain_mut(|l| {
            if l.is_closed() {
                return false;
            }
            let pushed = match passed_by(l.gate) {
                None => applied.events.iter().all(|e| l.push(e.clone())),
                Some(passed) => {
                    for why in [Dropped::Condition, Dropped::Unchanged] {
                        l.mailbox.state.filtered(why, passed.dropped[why as usize]);
                    }
                    passed.events.iter().all(|(_, e)| l.push(e.clone()))
                }
            };
            if !pushed {
                return false;
            }
            if applied.first_sync {
                l.mark_synced();
            }
            if let Some(settlement) = &applied.settlement {
                l.push_settlement(settlement);
            }
            true
        });
        if gates
            .iter()
            .any(|g| !listeners.iter().any(|l| l.gate == Some(g.id)))
        {
            d.drop_unused_gates();
        }
    }

    /// Something arrived: the cache is current again, not stale.
    fn heard_from_server(&self) {
        if self.heard.now() {
            self.status.send_if_modified(|status| {
                if matches!(status, InformerStatus::Stale { .. }) {
                    *status = InformerStatus::Synced;
                    true
                } else {
                    false
                }
            });
            self.metrics.stale.set(0.0);
        }
    }

    /// The cache reached resourceVersion `rv`: the store says so, and a
    /// snapshot is written when one is due.
    fn reached(&self, writer: &mut StoreWriter, rv: &str) {
        writer.set_resource_version(rv);
        self.metrics.synced_to(rv);
        if let Some(snapshot) = &self.options.snapshot
            && self.dispatch.lock().synced
        {
            self.snapshots
                .reached(snapshot, &self.stats, &self.metrics, &self.store, rv);
        }
    }

    /// Removes the objects `current` does not hold, as `leftShard`
    /// deletes: now, before the new ranges are listed, so that a source
    /// waiting to give those ranges up need not wait for the list.
    fn leave_shard(
        &self,
        writer: &mut StoreWriter,
        current: &ShardSelector,
        events: &mut Vec<Event>,
    ) {
        for cached in self.store.list_all() {
            if !current.matches_parts(cached.uid(), cached.namespace())
                && let Some(name) = cached.name()
                && writer.remove(&key_from_parts(cached.namespace(), name))
            {
                events.push(Event::Delete {
                    object: cached,
                    final_state_unknown: false,
                    left_shard: true,
                    left_filter: false,
                });
            }
        }
    }

    /// Delivers due resyncs every check period.
    pub(super) async fn resync_loop(&self, cancel: CancellationToken) {
        loop {
            let check = self.dispatch.lock().clock.check_period();
            // A zero check period: no resync until the period changes.
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = self.dispatch.resync_changed.notified() => continue,
                _ = tokio::time::sleep(check), if !check.is_zero() => {}
            }
            self.resync_due(Instant::now());
        }
    }

    pub(super) fn resync_due(&self, now: Instant) {
        let mut d = self.dispatch.lock();
        if !d.synced {
            return;
        }
        let due = |l: &Listener| l.next_resync.is_some_and(|t| t <= now);
        if !d.listeners.iter().any(due) {
            return;
        }
        let objects = self.store.list_all();
        let Dispatch {
            listeners, gates, ..
        } = &mut *d;
        for l in listeners.iter_mut().filter(|l| due(l)) {
            // A resync of what the handler sees: the objects its filter
            // lets through (a change predicate drops no resync).
            let gate = l.gate.and_then(|id| gates.iter().find(|g| g.id == id));
            let mut dropped = 0;
            for o in &objects {
                if gate.is_none_or(|g| g.admits(o)) {
                    l.push(Event::resync(o.clone()));
                } else {
                    dropped += 1;
                }
            }
            l.mailbox.state.filtered(Dropped::Condition, dropped);
            l.next_resync = Some(now + l.resync);
        }
    }

    /// With compact storage, frees every few seconds what the objects
    /// decoded from the wire keep in the cache once they are dropped, so
    /// that memory comes back after a burst even on a resource nobody writes
    /// any more.
    ///
    /// It also frees the event objects handlers finished with since the
    /// last delta (see [`Retired`]), on a resource that has gone quiet.
    pub(super) async fn forget_loop(&self, cancel: CancellationToken) {
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(FORGET_EVERY) => {}
            }
            self.dispatch.lock().retired.release_all();
            if self.options.cache.storage == Storage::Compact {
                self.store.forget_dropped();
            }
        }
    }

    /// Reports the informer stale while it is synced and nothing has arrived
    /// for `stale_after`.
    pub(super) async fn staleness_loop(&self, cancel: CancellationToken) {
        let limit = self.options.watch.stale_after;
        if limit.is_zero() {
            return cancel.cancelled().await;
        }
        let check = (limit / 4).clamp(Duration::from_millis(50), Duration::from_secs(15));
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(check) => {}
            }
            let silent = self.heard.silent_for().unwrap_or_default();
            if silent < limit {
                continue;
            }
            let became_stale = self.status.send_if_modified(|status| match status {
                InformerStatus::Synced => {
                    *status = InformerStatus::Stale { silent_for: silent };
                    true
                }
                _ => false,
            });
            if became_stale {
                self.heard.stale.store(true, Ordering::Relaxed);
                self.metrics.stale.set(1.0);
                tracing::warn!(resource = %self.key, silent_for = ?silent, "nothing received from the watch for longer than staleAfter; the cache may be behind the server");
            }
        }
    }

    /// Closes every queue, waits (up to 5 s) for handlers in a call to
    /// return and for async handlers' tasks to end.
    pub(super) async fn stop_listeners(&self) {
        let (mailboxes, tasks) = {
            let mut d = self.dispatch.lock();
            let mailboxes: Vec<Arc<Mailbox>> = d.listeners.drain(..).map(|l| l.mailbox).collect();
            d.gates.clear();
            (mailboxes, std::mem::take(&mut d.tasks))
        };
        for m in &mailboxes {
            m.close();
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        let busy =
            || mailboxes.iter().any(|m| m.is_running()) || !tasks.iter().all(|t| t.is_finished());
        while Instant::now() < deadline && busy() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if busy() {
            tracing::warn!(resource = %self.key, "an event handler is still running after stop; it is left to finish");
        }
        for task in tasks {
            if !task.is_finished() {
                task.abort();
            }
        }
    }
}

/// Queues the events of what a list changed in the cache. During the list
/// after a shard's ranges changed (`reshard`: the ranges before and after),
/// objects that left the ranges are deletes marked `left_shard`, and objects
/// from outside the former ranges are adds marked `entered_shard`. Returns
/// how many deletes are tombstones (final state unknown).
pub(super) fn push_outcome(
    events: &mut Vec<Event>,
    outcome: ReplaceOutcome,
    in_initial_list: bool,
    reshard: Option<&Reshard>,
) -> u64 {
    events.reserve(outcome.added.len() + outcome.updated.len() + outcome.deleted.len());
    let in_shard =
        |shard: &ShardSelector, o: &CachedObject| shard.matches_parts(o.uid(), o.namespace());
    let entered = |object: &CachedObject| {
        reshard.is_some_and(|(before, _)| before.as_ref().is_some_and(|b| !in_shard(b, object)))
    };
    let left = |object: &CachedObject| reshard.is_some_and(|(_, now)| !in_shard(now, object));
    events.extend(outcome.added.into_iter().map(|object| Event::Add {
        entered_shard: entered(&object),
        object,
        in_initial_list,
        entered_filter: false,
    }));
    events.extend(outcome.updated.into_iter().map(|(old, new)| Event::Update {
        old,
        new,
        is_resync: false,
    }));
    let mut tombstones = 0;
    events.extend(outcome.deleted.into_iter().map(|object| {
        let left_shard = left(&object);
        tombstones += u64::from(!left_shard);
        Event::Delete {
            object,
            final_state_unknown: !left_shard,
            left_shard,
            left_filter: false,
        }
    }));
    tombstones
}

/// The objects of the events handed to handlers that run elsewhere (the
/// handler pool, a task, a stream) that the store no longer holds — a
/// deleted object, the state an update replaced — kept until those handlers
/// are done with them, and then freed here, where the informer decoded
/// them.
///
/// Memory freed on another thread than the one that allocated it is what
/// glibc's malloc handles worst, and handlers would hold the last reference
/// to each of those objects (`cargo bench --bench update_threads` measures
/// the difference). Held here, a handler's drop is a counter decrement; the
/// informer frees the object at its next delta (or within [`FORGET_EVERY`]
/// on a quiet resource).
#[derive(Default)]
pub(super) struct Retired {
    held: std::collections::VecDeque<CachedObject>,
    /// The length above which the whole queue is swept (amortised), so
    /// that one object a slow handler still holds does not keep every
    /// later one.
    sweep_above: usize,
}

impl Retired {
    /// Frees the objects only this queue holds any more, then keeps those
    /// of `events` that the store does not hold: a deleted object, and the
    /// state an update replaced.
    fn keep(&mut self, events: &[Event]) {
        self.release();
        for event in events {
            match event {
                Event::Add { .. } => {}
                Event::Delete { object, .. } => self.held.push_back(object.clone()),
                Event::Update { old, .. } => self.held.push_back(old.clone()),
            }
        }
    }

    /// Frees, from the front, the objects nobody else holds; sweeps the
    /// whole queue when it has grown past twice its size at the last sweep.
    fn release(&mut self) {
        while self.held.front().is_some_and(CachedObject::is_unique) {
            self.held.pop_front();
        }
        if self.held.len() > self.sweep_above {
            self.release_all();
        }
    }

    /// Frees every object nobody else holds.
    fn release_all(&mut self) {
        self.held.retain(|o| !o.is_unique());
        self.sweep_above = (self.held.len() * 2).max(RETIRED_SWEEP);
    }
}

/// The smallest queue of retired objects swept whole.
const RETIRED_SWEEP: usize = 1024;

/// Hands `retired` the objects of the `events` that a listener running
/// elsewhere receives: every event when one of them has no gate, else
/// those its gate passed (in whatever form: an Add or a Delete it became
/// holds the same objects). Each event's objects once, so that the queue
/// can tell when it holds their last handle.
fn retire<'a>(
    retired: &mut Retired,
    listeners: &[Listener],
    events: &[Event],
    passed_by: &impl Fn(Option<u64>) -> Option<&'a Passed>,
) {
    let elsewhere = || listeners.iter().filter(|l| l.mailbox.runs_elsewhere());
    if elsewhere().next().is_none() {
        return;
    }
    if elsewhere().any(|l| passed_by(l.gate).is_none()) {
        retired.keep(events);
        return;
    }
    let passed = |l: &Listener| passed_by(l.gate).is_some_and(|p| !p.events.is_empty());
    if !elsewhere().any(passed) {
        retired.keep(&[]);
        return;
    }
    let mut kept = vec![false; events.len()];
    for l in elsewhere() {
        if let Some(passed) = passed_by(l.gate) {
            for (i, _) in &passed.events {
                kept[*i] = true;
            }
        }
    }
    let kept: Vec<Event> = events
        .iter()
        .zip(kept)
        .filter(|(_, kept)| *kept)
        .map(|(e, _)| e.clone())
        .collect();
    retired.keep(&kept);
}

#[cfg(test)]
mod measure;

#[cfg(test)]
mod retired_tests {
    use super::*;

    fn object(name: &str) -> CachedObject {
        CachedObject::from(Arc::new(
            serde_json::from_value::<DynamicObject>(
                serde_json::json!({ "metadata": { "name": name } }),
            )
            .expect("an object"),
        ))
    }

    fn delete(object: &CachedObject) -> Event {
        Event::Delete {
            object: object.clone(),
            final_state_unknown: false,
            left_shard: false,
            left_filter: false,
        }
    }

    #[test]
    fn objects_handlers_still_hold_are_kept_and_freed_here_once_they_let_go() {
        let mut retired = Retired::default();
        let (a, b) = (object("a"), object("b"));
        retired.keep(&[delete(&a), delete(&b)]);
        // The handlers hold both: the queue keeps them.
        retired.release_all();
        assert_eq!(retired.held.len(), 2);
        // A handler done with `a` (the last other holder) lets it go: the
        // next delta frees it here.
        let weak_a = Arc::downgrade(&a.object());
        drop(a);
        retired.keep(&[]);
        assert_eq!(weak_a.strong_count(), 0);
        assert_eq!(retired.held.len(), 1);
        drop(b);
        retired.release_all();
        assert!(retired.held.is_empty());
    }

    #[test]
    fn what_the_store_still_holds_is_not_kept() {
        let mut retired = Retired::default();
        let (new, old, gone) = (object("new"), object("old"), object("gone"));
        retired.keep(&[
            Event::replay(new.clone()),
            Event::Update {
                old: old.clone(),
                new: new.clone(),
                is_resync: false,
            },
            delete(&gone),
        ]);
        // The replaced and the deleted states: the store no longer holds them.
        assert_eq!(retired.held.len(), 2);
        drop((old, gone));
        retired.release_all();
        assert!(retired.held.is_empty());
    }
}
