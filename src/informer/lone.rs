//! [`Informer`]: one fixed handler, no fan-out machinery.

use std::fmt;

use kube_client::Client;
use kube_core::ApiResource;
use parking_lot::Mutex;
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
///
/// The handler may ask for what a shared informer's handlers ask for
/// ([`handler_options`](Self::handler_options)): a filter, a change
/// predicate, its own resync period.
#[doc(alias = "NewInformer")]
#[doc(alias = "NewIndexerInformer")]
pub struct Informer {
    inner: SharedInformer,
    /// The handler and its options, registered when the informer runs.
    handler: Mutex<Option<(Box<dyn EventHandler>, HandlerOptions)>>,
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

    /// `inner` with `handler` as its one listener, called in place once
    /// it runs.
    fn around(inner: SharedInformer, handler: impl EventHandler) -> Self {
        let handler: Box<dyn EventHandler> = Box::new(handler);
        Self {
            inner,
            handler: Mutex::new(Some((handler, HandlerOptions::default()))),
        }
    }

    /// Gives the handler `options`, as
    /// [`SharedInformer::add_handler_with`] gives a shared informer's: only
    /// the objects a [filter](HandlerOptions::filter) picks (entering and
    /// leaving as adds and deletes), only the updates a
    /// [change predicate](HandlerOptions::changes) lets through, a resync
    /// period of its own. Before [`run`](Self::run); afterwards it changes
    /// nothing.
    ///
    /// ```no_run
    /// # fn demo(client: kube_client::Client, resource: kube_core::ApiResource) -> Result<(), Box<dyn std::error::Error>> {
    /// use kube_dynamic_informer::cache::{ChangePredicate, Condition};
    /// use kube_dynamic_informer::informer::{Event, HandlerOptions, Informer, InformerOptions};
    /// use kube_dynamic_informer::vocabulary::Scope;
    ///
    /// let web = HandlerOptions::default()
    ///     .filter(Condition::new("metadata.labels.tier == 'web'")?)
    ///     .changes(ChangePredicate::spec());
    /// let informer = Informer::new(client, resource, Scope::Namespaced, InformerOptions::default(), |e: Event| {
    ///     println!("{} {:?}", e.kind(), e.object().name());
    /// })?
    /// .handler_options(web);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn handler_options(self, options: HandlerOptions) -> Self {
        if let Some((_, pending)) = self.handler.lock().as_mut() {
            *pending = options;
        }
        self
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
        let pending = self.handler.lock().take();
        if let Some((handler, options)) = pending {
            self.inner.register(&options, Target::InPlace(handler));
        }
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
