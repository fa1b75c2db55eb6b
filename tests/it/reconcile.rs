//! Reconcilers against a real kube-apiserver: four workers converge on
//! 200 objects of a CRD named at run time under a stream of updates without
//! ever holding one key twice; a relist after 410 reconciles what the
//! watch missed (deletions as absent objects); a reconcile function that
//! panics for one key is retried with backoff while the others flow;
//! `RequeueAfter` brings a key back no sooner than asked; an event on an
//! owned object queues its owner; a resource set's members are followed
//! as CRDs come and go.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, PodTemplate};
use kube_client::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kube_dynamic_informer::InformerFactory;
use kube_dynamic_informer::cache::ChangePredicate;
use kube_dynamic_informer::informer::HandlerOptions;
use kube_dynamic_informer::reconcile::{
    Action, Context, Controller, ItemExponentialBackoff, ObjectRef, OwnsOptions,
};
use serde_json::json;

use crate::support::{self, wait_for};

/// One call of a reconcile function, as it saw things.
#[derive(Clone, Debug)]
struct Call {
    key: ObjectRef,
    /// Whether the object was cached when the key was handed out.
    exists: bool,
    /// What the test reads from the object (a spec value, a label).
    seen: Option<String>,
    retries: u32,
    started: Instant,
}

#[derive(Default)]
struct Book {
    calls: Vec<Call>,
    in_flight: HashSet<ObjectRef>,
    /// Keys handed to a worker while another held them.
    overlaps: Vec<ObjectRef>,
    most_in_flight: usize,
}

/// What the reconcile functions under test did, and whether two workers
/// ever held one key at once.
#[derive(Clone, Default)]
struct Calls(Arc<Mutex<Book>>);

/// A key held by a worker: released when dropped, a panic's unwinding
/// included.
struct Held(Calls, ObjectRef);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.0.lock().unwrap().in_flight.remove(&self.1);
    }
}

impl Calls {
    /// Records the call of `ctx` (what it sees: `seen`), and holds its key
    /// until the returned guard drops.
    fn enter(&self, ctx: &Context, seen: Option<String>) -> Held {
        let key = ctx.key().clone();
        let mut book = self.0.lock().unwrap();
        if !book.in_flight.insert(key.clone()) {
            book.overlaps.push(key.clone());
        }
        book.most_in_flight = book.most_in_flight.max(book.in_flight.len());
        book.calls.push(Call {
            key: key.clone(),
            exists: ctx.object().is_some(),
            seen,
            retries: ctx.retries(),
            started: Instant::now(),
        });
        Held(self.clone(), key)
    }

    fn calls(&self) -> Vec<Call> {
        self.0.lock().unwrap().calls.clone()
    }

    fn of(&self, name: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.key.name == name)
            .collect()
    }

    /// Waits until a call of `name` satisfies `test`.
    async fn until(&self, what: &str, name: &str, test: impl Fn(&Call) -> bool) -> Call {
        wait_for(what, Duration::from_secs(60), || async {
            let calls = self.of(name);
            calls
                .iter()
                .find(|c| test(c))
                .cloned()
                .ok_or_else(|| format!("calls of {name}: {calls:?}"))
        })
        .await
    }

    fn overlaps(&self) -> Vec<ObjectRef> {
        self.0.lock().unwrap().overlaps.clone()
    }

    fn most_in_flight(&self) -> usize {
        self.0.lock().unwrap().most_in_flight
    }
}

/// A JSON value of a cached object at `pointer`, as text.
fn read(ctx: &Context, pointer: &str) -> Option<String> {
    let value = ctx.object()?.pointer(pointer)?;
    serde_json::to_string(&value).ok()
}

fn label(ctx: &Context, name: &str) -> Option<String> {
    ctx.object()?.labels().get(name).map(str::to_owned)
}

/// A ConfigMap `name` with `data`, labelled `app=rec`.
fn config_map(name: &str, data: serde_json::Value) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": { "name": name, "labels": { "app": "rec" } },
        "data": data,
    }))
    .unwrap()
}

/// Starts `controller` with `reconcile` on a task; the returned closure
/// stops it and waits for it (failing the test if it failed).
fn run<F, Fut>(controller: Controller, reconcile: F) -> impl AsyncFnOnce()
where
    F: Fn(Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, kube_client::Error>> + Send + 'static,
{
    let shutdown = controller.shutdown_handle();
    let task = tokio::spawn(controller.run(reconcile));
    async move || {
        shutdown.shut_down();
        tokio::time::timeout(Duration::from_secs(30), task)
            .await
            .expect("the controller stops within 30s")
            .expect("the controller's task")
            .expect("the controller ran");
    }
}

/// 200 Widgets of a CRD named at run time; a reconciler with 4 workers
/// writes `status.observedValue = spec.value` (through the status
/// subresource) while a writer makes 3,000 spec updates at up to 1,000 a
/// second. At the end every Widget's status equals its last spec, and no
/// key was ever held by two workers at once (while several keys were).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_workers_converge_on_200_widgets_under_a_thousand_updates_a_second_never_two_on_one_key()
 {
    const OBJECTS: usize = 200;
    const UPDATES: usize = 3_000;
    let client = support::admin().await;
    let ns = support::namespace(&client, "rec-load").await;
    let group = support::unique_group();
    let ar = support::install_crd(&client, &support::widget_crd(&group)).await;
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);
    let names: Vec<String> = (0..OBJECTS).map(|i| format!("w-{i:03}")).collect();
    let widgets: Vec<DynamicObject> = names
        .iter()
        .map(|n| support::widget(&ar, n, json!({ "value": 0 })))
        .collect();
    support::create_many(&api, widgets, 16).await;

    let factory = InformerFactory::with_options(client.clone(), support::options().namespace(&ns));
    // By name, as a program that reads it from its arguments.
    let widgets = factory
        .for_resource(format!("widgets.{group}").as_str())
        .await
        .unwrap();
    factory.start().unwrap();
    factory
        .wait_for_cache_sync(Duration::from_secs(60))
        .await
        .into_result()
        .unwrap();

    let calls = Calls::default();
    // Status writes leave the generation as it is: they queue nothing.
    let spec_changes = HandlerOptions::default().changes(ChangePredicate::generation());
    // No client given: the status writes go through the factory's.
    let controller = Controller::new("rec-load")
        .workers(4)
        .watch_with(&widgets, spec_changes);
    let book = calls.clone();
    let stop = run(controller, move |ctx: Context| {
        let book = book.clone();
        async move {
            let value = read(&ctx, "/spec/value");
            let _held = book.enter(&ctx, value.clone());
            let observed = read(&ctx, "/status/observedValue");
            let (Some(value), Some(resource)) = (value, ctx.handle().api_resource()) else {
                return Ok(Action::Done);
            };
            if observed.as_ref() != Some(&value) {
                let ns = ctx.key().namespace.as_deref().unwrap_or_default();
                let api = Api::<DynamicObject>::namespaced_with(ctx.client(), ns, &resource);
                let value: serde_json::Value = serde_json::from_str(&value).unwrap();
                let status = json!({ "status": { "observedValue": value } });
                api.patch_status(
                    &ctx.key().name,
                    &PatchParams::default(),
                    &Patch::Merge(status),
                )
                .await?;
            }
            Ok(Action::Done)
        }
    });

    // The writer: update k sets spec.value of object k % 200 to k / 200 + 1,
    // each no sooner than k milliseconds after the start.
    let started = Instant::now();
    let start = tokio::time::Instant::now();
    let written = futures::stream::iter(0..UPDATES)
        .map(|k| {
            let api = api.clone();
            let name = names[k % OBJECTS].clone();
            async move {
                tokio::time::sleep_until(start + Duration::from_millis(k as u64)).await;
                let patch = Patch::Merge(json!({ "spec": { "value": k / OBJECTS + 1 } }));
                api.patch(&name, &PatchParams::default(), &patch).await
            }
        })
        .buffer_unordered(64)
        .filter(|r| futures::future::ready(r.is_ok()))
        .count()
        .await;
    let writing = started.elapsed();
    assert_eq!(written, UPDATES, "every update was written");

    let converged = wait_for(
        "every widget's status to equal its spec",
        Duration::from_secs(120),
        || async {
            let list = api
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?;
            let behind: Vec<String> = list
                .items
                .iter()
                .filter(|o| o.data["status"]["observedValue"] != o.data["spec"]["value"])
                .map(|o| o.metadata.name.clone().unwrap_or_default())
                .collect();
            if behind.is_empty() && list.items.len() == OBJECTS {
                Ok(list)
            } else {
                Err(format!(
                    "{} of {} behind: {behind:?}",
                    behind.len(),
                    list.items.len()
                ))
            }
        },
    )
    .await;
    let caught_up = started.elapsed() - writing;
    // Every widget's last value (the one its status holds) was read by a
    // reconcile, after the write that made it.
    let last_seen: BTreeMap<String, Option<String>> = calls
        .calls()
        .into_iter()
        .map(|c| (c.key.name.clone(), c.seen))
        .collect();
    for o in &converged.items {
        let name = o.metadata.name.clone().unwrap();
        assert_eq!(
            last_seen.get(&name).cloned().flatten(),
            Some(o.data["spec"]["value"].to_string()),
            "the last reconcile of {name} saw its last spec"
        );
    }
    stop().await;
    assert_eq!(
        calls.overlaps(),
        Vec::<ObjectRef>::new(),
        "keys held by two workers at once"
    );
    assert!(
        calls.most_in_flight() >= 2,
        "the four workers never held two keys at once: nothing was tested"
    );
    eprintln!(
        "reconcile under load: {UPDATES} updates of {OBJECTS} widgets in {writing:.1?} ({:.0}/s); \
         {} reconciles, at most {} at once; converged {caught_up:.1?} after the last write",
        UPDATES as f64 / writing.as_secs_f64(),
        calls.calls().len(),
        calls.most_in_flight()
    );
    factory.shutdown().await;
}

/// While the reconciler's informer is cut off from the server, a template
/// changes, one is deleted and one created, and etcd compacts past what
/// the informer last saw: reconnected, its watch gets 410, it lists again,
/// and the reconciler is handed each key the watch missed — the deleted one
/// with no object — and goes on reconciling later changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relist_after_410_reconciles_what_the_watch_missed_deletions_as_absent_objects() {
    if !support::is_testenv() {
        eprintln!("skipped: needs testenv's short compaction and uncached podtemplates");
        return;
    }
    let client = support::admin().await;
    let ns = support::namespace(&client, "rec-relist").await;
    let api = Api::<PodTemplate>::namespaced(client.clone(), &ns);
    for name in ["keep", "change", "vanish"] {
        api.create(&PostParams::default(), &support::pod_template(name))
            .await
            .unwrap();
    }
    let mut config = support::config(support::User::Admin).await;
    let proxy = support::proxy::Proxy::start(crate::reliability::server_addr(&config)).await;
    config.cluster_url = proxy.url().parse().unwrap();
    let through_proxy = kube_client::Client::try_from(config).unwrap();
    let options = support::options()
        .namespace(&ns)
        .backoff(crate::reliability::quick_backoff());
    let factory = InformerFactory::with_options(through_proxy.clone(), options);
    let templates = factory.for_resource("podtemplates").await.unwrap();
    factory.start().unwrap();

    let calls = Calls::default();
    let controller = Controller::new("rec-relist")
        .workers(2)
        .client(through_proxy)
        .watch(&templates);
    let book = calls.clone();
    let stop = run(controller, move |ctx: Context| {
        let book = book.clone();
        async move {
            let _held = book.enter(&ctx, label(&ctx, "changed"));
            Ok(Action::Done)
        }
    });
    for name in ["keep", "change", "vanish"] {
        calls
            .until("the first reconciles", name, |c| c.exists)
            .await;
    }

    let last_seen = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    proxy.set_refusing(true);
    proxy.cut();
    let changed = Patch::Merge(json!({ "metadata": { "labels": { "changed": "yes" } } }));
    api.patch("change", &PatchParams::default(), &changed)
        .await
        .unwrap();
    api.delete("vanish", &DeleteParams::default())
        .await
        .unwrap();
    api.create(&PostParams::default(), &support::pod_template("new"))
        .await
        .unwrap();
    support::wait_until_compacted(&api, &last_seen).await;
    proxy.set_refusing(false);

    let stats = templates.informer().stats();
    wait_for("a relist after 410", Duration::from_secs(60), || async {
        match stats.relists_after_gone.load(Ordering::Relaxed) {
            0 => Err("no relist after 410 yet".to_string()),
            _ => Ok(()),
        }
    })
    .await;
    calls
        .until("the deleted template reconciled absent", "vanish", |c| {
            !c.exists
        })
        .await;
    calls
        .until("the changed template reconciled", "change", |c| {
            c.seen.as_deref() == Some("yes")
        })
        .await;
    calls
        .until("the new template reconciled", "new", |c| c.exists)
        .await;
    api.patch("keep", &PatchParams::default(), &changed)
        .await
        .unwrap();
    calls
        .until("a change after the relist reconciled", "keep", |c| {
            c.seen.as_deref() == Some("yes")
        })
        .await;
    assert_eq!(calls.overlaps(), Vec::<ObjectRef>::new());
    stop().await;
    factory.shutdown().await;
}

/// A reconcile function that panics for one ConfigMap: that key is handed
/// out again and again, each time after a longer wait (the limiter's
/// backoff, `retries` counting up), while changes to the others are
/// reconciled as they come; once it stops panicking its backoff is
/// forgotten.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_whose_reconcile_panics_is_retried_with_backoff_while_the_others_flow() {
    const BASE: Duration = Duration::from_millis(100);
    let client = support::admin().await;
    let ns = support::namespace(&client, "rec-panic").await;
    let api = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    let calm: Vec<String> = (0..5).map(|i| format!("calm-{i}")).collect();
    for name in calm.iter().map(String::as_str).chain(["bomb"]) {
        api.create(
            &PostParams::default(),
            &config_map(name, json!({ "round": "1" })),
        )
        .await
        .unwrap();
    }
    let factory = InformerFactory::with_options(client.clone(), support::options().namespace(&ns));
    let maps = factory.for_resource("configmaps").await.unwrap();
    factory.start().unwrap();

    let calls = Calls::default();
    let defused = Arc::new(AtomicBool::new(false));
    // When each failed attempt ended: the backoff counts from there.
    let failed_at: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let controller = Controller::new("rec-panic")
        .workers(2)
        .client(client.clone())
        .rate_limiter(ItemExponentialBackoff::new(BASE, Duration::from_secs(2)))
        .watch(&maps);
    let (book, fuse, failures) = (calls.clone(), defused.clone(), failed_at.clone());
    let stop = run(controller, move |ctx: Context| {
        let (book, fuse, failures) = (book.clone(), fuse.clone(), failures.clone());
        async move {
            let _held = book.enter(&ctx, read(&ctx, "/data/round"));
            if ctx.key().name == "bomb" && !fuse.load(Ordering::SeqCst) {
                failures.lock().unwrap().push(Instant::now());
                panic!("the bomb goes off (retry {})", ctx.retries());
            }
            Ok(Action::Done)
        }
    });

    wait_for(
        "three attempts at the bomb",
        Duration::from_secs(30),
        || async {
            match calls.of("bomb").len() {
                n if n >= 3 => Ok(()),
                n => Err(format!("{n} attempts")),
            }
        },
    )
    .await;
    for name in &calm {
        let round2 = Patch::Merge(json!({ "data": { "round": "2" } }));
        api.patch(name, &PatchParams::default(), &round2)
            .await
            .unwrap();
    }
    for name in &calm {
        calls
            .until("the others reconciled", name, |c| {
                c.seen.as_deref() == Some("\"2\"")
            })
            .await;
    }
    // Still failing while the others went through.
    let attempts_before = calls.of("bomb").len();
    defused.store(true, Ordering::SeqCst);
    let defused_at = Instant::now();
    let success = calls
        .until("the bomb reconciled once defused", "bomb", |c| {
            c.started > defused_at
        })
        .await;
    let attempts: Vec<Call> = calls.of("bomb");
    assert!(attempts_before >= 3, "{attempts:?}");
    let failures = failed_at.lock().unwrap().clone();
    for (i, attempt) in attempts.iter().enumerate().skip(1) {
        assert_eq!(attempt.retries as usize, i, "retries of attempt {i}");
        if attempt.started > defused_at {
            break;
        }
        // Only a lower bound: the i-th failure waits BASE * 2^(i-1), at most 2s.
        let backoff = (BASE * 2u32.pow(i as u32 - 1)).min(Duration::from_secs(2));
        let waited = attempt.started - failures[i - 1];
        assert!(
            waited >= backoff,
            "attempt {i} came {waited:?} after the failure, before {backoff:?}"
        );
    }
    assert!(success.exists);
    // Its backoff was forgotten: the next change comes with no retries.
    let round3 = Patch::Merge(json!({ "data": { "round": "3" } }));
    api.patch("bomb", &PatchParams::default(), &round3)
        .await
        .unwrap();
    let next = calls
        .until("the bomb's next change", "bomb", |c| {
            c.seen.as_deref() == Some("\"3\"")
        })
        .await;
    assert_eq!(next.retries, 0);
    assert_eq!(calls.overlaps(), Vec::<ObjectRef>::new());
    stop().await;
    factory.shutdown().await;
}

/// A reconcile that asks to be called again after 1 s is, with nothing
/// changed on the server, and no sooner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requeue_after_brings_the_key_back_no_sooner_than_asked() {
    const AFTER: Duration = Duration::from_secs(1);
    let client = support::admin().await;
    let ns = support::namespace(&client, "rec-after").await;
    let api = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    api.create(&PostParams::default(), &config_map("again", json!({})))
        .await
        .unwrap();
    let factory = InformerFactory::with_options(client.clone(), support::options().namespace(&ns));
    let maps = factory.for_resource("configmaps").await.unwrap();
    factory.start().unwrap();

    let calls = Calls::default();
    let returned: Arc<Mutex<Option<Instant>>> = Arc::default();
    let controller = Controller::new("rec-after")
        .client(client.clone())
        .watch(&maps);
    let (book, first_return) = (calls.clone(), returned.clone());
    let stop = run(controller, move |ctx: Context| {
        let (book, first_return) = (book.clone(), first_return.clone());
        async move {
            let _held = book.enter(
                &ctx,
                ctx.object()
                    .and_then(|o| o.resource_version().map(str::to_owned)),
            );
            let mut first = first_return.lock().unwrap();
            if first.is_some() {
                return Ok(Action::Done);
            }
            *first = Some(Instant::now());
            Ok(Action::RequeueAfter(AFTER))
        }
    });
    wait_for("the key back", Duration::from_secs(30), || async {
        match calls.of("again").len() {
            n if n >= 2 => Ok(()),
            n => Err(format!("{n} calls")),
        }
    })
    .await;
    let both = calls.of("again");
    let back_after = both[1].started - returned.lock().unwrap().unwrap();
    assert!(
        back_after >= AFTER,
        "back {back_after:?} after asking for {AFTER:?}"
    );
    assert_eq!(both[0].seen, both[1].seen, "nothing changed on the server");
    stop().await;
    factory.shutdown().await;
}

/// Widgets own ConfigMaps. With `owns`, an update of a ConfigMap whose
/// controller is Widget `a` reconciles `a` (its reconcile reads the
/// ConfigMap through the context's lister), one owned by `b` without being
/// its controller does not; with `owns_with(all_owners)`, both do. No
/// ConfigMap key is ever handed out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_on_an_owned_object_reconciles_its_owner() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "rec-owns").await;
    let group = support::unique_group();
    let ar = support::install_crd(&client, &support::widget_crd(&group)).await;
    let widgets_api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);
    let maps_api = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    for (name, controller) in [("a", true), ("b", false)] {
        let widget = widgets_api
            .create(
                &PostParams::default(),
                &support::widget(&ar, name, json!({})),
            )
            .await
            .unwrap();
        let mut map = config_map(&format!("{name}-config"), json!({ "round": "1" }));
        map.metadata.owner_references = Some(vec![
            serde_json::from_value(json!({
                "apiVersion": ar.api_version, "kind": ar.kind, "name": name,
                "uid": widget.metadata.uid.unwrap(), "controller": controller,
            }))
            .unwrap(),
        ]);
        maps_api.create(&PostParams::default(), &map).await.unwrap();
    }
    let factory = InformerFactory::with_options(client.clone(), support::options().namespace(&ns));
    let widgets = factory
        .for_resource(format!("widgets.{group}").as_str())
        .await
        .unwrap();
    let maps = factory.for_resource("configmaps").await.unwrap();
    factory.start().unwrap();
    // A widget reconciled before the ConfigMaps are cached would read no
    // round, and b's is not queued again by its ConfigMap's Add.
    factory
        .wait_for_cache_sync(Duration::from_secs(60))
        .await
        .into_result()
        .unwrap();

    /// The reconcile of a widget: records the round of the ConfigMaps it
    /// owns, read through the context's lister.
    fn reconciler(
        book: Calls,
        maps: kube_dynamic_informer::vocabulary::ResourceKey,
    ) -> impl Fn(Context) -> std::future::Ready<Result<Action, kube_client::Error>> + Send + Sync + 'static
    {
        move |ctx: Context| {
            let lister = ctx.lister(&maps).expect("the owned resource's lister");
            let owned = format!("{}-config", ctx.key().name);
            let round = lister
                .get(&format!(
                    "{}/{owned}",
                    ctx.key().namespace.as_deref().unwrap_or_default()
                ))
                .and_then(|m| serde_json::to_string(&m.pointer("/data/round")?).ok());
            let _held = book.enter(&ctx, round);
            std::future::ready(Ok(Action::Done))
        }
    }
    let (by_controller, by_any) = (Calls::default(), Calls::default());
    let stop_controller = run(
        Controller::new("rec-owns")
            .client(client.clone())
            .watch(&widgets)
            .owns(&maps),
        reconciler(by_controller.clone(), maps.resource()),
    );
    let stop_any = run(
        Controller::new("rec-owns-all")
            .client(client.clone())
            .watch(&widgets)
            .owns_with(&maps, OwnsOptions::default().all_owners(true)),
        reconciler(by_any.clone(), maps.resource()),
    );
    for calls in [&by_controller, &by_any] {
        for name in ["a", "b"] {
            calls
                .until("the first reconciles", name, |c| {
                    c.seen.as_deref() == Some("\"1\"")
                })
                .await;
        }
    }

    let round2 = Patch::Merge(json!({ "data": { "round": "2" } }));
    // b's first: had it been queued, it would come before a's.
    for name in ["b-config", "a-config"] {
        maps_api
            .patch(name, &PatchParams::default(), &round2)
            .await
            .unwrap();
    }
    let is_round2 = |c: &Call| c.seen.as_deref() == Some("\"2\"");
    by_controller
        .until("a reconciled for its ConfigMap", "a", is_round2)
        .await;
    by_any
        .until("a reconciled for its ConfigMap", "a", is_round2)
        .await;
    by_any
        .until("b reconciled for a ConfigMap it owns", "b", is_round2)
        .await;
    assert!(
        !by_controller.of("b").iter().any(is_round2),
        "b was reconciled for a ConfigMap it does not control: {:?}",
        by_controller.of("b")
    );
    for calls in [&by_controller, &by_any] {
        let kinds: HashSet<String> = calls
            .calls()
            .iter()
            .map(|c| c.key.resource.resource.clone())
            .collect();
        assert_eq!(kinds, HashSet::from(["widgets".to_owned()]));
        assert_eq!(calls.overlaps(), Vec::<ObjectRef>::new());
    }
    stop_controller().await;
    stop_any().await;
    factory.shutdown().await;
}

/// A reconciler of a resource set whose pattern selects CRDs of a group:
/// a CRD installed while it runs becomes a member, and its objects are
/// reconciled; when the CRD is deleted, its objects are reconciled as
/// absent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconciler_of_a_resource_set_follows_its_members_as_crds_come_and_go() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube_dynamic_informer::declarative::{InformerSet, PatternSpec, ResourceSet};
    use kube_dynamic_informer::factory::ResourcePattern;

    let admin = support::admin().await;
    let ns = support::namespace(&admin, "rec-set").await;
    let group = support::unique_group();
    let mut config = InformerSet {
        api_version: kube_dynamic_informer::declarative::API_VERSION.into(),
        kind: kube_dynamic_informer::declarative::KIND.into(),
        defaults: support::options(),
        informers: Vec::new(),
        patterns: Vec::new(),
        clusters: Default::default(),
        shard_group: None,
    };
    let mut spec = PatternSpec::new(
        "custom",
        ResourcePattern::default()
            .groups([group.clone()])
            .custom_resources(true),
    );
    spec.options = support::options().namespace(&ns);
    config.patterns.push(spec);
    let set = ResourceSet::new(admin.clone(), config).await.unwrap();
    set.start().unwrap();

    let calls = Calls::default();
    let book = calls.clone();
    let stop = run(
        Controller::new("rec-set").workers(2).watch_set(&set),
        move |ctx: Context| {
            let book = book.clone();
            async move {
                let _held = book.enter(&ctx, read(&ctx, "/spec/color"));
                Ok(Action::Done)
            }
        },
    );

    let crd = support::widget_crd(&group);
    let ar = support::install_crd(&admin, &crd).await;
    let api = Api::<DynamicObject>::namespaced_with(admin.clone(), &ns, &ar);
    for name in ["red", "blue"] {
        api.create(
            &PostParams::default(),
            &support::widget(&ar, name, json!({ "color": name })),
        )
        .await
        .unwrap();
    }
    for name in ["red", "blue"] {
        let call = calls
            .until("the new member's objects reconciled", name, |c| c.exists)
            .await;
        assert_eq!(call.key.resource.group, group);
        assert_eq!(call.seen, Some(format!("\"{name}\"")));
    }
    Api::<CustomResourceDefinition>::all(admin.clone())
        .delete(&format!("widgets.{group}"), &DeleteParams::default())
        .await
        .unwrap();
    for name in ["red", "blue"] {
        calls
            .until(
                "the objects of the deleted CRD reconciled absent",
                name,
                |c| !c.exists,
            )
            .await;
    }
    assert_eq!(calls.overlaps(), Vec::<ObjectRef>::new());
    stop().await;
    set.shutdown().await;
}

/// With `requeue_all_every`, every cached object is reconciled again and
/// again with nothing changed on the server; a drain then lets the
/// controller finish what it holds and return.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requeue_all_every_reconciles_every_cached_object_again_and_a_drain_ends_the_run() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "rec-every").await;
    let api = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    let names = ["one", "two", "three"];
    for name in names {
        api.create(&PostParams::default(), &config_map(name, json!({})))
            .await
            .unwrap();
    }
    let factory = InformerFactory::with_options(client.clone(), support::options().namespace(&ns));
    let maps = factory.for_resource("configmaps").await.unwrap();
    factory.start().unwrap();

    let calls = Calls::default();
    let controller = Controller::new("rec-every")
        .workers(2)
        .client(client.clone())
        .requeue_all_every(Duration::from_millis(500))
        .watch(&maps);
    let shutdown = controller.shutdown_handle();
    let book = calls.clone();
    let task = tokio::spawn(controller.run(move |ctx: Context| {
        let book = book.clone();
        async move {
            let version = ctx
                .object()
                .and_then(|o| o.resource_version().map(str::to_owned));
            let _held = book.enter(&ctx, version);
            Ok::<_, kube_client::Error>(Action::Done)
        }
    }));
    wait_for(
        "three reconciles of each",
        Duration::from_secs(30),
        || async {
            let counts: Vec<usize> = names.iter().map(|n| calls.of(n).len()).collect();
            if counts.iter().all(|&n| n >= 3) {
                Ok(())
            } else {
                Err(format!("reconciles of {names:?}: {counts:?}"))
            }
        },
    )
    .await;
    for name in names {
        let seen: HashSet<Option<String>> = calls.of(name).into_iter().map(|c| c.seen).collect();
        assert_eq!(seen.len(), 1, "{name} changed: {seen:?}");
    }
    tokio::time::timeout(Duration::from_secs(30), shutdown.shut_down_with_drain())
        .await
        .expect("the drain ends");
    assert!(shutdown.has_ended());
    task.await.unwrap().unwrap();
    assert_eq!(calls.overlaps(), Vec::<ObjectRef>::new());
    factory.shutdown().await;
}
