//! `watch` and `get` over several clusters (`--context` repeated,
//! `--all-contexts`, or a config file's `clusters:` section): one cluster
//! set, the cluster a field of every JSON line and a column of tables.
//!
//! A cluster that cannot be reached, refuses access or does not serve a
//! resource is reported on stderr, one line per cluster and resource, and
//! never holds up the others: `watch` goes on printing what the others
//! send (and the late cluster's events once it answers); `get` prints what
//! synced and exits with the not-synced code.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::path::PathBuf;

use kube_dynamic_informer::declarative::InformerSet;
use kube_dynamic_informer::declarative::{
    ClusterEvent, ClusterSet, ClusterSyncReport, ResourceState, clusters_from_all_contexts,
    clusters_from_contexts,
};
use kube_dynamic_informer::factory::InformerHandle;
use kube_dynamic_informer::informer::SyncPolicy;
use kube_dynamic_informer::vocabulary::error_chain;
use serde_json::json;

use crate::cluster::{Cluster, read_kubeconfig};
use crate::exit::Failure;
use crate::get::GetArgs;
use crate::output::{Origin, Printable, event_line, print_objects, printable, say, written};
use crate::stderr::Stderr;
use crate::watch::WatchArgs;
use kube_dynamic_informer::cache::Redaction;

/// Which clusters the command line names.
pub struct Contexts<'a> {
    pub kubeconfig: Option<&'a PathBuf>,
    pub contexts: &'a [String],
    pub all: bool,
}

impl Contexts<'_> {
    /// Whether the command runs over a cluster set rather than one cluster.
    pub fn many(&self, set: &InformerSet) -> bool {
        self.several() || !set.clusters.is_empty()
    }

    /// Whether the command line names more than one cluster.
    pub fn several(&self) -> bool {
        self.all || self.contexts.len() > 1
    }

    /// Connects to the cluster of the first context named (else the
    /// kubeconfig's current one).
    pub async fn connect(&self) -> Result<Cluster, Failure> {
        Cluster::connect(self.kubeconfig, self.contexts.first().map(String::as_str)).await
    }
}

/// The cluster set of `set` over the clusters the command line and the
/// file's `clusters:` section name, not started.
async fn build(contexts: &Contexts<'_>, set: &InformerSet) -> Result<ClusterSet, Failure> {
    let clusters_set = set.cluster_set();
    let mut clusters = set.clusters.clusters().await.map_err(Failure::usage)?;
    if contexts.all || !contexts.contexts.is_empty() {
        let kubeconfig = read_kubeconfig(contexts.kubeconfig)?;
        let named = if contexts.all {
            clusters_from_all_contexts(&kubeconfig).await
        } else {
            clusters_from_contexts(&kubeconfig, contexts.contexts).await
        };
        clusters.extend(named.map_err(Failure::usage)?);
    }
    if clusters.is_empty() {
        return Err(Failure::usage(
            "no cluster named: the kubeconfig has no context",
        ));
    }
    for (name, config) in clusters {
        clusters_set
            .add_cluster(name, config)
            .map_err(Failure::usage)?;
    }
    Ok(clusters_set)
}

/// Says, one line per cluster and resource, what did not sync: as JSON
/// lines when stderr is not a terminal.
fn report(sync: &ClusterSyncReport) -> bool {
    let json = Stderr::process().json();
    for r in &sync.results {
        let Err(e) = &r.result else { continue };
        if json {
            say(json!({
                "cluster": r.cluster.as_deref(),
                "informer": &*r.resource,
                "synced": false,
                "reason": e.reason(),
                "message": error_chain(e),
            }));
        } else {
            say(format!("kdi: {}", error_chain(e)));
        }
    }
    sync.all_synced()
}

/// Says which clusters and resources are still not synced, and why.
fn still_waiting(set: &ClusterSet) {
    let json = Stderr::process().json();
    for (cluster, resource, state) in set.status() {
        let why = match state {
            ResourceState::Informer(status) if status.is_synced() => continue,
            ResourceState::Informer(status) => status.to_string(),
            ResourceState::Unresolved { unreachable, error } => {
                let error = error.unwrap_or_else(|| "no answer yet".into());
                if unreachable {
                    format!("unreachable: {error}")
                } else {
                    error
                }
            }
            _ => continue,
        };
        if json {
            say(json!({
                "cluster": &*cluster,
                "informer": &*resource,
                "synced": false,
                "waiting": why,
            }));
        } else {
            say(format!(
                "kdi: cluster {cluster}: {resource}: still waiting: {why}"
            ));
        }
    }
}

fn redaction(informer: Option<&InformerHandle>, sensitive: bool, show: bool) -> Redaction {
    match informer {
        Some(gi) => Redaction::for_resource(&gi.resource(), sensitive, show),
        None if show => Redaction::None,
        None => Redaction::AllButMetadata,
    }
}

/// `{"cluster": ..., ...}`: the cluster as the first field of a JSON line.
fn with_cluster(cluster: &str, line: &str) -> String {
    let cluster = json!({ "cluster": cluster }).to_string();
    match line.strip_prefix('{') {
        Some("}") => cluster,
        // The cluster's object without its closing brace, then the line's.
        Some(fields) => format!("{},{fields}", &cluster[..cluster.len() - 1]),
        None => line.to_string(),
    }
}

/// `kdi watch` over a cluster set.
pub async fn watch(
    contexts: &Contexts<'_>,
    set: InformerSet,
    args: WatchArgs,
) -> Result<(), Failure> {
    if let Some(addr) = args.metrics_addr {
        crate::metrics::serve(addr)?;
    }
    let clusters = build(contexts, &set).await?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    {
        let set_for_handler = clusters.clone();
        let (object, skip_initial, show) = (args.object, args.skip_initial, args.show_secrets);
        let wanted = args.index_values.clone();
        // Per cluster and resource: the indexes `--index-values` shows
        // (compiled by the cluster's resource set), and the redaction.
        let shown = parking_lot::Mutex::new(BTreeMap::new());
        clusters.add_handler(move |e: ClusterEvent| {
            if crate::watch::skipped_as_initial(&e.event, skip_initial) {
                return;
            }
            let mut shown = shown.lock();
            let (resource, redaction, indexes) =
                match shown.entry((e.cluster.clone(), e.resource.clone())) {
                    Entry::Occupied(known) => known.into_mut(),
                    Entry::Vacant(new) => {
                        let Some(m) = set_for_handler.member(&e.cluster, &e.resource) else {
                            return;
                        };
                        let label = m.informer.resource().to_string();
                        let redaction = redaction(Some(&m.informer), m.sensitive, show);
                        new.insert((label, redaction, crate::indexes::shown(&wanted, &m.indexes)))
                    }
                };
            let line = event_line(&e.resource, resource, &e.event, object, *redaction, indexes);
            let _ = tx.send(with_cluster(&e.cluster, &line));
        });
    }
    clusters.start().map_err(Failure::cluster)?;
    // Reported after `--timeout` while events already flow, then every
    // `--progress-interval` for what still waits; late clusters join when
    // they answer.
    let reporting = {
        let clusters = clusters.clone();
        let timeout = args.selection.timeout;
        let interval = args.selection.progress_interval;
        tokio::spawn(async move {
            if !timeout.is_zero() {
                report(&clusters.wait_for_cache_sync(timeout).await);
            }
            loop {
                tokio::time::sleep(interval).await;
                still_waiting(&clusters);
            }
        })
    };
    let deadline = crate::stop::deadline(args.duration);
    let result = crate::watch::print_lines(&mut rx, deadline, args.max_events).await;
    reporting.abort();
    clusters.shutdown().await;
    result
}

/// `kdi get` over a cluster set.
pub async fn get(contexts: &Contexts<'_>, set: InformerSet, args: GetArgs) -> Result<(), Failure> {
    let clusters = build(contexts, &set).await?;
    clusters.start().map_err(Failure::cluster)?;
    let timeout = if args.selection.timeout.is_zero() {
        std::time::Duration::MAX
    } else {
        args.selection.timeout
    };
    // One-shot: a cluster that refuses (403, 401) is said at once, as for
    // one cluster, rather than at the timeout.
    let synced = report(
        &clusters
            .wait_for_cache_sync_with(timeout, SyncPolicy::GiveUpWhenRefused)
            .await,
    );
    let mut rows: Vec<(String, Printable)> = Vec::new();
    // The informers named, then what patterns selected in any cluster.
    for name in clusters.resources() {
        let name = &*name;
        let lister = clusters.lister(name);
        for cluster in clusters.clusters() {
            let Some(one) = lister.cluster(&cluster) else {
                continue;
            };
            let found = args.query(name, &one)?;
            let member = clusters.member(&cluster, name);
            let redaction = redaction(
                member.as_ref().map(|m| &m.informer),
                member.as_ref().is_some_and(|m| m.sensitive),
                args.show_secrets,
            );
            rows.extend(
                found
                    .into_iter()
                    .map(|o| (cluster.to_string(), printable(redaction, o))),
            );
        }
    }
    rows.sort_by_cached_key(|(c, o)| (c.clone(), o.sort_key()));
    let result = written(print_objects(
        &mut std::io::stdout().lock(),
        &rows,
        Origin::of(&set, true),
        args.output,
    ));
    clusters.shutdown().await;
    result?;
    if synced {
        Ok(())
    } else {
        Err(Failure::not_synced("some caches did not sync; see above"))
    }
}

#[cfg(test)]
mod tests {
    use super::with_cluster;

    #[test]
    fn the_cluster_leads_each_line() {
        assert_eq!(
            with_cluster("east", r#"{"type":"Add"}"#),
            r#"{"cluster":"east","type":"Add"}"#
        );
        assert_eq!(with_cluster("a\"b", "{}"), r#"{"cluster":"a\"b"}"#);
    }
}
