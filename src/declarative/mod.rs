//! The declarative layer: informers described rather than built — config
//! files, resource sets that keep a file's informers running as the file and
//! the cluster change, cluster sets over many clusters, and shard groups that
//! split a resource between the members of a deployment.

pub mod cluster_set;
#[cfg(feature = "config")]
pub mod config;
#[cfg(feature = "config")]
pub mod resource_set;
pub mod shard_group;
