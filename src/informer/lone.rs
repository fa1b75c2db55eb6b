//! [`Informer`]: one fixed handler, no fan-out machinery.

use super::*;

/// An informer with one fixed handler, called in place by the dispatch loop:
/// no queues, no threads, no fan-out — cheaper when sharing is not needed.
/// A slow handler here slows the cache's updates.
#[doc(alias = "NewInformer")]
#[doc(alias = "NewIndexerInformer")]
pub struct Informer {
    inner: SharedInformer,
    handler: Arc<dyn EventHandler>,
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
        Ok(Self {
            inner: SharedInformer::new(client, resource, scope, options)?,
            handler: Arc::new(handler),
        })
    }

    /// A non-shared informer over any [`ListWatch`].
    #[must_use]
    pub fn with_list_watch(
        lw: impl ListWatch,
        resource: ApiResource,
        options: InformerOptions,
        handler: impl EventHandler,
    ) -> Self {
        Self {
            inner: SharedInformer::with_list_watch(lw, resource, options),
            handler: Arc::new(handler),
        }
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
        // Claim the run first, so that a second `run` adds no second handler.
        let run = self.inner.prepare()?;
        let state = self.inner.new_listener_state(&HandlerOptions::default());
        self.inner
            .register(state, Sink::Inline(self.handler.clone()), None);
        self.inner.run_prepared(run, cancel).await;
        Ok(())
    }
}

impl fmt::Debug for Informer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Informer")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}
