use crate::cache::lister::*;
use crate::cache::index::IndexFn;
use crate::cache::store::StoreWriter;
use kube_core::DynamicObject;
use serde_json::json;
use std::sync::Arc;

fn object(ns: Option<&str>, name: &str, labels: serde_json::Value) -> Arc<DynamicObject> {
    let mut meta = json!({ "name": name, "labels": labels });
    if let Some(ns) = ns {
        meta["namespace"] = json!(ns);
    }
    Arc::new(serde_json::from_value(json!({ "metadata": meta })).unwrap())
}

fn names(objects: &[CachedObject]) -> Vec<String> {
    let mut names: Vec<String> = objects.iter().map(|o| o.key().unwrap()).collect();
    names.sort();
    names
}

fn pods() -> (StoreWriter, Lister) {
    let mut writer = StoreWriter::with_storage(STORAGE);
    writer.upsert(object(
        Some("a"),
        "web-1",
        json!({ "app": "web", "tier": "front" }),
    ));
    writer.upsert(object(
        Some("a"),
        "db-1",
        json!({ "app": "db", "tier": "back" }),
    ));
    writer.upsert(object(
        Some("b"),
        "web-2",
        json!({ "app": "web", "canary": "" }),
    ));
    writer.upsert(object(Some("b"), "job-1", json!({})));
    let lister = Lister::new(
        writer.reader(),
        ResourceKey::new("", "v1", "pods"),
        Scope::Namespaced,
    );
    (writer, lister)
}

#[test]
fn every_selector_operator() {
    let (_w, pods) = pods();
    let list = |s: &str| names(&pods.list(s).unwrap());
    assert_eq!(list(""), ["a/db-1", "a/web-1", "b/job-1", "b/web-2"]);
    assert_eq!(list("app=web"), ["a/web-1", "b/web-2"]);
    assert_eq!(list("app==web"), ["a/web-1", "b/web-2"]);
    assert_eq!(list("app!=web"), ["a/db-1", "b/job-1"]);
    assert_eq!(list("app in (db, web),tier"), ["a/db-1", "a/web-1"]);
    assert_eq!(list("app notin (web)"), ["a/db-1", "b/job-1"]);
    assert_eq!(list("canary"), ["b/web-2"]);
    assert_eq!(list("!app"), ["b/job-1"]);
    assert_eq!(list("app=web,!canary"), ["a/web-1"]);
    let parsed = Selector::parse("tier=back").unwrap();
    assert_eq!(names(&pods.list(&parsed).unwrap()), ["a/db-1"]);
    assert_eq!(
        names(&pods.list(String::from("tier=front")).unwrap()),
        ["a/web-1"]
    );
}

#[test]
fn selector_errors_name_the_resource_and_the_position() {
    let (_w, pods) = pods();
    let err = pods.list("app=web,,tier").unwrap_err();
    assert!(matches!(err, CacheError::Selector { .. }));
    let said = crate::vocabulary::error_chain(&err);
    assert!(
        said.starts_with("listing pods.v1: label selector \"app=web,,tier\""),
        "{said}"
    );
    assert!(said.contains("column 9"), "{said}");
    let err = pods.namespace("a").unwrap().list("app in web").unwrap_err();
    let said = crate::vocabulary::error_chain(&err);
    assert!(said.contains("expected '('"), "{said}");
}

#[test]
fn namespaces_get_and_indexes() {
    let (_w, pods) = pods();
    let a = pods.namespace("a").unwrap();
    assert_eq!(a.namespace(), "a");
    assert_eq!(names(&a.list_all()), ["a/db-1", "a/web-1"]);
    assert_eq!(names(&a.list("app=web").unwrap()), ["a/web-1"]);
    assert!(a.get("web-1").is_some());
    assert!(a.get("web-2").is_none());
    assert!(pods.get("b/web-2").is_some());
    assert!(pods.namespace("nowhere").unwrap().list_all().is_empty());

    pods.store()
        .add_index(
            "app",
            IndexFn::jmespath("app", "metadata.labels.app").unwrap(),
        )
        .unwrap();
    assert_eq!(
        names(&pods.by_index("app", "web").unwrap()),
        ["a/web-1", "b/web-2"]
    );
    // The lister's own index reads are its store's, with the store's error.
    let err = pods.by_index("nope", "x").unwrap_err();
    assert!(matches!(err, CacheError::UnknownIndex { .. }));
    assert_eq!(
        err.to_string(),
        "unknown index \"nope\"; the store has: namespace, app"
    );
    // A namespace view's errors name the resource.
    let err = pods
        .namespace("a")
        .unwrap()
        .by_index("nope", "x")
        .unwrap_err();
    assert_eq!(
        crate::vocabulary::error_chain(&err),
        "querying an index of pods.v1: unknown index \"nope\"; the store has: namespace, app"
    );
}

#[test]
fn cluster_scoped_and_unwatched_namespaces_are_errors() {
    let mut writer = StoreWriter::with_storage(STORAGE);
    writer.upsert(object(None, "node-1", json!({ "zone": "x" })));
    let nodes = Lister::new(
        writer.reader(),
        ResourceKey::new("", "v1", "nodes"),
        Scope::Cluster,
    );
    assert!(nodes.get("node-1").is_some());
    assert_eq!(nodes.list("zone=x").unwrap().len(), 1);
    let err = nodes.namespace("default").unwrap_err();
    assert_eq!(
        err.to_string(),
        "nodes.v1 is cluster-scoped: it cannot be restricted to namespaces (default)"
    );

    let (_w, pods) = pods();
    let pods = pods.watching_namespaces(["a", "b"]);
    assert!(pods.namespace("a").is_ok());
    let err = pods.namespace("c").unwrap_err();
    assert_eq!(
        err.to_string(),
        "pods.v1: namespace \"c\" is not watched by this informer (it watches a, b)"
    );
}

#[test]
fn scope_from_discovery() {
    let (tx, rx) = watch::channel(ResourceAvailability::NotServed {
        reason: "not yet".into(),
    });
    let lister = Lister::discovered(
        StoreWriter::with_storage(STORAGE).reader(),
        ResourceKey::new("example.com", "v1", "things"),
        rx,
    );
    assert_eq!(lister.scope(), None);
    assert!(lister.namespace("x").is_ok());
    tx.send_replace(ResourceAvailability::Served {
        resource: kube_core::ApiResource {
            group: "example.com".into(),
            version: "v1".into(),
            api_version: "example.com/v1".into(),
            kind: "Thing".into(),
            plural: "things".into(),
        },
        scope: Scope::Cluster,
    });
    assert_eq!(lister.scope(), Some(Scope::Cluster));
    assert!(lister.namespace("x").is_err());
}

#[test]
fn a_namespace_lister_reads_an_index_for_its_namespace_only() {
    let (_w, pods) = pods();
    pods.store()
        .add_index(
            "app",
            IndexFn::jmespath("app", "metadata.labels.app").unwrap(),
        )
        .unwrap();
    let in_b = pods.namespace("b").unwrap();
    assert_eq!(names(&in_b.by_index("app", "web").unwrap()), ["b/web-2"]);
    assert!(in_b.by_index("app", "db").unwrap().is_empty());
    assert_eq!(names(&pods.by_index("app", "web").unwrap()), ["a/web-1", "b/web-2"]);
    assert!(matches!(
        in_b.by_index("nope", "x"),
        Err(CacheError::Index { .. })
    ));
    assert_eq!(names(&in_b.list("app").unwrap()), ["b/web-2"]);
}
