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
//!   is not installed yet, and notice one that is deleted.
//! - **Subresources are not resources.** `pods/status` and `deployments/scale`
//!   never appear in the list.
//!
//! ```no_run
//! # async fn demo(client: kube_client::Client) -> Result<(), Box<dyn std::error::Error>> {
//! use kube_dynamic_informer::discovery::DiscoveryCache;
//! use kube_dynamic_informer::resource::ResourceName;
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

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use kube_client::Client;
use kube_core::discovery::v2::APIGroupDiscoveryList;
use kube_core::{ApiResource, DynamicObject};
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::informer::{InformerConfig, Scope, SharedInformer};
use crate::reflector::ResourceAvailability;
use crate::resource::{KnownResource, ResourceError, ResourceKey, ResourceName};

/// Errors of discovery.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiscoveryError {
    /// A discovery document every answer depends on (`/api` or `/apis`)
    /// could not be read.
    #[error("reading API discovery {path}: {source}")]
    Request {
        /// The path requested.
        path: String,
        /// The client's error.
        #[source]
        source: kube_client::Error,
    },
    /// The name matches no served resource, or several; `unavailable` lists
    /// the group versions that could not be discovered and might have held
    /// it.
    #[error("{source}{}", unavailable_note(.unavailable))]
    Resolve {
        /// What resolution found.
        #[source]
        source: ResourceError,
        /// Group versions that could not be discovered (an aggregated API that
        /// is down) and that the name might refer to.
        unavailable: Vec<UnavailableGroupVersion>,
    },
}

fn unavailable_note(unavailable: &[UnavailableGroupVersion]) -> String {
    if unavailable.is_empty() {
        return String::new();
    }
    let list: Vec<String> = unavailable.iter().map(ToString::to_string).collect();
    format!(" (not discovered, so not searched: {})", list.join("; "))
}

/// A group version that discovery could not read: an aggregated API server
/// that is down, or that answered with an error.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UnavailableGroupVersion {
    /// API group; empty for the core group.
    pub group: String,
    /// Version.
    pub version: String,
    /// What went wrong, as the server or the client said it.
    pub reason: String,
}

impl UnavailableGroupVersion {
    /// `group/version`, or `version` for the core group.
    #[must_use]
    pub fn group_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

impl fmt::Display for UnavailableGroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.group_version(), self.reason)
    }
}

/// Everything one discovery pass found.
#[derive(Debug, Clone, Default)]
pub struct DiscoverySnapshot {
    resources: Vec<KnownResource>,
    verbs: HashMap<ResourceKey, Vec<String>>,
    unavailable: Vec<UnavailableGroupVersion>,
    aggregated: bool,
    generation: u64,
}

impl DiscoverySnapshot {
    /// Every served resource, once per served version; no subresources.
    #[must_use]
    pub fn resources(&self) -> &[KnownResource] {
        &self.resources
    }

    /// The resource with exactly this key, if served.
    #[must_use]
    pub fn get(&self, key: &ResourceKey) -> Option<&KnownResource> {
        self.resources
            .iter()
            .find(|r| r.plural == key.resource && r.version == key.version && r.group == key.group)
    }

    /// The verbs the resource supports (`list`, `watch`, ...); empty when it
    /// is not served.
    #[must_use]
    pub fn verbs(&self, key: &ResourceKey) -> &[String] {
        self.verbs.get(key).map_or(&[], Vec::as_slice)
    }

    /// Whether the resource can be listed and watched, as an informer needs.
    #[must_use]
    pub fn is_watchable(&self, key: &ResourceKey) -> bool {
        let verbs = self.verbs(key);
        verbs.iter().any(|v| v == "list") && verbs.iter().any(|v| v == "watch")
    }

    /// Group versions that could not be discovered.
    #[must_use]
    pub fn unavailable(&self) -> &[UnavailableGroupVersion] {
        &self.unavailable
    }

    /// Whether the snapshot came from aggregated discovery.
    #[must_use]
    pub fn is_aggregated(&self) -> bool {
        self.aggregated
    }

    /// Counts discovery passes: 0 before the first, then 1, 2, ...
    #[must_use]
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether discovery ran at least once.
    #[must_use]
    pub fn is_loaded(&self) -> bool {
        self.generation > 0
    }

    /// Whether the resource is served now, and if not, why.
    #[must_use]
    pub fn availability(&self, key: &ResourceKey) -> ResourceAvailability {
        if !self.is_loaded() {
            return ResourceAvailability::NotServed {
                reason: format!("{key}: discovery has not run yet"),
            };
        }
        if let Some(known) = self.get(key) {
            if !self.is_watchable(key) {
                return ResourceAvailability::NotServed {
                    reason: format!(
                        "{key} is served but cannot be listed and watched (verbs: {})",
                        self.verbs(key).join(", ")
                    ),
                };
            }
            return ResourceAvailability::Served {
                resource: known.api_resource(),
                scope: if known.namespaced {
                    Scope::Namespaced
                } else {
                    Scope::Cluster
                },
            };
        }
        let reason = match self
            .unavailable
            .iter()
            .find(|u| u.group == key.group && u.version == key.version)
        {
            Some(u) => format!(
                "{key} is not served: API group version {} could not be discovered: {}",
                u.group_version(),
                u.reason
            ),
            None => format!("{key} is not served by the API server (not in discovery)"),
        };
        ResourceAvailability::NotServed { reason }
    }

    /// The unavailable group versions a name could refer to.
    fn unavailable_for(&self, name: &ResourceName) -> Vec<UnavailableGroupVersion> {
        self.unavailable
            .iter()
            .filter(|u| {
                name.candidates().iter().any(|c| {
                    c.group
                        .as_ref()
                        .is_none_or(|g| g.eq_ignore_ascii_case(&u.group))
                        && c.version
                            .as_ref()
                            .is_none_or(|v| v.eq_ignore_ascii_case(&u.version))
                })
            })
            .cloned()
            .collect()
    }
}

/// How a [`DiscoveryCache`] reads and refreshes.
#[derive(Debug, Clone)]
pub struct DiscoveryConfig {
    /// Try aggregated discovery first, falling back to the per-group
    /// endpoints when the server does not offer it. Default: true (kubectl
    /// and client-go do the same since Kubernetes 1.30).
    pub aggregated: bool,
    /// Group versions read at once on the per-group path. Default: 8.
    pub concurrency: usize,
    /// On the per-group path, how long one group version may take before it
    /// is reported unavailable. kube-client retries 503 answers (what an
    /// aggregated API that is down gives) for minutes by default; this keeps
    /// one broken API from holding up discovery of the rest. Default: 10 s.
    pub group_timeout: Duration,
    /// While [`DiscoveryCache::keep_current`] runs, also refresh on this
    /// period, for changes no watched object announces (or when the CRD and
    /// APIService watches are forbidden). `None` disables it. Default: 5
    /// minutes.
    pub periodic_refresh: Option<Duration>,
    /// After a CRD change, how long [`DiscoveryCache::keep_current`] keeps
    /// re-reading discovery until it agrees with the CRDs. Default: 30 s.
    pub settle_timeout: Duration,
}

impl Default for DiscoveryConfig {
    fn default() -> Self {
        Self {
            aggregated: true,
            concurrency: 8,
            group_timeout: Duration::from_secs(10),
            periodic_refresh: Some(Duration::from_secs(300)),
            settle_timeout: Duration::from_secs(30),
        }
    }
}

impl DiscoveryConfig {
    /// Whether to try aggregated discovery first.
    #[must_use]
    pub fn aggregated(mut self, enabled: bool) -> Self {
        self.aggregated = enabled;
        self
    }

    /// Sets the periodic refresh (`None` disables it).
    #[must_use]
    pub fn periodic_refresh(mut self, period: Option<Duration>) -> Self {
        self.periodic_refresh = period;
        self
    }
}

struct Inner {
    client: Client,
    config: DiscoveryConfig,
    snapshot: watch::Sender<Arc<DiscoverySnapshot>>,
    /// Held while discovery is read, so concurrent refreshes share one.
    refresh: tokio::sync::Mutex<()>,
    /// Per-resource availability channels, updated on every refresh.
    watchers: Mutex<HashMap<ResourceKey, watch::Sender<ResourceAvailability>>>,
}

/// The discovered resources of one API server, refreshed on demand and, with
/// [`keep_current`](Self::keep_current), as CRDs and aggregated APIs come and
/// go. Cheap to clone; clones share the cache.
#[derive(Clone)]
pub struct DiscoveryCache {
    inner: Arc<Inner>,
}

impl fmt::Debug for DiscoveryCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let snapshot = self.snapshot();
        f.debug_struct("DiscoveryCache")
            .field("generation", &snapshot.generation)
            .field("resources", &snapshot.resources.len())
            .field("unavailable", &snapshot.unavailable)
            .finish_non_exhaustive()
    }
}

impl DiscoveryCache {
    /// An empty cache with the default configuration; the first question
    /// reads discovery.
    #[must_use]
    pub fn new(client: Client) -> Self {
        Self::with_config(client, DiscoveryConfig::default())
    }

    /// An empty cache.
    #[must_use]
    pub fn with_config(client: Client, config: DiscoveryConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                client,
                config,
                snapshot: watch::Sender::new(Arc::new(DiscoverySnapshot::default())),
                refresh: tokio::sync::Mutex::new(()),
                watchers: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// What the last discovery pass found (empty before the first).
    #[must_use]
    pub fn snapshot(&self) -> Arc<DiscoverySnapshot> {
        self.inner.snapshot.borrow().clone()
    }

    /// A receiver that sees every new snapshot.
    #[must_use]
    pub fn subscribe(&self) -> watch::Receiver<Arc<DiscoverySnapshot>> {
        self.inner.snapshot.subscribe()
    }

    /// Reads discovery now (or joins a pass that started after this call).
    ///
    /// # Errors
    /// [`DiscoveryError::Request`] when `/api` or `/apis` cannot be read.
    /// Group versions that fail alone are reported in the snapshot instead.
    pub async fn refresh(&self) -> Result<Arc<DiscoverySnapshot>, DiscoveryError> {
        let seen = self.snapshot().generation;
        self.refresh_after(seen).await
    }

    /// A snapshot newer than generation `seen`: the result of a pass that
    /// started after the caller saw `seen`, either ours or a concurrent one.
    async fn refresh_after(&self, seen: u64) -> Result<Arc<DiscoverySnapshot>, DiscoveryError> {
        let _guard = self.inner.refresh.lock().await;
        let current = self.snapshot();
        if current.generation > seen {
            return Ok(current);
        }
        let mut snapshot = fetch(&self.inner.client, &self.inner.config).await?;
        snapshot.generation = current.generation + 1;
        let snapshot = Arc::new(snapshot);
        self.publish(snapshot.clone());
        Ok(snapshot)
    }

    fn publish(&self, snapshot: Arc<DiscoverySnapshot>) {
        self.inner.snapshot.send_replace(snapshot.clone());
        let mut watchers = self.inner.watchers.lock();
        watchers.retain(|key, tx| {
            if tx.receiver_count() == 0 {
                return false;
            }
            let now = snapshot.availability(key);
            tx.send_if_modified(|cur| {
                if *cur == now {
                    false
                } else {
                    *cur = now;
                    true
                }
            });
            true
        });
    }

    /// The current snapshot, reading discovery first if it never ran.
    async fn loaded(&self) -> Result<(Arc<DiscoverySnapshot>, bool), DiscoveryError> {
        let current = self.snapshot();
        if current.is_loaded() {
            Ok((current, false))
        } else {
            Ok((self.refresh_after(0).await?, true))
        }
    }

    /// The resource `name` designates. A name not found makes discovery be
    /// read again before the answer is "not found".
    ///
    /// # Errors
    /// [`DiscoveryError::Resolve`] for an unknown name (with suggestions and
    /// the group versions that could not be discovered) or an ambiguous one
    /// (with the choices); [`DiscoveryError::Request`].
    pub async fn resolve(&self, name: &ResourceName) -> Result<KnownResource, DiscoveryError> {
        let (snapshot, fresh) = self.loaded().await?;
        match name.resolve(snapshot.resources()) {
            Ok(found) => return Ok(found.clone()),
            Err(ResourceError::NotFound { .. }) if !fresh => {}
            Err(source) => {
                return Err(DiscoveryError::Resolve {
                    unavailable: snapshot.unavailable_for(name),
                    source,
                });
            }
        }
        let snapshot = self.refresh_after(snapshot.generation).await?;
        name.resolve(snapshot.resources())
            .cloned()
            .map_err(|source| DiscoveryError::Resolve {
                unavailable: snapshot.unavailable_for(name),
                source,
            })
    }

    /// The served resource with exactly this key, reading discovery again
    /// when it is not in the cache; `None` when it is not served.
    ///
    /// # Errors
    /// [`DiscoveryError::Request`].
    pub async fn lookup(&self, key: &ResourceKey) -> Result<Option<KnownResource>, DiscoveryError> {
        let (snapshot, fresh) = self.loaded().await?;
        if let Some(found) = snapshot.get(key) {
            return Ok(Some(found.clone()));
        }
        if fresh {
            return Ok(None);
        }
        let snapshot = self.refresh_after(snapshot.generation).await?;
        Ok(snapshot.get(key).cloned())
    }

    /// A channel that says whether `key` is served, updated on every refresh
    /// (only changes are sent). Informers given it wait while the resource
    /// is not served; see [`crate::reflector::ReflectorConfig::availability`].
    #[must_use]
    pub fn availability(&self, key: &ResourceKey) -> watch::Receiver<ResourceAvailability> {
        let mut watchers = self.inner.watchers.lock();
        if let Some(tx) = watchers.get(key) {
            return tx.subscribe();
        }
        let tx = watch::Sender::new(self.snapshot().availability(key));
        let rx = tx.subscribe();
        watchers.insert(key.clone(), tx);
        rx
    }

    /// Keeps the cache current until `cancel` fires: watches
    /// `customresourcedefinitions` and `apiservices` and refreshes when they
    /// change — after a CRD change, again and again (100 ms doubling to 2 s)
    /// until discovery agrees with the CRDs or
    /// [`DiscoveryConfig::settle_timeout`] passes — and on
    /// [`DiscoveryConfig::periodic_refresh`].
    ///
    /// Without permission to list and watch CRDs or APIServices, that watch
    /// backs off (and logs) and the periodic refresh and refresh-on-miss
    /// remain.
    pub async fn keep_current(&self, cancel: CancellationToken) {
        let client = self.inner.client.clone();
        let crds = SharedInformer::new(
            client.clone(),
            crd_resource(),
            Scope::Cluster,
            InformerConfig::default().transform(Arc::new(slim_crd)),
        );
        let services = SharedInformer::new(
            client,
            api_service_resource(),
            Scope::Cluster,
            InformerConfig::default().strip_managed_fields(),
        );
        let (Ok(crds), Ok(services)) = (crds, services) else {
            // Only a namespace or an index can make construction fail.
            return;
        };
        let mut crd_events = Some(crds.events());
        let mut service_events = Some(services.events());
        let stop = cancel.child_token();
        let _stop_informers = stop.clone().drop_guard();
        let _ = crds.start(stop.clone());
        let _ = services.start(stop.clone());
        let mut crd_keys_seen = HashSet::new();
        loop {
            let period = self.inner.config.periodic_refresh;
            let tick = async {
                match period {
                    Some(p) => tokio::time::sleep(p).await,
                    None => futures::future::pending().await,
                }
            };
            let crd_changed = tokio::select! {
                _ = cancel.cancelled() => return,
                e = next_or_pending(&mut crd_events) => e,
                _ = next_or_pending(&mut service_events).map(|_| ()) => false,
                _ = tick => false,
            };
            // Let a burst of events (an initial list, a CRD with several
            // versions) settle into one refresh.
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
            let mut crd_changed = crd_changed;
            crd_changed |= drain(&mut crd_events);
            drain(&mut service_events);
            if crd_changed || crds.has_synced() {
                self.refresh_until_consistent(&crds, &mut crd_keys_seen, &cancel)
                    .await;
            } else if let Err(err) = self.refresh().await {
                tracing::warn!(error = %err, "refreshing discovery failed");
            }
        }
    }

    /// Refreshes until every established CRD's served versions are in
    /// discovery and no deleted CRD's are, or the settle timeout passes.
    async fn refresh_until_consistent(
        &self,
        crds: &SharedInformer,
        crd_keys_seen: &mut HashSet<ResourceKey>,
        cancel: &CancellationToken,
    ) {
        let deadline = Instant::now() + self.inner.config.settle_timeout;
        let mut delay = Duration::from_millis(100);
        loop {
            let seen = self.snapshot().generation;
            match self.refresh_after(seen).await {
                Ok(snapshot) => {
                    let expected = CrdExpectation::from_store(&crds.store().list());
                    crd_keys_seen.extend(expected.served.iter().cloned());
                    crd_keys_seen.extend(expected.not_served.iter().cloned());
                    match expected.mismatch(&snapshot, crd_keys_seen) {
                        None => return,
                        Some(m) if Instant::now() >= deadline => {
                            tracing::warn!(mismatch = %m, "discovery still disagrees with the CRDs; giving up until the next change");
                            return;
                        }
                        Some(m) => tracing::debug!(mismatch = %m, "discovery not settled yet"),
                    }
                }
                Err(err) if Instant::now() >= deadline => {
                    tracing::warn!(error = %err, "refreshing discovery failed");
                    return;
                }
                Err(err) => tracing::debug!(error = %err, "refreshing discovery failed; retrying"),
            }
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(delay) => {}
            }
            delay = (delay * 2).min(Duration::from_secs(2));
        }
    }
}

/// The next event of a stream, or never once it ended. True for an event.
async fn next_or_pending(stream: &mut Option<crate::informer::EventStream>) -> bool {
    let Some(s) = stream else {
        return futures::future::pending().await;
    };
    match s.next().await {
        Some(_) => true,
        None => {
            *stream = None;
            futures::future::pending().await
        }
    }
}

/// Takes every event queued now; true if there was one.
fn drain(stream: &mut Option<crate::informer::EventStream>) -> bool {
    let Some(s) = stream else {
        return false;
    };
    let mut any = false;
    while let Some(Some(_)) = s.next().now_or_never() {
        any = true;
    }
    any
}

/// What the CRDs say discovery should hold.
struct CrdExpectation {
    /// Served versions of established CRDs.
    served: HashSet<ResourceKey>,
    /// Versions of CRDs that are not established, or not served.
    not_served: HashSet<ResourceKey>,
    /// Versions of CRDs being deleted: either way is fine.
    terminating: HashSet<ResourceKey>,
}

impl CrdExpectation {
    fn from_store(crds: &[Arc<DynamicObject>]) -> Self {
        let mut this = CrdExpectation {
            served: HashSet::new(),
            not_served: HashSet::new(),
            terminating: HashSet::new(),
        };
        for crd in crds {
            let spec = &crd.data["spec"];
            let (Some(group), Some(plural)) =
                (spec["group"].as_str(), spec["names"]["plural"].as_str())
            else {
                continue;
            };
            let established = crd.data["status"]["conditions"]
                .as_array()
                .is_some_and(|conds| {
                    conds
                        .iter()
                        .any(|c| c["type"] == "Established" && c["status"] == "True")
                });
            let terminating = crd.metadata.deletion_timestamp.is_some();
            for version in spec["versions"].as_array().into_iter().flatten() {
                let Some(name) = version["name"].as_str() else {
                    continue;
                };
                let key = ResourceKey::new(group, name, plural);
                if terminating {
                    this.terminating.insert(key);
                } else if established && version["served"].as_bool() == Some(true) {
                    this.served.insert(key);
                } else {
                    this.not_served.insert(key);
                }
            }
        }
        this
    }

    /// A description of the first disagreement with `snapshot`, if any.
    /// `seen` holds every key any CRD ever had: those of CRDs now gone must
    /// have left discovery.
    fn mismatch(
        &self,
        snapshot: &DiscoverySnapshot,
        seen: &HashSet<ResourceKey>,
    ) -> Option<String> {
        if let Some(missing) = self.served.iter().find(|k| snapshot.get(k).is_none()) {
            return Some(format!("{missing} is established but not in discovery yet"));
        }
        seen.iter()
            .filter(|k| !self.served.contains(*k) && !self.terminating.contains(*k))
            .find(|k| snapshot.get(k).is_some())
            .map(|stale| {
                format!("{stale} is still in discovery although its CRD no longer serves it")
            })
    }
}

/// Drops what discovery does not need from a CRD: schemas and managed fields
/// are most of its size.
fn slim_crd(mut crd: DynamicObject) -> DynamicObject {
    crd.metadata.managed_fields = None;
    if let Some(versions) = crd.data["spec"]["versions"].as_array_mut() {
        for v in versions {
            if let Some(v) = v.as_object_mut() {
                v.remove("schema");
                v.remove("additionalPrinterColumns");
            }
        }
    }
    crd
}

fn crd_resource() -> ApiResource {
    ApiResource {
        group: "apiextensions.k8s.io".into(),
        version: "v1".into(),
        api_version: "apiextensions.k8s.io/v1".into(),
        kind: "CustomResourceDefinition".into(),
        plural: "customresourcedefinitions".into(),
    }
}

fn api_service_resource() -> ApiResource {
    ApiResource {
        group: "apiregistration.k8s.io".into(),
        version: "v1".into(),
        api_version: "apiregistration.k8s.io/v1".into(),
        kind: "APIService".into(),
        plural: "apiservices".into(),
    }
}

/// One discovery pass.
async fn fetch(
    client: &Client,
    config: &DiscoveryConfig,
) -> Result<DiscoverySnapshot, DiscoveryError> {
    if config.aggregated {
        match fetch_aggregated(client).await {
            Ok(Some(snapshot)) => return Ok(snapshot),
            Ok(None) => {
                tracing::debug!(
                    "the server does not offer aggregated discovery; reading each group version"
                );
            }
            Err(err) => {
                tracing::debug!(error = %err, "aggregated discovery failed; reading each group version");
            }
        }
    }
    fetch_per_group(client, config.concurrency.max(1), config.group_timeout).await
}

fn request_error(path: &str) -> impl FnOnce(kube_client::Error) -> DiscoveryError + '_ {
    move |source| DiscoveryError::Request {
        path: path.to_owned(),
        source,
    }
}

/// Aggregated discovery (`apidiscovery.k8s.io/v2`); `None` when the server
/// answered with the plain documents instead (which parse as an empty list:
/// the aggregated `/api` always holds the core group).
async fn fetch_aggregated(client: &Client) -> Result<Option<DiscoverySnapshot>, DiscoveryError> {
    let core = client
        .list_core_api_versions_aggregated()
        .await
        .map_err(request_error("/api"))?;
    if core.items.is_empty() {
        return Ok(None);
    }
    let groups = client
        .list_api_groups_aggregated()
        .await
        .map_err(request_error("/apis"))?;
    let mut snapshot = DiscoverySnapshot {
        aggregated: true,
        ..DiscoverySnapshot::default()
    };
    add_aggregated(&mut snapshot, core);
    add_aggregated(&mut snapshot, groups);
    Ok(Some(snapshot))
}

fn add_aggregated(snapshot: &mut DiscoverySnapshot, list: APIGroupDiscoveryList) {
    for group in list.items {
        let group_name = group.metadata.and_then(|m| m.name).unwrap_or_default();
        for (position, version) in group.versions.into_iter().enumerate() {
            let version_name = version.version.unwrap_or_default();
            if version.freshness.as_deref() == Some("Stale") {
                snapshot.unavailable.push(UnavailableGroupVersion {
                    group: group_name.clone(),
                    version: version_name,
                    reason: "its API server did not answer discovery (freshness Stale)".into(),
                });
                continue;
            }
            for r in version.resources {
                let Some(plural) = r.resource.filter(|p| !p.is_empty() && !p.contains('/')) else {
                    continue;
                };
                let known = KnownResource {
                    group: group_name.clone(),
                    version: version_name.clone(),
                    plural,
                    singular: r.singular_resource.unwrap_or_default(),
                    kind: r.response_kind.and_then(|k| k.kind).unwrap_or_default(),
                    short_names: r.short_names,
                    namespaced: r.scope.as_deref() == Some("Namespaced"),
                    // Versions come in order of preference.
                    preferred_version: position == 0,
                };
                snapshot.verbs.insert(known.key(), r.verbs);
                snapshot.resources.push(known);
            }
        }
    }
}

/// The per-group-version documents: `/api`, `/apis`, then each
/// `/api/<v>` and `/apis/<g>/<v>`.
async fn fetch_per_group(
    client: &Client,
    concurrency: usize,
    timeout: Duration,
) -> Result<DiscoverySnapshot, DiscoveryError> {
    let core = client
        .list_core_api_versions()
        .await
        .map_err(request_error("/api"))?;
    let groups = client
        .list_api_groups()
        .await
        .map_err(request_error("/apis"))?;
    // (group, version, preferred)
    let mut targets: Vec<(String, String, bool)> = Vec::new();
    for (i, v) in core.versions.iter().enumerate() {
        targets.push((String::new(), v.clone(), i == 0));
    }
    for g in &groups.groups {
        let preferred = g.preferred_version.as_ref().map(|p| p.version.as_str());
        for v in &g.versions {
            targets.push((
                g.name.clone(),
                v.version.clone(),
                preferred == Some(v.version.as_str()),
            ));
        }
    }
    let results: Vec<_> = futures::stream::iter(targets.into_iter().map(
        |(group, version, preferred)| async move {
            let request = async {
                if group.is_empty() {
                    client.list_core_api_resources(&version).await
                } else {
                    client
                        .list_api_group_resources(&format!("{group}/{version}"))
                        .await
                }
            };
            let list = match tokio::time::timeout(timeout, request).await {
                Ok(Ok(list)) => Ok(list),
                Ok(Err(err)) => Err(err.to_string()),
                Err(_) => Err(format!(
                    "no answer within {timeout:?} (an aggregated API server that is down answers 503, which the client retries)"
                )),
            };
            (group, version, preferred, list)
        },
    ))
    .buffered(concurrency)
    .collect()
    .await;

    let mut snapshot = DiscoverySnapshot::default();
    for (group, version, preferred, list) in results {
        let list = match list {
            Ok(list) => list,
            Err(reason) => {
                snapshot.unavailable.push(UnavailableGroupVersion {
                    group,
                    version,
                    reason,
                });
                continue;
            }
        };
        for r in list.resources {
            if r.name.is_empty() || r.name.contains('/') {
                continue;
            }
            let known = KnownResource {
                group: group.clone(),
                version: version.clone(),
                plural: r.name,
                singular: r.singular_name,
                kind: r.kind,
                short_names: r.short_names.unwrap_or_default(),
                namespaced: r.namespaced,
                preferred_version: preferred,
            };
            snapshot.verbs.insert(known.key(), r.verbs);
            snapshot.resources.push(known);
        }
    }
    Ok(snapshot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn aggregated(doc: serde_json::Value) -> DiscoverySnapshot {
        let mut snapshot = DiscoverySnapshot {
            generation: 1,
            ..DiscoverySnapshot::default()
        };
        add_aggregated(&mut snapshot, serde_json::from_value(doc).unwrap());
        snapshot
    }

    fn sample() -> DiscoverySnapshot {
        aggregated(json!({
            "kind": "APIGroupDiscoveryList",
            "apiVersion": "apidiscovery.k8s.io/v2",
            "items": [
                { "metadata": { "name": "apps" }, "versions": [
                    { "version": "v1", "resources": [{
                        "resource": "deployments",
                        "responseKind": { "group": "", "version": "", "kind": "Deployment" },
                        "scope": "Namespaced", "singularResource": "deployment",
                        "verbs": ["get", "list", "watch"], "shortNames": ["deploy"],
                        "subresources": [{ "subresource": "scale", "verbs": ["get"] }]
                    }]},
                    { "version": "v1beta1", "resources": [{
                        "resource": "deployments",
                        "responseKind": { "kind": "Deployment" },
                        "scope": "Namespaced", "singularResource": "deployment",
                        "verbs": ["list", "watch"]
                    }]}
                ]},
                { "metadata": { "name": "authentication.k8s.io" }, "versions": [
                    { "version": "v1", "resources": [{
                        "resource": "tokenreviews", "responseKind": { "kind": "TokenReview" },
                        "scope": "Cluster", "singularResource": "tokenreview", "verbs": ["create"]
                    }]}
                ]},
                { "metadata": { "name": "metrics.k8s.io" }, "versions": [
                    { "version": "v1beta1", "freshness": "Stale" }
                ]}
            ]
        }))
    }

    #[test]
    fn aggregated_documents_become_known_resources() {
        let s = sample();
        let keys: Vec<String> = s.resources().iter().map(|r| r.key().to_string()).collect();
        assert_eq!(
            keys,
            [
                "deployments.v1.apps",
                "deployments.v1beta1.apps",
                "tokenreviews.v1.authentication.k8s.io"
            ]
        );
        let d = &s.resources()[0];
        assert_eq!(d.kind, "Deployment");
        assert_eq!(d.singular, "deployment");
        assert_eq!(d.short_names, ["deploy"]);
        assert!(d.namespaced && d.preferred_version);
        assert!(!s.resources()[1].preferred_version);
        assert!(!s.resources()[2].namespaced);
        assert_eq!(
            s.unavailable(),
            [UnavailableGroupVersion {
                group: "metrics.k8s.io".into(),
                version: "v1beta1".into(),
                reason: "its API server did not answer discovery (freshness Stale)".into()
            }]
        );
    }

    #[test]
    fn availability_says_why() {
        let s = sample();
        let deploy = ResourceKey::new("apps", "v1", "deployments");
        match s.availability(&deploy) {
            ResourceAvailability::Served { resource, scope } => {
                assert_eq!(resource.kind, "Deployment");
                assert_eq!(resource.api_version, "apps/v1");
                assert_eq!(scope, Scope::Namespaced);
            }
            other => panic!("{other:?}"),
        }
        let reason = |key: ResourceKey| match s.availability(&key) {
            ResourceAvailability::NotServed { reason } => reason,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            reason(ResourceKey::new("example.com", "v1", "widgets")),
            "widgets.v1.example.com is not served by the API server (not in discovery)"
        );
        assert_eq!(
            reason(ResourceKey::new("metrics.k8s.io", "v1beta1", "pods")),
            "pods.v1beta1.metrics.k8s.io is not served: API group version metrics.k8s.io/v1beta1 \
             could not be discovered: its API server did not answer discovery (freshness Stale)"
        );
        assert_eq!(
            reason(ResourceKey::new(
                "authentication.k8s.io",
                "v1",
                "tokenreviews"
            )),
            "tokenreviews.v1.authentication.k8s.io is served but cannot be listed and watched (verbs: create)"
        );
        assert!(
            !DiscoverySnapshot::default()
                .availability(&deploy)
                .is_served()
        );
    }

    #[test]
    fn unavailable_groups_are_named_in_resolution_errors() {
        let s = sample();
        let name = ResourceName::parse("pods.metrics.k8s.io").unwrap();
        assert_eq!(s.unavailable_for(&name).len(), 1);
        let name = ResourceName::parse("deployments.apps").unwrap();
        assert!(s.unavailable_for(&name).is_empty());
        let err = DiscoveryError::Resolve {
            source: ResourceError::NotFound {
                input: "podmetrics".into(),
                suggestions: vec![],
            },
            unavailable: s.unavailable_for(&ResourceName::parse("podmetrics").unwrap()),
        };
        assert_eq!(
            err.to_string(),
            "no resource matches \"podmetrics\" (not discovered, so not searched: \
             metrics.k8s.io/v1beta1: its API server did not answer discovery (freshness Stale))"
        );
    }

    fn crd(
        group: &str,
        plural: &str,
        versions: &[(&str, bool)],
        established: bool,
    ) -> Arc<DynamicObject> {
        let versions: Vec<_> = versions
            .iter()
            .map(|(v, served)| json!({ "name": v, "served": served, "schema": { "big": true } }))
            .collect();
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": { "name": format!("{plural}.{group}") },
                "spec": { "group": group, "names": { "plural": plural }, "versions": versions },
                "status": { "conditions": [{ "type": "Established", "status": if established { "True" } else { "False" } }] }
            }))
            .unwrap(),
        )
    }

    #[test]
    fn crd_expectations_detect_lagging_discovery() {
        let mut snapshot = sample();
        let widgets = crd(
            "example.com",
            "widgets",
            &[("v1", true), ("v2", false)],
            true,
        );
        let e = CrdExpectation::from_store(std::slice::from_ref(&widgets));
        let mut seen: HashSet<ResourceKey> =
            e.served.iter().chain(&e.not_served).cloned().collect();
        assert_eq!(
            e.mismatch(&snapshot, &seen).unwrap(),
            "widgets.v1.example.com is established but not in discovery yet"
        );
        snapshot.resources.push(KnownResource {
            group: "example.com".into(),
            version: "v1".into(),
            plural: "widgets".into(),
            ..KnownResource::default()
        });
        assert_eq!(e.mismatch(&snapshot, &seen), None);
        // The CRD is deleted; discovery still has it.
        let none = CrdExpectation::from_store(&[]);
        assert!(
            none.mismatch(&snapshot, &seen)
                .unwrap()
                .contains("still in discovery")
        );
        seen.clear();
        assert_eq!(none.mismatch(&snapshot, &seen), None);
        // Not established yet: not expected.
        let pending =
            CrdExpectation::from_store(&[crd("example.org", "gadgets", &[("v1", true)], false)]);
        assert!(pending.served.is_empty());
    }

    #[test]
    fn slim_crd_drops_schemas() {
        let slim = slim_crd((*crd("example.com", "widgets", &[("v1", true)], true)).clone());
        assert!(slim.data["spec"]["versions"][0].get("schema").is_none());
        assert_eq!(slim.data["spec"]["versions"][0]["name"], "v1");
    }
}
