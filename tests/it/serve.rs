//! The caches served through the Kubernetes API, read by kube-rs's client
//! as it reads an API server: discovery, get, list with selectors and
//! pages, the resourceVersion rules, watches through writes, indexes,
//! redaction, refusals.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube_client::api::{
    Api, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube_client::config::{KubeConfigOptions, Kubeconfig};
use kube_client::{Client, Config, Discovery};
use kube_core::ApiResource;
use kube_dynamic_informer::InformerFactory;
use kube_dynamic_informer::cache::IndexFn;
use kube_dynamic_informer::serve::{
    CacheServer, Credentials, ServeError, ServeOptions, ServedResource,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support;

mod watchers;

/// A client of the server `credentials` describe.
async fn client_of(credentials: &Credentials) -> Client {
    let kubeconfig = Kubeconfig::from_yaml(&credentials.kubeconfig("kdi")).unwrap();
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

fn names(list: &[DynamicObject]) -> Vec<String> {
    list.iter()
        .map(|o| o.metadata.name.clone().unwrap())
        .collect()
}

/// The object as both servers write it: the same JSON.
fn same(a: &DynamicObject, b: &DynamicObject) {
    assert_eq!(
        serde_json::to_value(a).unwrap(),
        serde_json::to_value(b).unwrap()
    );
}

fn code(error: &kube_client::Error) -> u16 {
    match error {
        kube_client::Error::Api(status) => status.code,
        other => panic!("not an API error: {other}"),
    }
}

struct Served {
    ns: String,
    widgets: ApiResource,
    factory: InformerFactory,
    cancel: CancellationToken,
    credentials: Credentials,
}

async fn serve_widgets(admin: &Client, options: ServeOptions) -> Served {
    let crd = support::widget_crd(&support::unique_group());
    let widgets = support::install_crd(admin, &crd).await;
    let ns = support::namespace(admin, "serve").await;
    let api: Api<DynamicObject> = Api::namespaced_with(admin.clone(), &ns, &widgets);
    for (name, app, node) in [
        ("w1", "web", "n1"),
        ("w2", "db", "n1"),
        ("w3", "web", "n2"),
        ("w4", "db", "n2"),
    ] {
        let mut widget = support::widget(&widgets, name, json!({ "node": node }));
        widget.metadata.labels = Some([("app".to_owned(), app.to_owned())].into());
        api.create(&PostParams::default(), &widget).await.unwrap();
    }
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), &ns);
    secrets
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": { "name": "db" },
                "stringData": { "password": "hunter2" },
            }))
            .unwrap(),
        )
        .await
        .unwrap();

    let factory = InformerFactory::with_options(admin.clone(), support::options().namespace(&ns));
    let widget_informer = factory
        .for_resource(format!("widgets.{}", widgets.group))
        .await
        .unwrap();
    widget_informer
        .informer()
        .add_index("node", IndexFn::jmespath("node", "spec.node").unwrap())
        .unwrap();
    let secret_informer = factory.for_resource("secrets").await.unwrap();
    factory.start().unwrap();
    let report = factory.wait_for_cache_sync(Duration::from_secs(60)).await;
    assert!(report.all_synced(), "{report:?}");

    let server = CacheServer::new(options);
    let discovery = factory.discovery().snapshot();
    for informer in [widget_informer, secret_informer] {
        server.serve(ServedResource::from_discovery(informer, &discovery).unwrap());
    }
    let cancel = CancellationToken::new();
    let listening = server.listen(cancel.clone()).await.unwrap();
    let credentials = listening.credentials().clone();
    tokio::spawn(listening.stopped());
    Served {
        ns,
        widgets,
        factory,
        cancel,
        credentials,
    }
}

#[tokio::test]
async fn kube_rs_reads_the_served_cache_as_it_reads_the_api_server() {
    let admin = support::admin().await;
    let served = serve_widgets(&admin, ServeOptions::default()).await;
    let client = client_of(&served.credentials).await;

    // Discovery lists what is served, nothing else.
    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    let mut groups: Vec<String> = discovery.groups().map(|g| g.name().to_owned()).collect();
    groups.sort();
    assert_eq!(groups, ["", served.widgets.group.as_str()], "{groups:?}");
    let (resource, caps) = discovery
        .get(&served.widgets.group)
        .unwrap()
        .recommended_kind("Widget")
        .unwrap();
    assert_eq!(resource.plural, "widgets");
    assert!(caps.supports_operation("watch"));

    let direct: Api<DynamicObject> =
        Api::namespaced_with(admin.clone(), &served.ns, &served.widgets);
    let cached: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &served.ns, &served.widgets);

    // get: the same object; a missing one is 404.
    same(
        &cached.get("w1").await.unwrap(),
        &direct.get("w1").await.unwrap(),
    );
    assert_eq!(code(&cached.get("nope").await.unwrap_err()), 404);

    // list with label and field selectors: what the API server selects.
    for params in [
        ListParams::default(),
        ListParams::default().labels("app=web"),
        ListParams::default().labels("app in (db),app!=web"),
        ListParams::default().fields("metadata.name=w3"),
        ListParams::default()
            .fields("metadata.name!=w3")
            .labels("app=web"),
    ] {
        let from_cache = cached.list(&params).await.unwrap();
        let from_server = direct.list(&params).await.unwrap();
        assert_eq!(
            names(&from_cache.items),
            names(&from_server.items),
            "{params:?}"
        );
        for (a, b) in from_cache.items.iter().zip(&from_server.items) {
            same(a, b);
        }
    }

    // Pages of one list share one resourceVersion and cover the list.
    let mut params = ListParams::default().limit(1);
    let mut seen = Vec::new();
    let mut versions = Vec::new();
    loop {
        let page = cached.list(&params).await.unwrap();
        seen.extend(names(&page.items));
        versions.push(page.metadata.resource_version.clone().unwrap());
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => break,
        }
    }
    assert_eq!(seen, ["w1", "w2", "w3", "w4"]);
    versions.dedup();
    assert_eq!(versions.len(), 1, "{versions:?}");

    // The index, as a query.
    let uri = format!(
        "/apis/{}/v1/namespaces/{}/widgets?index=node&indexValue=n2",
        served.widgets.group, served.ns
    );
    let text = client
        .request_text(http::Request::get(uri).body(Vec::new()).unwrap())
        .await
        .unwrap();
    let listed: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut by_node: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    by_node.sort_unstable();
    assert_eq!(by_node, ["w3", "w4"]);

    // Secrets: redacted.
    let secret = Api::<Secret>::namespaced(client.clone(), &served.ns)
        .get("db")
        .await
        .unwrap();
    let data = secret.data.unwrap();
    // The note `kdi get` prints, base64-encoded as Secret data is.
    assert_eq!(data["password"].0, b"<redacted: 12 bytes>");

    // Writes are refused.
    let refused = cached
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "x": 1 } })),
        )
        .await
        .unwrap_err();
    assert_eq!(code(&refused), 405);
    served.cancel.cancel();
    drop(served.factory);
}

#[tokio::test]
async fn a_watch_through_the_served_cache_follows_writes_to_the_api_server() {
    let admin = support::admin().await;
    let served = serve_widgets(&admin, ServeOptions::default()).await;
    let client = client_of(&served.credentials).await;
    let direct: Api<DynamicObject> =
        Api::namespaced_with(admin.clone(), &served.ns, &served.widgets);
    let cached: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &served.ns, &served.widgets);

    let listed = cached.list(&ListParams::default()).await.unwrap();
    let version = listed.metadata.resource_version.unwrap();
    let events = cached
        .watch(&WatchParams::default().timeout(30), &version)
        .await
        .unwrap();
    futures::pin_mut!(events);

    let mut widget = support::widget(&served.widgets, "w5", json!({ "node": "n3" }));
    widget.metadata.labels = Some([("app".to_owned(), "web".to_owned())].into());
    direct
        .create(&PostParams::default(), &widget)
        .await
        .unwrap();
    direct
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "size": 2 } })),
        )
        .await
        .unwrap();
    direct.delete("w2", &Default::default()).await.unwrap();

    let mut seen = Vec::new();
    while seen.len() < 3 {
        let event = tokio::time::timeout(Duration::from_secs(20), events.try_next())
            .await
            .expect("an event within 20 s")
            .unwrap()
            .expect("the watch goes on");
        match event {
            WatchEvent::Added(o) => seen.push(format!("added {}", o.metadata.name.unwrap())),
            WatchEvent::Modified(o) => seen.push(format!("modified {}", o.metadata.name.unwrap())),
            WatchEvent::Deleted(o) => seen.push(format!("deleted {}", o.metadata.name.unwrap())),
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => panic!("watch error: {e:?}"),
        }
    }
    assert_eq!(seen, ["added w5", "modified w1", "deleted w2"]);

    // From "0": the cache first, as ADDED events.
    let initial: Vec<String> = cached
        .watch(&WatchParams::default().timeout(1), "0")
        .await
        .unwrap()
        .filter_map(|e| async move {
            match e {
                Ok(WatchEvent::Added(o)) => o.metadata.name,
                _ => None,
            }
        })
        .collect()
        .await;
    let mut initial = initial;
    initial.sort();
    assert_eq!(initial, ["w1", "w3", "w4", "w5"]);

    // A streaming list: the cache as ADDED events, then the bookmark that
    // ends them, then the changes.
    let streaming = cached
        .watch(&WatchParams::streaming_lists().timeout(10), "")
        .await
        .unwrap();
    futures::pin_mut!(streaming);
    let mut added = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(20), streaming.try_next())
            .await
            .expect("an event within 20 s")
            .unwrap()
        {
            Some(WatchEvent::Added(o)) => added.push(o.metadata.name.unwrap()),
            Some(WatchEvent::Bookmark(b)) => {
                assert_eq!(
                    b.metadata
                        .annotations
                        .get("k8s.io/initial-events-end")
                        .map(String::as_str),
                    Some("true")
                );
                break;
            }
            other => panic!("before the initial-events-end bookmark: {other:?}"),
        }
    }
    added.sort();
    assert_eq!(added, ["w1", "w3", "w4", "w5"]);

    // A resourceVersion older than the history: 410.
    let expired = cached.watch(&WatchParams::default().timeout(5), "1").await;
    let gone = match expired {
        Err(e) => code(&e) == 410,
        Ok(stream) => {
            let first = stream.boxed().next().await;
            matches!(first, Some(Ok(WatchEvent::Error(ref e))) if e.code == 410)
                || matches!(first, Some(Err(kube_client::Error::Api(ref s))) if s.code == 410)
        }
    };
    assert!(gone, "a watch from resourceVersion 1 is 410 Gone");
    served.cancel.cancel();
}

#[tokio::test]
async fn bad_requests_get_a_status_and_the_server_refuses_to_listen_unprotected() {
    let admin = support::admin().await;
    let served = serve_widgets(&admin, ServeOptions::default()).await;
    let client = client_of(&served.credentials).await;
    let cached: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &served.ns, &served.widgets);

    let bad_selector = cached
        .list(&ListParams::default().labels("app in"))
        .await
        .unwrap_err();
    assert_eq!(code(&bad_selector), 400);
    let bad_field = cached
        .list(&ListParams::default().fields("spec.node=n1"))
        .await
        .unwrap_err();
    assert_eq!(code(&bad_field), 400);
    let malformed = cached
        .list(
            &ListParams::default()
                .at("abc")
                .matching(kube_client::api::VersionMatch::NotOlderThan),
        )
        .await
        .unwrap_err();
    assert_eq!(code(&malformed), 400);
    let exact_old = cached
        .list(
            &ListParams::default()
                .at("1")
                .matching(kube_client::api::VersionMatch::Exact),
        )
        .await
        .unwrap_err();
    assert_eq!(code(&exact_old), 410);
    let unknown: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk(&kube_core::GroupVersionKind::gvk(
            "apps",
            "v1",
            "Deployment",
        )),
    );
    assert_eq!(
        code(&unknown.list(&ListParams::default()).await.unwrap_err()),
        404
    );

    // A wrong or missing token: 401.
    let mut config = Config::from_custom_kubeconfig(
        Kubeconfig::from_yaml(&served.credentials.kubeconfig("kdi")).unwrap(),
        &KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    for token in [Some("wrong"), None] {
        config.auth_info.token = token.map(|t| t.to_owned().into());
        let intruder: Api<DynamicObject> = Api::namespaced_with(
            Client::try_from(config.clone()).unwrap(),
            &served.ns,
            &served.widgets,
        );
        assert_eq!(
            code(&intruder.list(&ListParams::default()).await.unwrap_err()),
            401,
            "token {token:?}"
        );
    }

    // A verb the API has no use for: 405, as for writes.
    let odd = http::Request::builder()
        .method(http::Method::from_bytes(b"PROPFIND").unwrap())
        .uri(format!(
            "/apis/{}/v1/namespaces/{}/widgets",
            served.widgets.group, served.ns
        ))
        .body(Vec::new())
        .unwrap();
    let refused = client.request_text(odd).await.unwrap_err();
    assert_eq!(code(&refused), 405, "{refused}");

    // Beyond loopback, never without TLS and a token.
    for options in [
        ServeOptions::default()
            .addr("0.0.0.0:0".parse().unwrap())
            .tls(false),
        ServeOptions::default()
            .addr("0.0.0.0:0".parse().unwrap())
            .anonymous(true),
    ] {
        let refused = CacheServer::new(options)
            .listen(CancellationToken::new())
            .await;
        assert!(
            matches!(refused, Err(ServeError::Insecure { .. })),
            "{refused:?}"
        );
    }
    served.cancel.cancel();
}

#[tokio::test]
async fn a_watch_from_before_what_the_history_keeps_is_expired_and_one_within_resumes() {
    let admin = support::admin().await;
    let served = serve_widgets(&admin, ServeOptions::default().history(3)).await;
    let client = client_of(&served.credentials).await;
    let direct: Api<DynamicObject> =
        Api::namespaced_with(admin.clone(), &served.ns, &served.widgets);
    let cached: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &served.ns, &served.widgets);
    let before = cached
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    // A watch opened now sets the history up at the cache's version.
    drop(
        cached
            .watch(&WatchParams::default().timeout(1), &before)
            .await
            .unwrap(),
    );
    let mut written = Vec::new();
    for size in 0..5 {
        let patched = direct
            .patch(
                "w1",
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": { "size": size } })),
            )
            .await
            .unwrap();
        written.push(patched.metadata.resource_version.unwrap());
    }
    // Wait until the served cache has the last write.
    let last = written.last().unwrap().clone();
    support::wait_for(
        "the served cache to catch up",
        Duration::from_secs(20),
        || {
            let cached = cached.clone();
            let last = last.clone();
            async move {
                let w1 = cached.get("w1").await.map_err(|e| e.to_string())?;
                (w1.metadata.resource_version.as_deref() == Some(last.as_str()))
                    .then_some(())
                    .ok_or_else(|| "not yet".to_owned())
            }
        },
    )
    .await;
    // Five changes, three kept: from before them is gone...
    let expired = match cached
        .watch(&WatchParams::default().timeout(5), &before)
        .await
    {
        Err(e) => code(&e) == 410,
        Ok(stream) => matches!(
            stream.boxed().next().await,
            Some(Ok(WatchEvent::Error(ref e))) if e.code == 410
        ),
    };
    assert!(expired, "a watch from {before} after 5 changes with 3 kept");
    // ...from the third is whole: the fourth and fifth.
    let resumed = cached
        .watch(&WatchParams::default().timeout(5), &written[2])
        .await
        .unwrap();
    futures::pin_mut!(resumed);
    let mut versions = Vec::new();
    while versions.len() < 2 {
        match tokio::time::timeout(Duration::from_secs(20), resumed.try_next())
            .await
            .expect("an event within 20 s")
            .unwrap()
        {
            Some(WatchEvent::Modified(o)) => versions.push(o.metadata.resource_version.unwrap()),
            other => panic!("expected the kept changes: {other:?}"),
        }
    }
    assert_eq!(versions, written[3..]);
    served.cancel.cancel();
}

#[tokio::test]
async fn what_kdi_may_not_list_is_absent_from_what_it_serves() {
    let admin = support::admin().await;
    let ns = support::namespace(&admin, "serve-forbidden").await;
    support::grant_configmap_read(&admin, &ns, support::User::Alice).await;
    let alice = support::client(support::User::Alice).await;
    let factory = InformerFactory::with_options(alice, support::options().namespace(&ns));
    let config_maps = factory.for_resource("configmaps").await.unwrap();
    let secrets = factory.for_resource("secrets").await.unwrap();
    factory.start().unwrap();
    config_maps
        .informer()
        .wait_for_sync(Duration::from_secs(60))
        .await
        .unwrap();
    support::wait_for(
        "the secrets informer to be refused",
        Duration::from_secs(60),
        || {
            let status = secrets.status();
            async move {
                let refused = kube_dynamic_informer::informer::NotSynced::from_status(
                    &status,
                    Duration::ZERO,
                )
                .is_some_and(|n| n.is_refused());
                if refused {
                    Ok(())
                } else {
                    Err(format!("{status}"))
                }
            }
        },
    )
    .await;

    let server = CacheServer::new(ServeOptions::default());
    let discovery = factory.discovery().snapshot();
    for informer in [config_maps, secrets] {
        server.serve(ServedResource::from_discovery(informer, &discovery).unwrap());
    }
    let cancel = CancellationToken::new();
    let listening = server.listen(cancel.clone()).await.unwrap();
    let client = client_of(listening.credentials()).await;

    let core = client
        .list_core_api_resources("v1")
        .await
        .unwrap()
        .resources
        .into_iter()
        .map(|r| r.name)
        .collect::<Vec<_>>();
    assert_eq!(core, ["configmaps"], "secrets are absent, not empty");
    let listed = Api::<Secret>::namespaced(client.clone(), &ns)
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert_eq!(code(&listed), 404);
    let ready = client
        .request_text(http::Request::get("/readyz").body(Vec::new()).unwrap())
        .await
        .unwrap();
    assert_eq!(ready, "ok", "what is absent does not hold readiness up");
    cancel.cancel();
}

/// What `kubectl get` asks for.
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

/// `uri` read with the `Accept` header `accept`, as JSON.
async fn read_as(
    client: &Client,
    uri: &str,
    accept: &str,
) -> Result<serde_json::Value, kube_client::Error> {
    let request = http::Request::get(uri)
        .header(http::header::ACCEPT, accept)
        .body(Vec::new())
        .unwrap();
    let text = client.request_text(request).await?;
    Ok(serde_json::from_str(&text).unwrap_or_else(|e| panic!("{uri}: {e}: {text}")))
}

/// What of a `Table` (or a list) both servers must write alike: all but
/// the list's resourceVersion and continue token (a cache's list is not
/// the API server's), and with each `Age` cell a placeholder once it reads
/// as an age (a second may pass between the two requests).
fn comparable(mut table: serde_json::Value) -> serde_json::Value {
    if let Some(metadata) = table["metadata"].as_object_mut() {
        metadata.remove("resourceVersion");
        metadata.remove("continue");
    }
    let ages: Vec<usize> = table["columnDefinitions"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .filter(|(_, c)| c["name"] == "Age")
        .map(|(i, _)| i)
        .collect();
    for row in table["rows"].as_array_mut().into_iter().flatten() {
        for &i in &ages {
            let cell = &mut row["cells"][i];
            let age = cell.as_str().unwrap_or_default();
            assert!(
                age.ends_with(['s', 'm', 'h', 'd', 'y'])
                    && age.starts_with(|c: char| c.is_ascii_digit()),
                "not an age: {cell}"
            );
            *cell = json!("<age>");
        }
    }
    table
}

/// A namespaced CRD `gizmos.<group>` with printer columns of every type,
/// a filter, a list, a negative index and a date among them.
fn gizmo_crd(
    group: &str,
) -> k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": format!("gizmos.{group}") },
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": { "plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList" },
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": true
                }},
                "additionalPrinterColumns": [
                    { "name": "Node", "type": "string", "jsonPath": ".spec.node" },
                    { "name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas" },
                    { "name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status" },
                    { "name": "Ratio", "type": "number", "jsonPath": ".spec.ratio", "priority": 1 },
                    { "name": "Paused", "type": "boolean", "jsonPath": ".spec.paused" },
                    { "name": "Port", "type": "string", "jsonPath": ".spec.ports[*].port", "description": "The first port." },
                    { "name": "Last", "type": "string", "jsonPath": ".spec.items[-1]" },
                    { "name": "Notes", "type": "string", "jsonPath": ".metadata.annotations" },
                    { "name": "Since", "type": "date", "jsonPath": ".status.since", "format": "date-time" },
                    { "name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp" }
                ]
            }]
        }
    }))
    .unwrap()
}

/// Gizmos and ConfigMaps in a namespace, served through `from_factory`.
struct Tables {
    ns: String,
    gizmos: ApiResource,
    _factory: InformerFactory,
    cancel: CancellationToken,
    client: Client,
}

async fn serve_tables(admin: &Client) -> Tables {
    let gizmos = support::install_crd(admin, &gizmo_crd(&support::unique_group())).await;
    let ns = support::namespace(admin, "serve-tables").await;
    let api: Api<DynamicObject> = Api::namespaced_with(admin.clone(), &ns, &gizmos);
    for (name, data) in [
        (
            "g1",
            json!({
                "metadata": { "labels": { "app": "shop" }, "annotations": { "tier": "<web> & more" } },
                "spec": {
                    "node": "n1", "replicas": 3, "ratio": 0.5, "paused": false,
                    "ports": [{ "port": 80 }, { "port": 443 }], "items": ["a", "b"]
                },
                "status": {
                    "conditions": [{ "type": "Other", "status": "False" }, { "type": "Ready", "status": "True" }],
                    "since": "2020-01-01T00:00:00Z"
                }
            }),
        ),
        (
            "g2",
            json!({ "spec": { "node": "n2", "replicas": 1.7, "ratio": 2 }, "status": { "since": "soon" } }),
        ),
        ("g3", json!({})),
    ] {
        let mut gizmo = DynamicObject::new(name, &gizmos);
        let strings = |map: &serde_json::Value| {
            map.as_object().map(|map| {
                map.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
                    .collect()
            })
        };
        gizmo.metadata.labels = strings(&data["metadata"]["labels"]);
        gizmo.metadata.annotations = strings(&data["metadata"]["annotations"]);
        gizmo.data = json!({ "spec": data["spec"], "status": data["status"] });
        api.create(&PostParams::default(), &gizmo).await.unwrap();
    }
    let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(admin.clone(), &ns);
    for (name, data) in [
        ("c1", json!({ "data": { "a": "1", "b": "2" } })),
        (
            "c2",
            json!({ "data": { "a": "1" }, "binaryData": { "x": "AAE=" } }),
        ),
        ("c3", json!({})),
    ] {
        let mut config_map = data.clone();
        config_map["metadata"] = json!({ "name": name });
        config_maps
            .create(
                &PostParams::default(),
                &serde_json::from_value(config_map).unwrap(),
            )
            .await
            .unwrap();
    }

    let factory = InformerFactory::with_options(admin.clone(), support::options().namespace(&ns));
    let gizmo_informer = factory
        .for_resource(format!("gizmos.{}", gizmos.group))
        .await
        .unwrap();
    let config_map_informer = factory.for_resource("configmaps").await.unwrap();
    factory.start().unwrap();
    let report = factory.wait_for_cache_sync(Duration::from_secs(60)).await;
    assert!(report.all_synced(), "{report:?}");
    let server = CacheServer::new(ServeOptions::default());
    for informer in [gizmo_informer, config_map_informer] {
        server.serve(ServedResource::from_factory(informer, &factory).unwrap());
    }
    let cancel = CancellationToken::new();
    let listening = server.listen(cancel.clone()).await.unwrap();
    let client = client_of(listening.credentials()).await;
    tokio::spawn(listening.stopped());
    Tables {
        ns,
        gizmos,
        _factory: factory,
        cancel,
        client,
    }
}

#[tokio::test]
async fn kubectl_gets_the_tables_the_api_server_prints_printer_columns_included() {
    let admin = support::admin().await;
    let served = serve_tables(&admin).await;
    let gizmos = format!(
        "/apis/{}/v1/namespaces/{}/gizmos",
        served.gizmos.group, served.ns
    );
    let config_maps = format!("/api/v1/namespaces/{}/configmaps", served.ns);

    // Asked both ways, the same table: columns, cells, and what each row
    // holds.
    for (uri, accept) in [
        (gizmos.clone(), TABLE),
        (format!("{gizmos}/g1"), TABLE),
        (format!("{gizmos}?includeObject=None"), TABLE),
        (format!("{gizmos}?includeObject=Object"), TABLE),
        (format!("{gizmos}?labelSelector=app%3Dshop"), TABLE),
        (config_maps.clone(), TABLE),
        (format!("{config_maps}/c2"), TABLE),
        (
            config_maps.clone(),
            "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
        ),
        (
            config_maps.clone(),
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        ),
        (
            format!("{config_maps}/c1"),
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
        ),
    ] {
        let from_cache = read_as(&served.client, &uri, accept).await.unwrap();
        // The API server would answer the protobuf asked for first.
        let json_only: Vec<&str> = accept
            .split(',')
            .filter(|clause| !clause.contains("protobuf"))
            .collect();
        let from_server = read_as(&admin, &uri, &json_only.join(",")).await.unwrap();
        assert_eq!(
            comparable(from_cache),
            comparable(from_server),
            "{uri} as {accept}"
        );
    }

    // What the cells are, for the record.
    let table = read_as(&served.client, &gizmos, TABLE).await.unwrap();
    let names: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "Name", "Node", "Replicas", "Ready", "Ratio", "Paused", "Port", "Last", "Notes",
            "Since", "Age"
        ]
    );
    let g1 = &table["rows"][0]["cells"];
    assert_eq!(
        g1.as_array().unwrap()[..9],
        [
            json!("g1"),
            json!("n1"),
            json!(3),
            json!("True"),
            json!(0.5),
            json!(false),
            json!("80"),
            json!("b"),
            json!(r#"{"tier":"\u003cweb\u003e \u0026 more"}"#),
        ]
    );
    assert_eq!(table["rows"][1]["cells"][9], "<invalid>");
    assert_eq!(table["rows"][2]["cells"][1], serde_json::Value::Null);

    // Pages of a table.
    let page = read_as(&served.client, &format!("{config_maps}?limit=2"), TABLE)
        .await
        .unwrap();
    assert_eq!(page["rows"].as_array().unwrap().len(), 2);
    assert_eq!(page["metadata"]["remainingItemCount"], 1);
    let token = page["metadata"]["continue"].as_str().unwrap();
    let rest = read_as(
        &served.client,
        &format!("{config_maps}?limit=2&continue={token}"),
        TABLE,
    )
    .await
    .unwrap();
    assert_eq!(rest["rows"][0]["cells"][0], "c3");

    // What kdi cannot write, or what is not what was asked: 406; a bad
    // includeObject: 400, as from the API server.
    for (uri, accept) in [
        (config_maps.clone(), "application/yaml"),
        (
            config_maps.clone(),
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
        ),
        (format!("{config_maps}?includeObject=Everything"), TABLE),
    ] {
        let refused = read_as(&served.client, &uri, accept).await.unwrap_err();
        let expected = if uri.contains("includeObject") {
            400
        } else {
            406
        };
        assert_eq!(code(&refused), expected, "{uri} as {accept}: {refused}");
        if accept != "application/yaml" {
            assert_eq!(
                code(&read_as(&admin, &uri, accept).await.unwrap_err()),
                expected,
                "the API server, {uri} as {accept}"
            );
        }
    }
    served.cancel.cancel();
}

#[tokio::test]
async fn a_watch_asked_as_a_table_gets_a_row_an_event_as_from_the_api_server() {
    let admin = support::admin().await;
    let served = serve_tables(&admin).await;
    let gizmos = format!(
        "/apis/{}/v1/namespaces/{}/gizmos",
        served.gizmos.group, served.ns
    );
    let mut watches = Vec::new();
    for client in [&served.client, &admin] {
        let listed = read_as(client, &gizmos, TABLE).await.unwrap();
        let version = listed["metadata"]["resourceVersion"].as_str().unwrap();
        let request = http::Request::get(format!(
            "{gizmos}?watch=true&resourceVersion={version}&timeoutSeconds=30"
        ))
        .header(http::header::ACCEPT, TABLE)
        .body(Vec::new())
        .unwrap();
        let events = client
            .request_events::<serde_json::Value>(request)
            .await
            .unwrap();
        watches.push((listed, Box::pin(events)));
    }

    let api: Api<DynamicObject> = Api::namespaced_with(admin.clone(), &served.ns, &served.gizmos);
    let mut gizmo = DynamicObject::new("g4", &served.gizmos);
    gizmo.data = json!({ "spec": { "node": "n4", "replicas": 1 } });
    api.create(&PostParams::default(), &gizmo).await.unwrap();
    api.patch(
        "g4",
        &PatchParams::default(),
        &Patch::Merge(json!({ "spec": { "replicas": 5 } })),
    )
    .await
    .unwrap();
    api.delete("g4", &Default::default()).await.unwrap();

    let mut seen = Vec::new();
    for (listed, events) in &mut watches {
        let mut tables = Vec::new();
        while tables.len() < 3 {
            let event = tokio::time::timeout(Duration::from_secs(20), events.try_next())
                .await
                .expect("an event within 20 s")
                .unwrap()
                .expect("the watch goes on");
            let (kind, table) = match event {
                WatchEvent::Added(t) => ("ADDED", t),
                WatchEvent::Modified(t) => ("MODIFIED", t),
                WatchEvent::Deleted(t) => ("DELETED", t),
                other => panic!("unexpected event: {other:?}"),
            };
            assert_eq!(table["kind"], "Table");
            assert_eq!(table["rows"].as_array().unwrap().len(), 1, "{table}");
            // The column definitions come with the first event only.
            if tables.is_empty() {
                assert_eq!(table["columnDefinitions"], listed["columnDefinitions"]);
            } else {
                assert_eq!(table["columnDefinitions"], serde_json::Value::Null);
            }
            let mut table = table;
            table["columnDefinitions"] = listed["columnDefinitions"].clone();
            let mut table = comparable(table);
            table["columnDefinitions"] = serde_json::Value::Null;
            tables.push((kind, table["rows"][0]["cells"].clone()));
        }
        seen.push(tables);
    }
    assert_eq!(seen[0], seen[1], "kdi's events, then the API server's");
    assert_eq!(seen[0][1].1[2], 5, "the modified row's replicas");
    served.cancel.cancel();
}
