//! A reconciler for any resource named on the command line: each key is
//! handed to one of the workers, which prints whether its object exists and
//! its generation, and asks to see it again after a while.
//!
//! ```text
//! cargo run --example reconcile -- widgets
//! cargo run --example reconcile -- deploy --workers 4 --every 30s --namespace shop
//! ```
//!
//! Runs against the cluster of the current kubeconfig (`KUBECONFIG`; with
//! the bundled control plane, `scripts/testenv start` prints it) until
//! Ctrl-C, then lets the keys being reconciled finish. Nothing is written
//! to the cluster.
//!
//! What it shows: the keys of a resource chosen at run time, fed by its
//! informer (each object once at start, then on every change); a key never
//! handed to two workers at once, however many events arrive meanwhile;
//! the object read from the informer's cache when the key is handed out
//! (`exists: false` once it is deleted); `RequeueAfter` bringing a key back
//! after the period (`retries` counts failed attempts, none here). A key
//! already waiting for its period when its object is deleted comes back
//! once more, absent, and is let go of then.

use std::convert::Infallible;
use std::time::Duration;

use kube_client::Client;
use kube_dynamic_informer::InformerFactory;
use kube_dynamic_informer::informer::InformerOptions;
use kube_dynamic_informer::reconcile::{Action, Context, Controller};
use kube_dynamic_informer::vocabulary::parse_duration;

/// What the command line asks for.
struct Args {
    resource: String,
    workers: usize,
    every: Duration,
    namespace: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let usage = "usage: reconcile RESOURCE [--workers N] [--every DURATION] [--namespace NS]";
    let mut args = std::env::args().skip(1);
    let mut parsed = Args {
        resource: String::new(),
        workers: 2,
        every: Duration::from_secs(60),
        namespace: None,
    };
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value; {usage}"));
        match arg.as_str() {
            "--workers" => {
                let n = value("--workers")?;
                parsed.workers = n.parse().map_err(|e| format!("--workers {n}: {e}"))?;
            }
            "--every" => {
                let d = value("--every")?;
                parsed.every = parse_duration(&d).map_err(|e| format!("--every: {e}"))?;
            }
            "--namespace" | "-n" => parsed.namespace = Some(value("--namespace")?),
            flag if flag.starts_with('-') => return Err(format!("unknown flag {flag}; {usage}")),
            name if parsed.resource.is_empty() => parsed.resource = name.to_owned(),
            extra => return Err(format!("unexpected {extra:?}; {usage}")),
        }
    }
    if parsed.resource.is_empty() {
        return Err(usage.to_owned());
    }
    Ok(parsed)
}

/// The reconcile function: harmless and visible. A deleted object is
/// reported once and let go of (no requeue: nothing is left to look at).
async fn report(ctx: Context, every: Duration) -> Result<Action, Infallible> {
    let Some(object) = ctx.object() else {
        println!("{}: exists: false (deleted)", ctx.key());
        return Ok(Action::Done);
    };
    println!(
        "{}: exists, generation {}, resourceVersion {}, retries {}",
        ctx.key(),
        object
            .pointer("/metadata/generation")
            .and_then(|g| g.as_i64())
            .map_or_else(|| "-".to_owned(), |g| g.to_string()),
        object.resource_version().unwrap_or("-"),
        ctx.retries(),
    );
    Ok(Action::RequeueAfter(every))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    let client = Client::try_default().await?;
    let mut options = InformerOptions::default().strip_managed_fields();
    if let Some(ns) = &args.namespace {
        options = options.namespace(ns);
    }
    let factory = InformerFactory::with_options(client.clone(), options);
    // Any name kubectl accepts; unknown or ambiguous ones fail here.
    let handle = factory.for_resource(args.resource.as_str()).await?;
    factory.start()?;

    let controller = Controller::new("example")
        .workers(args.workers)
        .client(client)
        .watch(&handle);
    let shutdown = controller.shutdown_handle();
    eprintln!(
        "reconciling {} with {} workers, every {:?}; Ctrl-C to stop",
        handle.resource(),
        args.workers,
        args.every
    );
    let every = args.every;
    let run = tokio::spawn(controller.run(move |ctx| report(ctx, every)));
    tokio::signal::ctrl_c().await?;
    eprintln!("stopping: letting the keys being reconciled finish");
    shutdown.shut_down_with_drain().await;
    run.await??;
    factory.shutdown().await;
    Ok(())
}
