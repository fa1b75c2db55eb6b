//! A warm restart, measured: an informer syncs a namespace of ConfigMaps
//! by listing it, stops (writing its snapshot), and starts again from the
//! snapshot; each start's time to sync and list requests are printed.
//! The cache holds the compact form, which it takes from the snapshot as it
//! is read; pass `objects` after the count for a cache of decoded objects.
//!
//! ```text
//! scripts/testenv start
//! KUBECONFIG=target/testenv/run/data/kubeconfig-admin.yaml \
//!   cargo run --release --example warm_restart -- 20000 [compact|objects]
//! ```
//!
//! Runs against the cluster of the current kubeconfig (`KUBECONFIG`):
//! creates the namespace `kdi-warm-restart` with that many ConfigMaps
//! (once; a later run reuses them) and a snapshot directory under the
//! system's temporary directory.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube_client::Client;
use kube_client::api::{Api, ListParams, PostParams};
use kube_dynamic_informer::cache::Storage;
use kube_dynamic_informer::informer::{InformerOptions, SharedInformer, SnapshotOptions};
use kube_dynamic_informer::vocabulary::Scope;
use tokio_util::sync::CancellationToken;

const NAMESPACE: &str = "kdi-warm-restart";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let count: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(5_000);
    let (storage, storage_name) = match std::env::args().nth(2).as_deref() {
        None | Some("compact") => (Storage::Compact, "compact"),
        Some("objects") => (Storage::Objects, "objects"),
        Some(other) => return Err(format!("storage {other:?}: expected compact or objects").into()),
    };
    let client = Client::try_default().await?;
    fill(&client, count).await?;
    let dir = std::env::temp_dir().join("kdi-warm-restart-example");
    let _ = std::fs::remove_dir_all(&dir);
    let options = InformerOptions::default()
        .storage(storage)
        .namespace(NAMESPACE)
        .snapshot(SnapshotOptions::new(&dir));
    println!(
        "{count} ConfigMaps in {NAMESPACE}, {storage_name} storage; snapshots in {}",
        dir.display()
    );
    for start in ["cold (lists)", "warm (from the snapshot)"] {
        let informer = SharedInformer::new(
            client.clone(),
            kube_client::core::ApiResource::erase::<ConfigMap>(&()),
            Scope::Namespaced,
            options.clone(),
        )?;
        let cancel = CancellationToken::new();
        let began = Instant::now();
        let task = informer.start(cancel.clone())?;
        informer.wait_for_sync(Duration::from_secs(300)).await?;
        let synced = began.elapsed();
        let stats = informer.stats();
        println!(
            "{start:<26} synced {} objects in {:>7.1} ms, {} list requests; {}",
            informer.store().len(),
            synced.as_secs_f64() * 1000.0,
            stats.list_requests.load(Ordering::Relaxed),
            stats
                .snapshot_start()
                .map_or_else(|| "no snapshot".to_owned(), |s| s.to_string())
        );
        let stopping = Instant::now();
        cancel.cancel();
        task.await?;
        println!(
            "{:<26} stopped (snapshot written) in {:.1} ms",
            "",
            stopping.elapsed().as_secs_f64() * 1000.0
        );
    }
    Ok(())
}

/// Creates the namespace and ConfigMaps `cm0`..`cm{count-1}` that are
/// missing.
async fn fill(client: &Client, count: usize) -> Result<(), Box<dyn std::error::Error>> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces.get_opt(NAMESPACE).await?.is_none() {
        let ns: Namespace = serde_json::from_value(serde_json::json!({
            "metadata": { "name": NAMESPACE }
        }))?;
        namespaces.create(&PostParams::default(), &ns).await?;
    }
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    let present = api.list_metadata(&ListParams::default()).await?.items.len();
    let created: Vec<_> = futures::stream::iter(present..count)
        .map(|i| {
            let api = api.clone();
            async move {
                let cm: ConfigMap = serde_json::from_value(serde_json::json!({
                    "metadata": { "name": format!("cm{i}"), "labels": { "app": "warm-restart" } },
                    "data": { "index": i.to_string(), "payload": "x".repeat(512) }
                }))?;
                api.create(&PostParams::default(), &cm).await?;
                Ok::<(), Box<dyn std::error::Error>>(())
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    created.into_iter().collect::<Result<Vec<()>, _>>()?;
    Ok(())
}
