//! [`Context`]: what a reconcile function is handed with a key.

use std::fmt;
use std::sync::Arc;

use kube_client::Client;

use crate::cache::lister::Lister;
use crate::cache::store::CachedObject;
use crate::factory::InformerHandle;
use crate::vocabulary::resource::ResourceKey;

use super::super::key::ObjectRef;
use super::sources::Shared;

/// A key handed to a reconcile function, with the object as cached when
/// the key was handed out, the caches of the controller's other
/// resources, and a client for writes.
///
/// The object is the cache's own ([`CachedObject`]: a pointer copy, read
/// in place; [`CachedObject::object`] decodes it whole only if asked):
/// a reconciler keeps no second copy of anything it watches.
///
/// # Reading one's own writes
///
/// The cache catches up with a write when its watch event arrives. A
/// reconcile that must see its write before it returns waits for it:
/// `ctx.handle().informer().wait_for_object(&written, timeout)` (see
/// [`SharedInformer::wait_for_object`](crate::informer::SharedInformer::wait_for_object)).
/// Most do not need to: the write's event queues the key again, and the
/// next reconcile reads it.
pub struct Context {
    pub(super) key: ObjectRef,
    pub(super) object: Option<CachedObject>,
    pub(super) handle: InformerHandle,
    pub(super) shared: Arc<Shared>,
    pub(super) retries: u32,
}

impl Context {
    /// The key: resource, namespace and name.
    #[must_use]
    pub fn key(&self) -> &ObjectRef {
        &self.key
    }

    /// The object as cached when the key was handed out; `None` when the
    /// cache does not hold it: deleted (or not listed yet, or of a
    /// resource set member that left the set).
    #[must_use]
    pub fn object(&self) -> Option<&CachedObject> {
        self.object.as_ref()
    }

    /// The lister of any resource the controller watches or owns: the
    /// objects a reconcile looks at besides its own (those it owns, by
    /// label or index).
    #[must_use]
    pub fn lister(&self, resource: &ResourceKey) -> Option<Lister> {
        self.shared.registry.read().lister(resource)
    }

    /// The informer and lister of the key's resource.
    #[must_use]
    pub fn handle(&self) -> &InformerHandle {
        &self.handle
    }

    /// The client to write with (cheap to clone: one connection pool).
    #[must_use]
    pub fn client(&self) -> Client {
        self.shared.client.clone()
    }

    /// How many times in a row the key failed (an error or a panic) before
    /// this attempt, as its rate limiter counts: 0 after a success.
    #[must_use]
    pub fn retries(&self) -> u32 {
        self.retries
    }

    /// The name of the controller.
    #[must_use]
    pub fn controller(&self) -> &str {
        &self.shared.name
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("controller", &self.shared.name)
            .field("key", &self.key)
            .field("exists", &self.object.is_some())
            .field("retries", &self.retries)
            .finish_non_exhaustive()
    }
}
