//! The informer factory against a real kube-apiserver: one informer per
//! resource and options, start/stop/remove, CRDs installed late, deleted and
//! created again, RBAC granted late, namespaces, and metadata-only mode.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::Client;
use kube_client::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kube_dynamic_informer::cache::{CacheError, CachedObject};
use kube_dynamic_informer::factory::{FactoryError, InformerFactory, InformerHandle};
use kube_dynamic_informer::informer::BackoffConfig;
use kube_dynamic_informer::informer::{Event, InformerStatus, NotSynced, SyncPolicy};
use kube_dynamic_informer::vocabulary::Namespaces;
use kube_dynamic_informer::vocabulary::{ResourceKey, error_chain};
use serde_json::json;

use crate::support::{self, User};

/// Records events as short strings.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

impl Recorder {
    fn handler(&self) -> impl Fn(Event) + Send + Sync + 'static {
        let log = self.0.clone();
        move |e: Event| {
            let name = e.object().name().unwrap_or_default().to_owned();
            log.lock().unwrap().push(format!("{} {name}", e.kind()));
        }
    }
    fn snapshot(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
    fn contains(&self, entry: &str) -> bool {
        self.0.lock().unwrap().iter().any(|e| e == entry)
    }
}

async fn eventually<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    support::wait_for(what, timeout, || {
        let r = f();
        async move { r.ok_or_else(|| "not yet".to_string()) }
    })
    .await
}

fn names(objects: &[CachedObject]) -> Vec<String> {
    let mut names: Vec<String> = objects
        .iter()
        .map(|o| o.name().unwrap_or_default().to_owned())
        .collect();
    names.sort();
    names
}

async fn config_map(client: &Client, ns: &str, name: &str, labels: serde_json::Value) {
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": { "name": name, "labels": labels },
                "data": { "payload": "x".repeat(64) }
            }))
            .unwrap(),
        )
        .await
        .unwrap_or_else(|e| panic!("creating configmap {ns}/{name}: {e}"));
}

/// Quick retries, so that tests do not wait out client-go's 30 s backoff.
fn quick_backoff() -> BackoffConfig {
    BackoffConfig {
        max: Duration::from_secs(2),
        ..BackoffConfig::default()
    }
}

#[tokio::test]
async fn the_same_resource_and_options_give_the_same_informer() {
    let factory = InformerFactory::new(support::admin().await);
    let by_short_name = factory.for_resource("deploy").await.unwrap();
    let deployments = ResourceKey::new("apps", "v1", "deployments");
    assert_eq!(by_short_name.resource(), deployments);
    for name in [
        "deployments.apps",
        "Deployment",
        "apps/v1/deployments",
        "deployments.v1.apps",
    ] {
        assert_eq!(
            factory.for_resource(name).await.unwrap(),
            by_short_name,
            "{name}"
        );
    }
    assert_eq!(
        factory.for_resource(&deployments).await.unwrap(),
        by_short_name
    );
    let gvr = kube_core::GroupVersionResource::gvr("apps", "v1", "deployments");
    assert_eq!(factory.for_resource(gvr).await.unwrap(), by_short_name);
    // Equal per-resource options share too; different ones do not.
    let in_shop = factory
        .for_resource_with("deploy", |o| o.namespace("shop"))
        .await
        .unwrap();
    assert_ne!(in_shop, by_short_name);
    assert_eq!(
        factory
            .for_resource_with("deployments.apps", |o| o.namespace("shop"))
            .await
            .unwrap(),
        in_shop
    );
    assert_ne!(
        factory
            .for_resource_with("deploy", |o| o.label_selector("app=web"))
            .await
            .unwrap(),
        by_short_name
    );
    // What does not shape the cache does not split it: what the factory
    // does when the resource is not served.
    assert_eq!(
        factory
            .for_resource_with("deploy", |o| o
                .when_not_served(kube_dynamic_informer::informer::WhenNotServed::Fail))
            .await
            .unwrap(),
        by_short_name
    );
    assert_eq!(factory.informers().len(), 3);
    // Objects marked sensitive are never written to disk: their cache is
    // not shared with a request that does not mark them.
    let sensitive = factory
        .for_resource_with("deploy", |o| o.sensitive(true))
        .await
        .unwrap();
    assert_ne!(sensitive, by_short_name);
    assert!(sensitive.informer().options().sensitive);
    assert_eq!(factory.informers().len(), 4);

    // Mistakes are caught when asking, with the resource named.
    let err = factory.for_resource("deploymnts").await.unwrap_err();
    assert!(
        err.to_string().contains("did you mean deployments.v1.apps"),
        "{err}"
    );
    let err = factory
        .for_resource_with("pods", |o| o.label_selector("app in (web"))
        .await
        .unwrap_err();
    assert!(matches!(err, FactoryError::Selector { .. }), "{err:?}");
    assert!(
        error_chain(&err).starts_with("pods.v1: invalid selector: label selector"),
        "{err}"
    );
    let err = factory.for_resource("tokenreviews").await.unwrap_err();
    assert!(matches!(err, FactoryError::NotWatchable { .. }), "{err:?}");
    assert!(err.to_string().contains("cannot be watched"), "{err}");
}

#[tokio::test]
async fn start_is_idempotent_and_starts_informers_asked_for_later() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "fac-start").await;
    config_map(&client, &ns, "one", json!({})).await;
    let factory =
        InformerFactory::with_options(client.clone(), crate::support::options().namespace(&ns));
    let early = factory.for_resource("configmaps").await.unwrap();
    assert_eq!(early.status(), InformerStatus::NotStarted);
    let report = factory.wait_for_cache_sync(Duration::from_secs(1)).await;
    assert!(matches!(
        report.get(early.resource()),
        Some(Err(FactoryError::NotSynced {
            reason: NotSynced::NotStarted,
            ..
        }))
    ));

    factory.start().unwrap();
    factory.start().unwrap();
    let late = factory.for_resource("secrets").await.unwrap();
    let report = factory.wait_for_cache_sync(Duration::from_secs(30)).await;
    assert!(report.all_synced(), "{report:?}");
    assert_eq!(report.results.len(), 2);
    assert!(late.has_synced(), "asked for after start, started at once");
    assert!(early.lister().namespace(&ns).unwrap().get("one").is_some());

    factory.shutdown().await;
    assert_eq!(early.status(), InformerStatus::Stopped);
    assert_eq!(late.status(), InformerStatus::Stopped);
    assert!(matches!(
        factory.for_resource("pods").await,
        Err(FactoryError::ShutDown)
    ));
}

#[tokio::test]
async fn a_crd_installed_late_is_pending_then_starts_by_itself() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "fac-late-crd").await;
    let group = support::unique_group();
    let factory = InformerFactory::new(client.clone());
    factory.start().unwrap();
    let widgets = factory
        .for_resource(format!("widgets.v1.{group}"))
        .await
        .unwrap();
    let recorder = Recorder::default();
    widgets.informer().add_handler(recorder.handler());
    eventually("the informer to report pending", Duration::from_secs(10), || {
        matches!(widgets.status(), InformerStatus::Pending { ref reason } if reason.contains("not served")).then_some(())
    })
    .await;
    assert_eq!(widgets.scope(), None);
    let report = factory
        .wait_for_cache_sync(Duration::from_millis(500))
        .await;
    let failure = report.into_result().unwrap_err();
    assert!(
        matches!(
            failure,
            FactoryError::NotSynced {
                reason: NotSynced::NotServed { .. },
                ..
            }
        ),
        "{failure:?}"
    );
    assert_eq!(failure.reason(), "notServed");
    assert!(
        failure
            .to_string()
            .contains(&format!("widgets.v1.{group} is not served")),
        "{failure}"
    );
    let stats = widgets.informer().stats();
    let requests_while_pending = stats
        .list_requests
        .load(std::sync::atomic::Ordering::Relaxed)
        + stats
            .watch_requests
            .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(requests_while_pending, 0, "no request while pending");

    let ar = support::install_crd(&client, &support::widget_crd(&group)).await;
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);
    api.create(
        &PostParams::default(),
        &support::widget(&ar, "w1", json!({ "size": 1 })),
    )
    .await
    .unwrap();
    // The informer starts by itself within seconds of the CRD being served.
    let report = factory.wait_for_cache_sync(Duration::from_secs(15)).await;
    assert!(report.all_synced(), "{report:?}");
    eventually(
        "the widget to reach the handler",
        Duration::from_secs(10),
        || recorder.contains("Add w1").then_some(()),
    )
    .await;
    let w1 = widgets.lister().namespace(&ns).unwrap().get("w1").unwrap();
    assert_eq!(w1.kind(), Some("Widget"));
    assert_eq!(widgets.api_resource().unwrap().kind, "Widget");
    factory.shutdown().await;
}

/// An informer asked for before its CRD exists becomes, once the CRD is
/// served, the informer of that resource everywhere: its resource is what
/// discovery says, a writer reads its own writes through it and through the
/// factory, and asking again by any name gives the same informer.
#[tokio::test]
async fn a_late_crd_informer_is_the_resource_once_served() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "fac-late-rw").await;
    let group = support::unique_group();
    let factory = InformerFactory::new(client.clone());
    factory.start().unwrap();
    let by_plural_group = factory
        .for_resource(format!("widgets.{group}"))
        .await
        .unwrap();
    let fully = factory
        .for_resource(format!("widgets.v1.{group}"))
        .await
        .unwrap();
    assert_eq!(by_plural_group.resource().version, "", "not served yet");
    // Not served yet, it is said as it was named, everywhere.
    let named = format!("widgets.{group}");
    assert_eq!(by_plural_group.resource().to_string(), named);
    let report = factory.wait_for_cache_sync(Duration::ZERO).await;
    let waiting = report
        .failed()
        .find(|r| *r.resource == *named)
        .expect("the waiting informer has not synced");
    let why = waiting.result.as_ref().unwrap_err();
    let said = format!("{why} / {:?} / {}", error_chain(why), why.reason());
    assert!(said.contains(&named) && !said.contains(".."), "{said}");
    let status = by_plural_group.informer().status().to_string();
    assert!(!status.contains(".."), "{status}");

    let ar = support::install_crd(&client, &support::widget_crd(&group)).await;
    let report = factory.wait_for_cache_sync(Duration::from_secs(30)).await;
    assert!(report.all_synced(), "{report:?}");
    let served = ResourceKey::new(&group, "v1", "widgets");
    assert_eq!(by_plural_group.resource(), served);
    assert_eq!(by_plural_group.informer().resource().kind, "Widget");
    assert_eq!(by_plural_group.informer().resource().version, "v1");

    // Read-your-writes through the informer and through the factory.
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);
    let written = api
        .create(
            &PostParams::default(),
            &support::widget(&ar, "w1", json!({ "size": 1 })),
        )
        .await
        .unwrap();
    by_plural_group
        .informer()
        .wait_for_object(&written, Duration::from_secs(10))
        .await
        .unwrap();
    assert!(
        factory
            .wait_for_object(&written, Duration::from_secs(10))
            .await
            .unwrap()
            >= 1
    );

    // Any name of the served resource gives an informer asked for already.
    for name in [
        format!("widgets.v1.{group}"),
        format!("widgets.{group}"),
        format!("{group}/v1/widgets"),
    ] {
        let again = factory.for_resource(name.as_str()).await.unwrap();
        assert!(
            again == by_plural_group || again == fully,
            "{name} gave a new informer"
        );
    }
    let informers = factory.informers().len();
    factory
        .for_resource(format!("widgets.{group}"))
        .await
        .unwrap();
    assert_eq!(factory.informers().len(), informers, "no new informer");
    factory.shutdown().await;
}

#[tokio::test]
async fn a_deleted_crd_empties_the_cache_reports_gone_and_resumes_when_created_again() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "fac-gone").await;
    let group = support::unique_group();
    let crd = support::widget_crd(&group);
    let ar = support::install_crd(&client, &crd).await;
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);
    for name in ["w1", "w2"] {
        api.create(
            &PostParams::default(),
            &support::widget(&ar, name, json!({})),
        )
        .await
        .unwrap();
    }
    let factory = InformerFactory::with_options(
        client.clone(),
        crate::support::options().backoff(quick_backoff()),
    );
    let widgets = factory.for_resource(format!("wdg.{group}")).await.unwrap();
    let recorder = Recorder::default();
    widgets.informer().add_handler(recorder.handler());
    factory.start().unwrap();
    assert!(
        factory
            .wait_for_cache_sync(Duration::from_secs(30))
            .await
            .all_synced()
    );
    assert_eq!(widgets.lister().list_all().len(), 2);

    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    crds.delete(&format!("widgets.{group}"), &DeleteParams::default())
        .await
        .unwrap();
    let reason = eventually(
        "the informer to report gone",
        Duration::from_secs(30),
        || match widgets.status() {
            InformerStatus::Gone { reason } => Some(reason),
            _ => None,
        },
    )
    .await;
    assert!(reason.contains("not served"), "{reason}");
    assert!(
        widgets.lister().list_all().is_empty(),
        "the cache was emptied"
    );
    eventually(
        "handlers to get both deletes",
        Duration::from_secs(10),
        || (recorder.contains("Delete w1") && recorder.contains("Delete w2")).then_some(()),
    )
    .await;
    let report = factory.wait_for_cache_sync(Duration::from_secs(1)).await;
    assert!(
        matches!(
            report.get(widgets.resource()),
            Some(Err(FactoryError::NotSynced {
                reason: NotSynced::Gone { .. },
                ..
            }))
        ),
        "{report:?}"
    );
    // That nothing is requested can only be shown over time: 3 s span
    // several retries of the (quick) backoff a 404 loop would go through.
    let stats = widgets.informer().stats();
    let requests = || {
        stats
            .list_requests
            .load(std::sync::atomic::Ordering::Relaxed)
            + stats
                .watch_requests
                .load(std::sync::atomic::Ordering::Relaxed)
            + stats.errors.load(std::sync::atomic::Ordering::Relaxed)
    };
    let requests_when_gone = requests();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        requests(),
        requests_when_gone,
        "no request while gone: no 404 loop"
    );
    assert!(matches!(widgets.status(), InformerStatus::Gone { .. }));

    // Created again (and populated): the informer lists again and goes on.
    support::wait_for("the old CRD to be gone", Duration::from_secs(30), || {
        let crds = crds.clone();
        let name = format!("widgets.{group}");
        async move {
            match crds.get_opt(&name).await {
                Ok(None) => Ok(()),
                Ok(Some(_)) => Err("still there".to_string()),
                Err(e) => Err(e.to_string()),
            }
        }
    })
    .await;
    support::install_crd(&client, &crd).await;
    api.create(
        &PostParams::default(),
        &support::widget(&ar, "w3", json!({})),
    )
    .await
    .unwrap();
    eventually("the informer to resume", Duration::from_secs(30), || {
        (widgets.status() == InformerStatus::Synced && widgets.lister().list_all().len() == 1)
            .then_some(())
    })
    .await;
    eventually(
        "the handler to see the new widget",
        Duration::from_secs(10),
        || recorder.contains("Add w3").then_some(()),
    )
    .await;
    assert_eq!(
        recorder
            .snapshot()
            .iter()
            .filter(|e| e.starts_with("Delete"))
            .count(),
        2,
        "{:?}",
        recorder.snapshot()
    );
    factory.shutdown().await;
}

#[tokio::test]
async fn a_forbidden_resource_reports_403_and_syncs_once_access_is_granted() {
    let admin = support::admin().await;
    let ns = support::namespace(&admin, "fac-rbac").await;
    config_map(&admin, &ns, "one", json!({})).await;
    let factory = InformerFactory::with_options(
        support::client(User::Alice).await,
        crate::support::options().backoff(quick_backoff()),
    );
    let cms = factory
        .for_resource_with("cm", |o| o.namespace(&ns))
        .await
        .unwrap();
    factory.start().unwrap();
    // The first list's answer may take a while on a loaded machine; once
    // it has come, the report says why the cache is not synced.
    eventually("the list refused", Duration::from_secs(30), || {
        cms.status().is_refused().then_some(())
    })
    .await;
    let report = factory.wait_for_cache_sync(Duration::from_secs(3)).await;
    let failure = report.into_result().unwrap_err();
    match &failure {
        FactoryError::NotSynced {
            resource,
            reason: NotSynced::Forbidden { message },
        } => {
            assert_eq!(resource, &ResourceKey::new("", "v1", "configmaps"));
            assert!(message.contains("forbidden"), "{message}");
        }
        other => panic!("expected a 403, got {other:?}"),
    }
    assert!(
        failure
            .to_string()
            .contains("configmaps.v1: forbidden (403)"),
        "{failure}"
    );

    support::grant_configmap_read(&admin, &ns, User::Alice).await;
    let report = factory.wait_for_cache_sync(Duration::from_secs(30)).await;
    assert!(report.all_synced(), "{report:?}");
    assert!(cms.lister().namespace(&ns).unwrap().get("one").is_some());
    factory.shutdown().await;
}

#[tokio::test]
async fn remove_stops_one_informer_and_leaves_the_others() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "fac-remove").await;
    let factory =
        InformerFactory::with_options(client.clone(), crate::support::options().namespace(&ns));
    let cms = factory.for_resource("configmaps").await.unwrap();
    let cms_by_label = factory
        .for_resource_with("configmaps", |o| o.label_selector("keep=yes"))
        .await
        .unwrap();
    let secrets = factory.for_resource("secrets").await.unwrap();
    factory.start().unwrap();
    assert!(
        factory
            .wait_for_cache_sync(Duration::from_secs(30))
            .await
            .all_synced()
    );

    assert_eq!(
        factory.remove("cm").await.unwrap(),
        2,
        "both option sets of configmaps"
    );
    assert_eq!(cms.status(), InformerStatus::Stopped);
    assert_eq!(cms_by_label.status(), InformerStatus::Stopped);
    assert_eq!(factory.informers(), vec![secrets.clone()]);
    assert_eq!(factory.remove("configmaps").await.unwrap(), 0);

    // The rest carries on.
    Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), &ns)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({ "metadata": { "name": "s1" } })).unwrap(),
        )
        .await
        .unwrap();
    eventually("the secret to be cached", Duration::from_secs(10), || {
        secrets.lister().namespace(&ns).unwrap().get("s1")
    })
    .await;
    // Asking again makes a new informer.
    let again = factory.for_resource("configmaps").await.unwrap();
    assert_ne!(again, cms);
    assert!(
        factory
            .wait_for_cache_sync(Duration::from_secs(30))
            .await
            .all_synced()
    );
    factory.shutdown().await;
}

#[tokio::test]
async fn namespaces_restrict_what_is_cached_and_cluster_scoped_resources_ignore_the_factory_default()
 {
    let admin = support::admin().await;
    let (a, b, c) = (
        support::namespace(&admin, "fac-ns-a").await,
        support::namespace(&admin, "fac-ns-b").await,
        support::namespace(&admin, "fac-ns-c").await,
    );
    for ns in [&a, &b, &c] {
        for i in 0..3 {
            config_map(&admin, ns, &format!("cm-{i}"), json!({ "app": "demo" })).await;
        }
    }
    // Bob may read configmaps in a and b only: several namespaces need no
    // cluster-wide permission.
    support::grant_configmap_read(&admin, &a, User::Bob).await;
    support::grant_configmap_read(&admin, &b, User::Bob).await;
    let factory = InformerFactory::with_options(
        support::client(User::Bob).await,
        crate::support::options()
            .namespaces(Namespaces::only([a.clone(), b.clone()]))
            .label_selector("app=demo")
            .page_size(2),
    );
    let cms = factory.for_resource("configmaps").await.unwrap();
    let recorder = Recorder::default();
    cms.informer().add_handler(recorder.handler());
    factory.start().unwrap();
    let report = factory.wait_for_cache_sync(Duration::from_secs(30)).await;
    assert!(report.all_synced(), "{report:?}");
    let mut keys = cms.informer().store().keys();
    keys.sort();
    let want: Vec<String> = [&a, &b]
        .iter()
        .flat_map(|ns| (0..3).map(move |i| format!("{ns}/cm-{i}")))
        .collect();
    assert_eq!(keys, want);
    assert_eq!(
        cms.lister()
            .namespace(&b)
            .unwrap()
            .list("app=demo")
            .unwrap()
            .len(),
        3
    );
    assert!(matches!(
        cms.lister().namespace(&c),
        Err(CacheError::NamespaceNotWatched { .. })
    ));

    // Changes in either namespace arrive through the merged watch.
    let admin_b = Api::<ConfigMap>::namespaced(admin.clone(), &b);
    admin_b
        .patch(
            "cm-1",
            &PatchParams::default(),
            &Patch::Merge(json!({ "data": { "changed": "yes" } })),
        )
        .await
        .unwrap();
    config_map(&admin, &a, "cm-new", json!({ "app": "demo" })).await;
    config_map(&admin, &c, "cm-elsewhere", json!({ "app": "demo" })).await;
    eventually("both changes to arrive", Duration::from_secs(10), || {
        (recorder.contains("Update cm-1") && recorder.contains("Add cm-new")).then_some(())
    })
    .await;
    assert!(!recorder.contains("Add cm-elsewhere"));

    // The factory-wide namespaces do not apply to a cluster-scoped resource;
    // a per-resource one is an error.
    let admin_factory =
        InformerFactory::with_options(admin.clone(), crate::support::options().namespace(&a));
    let namespaces = admin_factory.for_resource("ns").await.unwrap();
    assert_eq!(namespaces.options().watch.namespaces, Namespaces::All);
    let err = admin_factory
        .for_resource_with("ns", |o| o.namespace(&b))
        .await
        .unwrap_err();
    assert!(matches!(err, FactoryError::ClusterScoped(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("namespaces.v1 is cluster-scoped: it cannot be restricted to namespaces ({b})")
    );
    admin_factory.start().unwrap();
    assert!(
        admin_factory
            .wait_for_cache_sync(Duration::from_secs(30))
            .await
            .all_synced()
    );
    assert!(namespaces.lister().get(&c).is_some());
    assert!(matches!(
        namespaces.lister().namespace(&a),
        Err(CacheError::ClusterScoped { .. })
    ));
    factory.shutdown().await;
    admin_factory.shutdown().await;
}

#[tokio::test]
async fn metadata_only_informers_cache_metadata_and_follow_changes() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "fac-meta").await;
    config_map(&client, &ns, "a", json!({ "tier": "front" })).await;
    let factory =
        InformerFactory::with_options(client.clone(), crate::support::options().namespace(&ns));
    let meta = factory
        .for_resource_with("configmaps", |o| o.metadata_only(true))
        .await
        .unwrap();
    let full = factory.for_resource("configmaps").await.unwrap();
    assert_ne!(meta, full);
    let recorder = Recorder::default();
    meta.informer().add_handler(recorder.handler());
    factory.start().unwrap();
    assert!(
        factory
            .wait_for_cache_sync(Duration::from_secs(30))
            .await
            .all_synced()
    );

    let a = meta.lister().namespace(&ns).unwrap().get("a").unwrap();
    assert_eq!(a.kind(), Some("ConfigMap"));
    assert_eq!(a.api_version(), Some("v1"));
    assert_eq!(a.labels().get("tier"), Some("front"));
    assert_eq!(a.object().data, json!({}), "no data in metadata-only mode");
    let a_full = full.lister().namespace(&ns).unwrap().get("a").unwrap();
    assert!(a_full.object().data["data"]["payload"].is_string());

    // Watch events are metadata too, and label selectors work on them.
    Api::<ConfigMap>::namespaced(client.clone(), &ns)
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "labels": { "tier": "back" } } })),
        )
        .await
        .unwrap();
    config_map(&client, &ns, "b", json!({ "tier": "front" })).await;
    eventually("the update and the add", Duration::from_secs(10), || {
        (recorder.contains("Update a") && recorder.contains("Add b")).then_some(())
    })
    .await;
    assert_eq!(names(&meta.lister().list("tier=back").unwrap()), ["a"]);
    assert_eq!(
        meta.lister()
            .namespace(&ns)
            .unwrap()
            .get("b")
            .unwrap()
            .object()
            .data,
        json!({})
    );
    Api::<ConfigMap>::namespaced(client.clone(), &ns)
        .delete("b", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the delete", Duration::from_secs(10), || {
        recorder.contains("Delete b").then_some(())
    })
    .await;
    factory.shutdown().await;
}

/// Bytes of a paged list of `url_path` (full objects or metadata only).
async fn list_bytes(client: &Client, url_path: &str, metadata_only: bool) -> usize {
    let request = kube_core::Request::new(url_path);
    let mut total = 0;
    let mut params = ListParams::default().limit(500);
    loop {
        let req = if metadata_only {
            request.list_metadata(&params)
        } else {
            request.list(&params)
        }
        .unwrap();
        let text = client.request_text(req).await.unwrap();
        total += text.len();
        let page: serde_json::Value = serde_json::from_str(&text).unwrap();
        match page["metadata"]["continue"]
            .as_str()
            .filter(|c| !c.is_empty())
        {
            Some(c) => params.continue_token = Some(c.to_owned()),
            None => return total,
        }
    }
}

fn cache_bytes(informer: &InformerHandle) -> usize {
    informer
        .informer()
        .store()
        .list_all()
        .iter()
        .map(|o| {
            let mut json = Vec::new();
            o.write_json(&mut json).unwrap();
            json.len()
        })
        .sum()
}

/// Memory and traffic of metadata-only mode against full objects, on 2,000
/// ConfigMaps of about 2 KB of data each. Prints the figures; asserts only
/// that metadata-only is the smaller.
#[tokio::test]
#[ignore = "measurement, run by hand: cargo test --test it metadata_only_saving -- --ignored --nocapture"]
async fn metadata_only_saving() {
    const COUNT: usize = 2000;
    let client = support::admin().await;
    let ns = support::namespace(&client, "fac-measure").await;
    let ar = kube_core::ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
    };
    let objects: Vec<DynamicObject> = (0..COUNT)
        .map(|i| {
            let mut o = DynamicObject::new(&format!("cm-{i:04}"), &ar).within(&ns);
            o.metadata.labels = Some([("app".to_string(), "measure".to_string())].into());
            o.data = json!({ "data": { "payload": format!("{i:04}").repeat(512) } });
            o
        })
        .collect();
    support::create_many(&Api::namespaced_with(client.clone(), &ns, &ar), objects, 16).await;

    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let full_traffic = list_bytes(&client, &path, false).await;
    let meta_traffic = list_bytes(&client, &path, true).await;

    let factory =
        InformerFactory::with_options(client.clone(), crate::support::options().namespace(&ns));
    let full = factory.for_resource("configmaps").await.unwrap();
    let stripped = factory
        .for_resource_with("configmaps", |o| o.strip_managed_fields())
        .await
        .unwrap();
    let meta = factory
        .for_resource_with("configmaps", |o| o.metadata_only(true))
        .await
        .unwrap();
    let meta_stripped = factory
        .for_resource_with("configmaps", |o| {
            o.metadata_only(true).strip_managed_fields()
        })
        .await
        .unwrap();
    factory.start().unwrap();
    assert!(
        factory
            .wait_for_cache_sync(Duration::from_secs(120))
            .await
            .all_synced()
    );
    for informer in [&full, &stripped, &meta, &meta_stripped] {
        assert_eq!(informer.lister().list_all().len(), COUNT);
    }
    let kib = |b: usize| b as f64 / 1024.0;
    let pct = |part: usize, whole: usize| 100.0 * part as f64 / whole as f64;
    println!(
        "metadata-only saving, {COUNT} ConfigMaps with 2 KiB of data each (kube-apiserver v1.37.2):"
    );
    println!(
        "  list traffic (JSON bodies, pages of 500): full {:.0} KiB, metadata-only {:.0} KiB ({:.1}% of full)",
        kib(full_traffic),
        kib(meta_traffic),
        pct(meta_traffic, full_traffic)
    );
    let (f, fs, m, ms) = (
        cache_bytes(&full),
        cache_bytes(&stripped),
        cache_bytes(&meta),
        cache_bytes(&meta_stripped),
    );
    println!("  cache (serialised JSON of cached objects):");
    println!("    full                          {:>8.0} KiB", kib(f));
    println!(
        "    full, managedFields stripped  {:>8.0} KiB ({:.1}% of full)",
        kib(fs),
        pct(fs, f)
    );
    println!(
        "    metadata-only                 {:>8.0} KiB ({:.1}% of full)",
        kib(m),
        pct(m, f)
    );
    println!(
        "    metadata-only, stripped       {:>8.0} KiB ({:.1}% of full)",
        kib(ms),
        pct(ms, f)
    );
    let kept: BTreeSet<String> = meta
        .lister()
        .list("app=measure")
        .unwrap()
        .iter()
        .filter_map(|o| o.name().map(str::to_owned))
        .collect();
    assert_eq!(kept.len(), COUNT, "labels survive in metadata-only mode");
    assert!(m < f && meta_traffic < full_traffic);
    factory.shutdown().await;
}

/// `shutdown_within` stops the informers and releases the Leases of the
/// shard group they follow, within its timeout: the other members can take
/// the slots at once.
#[tokio::test]
async fn shutdown_within_releases_the_shard_group_an_informer_follows() {
    use k8s_openapi::api::coordination::v1::Lease;
    use kube_dynamic_informer::declarative::{SHARD_GROUP_LABEL, ShardGroup, ShardGroupConfig};

    let client = support::admin().await;
    let ns = support::namespace(&client, "fac-shutdown").await;
    let name = format!("g{}", support::suffix());
    let group = ShardGroup::join(
        client.clone(),
        ShardGroupConfig::new(&name, &ns, "only").slots(4),
    )
    .unwrap();
    let factory = InformerFactory::new(client.clone());
    let configmaps = factory
        .for_resource_with("configmaps", |o| o.namespace(&ns).shard_group(&group))
        .await
        .unwrap();
    factory.start().unwrap();
    configmaps
        .informer()
        .wait_for_sync(Duration::from_secs(60))
        .await
        .unwrap();
    let leases: Api<Lease> = Api::namespaced(client.clone(), &ns);
    let held = || async {
        leases
            .list(&ListParams::default().labels(&format!("{SHARD_GROUP_LABEL}={name}")))
            .await
            .unwrap()
            .items
            .iter()
            .filter(|l| l.spec.as_ref().and_then(|s| s.holder_identity.as_deref()) == Some("only"))
            .count()
    };
    assert!(held().await > 0, "the member holds its slots");
    assert!(factory.shutdown_within(Duration::from_secs(20)).await);
    assert_eq!(held().await, 0, "released, not left to expire");
    assert_eq!(configmaps.status(), InformerStatus::Stopped);
}

/// An informer of a resource not served yet is pending from its start:
/// never "syncing" first (a terminal showed "syncing, 0 objects listed").
#[tokio::test]
async fn a_resource_not_served_is_pending_from_the_start() {
    let admin = support::admin().await;
    let group = support::unique_group();
    let factory = InformerFactory::new(admin);
    let widgets = factory
        .for_resource(format!("widgets.{group}"))
        .await
        .unwrap();
    factory.start().unwrap();
    // Read at once, before the informer's task ran.
    match widgets.status() {
        InformerStatus::Pending { reason } => {
            assert!(
                reason.contains("not served") || reason.contains(&group),
                "{reason}"
            );
        }
        other => panic!("pending from the start, not {other:?}"),
    }
    factory.shutdown().await;
}

/// Two names of one resource share one informer; each declares the index it
/// needs. The same definition twice is one index; another definition under
/// the same name is refused, saying so once.
#[tokio::test]
async fn an_index_declared_through_two_names_of_one_resource_is_one_index() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "fac-same-index").await;
    config_map(&client, &ns, "red", json!({ "team": "red" })).await;
    let factory = InformerFactory::with_options(client.clone(), support::options().namespace(&ns));
    let by_plural = factory.for_resource("configmaps").await.unwrap();
    let by_short = factory.for_resource("cm").await.unwrap();
    assert!(by_plural == by_short, "one informer for both names");
    factory.start().unwrap();
    assert!(
        factory
            .wait_for_cache_sync(Duration::from_secs(30))
            .await
            .all_synced()
    );
    by_plural
        .informer()
        .add_jmespath_index("team", "metadata.labels.team")
        .unwrap();
    by_short
        .informer()
        .add_jmespath_index("team", "metadata.labels.team")
        .unwrap();
    let store = by_short.informer().store();
    assert_eq!(store.index_names(), ["namespace", "team"]);
    assert_eq!(store.index_keys("team", "red").unwrap().len(), 1);

    let err = by_short
        .informer()
        .add_jmespath_index("team", "metadata.labels.owner")
        .unwrap_err();
    assert_eq!(
        error_chain(&err),
        r#"adding an index to configmaps.v1: index "team" already exists with another definition"#
    );
    factory.shutdown().await;
}

/// A one-shot reader's wait ends at the first refusal for every informer:
/// the refused one reads `forbidden`, one still waiting for its CRD reads
/// `notServed`, without waiting out the timeout for it.
#[tokio::test]
async fn the_first_refusal_ends_a_one_shot_wait_for_every_informer() {
    if !support::is_testenv() {
        eprintln!("skipped: needs testenv's ordinary users");
        return;
    }
    let admin = support::admin().await;
    let ns = support::namespace(&admin, "fac-give-up").await;
    let factory = InformerFactory::with_options(
        support::client(User::Alice).await,
        support::options().backoff(quick_backoff()).namespace(&ns),
    );
    let refused = factory.for_resource("configmaps").await.unwrap();
    let waiting = factory
        .for_resource(format!("widgets.{}", support::unique_group()))
        .await
        .unwrap();
    factory.start().unwrap();
    // Ten minutes asked; the guard fails the test long before that.
    let report = tokio::time::timeout(
        Duration::from_secs(60),
        factory.wait_for_cache_sync_with(Duration::from_secs(600), SyncPolicy::GiveUpWhenRefused),
    )
    .await
    .expect("the refusal ends the wait");
    let reason = |h: &InformerHandle| match report.get(h.resource()) {
        Some(Err(e)) => e.reason(),
        other => panic!("{other:?}"),
    };
    assert_eq!(reason(&refused), "forbidden");
    assert_eq!(reason(&waiting), "notServed");
    factory.shutdown().await;
}
