//! [`InformerHandle`]: what the factory hands out.

use std::fmt;

use kube_core::ApiResource;
use tokio::sync::watch;

use crate::cache::lister::Lister;
use crate::informer::options::InformerOptions;
use crate::informer::{InformerStatus, SharedInformer};
use crate::vocabulary::resource::ResourceKey;
use crate::vocabulary::scope::{ResourceAvailability, Scope};

/// An informer and its lister, for any resource: what the factory hands
/// out. Cheap to clone; clones (and every handle the factory returns for the
/// same resource and options) are the same informer, and compare equal.
#[derive(Clone)]
#[doc(alias = "GenericInformer")]
pub struct InformerHandle {
    pub(super) id: u64,
    pub(super) resource: ResourceKey,
    pub(super) informer: SharedInformer,
    pub(super) lister: Lister,
    pub(super) availability: watch::Receiver<ResourceAvailability>,
}

impl InformerHandle {
    /// The resource: as discovery serves it, or, while it is not served,
    /// as asked for. An informer asked for by plural and group
    /// (`widgets.example.com`) before the resource was served has an empty
    /// version until then; it lists the version discovery designates.
    #[must_use]
    pub fn resource(&self) -> ResourceKey {
        self.availability
            .borrow()
            .served()
            .map_or_else(|| self.resource.clone(), |(resource, _)| resource.into())
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
        let availability = self.availability.borrow();
        availability.served().map(|(resource, _)| resource.clone())
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
        self.informer.options()
    }
}

impl PartialEq for InformerHandle {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for InformerHandle {}

impl fmt::Debug for InformerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerHandle")
            .field("resource", &self.resource)
            .field("status", &self.status())
            .field("options", self.options())
            .finish_non_exhaustive()
    }
}
