//! Objects the API server accepts but that are far from the usual shape:
//! thousands of labels, a megabyte of spec, deep nesting, huge arrays.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use kube_client::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube_dynamic_informer::cache::IndexFn;
use kube_dynamic_informer::informer::SharedInformer;
use kube_dynamic_informer::vocabulary::Scope;
use kube_dynamic_informer::wire::MAX_OBJECT_DEPTH;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{Tracker, converge};
use crate::support;

/// `{"a": {"a": ... {"leaf": "bottom"}}}`, `depth` levels of `a`.
fn nested(depth: usize) -> Value {
    let mut v = json!({ "leaf": "bottom" });
    for _ in 0..depth {
        v = json!({ "a": v });
    }
    v
}

fn odd_objects(ar: &ApiResource) -> Vec<DynamicObject> {
    let mut out = Vec::new();
    let mut o = support::widget(ar, "many-labels", json!({}));
    o.metadata.labels = Some(
        (0..2000)
            .map(|i| (format!("k{i}.example.com/l"), "v".repeat(63)))
            .collect::<BTreeMap<_, _>>(),
    );
    out.push(o);
    let mut o = support::widget(ar, "big-annotation", json!({}));
    o.metadata.annotations = Some(
        [
            (
                "example.com/note".to_string(),
                "é✓ \u{0} \"quoted\"".repeat(10_000),
            ),
            ("empty".to_string(), String::new()),
        ]
        .into(),
    );
    out.push(o);
    out.push(support::widget(
        ar,
        "megabyte-spec",
        json!({ "blob": "x".repeat(1 << 20) }),
    ));
    out.push(support::widget(
        ar,
        "long-array",
        json!({ "list": (0..20_000).collect::<Vec<_>>() }),
    ));
    out.push(support::widget(ar, "deep-90", nested(90)));
    out.push(support::widget(
        ar,
        "odd-types",
        json!({
            "a": null, "list": [null, [1, [2, [3]]], { "x": 1 }, true, 1.5e300], "color": 7
        }),
    ));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_but_valid_objects_are_cached_and_indexed() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "rel-odd").await;
    let ar = support::install_crd(&client, &support::widget_crd(&support::unique_group())).await;
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);
    let objects = odd_objects(&ar);
    let n = objects.len();
    support::create_many(&api, objects, 2).await;

    let index = |name: &str, expr: &str| IndexFn::jmespath(name, expr).unwrap();
    let options = crate::support::options().namespace(&ns).page_size(2);
    let informer =
        SharedInformer::new(client.clone(), ar.clone(), Scope::Namespaced, options).unwrap();
    for (name, func) in [
        ("label-keys", index("label-keys", "keys(metadata.labels)")),
        ("list", index("list", "spec.list")),
        (
            "deep",
            index("deep", &format!("spec{} && 'deep'", ".a".repeat(40))),
        ),
        ("spec", index("spec", "spec")),
        (
            "note",
            index("note", "metadata.annotations.\"example.com/note\""),
        ),
    ] {
        informer.add_index(name, func).unwrap();
    }
    let tracker = Tracker::default();
    informer.add_handler(tracker.handler());
    let cancel = CancellationToken::new();
    informer.start(cancel.clone()).unwrap();
    informer
        .wait_for_sync(Duration::from_secs(60))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    converge(&informer, &tracker, &api, Duration::from_secs(30)).await;
    let store = informer.store();
    assert_eq!(store.len(), n);
    assert_eq!(
        store
            .index_keys("label-keys", "k1999.example.com/l")
            .unwrap(),
        [format!("{ns}/many-labels")]
    );
    assert_eq!(store.index_values("label-keys").unwrap().len(), 2000);
    assert_eq!(
        store.index_keys("list", "19999").unwrap(),
        [format!("{ns}/long-array")]
    );
    assert_eq!(
        store.index_keys("deep", "deep").unwrap(),
        [format!("{ns}/deep-90")]
    );
    assert_eq!(store.index_values("note").unwrap().len(), 1);
    // `spec` is an object for every widget, so no widget is in that index;
    // `odd-types`' list holds an object: both are counted failures, not
    // panics.
    assert!(store.index_values("spec").unwrap().is_empty());
    assert_eq!(store.index_failures("spec"), Some(n as u64));
    assert_eq!(store.index_failures("list"), Some(1));

    // Live updates of the same objects go through the watch.
    for name in ["many-labels", "deep-90", "megabyte-spec"] {
        api.patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "labels": { "touched": "yes" } } })),
        )
        .await
        .unwrap();
    }
    converge(&informer, &tracker, &api, Duration::from_secs(30)).await;
    assert_eq!(tracker.problems(), Vec::<String>::new());
    cancel.cancel();
}

/// Creates a widget whose spec is nested `depth` levels deep; the server
/// stores it even when the client cannot decode the response (kube-client's
/// own decoding stops at 128 levels).
async fn create_deep(api: &Api<DynamicObject>, ar: &ApiResource, name: &str, depth: usize) {
    match api
        .create(
            &PostParams::default(),
            &support::widget(ar, name, nested(depth)),
        )
        .await
    {
        Ok(_) | Err(kube_client::Error::SerdeError(_)) => {}
        Err(e) => panic!("creating {name}: {e}"),
    }
}

fn skipped(informer: &SharedInformer) -> u64 {
    informer.stats().skipped_objects.load(Ordering::SeqCst)
}

/// Objects nested deeper than serde_json's default limit of 128 levels are
/// cached in full up to `list_watch::MAX_OBJECT_DEPTH`; one deeper still is left
/// out and counted, and does not keep the rest from syncing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_with_objects_nested_200_and_300_deep_still_syncs() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "rel-deep-list").await;
    let ar = support::install_crd(&client, &support::widget_crd(&support::unique_group())).await;
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);
    api.create(
        &PostParams::default(),
        &support::widget(&ar, "plain", json!({})),
    )
    .await
    .unwrap();
    create_deep(&api, &ar, "deep-200", 200).await;
    create_deep(&api, &ar, "deep-300", 300).await;
    const { assert!(300 > MAX_OBJECT_DEPTH && 200 < MAX_OBJECT_DEPTH) };
    let options = crate::support::options()
        .namespace(&ns)
        .page_size(1)
        .backoff(super::quick_backoff());
    let informer =
        SharedInformer::new(client.clone(), ar.clone(), Scope::Namespaced, options).unwrap();
    informer
        .add_index(
            "spec-keys",
            IndexFn::jmespath("spec-keys", "keys(spec)").unwrap(),
        )
        .unwrap();
    let cancel = CancellationToken::new();
    informer.start(cancel.clone()).unwrap();
    let synced = informer.wait_for_sync(Duration::from_secs(30)).await;
    cancel.cancel();
    synced.unwrap_or_else(|e| panic!("{e}"));
    let store = informer.store();
    assert!(store.get(&format!("{ns}/plain")).is_some());
    assert!(store.get(&format!("{ns}/deep-300")).is_none());
    // The index reads the whole 200-level spec (`keys` converts it).
    assert_eq!(
        store.index_keys("spec-keys", "a").unwrap(),
        [format!("{ns}/deep-200")]
    );
    let deep = store.get(&format!("{ns}/deep-200")).unwrap().object();
    let leaf = (0..200).fold(&deep.data["spec"], |v, _| &v["a"]);
    assert_eq!(leaf["leaf"], "bottom");
    assert_eq!(store.len(), 2);
    assert_eq!(skipped(&informer), 1);
}

/// A watch event too deep to decode must not stall the watch: it is left
/// out and counted, later events arrive, and its deletion still reaches
/// the cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_event_with_an_object_nested_300_deep_does_not_stall_the_watch() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "rel-deep-watch").await;
    let ar = support::install_crd(&client, &support::widget_crd(&support::unique_group())).await;
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);
    let options = crate::support::options()
        .namespace(&ns)
        .backoff(super::quick_backoff());
    let informer =
        SharedInformer::new(client.clone(), ar.clone(), Scope::Namespaced, options).unwrap();
    let tracker = Tracker::default();
    informer.add_handler(tracker.handler());
    let cancel = CancellationToken::new();
    informer.start(cancel.clone()).unwrap();
    informer
        .wait_for_sync(Duration::from_secs(30))
        .await
        .unwrap();
    create_deep(&api, &ar, "deep-200", 200).await;
    create_deep(&api, &ar, "deep-300", 300).await;
    api.create(
        &PostParams::default(),
        &support::widget(&ar, "after", json!({})),
    )
    .await
    .unwrap();
    let status_of = |informer: &SharedInformer| informer.status().to_string();
    support::wait_for(
        "the objects created around the deep one",
        Duration::from_secs(15),
        || async {
            let store = informer.store();
            if store.get(&format!("{ns}/after")).is_some()
                && store.get(&format!("{ns}/deep-200")).is_some()
            {
                Ok(())
            } else {
                Err(status_of(&informer))
            }
        },
    )
    .await;
    assert!(informer.store().get(&format!("{ns}/deep-300")).is_none());
    assert_eq!(skipped(&informer), 1);
    api.delete("deep-300", &Default::default()).await.unwrap();
    api.delete("deep-200", &Default::default()).await.unwrap();
    support::wait_for(
        "the deletion of the 200-deep object",
        Duration::from_secs(15),
        || async {
            if informer.store().get(&format!("{ns}/deep-200")).is_none() {
                Ok(())
            } else {
                Err(status_of(&informer))
            }
        },
    )
    .await;
    assert_eq!(
        skipped(&informer),
        2,
        "the 300-deep deletion is counted too"
    );
    assert_eq!(tracker.problems(), Vec::<String>::new());
    cancel.cancel();
}
