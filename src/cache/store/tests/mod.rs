//! The store's tests, run against each storage mode.

mod objects {
    const STORAGE: crate::informer::options::Storage = crate::informer::options::Storage::Objects;
    include!("cases.rs");
}

mod compact {
    const STORAGE: crate::informer::options::Storage = crate::informer::options::Storage::Compact;
    include!("cases.rs");
}
