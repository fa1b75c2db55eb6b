//! The informer fed by a scripted server: dispatch, replay, isolation,
//! reconciliation and resync, in each storage mode. Behaviour that depends
//! on a real server is tested in `tests/it/`.

mod objects {
    const STORAGE: crate::options::Storage = crate::options::Storage::Objects;
    include!("cases.rs");
}

mod compact {
    const STORAGE: crate::options::Storage = crate::options::Storage::Compact;
    include!("cases.rs");
}
