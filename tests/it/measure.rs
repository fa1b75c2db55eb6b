//! Measurements of the control plane itself, run by hand:
//!
//! ```text
//! cargo test --test it measure -- --ignored --nocapture
//! ```

use std::time::Instant;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, PostParams};
use serde_json::json;

use crate::support::{self, controlplane::ControlPlane};

fn rss_kib(pid: u32) -> u64 {
    support::proc_status(&pid.to_string(), "VmRSS:")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "measurement, run by hand: cargo test --test it measure -- --ignored --nocapture"]
async fn measure_testenv_rss_idle_and_with_50k_objects() {
    let started = Instant::now();
    let cp = ControlPlane::start(&support::local_options()).unwrap();
    let ready_after = started.elapsed();
    let client = kube_client::Client::try_from(
        support::config_from_file(cp.ready().kubeconfig("admin")).await,
    )
    .unwrap();
    // Let start-up work settle: wait until RSS stops growing for 5 s.
    let mut last = rss_kib(cp.pid());
    loop {
        tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        let now = rss_kib(cp.pid());
        if now <= last + 1024 {
            break;
        }
        last = now;
    }
    let idle = rss_kib(cp.pid());
    let ns = support::namespace(&client, "measure").await;
    let api = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    let start = Instant::now();
    let n = 50_000;
    let errors = futures::stream::iter((0..n).map(|i| {
        let api = api.clone();
        async move {
            let cm: ConfigMap = serde_json::from_value(json!({
                "metadata": { "name": format!("cm-{i}"), "labels": { "app": "measure", "shard": (i % 10).to_string() } },
                "data": { "key": "value" }
            }))
            .unwrap();
            api.create(&PostParams::default(), &cm).await.err()
        }
    }))
    .buffer_unordered(64)
    .filter_map(|e| async move { e })
    .count()
    .await;
    let took = start.elapsed();
    let loaded = rss_kib(cp.pid());
    println!(
        "testenv ready after {ready_after:?}; RSS idle {} MiB; created {n} ConfigMaps in {took:?} ({:.0}/s, {errors} errors); RSS with them {} MiB",
        idle / 1024,
        n as f64 / took.as_secs_f64(),
        loaded / 1024
    );
    assert_eq!(errors, 0);
    cp.stop();
}
