//! The answer to "are the caches synced?": per informer, and why not.

use std::time::Duration;

use super::InformerHandle;
use crate::factory::FactoryError;
use crate::informer::{InformerError, InformerStatus, NotSynced, SyncPolicy};
use crate::vocabulary::resource::ResourceKey;

/// The outcome of [`InformerFactory::wait_for_cache_sync`](super::InformerFactory::wait_for_cache_sync): one result per
/// informer, sorted by resource.
#[derive(Debug, Default)]
pub struct CacheSyncReport {
    /// Per informer: its resource, and whether its cache synced.
    pub results: Vec<(ResourceKey, Result<(), FactoryError>)>,
}

impl CacheSyncReport {
    /// Whether every cache synced.
    #[must_use]
    pub fn all_synced(&self) -> bool {
        self.results.iter().all(|(_, r)| r.is_ok())
    }

    /// The informers that did not sync, with why.
    pub fn failures(&self) -> impl Iterator<Item = (&ResourceKey, &FactoryError)> {
        self.results
            .iter()
            .filter_map(|(k, r)| r.as_ref().err().map(|e| (k, e)))
    }

    /// The result for a resource (its first informer, if there are several).
    #[must_use]
    pub fn get(&self, resource: &ResourceKey) -> Option<&Result<(), FactoryError>> {
        self.results
            .iter()
            .find(|(k, _)| k == resource)
            .map(|(_, r)| r)
    }

    /// `Ok` when every cache synced, else the first failure.
    ///
    /// # Errors
    /// The first [`FactoryError`].
    pub fn into_result(self) -> Result<(), FactoryError> {
        self.results
            .into_iter()
            .find_map(|(_, r)| r.err())
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
            (gi.resource(), result)
        }
    });
    CacheSyncReport {
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

    #[test]
    fn cache_sync_report() {
        let key = ResourceKey::new("", "v1", "pods");
        let report = CacheSyncReport {
            results: vec![
                (key.clone(), Ok(())),
                (
                    ResourceKey::new("", "v1", "secrets"),
                    Err(FactoryError::NotSynced {
                        resource: ResourceKey::new("", "v1", "secrets"),
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
