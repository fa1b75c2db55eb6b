//! Starting and stopping a factory's informers.

use super::*;

impl InformerFactory {
    /// Starts every informer asked for so far; those asked for later start
    /// at once. Also starts keeping discovery current (watching CRDs and
    /// APIServices). Calling it again does nothing.
    ///
    /// # Errors
    /// [`FactoryError::NoRuntime`] outside a tokio runtime;
    /// [`FactoryError::ShutDown`].
    pub fn start(&self) -> Result<(), FactoryError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(FactoryError::NoRuntime);
        }
        let mut state = self.inner.state.lock();
        if state.shut_down {
            return Err(FactoryError::ShutDown);
        }
        if !state.started && !state.discovery_fixed {
            let discovery = self.inner.discovery.clone();
            let cancel = self.inner.cancel.child_token();
            state.discovery_task = Some(tokio::spawn(async move {
                discovery.keep_current(cancel).await;
            }));
        }
        state.started = true;
        for entry in state.entries.values_mut() {
            start_entry(entry);
        }
        Ok(())
    }

    /// Whether [`start`](Self::start) keeps discovery current (the
    /// default): watching CRDs and APIServices, so that informers of a
    /// resource not served yet start once it is, and ones whose CRD goes
    /// away say so. A program whose resources are all served and that need
    /// not see CRDs come and go — a one-shot wait, `kdi wait` on resources
    /// served when it starts — turns it off before `start`, and makes no
    /// request beyond discovery's first read and its informers' lists and
    /// watches. Asked after `start`, it changes nothing.
    ///
    /// ```no_run
    /// # async fn demo(factory: kube_dynamic_informer::InformerFactory) -> Result<(), Box<dyn std::error::Error>> {
    /// let pods = factory.for_resource("pods").await?;
    /// if pods.api_resource().is_some() {
    ///     factory.follow_discovery(false);
    /// }
    /// factory.start()?;
    /// # Ok(()) }
    /// ```
    pub fn follow_discovery(&self, follow: bool) {
        self.inner.state.lock().discovery_fixed = !follow;
    }

    /// Stops every informer, then lets go of the shard groups they follow
    /// (their Leases released, so that the other members take the slots at
    /// once), waiting at most `timeout` in all: what a process does when it
    /// is told to stop (SIGTERM, as Kubernetes stops a pod). Whatever has
    /// not finished by then is left (a group's Leases then expire as if the
    /// process had died). Returns whether everything finished.
    ///
    /// ```no_run
    /// # async fn demo(factory: kube_dynamic_informer::InformerFactory) {
    /// use std::time::Duration;
    ///
    /// // SIGINT here; an application in a pod waits for SIGTERM too.
    /// let _ = tokio::signal::ctrl_c().await;
    /// // Within the pod's terminationGracePeriodSeconds (30 s by default).
    /// factory.shutdown_within(Duration::from_secs(20)).await;
    /// # }
    /// ```
    pub async fn shutdown_within(&self, timeout: Duration) -> bool {
        let sources: std::collections::HashSet<_> = self
            .informers()
            .iter()
            .filter_map(|informer| informer.options().cache.shard_group.clone())
            .collect();
        let stop = async {
            self.shutdown().await;
            futures::future::join_all(sources.iter().map(|s| s.release())).await;
        };
        tokio::time::timeout(timeout, stop).await.is_ok()
    }

    /// Stops every informer and the discovery watch, and waits until they
    /// have stopped. The factory hands out nothing afterwards. Shard groups
    /// are left to their owners (see
    /// [`shutdown_within`](Self::shutdown_within)).
    pub async fn shutdown(&self) {
        let (entries, discovery_task) = {
            let mut state = self.inner.state.lock();
            state.shut_down = true;
            (
                state.entries.drain().map(|(_, e)| e).collect::<Vec<_>>(),
                state.discovery_task.take(),
            )
        };
        self.inner.cancel.cancel();
        stop_entries(entries).await;
        if let Some(task) = discovery_task {
            let _ = task.await;
        }
    }
}

pub(super) fn start_entry(entry: &mut Entry) {
    if entry.handle.is_some() {
        return;
    }
    match entry.informer.informer.start(entry.cancel.clone()) {
        Ok(handle) => entry.handle = Some(handle),
        Err(err) => {
            tracing::warn!(resource = %entry.informer.resource, error = %crate::vocabulary::error_chain(&err), "could not start an informer")
        }
    }
}

pub(super) async fn stop_entries(entries: Vec<Entry>) {
    for entry in &entries {
        entry.cancel.cancel();
    }
    for entry in entries {
        if let Some(handle) = entry.handle {
            let _ = handle.await;
        }
    }
}
