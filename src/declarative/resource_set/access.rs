//! What a resource set does about resources it may not watch.

use std::time::Duration;

/// Whether a [`ResourceSet`](super::ResourceSet) asks the server before
/// watching.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum AccessPolicy {
    /// Watch everything declared; an informer the client may not list
    /// backs off on the 403 (reported in its status) and syncs by itself
    /// once access is granted. The default, as client-go does.
    #[default]
    Watch,
    /// Ask first (`SelfSubjectAccessReview`, see [`crate::factory`]) and
    /// watch only what is allowed: a resource forbidden everywhere is left
    /// out and reported ([`SetEvent::Skipped`](super::SetEvent::Skipped));
    /// one allowed in some of its namespaces is watched in those. Access is
    /// asked again every `recheck` (and at each discovery change), and
    /// what becomes allowed starts.
    Skip {
        /// How often to ask again.
        recheck: Duration,
    },
}

impl AccessPolicy {
    /// [`AccessPolicy::Skip`] with a recheck every 30 seconds.
    #[must_use]
    pub fn skip() -> Self {
        AccessPolicy::Skip {
            recheck: Duration::from_secs(30),
        }
    }

    /// How often access is asked again, if it is asked at all.
    #[must_use]
    pub fn recheck_period(&self) -> Option<Duration> {
        match self {
            AccessPolicy::Watch => None,
            AccessPolicy::Skip { recheck } => Some((*recheck).max(Duration::from_secs(1))),
        }
    }
}

/// A member of a set that is not running, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedMember {
    /// The config entry.
    pub entry: String,
    /// The resource, as in [`SetMember::resource`](super::SetMember::resource).
    pub resource: String,
    /// Why: not served (`whenNotServed: skip`), or the access denied.
    pub reason: String,
    /// Whether access was denied ([`AccessPolicy::Skip`]); otherwise the
    /// resource is not served.
    pub denied: bool,
}

impl SkippedMember {
    /// Why, in the informer layer's words: forbidden or not served.
    #[must_use]
    pub fn not_synced(&self) -> crate::informer::NotSynced {
        use crate::informer::NotSynced;
        let why = self.reason.clone();
        if self.denied {
            NotSynced::Forbidden { message: why }
        } else {
            NotSynced::NotServed { reason: why }
        }
    }
}
