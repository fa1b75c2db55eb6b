//! `kdi wait`: until a condition holds for objects of the caches (all,
//! any or none of them), or until they are deleted; the library's
//! [`Wait`], over the informers of the command line.
//!
//! A line per object on stdout: those that held when the wait ends, those
//! that did not when it times out (JSON when stdout is not a terminal);
//! what the caches do, and how many objects hold at each
//! `--progress-interval`, on stderr.

use std::io::IsTerminal;
use std::time::Duration;

use clap::Args;
use kube_dynamic_informer::DiscoveryCache;
use kube_dynamic_informer::declarative::{AccessPolicy, InformerSet, SetMember};
use kube_dynamic_informer::informer::{
    InformerError, ObjectOutcome, ObjectSelection, ObjectState, Objects, Quantifier, SyncPolicy,
    Wait, WaitFor, WaitProgress, WaitReport,
};
use kube_dynamic_informer::vocabulary::{Namespaces, ResourceName, Scope, error_chain};
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::cluster::Cluster;
use crate::exit::Failure;
use crate::indexes::IndexNames;
use crate::informers::{Selection, informer_set, open, read_and_end, start_and_wait};
use crate::output::{print_line, say};
use crate::stderr::Stderr;

#[derive(Args, Debug)]
pub struct WaitArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// Objects to wait for, by name, of the one resource named with -r,
    /// in the namespace of -n (else the kubeconfig's); without names,
    /// every object the informers select (-n, -l, --field-selector,
    /// --index).
    #[arg(value_name = "NAME", conflicts_with_all = ["label_selector", "index"])]
    pub names: Vec<String>,
    /// What must hold: a JMESPath condition that is true or false
    /// (`status.readyReplicas == spec.replicas`), `delete` (the objects
    /// gone), `create` (there), or kubectl's `condition=TYPE[=STATUS]` and
    /// `jsonpath=EXPR[=VALUE]`.
    #[arg(long = "for", value_name = "CONDITION")]
    pub goal: String,
    /// It must hold for every object (the default). A condition needs at
    /// least one object; deletion holds when none is left.
    #[arg(long, group = "quantifier")]
    pub all: bool,
    /// It must hold for at least one object.
    #[arg(long, group = "quantifier")]
    pub any: bool,
    /// It must hold for no object.
    #[arg(long, group = "quantifier")]
    pub none: bool,
    /// Only objects with this index value: NAME=VALUE, NAME an index the
    /// informers declare or `namespace`, built into every cache.
    #[arg(long, value_name = "NAME=VALUE")]
    pub index: Option<String>,
}

impl WaitArgs {
    fn quantifier(&self) -> Quantifier {
        if self.any {
            Quantifier::Any
        } else if self.none {
            Quantifier::None
        } else {
            Quantifier::All
        }
    }
}

/// `--for` and the names, as they are checked before the cluster is
/// contacted.
pub fn check(args: &WaitArgs) -> Result<WaitFor, Failure> {
    let goal = WaitFor::parse(&args.goal)
        .map_err(|e| Failure::usage(format!("--for {:?}: {}", args.goal, error_chain(&e))))?;
    if let Some(name) = args.names.iter().find(|n| n.contains('/') || n.is_empty()) {
        return Err(Failure::usage(format!(
            "{name:?}: objects are named by their name alone; the namespace is -n's (or the kubeconfig's)"
        )));
    }
    if !args.names.is_empty() {
        if args.selection.config.is_some() || args.selection.resource_names().len() != 1 {
            return Err(Failure::usage(
                "objects named on the command line are of one resource, named with -r (and no -f)",
            ));
        }
        if args.selection.namespaces.len() > 1 {
            return Err(Failure::usage(
                "objects named on the command line are in one namespace: give one -n",
            ));
        }
    }
    Ok(goal)
}

/// Named objects of a namespaced resource are in one namespace: -n's,
/// else the kubeconfig's, the only one their informer then lists (for a
/// cluster-scoped resource, none).
pub async fn namespace_of_names(cluster: &Cluster, args: &mut WaitArgs) {
    let sel = &mut args.selection;
    if args.names.is_empty() || !sel.namespaces.is_empty() {
        return;
    }
    let Some(resource) = sel.resource_names().into_iter().next() else {
        return;
    };
    let cluster_scoped = match ResourceName::parse(&resource) {
        Ok(name) => {
            let discovery = DiscoveryCache::new(cluster.client.clone());
            // A resource that cannot be resolved (not served yet) is taken
            // as namespaced; opening the set says what else is wrong.
            discovery
                .resolve(&name)
                .await
                .is_ok_and(|known| !known.namespaced)
        }
        Err(_) => false,
    };
    if !cluster_scoped {
        sel.namespaces = vec![cluster.client.default_namespace().to_owned()];
    }
}

/// The informer set of the arguments, `--index` checked against it.
pub fn informers(args: &WaitArgs) -> Result<InformerSet, Failure> {
    let set = informer_set(&args.selection)?;
    if let Some(index) = &args.index {
        let (name, _) = index
            .split_once('=')
            .ok_or_else(|| Failure::usage(format!("--index {index:?}: expected NAME=VALUE")))?;
        IndexNames::of(&set).check(&format!("--index {index:?}"), name, false)?;
    }
    Ok(set)
}

pub async fn wait(
    cluster: &Cluster,
    set: InformerSet,
    args: WaitArgs,
    goal: WaitFor,
) -> Result<(), Failure> {
    let started = Instant::now();
    let sel = &args.selection;
    let patterns = !set.patterns.is_empty();
    let (resource_set, members) = open(cluster, set, sel, AccessPolicy::Watch).await?;
    read_and_end(&resource_set, &members, patterns);
    for s in resource_set.status().await.skipped {
        say(format!("kdi: skipping {}: {}", s.entry, s.reason));
    }
    let progress = start_and_wait(
        &resource_set,
        &members,
        sel,
        true,
        || Ok(()),
        std::future::pending(),
    )
    .await?;
    let following = CancellationToken::new();
    let (_joins, joined) = tokio::sync::mpsc::unbounded_channel();
    let reporting = tokio::spawn(progress.follow(following.clone(), joined));

    // `0` checks once, as kubectl's does (the caches synced first, for as
    // long as that takes).
    let timeout = match sel.timeout {
        Duration::ZERO => Duration::ZERO,
        t => t.saturating_sub(started.elapsed()),
    };
    let result = run(&members, &args, goal, timeout).await;
    following.cancel();
    let _ = reporting.await;
    resource_set.shutdown().await;
    result
}

/// The wait over the synced `members`, its progress said on stderr; the
/// lines of its end printed.
async fn run(
    members: &[SetMember],
    args: &WaitArgs,
    goal: WaitFor,
    timeout: Duration,
) -> Result<(), Failure> {
    let mut wait = Wait::new(goal.clone())
        .quantifier(args.quantifier())
        .timeout(timeout)
        .sync_policy(SyncPolicy::GiveUpWhenRefused)
        .on_mistake(say_mistake);
    for m in members {
        wait = wait.on(&m.informer, objects(m, args)?);
    }
    let progress = wait.progress();
    let interval = args.selection.progress_interval;
    let saying = tokio::spawn(say_progress(progress, interval, goal));
    let result = wait.run().await;
    saying.abort();
    let lines = Lines::new(members);
    match result {
        Ok(report) => {
            let shown: Vec<&ObjectOutcome> = match report.quantifier() {
                Quantifier::None => report.objects().iter().collect(),
                Quantifier::All | Quantifier::Any => report.holding().collect(),
            };
            for o in shown {
                print_line(lines.line(o, &report))?;
            }
            Ok(())
        }
        Err(InformerError::ConditionTimedOut { report }) => {
            for o in report.blocking() {
                print_line(lines.line(o, &report))?;
            }
            Err(Failure::timed_out(format!(
                "timed out after {:?}: {report}",
                round(report.waited())
            )))
        }
        Err(e @ InformerError::NotSynced { .. }) => Err(Failure::not_synced(error_chain(&e))),
        Err(e @ InformerError::Index { .. }) => Err(Failure::usage(error_chain(&e))),
        Err(e) => Err(Failure::cluster(error_chain(&e))),
    }
}

/// The objects of member `m` the arguments name or select.
fn objects(m: &SetMember, args: &WaitArgs) -> Result<Objects, Failure> {
    if !args.names.is_empty() {
        let namespace = match (&m.informer.options().watch.namespaces, m.informer.scope()) {
            (_, Some(Scope::Cluster)) => None,
            (Namespaces::Only(set), _) => set.iter().next().cloned(),
            (Namespaces::All, _) => None,
        };
        return Ok(Objects::named(args.names.iter().map(
            |name| match &namespace {
                Some(ns) => format!("{ns}/{name}"),
                None => name.clone(),
            },
        )));
    }
    let mut selection = ObjectSelection::default();
    if let Some(index) = &args.index {
        let (name, value) = index.split_once('=').unwrap_or((index, ""));
        if !m
            .informer
            .informer()
            .store()
            .index_names()
            .iter()
            .any(|n| n == name)
        {
            return Err(Failure::usage(format!(
                "--index {index:?}: {} has no index named {name:?}",
                m.entry
            )));
        }
        selection = selection.index(name, value);
    }
    Ok(selection.into())
}

/// How the objects are named in the lines: kubectl's `TYPE/NAME`, with the
/// namespace before the name when the objects may be of several.
struct Lines {
    json: bool,
    /// Per resource printed: `TYPE` as kubectl writes it (`pod`,
    /// `deployment.apps`), and whether its informer lists one namespace.
    types: Vec<(String, String, bool)>,
}

impl Lines {
    fn new(members: &[SetMember]) -> Self {
        let types = members
            .iter()
            .map(|m| {
                let resource = m.informer.informer().resource();
                let kind = resource.kind.to_lowercase();
                let kubectl_type = if resource.group.is_empty() {
                    kind
                } else {
                    format!("{kind}.{}", resource.group)
                };
                let one_namespace = matches!(
                    &m.informer.options().watch.namespaces,
                    Namespaces::Only(set) if set.len() == 1
                );
                (
                    m.informer.resource().to_string(),
                    kubectl_type,
                    one_namespace,
                )
            })
            .collect();
        Lines {
            json: !std::io::stdout().is_terminal(),
            types,
        }
    }

    fn line(&self, o: &ObjectOutcome, report: &WaitReport) -> String {
        let resource = o.resource.to_string();
        if self.json {
            let mut line = json!({
                "resource": resource,
                "name": o.name(),
                "holds": o.holds,
                "state": o.reason(),
            });
            if let Some(ns) = o.namespace() {
                line["namespace"] = json!(ns);
            }
            if let ObjectState::Present {
                verdict: Some(v), ..
            } = &o.state
                && v.is_mistake()
            {
                line["detail"] = json!(v.to_string());
            }
            return line.to_string();
        }
        let (kubectl_type, one_namespace) = self
            .types
            .iter()
            .find(|(r, _, _)| *r == resource)
            .map_or((resource.as_str(), false), |(_, t, one)| (t.as_str(), *one));
        let name = if one_namespace { o.name() } else { &o.key };
        match (o.holds, report.quantifier()) {
            (true, Quantifier::All | Quantifier::Any) => {
                format!("{kubectl_type}/{name} condition met")
            }
            (false, Quantifier::None) if report.holds() => {
                format!("{kubectl_type}/{name} condition not met")
            }
            _ => format!("{kubectl_type}/{name}: {}", o.state),
        }
    }
}

/// Says on stderr, once per object, that the condition is not a boolean
/// on it or fails on it.
fn say_mistake(o: &ObjectOutcome) {
    let stderr = Stderr::process();
    if stderr.json() {
        let mut line = json!({
            "resource": o.resource.to_string(),
            "name": o.name(),
            "state": o.reason(),
            "detail": o.state.to_string(),
        });
        if let Some(ns) = o.namespace() {
            line["namespace"] = json!(ns);
        }
        stderr.say(line);
    } else {
        stderr.say(format!(
            "kdi: {} {}: the condition is {}; it counts as not met",
            o.resource, o.key, o.state
        ));
    }
}

/// Says on stderr, every `interval`, how many objects hold of how many.
async fn say_progress(
    mut progress: tokio::sync::watch::Receiver<WaitProgress>,
    interval: Duration,
    goal: WaitFor,
) {
    let stderr = Stderr::process();
    let started = Instant::now();
    let Some(first) = Instant::now().checked_add(interval) else {
        return;
    };
    let mut ticks = tokio::time::interval_at(first, interval);
    loop {
        ticks.tick().await;
        let p = *progress.borrow_and_update();
        let waited = started.elapsed().as_secs();
        if stderr.json() {
            stderr.say(json!({
                "waiting": goal.to_string(),
                "objects": p.objects,
                "holding": p.holding,
                "synced": p.synced,
                "informers": p.informers,
                "waitingSeconds": waited,
            }));
        } else {
            stderr.say(format!(
                "kdi: waiting for {goal}: {} of {} objects hold, after {waited}s",
                p.holding, p.objects
            ));
        }
    }
}

/// A duration as said: to the millisecond.
fn round(d: Duration) -> Duration {
    Duration::from_millis(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
