//! The lister's tests, run against each storage mode.

mod objects {
    const STORAGE: crate::cache::store::Storage = crate::cache::store::Storage::Objects;
    include!("cases.rs");
}

mod compact {
    const STORAGE: crate::cache::store::Storage = crate::cache::store::Storage::Compact;
    include!("cases.rs");
}
