//! What the reconcile layer refuses, and why.

use crate::factory::FactoryError;
use crate::informer::InformerError;

/// Errors of the reconcile layer.
///
/// The work queue refuses nothing (a key added after shutdown is ignored,
/// as client-go's queue ignores it); what fails is setting up or running a
/// [reconciler](crate::reconcile). A reconcile function's own errors are
/// not errors of the layer: they are logged and the key retried with
/// backoff.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReconcileError {
    /// The reconciler was asked to run with no resource to watch: it would
    /// never be handed a key.
    #[error("the reconciler {controller:?} watches no resource")]
    NothingWatched {
        /// The reconciler's name.
        controller: String,
    },
    /// An informer the reconciler reads from failed.
    #[error(transparent)]
    Informer(#[from] InformerError),
    /// A resource the reconciler reads from could not be had from its
    /// factory.
    #[error(transparent)]
    Factory(#[from] FactoryError),
}
