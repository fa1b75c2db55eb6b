//! [`Informer`]: one fixed handler, no fan-out machinery.

use std::fmt;

use kube_client::Client;
use kube_core::ApiResource;
use tokio_util::sync::CancellationToken;

use crate::cache::index::IndexFn;
use crate::cache::store::Store;
use crate::informer::status::InformerStatus;
use crate::vocabulary::scope::Scope;
use crate::wire::list_watch::ListWatch;

use super::SharedInformer;
use super::error::InformerError;
use super::event::EventHandler;
use super::listener::{HandlerOptions, Target};
use super::options::InformerOptions;

/// An informer with one fixed handler and its own cache, as client-go's
/// `NewInformer`: no other handler can be added, and nothing is shared.
///
/// The handler is called in place, as each change is applied to the cache:
/// no thread, no task, no queue that grows. It receives the cache's objects
/// as initial Adds, then every event in order (and resyncs, if configured),
/// and what it reads from [`store`](Self::store) is the state its event
/// left (for the events of a relist, the relisted state as a whole, see
/// [atomic relists](crate::informer#guarantees)). It runs under the
/// informer's dispatch lock: a slow handler slows
/// the cache's updates, and a handler must not call this informer's
/// [`has_synced`](Self::has_synced), which takes that lock.
#[doc(alias = "NewInformer")]
#[doc(alias = "NewIndexerInformer")]
pub struct Informer {
    inner: SharedInformer,
}

impl Informer {
    /// A non-shared informer for `resource` with `handler`.
    ///
    /// # Errors
    /// As [`SharedInformer::new`].
    pub fn new(
        client: Client,
        resource: ApiResource,
        scope: Scope,
        options: InformerOptions,
        handler: impl EventHandler,
    ) -> Result<Self, InformerError> {
        Ok(Self::around(
            SharedInformer::new(client, resource, scope, options)?,
            handler,
        ))
    }

    /// A non-shared informer over any [`ListWatch`].
    #[must_use]
    pub fn with_list_watch(
        lw: impl ListWatch,
        resource: ApiResource,
        options: InformerOptions,
        handler: impl EventHandler,
    ) -> Self {
        Self::around(
            SharedInformer::with_list_watch(lw, resource, options),
            handler,
        )
    }

    /// `inner` with `handler` as its one listener, called in place.
    fn around(inner: SharedInformer, handler: impl EventHandler) -> Self {
        inner.register(
            &HandlerOptions::default(),
            Target::InPlace(Box::new(handler)),
        );
        Self { inner }
    }

    /// Adds an index; see [`SharedInformer::add_index`].
    ///
    /// # Errors
    /// A duplicate name.
    pub fn add_index(&self, name: impl Into<String>, func: IndexFn) -> Result<(), InformerError> {
        self.inner.add_index(name, func)
    }

    /// The read-only cache.
    pub fn store(&self) -> Store {
        self.inner.store()
    }

    /// The current status.
    pub fn status(&self) -> InformerStatus {
        self.inner.status()
    }

    /// Whether the cache holds a complete list.
    pub fn has_synced(&self) -> bool {
        self.inner.has_synced()
    }

    /// Runs until `cancel` fires, calling the handler for every event.
    ///
    /// # Errors
    /// [`InformerError::AlreadyStarted`].
    pub async fn run(&self, cancel: CancellationToken) -> Result<(), InformerError> {
        self.inner.run(cancel).await
    }
}

impl fmt::Debug for Informer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Informer")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}
