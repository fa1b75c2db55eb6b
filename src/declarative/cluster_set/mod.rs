//! Many clusters from one process: the same resources watched in every
//! cluster of a set, with one merged view.
//!
//! The [layer docs](crate::declarative) say more.

mod lister;
mod report;
mod source;
#[cfg(feature = "config")]
pub(crate) use source::{cluster_from_file, read_kubeconfig};
/// `options` for cluster `cluster`: snapshots in a directory of its own
/// (`DIR/cluster-NAME`), as one directory holds one cluster's.
fn in_cluster_dir(mut options: InformerOptions, cluster: &str) -> InformerOptions {
    if let Some(snapshot) = &mut options.snapshot {
        snapshot.dir = snapshot.dir.join(format!("cluster-{cluster}"));
    }
    options
}

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kube_client::{Client, Config};
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use lister::{ClusterLister, ClusterObject};
pub use report::{ClusterSyncReport, ClusterSyncResult};
pub use source::{
    all_contexts, clusters_from_all_contexts, clusters_from_contexts, clusters_from_dir,
};

use crate::cache::index::IndexFn;
use crate::declarative::DeclarativeError;
use crate::factory::{InformerFactory, InformerHandle};
use crate::informer::options::InformerOptions;
use crate::informer::{Event, HandlerOptions, InformerStatus, NotSynced, SyncPolicy};
use crate::vocabulary::error_chain;

/// An event of one cluster, as [`ClusterSet::add_handler`]'s handlers
/// receive it.
#[derive(Clone, Debug)]
pub struct ClusterEvent {
    /// The cluster's name.
    pub cluster: Arc<str>,
    /// The resource as it was named to [`ClusterSet::add_resource`] (or
    /// the name given to [`ClusterSet::add_named_resource`]).
    pub resource: Arc<str>,
    /// The event.
    pub event: Event,
}

/// Where one resource stands in one cluster, from [`ClusterSet::status`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ResourceState {
    /// Not resolved yet: the cluster has not answered discovery, or the name
    /// designates nothing there. Retried with backoff.
    Unresolved {
        /// Whether the cluster could not be reached at all.
        unreachable: bool,
        /// The last error, as text, or `None` before the first try.
        error: Option<String>,
    },
    /// The informer exists; what it is doing.
    Informer(InformerStatus),
}

type SetHandler = Arc<dyn Fn(ClusterEvent) + Send + Sync>;

#[derive(Clone)]
struct ResourceSpec {
    /// What the set calls it: the resource as written, or a name of its own.
    name: Arc<str>,
    /// The resource, as the factory takes it.
    resource: Arc<str>,
    options: Option<InformerOptions>,
}

/// Why a resource is not resolved in a cluster.
#[derive(Clone, Debug)]
struct ResolveFailure {
    /// Why, when it is the cluster's answer (or its silence) rather than a
    /// name that designates nothing there.
    answer: Option<NotSynced>,
    error: String,
}

impl ResolveFailure {
    fn unreachable(&self) -> bool {
        matches!(self.answer, Some(NotSynced::Unreachable { .. }))
    }
}

#[derive(Default)]
struct ClusterResources {
    informers: BTreeMap<Arc<str>, InformerHandle>,
    failures: BTreeMap<Arc<str>, ResolveFailure>,
}

struct ClusterEntry {
    name: Arc<str>,
    factory: InformerFactory,
    cancel: CancellationToken,
    resources: Mutex<ClusterResources>,
    /// Bumped whenever `resources` changes, for waiters.
    changed: watch::Sender<u64>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl ClusterEntry {
    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }
}

#[derive(Default)]
struct SetState {
    started: bool,
    shut_down: bool,
    clusters: BTreeMap<Arc<str>, Arc<ClusterEntry>>,
    resources: Vec<ResourceSpec>,
    handlers: Vec<SetHandler>,
    indexes: Vec<(Arc<str>, String, IndexFn)>,
}

struct SetInner {
    defaults: InformerOptions,
    retry: RetryDelays,
    state: Mutex<SetState>,
    /// Bumped whenever a resource is added, so clusters resolve it.
    resources_changed: watch::Sender<u64>,
    cancel: CancellationToken,
}

impl Drop for SetInner {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// How long a cluster waits before resolving its resources again after a
/// failure: from `initial`, doubling, up to `max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryDelays {
    /// The first wait.
    pub initial: Duration,
    /// The longest wait.
    pub max: Duration,
}

impl Default for RetryDelays {
    /// 500 ms doubling to 30 s (the reflector's backoff ends at 30 s too).
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(500),
            max: Duration::from_secs(30),
        }
    }
}

/// Named clusters watched together; see the [module docs](crate::declarative). Cheap to
/// clone; clones share everything. Dropping the last clone stops every
/// informer.
#[derive(Clone)]
pub struct ClusterSet {
    inner: Arc<SetInner>,
}

impl fmt::Debug for ClusterSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.state.lock();
        f.debug_struct("ClusterSet")
            .field("clusters", &state.clusters.keys().collect::<Vec<_>>())
            .field(
                "resources",
                &state.resources.iter().map(|r| &r.name).collect::<Vec<_>>(),
            )
            .field("started", &state.started)
            .finish_non_exhaustive()
    }
}

impl ClusterSet {
    /// An empty set whose informers use `options` unless a resource says
    /// otherwise.
    #[must_use]
    pub fn new(options: InformerOptions) -> Self {
        Self::with_retry(options, RetryDelays::default())
    }

    /// As [`new`](Self::new), with the delays between attempts to resolve
    /// resources in a cluster that cannot be reached.
    #[must_use]
    pub fn with_retry(options: InformerOptions, retry: RetryDelays) -> Self {
        Self {
            inner: Arc::new(SetInner {
                defaults: options,
                retry,
                state: Mutex::new(SetState::default()),
                resources_changed: watch::Sender::new(0),
                cancel: CancellationToken::new(),
            }),
        }
    }

    /// Watches `resource` in every cluster, present and future, with the
    /// set's options. The name is resolved in each cluster through its own
    /// discovery (any form [`InformerFactory::for_resource`] accepts; name a
    /// CRD that may be missing somewhere as `plural.group`). Adding the same
    /// name again does nothing.
    pub fn add_resource(&self, resource: impl Into<String>) {
        let resource = resource.into();
        self.push_resource(resource.clone(), resource, None);
    }

    /// As [`add_resource`](Self::add_resource), with options of its own.
    pub fn add_resource_with(&self, resource: impl Into<String>, options: InformerOptions) {
        let resource = resource.into();
        self.push_resource(resource.clone(), resource, Some(options));
    }

    /// As [`add_resource_with`](Self::add_resource_with), under a name of
    /// its own (which listers, handlers and reports then use), so that the
    /// same resource can be watched with different options: the informers
    /// of a config file, named there.
    ///
    /// ```
    /// use kube_dynamic_informer::declarative::ClusterSet;
    /// use kube_dynamic_informer::InformerOptions;
    ///
    /// let set = ClusterSet::new(InformerOptions::default());
    /// set.add_named_resource("web-pods", "pods", InformerOptions::default().label_selector("app=web"));
    /// assert_eq!(&*set.resources()[0], "web-pods");
    /// ```
    pub fn add_named_resource(
        &self,
        name: impl Into<String>,
        resource: impl Into<String>,
        options: InformerOptions,
    ) {
        self.push_resource(name.into(), resource.into(), Some(options));
    }

    fn push_resource(&self, name: String, resource: String, options: Option<InformerOptions>) {
        {
            let mut state = self.inner.state.lock();
            if state.resources.iter().any(|r| *r.name == *name) {
                return;
            }
            state.resources.push(ResourceSpec {
                name: name.into(),
                resource: resource.into(),
                options,
            });
        }
        self.inner.resources_changed.send_modify(|n| *n += 1);
    }

    /// The resources, as they were named.
    #[must_use]
    pub fn resources(&self) -> Vec<Arc<str>> {
        let state = self.inner.state.lock();
        state.resources.iter().map(|r| r.name.clone()).collect()
    }

    /// Adds the index `index` to `resource` in every cluster, present and
    /// future; existing objects are indexed at once.
    ///
    /// # Errors
    /// [`crate::informer::InformerError`]'s duplicate-name error from the
    /// first cluster that already has an index of that name (the index is
    /// still added where it is missing).
    pub fn add_index(
        &self,
        resource: &str,
        index: impl Into<String>,
        func: IndexFn,
    ) -> Result<(), crate::informer::InformerError> {
        let index = index.into();
        let mut first_error = None;
        let mut state = self.inner.state.lock();
        for cluster in state.clusters.values() {
            if let Some(gi) = cluster.resources.lock().informers.get(resource)
                && let Err(e) = gi.informer().add_index(index.clone(), func.clone())
                && first_error.is_none()
            {
                first_error = Some(e);
            }
        }
        state.indexes.push((resource.into(), index, func));
        first_error.map_or(Ok(()), Err)
    }

    /// Adds a handler of every resource of every cluster, present and
    /// future. As with [`SharedInformer::add_handler`](crate::informer::SharedInformer::add_handler), it first receives
    /// an Add for every object already cached, then live events; events of
    /// one cluster and resource arrive in order.
    pub fn add_handler(&self, handler: impl Fn(ClusterEvent) + Send + Sync + 'static) {
        let handler: SetHandler = Arc::new(handler);
        let mut state = self.inner.state.lock();
        for cluster in state.clusters.values() {
            let resources = cluster.resources.lock();
            for (resource, gi) in &resources.informers {
                attach_handler(cluster, resource, gi, handler.clone());
            }
        }
        state.handlers.push(handler);
    }

    /// Adds a cluster named `name`, connecting as `config` says; started at
    /// once if the set is. Nothing is requested here: the cluster resolves
    /// its resources in the background.
    ///
    /// # Errors
    /// [`DeclarativeError::BadClusterName`], [`DeclarativeError::DuplicateCluster`],
    /// [`DeclarativeError::Client`], [`DeclarativeError::ShutDown`].
    pub fn add_cluster(
        &self,
        name: impl Into<String>,
        config: Config,
    ) -> Result<(), DeclarativeError> {
        let name = name.into();
        let client = Client::try_from(config).map_err(|e| DeclarativeError::Client {
            cluster: name.clone(),
            error: error_chain(&e),
        })?;
        self.add_cluster_client(name, client)
    }

    /// As [`add_cluster`](Self::add_cluster), with a client already built.
    ///
    /// # Errors
    /// [`DeclarativeError::BadClusterName`], [`DeclarativeError::DuplicateCluster`],
    /// [`DeclarativeError::ShutDown`].
    pub fn add_cluster_client(
        &self,
        name: impl Into<String>,
        client: Client,
    ) -> Result<(), DeclarativeError> {
        let name = name.into();
        if name.is_empty() || name.contains('/') {
            return Err(DeclarativeError::BadClusterName(name));
        }
        let mut state = self.inner.state.lock();
        if state.shut_down {
            return Err(DeclarativeError::ShutDown);
        }
        if state.clusters.contains_key(name.as_str()) {
            return Err(DeclarativeError::DuplicateCluster(name));
        }
        let name: Arc<str> = name.into();
        let entry = Arc::new(ClusterEntry {
            name: name.clone(),
            factory: InformerFactory::with_options(
                client,
                in_cluster_dir(self.inner.defaults.clone(), &name),
            ),
            cancel: self.inner.cancel.child_token(),
            resources: Mutex::new(ClusterResources::default()),
            changed: watch::Sender::new(0),
            task: Mutex::new(None),
        });
        if state.started {
            start_cluster(&self.inner, &entry);
        }
        state.clusters.insert(name, entry);
        Ok(())
    }

    /// Removes a cluster: stops its informers and waits until they have
    /// stopped; no handler call for it starts afterwards, and its caches are
    /// freed once no [`InformerHandle`] or [`Lister`](crate::cache::lister::Lister)
    /// taken from it is held. Returns whether the cluster was in the set.
    ///
    /// ```no_run
    /// # async fn demo(set: kube_dynamic_informer::declarative::ClusterSet, config: kube_client::Config) -> Result<(), Box<dyn std::error::Error>> {
    /// set.add_cluster("north", config)?; // joins a running set at once
    /// assert!(set.remove_cluster("east").await);
    /// assert!(set.lister("deploy").cluster("east").is_none());
    /// # Ok(()) }
    /// ```
    pub async fn remove_cluster(&self, name: &str) -> bool {
        let entry = self.inner.state.lock().clusters.remove(name);
        let Some(entry) = entry else {
            return false;
        };
        stop_cluster(&entry).await;
        true
    }

    /// The clusters' names, sorted.
    #[must_use]
    pub fn clusters(&self) -> Vec<Arc<str>> {
        self.inner.state.lock().clusters.keys().cloned().collect()
    }

    /// The factory of one cluster (its discovery, its informers).
    #[must_use]
    pub fn factory(&self, cluster: &str) -> Option<InformerFactory> {
        let state = self.inner.state.lock();
        state.clusters.get(cluster).map(|c| c.factory.clone())
    }

    /// The informer of `resource` (as it was named) in `cluster`, once
    /// resolved there.
    #[must_use]
    pub fn informer(&self, cluster: &str, resource: &str) -> Option<InformerHandle> {
        let entry = self.inner.state.lock().clusters.get(cluster).cloned()?;
        entry.resources.lock().informers.get(resource).cloned()
    }

    /// A view of `resource` (as it was named) across every cluster.
    #[must_use]
    pub fn lister(&self, resource: &str) -> ClusterLister {
        ClusterLister::new(self.clone(), resource.into())
    }

    /// Where every resource stands in every cluster, sorted by cluster then
    /// resource in the order they were added.
    ///
    /// ```no_run
    /// # fn demo(set: kube_dynamic_informer::declarative::ClusterSet) {
    /// use kube_dynamic_informer::declarative::ResourceState;
    /// for (cluster, resource, state) in set.status() {
    ///     if let ResourceState::Unresolved { unreachable: true, error } = state {
    ///         eprintln!("{cluster}: {resource}: cannot reach the cluster: {error:?}");
    ///     }
    /// }
    /// # }
    /// ```
    #[must_use]
    pub fn status(&self) -> Vec<(Arc<str>, Arc<str>, ResourceState)> {
        let (clusters, resources) = self.snapshot();
        let mut out = Vec::new();
        for cluster in clusters {
            let held = cluster.resources.lock();
            for spec in &resources {
                let state = match held.informers.get(&spec.name) {
                    Some(gi) => ResourceState::Informer(gi.status()),
                    None => {
                        let failure = held.failures.get(&spec.name);
                        ResourceState::Unresolved {
                            unreachable: failure.is_some_and(|f| f.unreachable()),
                            error: failure.map(|f| f.error.clone()),
                        }
                    }
                };
                out.push((cluster.name.clone(), spec.name.clone(), state));
            }
        }
        out
    }

    /// Starts every cluster present and every one added later; calling it
    /// again does nothing.
    ///
    /// # Errors
    /// [`DeclarativeError::NoRuntime`] outside a tokio runtime;
    /// [`DeclarativeError::ShutDown`].
    pub fn start(&self) -> Result<(), DeclarativeError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(DeclarativeError::NoRuntime);
        }
        let mut state = self.inner.state.lock();
        if state.shut_down {
            return Err(DeclarativeError::ShutDown);
        }
        if !state.started {
            state.started = true;
            for entry in state.clusters.values() {
                start_cluster(&self.inner, entry);
            }
        }
        Ok(())
    }

    /// Waits until every resource's cache has synced in every cluster, or
    /// `timeout` passes, and answers once per cluster and resource. All the
    /// clusters are waited for together: a cluster that cannot be reached
    /// costs the timeout once, not once per cluster.
    pub async fn wait_for_cache_sync(&self, timeout: Duration) -> ClusterSyncReport {
        self.wait_for_cache_sync_with(timeout, SyncPolicy::KeepWaiting)
            .await
    }

    /// [`wait_for_cache_sync`](Self::wait_for_cache_sync) under `policy`:
    /// with [`SyncPolicy::GiveUpWhenRefused`], an informer a cluster refuses
    /// (403, 401) is reported at once.
    pub async fn wait_for_cache_sync_with(
        &self,
        timeout: Duration,
        policy: SyncPolicy,
    ) -> ClusterSyncReport {
        // A century stands for a timeout too long to add to now
        // (Duration::MAX).
        let forever = Duration::from_secs(100 * 365 * 24 * 3600);
        let deadline = tokio::time::Instant::now() + timeout.min(forever);
        let (clusters, resources) = self.snapshot();
        let waits = clusters.iter().flat_map(|cluster| {
            resources.iter().map(move |spec| async move {
                let result = report::wait_one(cluster, &spec.name, deadline, timeout, policy).await;
                ClusterSyncResult {
                    cluster: cluster.name.clone(),
                    resource: spec.name.clone(),
                    result,
                }
            })
        });
        let results = futures::future::join_all(waits).await;
        ClusterSyncReport { results }
    }

    /// Stops every cluster and waits until their informers have stopped.
    /// The set accepts no cluster afterwards.
    pub async fn shutdown(&self) {
        let clusters: Vec<Arc<ClusterEntry>> = {
            let mut state = self.inner.state.lock();
            state.shut_down = true;
            std::mem::take(&mut state.clusters).into_values().collect()
        };
        self.inner.cancel.cancel();
        futures::future::join_all(clusters.iter().map(|c| stop_cluster(c))).await;
    }

    fn snapshot(&self) -> (Vec<Arc<ClusterEntry>>, Vec<ResourceSpec>) {
        let state = self.inner.state.lock();
        (
            state.clusters.values().cloned().collect(),
            state.resources.clone(),
        )
    }

    /// Each cluster's informer of `resource`, sorted by cluster.
    fn informers_of(&self, resource: &str) -> Vec<(Arc<str>, InformerHandle)> {
        let (clusters, _) = self.snapshot();
        clusters
            .iter()
            .filter_map(|c| {
                let held = c.resources.lock();
                held.informers
                    .get(resource)
                    .map(|gi| (c.name.clone(), gi.clone()))
            })
            .collect()
    }
}

fn attach_handler(
    cluster: &ClusterEntry,
    resource: &Arc<str>,
    gi: &InformerHandle,
    handler: SetHandler,
) {
    let cluster_name = cluster.name.clone();
    let resource = resource.clone();
    let removed = cluster.cancel.clone();
    let options = HandlerOptions::default().name(format!("cluster-set {cluster_name} {resource}"));
    // The registration lives as long as the informer, which stops when the
    // cluster is removed; the token keeps calls already queued from reaching
    // the handler afterwards.
    let _registration = gi.informer().add_handler_with(
        move |event: Event| {
            if removed.is_cancelled() {
                return;
            }
            handler(ClusterEvent {
                cluster: cluster_name.clone(),
                resource: resource.clone(),
                event,
            });
        },
        options,
    );
}

fn start_cluster(inner: &Arc<SetInner>, entry: &Arc<ClusterEntry>) {
    let mut task = entry.task.lock();
    if task.is_some() {
        return;
    }
    if let Err(e) = entry.factory.start() {
        tracing::warn!(cluster = %entry.name, error = %error_chain(&e), "could not start a cluster's informers");
        return;
    }
    *task = Some(tokio::spawn(resolve_loop(
        Arc::downgrade(inner),
        entry.clone(),
    )));
}

async fn stop_cluster(entry: &ClusterEntry) {
    entry.cancel.cancel();
    let task = entry.task.lock().take();
    if let Some(task) = task {
        let _ = task.await;
    }
    entry.factory.shutdown().await;
    *entry.resources.lock() = ClusterResources::default();
    entry.bump();
}

/// Resolves the set's resources in one cluster, again after failures (with
/// backoff) and whenever a resource is added, until the cluster is removed.
async fn resolve_loop(set: std::sync::Weak<SetInner>, cluster: Arc<ClusterEntry>) {
    let Some(mut resources_changed) = set.upgrade().map(|s| s.resources_changed.subscribe()) else {
        return;
    };
    let mut delay = None;
    loop {
        let Some(inner) = set.upgrade() else { return };
        let retry = inner.retry;
        let wanted: Vec<ResourceSpec> = {
            let state = inner.state.lock();
            let held = cluster.resources.lock();
            state
                .resources
                .iter()
                .filter(|r| !held.informers.contains_key(&r.name))
                .cloned()
                .collect()
        };
        let defaults = inner.defaults.clone();
        drop(inner);
        resources_changed.mark_unchanged();
        let mut failed = false;
        for spec in wanted {
            let options = in_cluster_dir(
                spec.options.clone().unwrap_or_else(|| defaults.clone()),
                &cluster.name,
            );
            let resolved = tokio::select! {
                () = cluster.cancel.cancelled() => return,
                r = crate::informer::telemetry::in_cluster(
                    cluster.name.clone(),
                    cluster.factory.for_resource_with(&*spec.resource, |_| options),
                ) => r,
            };
            match resolved {
                Ok(gi) => {
                    let Some(inner) = set.upgrade() else { return };
                    // Under the set's lock, so that a handler or index added
                    // meanwhile is attached exactly once.
                    let state = inner.state.lock();
                    if cluster.cancel.is_cancelled() {
                        return;
                    }
                    for (resource, index, func) in &state.indexes {
                        if *resource == spec.name
                            && let Err(e) = gi.informer().add_index(index.clone(), func.clone())
                        {
                            tracing::warn!(cluster = %cluster.name, error = %error_chain(&e), "adding an index");
                        }
                    }
                    for handler in &state.handlers {
                        attach_handler(&cluster, &spec.name, &gi, handler.clone());
                    }
                    let mut held = cluster.resources.lock();
                    held.failures.remove(&spec.name);
                    held.informers.insert(spec.name.clone(), gi);
                }
                Err(e) => {
                    failed = true;
                    let error = error_chain(&e);
                    tracing::debug!(cluster = %cluster.name, resource = %spec.name, %error, "resolving a resource");
                    let failure = ResolveFailure {
                        answer: e.not_synced(),
                        error,
                    };
                    let mut held = cluster.resources.lock();
                    held.failures.insert(spec.name.clone(), failure);
                }
            }
            cluster.bump();
        }
        delay = failed.then(|| delay.map_or(retry.initial, |d: Duration| (d * 2).min(retry.max)));
        tokio::select! {
            () = cluster.cancel.cancelled() => return,
            () = crate::declarative::sleep_or_never(delay) => {}
            r = resources_changed.changed() => if r.is_err() { return },
        }
    }
}
