//! API discovery: which resources the server serves, and what a name the user
//! typed refers to.
//!
//! The [layer docs](crate::factory) say more.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::FutureExt;
use kube_client::Client;
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::cache::transform::Transform;
use crate::informer::options::InformerOptions;
use crate::informer::{HandlerOptions, SharedInformer};
use crate::vocabulary::resource::{KnownResource, ResourceKey, ResourceName};
use crate::vocabulary::scope::{ResourceAvailability, Scope};
use crate::vocabulary::setters;
use crate::vocabulary::{VocabularyError, error_chain};

mod fetch;
mod follow;
mod snapshot;

pub use snapshot::DiscoverySnapshot;

use crate::factory::FactoryError;
use fetch::fetch;
use follow::{
    CrdExpectation, api_service_resource, crd_resource, custom_resources, drain, next_or_pending,
    slim_crd,
};

/// `(group, plural)` pairs.
pub type GroupPlurals = HashSet<(String, String)>;

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
    setters! {
        /// Whether to try aggregated discovery first.
        aggregated(enabled: bool) => enabled;

        /// Sets the periodic refresh (`None` disables it).
        periodic_refresh(period: Option<Duration>) => period;
    }
}

struct Inner {
    client: Client,
    config: DiscoveryConfig,
    snapshot: watch::Sender<Arc<DiscoverySnapshot>>,
    /// Held while discovery is read, so concurrent refreshes share one.
    refresh: tokio::sync::Mutex<()>,
    /// Availability channels, updated on every refresh.
    watchers: Mutex<HashMap<Followed, watch::Sender<ResourceAvailability>>>,
    /// A channel that follows a name left a version that is gone and takes
    /// up another at the next refresh: [`DiscoveryCache::keep_current`]
    /// refreshes soon instead of at its period.
    name_moves: AtomicBool,
    /// `(group, plural)` of the CRDs [`DiscoveryCache::keep_current`] last
    /// saw, copied into each new snapshot.
    custom: Mutex<Option<Arc<GroupPlurals>>>,
}

/// What an availability channel follows.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Followed {
    /// Exactly this group, version and resource.
    Key(ResourceKey),
    /// Whatever the name designates; see [`DiscoverySnapshot::follow_name`].
    Name(ResourceName),
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
                name_moves: AtomicBool::new(false),
                custom: Mutex::new(None),
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
    /// [`FactoryError::Discovery`] when `/api` or `/apis` cannot be read.
    /// Group versions that fail alone are reported in the snapshot instead.
    pub async fn refresh(&self) -> Result<Arc<DiscoverySnapshot>, FactoryError> {
        let seen = self.snapshot().generation;
        self.refresh_after(seen).await
    }

    /// A snapshot newer than generation `seen`: the result of a pass that
    /// started after the caller saw `seen`, either ours or a concurrent one.
    async fn refresh_after(&self, seen: u64) -> Result<Arc<DiscoverySnapshot>, FactoryError> {
        let _guard = self.inner.refresh.lock().await;
        let current = self.snapshot();
        if current.generation > seen {
            return Ok(current);
        }
        let mut snapshot = fetch(&self.inner.client, &self.inner.config).await?;
        snapshot.generation = current.generation + 1;
        snapshot.custom = self.inner.custom.lock().clone();
        let snapshot = Arc::new(snapshot);
        self.publish(snapshot.clone());
        Ok(snapshot)
    }

    fn publish(&self, snapshot: Arc<DiscoverySnapshot>) {
        self.inner.snapshot.send_replace(snapshot.clone());
        let mut watchers = self.inner.watchers.lock();
        watchers.retain(|followed, tx| {
            if tx.receiver_count() == 0 {
                return false;
            }
            let now = match followed {
                Followed::Key(key) => snapshot.availability(key),
                Followed::Name(name) => {
                    let (now, moves) = snapshot.follow_name(name, &tx.borrow());
                    if moves {
                        self.inner.name_moves.store(true, Ordering::Relaxed);
                    }
                    now
                }
            };
            tx.send_if_modified(|cur| {
                let changed = *cur != now;
                *cur = now;
                changed
            });
            true
        });
    }

    /// The current snapshot, reading discovery first if it never ran.
    async fn loaded(&self) -> Result<(Arc<DiscoverySnapshot>, bool), FactoryError> {
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
    /// [`FactoryError::Resolve`] for an unknown name (with suggestions and
    /// the group versions that could not be discovered) or an ambiguous one
    /// (with the choices); [`FactoryError::Discovery`].
    pub async fn resolve(&self, name: &ResourceName) -> Result<KnownResource, FactoryError> {
        let failed = |snapshot: &DiscoverySnapshot, problem| FactoryError::Resolve {
            unavailable: snapshot.unavailable_for(name),
            problem: Box::new(problem),
        };
        let (snapshot, fresh) = self.loaded().await?;
        match name.resolve(snapshot.resources()) {
            Ok(found) => return Ok(found.clone()),
            Err(VocabularyError::NotFound { .. }) if !fresh => {}
            Err(source) => return Err(failed(&snapshot, source)),
        }
        let snapshot = self.refresh_after(snapshot.generation).await?;
        name.resolve(snapshot.resources())
            .cloned()
            .map_err(|source| failed(&snapshot, source))
    }

    /// `(group, plural)` of every resource a CRD defines: what
    /// [`keep_current`](Self::keep_current) last saw of the CRDs, or else
    /// the CRDs listed now.
    ///
    /// # Errors
    /// [`FactoryError::Discovery`] when the CRDs cannot be listed (the
    /// client may not, for instance).
    pub async fn custom_resources(&self) -> Result<Arc<HashSet<(String, String)>>, FactoryError> {
        if let Some(known) = self.inner.custom.lock().clone() {
            return Ok(known);
        }
        let api: kube_client::Api<kube_core::DynamicObject> =
            kube_client::Api::all_with(self.inner.client.clone(), &crd_resource());
        let list = api
            .list_metadata(&kube_client::api::ListParams::default())
            .await
            .map_err(|source| FactoryError::Discovery {
                path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions".into(),
                source,
            })?;
        // Metadata carries only the name, `<plural>.<group>`: the plural
        // has no dots, the group is the rest.
        Ok(Arc::new(
            list.items
                .iter()
                .filter_map(|crd| {
                    let name = crd.metadata.name.as_deref()?;
                    let (plural, group) = name.split_once('.')?;
                    Some((group.to_string(), plural.to_string()))
                })
                .collect(),
        ))
    }

    /// The served resource with exactly this key, reading discovery again
    /// when it is not in the cache; `None` when it is not served.
    ///
    /// # Errors
    /// [`FactoryError::Discovery`].
    pub async fn lookup(&self, key: &ResourceKey) -> Result<Option<KnownResource>, FactoryError> {
        let (mut snapshot, fresh) = self.loaded().await?;
        if !fresh && snapshot.get(key).is_none() {
            snapshot = self.refresh_after(snapshot.generation).await?;
        }
        Ok(snapshot.get(key).cloned())
    }

    /// A channel that says whether `key` is served, updated on every refresh
    /// (only changes are sent). Informers given it wait while the resource
    /// is not served; see [`crate::wire::list_watch::ListWatch::availability`].
    #[must_use]
    pub fn availability(&self, key: &ResourceKey) -> watch::Receiver<ResourceAvailability> {
        let now = self.snapshot().availability(key);
        self.follow(Followed::Key(key.clone()), now)
    }

    /// A channel that says whether the resource `name` designates is served,
    /// and which version: for `widgets.example.com`, the version the group
    /// prefers when the channel first sees it served. The channel keeps that
    /// version while it is served (a running informer's watch never changes
    /// version under it); when it is gone, the channel says not served, and
    /// takes up the version the name then designates at the next refresh.
    /// This is how an informer waits for a CRD named without a version.
    #[must_use]
    pub fn availability_of_name(
        &self,
        name: &ResourceName,
    ) -> watch::Receiver<ResourceAvailability> {
        let now = self.snapshot().availability_of_name(name);
        self.follow(Followed::Name(name.clone()), now)
    }

    fn follow(
        &self,
        followed: Followed,
        now: ResourceAvailability,
    ) -> watch::Receiver<ResourceAvailability> {
        let mut watchers = self.inner.watchers.lock();
        let tx = watchers
            .entry(followed)
            .or_insert_with(|| watch::Sender::new(now));
        tx.subscribe()
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
            InformerOptions::default().transform(Transform::new("slim-crd", slim_crd)),
        );
        let services = SharedInformer::new(
            client,
            api_service_resource(),
            Scope::Cluster,
            InformerOptions::default().strip_managed_fields(),
        );
        let (Ok(crds), Ok(services)) = (crds, services) else {
            // Only a namespace restriction can make construction fail.
            return;
        };
        let mut crd_events = Some(crds.events_with(HandlerOptions::default().name("discovery")));
        let mut service_events =
            Some(services.events_with(HandlerOptions::default().name("discovery")));
        let stop = cancel.child_token();
        let _stop_informers = stop.clone().drop_guard();
        let period = self.inner.config.periodic_refresh;
        for informer in [&crds, &services] {
            let own = stop.child_token();
            stop_when_forbidden(informer, own.clone(), period);
            let _ = informer.start(own);
        }
        let mut crd_keys_seen = HashSet::new();
        loop {
            // A name channel moving to another version waits for a refresh:
            // make it a quick one.
            let period = if self.inner.name_moves.swap(false, Ordering::Relaxed) {
                Some(Duration::from_secs(1))
            } else {
                self.inner.config.periodic_refresh
            };
            let crd_changed = tokio::select! {
                _ = cancel.cancelled() => return,
                e = next_or_pending(&mut crd_events) => e,
                _ = next_or_pending(&mut service_events).map(|_| ()) => false,
                _ = crate::factory::sleep_or_never(period) => false,
            };
            // Let a burst of events (an initial list, a CRD with several
            // versions) settle into one refresh.
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
            let crd_changed = crd_changed | drain(&mut crd_events);
            drain(&mut service_events);
            if crd_changed || crds.has_synced() {
                self.refresh_until_consistent(&crds, &mut crd_keys_seen, &cancel)
                    .await;
            } else if let Err(err) = self.refresh().await {
                tracing::warn!(error = %error_chain(&err), "refreshing discovery failed");
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
            if crds.has_synced() {
                let custom = custom_resources(&crd_objects(crds));
                *self.inner.custom.lock() = Some(Arc::new(custom));
            }
            match self.refresh_after(seen).await {
                Ok(snapshot) => {
                    let expected = CrdExpectation::from_store(&crd_objects(crds));
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
                    tracing::warn!(error = %error_chain(&err), "refreshing discovery failed");
                    return;
                }
                Err(err) => {
                    tracing::debug!(error = %error_chain(&err), "refreshing discovery failed; retrying");
                }
            }
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(delay) => {}
            }
            delay = (delay * 2).min(Duration::from_secs(2));
        }
    }
}

#[cfg(test)]
mod tests;

/// The CustomResourceDefinitions cached by `crds`, decoded.
fn crd_objects(crds: &SharedInformer) -> Vec<Arc<kube_core::DynamicObject>> {
    crds.store()
        .list_all()
        .iter()
        .map(|crd| crd.object())
        .collect()
}

/// Stops `informer` (one of those discovery follows) at its first 403: a
/// user who may not list CRDs or APIServices needs no retries, only one
/// line saying that discovery refreshes on a timer and on a miss instead.
fn stop_when_forbidden(
    informer: &SharedInformer,
    stop: CancellationToken,
    period: Option<Duration>,
) {
    let resource = informer.resource().plural;
    let said = AtomicBool::new(false);
    informer.on_error(move |err| {
        if err.code() != Some(403) || said.swap(true, Ordering::Relaxed) {
            return;
        }
        let refresh = period.map_or_else(
            || "on a miss".to_owned(),
            |p| format!("every {p:?} and on a miss"),
        );
        tracing::info!(
            resource = %resource,
            "not following {resource}: forbidden (403); discovery refreshes {refresh} instead"
        );
        stop.cancel();
    });
}
