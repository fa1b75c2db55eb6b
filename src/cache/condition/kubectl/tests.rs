use kube_core::DynamicObject;
use serde_json::json;

use super::*;
use crate::cache::Verdict;

fn object(value: serde_json::Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

fn met(form: &str, o: &DynamicObject) -> bool {
    Condition::from_kubectl(form)
        .unwrap_or_else(|e| panic!("{form}: {e}"))
        .evaluate_object(o)
        .is_met()
}

fn translated(path: &str) -> (String, bool) {
    let t = translate(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    (t.expression, t.projects)
}

fn refusal(path: &str) -> String {
    translate(path).expect_err(path)
}

#[test]
fn jsonpath_and_its_value_split_at_an_equals_sign_that_is_not_doubled() {
    assert_eq!(split_at_single_equals("{.a}=b"), ["{.a}", "b"]);
    assert_eq!(split_at_single_equals("{.a}"), ["{.a}"]);
    assert_eq!(
        split_at_single_equals(r#"{.a[?(@.b=="c")].d}=True"#),
        [r#"{.a[?(@.b=="c")].d}"#, "True"]
    );
    assert_eq!(split_at_single_equals("a====b===c"), ["a====b==", "c"]);
    assert_eq!(split_at_single_equals("a=b=c"), ["a", "b", "c"]);
}

#[test]
fn kubectl_paths_become_jmespath_paths() {
    let field = |s: &str| (s.to_owned(), false);
    // kubectl's relaxed forms: braces and the leading dot are optional.
    for relaxed in [
        "{.status.phase}",
        ".status.phase",
        "status.phase",
        "{status.phase}",
    ] {
        assert_eq!(
            translated(relaxed),
            field(r#""status"."phase""#),
            "{relaxed}"
        );
    }
    assert_eq!(
        translated(r"{.metadata.labels.app\.kubernetes\.io/name}"),
        field(r#""metadata"."labels"."app.kubernetes.io/name""#)
    );
    assert_eq!(
        translated(r#"{.metadata.annotations['a.b/c']}"#),
        field(r#""metadata"."annotations"."a.b/c""#)
    );
    assert_eq!(
        translated(r#"{.spec["x y"].z}"#),
        field(r#""spec"."x y"."z""#)
    );
    assert_eq!(
        translated("{.spec.containers[0].image}"),
        field(r#""spec"."containers"[0]."image""#)
    );
    assert_eq!(
        translated("{.spec.containers[-1].image}"),
        field(r#""spec"."containers"[-1]."image""#)
    );
    assert_eq!(
        translated("{.spec.containers[*].image}"),
        (r#""spec"."containers"[*]."image""#.to_owned(), true)
    );
    assert_eq!(
        translated("{.spec.containers[0:2].image}"),
        (r#""spec"."containers"[0:2]."image""#.to_owned(), true)
    );
    assert_eq!(
        translated("{.metadata.labels.*}"),
        (r#""metadata"."labels".*"#.to_owned(), true)
    );
    assert_eq!(
        translated(r#"{.status.conditions[?(@.type=="Ready")].status}"#),
        (
            r#""status"."conditions"[?"type" == `"Ready"`]."status""#.to_owned(),
            true
        )
    );
    assert_eq!(
        translated("{.spec.ports[?(@.port >= 8000)].name}"),
        (
            r#""spec"."ports"[?"port" >= `8000`]."name""#.to_owned(),
            true
        )
    );
    assert_eq!(
        translated("{.spec.ports[?(@.name)]}"),
        (r#""spec"."ports"[?"name" != null]"#.to_owned(), true)
    );
    assert_eq!(
        translated(r"{.items[?(@['a.b'] != 'x\'y')]}"),
        (r#""items"[?"a.b" != `"x'y"`]"#.to_owned(), true)
    );
}

#[test]
fn what_jmespath_cannot_say_is_refused_with_where() {
    for (path, says) in [
        (
            "{..name}",
            "recursive descent (..) has no JMESPath equivalent",
        ),
        (
            "{.spec..name}",
            "recursive descent (..) has no JMESPath equivalent",
        ),
        ("{.a[0,1]}", "unions ([a,b]) have no translation"),
        ("{range .items[*]}{.x}{end}", "templates"),
        ("{.a", "must close with }"),
        ("{}", "the JSONPath is empty"),
        ("{.a[x]}", "expected an index"),
        ("{.a[?(@.b == 'c' && @.d == 'e')]}", "combines comparisons"),
        ("{.a[?(@.b == x)]}", "expected a quoted string, a number"),
        ("{.a[?(b == 'c')]}", "must start with @"),
        ("{.a b}", "expected . or ["),
        ("{.a[0}", "expected ]"),
        ("{.a['b}", "not closed"),
    ] {
        let said = refusal(path);
        assert!(said.contains(says), "{path}: {said}");
    }
    assert_eq!(
        refusal("{.spec..name}"),
        "recursive descent (..) has no JMESPath equivalent: write a JMESPath condition (column 7)"
    );
    assert_eq!(
        refusal("{.a[0,1]}"),
        "unions ([a,b]) have no translation: write a JMESPath condition (column 4)"
    );
}

#[test]
fn jsonpath_waits_hold_as_kubectls_do() {
    let pod = object(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": "web-0", "labels": { "app.kubernetes.io/name": "web" } },
        "spec": {
            "replicas": 3,
            "containers": [{ "name": "a", "image": "nginx" }, { "name": "b", "image": "envoy" }]
        },
        "status": {
            "phase": "Running",
            "ready": true,
            "ratio": 1.5,
            "empty": "",
            "ingress": [],
            "conditions": [
                { "type": "Ready", "status": "True" },
                { "type": "Initialized", "status": "True" }
            ]
        }
    }));
    for (form, holds) in [
        ("jsonpath={.status.phase}=Running", true),
        ("jsonpath={.status.phase}='Running'", true),
        ("jsonpath={.status.phase}=running", false),
        ("jsonpath={.status.phase}=Pending", false),
        ("jsonpath=.status.phase=Running", true),
        ("jsonpath=status.phase=Running", true),
        ("jsonpath={.spec.replicas}=3", true),
        ("jsonpath={.spec.replicas}=3.0", false),
        ("jsonpath={.status.ready}=true", true),
        ("jsonpath={.status.ratio}=1.5", true),
        ("jsonpath={.status.missing}=null", false),
        (
            r#"jsonpath={.status.conditions[?(@.type=="Ready")].status}=True"#,
            true,
        ),
        (
            r#"jsonpath={.status.conditions[?(@.type=="Ready")].status}=False"#,
            false,
        ),
        // Two results: kubectl refuses to compare.
        ("jsonpath={.status.conditions[*].status}=True", false),
        ("jsonpath={.spec.containers[0].image}=nginx", true),
        ("jsonpath={.spec.containers[-1].image}=envoy", true),
        (
            r"jsonpath={.metadata.labels.app\.kubernetes\.io/name}=web",
            true,
        ),
        // Bare: the field is there, whatever its value.
        ("jsonpath={.status.phase}", true),
        ("jsonpath={.status.empty}", true),
        ("jsonpath={.status.ingress}", true),
        ("jsonpath={.status.missing}", false),
        (r#"jsonpath={.status.conditions[?(@.type=="Ready")]}"#, true),
        (r#"jsonpath={.status.conditions[?(@.type=="Gone")]}"#, false),
        ("jsonpath={.status.conditions[*]}", false),
    ] {
        assert_eq!(met(form, &pod), holds, "{form}");
    }
    // Without a status at all, nothing holds, and nothing is a mistake.
    let bare = object(json!({ "metadata": { "name": "x" } }));
    for form in [
        "jsonpath={.status.phase}=Running",
        "jsonpath={.status.phase}",
        r#"jsonpath={.status.conditions[?(@.type=="Ready")].status}=True"#,
        "jsonpath={.status.conditions[*]}",
    ] {
        let v = Condition::from_kubectl(form)
            .unwrap()
            .evaluate_object(&bare);
        assert!(!v.is_met() && !v.is_mistake(), "{form}: {v:?}");
    }
}

#[test]
fn condition_waits_hold_as_kubectls_do() {
    let with = |generation: Option<i64>, status: serde_json::Value| {
        let mut metadata = json!({ "name": "d" });
        if let Some(g) = generation {
            metadata["generation"] = json!(g);
        }
        object(json!({ "metadata": metadata, "status": status }))
    };
    let ready = |status: &str| json!({ "conditions": [{ "type": "Available", "status": status }] });
    for (form, object, holds) in [
        ("condition=Available", with(None, ready("True")), true),
        ("condition=available", with(None, ready("True")), true),
        ("condition=AVAILABLE=true", with(None, ready("True")), true),
        (
            "condition=Available=False",
            with(None, ready("True")),
            false,
        ),
        (
            "condition=Available=false",
            with(None, ready("False")),
            true,
        ),
        ("condition=Available", with(None, ready("False")), false),
        ("condition=Available", with(None, ready("Unknown")), false),
        (
            "condition=Available=Unknown",
            with(None, ready("unknown")),
            true,
        ),
        ("condition=Progressing", with(None, ready("True")), false),
        ("condition=Available", with(None, json!({})), false),
        (
            "condition=Available",
            with(None, json!({ "conditions": "x" })),
            false,
        ),
        // Generation 2, observed 1 (the status's): too old.
        (
            "condition=Available",
            with(
                Some(2),
                json!({ "observedGeneration": 1, "conditions": [{ "type": "Available", "status": "True" }] }),
            ),
            false,
        ),
        (
            "condition=Available",
            with(
                Some(2),
                json!({ "observedGeneration": 2, "conditions": [{ "type": "Available", "status": "True" }] }),
            ),
            true,
        ),
        // The condition's own observedGeneration comes first.
        (
            "condition=Available",
            with(
                Some(2),
                json!({ "observedGeneration": 2, "conditions": [{ "type": "Available", "status": "True", "observedGeneration": 1 }] }),
            ),
            false,
        ),
        (
            "condition=Available",
            with(
                Some(3),
                json!({ "observedGeneration": 1, "conditions": [{ "type": "Available", "status": "True", "observedGeneration": 3 }] }),
            ),
            true,
        ),
        // Nothing observed: no check.
        ("condition=Available", with(Some(5), ready("True")), true),
        // The first entry of the type with a status decides.
        (
            "condition=Available",
            with(
                None,
                json!({ "conditions": [
                { "type": "Available" },
                { "type": "Available", "status": "True" },
                { "type": "Available", "status": "False" }
            ] }),
            ),
            true,
        ),
        // An entry whose type is not a string is skipped, not a mistake.
        (
            "condition=Available",
            with(
                None,
                json!({ "conditions": [{ "type": 1, "status": "True" }, { "type": "Available", "status": "True" }] }),
            ),
            true,
        ),
    ] {
        let v = Condition::from_kubectl(form)
            .unwrap()
            .evaluate_object(&object);
        assert_eq!(v.is_met(), holds, "{form} on {object:?}: {v:?}");
        assert!(!v.is_mistake(), "{form} on {object:?}: {v:?}");
    }
}

#[test]
fn kubectl_forms_print_as_written_and_refuse_what_kubectl_refuses() {
    let c = Condition::from_kubectl("condition=Ready=false").unwrap();
    assert_eq!(c.to_string(), "condition=Ready=false");
    assert_eq!(
        Condition::kubectl_condition("Ready", "True")
            .unwrap()
            .to_string(),
        "condition=Ready=True"
    );
    assert_eq!(
        Condition::kubectl_jsonpath("{.a}", Some("b"))
            .unwrap()
            .to_string(),
        "jsonpath={.a}=b"
    );
    for (form, says) in [
        ("condition=", "the condition's type is missing"),
        ("condition=Ready=", "status is missing"),
        ("jsonpath={.a}=", "a value must follow the ="),
        ("jsonpath={.a}=''", "a value must follow the ="),
        ("jsonpath={.a}=b=c", "expected jsonpath="),
        ("jsonpath=", "the JSONPath is empty"),
        ("jsonpath={..a}", "recursive descent"),
        (
            "status.ready",
            "expected condition=TYPE[=STATUS] or jsonpath=EXPR[=VALUE]",
        ),
    ] {
        let err = Condition::from_kubectl(form).expect_err(form);
        assert!(
            matches!(&err, CacheError::KubectlForm { form: f, .. } if f == form),
            "{form}: {err:?}"
        );
        assert!(err.to_string().contains(says), "{form}: {err}");
        assert!(
            err.to_string()
                .starts_with(&format!("kubectl form {form:?}: ")),
            "{err}"
        );
    }
}

#[test]
fn odd_names_and_values_stay_literal() {
    let o = object(json!({
        "metadata": { "name": "x", "annotations": { "we`ird\"na'me\\": "va`l\"ue'\\" } },
        "status": { "conditions": [{ "type": "It`s \"odd\"", "status": "Ye`s" }] }
    }));
    assert!(met(
        r#"jsonpath={.metadata.annotations['we`ird"na\'me\\']}=va`l"ue'\"#,
        &o
    ));
    assert!(
        Condition::kubectl_condition("it`s \"ODD\"", "ye`s")
            .unwrap()
            .evaluate_object(&o)
            .is_met()
    );
    assert_eq!(
        Condition::kubectl_jsonpath("{.metadata.name}", Some("x"))
            .unwrap()
            .evaluate_object(&o),
        Verdict::Met
    );
}
