//! Many clusters from one process: the same resources watched in every
//! cluster of a set, with one merged view.
//!
//! The [layer docs](crate::declarative) say more.

mod cluster;
mod lister;
mod report;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kube_client::{Client, Config};
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use cluster::{
    ClusterEntry, Held, attach_handler, in_cluster_dir, start_cluster, stop_cluster, unreachable,
};
pub use lister::{ClusterLister, ClusterObject};
pub use report::{ClusterSyncReport, ClusterSyncResult};

use crate::cache::index::IndexFn;
use crate::declarative::config::{InformerSet, InformerSpec};
use crate::declarative::{AccessPolicy, DeclarativeError, ResourceSet, SetMember};
use crate::factory::{InformerFactory, InformerHandle};
use crate::informer::options::InformerOptions;
use crate::informer::{Event, InformerStatus, SyncPolicy};
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

struct SetState {
    started: bool,
    shut_down: bool,
    clusters: BTreeMap<Arc<str>, Arc<ClusterEntry>>,
    config: InformerSet,
    handlers: Vec<SetHandler>,
    indexes: Vec<(Arc<str>, String, IndexFn)>,
}

struct SetInner {
    policy: AccessPolicy,
    retry: RetryDelays,
    state: Mutex<SetState>,
    /// Bumped whenever the config changes, so clusters apply it.
    config_changed: watch::Sender<u64>,
    cancel: CancellationToken,
}

impl SetInner {
    /// The config as cluster `cluster` runs it: snapshots in a directory
    /// of its own (`DIR/cluster-NAME`), as one directory holds one
    /// cluster's.
    fn config_for(&self, cluster: &str) -> InformerSet {
        let mut config = self.state.lock().config.clone();
        config.shard_group = None;
        config.clusters = Default::default();
        let options = std::iter::once(&mut config.defaults)
            .chain(config.informers.iter_mut().map(|i| &mut i.options))
            .chain(config.patterns.iter_mut().map(|p| &mut p.options));
        for options in options {
            *options = in_cluster_dir(std::mem::take(options), cluster);
        }
        config
    }
}

impl Drop for SetInner {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

impl InformerSet {
    /// A cluster set (not started, with no cluster yet) watching this file's
    /// informers and patterns, each informer under its name in the file,
    /// with its options and indexes. Add the clusters of
    /// [`ClustersConfig::clusters`](crate::declarative::ClustersConfig::clusters)
    /// or others.
    #[must_use]
    pub fn cluster_set(&self) -> ClusterSet {
        ClusterSet::from_config(
            self.clone(),
            AccessPolicy::default(),
            RetryDelays::default(),
        )
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

/// Named clusters watched together; see the [module docs](crate::declarative). Each
/// cluster runs a [`ResourceSet`] of the set's config: informers named one
/// by one, patterns (which follow each cluster's discovery), reloads
/// ([`apply`](Self::apply)) and access checks work in every cluster. Cheap
/// to clone; clones share everything. Dropping the last clone stops every
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
            .field("config", &state.config)
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
        Self::from_config(InformerSet::new(options), AccessPolicy::default(), retry)
    }

    /// A set (with no cluster yet) watching `config`'s informers and
    /// patterns in every cluster, each cluster under `policy`: the one way a
    /// config file, or [`add_resource`](Self::add_resource), becomes
    /// informers. The config's `clusters` section is for the caller to read
    /// ([`ClustersConfig::clusters`](crate::declarative::ClustersConfig::clusters));
    /// its `shardGroup` is not joined.
    #[must_use]
    pub fn from_config(config: InformerSet, policy: AccessPolicy, retry: RetryDelays) -> Self {
        Self {
            inner: Arc::new(SetInner {
                policy,
                retry,
                state: Mutex::new(SetState {
                    started: false,
                    shut_down: false,
                    clusters: BTreeMap::new(),
                    config,
                    handlers: Vec::new(),
                    indexes: Vec::new(),
                }),
                config_changed: watch::Sender::new(0),
                cancel: CancellationToken::new(),
            }),
        }
    }

    /// Makes `config` every cluster's: entries added start, entries removed
    /// stop, entries changed are replaced, as a [`ResourceSet`] reload does.
    /// A cluster where an entry cannot be had runs the others and tries it
    /// again with backoff ([`status`](Self::status) says why).
    pub fn apply(&self, config: InformerSet) {
        self.inner.state.lock().config = config;
        self.inner.config_changed.send_modify(|n| *n += 1);
    }

    /// The config every cluster runs.
    #[must_use]
    pub fn config(&self) -> InformerSet {
        self.inner.state.lock().config.clone()
    }

    /// Watches `resource` in every cluster, present and future, with the
    /// set's options. The name is resolved in each cluster through its own
    /// discovery (any form [`InformerFactory::for_resource`] accepts; name a
    /// CRD that may be missing somewhere as `plural.group`). Adding the same
    /// name again does nothing.
    pub fn add_resource(&self, resource: impl Into<String>) {
        self.push_resource(InformerSpec::new(resource), None);
    }

    /// As [`add_resource`](Self::add_resource), with options of its own.
    pub fn add_resource_with(&self, resource: impl Into<String>, options: InformerOptions) {
        self.push_resource(InformerSpec::new(resource), Some(options));
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
        let mut spec = InformerSpec::new(resource);
        spec.name = Some(name.into());
        self.push_resource(spec, Some(options));
    }

    fn push_resource(&self, mut spec: InformerSpec, options: Option<InformerOptions>) {
        {
            let mut state = self.inner.state.lock();
            if state
                .config
                .informers
                .iter()
                .any(|r| r.name() == spec.name())
            {
                return;
            }
            spec.options = options.unwrap_or_else(|| state.config.defaults.clone());
            state.config.informers.push(spec);
        }
        self.inner.config_changed.send_modify(|n| *n += 1);
    }

    /// The resources: the informers as they were named, then the resources
    /// the config's patterns selected in any cluster (sorted).
    #[must_use]
    pub fn resources(&self) -> Vec<Arc<str>> {
        let (clusters, config) = self.snapshot();
        let mut names: Vec<Arc<str>> = config
            .informers
            .iter()
            .map(|spec| spec.name().into())
            .collect();
        let mut selected = std::collections::BTreeSet::new();
        for cluster in clusters {
            let held = cluster.held.lock();
            let from_patterns = held.members.iter().filter(|(_, m)| m.member.from_pattern);
            selected.extend(from_patterns.map(|(name, _)| name.clone()));
        }
        names.extend(selected);
        names
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
            if let Some(held) = cluster.held.lock().members.get(resource)
                && let Err(e) = held
                    .member
                    .informer
                    .informer()
                    .add_index(index.clone(), func.clone())
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
            for (name, held) in &cluster.held.lock().members {
                attach_handler(&cluster.name, name, held, handler.clone());
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
        let defaults = in_cluster_dir(state.config.defaults.clone(), &name);
        let entry = Arc::new(ClusterEntry {
            name: name.clone(),
            factory: InformerFactory::with_options(client, defaults),
            cancel: self.inner.cancel.child_token(),
            held: Mutex::new(Held::default()),
            set: Mutex::new(None),
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

    /// The resource set of one cluster, once the cluster has started (its
    /// members, skipped entries, [`check_access`](ResourceSet::check_access)).
    #[must_use]
    pub fn resource_set(&self, cluster: &str) -> Option<ResourceSet> {
        let entry = self.inner.state.lock().clusters.get(cluster).cloned()?;
        entry.set.lock().clone()
    }

    /// The informer of `resource` (as it was named) in `cluster`, once
    /// resolved there.
    #[must_use]
    pub fn informer(&self, cluster: &str, resource: &str) -> Option<InformerHandle> {
        self.member(cluster, resource).map(|m| m.informer)
    }

    /// The member named `resource` in `cluster`, once resolved there: its
    /// informer, its compiled indexes, whether its entry is sensitive.
    #[must_use]
    pub fn member(&self, cluster: &str, resource: &str) -> Option<SetMember> {
        let entry = self.inner.state.lock().clusters.get(cluster).cloned()?;
        let held = entry.held.lock();
        held.members.get(resource).map(|h| h.member.clone())
    }

    /// A view of `resource` (as it was named) across every cluster.
    #[must_use]
    pub fn lister(&self, resource: &str) -> ClusterLister {
        ClusterLister::new(self.clone(), resource.into())
    }

    /// Where every resource stands in every cluster, sorted by cluster,
    /// then the informers in the order they were added, then what patterns
    /// selected there.
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
        let (clusters, config) = self.snapshot();
        let mut out = Vec::new();
        for cluster in clusters {
            let names = cluster.names(&config);
            let held = cluster.held.lock();
            for name in names {
                let state = match held.members.get(&name) {
                    Some(h) => ResourceState::Informer(h.member.informer.status()),
                    None => {
                        let failure = held.failures.get(&name);
                        ResourceState::Unresolved {
                            unreachable: failure.is_some_and(unreachable),
                            error: failure.map(|f| f.error.clone()),
                        }
                    }
                };
                out.push((cluster.name.clone(), name, state));
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
        let (clusters, config) = self.snapshot();
        let version = *self.inner.config_changed.borrow();
        // Per cluster: what its patterns select is known once it applied
        // the config; then each of its resources is waited for.
        let waits = clusters.iter().map(|cluster| {
            let config = &config;
            async move {
                report::converged(cluster, version, deadline).await;
                let names = cluster.names(config).into_iter();
                futures::future::join_all(names.map(|name| async move {
                    let result = report::wait_one(cluster, &name, deadline, timeout, policy).await;
                    ClusterSyncResult {
                        cluster: Some(cluster.name.clone()),
                        resource: name,
                        result,
                    }
                }))
                .await
            }
        });
        let results = futures::future::join_all(waits)
            .await
            .into_iter()
            .flatten()
            .collect();
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

    fn snapshot(&self) -> (Vec<Arc<ClusterEntry>>, InformerSet) {
        let state = self.inner.state.lock();
        (
            state.clusters.values().cloned().collect(),
            state.config.clone(),
        )
    }

    /// Each cluster's informer of `resource`, sorted by cluster.
    fn informers_of(&self, resource: &str) -> Vec<(Arc<str>, InformerHandle)> {
        let (clusters, _) = self.snapshot();
        clusters
            .iter()
            .filter_map(|c| {
                let held = c.held.lock();
                held.members
                    .get(resource)
                    .map(|h| (c.name.clone(), h.member.informer.clone()))
            })
            .collect()
    }
}
