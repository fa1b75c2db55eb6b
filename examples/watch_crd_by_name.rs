//! Watch any resource named on the command line — built-in, CRD or
//! aggregated — through the informer factory, and print its events.
//!
//! ```text
//! cargo run --example watch_crd_by_name -- deploy
//! cargo run --example watch_crd_by_name -- widgets.v1.example.com shop   # only namespace "shop"
//! ```
//!
//! Runs against the cluster of the current kubeconfig (`KUBECONFIG`) until
//! Ctrl-C. A CRD that is not installed yet can be named fully
//! (`plural.version.group`): the informer reports it pending and starts by
//! itself once the CRD is served; when the CRD is deleted it reports it gone,
//! and carries on when the CRD comes back.

use std::time::Duration;

use kube_client::Client;
use kube_dynamic_informer::factory::InformerFactory;
use kube_dynamic_informer::informer::Event;
use kube_dynamic_informer::informer::InformerOptions;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let resource = args.next().unwrap_or_else(|| "deployments.apps".into());
    let namespace = args.next();

    let client = Client::try_default().await?;
    let mut options = InformerOptions::default().strip_managed_fields();
    if let Some(ns) = &namespace {
        options = options.namespace(ns);
    }
    let factory = InformerFactory::with_options(client, options);
    // Unknown or ambiguous names fail here, with suggestions or choices.
    let informer = factory.for_resource(resource.as_str()).await?;
    match informer.scope() {
        Some(scope) => println!("watching {} ({scope:?})", informer.resource()),
        None => println!("watching {} (not served yet)", informer.resource()),
    }
    informer.informer().add_handler(|event: Event| {
        let o = event.object();
        println!(
            "{:<6} {}{} rv={}",
            event.kind(),
            o.namespace().map(|ns| format!("{ns}/")).unwrap_or_default(),
            o.name().unwrap_or(""),
            o.resource_version().unwrap_or("")
        );
    });

    let mut status = informer.informer().watch_status();
    factory.start()?;
    let report = factory.wait_for_cache_sync(Duration::from_secs(10)).await;
    for failure in report.failures() {
        eprintln!("not synced yet: {failure}");
    }
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            changed = status.changed() => {
                if changed.is_err() {
                    break;
                }
                eprintln!("status: {}", *status.borrow_and_update());
            }
        }
    }
    factory.shutdown().await;
    Ok(())
}
