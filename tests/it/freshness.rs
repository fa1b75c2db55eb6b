//! Freshness and handlers under load against a real kube-apiserver: reading
//! one's own writes through the cache, a coalescing handler under a burst.
//!
//! The burst's figures in BENCHMARKS.md ("Handlers under a burst") come from
//! a release build, alone on the machine:
//!
//! ```text
//! cargo test --release --features cli --test it freshness::a_coalescing -- --nocapture
//! KDI_BURST_COALESCE=false cargo test --release --features cli --test it freshness::a_coalescing -- --nocapture
//! ```
//!
//! (the second runs the same burst without coalescing, for comparison: every
//! event is delivered, and only the final state is checked).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use kube_client::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube_dynamic_informer::InformerFactory;
use kube_dynamic_informer::cache::CachedObject;
use kube_dynamic_informer::informer::{Event, HandlerOptions, InformerError, SharedInformer};
use kube_dynamic_informer::vocabulary::Scope;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support;

/// `spec.n` of an object (-1 when absent).
fn n_of(o: &DynamicObject) -> i64 {
    o.data["spec"]["n"].as_i64().unwrap_or(-1)
}

/// `spec.n` of a cached object, read in place (-1 when absent).
fn cached_n_of(o: &CachedObject) -> i64 {
    o.pointer("/spec/n").and_then(|v| v.as_i64()).unwrap_or(-1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_reads_its_own_writes_through_the_cache_under_load() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "fresh-rw").await;
    let ar = support::install_crd(&client, &support::widget_crd(&support::unique_group())).await;
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);
    let others: Vec<DynamicObject> = (0..20)
        .map(|i| support::widget(&ar, &format!("other-{i}"), json!({ "n": 0 })))
        .collect();
    support::create_many(&api, others, 8).await;

    let informer = SharedInformer::new(
        client.clone(),
        ar.clone(),
        Scope::Namespaced,
        support::options().namespace(&ns),
    )
    .unwrap();
    let cancel = CancellationToken::new();
    informer.start(cancel.clone()).unwrap();
    informer
        .wait_for_sync(Duration::from_secs(60))
        .await
        .unwrap();

    // Concurrent writers keep the watch busy with other objects.
    let stop = Arc::new(AtomicBool::new(false));
    let load_writes = Arc::new(AtomicUsize::new(0));
    let load = {
        let (api, stop, count) = (api.clone(), stop.clone(), load_writes.clone());
        tokio::spawn(async move {
            let mut round = 0;
            while !stop.load(Ordering::Relaxed) {
                round += 1;
                futures::stream::iter((0..20).map(|i| {
                    let api = api.clone();
                    async move {
                        let patch = Patch::Merge(json!({ "spec": { "n": round } }));
                        api.patch(&format!("other-{i}"), &PatchParams::default(), &patch)
                            .await
                            .expect("load patch");
                    }
                }))
                .buffer_unordered(4)
                .collect::<Vec<()>>()
                .await;
                count.fetch_add(20, Ordering::Relaxed);
            }
        })
    };

    let key = format!("{ns}/mine");
    let created = api
        .create(
            &PostParams::default(),
            &support::widget(&ar, "mine", json!({ "n": 0 })),
        )
        .await
        .unwrap();
    informer
        .wait_for_object(&created, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(informer.store().get(&key).map(|o| cached_n_of(&o)), Some(0));
    for n in 1..=100 {
        let written = api
            .patch(
                "mine",
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": { "n": n } })),
            )
            .await
            .unwrap();
        informer
            .wait_for_object(&written, Duration::from_secs(10))
            .await
            .unwrap_or_else(|e| panic!("write {n}: {e}"));
        let cached = informer.store().get(&key).expect("cached");
        assert_eq!(
            cached_n_of(&cached),
            n,
            "the cache shows write {n} once the wait returns"
        );
    }
    stop.store(true, Ordering::Relaxed);
    load.await.unwrap();
    assert!(
        load_writes.load(Ordering::Relaxed) >= 20,
        "the other writers wrote meanwhile"
    );

    // An object of another resource is refused at once.
    let cm: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": "x", "namespace": ns, "resourceVersion": "1" }
    }))
    .unwrap();
    let err = informer
        .wait_for_object(&cm, Duration::from_secs(10))
        .await
        .unwrap_err();
    assert!(matches!(err, InformerError::OtherResource { .. }), "{err}");
    cancel.cancel();

    // Through a factory: every informer that caches the object is waited for.
    let factory = InformerFactory::with_options(client.clone(), support::options());
    let full = format!("widgets.v1.{}", ar.group);
    factory.for_resource(full.as_str()).await.unwrap();
    factory.start().unwrap();
    assert!(
        factory
            .wait_for_cache_sync(Duration::from_secs(60))
            .await
            .all_synced()
    );
    let written = api
        .patch(
            "mine",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "n": 1000 } })),
        )
        .await
        .unwrap();
    assert_eq!(
        factory
            .wait_for_object(&written, Duration::from_secs(10))
            .await
            .unwrap(),
        1
    );
    let lister = factory.informers()[0].lister();
    assert_eq!(lister.get(&key).map(|o| cached_n_of(&o)), Some(1000));
    let err = factory
        .wait_for_object(&cm, Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(matches!(err, InformerError::NotCached { .. }), "{err}");
    factory.shutdown().await;
}

/// 20,000 updates to 1,000 objects reach a handler that takes 10 ms per
/// event: coalesced, its backlog stays within the number of objects, and
/// the last state it saw of each object is the server's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coalescing_handler_under_a_burst_ends_at_the_servers_state() {
    const OBJECTS: usize = 1_000;
    const ROUNDS: i64 = 20;
    let coalesce = std::env::var("KDI_BURST_COALESCE").as_deref() != Ok("false");
    let client = support::admin().await;
    let ns = support::namespace(&client, "fresh-burst").await;
    let ar = support::install_crd(&client, &support::widget_crd(&support::unique_group())).await;
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);
    let names: Vec<String> = (0..OBJECTS).map(|i| format!("w{i}")).collect();
    support::create_many(
        &api,
        names
            .iter()
            .map(|n| support::widget(&ar, n, json!({ "n": 0 })))
            .collect(),
        16,
    )
    .await;

    let informer = SharedInformer::new(
        client.clone(),
        ar.clone(),
        Scope::Namespaced,
        support::options().namespace(&ns),
    )
    .unwrap();
    // name -> every `spec.n` the handler saw, in order.
    let seen: Arc<Mutex<HashMap<String, Vec<i64>>>> = Arc::default();
    let registration = {
        let seen = seen.clone();
        informer.add_handler_with(
            move |e: Event| {
                std::thread::sleep(Duration::from_millis(10));
                let o = e.object();
                let n = if matches!(e, Event::Delete { .. }) {
                    -2
                } else {
                    n_of(&o.object())
                };
                seen.lock()
                    .unwrap()
                    .entry(o.name().unwrap().to_owned())
                    .or_default()
                    .push(n);
            },
            HandlerOptions::default().coalesce(coalesce).name("slow"),
        )
    };
    let cancel = CancellationToken::new();
    informer.start(cancel.clone()).unwrap();
    informer
        .wait_for_sync(Duration::from_secs(60))
        .await
        .unwrap();

    let rss_before = crate::reliability::rss_kib();
    let largest_rss = Arc::new(AtomicU64::new(0));
    let largest_backlog = Arc::new(AtomicUsize::new(0));
    let watching = CancellationToken::new();
    let sampler = {
        let (largest, watching) = (largest_backlog.clone(), watching.clone());
        let largest_rss = largest_rss.clone();
        let registration_backlog = move || registration.backlog();
        tokio::spawn(async move {
            loop {
                largest.fetch_max(registration_backlog(), Ordering::Relaxed);
                largest_rss.fetch_max(crate::reliability::rss_kib(), Ordering::Relaxed);
                tokio::select! {
                    _ = watching.cancelled() => return registration_backlog,
                    _ = tokio::time::sleep(Duration::from_millis(20)) => {}
                }
            }
        })
    };
    let updates: Vec<(i64, String)> = (1..=ROUNDS)
        .flat_map(|round| names.iter().map(move |n| (round, n.clone())))
        .collect();
    futures::stream::iter(updates.into_iter().map(|(round, name)| {
        let api = api.clone();
        async move {
            api.patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": { "n": round } })),
            )
            .await
            .expect("burst patch");
        }
    }))
    .buffer_unordered(16)
    .collect::<Vec<()>>()
    .await;
    let server = api.list(&ListParams::default()).await.unwrap();
    let last_rv = server.metadata.resource_version.clone().unwrap();
    informer
        .wait_for_resource_version(&last_rv, Duration::from_secs(120))
        .await
        .unwrap();
    let backlog = {
        watching.cancel();
        sampler.await.unwrap()
    };
    if !coalesce {
        println!(
            "burst: {} updates to {OBJECTS} objects, handler 10 ms per event, coalescing false: when the cache had every update, backlog {} (largest {}); RSS {} MiB before, at most {} MiB during",
            OBJECTS * ROUNDS as usize,
            backlog(),
            largest_backlog.load(Ordering::Relaxed),
            rss_before / 1024,
            largest_rss.load(Ordering::Relaxed) / 1024,
        );
        cancel.cancel();
        return;
    }
    support::wait_for("the handler to drain", Duration::from_secs(120), || {
        let left = backlog();
        async move {
            if left == 0 {
                Ok(())
            } else {
                Err(format!("{left} queued"))
            }
        }
    })
    .await;
    let largest = largest_backlog.load(Ordering::Relaxed);
    let delivered: usize = seen.lock().unwrap().values().map(Vec::len).sum();
    println!(
        "burst: {} updates to {OBJECTS} objects, handler 10 ms per event, coalescing: largest backlog {largest}, {delivered} events delivered; RSS {} MiB before, at most {} MiB during, {} MiB after",
        OBJECTS * ROUNDS as usize,
        rss_before / 1024,
        largest_rss.load(Ordering::Relaxed) / 1024,
        crate::reliability::rss_kib() / 1024,
    );
    assert!(
        largest <= OBJECTS + 32,
        "the backlog reached {largest}, more than one entry per object (+ one turn)"
    );
    let seen = seen.lock().unwrap();
    for o in &server.items {
        let name = o.metadata.name.clone().unwrap();
        let states = &seen[&name];
        assert_eq!(
            states.last().copied(),
            Some(n_of(o)),
            "{name}: the handler's last state is the server's"
        );
        assert!(
            states.windows(2).all(|w| w[0] < w[1]),
            "{name}: an older state after a newer one: {states:?}"
        );
    }
    assert!(
        delivered < OBJECTS * (ROUNDS as usize + 1),
        "coalescing folded updates: {delivered} delivered"
    );
    cancel.cancel();
}

/// What a typed `Api::create` returns is waited for as it is: the informer
/// and the factory read its kind, namespace and resourceVersion from the
/// type and its metadata; a typed object of another resource is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typed_write_is_read_back_through_the_cache() {
    use k8s_openapi::api::core::v1::{ConfigMap, Secret};

    let client = support::admin().await;
    let ns = support::namespace(&client, "fresh-typed").await;
    let factory = InformerFactory::with_options(client.clone(), support::options().namespace(&ns));
    let maps = factory.for_resource("configmaps").await.unwrap();
    factory.start().unwrap();
    assert!(
        factory
            .wait_for_cache_sync(Duration::from_secs(60))
            .await
            .all_synced()
    );
    let api = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    let created: ConfigMap = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({ "metadata": { "name": "typed" }, "data": { "a": "1" } }),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    maps.informer()
        .wait_for_object(&created, Duration::from_secs(10))
        .await
        .unwrap();
    assert!(maps.lister().namespace(&ns).unwrap().get("typed").is_some());

    let updated = api
        .patch(
            "typed",
            &PatchParams::default(),
            &Patch::Merge(json!({ "data": { "a": "2" } })),
        )
        .await
        .unwrap();
    assert_eq!(
        factory
            .wait_for_object(&updated, Duration::from_secs(10))
            .await
            .unwrap(),
        1
    );
    let cached = maps.lister().namespace(&ns).unwrap().get("typed").unwrap();
    assert_eq!(
        cached.pointer("/data/a").and_then(|v| v.as_str()),
        Some("2")
    );

    let mut secret = Secret::default();
    secret.metadata.namespace = Some(ns.clone());
    secret.metadata.resource_version = Some("1".into());
    let err = maps
        .informer()
        .wait_for_object(&secret, Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, InformerError::OtherResource { object_kind, .. } if object_kind == "Secret"),
        "{err}"
    );
    let err = factory
        .wait_for_object(&secret, Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(matches!(err, InformerError::NotCached { .. }), "{err}");
    factory.shutdown().await;
}
