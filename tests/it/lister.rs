//! The generic lister against a real kube-apiserver: label selectors that
//! select what the server selects, namespace views, get, indexes, and
//! cluster-scoped CRDs.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, DynamicObject, ListParams, PostParams};
use kube_dynamic_informer::cache::IndexFn;
use kube_dynamic_informer::cache::{CacheError, CachedObject};
use kube_dynamic_informer::factory::InformerFactory;
use kube_dynamic_informer::vocabulary::{Scope, error_chain};
use serde_json::json;

use crate::discovery::gizmo_crd;
use crate::support;

fn names(objects: &[CachedObject]) -> Vec<String> {
    let mut names: Vec<String> = objects
        .iter()
        .map(|o| o.name().unwrap_or_default().to_owned())
        .collect();
    names.sort();
    names
}

async fn labelled_config_maps(api: &Api<ConfigMap>, items: &[(&str, serde_json::Value)]) {
    for (name, labels) in items {
        api.create(
            &PostParams::default(),
            &serde_json::from_value(json!({ "metadata": { "name": name, "labels": labels } }))
                .unwrap(),
        )
        .await
        .unwrap();
    }
}

#[tokio::test]
async fn label_selectors_select_what_the_api_server_selects() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "lst-sel").await;
    let api = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    labelled_config_maps(
        &api,
        &[
            (
                "web-prod",
                json!({ "app": "web", "env": "prod", "tier": "front" }),
            ),
            (
                "web-dev",
                json!({ "app": "web", "env": "dev", "canary": "" }),
            ),
            (
                "db-prod",
                json!({ "app": "db", "env": "prod", "tier": "back" }),
            ),
            ("job", json!({ "kind": "batch" })),
            ("bare", json!({})),
        ],
    )
    .await;
    let factory =
        InformerFactory::with_options(client.clone(), crate::support::options().namespace(&ns));
    let cms = factory.for_resource("configmaps").await.unwrap();
    factory.start().unwrap();
    assert!(
        factory
            .wait_for_cache_sync(Duration::from_secs(30))
            .await
            .all_synced()
    );
    let lister = cms.lister();
    for selector in [
        "",
        "app=web",
        "app==web",
        "app!=web",
        "env in (prod, dev)",
        "env notin (prod)",
        "tier",
        "!tier",
        "app=web,!canary",
        "app in (web,db),env=prod,tier!=front",
        "canary",
        "app notin (web, db),!kind",
    ] {
        let server: Vec<String> = {
            let mut n: Vec<String> = api
                .list(&ListParams::default().labels(selector))
                .await
                .unwrap()
                .items
                .into_iter()
                .filter_map(|c| c.metadata.name)
                .collect();
            n.sort();
            n
        };
        assert_eq!(
            names(&lister.list(selector).unwrap()),
            server,
            "{selector:?}"
        );
        assert_eq!(
            names(&lister.namespace(&ns).unwrap().list(selector).unwrap()),
            server,
            "{selector:?} in the namespace"
        );
    }
    // A selector the server would reject is rejected here, saying where.
    let err = lister.list("env in (prod").unwrap_err();
    assert!(matches!(err, CacheError::Selector { .. }));
    assert_eq!(
        error_chain(&err),
        r#"listing configmaps.v1: label selector "env in (prod": expected ')' or ',' at column 13"#
    );
    assert!(
        api.list(&ListParams::default().labels("env in (prod"))
            .await
            .is_err()
    );
    factory.shutdown().await;
}

#[tokio::test]
async fn namespace_views_get_and_indexes_across_namespaces() {
    let client = support::admin().await;
    let (a, b) = (
        support::namespace(&client, "lst-ns-a").await,
        support::namespace(&client, "lst-ns-b").await,
    );
    let marker = support::suffix();
    for (ns, team) in [(&a, "red"), (&b, "blue")] {
        labelled_config_maps(
            &Api::namespaced(client.clone(), ns),
            &[
                ("one", json!({ "marker": marker, "team": team })),
                ("two", json!({ "marker": marker, "team": "green" })),
            ],
        )
        .await;
    }
    let factory = InformerFactory::new(client.clone());
    let cms = factory
        .for_resource_with("cm", |o| o.label_selector(format!("marker={marker}")))
        .await
        .unwrap();
    cms.informer()
        .add_index(
            "team",
            IndexFn::jmespath("team", "metadata.labels.team").unwrap(),
        )
        .unwrap();
    factory.start().unwrap();
    assert!(
        factory
            .wait_for_cache_sync(Duration::from_secs(30))
            .await
            .all_synced()
    );
    let lister = cms.lister();
    assert_eq!(lister.scope(), Some(Scope::Namespaced));
    assert_eq!(lister.list_all().len(), 4);
    let in_a = lister.namespace(&a).unwrap();
    assert_eq!(names(&in_a.list_all()), ["one", "two"]);
    assert_eq!(names(&in_a.list("team=red").unwrap()), ["one"]);
    assert!(in_a.list("team=blue").unwrap().is_empty());
    assert_eq!(in_a.get("one").unwrap().namespace(), Some(a.as_str()));
    assert!(lister.get(&format!("{b}/two")).is_some());
    assert!(
        lister.get("two").is_none(),
        "namespaced objects are keyed namespace/name"
    );

    assert_eq!(lister.by_index("team", "green").unwrap().len(), 2);
    let blue = lister.by_index("team", "blue").unwrap();
    assert_eq!(blue[0].namespace(), Some(b.as_str()));
    assert_eq!(lister.by_index("namespace", &a).unwrap().len(), 2);
    // The lister's index reads are its store's, with the store's error.
    let err = lister.by_index("colour", "red").unwrap_err();
    assert!(matches!(err, CacheError::UnknownIndex { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "unknown index \"colour\"; the store has: namespace, team"
    );
    // A namespace view's errors name the resource.
    let err = in_a.by_index("colour", "red").unwrap_err();
    assert!(matches!(err, CacheError::Index { .. }), "{err:?}");
    assert_eq!(
        error_chain(&err),
        "querying an index of configmaps.v1: unknown index \"colour\"; the store has: namespace, team"
    );
    factory.shutdown().await;
}

#[tokio::test]
async fn a_cluster_scoped_crd_through_a_generic_informer() {
    let client = support::admin().await;
    let group = support::unique_group();
    let marker = support::suffix();
    let ar = support::install_crd(&client, &gizmo_crd(&group, &marker, "Cluster")).await;
    let api = Api::<DynamicObject>::all_with(client.clone(), &ar);
    for (name, colour) in [("g1", "red"), ("g2", "blue")] {
        let mut o = DynamicObject::new(name, &ar);
        o.metadata.labels = Some([("colour".to_string(), colour.to_string())].into());
        o.data = json!({ "spec": {} });
        api.create(&PostParams::default(), &o).await.unwrap();
    }
    let factory = InformerFactory::new(client.clone());
    let gizmos = factory.for_resource(format!("gz{marker}")).await.unwrap();
    factory.start().unwrap();
    assert!(
        factory
            .wait_for_cache_sync(Duration::from_secs(30))
            .await
            .all_synced()
    );
    assert_eq!(gizmos.scope(), Some(Scope::Cluster));
    let lister = gizmos.lister();
    assert_eq!(
        lister.get("g1").unwrap().kind(),
        Some(format!("Gizmo{marker}").as_str())
    );
    assert_eq!(names(&lister.list("colour=blue").unwrap()), ["g2"]);
    assert_eq!(names(&lister.list("colour notin (blue)").unwrap()), ["g1"]);
    let err = lister.namespace("default").unwrap_err();
    assert!(matches!(err, CacheError::ClusterScoped { .. }), "{err:?}");
    factory.shutdown().await;
}
