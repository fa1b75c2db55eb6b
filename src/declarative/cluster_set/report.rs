//! The answer to "are the caches synced?" across clusters: per cluster and
//! resource, and why not.

use std::sync::Arc;
use std::time::Duration;

use super::cluster::{ClusterEntry, unreachable};
use crate::declarative::DeclarativeError;
use crate::factory::{SyncReport, SyncResult, wait_one_informer};
use crate::informer::SyncPolicy;

/// One line of a [`ClusterSyncReport`]: its `cluster` is always set.
pub type ClusterSyncResult = SyncResult<DeclarativeError>;

/// The outcome of [`ClusterSet::wait_for_cache_sync`](super::ClusterSet::wait_for_cache_sync):
/// one result per cluster and resource, sorted by cluster, then resource in
/// the order they were added.
///
/// ```no_run
/// # async fn demo(set: kube_dynamic_informer::declarative::ClusterSet) {
/// let report = set.wait_for_cache_sync(std::time::Duration::from_secs(30)).await;
/// for r in &report.results {
///     match &r.result {
///         Ok(()) => println!("{r}"), // cluster east: deploy: synced
///         // unreachable, forbidden, notServed, timedOut, ...
///         Err(e) => println!("{} ({e})", e.reason()),
///     }
/// }
/// let east = report.in_cluster("east", "deploy");
/// # }
/// ```
pub type ClusterSyncReport = SyncReport<DeclarativeError>;

/// Waits, until `deadline`, until `cluster` has applied version `version`
/// of the set's config, so that what its patterns select is known.
pub(super) async fn converged(
    cluster: &ClusterEntry,
    version: u64,
    deadline: tokio::time::Instant,
) {
    let mut changed = cluster.changed.subscribe();
    loop {
        changed.mark_unchanged();
        let done = cluster.held.lock().converged >= Some(version);
        if done || cluster.cancel.is_cancelled() {
            return;
        }
        tokio::select! {
            r = changed.changed() => if r.is_err() { return },
            () = tokio::time::sleep_until(deadline) => return,
        }
    }
}

/// Waits, until `deadline`, for one resource of one cluster: first for it
/// to be resolved there, then for its informer to sync.
pub(super) async fn wait_one(
    cluster: &ClusterEntry,
    resource: &Arc<str>,
    deadline: tokio::time::Instant,
    timeout: Duration,
    policy: SyncPolicy,
) -> Result<(), DeclarativeError> {
    let mut changed = cluster.changed.subscribe();
    let informer = loop {
        changed.mark_unchanged();
        if cluster.cancel.is_cancelled() {
            return Err(DeclarativeError::Removed {
                cluster: cluster.name.clone(),
            });
        }
        let failure = {
            let held = cluster.held.lock();
            if let Some(held) = held.members.get(resource) {
                break held.member.informer.clone();
            }
            held.failures.get(resource).cloned()
        };
        // A cluster that refuses discovery refuses the resource too.
        let refused = failure
            .as_ref()
            .and_then(|f| f.answer.as_ref())
            .is_some_and(|why| policy.gives_up(why));
        let expired = refused
            || tokio::select! {
                r = changed.changed() => r.is_err(),
                () = tokio::time::sleep_until(deadline) => true,
            };
        if expired {
            return Err(match failure {
                Some(f) if unreachable(&f) => DeclarativeError::Unreachable {
                    cluster: cluster.name.clone(),
                    resource: resource.clone(),
                    error: f.error,
                },
                Some(f) => DeclarativeError::Unresolved {
                    cluster: cluster.name.clone(),
                    resource: resource.clone(),
                    reason: f.answer.map_or("unresolved", |why| why.reason()),
                    error: f.error,
                },
                None => DeclarativeError::TimedOut {
                    cluster: cluster.name.clone(),
                    resource: resource.clone(),
                    timeout,
                },
            });
        }
    };
    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
    wait_one_informer(&informer, left, policy)
        .await
        .map_err(|source| DeclarativeError::Cache {
            cluster: cluster.name.clone(),
            source: Box::new(source),
        })
}
