//! `kdi watch`: events as JSON lines.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use clap::Args;
use kube_dynamic_informer::cache::IndexFn;
use kube_dynamic_informer::cache::Redaction;
use kube_dynamic_informer::declarative::InformerSet;
use kube_dynamic_informer::factory::InformerHandle;
use kube_dynamic_informer::informer::{Event, HandlerOptions, Registration};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::cluster::Cluster;
use crate::exit::Failure;
use crate::indexes::IndexNames;
use crate::informers::{Selection, parse_interval_arg, start_and_sync};
use crate::output::event_line;
use crate::parse_duration_arg;
use crate::progress::resource_label;

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
    /// Serve metrics in the Prometheus text format on this address (e.g.
    /// `127.0.0.1:9464`), from the start, syncing included.
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<std::net::SocketAddr>,
}

/// Whether a watch follows its set as it changes (a config file reloaded,
/// patterns over discovery, access checks, a status file): that is
/// `watch_set`'s; plain resources named with -r need none of that.
pub fn follows(set: &InformerSet, args: &WatchArgs) -> bool {
    args.selection.config.is_some()
        || !set.patterns.is_empty()
        || args.skip_forbidden
        || args.status_file.is_some()
}

pub async fn watch(cluster: &Cluster, set: InformerSet, args: WatchArgs) -> Result<(), Failure> {
    let deadline = crate::stop::deadline(args.duration);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let registrations = std::sync::Mutex::new(Vec::new());
    let (resource_set, _informers, progress) = start_and_sync(
        cluster,
        set,
        &args.selection,
        false,
        crate::stop::stopped(deadline),
        |_, informers| {
            for d in informers {
                let shown = Arc::new(RwLock::new(shown_indexes(&args, &d.indexes)));
                let printer = add_printer(&args, &d.name, &d.informer, d.sensitive, shown, &tx);
                registrations
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(printer);
            }
            Ok(())
        },
    )
    .await?;
    drop(tx);
    let stop_reporting = CancellationToken::new();
    let reporting = tokio::spawn(progress.follow(stop_reporting.clone()));
    let result = print_lines(&mut rx, deadline, args.max_events).await;
    stop_reporting.cancel();
    let _ = reporting.await;
    resource_set.shutdown().await;
    result
}

/// Index functions a printer's lines show; replaced when a reload adds
/// indexes.
pub type Shown = Arc<RwLock<Arc<Vec<(String, IndexFn)>>>>;

/// The indexes of `indexes` whose values `--index-values` asks to show.
pub fn shown_indexes(
    args: &WatchArgs,
    indexes: &BTreeMap<String, IndexFn>,
) -> Arc<Vec<(String, IndexFn)>> {
    crate::indexes::shown(&args.index_values, indexes)
}

/// Registers the handler that sends `informer`'s events, as the entry
/// `name`, as lines to `tx`, with the indexes `shown` holds at each event.
pub fn add_printer(
    args: &WatchArgs,
    name: &str,
    informer: &InformerHandle,
    sensitive: bool,
    shown: Shown,
    tx: &UnboundedSender<String>,
) -> Registration {
    let redaction = Redaction::for_resource(&informer.resource(), sensitive, args.show_secrets);
    let (object, skip_initial) = (args.object, args.skip_initial);
    let (name, served, tx) = (name.to_owned(), informer.clone(), tx.clone());
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
        HandlerOptions::default().name("print"),
    )
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

/// Writes event lines to stdout, counting them against `--max-events`.
pub struct LineWriter {
    count: u64,
    max: Option<u64>,
}

impl LineWriter {
    pub fn new(max: Option<u64>) -> Self {
        Self { count: 0, max }
    }

    /// Writes `line`; `Ok(true)` when the watch ends here: the output was
    /// closed (piped into `head`: quietly) or `--max-events` is reached.
    pub fn write(&mut self, line: &str) -> Result<bool, Failure> {
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        if let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush()) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                return Ok(true);
            }
            return Err(Failure::output(e));
        }
        self.count += 1;
        Ok(self.max.is_some_and(|m| self.count >= m))
    }
}

/// Prints the lines of `rx` until it ends, `duration` passes, Ctrl-C, the
/// output is closed, or `max_events` lines were printed.
pub async fn print_lines(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>,
    deadline: Option<tokio::time::Instant>,
    max_events: Option<u64>,
) -> Result<(), Failure> {
    let expired = crate::stop::stopped(deadline);
    tokio::pin!(expired);
    let closed = stdout_closed();
    tokio::pin!(closed);
    let mut writer = LineWriter::new(max_events);
    loop {
        let next = tokio::select! {
            line = rx.recv() => line,
            () = &mut expired => return Ok(()),
            () = &mut closed => return Ok(()),
        };
        let Some(line) = next else { return Ok(()) };
        if writer.write(&line)? {
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
