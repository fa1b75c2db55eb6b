//! Index a resource with JMESPath expressions and query it through the
//! generic lister: by label selector, by namespace, by index.
//!
//! ```text
//! cargo run --example index_and_query                  # pods
//! cargo run --example index_and_query -- deploy 'app in (web, api)'
//! ```
//!
//! Runs against the cluster of the current kubeconfig (`KUBECONFIG`), prints
//! what it found and exits.

use std::collections::BTreeMap;
use std::time::Duration;

use kube_client::Client;
use kube_dynamic_informer::cache::IndexFn;
use kube_dynamic_informer::factory::InformerFactory;
use kube_dynamic_informer::informer::InformerOptions;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let resource = args.next().unwrap_or_else(|| "pods".into());
    let selector = args.next().unwrap_or_default();

    let client = Client::try_default().await?;
    let factory =
        InformerFactory::with_options(client, InformerOptions::default().strip_managed_fields());
    let informer = factory.for_resource(resource.as_str()).await?;
    // Many-to-many: an object is filed under each of its label keys.
    informer.informer().add_index(
        "label-key",
        IndexFn::jmespath("label-key", "keys(metadata.labels || `{}`)")?,
    )?;
    informer.informer().add_index(
        "owner-kind",
        IndexFn::jmespath("owner-kind", "metadata.ownerReferences[].kind")?,
    )?;
    factory.start()?;
    factory
        .wait_for_cache_sync(Duration::from_secs(60))
        .await
        .into_result()?;

    let lister = informer.lister();
    let selected = lister.list(selector.as_str())?;
    println!(
        "{}: {} objects cached, {} match {selector:?}",
        informer.resource(),
        lister.list_all().len(),
        selected.len()
    );
    let mut per_namespace: BTreeMap<String, usize> = BTreeMap::new();
    for o in &selected {
        *per_namespace
            .entry(o.namespace().unwrap_or("(cluster)").to_owned())
            .or_default() += 1;
    }
    for (ns, count) in &per_namespace {
        println!("  {ns}: {count}");
    }
    if let Some(ns) = per_namespace
        .keys()
        .next()
        .filter(|ns| !ns.starts_with('('))
    {
        let in_ns = lister.namespace(ns.as_str())?.list(selector.as_str())?;
        println!(
            "through the namespace index, {ns} holds {} of them",
            in_ns.len()
        );
    }
    let store = informer.informer().store();
    for value in store.index_values("owner-kind")? {
        println!(
            "owned by a {value}: {}",
            lister.by_index("owner-kind", &value)?.len()
        );
    }
    let mut keys = store.index_values("label-key")?;
    keys.sort();
    println!("label keys in use: {}", keys.join(", "));
    factory.shutdown().await;
    Ok(())
}
