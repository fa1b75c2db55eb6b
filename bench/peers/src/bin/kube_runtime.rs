//! kube-runtime's peer: `watcher` + `reflector` store with the same two
//! handlers, called in the stream's consumer (kube-runtime has no handler
//! fan-out and no indexes: `by_index` here is a scan of the store).

use std::time::Instant;

use futures::StreamExt;
use kdi_bench_peers::{
    Args, Handlers, cpu_seconds, emit, finish_run, percentile, proc_status_mb, query_values, round,
};
use kube::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher::{self, Event, watcher};
use kube_core::DynamicObject;
use serde_json::json;

/// Scans are slow; time fewer of them.
const SCAN_QUERIES: usize = 200;

#[tokio::main]
async fn main() {
    let start = Instant::now();
    let args = Args::parse();
    let client = args.client().await;
    let resource = args.resource();
    let api = Api::<DynamicObject>::all_with(client, &resource);

    let writer = Writer::<DynamicObject>::new(resource.clone());
    let reader = writer.as_reader();
    let strip = args.strip_managed_fields;
    let stream = watcher(api, watcher::Config::default())
        .default_backoff()
        .modify(move |obj: &mut DynamicObject| {
            if strip {
                obj.metadata.managed_fields = None;
            }
        })
        .reflect(writer);

    let handlers = Handlers::new(&args);
    let h = handlers.clone();
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(Event::Apply(obj)) => {
                    h.lag_on_update(&obj);
                    h.tally(&obj, 0);
                }
                Ok(Event::InitApply(obj)) => h.tally(&obj, 1),
                Ok(Event::Delete(obj)) => h.tally(&obj, -1),
                Ok(Event::Init | Event::InitDone) => {}
                Err(e) => eprintln!("kube-runtime peer: watcher error: {e}"),
            }
        }
    });

    tokio::time::timeout(args.timeout, reader.wait_until_ready())
        .await
        .expect("sync timeout")
        .expect("writer dropped");
    let sync_s = start.elapsed().as_secs_f64();
    let cpu_sync = cpu_seconds();
    let rss_sync = proc_status_mb("VmRSS");
    tokio::time::sleep(args.settle).await;
    let rss_steady = proc_status_mb("VmRSS");
    let objects = reader.len();

    let node_path = if args.dataset == "crd" {
        "/spec/nodeName"
    } else {
        "/data/nodeName"
    };
    let values = query_values(args.queries.min(SCAN_QUERIES));
    for value in &values {
        drop(
            reader.state_filter(|o| {
                o.data.pointer(node_path).and_then(|v| v.as_str()) == Some(value)
            }),
        );
    }
    let mut durations = Vec::with_capacity(values.len());
    let mut hits = 0usize;
    for value in &values {
        let t = Instant::now();
        let items = reader
            .state_filter(|o| o.data.pointer(node_path).and_then(|v| v.as_str()) == Some(value));
        let d = t.elapsed();
        hits += items.len();
        drop(items);
        durations.push(d.as_secs_f64() * 1e6);
    }
    durations.sort_by(f64::total_cmp);

    #[allow(clippy::cast_precision_loss)]
    let mut result = json!({
        "peer": "kube-runtime", "dataset": args.dataset, "objects": objects, "strip": strip,
        "sync_s": round(sync_s, 3), "cpu_sync_s": round(cpu_sync, 3),
        "rss_sync_mb": round(rss_sync, 1), "rss_steady_mb": round(rss_steady, 1),
        "by_index_scan": true,
        "by_index_p50_us": round(percentile(&durations, 50.0), 2),
        "by_index_p99_us": round(percentile(&durations, 99.0), 2),
        "by_index_hits_avg": round(hits as f64 / values.len().max(1) as f64, 1),
    });
    emit(&json!({"event": "synced", "peer": "kube-runtime", "objects": objects}));

    finish_run(&mut result, &handlers, &args).await;
    task.abort();
}
