//! Reading one resource across every cluster of a set.

use std::sync::Arc;

use super::ClusterSet;
use crate::cache::CacheError;
use crate::cache::CachedObject;
use crate::cache::lister::{Lister, ToSelector};

/// An object of one cluster, from a [`ClusterLister`].
#[derive(Clone, Debug)]
pub struct ClusterObject {
    /// The cluster it is cached from.
    pub cluster: Arc<str>,
    /// The object: a handle on the cache's own.
    pub object: CachedObject,
}

impl ClusterObject {
    /// The merged key: `cluster/namespace/name`, or `cluster/name` for a
    /// cluster-scoped object — what [`ClusterLister::get`] takes.
    #[must_use]
    pub fn key(&self) -> String {
        let name = self.object.name().unwrap_or_default();
        match self.object.namespace() {
            Some(ns) => format!("{}/{ns}/{name}", self.cluster),
            None => format!("{}/{name}", self.cluster),
        }
    }
}

/// A read view of one resource across every cluster of a [`ClusterSet`],
/// from [`ClusterSet::lister`]. It reads the set as it is at each call:
/// a cluster added later is included once the resource is resolved there,
/// a removed one is gone. Results are sorted by cluster.
///
/// ```no_run
/// # fn demo(set: kube_dynamic_informer::declarative::ClusterSet) -> Result<(), Box<dyn std::error::Error>> {
/// let deployments = set.lister("deploy");
/// for o in deployments.list("app=web")? {
///     println!("{}", o.key()); // east/shop/web
/// }
/// let east_only = deployments.cluster("east").map(|l| l.list_all().len());
/// let web = deployments.get("east/shop/web");
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct ClusterLister {
    set: ClusterSet,
    resource: Arc<str>,
}

impl ClusterLister {
    pub(super) fn new(set: ClusterSet, resource: Arc<str>) -> Self {
        Self { set, resource }
    }

    /// The resource, as named.
    #[must_use]
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// One cluster's own lister, once the resource is resolved there.
    #[must_use]
    pub fn cluster(&self, cluster: &str) -> Option<Lister> {
        self.set
            .informer(cluster, &self.resource)
            .map(|gi| gi.lister())
    }

    /// Every cached object of every cluster.
    #[must_use]
    pub fn list_all(&self) -> Vec<ClusterObject> {
        self.each(|l| Ok(l.list_all())).unwrap_or_default()
    }

    /// The objects whose labels match `selector`, in every cluster.
    ///
    /// # Errors
    /// [`CacheError`] when the selector does not parse.
    pub fn list(&self, selector: impl ToSelector) -> Result<Vec<ClusterObject>, CacheError> {
        self.each(|l| l.list(&selector))
    }

    /// The objects filed under `value` in the index `index`, in every
    /// cluster where the resource is resolved.
    ///
    /// # Errors
    /// [`CacheError::Index`] when a cluster's informer has no such index.
    pub fn by_index(&self, index: &str, value: &str) -> Result<Vec<ClusterObject>, CacheError> {
        self.each(|l| {
            l.by_index(index, value)
                .map_err(|source| CacheError::Index {
                    resource: l.resource().clone(),
                    source: Box::new(source),
                })
        })
    }

    /// The object with the merged key `cluster/namespace/name` (or
    /// `cluster/name` for a cluster-scoped resource).
    #[must_use]
    pub fn get(&self, key: &str) -> Option<CachedObject> {
        let (cluster, key) = key.split_once('/')?;
        self.cluster(cluster)?.get(key)
    }

    fn each(
        &self,
        read: impl Fn(&Lister) -> Result<Vec<CachedObject>, CacheError>,
    ) -> Result<Vec<ClusterObject>, CacheError> {
        let mut out = Vec::new();
        for (cluster, gi) in self.set.informers_of(&self.resource) {
            let objects = read(&gi.lister())?.into_iter();
            out.extend(objects.map(|object| ClusterObject {
                cluster: cluster.clone(),
                object,
            }));
        }
        Ok(out)
    }
}
