//! [`InformerHandle`]: what the factory hands out.

use std::fmt;
use std::time::Duration;

use kube_client::Client;
use kube_core::ApiResource;
use tokio::sync::watch;

use crate::cache::lister::Lister;
use crate::informer::options::InformerOptions;
use crate::informer::{
    InformerError, InformerStatus, Objects, SharedInformer, WaitFor, WaitReport,
};
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
    pub(super) client: Client,
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

    /// The client of the factory that made it: the one its informer lists
    /// and watches with.
    #[must_use]
    pub fn client(&self) -> &Client {
        &self.client
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

    /// Waits until `goal` is true of all of `objects` of this informer, for
    /// at most `timeout` ([`SharedInformer::wait_until`]; a
    /// [`Wait`](crate::informer::Wait) takes
    /// several informers, and any or none of their objects). The resource
    /// may be one not served yet: the wait goes on until it is, and its
    /// objects are listed.
    ///
    /// ```no_run
    /// # async fn demo(factory: kube_dynamic_informer::InformerFactory) -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use kube_dynamic_informer::informer::{ObjectSelection, WaitFor};
    ///
    /// let widgets = factory.for_resource("widgets.example.com").await?;
    /// factory.start()?;
    /// let shop = ObjectSelection::default().namespace("shop");
    /// let report = widgets
    ///     .wait_until(shop, WaitFor::condition("status.ready")?, Duration::from_secs(120))
    ///     .await?;
    /// println!("{report}");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// Those of [`Wait::run`](crate::informer::Wait::run).
    pub async fn wait_until(
        &self,
        objects: impl Into<Objects>,
        goal: impl Into<WaitFor>,
        timeout: Duration,
    ) -> Result<WaitReport, InformerError> {
        self.informer.wait_until(objects, goal, timeout).await
    }
}

/// The handle's informer, for what takes any informer
/// ([`Wait::on`](crate::informer::Wait::on)).
impl AsRef<SharedInformer> for InformerHandle {
    fn as_ref(&self) -> &SharedInformer {
        &self.informer
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
