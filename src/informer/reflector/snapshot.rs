//! Resuming from a snapshot: serving it as the first list, and watching
//! from its resourceVersion.

use super::*;
use crate::cache::store::Storage;
use crate::informer::snapshot::{Opened, SnapshotRefusal, Target};

/// How many objects of a snapshot are read and handed to the cache at a
/// time.
const SNAPSHOT_PAGE: usize = 500;

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
        let served = match self.open_snapshot(&options).await {
            Ok(opened) => self.serve_snapshot(opened, &options.dir, sink).await,
            Err(reason) => Err(reason),
        };
        match served {
            Ok(resource_version) => Some(resource_version),
            Err(reason) => {
                self.snapshot_pending = None;
                self.record_snapshot_start(SnapshotStart::Listed { reason });
                None
            }
        }
    }

    /// This informer's snapshot, checked whole and ready to be read page
    /// by page, or why it cannot be used.
    async fn open_snapshot(
        &self,
        options: &crate::informer::snapshot::SnapshotOptions,
    ) -> Result<Opened, SnapshotRefusal> {
        let target = self.snapshot_target(options).await?;
        *self.stats.snapshot_target.lock() = Some(target.clone());
        tokio::task::spawn_blocking(move || target.open())
            .await
            .unwrap_or_else(|e| Err(read_failed(&options.dir, &e)))
    }

    /// Hands on `opened` as the start of the first list, page by page as a
    /// list arrives: the objects are never all read at once. The next page
    /// is read while the cache takes the current one; for a cache of
    /// decoded objects, decoded there too. Returns the resourceVersion to
    /// watch from.
    async fn serve_snapshot(
        &mut self,
        opened: Opened,
        dir: &std::path::Path,
        sink: &mut (impl FnMut(Delta) + Send),
    ) -> Result<String, SnapshotRefusal> {
        self.snapshot_pending = Some(SnapshotStart::Resumed {
            age: opened.age,
            objects: opened.objects,
            resource_version: opened.resource_version.clone(),
        });
        let resource_version = opened.resource_version.clone();
        sink(Delta::ListBegin);
        let decode = self.options.cache.storage == Storage::Objects;
        let read = move |mut opened: Opened| {
            tokio::task::spawn_blocking(move || {
                let page = opened.page(SNAPSHOT_PAGE).map(|page| {
                    page.map(|objects| {
                        if decode {
                            Delta::ListPage(
                                objects
                                    .iter()
                                    .map(|o| ListItem::Decoded(Arc::new(o.to_object())))
                                    .collect(),
                            )
                        } else {
                            Delta::SnapshotPage(SnapshotPage {
                                objects,
                                interner: None,
                            })
                        }
                    })
                });
                (opened, page)
            })
        };
        let mut next = read(opened);
        loop {
            let (opened, page) = next.await.map_err(|e| read_failed(dir, &e))?;
            // An error here: only a file changed in place since it was
            // checked; the list that follows reconciles what was served.
            let Some(page) = page? else {
                if !decode {
                    sink(Delta::SnapshotPage(SnapshotPage {
                        objects: Vec::new(),
                        interner: Some(opened.into_interner()),
                    }));
                }
                return Ok(resource_version);
            };
            next = read(opened);
            sink(page);
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
        if self.options.cache.shard_group.is_some() && self.options.cache.shard.is_none() {
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
        let name = match &start {
            SnapshotStart::Resumed { .. } => {
                tracing::info!(resource = %self.key, snapshot = %start, "starting from a snapshot");
                "resumed"
            }
            SnapshotStart::Listed { reason } => {
                tracing::info!(resource = %self.key, %reason, "listing: no snapshot to resume from");
                reason.name()
            }
        };
        self.metrics.snapshot_start(name);
        *self.stats.snapshot_start.lock() = Some(start);
    }
}

/// A snapshot whose reading task failed.
fn read_failed(dir: &std::path::Path, e: &tokio::task::JoinError) -> SnapshotRefusal {
    SnapshotRefusal::Corrupt {
        path: dir.to_path_buf(),
        why: format!("reading it failed: {e}"),
    }
}
