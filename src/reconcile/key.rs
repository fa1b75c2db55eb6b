//! [`ObjectRef`], the key of a reconcile queue: which object of which
//! resource is to be reconciled.

use std::fmt;

use kube_core::DynamicObject;

use crate::cache::store::CachedObject;
use crate::vocabulary::object_key::key_from_parts;
use crate::vocabulary::resource::ResourceKey;

/// Which object to reconcile: a resource and the object's namespace and
/// name.
///
/// A key names an object, it does not hold one: the reconciler reads the
/// object from the cache when the key is handed out, so a key queued for a
/// while is never stale. Two keys are equal when resource, namespace and
/// name are; an empty namespace is no namespace.
///
/// ```
/// use kube_dynamic_informer::reconcile::ObjectRef;
/// use kube_dynamic_informer::vocabulary::ResourceKey;
///
/// let deployments = ResourceKey::new("apps", "v1", "deployments");
/// let web = ObjectRef::new(deployments.clone(), Some("shop"), "web");
/// assert_eq!(web.key(), "shop/web");
/// assert_eq!(web.to_string(), "deployments.v1.apps/shop/web");
/// let node = ObjectRef::new(ResourceKey::new("", "v1", "nodes"), None, "node-1");
/// assert_eq!(node.to_string(), "nodes.v1/node-1");
/// assert_eq!(ObjectRef::new(deployments, Some(""), "x").namespace, None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectRef {
    /// The object's resource.
    pub resource: ResourceKey,
    /// The object's namespace; `None` for a cluster-scoped object.
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
}

impl ObjectRef {
    /// The key of object `name` in `namespace` (`None`, or empty, for a
    /// cluster-scoped object) of `resource`.
    #[must_use]
    pub fn new(resource: ResourceKey, namespace: Option<&str>, name: &str) -> Self {
        ObjectRef {
            resource,
            namespace: namespace.filter(|ns| !ns.is_empty()).map(str::to_owned),
            name: name.to_owned(),
        }
    }

    /// The key of `object` of `resource`; `None` when it has no name.
    #[must_use]
    pub fn from_object(resource: &ResourceKey, object: &DynamicObject) -> Option<Self> {
        let name = object.metadata.name.as_deref().filter(|n| !n.is_empty())?;
        Some(Self::new(
            resource.clone(),
            object.metadata.namespace.as_deref(),
            name,
        ))
    }

    /// The key of cached `object` of `resource`; `None` when it has no
    /// name.
    #[must_use]
    pub fn from_cached(resource: &ResourceKey, object: &CachedObject) -> Option<Self> {
        let name = object.name().filter(|n| !n.is_empty())?;
        Some(Self::new(resource.clone(), object.namespace(), name))
    }

    /// The object's key in its resource's cache: `namespace/name`, or
    /// `name` for a cluster-scoped object (as
    /// [`object_key`](crate::vocabulary::object_key::object_key) makes it),
    /// what [`Store::get`](crate::cache::Store::get) takes.
    #[must_use]
    pub fn key(&self) -> String {
        key_from_parts(self.namespace.as_deref(), &self.name)
    }
}

impl fmt::Display for ObjectRef {
    /// `<resource>/<namespace>/<name>`, or `<resource>/<name>` for a
    /// cluster-scoped object: `deployments.v1.apps/shop/web`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/", self.resource)?;
        if let Some(ns) = &self.namespace {
            write!(f, "{ns}/")?;
        }
        f.write_str(&self.name)
    }
}
