//! The answer to "are the caches synced?": per informer, and why not.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::InformerHandle;
use crate::factory::FactoryError;
use crate::informer::{InformerError, InformerStatus, NotSynced, SyncPolicy};

/// Whether caches synced, and why not: one [`SyncResult`] per cache. A
/// factory's wait gives one per informer ([`CacheSyncReport`], sorted by
/// resource); a cluster set's, one per cluster and resource
/// ([`ClusterSyncReport`](crate::declarative::ClusterSyncReport)).
#[derive(Debug)]
pub struct SyncReport<E> {
    /// One per cache.
    pub results: Vec<SyncResult<E>>,
}

/// One line of a [`SyncReport`].
#[derive(Debug)]
pub struct SyncResult<E> {
    /// The cluster, in a cluster set's report; `None` in a factory's.
    pub cluster: Option<Arc<str>>,
    /// The resource: its key (`pods.v1`) in a factory's report, the name
    /// the set gives it in a cluster set's.
    pub resource: Arc<str>,
    /// Whether its cache synced; the error says why not.
    pub result: Result<(), E>,
}

/// The outcome of [`InformerFactory::wait_for_cache_sync`](super::InformerFactory::wait_for_cache_sync).
pub type CacheSyncReport = SyncReport<FactoryError>;

impl<E> Default for SyncReport<E> {
    fn default() -> Self {
        Self {
            results: Vec::new(),
        }
    }
}

impl<E: fmt::Display> fmt::Display for SyncResult<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.result, &self.cluster) {
            (Err(e), _) => e.fmt(f),
            (Ok(()), Some(cluster)) => write!(f, "cluster {cluster}: {}: synced", self.resource),
            (Ok(()), None) => write!(f, "{}: synced", self.resource),
        }
    }
}

impl<E> SyncReport<E> {
    /// Whether every cache synced.
    #[must_use]
    pub fn all_synced(&self) -> bool {
        self.results.iter().all(|r| r.result.is_ok())
    }

    /// Why each cache that did not sync did not.
    pub fn failures(&self) -> impl Iterator<Item = &E> {
        self.results.iter().filter_map(|r| r.result.as_ref().err())
    }

    /// The lines of the caches that did not sync.
    pub fn failed(&self) -> impl Iterator<Item = &SyncResult<E>> {
        self.results.iter().filter(|r| r.result.is_err())
    }

    /// The result for `resource` (`pods.v1`, or a [`ResourceKey`](crate::vocabulary::ResourceKey); in a
    /// cluster set's report, its first cluster's).
    #[must_use]
    pub fn get(&self, resource: impl fmt::Display) -> Option<&Result<(), E>> {
        let resource = resource.to_string();
        self.results
            .iter()
            .find(|r| *r.resource == *resource)
            .map(|r| &r.result)
    }

    /// The result for `resource` in `cluster`.
    #[must_use]
    pub fn in_cluster(&self, cluster: &str, resource: &str) -> Option<&Result<(), E>> {
        self.results
            .iter()
            .find(|r| r.cluster.as_deref() == Some(cluster) && &*r.resource == resource)
            .map(|r| &r.result)
    }

    /// The results of one cluster.
    pub fn cluster<'a>(&'a self, cluster: &'a str) -> impl Iterator<Item = &'a SyncResult<E>> {
        self.results
            .iter()
            .filter(move |r| r.cluster.as_deref() == Some(cluster))
    }

    /// `Ok` when every cache synced, else the first failure.
    ///
    /// # Errors
    /// The first failure.
    pub fn into_result(self) -> Result<(), E> {
        self.results
            .into_iter()
            .find_map(|r| r.result.err())
            .map_or(Ok(()), Err)
    }
}

/// Waits for one informer under `policy`, and says why it did not sync.
pub(crate) async fn wait_one(
    gi: &InformerHandle,
    timeout: Duration,
    policy: SyncPolicy,
) -> Result<(), FactoryError> {
    let resource = gi.resource();
    // An informer of a factory that was not started is started by nothing
    // but InformerFactory::start: waiting for it is waiting in vain.
    if gi.status() == InformerStatus::NotStarted {
        return Err(FactoryError::NotSynced {
            resource,
            reason: NotSynced::NotStarted,
        });
    }
    gi.informer
        .wait_for_sync_with(timeout, policy)
        .await
        .map_err(|e| match e {
            InformerError::NotSynced { reason, .. } => FactoryError::NotSynced { resource, reason },
            other => FactoryError::Informer(other),
        })
}

/// Waits for every informer of `informers` under `policy`. Under
/// [`SyncPolicy::GiveUpWhenRefused`] the first refusal ends every wait: the
/// others answer with where they are then (synced, or why not), as a
/// one-shot reader wants.
pub(crate) async fn wait_all(
    informers: Vec<InformerHandle>,
    timeout: Duration,
    policy: SyncPolicy,
) -> CacheSyncReport {
    let refused = tokio_util::sync::CancellationToken::new();
    let started = tokio::time::Instant::now();
    let waits = informers.into_iter().map(|gi| {
        let refused = refused.clone();
        async move {
            let result = tokio::select! {
                result = wait_one(&gi, timeout, policy) => {
                    let is_refused = matches!(&result, Err(e) if e.not_synced().is_some_and(|w| w.is_refused()));
                    if is_refused && policy == SyncPolicy::GiveUpWhenRefused {
                        refused.cancel();
                    }
                    result
                }
                // Said with how long was waited, not the timeout asked.
                () = refused.cancelled() => where_it_is(&gi, started.elapsed()),
            };
            SyncResult {
                cluster: None,
                resource: gi.resource().to_string().into(),
                result,
            }
        }
    });
    SyncReport {
        results: futures::future::join_all(waits).await,
    }
}

/// Whether `gi` is synced now, and if not, why (`waited`: how long it was
/// waited for).
fn where_it_is(gi: &InformerHandle, waited: Duration) -> Result<(), FactoryError> {
    if gi.has_synced() {
        return Ok(());
    }
    match NotSynced::from_status(&gi.status(), waited) {
        None => Ok(()),
        Some(reason) => Err(FactoryError::NotSynced {
            resource: gi.resource(),
            reason,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::resource::ResourceKey;

    #[test]
    fn cache_sync_report() {
        let key = ResourceKey::new("", "v1", "pods");
        let line = |resource: &ResourceKey, result| SyncResult {
            cluster: None,
            resource: resource.to_string().into(),
            result,
        };
        let secrets = ResourceKey::new("", "v1", "secrets");
        let report = CacheSyncReport {
            results: vec![
                line(&key, Ok(())),
                line(
                    &secrets,
                    Err(FactoryError::NotSynced {
                        resource: secrets.clone(),
                        reason: NotSynced::Forbidden {
                            message: "secrets is forbidden".into(),
                        },
                    }),
                ),
            ],
        };
        assert!(!report.all_synced());
        assert_eq!(report.failures().count(), 1);
        assert!(matches!(report.get(&key), Some(Ok(()))));
        assert_eq!(
            report.into_result().unwrap_err().to_string(),
            "secrets.v1: forbidden (403); it syncs once access is granted: secrets is forbidden"
        );
    }
}
