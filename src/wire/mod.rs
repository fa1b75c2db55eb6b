//! The wire: listing and watching a resource on the API server, and
//! decoding what comes back, object by object.

pub mod list_watch;
