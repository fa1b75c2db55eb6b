//! The list/watch state machine against a scripted server.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use kube_client::api::{ListParams, WatchParams};
use kube_core::{ApiResource, DynamicObject, TypeMeta};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::informer::InformerError;
use crate::informer::backoff::BackoffConfig;
use crate::vocabulary::scope::Scope;
use crate::wire::list_watch::{ListPage, WatchStream};

fn resource() -> ApiResource {
    ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    }
}

fn obj(name: &str, rv: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": { "name": name, "namespace": "ns", "resourceVersion": rv }
    }))
    .unwrap()
}

/// A list item as servers send it: no apiVersion or kind.
fn item(name: &str, rv: &str) -> DynamicObject {
    let mut o = obj(name, rv);
    o.types = None;
    o
}

fn page(items: Vec<DynamicObject>, rv: &str, cont: Option<&str>) -> ListPage {
    ListPage {
        objects: items.into_iter().map(Into::into).collect(),
        resource_version: rv.into(),
        continue_token: cont.map(Into::into),
        skipped: Vec::new(),
        bytes: 0,
        shard_info: None,
    }
}

/// An error status from the server, as a response or a watch ERROR event.
fn api_error(code: u16, reason: &str) -> ListWatchError {
    ListWatchError::Status {
        code,
        reason: reason.into(),
        message: reason.into(),
    }
}

fn bookmark(rv: &str, initial_end: bool) -> WatchEvent {
    WatchEvent::Bookmark {
        resource_version: rv.into(),
        initial_events_end: initial_end,
    }
}

enum WatchAnswer {
    Refuse(ListWatchError),
    /// Refused after a while, as a server that is down does (a connect
    /// timeout).
    RefuseAfter(Duration, ListWatchError),
    /// These events, then the stream ends.
    Events(Vec<Result<WatchEvent, ListWatchError>>),
    /// These events, then the stream stays open.
    EventsThenHang(Vec<Result<WatchEvent, ListWatchError>>),
    /// Open; these events after a while, then the stream ends.
    EventsAfter(Duration, Vec<Result<WatchEvent, ListWatchError>>),
}

#[derive(Clone, Debug, PartialEq)]
enum Call {
    List {
        limit: Option<u32>,
        continue_token: Option<String>,
        label_selector: Option<String>,
    },
    Watch {
        rv: String,
        initial_events: bool,
        timeout: Option<u32>,
    },
}

type ListAnswer = Result<ListPage, ListWatchError>;

#[derive(Clone, Default)]
struct Script {
    lists: Arc<Mutex<VecDeque<ListAnswer>>>,
    watches: Arc<Mutex<VecDeque<WatchAnswer>>>,
    calls: Arc<Mutex<Vec<Call>>>,
    /// How long each list takes to answer (none by default).
    list_delay: Option<Duration>,
    /// Returned by `availability()`: gates the reflector when set.
    availability: Option<watch::Receiver<ResourceAvailability>>,
}

impl Script {
    fn list(self, answer: ListAnswer) -> Self {
        self.lists.lock().unwrap().push_back(answer);
        self
    }
    fn watch(self, answer: WatchAnswer) -> Self {
        self.watches.lock().unwrap().push_back(answer);
        self
    }
    /// Lists that take `delay` to answer, as large ones do.
    fn slow_lists(mut self, delay: Duration) -> Self {
        self.list_delay = Some(delay);
        self
    }
    fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }
}

impl ListWatch for Script {
    fn list(&self, params: &ListParams) -> BoxFuture<'static, Result<ListPage, ListWatchError>> {
        self.calls.lock().unwrap().push(Call::List {
            limit: params.limit,
            continue_token: params.continue_token.clone(),
            label_selector: params.label_selector.clone(),
        });
        let answer = self.lists.lock().unwrap().pop_front();
        let delay = self.list_delay;
        async move {
            if let Some(delay) = delay {
                tokio::time::sleep(delay).await;
            }
            match answer {
                Some(a) => a,
                // Out of script: hang, as a server that never answers.
                None => futures::future::pending().await,
            }
        }
        .boxed()
    }

    fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> BoxFuture<'static, Result<WatchStream, ListWatchError>> {
        self.calls.lock().unwrap().push(Call::Watch {
            rv: resource_version.into(),
            initial_events: params.send_initial_events,
            timeout: params.timeout,
        });
        let answer = self.watches.lock().unwrap().pop_front();
        async move {
            match answer {
                None => futures::future::pending().await,
                Some(WatchAnswer::Refuse(e)) => Err(e),
                Some(WatchAnswer::RefuseAfter(after, e)) => {
                    tokio::time::sleep(after).await;
                    Err(e)
                }
                Some(WatchAnswer::Events(evs)) => Ok(futures::stream::iter(evs).boxed()),
                Some(WatchAnswer::EventsThenHang(evs)) => Ok(futures::stream::iter(evs)
                    .chain(futures::stream::pending())
                    .boxed()),
                Some(WatchAnswer::EventsAfter(after, evs)) => {
                    let later = async move {
                        tokio::time::sleep(after).await;
                        futures::stream::iter(evs)
                    };
                    Ok(futures::stream::once(later).flatten().boxed())
                }
            }
        }
        .boxed()
    }

    fn availability(&self) -> Option<watch::Receiver<ResourceAvailability>> {
        self.availability.clone()
    }
}

/// A reflector over `script`, reporting to a fresh status channel (whose
/// receiver comes back with it) and calling `error_hook`.
fn reflector(
    script: &Script,
    resource: ApiResource,
    options: &InformerOptions,
    error_hook: Option<ErrorHook>,
) -> (Reflector, watch::Receiver<InformerStatus>) {
    let status = watch::Sender::new(InformerStatus::NotStarted);
    let receiver = status.subscribe();
    let reflector = Reflector::new(
        Arc::new(script.clone()) as Arc<dyn ListWatch>,
        resource,
        options,
        status,
        Arc::new(parking_lot::Mutex::new(error_hook)),
    );
    (reflector, receiver)
}

/// What the sink received, a list's begin, pages and end folded into one
/// `Got::Replace` at its end.
#[derive(Debug)]
enum Got {
    Replace(Vec<DynamicObject>),
    Upsert(DynamicObject),
    Delete(DynamicObject),
}

/// Folds deltas into [`Got`]s; counts the list (re)starts and pages.
#[derive(Default)]
struct Fold {
    list: Option<Vec<DynamicObject>>,
    begins: usize,
    pages: usize,
}

impl Fold {
    fn push(&mut self, delta: Delta) -> Option<Got> {
        match delta {
            Delta::ResourceVersion(_) => None,
            Delta::ListBegin => {
                self.begins += 1;
                self.list = Some(Vec::new());
                None
            }
            Delta::ListPage(page) => {
                self.pages += 1;
                self.list
                    .as_mut()
                    .expect("a page comes after a list's begin")
                    .extend(page.iter().map(ListItem::to_object));
                None
            }
            Delta::SnapshotPage(page) => {
                self.pages += usize::from(!page.is_empty());
                self.list
                    .as_mut()
                    .expect("a snapshot page comes after a list's begin")
                    .extend(page.to_objects());
                None
            }
            Delta::ListEnd => Some(Got::Replace(
                self.list
                    .take()
                    .expect("a list's end comes after its begin"),
            )),
            Delta::Upsert(o) => Some(Got::Upsert(o)),
            Delta::UpsertBuilt(o) => Some(Got::Upsert(o.to_object())),
            Delta::Delete(o) => Some(Got::Delete(o)),
            Delta::Reshard { .. } => None,
        }
    }
}

/// What the sink received, as short strings.
fn describe(d: &Got) -> String {
    let name = |o: &DynamicObject| o.metadata.name.clone().unwrap_or_default();
    match d {
        Got::Replace(objs) => format!(
            "replace[{}]",
            objs.iter().map(name).collect::<Vec<_>>().join(",")
        ),
        Got::Upsert(o) => format!("upsert {}", name(o)),
        Got::Delete(o) => format!("delete {}", name(o)),
    }
}

/// Runs a reflector over `script` until `until` deltas arrived (or 10 min of
/// paused time pass), then stops it.
async fn run_until(
    script: &Script,
    options: InformerOptions,
    until: usize,
) -> (Vec<String>, Arc<ReflectorStats>, Vec<Got>) {
    let (reflector, _status) = reflector(script, resource(), &options, None);
    let stats = reflector.stats();
    let cancel = CancellationToken::new();
    let deltas = Arc::new(Mutex::new(Vec::new()));
    let sink_deltas = deltas.clone();
    let stop = cancel.clone();
    let mut fold = Fold::default();
    let task = tokio::spawn(reflector.run(cancel.clone(), move |d| {
        let Some(got) = fold.push(d) else { return };
        let mut v = sink_deltas.lock().unwrap();
        v.push(got);
        if v.len() >= until {
            stop.cancel();
        }
    }));
    let _ = tokio::time::timeout(Duration::from_secs(600), cancel.cancelled()).await;
    cancel.cancel();
    task.await.unwrap();
    let deltas = std::mem::take(&mut *deltas.lock().unwrap());
    (deltas.iter().map(describe).collect(), stats, deltas)
}

#[tokio::test(start_paused = true)]
async fn lists_in_pages_then_watches_from_the_list_version() {
    let script = Script::default()
        .list(Ok(page(
            vec![item("a", "1"), item("b", "2")],
            "10",
            Some("c1"),
        )))
        .list(Ok(page(vec![item("c", "3")], "10", None)))
        .watch(WatchAnswer::EventsThenHang(vec![
            Ok(WatchEvent::Added(obj("d", "11").into())),
            Ok(WatchEvent::Modified(obj("a", "12").into())),
            Ok(WatchEvent::Deleted(obj("b", "13").into())),
        ]));
    let options = InformerOptions::default().label_selector("app=x");
    let (seen, stats, deltas) = run_until(&script, options, 4).await;
    assert_eq!(seen, ["replace[a,b,c]", "upsert d", "upsert a", "delete b"]);
    // List items get apiVersion and kind from the resource.
    let Got::Replace(items) = &deltas[0] else {
        panic!()
    };
    assert!(
        items
            .iter()
            .all(|o| o.types.as_ref().unwrap().kind == "Widget")
    );
    let calls = script.calls();
    assert_eq!(
        calls[0],
        Call::List {
            limit: Some(500),
            continue_token: None,
            label_selector: Some("app=x".into())
        }
    );
    assert_eq!(
        calls[1],
        Call::List {
            limit: Some(500),
            continue_token: Some("c1".into()),
            label_selector: Some("app=x".into())
        }
    );
    let Call::Watch {
        rv,
        initial_events,
        timeout,
    } = &calls[2]
    else {
        panic!("{calls:?}")
    };
    assert_eq!(rv, "10");
    assert!(!initial_events);
    let t = timeout.unwrap();
    assert!((300..=600).contains(&t), "watch timeout {t}");
    assert_eq!(stats.lists.load(Ordering::Relaxed), 1);
    assert_eq!(stats.list_requests.load(Ordering::Relaxed), 2);
}

#[tokio::test(start_paused = true)]
async fn a_normal_end_of_stream_resumes_from_the_last_version_without_listing() {
    let script = Script::default()
        .list(Ok(page(vec![item("a", "1")], "10", None)))
        .watch(WatchAnswer::Events(vec![
            Ok(WatchEvent::Added(obj("b", "11").into())),
            Ok(bookmark("15", false)),
        ]))
        .watch(WatchAnswer::EventsThenHang(vec![Ok(WatchEvent::Added(
            obj("c", "16").into(),
        ))]));
    let (seen, stats, _) = run_until(&script, InformerOptions::default(), 3).await;
    assert_eq!(seen, ["replace[a]", "upsert b", "upsert c"]);
    let watches: Vec<_> = script
        .calls()
        .into_iter()
        .filter_map(|c| match c {
            Call::Watch { rv, .. } => Some(rv),
            _ => None,
        })
        .collect();
    assert_eq!(watches, ["10", "15"], "resumed from the bookmark's version");
    assert_eq!(stats.list_requests.load(Ordering::Relaxed), 1);
    assert_eq!(stats.errors.load(Ordering::Relaxed), 0);
}

#[tokio::test(start_paused = true)]
async fn gone_in_the_stream_forces_a_relist() {
    let script = Script::default()
        .list(Ok(page(vec![item("a", "1"), item("b", "2")], "10", None)))
        .watch(WatchAnswer::Events(vec![Err(ListWatchError::Status {
            code: 410,
            reason: "Expired".into(),
            message: "too old resource version".into(),
        })]))
        .list(Ok(page(vec![item("a", "5")], "20", None)))
        .watch(WatchAnswer::EventsThenHang(vec![]));
    let (seen, stats, _) = run_until(&script, InformerOptions::default(), 2).await;
    assert_eq!(seen, ["replace[a,b]", "replace[a]"]);
    assert_eq!(stats.relists_after_gone.load(Ordering::Relaxed), 1);
}

#[tokio::test(start_paused = true)]
async fn gone_when_the_watch_starts_forces_a_relist() {
    let script = Script::default()
        .list(Ok(page(vec![item("a", "1")], "10", None)))
        .watch(WatchAnswer::Refuse(api_error(410, "Gone")))
        .list(Ok(page(vec![item("b", "2")], "20", None)));
    let (seen, stats, _) = run_until(&script, InformerOptions::default(), 2).await;
    assert_eq!(seen, ["replace[a]", "replace[b]"]);
    assert_eq!(stats.relists_after_gone.load(Ordering::Relaxed), 1);
    assert_eq!(
        stats.errors.load(Ordering::Relaxed),
        0,
        "a 410 is not backed off"
    );
}

#[tokio::test(start_paused = true)]
async fn an_expired_continue_token_falls_back_to_one_full_list() {
    let script = Script::default()
        .list(Ok(page(vec![item("a", "1")], "10", Some("c1"))))
        .list(Err(api_error(410, "Expired")))
        .list(Ok(page(vec![item("a", "1"), item("b", "2")], "12", None)))
        .watch(WatchAnswer::EventsThenHang(vec![]));
    let (seen, _, _) = run_until(&script, InformerOptions::default(), 1).await;
    assert_eq!(seen, ["replace[a,b]"], "the partial first page is not kept");
    let calls = script.calls();
    assert_eq!(
        calls[2],
        Call::List {
            limit: None,
            continue_token: None,
            label_selector: None
        }
    );
}

#[tokio::test(start_paused = true)]
async fn errors_back_off_and_are_reported() {
    let hook_seen = Arc::new(Mutex::new(Vec::new()));
    let hook_log = hook_seen.clone();
    let error_hook: ErrorHook = Arc::new(move |e: &InformerError| {
        hook_log.lock().unwrap().push(e.code());
    });
    let options = InformerOptions::default().backoff(BackoffConfig {
        jitter: 0.0,
        ..BackoffConfig::default()
    });
    let script = Script::default()
        .list(Err(api_error(403, "Forbidden")))
        .list(Err(api_error(403, "Forbidden")))
        .list(Err(api_error(500, "InternalError")))
        .list(Ok(page(vec![item("a", "1")], "10", None)))
        .watch(WatchAnswer::EventsThenHang(vec![]));
    let (reflector, mut status) = reflector(&script, resource(), &options, Some(error_hook));
    let cancel = CancellationToken::new();
    let start = tokio::time::Instant::now();
    let task = tokio::spawn(reflector.run(cancel.clone(), |_| {}));

    let mut backoffs = Vec::new();
    loop {
        status.changed().await.unwrap();
        let s = status.borrow_and_update().clone();
        match s {
            InformerStatus::BackingOff {
                code,
                attempt,
                retry_in,
                synced_before,
                ..
            } => {
                assert!(!synced_before, "nothing was listed yet");
                backoffs.push((code, attempt, retry_in.as_millis()));
            }
            InformerStatus::Synced => break,
            _ => {}
        }
    }
    // 800 + 1600 + 3200 ms of backoff before the list that worked.
    assert_eq!(start.elapsed(), Duration::from_millis(5600));
    assert_eq!(
        backoffs,
        [
            (Some(403), 1, 800),
            (Some(403), 2, 1600),
            (Some(500), 3, 3200)
        ]
    );
    assert_eq!(
        *hook_seen.lock().unwrap(),
        [Some(403), Some(403), Some(500)]
    );
    // Cancelled, the run ends at once. The reflector does not report
    // `Stopped` (its informer does): the status stays what it was, and the
    // channel closes as the reflector goes.
    cancel.cancel();
    tokio::time::timeout(Duration::from_millis(1), task)
        .await
        .expect("the reflector stops when cancelled")
        .unwrap();
    assert_eq!(*status.borrow_and_update(), InformerStatus::Synced);
    assert!(status.changed().await.is_err(), "the reflector is gone");
}

#[tokio::test(start_paused = true)]
async fn objects_of_another_kind_or_without_a_name_are_skipped() {
    let mut stranger = obj("x", "3");
    stranger.types = Some(TypeMeta {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
    });
    let mut nameless = item("", "4");
    nameless.metadata.name = None;
    let mut other_version = obj("y", "12");
    other_version.types = Some(TypeMeta {
        api_version: "example.com/v2".into(),
        kind: "Widget".into(),
    });
    let script = Script::default()
        .list(Ok(page(
            vec![item("a", "1"), stranger, nameless],
            "10",
            None,
        )))
        .watch(WatchAnswer::EventsThenHang(vec![
            Ok(WatchEvent::Added(other_version.into())),
            Ok(WatchEvent::Added(obj("b", "13").into())),
        ]));
    let (seen, stats, _) = run_until(&script, InformerOptions::default(), 2).await;
    assert_eq!(seen, ["replace[a]", "upsert b"]);
    assert_eq!(stats.skipped_objects.load(Ordering::Relaxed), 3);
}

#[tokio::test(start_paused = true)]
async fn streaming_list_collects_initial_events_until_the_end_bookmark() {
    let script = Script::default()
        .watch(WatchAnswer::EventsThenHang(vec![
            Ok(WatchEvent::Added(obj("a", "1").into())),
            Ok(WatchEvent::Added(obj("b", "2").into())),
            Ok(bookmark("5", false)),
            Ok(WatchEvent::Added(obj("c", "3").into())),
            Ok(bookmark("10", true)),
        ]))
        .watch(WatchAnswer::EventsThenHang(vec![Ok(WatchEvent::Added(
            obj("d", "11").into(),
        ))]));
    let options = InformerOptions::default().streaming_list(true);
    let (seen, stats, _) = run_until(&script, options, 2).await;
    assert_eq!(seen, ["replace[a,b,c]", "upsert d"]);
    let calls = script.calls();
    assert!(matches!(&calls[0], Call::Watch { rv, initial_events: true, .. } if rv.is_empty()));
    assert!(matches!(&calls[1], Call::Watch { rv, initial_events: false, .. } if rv == "10"));
    assert_eq!(stats.list_requests.load(Ordering::Relaxed), 0);
}

#[tokio::test(start_paused = true)]
async fn a_refused_streaming_list_falls_back_to_list_then_watch() {
    let script = Script::default()
        .watch(WatchAnswer::Refuse(api_error(422, "Invalid")))
        .list(Ok(page(vec![item("a", "1")], "10", None)))
        .watch(WatchAnswer::EventsThenHang(vec![Ok(WatchEvent::Added(
            obj("b", "11").into(),
        ))]));
    let options = InformerOptions::default().streaming_list(true);
    let (seen, stats, _) = run_until(&script, options, 2).await;
    assert_eq!(seen, ["replace[a]", "upsert b"]);
    assert_eq!(stats.errors.load(Ordering::Relaxed), 0);
}

#[tokio::test(start_paused = true)]
async fn a_failed_watch_resumes_from_the_last_version_after_backoff() {
    let script = Script::default()
        .list(Ok(page(vec![item("a", "1")], "10", None)))
        .watch(WatchAnswer::Events(vec![
            Ok(WatchEvent::Added(obj("b", "11").into())),
            Err(api_error(500, "InternalError")),
        ]))
        .watch(WatchAnswer::EventsThenHang(vec![Ok(WatchEvent::Added(
            obj("c", "12").into(),
        ))]));
    let (seen, stats, _) = run_until(&script, InformerOptions::default(), 3).await;
    assert_eq!(seen, ["replace[a]", "upsert b", "upsert c"]);
    let watch_rvs: Vec<_> = script
        .calls()
        .into_iter()
        .filter_map(|c| match c {
            Call::Watch { rv, .. } => Some(rv),
            _ => None,
        })
        .collect();
    assert_eq!(watch_rvs, ["10", "11"]);
    assert_eq!(stats.errors.load(Ordering::Relaxed), 1);
    assert_eq!(stats.lists.load(Ordering::Relaxed), 1);
}

fn served() -> ResourceAvailability {
    ResourceAvailability::Served {
        resource: resource(),
        scope: Scope::Namespaced,
    }
}

fn not_served(reason: &str) -> ResourceAvailability {
    ResourceAvailability::NotServed {
        reason: reason.into(),
    }
}

/// A reflector over `script` gated by an availability channel, with its
/// deltas and statuses recorded.
struct Gated {
    availability: watch::Sender<ResourceAvailability>,
    status: watch::Receiver<InformerStatus>,
    deltas: Arc<Mutex<Vec<String>>>,
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Gated {
    fn start(script: &Script, resource: ApiResource, initial: ResourceAvailability) -> Self {
        let (availability, rx) = watch::channel(initial);
        // The list-watch follows discovery: it hands out the channel.
        let script = Script {
            availability: Some(rx),
            ..script.clone()
        };
        let (reflector, status) = reflector(&script, resource, &InformerOptions::default(), None);
        let deltas = Arc::new(Mutex::new(Vec::new()));
        let sink_deltas = deltas.clone();
        let cancel = CancellationToken::new();
        let mut fold = Fold::default();
        let task = tokio::spawn(reflector.run(cancel.clone(), move |d| {
            if let Some(got) = fold.push(d) {
                sink_deltas.lock().unwrap().push(describe(&got));
            }
        }));
        Gated {
            availability,
            status,
            deltas,
            cancel,
            task,
        }
    }

    async fn wait_status(&mut self, want: impl Fn(&InformerStatus) -> bool) {
        tokio::time::timeout(Duration::from_secs(60), self.status.wait_for(|s| want(s)))
            .await
            .expect("status reached in time")
            .expect("reflector alive");
    }

    fn deltas(&self) -> Vec<String> {
        self.deltas.lock().unwrap().clone()
    }

    async fn stop(self) {
        self.cancel.cancel();
        self.task.await.unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn a_resource_not_served_waits_without_requests_then_lists() {
    let script = Script::default()
        .list(Ok(page(vec![item("a", "1")], "10", None)))
        .watch(WatchAnswer::EventsThenHang(vec![]));
    let mut gated = Gated::start(&script, resource(), not_served("CRD not installed"));
    gated
        .wait_status(|s| {
            *s == InformerStatus::Pending {
                reason: "CRD not installed".into(),
            }
        })
        .await;
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert!(script.calls().is_empty(), "no request while pending");
    assert!(gated.deltas().is_empty());

    gated.availability.send_replace(served());
    gated.wait_status(|s| *s == InformerStatus::Synced).await;
    assert_eq!(gated.deltas(), ["replace[a]"]);
    gated.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_resource_that_goes_away_empties_the_cache_and_resumes_when_back() {
    let script = Script::default()
        .list(Ok(page(vec![item("a", "1"), item("b", "2")], "10", None)))
        // The watch of the deleted resource fails, as a 404 would.
        .watch(WatchAnswer::Events(vec![Err(api_error(404, "NotFound"))]))
        .list(Ok(page(vec![item("c", "30")], "30", None)))
        .watch(WatchAnswer::EventsThenHang(vec![]));
    let mut gated = Gated::start(&script, resource(), served());
    gated
        .wait_status(|s| {
            matches!(
                s,
                InformerStatus::BackingOff {
                    code: Some(404),
                    ..
                }
            )
        })
        .await;
    gated.availability.send_replace(not_served("CRD deleted"));
    gated
        .wait_status(|s| {
            *s == InformerStatus::Gone {
                reason: "CRD deleted".into(),
            }
        })
        .await;
    assert_eq!(gated.deltas(), ["replace[a,b]", "replace[]"]);
    let calls_when_gone = script.calls().len();
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert_eq!(
        script.calls().len(),
        calls_when_gone,
        "no 404 loop while gone"
    );
    // Another change that still says "not served" delivers nothing more.
    gated.availability.send_replace(not_served("still deleted"));
    gated
        .wait_status(|s| {
            *s == InformerStatus::Gone {
                reason: "still deleted".into(),
            }
        })
        .await;
    assert_eq!(gated.deltas(), ["replace[a,b]", "replace[]"]);

    gated.availability.send_replace(served());
    gated.wait_status(|s| *s == InformerStatus::Synced).await;
    assert_eq!(gated.deltas(), ["replace[a,b]", "replace[]", "replace[c]"]);
    let lists = script
        .calls()
        .iter()
        .filter(|c| matches!(c, Call::List { .. }))
        .count();
    assert_eq!(lists, 2, "listed again once served again");
    gated.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_kind_comes_from_discovery_when_it_was_not_known() {
    let script = Script::default()
        .list(Ok(page(vec![item("a", "1")], "10", None)))
        .watch(WatchAnswer::EventsThenHang(vec![Ok(WatchEvent::Added(
            obj("b", "11").into(),
        ))]));
    let unknown_kind = ApiResource {
        kind: String::new(),
        ..resource()
    };
    let mut gated = Gated::start(&script, unknown_kind, not_served("pending"));
    gated
        .wait_status(|s| matches!(s, InformerStatus::Pending { .. }))
        .await;
    gated.availability.send_replace(served());
    gated.wait_status(|s| *s == InformerStatus::Synced).await;
    tokio::time::timeout(Duration::from_secs(60), async {
        while gated.deltas().len() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
    // Both the list item (no kind) and the watched object (kind Widget) are
    // admitted as Widgets.
    assert_eq!(gated.deltas(), ["replace[a]", "upsert b"]);
    gated.stop().await;
}

/// Runs a reflector over `script` until `until` deltas arrived, and returns
/// them as short strings, lists unfolded: `begin`, `page[a,b]`, `end`.
async fn run_raw(script: &Script, options: InformerOptions, until: usize) -> Vec<String> {
    let (reflector, _status) = reflector(script, resource(), &options, None);
    let cancel = CancellationToken::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink_seen = seen.clone();
    let stop = cancel.clone();
    let name = |o: &DynamicObject| o.metadata.name.clone().unwrap_or_default();
    let task = tokio::spawn(reflector.run(cancel.clone(), move |d| {
        if matches!(d, Delta::ResourceVersion(_)) {
            return;
        }
        let mut v = sink_seen.lock().unwrap();
        v.push(match d {
            Delta::ResourceVersion(_) => unreachable!(),
            Delta::ListBegin => "begin".to_owned(),
            Delta::ListPage(p) => {
                let names: Vec<_> = p.iter().map(|o| name(&o.to_object())).collect();
                format!("page[{}]", names.join(","))
            }
            Delta::SnapshotPage(p) => format!(
                "snapshot[{}]",
                p.to_objects()
                    .iter()
                    .map(name)
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            Delta::ListEnd => "end".to_owned(),
            Delta::Upsert(o) => format!("upsert {}", name(&o)),
            Delta::UpsertBuilt(o) => format!("upsert {}", o.name().unwrap_or_default()),
            Delta::Delete(o) => format!("delete {}", name(&o)),
            Delta::Reshard { current, .. } => format!("reshard {current}"),
        });
        if v.len() >= until {
            stop.cancel();
        }
    }));
    let _ = tokio::time::timeout(Duration::from_secs(600), cancel.cancelled()).await;
    cancel.cancel();
    task.await.unwrap();
    std::mem::take(&mut *seen.lock().unwrap())
}

#[tokio::test(start_paused = true)]
async fn list_pages_are_handed_on_as_they_arrive() {
    let script = Script::default()
        .list(Ok(page(
            vec![item("a", "1"), item("b", "2")],
            "10",
            Some("c1"),
        )))
        .list(Ok(page(vec![item("c", "3")], "10", None)))
        .watch(WatchAnswer::EventsThenHang(vec![Ok(WatchEvent::Added(
            obj("d", "11").into(),
        ))]));
    let seen = run_raw(&script, InformerOptions::default(), 5).await;
    assert_eq!(seen, ["begin", "page[a,b]", "page[c]", "end", "upsert d"]);
}

#[tokio::test(start_paused = true)]
async fn a_list_that_falls_back_to_one_request_begins_again() {
    let script = Script::default()
        .list(Ok(page(vec![item("a", "1")], "10", Some("c1"))))
        .list(Err(api_error(410, "Expired")))
        .list(Ok(page(vec![item("a", "1"), item("b", "2")], "12", None)))
        .watch(WatchAnswer::EventsThenHang(vec![]));
    let seen = run_raw(&script, InformerOptions::default(), 5).await;
    assert_eq!(seen, ["begin", "page[a]", "begin", "page[a,b]", "end"]);
}

#[tokio::test(start_paused = true)]
async fn a_streaming_list_hands_on_pages_and_deletes_what_left_a_page_handed_on() {
    let script = Script::default()
        .watch(WatchAnswer::EventsThenHang(vec![
            Ok(WatchEvent::Added(obj("a", "1").into())),
            Ok(WatchEvent::Added(obj("b", "2").into())),
            Ok(WatchEvent::Deleted(obj("a", "3").into())),
            Ok(WatchEvent::Added(obj("c", "4").into())),
            Ok(WatchEvent::Deleted(obj("b", "5").into())),
            Ok(WatchEvent::Added(obj("b", "6").into())),
            Ok(bookmark("10", true)),
        ]))
        .watch(WatchAnswer::EventsThenHang(vec![]));
    let options = InformerOptions::default().streaming_list(true).page_size(2);
    let seen = run_raw(&script, options, 5).await;
    // a and b in the first page; a deleted after it was handed on, b deleted
    // and added again: only a is deleted after the end.
    assert_eq!(seen, ["begin", "page[a,b]", "page[c,b]", "end", "delete a"]);
}

#[tokio::test(start_paused = true)]
async fn a_streaming_list_that_ends_before_its_end_bookmark_falls_back_to_pages() {
    // A server that ignores sendInitialEvents: a plain watch that sends the
    // objects and ends at its timeout, never with the end bookmark.
    let script = Script::default()
        .watch(WatchAnswer::Events(vec![
            Ok(WatchEvent::Added(obj("a", "1").into())),
            Ok(bookmark("5", false)),
        ]))
        .list(Ok(page(vec![item("a", "1"), item("b", "2")], "10", None)))
        .watch(WatchAnswer::EventsThenHang(vec![Ok(WatchEvent::Added(
            obj("c", "11").into(),
        ))]));
    let options = InformerOptions::default().streaming_list(true);
    let (seen, stats, _) = run_until(&script, options, 2).await;
    assert_eq!(seen, ["replace[a,b]", "upsert c"]);
    let calls = script.calls();
    assert!(matches!(
        &calls[0],
        Call::Watch {
            initial_events: true,
            ..
        }
    ));
    assert!(matches!(&calls[1], Call::List { .. }), "{calls:?}");
    assert!(matches!(&calls[2], Call::Watch { rv, initial_events: false, .. } if rv == "10"));
    assert_eq!(stats.errors.load(Ordering::Relaxed), 1);
}

/// The status names a reflector over `script` goes through in its first
/// two minutes (each name once per run of equal names).
async fn status_names(script: &Script, options: &InformerOptions) -> Vec<&'static str> {
    let (reflector, mut status) = reflector(script, resource(), options, None);
    let cancel = CancellationToken::new();
    let task = tokio::spawn(reflector.run(cancel.clone(), |_| {}));
    let mut names: Vec<&'static str> = Vec::new();
    let follow = async {
        while status.changed().await.is_ok() {
            let name = status.borrow_and_update().name();
            if names.last() != Some(&name) {
                names.push(name);
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(120), follow).await;
    cancel.cancel();
    task.await.unwrap();
    names
}

/// While the server cannot be reached, the status says so until a watch is
/// open again: never "synced" between retries (a readiness probe reading
/// it must not say ready during an outage).
#[tokio::test(start_paused = true)]
async fn while_watches_fail_the_status_never_says_synced_between_retries() {
    let options = InformerOptions::default().backoff(BackoffConfig {
        jitter: 0.0,
        ..BackoffConfig::default()
    });
    let down =
        || WatchAnswer::RefuseAfter(Duration::from_secs(1), api_error(503, "ServiceUnavailable"));
    let script = Script::default()
        .list(Ok(page(vec![item("a", "1")], "10", None)))
        .watch(WatchAnswer::Events(vec![]))
        .watch(down())
        .watch(down())
        .watch(down())
        .watch(WatchAnswer::EventsThenHang(vec![]))
        .slow_lists(Duration::from_secs(1));
    assert_eq!(
        status_names(&script, &options).await,
        ["syncing", "synced", "serverError", "synced"]
    );
}

/// A relist after 410 says so until the new list ends.
#[tokio::test(start_paused = true)]
async fn a_relist_after_gone_is_visible_in_the_status() {
    let script = Script::default()
        .list(Ok(page(vec![item("a", "1")], "10", None)))
        .watch(WatchAnswer::EventsAfter(
            Duration::from_secs(1),
            vec![Err(api_error(410, "Expired"))],
        ))
        .list(Ok(page(vec![item("b", "2")], "20", None)))
        .watch(WatchAnswer::EventsThenHang(vec![]))
        .slow_lists(Duration::from_secs(1));
    assert_eq!(
        status_names(&script, &InformerOptions::default()).await,
        ["syncing", "synced", "relisting", "synced"]
    );
}
