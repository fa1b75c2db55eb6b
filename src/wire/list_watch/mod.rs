//! The server side of an informer: list a resource, watch it from a
//! resourceVersion.
//!
//! The [layer docs](crate::wire) say more.

mod api;
mod object;
mod several;
mod wire;

use std::fmt;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use kube_client::api::{ListParams, WatchParams};
use tokio::sync::watch;

pub use api::ApiListWatch;
pub use object::WireObject;
#[cfg(test)]
pub(crate) use wire::decode_object;
pub use wire::{MAX_OBJECT_DEPTH, decode_list};

use crate::vocabulary::VocabularyError;
use crate::vocabulary::scope::ResourceAvailability;
use crate::vocabulary::shard::ShardSelector;

/// Annotation on the bookmark that ends the initial events of a streaming
/// list.
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

/// One list response: a page, or the whole list.
#[derive(Debug, Default)]
pub struct ListPage {
    /// The objects, in the server's order (without apiVersion and kind when
    /// the server leaves them out of list items): decoded, or as the JSON
    /// text of each (see [`ApiListWatch::lists_as_json`]), which the
    /// informer reads.
    pub objects: Vec<WireObject>,
    /// The list's resourceVersion.
    pub resource_version: String,
    /// Where the next page starts; `None` on the last page.
    pub continue_token: Option<String>,
    /// Objects of this page that could not be decoded (those handed on as
    /// JSON are decoded, or not, by the informer, which counts them in
    /// [`ReflectorStats::skipped_objects`](crate::informer::ReflectorStats::skipped_objects)).
    pub skipped: Vec<UndecodableObject>,
    /// Size of the response body in bytes (0 when not known).
    pub bytes: usize,
    /// `metadata.shardInfo.selector`: the shard selector the server applied
    /// to this list; `None` when it applied none (it sent every object).
    pub shard_info: Option<String>,
}

/// A watch event.
#[derive(Debug)]
pub enum WatchEvent {
    /// An object was created.
    Added(WireObject),
    /// An object changed.
    Modified(WireObject),
    /// An object was deleted; this is its last state.
    Deleted(WireObject),
    /// The watch has seen everything up to `resource_version`.
    Bookmark {
        /// Where a resumed watch may start.
        resource_version: String,
        /// This bookmark ends the initial events of a streaming list.
        initial_events_end: bool,
    },
    /// An object the server sent that could not be decoded. The watch has
    /// moved past its resourceVersion; when `deleted`, its key must leave the
    /// cache all the same.
    Skipped {
        /// What could be read of it.
        object: UndecodableObject,
        /// It was a `DELETED` event.
        deleted: bool,
    },
}

/// Watch events as they arrive.
pub type WatchStream = BoxStream<'static, Result<WatchEvent, ListWatchError>>;

/// What a [`ListWatch`] can do beyond list and watch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// It can serve a streaming list (a watch with `sendInitialEvents`).
    pub streaming_list: bool,
}

impl Default for Capabilities {
    /// Everything.
    fn default() -> Self {
        Self {
            streaming_list: true,
        }
    }
}

/// The two server calls a reflector makes. [`ApiListWatch`] implements it
/// over the API server; tests implement it with scripted answers.
pub trait ListWatch: Send + Sync + 'static {
    /// One list request (one page when `params.limit` is set).
    fn list(&self, params: &ListParams) -> BoxFuture<'static, Result<ListPage, ListWatchError>>;

    /// Starts a watch from `resource_version`; the future resolves when the
    /// server has answered the request.
    fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> BoxFuture<'static, Result<WatchStream, ListWatchError>>;

    /// [`list`](Self::list) restricted to one shard: the request carries
    /// `shard` as its `shardSelector`. By default the same as `list`, as
    /// from a server without sharded lists; the reflector drops the other
    /// shards' objects of any list without [`ListPage::shard_info`].
    fn list_shard(
        &self,
        params: &ListParams,
        shard: &ShardSelector,
    ) -> BoxFuture<'static, Result<ListPage, ListWatchError>> {
        let _ = shard;
        self.list(params)
    }

    /// [`watch`](Self::watch) restricted to one shard (see
    /// [`list_shard`](Self::list_shard)); by default the same as `watch`.
    fn watch_shard(
        &self,
        params: &WatchParams,
        resource_version: &str,
        shard: &ShardSelector,
    ) -> BoxFuture<'static, Result<WatchStream, ListWatchError>> {
        let _ = shard;
        self.watch(params, resource_version)
    }

    /// What this list-watch can do; by default everything.
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    /// Whether the resource is served, kept current by discovery, for a
    /// list-watch that follows it. `None` (the default): always assumed
    /// served, so a missing resource shows up as 404 errors with backoff,
    /// as in client-go. With a channel, the reflector sends no request while
    /// the resource is not served and reports it as pending or gone.
    fn availability(&self) -> Option<watch::Receiver<ResourceAvailability>> {
        None
    }

    /// What tells the cluster apart from others, for snapshots: by default
    /// none (`Err` says why).
    fn cluster_identity(&self) -> BoxFuture<'static, Result<String, String>> {
        Box::pin(async { Err("this list-watch does not say which cluster it reads".to_owned()) })
    }
}

/// Why a list or watch request failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ListWatchError {
    /// The server answered with an error status (in its response, or as a
    /// watch `ERROR` event).
    #[error("{message} ({code} {reason})")]
    Status {
        /// HTTP status code: 403, 404, 410, ...
        code: u16,
        /// Machine-readable reason: `Forbidden`, `NotFound`, `Expired`, ...
        reason: String,
        /// The server's message.
        message: String,
    },
    /// The request got no usable answer: connection, TLS, a response that
    /// is not what a list or watch returns.
    #[error(transparent)]
    Client(kube_client::Error),
    /// The resource is not served (discovery said so); nothing was asked.
    #[error("{reason}")]
    NotServed {
        /// Why, as discovery put it.
        reason: String,
    },
    /// A namespace restriction on a resource that turned out to be
    /// cluster-scoped.
    #[error(transparent)]
    ClusterScoped(#[from] VocabularyError),
    /// A streaming list was asked of a list-watch that cannot serve one
    /// (see [`Capabilities`]).
    #[error("streaming lists are not available here: {0}")]
    StreamingListUnsupported(String),
    /// A continue token this list-watch did not issue.
    #[error("invalid continue token {0:?}")]
    InvalidContinueToken(String),
}

impl ListWatchError {
    /// The HTTP status code the server sent, when it sent one.
    #[must_use]
    pub fn code(&self) -> Option<u16> {
        match self {
            ListWatchError::Status { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// True for 410 Gone / Expired: the resourceVersion is too old, list
    /// again.
    #[must_use]
    pub fn is_gone(&self) -> bool {
        self.code() == Some(410)
    }
}

impl From<kube_client::Error> for ListWatchError {
    fn from(e: kube_client::Error) -> Self {
        match e {
            kube_client::Error::Api(status) => status_error(*status),
            other => ListWatchError::Client(other),
        }
    }
}

/// The error for a `Status` the server sent.
fn status_error(status: kube_core::Status) -> ListWatchError {
    ListWatchError::Status {
        code: status.code,
        reason: status.reason,
        message: status.message,
    }
}

/// An object the server sent that could not be decoded, so it is not in the
/// cache; counted in [`ReflectorStats::skipped_objects`](crate::informer::reflector::ReflectorStats::skipped_objects).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UndecodableObject {
    /// `metadata.namespace`, when it could be read.
    pub namespace: Option<String>,
    /// `metadata.name`, when it could be read.
    pub name: Option<String>,
    /// `metadata.resourceVersion`, when it could be read.
    pub resource_version: Option<String>,
    /// Why it could not be decoded.
    pub reason: String,
}

impl fmt::Display for UndecodableObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.namespace, &self.name) {
            (Some(ns), Some(name)) => write!(f, "{ns}/{name}")?,
            (None, Some(name)) => f.write_str(name)?,
            (_, None) => f.write_str("an object without a readable name")?,
        }
        if let Some(rv) = &self.resource_version {
            write!(f, " (resourceVersion {rv})")?;
        }
        write!(f, ": {}", self.reason)
    }
}

#[cfg(test)]
mod error_tests {
    use super::*;
    use crate::vocabulary::error_chain::assert_every_variant;

    #[test]
    fn every_variant_says_each_fact_of_its_chain_once() {
        let all = [
            ListWatchError::Status {
                code: 410,
                reason: "Expired".into(),
                message: "too old resource version".into(),
            },
            ListWatchError::Client(kube_client::Error::LinesCodecMaxLineLengthExceeded),
            ListWatchError::NotServed {
                reason: "not served".into(),
            },
            ListWatchError::ClusterScoped(VocabularyError::ZeroCount),
            ListWatchError::StreamingListUnsupported("an older server".into()),
            ListWatchError::InvalidContinueToken("x".into()),
        ];
        // A new variant fails to compile here until it has a sample above.
        let variant = |e: &ListWatchError| match e {
            ListWatchError::Status { .. } => 0,
            ListWatchError::Client(_) => 1,
            ListWatchError::NotServed { .. } => 2,
            ListWatchError::ClusterScoped(_) => 3,
            ListWatchError::StreamingListUnsupported(_) => 4,
            ListWatchError::InvalidContinueToken(_) => 5,
        };
        assert_every_variant(&all, variant, 6);
    }
}
