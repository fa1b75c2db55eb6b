//! What an informer is doing, in one enum that the reflector sets and every
//! layer above reads (the informer, the factory's sync report, `kdi`'s
//! progress lines).
//!
//! The [layer docs](crate::informer) say more.

use std::fmt;
use std::time::Duration;

use crate::vocabulary::shard::ShardAssignment;

/// What an informer is doing.
#[derive(Clone, Debug, PartialEq)]
pub enum InformerStatus {
    /// Created, not started.
    NotStarted,
    /// Listing; `listed` objects received so far.
    Syncing {
        /// Objects received so far in the current list.
        listed: usize,
    },
    /// The cache holds a complete list and the watch is running.
    Synced,
    /// Listing again after the watch's history ran out (410 Gone) or its
    /// shard ranges changed: the cache holds the previous complete list,
    /// which may be behind the server, until the new one ends.
    Relisting {
        /// Objects received so far in the new list.
        listed: usize,
    },
    /// Synced, but nothing (no event, bookmark or list) has arrived for
    /// longer than [`InformerOptions::stale_after`](crate::informer::options::InformerOptions::stale_after):
    /// the cache may be behind the server. Back to [`Synced`](Self::Synced)
    /// at the next event or bookmark.
    Stale {
        /// How long nothing had arrived when the informer said so.
        silent_for: Duration,
    },
    /// The last list or watch failed; retrying after a backoff.
    BackingOff {
        /// The error, as text.
        error: String,
        /// HTTP status code of the error, when there is one (403, 404, ...).
        code: Option<u16>,
        /// Failures in a row.
        attempt: u32,
        /// Wait before the next try.
        retry_in: Duration,
        /// Whether the cache had synced before (it is then still served,
        /// possibly stale).
        synced_before: bool,
    },
    /// The resource is not served (yet) — a CRD that is not installed, say;
    /// the informer sends no request and starts by itself once discovery
    /// sees the resource. Only informers whose list-watch follows discovery
    /// ([`ListWatch::availability`](crate::wire::list_watch::ListWatch::availability),
    /// as the [factory](crate::factory)'s do) report this; others see 404s.
    Pending {
        /// Why the resource is not served.
        reason: String,
    },
    /// A member of a shard group (or another [`ShardSource`](crate::vocabulary::ShardSource))
    /// has not been assigned its first ranges yet: nothing is listed until
    /// it is. [`reason`](Self::reason) says, live, what the source is doing.
    WaitingForShards {
        /// Where the ranges come from.
        assignment: ShardAssignment,
    },
    /// The resource was synced and is no longer served (its CRD was
    /// deleted): the cache was emptied (handlers got the deletes), and the
    /// informer waits, without requests, until the resource is served again.
    Gone {
        /// Why the resource is not served.
        reason: String,
    },
    /// Stopped.
    Stopped,
}

impl InformerStatus {
    /// Synced, stale or not: the cache holds a complete list and the watch
    /// is open.
    #[must_use]
    pub fn is_synced(&self) -> bool {
        matches!(self, InformerStatus::Synced | InformerStatus::Stale { .. })
    }

    /// The state in one camelCase word, as programs read it (`kdi`'s JSON
    /// lines, a cluster set's sync report): `notStarted`, `syncing`,
    /// `synced`, `relisting`, `stale`, `notServed`, `waitingForShardGroup`,
    /// `gone` or `stopped`; while a failed list or watch is retried, the
    /// failure as [`NotSynced::reason`](crate::informer::NotSynced::reason)
    /// names it: `forbidden` (403), `unauthorized` (401), `notServed`
    /// (404), `serverError` (another status) or `unreachable` (no answer).
    ///
    /// ```
    /// use kube_dynamic_informer::informer::InformerStatus;
    ///
    /// let refused = InformerStatus::BackingOff {
    ///     error: "configmaps is forbidden".into(),
    ///     code: Some(403),
    ///     attempt: 1,
    ///     retry_in: std::time::Duration::from_secs(1),
    ///     synced_before: false,
    /// };
    /// assert_eq!(refused.name(), "forbidden");
    /// assert_eq!(refused.words(), "access denied");
    /// assert!(refused.is_refused());
    /// assert_eq!(refused.reason().as_deref(), Some("configmaps is forbidden"));
    /// ```
    #[must_use]
    pub fn name(&self) -> &'static str {
        self.names().0
    }

    /// The state in a few words, as people read it: `access denied`,
    /// `not served`, `retrying after an error`, ...
    #[must_use]
    pub fn words(&self) -> &'static str {
        self.names().1
    }

    /// The state's name for programs and its words for people, side by
    /// side so that they cannot drift apart.
    fn names(&self) -> (&'static str, &'static str) {
        match self {
            InformerStatus::NotStarted => ("notStarted", "not started"),
            InformerStatus::Syncing { .. } => ("syncing", "syncing"),
            InformerStatus::Synced => ("synced", "synced"),
            InformerStatus::Relisting { .. } => ("relisting", "relisting"),
            InformerStatus::Stale { .. } => ("stale", "stale"),
            // The failure's name is why the cache is not synced, as
            // NotSynced says it: one classification of a failed request.
            InformerStatus::BackingOff { code, .. } => match FailedRequest::of(*code) {
                FailedRequest::Forbidden => ("forbidden", "access denied"),
                FailedRequest::Unauthorized => ("unauthorized", "credentials refused"),
                FailedRequest::NotServed => ("notServed", "not served (404), retrying"),
                FailedRequest::ServerError(_) => ("serverError", "server error, retrying"),
                FailedRequest::Unreachable => {
                    ("unreachable", "no answer from the server, retrying")
                }
            },
            InformerStatus::Pending { .. } => ("notServed", "not served"),
            InformerStatus::WaitingForShards { .. } => (
                "waitingForShardGroup",
                "waiting for its shard group's slots",
            ),
            InformerStatus::Gone { .. } => ("gone", "no longer served"),
            InformerStatus::Stopped => ("stopped", "stopped"),
        }
    }

    /// Why the cache is not synced or current, as the server, discovery or
    /// the shard source says it; `None` when there is nothing to explain.
    #[must_use]
    pub fn reason(&self) -> Option<String> {
        match self {
            InformerStatus::BackingOff { error, .. } => Some(error.clone()),
            InformerStatus::Pending { reason } | InformerStatus::Gone { reason } => {
                Some(reason.clone())
            }
            InformerStatus::Stale { .. } => Some(self.to_string()),
            InformerStatus::WaitingForShards { assignment } => Some(assignment.describe()),
            InformerStatus::NotStarted
            | InformerStatus::Syncing { .. }
            | InformerStatus::Relisting { .. }
            | InformerStatus::Synced
            | InformerStatus::Stopped => None,
        }
    }

    /// A failed list or watch that the informer retries.
    #[must_use]
    pub fn is_failure(&self) -> bool {
        matches!(self, InformerStatus::BackingOff { .. })
    }

    /// Refused by the server (403, 401): retrying will not change the
    /// answer until access or credentials change, so a one-shot reader can
    /// stop waiting.
    #[must_use]
    pub fn is_refused(&self) -> bool {
        matches!(self, InformerStatus::BackingOff { code, .. } if FailedRequest::of(*code).is_refused())
    }
}

/// What the answer to a failed request says, from its HTTP status code
/// (`None`: no answer): the one classification that an informer's status
/// names and [`NotSynced::from_failure`](super::NotSynced::from_failure)
/// read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FailedRequest {
    /// 401: the credentials are refused.
    Unauthorized,
    /// 403: access is refused.
    Forbidden,
    /// 404: the resource is not served.
    NotServed,
    /// Another error status.
    ServerError(u16),
    /// No answer: connection refused, TLS, a timeout, a body that is not
    /// what was asked for.
    Unreachable,
}

impl FailedRequest {
    pub(crate) fn of(code: Option<u16>) -> Self {
        match code {
            Some(401) => FailedRequest::Unauthorized,
            Some(403) => FailedRequest::Forbidden,
            Some(404) => FailedRequest::NotServed,
            Some(code) => FailedRequest::ServerError(code),
            None => FailedRequest::Unreachable,
        }
    }

    /// Refused by the server: waiting will not change the answer until
    /// access or credentials change.
    pub(crate) fn is_refused(self) -> bool {
        matches!(self, FailedRequest::Unauthorized | FailedRequest::Forbidden)
    }
}

impl fmt::Display for InformerStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InformerStatus::NotStarted => write!(f, "not started"),
            InformerStatus::Syncing { listed } => write!(f, "syncing ({listed} objects listed)"),
            InformerStatus::Synced => write!(f, "synced"),
            InformerStatus::Relisting { listed } => {
                write!(f, "relisting ({listed} objects listed)")
            }
            InformerStatus::Stale { silent_for } => {
                write!(f, "stale (nothing received for {}s)", silent_for.as_secs())
            }
            InformerStatus::BackingOff {
                error,
                attempt,
                retry_in,
                ..
            } => write!(
                f,
                "backing off after failure {attempt} (retry in {retry_in:?}): {error}"
            ),
            InformerStatus::Pending { reason } => write!(f, "pending: {reason}"),
            InformerStatus::WaitingForShards { assignment } => {
                write!(f, "waiting for shard ranges: {}", assignment.describe())
            }
            InformerStatus::Gone { reason } => write!(f, "gone: {reason}"),
            InformerStatus::Stopped => write!(f, "stopped"),
        }
    }
}
