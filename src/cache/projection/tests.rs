use std::collections::HashSet;

use proptest::prelude::*;
use serde_json::json;

use super::*;

fn fields(path: &str) -> Vec<String> {
    parse_path(path).unwrap_or_else(|(column, reason)| panic!("{path:?}: {column}: {reason}"))
}

/// The column and reason of the error `path` gives.
fn error(path: &str) -> (usize, String) {
    match Projection::new([path]).expect_err(path) {
        CacheError::Projection {
            path: rejected,
            column,
            reason,
        } => {
            assert_eq!(rejected, path);
            (column, reason)
        }
        other => panic!("{path}: not a projection error: {other}"),
    }
}

#[test]
fn paths_are_fields_between_dots_or_in_brackets() {
    assert_eq!(fields("spec.nodeName"), ["spec", "nodeName"]);
    assert_eq!(fields("spec"), ["spec"]);
    assert_eq!(
        fields("spec.template.spec.containers"),
        ["spec", "template", "spec", "containers"]
    );
    assert_eq!(
        fields(r#"metadata.labels["app.kubernetes.io/name"]"#),
        ["metadata", "labels", "app.kubernetes.io/name"]
    );
    assert_eq!(
        fields("metadata.annotations['example.com/a b']"),
        ["metadata", "annotations", "example.com/a b"]
    );
    assert_eq!(fields(r#"a["b"]['c'].d"#), ["a", "b", "c", "d"]);
    assert_eq!(fields(r#"["odd key"].x"#), ["odd key", "x"]);
    assert_eq!(fields(r#"a["q\"uote"]"#), ["a", "q\"uote"]);
    assert_eq!(fields(r"a['it\'s']"), ["a", "it's"]);
    assert_eq!(fields(r#"a["back\\slash"]"#), ["a", "back\\slash"]);
    assert_eq!(fields(r#"a["it's"]"#), ["a", "it's"]);
    assert_eq!(fields(r#"a["ключ"]"#), ["a", "ключ"]);
    assert_eq!(fields(r#"a[""]"#), ["a", ""]);
    assert_eq!(fields("x-y_z.D9"), ["x-y_z", "D9"]);
}

#[test]
fn a_bad_path_is_rejected_at_the_column_of_the_problem() {
    let cases: &[(&str, usize, &str)] = &[
        ("", 1, "empty"),
        ("spec.", 6, "missing after `.`"),
        (".spec", 1, "expected a field name, found `.`"),
        ("spec..x", 6, "expected a field name, found `.`"),
        ("spec/nodeName", 5, "in brackets and quotes"),
        ("/spec/nodeName", 1, "found `/`"),
        ("metadata.labels.app.kubernetes.io/name", 34, "found `/`"),
        ("spec.containers[0]", 17, "array elements cannot be chosen"),
        ("spec.containers[*].image", 17, "kept whole"),
        (r#"metadata.labels.["a"]"#, 17, "follows the one before it"),
        (r#"metadata.labels["a""#, 16, "`[` is not closed"),
        (r#"metadata.labels["a"#, 16, "not closed with \"]"),
        ("metadata.labels[a]", 17, "expected a quoted field name"),
        (
            r#"metadata.labels["a"]x"#,
            21,
            "expected `.`, `[` or the end, found `x`",
        ),
        (r#"metadata.labels["a"x]"#, 20, "expected `]`"),
        (r#"a["\n"]"#, 4, "escapes only"),
        (" spec", 1, r#"found " ""#),
        ("spec ", 5, r#"found " ""#),
        ("spec.node name", 10, "found"),
        (r#"a["é"]/"#, 7, "found `/`"),
        ("a[", 2, "`[` is not closed"),
    ];
    for &(path, column, reason) in cases {
        let (got_column, got_reason) = error(path);
        assert_eq!(got_column, column, "{path:?}: {got_reason}");
        assert!(got_reason.contains(reason), "{path:?}: {got_reason}");
    }
    let err = Projection::new(["spec.nodeName", "spec/x"]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "projection path \"spec/x\", column 5: expected `.`, `[` or the end, found `/` \
         (write a field with other characters than letters, digits, `_` and `-` in brackets \
         and quotes, as in metadata.labels[\"app.kubernetes.io/name\"])"
    );
}

#[test]
fn paths_are_at_most_so_many_fields_deep() {
    let path = |n: usize| vec!["a"; n].join(".");
    assert!(Projection::new([path(MAX_PATH_FIELDS)]).is_ok());
    let (column, reason) = error(&path(MAX_PATH_FIELDS + 1));
    assert_eq!(column, 2 * MAX_PATH_FIELDS + 1);
    assert!(reason.contains("more than 64 fields"), "{reason}");
    let brackets = format!("a{}", r#"["a"]"#.repeat(100_000));
    assert!(error(&brackets).1.contains("more than"));
    assert!(Projection::new([path(1_000_000)]).is_err());
}

fn object(value: serde_json::Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

fn projected(paths: &[&str], value: serde_json::Value) -> serde_json::Value {
    let projection = Projection::new(paths).unwrap();
    serde_json::to_value(projection.apply(object(value))).unwrap()
}

fn pod() -> serde_json::Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-1",
            "namespace": "shop",
            "uid": "0a1b",
            "resourceVersion": "42",
            "generation": 3,
            "creationTimestamp": "2026-01-02T03:04:05Z",
            "deletionTimestamp": "2026-01-02T04:04:05Z",
            "deletionGracePeriodSeconds": 30,
            "generateName": "web-",
            "finalizers": ["example.com/keep"],
            "labels": { "app.kubernetes.io/name": "web", "tier": "front" },
            "annotations": { "example.com/owner": "team-a", "note": "x" },
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "9f"
            }],
            "managedFields": [{ "manager": "kubectl", "operation": "Apply" }],
        },
        "spec": {
            "nodeName": "node-1",
            "containers": [
                { "name": "web", "image": "web:1", "ports": [{ "containerPort": 80 }] },
                { "name": "sidecar", "image": "proxy:2" },
            ],
            "template": { "spec": { "containers": [{ "name": "t" }], "volumes": [] } },
        },
        "status": {
            "phase": "Running",
            "conditions": [
                { "type": "Ready", "status": "True", "details": { "a": [1, 2] } },
            ],
        },
    })
}

/// What every projection keeps of [`pod`].
fn always() -> serde_json::Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-1",
            "namespace": "shop",
            "uid": "0a1b",
            "resourceVersion": "42",
            "deletionTimestamp": "2026-01-02T04:04:05Z",
        },
    })
}

fn always_with(extra: serde_json::Value) -> serde_json::Value {
    let mut out = always();
    merge(&mut out, extra);
    out
}

fn merge(into: &mut serde_json::Value, extra: serde_json::Value) {
    match (into, extra) {
        (serde_json::Value::Object(into), serde_json::Value::Object(extra)) => {
            for (k, v) in extra {
                merge(into.entry(k).or_insert(serde_json::Value::Null), v);
            }
        }
        (into, extra) => *into = extra,
    }
}

#[test]
fn no_paths_keep_only_what_identifies_the_object() {
    assert_eq!(projected(&[], pod()), always());
    let identity: Vec<&str> = ALWAYS_KEPT.to_vec();
    assert_eq!(projected(&identity, pod()), always());
}

#[test]
fn a_path_keeps_its_subtree_and_arrays_whole() {
    assert_eq!(
        projected(&["spec.nodeName", "status.conditions"], pod()),
        always_with(json!({
            "spec": { "nodeName": "node-1" },
            "status": { "conditions": [
                { "type": "Ready", "status": "True", "details": { "a": [1, 2] } },
            ] },
        }))
    );
    assert_eq!(
        projected(&["spec.template.spec.containers"], pod()),
        always_with(json!({
            "spec": { "template": { "spec": { "containers": [{ "name": "t" }] } } },
        }))
    );
    assert_eq!(
        projected(&["status"], pod()),
        always_with(json!({ "status": pod()["status"] }))
    );
    // A longer path under a shorter one changes nothing.
    assert_eq!(
        projected(&["status.phase", "status", "status.conditions.type"], pod()),
        always_with(json!({ "status": pod()["status"] }))
    );
}

#[test]
fn a_path_to_nothing_keeps_nothing_not_even_its_parents() {
    for path in [
        "spec.missing",
        "spec.missing.deeper",
        "missing",
        // Past an array, a string, a number.
        "spec.containers.image",
        "spec.nodeName.x",
        "status.conditions.type",
        r#"spec["nodeName "]"#,
        // Past a label's value; past metadata that holds no object.
        "metadata.labels.tier.x",
        "metadata.ownerReferences.name",
        "metadata.generation.x",
        "metadata.missing",
    ] {
        assert_eq!(projected(&[path], pod()), always(), "{path}");
    }
    let mut empty_spec = pod();
    empty_spec["spec"] = json!({ "inner": {} });
    assert_eq!(projected(&["spec.inner.x"], empty_spec.clone()), always());
    // An empty object named by the path is kept: it is there.
    assert_eq!(
        projected(&["spec.inner"], empty_spec),
        always_with(json!({ "spec": { "inner": {} } }))
    );
}

#[test]
fn other_metadata_is_kept_only_when_listed() {
    assert_eq!(
        projected(
            &[
                r#"metadata.labels["app.kubernetes.io/name"]"#,
                "metadata.labels['missing']",
                "metadata.annotations['example.com/owner']",
                "metadata.ownerReferences",
                "metadata.creationTimestamp",
                "metadata.generation",
            ],
            pod()
        ),
        always_with(json!({
            "metadata": {
                "labels": { "app.kubernetes.io/name": "web" },
                "annotations": { "example.com/owner": "team-a" },
                "ownerReferences": pod()["metadata"]["ownerReferences"],
                "creationTimestamp": "2026-01-02T03:04:05Z",
                "generation": 3,
            },
        }))
    );
    // No chosen label there: no labels at all, rather than an empty map.
    assert_eq!(projected(&["metadata.labels['missing']"], pod()), always());
    for (path, field) in [
        ("metadata.labels", "labels"),
        ("metadata.annotations", "annotations"),
        ("metadata.managedFields", "managedFields"),
        ("metadata.finalizers", "finalizers"),
        ("metadata.generateName", "generateName"),
        (
            "metadata.deletionGracePeriodSeconds",
            "deletionGracePeriodSeconds",
        ),
    ] {
        assert_eq!(
            projected(&[path], pod()),
            always_with(json!({ "metadata": { field: pod()["metadata"][field] } })),
            "{path}"
        );
    }
    assert_eq!(
        projected(&["metadata"], pod()),
        always_with(json!({ "metadata": pod()["metadata"] }))
    );
}

#[test]
fn the_identity_of_objects_without_all_of_it_is_kept_as_it_is() {
    // Half a TypeMeta stays in the data, where the decoder leaves it.
    let mut half = object(json!({ "metadata": { "name": "a" }, "spec": { "x": 1 } }));
    half.data["kind"] = json!("Widget");
    let kept = Projection::new(["status"]).unwrap().apply(half);
    assert_eq!(kept.data, json!({ "kind": "Widget" }));
    assert_eq!(kept.metadata.name.as_deref(), Some("a"));
    assert!(kept.types.is_none());
    // Data that is not an object has no fields to choose from.
    let mut bare = object(json!({ "metadata": { "name": "b" } }));
    bare.data = serde_json::Value::Null;
    let kept = Projection::new(["spec"]).unwrap().apply(bare);
    assert_eq!(kept.data, serde_json::Value::Null);
}

#[test]
fn projections_compare_by_the_fields_they_keep() {
    let p = |paths: &[&str]| Projection::new(paths).unwrap();
    let a = p(&["spec.nodeName", "metadata.labels"]);
    let b = p(&[
        "metadata.labels['app']",
        "metadata.labels",
        r#"["spec"].nodeName"#,
    ]);
    assert_eq!(a, b);
    assert_eq!(a.paths(), ["metadata.labels", "spec.nodeName"]);
    assert_eq!(
        format!("{a:?}"),
        r#"Projection(["metadata.labels", "spec.nodeName"])"#
    );
    assert_ne!(a, p(&["spec.nodeName"]));
    assert_ne!(p(&["spec"]), p(&["spec.nodeName"]));
    assert_eq!(p(&["spec.nodeName", "spec"]), p(&["spec"]));
    let set: HashSet<Projection> = [a, b, p(&["spec"]), p(&[]), p(&[])].into();
    assert_eq!(set.len(), 3);
}

#[test]
fn paths_are_written_back_as_they_are_read() {
    let p = Projection::new([
        r#"metadata.labels["app.kubernetes.io/name"]"#,
        r#"data['it\'s "quoted" \\ here']"#,
        r#"["a b"].c"#,
        r#"x[""]"#,
    ])
    .unwrap();
    let paths = p.paths();
    assert_eq!(
        paths,
        [
            r#"["a b"].c"#,
            r#"data["it's \"quoted\" \\ here"]"#,
            r#"metadata.labels["app.kubernetes.io/name"]"#,
            r#"x[""]"#,
        ]
    );
    assert_eq!(Projection::new(&paths).unwrap(), p);
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(json, json!(paths));
    assert_eq!(serde_json::from_value::<Projection>(json).unwrap(), p);
    let err = serde_json::from_value::<Projection>(json!(["spec.", "x"])).unwrap_err();
    assert!(err.to_string().contains("\"spec.\", column 6"), "{err}");
    assert!(serde_json::from_value::<Projection>(json!("spec")).is_err());
}

proptest! {
    #[test]
    fn no_input_makes_parsing_panic(path in "\\PC{0,40}") {
        let _ = Projection::new([&path]);
    }

    #[test]
    fn near_misses_of_the_grammar_do_not_panic(path in r#"[a-z.\[\]"'\\ /0-9*]{0,30}"#) {
        if let Err(CacheError::Projection { column, .. }) = Projection::new([&path]) {
            prop_assert!(column >= 1 && column <= path.chars().count() + 1, "{path}");
        }
    }

    #[test]
    fn any_field_names_are_written_so_that_they_read_back(
        paths in prop::collection::vec(prop::collection::vec("\\PC{0,8}", 1..5), 0..5)
    ) {
        let mut written = Vec::new();
        for path in &paths {
            let mut text = String::new();
            for field in path {
                write_field(&mut text, field);
            }
            let read = parse_path(&text).map_err(|e| TestCaseError::fail(e.1))?;
            prop_assert_eq!(&read, path);
            written.push(text);
        }
        let p = Projection::new(&written).unwrap();
        prop_assert_eq!(Projection::new(p.paths()).unwrap(), p);
    }
}
