//! The wire: listing and watching a resource on the API server, and
//! decoding what comes back, object by object.
//!
//! [`ListWatch`] is the seam an informer reads through; [`ApiListWatch`] is
//! the one that talks to a cluster. Tests and custom sources implement the
//! trait themselves.
//!
//! # List and watch
//!
//! The server side of an informer: list a resource, watch it from a
//! resourceVersion.
//!
//! [`ListWatch`] is the small trait the [reflector](crate::informer) drives;
//! [`ApiListWatch`] is its one implementation over the API server, for all
//! namespaces, one or several, full objects or metadata only, following
//! discovery when given an availability channel. Tests implement the trait
//! with scripted answers.
//!
//! Responses are read object by object (see [`MAX_OBJECT_DEPTH`]): an
//! object that cannot be decoded is left out of its list page
//! ([`ListPage::skipped`]); a watch event's object is handed on as the JSON
//! the server sent ([`WireObject`]), decoded — or read straight into a
//! compact cache's form — by the informer, which skips one that does not
//! decode; neither fails the page or stalls the watch. Errors say what
//! happened ([`ListWatchError`]): the server's own status, a transport
//! failure, or a request this list-watch cannot make — never a made-up HTTP
//! status.

pub(crate) mod list_watch;

pub use list_watch::{
    ApiListWatch, Capabilities, INITIAL_EVENTS_END_ANNOTATION, ListPage, ListWatch, ListWatchError,
    MAX_OBJECT_DEPTH, UndecodableObject, WatchEvent, WatchStream, WireObject, decode_list,
};
