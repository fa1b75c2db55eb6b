//! What kdi says on stderr while informers sync.

use kube_dynamic_informer::informer::InformerStatus;
use tokio_util::sync::CancellationToken;

use crate::informers::Declared;

/// Prints each informer's status changes on stderr (a terminal) until
/// cancelled.
pub fn spawn_progress(informers: &[Declared]) -> CancellationToken {
    let cancel = CancellationToken::new();
    for Declared { name, informer, .. } in informers {
        let mut status = informer.informer().watch_status();
        let name = name.clone();
        let cancel = cancel.clone();
        let store = informer.informer().store();
        tokio::spawn(async move {
            loop {
                let line = match &*status.borrow_and_update() {
                    InformerStatus::NotStarted => None,
                    InformerStatus::Syncing { listed } => {
                        Some(format!("syncing, {listed} objects listed"))
                    }
                    InformerStatus::Synced => Some(format!("synced, {} objects", store.len())),
                    other => Some(other.to_string()),
                };
                if let Some(line) = line {
                    eprintln!("kdi: {name}: {line}");
                }
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    changed = status.changed() => if changed.is_err() { return },
                }
            }
        });
    }
    cancel
}
