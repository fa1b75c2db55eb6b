//! Waits for conditions against a real kube-apiserver: many objects of
//! several resources reaching a state a concurrent writer gives them, what
//! a timeout reports, deletions while waiting, and a resource whose CRD is
//! installed while the wait runs.
//!
//! The timings the first test prints (how long after the last write the
//! wait returned) are for reading, not asserted:
//!
//! ```text
//! cargo test --features cli --test it condition::many -- --nocapture
//! ```

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams};
use kube_dynamic_informer::InformerFactory;
use kube_dynamic_informer::informer::{
    InformerError, ObjectSelection, Objects, Wait, WaitFor, WaitReport,
};
use kube_dynamic_informer::vocabulary::Selector;
use serde_json::json;

use crate::support;

/// How long the waits that must hold may take: far more than they do.
const GENEROUS: Duration = Duration::from_secs(120);

/// `count` widgets `w-0000`... in `ns`, labelled `batch=<batch>`.
async fn create_widgets(api: &Api<DynamicObject>, ar: &ApiResource, count: usize, batch: &str) {
    let objects = (0..count)
        .map(|i| {
            let mut w = support::widget(ar, &format!("w-{i:04}"), json!({ "n": i }));
            w.metadata.labels = Some([("batch".to_string(), batch.to_string())].into());
            w
        })
        .collect();
    support::create_many(api, objects, 16).await;
}

/// Writes `status.done` of each named widget, 16 at a time; returns the
/// last write's response (the object as written).
async fn write_done(api: &Api<DynamicObject>, names: &[String], done: bool) -> DynamicObject {
    let written: Vec<DynamicObject> = futures::stream::iter(names.iter().map(|name| {
        let api = api.clone();
        async move {
            api.patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": { "done": done } })),
            )
            .await
            .unwrap_or_else(|e| panic!("writing the status of {name}: {e}"))
        }
    }))
    .buffer_unordered(16)
    .collect()
    .await;
    written
        .into_iter()
        .max_by_key(|o| {
            o.metadata
                .resource_version
                .as_deref()
                .and_then(|rv| rv.parse::<u64>().ok())
        })
        .expect("something written")
}

fn timed_out(result: Result<WaitReport, InformerError>) -> WaitReport {
    match result {
        Err(InformerError::ConditionTimedOut { report }) => *report,
        other => panic!("expected the wait to time out, got {other:?}"),
    }
}

/// A widget CRD of its own group whose plural no other test uses, so that
/// the API server's request counts for it are this test's alone.
fn lone_widget_crd() -> CustomResourceDefinition {
    let mut crd = support::widget_crd(&support::unique_group());
    let plural = format!("widgets{}", support::suffix());
    crd.metadata.name = Some(format!("{plural}.{}", crd.spec.group));
    crd.spec.names.plural = plural;
    crd.spec.names.short_names = None;
    crd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_objects_of_three_resources_reach_a_state_a_writer_gives_them() {
    const PER_RESOURCE: [usize; 3] = [334, 333, 333];
    let client = support::admin().await;
    let ns = support::namespace(&client, "cond-many").await;
    let mut crds = Vec::new();
    let mut apis = Vec::new();
    for (i, count) in PER_RESOURCE.into_iter().enumerate() {
        let crd = lone_widget_crd();
        let ar = support::install_crd(&client, &crd).await;
        let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);
        create_widgets(&api, &ar, count, &format!("b{i}")).await;
        crds.push((crd, ar));
        apis.push(api);
    }

    let factory = InformerFactory::with_options(client.clone(), support::options().namespace(&ns));
    let mut informers = Vec::new();
    for (crd, _) in &crds {
        let name = format!("{}.{}", crd.spec.names.plural, crd.spec.group);
        informers.push(factory.for_resource(name.as_str()).await.unwrap());
    }
    factory.start().unwrap();
    factory
        .wait_for_cache_sync(GENEROUS)
        .await
        .into_result()
        .unwrap();
    let lists_before = {
        let mut n = Vec::new();
        for (crd, _) in &crds {
            n.push(support::server_list_requests(&client, &crd.spec.names.plural).await);
        }
        n
    };

    let done = WaitFor::condition("status.done == `true`").unwrap();
    let wait = Wait::new(done.clone())
        .on_each(&informers, Objects::all())
        .timeout(GENEROUS);
    let mut progress = wait.progress();
    let started = Instant::now();
    let waiting = tokio::spawn(wait.run());
    progress
        .wait_for(|p| p.synced == 3 && p.objects == 1000)
        .await
        .unwrap();
    assert_eq!(
        progress.borrow().holding,
        0,
        "nothing is done before the writer"
    );

    // The writer: every object of the three resources, interleaved.
    let mut last_write = None;
    let names: Vec<String> = (0..PER_RESOURCE[0]).map(|i| format!("w-{i:04}")).collect();
    for (r, api) in apis.iter().enumerate() {
        let mine = &names[..PER_RESOURCE[r]];
        let written = write_done(api, mine, true).await;
        last_write = Some((Instant::now(), written));
    }
    let (last_write_at, _) = last_write.expect("writes");
    let report = waiting.await.unwrap().expect("the wait holds");
    let returned_at = Instant::now();
    assert!(report.holds());
    assert_eq!(report.objects().len(), 1000);
    assert_eq!(report.holding().count(), 1000);
    assert!(
        report
            .informers()
            .iter()
            .all(|i| i.not_synced.is_none() && i.mistakes == 0)
    );
    println!(
        "1,000 objects of 3 resources done: the wait returned {:?} after the response to the last write ({:?} after it started)",
        returned_at.saturating_duration_since(last_write_at),
        returned_at - started,
    );

    // Some objects undone: a timeout names exactly those, with why.
    let undone: Vec<(usize, String)> = [(0, 7), (0, 300), (1, 0), (1, 123), (2, 332)]
        .into_iter()
        .map(|(r, i)| (r, format!("w-{i:04}")))
        .collect();
    for (r, name) in &undone {
        let written = write_done(&apis[*r], std::slice::from_ref(name), false).await;
        factory.wait_for_object(&written, GENEROUS).await.unwrap();
    }
    let gone = "w-0100";
    apis[2]
        .delete(gone, &DeleteParams::default())
        .await
        .unwrap();
    let started = Instant::now();
    let report = timed_out(
        Wait::new(done.clone())
            .on_each(&informers, Objects::all())
            .on(&informers[2], Objects::named([format!("{ns}/{gone}")]))
            .timeout(Duration::from_secs(3))
            .run()
            .await,
    );
    println!("timed out after {:?}: {report}", started.elapsed());
    let mut expected: BTreeSet<(String, String, &str)> = undone
        .iter()
        .map(|(r, name)| {
            (
                informers[*r].resource().to_string(),
                format!("{ns}/{name}"),
                "notMet",
            )
        })
        .collect();
    expected.insert((
        informers[2].resource().to_string(),
        format!("{ns}/{gone}"),
        "missing",
    ));
    let blocking: BTreeSet<(String, String, &str)> = report
        .blocking()
        .map(|o| (o.resource.to_string(), o.key.clone(), o.reason()))
        .collect();
    assert_eq!(blocking, expected);
    assert_eq!(report.holding().count(), 1000 - undone.len() - 1);

    // Not one list beyond each informer's own.
    for (i, (crd, _)) in crds.iter().enumerate() {
        let lists = support::server_list_requests(&client, &crd.spec.names.plural).await;
        assert_eq!(lists, lists_before[i], "lists of {}", crd.spec.names.plural);
    }
    factory.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_on_a_resource_not_served_yet_holds_once_its_crd_is_installed() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "cond-crd").await;
    let group = support::unique_group();
    let factory = InformerFactory::with_options(client.clone(), support::options().namespace(&ns));
    let widgets = factory
        .for_resource(format!("widgets.{group}").as_str())
        .await
        .unwrap();
    factory.start().unwrap();

    // Before the CRD: the report says why nothing is known.
    let ready = WaitFor::condition("status.ready").unwrap();
    let named = Objects::named([format!("{ns}/a"), format!("{ns}/b")]);
    let report = timed_out(
        widgets
            .wait_until(named.clone(), ready.clone(), Duration::from_millis(500))
            .await,
    );
    let not_synced: Vec<&str> = report.not_synced().map(|(_, why)| why.reason()).collect();
    assert_eq!(not_synced, ["notServed"], "{report}");
    assert_eq!(
        report
            .blocking()
            .map(|o| (o.key.as_str(), o.reason()))
            .collect::<Vec<_>>(),
        [
            (format!("{ns}/a").as_str(), "missing"),
            (format!("{ns}/b").as_str(), "missing")
        ]
    );

    let wait = Wait::new(ready).on(&widgets, named).timeout(GENEROUS);
    let mut progress = wait.progress();
    let waiting = tokio::spawn(wait.run());
    let ar = support::install_crd(&client, &support::widget_crd(&group)).await;
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);
    support::create_many(
        &api,
        vec![
            support::widget(&ar, "a", json!({})),
            support::widget(&ar, "b", json!({})),
        ],
        2,
    )
    .await;
    progress
        .wait_for(|p| p.synced == 1)
        .await
        .expect("the informer lists once the CRD is served");
    assert!(!waiting.is_finished(), "nothing is ready yet");
    for name in ["a", "b"] {
        api.patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": { "ready": true } })),
        )
        .await
        .unwrap();
    }
    let report = waiting.await.unwrap().expect("the wait holds");
    assert_eq!(report.holding().count(), 2);
    assert_eq!(
        report.informers()[0].resource.to_string(),
        format!("widgets.v1.{group}")
    );
    factory.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletions_while_waiting_end_a_wait_for_delete() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "cond-delete").await;
    let ar = support::install_crd(&client, &support::widget_crd(&support::unique_group())).await;
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);
    create_widgets(&api, &ar, 30, "doomed").await;
    create_widgets_named(&api, &ar, &["keep"]).await;

    let factory = InformerFactory::with_options(client.clone(), support::options().namespace(&ns));
    let widgets = factory
        .for_resource(format!("widgets.{}", ar.group).as_str())
        .await
        .unwrap();
    factory.start().unwrap();
    factory
        .wait_for_cache_sync(GENEROUS)
        .await
        .into_result()
        .unwrap();

    let doomed = ObjectSelection::default().labels(Selector::parse("batch=doomed").unwrap());
    let wait = Wait::new(WaitFor::Deleted)
        .on(&widgets, doomed.clone())
        .timeout(GENEROUS);
    let mut progress = wait.progress();
    let waiting = tokio::spawn(wait.run());
    progress
        .wait_for(|p| p.synced == 1 && p.objects == 30)
        .await
        .unwrap();
    futures::stream::iter((0..30).map(|i| {
        let api = api.clone();
        async move {
            api.delete(&format!("w-{i:04}"), &DeleteParams::default())
                .await
                .unwrap();
        }
    }))
    .buffer_unordered(8)
    .collect::<Vec<()>>()
    .await;
    let report = waiting.await.unwrap().expect("every doomed widget is gone");
    assert_eq!(report.objects().len(), 30);
    assert!(
        report
            .objects()
            .iter()
            .all(|o| o.holds && o.reason() == "missing")
    );

    // The one left: a wait for its deletion times out naming it.
    let report = timed_out(
        widgets
            .wait_until(
                format!("{ns}/keep"),
                WaitFor::Deleted,
                Duration::from_millis(300),
            )
            .await,
    );
    assert_eq!(
        report
            .blocking()
            .map(|o| (o.key.clone(), o.reason()))
            .collect::<Vec<_>>(),
        [(format!("{ns}/keep"), "exists")]
    );
    factory.shutdown().await;
}

async fn create_widgets_named(api: &Api<DynamicObject>, ar: &ApiResource, names: &[&str]) {
    let objects = names
        .iter()
        .map(|n| support::widget(ar, n, json!({})))
        .collect();
    support::create_many(api, objects, 4).await;
}
