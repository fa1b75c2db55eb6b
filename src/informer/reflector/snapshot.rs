//! Resuming from a snapshot: serving it as the first list, and watching
//! from its resourceVersion.

use super::*;
use crate::informer::snapshot::{SnapshotRefusal, Target};

impl Reflector {
    /// Before the first list of an informer with snapshots (once): hands
    /// on its snapshot as the start of that list when it can be used, and
    /// returns the resourceVersion to watch from; `None` to list.
    pub(super) async fn resume_from_snapshot(
        &mut self,
        sink: &mut (impl FnMut(Delta) + Send),
    ) -> Option<String> {
        if std::mem::replace(&mut self.snapshot_tried, true) {
            return None;
        }
        let options = self.options.snapshot.clone()?;
        let target = match self.snapshot_target(&options).await {
            Ok(target) => target,
            Err(reason) => {
                self.record_snapshot_start(SnapshotStart::Listed { reason });
                return None;
            }
        };
        *self.stats.snapshot_target.lock() = Some(target.clone());
        let loaded = tokio::task::spawn_blocking(move || target.load())
            .await
            .unwrap_or_else(|e| {
                Err(SnapshotRefusal::Corrupt {
                    path: options.dir.clone(),
                    why: format!("reading it failed: {e}"),
                })
            });
        match loaded {
            Ok(loaded) => {
                self.snapshot_pending = Some(SnapshotStart::Resumed {
                    age: loaded.age,
                    objects: loaded.objects.len(),
                    resource_version: loaded.resource_version.clone(),
                });
                sink(Delta::ListBegin);
                sink(Delta::ListPage(loaded.objects));
                Some(loaded.resource_version)
            }
            Err(reason) => {
                self.record_snapshot_start(SnapshotStart::Listed { reason });
                None
            }
        }
    }

    /// Where this informer's snapshot is, or why it has none.
    async fn snapshot_target(
        &self,
        options: &crate::informer::snapshot::SnapshotOptions,
    ) -> Result<Target, SnapshotRefusal> {
        let secrets = self.key.group.is_empty() && self.key.resource == "secrets";
        if (secrets || self.options.sensitive) && !options.include_sensitive {
            return Err(SnapshotRefusal::Sensitive);
        }
        if self.options.shard_group.is_some() && self.options.shard.is_none() {
            return Err(SnapshotRefusal::ShardGroup);
        }
        let cluster = match &options.cluster {
            Some(cluster) => cluster.clone(),
            None => self
                .lw
                .cluster_identity()
                .await
                .map_err(SnapshotRefusal::Unidentified)?,
        };
        Ok(Target::new(options, &self.key, &self.options, cluster))
    }

    /// After a watch from a snapshot's resourceVersion: once it opened, the
    /// snapshot was the first list; a 410 before that means the server's
    /// history no longer reaches it, and the list that follows starts over.
    pub(super) fn after_snapshot_watch(&mut self, end: &WatchEnd, progress: &mut Progress) {
        if self.snapshot_pending.is_none() {
            progress.listed = true;
            self.metrics
                .sync_duration
                .set(progress.started.elapsed().as_secs_f64());
        } else if matches!(end, WatchEnd::Relist) {
            self.snapshot_pending = None;
            self.record_snapshot_start(SnapshotStart::Listed {
                reason: SnapshotRefusal::TooOld,
            });
        }
    }

    pub(super) fn record_snapshot_start(&self, start: SnapshotStart) {
        self.metrics.snapshot_start(match &start {
            SnapshotStart::Resumed { .. } => "resumed",
            SnapshotStart::Listed { reason } => reason.name(),
        });
        match &start {
            SnapshotStart::Resumed { .. } => {
                tracing::info!(resource = %self.key, snapshot = %start, "starting from a snapshot");
            }
            SnapshotStart::Listed { reason } => {
                tracing::info!(resource = %self.key, %reason, "listing: no snapshot to resume from");
            }
        }
        *self.stats.snapshot_start.lock() = Some(start);
    }
}
