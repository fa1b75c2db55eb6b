//! One cluster of a set: its resource set, run and followed.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{ClusterEvent, SetHandler, SetInner};
use crate::declarative::config::InformerSet;
use crate::declarative::resource_set::EntryFailure;
use crate::declarative::{ResourceSet, SetEvent, SetMember};
use crate::factory::InformerFactory;
use crate::informer::options::InformerOptions;
use crate::informer::{Event, NotSynced};
use crate::vocabulary::error_chain;

/// `options` for cluster `cluster`: snapshots in a directory of its own
/// (`DIR/cluster-NAME`), as one directory holds one cluster's.
pub(super) fn in_cluster_dir(mut options: InformerOptions, cluster: &str) -> InformerOptions {
    if let Some(snapshot) = &mut options.snapshot {
        snapshot.dir = snapshot.dir.join(format!("cluster-{cluster}"));
    }
    options
}

/// One member of a cluster's resource set, under the name the cluster set
/// gives it.
#[derive(Clone)]
pub(super) struct HeldMember {
    pub(super) member: SetMember,
    /// Cancelled when the member leaves, so that the handlers attached to
    /// its informer (which another member may keep running) stop.
    pub(super) left: CancellationToken,
}

/// What one cluster's resource set holds, by the names the cluster set
/// gives its members: an informer's name, or the resource a pattern
/// selected.
#[derive(Default)]
pub(super) struct Held {
    pub(super) members: BTreeMap<Arc<str>, HeldMember>,
    /// Why an entry has no informer there (yet), by entry name.
    pub(super) failures: BTreeMap<Arc<str>, EntryFailure>,
    /// The version of the set's config last applied there (see
    /// `SetInner::config_changed`).
    pub(super) converged: Option<u64>,
}

/// The name the cluster set gives a member.
pub(super) fn member_name(member: &SetMember) -> Arc<str> {
    if member.from_pattern {
        member.resource.as_str().into()
    } else {
        member.entry.as_str().into()
    }
}

pub(super) fn unreachable(failure: &EntryFailure) -> bool {
    matches!(failure.answer, Some(NotSynced::Unreachable { .. }))
}

pub(super) struct ClusterEntry {
    pub(super) name: Arc<str>,
    pub(super) factory: InformerFactory,
    pub(super) cancel: CancellationToken,
    pub(super) held: Mutex<Held>,
    /// The cluster's resource set, once made.
    pub(super) set: Mutex<Option<ResourceSet>>,
    /// Bumped whenever `held` changes, for waiters.
    pub(super) changed: watch::Sender<u64>,
    pub(super) task: Mutex<Option<JoinHandle<()>>>,
}

impl ClusterEntry {
    pub(super) fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    /// The names of the members and failed entries to report, in order:
    /// the informers named one by one, then (sorted) what patterns
    /// selected or left out there and the patterns that could not be
    /// evaluated.
    pub(super) fn names(&self, config: &InformerSet) -> Vec<Arc<str>> {
        let held = self.held.lock();
        let mut names: Vec<Arc<str>> = config
            .informers
            .iter()
            .map(|spec| spec.name().into())
            .collect();
        let others: std::collections::BTreeSet<Arc<str>> = held
            .members
            .keys()
            .chain(held.failures.keys())
            .filter(|name| !names.contains(name))
            .cloned()
            .collect();
        names.extend(others);
        names
    }
}

pub(super) fn attach_handler(
    cluster: &Arc<str>,
    name: &Arc<str>,
    held: &HeldMember,
    handler: SetHandler,
) {
    let cluster_name = cluster.clone();
    let resource = name.clone();
    let left = held.left.clone();
    // The entry's filter and changes, as for the handlers of a resource set.
    let options = held
        .member
        .handler_options()
        .name(format!("cluster-set {cluster_name} {resource}"));
    // The registration lives as long as the informer, which stops when the
    // cluster is removed; the token keeps calls already queued from reaching
    // the handler afterwards, and after the member left.
    let _registration = held.member.informer.informer().add_handler_with(
        move |event: Event| {
            if left.is_cancelled() {
                return;
            }
            handler(ClusterEvent {
                cluster: cluster_name.clone(),
                resource: resource.clone(),
                event,
            });
        },
        options,
    );
}

pub(super) fn start_cluster(inner: &Arc<SetInner>, entry: &Arc<ClusterEntry>) {
    let mut task = entry.task.lock();
    if task.is_none() {
        let run = run_cluster(Arc::downgrade(inner), entry.clone());
        let run = crate::informer::telemetry::in_cluster(entry.name.clone(), run);
        *task = Some(tokio::spawn(run));
    }
}

pub(super) async fn stop_cluster(entry: &ClusterEntry) {
    entry.cancel.cancel();
    let task = entry.task.lock().take();
    if let Some(task) = task {
        let _ = task.await;
    }
    let set = entry.set.lock().take();
    if let Some(set) = set {
        set.shutdown().await;
    }
    entry.factory.shutdown().await;
    *entry.held.lock() = Held::default();
    entry.bump();
}

/// Runs the set's config in one cluster through a resource set of its
/// own: applies the config, again after failures (with backoff) and
/// whenever it changes, and follows the set's members, until the cluster
/// is removed.
pub(super) async fn run_cluster(set: Weak<SetInner>, cluster: Arc<ClusterEntry>) {
    let Some(inner) = set.upgrade() else { return };
    let mut config_changed = inner.config_changed.subscribe();
    let (retry, policy) = (inner.retry, inner.policy.clone());
    // Nothing in an empty config can be refused.
    let empty = InformerSet::new(inner.config_for(&cluster.name).defaults);
    drop(inner);
    let members = ResourceSet::in_factory(cluster.factory.clone(), empty, policy, None).await;
    let resources = match members {
        Ok(resources) => resources,
        Err(e) => {
            tracing::warn!(cluster = %cluster.name, error = %error_chain(&e), "could not run a cluster's resource set");
            return;
        }
    };
    let (_, mut events) = resources.subscribe().await;
    if let Err(e) = resources.start() {
        tracing::warn!(cluster = %cluster.name, error = %error_chain(&e), "could not start a cluster's informers");
        return;
    }
    *cluster.set.lock() = Some(resources.clone());
    let mut delay = None;
    loop {
        let version = *config_changed.borrow_and_update();
        let Some(config) = set.upgrade().map(|inner| inner.config_for(&cluster.name)) else {
            return;
        };
        let failures = tokio::select! {
            () = cluster.cancel.cancelled() => return,
            failures = resources.converge(config) => failures,
        };
        while let Ok(event) = events.try_recv() {
            follow_member(&set, &cluster, event);
        }
        delay = (!failures.is_empty())
            .then(|| delay.map_or(retry.initial, |d: Duration| (d * 2).min(retry.max)));
        record_failures(&cluster, failures, version);
        let wake = crate::factory::sleep_or_never(delay);
        tokio::pin!(wake);
        loop {
            tokio::select! {
                () = cluster.cancel.cancelled() => return,
                () = &mut wake => break,
                r = config_changed.changed() => if r.is_err() { return } else { break },
                Some(event) = events.recv() => follow_member(&set, &cluster, event),
            }
        }
    }
}

/// Records why entries have no informer in `cluster` (keeping the entries
/// skipped, which their resource set rechecks by itself) once version
/// `version` of the config was applied there.
pub(super) fn record_failures(
    cluster: &ClusterEntry,
    failures: BTreeMap<String, EntryFailure>,
    version: u64,
) {
    {
        let mut held = cluster.held.lock();
        held.converged = Some(version);
        held.failures.retain(|_, f| f.skipped);
        for (entry, failure) in failures {
            held.failures.insert(entry.into(), failure);
        }
    }
    cluster.bump();
}

/// Follows a change of a cluster's resource set: a member that joins gets
/// the set's handlers and indexes; one that leaves stops reaching them.
pub(super) fn follow_member(set: &Weak<SetInner>, cluster: &ClusterEntry, event: SetEvent) {
    let Some(inner) = set.upgrade() else { return };
    // Under the set's lock, so that a handler or index added meanwhile is
    // attached exactly once.
    let state = inner.state.lock();
    let mut held = cluster.held.lock();
    match event {
        SetEvent::Added(member) | SetEvent::Updated(member) => {
            let name = member_name(&member);
            held.failures.remove(&name);
            let same = held
                .members
                .get(&name)
                .is_some_and(|h| h.member.informer == member.informer);
            if same {
                return;
            }
            let joined = HeldMember {
                member,
                left: cluster.cancel.child_token(),
            };
            for (_, index, func) in state.indexes.iter().filter(|(r, _, _)| *r == name) {
                if let Err(e) = joined
                    .member
                    .informer
                    .informer()
                    .add_index(index.clone(), func.clone())
                {
                    tracing::warn!(cluster = %cluster.name, error = %error_chain(&e), "adding an index");
                }
            }
            for handler in &state.handlers {
                attach_handler(&cluster.name, &name, &joined, handler.clone());
            }
            if let Some(before) = held.members.insert(name, joined) {
                before.left.cancel();
            }
        }
        SetEvent::Removed { member, .. } => {
            let name = member_name(&member);
            if held
                .members
                .get(&name)
                .is_some_and(|h| h.member.informer == member.informer)
                && let Some(before) = held.members.remove(&name)
            {
                before.left.cancel();
            }
        }
        SetEvent::Skipped(skipped) => {
            let name = if state
                .config
                .informers
                .iter()
                .any(|i| i.name() == skipped.entry)
            {
                skipped.entry.as_str().into()
            } else {
                skipped.resource.as_str().into()
            };
            let failure = EntryFailure {
                error: skipped.reason.clone(),
                answer: Some(skipped.not_synced()),
                skipped: true,
            };
            held.failures.insert(name, failure);
        }
        SetEvent::Reloaded(_) => return,
    }
    drop(held);
    cluster.bump();
}
