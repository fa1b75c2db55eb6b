//! When a command stops by itself: its `--duration` (from the command's
//! start, the wait for the caches included), or the process told to stop
//! with SIGINT (Ctrl-C) or SIGTERM (how Kubernetes stops a pod). Either
//! ends the command normally: informers stopped, shard groups left,
//! output flushed, exit 0.

use std::time::Duration;

use tokio::time::Instant;

/// The instant `duration` from now; `None` for no duration (or one past
/// the clock's end).
pub fn deadline(duration: Option<Duration>) -> Option<Instant> {
    duration.and_then(|d| Instant::now().checked_add(d))
}

/// Resolves at `deadline`; never without one.
pub async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Resolves at the first SIGINT or SIGTERM.
pub async fn signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// Resolves at `deadline` or at a stop signal, whichever comes first.
pub async fn stopped(deadline: Option<Instant>) {
    tokio::select! {
        () = until(deadline) => {}
        () = signal() => {}
    }
}
