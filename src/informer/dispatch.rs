//! What the informer does with each delta (store, indexes, handlers), and
//! its timers: resync and staleness.

use super::*;

impl Shared {
    /// Applies one delta to the store and queues its events, under the
    /// dispatch lock.
    pub(super) fn process(&self, writer: &mut StoreWriter, delta: Delta) {
        // Objects arrive transformed (see ReflectorConfig::transform).
        self.heard_from_server();
        if let Delta::ResourceVersion(rv) = &delta {
            self.reached(writer, rv);
            return;
        }
        let mut d = self.dispatch.lock();
        let mut events = Vec::new();
        let mut first_sync = false;
        let mut settlement = None;
        let mut tombstones = 0;
        match delta {
            Delta::ResourceVersion(_) => {}
            Delta::ListBegin => writer.begin_list(),
            Delta::ListPage(objects) => {
                let outcome = writer.list_page(objects.into_iter().map(Arc::new).collect());
                tombstones += push_outcome(&mut events, outcome, !d.synced, d.reshard.as_ref());
            }
            Delta::Reshard {
                previous,
                current,
                settlement: handed_over,
            } => {
                self.leave_shard(writer, &current, &mut events);
                d.reshard = Some((previous, current));
                settlement = handed_over;
            }
            Delta::ListEnd => {
                let outcome = writer.end_list();
                tombstones +=
                    push_outcome(&mut events, outcome, !d.synced, d.reshard.take().as_ref());
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
                        entered_shard: false,
                    },
                });
            }
            Delta::Delete(object) => {
                if let Some(key) = object_key(&object)
                    && writer.remove(&key)
                {
                    events.push(Event::Delete {
                        object: Arc::new(object),
                        final_state_unknown: false,
                        left_shard: false,
                    });
                }
            }
        }
        if tombstones > 0 {
            self.stats
                .tombstones
                .fetch_add(tombstones, Ordering::Relaxed);
        }
        #[allow(clippy::cast_precision_loss)]
        self.metrics.objects.set(self.store.len() as f64);
        let resource = &self.key;
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
            if let Some(settlement) = &settlement {
                l.push_settlement(settlement);
            }
            true
        });
    }

    /// Something arrived: the cache is current again, not stale.
    fn heard_from_server(&self) {
        self.last_delta.store(self.elapsed_ms(), Ordering::Relaxed);
        if self.stale.swap(false, Ordering::Relaxed) {
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
                    object: cached.object(),
                    final_state_unknown: false,
                    left_shard: true,
                });
            }
        }
    }

    /// Delivers due resyncs every check period.
    pub(super) async fn resync_loop(&self, cancel: CancellationToken) {
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

    pub(super) fn resync_due(&self, now: Instant) {
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
        let objects = self.store.list_all();
        for i in due {
            let l = &mut d.listeners[i];
            for o in &objects {
                l.push(Queued::Resync(o.clone()), &self.key);
            }
            l.next_resync = Some(now + l.resync);
        }
    }

    pub(super) fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.clock.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// With compact storage, frees every few seconds what the objects
    /// decoded for readers and handlers keep in the cache once they are
    /// dropped, so that memory comes back after a replay, a resync or a
    /// `list_all` even on a resource nobody writes.
    pub(super) async fn forget_loop(&self, cancel: CancellationToken) {
        if self.options.storage != Storage::Compact {
            return cancel.cancelled().await;
        }
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(FORGET_EVERY) => {}
            }
            self.store.forget_dropped();
        }
    }

    /// Reports the informer stale while it is synced and nothing has arrived
    /// for `stale_after`.
    pub(super) async fn staleness_loop(&self, cancel: CancellationToken) {
        let limit = self.options.stale_after;
        if limit.is_zero() {
            return cancel.cancelled().await;
        }
        let check = (limit / 4).clamp(Duration::from_millis(50), Duration::from_secs(15));
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(check) => {}
            }
            let silent = Duration::from_millis(
                self.elapsed_ms()
                    .saturating_sub(self.last_delta.load(Ordering::Relaxed)),
            );
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
                self.stale.store(true, Ordering::Relaxed);
                self.metrics.stale.set(1.0);
                tracing::warn!(resource = %self.key, silent_for = ?silent, "nothing received from the watch for longer than staleAfter; the cache may be behind the server");
            }
        }
    }

    /// Closes every queue, waits (up to 5 s) for handlers in a call to
    /// return and for async handlers' tasks to end.
    pub(super) async fn stop_listeners(&self) {
        let mailboxes: Vec<Arc<Mailbox>> = {
            let mut d = self.dispatch.lock();
            let mailboxes = d
                .listeners
                .iter()
                .filter_map(|l| l.mailbox().cloned())
                .collect();
            for l in &d.listeners {
                l.state.mark_removed();
            }
            d.listeners.clear();
            mailboxes
        };
        for m in &mailboxes {
            m.close();
        }
        let tasks = std::mem::take(&mut *self.tasks.lock());
        let deadline = Instant::now() + Duration::from_secs(5);
        let finished = |m: &Arc<Mailbox>| !m.is_running();
        while Instant::now() < deadline
            && (!mailboxes.iter().all(finished)
                || !tasks.iter().all(tokio::task::JoinHandle::is_finished))
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if !mailboxes.iter().all(finished)
            || !tasks.iter().all(tokio::task::JoinHandle::is_finished)
        {
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
    let entered = |object: &DynamicObject| {
        reshard.is_some_and(|(before, _)| before.as_ref().is_some_and(|b| !b.matches(object)))
    };
    let left = |object: &DynamicObject| reshard.is_some_and(|(_, now)| !now.matches(object));
    events.extend(outcome.added.into_iter().map(|object| Event::Add {
        entered_shard: entered(&object),
        object,
        in_initial_list,
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
        }
    }));
    tombstones
}
