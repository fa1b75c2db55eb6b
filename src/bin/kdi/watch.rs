//! `kdi watch`: events as JSON lines, over one cluster. The set watched
//! follows discovery (patterns), a config file (reloaded) and access as
//! they change; resources named with -r are watched as named.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use clap::Args;
use kube_dynamic_informer::cache::{ChangePredicate, Condition, IndexFn, Redaction};
use kube_dynamic_informer::declarative::{
    AccessPolicy, InformerSet, ReloadTriggers, ResourceSet, SetEvent, SetMember,
};
use kube_dynamic_informer::informer::{Event, FilterMistake, Registration};
use serde_json::json;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::cluster::Cluster;
use crate::exit::Failure;
use crate::indexes::IndexNames;
use crate::informers::{Selection, adjust, open, parse_interval_arg, start_and_wait};
use crate::output::event_line;
use crate::parse_duration_arg;
use crate::progress::{Membership, resource_label};
use crate::set_changes::{say_event, say_left_out, write_status};
use crate::stderr::Stderr;

#[derive(Args, Debug)]
pub struct WatchArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// Ask the server first (SelfSubjectAccessReview) and watch only what
    /// may be listed and watched: a resource forbidden everywhere is left
    /// out and said, one allowed in some of its namespaces is watched in
    /// those; asked again every `--access-recheck`, and started once
    /// allowed. Without it, a forbidden informer retries its 403.
    #[arg(long)]
    pub skip_forbidden: bool,
    /// How often `--skip-forbidden` asks again.
    #[arg(long, default_value = "30s", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub access_recheck: Duration,
    /// How often the config file is read to see whether it changed (it is
    /// then reloaded; SIGHUP reloads at once).
    #[arg(long, default_value = "2s", value_parser = parse_interval_arg, value_name = "DURATION")]
    pub reload_check: Duration,
    /// Write the informers, what was left out and the last reload to this
    /// file as JSON whenever they change.
    #[arg(long, value_name = "PATH")]
    pub status_file: Option<std::path::PathBuf>,
    /// Include the whole object in each line.
    #[arg(long)]
    pub object: bool,
    /// Include each object's values for these indexes (repeatable): an
    /// index the informers declare, `namespace` (built into every cache),
    /// or `all` for every declared index (the namespace is in each line's
    /// key already, so `all` leaves it out unless it is named too).
    #[arg(long = "index-values", value_name = "INDEX")]
    pub index_values: Vec<String>,
    /// Print the content of Secrets and of resources the config marks
    /// `sensitive` (values, the last-applied annotation, index values)
    /// instead of redacting it.
    #[arg(long)]
    pub show_secrets: bool,
    /// Stop after this many events.
    #[arg(long, value_name = "N")]
    pub max_events: Option<u64>,
    /// Stop after this long.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub duration: Option<Duration>,
    /// Leave out the initial Add events of objects that existed at start.
    #[arg(long)]
    pub skip_initial: bool,
    /// Print only the events of the objects that meet this condition (a
    /// JMESPath expression, true or false: `metadata.labels.tier ==
    /// 'web'`, `status.phase == 'Failed'`). An object that starts meeting
    /// it prints as an Add (`"enteredFilter": true`), one that stops as a
    /// Delete of its new state (`"leftFilter": true`). In place of the
    /// config entries' `filter`.
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// Print only the updates that change the value of this JMESPath
    /// expression (repeatable: of any of them): `spec`,
    /// `metadata.generation`, `metadata.labels`. Adds, deletes and resyncs
    /// are printed. In place of the config entries' `changes`.
    #[arg(long = "changes", value_name = "EXPR")]
    pub changes: Vec<String>,
    /// Serve metrics in the Prometheus text format on this address (e.g.
    /// `127.0.0.1:9464`), from the start, syncing included.
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<std::net::SocketAddr>,
}

/// `--filter` and `--changes` compile, checked before the cluster is
/// contacted (they are compiled again where every entry's are).
pub fn check_filters(args: &WatchArgs) -> Result<(), Failure> {
    if let Some(filter) = &args.filter {
        Condition::new(filter).map_err(|e| Failure::usage(format!("--filter: {e}")))?;
    }
    for expression in &args.changes {
        ChangePredicate::new(expression).map_err(|e| Failure::usage(format!("--changes: {e}")))?;
    }
    Ok(())
}

/// Lays `--filter` and `--changes` over every entry of `set`, in place of
/// the file's.
pub fn lay_filters(filter: Option<&String>, changes: &[String], set: &mut InformerSet) {
    let entries = set
        .informers
        .iter_mut()
        .map(|i| (&mut i.filter, &mut i.changes))
        .chain(
            set.patterns
                .iter_mut()
                .map(|p| (&mut p.filter, &mut p.changes)),
        );
    for (entry_filter, entry_changes) in entries {
        if let Some(filter) = filter {
            *entry_filter = Some(filter.clone());
        }
        if !changes.is_empty() {
            *entry_changes = changes.to_vec();
        }
    }
}

/// Says on stderr, once per object, that the filter is not a boolean on it
/// or fails on it.
fn say_mistake(m: &FilterMistake) {
    let stderr = Stderr::process();
    if stderr.json() {
        stderr.say(json!({
            "resource": m.resource.to_string(),
            "key": m.key,
            "filter": m.filter.to_string(),
            "state": m.verdict.reason(),
            "detail": m.verdict.to_string(),
        }));
    } else {
        stderr.say(format!(
            "kdi: {} {}: the filter is {}; it counts as not met",
            m.resource, m.key, m.verdict
        ));
    }
}

/// Whether a watch follows a set that may change (a config file reloaded,
/// patterns over discovery, access checks, a status file): it then says
/// before starting what is left out or denied. Plain resources named with
/// -r have nothing left out, and an informer says its own 403.
fn follows(set: &InformerSet, args: &WatchArgs) -> bool {
    args.selection.config.is_some()
        || !set.patterns.is_empty()
        || args.skip_forbidden
        || args.status_file.is_some()
}

/// Forbidden resources are left out with `--skip-forbidden` (and checked
/// again at its interval), else watched until allowed.
fn access_policy(args: &WatchArgs) -> AccessPolicy {
    if args.skip_forbidden {
        AccessPolicy::Skip {
            recheck: args.access_recheck,
        }
    } else {
        AccessPolicy::Watch
    }
}

/// `kdi watch` over one cluster: the members of the set, and those that
/// join it as it changes, printed until `--duration`, `--max-events`, a
/// stop signal or the output closed.
pub async fn watch(cluster: &Cluster, set: InformerSet, args: WatchArgs) -> Result<(), Failure> {
    let deadline = crate::stop::deadline(args.duration);
    let sel = &args.selection;
    let says_left_out = follows(&set, &args);
    let (resource_set, members) = open(cluster, set, sel, access_policy(&args)).await?;
    let (_, events) = resource_set.subscribe().await;
    if says_left_out {
        say_left_out(&resource_set, args.skip_forbidden).await;
    }
    let (tx, mut lines) = tokio::sync::mpsc::unbounded_channel();
    let (joins, joined) = tokio::sync::mpsc::unbounded_channel();
    let followed = Members::new(&resource_set, &members, &args, tx, joins);
    let stop = crate::stop::stopped(deadline);
    let progress = start_and_wait(&resource_set, &members, sel, false, || Ok(()), stop).await?;
    followed.write_status().await;
    let stop_following = CancellationToken::new();
    let reporting = tokio::spawn(progress.follow(stop_following.clone(), joined));
    let reloading = reload(&resource_set, &args, &stop_following);
    let result = tokio::select! {
        result = print_lines(&mut lines, deadline, args.max_events) => result,
        () = followed.follow(events) => Ok(()),
    };
    stop_following.cancel();
    if let Some(reloading) = reloading {
        let _ = reloading.await;
    }
    let _ = reporting.await;
    resource_set.shutdown().await;
    result
}

/// Reloads the config file, if any, when it changes or at SIGHUP, until
/// `stop`; each outcome comes back as a `Reloaded` event of the set.
fn reload(
    resource_set: &ResourceSet,
    args: &WatchArgs,
    stop: &CancellationToken,
) -> Option<JoinHandle<()>> {
    let path = args.selection.config.clone()?;
    let sel = args.selection.clone();
    let triggers = ReloadTriggers {
        check_every: Some(args.reload_check),
        on_sighup: true,
    };
    let (filter, changes) = (args.filter.clone(), args.changes.clone());
    let adjust = move |set: &mut InformerSet| {
        adjust(&sel, set).map_err(|e| e.message)?;
        lay_filters(filter.as_ref(), &changes, set);
        Ok(())
    };
    Some(resource_set.follow_file(path, triggers, adjust, stop.clone()))
}

/// Index functions a printer's lines show; replaced when a reload adds
/// indexes.
type Shown = Arc<RwLock<Arc<Vec<(String, IndexFn)>>>>;

/// Registers the handler that sends `member`'s events as lines to `tx`,
/// with the indexes `shown` holds at each event.
fn add_printer(
    args: &WatchArgs,
    member: &SetMember,
    shown: Shown,
    tx: &UnboundedSender<String>,
) -> Registration {
    let informer = &member.informer;
    let redaction =
        Redaction::for_resource(&informer.resource(), member.sensitive, args.show_secrets);
    let (object, skip_initial) = (args.object, args.skip_initial);
    let (name, served, tx) = (member.entry.clone(), informer.clone(), tx.clone());
    // Known now, unless it was asked for without a version and is not
    // served yet: then looked up at each event.
    let known = (!informer.resource().version.is_empty()).then(|| resource_label(informer));
    informer.informer().add_handler_with(
        move |e: Event| {
            if skipped_as_initial(&e, skip_initial) {
                return;
            }
            let indexes = shown.read().map(|i| i.clone()).unwrap_or_default();
            let looked_up;
            let resource = match &known {
                Some(label) => label,
                None => {
                    looked_up = resource_label(&served);
                    &looked_up
                }
            };
            let _ = tx.send(event_line(&name, resource, &e, object, redaction, &indexes));
        },
        member
            .handler_options()
            .name("print")
            .on_mistake(say_mistake),
    )
}

/// A member's identity in its set: entry and resource.
fn key(m: &SetMember) -> (String, String) {
    (m.entry.clone(), m.resource.clone())
}

/// What prints one member's events.
struct Printer {
    registration: Registration,
    shown: Shown,
}

/// The members of a watched set, each with its printer, followed as they
/// come and go.
struct Members<'a> {
    set: &'a ResourceSet,
    args: &'a WatchArgs,
    /// Where printers send their lines.
    tx: UnboundedSender<String>,
    /// Tells the progress report who joins and leaves.
    joins: UnboundedSender<Membership>,
    printers: BTreeMap<(String, String), Printer>,
}

impl<'a> Members<'a> {
    /// `members` of `set`, printing to `tx`.
    fn new(
        set: &'a ResourceSet,
        members: &[SetMember],
        args: &'a WatchArgs,
        tx: UnboundedSender<String>,
        joins: UnboundedSender<Membership>,
    ) -> Self {
        let mut followed = Members {
            set,
            args,
            tx,
            joins,
            printers: BTreeMap::new(),
        };
        for m in members {
            followed.print(m);
        }
        followed
    }

    fn indexes(&self, member: &SetMember) -> Arc<Vec<(String, IndexFn)>> {
        crate::indexes::shown(&self.args.index_values, &member.indexes)
    }

    /// Prints `m`'s events, in place of what printed them before.
    fn print(&mut self, m: &SetMember) {
        let shown: Shown = Arc::new(RwLock::new(self.indexes(m)));
        let registration = add_printer(self.args, m, shown.clone(), &self.tx);
        let printer = Printer {
            registration,
            shown,
        };
        if let Some(old) = self.printers.insert(key(m), printer) {
            old.registration.remove();
        }
    }

    /// Follows the set's `events` until they end: each is said once acted
    /// on (printers, progress, status file), so that what follows the line
    /// sees the change.
    async fn follow(mut self, mut events: UnboundedReceiver<SetEvent>) {
        let json = Stderr::process().json();
        while let Some(event) = events.recv().await {
            self.apply(&event);
            self.write_status().await;
            say_event(&event, json);
        }
    }

    /// A member joining, changing or leaving: its printer, and the progress
    /// report.
    fn apply(&mut self, event: &SetEvent) {
        match event {
            SetEvent::Added(m) => {
                self.print(m);
                let _ = self.joins.send(Membership::Joined(m.clone()));
            }
            SetEvent::Updated(m) => {
                if let Some(p) = self.printers.get(&key(m))
                    && let Ok(mut shown) = p.shown.write()
                {
                    *shown = self.indexes(m);
                }
            }
            SetEvent::Removed { member, .. } => {
                if let Some(old) = self.printers.remove(&key(member)) {
                    old.registration.remove();
                }
                let _ = self.joins.send(Membership::Left(
                    member.entry.clone(),
                    member.informer.clone(),
                ));
            }
            _ => {}
        }
    }

    /// Writes the set's state to `--status-file`, when given.
    async fn write_status(&self) {
        if let Some(path) = &self.args.status_file {
            write_status(self.set, path).await;
        }
    }
}

/// Whether `--skip-initial` leaves `event` out: an Add of the first list.
pub fn skipped_as_initial(event: &Event, skip_initial: bool) -> bool {
    skip_initial
        && matches!(
            event,
            Event::Add {
                in_initial_list: true,
                ..
            }
        )
}

/// Prints the lines of `rx` until it ends, `duration` passes, Ctrl-C, the
/// output is closed (piped into `head`: quietly), or `max_events` lines
/// were printed.
pub async fn print_lines(
    rx: &mut UnboundedReceiver<String>,
    deadline: Option<tokio::time::Instant>,
    max_events: Option<u64>,
) -> Result<(), Failure> {
    let expired = crate::stop::stopped(deadline);
    tokio::pin!(expired);
    let closed = stdout_closed();
    tokio::pin!(closed);
    let mut count = 0;
    loop {
        let next = tokio::select! {
            line = rx.recv() => line,
            () = &mut expired => return Ok(()),
            () = &mut closed => return Ok(()),
        };
        let Some(line) = next else { return Ok(()) };
        let mut out = std::io::stdout().lock();
        match writeln!(out, "{line}").and_then(|()| out.flush()) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => return Err(Failure::output(e)),
            Ok(()) => count += 1,
        }
        if max_events.is_some_and(|m| count >= m) {
            return Ok(());
        }
    }
}

/// Every index named by `--index-values` is one some informer of `set`
/// has (or `all`); checked before the cluster is contacted.
pub fn check_index_values(set: &InformerSet, args: &WatchArgs) -> Result<(), Failure> {
    let names = IndexNames::of(set);
    for w in &args.index_values {
        names.check(&format!("--index-values {w:?}"), w, true)?;
    }
    Ok(())
}

/// Resolves when the reader of stdout has gone (`kdi watch | head -1`), so
/// that watch ends then rather than at the next event it fails to write,
/// which may come hours later.
///
/// A thread waits in poll(2) on fd 1 for nothing but the conditions poll
/// always reports: the write end of a pipe reports `POLLERR` as soon as its
/// read end is closed, a terminal `POLLHUP` when it hangs up. It wakes at
/// once, costs nothing while it waits, and needs no timer. poll comes
/// through rustix, which wraps it without `unsafe` (the project has none;
/// libc's poll and tokio's `AsyncFd` registration both need it). A stdout
/// that cannot be closed by a reader (a regular file, `/dev/null`) never
/// reports anything: then this never resolves.
pub async fn stdout_closed() {
    #[cfg(unix)]
    {
        let (closed, wait) = tokio::sync::oneshot::channel();
        let watcher = std::thread::Builder::new()
            .name("stdout-closed".into())
            .spawn(move || {
                use rustix::event::{PollFd, PollFlags, poll};
                use rustix::io::Errno;
                let stdout = std::io::stdout();
                loop {
                    let mut fds = [PollFd::new(&stdout, PollFlags::empty())];
                    match poll(&mut fds, None) {
                        Ok(n) if n > 0 => {
                            let _ = closed.send(());
                            return;
                        }
                        Ok(_) | Err(Errno::INTR) => continue,
                        Err(_) => return,
                    }
                }
            });
        if watcher.is_ok() && wait.await.is_ok() {
            return;
        }
    }
    futures::future::pending().await
}
