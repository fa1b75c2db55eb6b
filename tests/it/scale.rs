//! Hundreds of informers in one process: 500 informers × 2 handlers share
//! the handler pool's threads.
//!
//! The figures in BENCHMARKS.md ("Hundreds of informers") come from this
//! test in a release build, alone on the machine:
//!
//! ```text
//! cargo test --release --features cli --test it scale:: -- --nocapture
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, Patch, PatchParams, PostParams};
use kube_dynamic_informer::InformerFactory;
use kube_dynamic_informer::informer::{Event, handler_pool_stats};
use serde_json::json;

use crate::support;

const INFORMERS: usize = 500;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_informers_with_two_handlers_each_share_a_bounded_set_of_threads() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "scale").await;
    let api = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    // One ConfigMap per informer, each informer selecting its own by label.
    futures::stream::iter((0..INFORMERS).map(|i| {
        let api = api.clone();
        async move {
            let cm: ConfigMap = serde_json::from_value(json!({
                "metadata": { "name": format!("cm-{i}"), "labels": { "shard": i.to_string() } },
                "data": { "n": "0" }
            }))
            .unwrap();
            api.create(&PostParams::default(), &cm).await.map(|_| ())
        }
    }))
    .buffer_unordered(16)
    .collect::<Vec<_>>()
    .await
    .into_iter()
    .collect::<Result<Vec<()>, _>>()
    .expect("creating ConfigMaps");

    let threads_before = support::proc_status("self", "Threads:");
    let rss_before = support::proc_status("self", "VmRSS:");
    let factory = InformerFactory::with_options(client.clone(), support::options().namespace(&ns));
    // (name, `data.n`, when) of each event the first handler of each
    // informer sees; the second handler counts.
    let (arrivals, mut arrived) =
        tokio::sync::mpsc::unbounded_channel::<(String, String, Instant)>();
    let counted = Arc::new(AtomicUsize::new(0));
    let mut registrations = Vec::new();
    for i in 0..INFORMERS {
        let informer = factory
            .for_resource_with("configmaps", |o| o.label_selector(format!("shard={i}")))
            .await
            .expect("an informer");
        let arrivals = arrivals.clone();
        registrations.push(informer.informer().add_handler(move |e: Event| {
            let o = e.object();
            let n = o
                .pointer("/data/n")
                .and_then(|n| n.as_str())
                .unwrap_or_default()
                .to_string();
            let _ = arrivals.send((o.name().unwrap_or_default().to_owned(), n, Instant::now()));
        }));
        let counted = counted.clone();
        registrations.push(informer.informer().add_handler(move |_e: Event| {
            counted.fetch_add(1, Ordering::Relaxed);
        }));
    }
    let started = Instant::now();
    factory.start().unwrap();
    let report = factory.wait_for_cache_sync(Duration::from_secs(300)).await;
    assert!(report.all_synced(), "{report:?}");
    let synced_after = started.elapsed();
    support::wait_for(
        "every handler's initial add",
        Duration::from_secs(60),
        || {
            let done = counted.load(Ordering::Relaxed);
            async move {
                if done >= INFORMERS {
                    Ok(())
                } else {
                    Err(format!("{done} of {INFORMERS}"))
                }
            }
        },
    )
    .await;

    // Writes to every informer's object, one at a time, each timed from the
    // write's request to its handler's call.
    let mut latencies = Vec::with_capacity(INFORMERS);
    for round in 1..=2 {
        for i in 0..INFORMERS {
            let name = format!("cm-{i}");
            let n = (round * 1000 + i).to_string();
            let writing = Instant::now();
            api.patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "data": { "n": n } })),
            )
            .await
            .expect("patch");
            let seen = tokio::time::timeout(Duration::from_secs(30), async {
                while let Some((o, v, at)) = arrived.recv().await {
                    if o == name && v == n {
                        return at;
                    }
                }
                panic!("the handlers stopped");
            })
            .await
            .unwrap_or_else(|_| panic!("no event for {name} within 30 s"));
            latencies.push(seen.saturating_duration_since(writing));
        }
    }
    latencies.sort();
    let threads = support::proc_status("self", "Threads:");
    let rss = support::proc_status("self", "VmRSS:");
    let pool = handler_pool_stats();
    println!(
        "scale: {INFORMERS} informers x 2 handlers: synced in {synced_after:.2?}; threads {threads_before} -> {threads} (+{}), handler pool {} workers, {} threads now, {} spares started; RSS {} -> {} MiB; event latency p50 {:.2?} p99 {:.2?} max {:.2?} over {} writes",
        threads.saturating_sub(threads_before),
        pool.workers,
        pool.threads,
        pool.spares_started,
        rss_before / 1024,
        rss / 1024,
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies.last().unwrap(),
        latencies.len(),
    );
    // A thread per handler would be 1,000 more; the pool stays within its
    // size plus the tests running alongside.
    assert!(
        threads.saturating_sub(threads_before) < 100,
        "threads grew from {threads_before} to {threads}"
    );
    assert!(pool.threads <= pool.workers + 16, "{pool:?}");
    drop(registrations);
    factory.shutdown().await;
}
