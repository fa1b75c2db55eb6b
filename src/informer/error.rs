//! What an informer refuses, and why.

use std::time::Duration;

use super::status::InformerStatus;
use crate::cache::store::StoreError;
use crate::vocabulary::resource::ResourceKey;
use crate::vocabulary::scope::NamespaceOnClusterScoped;

/// Errors of informer construction and use.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InformerError {
    /// A namespace restriction on a cluster-scoped resource.
    #[error(transparent)]
    ClusterScoped(#[from] NamespaceOnClusterScoped),
    /// An index could not be added.
    #[error("{resource}: {source}")]
    Index {
        /// The resource.
        resource: ResourceKey,
        /// The store's error.
        #[source]
        source: StoreError,
    },
    /// An index expression does not compile.
    #[error("{resource}: {source}")]
    IndexExpression {
        /// The resource.
        resource: ResourceKey,
        /// What is wrong with the expression.
        #[source]
        source: Box<crate::cache::index::IndexError>,
    },
    /// `run` or `start` was called on an informer that already ran.
    #[error("informer for {resource} was already started")]
    AlreadyStarted {
        /// The resource.
        resource: ResourceKey,
    },
    /// The cache did not sync in time.
    #[error("{resource} did not sync within {timeout:?}; last status: {status}")]
    SyncTimeout {
        /// The resource.
        resource: ResourceKey,
        /// How long was waited.
        timeout: Duration,
        /// What the informer was doing then (e.g. backing off after a 403).
        status: Box<InformerStatus>,
    },
    /// The resource was synced and is no longer served (its CRD was
    /// deleted), so the cache cannot sync until it is served again.
    #[error("{resource} is gone: {reason}")]
    Gone {
        /// The resource.
        resource: ResourceKey,
        /// Why it is not served.
        reason: String,
    },
    /// The informer stopped before its cache synced.
    #[error("{resource} stopped before its cache synced")]
    StoppedBeforeSync {
        /// The resource.
        resource: ResourceKey,
    },
    /// An async handler was added outside a tokio runtime.
    #[error("{resource}: async handlers run on the tokio runtime; add them from within one")]
    NoRuntime {
        /// The resource.
        resource: ResourceKey,
    },
}
