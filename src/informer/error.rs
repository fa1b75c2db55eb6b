//! What an informer refuses, and why.

use std::time::Duration;

use super::status::InformerStatus;
use super::sync::NotSynced;
use super::wait::WaitReport;
use crate::cache::CacheError;
use crate::vocabulary::VocabularyError;
use crate::vocabulary::resource::ResourceKey;
use crate::wire::list_watch::ListWatchError;

/// Errors of the informer layer: construction and use of an informer,
/// list and watch failures (handed to [`SharedInformer::on_error`](super::SharedInformer::on_error)),
/// and waits for a resourceVersion or a condition that did not end with the
/// cache there.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InformerError {
    /// A namespace restriction on a cluster-scoped resource.
    #[error(transparent)]
    ClusterScoped(#[from] VocabularyError),
    /// An index could not be added: its expression does not compile
    /// ([`CacheError::ExpressionSyntax`] and the other `Expression*` variants) or its
    /// name is taken ([`CacheError::DuplicateIndex`]).
    #[error("adding an index to {resource}")]
    Index {
        /// The resource.
        resource: ResourceKey,
        /// What the cache refused.
        #[source]
        source: Box<CacheError>,
    },
    /// `run` or `start` was called on an informer that already ran.
    #[error("informer for {resource} was already started")]
    AlreadyStarted {
        /// The resource.
        resource: ResourceKey,
    },
    /// The cache did not sync: why, in the words every layer uses.
    #[error("{resource}: {reason}")]
    NotSynced {
        /// The resource.
        resource: ResourceKey,
        /// Why ([`NotSynced::reason`] in one word).
        reason: NotSynced,
    },
    /// An async handler was added outside a tokio runtime.
    #[error("{resource}: async handlers run on the tokio runtime; add them from within one")]
    NoRuntime {
        /// The resource.
        resource: ResourceKey,
    },

    // List and watch failures, as handed to the error hook.
    /// A list request failed.
    #[error("listing {resource}")]
    List {
        /// The resource.
        resource: ResourceKey,
        /// What failed.
        #[source]
        source: Box<ListWatchError>,
    },
    /// A watch request failed, or its stream reported an error.
    #[error("watching {resource}")]
    Watch {
        /// The resource.
        resource: ResourceKey,
        /// What failed.
        #[source]
        source: Box<ListWatchError>,
    },
    /// A streaming list ended before its initial events did.
    #[error("watching {resource}: the streaming list ended before its initial-events-end bookmark")]
    StreamingListCut {
        /// The resource.
        resource: ResourceKey,
    },

    // Why a wait for a resourceVersion returned without the cache there.
    /// The resourceVersion asked for, or the one the cache holds, is not a
    /// number that can be compared.
    #[error("{resource}: waiting for a resourceVersion")]
    Incomparable {
        /// The resource.
        resource: ResourceKey,
        /// Which resourceVersion.
        #[source]
        source: Box<CacheError>,
    },
    /// The object given is not of this informer's resource: its write shows
    /// in another informer's cache.
    #[error(
        "{resource}: the object is a {object_kind} ({object_api_version}), not of this informer's resource"
    )]
    OtherResource {
        /// The informer's resource.
        resource: ResourceKey,
        /// The object's `apiVersion`.
        object_api_version: String,
        /// The object's `kind`.
        object_kind: String,
    },
    /// No informer of the factory caches objects of this kind in this
    /// namespace.
    #[error("no informer caches {object_kind} ({object_api_version}){}", namespace.as_ref().map(|n| format!(" in namespace {n}")).unwrap_or_default())]
    NotCached {
        /// The object's `apiVersion`.
        object_api_version: String,
        /// The object's `kind`.
        object_kind: String,
        /// The object's namespace.
        namespace: Option<String>,
    },
    /// The object has no `metadata.resourceVersion` (it was not returned by
    /// the server).
    #[error("{resource}: the object has no metadata.resourceVersion")]
    NoResourceVersion {
        /// The resource.
        resource: ResourceKey,
    },
    /// The time ran out while a relist was being received: the cache jumps
    /// to the relisted state at its end.
    #[error(
        "{resource}: a relist was in progress when {timeout:?} ran out waiting for resourceVersion {wanted} (the cache is at {synced_to})"
    )]
    RelistInProgress {
        /// The resource.
        resource: ResourceKey,
        /// The resourceVersion waited for.
        wanted: String,
        /// The resourceVersion the cache reflects.
        synced_to: String,
        /// How long was waited.
        timeout: Duration,
    },
    /// [`SharedInformer::wait_for_resource_version`](super::SharedInformer::wait_for_resource_version): the time ran out.
    #[error(
        "{resource}: the cache did not reach resourceVersion {wanted} within {timeout:?} (it is at {synced_to}; {status})"
    )]
    WaitTimedOut {
        /// The resource.
        resource: ResourceKey,
        /// The resourceVersion waited for.
        wanted: String,
        /// The resourceVersion the cache reflects (`none` before the first
        /// list).
        synced_to: String,
        /// How long was waited.
        timeout: Duration,
        /// What the informer was doing then.
        status: Box<InformerStatus>,
    },
    /// [`Wait::run`](super::Wait::run): the time ran out before what was
    /// waited for held. The report says, for each object that counted,
    /// where it stood (not met, not a boolean, missing, ...), and for each
    /// informer whether its cache had synced.
    #[error("timed out after {:?}: {report}", report.waited())]
    ConditionTimedOut {
        /// How the wait ended.
        report: Box<WaitReport>,
    },
    /// The informer stopped while a caller waited for a resourceVersion or
    /// a condition.
    #[error("{resource}: the informer stopped")]
    Stopped {
        /// The resource.
        resource: ResourceKey,
    },
}

impl InformerError {
    /// The HTTP status code behind a list or watch failure, when the server
    /// sent one.
    #[must_use]
    pub fn code(&self) -> Option<u16> {
        match self {
            InformerError::List { source, .. } | InformerError::Watch { source, .. } => {
                source.code()
            }
            _ => None,
        }
    }

    /// True for 410 Gone / Expired: the resourceVersion is too old, relist.
    #[must_use]
    pub fn is_gone(&self) -> bool {
        self.code() == Some(410)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::error_chain::assert_every_variant;

    /// One error of each variant, each with a source where it has one.
    fn every_variant() -> Vec<InformerError> {
        let resource = || ResourceKey::new("example.com", "v1", "widgets");
        let refused = || {
            Box::new(ListWatchError::Status {
                code: 403,
                reason: "Forbidden".into(),
                message: "widgets is forbidden".into(),
            })
        };
        let timeout = Duration::from_secs(3);
        vec![
            InformerError::ClusterScoped(VocabularyError::ClusterScoped {
                resource: "nodes.v1".into(),
                namespaces: "shop".into(),
            }),
            InformerError::Index {
                resource: resource(),
                source: Box::new(CacheError::DuplicateIndex {
                    name: "owner".into(),
                }),
            },
            InformerError::AlreadyStarted {
                resource: resource(),
            },
            InformerError::NotSynced {
                resource: resource(),
                reason: NotSynced::Forbidden {
                    message: "widgets is forbidden".into(),
                },
            },
            InformerError::NoRuntime {
                resource: resource(),
            },
            InformerError::List {
                resource: resource(),
                source: refused(),
            },
            InformerError::Watch {
                resource: resource(),
                source: refused(),
            },
            InformerError::StreamingListCut {
                resource: resource(),
            },
            InformerError::Incomparable {
                resource: resource(),
                source: Box::new(CacheError::IncomparableResourceVersion("x".into())),
            },
            InformerError::OtherResource {
                resource: resource(),
                object_api_version: "v1".into(),
                object_kind: "ConfigMap".into(),
            },
            InformerError::NotCached {
                object_api_version: "v1".into(),
                object_kind: "ConfigMap".into(),
                namespace: Some("shop".into()),
            },
            InformerError::NoResourceVersion {
                resource: resource(),
            },
            InformerError::RelistInProgress {
                resource: resource(),
                wanted: "9".into(),
                synced_to: "7".into(),
                timeout,
            },
            InformerError::WaitTimedOut {
                resource: resource(),
                wanted: "9".into(),
                synced_to: "7".into(),
                timeout,
                status: Box::new(InformerStatus::Synced),
            },
            InformerError::ConditionTimedOut {
                report: Box::new(WaitReport {
                    goal: crate::informer::WaitFor::Deleted,
                    quantifier: crate::informer::Quantifier::All,
                    holds: false,
                    objects: Vec::new(),
                    informers: Vec::new(),
                    waited: timeout,
                }),
            },
            InformerError::Stopped {
                resource: resource(),
            },
        ]
    }

    /// The variant's place in the declaration; a new variant fails to
    /// compile here until it has a sample above.
    fn variant(e: &InformerError) -> usize {
        match e {
            InformerError::ClusterScoped(_) => 0,
            InformerError::Index { .. } => 1,
            InformerError::AlreadyStarted { .. } => 2,
            InformerError::NotSynced { .. } => 3,
            InformerError::NoRuntime { .. } => 4,
            InformerError::List { .. } => 5,
            InformerError::Watch { .. } => 6,
            InformerError::StreamingListCut { .. } => 7,
            InformerError::Incomparable { .. } => 8,
            InformerError::OtherResource { .. } => 9,
            InformerError::NotCached { .. } => 10,
            InformerError::NoResourceVersion { .. } => 11,
            InformerError::RelistInProgress { .. } => 12,
            InformerError::WaitTimedOut { .. } => 13,
            InformerError::ConditionTimedOut { .. } => 14,
            InformerError::Stopped { .. } => 15,
        }
    }

    #[test]
    fn every_variant_says_each_fact_of_its_chain_once() {
        let all = every_variant();
        assert_every_variant(&all, variant, 16);
        assert_eq!(
            crate::vocabulary::error_chain(&all[1]),
            r#"adding an index to widgets.v1.example.com: index "owner" already exists with another definition"#
        );
        assert_eq!(
            crate::vocabulary::error_chain(&all[5]),
            "listing widgets.v1.example.com: widgets is forbidden (403 Forbidden)"
        );
    }
}
