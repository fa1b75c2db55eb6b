//! Synced, and why not: the one decision every layer above reads.
//!
//! An informer's [`InformerStatus`] says what it is doing; [`NotSynced`]
//! says, from that status, why its cache is not synced, in one vocabulary:
//! the factory's [`CacheSyncReport`](crate::factory::CacheSyncReport), a
//! cluster set's report and `kdi` all give these reasons, so a 401 reads
//! `unauthorized` everywhere. [`SyncPolicy`] says how long a wait goes on:
//! through every failure until the timeout, or until the server refuses.

use std::fmt;
use std::time::Duration;

use super::status::{FailedRequest, InformerStatus};

/// Why an informer's cache is not synced.
///
/// ```
/// use std::time::Duration;
/// use kube_dynamic_informer::informer::{InformerStatus, NotSynced};
///
/// let status = InformerStatus::BackingOff {
///     error: "Unauthorized".into(),
///     code: Some(401),
///     attempt: 3,
///     retry_in: Duration::from_secs(2),
///     synced_before: false,
/// };
/// let why = NotSynced::from_status(&status, Duration::from_secs(30)).unwrap();
/// assert_eq!(why.reason(), "unauthorized");
/// assert!(why.is_refused());
/// assert_eq!(why.to_string(), "unauthorized (401): Unauthorized");
/// assert_eq!(NotSynced::from_status(&InformerStatus::Synced, Duration::ZERO), None);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum NotSynced {
    /// The informer was not started.
    NotStarted,
    /// The resource is not served (yet): a CRD not installed, say. An
    /// informer that follows discovery (a factory's) sends no request and
    /// starts once discovery sees it; another one got a 404 and retries.
    NotServed {
        /// Why, as discovery put it.
        reason: String,
    },
    /// The resource was served and is no longer (its CRD was deleted): the
    /// cache was emptied, and the informer resumes if it is served again.
    Gone {
        /// Why, as discovery put it.
        reason: String,
    },
    /// The server refuses the list (403); the informer retries and syncs by
    /// itself once access is granted.
    Forbidden {
        /// The server's message.
        message: String,
    },
    /// The server refuses the credentials (401).
    Unauthorized {
        /// The server's message.
        message: String,
    },
    /// The server answered with another error status (429, 500, 503, ...);
    /// the informer retries with backoff.
    ServerError {
        /// The HTTP status code.
        code: u16,
        /// The server's message.
        message: String,
    },
    /// No answer from the server (connection refused, a timeout, TLS, a
    /// response that is not a list); the informer retries with backoff.
    Unreachable {
        /// What the client said.
        message: String,
    },
    /// The informer stopped before its cache synced.
    Stopped,
    /// Still listing (or waiting for its shard ranges) when the time ran out.
    TimedOut {
        /// How long was waited.
        timeout: Duration,
        /// What the informer was doing then.
        status: Box<InformerStatus>,
    },
}

impl NotSynced {
    /// Why an informer in `status`, whose cache has not synced, is not
    /// synced; `None` when the status is synced (or stale: the cache holds
    /// a complete list). `timeout` is how long was waited, for
    /// [`TimedOut`](Self::TimedOut).
    #[must_use]
    pub fn from_status(status: &InformerStatus, timeout: Duration) -> Option<NotSynced> {
        Some(match status {
            InformerStatus::Synced | InformerStatus::Stale { .. } => return None,
            InformerStatus::NotStarted => NotSynced::NotStarted,
            InformerStatus::Pending { reason } => NotSynced::NotServed {
                reason: reason.clone(),
            },
            InformerStatus::Gone { reason } => NotSynced::Gone {
                reason: reason.clone(),
            },
            InformerStatus::BackingOff { error, code, .. } => {
                NotSynced::from_failure(*code, error.clone())
            }
            InformerStatus::Stopped => NotSynced::Stopped,
            InformerStatus::Syncing { .. }
            | InformerStatus::Relisting { .. }
            | InformerStatus::WaitingForShards { .. } => NotSynced::TimedOut {
                timeout,
                status: Box::new(status.clone()),
            },
        })
    }

    /// Why a request about the resource failed, from the HTTP status code
    /// of the answer (`None`: no answer) and what was said: 401, 403, 404
    /// (the resource is not served), another code, or no answer. The same
    /// decision for a failed list or watch and for a failed discovery
    /// request.
    #[must_use]
    pub fn from_failure(code: Option<u16>, message: String) -> NotSynced {
        match FailedRequest::of(code) {
            FailedRequest::Unauthorized => NotSynced::Unauthorized { message },
            FailedRequest::Forbidden => NotSynced::Forbidden { message },
            FailedRequest::NotServed => NotSynced::NotServed { reason: message },
            FailedRequest::ServerError(code) => NotSynced::ServerError { code, message },
            FailedRequest::Unreachable => NotSynced::Unreachable { message },
        }
    }

    /// The reason in one camelCase word, for tables, JSON and metrics:
    /// `notStarted`, `notServed`, `gone`, `forbidden`, `unauthorized`,
    /// `serverError`, `unreachable`, `stopped` or `timedOut`.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            NotSynced::NotStarted => "notStarted",
            NotSynced::NotServed { .. } => "notServed",
            NotSynced::Gone { .. } => "gone",
            NotSynced::Forbidden { .. } => "forbidden",
            NotSynced::Unauthorized { .. } => "unauthorized",
            NotSynced::ServerError { .. } => "serverError",
            NotSynced::Unreachable { .. } => "unreachable",
            NotSynced::Stopped => "stopped",
            NotSynced::TimedOut { .. } => "timedOut",
        }
    }

    /// Refused by the server (403, 401): waiting will not change the
    /// answer until access or credentials change.
    #[must_use]
    pub fn is_refused(&self) -> bool {
        matches!(
            self,
            NotSynced::Forbidden { .. } | NotSynced::Unauthorized { .. }
        )
    }

    /// Final: the informer will not sync without something else happening
    /// first (it stopped, or its resource is gone).
    fn is_final(&self) -> bool {
        matches!(self, NotSynced::Stopped | NotSynced::Gone { .. })
    }
}

impl fmt::Display for NotSynced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotSynced::NotStarted => f.write_str("the informer was not started"),
            NotSynced::NotServed { reason } => {
                write!(f, "{reason}; the informer starts once it is served")
            }
            NotSynced::Gone { reason } => write!(
                f,
                "{reason}; the informer emptied its cache and resumes if it is served again"
            ),
            NotSynced::Forbidden { message } => write!(
                f,
                "forbidden (403); it syncs once access is granted: {message}"
            ),
            NotSynced::Unauthorized { message } => write!(f, "unauthorized (401): {message}"),
            NotSynced::ServerError { code, message } => {
                write!(f, "the server answered {code}: {message}")
            }
            NotSynced::Unreachable { message } => write!(f, "no answer from the server: {message}"),
            NotSynced::Stopped => f.write_str("the informer stopped before its cache synced"),
            NotSynced::TimedOut { timeout, status } => {
                write!(f, "did not sync within {timeout:?}; last status: {status}")
            }
        }
    }
}

impl std::error::Error for NotSynced {}

/// How long a wait for a cache to sync goes on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum SyncPolicy {
    /// Until the timeout, through every failure: access may be granted, a
    /// CRD installed, the server come back meanwhile (client-go's
    /// `WaitForCacheSync`). Ends early only when the informer stops or its
    /// resource is gone.
    #[default]
    KeepWaiting,
    /// As [`KeepWaiting`](Self::KeepWaiting), and also at the first refusal
    /// (403, 401): what a one-shot reader wants, since waiting will not
    /// change the answer.
    GiveUpWhenRefused,
}

impl SyncPolicy {
    /// Whether a wait under this policy ends now, given why the cache is not
    /// synced yet.
    pub(crate) fn gives_up(self, why: &NotSynced) -> bool {
        why.is_final() || (self == SyncPolicy::GiveUpWhenRefused && why.is_refused())
    }
}

/// Resolves when `deadline` passes; never without one.
pub(super) async fn deadline_passed(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backing_off(code: Option<u16>) -> InformerStatus {
        InformerStatus::BackingOff {
            error: "it failed".into(),
            code,
            attempt: 1,
            retry_in: Duration::from_secs(1),
            synced_before: false,
        }
    }

    #[test]
    fn every_failure_has_one_reason() {
        let t = Duration::from_secs(1);
        let reason = |s: &InformerStatus| NotSynced::from_status(s, t).map(|w| w.reason());
        assert_eq!(reason(&backing_off(Some(401))), Some("unauthorized"));
        assert_eq!(reason(&backing_off(Some(403))), Some("forbidden"));
        assert_eq!(reason(&backing_off(Some(404))), Some("notServed"));
        for code in [429, 500, 503] {
            assert_eq!(reason(&backing_off(Some(code))), Some("serverError"));
        }
        assert_eq!(reason(&backing_off(None)), Some("unreachable"));
        let pending = InformerStatus::Pending {
            reason: "not served".into(),
        };
        assert_eq!(reason(&pending), Some("notServed"));
        assert_eq!(reason(&InformerStatus::NotStarted), Some("notStarted"));
        assert_eq!(reason(&InformerStatus::Stopped), Some("stopped"));
        assert_eq!(
            reason(&InformerStatus::Syncing { listed: 3 }),
            Some("timedOut")
        );
        assert_eq!(reason(&InformerStatus::Synced), None);
        let stale = InformerStatus::Stale {
            silent_for: Duration::from_secs(90),
        };
        assert_eq!(reason(&stale), None);
    }

    #[test]
    fn a_wait_gives_up_at_a_refusal_only_when_asked() {
        let t = Duration::from_secs(1);
        let forbidden = NotSynced::from_status(&backing_off(Some(403)), t).unwrap();
        let server_error = NotSynced::from_status(&backing_off(Some(500)), t).unwrap();
        assert!(!SyncPolicy::KeepWaiting.gives_up(&forbidden));
        assert!(SyncPolicy::GiveUpWhenRefused.gives_up(&forbidden));
        assert!(!SyncPolicy::GiveUpWhenRefused.gives_up(&server_error));
        assert!(SyncPolicy::KeepWaiting.gives_up(&NotSynced::Stopped));
    }
}
