//! The informer factory: one shared informer per resource and options, for
//! any resource named at run time.
//!
//! An [`InformerFactory`] hands out [`GenericInformer`]s — an informer and
//! its [`Lister`] together — for resources named the way kubectl names them
//! (`deploy`, `Deployment`, `deployments.apps`, `apps/v1/deployments`,
//! `widgets.v1.example.com`) or by [`ResourceKey`] / GroupVersionResource.
//! Asking twice for the same resource with the same options gives the same
//! informer: one cache and one watch serve the whole process.
//!
//! # Lifecycle
//!
//! [`start`](InformerFactory::start) starts every informer asked for so far
//! and every one asked for later; calling it again does nothing.
//! [`wait_for_cache_sync`](InformerFactory::wait_for_cache_sync) answers per
//! resource, with the reason for each failure (403 forbidden, not served,
//! timed out). [`remove`](InformerFactory::remove) stops the informers of
//! one resource and drops the factory's hold on their caches;
//! [`shutdown`](InformerFactory::shutdown) stops everything and waits for it.
//!
//! # Resources that come and go
//!
//! The factory's [`DiscoveryCache`] watches CRDs and APIServices (see
//! [`DiscoveryCache::keep_current`]), and every informer follows whether its
//! resource is served ([`ResourceAvailability`]):
//!
//! - An informer asked for a CRD that is not installed — named fully, as
//!   `widgets.v1.example.com`, `example.com/v1/widgets` or a key, since a
//!   short name or kind cannot be known before the CRD exists — reports
//!   [`InformerStatus::Pending`] with the reason, sends no request, and
//!   starts within moments of the CRD being served.
//! - When a watched CRD is deleted, handlers get the deletes, the informer
//!   reports [`InformerStatus::Gone`] and stops requesting — no endless 404
//!   loop. When the CRD is created again, it lists again and carries on.
//! - A resource the client may not list reports the 403 (in the status and
//!   in [`CacheSyncError::Forbidden`]) and keeps retrying with backoff, so it
//!   syncs by itself once access is granted.
//!
//! # Options
//!
//! [`InformerOptions`] hold namespaces, label and field selectors, transform,
//! resync period, streaming lists, page size and metadata-only mode. The
//! factory's options apply to every informer;
//! [`for_resource_with`](InformerFactory::for_resource_with) changes any of
//! them for one resource.
//!
//! ## Metadata-only mode
//!
//! With [`InformerOptions::metadata_only`] the informer asks the server for
//! `PartialObjectMetadata` (list and watch with
//! `Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`):
//! the server sends, and the cache keeps, only `metadata`. Cached objects
//! keep the resource's own `apiVersion` and `kind` (not
//! `meta.k8s.io/v1 PartialObjectMetadata`), so that handlers, indexes and
//! listers treat them like any other object of the resource; their body
//! (`data`) is an empty JSON object. For objects whose weight is in their
//! spec or data (ConfigMaps, Secrets, CRDs with large specs) this cuts both
//! traffic and memory to a fraction; see the crate's closing notes for
//! figures.
//!
//! # Example
//!
//! ```no_run
//! # async fn demo(client: kube_client::Client) -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use kube_dynamic_informer::factory::{InformerFactory, InformerOptions};
//! use kube_dynamic_informer::informer::Event;
//!
//! let factory = InformerFactory::with_options(
//!     client,
//!     InformerOptions::default().strip_managed_fields(),
//! );
//! let deployments = factory.for_resource("deploy").await?;
//! let config_maps = factory
//!     .for_resource_with("configmaps", |o| o.namespace("shop").metadata_only(true))
//!     .await?;
//! deployments.informer().add_handler(|e: Event| println!("{} {:?}", e.kind(), e.object().metadata.name));
//!
//! factory.start()?;
//! let report = factory.wait_for_cache_sync(Duration::from_secs(30)).await;
//! for (resource, failure) in report.failures() {
//!     eprintln!("{resource}: {failure}");
//! }
//! let web = deployments.lister().namespace("shop")?.list("app=web")?;
//! println!("{} web deployments, {} config maps", web.len(), config_maps.lister().list_all().len());
//! factory.shutdown().await;
//! # Ok(()) }
//! ```

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use kube_client::api::{ListParams, ObjectList, VersionMatch, WatchEvent, WatchParams};
use kube_client::{Api, Client};
use kube_core::{ApiResource, DynamicObject, GroupVersionResource, Status, TypeMeta};
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::backoff::BackoffConfig;
use crate::discovery::{DiscoveryCache, DiscoveryError};
use crate::informer::{
    InformerConfig, InformerError, InformerStatus, Scope, SharedInformer, Transform,
    strip_managed_fields,
};
use crate::lister::Lister;
use crate::reflector::{ListWatch, ReflectorConfig, ResourceAvailability, WatchStream};
use crate::resource::{KnownResource, ResourceError, ResourceKey, ResourceName};
use crate::selector::{Selector, SelectorError, validate_field_selector};
use crate::wire::{self, ListWatchState, UndecodableObject};

/// Which namespaces an informer watches.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Namespaces {
    /// All namespaces (and cluster-scoped resources).
    #[default]
    All,
    /// Only these namespaces. With several, the informer lists each at one
    /// common resourceVersion and merges their watches into one cache (so it
    /// needs no cluster-wide permission), without streaming lists.
    Only(BTreeSet<String>),
}

impl Namespaces {
    /// Only the given namespaces; none at all means [`Namespaces::All`].
    #[must_use]
    pub fn only<I, S>(namespaces: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let set: BTreeSet<String> = namespaces.into_iter().map(Into::into).collect();
        if set.is_empty() {
            Namespaces::All
        } else {
            Namespaces::Only(set)
        }
    }

    fn describe(&self) -> String {
        match self {
            Namespaces::All => "all namespaces".into(),
            Namespaces::Only(set) => set.iter().cloned().collect::<Vec<_>>().join(", "),
        }
    }
}

/// How the factory's informers list, watch and cache. The factory's options
/// apply to every informer; [`InformerFactory::for_resource_with`] changes
/// them for one resource.
#[derive(Clone)]
pub struct InformerOptions {
    /// Namespaces to watch. A factory-wide restriction does not apply to
    /// cluster-scoped resources; a per-resource one on a cluster-scoped
    /// resource is an error.
    pub namespaces: Namespaces,
    /// Label selector for list and watch (server-side).
    pub label_selector: Option<String>,
    /// Field selector for list and watch (server-side).
    pub field_selector: Option<String>,
    /// Applied to each object before it is cached. Two option sets share an
    /// informer only when they hold the same `Arc`.
    pub transform: Option<Transform>,
    /// Default resync period of handlers; zero disables resync.
    pub resync: Duration,
    /// Streaming lists (`sendInitialEvents`) where the server has them.
    pub streaming_list: bool,
    /// Objects per list page; 0 lists in one response.
    pub page_size: u32,
    /// Ask for and cache metadata only (`PartialObjectMetadata`).
    pub metadata_only: bool,
    /// Retry backoff after list and watch errors.
    pub backoff: BackoffConfig,
}

impl Default for InformerOptions {
    /// As client-go's factory: all namespaces, no selectors, no transform, no
    /// resync, pages of 500, list-then-watch, client-go's backoff; full
    /// objects.
    fn default() -> Self {
        Self {
            namespaces: Namespaces::All,
            label_selector: None,
            field_selector: None,
            transform: None,
            resync: Duration::ZERO,
            streaming_list: false,
            page_size: 500,
            metadata_only: false,
            backoff: BackoffConfig::default(),
        }
    }
}

impl InformerOptions {
    /// Watches only this namespace.
    #[must_use]
    pub fn namespace(self, namespace: impl Into<String>) -> Self {
        self.namespaces(Namespaces::only([namespace.into()]))
    }

    /// Sets the namespaces to watch.
    #[must_use]
    pub fn namespaces(mut self, namespaces: Namespaces) -> Self {
        self.namespaces = namespaces;
        self
    }

    /// Watches all namespaces.
    #[must_use]
    pub fn all_namespaces(self) -> Self {
        self.namespaces(Namespaces::All)
    }

    /// Sets the label selector (`None` or `""`: everything).
    #[must_use]
    pub fn label_selector(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Sets the field selector (`None` or `""`: everything).
    #[must_use]
    pub fn field_selector(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// Sets the transform.
    #[must_use]
    pub fn transform(mut self, transform: Transform) -> Self {
        self.transform = Some(transform);
        self
    }

    /// Removes the transform.
    #[must_use]
    pub fn no_transform(mut self) -> Self {
        self.transform = None;
        self
    }

    /// Strips `metadata.managedFields` before caching (one shared transform,
    /// so informers asking for it can be shared).
    #[must_use]
    pub fn strip_managed_fields(self) -> Self {
        static STRIP: std::sync::OnceLock<Transform> = std::sync::OnceLock::new();
        self.transform(STRIP.get_or_init(strip_managed_fields).clone())
    }

    /// Sets the default resync period (zero disables resync).
    #[must_use]
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = period;
        self
    }

    /// Turns streaming lists on or off.
    #[must_use]
    pub fn streaming_list(mut self, enabled: bool) -> Self {
        self.streaming_list = enabled;
        self
    }

    /// Sets the list page size (0: unpaged).
    #[must_use]
    pub fn page_size(mut self, page_size: u32) -> Self {
        self.page_size = page_size;
        self
    }

    /// Turns metadata-only mode on or off.
    #[must_use]
    pub fn metadata_only(mut self, enabled: bool) -> Self {
        self.metadata_only = enabled;
        self
    }

    /// Sets the retry backoff.
    #[must_use]
    pub fn backoff(mut self, backoff: BackoffConfig) -> Self {
        self.backoff = backoff;
        self
    }
}

impl fmt::Debug for InformerOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerOptions")
            .field("namespaces", &self.namespaces)
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .field("transform", &self.transform.as_ref().map(|_| "<fn>"))
            .field("resync", &self.resync)
            .field("streaming_list", &self.streaming_list)
            .field("page_size", &self.page_size)
            .field("metadata_only", &self.metadata_only)
            .field("backoff", &self.backoff)
            .finish()
    }
}

/// What decides whether two requests share an informer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct OptionsIdentity {
    namespaces: Namespaces,
    label_selector: Option<String>,
    field_selector: Option<String>,
    /// The transform's address.
    transform: Option<usize>,
    resync: Duration,
    streaming_list: bool,
    page_size: u32,
    metadata_only: bool,
    /// Initial and maximal wait, reset time, and the jitter's bits.
    backoff: (Duration, Duration, Duration, u64),
}

fn non_empty(s: &Option<String>) -> Option<String> {
    s.as_ref()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// A resource as the factory's callers name it: a string in any form
/// [`ResourceName`] accepts, a parsed name, a [`ResourceKey`] or a
/// `GroupVersionResource`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResourceRef {
    /// A name, not yet parsed.
    Text(String),
    /// A parsed name.
    Name(ResourceName),
    /// An exact group, version and resource.
    Key(ResourceKey),
}

impl From<&str> for ResourceRef {
    fn from(s: &str) -> Self {
        ResourceRef::Text(s.to_owned())
    }
}

impl From<String> for ResourceRef {
    fn from(s: String) -> Self {
        ResourceRef::Text(s)
    }
}

impl From<&String> for ResourceRef {
    fn from(s: &String) -> Self {
        ResourceRef::Text(s.clone())
    }
}

impl From<ResourceName> for ResourceRef {
    fn from(n: ResourceName) -> Self {
        ResourceRef::Name(n)
    }
}

impl From<&ResourceName> for ResourceRef {
    fn from(n: &ResourceName) -> Self {
        ResourceRef::Name(n.clone())
    }
}

impl From<ResourceKey> for ResourceRef {
    fn from(k: ResourceKey) -> Self {
        ResourceRef::Key(k)
    }
}

impl From<&ResourceKey> for ResourceRef {
    fn from(k: &ResourceKey) -> Self {
        ResourceRef::Key(k.clone())
    }
}

impl From<GroupVersionResource> for ResourceRef {
    fn from(gvr: GroupVersionResource) -> Self {
        ResourceRef::Key(gvr.into())
    }
}

impl From<&GroupVersionResource> for ResourceRef {
    fn from(gvr: &GroupVersionResource) -> Self {
        ResourceRef::Key(gvr.into())
    }
}

impl fmt::Display for ResourceRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResourceRef::Text(s) => f.write_str(s),
            ResourceRef::Name(n) => write!(f, "{n}"),
            ResourceRef::Key(k) => write!(f, "{k}"),
        }
    }
}

impl ResourceRef {
    fn parse(self) -> Result<Result<ResourceName, ResourceKey>, ResourceError> {
        Ok(match self {
            ResourceRef::Text(s) => Ok(ResourceName::parse(&s)?),
            ResourceRef::Name(n) => Ok(n),
            ResourceRef::Key(k) => Err(k),
        })
    }
}

/// The key a name designates on its own, without discovery: when its first
/// reading names group, version and a lower-case plural. This is how a CRD
/// that is not installed yet can be asked for.
fn fully_qualified(name: &ResourceName) -> Option<ResourceKey> {
    let first = name.candidates().first()?;
    let (group, version) = (first.group.as_ref()?, first.version.as_ref()?);
    if first.name.bytes().any(|b| b.is_ascii_uppercase()) {
        return None;
    }
    Some(ResourceKey::new(
        group.as_str(),
        version.as_str(),
        first.name.as_str(),
    ))
}

/// Errors of the factory.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FactoryError {
    /// The resource name does not parse.
    #[error(transparent)]
    Name(#[from] ResourceError),
    /// Discovery failed, or the name matches no served resource (or
    /// several).
    #[error(transparent)]
    Discovery(#[from] DiscoveryError),
    /// The resource is served but cannot be listed and watched.
    #[error("{resource} cannot be watched: it supports only {}", .verbs.join(", "))]
    NotWatchable {
        /// The resource.
        resource: ResourceKey,
        /// What it supports.
        verbs: Vec<String>,
    },
    /// A per-resource namespace restriction on a cluster-scoped resource.
    #[error("{resource} is cluster-scoped: it cannot be restricted to namespaces ({namespaces})")]
    NamespaceOnClusterScoped {
        /// The resource.
        resource: ResourceKey,
        /// The namespaces asked for.
        namespaces: String,
    },
    /// A label or field selector does not parse.
    #[error("{resource}: {source}")]
    Selector {
        /// The resource.
        resource: ResourceKey,
        /// What is wrong with the selector.
        #[source]
        source: Box<SelectorError>,
    },
    /// The informer could not be built.
    #[error(transparent)]
    Informer(#[from] InformerError),
    /// [`InformerFactory::shutdown`] was called.
    #[error("the informer factory was shut down")]
    ShutDown,
    /// [`InformerFactory::start`] was called outside a tokio runtime.
    #[error("starting informers needs a tokio runtime")]
    NoRuntime,
}

/// Why one informer's cache is not synced, from
/// [`InformerFactory::wait_for_cache_sync`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CacheSyncError {
    /// The server refuses the list (403); the informer keeps retrying and
    /// syncs by itself once access is granted.
    #[error("{resource}: forbidden (403); it syncs once access is granted: {message}")]
    Forbidden {
        /// The resource.
        resource: ResourceKey,
        /// The server's message.
        message: String,
    },
    /// The resource is not served (a CRD not installed); the informer
    /// starts once it is.
    #[error("{reason}; the informer of {resource} starts once it is served")]
    NotServed {
        /// The resource.
        resource: ResourceKey,
        /// Discovery's reason.
        reason: String,
    },
    /// The resource was served and is gone (its CRD was deleted).
    #[error(
        "{reason}; the informer of {resource} emptied its cache and resumes if it is served again"
    )]
    Gone {
        /// The resource.
        resource: ResourceKey,
        /// Discovery's reason.
        reason: String,
    },
    /// Not synced within the timeout, for another reason.
    #[error("{resource} did not sync within {timeout:?}; last status: {status}")]
    TimedOut {
        /// The resource.
        resource: ResourceKey,
        /// The timeout.
        timeout: Duration,
        /// What the informer was doing.
        status: Box<InformerStatus>,
    },
    /// The factory was not started.
    #[error("{resource}: the informer was not started (call InformerFactory::start)")]
    NotStarted {
        /// The resource.
        resource: ResourceKey,
    },
    /// The informer stopped (removed, or the factory shut down).
    #[error("{resource}: the informer stopped before its cache synced")]
    Stopped {
        /// The resource.
        resource: ResourceKey,
    },
}

/// The outcome of [`InformerFactory::wait_for_cache_sync`]: one result per
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

/// An informer and its lister, for any resource: what the factory hands
/// out. Cheap to clone; clones (and every handle the factory returns for the
/// same resource and options) are the same informer, and compare equal.
#[derive(Clone)]
pub struct GenericInformer {
    id: u64,
    resource: ResourceKey,
    informer: SharedInformer,
    lister: Lister,
    availability: watch::Receiver<ResourceAvailability>,
    options: Arc<InformerOptions>,
}

impl GenericInformer {
    /// The resource.
    #[must_use]
    pub fn resource(&self) -> &ResourceKey {
        &self.resource
    }

    /// The shared informer: add handlers, event streams and indexes here.
    #[must_use]
    pub fn informer(&self) -> &SharedInformer {
        &self.informer
    }

    /// The lister over the informer's cache.
    #[must_use]
    pub fn lister(&self) -> Lister {
        self.lister.clone()
    }

    /// The informer's status.
    #[must_use]
    pub fn status(&self) -> InformerStatus {
        self.informer.status()
    }

    /// Whether the cache holds a complete list.
    #[must_use]
    pub fn has_synced(&self) -> bool {
        self.informer.has_synced()
    }

    /// Whether the resource is served now, as discovery last saw it.
    #[must_use]
    pub fn availability(&self) -> ResourceAvailability {
        self.availability.borrow().clone()
    }

    /// The resource as discovery reports it; `None` while it is not served.
    #[must_use]
    pub fn api_resource(&self) -> Option<ApiResource> {
        match &*self.availability.borrow() {
            ResourceAvailability::Served { resource, .. } => Some(resource.clone()),
            ResourceAvailability::NotServed { .. } => None,
        }
    }

    /// Namespaced or cluster-scoped; `None` while the resource is not served.
    #[must_use]
    pub fn scope(&self) -> Option<Scope> {
        self.lister.scope()
    }

    /// The options this informer was built with (after per-resource
    /// changes, with namespaces as they apply to the resource).
    #[must_use]
    pub fn options(&self) -> &InformerOptions {
        &self.options
    }
}

impl PartialEq for GenericInformer {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for GenericInformer {}

impl fmt::Debug for GenericInformer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GenericInformer")
            .field("resource", &self.resource)
            .field("status", &self.status())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

struct Entry {
    informer: GenericInformer,
    /// What resolution knew of the resource (a placeholder when pending).
    known: KnownResource,
    cancel: CancellationToken,
    handle: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct FactoryState {
    started: bool,
    shut_down: bool,
    entries: HashMap<(ResourceKey, OptionsIdentity), Entry>,
    discovery_task: Option<JoinHandle<()>>,
}

struct FactoryInner {
    client: Client,
    discovery: DiscoveryCache,
    defaults: InformerOptions,
    cancel: CancellationToken,
    next_id: AtomicU64,
    state: Mutex<FactoryState>,
}

impl Drop for FactoryInner {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Hands out one shared informer per resource and options; see the
/// [module docs](self). Cheap to clone; clones share everything. Dropping
/// the last clone stops every informer.
#[derive(Clone)]
pub struct InformerFactory {
    inner: Arc<FactoryInner>,
}

impl fmt::Debug for InformerFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.state.lock();
        f.debug_struct("InformerFactory")
            .field("defaults", &self.inner.defaults)
            .field("started", &state.started)
            .field("informers", &state.entries.len())
            .finish_non_exhaustive()
    }
}

impl InformerFactory {
    /// A factory with default options.
    #[must_use]
    pub fn new(client: Client) -> Self {
        Self::with_options(client, InformerOptions::default())
    }

    /// A factory whose informers use `options` unless told otherwise.
    #[must_use]
    pub fn with_options(client: Client, options: InformerOptions) -> Self {
        let discovery = DiscoveryCache::new(client.clone());
        Self::with_discovery(client, discovery, options)
    }

    /// A factory over an existing discovery cache (for instance one
    /// configured with [`crate::discovery::DiscoveryConfig`]). The factory
    /// keeps it current while it runs.
    #[must_use]
    pub fn with_discovery(
        client: Client,
        discovery: DiscoveryCache,
        options: InformerOptions,
    ) -> Self {
        Self {
            inner: Arc::new(FactoryInner {
                client,
                discovery,
                defaults: options,
                cancel: CancellationToken::new(),
                next_id: AtomicU64::new(1),
                state: Mutex::new(FactoryState::default()),
            }),
        }
    }

    /// The factory's discovery cache.
    #[must_use]
    pub fn discovery(&self) -> &DiscoveryCache {
        &self.inner.discovery
    }

    /// The options every informer starts from.
    #[must_use]
    pub fn options(&self) -> &InformerOptions {
        &self.inner.defaults
    }

    /// Every informer handed out and not removed.
    #[must_use]
    pub fn informers(&self) -> Vec<GenericInformer> {
        let mut all: Vec<GenericInformer> = self
            .inner
            .state
            .lock()
            .entries
            .values()
            .map(|e| e.informer.clone())
            .collect();
        all.sort_by(|a, b| a.resource.cmp(&b.resource).then(a.id.cmp(&b.id)));
        all
    }

    /// The informer for `resource` with the factory's options; the same one
    /// every time. Started at once if the factory is.
    ///
    /// `resource` is a name in any form [`ResourceName`] accepts, resolved
    /// through discovery (read again if the name is unknown), or a
    /// [`ResourceKey`] / `GroupVersionResource`. A resource that is not
    /// served yet — a CRD about to be installed — can be asked for by key or
    /// by a fully qualified name (`widgets.v1.example.com`,
    /// `example.com/v1/widgets`): its informer reports
    /// [`InformerStatus::Pending`] until the resource is served.
    ///
    /// # Errors
    /// [`FactoryError::Name`], [`FactoryError::Discovery`] (unknown or
    /// ambiguous names, with suggestions or choices),
    /// [`FactoryError::NotWatchable`], [`FactoryError::Selector`],
    /// [`FactoryError::ShutDown`].
    pub async fn for_resource(
        &self,
        resource: impl Into<ResourceRef>,
    ) -> Result<GenericInformer, FactoryError> {
        self.for_resource_with(resource, |options| options).await
    }

    /// As [`for_resource`](Self::for_resource), with the factory's options
    /// changed for this resource by `customize`, which receives them and
    /// returns the ones to use. Asking again with equal options returns the
    /// same informer; different options make a different informer.
    ///
    /// ```no_run
    /// # async fn demo(factory: kube_dynamic_informer::factory::InformerFactory) -> Result<(), Box<dyn std::error::Error>> {
    /// let web_pods = factory
    ///     .for_resource_with("pods", |o| o.namespace("shop").label_selector("app=web"))
    ///     .await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`for_resource`](Self::for_resource), and
    /// [`FactoryError::NamespaceOnClusterScoped`] when `customize` restricts
    /// namespaces of a cluster-scoped resource.
    pub async fn for_resource_with(
        &self,
        resource: impl Into<ResourceRef>,
        customize: impl FnOnce(InformerOptions) -> InformerOptions,
    ) -> Result<GenericInformer, FactoryError> {
        if self.inner.state.lock().shut_down {
            return Err(FactoryError::ShutDown);
        }
        let (key, known) = self.resolve(resource.into()).await?;
        if let Some(known) = &known {
            let snapshot = self.inner.discovery.snapshot();
            if snapshot.get(&key).is_some() && !snapshot.is_watchable(&key) {
                return Err(FactoryError::NotWatchable {
                    resource: key,
                    verbs: snapshot.verbs(&known.key()).to_vec(),
                });
            }
        }
        let mut options = customize(self.inner.defaults.clone());
        let per_resource_namespaces = options.namespaces != self.inner.defaults.namespaces;
        if known.as_ref().is_some_and(|k| !k.namespaced) {
            if per_resource_namespaces && options.namespaces != Namespaces::All {
                return Err(FactoryError::NamespaceOnClusterScoped {
                    resource: key,
                    namespaces: options.namespaces.describe(),
                });
            }
            options.namespaces = Namespaces::All;
        }
        options.label_selector = non_empty(&options.label_selector);
        options.field_selector = non_empty(&options.field_selector);
        let selector_error = |source| FactoryError::Selector {
            resource: key.clone(),
            source: Box::new(source),
        };
        if let Some(s) = &options.label_selector {
            Selector::parse(s).map_err(selector_error)?;
        }
        if let Some(s) = &options.field_selector {
            validate_field_selector(s).map_err(selector_error)?;
        }
        let identity = OptionsIdentity {
            namespaces: options.namespaces.clone(),
            label_selector: options.label_selector.clone(),
            field_selector: options.field_selector.clone(),
            transform: options
                .transform
                .as_ref()
                .map(|t| Arc::as_ptr(t).cast::<()>() as usize),
            resync: options.resync,
            streaming_list: options.streaming_list,
            page_size: options.page_size,
            metadata_only: options.metadata_only,
            backoff: (
                options.backoff.initial,
                options.backoff.max,
                options.backoff.reset_after,
                options.backoff.jitter.to_bits(),
            ),
        };

        let mut state = self.inner.state.lock();
        if state.shut_down {
            return Err(FactoryError::ShutDown);
        }
        let map_key = (key.clone(), identity);
        if let Some(entry) = state.entries.get(&map_key) {
            return Ok(entry.informer.clone());
        }
        let availability = self.inner.discovery.availability(&key);
        let multi = matches!(&options.namespaces, Namespaces::Only(set) if set.len() > 1);
        let lw =
            ResourceListWatch::with_availability(self.inner.client.clone(), availability.clone())
                .namespaces(options.namespaces.clone())
                .strict_namespaces(per_resource_namespaces)
                .metadata_only(options.metadata_only);
        let config = InformerConfig {
            namespace: None,
            reflector: ReflectorConfig {
                label_selector: options.label_selector.clone(),
                field_selector: options.field_selector.clone(),
                page_size: options.page_size,
                streaming_list: options.streaming_list && !multi,
                availability: Some(availability.clone()),
                backoff: options.backoff.clone(),
                ..ReflectorConfig::default()
            },
            resync: options.resync,
            transform: options.transform.clone(),
            indexes: Default::default(),
        };
        let known = known.unwrap_or_else(|| KnownResource {
            group: key.group.clone(),
            version: key.version.clone(),
            plural: key.resource.clone(),
            preferred_version: true,
            ..KnownResource::default()
        });
        let api_resource = match &*availability.borrow() {
            ResourceAvailability::Served { resource, .. } => resource.clone(),
            ResourceAvailability::NotServed { .. } => known.api_resource(),
        };
        let informer = SharedInformer::with_list_watch(lw, api_resource, config)?;
        let mut lister = Lister::discovered(informer.store(), key.clone(), availability.clone());
        if let Namespaces::Only(set) = &options.namespaces {
            lister = lister.watching_namespaces(set.iter().cloned());
        }
        let generic = GenericInformer {
            id: self.inner.next_id.fetch_add(1, Ordering::Relaxed),
            resource: key,
            informer,
            lister,
            availability,
            options: Arc::new(options),
        };
        let mut entry = Entry {
            informer: generic.clone(),
            known,
            cancel: self.inner.cancel.child_token(),
            handle: None,
        };
        if state.started {
            start_entry(&mut entry);
        }
        state.entries.insert(map_key, entry);
        Ok(generic)
    }

    /// The key and (when served) discovery's entry for a resource.
    async fn resolve(
        &self,
        resource: ResourceRef,
    ) -> Result<(ResourceKey, Option<KnownResource>), FactoryError> {
        let discovery = &self.inner.discovery;
        match resource.parse()? {
            Err(key) => {
                let known = discovery.lookup(&key).await?;
                Ok((key, known))
            }
            Ok(name) => match discovery.resolve(&name).await {
                Ok(known) => Ok((known.key(), Some(known))),
                Err(DiscoveryError::Resolve {
                    source: ResourceError::NotFound { .. },
                    ..
                }) if fully_qualified(&name).is_some() => {
                    let key = fully_qualified(&name).unwrap_or_else(|| unreachable!());
                    Ok((key, None))
                }
                Err(err) => Err(err.into()),
            },
        }
    }

    /// Starts every informer asked for so far; those asked for later start
    /// at once. Also starts keeping discovery current (watching CRDs and
    /// APIServices). Calling it again does nothing.
    ///
    /// # Errors
    /// [`FactoryError::NoRuntime`] outside a tokio runtime;
    /// [`FactoryError::ShutDown`].
    pub fn start(&self) -> Result<(), FactoryError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(FactoryError::NoRuntime);
        }
        let mut state = self.inner.state.lock();
        if state.shut_down {
            return Err(FactoryError::ShutDown);
        }
        if !state.started {
            state.started = true;
            let discovery = self.inner.discovery.clone();
            let cancel = self.inner.cancel.child_token();
            state.discovery_task = Some(tokio::spawn(async move {
                discovery.keep_current(cancel).await;
            }));
        }
        for entry in state.entries.values_mut() {
            start_entry(entry);
        }
        Ok(())
    }

    /// Waits until every informer's cache has synced, or `timeout` passes,
    /// and says for each why it did not: [`CacheSyncError::Forbidden`]
    /// (403), [`CacheSyncError::NotServed`] or [`CacheSyncError::Gone`],
    /// [`CacheSyncError::TimedOut`] with the last status, and so on.
    pub async fn wait_for_cache_sync(&self, timeout: Duration) -> CacheSyncReport {
        let deadline = tokio::time::Instant::now() + timeout;
        let informers = self.informers();
        let results = futures::future::join_all(informers.into_iter().map(|gi| async move {
            let result = wait_one(&gi, deadline, timeout).await;
            (gi.resource.clone(), result)
        }))
        .await;
        CacheSyncReport { results }
    }

    /// Stops the informers of `resource` (all option sets) and waits until
    /// they have stopped; their caches are freed once no
    /// [`GenericInformer`] handle refers to them. Returns how many were
    /// removed. Names are matched against the factory's informers first, so
    /// a resource that is no longer served can still be removed by name.
    ///
    /// # Errors
    /// [`FactoryError::Name`] or [`FactoryError::Discovery`] when the name
    /// designates nothing.
    pub async fn remove(&self, resource: impl Into<ResourceRef>) -> Result<usize, FactoryError> {
        let key = match resource.into().parse()? {
            Err(key) => key,
            Ok(name) => {
                let known: Vec<KnownResource> = self
                    .inner
                    .state
                    .lock()
                    .entries
                    .values()
                    .map(|e| e.known.clone())
                    .collect();
                match name.resolve(&known) {
                    Ok(found) => found.key(),
                    Err(_) => self.inner.discovery.resolve(&name).await?.key(),
                }
            }
        };
        let removed: Vec<Entry> = {
            let mut state = self.inner.state.lock();
            let keys: Vec<_> = state
                .entries
                .keys()
                .filter(|(k, _)| *k == key)
                .cloned()
                .collect();
            keys.iter()
                .filter_map(|k| state.entries.remove(k))
                .collect()
        };
        let count = removed.len();
        stop_entries(removed).await;
        Ok(count)
    }

    /// Stops every informer and the discovery watch, and waits until they
    /// have stopped. The factory hands out nothing afterwards.
    pub async fn shutdown(&self) {
        let (entries, discovery_task) = {
            let mut state = self.inner.state.lock();
            state.shut_down = true;
            (
                state.entries.drain().map(|(_, e)| e).collect::<Vec<_>>(),
                state.discovery_task.take(),
            )
        };
        self.inner.cancel.cancel();
        stop_entries(entries).await;
        if let Some(task) = discovery_task {
            let _ = task.await;
        }
    }
}

fn start_entry(entry: &mut Entry) {
    if entry.handle.is_some() {
        return;
    }
    match entry.informer.informer.start(entry.cancel.clone()) {
        Ok(handle) => entry.handle = Some(handle),
        Err(err) => {
            tracing::warn!(resource = %entry.informer.resource, error = %err, "could not start an informer")
        }
    }
}

async fn stop_entries(entries: Vec<Entry>) {
    for entry in &entries {
        entry.cancel.cancel();
    }
    for entry in entries {
        if let Some(handle) = entry.handle {
            let _ = handle.await;
        }
    }
}

async fn wait_one(
    gi: &GenericInformer,
    deadline: tokio::time::Instant,
    timeout: Duration,
) -> Result<(), CacheSyncError> {
    let resource = || gi.resource.clone();
    let mut status = gi.informer.watch_status();
    loop {
        let current = status.borrow_and_update().clone();
        match current {
            InformerStatus::Gone { reason } => {
                return Err(CacheSyncError::Gone {
                    resource: resource(),
                    reason,
                });
            }
            InformerStatus::NotStarted => {
                return Err(CacheSyncError::NotStarted {
                    resource: resource(),
                });
            }
            InformerStatus::Stopped if !gi.has_synced() => {
                return Err(CacheSyncError::Stopped {
                    resource: resource(),
                });
            }
            _ if gi.has_synced() => return Ok(()),
            _ => {}
        }
        tokio::select! {
            changed = status.changed() => {
                if changed.is_err() && !gi.has_synced() {
                    return Err(CacheSyncError::Stopped { resource: resource() });
                }
            }
            _ = tokio::time::sleep_until(deadline) => {
                if gi.has_synced() {
                    return Ok(());
                }
                return Err(match gi.status() {
                    InformerStatus::BackingOff { code: Some(403), error, .. } => CacheSyncError::Forbidden {
                        resource: resource(),
                        message: error,
                    },
                    InformerStatus::Pending { reason } => CacheSyncError::NotServed {
                        resource: resource(),
                        reason,
                    },
                    status => CacheSyncError::TimedOut {
                        resource: resource(),
                        timeout,
                        status: Box::new(status),
                    },
                });
            }
        }
    }
}

/// The factory's [`ListWatch`]: lists and watches whatever resource its
/// availability channel says is served, in all namespaces, one, or several,
/// as full objects or metadata only.
///
/// - **Several namespaces** are listed one after the other at the
///   resourceVersion of the first list (`resourceVersionMatch=Exact`), so the
///   combined list is one consistent snapshot, and watched together; each
///   namespace's watch resumes from its own last resourceVersion. Streaming
///   lists are not offered for several namespaces (the server would end each
///   namespace's initial events separately); a request for one is refused
///   with 501, which makes the reflector list instead.
/// - **Metadata only** lists and watches `PartialObjectMetadata`
///   ([`Api::list_metadata`], [`Api::watch_metadata`]) and turns each into a
///   [`DynamicObject`] with the resource's apiVersion and kind, its
///   metadata, and an empty body.
///
/// ```no_run
/// # fn demo(client: kube_client::Client) -> Result<(), Box<dyn std::error::Error>> {
/// use kube_core::ApiResource;
/// use kube_dynamic_informer::factory::{Namespaces, ResourceListWatch};
/// use kube_dynamic_informer::informer::{InformerConfig, Scope, SharedInformer};
///
/// let secrets = ApiResource {
///     group: "".into(), version: "v1".into(), api_version: "v1".into(),
///     kind: "Secret".into(), plural: "secrets".into(),
/// };
/// let lw = ResourceListWatch::new(client, secrets.clone(), Scope::Namespaced)
///     .namespaces(Namespaces::only(["shop", "blog"]))
///     .metadata_only(true);
/// let informer = SharedInformer::with_list_watch(lw, secrets, InformerConfig::default())?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ResourceListWatch {
    client: Client,
    availability: watch::Receiver<ResourceAvailability>,
    namespaces: Namespaces,
    strict_namespaces: bool,
    metadata_only: bool,
    /// With several namespaces: where each namespace's watch is, in
    /// namespace order; set by a complete list, advanced by events.
    positions: Arc<Mutex<Option<Vec<String>>>>,
    /// Objects left out because they could not be decoded, and the next
    /// list page, requested ahead.
    state: ListWatchState,
}

impl fmt::Debug for ResourceListWatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceListWatch")
            .field("availability", &*self.availability.borrow())
            .field("namespaces", &self.namespaces)
            .field("metadata_only", &self.metadata_only)
            .finish_non_exhaustive()
    }
}

impl ResourceListWatch {
    /// A list/watch of `resource`, always served, in all namespaces, full
    /// objects.
    #[must_use]
    pub fn new(client: Client, resource: ApiResource, scope: Scope) -> Self {
        let (_tx, rx) = watch::channel(ResourceAvailability::Served { resource, scope });
        Self::with_availability(client, rx)
    }

    /// A list/watch of whatever `availability` says is served (as
    /// [`DiscoveryCache::availability`] provides). While it is not served,
    /// requests fail with 404.
    #[must_use]
    pub fn with_availability(
        client: Client,
        availability: watch::Receiver<ResourceAvailability>,
    ) -> Self {
        Self {
            client,
            availability,
            namespaces: Namespaces::All,
            strict_namespaces: true,
            metadata_only: false,
            positions: Arc::new(Mutex::new(None)),
            state: ListWatchState::default(),
        }
    }

    /// Sets the namespaces.
    #[must_use]
    pub fn namespaces(mut self, namespaces: Namespaces) -> Self {
        self.namespaces = namespaces;
        self
    }

    /// Whether a namespace restriction on a resource that turns out to be
    /// cluster-scoped is an error (true, the default) or ignored (for a
    /// factory-wide restriction).
    #[must_use]
    pub fn strict_namespaces(mut self, strict: bool) -> Self {
        self.strict_namespaces = strict;
        self
    }

    /// Lists and watches metadata only.
    #[must_use]
    pub fn metadata_only(mut self, enabled: bool) -> Self {
        self.metadata_only = enabled;
        self
    }

    /// The resource and one `Api` per namespace (one for all).
    fn target(&self) -> Result<(ApiResource, Vec<Api<DynamicObject>>), kube_client::Error> {
        let (resource, scope) = match &*self.availability.borrow() {
            ResourceAvailability::Served { resource, scope } => (resource.clone(), *scope),
            ResourceAvailability::NotServed { reason } => {
                return Err(status_error(404, "NotFound", reason.clone()));
            }
        };
        let apis = match (&self.namespaces, scope) {
            (Namespaces::Only(set), Scope::Namespaced) => set
                .iter()
                .map(|ns| Api::namespaced_with(self.client.clone(), ns, &resource))
                .collect(),
            (Namespaces::Only(set), Scope::Cluster) if self.strict_namespaces => {
                return Err(status_error(
                    400,
                    "BadRequest",
                    format!(
                        "{} is cluster-scoped: it cannot be restricted to namespaces ({})",
                        ResourceKey::from(&resource),
                        set.iter().cloned().collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
            _ => vec![Api::all_with(self.client.clone(), &resource)],
        };
        Ok((resource, apis))
    }
}

fn status_error(code: u16, reason: &str, message: String) -> kube_client::Error {
    kube_client::Error::Api(Status::failure(&message, reason).with_code(code).boxed())
}

/// A metadata-only object (decoded as `meta.k8s.io/v1
/// PartialObjectMetadata`) as an object of `resource`.
fn from_metadata(mut object: DynamicObject, resource: &ApiResource) -> DynamicObject {
    object.types = Some(TypeMeta {
        api_version: resource.api_version.clone(),
        kind: resource.kind.clone(),
    });
    object.data = serde_json::Value::Object(serde_json::Map::new());
    object
}

async fn list_one(
    api: &Api<DynamicObject>,
    resource: &ApiResource,
    metadata_only: bool,
    params: &ListParams,
    state: &ListWatchState,
) -> Result<ObjectList<DynamicObject>, kube_client::Error> {
    let mut list = wire::list(api, params, metadata_only, state).await?;
    if metadata_only {
        list.items = list
            .items
            .into_iter()
            .map(|o| from_metadata(o, resource))
            .collect();
    }
    Ok(list)
}

async fn watch_one(
    api: &Api<DynamicObject>,
    resource: &ApiResource,
    metadata_only: bool,
    params: &WatchParams,
    rv: &str,
    state: &ListWatchState,
) -> Result<WatchStream, kube_client::Error> {
    let stream = wire::watch(api, params, rv, metadata_only, state).await?;
    if !metadata_only {
        return Ok(stream);
    }
    let resource = resource.clone();
    Ok(stream
        .map(move |event| {
            event.map(|e| match e {
                WatchEvent::Added(m) => WatchEvent::Added(from_metadata(m, &resource)),
                WatchEvent::Modified(m) => WatchEvent::Modified(from_metadata(m, &resource)),
                WatchEvent::Deleted(m) => WatchEvent::Deleted(from_metadata(m, &resource)),
                other => other,
            })
        })
        .boxed())
}

/// Continue token of a list across several namespaces: the namespace's
/// position, the list's resourceVersion and the server's own token.
const MULTI_TOKEN_PREFIX: &str = "kdi-ns:";

fn multi_token(index: usize, rv: &str, inner: &str) -> String {
    format!("{MULTI_TOKEN_PREFIX}{index}:{rv}:{inner}")
}

fn parse_multi_token(token: &str) -> Option<(usize, String, String)> {
    let rest = token.strip_prefix(MULTI_TOKEN_PREFIX)?;
    let mut parts = rest.splitn(3, ':');
    let index = parts.next()?.parse().ok()?;
    let rv = parts.next()?.to_owned();
    let inner = parts.next()?.to_owned();
    Some((index, rv, inner))
}

fn event_rv(event: &WatchEvent<DynamicObject>) -> Option<&str> {
    match event {
        WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
            o.metadata.resource_version.as_deref()
        }
        WatchEvent::Bookmark(b) => Some(b.metadata.resource_version.as_str()),
        WatchEvent::Error(_) => None,
    }
}

impl ResourceListWatch {
    async fn list_several(
        &self,
        apis: Vec<Api<DynamicObject>>,
        resource: ApiResource,
        params: ListParams,
    ) -> Result<ObjectList<DynamicObject>, kube_client::Error> {
        let metadata_only = self.metadata_only;
        let at = |rv: &Option<String>, base: &ListParams| ListParams {
            resource_version: rv.clone(),
            version_match: rv.as_ref().map(|_| VersionMatch::Exact),
            continue_token: None,
            ..base.clone()
        };
        if params.limit.is_none() {
            // One unpaged list per namespace, all at the first one's version.
            let mut rv: Option<String> = None;
            let mut all = ObjectList {
                types: TypeMeta::default(),
                metadata: Default::default(),
                items: Vec::new(),
            };
            for api in &apis {
                let page = list_one(
                    api,
                    &resource,
                    metadata_only,
                    &at(&rv, &params),
                    &self.state,
                )
                .await?;
                if rv.is_none() {
                    rv = page.metadata.resource_version.clone();
                    all.types = page.types;
                }
                all.items.extend(page.items);
            }
            all.metadata.resource_version = rv.clone();
            *self.positions.lock() = Some(vec![rv.unwrap_or_default(); apis.len()]);
            return Ok(all);
        }
        let (mut index, mut rv, mut inner) = match &params.continue_token {
            None => (0, None, None),
            Some(token) => match parse_multi_token(token) {
                Some((index, rv, inner)) if index < apis.len() => {
                    (index, Some(rv), Some(inner).filter(|s| !s.is_empty()))
                }
                _ => {
                    return Err(status_error(
                        400,
                        "BadRequest",
                        format!("invalid continue token {token:?}"),
                    ));
                }
            },
        };
        loop {
            let page_params = match &inner {
                Some(token) => ListParams {
                    continue_token: Some(token.clone()),
                    resource_version: None,
                    version_match: None,
                    ..params.clone()
                },
                None => at(&rv, &params),
            };
            let mut page = list_one(
                &apis[index],
                &resource,
                metadata_only,
                &page_params,
                &self.state,
            )
            .await?;
            if rv.is_none() {
                rv = page.metadata.resource_version.clone();
            }
            let list_rv = rv.clone().unwrap_or_default();
            match page.metadata.continue_.take().filter(|c| !c.is_empty()) {
                Some(next) => {
                    page.metadata.continue_ = Some(multi_token(index, &list_rv, &next));
                }
                None if index + 1 == apis.len() => {
                    page.metadata.resource_version = Some(list_rv.clone());
                    *self.positions.lock() = Some(vec![list_rv; apis.len()]);
                    return Ok(page);
                }
                None => {
                    index += 1;
                    inner = None;
                    if page.items.is_empty() {
                        continue;
                    }
                    page.metadata.continue_ = Some(multi_token(index, &list_rv, ""));
                }
            }
            page.metadata.resource_version = Some(list_rv);
            return Ok(page);
        }
    }

    async fn watch_several(
        &self,
        apis: Vec<Api<DynamicObject>>,
        resource: ApiResource,
        params: WatchParams,
        rv: String,
    ) -> Result<WatchStream, kube_client::Error> {
        if params.send_initial_events {
            return Err(status_error(
                501,
                "NotImplemented",
                "streaming lists are not offered across several namespaces".into(),
            ));
        }
        let starts = {
            let mut positions = self.positions.lock();
            match &*positions {
                Some(p) if p.len() == apis.len() => p.clone(),
                _ => {
                    let p = vec![rv; apis.len()];
                    *positions = Some(p.clone());
                    p
                }
            }
        };
        let mut streams = Vec::with_capacity(apis.len());
        for (i, (api, start)) in apis.iter().zip(&starts).enumerate() {
            let stream = watch_one(
                api,
                &resource,
                self.metadata_only,
                &params,
                start,
                &self.state,
            )
            .await?;
            let positions = self.positions.clone();
            let tracked = stream.map(move |event| {
                if let Ok(e) = &event
                    && let Some(rv) = event_rv(e)
                    && let Some(p) = positions.lock().as_mut()
                    && let Some(slot) = p.get_mut(i)
                {
                    rv.clone_into(slot);
                }
                Some(event)
            });
            // The merged watch ends when any namespace's does, so that the
            // reflector resumes them all.
            streams.push(tracked.chain(futures::stream::once(async { None })).boxed());
        }
        Ok(futures::stream::select_all(streams)
            .take_while(|e| futures::future::ready(e.is_some()))
            .filter_map(futures::future::ready)
            .boxed())
    }
}

impl ListWatch for ResourceListWatch {
    fn list(
        &self,
        params: &ListParams,
    ) -> BoxFuture<'static, Result<ObjectList<DynamicObject>, kube_client::Error>> {
        let this = self.clone();
        let params = params.clone();
        async move {
            let (resource, apis) = this.target()?;
            if apis.len() == 1 {
                list_one(
                    &apis[0],
                    &resource,
                    this.metadata_only,
                    &params,
                    &this.state,
                )
                .await
            } else {
                this.list_several(apis, resource, params).await
            }
        }
        .boxed()
    }

    fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> BoxFuture<'static, Result<WatchStream, kube_client::Error>> {
        let this = self.clone();
        let params = params.clone();
        let rv = resource_version.to_owned();
        async move {
            let (resource, apis) = this.target()?;
            if apis.len() == 1 {
                watch_one(
                    &apis[0],
                    &resource,
                    this.metadata_only,
                    &params,
                    &rv,
                    &this.state,
                )
                .await
            } else {
                this.watch_several(apis, resource, params, rv).await
            }
        }
        .boxed()
    }

    fn take_undecodable(&self) -> Vec<UndecodableObject> {
        self.state.take_undecodable()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fully_qualified_names_can_wait_for_their_resource() {
        let fq = |s: &str| fully_qualified(&ResourceName::parse(s).unwrap()).map(|k| k.to_string());
        assert_eq!(
            fq("widgets.v1.example.com").as_deref(),
            Some("widgets.v1.example.com")
        );
        assert_eq!(
            fq("example.com/v1/widgets").as_deref(),
            Some("widgets.v1.example.com")
        );
        assert_eq!(fq("pods.v1").as_deref(), Some("pods.v1"));
        assert_eq!(fq("v1/pods").as_deref(), Some("pods.v1"));
        assert_eq!(fq("widgets.example.com"), None, "no version");
        assert_eq!(fq("wdg"), None);
        assert_eq!(fq("Widget.v1.example.com"), None, "a kind is no plural");
    }

    #[test]
    fn multi_namespace_continue_tokens_round_trip() {
        let t = multi_token(2, "12345", "eyJ2Ijoi:bWV0YS5rOHMuaW8vdjEi");
        assert_eq!(
            parse_multi_token(&t),
            Some((2, "12345".into(), "eyJ2Ijoi:bWV0YS5rOHMuaW8vdjEi".into()))
        );
        assert_eq!(
            parse_multi_token(&multi_token(0, "7", "")),
            Some((0, "7".into(), String::new()))
        );
        assert_eq!(parse_multi_token("eyJ2IjoibWV0YS5rOHMuaW8vdjEi"), None);
        assert_eq!(parse_multi_token("kdi-ns:x:1:"), None);
    }

    #[test]
    fn namespaces_only_and_options_identity() {
        assert_eq!(Namespaces::only(Vec::<String>::new()), Namespaces::All);
        assert_eq!(Namespaces::only(["b", "a"]).describe(), "a, b");
        let a = InformerOptions::default().strip_managed_fields();
        let b = InformerOptions::default().strip_managed_fields();
        let (ta, tb) = (a.transform.unwrap(), b.transform.unwrap());
        assert!(
            Arc::ptr_eq(&ta, &tb),
            "the shared transform lets informers be shared"
        );
        assert_eq!(non_empty(&Some("  ".into())), None);
        assert_eq!(non_empty(&Some(" app=x ".into())).as_deref(), Some("app=x"));
    }

    #[test]
    fn metadata_objects_keep_the_resource_kind() {
        let resource = ApiResource {
            group: String::new(),
            version: "v1".into(),
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            plural: "configmaps".into(),
        };
        let meta = crate::wire::decode_object(
            &serde_json::json!({
                "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
                "metadata": { "name": "a", "namespace": "x", "labels": { "k": "v" } }
            })
            .to_string(),
        )
        .unwrap();
        let obj = from_metadata(meta, &resource);
        assert_eq!(obj.types.as_ref().unwrap().kind, "ConfigMap");
        assert_eq!(obj.types.as_ref().unwrap().api_version, "v1");
        assert_eq!(obj.metadata.labels.unwrap()["k"], "v");
        assert_eq!(obj.data, serde_json::json!({}));
    }

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
