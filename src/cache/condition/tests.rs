use kube_core::DynamicObject;
use serde_json::json;

use super::*;

fn widget(status: serde_json::Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {
            "name": "w1", "namespace": "shop", "generation": 3,
            "labels": { "app": "web" }
        },
        "spec": { "replicas": 3, "size": 3.0, "name": "w1" },
        "status": status,
    }))
    .unwrap()
}

fn verdict(expression: &str, object: &DynamicObject) -> Verdict {
    Condition::new(expression)
        .unwrap_or_else(|e| panic!("{expression}: {e}"))
        .evaluate_object(object)
}

#[test]
fn true_holds_and_false_does_not() {
    let w = widget(json!({ "ready": true, "readyReplicas": 3, "phase": "Running" }));
    for met in [
        "status.ready",
        "status.readyReplicas == spec.replicas",
        "status.phase == 'Running'",
        "metadata.labels.app == 'web' && status.ready",
        "metadata.generation >= `3`",
        "!!(status.phase)",
        "length(status.phase) == `7`",
        "`true`",
    ] {
        assert_eq!(verdict(met, &w), Verdict::Met, "{met}");
    }
    for not_met in [
        "!(status.ready)",
        "status.readyReplicas > spec.replicas",
        "status.phase == 'Pending'",
        "metadata.labels.app == 'api' || `false`",
        "!!(status.missing)",
    ] {
        assert_eq!(verdict(not_met, &w), Verdict::NotMet, "{not_met}");
    }
}

#[test]
fn equal_numbers_compare_equal_whatever_their_spelling() {
    // spec.size is 3.0, spec.replicas 3: one value.
    let w = widget(json!({ "readyReplicas": 3 }));
    assert_eq!(verdict("spec.size == spec.replicas", &w), Verdict::Met);
    assert_eq!(verdict("status.readyReplicas == `3.0`", &w), Verdict::Met);
    assert_eq!(verdict("to_string(spec.size) == '3'", &w), Verdict::Met);
}

#[test]
fn a_missing_field_is_null_and_not_met() {
    let w = widget(json!({}));
    for null in [
        "status.ready",
        "status.readyReplicas >= spec.replicas",
        "status.conditions[0].status",
        "nothing.at.all",
    ] {
        let v = verdict(null, &w);
        assert_eq!(v, Verdict::Null, "{null}");
        assert!(!v.is_met() && !v.is_mistake(), "{null}");
    }
    // Equality with a missing field is a boolean, as JMESPath says.
    assert_eq!(
        verdict("status.readyReplicas == spec.replicas", &w),
        Verdict::NotMet
    );
    assert_eq!(verdict("status.ready == null", &w), Verdict::Met);
}

#[test]
fn a_value_that_is_not_a_boolean_is_a_mistake_quoting_it() {
    let w = widget(json!({
        "phase": "Running",
        "readyReplicas": 3.0,
        "conditions": [{ "type": "Ready", "status": "True" }],
        "long": "x".repeat(100),
    }));
    let cases = [
        ("status.phase", r#""Running""#),
        ("status.readyReplicas", "3"),
        ("status.conditions[].type", r#"["Ready"]"#),
        ("spec", r#"{"name":"w1","replicas":3,"size":3}"#),
    ];
    for (expression, quoted) in cases {
        let v = verdict(expression, &w);
        assert_eq!(
            v,
            Verdict::NotBoolean {
                value: quoted.to_owned()
            },
            "{expression}"
        );
        assert!(v.is_mistake() && !v.is_met());
        assert_eq!(v.reason(), "notBoolean");
        assert_eq!(v.to_string(), format!("not a boolean: {quoted}"));
    }
    let Verdict::NotBoolean { value } = verdict("status.long", &w) else {
        panic!("a string is not a boolean");
    };
    assert_eq!(value.chars().count(), QUOTED_VALUE_CHARS + 1, "{value}");
    assert!(value.ends_with('…'), "{value}");
}

#[test]
fn an_expression_failing_on_one_object_is_a_mistake_on_that_object() {
    let running = widget(json!({ "phase": "Running" }));
    let numbered = widget(json!({ "phase": -2 }));
    let condition = Condition::new("abs(status.phase) > `1`").unwrap();
    assert_eq!(condition.evaluate_object(&numbered), Verdict::Met);
    let failed = condition.evaluate_object(&running);
    assert!(
        matches!(&failed, Verdict::Failed { message } if message.contains("evaluating 'abs(status.phase) > `1`'")),
        "{failed:?}"
    );
    assert!(failed.is_mistake());
    assert_eq!(failed.reason(), "failed");
}

#[test]
fn bad_expressions_are_refused_with_their_position() {
    let err = Condition::new("status.ready ==").unwrap_err();
    assert!(
        matches!(
            err,
            CacheError::ExpressionSyntax {
                of: ExpressionOf::Condition,
                line: 0,
                column: 15,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with("condition 'status.ready ==' invalid at column 15: "),
        "{err}"
    );

    let err = Condition::new("status.ready &&\n  lenght(spec.x) > `1`").unwrap_err();
    assert!(
        matches!(
            &err,
            CacheError::ExpressionFunction {
                line: 1,
                column: 2,
                offset: 18,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().ends_with(
            "invalid at line 1, column 2: unknown function lenght() (did you mean length()?)"
        ),
        "{err}"
    );

    let err = Condition::new("lower(`1`) == 'a'").unwrap_err();
    assert_eq!(
        err.to_string(),
        "condition 'lower(`1`) == 'a'' invalid at column 6: lower() argument 1 must be string, not number"
    );

    let err = Condition::new(&("!".repeat(60) + "status.ready")).unwrap_err();
    assert!(
        matches!(err, CacheError::ExpressionTooComplex { .. }),
        "{err:?}"
    );
}

#[test]
fn lower_and_upper_compare_without_regard_to_case() {
    let w = widget(json!({ "phase": "RuNNing" }));
    assert_eq!(
        verdict("lower(status.phase) == 'running'", &w),
        Verdict::Met
    );
    assert_eq!(
        verdict("upper(status.phase) == 'RUNNING'", &w),
        Verdict::Met
    );
    let numbered = widget(json!({ "phase": 1 }));
    assert!(verdict("lower(status.phase) == 'x'", &numbered).is_mistake());
}

#[test]
fn exists_holds_for_every_object() {
    let exists = Condition::exists();
    assert_eq!(exists.expression(), "`true`");
    assert_eq!(exists.to_string(), "exists");
    let bare: DynamicObject = serde_json::from_value(json!({ "metadata": {} })).unwrap();
    for object in [widget(json!({})), bare] {
        assert_eq!(exists.evaluate_object(&object), Verdict::Met);
    }
}

#[test]
fn conditions_compare_and_print_as_written() {
    let a = Condition::new("status.ready").unwrap();
    assert_eq!(a, Condition::new("status.ready").unwrap());
    assert_ne!(a, Condition::new("status.ready == `true`").unwrap());
    assert_eq!(a.to_string(), "status.ready");
    assert_eq!(
        format!("{a:?}"),
        r#"Condition { expression: "status.ready" }"#
    );
}

#[test]
fn one_input_serves_conditions_and_indexes_alike() {
    use crate::cache::IndexFn;

    let w = widget(json!({ "phase": "Running" }));
    let input = IndexInput::new(&w);
    let phase = IndexFn::jmespath("phase", "status.phase").unwrap();
    assert_eq!(phase.evaluate("phase", &input).unwrap(), ["Running"]);
    assert_eq!(
        Condition::new("status.phase == 'Running'")
            .unwrap()
            .evaluate(&input),
        Verdict::Met
    );
    assert_eq!(phase.evaluate("phase", &input).unwrap(), ["Running"]);
}
