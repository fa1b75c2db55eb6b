use std::sync::Arc;
use std::time::Duration;

use kube_core::DynamicObject;
use serde_json::json;

use super::sources::{OwnerKind, owners_of};
use super::worker::{Outcome, panic_message, settle};
use super::{Action, ShutdownHandle};
use crate::cache::store::CachedObject;
use crate::reconcile::{ItemExponentialBackoff, ObjectRef, WorkQueue};
use crate::vocabulary::resource::ResourceKey;

fn widgets() -> ResourceKey {
    ResourceKey::new("example.com", "v1", "widgets")
}

fn clusters() -> ResourceKey {
    ResourceKey::new("example.com", "v1", "clusters")
}

/// Widgets (namespaced) and Clusters (cluster-scoped) can own objects.
fn kinds() -> Vec<OwnerKind> {
    vec![
        OwnerKind {
            group: "example.com".into(),
            kind: "Widget".into(),
            resource: widgets(),
            namespaced: true,
        },
        OwnerKind {
            group: "example.com".into(),
            kind: "Cluster".into(),
            resource: clusters(),
            namespaced: false,
        },
    ]
}

/// A ConfigMap in `namespace` (none: as if cluster-scoped) with `owners`.
fn owned(namespace: Option<&str>, owners: serde_json::Value) -> CachedObject {
    let mut metadata = json!({ "name": "settings", "ownerReferences": owners });
    if let Some(ns) = namespace {
        metadata["namespace"] = json!(ns);
    }
    let object: DynamicObject = serde_json::from_value(
        json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata }),
    )
    .unwrap();
    CachedObject::from(Arc::new(object))
}

fn reference(
    api_version: &str,
    kind: &str,
    name: &str,
    controller: Option<bool>,
) -> serde_json::Value {
    json!({ "apiVersion": api_version, "kind": kind, "name": name, "uid": format!("uid-{name}"), "controller": controller })
}

#[test]
fn an_owned_object_queues_its_controller_in_its_namespace_only_by_default() {
    let object = owned(
        Some("shop"),
        json!([
            reference("example.com/v1", "Widget", "web", Some(true)),
            reference("example.com/v1", "Widget", "db", Some(false)),
            reference("example.com/v1", "Widget", "cache", None),
        ]),
    );
    assert_eq!(
        owners_of(&object, false, &kinds()),
        [ObjectRef::new(widgets(), Some("shop"), "web")]
    );
    assert_eq!(
        owners_of(&object, true, &kinds()),
        [
            ObjectRef::new(widgets(), Some("shop"), "web"),
            ObjectRef::new(widgets(), Some("shop"), "db"),
            ObjectRef::new(widgets(), Some("shop"), "cache"),
        ]
    );
}

#[test]
fn an_owner_is_matched_by_group_and_kind_whatever_its_version() {
    let object = owned(
        Some("shop"),
        json!([reference(
            "example.com/v1beta1",
            "Widget",
            "web",
            Some(true)
        )]),
    );
    assert_eq!(
        owners_of(&object, false, &kinds()),
        [ObjectRef::new(widgets(), Some("shop"), "web")]
    );
    // Another group, or a kind not watched: no owner.
    for (api_version, kind) in [
        ("other.com/v1", "Widget"),
        ("example.com/v1", "Gadget"),
        ("v1", "Widget"),
    ] {
        let object = owned(
            Some("shop"),
            json!([reference(api_version, kind, "web", Some(true))]),
        );
        assert_eq!(
            owners_of(&object, true, &kinds()),
            [],
            "{api_version} {kind}"
        );
    }
}

#[test]
fn a_cluster_scoped_owner_has_no_namespace_and_a_namespaced_one_needs_one() {
    let in_shop = owned(
        Some("shop"),
        json!([reference("example.com/v1", "Cluster", "east", Some(true))]),
    );
    assert_eq!(
        owners_of(&in_shop, false, &kinds()),
        [ObjectRef::new(clusters(), None, "east")]
    );
    // A cluster-scoped object cannot be owned by a namespaced one.
    let cluster_scoped = owned(
        None,
        json!([
            reference("example.com/v1", "Widget", "web", Some(true)),
            reference("example.com/v1", "Cluster", "east", None),
        ]),
    );
    assert_eq!(
        owners_of(&cluster_scoped, true, &kinds()),
        [ObjectRef::new(clusters(), None, "east")]
    );
}

#[test]
fn an_owner_named_twice_or_unnamed_is_queued_once_or_not_at_all() {
    let object = owned(
        Some("shop"),
        json!([
            reference("example.com/v1", "Widget", "web", Some(true)),
            reference("example.com/v2", "Widget", "web", None),
            reference("example.com/v1", "Widget", "", None),
        ]),
    );
    assert_eq!(
        owners_of(&object, true, &kinds()),
        [ObjectRef::new(widgets(), Some("shop"), "web")]
    );
    assert_eq!(
        owners_of(&owned(Some("shop"), json!([])), true, &kinds()),
        []
    );
}

fn queue() -> WorkQueue<ObjectRef> {
    WorkQueue::with_rate_limiter(
        "test",
        ItemExponentialBackoff::new(Duration::from_millis(100), Duration::from_secs(10)),
    )
}

fn key(name: &str) -> ObjectRef {
    ObjectRef::new(widgets(), Some("shop"), name)
}

#[tokio::test(start_paused = true)]
async fn a_failure_retries_the_key_after_its_backoff_and_a_success_forgets_it() {
    let queue = queue();
    queue.add(key("web"));
    for (failures, backoff) in [(1, 100), (2, 200), (3, 400)] {
        let k = queue.try_get().expect("the key is handed out");
        let outcome = if failures % 2 == 0 {
            Outcome::Panicked("boom".into())
        } else {
            Outcome::Failed("refused".into())
        };
        settle(&queue, k, &outcome);
        assert_eq!(queue.num_requeues(&key("web")), failures);
        tokio::time::advance(Duration::from_millis(backoff - 1)).await;
        assert_eq!(queue.try_get(), None, "back before its backoff");
        tokio::time::advance(Duration::from_millis(2)).await;
    }
    let k = queue.try_get().expect("back after its backoff");
    settle(&queue, k, &Outcome::Answered(Action::Done));
    assert_eq!(queue.num_requeues(&key("web")), 0);
    tokio::time::advance(Duration::from_secs(60)).await;
    assert_eq!(queue.try_get(), None, "done: not queued again");
}

#[tokio::test(start_paused = true)]
async fn requeue_after_forgets_the_failures_and_brings_the_key_back_after_the_delay() {
    let queue = queue();
    queue.add(key("web"));
    let k = queue.try_get().unwrap();
    settle(&queue, k, &Outcome::Failed("refused".into()));
    tokio::time::advance(Duration::from_millis(101)).await;
    let k = queue.try_get().unwrap();
    settle(
        &queue,
        k,
        &Outcome::Answered(Action::RequeueAfter(Duration::from_secs(30))),
    );
    assert_eq!(queue.num_requeues(&key("web")), 0);
    tokio::time::advance(Duration::from_millis(29_999)).await;
    assert_eq!(queue.try_get(), None);
    tokio::time::advance(Duration::from_millis(2)).await;
    assert_eq!(queue.try_get(), Some(key("web")));
}

#[tokio::test(start_paused = true)]
async fn an_event_during_a_requeue_delay_brings_the_key_back_at_once() {
    let queue = queue();
    queue.add(key("web"));
    let k = queue.try_get().unwrap();
    settle(
        &queue,
        k,
        &Outcome::Answered(Action::RequeueAfter(Duration::from_secs(30))),
    );
    queue.add(key("web"));
    assert_eq!(queue.try_get(), Some(key("web")));
}

#[test]
fn a_panic_message_is_its_text() {
    let caught = std::panic::catch_unwind(|| panic!("widget {} exploded", 3)).unwrap_err();
    assert_eq!(panic_message(caught.as_ref()), "widget 3 exploded");
    let caught = std::panic::catch_unwind(|| panic!("plain")).unwrap_err();
    assert_eq!(panic_message(caught.as_ref()), "plain");
    let caught = std::panic::catch_unwind(|| std::panic::panic_any(42)).unwrap_err();
    assert_eq!(panic_message(caught.as_ref()), "<non-string panic>");
}

#[tokio::test]
async fn a_drain_asked_before_the_controller_runs_returns_at_once_and_it_does_not_start() {
    let handle = ShutdownHandle::default();
    tokio::time::timeout(Duration::from_secs(5), handle.shut_down_with_drain())
        .await
        .expect("no run to wait for");
    assert!(!handle.start(), "asked to stop before it started");
}

#[tokio::test]
async fn a_drain_hands_out_what_waits_and_a_stop_meanwhile_stops_at_once() {
    let handle = ShutdownHandle::default();
    assert!(handle.start());
    let queue = queue();
    queue.add(key("a"));
    queue.add(key("b"));
    let stopper = tokio::spawn(handle.clone().stop_queue_when_asked(queue.clone()));
    let drain = tokio::spawn({
        let handle = handle.clone();
        async move { handle.shut_down_with_drain().await }
    });
    tokio::time::timeout(Duration::from_secs(5), async {
        while !queue.is_shutting_down() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the drain reaches the queue");
    let a = tokio::time::timeout(Duration::from_secs(5), queue.get())
        .await
        .unwrap();
    assert_eq!(a, Some(key("a")), "a drain hands out what waits");
    queue.add(key("c"));
    handle.shut_down();
    tokio::time::timeout(Duration::from_secs(5), stopper)
        .await
        .expect("a stop during a drain ends it")
        .unwrap();
    assert_eq!(queue.try_get(), None, "b was dropped by the stop");
    queue.done(&key("a"));
    assert!(
        !drain.is_finished(),
        "the drain waits for the controller to end"
    );
    handle.mark_ended();
    tokio::time::timeout(Duration::from_secs(5), drain)
        .await
        .expect("the drain ends with the controller")
        .unwrap();
    assert!(handle.has_ended());
}
