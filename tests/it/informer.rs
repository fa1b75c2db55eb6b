//! The informer core against a real kube-apiserver: list/watch, paging,
//! expired continue tokens, 410 relists with tombstones, streaming lists,
//! RBAC, resync and late handlers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::PodTemplate;
use kube_client::Client;
use kube_client::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
    WatchParams,
};
use kube_dynamic_informer::cache::IndexFn;
use kube_dynamic_informer::cache::Transform;
use kube_dynamic_informer::informer::{
    Event, InformerError, InformerStatus, NotSynced, SharedInformer,
};
use kube_dynamic_informer::vocabulary::{Namespaces, Scope};
use kube_dynamic_informer::wire::{ApiListWatch, ListPage, ListWatch, ListWatchError, WatchStream};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::{self, User, pod_template, pod_templates};

/// Records events as short strings.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

impl Recorder {
    fn handler(&self) -> impl Fn(Event) + Send + Sync + 'static {
        let log = self.0.clone();
        move |e: Event| log.lock().unwrap().push(describe(&e))
    }
    fn snapshot(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

fn describe(e: &Event) -> String {
    let name = e.object().name().unwrap_or_default().to_owned();
    match e {
        Event::Add {
            in_initial_list: true,
            ..
        } => format!("add {name} (initial)"),
        Event::Add { .. } => format!("add {name}"),
        Event::Update {
            is_resync: true, ..
        } => format!("resync {name}"),
        Event::Update { .. } => format!("update {name}"),
        Event::Delete {
            final_state_unknown: true,
            ..
        } => format!("delete {name} (tombstone)"),
        Event::Delete { .. } => format!("delete {name}"),
    }
}

async fn eventually<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    support::wait_for(what, timeout, || {
        let r = f();
        async move { r.ok_or_else(|| "not yet".to_string()) }
    })
    .await
}

async fn create_pod_templates(api: &Api<PodTemplate>, names: impl IntoIterator<Item = String>) {
    futures::stream::iter(names.into_iter().map(|n| {
        let api = api.clone();
        async move {
            api.create(&PostParams::default(), &pod_template(&n))
                .await
                .map(|_| ())
        }
    }))
    .buffer_unordered(16)
    .collect::<Vec<_>>()
    .await
    .into_iter()
    .collect::<Result<Vec<_>, _>>()
    .expect("creating pod templates");
}

/// A list-watch of the pod templates of namespace `ns`.
fn pod_template_list_watch(client: &Client, ns: &str) -> ApiListWatch {
    ApiListWatch::new(client.clone(), pod_templates(), Scope::Namespaced)
        .namespaces(Namespaces::only([ns]))
}

/// A `ListWatch` that can hold back continue-token pages or watch requests
/// until the test opens the gate, and that records what it was asked.
#[derive(Clone)]
pub(crate) struct Gated {
    inner: ApiListWatch,
    client: Client,
    ns: String,
    hold_pages: bool,
    hold_watches: bool,
    open: Arc<AtomicBool>,
    opened: Arc<tokio::sync::Notify>,
    list_limits: Arc<Mutex<Vec<Option<u32>>>>,
    pub(crate) first_rv: Arc<Mutex<Option<String>>>,
    watches: Arc<AtomicU64>,
}

impl Gated {
    /// Over the pod templates of namespace `ns`.
    pub(crate) fn pod_templates(
        client: &Client,
        ns: &str,
        hold_pages: bool,
        hold_watches: bool,
    ) -> Self {
        Self {
            inner: pod_template_list_watch(client, ns),
            client: client.clone(),
            ns: ns.to_owned(),
            hold_pages,
            hold_watches,
            open: Arc::default(),
            opened: Arc::default(),
            list_limits: Arc::default(),
            first_rv: Arc::default(),
            watches: Arc::default(),
        }
    }

    pub(crate) fn open_gate(&self) {
        self.open.store(true, Ordering::SeqCst);
        self.opened.notify_waiters();
    }

    fn wait_open(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let open = self.open.clone();
        let opened = self.opened.clone();
        async move {
            loop {
                let notified = opened.notified();
                if open.load(Ordering::SeqCst) {
                    return;
                }
                notified.await;
            }
        }
    }
}

impl ListWatch for Gated {
    fn list(&self, params: &ListParams) -> BoxFuture<'static, Result<ListPage, ListWatchError>> {
        self.list_limits.lock().unwrap().push(params.limit);
        let hold = self.hold_pages && params.continue_token.is_some();
        let gate = self.wait_open();
        // A held page is asked for afresh once the gate opens: the shared
        // list-watch has requested it ahead already, before the hold.
        let call = if hold {
            pod_template_list_watch(&self.client, &self.ns).list(params)
        } else {
            self.inner.list(params)
        };
        let first_rv = self.first_rv.clone();
        async move {
            if hold {
                gate.await;
            }
            let page = call.await?;
            first_rv
                .lock()
                .unwrap()
                .get_or_insert_with(|| page.resource_version.clone());
            Ok(page)
        }
        .boxed()
    }

    fn watch(
        &self,
        params: &WatchParams,
        rv: &str,
    ) -> BoxFuture<'static, Result<WatchStream, ListWatchError>> {
        self.watches.fetch_add(1, Ordering::SeqCst);
        let hold = self.hold_watches;
        let gate = self.wait_open();
        let inner = self.inner.clone();
        let params = params.clone();
        let rv = rv.to_string();
        async move {
            if hold {
                gate.await;
            }
            inner.watch(&params, &rv).await
        }
        .boxed()
    }
}

#[tokio::test]
async fn a_crd_informer_follows_creates_updates_and_deletes() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "inf-crd").await;
    let ar = support::install_crd(&client, &support::widget_crd(&support::unique_group())).await;
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);
    support::create_many(
        &api,
        (0..3)
            .map(|i| support::widget(&ar, &format!("w{i}"), json!({ "color": "red" })))
            .collect(),
        3,
    )
    .await;

    let options = crate::support::options().namespace(&ns);
    let informer =
        SharedInformer::new(client.clone(), ar.clone(), Scope::Namespaced, options).unwrap();
    informer
        .add_index("color", IndexFn::jmespath("color", "spec.color").unwrap())
        .unwrap();
    let rec = Recorder::default();
    let reg = informer.add_handler(rec.handler());
    let cancel = CancellationToken::new();
    let task = informer.start(cancel.clone()).unwrap();
    informer
        .wait_for_sync(Duration::from_secs(30))
        .await
        .unwrap();
    eventually("registration synced", Duration::from_secs(10), || {
        reg.has_synced().then_some(())
    })
    .await;

    // List items arrive without apiVersion/kind; the cache has them.
    let w0 = informer.store().get(&format!("{ns}/w0")).unwrap();
    assert_eq!(w0.kind(), Some("Widget"));
    assert_eq!(w0.api_version(), Some(ar.api_version.as_str()));
    assert_eq!(
        informer.store().index_keys("color", "red").unwrap().len(),
        3
    );

    api.patch(
        "w1",
        &PatchParams::default(),
        &Patch::Merge(json!({ "spec": { "color": "blue" } })),
    )
    .await
    .unwrap();
    api.create(
        &PostParams::default(),
        &support::widget(&ar, "w3", json!({ "color": "blue" })),
    )
    .await
    .unwrap();
    api.delete("w2", &DeleteParams::default()).await.unwrap();

    eventually("6 events", Duration::from_secs(30), || {
        (rec.snapshot().len() >= 6).then_some(())
    })
    .await;
    let mut initial: Vec<_> = rec.snapshot()[..3].to_vec();
    initial.sort();
    assert_eq!(
        initial,
        ["add w0 (initial)", "add w1 (initial)", "add w2 (initial)"]
    );
    assert_eq!(rec.snapshot()[3..], ["update w1", "add w3", "delete w2"]);
    let mut blue = informer.store().index_keys("color", "blue").unwrap();
    blue.sort();
    assert_eq!(blue, [format!("{ns}/w1"), format!("{ns}/w3")]);
    assert_eq!(
        informer.store().index_keys("color", "red").unwrap(),
        [format!("{ns}/w0")]
    );
    cancel.cancel();
    task.await.unwrap();
    assert_eq!(informer.status(), InformerStatus::Stopped);
}

#[tokio::test]
async fn lists_in_pages_of_the_configured_size() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "inf-pages").await;
    let api = Api::<PodTemplate>::namespaced(client.clone(), &ns);
    create_pod_templates(&api, (0..25).map(|i| format!("pt{i}"))).await;
    let lw = Gated::pod_templates(&client, &ns, false, false);
    let informer = SharedInformer::with_list_watch(
        lw.clone(),
        pod_templates(),
        crate::support::options().page_size(10),
    );
    let cancel = CancellationToken::new();
    informer.start(cancel.clone()).unwrap();
    informer
        .wait_for_sync(Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(informer.store().len(), 25);
    assert_eq!(
        *lw.list_limits.lock().unwrap(),
        [Some(10), Some(10), Some(10)]
    );
    assert_eq!(informer.stats().list_requests.load(Ordering::Relaxed), 3);
    cancel.cancel();
}

/// `ApiListWatch` requests the next page while it decodes one; that page
/// answers the request it was made for and no other.
#[tokio::test]
async fn a_page_requested_ahead_answers_only_its_own_request() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "inf-ahead").await;
    let api = Api::<PodTemplate>::namespaced(client.clone(), &ns);
    create_pod_templates(&api, (0..5).map(|i| format!("pt{i}"))).await;
    let lw = pod_template_list_watch(&client, &ns);
    let pages = ListParams::default().limit(2);
    let names = |page: &ListPage| {
        page.objects
            .iter()
            .map(|o| {
                o.clone()
                    .decode()
                    .unwrap()
                    .metadata
                    .name
                    .unwrap_or_default()
            })
            .collect::<Vec<_>>()
    };

    let first = lw.list(&pages).await.unwrap();
    assert_eq!(names(&first), ["pt0", "pt1"]);
    let token = first.continue_token.clone().expect("a continue token");
    // Another request in between gets its own answer...
    let other = lw
        .list(&pages.clone().fields("metadata.name=pt3"))
        .await
        .unwrap();
    assert_eq!(names(&other), ["pt3"]);
    // ...and the next page is still right, asked for twice over.
    let next = pages.clone().continue_token(&token);
    let mut second = lw.list(&next).await.unwrap();
    assert_eq!(names(&second), ["pt2", "pt3"]);
    second = lw.list(&next).await.unwrap();
    assert_eq!(names(&second), ["pt2", "pt3"]);
    let last_token = second.continue_token.expect("a continue token");
    let last = lw
        .list(&pages.clone().continue_token(&last_token))
        .await
        .unwrap();
    assert_eq!(names(&last), ["pt4"]);
    assert_eq!(last.continue_token.filter(|c| !c.is_empty()), None);
}

#[tokio::test]
async fn an_expired_continue_token_falls_back_to_a_full_list() {
    if !support::is_testenv() {
        eprintln!("skipped: needs testenv's short compaction and uncached podtemplates");
        return;
    }
    let client = support::admin().await;
    let ns = support::namespace(&client, "inf-continue").await;
    let api = Api::<PodTemplate>::namespaced(client.clone(), &ns);
    create_pod_templates(&api, (0..12).map(|i| format!("pt{i}"))).await;
    let lw = Gated::pod_templates(&client, &ns, true, false);
    let informer = SharedInformer::with_list_watch(
        lw.clone(),
        pod_templates(),
        crate::support::options().page_size(5),
    );
    let cancel = CancellationToken::new();
    informer.start(cancel.clone()).unwrap();
    let first_rv = eventually("first page", Duration::from_secs(30), || {
        lw.first_rv.lock().unwrap().clone()
    })
    .await;
    support::wait_until_compacted(&api, &first_rv).await;
    lw.open_gate();
    informer
        .wait_for_sync(Duration::from_secs(30))
        .await
        .unwrap();
    // 12 templates and the pacer.
    assert_eq!(informer.store().len(), 13);
    assert_eq!(*lw.list_limits.lock().unwrap(), [Some(5), Some(5), None]);
    cancel.cancel();
}

#[tokio::test]
async fn a_watch_from_a_compacted_version_relists_and_reconciles_with_tombstones() {
    if !support::is_testenv() {
        eprintln!("skipped: needs testenv's short compaction and uncached podtemplates");
        return;
    }
    let client = support::admin().await;
    let ns = support::namespace(&client, "inf-relist").await;
    let api = Api::<PodTemplate>::namespaced(client.clone(), &ns);
    create_pod_templates(
        &api,
        ["keep", "change", "vanish", "pacer"].map(String::from),
    )
    .await;
    let lw = Gated::pod_templates(&client, &ns, false, true);
    let informer =
        SharedInformer::with_list_watch(lw.clone(), pod_templates(), crate::support::options());
    let rec = Recorder::default();
    informer.add_handler(rec.handler());
    let cancel = CancellationToken::new();
    informer.start(cancel.clone()).unwrap();
    informer
        .wait_for_sync(Duration::from_secs(30))
        .await
        .unwrap();

    // While the watch is held back: changes it will never see.
    api.delete("vanish", &DeleteParams::default())
        .await
        .unwrap();
    api.patch(
        "change",
        &PatchParams::default(),
        &Patch::Merge(json!({ "metadata": { "labels": { "changed": "yes" } } })),
    )
    .await
    .unwrap();
    api.create(&PostParams::default(), &pod_template("new"))
        .await
        .unwrap();
    let list_rv = lw.first_rv.lock().unwrap().clone().unwrap();
    support::wait_until_compacted(&api, &list_rv).await;
    lw.open_gate();

    eventually("relist", Duration::from_secs(30), || {
        (informer.stats().relists_after_gone.load(Ordering::Relaxed) >= 1
            && informer.store().get(&format!("{ns}/new")).is_some())
        .then_some(())
    })
    .await;
    let relisted = || -> Vec<String> {
        rec.snapshot()
            .into_iter()
            .filter(|e| !e.contains("(initial)") && !e.contains("pacer"))
            .collect()
    };
    // The relist's events reach the handler one after the other.
    eventually("handler caught up", Duration::from_secs(10), || {
        (relisted().len() >= 3).then_some(())
    })
    .await;
    let events = relisted();
    let mut sorted = events.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        ["add new", "delete vanish (tombstone)", "update change"]
    );
    // The cache equals a fresh list.
    let mut server: Vec<(String, String)> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|p| {
            (
                p.metadata.name.unwrap(),
                p.metadata.resource_version.unwrap(),
            )
        })
        .collect();
    server.sort();
    let mut cached = support::cached_versions(&informer.store());
    // The pacer may have moved on since; compare everything else exactly.
    server.retain(|(n, _)| n != "pacer");
    cached.retain(|(n, _)| n != "pacer");
    assert_eq!(cached, server);
    cancel.cancel();
}

/// Servers honour `sendInitialEvents` while their WatchList gate is on (the
/// default from v1.34 on; v1.33 had it off): the informer syncs from the
/// watch alone. Where the gate is off the same informer falls back to a list.
#[tokio::test]
async fn streaming_lists_sync_without_a_list_request() {
    let client = support::admin().await;
    // A release that no longer reports the gate has the feature for good.
    let honoured = support::feature_enabled(&client, "WatchList")
        .await
        .unwrap_or(true);
    let ns = support::namespace(&client, "inf-stream").await;
    let ar = support::install_crd(&client, &support::widget_crd(&support::unique_group())).await;
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);
    support::create_many(
        &api,
        (0..30)
            .map(|i| support::widget(&ar, &format!("w{i}"), json!({})))
            .collect(),
        8,
    )
    .await;
    let options = crate::support::options()
        .namespace(&ns)
        .streaming_list(true);
    let informer =
        SharedInformer::new(client.clone(), ar.clone(), Scope::Namespaced, options).unwrap();
    let cancel = CancellationToken::new();
    informer.start(cancel.clone()).unwrap();
    informer
        .wait_for_sync(Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(informer.store().len(), 30);
    let stats = informer.stats();
    let lists = stats.list_requests.load(Ordering::Relaxed);
    if honoured {
        assert_eq!(lists, 0, "no list request");
    } else {
        assert!(lists >= 1, "WatchList is off: synced by a list");
    }
    // Live events continue on the same path.
    api.create(
        &PostParams::default(),
        &support::widget(&ar, "late", json!({})),
    )
    .await
    .unwrap();
    eventually("late object cached", Duration::from_secs(30), || {
        informer.store().get(&format!("{ns}/late")).map(|_| ())
    })
    .await;
    cancel.cancel();
}

/// On a server with the WatchList gate off, a streaming list is refused
/// (422, `sendInitialEvents` forbidden): the informer lists instead, without
/// reporting an error, syncs and follows live changes.
#[tokio::test]
async fn streaming_lists_fall_back_to_list_then_watch_where_the_server_refuses_them() {
    if !support::is_testenv() {
        eprintln!("skipped: starts a local testenv with the WatchList gate off");
        return;
    }
    let opts = support::controlplane::Options {
        apiserver_args: vec!["--feature-gates=WatchList=false".into()],
        ..support::controlplane::Options::default()
    };
    let cp = tokio::task::spawn_blocking(move || support::controlplane::ControlPlane::start(&opts))
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("{e}"));
    let client =
        Client::try_from(support::config_from_file(cp.ready().kubeconfig("admin")).await).unwrap();
    assert_eq!(
        support::feature_enabled(&client, "WatchList").await,
        Some(false),
        "the server reports WatchList off"
    );
    let ns = support::namespace(&client, "inf-stream-off").await;
    let configmaps = ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
    };
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &configmaps);
    support::create_many(
        &api,
        (0..30)
            .map(|i| DynamicObject::new(&format!("cm{i}"), &configmaps))
            .collect(),
        8,
    )
    .await;
    let errors = Arc::new(Mutex::new(Vec::new()));
    let informer = SharedInformer::new(
        client.clone(),
        configmaps.clone(),
        Scope::Namespaced,
        crate::support::options()
            .namespace(&ns)
            .streaming_list(true),
    )
    .unwrap();
    let seen = errors.clone();
    informer.on_error(move |e| seen.lock().unwrap().push(e.to_string()));
    let cancel = CancellationToken::new();
    informer.start(cancel.clone()).unwrap();
    informer
        .wait_for_sync(Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(informer.store().len(), 30);
    let stats = informer.stats();
    assert_eq!(stats.list_requests.load(Ordering::Relaxed), 1, "one list");
    assert!(
        errors.lock().unwrap().is_empty(),
        "a refused streaming list is no error: {:?}",
        errors.lock().unwrap()
    );
    api.create(
        &PostParams::default(),
        &DynamicObject::new("late", &configmaps),
    )
    .await
    .unwrap();
    eventually("late object cached", Duration::from_secs(30), || {
        informer.store().get(&format!("{ns}/late")).map(|_| ())
    })
    .await;
    cancel.cancel();
    drop(client);
    cp.stop();
}

/// Not synced because of a 403.
fn forbidden(err: &InformerError) -> bool {
    matches!(
        err,
        InformerError::NotSynced {
            reason: NotSynced::Forbidden { .. },
            ..
        }
    )
}

#[tokio::test]
async fn a_forbidden_resource_reports_403_then_syncs_once_access_is_granted() {
    let admin = support::admin().await;
    let ns = support::namespace(&admin, "inf-rbac").await;
    let cms = Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(admin.clone(), &ns);
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(json!({ "metadata": { "name": "one" } })).unwrap(),
    )
    .await
    .unwrap();
    let alice = support::client(User::Alice).await;
    let configmaps = ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
    };
    let mut options = crate::support::options().namespace(&ns);
    // Retry quickly so the test does not wait out a long backoff.
    options.watch.backoff.max = Duration::from_secs(2);
    let informer = SharedInformer::new(alice, configmaps, Scope::Namespaced, options).unwrap();
    let cancel = CancellationToken::new();
    informer.start(cancel.clone()).unwrap();
    // The sync error names the 403 once the first list has been refused
    // (how soon depends on the machine: wait for it, within a deadline).
    let err = support::wait_for(
        "a sync error naming the 403",
        Duration::from_secs(60),
        || {
            let informer = informer.clone();
            async move {
                match informer.wait_for_sync(Duration::from_millis(500)).await {
                    Err(err) if forbidden(&err) => Ok(err),
                    other => Err(format!("{other:?}")),
                }
            }
        },
    )
    .await;
    assert!(err.to_string().contains("forbidden"), "{err}");

    support::grant_configmap_read(&admin, &ns, User::Alice).await;
    informer
        .wait_for_sync(Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(informer.store().len(), 1);
    assert_eq!(informer.status(), InformerStatus::Synced);
    cancel.cancel();
}

#[tokio::test]
async fn resync_comes_from_memory_without_server_requests() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "inf-resync").await;
    let api = Api::<PodTemplate>::namespaced(client.clone(), &ns);
    create_pod_templates(&api, ["a", "b"].map(String::from)).await;
    let lw = Gated::pod_templates(&client, &ns, false, false);
    let informer = SharedInformer::with_list_watch(
        lw.clone(),
        pod_templates(),
        crate::support::options().resync(Duration::from_secs(1)),
    );
    let rec = Recorder::default();
    informer.add_handler(rec.handler());
    let cancel = CancellationToken::new();
    informer.start(cancel.clone()).unwrap();
    informer
        .wait_for_sync(Duration::from_secs(30))
        .await
        .unwrap();
    let lists = lw.list_limits.lock().unwrap().len();
    let watches = lw.watches.load(Ordering::SeqCst);
    eventually("two rounds of resync", Duration::from_secs(20), || {
        (rec.snapshot()
            .iter()
            .filter(|e| e.starts_with("resync"))
            .count()
            >= 4)
            .then_some(())
    })
    .await;
    assert_eq!(
        lw.list_limits.lock().unwrap().len(),
        lists,
        "no list for a resync"
    );
    assert_eq!(
        lw.watches.load(Ordering::SeqCst),
        watches,
        "no watch for a resync"
    );
    cancel.cancel();
}

/// Handlers added while objects are being created: each sees every object
/// exactly once and ends with the cache's state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_handlers_on_a_live_server_see_no_gap_and_no_duplicate() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "inf-late").await;
    let ar = support::install_crd(&client, &support::widget_crd(&support::unique_group())).await;
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);
    support::create_many(
        &api,
        (0..50)
            .map(|i| support::widget(&ar, &format!("w{i}"), json!({})))
            .collect(),
        8,
    )
    .await;
    let informer = SharedInformer::new(
        client.clone(),
        ar.clone(),
        Scope::Namespaced,
        crate::support::options().namespace(&ns),
    )
    .unwrap();
    let cancel = CancellationToken::new();
    informer.start(cancel.clone()).unwrap();
    informer
        .wait_for_sync(Duration::from_secs(30))
        .await
        .unwrap();

    let creator = {
        let api = api.clone();
        let ar = ar.clone();
        tokio::spawn(async move {
            support::create_many(
                &api,
                (50..250)
                    .map(|i| support::widget(&ar, &format!("w{i}"), json!({})))
                    .collect(),
                4,
            )
            .await;
        })
    };
    type Seen = Arc<Mutex<(HashMap<String, u32>, Vec<String>)>>;
    let mut handlers: Vec<Seen> = Vec::new();
    let mut regs = Vec::new();
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let seen: Seen = Arc::default();
        let s = seen.clone();
        regs.push(informer.add_handler(move |e: Event| {
            let name = e.object().name().unwrap().to_owned();
            let mut s = s.lock().unwrap();
            if let Event::Add { .. } = e {
                let count = s.0.entry(name.clone()).or_insert(0);
                *count += 1;
                if *count > 1 {
                    s.1.push(format!("second add of {name}"));
                }
            }
        }));
        handlers.push(seen);
    }
    creator.await.unwrap();
    eventually("cache has 250", Duration::from_secs(60), || {
        (informer.store().len() == 250).then_some(())
    })
    .await;
    // The cache can hold the last object a moment before its event is
    // queued (both happen under the dispatch lock, but the store is read
    // without it): wait for each handler to have seen every object.
    for (seen, reg) in handlers.iter().zip(&regs) {
        eventually(
            "every object added to the handler",
            Duration::from_secs(30),
            || (reg.has_synced() && seen.lock().unwrap().0.len() == 250).then_some(()),
        )
        .await;
        eventually("handler drained", Duration::from_secs(30), || {
            (reg.backlog() == 0).then_some(())
        })
        .await;
        let s = seen.lock().unwrap();
        assert!(s.1.is_empty(), "{:?}", s.1);
        assert_eq!(s.0.len(), 250, "every object added exactly once");
    }
    cancel.cancel();
}

/// One handler sleeps 100 ms per event; the other still receives each event
/// within 100 ms of the cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_handler_does_not_hold_back_another() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "inf-slow").await;
    let ar = support::install_crd(&client, &support::widget_crd(&support::unique_group())).await;
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);
    // The transform runs just before an object enters the cache: it stamps
    // the moment.
    let cached_at: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let stamps = cached_at.clone();
    let options = crate::support::options()
        .namespace(&ns)
        .transform(Transform::new("stamp", move |o: DynamicObject| {
            stamps
                .lock()
                .unwrap()
                .insert(o.metadata.name.clone().unwrap_or_default(), Instant::now());
            o
        }));
    let informer =
        SharedInformer::new(client.clone(), ar.clone(), Scope::Namespaced, options).unwrap();
    let slow_done = Arc::new(AtomicU64::new(0));
    let slow_count = slow_done.clone();
    let slow = informer.add_handler(move |_e: Event| {
        std::thread::sleep(Duration::from_millis(100));
        slow_count.fetch_add(1, Ordering::SeqCst);
    });
    // (lag after the cache, events the slow handler had finished by then)
    let fast_seen: Arc<Mutex<Vec<(Duration, u64)>>> = Arc::default();
    let (seen, stamps, slow_count) = (fast_seen.clone(), cached_at.clone(), slow_done.clone());
    let fast = informer.add_handler(move |e: Event| {
        let name = e.object().name().unwrap_or_default().to_owned();
        let at = stamps.lock().unwrap()[&name];
        seen.lock()
            .unwrap()
            .push((at.elapsed(), slow_count.load(Ordering::SeqCst)));
    });
    let cancel = CancellationToken::new();
    informer.start(cancel.clone()).unwrap();
    informer
        .wait_for_sync(Duration::from_secs(30))
        .await
        .unwrap();
    support::create_many(
        &api,
        (0..20)
            .map(|i| support::widget(&ar, &format!("w{i}"), json!({})))
            .collect(),
        20,
    )
    .await;
    eventually("fast handler got 20", Duration::from_secs(30), || {
        (fast.delivered() == 20).then_some(())
    })
    .await;
    let seen = fast_seen.lock().unwrap().clone();
    let worst = seen.iter().map(|(lag, _)| *lag).max().unwrap();
    assert!(
        worst < Duration::from_millis(100),
        "fast handler lag after the cache: {worst:?}"
    );
    // When the fast handler had its 20th event, the slow one was far behind.
    assert!(
        seen[19].1 < 19,
        "slow handler had finished {} events",
        seen[19].1
    );
    eventually("slow handler finishes", Duration::from_secs(30), || {
        (slow.delivered() == 20).then_some(())
    })
    .await;
    cancel.cancel();
}

/// The informer runs, and stops, for a cluster-scoped resource too.
#[tokio::test]
async fn cluster_scoped_resources_are_keyed_by_name() {
    let client: Client = support::admin().await;
    let marker = support::suffix();
    let ns_api = Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone());
    let name = format!("inf-cluster-{marker}");
    ns_api
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({ "metadata": { "name": name, "labels": { "marker": marker } } }),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    let namespaces = ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: "Namespace".into(),
        plural: "namespaces".into(),
    };
    assert!(matches!(
        SharedInformer::new(
            client.clone(),
            namespaces.clone(),
            Scope::Cluster,
            crate::support::options().namespace("x")
        ),
        Err(InformerError::ClusterScoped(_))
    ));
    let options = crate::support::options().label_selector(format!("marker={marker}"));
    let informer = SharedInformer::new(client, namespaces, Scope::Cluster, options).unwrap();
    let cancel = CancellationToken::new();
    informer.start(cancel.clone()).unwrap();
    informer
        .wait_for_sync(Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(informer.store().keys(), vec![name.clone()]);
    assert!(informer.store().get(&name).is_some());
    assert!(
        informer
            .store()
            .index_values("namespace")
            .unwrap()
            .is_empty()
    );
    cancel.cancel();
}
