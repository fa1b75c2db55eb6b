//! The answer to "are the caches synced?": per informer, and why not.

use std::time::Duration;

use super::InformerHandle;
use super::resource_ref::shown;
use crate::informer::{InformerError, InformerStatus};
use crate::vocabulary::resource::ResourceKey;

/// Why one informer's cache is not synced, from
/// [`InformerFactory::wait_for_cache_sync`](super::InformerFactory::wait_for_cache_sync).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CacheSyncError {
    /// The server refuses the list (403); the informer keeps retrying and
    /// syncs by itself once access is granted.
    #[error("{}: forbidden (403); it syncs once access is granted: {message}", shown(.resource))]
    Forbidden {
        /// The resource.
        resource: ResourceKey,
        /// The server's message.
        message: String,
    },
    /// The resource is not served (a CRD not installed); the informer
    /// starts once it is.
    #[error("{reason}; the informer of {} starts once it is served", shown(.resource))]
    NotServed {
        /// The resource.
        resource: ResourceKey,
        /// Discovery's reason.
        reason: String,
    },
    /// The resource was served and is gone (its CRD was deleted).
    #[error(
        "{reason}; the informer of {} emptied its cache and resumes if it is served again",
        shown(.resource)
    )]
    Gone {
        /// The resource.
        resource: ResourceKey,
        /// Discovery's reason.
        reason: String,
    },
    /// Not synced within the timeout, for another reason.
    #[error("{} did not sync within {timeout:?}; last status: {status}", shown(.resource))]
    TimedOut {
        /// The resource.
        resource: ResourceKey,
        /// The timeout.
        timeout: Duration,
        /// What the informer was doing.
        status: Box<InformerStatus>,
    },
    /// The factory was not started.
    #[error("{}: the informer was not started (call InformerFactory::start)", shown(.resource))]
    NotStarted {
        /// The resource.
        resource: ResourceKey,
    },
    /// The informer stopped (removed, or the factory shut down).
    #[error("{}: the informer stopped before its cache synced", shown(.resource))]
    Stopped {
        /// The resource.
        resource: ResourceKey,
    },
}

impl CacheSyncError {
    /// The reason in one camelCase word, in the words of
    /// [`InformerStatus::name`]: `forbidden`, `notServed`, `gone`,
    /// `timedOut`, `notStarted` or `stopped`.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            CacheSyncError::Forbidden { .. } => "forbidden",
            CacheSyncError::NotServed { .. } => "notServed",
            CacheSyncError::Gone { .. } => "gone",
            CacheSyncError::TimedOut { .. } => "timedOut",
            CacheSyncError::NotStarted { .. } => "notStarted",
            CacheSyncError::Stopped { .. } => "stopped",
        }
    }
}

/// The outcome of [`InformerFactory::wait_for_cache_sync`](super::InformerFactory::wait_for_cache_sync): one result per
/// informer, sorted by resource.
#[derive(Debug, Clone, Default)]
pub struct CacheSyncReport {
    /// Per informer: its resource, and whether its cache synced.
    pub results: Vec<(ResourceKey, Result<(), CacheSyncError>)>,
}

impl CacheSyncReport {
    /// Whether every cache synced.
    #[must_use]
    pub fn all_synced(&self) -> bool {
        self.results.iter().all(|(_, r)| r.is_ok())
    }

    /// The informers that did not sync, with why.
    pub fn failures(&self) -> impl Iterator<Item = (&ResourceKey, &CacheSyncError)> {
        self.results
            .iter()
            .filter_map(|(k, r)| r.as_ref().err().map(|e| (k, e)))
    }

    /// The result for a resource (its first informer, if there are several).
    #[must_use]
    pub fn get(&self, resource: &ResourceKey) -> Option<&Result<(), CacheSyncError>> {
        self.results
            .iter()
            .find(|(k, _)| k == resource)
            .map(|(_, r)| r)
    }

    /// `Ok` when every cache synced, else the first failure.
    ///
    /// # Errors
    /// The first [`CacheSyncError`].
    pub fn into_result(self) -> Result<(), CacheSyncError> {
        self.results
            .into_iter()
            .find_map(|(_, r)| r.err())
            .map_or(Ok(()), Err)
    }
}

/// Waits for one informer, and says why it did not sync.
pub(crate) async fn wait_one(gi: &InformerHandle, timeout: Duration) -> Result<(), CacheSyncError> {
    let resource = gi.resource();
    if gi.status() == InformerStatus::NotStarted {
        return Err(CacheSyncError::NotStarted { resource });
    }
    gi.informer
        .wait_for_sync(timeout)
        .await
        .map_err(|e| match e {
            InformerError::Gone { reason, .. } => CacheSyncError::Gone { resource, reason },
            InformerError::SyncTimeout { status, .. } => match *status {
                InformerStatus::BackingOff {
                    code: Some(403),
                    error,
                    ..
                } => CacheSyncError::Forbidden {
                    resource,
                    message: error,
                },
                InformerStatus::Pending { reason } => {
                    CacheSyncError::NotServed { resource, reason }
                }
                status => CacheSyncError::TimedOut {
                    resource,
                    timeout,
                    status: Box::new(status),
                },
            },
            _ => CacheSyncError::Stopped { resource },
        })
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
                    Err(CacheSyncError::Forbidden {
                        resource: ResourceKey::new("", "v1", "secrets"),
                        message: "secrets is forbidden".into(),
                    }),
                ),
            ],
        };
        assert!(!report.all_synced());
        assert_eq!(report.failures().count(), 1);
        assert_eq!(report.get(&key), Some(&Ok(())));
        assert_eq!(
            report.into_result().unwrap_err().to_string(),
            "secrets.v1: forbidden (403); it syncs once access is granted: secrets is forbidden"
        );
    }
}
