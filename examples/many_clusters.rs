//! Watch the same resources in several clusters from one process: the
//! contexts of a kubeconfig, or every context.
//!
//! ```text
//! cargo run --example many_clusters -- east west            # these contexts
//! cargo run --example many_clusters                         # every context
//! KDI_RESOURCES=deploy,widgets.example.com cargo run --example many_clusters -- east west
//! ```
//!
//! Runs until Ctrl-C, printing each event with its cluster, then once a
//! minute the sync state of every cluster and resource. A cluster that
//! cannot be reached is reported and joins when it answers; a CRD missing
//! in one cluster is pending there and followed as it comes and goes.

use std::time::Duration;

use kube_client::config::Kubeconfig;
use kube_dynamic_informer::cache::IndexFn;
use kube_dynamic_informer::declarative::{
    ClusterEvent, ClusterSet, clusters_from_all_contexts, clusters_from_contexts,
};
use kube_dynamic_informer::informer::InformerOptions;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let contexts: Vec<String> = std::env::args().skip(1).collect();
    let resources = std::env::var("KDI_RESOURCES").unwrap_or_else(|_| "configmaps".into());

    let set = ClusterSet::new(InformerOptions::default().strip_managed_fields());
    for resource in resources.split(',') {
        set.add_resource(resource);
        // Every cluster's informer gets the index, present and future.
        set.add_index(
            resource,
            "app",
            IndexFn::jmespath("app", "metadata.labels.app")?,
        )?;
    }
    let kubeconfig = Kubeconfig::read()?;
    let clusters = if contexts.is_empty() {
        clusters_from_all_contexts(&kubeconfig).await?
    } else {
        clusters_from_contexts(&kubeconfig, &contexts).await?
    };
    for (name, config) in clusters {
        set.add_cluster(name, config)?;
    }
    set.add_handler(|e: ClusterEvent| {
        let o = e.event.object();
        println!(
            "{:<12} {:<8} {} {}/{}",
            e.cluster,
            e.event.kind(),
            e.resource,
            o.namespace().unwrap_or("-"),
            o.name().unwrap_or("")
        );
    });
    set.start()?;

    let report = set.wait_for_cache_sync(Duration::from_secs(20)).await;
    for result in &report.results {
        eprintln!("{result}");
    }
    for resource in set.resources() {
        let web = set.lister(&resource).by_index("app", "web")?;
        let keys: Vec<String> = web.iter().map(|o| o.key()).collect();
        eprintln!("{resource} with app=web, in every cluster: {keys:?}");
    }

    let mut every_minute = tokio::time::interval(Duration::from_secs(60));
    every_minute.tick().await;
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            _ = every_minute.tick() => {
                for (cluster, resource, state) in set.status() {
                    eprintln!("{cluster} {resource}: {state:?}");
                }
            }
        }
    }
    set.shutdown().await;
    Ok(())
}
