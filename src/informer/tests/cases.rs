use std::collections::{HashMap, VecDeque};
use std::sync::Mutex as StdMutex;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use tokio::sync::mpsc;
use kube_client::api::{ListParams, WatchParams};
use kube_core::DynamicObject;
use serde_json::json;

use crate::informer::*;
use crate::cache::index::IndexFn;
use crate::wire::list_watch::{ListPage, ListWatchError, WatchEvent, WatchStream, WireObject};
use crate::cache::CacheError;
use crate::cache::store::CachedObject;

/// The options of every informer here: the defaults, in the storage mode
/// under test.
fn options() -> InformerOptions {
    InformerOptions::default().storage(STORAGE)
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

fn obj(name: &str, rv: u64) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": { "name": name, "namespace": "ns", "resourceVersion": rv.to_string(),
                      "labels": { "app": name } },
        "spec": { "n": rv }
    }))
    .unwrap()
}

/// What a watch stream yields.
type WatchItem = Result<WatchEvent, ListWatchError>;

/// A server the test drives: lists come from a queue, each watch is a
/// channel whose sender the test holds.
#[derive(Clone, Default)]
struct FakeServer {
    lists: Arc<StdMutex<VecDeque<Vec<WireObject>>>>,
    watch_senders: Arc<StdMutex<Vec<mpsc::UnboundedSender<WatchItem>>>>,
    list_calls: Arc<AtomicU64>,
    watch_calls: Arc<AtomicU64>,
    rv: Arc<AtomicU64>,
}

impl FakeServer {
    fn with_list(objects: Vec<DynamicObject>) -> Self {
        let s = Self::default();
        s.queue_list(objects);
        s
    }

    /// Queues a list, its objects as JSON text, as the API server's
    /// list-watch hands them on to an informer that builds from JSON.
    fn queue_list(&self, objects: Vec<DynamicObject>) {
        let json = |o: &DynamicObject| serde_json::to_string(o).unwrap();
        self.queue_json_list(&objects.iter().map(json).collect::<Vec<_>>());
    }

    /// Queues a list of these objects' JSON texts.
    fn queue_json_list(&self, objects: &[impl AsRef<str>]) {
        let sent = |o: &_| WireObject::from_json(AsRef::<str>::as_ref(o).to_owned());
        self.lists
            .lock()
            .unwrap()
            .push_back(objects.iter().map(sent).collect());
    }

    /// Sends an event on the newest watch.
    fn send(&self, ev: WatchEvent) {
        self.send_result(Ok(ev));
    }

    /// Sends an item on the newest watch, its object as JSON text, as the
    /// API server's list-watch hands objects on.
    fn send_result(&self, item: WatchItem) {
        let json = |o: WireObject| match o.decoded() {
            Some(decoded) => WireObject::from_json(serde_json::to_string(decoded).unwrap()),
            None => o,
        };
        let item = item.map(|event| match event {
            WatchEvent::Added(o) => WatchEvent::Added(json(o)),
            WatchEvent::Modified(o) => WatchEvent::Modified(json(o)),
            WatchEvent::Deleted(o) => WatchEvent::Deleted(json(o)),
            other => other,
        });
        let senders = self.watch_senders.lock().unwrap();
        senders.last().expect("a watch is open").send(item).unwrap();
    }

    /// Ends the newest watch with 410 Gone (a watch ERROR event), forcing a
    /// relist.
    fn expire(&self) {
        self.send_result(Err(ListWatchError::Status {
            code: 410,
            reason: "Expired".into(),
            message: "too old".into(),
        }));
    }

    fn watches(&self) -> usize {
        self.watch_senders.lock().unwrap().len()
    }

    fn requests(&self) -> u64 {
        self.list_calls.load(Ordering::SeqCst) + self.watch_calls.load(Ordering::SeqCst)
    }
}

impl ListWatch for FakeServer {
    fn list(&self, _params: &ListParams) -> BoxFuture<'static, Result<ListPage, ListWatchError>> {
        self.list_calls.fetch_add(1, Ordering::SeqCst);
        let next = self.lists.lock().unwrap().pop_front();
        let rv = self.rv.fetch_add(1, Ordering::SeqCst).to_string();
        async move {
            let Some(objects) = next else {
                return futures::future::pending().await;
            };
            Ok(ListPage {
                objects,
                resource_version: rv,
                continue_token: None,
                skipped: Vec::new(),
                bytes: 0,
                shard_info: None,
            })
        }
        .boxed()
    }

    fn watch(
        &self,
        _params: &WatchParams,
        _rv: &str,
    ) -> BoxFuture<'static, Result<WatchStream, ListWatchError>> {
        self.watch_calls.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = mpsc::unbounded_channel();
        self.watch_senders.lock().unwrap().push(tx);
        async move { Ok(tokio_stream_from(rx).boxed()) }.boxed()
    }
}

fn tokio_stream_from<T: Send + 'static>(
    mut rx: mpsc::UnboundedReceiver<T>,
) -> impl futures::Stream<Item = T> + Send {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// Records events as short strings.
#[derive(Clone, Default)]
struct Recorder {
    events: Arc<StdMutex<Vec<String>>>,
}

impl Recorder {
    fn handler(&self) -> impl EventHandler + use<> {
        let events = self.events.clone();
        move |e: Event| events.lock().unwrap().push(describe(&e))
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.events.lock().unwrap())
    }

    fn len(&self) -> usize {
        self.events.lock().unwrap().len()
    }
}

fn describe(e: &Event) -> String {
    let name = |o: &DynamicObject| o.metadata.name.clone().unwrap_or_default();
    match e {
        Event::Add {
            object,
            in_initial_list,
            entered_filter,
            ..
        } => {
            format!(
                "add {}{}{}",
                name(&object.object()),
                if *in_initial_list { " (initial)" } else { "" },
                if *entered_filter { " (entered)" } else { "" }
            )
        }
        Event::Update {
            new,
            is_resync: true,
            ..
        } => format!("resync {}", name(&new.object())),
        Event::Update { old, new, .. } => format!(
            "update {} {}->{}",
            name(&new.object()),
            old.resource_version().unwrap_or(""),
            new.resource_version().unwrap_or("")
        ),
        Event::Delete {
            object,
            final_state_unknown,
            left_filter,
            ..
        } => format!(
            "delete {}{}{}",
            name(&object.object()),
            if *final_state_unknown {
                " (tombstone)"
            } else {
                ""
            },
            if *left_filter { " (left)" } else { "" }
        ),
    }
}

/// Waits (real time) for `cond`, up to 10 s.
async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Ends the open watch with 410 Gone and returns, sorted, the `events`
/// events the relist that follows gives `rec`.
async fn relist(server: &FakeServer, rec: &Recorder, events: usize) -> Vec<String> {
    eventually("watch open", || server.watches() == 1).await;
    server.expire();
    eventually("relist events", || rec.len() == events).await;
    let mut got = rec.take();
    got.sort();
    got
}

/// An informer of `server` with the index `n` (`spec.n`) and a recorder,
/// started and synced.
async fn synced_with_index_n(server: &FakeServer) -> (SharedInformer, Recorder, CancellationToken) {
    let inf = informer(server, options());
    inf.add_index("n", IndexFn::jmespath("n", "spec.n").unwrap())
        .unwrap();
    let rec = Recorder::default();
    inf.add_handler(rec.handler());
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    inf.wait_for_sync(Duration::from_secs(10)).await.unwrap();
    (inf, rec, cancel)
}

fn informer(server: &FakeServer, options: InformerOptions) -> SharedInformer {
    SharedInformer::with_list_watch(server.clone(), resource(), options)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_before_start_get_initial_adds_then_live_events() {
    let server = FakeServer::with_list(vec![obj("a", 1), obj("b", 2)]);
    let inf = informer(&server, options());
    let rec = Recorder::default();
    let reg = inf.add_handler(rec.handler());
    assert!(!reg.has_synced());
    let cancel = CancellationToken::new();
    let task = inf.start(cancel.clone()).unwrap();
    inf.wait_for_sync(Duration::from_secs(10)).await.unwrap();
    eventually("registration synced", || reg.has_synced()).await;
    eventually("watch open", || server.watches() == 1).await;
    server.send(WatchEvent::Modified(obj("a", 3).into()));
    server.send(WatchEvent::Added(obj("c", 4).into()));
    server.send(WatchEvent::Deleted(obj("b", 5).into()));
    eventually("5 events", || rec.len() == 5).await;
    assert_eq!(
        rec.take(),
        [
            "add a (initial)",
            "add b (initial)",
            "update a 1->3",
            "add c",
            "delete b"
        ]
    );
    assert_eq!(inf.store().len(), 2);
    assert_eq!(inf.status(), InformerStatus::Synced);
    cancel.cancel();
    task.await.unwrap();
    assert_eq!(inf.status(), InformerStatus::Stopped);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_handler_gets_the_same_object_as_the_store() {
    let server = FakeServer::with_list(vec![obj("a", 1)]);
    let inf = informer(&server, options());
    let seen: Arc<StdMutex<Vec<CachedObject>>> = Arc::default();
    for _ in 0..3 {
        let seen = seen.clone();
        inf.add_handler(move |e: Event| seen.lock().unwrap().push(e.object().clone()));
    }
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    eventually("3 deliveries", || seen.lock().unwrap().len() == 3).await;
    let cached = inf.store().get("ns/a").unwrap();
    for o in seen.lock().unwrap().iter() {
        assert!(o.same(&cached));
    }
    cancel.cancel();
}

/// A late handler, added while events flow, sees every object exactly once
/// as an initial Add and then exactly the later changes: no gap, no
/// duplicate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_handlers_under_load_get_no_gap_and_no_duplicate() {
    let server = FakeServer::with_list((0..100).map(|i| obj(&format!("o{i}"), i)).collect());
    let inf = informer(&server, options());
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    inf.wait_for_sync(Duration::from_secs(10)).await.unwrap();
    eventually("watch open", || server.watches() == 1).await;

    // Writer: updates and creates objects continuously.
    let writer_server = server.clone();
    let writer = std::thread::spawn(move || {
        for rv in 1000..6000u64 {
            let name = if rv % 3 == 0 {
                format!("new{rv}")
            } else {
                format!("o{}", rv % 100)
            };
            writer_server.send(WatchEvent::Modified(obj(&name, rv).into()));
        }
    });

    // Late handlers, each tracking the last resourceVersion it saw per key.
    type Versions = Arc<StdMutex<HashMap<String, u64>>>;
    let mut late = Vec::new();
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_millis(2)).await;
        let versions: Versions = Arc::default();
        let problems: Arc<StdMutex<Vec<String>>> = Arc::default();
        let (v, p) = (versions.clone(), problems.clone());
        let reg = inf.add_handler(move |e: Event| {
            let o = e.object();
            let key = o.name().unwrap().to_owned();
            let rv: u64 = o.resource_version().unwrap().parse().unwrap();
            let mut v = v.lock().unwrap();
            match &e {
                Event::Add { .. } => {
                    if v.insert(key.clone(), rv).is_some() {
                        p.lock().unwrap().push(format!("second add of {key}"));
                    }
                }
                Event::Update { old, .. } => {
                    let old_rv: u64 = old
                        .resource_version()
                        .unwrap()
                        .parse()
                        .unwrap();
                    match v.insert(key.clone(), rv) {
                        Some(prev) if prev == old_rv => {}
                        prev => p.lock().unwrap().push(format!(
                            "update of {key} from {old_rv} but handler last saw {prev:?}"
                        )),
                    }
                }
                Event::Delete { .. } => {
                    v.remove(&key);
                }
            }
        });
        late.push((reg, versions, problems));
    }
    writer.join().unwrap();
    // Wait until every handler caught up with the cache.
    let store = inf.store();
    eventually("store has the final state", || {
        store
            .get("ns/o99")
            .map(|o| o.resource_version().unwrap().to_owned())
            == Some("5999".into())
    })
    .await;
    for (reg, versions, problems) in &late {
        eventually("handler drained", || reg.backlog() == 0).await;
        assert!(
            problems.lock().unwrap().is_empty(),
            "{:?}",
            problems.lock().unwrap().first()
        );
        let want: HashMap<String, u64> = store
            .list_all()
            .iter()
            .map(|o| {
                (
                    o.name().unwrap().to_owned(),
                    o.resource_version().unwrap().parse().unwrap(),
                )
            })
            .collect();
        assert_eq!(*versions.lock().unwrap(), want);
        assert!(reg.has_synced());
    }
    cancel.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_handler_delays_neither_the_others_nor_the_cache() {
    let server = FakeServer::with_list(vec![]);
    let inf = informer(&server, options());
    let slow = inf.add_handler(|_e: Event| std::thread::sleep(Duration::from_millis(100)));
    let fast = Recorder::default();
    let fast_reg = inf.add_handler(fast.handler());
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    eventually("watch open", || server.watches() == 1).await;
    for i in 0..20 {
        server.send(WatchEvent::Added(obj(&format!("o{i}"), i + 1).into()));
    }
    // The fast handler and the cache have everything while the slow handler
    // is still working through its queue.
    eventually("fast handler done", || fast.len() == 20).await;
    assert_eq!(inf.store().len(), 20);
    assert!(slow.backlog() > 10, "slow backlog {}", slow.backlog());
    assert_eq!(fast_reg.backlog(), 0);
    cancel.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_handler_is_counted_and_keeps_receiving_events() {
    let server = FakeServer::with_list(vec![obj("a", 1)]);
    let inf = informer(&server, options());
    let seen = Recorder::default();
    let seen_events = seen.events.clone();
    let panicky = inf.add_handler(move |e: Event| {
        seen_events.lock().unwrap().push(describe(&e));
        if e.object().name() == Some("a") {
            panic!("handler bug");
        }
    });
    let other = Recorder::default();
    inf.add_handler(other.handler());
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    eventually("watch open", || server.watches() == 1).await;
    server.send(WatchEvent::Added(obj("b", 2).into()));
    server.send(WatchEvent::Modified(obj("a", 3).into()));
    server.send(WatchEvent::Added(obj("c", 4).into()));
    eventually("all events", || seen.len() == 4 && other.len() == 4).await;
    assert_eq!(
        seen.take(),
        ["add a (initial)", "add b", "update a 1->3", "add c"]
    );
    assert_eq!(panicky.panics(), 2);
    eventually("synced after a panicking initial add", || {
        panicky.has_synced()
    })
    .await;
    cancel.cancel();
}

/// A handler that enters a context once per turn (a thread-local flag) and
/// records, for each event, whether it ran inside one; `skip` turns it into
/// one that never calls `deliver`, `panic` into one that panics before it.
struct InTurns {
    seen: Arc<StdMutex<Vec<(String, bool)>>>,
    turns: Arc<AtomicU64>,
    skip: bool,
    panic: bool,
}

thread_local!(static IN_TURN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });

impl EventHandler for InTurns {
    fn on_event(&self, event: Event) {
        let inside = IN_TURN.with(std::cell::Cell::get);
        self.seen.lock().unwrap().push((describe(&event), inside));
    }

    fn around_turn(&self, deliver: &mut dyn FnMut()) {
        self.turns.fetch_add(1, Ordering::Relaxed);
        if self.panic {
            panic!("context failed");
        }
        if self.skip {
            return;
        }
        IN_TURN.with(|t| t.set(true));
        deliver();
        IN_TURN.with(|t| t.set(false));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_enters_its_context_once_per_turn_and_misses_nothing_when_it_does_not() {
    let list: Vec<_> = (0..100).map(|i| obj(&format!("o{i:03}"), i + 1)).collect();
    let server = FakeServer::with_list(list);
    let inf = informer(&server, options());
    let handlers: Vec<_> = [(false, false), (true, false), (false, true)]
        .into_iter()
        .map(|(skip, panic)| {
            let handler = InTurns {
                seen: Arc::default(),
                turns: Arc::default(),
                skip,
                panic,
            };
            let (seen, turns) = (handler.seen.clone(), handler.turns.clone());
            (inf.add_handler(handler), seen, turns)
        })
        .collect();
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    eventually("watch open", || server.watches() == 1).await;
    server.send(WatchEvent::Modified(obj("o000", 200).into()));
    let want: Vec<String> = (0..100)
        .map(|i| format!("add o{i:03} (initial)"))
        .chain(["update o000 1->200".to_string()])
        .collect();
    for (i, (registration, seen, turns)) in handlers.iter().enumerate() {
        eventually("every event", || seen.lock().unwrap().len() == 101).await;
        let seen = seen.lock().unwrap().clone();
        let names: Vec<_> = seen.iter().map(|(e, _)| e.clone()).collect();
        assert_eq!(names, want, "handler {i}");
        // The first handler ran every event inside its context, the others
        // (which skipped `deliver` or panicked before it) outside.
        assert!(seen.iter().all(|(_, inside)| *inside == (i == 0)), "handler {i}");
        let turns = turns.load(Ordering::Relaxed);
        assert!(turns >= 1, "handler {i}: no turn");
        assert_eq!(registration.panics(), if i == 2 { turns } else { 0 });
        eventually("synced", || registration.has_synced()).await;
        assert_eq!(registration.backlog(), 0);
    }
    cancel.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_handler_that_skips_the_replay_gets_only_later_changes() {
    let server = FakeServer::with_list(vec![obj("a", 1), obj("b", 2)]);
    let inf = informer(&server, options());
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    inf.wait_for_sync(Duration::from_secs(10)).await.unwrap();
    eventually("watch open", || server.watches() == 1).await;
    let rec = Recorder::default();
    let reg = inf.add_handler_with(rec.handler(), HandlerOptions::default().skip_replay(true));
    eventually("synced at once", || reg.has_synced()).await;
    server.send(WatchEvent::Modified(obj("a", 3).into()));
    eventually("the change", || rec.len() == 1).await;
    assert_eq!(rec.take(), ["update a 1->3"]);
    cancel.cancel();
}

/// A controller's kind of handler: called in place with handles, the
/// replay before its registration returns, an update with the state before
/// it; a panic is counted and the next event still arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_objects_handler_gets_handles_in_place_and_the_replay_at_once() {
    let server = FakeServer::with_list(vec![obj("a", 1)]);
    let inf = informer(&server, options());
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    inf.wait_for_sync(Duration::from_secs(10)).await.unwrap();
    eventually("watch open", || server.watches() == 1).await;
    let seen = Arc::new(StdMutex::new(Vec::<String>::new()));
    let record = seen.clone();
    let reg = inf.add_objects_handler(
        move |object: &CachedObject, old: Option<&CachedObject>| {
            let name = object.name().unwrap_or_default();
            assert_ne!(name, "boom", "a handler that panics");
            let rv = object.resource_version().unwrap_or_default();
            record.lock().unwrap().push(match old {
                Some(old) => format!("{name} {}->{rv}", old.resource_version().unwrap_or_default()),
                None => format!("{name} {rv}"),
            });
        },
        HandlerOptions::default(),
    );
    assert_eq!(*seen.lock().unwrap(), ["a 1"], "the replay, in place");
    assert!(reg.has_synced());
    server.send(WatchEvent::Modified(obj("a", 3).into()));
    server.send(WatchEvent::Added(obj("boom", 4).into()));
    server.send(WatchEvent::Added(obj("b", 5).into()));
    eventually("the changes", || seen.lock().unwrap().len() == 3).await;
    assert_eq!(*seen.lock().unwrap(), ["a 1", "a 1->3", "b 5"]);
    assert_eq!((reg.panics(), reg.delivered()), (1, 4));
    cancel.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relist_reconciles_with_tombstones_updates_and_silence() {
    let server = FakeServer::with_list(vec![obj("keep", 1), obj("change", 2), obj("vanish", 3)]);
    server.queue_list(vec![obj("keep", 1), obj("change", 5), obj("new", 6)]);
    let inf = informer(&server, options());
    let rec = Recorder::default();
    inf.add_handler(rec.handler());
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    eventually("initial adds", || rec.len() == 3).await;
    rec.take();
    let got = relist(&server, &rec, 3).await;
    assert_eq!(
        got,
        ["add new", "delete vanish (tombstone)", "update change 2->5"]
    );
    let mut keys = inf.store().keys();
    keys.sort();
    assert_eq!(keys, ["ns/change", "ns/keep", "ns/new"]);
    assert_eq!(inf.stats().relists_after_gone.load(Ordering::Relaxed), 1);
    let counters = inf.stats().counters();
    assert_eq!((counters.tombstones, counters.relists_after_gone), (1, 1));
    cancel.cancel();
}

/// Listed objects sent as JSON (as the API server's list-watch hands them
/// to an informer that builds from JSON): items without apiVersion and kind
/// get the resource's, odd ones are decoded, those that do not decode or
/// are not of the resource are skipped; a relist of them reconciles as one
/// of decoded objects does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listed_objects_sent_as_json_are_cached_as_they_decode_or_skipped() {
    let widget = r#""apiVersion":"example.com/v1","kind":"Widget""#;
    let item = |name: &str, rv: u32, n: u32| {
        format!(
            r#"{{"metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}"}},"spec":{{"n":{n}}}}}"#
        )
    };
    let server = FakeServer::default();
    server.queue_json_list(&[
        // No apiVersion and kind, as built-in types' list items come.
        item("keep", 1, 1),
        item("change", 2, 2),
        item("vanish", 3, 3),
        // Keys in any order, `spec` given twice (the last one counts).
        format!(
            r#"{{"spec":{{"n":1}},"metadata":{{"resourceVersion":"4","namespace":"ns","name":"twice"}},{widget},"spec":{{"n":4}}}}"#
        ),
        // A label that is no string, another kind, no name, no object.
        format!(
            r#"{{{widget},"metadata":{{"name":"bad","namespace":"ns","labels":{{"x":1}},"resourceVersion":"5"}}}}"#
        ),
        r#"{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g","namespace":"ns","resourceVersion":"6"}}"#.to_owned(),
        format!(r#"{{{widget},"metadata":{{"namespace":"ns","resourceVersion":"7"}}}}"#),
        "7".to_owned(),
    ]);
    server.queue_json_list(&[
        item("keep", 1, 1),
        item("change", 8, 8),
        item("twice", 4, 4),
        item("new", 9, 9),
        r#"{"metadata":{"name":"bad2","namespace":"ns","generation":"x"}}"#.to_owned(),
    ]);
    let (inf, rec, cancel) = synced_with_index_n(&server).await;
    eventually("initial adds", || rec.len() == 4).await;
    let mut added = rec.take();
    added.sort();
    assert_eq!(
        added,
        [
            "add change (initial)",
            "add keep (initial)",
            "add twice (initial)",
            "add vanish (initial)"
        ]
    );
    let keep = inf.store().get("ns/keep").unwrap();
    let types = keep.object().types.clone().expect("types");
    assert_eq!(types.api_version, "example.com/v1");
    assert_eq!(types.kind, "Widget");
    let twice = inf.store().get("ns/twice").unwrap().object();
    assert_eq!(twice.data["spec"], json!({ "n": 4 }));
    assert_eq!(inf.store().index_keys("n", "4").unwrap(), ["ns/twice"]);
    assert_eq!(inf.stats().counters().skipped_objects, 4);

    let got = relist(&server, &rec, 3).await;
    assert_eq!(
        got,
        ["add new", "delete vanish (tombstone)", "update change 2->8"]
    );
    let mut keys = inf.store().keys();
    keys.sort();
    assert_eq!(keys, ["ns/change", "ns/keep", "ns/new", "ns/twice"]);
    // The unchanged object is the one cached before.
    assert!(inf.store().get("ns/keep").unwrap().same(&keep));
    assert_eq!(inf.store().index_keys("n", "8").unwrap(), ["ns/change"]);
    assert_eq!(inf.store().index_keys("n", "2").unwrap(), Vec::<String>::new());
    assert_eq!(inf.stats().counters().skipped_objects, 5);
    cancel.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_stream_replays_then_follows() {
    let server = FakeServer::with_list(vec![obj("a", 1)]);
    let inf = informer(&server, options());
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    inf.wait_for_sync(Duration::from_secs(10)).await.unwrap();
    eventually("watch open", || server.watches() == 1).await;
    let mut events = inf.events();
    server.send(WatchEvent::Added(obj("b", 2).into()));
    let first = events.next().await.unwrap();
    assert_eq!(describe(&first), "add a (initial)");
    let second = events.next().await.unwrap();
    assert!(events.has_synced());
    assert_eq!(describe(&second), "add b");
    drop(events);
    // The dropped stream is unregistered at the next dispatch.
    server.send(WatchEvent::Added(obj("c", 3).into()));
    eventually("c cached", || inf.store().len() == 3).await;
    assert_eq!(inf.shared.dispatch.lock().listeners.len(), 0);
    cancel.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removed_handlers_get_nothing_more() {
    let server = FakeServer::with_list(vec![]);
    let inf = informer(&server, options());
    let rec = Recorder::default();
    let reg = inf.add_handler(rec.handler());
    let keep = Recorder::default();
    inf.add_handler(keep.handler());
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    eventually("watch open", || server.watches() == 1).await;
    server.send(WatchEvent::Added(obj("a", 1).into()));
    eventually("a", || rec.len() == 1).await;
    reg.remove();
    server.send(WatchEvent::Added(obj("b", 2).into()));
    eventually("b", || keep.len() == 2).await;
    assert_eq!(rec.len(), 1);
    cancel.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transform_runs_before_the_cache() {
    let server = FakeServer::with_list(vec![{
        let mut o = obj("a", 1);
        o.metadata.managed_fields = Some(vec![Default::default()]);
        o
    }]);
    let inf = informer(&server, options().strip_managed_fields());
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    inf.wait_for_sync(Duration::from_secs(10)).await.unwrap();
    assert!(
        inf.store()
            .get("ns/a")
            .unwrap()
            .object()
            .metadata
            .managed_fields
            .is_none()
    );
    cancel.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indexes_added_before_start_and_later_are_queryable() {
    let server = FakeServer::with_list(vec![obj("a", 1), obj("b", 2)]);
    let inf = informer(&server, options());
    inf.add_index(
        "app",
        IndexFn::jmespath("app", "metadata.labels.app").unwrap(),
    )
    .unwrap();
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    inf.wait_for_sync(Duration::from_secs(10)).await.unwrap();
    assert_eq!(inf.store().by_index("app", "b").unwrap().len(), 1);
    inf.add_index("n", IndexFn::jmespath("n", "spec.n").unwrap())
        .unwrap();
    assert_eq!(inf.store().index_keys("n", "2").unwrap(), ["ns/b"]);
    // The same definition again changes nothing; another is refused.
    inf.add_index("n", IndexFn::jmespath("n", "spec.n").unwrap())
        .unwrap();
    assert!(
        inf.add_index("n", IndexFn::jmespath("n", "spec.m").unwrap())
            .is_err()
    );
    cancel.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_closes_every_handler() {
    let server = FakeServer::with_list(vec![obj("a", 1)]);
    let inf = informer(&server, options());
    let regs: Vec<_> = (0..3).map(|_| inf.add_handler(|_e: Event| {})).collect();
    let cancel = CancellationToken::new();
    let task = inf.start(cancel.clone()).unwrap();
    inf.wait_for_sync(Duration::from_secs(10)).await.unwrap();
    eventually("handlers synced", || regs.iter().all(Registration::has_synced)).await;
    assert_eq!(inf.shared.dispatch.lock().listeners.len(), 3);
    cancel.cancel();
    task.await.unwrap();
    assert!(inf.shared.dispatch.lock().listeners.is_empty(), "listeners closed");
    assert!(inf.shared.dispatch.lock().tasks.is_empty(), "tasks awaited");
    assert!(
        inf.start(CancellationToken::new()).is_err(),
        "an informer runs once"
    );
    drop(regs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_sync_reports_what_blocks_it() {
    // A server whose list always fails with 403.
    #[derive(Clone)]
    struct Forbidden;
    impl ListWatch for Forbidden {
        fn list(&self, _: &ListParams) -> BoxFuture<'static, Result<ListPage, ListWatchError>> {
            async {
                Err(ListWatchError::Status {
                    code: 403,
                    reason: "Forbidden".into(),
                    message: "widgets is forbidden: User \"alice\" cannot list".into(),
                })
            }
            .boxed()
        }
        fn watch(
            &self,
            _: &WatchParams,
            _: &str,
        ) -> BoxFuture<'static, Result<WatchStream, ListWatchError>> {
            futures::future::pending().boxed()
        }
    }
    let inf = SharedInformer::with_list_watch(Forbidden, resource(), options());
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    let err = inf
        .wait_for_sync(Duration::from_millis(300))
        .await
        .unwrap_err();
    match &err {
        InformerError::NotSynced {
            reason: NotSynced::Forbidden { .. },
            ..
        } => {}
        other => panic!("unexpected {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("widgets.v1.example.com") && text.contains("forbidden"),
        "{text}"
    );
    cancel.cancel();
}

/// Takes every event the stream has ready, without waiting.
fn drain(stream: &mut EventStream) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(Some(e)) = stream.next().now_or_never() {
        out.push(describe(&e));
    }
    out
}

#[tokio::test(start_paused = true)]
async fn resync_redelivers_from_memory_on_each_handlers_period() {
    let server = FakeServer::with_list(vec![obj("a", 1), obj("b", 2)]);
    let inf = informer(
        &server,
        options().resync(Duration::from_secs(10)),
    );
    let mut default = inf.events();
    let mut slow = inf.events_with(HandlerOptions::default().resync(Duration::from_secs(25)));
    let mut never = inf.events_with(HandlerOptions::default().resync(Duration::ZERO));
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    inf.wait_for_sync(Duration::from_secs(1)).await.unwrap();
    for s in [&mut default, &mut slow, &mut never] {
        assert_eq!(drain(s), ["add a (initial)", "add b (initial)"]);
    }
    let requests = server.requests();

    tokio::time::sleep(Duration::from_millis(10_500)).await;
    assert_eq!(drain(&mut default), ["resync a", "resync b"]);
    assert!(drain(&mut slow).is_empty());
    tokio::time::sleep(Duration::from_secs(20)).await; // t = 30.5 s
    assert_eq!(drain(&mut default).len(), 4, "resyncs at 20 s and 30 s");
    // 25 s rounds up to 30 s, a multiple of the 10 s check period.
    assert_eq!(drain(&mut slow), ["resync a", "resync b"]);
    assert!(drain(&mut never).is_empty());
    assert_eq!(server.requests(), requests, "resync made no request");
    cancel.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_handler_added_before_start_lowers_the_check_period() {
    let server = FakeServer::with_list(vec![obj("a", 1)]);
    let inf = informer(
        &server,
        options().resync(Duration::from_secs(30)),
    );
    let fast = Recorder::default();
    inf.add_handler_with(
        fast.handler(),
        HandlerOptions::default().resync(Duration::from_secs(5)),
    );
    assert_eq!(
        inf.shared.dispatch.lock().clock.check_period(),
        Duration::from_secs(5)
    );
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    inf.wait_for_sync(Duration::from_secs(1)).await.unwrap();
    // After start, a smaller request is raised to the check period, and
    // the registration says so.
    let late = Recorder::default();
    let registration = inf.add_handler_with(
        late.handler(),
        HandlerOptions::default().resync(Duration::from_secs(1)),
    );
    assert_eq!(registration.resync_period(), Duration::from_secs(5));
    let periods: Vec<Duration> = inf
        .shared
        .dispatch
        .lock()
        .listeners
        .iter()
        .map(|l| l.resync)
        .collect();
    assert_eq!(periods, [Duration::from_secs(5), Duration::from_secs(5)]);
    cancel.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_shared_informer_calls_its_handler_in_place() {
    let server = FakeServer::with_list(vec![obj("a", 1)]);
    let rec = Recorder::default();
    let inf = Informer::with_list_watch(
        server.clone(),
        resource(),
        options(),
        rec.handler(),
    );
    let inf = Arc::new(inf);
    let cancel = CancellationToken::new();
    let run = {
        let (inf, cancel) = (inf.clone(), cancel.clone());
        async move { inf.run(cancel).await }
    };
    let task = tokio::spawn(run);
    eventually("watch open", || server.watches() == 1).await;
    // A second run is refused and adds no second call per event.
    assert!(matches!(
        inf.run(cancel.clone()).await,
        Err(InformerError::AlreadyStarted { .. })
    ));
    server.send(WatchEvent::Added(obj("b", 2).into()));
    eventually("2 events", || rec.len() >= 2).await;
    server.send(WatchEvent::Added(obj("c", 3).into()));
    eventually("3 events", || rec.len() >= 3).await;
    assert_eq!(rec.take(), ["add a (initial)", "add b", "add c"]);
    cancel.cancel();
    task.await.unwrap().unwrap();
}

/// A non-shared informer over `server` whose handler records its events,
/// and the task that runs it.
fn run_lone(
    server: &FakeServer,
    options: InformerOptions,
    handler: impl EventHandler,
    cancel: &CancellationToken,
) -> (Arc<Informer>, tokio::task::JoinHandle<Result<(), InformerError>>) {
    let inf = Arc::new(Informer::with_list_watch(
        server.clone(),
        resource(),
        options,
        handler,
    ));
    let task = tokio::spawn({
        let (inf, cancel) = (inf.clone(), cancel.clone());
        async move { inf.run(cancel).await }
    });
    (inf, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_shared_informer_hands_its_handler_the_list_then_every_change_in_order() {
    let server = FakeServer::with_list(vec![obj("a", 1), obj("b", 2)]);
    let rec = Recorder::default();
    let cancel = CancellationToken::new();
    let (inf, task) = run_lone(&server, options(), rec.handler(), &cancel);
    eventually("watch open", || server.watches() == 1).await;
    assert!(inf.has_synced());
    server.send(WatchEvent::Added(obj("c", 3).into()));
    server.send(WatchEvent::Modified(obj("a", 4).into()));
    server.send(WatchEvent::Deleted(obj("b", 5).into()));
    server.send(WatchEvent::Modified(obj("c", 6).into()));
    eventually("6 events", || rec.len() >= 6).await;
    assert_eq!(
        rec.take(),
        [
            "add a (initial)",
            "add b (initial)",
            "add c",
            "update a 1->4",
            "delete b",
            "update c 3->6",
        ]
    );
    assert_eq!(inf.store().len(), 2);
    cancel.cancel();
    task.await.unwrap().unwrap();
    assert_eq!(inf.status(), InformerStatus::Stopped);
    assert!(rec.take().is_empty(), "nothing after stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_shared_informer_handler_reads_the_cache_as_its_event_left_it() {
    let server = FakeServer::with_list(vec![obj("a", 1)]);
    let store = Arc::new(std::sync::OnceLock::<Store>::new());
    // For each event: the version it carries and the one the cache holds.
    let seen = Arc::new(StdMutex::new(Vec::<(String, String)>::new()));
    let handler = {
        let (store, seen) = (store.clone(), seen.clone());
        move |e: Event| {
            let store = store.get().expect("the store is set before start");
            let cached = store
                .get("ns/a")
                .and_then(|o| o.resource_version().map(str::to_owned))
                .unwrap_or_else(|| "none".into());
            let carried = match &e {
                Event::Delete { .. } => "none".to_owned(),
                _ => e.object().resource_version().unwrap_or_default().to_owned(),
            };
            seen.lock().unwrap().push((carried, cached));
        }
    };
    let cancel = CancellationToken::new();
    let inf = Arc::new(Informer::with_list_watch(
        server.clone(),
        resource(),
        options(),
        handler,
    ));
    store.set(inf.store()).unwrap();
    let task = tokio::spawn({
        let (inf, cancel) = (inf.clone(), cancel.clone());
        async move { inf.run(cancel).await }
    });
    eventually("watch open", || server.watches() == 1).await;
    // Queued at once: the cache would be ahead of a handler called later.
    for rv in 2..=20 {
        server.send(WatchEvent::Modified(obj("a", rv).into()));
    }
    server.send(WatchEvent::Deleted(obj("a", 21).into()));
    eventually("21 events", || seen.lock().unwrap().len() >= 21).await;
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    let expected: Vec<(String, String)> = (1..=20)
        .map(|rv| (rv.to_string(), rv.to_string()))
        .chain([("none".to_owned(), "none".to_owned())])
        .collect();
    assert_eq!(seen, expected);
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_non_shared_informer_resyncs_its_handler_when_configured() {
    let server = FakeServer::with_list(vec![obj("a", 1), obj("b", 2)]);
    let rec = Recorder::default();
    let cancel = CancellationToken::new();
    let (inf, task) = run_lone(
        &server,
        options().resync(Duration::from_secs(10)),
        rec.handler(),
        &cancel,
    );
    eventually("sync", || inf.has_synced()).await;
    assert_eq!(rec.take(), ["add a (initial)", "add b (initial)"]);
    let requests = server.requests();
    tokio::time::sleep(Duration::from_secs(10)).await;
    eventually("a resync", || rec.len() >= 2).await;
    assert_eq!(rec.take(), ["resync a", "resync b"]);
    assert_eq!(server.requests(), requests, "resync made no request");
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_non_shared_informer_without_resync_never_resyncs() {
    let server = FakeServer::with_list(vec![obj("a", 1)]);
    let rec = Recorder::default();
    let cancel = CancellationToken::new();
    let (inf, task) = run_lone(&server, options(), rec.handler(), &cancel);
    eventually("sync", || inf.has_synced()).await;
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(rec.take(), ["add a (initial)"]);
    cancel.cancel();
    task.await.unwrap().unwrap();
}

/// A gate handlers wait at until the test opens it.
#[derive(Clone, Default)]
struct Gate(Arc<(StdMutex<bool>, std::sync::Condvar)>);

impl Gate {
    fn wait(&self) {
        let (open, cvar) = &*self.0;
        let mut open = open.lock().unwrap();
        while !*open {
            open = cvar.wait(open).unwrap();
        }
    }

    fn open(&self) {
        let (open, cvar) = &*self.0;
        *open.lock().unwrap() = true;
        cvar.notify_all();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_that_block_do_not_hold_up_the_others() {
    let server = FakeServer::with_list(vec![obj("a", 1)]);
    let inf = informer(&server, options());
    let gate = Gate::default();
    // More blocked handlers than the pool has workers.
    let blocked: Vec<Registration> = (0..handler_pool_stats().workers + 2)
        .map(|_| {
            let gate = gate.clone();
            inf.add_handler(move |_e: Event| gate.wait())
        })
        .collect();
    let free = Recorder::default();
    let reg = inf.add_handler(free.handler());
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    inf.wait_for_sync(Duration::from_secs(10)).await.unwrap();
    eventually("watch open", || server.watches() == 1).await;
    server.send(WatchEvent::Added(obj("b", 2).into()));
    eventually("the free handler's events", || free.len() >= 2).await;
    assert_eq!(free.take(), ["add a (initial)", "add b"]);
    assert!(reg.has_synced());
    assert!(blocked.iter().all(|r| r.backlog() == 2), "each blocked handler holds its two events");
    gate.open();
    eventually("blocked handlers drained", || {
        blocked.iter().all(|r| r.backlog() == 0 && r.has_synced())
    })
    .await;
    cancel.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_handlers_run_in_order_and_survive_panics() {
    let server = FakeServer::with_list(vec![obj("a", 1)]);
    let inf = informer(&server, options());
    let seen = Arc::new(StdMutex::new(Vec::new()));
    let sink = seen.clone();
    let reg = inf
        .add_async_handler(move |e: Event| {
            let sink = sink.clone();
            async move {
                tokio::task::yield_now().await;
                assert_ne!(e.object().name(), Some("boom"), "boom");
                sink.lock().unwrap().push(describe(&e));
            }
        })
        .unwrap();
    let cancel = CancellationToken::new();
    let task = inf.start(cancel.clone()).unwrap();
    inf.wait_for_sync(Duration::from_secs(10)).await.unwrap();
    eventually("watch open", || server.watches() == 1).await;
    for (name, rv) in [("b", 2), ("boom", 3), ("c", 4)] {
        server.send(WatchEvent::Added(obj(name, rv).into()));
    }
    eventually("three events", || seen.lock().unwrap().len() >= 3).await;
    assert_eq!(*seen.lock().unwrap(), ["add a (initial)", "add b", "add c"]);
    assert_eq!(reg.panics(), 1);
    assert_eq!(reg.delivered(), 4);
    assert!(reg.has_synced());
    cancel.cancel();
    task.await.unwrap();
    assert!(inf.shared.dispatch.lock().tasks.is_empty(), "the task was awaited");
}

#[test]
fn an_async_handler_needs_a_runtime() {
    let inf = SharedInformer::with_list_watch(FakeServer::default(), resource(), options());
    let err = inf.add_async_handler(|_e: Event| async {}).unwrap_err();
    assert!(matches!(err, InformerError::NoRuntime { .. }), "{err}");
    assert!(err.to_string().contains("tokio runtime"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coalescing_handler_sees_the_latest_state_with_a_bounded_backlog() {
    let names: Vec<String> = (0..10).map(|i| format!("o{i}")).collect();
    let server = FakeServer::with_list(names.iter().map(|n| obj(n, 1)).collect());
    let inf = informer(&server, options());
    let gate = Gate::default();
    let seen: Arc<StdMutex<HashMap<String, Vec<String>>>> = Arc::default();
    let reg = {
        let (gate, seen) = (gate.clone(), seen.clone());
        inf.add_handler_with(
            move |e: Event| {
                gate.wait();
                let o = e.object();
                let state = match &e {
                    Event::Delete { .. } => "deleted".to_owned(),
                    _ => o.resource_version().unwrap().to_owned(),
                };
                seen.lock()
                    .unwrap()
                    .entry(o.name().unwrap().to_owned())
                    .or_default()
                    .push(state);
            },
            HandlerOptions::default().coalesce(true),
        )
    };
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    inf.wait_for_sync(Duration::from_secs(10)).await.unwrap();
    eventually("watch open", || server.watches() == 1).await;
    let mut rv = 10;
    for _ in 0..100 {
        for n in &names {
            rv += 1;
            server.send(WatchEvent::Modified(obj(n, rv).into()));
        }
    }
    server.send(WatchEvent::Deleted(obj("o9", rv + 1).into()));
    eventually("the cache took every event", || {
        inf.synced_resource_version() == Some((rv + 1).to_string())
    })
    .await;
    // 1,001 events sent; the handler holds one turn, the queue one entry
    // per object.
    assert!(reg.backlog() <= 10 + 11, "backlog {}", reg.backlog());
    gate.open();
    eventually("drained", || reg.backlog() == 0).await;
    let seen = seen.lock().unwrap();
    for (i, n) in names.iter().enumerate() {
        let states = &seen[n];
        let last = states.last().unwrap();
        if n == "o9" {
            assert_eq!(last, "deleted");
        } else {
            assert_eq!(*last, (10 + 990 + i + 1).to_string(), "{n}: {states:?}");
        }
        let rvs: Vec<u64> = states.iter().filter_map(|s| s.parse().ok()).collect();
        assert!(rvs.windows(2).all(|w| w[0] < w[1]), "{n} went back: {states:?}");
    }
    cancel.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relist_is_in_the_store_before_its_events_reach_handlers() {
    let server = FakeServer::with_list(vec![obj("a", 1), obj("b", 1), obj("c", 1)]);
    let inf = informer(&server, options());
    let store = inf.store();
    let views = Arc::new(StdMutex::new(Vec::new()));
    let reg = {
        let views = views.clone();
        inf.add_handler(move |e: Event| {
            if matches!(e, Event::Add { in_initial_list: true, .. }) {
                return;
            }
            let mut keys: Vec<String> = store
                .list_all()
                .iter()
                .map(|o| format!("{}:{}", o.name().unwrap(), o.resource_version().unwrap()))
                .collect();
            keys.sort();
            views.lock().unwrap().push((describe(&e), keys.join(",")));
        })
    };
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    inf.wait_for_sync(Duration::from_secs(10)).await.unwrap();
    eventually("watch open", || server.watches() == 1).await;
    server.queue_list(vec![obj("a", 2), obj("c", 1), obj("d", 2)]);
    server.expire();
    eventually("the relist's three events", || views.lock().unwrap().len() >= 3).await;
    let views = views.lock().unwrap();
    let events: Vec<&str> = views.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(events, ["add d", "update a 1->2", "delete b (tombstone)"]);
    for (event, seen) in views.iter() {
        assert_eq!(seen, "a:2,c:1,d:2", "what {event} found in the store");
    }
    drop(reg);
    cancel.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_silent_watch_is_reported_stale_until_something_arrives() {
    let server = FakeServer::with_list(vec![obj("a", 1)]);
    let inf = informer(&server, options().stale_after(Duration::from_secs(60)));
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    inf.wait_for_sync(Duration::from_secs(1)).await.unwrap();
    eventually("watch open", || server.watches() == 1).await;
    tokio::time::sleep(Duration::from_secs(50)).await;
    assert_eq!(inf.status(), InformerStatus::Synced);
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(
        matches!(inf.status(), InformerStatus::Stale { silent_for } if silent_for >= Duration::from_secs(60)),
        "{:?}",
        inf.status()
    );
    assert!(inf.status().is_synced());
    server.send(WatchEvent::Bookmark {
        resource_version: "50".into(),
        initial_events_end: false,
    });
    eventually("fresh again", || inf.status() == InformerStatus::Synced).await;
    assert_eq!(inf.synced_resource_version().as_deref(), Some("50"));
    cancel.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_follows_the_resource_version_and_waits_for_one() {
    let server = FakeServer::with_list(vec![obj("a", 1)]);
    let inf = informer(&server, options());
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    inf.wait_for_sync(Duration::from_secs(10)).await.unwrap();
    eventually("watch open", || server.watches() == 1).await;
    assert_eq!(inf.synced_resource_version().as_deref(), Some("0"), "the list's");

    let waiter = {
        let inf = inf.clone();
        tokio::spawn(async move {
            inf.wait_for_resource_version("7", Duration::from_secs(10))
                .await
                .map(|()| inf.store().get("ns/b").is_some())
        })
    };
    server.send(WatchEvent::Modified(obj("a", 5).into()));
    eventually("rv 5", || inf.synced_resource_version().as_deref() == Some("5")).await;
    assert!(!waiter.is_finished());
    server.send(WatchEvent::Added(obj("b", 7).into()));
    assert!(waiter.await.unwrap().unwrap(), "b was in the cache when the wait ended");
    inf.wait_for_resource_version("6", Duration::ZERO).await.unwrap();

    let err = inf
        .wait_for_resource_version("100", Duration::from_millis(50))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, InformerError::WaitTimedOut { synced_to, .. } if synced_to == "7"),
        "{err}"
    );
    let err = inf
        .wait_for_resource_version("abc", Duration::from_secs(10))
        .await
        .unwrap_err();
    assert!(matches!(err, InformerError::Incomparable { .. }), "{err}");
    let mut other = obj("x", 9);
    other.types.as_mut().unwrap().kind = "Gadget".into();
    let err = inf
        .wait_for_object(&other, Duration::from_secs(10))
        .await
        .unwrap_err();
    assert!(matches!(err, InformerError::OtherResource { .. }), "{err}");
    inf.wait_for_object(&obj("b", 7), Duration::ZERO).await.unwrap();

    // A relist that does not end: the wait says so.
    server.expire();
    eventually("relisting", || inf.store().sync_point().relisting).await;
    let err = inf
        .wait_for_resource_version("8", Duration::from_millis(50))
        .await
        .unwrap_err();
    assert!(matches!(err, InformerError::RelistInProgress { .. }), "{err}");
    assert!(err.to_string().contains("relist"), "{err}");
    cancel.cancel();
}

/// A shard source of the test's own, with a hand-over.
struct HandingOver {
    ranges: tokio::sync::watch::Sender<Option<Vec<crate::vocabulary::ShardRange>>>,
    handover: crate::vocabulary::Handover,
}

impl crate::vocabulary::ShardSource for HandingOver {
    fn identity(&self) -> String {
        "test source".into()
    }
    fn ranges(&self) -> tokio::sync::watch::Receiver<Option<Vec<crate::vocabulary::ShardRange>>> {
        self.ranges.subscribe()
    }
    fn describe(&self) -> String {
        "test source".into()
    }
    fn handover(&self) -> Option<crate::vocabulary::Handover> {
        Some(self.handover.clone())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_range_is_handed_over_once_every_handler_got_its_left_shard_deletes() {
    use crate::vocabulary::{ShardAssignment, ShardKey, ShardRange, ShardSelector};
    let objects: Vec<DynamicObject> = (0..12)
        .map(|i| {
            let mut o = obj(&format!("o{i}"), i + 1);
            o.metadata.uid = Some(format!("{i}-uid"));
            o
        })
        .collect();
    let (lower, upper) = (ShardRange::part(0, 2).unwrap(), ShardRange::part(1, 2).unwrap());
    let in_upper = ShardSelector::new(ShardKey::default(), [upper]);
    let leaving: Vec<String> = objects
        .iter()
        .filter(|o| in_upper.matches(o))
        .map(|o| o.metadata.name.clone().unwrap())
        .collect();
    assert!(!leaving.is_empty() && leaving.len() < objects.len(), "{leaving:?}");
    let server = FakeServer::with_list(objects.clone());
    server.queue_list(objects.clone());
    let source = HandingOver {
        ranges: tokio::sync::watch::Sender::new(None),
        handover: crate::vocabulary::Handover::default(),
    };
    source.handover.publish(&source.ranges, vec![lower, upper]);
    let handover = source.handover.clone();
    let publish = source.ranges.clone();
    let inf = informer(&server, options().shard_group(ShardAssignment::new(source)));
    let gate = Gate::default();
    let slow = gate.clone();
    inf.add_handler(move |e: Event| {
        if matches!(e, Event::Delete { .. }) {
            slow.wait();
        }
    });
    let rec = Recorder::default();
    inf.add_handler(rec.handler());
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    eventually("initial adds", || rec.len() == objects.len()).await;
    rec.take();

    // The source keeps the lower half only.
    handover.publish(&publish, vec![lower]);
    eventually("the upper half to leave the cache", || {
        inf.store().len() == objects.len() - leaving.len()
    })
    .await;
    eventually("the free handler's deletes", || rec.len() == leaving.len()).await;
    let soon = tokio::time::Instant::now() + Duration::from_millis(200);
    assert_eq!(
        handover.released(&[upper], soon).await,
        Err(1),
        "a handler has not had its deletes yet"
    );
    assert_eq!(handover.released(&[lower], soon).await, Err(1), "the lower half stays held");
    gate.open();
    let later = tokio::time::Instant::now() + Duration::from_secs(10);
    assert_eq!(handover.released(&[upper], later).await, Ok(()));
    let mut got = rec.take();
    got.sort();
    let mut want: Vec<String> = leaving.iter().map(|n| format!("delete {n}")).collect();
    want.sort();
    assert_eq!(got, want, "left the shard: deletes whose final state is known");
    cancel.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registration_can_be_awaited_until_its_handler_synced() {
    let server = FakeServer::with_list(vec![obj("a", 1), obj("b", 2)]);
    let inf = informer(&server, options());
    let gate = Gate::default();
    let slow = gate.clone();
    let reg = inf.add_handler(move |_e: Event| slow.wait());
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    inf.wait_for_sync(Duration::from_secs(10)).await.unwrap();
    // The cache synced; the handler, blocked, has not had its initial Adds.
    assert!(!reg.has_synced());
    gate.open();
    let synced = tokio::time::timeout(Duration::from_secs(10), reg.synced()).await;
    assert_eq!(synced, Ok(true));
    // A registration removed before it synced says so.
    let blocked = Gate::default();
    let stuck = blocked.clone();
    let late = inf.add_handler(move |_e: Event| stuck.wait());
    let state = late.state.clone();
    let waiting = tokio::spawn(async move {
        let late = Registration {
            state,
            informer: std::sync::Weak::new(),
        };
        late.synced().await
    });
    late.remove();
    let synced = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .unwrap()
        .unwrap();
    assert!(!synced, "removed before it synced");
    blocked.open();
    cancel.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jmespath_index_is_added_with_its_name_said_once() {
    let server = FakeServer::with_list(vec![obj("a", 1), obj("b", 2)]);
    let inf = informer(&server, options());
    inf.add_jmespath_index("app", "metadata.labels.app").unwrap();
    let err = inf.add_jmespath_index("bad", "metadata.(").unwrap_err();
    assert!(
        matches!(&err, InformerError::Index { source, .. } if matches!(**source, CacheError::ExpressionSyntax { .. })),
        "{err}"
    );
    let said = crate::vocabulary::error_chain(&err);
    assert!(said.contains(r#"index "bad""#), "{said}");
    let err = inf.add_jmespath_index("app", "spec.n").unwrap_err();
    assert!(
        matches!(&err, InformerError::Index { source, .. } if matches!(**source, CacheError::DuplicateIndex { .. })),
        "a duplicate name: {err}"
    );
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    inf.wait_for_sync(Duration::from_secs(10)).await.unwrap();
    assert_eq!(inf.store().by_index("app", "a").unwrap().len(), 1);
    cancel.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_reaches_every_handler_once_whenever_it_registers() {
    let dir = std::env::temp_dir().join(format!(
        "kdi-cases-snapshot-{:?}-{}",
        STORAGE,
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let snapshot_options =
        || options().snapshot(SnapshotOptions::new(&dir).cluster("test").interval(Duration::ZERO));
    // A first run lists 3,000 objects and writes them when it stops.
    let first = FakeServer::with_list((0..3000).map(|i| obj(&format!("o{i}"), i)).collect());
    let inf = informer(&first, snapshot_options());
    let cancel = CancellationToken::new();
    let task = inf.start(cancel.clone()).unwrap();
    inf.wait_for_sync(Duration::from_secs(10)).await.unwrap();
    cancel.cancel();
    task.await.unwrap();

    // The second resumes (its server has no list to give) while handlers
    // register before it starts, while it reads the snapshot, and after.
    let second = FakeServer::default();
    let inf = informer(&second, snapshot_options());
    let mut recorders = vec![Recorder::default()];
    let mut registrations = vec![inf.add_handler(recorders[0].handler())];
    let cancel = CancellationToken::new();
    let task = inf.start(cancel.clone()).unwrap();
    // Mid-load: once the cache holds part of the snapshot.
    let store = inf.store();
    eventually("part of the snapshot in the cache", || !store.is_empty()).await;
    for _ in 0..2 {
        let recorder = Recorder::default();
        registrations.push(inf.add_handler(recorder.handler()));
        recorders.push(recorder);
    }
    inf.wait_for_sync(Duration::from_secs(10)).await.unwrap();
    let recorder = Recorder::default();
    registrations.push(inf.add_handler(recorder.handler()));
    recorders.push(recorder);
    assert_eq!(second.list_calls.load(Ordering::SeqCst), 0);
    eventually("watch open", || second.watches() == 1).await;
    second.send(WatchEvent::Modified(obj("o7", 5000).into()));
    let want: Vec<String> = (0..3000)
        .map(|i| format!("add o{i} (initial)"))
        .chain(["update o7 7->5000".to_owned()])
        .collect();
    for (recorder, registration) in recorders.iter().zip(&registrations) {
        eventually("the handler has every event", || recorder.len() >= want.len()).await;
        eventually("the registration synced", || registration.has_synced()).await;
        let mut got = recorder.take();
        let update = got.pop();
        got.sort_by_key(|e| e.trim_start_matches("add o").split(' ').next().and_then(|n| n.parse::<u32>().ok()));
        got.extend(update);
        assert_eq!(got, want);
    }
    cancel.cancel();
    task.await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_without_end_is_no_deadline() {
    let server = FakeServer::with_list(vec![obj("a", 1)]);
    let inf = informer(&server, options());
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    // Duration::MAX cannot be added to now: it means no deadline.
    inf.wait_for_sync(Duration::MAX).await.unwrap();
    inf.wait_for_sync_with(Duration::MAX, SyncPolicy::GiveUpWhenRefused)
        .await
        .unwrap();
    cancel.cancel();
}

/// A Widget of `tier` whose spec holds `n`.
fn tiered(name: &str, rv: u64, tier: &str, n: u64) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": { "name": name, "namespace": "ns", "resourceVersion": rv.to_string(),
                      "labels": { "tier": tier } },
        "spec": { "n": n }
    }))
    .unwrap()
}

fn web_spec_changes() -> HandlerOptions {
    HandlerOptions::default()
        .filter(crate::cache::Condition::new("metadata.labels.tier == 'web'").unwrap())
        .changes(crate::cache::ChangePredicate::spec())
}

/// A handler with a filter and a change predicate sees the cache through
/// them: objects entering and leaving as adds and deletes, status-like
/// updates dropped, a relist's tombstones only of what it had, a late
/// handler's replay only of what matches; the unfiltered handler beside it
/// sees everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filtered_handler_sees_the_cache_through_its_filter_across_a_relist() {
    let server = FakeServer::with_list(vec![
        tiered("a", 1, "web", 1),
        tiered("b", 2, "db", 1),
        tiered("c", 3, "web", 1),
    ]);
    let inf = informer(&server, options());
    let (all, web) = (Recorder::default(), Recorder::default());
    inf.add_handler(all.handler());
    let filtered = inf.add_handler_with(web.handler(), web_spec_changes().name("web"));
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    inf.wait_for_sync(Duration::from_secs(10)).await.unwrap();
    eventually("watch open", || server.watches() == 1).await;
    server.send(WatchEvent::Modified(tiered("b", 4, "web", 1).into()));
    server.send(WatchEvent::Modified(tiered("c", 5, "db", 1).into()));
    server.send(WatchEvent::Modified(tiered("a", 6, "web", 1).into()));
    server.send(WatchEvent::Modified(tiered("a", 7, "web", 2).into()));
    server.send(WatchEvent::Modified(tiered("c", 8, "db", 2).into()));
    eventually("the watch's events", || all.len() == 8).await;
    eventually("the filtered ones", || web.len() == 5).await;
    assert_eq!(
        web.take(),
        [
            "add a (initial)",
            "add c (initial)",
            "add b (entered)",
            "delete c (left)",
            "update a 6->7",
        ]
    );
    // A compact cache keeps a digest of `spec` in what it writes once a
    // handler's change predicate watches it (the update 5->6 was told
    // apart by them); a cache of decoded objects has no need of them.
    let a = inf.store().get("ns/a").expect("a cached");
    assert_eq!(
        a.compact().and_then(|a| a.same_field(a, "spec")),
        (STORAGE == crate::informer::options::Storage::Compact).then_some(true)
    );
    // 410: the relist finds a gone, b no longer web, c web again (with a
    // new spec), d new and web, e new and not.
    server.queue_list(vec![
        tiered("b", 9, "db", 1),
        tiered("c", 10, "web", 3),
        tiered("d", 11, "web", 1),
        tiered("e", 12, "db", 1),
    ]);
    server.expire();
    eventually("the relist's events", || all.len() == 8 + 5).await;
    eventually("the filtered ones", || web.len() == 4).await;
    let mut relisted = web.take();
    relisted.sort();
    assert_eq!(
        relisted,
        [
            "add c (entered)",
            "add d",
            "delete a (tombstone)",
            "delete b (left)",
        ]
    );
    // A late handler with the same filter gets what matches now.
    let late = Recorder::default();
    let late_registration = inf.add_handler_with(late.handler(), web_spec_changes());
    eventually("the late replay", || late.len() == 2).await;
    let mut replayed = late.take();
    replayed.sort();
    assert_eq!(replayed, ["add c (initial)", "add d (initial)"]);
    eventually("the late handler synced", || late_registration.has_synced()).await;
    // Held back: b's initial add, a's update that left spec as it was,
    // c's while it was not web, e's add; the late handler's replay of b
    // and e.
    assert_eq!(filtered.filtered(), 4);
    assert_eq!(late_registration.filtered(), 2);
    cancel.cancel();
}

/// client-go's `NewInformer` with a filtering handler: the non-shared
/// informer's one handler, called in place, sees its cache through a
/// filter and a change predicate as a shared informer's handlers do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_shared_informer_handler_sees_the_cache_through_its_filter() {
    let server = FakeServer::with_list(vec![tiered("a", 1, "web", 1), tiered("b", 2, "db", 1)]);
    let web = Recorder::default();
    let inf = Arc::new(
        Informer::with_list_watch(server.clone(), resource(), options(), web.handler())
            .handler_options(web_spec_changes()),
    );
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (inf, cancel) = (inf.clone(), cancel.clone());
        async move { inf.run(cancel).await }
    });
    eventually("watch open", || server.watches() == 1).await;
    server.send(WatchEvent::Modified(tiered("a", 3, "web", 1).into()));
    server.send(WatchEvent::Modified(tiered("b", 4, "web", 1).into()));
    server.send(WatchEvent::Modified(tiered("a", 5, "db", 1).into()));
    server.send(WatchEvent::Modified(tiered("b", 6, "web", 2).into()));
    eventually("the cache at b's last version", || {
        inf.store()
            .get("ns/b")
            .is_some_and(|b| b.resource_version() == Some("6"))
    })
    .await;
    eventually("the filtered events", || web.len() >= 4).await;
    assert_eq!(
        web.take(),
        [
            "add a (initial)",
            "add b (entered)",
            "delete a (left)",
            "update b 4->6",
        ]
    );
    assert_eq!(inf.store().len(), 2, "the cache is not filtered");
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_filtered_stream_is_resynced_what_meets_its_filter_whatever_changed() {
    let server = FakeServer::with_list(vec![tiered("a", 1, "web", 1), tiered("b", 2, "db", 1)]);
    let inf = informer(&server, options().resync(Duration::from_secs(10)));
    let mut web = inf.events_with(web_spec_changes());
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    inf.wait_for_sync(Duration::from_secs(1)).await.unwrap();
    assert_eq!(drain(&mut web), ["add a (initial)"]);
    tokio::time::sleep(Duration::from_millis(10_500)).await;
    assert_eq!(drain(&mut web), ["resync a"]);
    cancel.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filter_added_to_a_running_informer_takes_each_cached_objects_verdict_once() {
    let server = FakeServer::with_list(vec![
        tiered("a", 1, "web", 1),
        tiered("b", 2, "db", 1),
    ]);
    let inf = informer(&server, options());
    let cancel = CancellationToken::new();
    inf.start(cancel.clone()).unwrap();
    inf.wait_for_sync(Duration::from_secs(10)).await.unwrap();
    eventually("watch open", || server.watches() == 1).await;
    let mistakes: Arc<StdMutex<Vec<String>>> = Arc::default();
    let said = mistakes.clone();
    let web = Recorder::default();
    let registration = inf.add_handler_with(
        web.handler(),
        HandlerOptions::default()
            .filter(crate::cache::Condition::new("metadata.labels.tier").unwrap())
            .on_mistake(move |m| said.lock().unwrap().push(m.key.clone())),
    );
    eventually("synced", || registration.has_synced()).await;
    assert_eq!(web.len(), 0, "a string is not true");
    let mut said = mistakes.lock().unwrap().clone();
    said.sort();
    assert_eq!(said, ["ns/a", "ns/b"]);
    // Said once per object: another change of a is not said again.
    server.send(WatchEvent::Modified(tiered("a", 3, "web", 2).into()));
    server.send(WatchEvent::Added(tiered("c", 4, "web", 2).into()));
    eventually("c said", || mistakes.lock().unwrap().len() == 3).await;
    // The replay of a and b, a's update, c's add.
    assert_eq!(registration.filtered(), 4);
    cancel.cancel();
}

/// Objects handed on as JSON text (as the API server's list-watch hands
/// them on; with compact storage the cache builds its form straight from
/// the text): cached as their decoded form says, indexed, and skipped when
/// they do not decode, are of another kind or have no name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_sent_as_json_are_cached_as_they_decode_or_skipped() {
    let server = FakeServer::with_list(vec![obj("a", 1)]);
    let (inf, rec, cancel) = synced_with_index_n(&server).await;
    eventually("watch open", || server.watches() == 1).await;
    let sent = |json: &str| WireObject::from_json(json.to_owned());
    let widget = r#""apiVersion":"example.com/v1","kind":"Widget""#;
    // Keys in any order; `spec` given twice (the last one counts, as
    // serde_json decodes it).
    server.send(WatchEvent::Added(sent(&format!(
        r#"{{"spec":{{"n":7,"m":[1]}},"metadata":{{"resourceVersion":"2","namespace":"ns","name":"b"}},{widget}}}"#
    ))));
    server.send(WatchEvent::Added(sent(&format!(
        r#"{{{widget},"metadata":{{"name":"c","namespace":"ns","resourceVersion":"3"}},"spec":{{"n":1}},"spec":{{"n":8}}}}"#
    ))));
    // A label that is no string, another kind, no name.
    server.send(WatchEvent::Added(sent(&format!(
        r#"{{{widget},"metadata":{{"name":"bad","namespace":"ns","labels":{{"x":1}},"resourceVersion":"4"}}}}"#
    ))));
    server.send(WatchEvent::Added(sent(
        r#"{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g","namespace":"ns","resourceVersion":"5"}}"#,
    )));
    server.send(WatchEvent::Added(sent(&format!(
        r#"{{{widget},"metadata":{{"namespace":"ns","resourceVersion":"6"}}}}"#
    ))));
    // A delete that does not decode still takes its key out.
    server.send(WatchEvent::Deleted(sent(&format!(
        r#"{{{widget},"metadata":{{"name":"a","namespace":"ns","resourceVersion":"7","generation":"x"}}}}"#
    ))));
    eventually("a deleted", || inf.store().get("ns/a").is_none()).await;
    assert_eq!(
        rec.take(),
        ["add a (initial)", "add b", "add c", "delete a"]
    );
    let b = inf.store().get("ns/b").unwrap().object();
    assert_eq!(b.data["spec"], json!({ "m": [1], "n": 7 }));
    assert_eq!(b.metadata.resource_version.as_deref(), Some("2"));
    assert_eq!(
        inf.store().get("ns/c").unwrap().object().data["spec"],
        json!({ "n": 8 })
    );
    assert_eq!(inf.store().index_keys("n", "7").unwrap(), ["ns/b"]);
    assert_eq!(inf.store().index_keys("n", "8").unwrap(), ["ns/c"]);
    assert_eq!(inf.store().len(), 2);
    assert_eq!(inf.stats().counters().skipped_objects, 4);
    cancel.cancel();
}
