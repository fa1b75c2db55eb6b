//! What an informer is doing, in one enum that the reflector sets and every
//! layer above reads (the informer, the factory's sync report, `kdi`'s
//! progress lines).
//!
//! The [layer docs](crate::informer) say more.

use std::fmt;
use std::time::Duration;

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
}

impl fmt::Display for InformerStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InformerStatus::NotStarted => write!(f, "not started"),
            InformerStatus::Syncing { listed } => write!(f, "syncing ({listed} objects listed)"),
            InformerStatus::Synced => write!(f, "synced"),
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
            InformerStatus::Gone { reason } => write!(f, "gone: {reason}"),
            InformerStatus::Stopped => write!(f, "stopped"),
        }
    }
}
