//! Integration tests against a real kube-apiserver (see `support` for which).
//!
//! All integration tests live in this one test binary so that one control
//! plane serves them all.

mod support;

#[cfg(feature = "cli")]
mod cli;

mod cluster_set;
mod condition;
mod discovery;
mod factory;
mod filter;
mod freshness;
mod informer;
mod lister;
mod measure;
mod projection;
mod reconcile;
mod reliability;
mod resource_set;
mod scale;
#[cfg(feature = "serve")]
mod serve;
mod shard;
mod snapshot;
mod sync_reasons;
mod testenv;
