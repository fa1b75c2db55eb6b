//! A sharded reflector: waiting for its ranges, and noticing when they
//! change.

use super::*;

impl Reflector {
    /// Whether a sharded informer's ranges differ from those of its last
    /// list.
    pub(super) fn ranges_differ(&self) -> bool {
        let Some(source) = &self.shard else {
            return false;
        };
        let now = source
            .ranges
            .borrow()
            .clone()
            .map(|r| ShardSelector::new(source.key, r));
        now.is_some() && now != self.active_shard
    }

    /// For a sharded informer, before a list: waits for the ranges (a shard
    /// group's first assignment), and hands on a [`Delta::Reshard`] when
    /// they differ from those of the last list.
    pub(super) async fn take_shard_ranges(
        &mut self,
        cancel: &CancellationToken,
        sink: &mut (impl FnMut(Delta) + Send),
    ) -> ShardStep {
        let Some(source) = &mut self.shard else {
            return ShardStep::List;
        };
        let key = source.key;
        let (ranges, settlement) = loop {
            let (current, settlement) = match &source.follower {
                Some(follower) => {
                    let (ranges, settlement) = follower.take(&mut source.ranges);
                    (ranges, Some(settlement))
                }
                None => (source.ranges.borrow_and_update().clone(), None),
            };
            if let Some(ranges) = current {
                break (ranges, settlement);
            }
            let pending = match &source.assignment {
                Some(assignment) => InformerStatus::WaitingForShards {
                    assignment: assignment.clone(),
                },
                None => InformerStatus::Pending {
                    reason: "waiting for this member's shard ranges".to_owned(),
                },
            };
            replace_status(&self.status, pending);
            tokio::select! {
                _ = cancel.cancelled() => return ShardStep::Cancelled,
                changed = source.ranges.changed() => if changed.is_err() {
                    cancel.cancelled().await;
                    return ShardStep::Cancelled;
                },
            }
        };
        let current = ShardSelector::new(key, ranges);
        if self.active_shard.as_ref() != Some(&current) {
            *self.stats.shard_selector.lock() = Some(current.clone());
            tracing::info!(resource = %self.key, selector = %current, share = current.share(), "shard ranges set; listing them");
            sink(Delta::Reshard {
                previous: self.active_shard.replace(current.clone()),
                current: current.clone(),
                settlement,
            });
        }
        if current.is_empty() {
            sink(Delta::ListBegin);
            sink(Delta::ListEnd);
            return ShardStep::Nothing;
        }
        ShardStep::List
    }

    /// Waits until a sharded informer's ranges differ from the active ones.
    /// False when cancelled.
    pub(super) async fn wait_ranges_changed(&self, cancel: &CancellationToken) -> bool {
        tokio::select! {
            _ = cancel.cancelled() => false,
            () = self.ranges_changed() => true,
        }
    }

    /// Resolves when a sharded informer's ranges differ from the active
    /// ones; never for an informer whose ranges cannot change.
    pub(super) fn ranges_changed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let source = self.shard.clone();
        let active = self.active_shard.clone();
        async move {
            let Some(mut source) = source else {
                return futures::future::pending().await;
            };
            loop {
                let now = source
                    .ranges
                    .borrow_and_update()
                    .clone()
                    .map(|r| ShardSelector::new(source.key, r));
                if now.is_some() && now != active {
                    return;
                }
                if source.ranges.changed().await.is_err() {
                    return futures::future::pending().await;
                }
            }
        }
    }
}
