//! The load test: 50,000 objects, then a minute of updates at 1,000/s, with
//! three indexes and two handlers. It takes several minutes, so it runs only
//! with `KDI_LOAD_TEST=1`:
//!
//! ```text
//! KDI_LOAD_TEST=1 cargo test --release --test it reliability::load -- --nocapture
//! ```
//!
//! `KDI_LOAD_OBJECTS`, `KDI_LOAD_RATE` (updates per second), `KDI_LOAD_SECS`
//! and `KDI_LOAD_WORKERS` (requests in flight) change the figures;
//! `KDI_LOAD_TEST_STORAGE` (`compact`, the default, or `objects`) chooses how
//! the informer's cache holds its objects. The test prints what it measured,
//! memory growth included; RELIABILITY.md records a run.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube_client::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube_dynamic_informer::cache::IndexFn;
use kube_dynamic_informer::cache::Storage;
use kube_dynamic_informer::informer::InformerOptions;
use kube_dynamic_informer::informer::{Event, SharedInformer};
use kube_dynamic_informer::vocabulary::Scope;
use serde_json::json;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::{Tracker, cache_state, configmaps, converge, diff, heap_in_use_kib, rss_kib};
use crate::support::controlplane::{ControlPlane, Options};
use crate::support::{self, wait_for};

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn config_map(name: &str, i: u64, round: u64) -> DynamicObject {
    let mut o = DynamicObject::new(name, &configmaps());
    o.metadata.labels = Some(
        [
            ("app".to_string(), "load".to_string()),
            ("shard".to_string(), (i % 16).to_string()),
        ]
        .into(),
    );
    o.data = json!({ "data": { "bucket": (i % 100).to_string(), "round": round.to_string() } });
    o
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_thousand_objects_then_a_minute_of_updates_lose_nothing() {
    if std::env::var("KDI_LOAD_TEST").ok().as_deref() != Some("1") {
        eprintln!(
            "skipped: the load test takes minutes; run it with KDI_LOAD_TEST=1 (see RELIABILITY.md)"
        );
        return;
    }
    let objects = setting("KDI_LOAD_OBJECTS", 50_000);
    let rate = setting("KDI_LOAD_RATE", 1_000);
    let secs = setting("KDI_LOAD_SECS", 60);
    let workers = setting("KDI_LOAD_WORKERS", 96) as usize;
    let storage = match std::env::var("KDI_LOAD_TEST_STORAGE").as_deref() {
        Ok("compact" | "") | Err(_) => Storage::Compact,
        Ok("objects") => Storage::Objects,
        Ok(other) => panic!("KDI_LOAD_TEST_STORAGE={other}: objects or compact"),
    };
    eprintln!("load: {objects} objects, {rate} updates/s for {secs} s, storage {storage:?}");

    // A control plane of its own, so the load does not slow the other tests
    // and its 50,000 objects do not stay behind.
    let dir = super::tempdir("load");
    let opts = Options {
        data_dir: Some(dir.clone()),
        ..support::local_options()
    };
    let cp = tokio::task::spawn_blocking(move || ControlPlane::start(&opts))
        .await
        .unwrap()
        .unwrap();
    let client = kube_client::Client::try_from(
        support::config_from_file(cp.ready().kubeconfig("admin")).await,
    )
    .unwrap();
    let ns = support::namespace(&client, "load").await;
    let ar = configmaps();
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);

    let started = Instant::now();
    let failed = futures::stream::iter((0..objects).map(|i| {
        let api = api.clone();
        async move {
            api.create(
                &PostParams::default(),
                &config_map(&format!("cm-{i}"), i, 0),
            )
            .await
            .err()
        }
    }))
    .buffer_unordered(workers)
    .filter_map(|e| async move { e })
    .count()
    .await;
    let create_time = started.elapsed();
    assert_eq!(failed, 0, "creating {objects} objects");

    let index = |name: &str, expr: &str| IndexFn::jmespath(name, expr).unwrap();
    let options = InformerOptions::default()
        .namespace(&ns)
        .strip_managed_fields()
        .storage(storage);
    let informer =
        SharedInformer::new(client.clone(), ar.clone(), Scope::Namespaced, options).unwrap();
    for (name, func) in [
        ("shard", index("shard", "metadata.labels.shard")),
        ("label-keys", index("label-keys", "keys(metadata.labels)")),
        (
            "bucket-round",
            index("bucket-round", "[data.bucket, data.round]"),
        ),
    ] {
        informer.add_index(name, func).unwrap();
    }
    let tracker = Tracker::default();
    let checker = informer.add_handler(tracker.handler());
    let counted = Arc::new(AtomicU64::new(0));
    let counter = informer.add_handler({
        let counted = counted.clone();
        move |_e: Event| {
            counted.fetch_add(1, Ordering::Relaxed);
        }
    });
    let cancel = CancellationToken::new();
    let sync_started = Instant::now();
    informer.start(cancel.clone()).unwrap();
    informer
        .wait_for_sync(Duration::from_secs(600))
        .await
        .unwrap();
    let sync_time = sync_started.elapsed();
    let drained = || async {
        if checker.backlog() == 0 && counter.backlog() == 0 {
            Ok(())
        } else {
            Err(format!(
                "backlogs {} and {}",
                checker.backlog(),
                counter.backlog()
            ))
        }
    };
    wait_for("the handlers to drain", Duration::from_secs(300), drained).await;
    // The last resourceVersion the updater got back, per key; filled before
    // measuring so that its memory counts on both sides.
    let expected: Arc<Mutex<HashMap<String, u64>>> = Arc::new(Mutex::new(
        (0..objects).map(|i| (format!("{ns}/cm-{i}"), 0)).collect(),
    ));
    // The catch-up check below clones the handler's view of 50,000 keys;
    // one clone here makes that transient count on both sides too.
    drop(tracker.objects());
    let rss_before = rss_kib();
    let heap_before = heap_in_use_kib();

    // Updates, paced: a ticker hands out `rate` permits a second (never more
    // than a second's worth at once), and `workers` tasks spend them.
    let permits = Arc::new(Semaphore::new(0));
    let stop = CancellationToken::new();
    let ticker = {
        let (permits, stop) = (permits.clone(), stop.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(10));
            let mut owed = 0.0f64;
            while !stop.is_cancelled() {
                tick.tick().await;
                owed += rate as f64 / 100.0;
                let whole = owed.floor();
                owed -= whole;
                if permits.available_permits() < rate as usize {
                    permits.add_permits(whole as usize);
                }
            }
            permits.close();
        })
    };
    let (done, errors) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let next = Arc::new(AtomicU64::new(1));
    let update_started = Instant::now();
    let tasks: Vec<_> = (0..workers)
        .map(|_| {
            let (api, permits, expected) = (api.clone(), permits.clone(), expected.clone());
            let (done, errors, next, ns) = (done.clone(), errors.clone(), next.clone(), ns.clone());
            tokio::spawn(async move {
                while let Ok(permit) = permits.acquire().await {
                    permit.forget();
                    let round = next.fetch_add(1, Ordering::Relaxed);
                    let i = rand::random_range(0..objects);
                    let name = format!("cm-{i}");
                    let patch = json!({ "data": { "round": round.to_string() } });
                    match api
                        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                    {
                        Ok(o) => {
                            let rv: u64 = o.metadata.resource_version.unwrap().parse().unwrap();
                            let mut e = expected.lock().unwrap();
                            let slot = e.get_mut(&format!("{ns}/{name}")).unwrap();
                            *slot = (*slot).max(rv);
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(_) => {
                            errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })
        })
        .collect();
    let mut rss_peak = rss_before;
    let mut per_second = Vec::new();
    let mut last = 0;
    for _ in 0..secs {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = done.load(Ordering::Relaxed);
        per_second.push(now - last);
        last = now;
        rss_peak = rss_peak.max(rss_kib());
    }
    stop.cancel();
    ticker.await.unwrap();
    for t in tasks {
        t.await.unwrap();
    }
    let update_time = update_started.elapsed();
    let updates = done.load(Ordering::Relaxed);

    // Caught up: per key, the last resourceVersion the updater got back is
    // the one the handler holds. (Checked without a server list, so that
    // RSS is measured before such a large response passes through.)
    let catch_up = Instant::now();
    let stale = || {
        let view = tracker.objects();
        let mut stale = Vec::new();
        for (key, rv) in expected.lock().unwrap().iter() {
            if *rv > 0 && view.get(key).and_then(|v| v.parse::<u64>().ok()) != Some(*rv) {
                stale.push(format!(
                    "{key}: updater got {rv}, handler has {:?}",
                    view.get(key)
                ));
            }
        }
        stale.sort();
        stale.truncate(10);
        stale
    };
    wait_for(
        "every update to reach the handler",
        Duration::from_secs(300),
        || async {
            let s = stale();
            if s.is_empty() {
                Ok(())
            } else {
                Err(format!("{s:?}"))
            }
        },
    )
    .await;
    wait_for("the handlers to drain", Duration::from_secs(300), drained).await;
    let catch_up = catch_up.elapsed();
    let rss_after = rss_kib();
    let heap_after = heap_in_use_kib();
    let server = converge(&informer, &tracker, &api, Duration::from_secs(300)).await;
    let stale = stale();
    assert!(stale.is_empty(), "{stale:?}");
    assert_eq!(
        cache_state(&informer),
        server,
        "{}",
        diff("cache", &cache_state(&informer), &server)
    );
    assert_eq!(tracker.problems(), Vec::<String>::new());
    let stats = informer.stats();
    let lists = stats.lists.load(Ordering::Relaxed);
    if lists == 1 {
        // No relist: each update was one watch event, none coalesced.
        assert_eq!(tracker.updates(), updates, "updates seen by the handler");
    }
    assert_eq!(counted.load(Ordering::Relaxed), objects + tracker.updates());

    per_second.sort();
    let growth = (rss_after as f64 - rss_before as f64) / rss_before as f64 * 100.0;
    eprintln!(
        "load: {objects} objects created in {create_time:.1?} ({:.0}/s, {workers} in flight); informer synced in {sync_time:.1?}\n\
         load: {updates} updates in {update_time:.1?} = {:.0}/s sustained (target {rate}/s; per-second min {} median {} max {}), {} failed\n\
         load: cache caught up {catch_up:.1?} after the last update; {} lists ({} after 410), {} watch requests, {} watch events\n\
         load: handler events: {} (checker), {} (counter); problems: none\n\
         load: RSS ({storage:?} storage) before {:.1} MiB, peak {:.1} MiB, after {:.1} MiB ({growth:+.1}%)",
        objects as f64 / create_time.as_secs_f64(),
        updates as f64 / update_time.as_secs_f64(),
        per_second.first().unwrap_or(&0),
        per_second.get(per_second.len() / 2).unwrap_or(&0),
        per_second.last().unwrap_or(&0),
        errors.load(Ordering::Relaxed),
        lists,
        stats.relists_after_gone.load(Ordering::Relaxed),
        stats.watch_requests.load(Ordering::Relaxed),
        stats.watch_events.load(Ordering::Relaxed),
        checker.delivered(),
        counter.delivered(),
        rss_before as f64 / 1024.0,
        rss_peak as f64 / 1024.0,
        rss_after as f64 / 1024.0,
    );
    if let (Some(before), Some(after)) = (heap_before, heap_after) {
        eprintln!(
            "load: heap in use (allocated, not yet freed) before {:.1} MiB, after {:.1} MiB ({:+.1}%)",
            before as f64 / 1024.0,
            after as f64 / 1024.0,
            (after as f64 - before as f64) / before as f64 * 100.0
        );
    }
    assert!(
        growth.abs() <= 10.0,
        "RSS went from {rss_before} KiB to {rss_after} KiB ({growth:+.1}%)"
    );
    cancel.cancel();
    drop(client);
    tokio::task::spawn_blocking(move || cp.stop())
        .await
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
