//! The list/watch loop that keeps a cache in step with the API server.
//!
//! A [`Reflector`] lists a resource (in pages, or as a streaming list), hands
//! the complete list on as one [`Delta::Replace`], then watches from the
//! list's resourceVersion and hands on each change. It owns every recovery
//! decision so that callers never have to:
//!
//! - a watch that ends normally (server timeout, randomised between 5 and 10
//!   minutes) is resumed from the last resourceVersion seen, without a new
//!   list;
//! - 410 Gone / Expired — when the watch starts or inside the stream — means
//!   the resourceVersion is compacted away: the reflector lists again, and
//!   the consumer reconciles (see [`crate::store::StoreWriter::replace`]);
//! - an expired continue token in the middle of a paged list falls back to
//!   one full, unpaged list;
//! - any other error backs off (800 ms doubling to 30 s, with jitter, see
//!   [`BackoffConfig`]) and is reported through [`ReflectorStatus`] and the
//!   optional error hook, so a 403 or a 404 is visible at once instead of as
//!   a silent wait.
//!
//! A reflector may also be told whether its resource is served at all
//! ([`ReflectorConfig::availability`], fed by discovery): while it is not — a
//! CRD not installed yet, or deleted — the reflector sends no request and
//! reports [`ReflectorStatus::Pending`]; when a resource it had listed goes
//! away it hands on an empty [`Delta::Replace`] (so the cache empties and
//! handlers get the deletes) and reports [`ReflectorStatus::Gone`] instead of
//! retrying a 404 forever; once the resource is served again it lists anew.
//!
//! The server side is abstracted by the small [`ListWatch`] trait so that the
//! state machine can be tested with scripted responses; [`ApiListWatch`] is
//! the real implementation over `kube_client::Api<DynamicObject>`.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use kube_client::Api;
use kube_client::api::{ListParams, ObjectList, WatchEvent, WatchParams};
use kube_core::{ApiResource, DynamicObject, TypeMeta};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::backoff::{Backoff, BackoffConfig};
use crate::informer::Scope;
use crate::wire::{self, ListWatchState, UndecodableObject};

/// Annotation on the bookmark that ends the initial events of a streaming
/// list.
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

/// A stream of watch events as the server sends them.
pub type WatchStream = BoxStream<'static, Result<WatchEvent<DynamicObject>, kube_client::Error>>;

/// The two server calls a reflector makes. [`ApiListWatch`] implements it
/// with kube-client; tests implement it with scripted answers.
pub trait ListWatch: Send + Sync + 'static {
    /// One list request (one page when `params.limit` is set).
    fn list(
        &self,
        params: &ListParams,
    ) -> BoxFuture<'static, Result<ObjectList<DynamicObject>, kube_client::Error>>;

    /// Starts a watch from `resource_version`; the future resolves when the
    /// server has answered the request.
    fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> BoxFuture<'static, Result<WatchStream, kube_client::Error>>;

    /// Objects left out of list pages and watch events since the last call
    /// because they could not be decoded (see [`crate::wire`]). The
    /// reflector takes them after every page and event, counts them in
    /// [`ReflectorStats::skipped_objects`] and logs each by name. The
    /// default reports none.
    fn take_undecodable(&self) -> Vec<UndecodableObject> {
        Vec::new()
    }
}

/// [`ListWatch`] over a `kube_client::Api<DynamicObject>`.
///
/// Responses are decoded object by object ([`crate::wire`]): one object that
/// cannot be decoded is left out and reported through
/// [`ListWatch::take_undecodable`] instead of failing its whole page or
/// stalling the watch. When a list page has a continue token, the next page
/// is requested before this one is decoded and answers the next `list` call
/// made with that token (any other call cancels it).
#[derive(Clone)]
pub struct ApiListWatch {
    api: Api<DynamicObject>,
    state: ListWatchState,
}

impl ApiListWatch {
    /// Wraps an `Api` (namespaced or all namespaces) for the resource.
    pub fn new(api: Api<DynamicObject>) -> Self {
        Self {
            api,
            state: ListWatchState::default(),
        }
    }
}

impl fmt::Debug for ApiListWatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiListWatch").finish_non_exhaustive()
    }
}

impl ListWatch for ApiListWatch {
    fn list(
        &self,
        params: &ListParams,
    ) -> BoxFuture<'static, Result<ObjectList<DynamicObject>, kube_client::Error>> {
        let (api, state) = (self.api.clone(), self.state.clone());
        let params = params.clone();
        async move { wire::list(&api, &params, false, &state).await }.boxed()
    }

    fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> BoxFuture<'static, Result<WatchStream, kube_client::Error>> {
        let (api, state) = (self.api.clone(), self.state.clone());
        let params = params.clone();
        let rv = resource_version.to_string();
        async move { wire::watch(&api, &params, &rv, false, &state).await }.boxed()
    }

    fn take_undecodable(&self) -> Vec<UndecodableObject> {
        self.state.take_undecodable()
    }
}

/// A change for the cache, in the order the server reported it.
#[derive(Debug)]
pub enum Delta {
    /// The complete current list: after it, the cache must hold exactly these
    /// objects. Sent after the first list and after every relist.
    Replace(Vec<DynamicObject>),
    /// An object was added or modified.
    Upsert(DynamicObject),
    /// An object was deleted; this is its final state.
    Delete(DynamicObject),
}

/// What the reflector is doing, for callers who would otherwise wait in
/// silence.
#[derive(Clone, Debug, PartialEq)]
pub enum ReflectorStatus {
    /// Not started yet.
    Idle,
    /// Listing (first list or a relist); `objects` listed so far.
    Listing {
        /// Objects received so far in this list.
        objects: usize,
    },
    /// A complete list was delivered and the watch is running.
    Watching,
    /// The last list or watch failed; the next try comes after a backoff.
    BackingOff {
        /// The error, as text.
        error: String,
        /// HTTP status code of the error, when the server sent one (403, 404, ...).
        code: Option<u16>,
        /// Failures in a row.
        attempt: u32,
        /// Wait before the next try.
        retry_in: Duration,
    },
    /// The resource is not served (yet): nothing was listed, and nothing is
    /// requested until [`ReflectorConfig::availability`] says it is served.
    Pending {
        /// Why it is not served, as discovery put it.
        reason: String,
    },
    /// The resource was listed before and is no longer served (its CRD was
    /// deleted, say): an empty [`Delta::Replace`] was handed on, and nothing is
    /// requested until the resource is served again.
    Gone {
        /// Why it is not served, as discovery put it.
        reason: String,
    },
    /// Stopped by its cancellation token.
    Stopped,
}

/// Whether the API server serves a resource, as discovery last saw it; see
/// [`ReflectorConfig::availability`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResourceAvailability {
    /// Served. `resource` is what discovery reported (its kind is the one
    /// objects must carry) and `scope` tells namespaced from cluster-scoped.
    Served {
        /// The resource as discovery reported it.
        resource: ApiResource,
        /// Namespaced or cluster-scoped.
        scope: Scope,
    },
    /// Not served: a CRD not (or no longer) installed, an API group that is
    /// not enabled, an aggregated API that is down.
    NotServed {
        /// Why, in words that name the resource.
        reason: String,
    },
}

impl ResourceAvailability {
    /// Whether the resource is served.
    pub fn is_served(&self) -> bool {
        matches!(self, ResourceAvailability::Served { .. })
    }
}

/// Counters of what a reflector did, for observability and tests.
#[derive(Debug, Default)]
pub struct ReflectorStats {
    /// List requests (pages count one each).
    pub list_requests: AtomicU64,
    /// Complete lists delivered (first list and relists).
    pub lists: AtomicU64,
    /// Lists forced by 410 Gone / Expired.
    pub relists_after_gone: AtomicU64,
    /// Watch requests.
    pub watch_requests: AtomicU64,
    /// Watch events received (bookmarks included).
    pub watch_events: AtomicU64,
    /// Errors (each one led to a backoff or a relist).
    pub errors: AtomicU64,
    /// Objects skipped because their apiVersion or kind did not match, they
    /// had no name, or they could not be decoded (see [`crate::wire`]).
    pub skipped_objects: AtomicU64,
}

impl ReflectorStats {
    fn inc(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// A list or watch failure, as handed to the error hook.
#[derive(Debug, thiserror::Error)]
pub enum ReflectorError {
    /// The list request failed.
    #[error("listing {resource}: {source}")]
    List {
        /// The resource, as `plural.version.group`.
        resource: String,
        /// The client error.
        #[source]
        source: kube_client::Error,
    },
    /// The watch request failed, or its stream reported an error.
    #[error("watching {resource}: {source}")]
    Watch {
        /// The resource, as `plural.version.group`.
        resource: String,
        /// The client error.
        #[source]
        source: kube_client::Error,
    },
    /// The server ended a watch with an error event.
    #[error("watching {resource}: server reported {code} {reason}: {message}")]
    WatchEvent {
        /// The resource, as `plural.version.group`.
        resource: String,
        /// HTTP-style code of the error.
        code: u16,
        /// Machine-readable reason (`Expired`, `Gone`, ...).
        reason: String,
        /// Human-readable message.
        message: String,
    },
}

impl ReflectorError {
    /// The HTTP status code behind the error, when there is one.
    pub fn code(&self) -> Option<u16> {
        match self {
            ReflectorError::List { source, .. } | ReflectorError::Watch { source, .. } => {
                match source {
                    kube_client::Error::Api(s) => Some(s.code),
                    _ => None,
                }
            }
            ReflectorError::WatchEvent { code, .. } => Some(*code),
        }
    }

    /// True for 410 Gone / Expired: the resourceVersion is too old, relist.
    pub fn is_gone(&self) -> bool {
        self.code() == Some(410)
    }
}

/// A callback for list and watch errors.
pub type ErrorHook = Arc<dyn Fn(&ReflectorError) + Send + Sync>;

/// How a reflector lists and watches.
#[derive(Clone)]
pub struct ReflectorConfig {
    /// Label selector sent with every list and watch.
    pub label_selector: Option<String>,
    /// Field selector sent with every list and watch.
    pub field_selector: Option<String>,
    /// Objects per list page; 0 lists everything in one response.
    /// client-go: 500.
    pub page_size: u32,
    /// Use a streaming list (a watch with `sendInitialEvents=true`) instead of
    /// list-then-watch, falling back when the server refuses it.
    pub streaming_list: bool,
    /// Shortest server-side watch timeout; each watch picks a random value
    /// between this and twice this. client-go: 5 minutes.
    pub min_watch_timeout: Duration,
    /// Retry backoff.
    pub backoff: BackoffConfig,
    /// Called with every list or watch error.
    pub error_hook: Option<ErrorHook>,
    /// Applied to each object as it arrives — list items page by page —
    /// before it is handed on. Transforming per page means an untransformed
    /// page is dropped before the next one is requested, so a list's peak
    /// memory is that of the transformed objects (stripping managedFields
    /// halves it), not of the raw list.
    pub transform: Option<crate::informer::Transform>,
    /// Whether the resource is served, kept current by discovery (see
    /// [`crate::discovery::DiscoveryCache::availability`]). `None` (the
    /// default) assumes it always is, so a missing resource shows up as 404
    /// errors with backoff, as in client-go. With a receiver, the reflector
    /// waits without requests while the resource is not served, reporting
    /// [`ReflectorStatus::Pending`] or [`ReflectorStatus::Gone`].
    pub availability: Option<watch::Receiver<ResourceAvailability>>,
}

impl Default for ReflectorConfig {
    /// No selectors, pages of 500, list-then-watch, watch timeouts of 5–10
    /// minutes and client-go's backoff, as client-go's reflector.
    fn default() -> Self {
        Self {
            label_selector: None,
            field_selector: None,
            page_size: 500,
            streaming_list: false,
            min_watch_timeout: Duration::from_secs(300),
            backoff: BackoffConfig::default(),
            error_hook: None,
            transform: None,
            availability: None,
        }
    }
}

impl fmt::Debug for ReflectorConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReflectorConfig")
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .field("page_size", &self.page_size)
            .field("streaming_list", &self.streaming_list)
            .field("min_watch_timeout", &self.min_watch_timeout)
            .field("backoff", &self.backoff)
            .field("error_hook", &self.error_hook.as_ref().map(|_| "<fn>"))
            .field("transform", &self.transform.as_ref().map(|_| "<fn>"))
            .field(
                "availability",
                &self.availability.as_ref().map(|rx| rx.borrow().clone()),
            )
            .finish()
    }
}

/// The list/watch loop for one resource.
pub struct Reflector<L> {
    lw: L,
    resource: ApiResource,
    config: ReflectorConfig,
    status: watch::Sender<ReflectorStatus>,
    stats: Arc<ReflectorStats>,
    /// The server refused a streaming list once; use list-then-watch.
    streaming_unsupported: bool,
}

/// Why a watch ended.
enum WatchEnd {
    /// The stream ended normally: resume from the last resourceVersion.
    Resume,
    /// 410: list again.
    Relist,
    /// Another error: back off, then resume (or relist if never listed).
    Failed(ReflectorError),
    /// Cancelled.
    Cancelled,
}

/// What a reflector carries across list/watch rounds.
struct Progress {
    backoff: Backoff,
    /// resourceVersion to resume the watch from; `None` = list first.
    resume_rv: Option<String>,
    /// A complete list was handed on at least once.
    listed: bool,
}

/// Result of one list attempt.
enum ListOutcome {
    Listed(Vec<DynamicObject>, String),
    Failed(ReflectorError),
    Cancelled,
}

impl<L: ListWatch> Reflector<L> {
    /// A reflector for `resource` (its `ApiResource` gives the apiVersion and
    /// kind that every object must carry).
    pub fn new(lw: L, resource: ApiResource, config: ReflectorConfig) -> Self {
        Self {
            lw,
            resource,
            config,
            status: watch::Sender::new(ReflectorStatus::Idle),
            stats: Arc::new(ReflectorStats::default()),
            streaming_unsupported: false,
        }
    }

    /// A receiver of status changes.
    pub fn status(&self) -> watch::Receiver<ReflectorStatus> {
        self.status.subscribe()
    }

    /// The reflector's counters.
    pub fn stats(&self) -> Arc<ReflectorStats> {
        self.stats.clone()
    }

    fn resource_name(&self) -> String {
        crate::informer::display_resource(&self.resource)
    }

    /// Runs until `cancel` fires, handing every change to `sink` in order.
    pub async fn run(mut self, cancel: CancellationToken, mut sink: impl FnMut(Delta) + Send) {
        let mut progress = Progress {
            backoff: Backoff::new(self.config.backoff.clone()),
            resume_rv: None,
            listed: false,
        };
        match self.config.availability.clone() {
            None => self.run_served(&cancel, &mut sink, &mut progress).await,
            Some(availability) => {
                self.run_gated(availability, &cancel, &mut sink, &mut progress)
                    .await;
            }
        }
        self.status.send_replace(ReflectorStatus::Stopped);
    }

    /// Alternates between waiting while the resource is not served and
    /// list/watch while it is.
    async fn run_gated(
        &mut self,
        mut availability: watch::Receiver<ResourceAvailability>,
        cancel: &CancellationToken,
        sink: &mut (impl FnMut(Delta) + Send),
        progress: &mut Progress,
    ) {
        // Whether the empty Replace for the current absence was handed on.
        let mut emptied = false;
        while !cancel.is_cancelled() {
            let current = availability.borrow_and_update().clone();
            match current {
                ResourceAvailability::NotServed { reason } => {
                    progress.resume_rv = None;
                    if progress.listed {
                        if !emptied {
                            tracing::info!(resource = %self.resource_name(), %reason, "resource no longer served; emptying the cache until it is served again");
                            sink(Delta::Replace(Vec::new()));
                            emptied = true;
                        }
                        self.status.send_replace(ReflectorStatus::Gone { reason });
                    } else {
                        self.status
                            .send_replace(ReflectorStatus::Pending { reason });
                    }
                    tokio::select! {
                        _ = cancel.cancelled() => return,
                        changed = availability.changed() => {
                            if changed.is_err() {
                                // Nobody will say it is served again.
                                cancel.cancelled().await;
                                return;
                            }
                        }
                    }
                }
                ResourceAvailability::Served { resource, .. } => {
                    if !resource.kind.is_empty() {
                        self.resource = resource;
                    }
                    emptied = false;
                    let mut watcher = availability.clone();
                    let no_longer_served = async move {
                        loop {
                            if watcher.changed().await.is_err() {
                                futures::future::pending::<()>().await;
                            }
                            if !watcher.borrow_and_update().is_served() {
                                return;
                            }
                        }
                    };
                    tokio::select! {
                        _ = self.run_served(cancel, sink, progress) => return,
                        _ = no_longer_served => {}
                    }
                }
            }
        }
    }

    /// Lists and watches until `cancel` fires.
    async fn run_served(
        &mut self,
        cancel: &CancellationToken,
        sink: &mut (impl FnMut(Delta) + Send),
        progress: &mut Progress,
    ) {
        loop {
            if cancel.is_cancelled() {
                break;
            }
            let rv = match progress.resume_rv.clone() {
                Some(rv) => rv,
                None => {
                    let outcome = if self.config.streaming_list && !self.streaming_unsupported {
                        self.streaming_list(cancel).await
                    } else {
                        self.paged_list(cancel).await
                    };
                    match outcome {
                        ListOutcome::Cancelled => break,
                        ListOutcome::Failed(err) => {
                            if !self.wait_after(&err, &mut progress.backoff, cancel).await {
                                break;
                            }
                            continue;
                        }
                        ListOutcome::Listed(objects, rv) => {
                            ReflectorStats::inc(&self.stats.lists);
                            sink(Delta::Replace(objects));
                            progress.listed = true;
                            rv
                        }
                    }
                }
            };
            self.status.send_replace(ReflectorStatus::Watching);
            let mut last_rv = rv;
            match self
                .watch(&last_rv.clone(), &mut last_rv, cancel, sink)
                .await
            {
                WatchEnd::Cancelled => break,
                WatchEnd::Resume => progress.resume_rv = Some(last_rv),
                WatchEnd::Relist => {
                    ReflectorStats::inc(&self.stats.relists_after_gone);
                    progress.resume_rv = None;
                }
                WatchEnd::Failed(err) => {
                    progress.resume_rv = Some(last_rv);
                    if !self.wait_after(&err, &mut progress.backoff, cancel).await {
                        break;
                    }
                }
            }
        }
    }

    /// Reports `err`, then waits out the backoff. False when cancelled.
    async fn wait_after(
        &self,
        err: &ReflectorError,
        backoff: &mut Backoff,
        cancel: &CancellationToken,
    ) -> bool {
        ReflectorStats::inc(&self.stats.errors);
        let delay = backoff.next_delay();
        let error = error_chain(err);
        tracing::warn!(resource = %self.resource_name(), %error, retry_in = ?delay, "list/watch failed");
        if let Some(hook) = &self.config.error_hook {
            hook(err);
        }
        self.status.send_replace(ReflectorStatus::BackingOff {
            error,
            code: err.code(),
            attempt: backoff.failures(),
            retry_in: delay,
        });
        tokio::select! {
            _ = cancel.cancelled() => false,
            _ = tokio::time::sleep(delay) => true,
        }
    }

    fn list_params(&self) -> ListParams {
        ListParams {
            label_selector: self.config.label_selector.clone(),
            field_selector: self.config.field_selector.clone(),
            limit: (self.config.page_size > 0).then_some(self.config.page_size),
            ..ListParams::default()
        }
    }

    fn watch_params(&self) -> WatchParams {
        let min = self.config.min_watch_timeout.as_secs().max(1);
        let timeout = min + rand::random_range(0..=min);
        WatchParams {
            label_selector: self.config.label_selector.clone(),
            field_selector: self.config.field_selector.clone(),
            timeout: Some(u32::try_from(timeout).unwrap_or(u32::MAX)),
            bookmarks: true,
            send_initial_events: false,
        }
    }

    /// A complete list, page by page. An expired continue token (410) falls
    /// back to one unpaged list.
    async fn paged_list(&mut self, cancel: &CancellationToken) -> ListOutcome {
        let mut params = self.list_params();
        let mut objects = Vec::new();
        self.status
            .send_replace(ReflectorStatus::Listing { objects: 0 });
        loop {
            ReflectorStats::inc(&self.stats.list_requests);
            let page = tokio::select! {
                _ = cancel.cancelled() => return ListOutcome::Cancelled,
                page = self.lw.list(&params) => page,
            };
            let page = match page {
                Ok(page) => page,
                Err(kube_client::Error::Api(s))
                    if s.code == 410 && params.continue_token.is_some() =>
                {
                    tracing::info!(resource = %self.resource_name(), "continue token expired during a paged list; listing again in one request");
                    objects.clear();
                    params = ListParams {
                        limit: None,
                        continue_token: None,
                        ..params
                    };
                    continue;
                }
                Err(source) => {
                    return ListOutcome::Failed(ReflectorError::List {
                        resource: self.resource_name(),
                        source,
                    });
                }
            };
            self.note_undecodable();
            objects.extend(page.items.into_iter().filter_map(|o| self.admit(o)));
            self.status.send_replace(ReflectorStatus::Listing {
                objects: objects.len(),
            });
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => params.continue_token = Some(token),
                None => {
                    let rv = page.metadata.resource_version.unwrap_or_default();
                    return ListOutcome::Listed(objects, rv);
                }
            }
        }
    }

    /// A streaming list: a watch with `sendInitialEvents=true` whose initial
    /// events end with a bookmark annotated `k8s.io/initial-events-end`.
    async fn streaming_list(&mut self, cancel: &CancellationToken) -> ListOutcome {
        self.status
            .send_replace(ReflectorStatus::Listing { objects: 0 });
        let mut params = self.watch_params();
        params.send_initial_events = true;
        ReflectorStats::inc(&self.stats.watch_requests);
        let stream = tokio::select! {
            _ = cancel.cancelled() => return ListOutcome::Cancelled,
            s = self.lw.watch(&params, "") => s,
        };
        let mut stream = match stream {
            Ok(s) => s,
            Err(kube_client::Error::Api(s)) if refuses_streaming(s.code) => {
                tracing::info!(resource = %self.resource_name(), code = s.code, message = %s.message, "server refused a streaming list; using list-then-watch");
                self.streaming_unsupported = true;
                return self.paged_list(cancel).await;
            }
            Err(source) => {
                return ListOutcome::Failed(ReflectorError::Watch {
                    resource: self.resource_name(),
                    source,
                });
            }
        };
        // Keyed so that a Modified or Deleted during the initial events (not
        // expected, but allowed) leaves the right final set.
        let mut objects: indexmap::IndexMap<String, DynamicObject> = indexmap::IndexMap::new();
        loop {
            let next = tokio::select! {
                _ = cancel.cancelled() => return ListOutcome::Cancelled,
                n = stream.next() => n,
            };
            let event = match next {
                None => {
                    // Ended before the initial events did: start over.
                    return ListOutcome::Failed(ReflectorError::WatchEvent {
                        resource: self.resource_name(),
                        code: 500,
                        reason: "StreamEnded".into(),
                        message: "streaming list ended before its initial-events-end bookmark"
                            .into(),
                    });
                }
                Some(Err(source)) => {
                    return ListOutcome::Failed(ReflectorError::Watch {
                        resource: self.resource_name(),
                        source,
                    });
                }
                Some(Ok(e)) => e,
            };
            ReflectorStats::inc(&self.stats.watch_events);
            self.note_undecodable();
            match event {
                WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                    if let Some(o) = self.admit(o)
                        && let Some(key) = crate::object_key::object_key(&o)
                    {
                        objects.insert(key, o);
                    }
                    if objects.len().is_multiple_of(500) {
                        self.status.send_replace(ReflectorStatus::Listing {
                            objects: objects.len(),
                        });
                    }
                }
                WatchEvent::Deleted(o) => {
                    if let Some(key) = crate::object_key::object_key(&o) {
                        objects.shift_remove(&key);
                    }
                }
                WatchEvent::Bookmark(b) => {
                    if b.metadata.annotations.get(INITIAL_EVENTS_END_ANNOTATION)
                        == Some(&"true".to_string())
                    {
                        return ListOutcome::Listed(
                            objects.into_values().collect(),
                            b.metadata.resource_version,
                        );
                    }
                }
                WatchEvent::Error(s) => {
                    return ListOutcome::Failed(ReflectorError::WatchEvent {
                        resource: self.resource_name(),
                        code: s.code,
                        reason: s.reason.clone(),
                        message: s.message.clone(),
                    });
                }
            }
        }
    }

    /// Watches from `from`; updates `last_rv` as events arrive.
    async fn watch(
        &mut self,
        from: &str,
        last_rv: &mut String,
        cancel: &CancellationToken,
        sink: &mut (impl FnMut(Delta) + Send),
    ) -> WatchEnd {
        ReflectorStats::inc(&self.stats.watch_requests);
        let params = self.watch_params();
        let stream = tokio::select! {
            _ = cancel.cancelled() => return WatchEnd::Cancelled,
            s = self.lw.watch(&params, from) => s,
        };
        let mut stream = match stream {
            Ok(s) => s,
            Err(kube_client::Error::Api(s)) if s.code == 410 => {
                tracing::info!(resource = %self.resource_name(), message = %s.message, "watch resourceVersion expired; listing again");
                return WatchEnd::Relist;
            }
            Err(source) => {
                return WatchEnd::Failed(ReflectorError::Watch {
                    resource: self.resource_name(),
                    source,
                });
            }
        };
        loop {
            let next = tokio::select! {
                _ = cancel.cancelled() => return WatchEnd::Cancelled,
                n = stream.next() => n,
            };
            let event = match next {
                None => return WatchEnd::Resume,
                Some(Err(source)) => {
                    return WatchEnd::Failed(ReflectorError::Watch {
                        resource: self.resource_name(),
                        source,
                    });
                }
                Some(Ok(e)) => e,
            };
            ReflectorStats::inc(&self.stats.watch_events);
            self.note_undecodable();
            match event {
                WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                    if let Some(rv) = &o.metadata.resource_version {
                        last_rv.clone_from(rv);
                    }
                    if let Some(o) = self.admit(o) {
                        sink(Delta::Upsert(o));
                    }
                }
                WatchEvent::Deleted(o) => {
                    if let Some(rv) = &o.metadata.resource_version {
                        last_rv.clone_from(rv);
                    }
                    if let Some(o) = self.admit(o) {
                        sink(Delta::Delete(o));
                    }
                }
                WatchEvent::Bookmark(b) => {
                    *last_rv = b.metadata.resource_version;
                }
                WatchEvent::Error(s) if s.code == 410 => {
                    tracing::info!(resource = %self.resource_name(), message = %s.message, "watch expired; listing again");
                    return WatchEnd::Relist;
                }
                WatchEvent::Error(s) => {
                    return WatchEnd::Failed(ReflectorError::WatchEvent {
                        resource: self.resource_name(),
                        code: s.code,
                        reason: s.reason.clone(),
                        message: s.message.clone(),
                    });
                }
            }
        }
    }

    /// Counts and logs the objects the [`ListWatch`] could not decode.
    fn note_undecodable(&self) {
        for object in self.lw.take_undecodable() {
            ReflectorStats::inc(&self.stats.skipped_objects);
            tracing::warn!(
                resource = %self.resource_name(),
                object = %object,
                "skipping an object that cannot be decoded"
            );
        }
    }

    /// Fills in apiVersion and kind when missing (list items carry none) and
    /// skips objects that belong to another resource or have no name.
    fn admit(&self, mut obj: DynamicObject) -> Option<DynamicObject> {
        let want_api_version = &self.resource.api_version;
        let want_kind = &self.resource.kind;
        match &obj.types {
            None => {
                obj.types = Some(TypeMeta {
                    api_version: want_api_version.clone(),
                    kind: want_kind.clone(),
                });
            }
            Some(t) if t.api_version.is_empty() && t.kind.is_empty() => {
                obj.types = Some(TypeMeta {
                    api_version: want_api_version.clone(),
                    kind: want_kind.clone(),
                });
            }
            Some(t) if &t.api_version != want_api_version || &t.kind != want_kind => {
                ReflectorStats::inc(&self.stats.skipped_objects);
                tracing::warn!(
                    resource = %self.resource_name(),
                    got_api_version = %t.api_version,
                    got_kind = %t.kind,
                    name = obj.metadata.name.as_deref().unwrap_or(""),
                    "skipping an object of another apiVersion/kind"
                );
                return None;
            }
            Some(_) => {}
        }
        if obj.metadata.name.as_deref().unwrap_or("").is_empty() {
            ReflectorStats::inc(&self.stats.skipped_objects);
            tracing::warn!(resource = %self.resource_name(), "skipping an object without a name");
            return None;
        }
        Some(match &self.config.transform {
            Some(transform) => transform(obj),
            None => obj,
        })
    }
}

/// `err` followed by each of its sources that adds something, joined by
/// `: `. kube-client's transport errors say only "client error (Connect)" at
/// the top; the cause that tells a refused connection from an untrusted
/// certificate is further down the chain.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

/// Codes with which a server that does not support streaming lists refuses
/// `sendInitialEvents`: 400/422 (unknown or invalid parameter) or 501.
fn refuses_streaming(code: u16) -> bool {
    matches!(code, 400 | 422 | 501)
}

impl<L> fmt::Debug for Reflector<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reflector")
            .field("resource", &self.resource)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
