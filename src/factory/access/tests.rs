use serde_json::json;

use super::*;

#[test]
fn verdicts_from_review_statuses() {
    assert_eq!(verdict(&json!({ "allowed": true })), Verdict::Allowed);
    assert_eq!(
        verdict(&json!({ "allowed": false, "reason": "no RBAC policy matched" })),
        Verdict::Denied("no RBAC policy matched".into())
    );
    assert_eq!(verdict(&json!({})), Verdict::Denied(String::new()));
    assert_eq!(
        verdict(&json!({ "allowed": false, "evaluationError": "webhook down" })),
        Verdict::Unknown("webhook down".into())
    );
    // Odd types are a denial, never a panic.
    assert_eq!(
        verdict(&json!({ "allowed": "yes", "reason": 3 })),
        Verdict::Denied(String::new())
    );
    assert_eq!(verdict(&json!(null)), Verdict::Denied(String::new()));
}

fn row(resource: &str, ns: Option<&str>, list: bool, watch: bool) -> AccessRow {
    let v = |ok: bool| {
        if ok {
            Verdict::Allowed
        } else {
            Verdict::Denied("no RBAC policy matched".into())
        }
    };
    AccessRow {
        resource: ResourceKey::new("example.com", "v1", resource),
        namespace: ns.map(String::from),
        list: v(list),
        watch: v(watch),
    }
}

#[test]
fn a_check_is_allowed_everywhere_in_some_namespaces_or_nowhere() {
    let table = AccessTable {
        rows: vec![
            row("widgets", Some("a"), true, true),
            row("widgets", Some("b"), true, false),
            row("gadgets", None, false, false),
        ],
    };
    let widgets = |ns: &[&str]| {
        AccessCheck::new(
            ResourceKey::new("example.com", "v1", "widgets"),
            true,
            Namespaces::only(ns.iter().copied()),
        )
    };
    assert_eq!(table.allowed(&widgets(&["a"])), Allowed::All);
    assert_eq!(
        table.allowed(&widgets(&["a", "b"])),
        Allowed::Namespaces(vec!["a".into()])
    );
    match table.allowed(&widgets(&["b"])) {
        Allowed::Nothing(why) => assert!(
            why.contains("watch denied") && why.contains("namespace b"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
    let gadgets = AccessCheck::new(
        ResourceKey::new("example.com", "v1", "gadgets"),
        false,
        Namespaces::only(["a"]),
    );
    assert!(
        matches!(table.allowed(&gadgets), Allowed::Nothing(_)),
        "cluster-scoped: asked without namespace"
    );
    let unasked = AccessCheck::new(ResourceKey::new("", "v1", "pods"), true, Namespaces::All);
    assert!(matches!(table.allowed(&unasked), Allowed::Nothing(w) if w.contains("not checked")));
}

#[test]
fn the_table_is_aligned() {
    let table = AccessTable {
        rows: vec![
            row("widgets", Some("a"), true, true),
            row("gadgets", None, false, true),
        ],
    };
    assert_eq!(
        table.render(),
        "RESOURCE                NAMESPACE  LIST  WATCH\n\
         widgets.v1.example.com  a          yes   yes\n\
         gadgets.v1.example.com  *          no    yes\n"
    );
}
