//! [`ResourceKey`], the group/version/resource triple that identifies a
//! resolved resource, and its conversions to and from kube-core's types.

use std::fmt;

use kube_core::GroupVersionResource;
use kube_core::discovery::ApiResource;
use serde::{Deserialize, Serialize};

/// A resolved resource: API group (empty for the core group), version and
/// plural resource name.
///
/// Use it as a map key; it is `Eq`, `Hash` and `Ord` over exactly these three
/// fields. It displays as `resource.version.group` (`deployments.v1.apps`), or
/// `resource.version` for the core group (`pods.v1`), which
/// [`ResourceName::parse`](super::ResourceName::parse) reads back. A key
/// without a version (a resource named as `plural.group` that is not served
/// yet, so no version is known) displays as `resource.group`, as it was
/// named.
///
/// ```
/// use kube_dynamic_informer::vocabulary::ResourceKey;
///
/// let key = ResourceKey::new("apps", "v1", "deployments");
/// assert_eq!(key.to_string(), "deployments.v1.apps");
/// assert_eq!(key.api_version(), "apps/v1");
/// assert_eq!(ResourceKey::new("", "v1", "pods").to_string(), "pods.v1");
/// assert_eq!(ResourceKey::new("example.com", "", "widgets").to_string(), "widgets.example.com");
///
/// let gvr: kube_core::GroupVersionResource = key.clone().into();
/// assert_eq!(ResourceKey::from(gvr), key);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ResourceKey {
    /// API group; empty for the core group.
    pub group: String,
    /// API version within the group, such as `v1`.
    pub version: String,
    /// Plural resource name, such as `deployments`.
    pub resource: String,
}

impl ResourceKey {
    /// A key from its parts; pass `""` as the group for the core group.
    #[must_use]
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        resource: impl Into<String>,
    ) -> Self {
        ResourceKey {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
        }
    }

    /// The `apiVersion` of the resource's objects: `group/version`, or just
    /// `version` for the core group.
    #[must_use]
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Whether the resource is in the core (legacy, unnamed) group.
    #[must_use]
    pub fn is_core_group(&self) -> bool {
        self.group.is_empty()
    }
}

impl fmt::Display for ResourceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.resource)?;
        for part in [&self.version, &self.group] {
            if !part.is_empty() {
                write!(f, ".{part}")?;
            }
        }
        Ok(())
    }
}

impl From<&GroupVersionResource> for ResourceKey {
    fn from(gvr: &GroupVersionResource) -> Self {
        ResourceKey::new(&gvr.group, &gvr.version, &gvr.resource)
    }
}

impl From<GroupVersionResource> for ResourceKey {
    fn from(gvr: GroupVersionResource) -> Self {
        ResourceKey::new(gvr.group, gvr.version, gvr.resource)
    }
}

impl From<&ResourceKey> for GroupVersionResource {
    fn from(key: &ResourceKey) -> Self {
        GroupVersionResource::gvr(&key.group, &key.version, &key.resource)
    }
}

impl From<ResourceKey> for GroupVersionResource {
    fn from(key: ResourceKey) -> Self {
        GroupVersionResource::from(&key)
    }
}

impl From<&ApiResource> for ResourceKey {
    fn from(resource: &ApiResource) -> Self {
        ResourceKey::new(&resource.group, &resource.version, &resource.plural)
    }
}

impl From<ApiResource> for ResourceKey {
    fn from(resource: ApiResource) -> Self {
        ResourceKey::new(resource.group, resource.version, resource.plural)
    }
}
