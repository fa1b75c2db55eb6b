//! Naming Kubernetes resources: the [`ResourceKey`] that identifies one, and
//! the [`ResourceName`] a user types to find it.
//!
//! The [layer docs](crate::vocabulary) say more.

mod key;
mod name;
mod resolve;
#[cfg(test)]
mod tests;
mod version;

pub use key::ResourceKey;
pub use name::{NameCandidate, ResourceName};
pub use resolve::KnownResource;
pub(crate) use resolve::bounded_edit_distance;
#[cfg(feature = "serve")]
pub(crate) use version::version_priority;
