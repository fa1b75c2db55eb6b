//! The words every other layer speaks: resource names and keys, scope,
//! object keys, label and field selectors, shard ranges and durations.
//!
//! Nothing here talks to a cluster or holds state; each module is a value
//! type with its parser and its rules.

pub mod duration;
pub mod object_key;
pub mod resource;
pub mod scope;
pub mod selector;
pub mod shard;
