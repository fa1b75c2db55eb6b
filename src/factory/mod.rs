//! The informer factory: one shared informer per resource and options, for
//! any resource named at run time.
//!
//! An [`InformerFactory`] hands out [`InformerHandle`]s — an informer and
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
//! - An informer asked for a CRD that is not installed — named by plural
//!   and group (`widgets.example.com`), or fully (`widgets.v1.example.com`,
//!   `example.com/v1/widgets`, a key), since a short name or kind cannot be
//!   known before the CRD exists — reports
//!   [`InformerStatus::Pending`](crate::informer::InformerStatus::Pending)
//!   with the reason, sends no request, and starts within moments of the
//!   CRD being served: named without a version, in the version the group
//!   then prefers. A version that is not served while others of the same
//!   resource are is refused ([`FactoryError::VersionNotServed`], naming
//!   the served ones) rather than waited for.
//! - When a watched CRD is deleted, handlers get the deletes, the informer
//!   reports [`InformerStatus::Gone`](crate::informer::InformerStatus::Gone) and stops requesting — no endless 404
//!   loop. When the CRD is created again, it lists again and carries on.
//! - A resource the client may not list reports the 403 (in the status and
//!   in the sync report, as [`NotSynced::Forbidden`]) and keeps retrying with backoff, so it
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
//! use kube_dynamic_informer::factory::InformerFactory;
//! use kube_dynamic_informer::informer::InformerOptions;
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
//! deployments.informer().add_handler(|e: Event| println!("{} {:?}", e.kind(), e.object().name()));
//!
//! factory.start()?;
//! let report = factory.wait_for_cache_sync(Duration::from_secs(30)).await;
//! for failure in report.failures() {
//!     eprintln!("{failure}"); // pods.v1: forbidden (403), ...
//! }
//! let web = deployments.lister().namespace("shop")?.list("app=web")?;
//! println!("{} web deployments, {} config maps", web.len(), config_maps.lister().list_all().len());
//! factory.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! # Discovery
//!
//! API discovery: which resources the server serves, and what a name the user
//! typed refers to.
//!
//! A [`DiscoveryCache`] reads the server's discovery documents and keeps what
//! it learnt as a list of [`KnownResource`]s (plural, singular, kind, short
//! names, scope, preferred version), against which
//! [`ResourceName::resolve`] picks the resource a name designates. It exists
//! because kube-client's own discovery does not keep singular and short
//! names, and because an informer factory needs more than a one-off answer:
//!
//! - **Aggregated discovery first.** Where the server offers it (Kubernetes
//!   1.30+), the whole API comes in two requests (`/api` and `/apis` with
//!   `Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`).
//!   Otherwise every group version is read from its own endpoint
//!   (`/api/v1`, `/apis/<group>/<version>`), several at a time.
//! - **One broken API does not break the rest.** An aggregated API server that
//!   is down (its group version is `Stale` in aggregated discovery, or its
//!   endpoint answers 503) is left out and reported in
//!   [`DiscoverySnapshot::unavailable`]; everything else is usable. A name
//!   that cannot be resolved mentions the unavailable group versions.
//! - **Refreshed on a miss.** A name that is not found makes the cache read
//!   discovery again before it answers "not found" (as kubectl does).
//!   Concurrent misses share one refresh.
//! - **Kept current.** [`DiscoveryCache::keep_current`] watches
//!   `customresourcedefinitions` and `apiservices` and refreshes when they
//!   change, re-reading until discovery agrees with the CRDs (the API server
//!   publishes a new CRD's discovery a moment after the CRD is established).
//!   [`DiscoveryCache::availability`] turns that into a per-resource
//!   [`ResourceAvailability`] channel, on which informers wait for a CRD that
//!   is not installed yet, and notice one that is deleted;
//!   [`DiscoveryCache::availability_of_name`] does the same for a name
//!   without a version (`widgets.example.com`), and says which version it
//!   designates once served.
//! - **Subresources are not resources.** `pods/status` and `deployments/scale`
//!   never appear in the list.
//!
//! ```no_run
//! # async fn demo(client: kube_client::Client) -> Result<(), Box<dyn std::error::Error>> {
//! use kube_dynamic_informer::factory::DiscoveryCache;
//! use kube_dynamic_informer::vocabulary::ResourceName;
//!
//! let discovery = DiscoveryCache::new(client);
//! let deploy = discovery.resolve(&ResourceName::parse("deploy")?).await?;
//! assert_eq!(deploy.key().to_string(), "deployments.v1.apps");
//! assert!(deploy.namespaced);
//! for down in discovery.snapshot().unavailable() {
//!     eprintln!("not discovered: {down}");
//! }
//! # Ok(()) }
//! ```
//!
//! # Resource patterns
//!
//! Resource patterns: rules that designate resources by group, category or
//! origin instead of by name, evaluated against discovery.
//!
//! Automation is often handed a rule rather than a list: "every CRD of
//! `*.example.com`", "everything in category `qa`", "all namespaced
//! resources except events". A [`ResourcePattern`] is that rule. Evaluated
//! against a [`DiscoverySnapshot`] it gives the resources it designates now
//! ([`ResourcePattern::select`]); a
//! [`ResourceSet`](crate::declarative::resource_set::ResourceSet) evaluates it again at
//! every discovery change, so that informers follow CRDs as they come and go.
//!
//! ## What a pattern selects
//!
//! - The **criteria** `groups` (globs: `*`, `*.example.com`, `apps`; the core
//!   group is `core` or `""`), `categories` (`all`, `qa`, as `kubectl get qa`
//!   reads them) and `customResources` (defined by a
//!   CustomResourceDefinition) narrow each other: a resource must meet every
//!   criterion given.
//! - `include` adds resources by name whatever the criteria say; `exclude`
//!   removes resources by name, also from `include`. A name is a plural,
//!   singular, kind or short name (`events`, `Event`, `deploy`), matching in
//!   every group, or one of those followed by `.` and a group
//!   (`events.events.k8s.io`, `pods.core`).
//! - `scope` keeps only namespaced or only cluster-scoped resources.
//! - Only resources that can be listed and watched are ever selected.
//! - Each resource is selected once, in one version: its group's preferred
//!   version, or `version` when given (then a resource not served in that
//!   version is not selected).
//!
//! ## Example
//!
//! ```
//! use kube_dynamic_informer::factory::{ResourcePattern, ScopeFilter};
//!
//! // "all namespaced resources except events"
//! let pattern = ResourcePattern::default()
//!     .groups(["*"])
//!     .scope(ScopeFilter::Namespaced)
//!     .exclude(["events"]);
//! assert!(pattern.check().is_ok());
//! // The same from a command line: `kdi watch -r '*' --scope namespaced --exclude events`.
//! let crds = ResourcePattern::parse("custom:*.example.com")?.expect("a pattern");
//! assert_eq!(crds.groups, ["*.example.com"]);
//! assert!(crds.custom_resources);
//! # Ok::<(), kube_dynamic_informer::factory::FactoryError>(())
//! ```
//!
//! # Access checks
//!
//! Permission checks: may the client list and watch these resources in
//! these namespaces? Asked of the API server, before watching.
//!
//! A missing permission otherwise shows up only as an informer backing off
//! on 403 Forbidden. Asking first gives a table a person can read (`kdi
//! check --cluster`) and lets a [`ResourceSet`](crate::declarative::resource_set::ResourceSet)
//! leave out what it may not watch, and start it once allowed, instead of
//! retrying a 403.
//!
//! Each question is a `SelfSubjectAccessReview` (`authorization.k8s.io/v1`)
//! for one verb (`list`, `watch`), one resource (group and plural) and one
//! namespace (or all namespaces, or none for a cluster-scoped resource): the
//! server's authorizers answer exactly as they would for the request itself,
//! whatever they are (RBAC, webhooks, node). Every user may create these
//! reviews (the `system:basic-user` role). `SelfSubjectRulesReview` is not
//! used: it lists RBAC rules of one namespace only, and says itself that
//! its answer is incomplete whenever another authorizer (a webhook) takes
//! part, while an access review is the authorizers' own verdict.
//!
//! ```no_run
//! # async fn demo(client: kube_client::Client) {
//! use kube_dynamic_informer::factory::{AccessCheck, AccessTable};
//! use kube_dynamic_informer::vocabulary::ResourceKey;
//! use kube_dynamic_informer::vocabulary::Namespaces;
//!
//! let checks = [
//!     AccessCheck::new(ResourceKey::new("", "v1", "pods"), true, Namespaces::only(["shop"])),
//!     AccessCheck::new(ResourceKey::new("", "v1", "nodes"), false, Namespaces::All),
//! ];
//! let table = AccessTable::check(&client, &checks).await;
//! for row in &table.rows {
//!     println!("{} {} list={} watch={}", row.resource, row.namespace_label(), row.list, row.watch);
//! }
//! # }
//! ```

pub(crate) mod access;
pub(crate) mod discovery;
mod error;
mod for_pattern;
mod handle;
mod lifecycle;
pub(crate) mod pattern;
mod resolve;
mod resource_ref;
mod sync;

use lifecycle::{start_entry, stop_entries};

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kube_client::Client;
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use access::{AccessCheck, AccessRow, AccessTable, Allowed, Verdict};
pub use discovery::{
    DiscoveryCache, DiscoveryConfig, DiscoverySnapshot, GroupPlurals, UnavailableGroupVersion,
};
pub use error::FactoryError;
pub use handle::InformerHandle;
pub use pattern::{CustomResources, ResourcePattern, ScopeFilter};
pub use resolve::Resolution;
use resolve::Resolved;
pub use resource_ref::ResourceRef;
#[cfg(feature = "config")]
pub(crate) use sync::wait_one as wait_one_informer;
pub use sync::{CacheSyncReport, SyncReport, SyncResult};

use crate::cache::lister::Lister;
use crate::informer::options::{CacheOptions, InformerOptions, WatchOptions, WhenNotServed};
use crate::informer::{InformerError, NotSynced, SharedInformer, SyncPolicy, WrittenObject};
use crate::vocabulary::VocabularyError;
use crate::vocabulary::resource::{KnownResource, ResourceKey, ResourceName};
use crate::vocabulary::scope::{Namespaces, ResourceAvailability, Scope};
use crate::vocabulary::selector::{Selector, validate_field_selector};
use crate::wire::list_watch::ApiListWatch;
use resource_ref::{fully_qualified, plural_and_group};

/// Sleeps for `wait`, or forever without one.
pub(crate) async fn sleep_or_never(wait: Option<Duration>) {
    match wait {
        Some(wait) => tokio::time::sleep(wait).await,
        None => futures::future::pending().await,
    }
}

struct Entry {
    informer: InformerHandle,
    /// What resolution knew of the resource (a placeholder when pending).
    known: KnownResource,
    cancel: CancellationToken,
    handle: Option<JoinHandle<()>>,
}

/// What requests for one resource must agree on to share an informer.
type SharingKey = (WatchOptions, CacheOptions, bool);

#[derive(Default)]
struct FactoryState {
    started: bool,
    shut_down: bool,
    /// Whether `start` leaves discovery as it is (see
    /// [`InformerFactory::follow_discovery`]).
    discovery_fixed: bool,
    entries: HashMap<(ResourceKey, SharingKey), Entry>,
    discovery_task: Option<JoinHandle<()>>,
}

impl FactoryState {
    /// The informer that serves a request for `map_key` (a resource and
    /// the options that make its cache): the one asked for with that key,
    /// the one asked for by the same `plural.group` name (`waiting_key`)
    /// while it was not served, or one asked for by another name before
    /// the resource was served, which serves this resource now.
    fn shared(
        &self,
        map_key: &(ResourceKey, SharingKey),
        waiting_key: Option<ResourceKey>,
    ) -> Option<InformerHandle> {
        let (key, options) = map_key;
        self.entries
            .get(map_key)
            .or_else(|| waiting_key.and_then(|w| self.entries.get(&(w, options.clone()))))
            .or_else(|| {
                self.entries
                    .iter()
                    .find(|((_, o), e)| o == options && e.informer.resource() == *key)
                    .map(|(_, e)| e)
            })
            .map(|e| e.informer.clone())
    }
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
#[doc(alias = "DynamicSharedInformerFactory")]
#[doc(alias = "SharedInformerFactory")]
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
    /// configured with [`crate::factory::discovery::DiscoveryConfig`]). The factory
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

    /// The client the factory's informers use.
    #[must_use]
    pub fn client(&self) -> &Client {
        &self.inner.client
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
    pub fn informers(&self) -> Vec<InformerHandle> {
        let mut all: Vec<InformerHandle> = self
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

    /// Stops this one informer (not the others of its resource) and waits
    /// until it has stopped; its cache is freed once no [`InformerHandle`]
    /// handle refers to it. False when the factory no longer holds it.
    pub async fn remove_informer(&self, informer: &InformerHandle) -> bool {
        self.remove_entries(|_, e| e.informer == *informer).await > 0
    }

    /// Stops the informers `picked` picks and waits until they have
    /// stopped; says how many there were.
    async fn remove_entries(
        &self,
        picked: impl FnMut(&(ResourceKey, SharingKey), &mut Entry) -> bool,
    ) -> usize {
        let removed: Vec<Entry> = self
            .inner
            .state
            .lock()
            .entries
            .extract_if(picked)
            .map(|(_, e)| e)
            .collect();
        let count = removed.len();
        stop_entries(removed).await;
        count
    }

    /// The informer for `resource` with the factory's options; the same one
    /// every time. Started at once if the factory is.
    ///
    /// `resource` is a name in any form [`ResourceName`] accepts, resolved
    /// through discovery (read again if the name is unknown), or a
    /// [`ResourceKey`] / `GroupVersionResource`. A resource that is not
    /// served yet — a CRD about to be installed — can be asked for by key, by
    /// a fully qualified name (`widgets.v1.example.com`,
    /// `example.com/v1/widgets`) or by plural and group
    /// (`widgets.example.com`): its informer reports
    /// [`InformerStatus::Pending`](crate::informer::InformerStatus::Pending) until the resource is served, then
    /// lists the version named, or else the one the group prefers. Its
    /// [`InformerHandle::resource`] is then the key asked for, with an
    /// empty version when none was named.
    ///
    /// # Errors
    /// [`FactoryError::Name`], [`FactoryError::Discovery`] (unknown or
    /// ambiguous names, with suggestions or choices),
    /// [`FactoryError::VersionNotServed`], [`FactoryError::NotWatchable`],
    /// [`FactoryError::Selector`], [`FactoryError::ShutDown`].
    pub async fn for_resource(
        &self,
        resource: impl Into<ResourceRef>,
    ) -> Result<InformerHandle, FactoryError> {
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
    /// [`FactoryError::ClusterScoped`] when `customize` restricts
    /// namespaces of a cluster-scoped resource.
    pub async fn for_resource_with(
        &self,
        resource: impl Into<ResourceRef>,
        customize: impl FnOnce(InformerOptions) -> InformerOptions,
    ) -> Result<InformerHandle, FactoryError> {
        if self.inner.state.lock().shut_down {
            return Err(FactoryError::ShutDown);
        }
        let named = resource.into().parse()?;
        // The key of an informer that waits for this name, if it can.
        let waiting_key = named.as_ref().ok().and_then(plural_and_group);
        let resolved = self.resolve_named(named).await?;
        let (key, known) = match &resolved {
            Resolved::Served(known) => (known.key(), Some(known.clone())),
            Resolved::AwaitKey(key) | Resolved::AwaitName(key, _) => (key.clone(), None),
        };
        if let Some(known) = &known {
            self.check_watchable(known)?;
        }
        let (options, per_resource_namespaces) =
            self.request_options(&key, known.as_ref(), customize)?;
        let availability = match &resolved {
            Resolved::AwaitName(_, name) => self.inner.discovery.availability_of_name(name),
            _ => self.inner.discovery.availability(&key),
        };
        if let ResourceAvailability::NotServed { reason } = &*availability.borrow()
            && options.when_not_served != WhenNotServed::Wait
        {
            return Err(FactoryError::NotServed {
                resource: key,
                reason: reason.clone(),
                when: options.when_not_served,
            });
        }

        let mut state = self.inner.state.lock();
        if state.shut_down {
            return Err(FactoryError::ShutDown);
        }
        // Requests that would build the same cache share one informer.
        let map_key = (key.clone(), options.sharing_key());
        if let Some(shared) = state.shared(&map_key, waiting_key) {
            return Ok(shared);
        }
        let (handle, known) =
            self.new_informer(key, known, options, availability, per_resource_namespaces);
        let mut entry = Entry {
            informer: handle.clone(),
            known,
            cancel: self.inner.cancel.child_token(),
            handle: None,
        };
        if state.started {
            start_entry(&mut entry);
        }
        state.entries.insert(map_key, entry);
        Ok(handle)
    }

    /// A new informer of `key` with `options`, following `availability`,
    /// and the resource as the factory knows it (from discovery, or from
    /// the key while not served).
    fn new_informer(
        &self,
        key: ResourceKey,
        known: Option<KnownResource>,
        options: InformerOptions,
        availability: tokio::sync::watch::Receiver<ResourceAvailability>,
        per_resource_namespaces: bool,
    ) -> (InformerHandle, KnownResource) {
        let lw = ApiListWatch::with_availability(self.inner.client.clone(), availability.clone())
            .namespaces_inherited(!per_resource_namespaces);
        let lw = options.list_watch(lw);
        let known = known.unwrap_or_else(|| KnownResource {
            group: key.group.clone(),
            version: key.version.clone(),
            plural: key.resource.clone(),
            preferred_version: true,
            ..KnownResource::default()
        });
        let api_resource = availability
            .borrow()
            .served()
            .map_or_else(|| known.api_resource(), |(resource, _)| resource.clone());
        let watched = options.watch.namespaces.clone();
        let informer = SharedInformer::with_list_watch(lw, api_resource, options);
        let lister = Lister::discovered(informer.store(), key.clone(), availability.clone())
            .watching(watched);
        let handle = InformerHandle {
            id: self.inner.next_id.fetch_add(1, Ordering::Relaxed),
            resource: key,
            lister,
            informer,
            availability,
            client: self.inner.client.clone(),
        };
        (handle, known)
    }

    /// The options of a request for `key`: the factory's, as `customize`
    /// changes them, checked. A namespace restriction of the request's own
    /// on a cluster-scoped resource is an error; the factory-wide one does
    /// not apply to it. Also says whether the namespaces are the request's
    /// own.
    fn request_options(
        &self,
        key: &ResourceKey,
        known: Option<&KnownResource>,
        customize: impl FnOnce(InformerOptions) -> InformerOptions,
    ) -> Result<(InformerOptions, bool), FactoryError> {
        let mut options = customize(self.inner.defaults.clone()).normalized();
        let per_resource_namespaces =
            options.watch.namespaces != self.inner.defaults.watch.namespaces;
        if known.is_some_and(|k| !k.namespaced) {
            if per_resource_namespaces {
                Scope::Cluster
                    .check(key, &options.watch.namespaces)
                    .map_err(FactoryError::ClusterScoped)?;
            } else {
                options.watch.namespaces = Namespaces::All;
            }
        }
        let selector_error = |source| FactoryError::Selector {
            resource: key.clone(),
            source: Box::new(source),
        };
        if let Some(s) = &options.watch.label_selector {
            Selector::parse(s).map_err(selector_error)?;
        }
        if let Some(s) = &options.watch.field_selector {
            validate_field_selector(s).map_err(selector_error)?;
        }
        Ok((options, per_resource_namespaces))
    }

    /// Refuses a served resource that cannot be listed and watched.
    fn check_watchable(&self, known: &KnownResource) -> Result<(), FactoryError> {
        let key = known.key();
        let snapshot = self.inner.discovery.snapshot();
        if snapshot.get(&key).is_some() && !snapshot.is_watchable(&key) {
            return Err(FactoryError::NotWatchable {
                verbs: snapshot.verbs(&key).to_vec(),
                resource: key,
            });
        }
        Ok(())
    }

    /// Waits until every informer's cache has synced, or `timeout` passes,
    /// and says for each why it did not: a [`FactoryError::NotSynced`]
    /// with the informer layer's [`NotSynced`] (forbidden, unauthorized,
    /// not served, gone, a server error, no answer, still listing).
    #[doc(alias = "WaitForCacheSync")]
    pub async fn wait_for_cache_sync(&self, timeout: Duration) -> CacheSyncReport {
        self.wait_for_cache_sync_with(timeout, SyncPolicy::KeepWaiting)
            .await
    }

    /// [`wait_for_cache_sync`](Self::wait_for_cache_sync) under `policy`:
    /// with [`SyncPolicy::GiveUpWhenRefused`], the first informer the server
    /// refuses (403, 401) ends the wait at once rather than at the timeout,
    /// as a one-shot reader wants: the others are reported as they are then.
    pub async fn wait_for_cache_sync_with(
        &self,
        timeout: Duration,
        policy: SyncPolicy,
    ) -> CacheSyncReport {
        sync::wait_all(self.informers(), timeout, policy).await
    }

    /// Stops the informers of `resource` (all option sets) and waits until
    /// they have stopped; their caches are freed once no
    /// [`InformerHandle`] handle refers to them. Returns how many were
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
        Ok(self
            .remove_entries(|(k, _), e| *k == key || e.informer.resource() == key)
            .await)
    }

    /// Waits until every informer of this factory that caches `object` (its
    /// apiVersion and kind, its namespace) reflects it: `object` is what the
    /// server returned from a write, a [`DynamicObject`](kube_core::DynamicObject) or a typed object
    /// (see [`WrittenObject`]). See
    /// [`SharedInformer::wait_for_resource_version`](crate::informer::SharedInformer::wait_for_resource_version).
    /// Returns how many informers were waited for.
    ///
    /// # Errors
    /// [`InformerError::NotCached`] when no informer caches such objects, or
    /// the first informer's error.
    pub async fn wait_for_object(
        &self,
        object: &impl WrittenObject,
        timeout: Duration,
    ) -> Result<usize, InformerError> {
        let (api_version, kind) = object
            .api_version_and_kind()
            .map(|(v, k)| (v.into_owned(), k.into_owned()))
            .unwrap_or_default();
        let namespace = object.namespace().map(str::to_owned);
        let informers: Vec<InformerHandle> = self
            .informers()
            .into_iter()
            .filter(|gi| {
                let resource = gi.informer().resource();
                let watched = match (&gi.options().watch.namespaces, &namespace) {
                    (Namespaces::All, _) | (_, None) => true,
                    (Namespaces::Only(set), Some(ns)) => set.contains(ns),
                };
                resource.api_version == api_version && resource.kind == kind && watched
            })
            .collect();
        if informers.is_empty() {
            return Err(InformerError::NotCached {
                object_api_version: api_version,
                object_kind: kind,
                namespace,
            });
        }
        let waits = informers
            .iter()
            .map(|gi| gi.informer().wait_for_object(object, timeout));
        for result in futures::future::join_all(waits).await {
            result?;
        }
        Ok(informers.len())
    }
}
