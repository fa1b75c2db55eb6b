//! `kdi`: informers from the command line, for automation and for people.
//!
//! ```text
//! kdi watch -f informers.yaml                  # events as JSON lines
//! kdi watch -r deployments.apps -r widgets.example.com --object
//! kdi get -r pods --index node=node-1 -o table
//! kdi get -r deploy -l 'app in (web, api)' -o yaml
//! kdi get -r pods --keep spec.nodeName -o json # only that field cached
//! kdi wait -r deploy -l app=web --for 'status.readyReplicas == spec.replicas'
//! kdi resources                                 # what discovery offers
//! kdi resources widgets.example.com deploy       # what names designate
//! kdi check informers.yaml                      # validate without a cluster
//! kdi check --cluster informers.yaml            # and may they be watched?
//! ```
//!
//! Exit codes ([`exit::code`], the table of README.md's kdi section): 0
//! success; 1 the cluster cannot be reached or answers with an error (the
//! message names the server and every cause); 2 invalid arguments,
//! kubeconfig or config file; 3 caches that did not sync (each with its
//! reason on stderr); 4 a `wait` that timed out (a line per object that
//! keeps it from holding on stdout).
//!
//! stderr says what each informer is doing when that changes, and again at
//! `--progress-interval` what it still waits for (see [`progress`]): as
//! sentences on a terminal, with a live bar per informer while caches sync,
//! otherwise as JSON lines ([`stderr`] decides which)
//! (`{"informer", "resource", "status", "reason", ...}`); a cache that did
//! not sync ends with one such line per informer, `"synced": false`.
//! `get` ends at the first 403; `watch` waits for access.

/// kdi runs on jemalloc: with glibc's allocator, a compact cache under a
/// stream of updates spent about twice the CPU per update in `malloc` and
/// kept more memory (BENCHMARKS.md, "Allocators"). The library itself never
/// chooses an allocator; that is the application's call.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

mod access;
mod cluster;
mod clusters;
mod exit;
mod get;
mod indexes;
mod informers;
mod metrics;
mod output;
mod progress;
mod resources;
mod serve;
mod set_changes;
mod stderr;
mod stop;
mod wait;
mod watch;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use kube_dynamic_informer::declarative::InformerSet;
use kube_dynamic_informer::vocabulary::parse_duration;

use exit::Failure;
use get::GetArgs;
use resources::ResourcesArgs;
use serve::ServeArgs;
use stderr::Stderr;
use wait::WaitArgs;
use watch::WatchArgs;

/// Informers for any Kubernetes resource, from the command line.
#[derive(Parser, Debug)]
#[command(name = "kdi", version, about, long_about = None)]
struct Cli {
    /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long, global = true, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Kubeconfig context to use. Repeated, `watch` and `get` run over
    /// every context named, with the cluster in every line and a column of
    /// tables.
    #[arg(long, global = true, value_name = "NAME")]
    context: Vec<String>,
    /// `watch` and `get` over every context of the kubeconfig.
    #[arg(long, global = true, conflicts_with = "context")]
    all_contexts: bool,
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
    /// Wait until a condition holds for all, any or none of the objects
    /// (or until they are deleted), answered from the caches as events
    /// arrive; kubectl's `--for` forms are accepted too.
    #[command(mut_arg("timeout", |a| a
        .default_value("30s")
        .help("How long to wait, the caches' sync included; `0` checks once (after the caches have synced), as kubectl's does")))]
    Wait(WaitArgs),
    /// List the resources discovery offers (like `kubectl api-resources`),
    /// or say what the names given designate, and why not.
    Resources(ResourcesArgs),
    /// Serve the caches through the Kubernetes API (read-only), for
    /// kubectl, client-go, kube-rs and curl: one warm cache read by many
    /// programs.
    Serve(ServeArgs),
    /// Validate config files without a cluster; lists every problem.
    Check(CheckArgs),
    /// Print the Role a member of a shard group needs in the namespace of
    /// the group's Leases (`kubectl apply -f -` it, and bind it).
    ShardRole(ShardRoleArgs),
}

#[derive(Args, Debug)]
struct ShardRoleArgs {
    /// The namespace of the shard group's Leases.
    #[arg(long = "shard-group-namespace", short = 'n', value_name = "NS")]
    namespace: String,
}

#[derive(Args, Debug)]
struct CheckArgs {
    /// Config files to validate.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Also ask the cluster: each resource the files name must exist with
    /// the scope its options suit (no namespaces on a cluster-scoped one:
    /// exit 2, as loading the file says), and whether each resource the
    /// files name or their patterns select now may be listed and watched,
    /// in each namespace they restrict to; print the table. Exits 3 when
    /// anything is denied. Without it only the file itself is checked.
    #[arg(long)]
    cluster: bool,
}

fn parse_duration_arg(s: &str) -> Result<Duration, String> {
    parse_duration(s)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.verbose {
        tracing_subscriber::fmt()
            .with_writer(stderr::LogLine::default)
            .with_ansi(!Stderr::process().json())
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env()
                    .unwrap_or_else(|_| "kube_dynamic_informer=info".into()),
            )
            .init();
    }
    if let Command::Check(args) = &cli.command {
        let checked = check(args);
        if checked != ExitCode::from(exit::code::SUCCESS) || !args.cluster {
            return checked;
        }
    }
    if let Command::ShardRole(args) = &cli.command {
        let role = kube_dynamic_informer::declarative::rbac_role(&args.namespace);
        return exit_code(output::print_line(role));
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            output::say(format!("kdi: cannot start the async runtime: {e}"));
            return ExitCode::from(exit::code::CLUSTER);
        }
    };
    exit_code(runtime.block_on(run(cli)))
}

fn check(args: &CheckArgs) -> ExitCode {
    let mut failed = false;
    let mut said = Ok(());
    for file in &args.files {
        match InformerSet::load_file(file) {
            Ok(set) => {
                let patterns = match set.patterns.len() {
                    0 => String::new(),
                    1 => ", 1 pattern".to_string(),
                    n => format!(", {n} patterns"),
                };
                said = said.and(output::print_line(format!(
                    "{}: ok ({} informers{patterns})",
                    file.display(),
                    set.informers.len()
                )));
            }
            Err(errors) => {
                failed = true;
                for e in errors.problems() {
                    said = said.and(output::print_line(e));
                }
            }
        }
    }
    if said.is_err() {
        return exit_code(said);
    }
    ExitCode::from(if failed {
        exit::code::USAGE
    } else {
        exit::code::SUCCESS
    })
}

async fn run(cli: Cli) -> Result<(), Failure> {
    let contexts = clusters::Contexts {
        kubeconfig: cli.kubeconfig.as_ref(),
        contexts: &cli.context,
        all: cli.all_contexts,
    };
    match cli.command {
        Command::Watch(args) => run_watch(&contexts, args).await,
        Command::Get(args) => {
            // The config is read first: its problems need no cluster.
            let set = informers::informer_set(&args.selection)?;
            get::check_query(&set, &args)?;
            if contexts.many(&set) {
                return clusters::get(&contexts, set, args).await;
            }
            get::get(&contexts.connect().await?, set, args).await
        }
        Command::Wait(args) => run_wait(&contexts, args).await,
        Command::Serve(args) => {
            let set = informers::informer_set(&args.selection)?;
            if contexts.many(&set) {
                return Err(Failure::usage(
                    "serve reads one cluster: name one --context",
                ));
            }
            serve::serve(&contexts.connect().await?, set, args).await
        }
        Command::Resources(_) if contexts.several() => Err(Failure::usage(
            "resources reads one cluster: name one --context",
        )),
        Command::Resources(args) => resources::resources(&contexts.connect().await?, args).await,
        // Valid files, checked against the cluster (`--cluster`).
        Command::Check(args) => {
            let mut sets = Vec::new();
            for file in &args.files {
                let set =
                    InformerSet::load_file(file).map_err(|e| Failure::usage(e.to_string()))?;
                sets.push((file.display().to_string(), set));
            }
            access::check_cluster(&contexts.connect().await?, &sets).await
        }
        Command::ShardRole(_) => {
            unreachable!("handled before the runtime starts")
        }
    }
}

/// `kdi watch`: the config and the flags' expressions are checked before
/// any cluster is asked.
async fn run_watch(contexts: &clusters::Contexts<'_>, args: WatchArgs) -> Result<(), Failure> {
    let mut set = informers::informer_set(&args.selection)?;
    watch::check_index_values(&set, &args)?;
    watch::check_filters(&args)?;
    watch::lay_filters(args.filter.as_ref(), &args.changes, &mut set);
    if contexts.many(&set) {
        return clusters::watch(contexts, set, args).await;
    }
    if let Some(addr) = args.metrics_addr {
        metrics::serve(addr)?;
    }
    watch::watch(&contexts.connect().await?, set, args).await
}

/// `kdi wait`: one cluster. Named objects need the cluster to know their
/// namespace; otherwise the config is read first.
async fn run_wait(contexts: &clusters::Contexts<'_>, mut args: WaitArgs) -> Result<(), Failure> {
    if contexts.several() {
        return Err(Failure::usage("wait reads one cluster: name one --context"));
    }
    let goal = wait::check(&args)?;
    let early = if args.names.is_empty() {
        None
    } else {
        let cluster = contexts.connect().await?;
        wait::namespace_of_names(&cluster, &mut args).await;
        Some(cluster)
    };
    let set = wait::informers(&args)?;
    let cluster = match early {
        Some(cluster) => cluster,
        None => contexts.connect().await?,
    };
    wait::wait(&cluster, set, args, goal).await
}

/// The exit code of a command's result; a failure is said on stderr first.
fn exit_code(result: Result<(), Failure>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::from(exit::code::SUCCESS),
        Err(f) => {
            output::say(format!("kdi: {}", f.message.trim_end()));
            ExitCode::from(f.code)
        }
    }
}
