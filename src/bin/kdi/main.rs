//! `kdi`: informers from the command line, for automation and for people.
//!
//! ```text
//! kdi watch -f informers.yaml                  # events as JSON lines
//! kdi watch -r deployments.apps -r widgets.example.com --object
//! kdi get -r pods --index node=node-1 -o table
//! kdi get -r deploy -l 'app in (web, api)' -o yaml
//! kdi resources                                 # what discovery offers
//! kdi check informers.yaml                      # validate without a cluster
//! ```
//!
//! Exit codes: 0 success; 1 a failure talking to the cluster or running an
//! informer; 2 invalid arguments or an invalid config file; 3 caches that
//! did not sync within `--timeout` (each with its reason on stderr).
//!
//! On a terminal, stderr shows each informer's progress while caches sync.
//! Otherwise nothing is printed while syncing, and a cache that did not sync
//! is reported as one JSON line, `{"resource", "synced": false, "reason"}`.

mod output;

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use kube_client::config::{KubeConfigOptions, Kubeconfig};
use kube_client::{Client, Config};
use kube_dynamic_informer::config::{InformerSet, InformerSpec};
use kube_dynamic_informer::duration::parse_duration;
use kube_dynamic_informer::factory::{GenericInformer, InformerFactory};
use kube_dynamic_informer::index::IndexFn;
use kube_dynamic_informer::informer::{Event, InformerStatus};
use kube_dynamic_informer::options::InformerOptions;
use kube_dynamic_informer::scope::Namespaces;
use tokio_util::sync::CancellationToken;

use output::{Format, Redaction, event_line, print_objects};

/// Informers for any Kubernetes resource, from the command line.
#[derive(Parser, Debug)]
#[command(name = "kdi", version, about, long_about = None)]
struct Cli {
    /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long, global = true, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Kubeconfig context to use.
    #[arg(long, global = true, value_name = "NAME")]
    context: Option<String>,
    /// Log informer warnings and errors to stderr (RUST_LOG filters).
    #[arg(short, long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print events as JSON lines until interrupted.
    Watch(WatchArgs),
    /// Wait for sync, then print the objects that match an index value or a
    /// label selector.
    Get(GetArgs),
    /// List the resources discovery offers (like `kubectl api-resources`).
    Resources(ResourcesArgs),
    /// Validate config files without a cluster; lists every problem.
    Check(CheckArgs),
}

/// What to watch: a config file, resources named on the command line, or
/// both.
#[derive(Args, Debug, Clone)]
struct Selection {
    /// Config file (YAML or JSON) declaring informers and indexes.
    #[arg(short = 'f', long = "config", value_name = "FILE")]
    config: Option<PathBuf>,
    /// A resource to watch: plural, kind, short name, `plural.group`,
    /// `plural.version.group`, `group/version/plural`. Repeatable. With
    /// `--config`, selects informers of the file by name or resource.
    #[arg(short = 'r', long = "resource", value_name = "RESOURCE")]
    resources: Vec<String>,
    /// Only these namespaces (repeatable); default all.
    #[arg(short = 'n', long = "namespace", value_name = "NS")]
    namespaces: Vec<String>,
    /// Label selector, e.g. `app in (web, api),!canary`.
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR")]
    label_selector: Option<String>,
    /// Field selector, e.g. `status.phase=Running`.
    #[arg(long = "field-selector", value_name = "SELECTOR")]
    field_selector: Option<String>,
    /// An index for resources named with `-r`: NAME=JMESPATH. Repeatable.
    #[arg(long = "define-index", value_name = "NAME=EXPR")]
    define_index: Vec<String>,
    /// Cache only metadata.
    #[arg(long)]
    metadata_only: bool,
    /// Treat the objects as secrets: print only their `apiVersion`, `kind`
    /// and `metadata`, without the last-applied annotation, and redact index
    /// values (core Secrets always are; `--show-secrets` prints all).
    #[arg(long)]
    sensitive: bool,
    /// How long to wait for caches to sync.
    #[arg(long, default_value = "60s", value_parser = parse_duration_arg)]
    timeout: Duration,
}

#[derive(Args, Debug)]
struct WatchArgs {
    #[command(flatten)]
    selection: Selection,
    /// Include the whole object in each line.
    #[arg(long)]
    object: bool,
    /// Include each object's values for these indexes (repeatable; `all` for
    /// every index).
    #[arg(long = "index-values", value_name = "INDEX")]
    index_values: Vec<String>,
    /// Print the content of Secrets and of resources the config marks
    /// `sensitive` (values, the last-applied annotation, index values)
    /// instead of redacting it.
    #[arg(long)]
    show_secrets: bool,
    /// Stop after this many events.
    #[arg(long, value_name = "N")]
    max_events: Option<u64>,
    /// Stop after this long.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    duration: Option<Duration>,
    /// Leave out the initial Add events of objects that existed at start.
    #[arg(long)]
    skip_initial: bool,
}

#[derive(Args, Debug)]
struct GetArgs {
    #[command(flatten)]
    selection: Selection,
    /// Objects with this index value: NAME=VALUE.
    #[arg(long, value_name = "NAME=VALUE", conflicts_with = "by_labels")]
    index: Option<String>,
    /// Filter the cache with this label selector (client-side; `-l` filters
    /// on the server).
    #[arg(long = "match", value_name = "SELECTOR", id = "by_labels")]
    by_labels: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Table)]
    output: Format,
    /// Print the content of Secrets and of resources the config marks
    /// `sensitive` (values, the last-applied annotation, index values)
    /// instead of redacting it.
    #[arg(long)]
    show_secrets: bool,
}

#[derive(Args, Debug)]
struct ResourcesArgs {
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = ResourcesFormat::Table)]
    output: ResourcesFormat,
    /// Show every served version, not only the preferred one.
    #[arg(long)]
    all_versions: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ResourcesFormat {
    Table,
    Json,
}

#[derive(Args, Debug)]
struct CheckArgs {
    /// Config files to validate.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

fn parse_duration_arg(s: &str) -> Result<Duration, String> {
    parse_duration(s)
}

/// A failure with the exit code it maps to.
struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    fn runtime(message: impl std::fmt::Display) -> Self {
        Failure {
            code: 1,
            message: message.to_string(),
        }
    }
    fn usage(message: impl std::fmt::Display) -> Self {
        Failure {
            code: 2,
            message: message.to_string(),
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.verbose {
        tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env()
                    .unwrap_or_else(|_| "kube_dynamic_informer=info".into()),
            )
            .init();
    }
    if let Command::Check(args) = &cli.command {
        return check(args);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("kdi: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("kdi: {}", f.message.trim_end());
            ExitCode::from(f.code)
        }
    }
}

fn check(args: &CheckArgs) -> ExitCode {
    let mut failed = false;
    for file in &args.files {
        match InformerSet::load_file(file) {
            Ok(set) => println!("{}: ok ({} informers)", file.display(), set.informers.len()),
            Err(errors) => {
                failed = true;
                for e in &errors.errors {
                    println!("{e}");
                }
            }
        }
    }
    if failed {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

async fn run(cli: Cli) -> Result<(), Failure> {
    let client = client(cli.kubeconfig.as_ref(), cli.context.as_deref()).await?;
    match cli.command {
        Command::Watch(args) => watch(client, args).await,
        Command::Get(args) => get(client, args).await,
        Command::Resources(args) => resources(client, args).await,
        Command::Check(_) => unreachable!("handled before the runtime starts"),
    }
}

async fn client(kubeconfig: Option<&PathBuf>, context: Option<&str>) -> Result<Client, Failure> {
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        ..KubeConfigOptions::default()
    };
    let config = match kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path).map_err(|e| {
                Failure::usage(format!("reading kubeconfig {}: {e}", path.display()))
            })?;
            Config::from_custom_kubeconfig(kc, &options)
                .await
                .map_err(|e| Failure::usage(format!("kubeconfig {}: {e}", path.display())))?
        }
        None if context.is_some() => Config::from_kubeconfig(&options)
            .await
            .map_err(|e| Failure::usage(format!("kubeconfig: {e}")))?,
        None => Config::infer()
            .await
            .map_err(|e| Failure::usage(format!("no cluster configured: {e}")))?,
    };
    Client::try_from(config).map_err(|e| Failure::runtime(format!("building the client: {e}")))
}

/// The informer set the arguments describe.
fn informer_set(sel: &Selection) -> Result<InformerSet, Failure> {
    let mut set = match &sel.config {
        Some(path) => InformerSet::load_file(path).map_err(|e| Failure::usage(e.to_string()))?,
        None => {
            if sel.resources.is_empty() {
                return Err(Failure::usage(
                    "name resources with -r RESOURCE or a config file with -f FILE",
                ));
            }
            let mut indexes = BTreeMap::new();
            for d in &sel.define_index {
                let (name, expr) = d.split_once('=').ok_or_else(|| {
                    Failure::usage(format!("--define-index {d:?}: expected NAME=JMESPATH"))
                })?;
                IndexFn::jmespath(name, expr).map_err(Failure::usage)?;
                indexes.insert(name.to_string(), expr.to_string());
            }
            InformerSet {
                api_version: kube_dynamic_informer::config::API_VERSION.into(),
                kind: kube_dynamic_informer::config::KIND.into(),
                defaults: InformerOptions::default(),
                informers: sel
                    .resources
                    .iter()
                    .map(|r| InformerSpec {
                        indexes: indexes.clone(),
                        ..InformerSpec::new(r.clone())
                    })
                    .collect(),
            }
        }
    };
    if sel.config.is_some() && !sel.resources.is_empty() {
        set.informers.retain(|i| {
            sel.resources
                .iter()
                .any(|r| r == i.name() || *r == i.resource)
        });
        if set.informers.is_empty() {
            return Err(Failure::usage(format!(
                "no informer of the config file is named {}",
                sel.resources.join(" or ")
            )));
        }
    }
    // Command-line settings override the file's.
    let over = &mut set.defaults;
    let apply = |o: &mut InformerOptions| {
        if !sel.namespaces.is_empty() {
            o.namespaces = Namespaces::only(sel.namespaces.iter().cloned());
        }
        if sel.label_selector.is_some() {
            o.label_selector.clone_from(&sel.label_selector);
        }
        if sel.field_selector.is_some() {
            o.field_selector.clone_from(&sel.field_selector);
        }
        if sel.metadata_only {
            o.metadata_only = true;
        }
        if sel.sensitive {
            o.sensitive = true;
        }
    };
    apply(over);
    for i in &mut set.informers {
        apply(&mut i.options);
    }
    Ok(set)
}

/// One informer of the command, as declared.
struct Declared {
    /// Its name in the config (or the resource as given).
    name: String,
    informer: GenericInformer,
    indexes: BTreeMap<String, IndexFn>,
    /// Marked `sensitive` in the config.
    sensitive: bool,
}

impl Declared {
    fn redaction(&self, show_secrets: bool) -> Redaction {
        Redaction::for_resource(self.informer.resource(), self.sensitive, show_secrets)
    }
}

/// Starts the informers and waits for their caches, showing progress.
async fn start_and_sync(
    client: Client,
    sel: &Selection,
    before_start: impl FnOnce(&[Declared]),
) -> Result<(InformerFactory, Vec<Declared>), Failure> {
    let set = informer_set(sel)?;
    let configured = set.build(client).await.map_err(Failure::usage)?;
    for s in &configured.skipped {
        eprintln!("kdi: skipping {}: {}", s.name, s.reason);
    }
    let informers: Vec<_> = configured
        .informers
        .into_iter()
        .map(|c| Declared {
            indexes: c.spec.index_functions().unwrap_or_default(),
            sensitive: c.spec.options.sensitive,
            name: c.name,
            informer: c.informer,
        })
        .collect();
    before_start(&informers);
    configured.factory.start().map_err(Failure::runtime)?;
    let progress = std::io::stderr()
        .is_terminal()
        .then(|| spawn_progress(&informers));
    let report = configured.factory.wait_for_cache_sync(sel.timeout).await;
    if let Some(p) = progress {
        p.cancel();
    }
    if !report.all_synced() {
        let mut message = String::from("caches did not sync:\n");
        let terminal = std::io::stderr().is_terminal();
        for (resource, failure) in report.failures() {
            if terminal {
                message.push_str(&format!("  {resource}: {failure}\n"));
            } else {
                // Not a terminal: one JSON line per resource, for programs.
                eprintln!(
                    "{}",
                    serde_json::json!({
                        "resource": resource.to_string(),
                        "synced": false,
                        "reason": failure.to_string(),
                    })
                );
            }
        }
        configured.factory.shutdown().await;
        return Err(Failure { code: 3, message });
    }
    Ok((configured.factory, informers))
}

/// Prints each informer's status changes on stderr (a terminal) until
/// cancelled.
fn spawn_progress(informers: &[Declared]) -> CancellationToken {
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

async fn watch(client: Client, args: WatchArgs) -> Result<(), Failure> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let object = args.object;
    let skip_initial = args.skip_initial;
    let wanted_indexes = args.index_values.clone();
    let registrations = std::sync::Mutex::new(Vec::new());
    let (factory, _informers) = start_and_sync(client, &args.selection, |informers| {
        for declared in informers {
            let Declared {
                name,
                informer,
                indexes,
                ..
            } = declared;
            let redaction = declared.redaction(args.show_secrets);
            let tx = tx.clone();
            let name = name.clone();
            let resource = informer.resource().to_string();
            let indexes: Vec<(String, IndexFn)> = indexes
                .iter()
                .filter(|(n, _)| wanted_indexes.iter().any(|w| w == "all" || w == *n))
                .map(|(n, f)| (n.clone(), f.clone()))
                .collect();
            let indexes = Arc::new(indexes);
            let reg = informer.informer().add_handler(move |e: Event| {
                if skip_initial
                    && matches!(
                        e,
                        Event::Add {
                            in_initial_list: true,
                            ..
                        }
                    )
                {
                    return;
                }
                let line = event_line(&name, &resource, &e, object, redaction, &indexes);
                let _ = tx.send(line);
            });
            registrations
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(reg);
        }
    })
    .await?;
    drop(tx);
    let deadline = args.duration.map(|d| tokio::time::Instant::now() + d);
    let mut count = 0u64;
    let stdout = std::io::stdout();
    let result = loop {
        let next = match deadline {
            Some(d) => tokio::select! {
                line = rx.recv() => line,
                _ = tokio::time::sleep_until(d) => break Ok(()),
                _ = tokio::signal::ctrl_c() => break Ok(()),
            },
            None => tokio::select! {
                line = rx.recv() => line,
                _ = tokio::signal::ctrl_c() => break Ok(()),
            },
        };
        let Some(line) = next else { break Ok(()) };
        let mut out = stdout.lock();
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            // stdout closed (e.g. piped into `head`): stop quietly.
            break Ok(());
        }
        count += 1;
        if args.max_events.is_some_and(|m| count >= m) {
            break Ok(());
        }
    };
    factory.shutdown().await;
    result
}

async fn get(client: Client, args: GetArgs) -> Result<(), Failure> {
    let (factory, informers) = start_and_sync(client, &args.selection, |_| {}).await?;
    let mut objects = Vec::new();
    for declared in &informers {
        let (name, lister) = (&declared.name, declared.informer.lister());
        let redaction = declared.redaction(args.show_secrets);
        let found = match (&args.index, &args.by_labels) {
            (Some(index), _) => {
                let (index, value) = index.split_once('=').ok_or_else(|| {
                    Failure::usage(format!("--index {index:?}: expected NAME=VALUE"))
                })?;
                lister
                    .by_index(index, value)
                    .map_err(|e| Failure::usage(format!("{name}: {e}")))?
            }
            (None, Some(selector)) => lister
                .list(selector.as_str())
                .map_err(|e| Failure::usage(format!("{name}: {e}")))?,
            (None, None) => lister.list_all(),
        };
        objects.extend(found.into_iter().map(|o| (redaction, o)));
    }
    objects.sort_by(|(_, a), (_, b)| {
        (a.metadata.namespace.as_deref(), a.metadata.name.as_deref())
            .cmp(&(b.metadata.namespace.as_deref(), b.metadata.name.as_deref()))
    });
    let objects: Vec<_> = objects.iter().map(|(r, o)| r.object(o)).collect();
    let result = print_objects(&objects, args.output).map_err(Failure::runtime);
    factory.shutdown().await;
    result
}

async fn resources(client: Client, args: ResourcesArgs) -> Result<(), Failure> {
    let discovery = kube_dynamic_informer::discovery::DiscoveryCache::new(client);
    let snapshot = discovery.refresh().await.map_err(Failure::runtime)?;
    for u in snapshot.unavailable() {
        eprintln!("kdi: not discovered: {u}");
    }
    let mut rows: Vec<_> = snapshot
        .resources()
        .iter()
        .filter(|r| args.all_versions || r.preferred_version)
        .collect();
    rows.sort_by(|a, b| (&a.group, &a.plural, &a.version).cmp(&(&b.group, &b.plural, &b.version)));
    match args.output {
        ResourcesFormat::Json => {
            let list: Vec<_> = rows
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "name": r.plural,
                        "shortNames": r.short_names,
                        "apiVersion": r.key().api_version(),
                        "group": r.group,
                        "version": r.version,
                        "namespaced": r.namespaced,
                        "kind": r.kind,
                        "watchable": snapshot.is_watchable(&r.key()),
                        "fullName": r.key().to_string(),
                    })
                })
                .collect();
            println!(
                "{}",
                serde_json::to_string_pretty(&list).unwrap_or_default()
            );
        }
        ResourcesFormat::Table => {
            let table: Vec<[String; 5]> = rows
                .iter()
                .map(|r| {
                    [
                        r.plural.clone(),
                        r.short_names.join(","),
                        r.key().api_version(),
                        r.namespaced.to_string(),
                        r.kind.clone(),
                    ]
                })
                .collect();
            output::print_table(
                &["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"],
                &table,
            );
        }
    }
    Ok(())
}
