use crate::cache::store::*;
use crate::vocabulary::object_key::key_from_parts;
use proptest::prelude::*;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

fn object(value: Value) -> Arc<DynamicObject> {
    Arc::new(serde_json::from_value(value).expect("valid object"))
}

fn pod(ns: &str, name: &str, rv: &str, node: &str, labels: Value) -> Arc<DynamicObject> {
    object(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "resourceVersion": rv, "labels": labels},
        "spec": {"nodeName": node}
    }))
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn keys_of(objects: &[CachedObject]) -> Vec<String> {
    sorted(objects.iter().filter_map(CachedObject::key).collect())
}

fn label_keys() -> IndexFn {
    IndexFn::closure_infallible(|obj| {
        obj.metadata
            .labels
            .iter()
            .flat_map(|l| l.keys().cloned())
            .collect()
    })
}

/// Recomputes every index from scratch and compares with the
/// incrementally maintained maps, in both directions, and checks that
/// every index entry holds the very `Arc` the object map holds.
fn check_invariants(store: &Store) {
    let state = store.shared.read();
    assert_eq!(state.defs.len(), state.indexes.len());
    for (slot, (def, index)) in state.defs.iter().zip(&state.indexes).enumerate() {
        let mut expected: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (key, entry) in &state.objects {
            let mut values = entry
                .held
                .with_object(|o| def.func.evaluate(&def.name, &IndexInput::new(o)))
                .unwrap_or_default();
            values.sort();
            values.dedup();
            let stored: Vec<String> = entry.values[slot].iter().map(|v| v.to_string()).collect();
            assert_eq!(stored, values, "reverse map of {key} in {}", def.name);
            for value in values {
                expected.entry(value).or_default().insert(key.to_string());
            }
        }
        let actual: BTreeMap<String, BTreeSet<String>> = index
            .by_value
            .iter()
            .map(|(value, members)| {
                (
                    value.to_string(),
                    members.iter().map(|(k, _)| k.to_string()).collect(),
                )
            })
            .collect();
        assert_eq!(actual, expected, "index {}", def.name);
        for (value, members) in &index.by_value {
            if let Members::Many(map) = members {
                assert!(
                    map.len() >= 2,
                    "a map of fewer than two objects should be Members::One"
                );
            }
            for (key, filed) in members.iter() {
                let cached = &state.objects[&**key].held;
                assert!(
                    filed.same(cached),
                    "index {} holds a stale object for {key} under {value}",
                    def.name
                );
            }
        }
    }
    for entry in state.objects.values() {
        assert_eq!(entry.values.len(), state.defs.len());
    }
}

#[test]
fn keys_namespaced_and_cluster_scoped() {
    let mut writer = StoreWriter::with_storage(STORAGE);
    let store = writer.reader();
    writer.upsert(pod("shop", "web-0", "1", "n1", json!({})));
    writer.upsert(object(
        json!({"kind": "Node", "metadata": {"name": "node-1"}}),
    ));
    assert_eq!(sorted(store.keys()), ["node-1", "shop/web-0"]);
    assert!(store.get(&key_from_parts(Some("shop"), "web-0")).is_some());
    assert!(store.get(&key_from_parts(None, "node-1")).is_some());
    assert!(store.get(&key_from_parts(None, "web-0")).is_none());
    assert_eq!(
        store.get("shop/web-0").unwrap().key().as_deref(),
        Some("shop/web-0")
    );
    assert_eq!(
        store.get("node-1").unwrap().key().as_deref(),
        Some("node-1")
    );
    // The namespace index holds only the namespaced object.
    assert_eq!(store.index_values(NAMESPACE_INDEX).unwrap(), ["shop"]);
    assert_eq!(
        store.index_keys(NAMESPACE_INDEX, "shop").unwrap(),
        ["shop/web-0"]
    );
    check_invariants(&store);
}

#[test]
fn upsert_returns_previous_and_shares_the_arc() {
    let mut writer = StoreWriter::with_storage(STORAGE);
    let store = writer.reader();
    let first = pod("shop", "web-0", "1", "n1", json!({}));
    assert!(writer.upsert(first.clone()).is_none());
    let second = pod("shop", "web-0", "2", "n1", json!({}));
    let previous = writer.upsert(second.clone()).unwrap();
    assert!(Arc::ptr_eq(&previous.object(), &first));
    assert!(Arc::ptr_eq(
        &store.get("shop/web-0").unwrap().object(),
        &second
    ));
    assert!(Arc::ptr_eq(&store.list_all()[0].object(), &second));
    assert_eq!(store.len(), 1);
}

#[test]
fn objects_without_a_name_are_skipped() {
    let mut writer = StoreWriter::with_storage(STORAGE);
    assert!(
        writer
            .upsert(object(json!({"metadata": {"namespace": "x"}})))
            .is_none()
    );
    let outcome = writer.replace(vec![object(json!({"metadata": {}}))]);
    assert!(outcome.is_unchanged());
    assert!(writer.reader().is_empty());
}

#[test]
fn update_moves_index_values() {
    let mut writer = StoreWriter::with_storage(STORAGE);
    let store = writer.reader();
    store
        .add_index("node", IndexFn::jmespath("node", "spec.nodeName").unwrap())
        .unwrap();
    store.add_index("label-key", label_keys()).unwrap();
    writer.upsert(pod(
        "shop",
        "web-0",
        "1",
        "n1",
        json!({"app": "web", "tier": "front"}),
    ));
    writer.upsert(pod("shop", "web-1", "1", "n1", json!({"app": "web"})));
    assert_eq!(
        sorted(store.index_keys("node", "n1").unwrap()),
        ["shop/web-0", "shop/web-1"]
    );

    writer.upsert(pod("shop", "web-0", "2", "n2", json!({"app": "web"})));
    assert_eq!(store.index_keys("node", "n1").unwrap(), ["shop/web-1"]);
    assert_eq!(store.index_keys("node", "n2").unwrap(), ["shop/web-0"]);
    // The stale value is gone entirely, not left with an empty set.
    assert!(store.index_keys("label-key", "tier").unwrap().is_empty());
    assert_eq!(sorted(store.index_values("label-key").unwrap()), ["app"]);
    check_invariants(&store);
}

#[test]
fn delete_removes_from_every_index() {
    let mut writer = StoreWriter::with_storage(STORAGE);
    let store = writer.reader();
    store.add_index("label-key", label_keys()).unwrap();
    let web = pod("shop", "web-0", "1", "n1", json!({"app": "web"}));
    writer.upsert(web.clone());
    let deleted = writer.delete("shop/web-0").unwrap();
    assert!(Arc::ptr_eq(&deleted.object(), &web));
    assert!(writer.delete("shop/web-0").is_none());
    assert!(store.is_empty());
    assert!(store.index_values("label-key").unwrap().is_empty());
    assert!(store.index_values(NAMESPACE_INDEX).unwrap().is_empty());
    check_invariants(&store);
}

#[test]
fn many_to_many_label_keys() {
    let mut writer = StoreWriter::with_storage(STORAGE);
    let store = writer.reader();
    store.add_index("label-key", label_keys()).unwrap();
    writer.upsert(pod(
        "a",
        "p1",
        "1",
        "n",
        json!({"app": "x", "tier": "y", "team": "z"}),
    ));
    writer.upsert(pod("a", "p2", "1", "n", json!({"app": "x"})));
    writer.upsert(pod("b", "p3", "1", "n", json!({"tier": "y"})));
    assert_eq!(
        sorted(store.index_values("label-key").unwrap()),
        ["app", "team", "tier"]
    );
    assert_eq!(
        keys_of(&store.by_index("label-key", "app").unwrap()),
        ["a/p1", "a/p2"]
    );
    assert_eq!(
        keys_of(&store.by_index("label-key", "tier").unwrap()),
        ["a/p1", "b/p3"]
    );
    assert_eq!(
        keys_of(&store.by_index("label-key", "team").unwrap()),
        ["a/p1"]
    );
    assert!(store.by_index("label-key", "nope").unwrap().is_empty());
    check_invariants(&store);
}

#[test]
fn duplicate_values_from_one_object_count_once() {
    let mut writer = StoreWriter::with_storage(STORAGE);
    let store = writer.reader();
    store
        .add_index(
            "images",
            IndexFn::jmespath("images", "spec.containers[].image").unwrap(),
        )
        .unwrap();
    writer.upsert(object(json!({"metadata": {"name": "p", "namespace": "a"},
        "spec": {"containers": [{"image": "nginx"}, {"image": "nginx"}]}})));
    assert_eq!(store.index_keys("images", "nginx").unwrap(), ["a/p"]);
    check_invariants(&store);
}

#[test]
fn add_index_indexes_existing_objects() {
    let mut writer = StoreWriter::with_storage(STORAGE);
    let store = writer.reader();
    writer.upsert(pod("shop", "web-0", "1", "n1", json!({})));
    writer.upsert(pod("shop", "web-1", "1", "n2", json!({})));
    store
        .add_index("node", IndexFn::jmespath("node", "spec.nodeName").unwrap())
        .unwrap();
    assert_eq!(store.index_keys("node", "n1").unwrap(), ["shop/web-0"]);
    assert_eq!(store.index_names(), [NAMESPACE_INDEX, "node"]);
    writer.upsert(pod("shop", "web-2", "1", "n1", json!({})));
    assert_eq!(store.index_keys("node", "n1").unwrap().len(), 2);
    check_invariants(&store);
}

#[test]
fn duplicate_and_unknown_index_errors() {
    let store = StoreWriter::with_storage(STORAGE).reader();
    assert_eq!(store.index_names(), [NAMESPACE_INDEX]);
    assert_eq!(
        store.add_index(
            NAMESPACE_INDEX,
            IndexFn::jmespath("ns", "metadata.namespace").unwrap()
        ),
        Err(CacheError::DuplicateIndex {
            name: NAMESPACE_INDEX.to_owned()
        })
    );
    store
        .add_index("node", IndexFn::jmespath("node", "spec.nodeName").unwrap())
        .unwrap();
    let err = store.add_index("node", IndexFn::namespace()).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"index "node" already exists with another definition"#
    );
    let other = IndexFn::jmespath("node", "spec.node").unwrap();
    assert!(store.add_index("node", other).is_err());
    check_invariants(&store);
}

#[test]
fn an_index_declared_again_with_the_same_definition_is_accepted_once() {
    let mut writer = StoreWriter::with_storage(STORAGE);
    let store = writer.reader();
    writer.upsert(pod("shop", "web-0", "1", "n1", json!({})));
    store.add_index(NAMESPACE_INDEX, IndexFn::namespace()).unwrap();
    let by_node = || IndexFn::jmespath("node", "spec.nodeName").unwrap();
    store.add_index("node", by_node()).unwrap();
    store.add_index("node", by_node()).unwrap();
    let by_label_key = label_keys();
    store.add_index("label-key", by_label_key.clone()).unwrap();
    store.add_index("label-key", by_label_key).unwrap();
    assert!(store.add_index("label-key", label_keys()).is_err(), "another closure");
    assert_eq!(store.index_names(), [NAMESPACE_INDEX, "node", "label-key"]);
    assert_eq!(store.index_keys("node", "n1").unwrap(), ["shop/web-0"]);
    check_invariants(&store);
}

#[test]
fn unknown_index_errors() {
    let store = StoreWriter::with_storage(STORAGE).reader();
    store
        .add_index("node", IndexFn::jmespath("node", "spec.nodeName").unwrap())
        .unwrap();

    let err = store.by_index("nope", "x").unwrap_err();
    assert_eq!(
        err,
        CacheError::UnknownIndex {
            name: "nope".to_owned(),
            known: vec![NAMESPACE_INDEX.to_owned(), "node".to_owned()]
        }
    );
    assert_eq!(
        err.to_string(),
        r#"unknown index "nope"; the store has: namespace, node"#
    );
    assert!(store.index_keys("nope", "x").is_err());
    assert!(store.index_values("nope").is_err());
    assert_eq!(store.index_failures("nope"), None);
}

/// Collects `tracing` output of the current thread.
#[derive(Clone, Default)]
struct Captured(Arc<parking_lot::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn failing_index_leaves_object_out_counts_and_warns() {
    let captured = Captured::default();
    let sink = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || sink.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        let mut writer = StoreWriter::with_storage(STORAGE);
        let store = writer.reader();
        // `spec.template` is an object for one pod, a string for the other.
        store
            .add_index("tmpl", IndexFn::jmespath("tmpl", "spec.template").unwrap())
            .unwrap();
        writer.upsert(object(
            json!({"metadata": {"name": "bad", "namespace": "a"}, "spec": {"template": {"x": 1}}}),
        ));
        writer.upsert(object(
            json!({"metadata": {"name": "good", "namespace": "a"}, "spec": {"template": "t"}}),
        ));
        assert_eq!(store.index_failures("tmpl"), Some(1));
        assert_eq!(store.index_failures(NAMESPACE_INDEX), Some(0));
        assert_eq!(store.index_keys("tmpl", "t").unwrap(), ["a/good"]);
        assert_eq!(store.index_values("tmpl").unwrap(), ["t"]);
        // Still cached and in the other indexes.
        assert!(store.get("a/bad").is_some());
        assert_eq!(store.index_keys(NAMESPACE_INDEX, "a").unwrap().len(), 2);

        // Adding another failing index counts existing objects at once.
        store
            .add_index("fails", IndexFn::closure(|_| Err("nope".to_owned())))
            .unwrap();
        assert_eq!(store.index_failures("fails"), Some(2));
        check_invariants(&store);
    });
    let logs = String::from_utf8(captured.0.lock().clone()).unwrap();
    assert!(logs.contains("WARN"), "{logs}");
    assert!(
        logs.contains("index=tmpl") && logs.contains("object=\"a/bad\""),
        "{logs}"
    );
    assert!(logs.contains("result is an object"), "{logs}");
}

#[test]
fn replace_reports_added_updated_deleted_unchanged() {
    let mut writer = StoreWriter::with_storage(STORAGE);
    let store = writer.reader();
    store
        .add_index("node", IndexFn::jmespath("node", "spec.nodeName").unwrap())
        .unwrap();
    let kept = pod("a", "kept", "1", "n1", json!({}));
    let changed_old = pod("a", "changed", "1", "n1", json!({}));
    let gone = pod("a", "gone", "1", "n1", json!({}));
    for o in [&kept, &changed_old, &gone] {
        writer.upsert(o.clone());
    }

    let kept_relisted = pod("a", "kept", "1", "n1", json!({}));
    let changed_new = pod("a", "changed", "2", "n2", json!({}));
    let new = pod("b", "new", "1", "n2", json!({}));
    let outcome = writer.replace(vec![
        kept_relisted.clone(),
        changed_new.clone(),
        new.clone(),
    ]);

    assert_eq!(outcome.unchanged, 1);
    assert_eq!(outcome.added.len(), 1);
    assert!(Arc::ptr_eq(&outcome.added[0].object(), &new));
    assert_eq!(outcome.updated.len(), 1);
    assert!(Arc::ptr_eq(&outcome.updated[0].0.object(), &changed_old));
    assert!(Arc::ptr_eq(&outcome.updated[0].1.object(), &changed_new));
    assert_eq!(outcome.deleted.len(), 1);
    assert!(Arc::ptr_eq(&outcome.deleted[0].object(), &gone));

    // Unchanged keeps the cached Arc; changed and new are stored as given.
    assert!(Arc::ptr_eq(&store.get("a/kept").unwrap().object(), &kept));
    assert!(Arc::ptr_eq(
        &store.get("a/changed").unwrap().object(),
        &changed_new
    ));
    assert_eq!(sorted(store.keys()), ["a/changed", "a/kept", "b/new"]);
    assert_eq!(store.index_keys("node", "n1").unwrap(), ["a/kept"]);
    assert_eq!(
        sorted(store.index_keys("node", "n2").unwrap()),
        ["a/changed", "b/new"]
    );
    check_invariants(&store);

    let outcome = writer.replace(vec![kept_relisted, changed_new, new]);
    assert!(outcome.is_unchanged());
    assert_eq!(outcome.unchanged, 3);

    let outcome = writer.replace(Vec::new());
    assert_eq!(outcome.deleted.len(), 3);
    assert!(store.is_empty());
    assert!(store.index_values("node").unwrap().is_empty());
    check_invariants(&store);
}

#[test]
fn replace_without_resource_versions_compares_content() {
    let mut writer = StoreWriter::with_storage(STORAGE);
    let v1 = object(json!({"metadata": {"name": "c"}, "data": {"k": "1"}}));
    writer.upsert(v1.clone());
    let outcome = writer.replace(vec![object(
        json!({"metadata": {"name": "c"}, "data": {"k": "1"}}),
    )]);
    assert_eq!(outcome.unchanged, 1);
    assert!(Arc::ptr_eq(
        &writer.reader().get("c").unwrap().object(),
        &v1
    ));
    let outcome = writer.replace(vec![object(
        json!({"metadata": {"name": "c"}, "data": {"k": "2"}}),
    )]);
    assert_eq!(outcome.updated.len(), 1);
    // A resourceVersion appearing counts as a change.
    let outcome = writer.replace(vec![object(
        json!({"metadata": {"name": "c", "resourceVersion": "5"}, "data": {"k": "2"}}),
    )]);
    assert_eq!(outcome.updated.len(), 1);
}

/// The object filed under `value` in `index` with this name.
fn filed(store: &Store, index: &str, value: &str, name: &str) -> Arc<DynamicObject> {
    store
        .by_index(index, value)
        .unwrap()
        .into_iter()
        .find(|o| o.name() == Some(name))
        .unwrap_or_else(|| panic!("{name} is not under {index}={value}"))
        .object()
}

#[test]
fn update_keeping_index_values_serves_the_new_object() {
    let mut writer = StoreWriter::with_storage(STORAGE);
    let store = writer.reader();
    store
        .add_index("node", IndexFn::jmespath("node", "spec.nodeName").unwrap())
        .unwrap();
    // n1 holds two objects, n2 one.
    writer.upsert(pod("shop", "web-0", "1", "n1", json!({"app": "web"})));
    let web_1 = pod("shop", "web-1", "1", "n1", json!({"app": "web"}));
    writer.upsert(web_1.clone());
    writer.upsert(pod("shop", "db-0", "1", "n2", json!({"app": "db"})));
    // An index declared after the objects arrived.
    store.add_index("label-key", label_keys()).unwrap();

    // Status-style updates: new resourceVersion, same index values.
    let web_0 = pod("shop", "web-0", "2", "n1", json!({"app": "web"}));
    let db_0 = pod("shop", "db-0", "2", "n2", json!({"app": "db"}));
    writer.upsert(web_0.clone());
    writer.upsert(db_0.clone());

    for (index, value) in [
        ("node", "n1"),
        (NAMESPACE_INDEX, "shop"),
        ("label-key", "app"),
    ] {
        assert!(Arc::ptr_eq(&filed(&store, index, value, "web-0"), &web_0));
        assert!(Arc::ptr_eq(&filed(&store, index, value, "web-1"), &web_1));
    }
    for (index, value) in [
        ("node", "n2"),
        (NAMESPACE_INDEX, "shop"),
        ("label-key", "app"),
    ] {
        assert!(Arc::ptr_eq(&filed(&store, index, value, "db-0"), &db_0));
    }
    assert_eq!(store.by_index("node", "n1").unwrap().len(), 2);
    check_invariants(&store);
}

#[test]
fn replace_keeping_index_values_serves_the_new_objects() {
    let mut writer = StoreWriter::with_storage(STORAGE);
    let store = writer.reader();
    store
        .add_index("node", IndexFn::jmespath("node", "spec.nodeName").unwrap())
        .unwrap();
    let kept = pod("a", "kept", "1", "n1", json!({}));
    writer.upsert(kept.clone());
    writer.upsert(pod("a", "changed", "1", "n1", json!({})));
    writer.upsert(pod("a", "alone", "1", "n2", json!({})));

    let changed = pod("a", "changed", "2", "n1", json!({}));
    let alone = pod("a", "alone", "2", "n2", json!({}));
    let outcome = writer.replace(vec![
        pod("a", "kept", "1", "n1", json!({})),
        changed.clone(),
        alone.clone(),
    ]);
    assert_eq!((outcome.updated.len(), outcome.unchanged), (2, 1));

    assert!(Arc::ptr_eq(
        &filed(&store, "node", "n1", "changed"),
        &changed
    ));
    assert!(Arc::ptr_eq(&filed(&store, "node", "n2", "alone"), &alone));
    // Unchanged: the index keeps serving the cached `Arc`.
    assert!(Arc::ptr_eq(&filed(&store, "node", "n1", "kept"), &kept));
    for (name, expected) in [("changed", &changed), ("alone", &alone), ("kept", &kept)] {
        assert!(Arc::ptr_eq(
            &filed(&store, NAMESPACE_INDEX, "a", name),
            expected
        ));
    }
    check_invariants(&store);
}

#[test]
fn replace_with_duplicate_keys_keeps_the_last() {
    let mut writer = StoreWriter::with_storage(STORAGE);
    let last = pod("a", "p", "2", "n2", json!({}));
    let outcome = writer.replace(vec![pod("a", "p", "1", "n1", json!({})), last.clone()]);
    assert_eq!(outcome.added.len(), 1);
    assert!(Arc::ptr_eq(
        &writer.reader().get("a/p").unwrap().object(),
        &last
    ));
    check_invariants(&writer.reader());
}

#[test]
fn a_first_list_fills_the_cache_page_by_page() {
    let mut writer = StoreWriter::with_storage(STORAGE);
    let store = writer.reader();
    writer.begin_list();
    let page = writer.list_page(vec![
        pod("a", "p1", "1", "n1", json!({})),
        pod("a", "p2", "1", "n1", json!({})),
    ]);
    assert_eq!(page.added.len(), 2);
    // Readable at once: the list into an empty cache is not held back.
    assert_eq!(store.len(), 2);
    let page = writer.list_page(vec![pod("b", "p3", "1", "n2", json!({}))]);
    assert_eq!(page.added.len(), 1);
    let end = writer.end_list();
    assert!(end.is_unchanged());
    assert_eq!(sorted(store.keys()), ["a/p1", "a/p2", "b/p3"]);
    check_invariants(&store);
}

#[test]
fn a_relist_is_seen_whole_or_not_at_all() {
    let mut writer = StoreWriter::with_storage(STORAGE);
    let store = writer.reader();
    let kept = pod("a", "kept", "1", "n1", json!({}));
    let changed_old = pod("a", "changed", "1", "n1", json!({}));
    let gone = pod("a", "gone", "1", "n1", json!({}));
    writer.replace(vec![kept.clone(), changed_old.clone(), gone.clone()]);

    writer.begin_list();
    let first = writer.list_page(vec![pod("a", "kept", "1", "n1", json!({}))]);
    let changed_new = pod("a", "changed", "2", "n2", json!({}));
    let second = writer.list_page(vec![changed_new.clone(), pod("b", "new", "1", "n1", json!({}))]);
    assert!(first.is_unchanged() && second.is_unchanged());
    // Nothing of the relist is visible before its end.
    assert_eq!(sorted(store.keys()), ["a/changed", "a/gone", "a/kept"]);
    assert_eq!(
        store.get("a/changed").unwrap().resource_version(),
        Some("1")
    );

    let end = writer.end_list();
    assert_eq!(end.unchanged, 1);
    assert_eq!(end.added.len(), 1);
    assert_eq!(end.updated.len(), 1);
    assert!(Arc::ptr_eq(&end.updated[0].0.object(), &changed_old));
    assert!(Arc::ptr_eq(&end.updated[0].1.object(), &changed_new));
    assert_eq!(end.deleted.len(), 1);
    assert!(Arc::ptr_eq(&end.deleted[0].object(), &gone));
    assert!(Arc::ptr_eq(&store.get("a/kept").unwrap().object(), &kept));
    assert_eq!(sorted(store.keys()), ["a/changed", "a/kept", "b/new"]);
    assert_eq!(store.index_keys("namespace", "b").unwrap(), ["b/new"]);
    check_invariants(&store);
}

#[test]
fn a_list_started_again_is_reconciled_by_the_new_list() {
    let mut writer = StoreWriter::with_storage(STORAGE);
    let store = writer.reader();
    // A paged list that fell back to one full list after its first page.
    writer.begin_list();
    let first = writer.list_page(vec![
        pod("a", "p1", "1", "n1", json!({})),
        pod("a", "p2", "1", "n1", json!({})),
    ]);
    assert_eq!(first.added.len(), 2);
    writer.begin_list();
    writer.list_page(vec![
        pod("a", "p1", "1", "n1", json!({})),
        pod("a", "p3", "1", "n1", json!({})),
    ]);
    let end = writer.end_list();
    assert_eq!(end.unchanged, 1);
    assert_eq!(end.added.len(), 1);
    assert_eq!(end.deleted.len(), 1);
    assert_eq!(end.deleted[0].key().as_deref(), Some("a/p2"));
    assert_eq!(sorted(store.keys()), ["a/p1", "a/p3"]);
    check_invariants(&store);

    // An end without a start is an empty list.
    let end = writer.end_list();
    assert_eq!(end.deleted.len(), 2);
    assert!(store.is_empty());
}

#[test]
fn cached_objects_read_in_place_as_the_decoded_object_reads() {
    let mut writer = StoreWriter::with_storage(STORAGE);
    let store = writer.reader();
    let source = object(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {
            "name": "w", "namespace": "shop", "uid": "u-1", "resourceVersion": "7",
            "labels": { "app": "web", "tier": "front" },
            "annotations": { "note": "x" },
            "ownerReferences": [{ "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u-0", "controller": true }]
        },
        "spec": { "replicas": 3, "ports": [80, 443], "nested": { "a.b/c": "d" } }
    }));
    writer.upsert(source.clone());
    let cached = store.get("shop/w").unwrap();
    assert_eq!(cached.storage(), STORAGE);
    assert_eq!(cached.compact().is_some(), STORAGE == crate::cache::store::Storage::Compact);
    assert_eq!(cached.api_version(), Some("example.com/v1"));
    assert_eq!(cached.kind(), Some("Widget"));
    assert_eq!(cached.name(), Some("w"));
    assert_eq!(cached.namespace(), Some("shop"));
    assert_eq!(cached.uid(), Some("u-1"));
    assert_eq!(cached.resource_version(), Some("7"));
    assert_eq!(
        cached.labels().iter().collect::<Vec<_>>(),
        [("app", "web"), ("tier", "front")]
    );
    assert_eq!(cached.annotations().get("note"), Some("x"));
    let owners = cached.owner_references();
    assert_eq!(owners.len(), 1);
    assert_eq!((owners[0].kind(), owners[0].uid(), owners[0].controller()), ("ReplicaSet", "u-0", Some(true)));
    assert_eq!(cached.pointer("/spec/replicas").and_then(|v| v.as_i64()), Some(3));
    assert_eq!(cached.pointer("/spec/ports/1").and_then(|v| v.as_i64()), Some(443));
    assert_eq!(cached.pointer("/spec/nested/a.b~1c").and_then(|v| v.as_str()), Some("d"));
    assert_eq!(cached.pointer("/metadata/labels/app").and_then(|v| v.as_str()), Some("web"));
    assert_eq!(cached.pointer("/kind").and_then(|v| v.as_str()), Some("Widget"));
    assert!(cached.pointer("/spec/missing").is_none());
    assert!(cached.pointer("spec").is_none());
    let mut json = Vec::new();
    cached.write_json(&mut json).unwrap();
    assert_eq!(json, serde_json::to_vec(&*source).unwrap());
    assert_eq!(serde_json::to_value(&cached).unwrap(), serde_json::to_value(&*source).unwrap());
    assert_eq!(*cached.object(), *source);

    let web = crate::vocabulary::selector::Selector::parse("app=web,tier in (front)").unwrap();
    assert_eq!(store.list_where(|o| web.matches(&o.labels())).len(), 1);
    let db = crate::vocabulary::selector::Selector::parse("app=db").unwrap();
    assert!(store.list_where(|o| db.matches(&o.labels())).is_empty());
    assert_eq!(store.by_index("namespace", "shop").unwrap().len(), 1);
    assert_eq!(store.list_all().len(), 1);
}

#[test]
fn a_held_object_is_handed_out_again_and_a_dropped_one_decoded_equal() {
    let objects = STORAGE == Storage::Objects;
    let mut writer = StoreWriter::with_storage(STORAGE);
    let store = writer.reader();
    let held = pod("a", "p", "1", "n1", json!({ "app": "web" }));
    let copy = (*held).clone();
    writer.upsert(held.clone());
    assert!(Arc::ptr_eq(&store.get("a/p").unwrap().object(), &held));
    drop(held);
    writer.forget_dropped();
    let again = store.get("a/p").unwrap().object();
    assert_eq!(*again, copy);
    // Objects storage holds one `Arc` for everyone; compact storage decodes
    // for each reader, and nothing of a reader's decode stays behind.
    let shared = |other: Arc<DynamicObject>| Arc::ptr_eq(&other, &again);
    assert_eq!(shared(store.get("a/p").unwrap().object()), objects);
    assert_eq!(shared(store.by_index("namespace", "a").unwrap()[0].object()), objects);
    assert_eq!(shared(store.list_all()[0].object()), objects);
    assert_eq!(*store.list_all()[0].object(), copy);
}

#[test]
fn concurrent_readers_while_writer_writes() {
    let mut writer = StoreWriter::with_storage(STORAGE);
    let store = writer.reader();
    store
        .add_index("node", IndexFn::jmespath("node", "spec.nodeName").unwrap())
        .unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));

    std::thread::scope(|scope| {
        for reader in 0..4 {
            let store = store.clone();
            let stop = stop.clone();
            scope.spawn(move || {
                let mut rounds = 0u64;
                while !stop.load(Ordering::Relaxed) || rounds == 0 {
                    rounds += 1;
                    // Every object found under a value really has it.
                    for node in ["n0", "n1", "n2"] {
                        for obj in store.by_index("node", node).unwrap() {
                            assert_eq!(
                                obj.pointer("/spec/nodeName").and_then(|v| v.as_str()),
                                Some(node)
                            );
                        }
                    }
                    for ns in store.index_values(NAMESPACE_INDEX).unwrap() {
                        for obj in store.by_index(NAMESPACE_INDEX, &ns).unwrap() {
                            assert_eq!(obj.namespace(), Some(ns.as_str()));
                        }
                    }
                    // 50 upserted keys plus at most 10 relisted ones.
                    let len = store.list_all().len();
                    assert!(len <= 60, "{len}");
                    if reader == 0 && rounds == 10 {
                        store.add_index("label-key", label_keys()).unwrap();
                    }
                }
            });
        }
        scope.spawn(|| {
            for round in 0..300 {
                let i = round % 50;
                let ns = format!("ns{}", i % 5);
                let node = format!("n{}", round % 3);
                writer.upsert(pod(
                    &ns,
                    &format!("p{i}"),
                    &round.to_string(),
                    &node,
                    json!({"r": "x"}),
                ));
                if round % 7 == 0 {
                    writer.delete(&format!("ns{}/p{}", (i + 1) % 5, i + 1));
                }
                if round % 100 == 99 {
                    let relist = (0..10)
                        .map(|j| pod("ns0", &format!("p{j}"), "r", "n0", json!({})))
                        .collect();
                    writer.replace(relist);
                }
            }
            stop.store(true, Ordering::Relaxed);
        });
    });
    assert!(store.index_names().contains(&"label-key".to_owned()));
    check_invariants(&store);
}

#[derive(Debug, Clone)]
enum Op {
    Upsert {
        ns: Option<u8>,
        name: u8,
        rv: u8,
        labels: Vec<u8>,
    },
    Delete {
        ns: Option<u8>,
        name: u8,
    },
    Replace(Vec<(Option<u8>, u8, u8, Vec<u8>)>),
    AddIndex(u8),
}

fn op() -> impl Strategy<Value = Op> {
    let ns = prop::option::of(0u8..3);
    let labels = prop::collection::vec(0u8..4, 0..4);
    prop_oneof![
        4 => (ns.clone(), 0u8..6, 0u8..3, labels.clone())
            .prop_map(|(ns, name, rv, labels)| Op::Upsert { ns, name, rv, labels }),
        2 => (ns.clone(), 0u8..6).prop_map(|(ns, name)| Op::Delete { ns, name }),
        1 => prop::collection::vec((ns, 0u8..6, 0u8..3, labels), 0..8).prop_map(Op::Replace),
        1 => (0u8..3).prop_map(Op::AddIndex),
    ]
}

fn test_object(ns: Option<u8>, name: u8, rv: u8, labels: &[u8]) -> Arc<DynamicObject> {
    let labels: serde_json::Map<String, Value> = labels
        .iter()
        .map(|l| (format!("l{l}"), json!(format!("v{}", l % 2))))
        .collect();
    object(json!({
        "metadata": {"name": format!("o{name}"), "namespace": ns.map(|n| format!("ns{n}")),
            "resourceVersion": rv.to_string(), "labels": labels},
        "spec": {"weird": if rv == 2 { json!({"object": true}) } else { json!(labels.len()) }}
    }))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Any sequence of writer operations keeps every index equal to a
    /// recomputation from scratch, and the objects equal to a model.
    #[test]
    fn operations_keep_indexes_consistent(ops in prop::collection::vec(op(), 1..40)) {
        let mut writer = StoreWriter::with_storage(STORAGE);
        let store = writer.reader();
        let mut model: BTreeMap<String, Arc<DynamicObject>> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Upsert { ns, name, rv, labels } => {
                    let o = test_object(ns, name, rv, &labels);
                    let key = object_key(&o).unwrap();
                    let previous = writer.upsert(o.clone());
                    prop_assert_eq!(previous.is_some(), model.insert(key, o).is_some());
                }
                Op::Delete { ns, name } => {
                    let key = key_from_parts(ns.map(|n| format!("ns{n}")).as_deref(), &format!("o{name}"));
                    prop_assert_eq!(writer.delete(&key).is_some(), model.remove(&key).is_some());
                }
                Op::Replace(list) => {
                    let objects: Vec<_> = list.iter().map(|(ns, name, rv, labels)| test_object(*ns, *name, *rv, labels)).collect();
                    let before = model.len();
                    let outcome = writer.replace(objects.clone());
                    let mut next = BTreeMap::new();
                    for o in objects {
                        let key = object_key(&o).unwrap();
                        let kept = model.get(&key).filter(|old| !changed(&CachedObject(Held::Object(Arc::clone(old))), &ListItem::Decoded(o.clone()))).cloned();
                        next.insert(key, kept.unwrap_or(o));
                    }
                    prop_assert_eq!(outcome.added.len() + outcome.updated.len() + outcome.unchanged, next.len());
                    prop_assert_eq!(before + outcome.added.len() - outcome.deleted.len(), next.len());
                    model = next;
                }
                Op::AddIndex(i) => {
                    let result = match i {
                        0 => store.add_index("label-key", label_keys()),
                        1 => store.add_index("weird", IndexFn::jmespath("weird", "spec.weird").unwrap()),
                        _ => store.add_index("label-values", IndexFn::jmespath("label-values", "values(metadata.labels)").unwrap()),
                    };
                    let existed = store.index_names().len() > 1 && result.is_err();
                    prop_assert!(result.is_ok() || existed);
                }
            }
            check_invariants(&store);
            prop_assert_eq!(sorted(store.keys()), model.keys().cloned().collect::<Vec<_>>());
            for (key, o) in &model {
                prop_assert!(Arc::ptr_eq(&store.get(key).unwrap().object(), o));
            }
        }
    }
}
