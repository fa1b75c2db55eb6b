//! The informer fed by a scripted server: dispatch, replay, isolation,
//! reconciliation and resync, in each storage mode. Behaviour that depends
//! on a real server is tested in `tests/it/`.

mod objects {
    const STORAGE: crate::informer::options::Storage = crate::informer::options::Storage::Objects;
    include!("cases.rs");
}

mod compact {
    const STORAGE: crate::informer::options::Storage = crate::informer::options::Storage::Compact;
    include!("cases.rs");
}
