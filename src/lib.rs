//! Indexed, shared informers for any Kubernetes resource chosen at run time.
//!
//! `kube-dynamic-informer` keeps an in-memory, indexed, always-current copy of
//! any Kubernetes resource — built-in or custom — named at run time, with no
//! generated types. Objects are [`kube_core::DynamicObject`]s, indexes are
//! JMESPath expressions (or Rust closures), and one informer per resource
//! serves any number of event handlers.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod backoff;
#[cfg(feature = "config")]
pub mod config;
pub mod discovery;
pub mod factory;
pub mod index;
pub mod informer;
pub mod lister;
pub mod reflector;
pub mod resource;
pub mod resync;
pub mod selector;
pub mod store;
