//! The cache: the store and its indexes, the compact form objects are kept
//! in, the projection and transform applied before an object is cached, and
//! the lister that reads it.

pub mod compact;
pub mod index;
pub mod lister;
pub mod projection;
pub mod store;
pub mod transform;
