//! A handler added after the cache synced first receives every cached
//! object (flagged "in initial list"), then live events — no gap, no
//! duplicate — on the same shared informer as the first handler.
//!
//! ```text
//! cargo run --example late_handler -- configmaps kube-system
//! ```
//!
//! Runs against the cluster of the current kubeconfig (`KUBECONFIG`), prints
//! for a few seconds and exits.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use kube_client::Client;
use kube_dynamic_informer::factory::InformerFactory;
use kube_dynamic_informer::informer::Event;
use kube_dynamic_informer::informer::InformerOptions;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let resource = args.next().unwrap_or_else(|| "configmaps".into());
    let namespace = args.next().unwrap_or_else(|| "default".into());

    let client = Client::try_default().await?;
    let factory =
        InformerFactory::with_options(client, InformerOptions::default().namespace(&namespace));
    let early = factory.for_resource(resource.as_str()).await?;
    let early_count = Arc::new(AtomicUsize::new(0));
    let counter = early_count.clone();
    early.informer().add_handler(move |_: Event| {
        counter.fetch_add(1, Ordering::Relaxed);
    });
    factory.start()?;
    factory
        .wait_for_cache_sync(Duration::from_secs(30))
        .await
        .into_result()?;
    println!(
        "{} synced in {namespace}: {} objects; the early handler saw {} events",
        early.resource(),
        early.lister().list_all().len(),
        early_count.load(Ordering::Relaxed)
    );

    // Asking the factory again gives the same informer: no second watch.
    let late = factory.for_resource(resource.as_str()).await?;
    assert_eq!(late, early);
    let registration = late.informer().add_handler(|event: Event| {
        let initial = matches!(
            event,
            Event::Add {
                in_initial_list: true,
                ..
            }
        );
        println!(
            "late handler: {:<6} {}{}",
            event.kind(),
            event.object().name().unwrap_or(""),
            if initial {
                " (replayed from the cache)"
            } else {
                ""
            }
        );
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !registration.has_synced() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!("late handler replayed the cache; live events for 5 s more (change something)...");
    tokio::time::sleep(Duration::from_secs(5)).await;
    factory.shutdown().await;
    Ok(())
}
