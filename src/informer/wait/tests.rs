//! Waits on informers fed by a scripted server: which objects count, when
//! each quantifier holds, what a timeout reports. Against the real server
//! in `tests/it/condition.rs`.

use std::sync::Mutex as StdMutex;

use futures::FutureExt;
use futures::future::BoxFuture;
use kube_client::api::{ListParams, WatchParams};
use kube_core::{ApiResource, DynamicObject};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::cache::Verdict;
use crate::informer::InformerOptions;
use crate::vocabulary::selector::Selector;
use crate::wire::list_watch::{ListPage, ListWatch, ListWatchError, WatchEvent, WatchStream};

type WatchItem = Result<WatchEvent, ListWatchError>;

/// One list, then one watch the test writes to; later requests never
/// answer.
struct Script {
    list: StdMutex<Option<Vec<DynamicObject>>>,
    watch: StdMutex<Option<mpsc::UnboundedReceiver<WatchItem>>>,
}

impl ListWatch for Script {
    fn list(&self, _: &ListParams) -> BoxFuture<'static, Result<ListPage, ListWatchError>> {
        let objects = self.list.lock().unwrap().take();
        async move {
            let Some(objects) = objects else {
                return futures::future::pending().await;
            };
            Ok(ListPage {
                objects: objects.into_iter().map(Into::into).collect(),
                resource_version: "1".into(),
                ..ListPage::default()
            })
        }
        .boxed()
    }

    fn watch(
        &self,
        _: &WatchParams,
        _: &str,
    ) -> BoxFuture<'static, Result<WatchStream, ListWatchError>> {
        let rx = self.watch.lock().unwrap().take();
        async move {
            let Some(mut rx) = rx else {
                return futures::future::pending().await;
            };
            Ok(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed())
        }
        .boxed()
    }
}

/// A started informer listing `objects`, and the sender of its watch.
struct Fixture {
    informer: SharedInformer,
    watch: mpsc::UnboundedSender<WatchItem>,
    cancel: CancellationToken,
    rv: u64,
}

impl Fixture {
    fn new(objects: Vec<DynamicObject>) -> Self {
        Self::unstarted(objects).started()
    }

    fn unstarted(objects: Vec<DynamicObject>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let script = Script {
            list: StdMutex::new(Some(objects)),
            watch: StdMutex::new(Some(rx)),
        };
        let informer =
            SharedInformer::with_list_watch(script, resource(), InformerOptions::default());
        Fixture {
            informer,
            watch: tx,
            cancel: CancellationToken::new(),
            rv: 100,
        }
    }

    fn started(self) -> Self {
        self.informer.start(self.cancel.clone()).unwrap();
        self
    }

    fn send(
        &mut self,
        event: impl FnOnce(crate::wire::WireObject) -> WatchEvent,
        mut object: DynamicObject,
    ) {
        self.rv += 1;
        object.metadata.resource_version = Some(self.rv.to_string());
        self.watch.send(Ok(event(object.into()))).unwrap();
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

fn resource() -> ApiResource {
    ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    }
}

fn widget(ns: &str, name: &str, status: serde_json::Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {
            "name": name, "namespace": ns, "resourceVersion": "1",
            "uid": format!("uid-{name}"),
            "labels": { "app": "web" }
        },
        "spec": { "color": "red" },
        "status": status,
    }))
    .unwrap()
}

fn ready(ns: &str, name: &str, ready: bool) -> DynamicObject {
    widget(ns, name, json!({ "ready": ready }))
}

fn goal() -> WaitFor {
    WaitFor::condition("status.ready").unwrap()
}

fn states(report: &WaitReport) -> Vec<(String, &'static str, bool)> {
    report
        .objects()
        .iter()
        .map(|o| (o.key.clone(), o.reason(), o.holds))
        .collect()
}

fn blocking(report: &WaitReport) -> Vec<(String, &'static str)> {
    report
        .blocking()
        .map(|o| (o.key.clone(), o.reason()))
        .collect()
}

fn timed_out(result: Result<WaitReport, InformerError>) -> WaitReport {
    match result {
        Err(InformerError::ConditionTimedOut { report }) => *report,
        other => panic!("expected a timeout, got {other:?}"),
    }
}

const LONG: Duration = Duration::from_secs(30);

#[tokio::test]
async fn all_named_objects_hold_once_the_last_event_makes_them_true() {
    let mut f = Fixture::new(vec![ready("shop", "w1", false)]);
    let wait = Wait::new(goal())
        .on(&f.informer, Objects::named(["shop/w1", "shop/w2"]))
        .timeout(LONG);
    let mut progress = wait.progress();
    let waiting = tokio::spawn(wait.run());
    progress
        .wait_for(|p| p.synced == 1 && p.objects == 2)
        .await
        .unwrap();
    assert_eq!(progress.borrow().holding, 0);
    f.send(WatchEvent::Modified, ready("shop", "w1", true));
    progress.wait_for(|p| p.holding == 1).await.unwrap();
    assert!(!waiting.is_finished());
    f.send(WatchEvent::Added, ready("shop", "w2", true));
    let report = waiting.await.unwrap().unwrap();
    assert!(report.holds());
    assert_eq!(
        states(&report),
        [
            ("shop/w1".into(), "met", true),
            ("shop/w2".into(), "met", true)
        ]
    );
    assert_eq!(report.blocking().count(), 0);
    assert_eq!(report.to_string(), "all of 2 objects hold 'status.ready'");
}

#[tokio::test(start_paused = true)]
async fn a_timeout_reports_exactly_the_objects_not_done_and_why() {
    let f = Fixture::new(vec![
        ready("shop", "w1", true),
        ready("shop", "w2", false),
        widget("shop", "w3", json!({ "ready": "yes" })),
        widget("shop", "w4", json!({})),
        ready("other", "w5", false),
    ]);
    let named = Objects::named(["shop/w1", "shop/w2", "shop/w3", "shop/w4", "shop/w9"]);
    let report = timed_out(
        Wait::new(goal())
            .on(&f.informer, named)
            .timeout(Duration::from_secs(5))
            .run()
            .await,
    );
    assert!(!report.holds());
    assert_eq!(
        blocking(&report),
        [
            ("shop/w2".into(), "notMet"),
            ("shop/w3".into(), "notBoolean"),
            ("shop/w4".into(), "null"),
            ("shop/w9".into(), "missing"),
        ]
    );
    assert_eq!(report.holding().count(), 1);
    assert_eq!(report.informers()[0].mistakes, 1);
    assert_eq!(report.informers()[0].not_synced, None);
    let Some(w3) = report.objects().iter().find(|o| o.key == "shop/w3") else {
        panic!("w3 counted");
    };
    assert_eq!(
        w3.state,
        ObjectState::Present {
            verdict: Some(Verdict::NotBoolean {
                value: r#""yes""#.into()
            })
        }
    );
    assert_eq!(
        report.to_string(),
        r#"4 of 5 objects do not hold 'status.ready': shop/w2 (not met), shop/w3 (not a boolean: "yes"), shop/w4 (not met (null: a field it reads is missing)), shop/w9 (missing)"#
    );
    assert!(report.waited() >= Duration::from_secs(5));
}

#[tokio::test]
async fn a_selection_counts_the_objects_it_picks_as_they_come_and_go() {
    let mut f = Fixture::new(vec![
        ready("shop", "w1", true),
        ready("shop", "w2", false),
        ready("other", "w3", false),
    ]);
    f.informer
        .add_jmespath_index("color", "spec.color")
        .unwrap();
    let shop = ObjectSelection::default()
        .namespace("shop")
        .labels(Selector::parse("app=web").unwrap())
        .index("color", "red");
    let wait = Wait::new(goal()).on(&f.informer, shop).timeout(LONG);
    let mut progress = wait.progress();
    let waiting = tokio::spawn(wait.run());
    progress
        .wait_for(|p| p.synced == 1 && p.objects == 2 && p.holding == 1)
        .await
        .unwrap();
    // w2 leaves the selection (its labels change): w1 is all there is.
    let mut relabelled = ready("shop", "w2", false);
    relabelled.metadata.labels = Some([("app".into(), "api".into())].into());
    f.send(WatchEvent::Modified, relabelled);
    let report = waiting.await.unwrap().unwrap();
    assert_eq!(states(&report), [("shop/w1".into(), "met", true)]);
}

#[tokio::test(start_paused = true)]
async fn a_condition_over_no_object_waits_for_one_and_says_so() {
    let f = Fixture::new(vec![ready("shop", "w1", true)]);
    let nothing = ObjectSelection::default().namespace("empty");
    let report = timed_out(
        Wait::new(goal())
            .on(&f.informer, nothing.clone())
            .timeout(Duration::from_secs(1))
            .run()
            .await,
    );
    assert_eq!(report.objects().len(), 0);
    assert_eq!(report.to_string(), "no object for 'status.ready'");
    // Deletion is true of no object at all.
    let report = Wait::new(WaitFor::Deleted)
        .on(&f.informer, nothing)
        .timeout(LONG)
        .run()
        .await
        .unwrap();
    assert!(report.holds());
}

#[tokio::test]
async fn any_holds_at_the_first_object_that_is_true() {
    let mut f = Fixture::new(vec![ready("shop", "w1", false), ready("shop", "w2", false)]);
    let wait = Wait::new(goal())
        .any()
        .on(&f.informer, Objects::all())
        .timeout(LONG);
    let mut progress = wait.progress();
    let waiting = tokio::spawn(wait.run());
    progress.wait_for(|p| p.synced == 1).await.unwrap();
    f.send(WatchEvent::Modified, ready("shop", "w2", true));
    let report = waiting.await.unwrap().unwrap();
    assert_eq!(
        report.holding().map(|o| o.key.as_str()).collect::<Vec<_>>(),
        ["shop/w2"]
    );
    assert_eq!(report.to_string(), "1 of 2 objects holds 'status.ready'");
}

#[tokio::test(start_paused = true)]
async fn none_holds_once_no_object_is_true_and_reports_those_that_are() {
    let mut f = Fixture::new(vec![ready("shop", "w1", true), ready("shop", "w2", false)]);
    let report = timed_out(
        Wait::new(goal())
            .none()
            .on(&f.informer, Objects::all())
            .timeout(Duration::from_secs(1))
            .run()
            .await,
    );
    assert_eq!(blocking(&report), [("shop/w1".into(), "met")]);
    assert_eq!(
        report.to_string(),
        "1 of 2 objects holds 'status.ready': shop/w1 (met)"
    );
    f.send(WatchEvent::Modified, ready("shop", "w1", false));
    let report = Wait::new(goal())
        .none()
        .on(&f.informer, Objects::all())
        .timeout(LONG)
        .run()
        .await
        .unwrap();
    assert_eq!(report.to_string(), "none of 2 objects holds 'status.ready'");
}

#[tokio::test]
async fn deletion_of_named_objects_holds_when_they_are_gone_or_replaced() {
    let mut f = Fixture::new(vec![ready("shop", "w1", true), ready("shop", "w2", true)]);
    let wait = Wait::new(WaitFor::Deleted)
        .on(
            &f.informer,
            Objects::named(["shop/w1", "shop/w2", "shop/never"]),
        )
        .timeout(LONG);
    let mut progress = wait.progress();
    let waiting = tokio::spawn(wait.run());
    progress
        .wait_for(|p| p.synced == 1 && p.objects == 3 && p.holding == 1)
        .await
        .unwrap();
    f.send(WatchEvent::Deleted, ready("shop", "w1", true));
    progress.wait_for(|p| p.holding == 2).await.unwrap();
    // w2 deleted and created again while nobody looked: another uid.
    let mut again = ready("shop", "w2", true);
    again.metadata.uid = Some("uid-w2-again".into());
    f.send(WatchEvent::Modified, again);
    let report = waiting.await.unwrap().unwrap();
    assert_eq!(
        states(&report),
        [
            ("shop/never".into(), "missing", true),
            ("shop/w1".into(), "missing", true),
            ("shop/w2".into(), "replaced", true),
        ]
    );
}

#[tokio::test]
async fn deletion_of_a_selection_holds_when_nothing_is_picked_any_more() {
    let mut f = Fixture::new(vec![ready("shop", "w1", true), ready("shop", "w2", true)]);
    let web = ObjectSelection::default().labels(Selector::parse("app=web").unwrap());
    let wait = Wait::new(WaitFor::Deleted)
        .on(&f.informer, web)
        .timeout(LONG);
    let mut progress = wait.progress();
    let waiting = tokio::spawn(wait.run());
    progress
        .wait_for(|p| p.synced == 1 && p.objects == 2)
        .await
        .unwrap();
    f.send(WatchEvent::Deleted, ready("shop", "w1", true));
    let mut relabelled = ready("shop", "w2", true);
    relabelled.metadata.labels = None;
    f.send(WatchEvent::Modified, relabelled);
    let report = waiting.await.unwrap().unwrap();
    assert_eq!(
        states(&report),
        [
            ("shop/w1".into(), "missing", true),
            ("shop/w2".into(), "missing", true)
        ]
    );
}

#[tokio::test]
async fn a_mistake_is_said_once_per_object_and_counts_as_not_met() {
    let mut f = Fixture::new(vec![widget("shop", "w1", json!({ "ready": "yes" }))]);
    let said = std::sync::Arc::new(StdMutex::new(Vec::new()));
    let hook = said.clone();
    let wait = Wait::new(goal())
        .on(&f.informer, "shop/w1")
        .timeout(LONG)
        .on_mistake(move |o| hook.lock().unwrap().push(format!("{} {}", o.key, o.state)));
    let mut progress = wait.progress();
    let waiting = tokio::spawn(wait.run());
    progress.wait_for(|p| p.synced == 1).await.unwrap();
    f.send(
        WatchEvent::Modified,
        widget("shop", "w1", json!({ "ready": "still" })),
    );
    f.send(
        WatchEvent::Modified,
        widget("shop", "w1", json!({ "ready": true })),
    );
    let report = waiting.await.unwrap().unwrap();
    assert_eq!(report.informers()[0].mistakes, 1);
    assert_eq!(*said.lock().unwrap(), [r#"shop/w1 not a boolean: "yes""#]);
}

#[tokio::test]
async fn a_zero_timeout_checks_the_cache_once() {
    let f = Fixture::new(vec![ready("shop", "w1", true)]);
    f.informer.wait_for_sync(LONG).await.unwrap();
    let report = f
        .informer
        .wait_until("shop/w1", goal(), Duration::ZERO)
        .await
        .unwrap();
    assert!(report.holds());
    let report = timed_out(
        f.informer
            .wait_until("shop/w2", goal(), Duration::ZERO)
            .await,
    );
    assert_eq!(blocking(&report), [("shop/w2".into(), "missing")]);
}

#[tokio::test(start_paused = true)]
async fn an_informer_not_started_is_reported_not_synced() {
    let f = Fixture::unstarted(vec![ready("shop", "w1", true)]);
    let report = timed_out(
        Wait::new(WaitFor::Deleted)
            .on(&f.informer, "shop/w1")
            .timeout(Duration::from_secs(1))
            .run()
            .await,
    );
    let not_synced: Vec<String> = report
        .not_synced()
        .map(|(resource, why)| format!("{resource}: {}", why.reason()))
        .collect();
    assert_eq!(not_synced, ["widgets.v1.example.com: notStarted"]);
    assert!(
        report
            .to_string()
            .ends_with("; not synced: widgets.v1.example.com (the informer was not started)"),
        "{report}"
    );
}

#[tokio::test]
async fn an_unknown_index_is_refused_at_once_and_a_stopped_informer_ends_the_wait() {
    let f = Fixture::new(vec![]);
    let err = Wait::new(goal())
        .on(&f.informer, ObjectSelection::default().index("nope", "x"))
        .run()
        .await
        .unwrap_err();
    assert!(
        crate::vocabulary::error_chain(&err).contains(r#"unknown index "nope""#),
        "{err}"
    );
    let wait = Wait::new(goal()).on(&f.informer, "shop/w1").timeout(LONG);
    let mut progress = wait.progress();
    let waiting = tokio::spawn(wait.run());
    progress.wait_for(|p| p.synced == 1).await.unwrap();
    f.cancel.cancel();
    let err = waiting.await.unwrap().unwrap_err();
    assert!(matches!(err, InformerError::Stopped { .. }), "{err:?}");
}

#[tokio::test]
async fn several_informers_are_waited_for_together() {
    let mut a = Fixture::new(vec![ready("shop", "a1", true)]);
    let b = Fixture::new(vec![ready("shop", "b1", true)]);
    let wait = Wait::new(goal())
        .on_each([&a.informer, &b.informer], Objects::all())
        .timeout(LONG);
    let report = wait.run().await.unwrap();
    assert_eq!(report.objects().len(), 2);
    a.send(WatchEvent::Modified, ready("shop", "a1", false));
    a.informer
        .wait_for_resource_version(&a.rv.to_string(), LONG)
        .await
        .unwrap();
    let report = timed_out(
        Wait::new(goal())
            .on_each([&a.informer, &b.informer], Objects::all())
            .timeout(Duration::from_millis(300))
            .run()
            .await,
    );
    // With several informers, the text names each object's resource.
    assert_eq!(
        report.to_string(),
        "1 of 2 objects does not hold 'status.ready': widgets.v1.example.com shop/a1 (not met)"
    );
}
