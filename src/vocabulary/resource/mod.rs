//! Naming Kubernetes resources: the [`ResourceKey`] that identifies one, and
//! the [`ResourceName`] a user types to find it.
//!
//! Users name resources the way kubectl taught them to: `pods`, `po`, `Pod`,
//! `deployments.apps`, `deployments.v1.apps`, `apps/v1/deployments`,
//! `widgets.example.com`. Most of these leave something out (the group, the
//! version, or whether the word is a plural, a kind or a short name), and only
//! the API server's discovery data can fill it in. So naming happens in two
//! steps:
//!
//! 1. [`ResourceName::parse`] turns the string into a list of
//!    [candidate interpretations](NameCandidate), in priority order, without
//!    talking to a server. The dotted form is syntactically ambiguous:
//!    `widgets.v1alpha1.example.com` is `resource.version.group`, but
//!    `widgets.example.com` is `resource.group`; as kubectl does, the first
//!    reading is preferred when the second segment looks like a Kubernetes
//!    version (`v1`, `v2beta1`, `v1alpha3`) and the other one otherwise.
//! 2. [`ResourceName::resolve`] picks one entry from what discovery reported
//!    ([`KnownResource`]s), trying the candidates in order. Within a candidate
//!    it matches, like kubectl, first the plural or singular name, then a short
//!    name, then the kind, all case-insensitively; a missing version means the
//!    group's preferred version; when several groups match, the core group
//!    wins (so `events` and `Event` are the core ones, as in kubectl), and
//!    otherwise the name is ambiguous and the error lists the choices. An
//!    unknown name gets a few suggestions.
//!
//! Resolved resources are identified by [`ResourceKey`], our own
//! group/version/resource triple: `kube_core::GroupVersionResource` carries a
//! private, serde-defaulted `api_version` field that takes part in equality
//! and hashing, so two values that look equal can differ as map keys.
//!
//! ```
//! use kube_dynamic_informer::resource::{KnownResource, ResourceName};
//!
//! let known = [KnownResource {
//!     group: "apps".into(),
//!     version: "v1".into(),
//!     plural: "deployments".into(),
//!     singular: "deployment".into(),
//!     kind: "Deployment".into(),
//!     short_names: vec!["deploy".into()],
//!     namespaced: true,
//!     preferred_version: true,
//! }];
//! for typed in ["deploy", "Deployment", "deployments.apps", "apps/v1/deployments"] {
//!     let found = ResourceName::parse(typed)?.resolve(&known)?;
//!     assert_eq!(found.key().to_string(), "deployments.v1.apps");
//! }
//! # Ok::<(), kube_dynamic_informer::resource::ResourceError>(())
//! ```

mod error;
mod key;
mod name;
mod resolve;
#[cfg(test)]
mod tests;
mod version;

pub use error::ResourceError;
pub use key::ResourceKey;
pub use name::{NameCandidate, ResourceName};
pub use resolve::KnownResource;
