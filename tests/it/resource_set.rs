//! Resource sets against the real server: patterns following CRDs as they
//! come, change version and go; reloads of a running `kdi watch`; access
//! checks for a user who may watch only part of what is declared.

mod access;
#[cfg(feature = "cli")]
mod cli;
mod example;
mod patterns;
mod shard_group;
