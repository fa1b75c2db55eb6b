//! Giving back the memory glibc's malloc keeps once a list is decoded (see
//! `kube_dynamic_informer/_memory.py`): a factory's informers are followed,
//! and each time one of them syncs (its first list, a relist) the package's
//! `trim` is called, off the runtime's threads.

use std::time::Duration;

use kube_dynamic_informer::informer::InformerStatus;
use kube_dynamic_informer::{InformerFactory, InformerHandle};
use pyo3::prelude::*;
use tokio_util::sync::CancellationToken;

use crate::runtime;

/// How often the informers' statuses are read.
const EVERY: Duration = Duration::from_secs(1);

/// Follows `factory`'s informers until `stop`, trimming after each list.
pub(crate) fn trim_after_lists(factory: InformerFactory, stop: CancellationToken) {
    runtime().spawn(async move {
        // Each informer seen, and whether it was synced when last read.
        let mut seen: Vec<(InformerHandle, bool)> = Vec::new();
        loop {
            let informers = factory.informers();
            let mut listed = false;
            for handle in &informers {
                let synced = matches!(
                    handle.status(),
                    InformerStatus::Synced | InformerStatus::Stale { .. }
                );
                match seen.iter_mut().find(|(known, _)| known == handle) {
                    Some((_, was)) => {
                        listed |= synced && !*was;
                        *was = synced;
                    }
                    None => {
                        listed |= synced;
                        seen.push((handle.clone(), synced));
                    }
                }
            }
            seen.retain(|(known, _)| informers.contains(known));
            if listed {
                let _ = tokio::task::spawn_blocking(trim).await;
            }
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep(EVERY) => {}
            }
        }
    });
}

/// Calls `kube_dynamic_informer._memory.trim()`, unless the interpreter is
/// gone; a failure is reported as an unraisable exception.
fn trim() {
    Python::try_attach(|py| {
        let called = py
            .import("kube_dynamic_informer._memory")
            .and_then(|module| module.call_method0("trim"));
        if let Err(e) = called {
            e.write_unraisable(py, None);
        }
    });
}
