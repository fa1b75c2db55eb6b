//! Reloading a set's config file when it changes or when the process is
//! told to (SIGHUP).

use std::path::PathBuf;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::ResourceSet;
use crate::declarative::config::InformerSet;

/// What makes [`ResourceSet::follow_file`] reload the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReloadTriggers {
    /// Read the file this often and reload when its bytes changed (an
    /// edit, a ConfigMap volume's atomic swap); `None` never reads it
    /// unasked.
    pub check_every: Option<Duration>,
    /// Reload at every SIGHUP (Unix; elsewhere there is none).
    pub on_sighup: bool,
}

impl Default for ReloadTriggers {
    /// Every 2 seconds, and at SIGHUP.
    fn default() -> Self {
        Self {
            check_every: Some(Duration::from_secs(2)),
            on_sighup: true,
        }
    }
}

impl ResourceSet {
    /// Reloads the config file `path` whenever a trigger fires (see
    /// [`ReloadTriggers`]), with `adjust` applied to each load as in
    /// [`reload_file_with`](Self::reload_file_with) (settings given apart
    /// from the file). Each outcome arrives as a
    /// [`SetEvent::Reloaded`](super::SetEvent::Reloaded); a file that
    /// cannot be read or is invalid leaves the set as it was. Runs on the
    /// current tokio runtime until `cancel`.
    ///
    /// ```no_run
    /// use kube_dynamic_informer::declarative::{ReloadTriggers, ResourceSet};
    /// use tokio_util::sync::CancellationToken;
    ///
    /// # fn demo(set: ResourceSet) {
    /// let stop = CancellationToken::new();
    /// let follower = set.follow_file("informers.yaml", ReloadTriggers::default(), |_| Ok(()), stop.clone());
    /// // ... later
    /// stop.cancel();
    /// # drop(follower);
    /// # }
    /// ```
    pub fn follow_file(
        &self,
        path: impl Into<PathBuf>,
        triggers: ReloadTriggers,
        adjust: impl Fn(&mut InformerSet) -> Result<(), String> + Send + Sync + 'static,
        cancel: CancellationToken,
    ) -> JoinHandle<()> {
        let set = self.clone();
        let path = path.into();
        // Read now, not in the task: a change written right after this call
        // is a change.
        let mut last_seen = std::fs::read(&path).ok();
        tokio::spawn(async move {
            let mut hangups = hangups(triggers.on_sighup);
            let period = triggers.check_every.filter(|d| !d.is_zero());
            let mut checks = period.map(|p| {
                let mut i = tokio::time::interval(p);
                i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                i
            });
            loop {
                let check = async {
                    match &mut checks {
                        Some(i) => {
                            i.tick().await;
                        }
                        None => futures::future::pending().await,
                    }
                };
                let reload = tokio::select! {
                    _ = cancel.cancelled() => return,
                    () = check => {
                        let now = std::fs::read(&path).ok();
                        let changed = now.is_some() && now != last_seen;
                        if changed {
                            last_seen = now;
                        }
                        changed
                    }
                    Some(()) = hangups.recv() => true,
                };
                if reload {
                    // The outcome comes back as a Reloaded event.
                    let _ = set.reload_file_with(&path, &adjust).await;
                }
            }
        })
    }
}

/// SIGHUP, as a stream of unit values (never, where there is none or it is
/// not wanted).
fn hangups(wanted: bool) -> tokio::sync::mpsc::UnboundedReceiver<()> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    #[cfg(unix)]
    if wanted {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut hup) = signal(SignalKind::hangup()) {
            tokio::spawn(async move {
                while hup.recv().await.is_some() {
                    if tx.send(()).is_err() {
                        return;
                    }
                }
            });
            return rx;
        }
    }
    #[cfg(not(unix))]
    let _ = wanted;
    drop(tx);
    rx
}
