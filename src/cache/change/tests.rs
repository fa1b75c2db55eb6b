use std::sync::Arc;

use kube_core::DynamicObject;
use serde_json::{Value, json};

use super::*;
use crate::cache::store::{Storage, StoreWriter};

fn widget(spec: Value, status: Value, labels: Value, rv: u32) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {
            "name": "w", "namespace": "shop", "resourceVersion": rv.to_string(),
            "generation": 1, "labels": labels,
            "creationTimestamp": "2026-01-02T03:04:05Z",
            "managedFields": [{ "manager": "m", "operation": "Apply", "fieldsV1": { "f:spec": {} } }]
        },
        "spec": spec,
        "status": status
    }))
    .expect("a widget")
}

/// `old` and `new` as a cache of `storage` holds them, one after the other
/// (the handle on `old` taken before `new` replaced it).
fn states(
    storage: Storage,
    old: DynamicObject,
    new: DynamicObject,
) -> (CachedObject, CachedObject) {
    states_digesting(storage, &[], old, new)
}

/// [`states`], the cache keeping digests of `fields`.
fn states_digesting(
    storage: Storage,
    fields: &[&str],
    old: DynamicObject,
    new: DynamicObject,
) -> (CachedObject, CachedObject) {
    let mut writer = StoreWriter::with_storage(storage);
    writer.reader().keep_digests(fields.iter().copied());
    writer.upsert(Arc::new(old));
    let before = writer.reader().get("shop/w").expect("cached");
    writer.upsert(Arc::new(new));
    let after = writer.reader().get("shop/w").expect("cached");
    (before, after)
}

fn each_storage(
    old: &DynamicObject,
    new: &DynamicObject,
    check: impl Fn(&str, &CachedObject, &CachedObject),
) {
    for storage in [Storage::Objects, Storage::Compact] {
        let (before, after) = states(storage, old.clone(), new.clone());
        check(&format!("{storage:?}"), &before, &after);
    }
    // A compact cache keeping digests of the data's fields, as it does
    // once a handler's change predicate watches them.
    let fields = ["spec", "status"];
    let (before, after) = states_digesting(Storage::Compact, &fields, old.clone(), new.clone());
    check("compact with digests", &before, &after);
    // A compact state beside a decoded one (an update of a relist, whose
    // new state is the decoded object from the list).
    let (before, _) = states(Storage::Compact, old.clone(), new.clone());
    check(
        "compact then decoded",
        &before,
        &CachedObject::from(Arc::new(new.clone())),
    );
}

fn spec() -> Value {
    json!({ "replicas": 3, "image": "nginx:1", "env": [{ "name": "A", "value": "1" }], "ports": [80, 443] })
}

#[test]
fn a_status_update_leaves_spec_labels_and_generation_unchanged() {
    let old = widget(
        spec(),
        json!({ "phase": "Pending" }),
        json!({ "app": "web" }),
        1,
    );
    let new = widget(
        spec(),
        json!({ "phase": "Running" }),
        json!({ "app": "web" }),
        2,
    );
    let desired = ChangePredicate::spec()
        .or(ChangePredicate::labels())
        .or(ChangePredicate::generation())
        .or(ChangePredicate::annotations())
        .or(ChangePredicate::finalizers());
    each_storage(&old, &new, |mode, before, after| {
        assert!(!desired.changed(before, after), "{mode}");
        assert!(
            ChangePredicate::new("status")
                .unwrap()
                .changed(before, after),
            "{mode}"
        );
        assert!(
            ChangePredicate::new("status.phase")
                .unwrap()
                .changed(before, after),
            "{mode}"
        );
    });
}

#[test]
fn a_change_anywhere_under_spec_is_a_change_of_spec() {
    let old = widget(spec(), json!({}), json!({ "app": "web" }), 1);
    let mut changed = spec();
    changed["env"][0]["value"] = json!("2");
    let new = widget(changed, json!({}), json!({ "app": "web" }), 2);
    each_storage(&old, &new, |mode, before, after| {
        assert!(ChangePredicate::spec().changed(before, after), "{mode}");
        assert!(
            !ChangePredicate::new("spec.replicas")
                .unwrap()
                .changed(before, after),
            "{mode}"
        );
        assert!(
            ChangePredicate::new("spec.env[].value")
                .unwrap()
                .changed(before, after),
            "{mode}"
        );
        assert!(
            !ChangePredicate::new("spec.env[].name")
                .unwrap()
                .changed(before, after),
            "{mode}"
        );
    });
}

#[test]
fn values_compare_as_json_numbers_by_value_and_objects_in_any_order() {
    let old = widget(
        json!({ "replicas": 3, "a": 1, "b": 2 }),
        json!({}),
        json!({ "x": "1", "y": "2" }),
        1,
    );
    let new = widget(
        json!({ "b": 2, "replicas": 3.0, "a": 1 }),
        json!({}),
        json!({ "y": "2", "x": "1" }),
        2,
    );
    each_storage(&old, &new, |mode, before, after| {
        assert!(!ChangePredicate::spec().changed(before, after), "{mode}");
        assert!(!ChangePredicate::labels().changed(before, after), "{mode}");
    });
}

#[test]
fn labels_changed_added_or_removed_are_changes_and_a_missing_field_is_null() {
    let old = widget(spec(), json!({}), json!({ "app": "web" }), 1);
    for labels in [
        json!({ "app": "api" }),
        json!({ "app": "web", "tier": "x" }),
        json!({}),
    ] {
        let new = widget(spec(), json!({}), labels.clone(), 2);
        each_storage(&old, &new, |mode, before, after| {
            assert!(
                ChangePredicate::labels().changed(before, after),
                "{mode} {labels}"
            );
        });
    }
    let new = widget(spec(), json!({}), json!({ "app": "web", "tier": "x" }), 2);
    each_storage(&old, &new, |mode, before, after| {
        let app = ChangePredicate::new("metadata.labels.app").unwrap();
        assert!(!app.changed(before, after), "{mode}");
        let tier = ChangePredicate::new("metadata.labels.tier").unwrap();
        assert!(tier.changed(before, after), "{mode}");
        // Not there before or after: null both times.
        let nothing = ChangePredicate::new("spec.nothing.deeper").unwrap();
        assert!(!nothing.changed(before, after), "{mode}");
        let not_an_object = ChangePredicate::new("spec.replicas.deeper").unwrap();
        assert!(!not_an_object.changed(before, after), "{mode}");
    });
}

#[test]
fn expressions_read_otherwise_compare_their_results() {
    let old = widget(spec(), json!({}), json!({ "app": "web" }), 1);
    let new = widget(spec(), json!({ "phase": "x" }), json!({ "app": "web" }), 2);
    each_storage(&old, &new, |mode, before, after| {
        // The whole metadata holds the resourceVersion, which changed.
        assert!(
            ChangePredicate::new("metadata")
                .unwrap()
                .changed(before, after),
            "{mode}"
        );
        let created = ChangePredicate::new("metadata.creationTimestamp").unwrap();
        assert!(!created.changed(before, after), "{mode}");
        let managers = ChangePredicate::new("metadata.managedFields[].manager").unwrap();
        assert!(!managers.changed(before, after), "{mode}");
        let sorted = ChangePredicate::new("sort(keys(spec))").unwrap();
        assert!(!sorted.changed(before, after), "{mode}");
        // A function given the wrong type fails on both: counted as a
        // change, so that no update is lost to a mistake.
        let failing = ChangePredicate::new("length(spec.replicas)").unwrap();
        assert!(failing.changed(before, after), "{mode}");
    });
}

#[test]
fn predicates_are_refused_with_the_position_of_the_mistake() {
    let err = ChangePredicate::any_of(["spec", "lenght(spec)"]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "change expression 'lenght(spec)' invalid at column 0: unknown function lenght() (did you mean length()?)"
    );
    assert!(matches!(
        ChangePredicate::new("spec.[").unwrap_err(),
        CacheError::ExpressionSyntax {
            of: ExpressionOf::Change,
            column: 6,
            ..
        }
    ));
    assert_eq!(
        ChangePredicate::any_of(Vec::<String>::new()).unwrap_err(),
        CacheError::NoChangeExpression
    );
}

#[test]
fn or_keeps_each_expression_once_and_equality_ignores_their_order() {
    let both = ChangePredicate::spec()
        .or(ChangePredicate::labels())
        .or(ChangePredicate::spec());
    assert_eq!(
        both.expressions().collect::<Vec<_>>(),
        ["spec", "metadata.labels"]
    );
    assert_eq!(both.to_string(), "spec, metadata.labels");
    assert_eq!(both, ChangePredicate::labels().or(ChangePredicate::spec()));
    assert_ne!(both, ChangePredicate::spec());
}

#[test]
fn a_compact_cache_tells_an_unchanged_field_by_its_digest_and_reads_a_changed_one() {
    let old = widget(spec(), json!({ "phase": "Pending" }), json!({}), 1);
    let new = widget(spec(), json!({ "phase": "Running" }), json!({}), 2);
    let (before, after) = states_digesting(Storage::Compact, &["spec", "status"], old, new);
    let (a, b) = (before.compact().unwrap(), after.compact().unwrap());
    assert_eq!(a.same_field(b, "spec"), Some(true));
    assert_eq!(a.same_field(b, "status"), Some(false));
    // Not digested, or not there: nothing said, the values are read.
    assert_eq!(a.same_field(b, "metadata"), None);
    assert_eq!(a.same_field(b, "data"), None);
    let predicate = ChangePredicate::any_of(["spec", "spec.replicas", "metadata.generation"]);
    assert_eq!(
        predicate.unwrap().digested_fields().collect::<Vec<_>>(),
        ["spec", "spec"]
    );

    // Only a compact cache keeps them, and only for fields asked for.
    let (plain, _) = states(
        Storage::Compact,
        widget(spec(), json!({}), json!({}), 1),
        widget(spec(), json!({}), json!({}), 2),
    );
    let plain = plain.compact().unwrap();
    assert_eq!(plain.same_field(plain, "spec"), None);
    let (objects, _) = states_digesting(
        Storage::Objects,
        &["spec"],
        widget(spec(), json!({}), json!({}), 1),
        widget(spec(), json!({}), json!({}), 2),
    );
    assert!(objects.compact().is_none());
}
