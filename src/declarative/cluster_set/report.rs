//! The answer to "are the caches synced?" across clusters: per cluster and
//! resource, and why not.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::ClusterEntry;
use crate::factory::{FactoryError, wait_one_informer};

/// Why one resource's cache is not synced in one cluster, from
/// [`ClusterSet::wait_for_cache_sync`](super::ClusterSet::wait_for_cache_sync).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterSyncError {
    /// The cluster did not answer discovery (connection refused, a timeout,
    /// a certificate): the resource is not resolved there yet. Retried with
    /// backoff; it syncs once the cluster answers.
    #[error("cluster {cluster}: {resource}: unreachable: {error}")]
    Unreachable {
        /// The cluster.
        cluster: Arc<str>,
        /// The resource, as named.
        resource: Arc<str>,
        /// The client's error, as text.
        error: String,
    },
    /// The cluster answered but the name designates nothing watchable there
    /// (unknown, ambiguous, not watchable), or the answer was an error.
    /// Retried with backoff.
    #[error("cluster {cluster}: {resource}: {error}")]
    Unresolved {
        /// The cluster.
        cluster: Arc<str>,
        /// The resource, as named.
        resource: Arc<str>,
        /// Why, as text.
        error: String,
    },
    /// The informer exists and did not sync: forbidden (403), not served,
    /// gone, timed out.
    #[error("cluster {cluster}: {source}")]
    Cache {
        /// The cluster.
        cluster: Arc<str>,
        /// Why, as the cluster's factory says it.
        #[source]
        source: FactoryError,
    },
    /// Nothing was known of the resource in the cluster when the timeout
    /// passed (its first discovery request had not answered).
    #[error("cluster {cluster}: {resource}: not resolved within {timeout:?}")]
    TimedOut {
        /// The cluster.
        cluster: Arc<str>,
        /// The resource, as named.
        resource: Arc<str>,
        /// The timeout.
        timeout: Duration,
    },
    /// The cluster was removed while waiting.
    #[error("cluster {cluster}: removed from the set")]
    Removed {
        /// The cluster.
        cluster: Arc<str>,
    },
}

impl ClusterSyncError {
    /// The reason in one camelCase word, for tables and JSON: the cluster's
    /// own (`unreachable`, `unresolved`, `timedOut`, `removed`) or the
    /// informer's ([`FactoryError::reason`]: `forbidden`, `notServed`,
    /// `gone`, `timedOut`, `notStarted`, `stopped`).
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            ClusterSyncError::Unreachable { .. } => "unreachable",
            ClusterSyncError::Unresolved { .. } => "unresolved",
            ClusterSyncError::TimedOut { .. } => "timedOut",
            ClusterSyncError::Removed { .. } => "removed",
            ClusterSyncError::Cache { source, .. } => source.reason(),
        }
    }
}

/// One line of a [`ClusterSyncReport`].
#[derive(Debug)]
pub struct ClusterSyncResult {
    /// The cluster.
    pub cluster: Arc<str>,
    /// The resource, as named to [`ClusterSet::add_resource`](super::ClusterSet::add_resource).
    pub resource: Arc<str>,
    /// Whether its cache synced there.
    pub result: Result<(), ClusterSyncError>,
}

impl fmt::Display for ClusterSyncResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.result {
            Ok(()) => write!(f, "cluster {}: {}: synced", self.cluster, self.resource),
            Err(e) => e.fmt(f),
        }
    }
}

/// The outcome of [`ClusterSet::wait_for_cache_sync`](super::ClusterSet::wait_for_cache_sync):
/// one result per cluster and resource, sorted by cluster, then resource in
/// the order they were added.
///
/// ```no_run
/// # async fn demo(set: kube_dynamic_informer::declarative::ClusterSet) {
/// let report = set.wait_for_cache_sync(std::time::Duration::from_secs(30)).await;
/// for r in &report.results {
///     match &r.result {
///         Ok(()) => println!("{} {}: synced", r.cluster, r.resource),
///         // unreachable, forbidden, notServed, timedOut, ...
///         Err(e) => println!("{} {}: {} ({e})", r.cluster, r.resource, e.reason()),
///     }
/// }
/// # }
/// ```
#[derive(Debug, Default)]
pub struct ClusterSyncReport {
    /// Per cluster and resource, whether the cache synced.
    pub results: Vec<ClusterSyncResult>,
}

impl ClusterSyncReport {
    /// Whether every cache synced in every cluster.
    #[must_use]
    pub fn all_synced(&self) -> bool {
        self.results.iter().all(|r| r.result.is_ok())
    }

    /// The failures.
    pub fn failures(&self) -> impl Iterator<Item = &ClusterSyncError> {
        self.results.iter().filter_map(|r| r.result.as_ref().err())
    }

    /// The result for one cluster and resource.
    #[must_use]
    pub fn get(&self, cluster: &str, resource: &str) -> Option<&Result<(), ClusterSyncError>> {
        self.results
            .iter()
            .find(|r| &*r.cluster == cluster && &*r.resource == resource)
            .map(|r| &r.result)
    }

    /// The results of one cluster.
    pub fn cluster<'a>(&'a self, cluster: &'a str) -> impl Iterator<Item = &'a ClusterSyncResult> {
        self.results.iter().filter(move |r| &*r.cluster == cluster)
    }
}

/// Waits, until `deadline`, for one resource of one cluster: first for it
/// to be resolved there, then for its informer to sync.
pub(super) async fn wait_one(
    cluster: &ClusterEntry,
    resource: &Arc<str>,
    deadline: tokio::time::Instant,
    timeout: Duration,
) -> Result<(), ClusterSyncError> {
    let mut changed = cluster.changed.subscribe();
    let informer = loop {
        changed.mark_unchanged();
        if cluster.cancel.is_cancelled() {
            return Err(ClusterSyncError::Removed {
                cluster: cluster.name.clone(),
            });
        }
        let (informer, failure) = {
            let held = cluster.resources.lock();
            (
                held.informers.get(resource).cloned(),
                held.failures.get(resource).cloned(),
            )
        };
        if let Some(informer) = informer {
            break informer;
        }
        let expired = tokio::select! {
            r = changed.changed() => r.is_err(),
            () = tokio::time::sleep_until(deadline) => true,
        };
        if expired {
            return Err(match failure {
                Some(f) if f.unreachable => ClusterSyncError::Unreachable {
                    cluster: cluster.name.clone(),
                    resource: resource.clone(),
                    error: f.error,
                },
                Some(f) => ClusterSyncError::Unresolved {
                    cluster: cluster.name.clone(),
                    resource: resource.clone(),
                    error: f.error,
                },
                None => ClusterSyncError::TimedOut {
                    cluster: cluster.name.clone(),
                    resource: resource.clone(),
                    timeout,
                },
            });
        }
    };
    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
    wait_one_informer(&informer, left)
        .await
        .map_err(|source| ClusterSyncError::Cache {
            cluster: cluster.name.clone(),
            source,
        })
}
