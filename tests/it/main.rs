//! Integration tests against a real kube-apiserver (see `support` for which).
//!
//! All integration tests live in this one test binary so that one control
//! plane serves them all.

mod support;

#[cfg(feature = "cli")]
mod cli;

mod discovery;
mod factory;
mod informer;
mod lister;
mod measure;
mod projection;
mod reliability;
mod shard;
mod testenv;
