//! The lister's tests, run against each storage mode.

mod objects {
    const STORAGE: crate::options::Storage = crate::options::Storage::Objects;
    include!("cases.rs");
}

mod compact {
    const STORAGE: crate::options::Storage = crate::options::Storage::Compact;
    include!("cases.rs");
}
