use super::*;
use crate::cache::CacheError;
use jmespath::Variable;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use proptest::prelude::*;
use serde_json::{Value, json};

fn obj(value: Value) -> DynamicObject {
    serde_json::from_value(value).expect("valid object")
}

fn pod() -> DynamicObject {
    obj(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-0",
            "namespace": "shop",
            "uid": "u-1",
            "resourceVersion": "42",
            "generation": 3,
            "finalizers": ["a/b", "c/d"],
            "labels": {"app": "web", "tier": "front", "app.kubernetes.io/name": "web", "empty": ""},
            "annotations": {"note": "x"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-rs", "uid": "rs-1", "controller": true}],
            "creationTimestamp": "2024-01-02T03:04:05Z"
        },
        "spec": {
            "nodeName": "node-1",
            "priority": 7,
            "ratio": 1.5,
            "hostNetwork": false,
            "containers": [
                {"name": "a", "image": "nginx:1", "ports": [{"containerPort": 80}, {"containerPort": 443}]},
                {"name": "b", "image": "envoy:2", "ports": []}
            ],
            "nested": [["x", ["y"]], [], null, "z"],
            "nothing": null,
            "emptyList": [],
            "objInList": ["ok", {"no": 1}]
        },
        "status": {"phase": "Running"}
    }))
}

fn eval(expression: &str, object: &DynamicObject) -> Result<Vec<String>, CacheError> {
    let f = IndexFn::jmespath("test", expression).expect("compiles");
    f.evaluate("test", &IndexInput::new(object))
}

/// What the `jmespath` crate returns through `search`, which converts the
/// whole object itself (through serde), with the functions the library
/// evaluates with.
fn search_whole(expression: &str, object: &DynamicObject) -> Result<Rcvar, ()> {
    let ast = jmespath::parse(expression).map_err(|_| ())?;
    let data = Variable::from_serializable(object).map_err(|_| ())?;
    jmespath::Expression::new(expression, ast, &functions::RUNTIME)
        .search(data)
        .map_err(|_| ())
}

/// [`search_whole`], mapped to index values.
fn reference(expression: &str, object: &DynamicObject) -> Result<Vec<String>, ()> {
    values_of_variable(&*search_whole(expression, object)?).map_err(|_| ())
}

#[test]
fn string_result_gives_one_value() {
    assert_eq!(eval("spec.nodeName", &pod()).unwrap(), ["node-1"]);
    assert_eq!(eval("metadata.labels.empty", &pod()).unwrap(), [""]);
}

#[test]
fn array_result_gives_one_value_per_element() {
    assert_eq!(
        eval("spec.containers[].image", &pod()).unwrap(),
        ["nginx:1", "envoy:2"]
    );
    assert_eq!(eval("keys(metadata.labels)", &pod()).unwrap().len(), 4);
}

#[test]
fn nested_arrays_are_flattened_and_nulls_skipped() {
    assert_eq!(eval("spec.nested", &pod()).unwrap(), ["x", "y", "z"]);
    assert_eq!(
        eval("spec.containers[].ports[].containerPort", &pod()).unwrap(),
        ["80", "443"]
    );
    assert_eq!(eval("@.spec.nested", &pod()).unwrap(), ["x", "y", "z"]);
}

#[test]
fn numbers_and_booleans_become_json_text() {
    assert_eq!(eval("spec.priority", &pod()).unwrap(), ["7"]);
    assert_eq!(eval("spec.ratio", &pod()).unwrap(), ["1.5"]);
    assert_eq!(eval("spec.hostNetwork", &pod()).unwrap(), ["false"]);
    assert_eq!(eval("metadata.generation", &pod()).unwrap(), ["3"]);
    assert_eq!(eval("length(spec.containers)", &pod()).unwrap(), ["2"]);
    assert_eq!(eval("spec.priority > `5`", &pod()).unwrap(), ["true"]);
}

/// Issue 12, point 2: a number read from the object has one spelling,
/// however the object spells it, through the field-path reader, the
/// interpreter and `to_string`.
#[test]
fn numbers_read_have_one_spelling() {
    let cases = [
        ("3", "3"),
        ("3.0", "3"),
        ("30e-1", "3"),
        ("3e0", "3"),
        ("1e3", "1000"),
        ("1000.0", "1000"),
        ("-0", "0"),
        ("-0.0", "0"),
        ("-3.0", "-3"),
        ("1.5", "1.5"),
        ("0.1", "0.1"),
        ("1e-7", "1e-7"),
        ("-2.5e-3", "-0.0025"),
        ("9007199254740993", "9007199254740993"),
        ("18446744073709551615", "18446744073709551615"),
        ("-9223372036854775808", "-9223372036854775808"),
        ("1e19", "10000000000000000000"),
        ("-9.223372036854775808e18", "-9223372036854775808"),
        ("18446744073709551616", "1.8446744073709552e+19"),
        ("2e19", "2e+19"),
        ("-1e19", "-1e+19"),
        ("1e300", "1e+300"),
    ];
    for (spelt, want) in cases {
        let text = format!(r#"{{"metadata": {{"name": "n"}}, "spec": {{"replicas": {spelt}}}}}"#);
        let object: DynamicObject = serde_json::from_str(&text).unwrap();
        for expression in [
            "spec.replicas",
            "@.spec.replicas",
            "[spec.replicas]",
            "to_string(spec.replicas)",
            "spec.*",
        ] {
            assert_eq!(
                eval(expression, &object).unwrap(),
                [want],
                "{expression} of {spelt}"
            );
        }
    }
}

/// Numbers computed in floating point, and `to_string` of literals, are
/// spelled as read ones are; `avg([])` is null.
#[test]
fn numbers_computed_have_one_spelling() {
    let object = obj(json!({"metadata": {"name": "n"}, "spec": {"empty": [], "three": 3.0}}));
    for (expression, want) in [
        ("abs(`3`)", &["3"][..]),
        ("abs(`-3.5`)", &["3.5"]),
        ("sum([`1`, `2`])", &["3"]),
        ("sum(`[]`)", &["0"]),
        ("avg(`[1, 2]`)", &["1.5"]),
        ("avg(`[]`)", &[]),
        ("avg(spec.empty)", &[]),
        ("avg(spec.empty) || 'none'", &["none"]),
        ("ceil(`2.5`)", &["3"]),
        ("floor(`-0.5`)", &["-1"]),
        ("floor(`0.5`)", &["0"]),
        ("to_number('1e3')", &["1000"]),
        ("length('abc')", &["3"]),
        ("to_string(abs(`3`))", &["3"]),
        ("to_string(spec)", &[r#"{"empty":[],"three":3}"#]),
        (
            "to_string(`[1.0, {\"a\": -0.0, \"b\": 2.50}]`)",
            &[r#"[1,{"a":0,"b":2.5}]"#],
        ),
        ("to_string(`true`)", &["true"]),
        ("to_string('x')", &["x"]),
        ("spec.three == `3`", &["true"]),
    ] {
        assert_eq!(eval(expression, &object).unwrap(), want, "{expression}");
    }
    assert!(eval("to_string([&a][0])", &object).is_err());
}

#[test]
fn null_missing_and_empty_array_give_no_value() {
    for expression in [
        "spec.nothing",
        "spec.missing",
        "spec.emptyList",
        "spec.nodeName.deeper",
        "nope.nope.nope",
        "spec.containers[?name == 'zzz'].image",
    ] {
        assert_eq!(
            eval(expression, &pod()).unwrap(),
            Vec::<String>::new(),
            "{expression}"
        );
    }
}

#[test]
fn object_result_is_an_evaluation_error_naming_index_and_object() {
    for expression in [
        "spec",
        "metadata",
        "metadata.labels",
        "spec.objInList",
        "spec.containers",
    ] {
        let err = eval(expression, &pod()).unwrap_err();
        assert!(
            matches!(&err, CacheError::IndexEvaluation { index, object, .. } if index == "test" && object == "shop/web-0"),
            "{expression}: {err:?}"
        );
        assert!(
            err.to_string()
                .starts_with(r#"index "test": cannot index object "shop/web-0": "#)
        );
    }
    let err = eval("&spec", &pod()).unwrap_err();
    assert!(err.to_string().contains("expression reference"), "{err}");
}

#[test]
fn runtime_errors_are_evaluation_errors() {
    // abs() of a string is a type error at run time.
    let err = eval("abs(spec.nodeName)", &pod()).unwrap_err();
    assert!(matches!(err, CacheError::IndexEvaluation { .. }), "{err:?}");
}

#[test]
fn syntax_error_names_index_and_position() {
    let err = IndexFn::jmespath("by-node", "spec.[").unwrap_err();
    let CacheError::ExpressionSyntax {
        of: ExpressionOf::Index(index),
        line,
        column,
        offset,
        ..
    } = &err
    else {
        panic!("not a syntax error: {err:?}");
    };
    assert_eq!(
        (index.as_str(), *line, *column, *offset),
        ("by-node", 0, 6, 6)
    );
    assert!(
        err.to_string()
            .starts_with(r#"index "by-node": expression 'spec.[' invalid at column 6: "#),
        "{err}"
    );

    let err = IndexFn::jmespath("multi", "a\n.[").unwrap_err();
    assert!(
        err.to_string().contains("invalid at line 1, column 2"),
        "{err}"
    );
    // Counted in characters, not bytes, after non-ASCII text.
    let err = IndexFn::jmespath("accents", "\"ééé\" | ] x").unwrap_err();
    assert!(
        matches!(
            err,
            CacheError::ExpressionSyntax {
                line: 0,
                column: 8,
                offset: 8,
                ..
            }
        ),
        "{err:?}"
    );
    let err = IndexFn::jmespath("accents", "'é' |\n'é' | ]").unwrap_err();
    assert!(
        matches!(
            err,
            CacheError::ExpressionSyntax {
                line: 1,
                column: 6,
                offset: 12,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(matches!(
        IndexFn::jmespath("x", ""),
        Err(CacheError::ExpressionSyntax { .. })
    ));
    assert!(matches!(
        IndexFn::jmespath("x", "a = b"),
        Err(CacheError::ExpressionSyntax { .. })
    ));
}

/// Issue 12, point 3: a call that fails whatever the object is rejected
/// when compiled, naming the index and the position of the name or the
/// argument.
#[test]
fn impossible_calls_are_rejected_when_compiled() {
    let rejected = |expression: &str| match IndexFn::jmespath("by-x", expression) {
        Err(CacheError::ExpressionFunction {
            of: ExpressionOf::Index(index),
            line,
            column,
            message,
            ..
        }) => {
            assert_eq!(index, "by-x");
            (line, column, message)
        }
        other => panic!("{expression}: {other:?}"),
    };
    for (expression, column, message) in [
        (
            "lenght(@)",
            0,
            "unknown function lenght() (did you mean length()?)",
        ),
        (
            "spec.containers[?frobnicate(name)]",
            17,
            "unknown function frobnicate()",
        ),
        (
            "keys(spec) || lenght (spec)",
            14,
            "unknown function lenght() (did you mean length()?)",
        ),
        ("length(@, @)", 0, "length() takes 1 argument, not 2"),
        (
            "starts_with(name)",
            0,
            "starts_with() takes 2 arguments, not 1",
        ),
        ("merge()", 0, "merge() takes at least 1 argument, not 0"),
        ("abs('x')", 4, "abs() argument 1 must be number, not string"),
        (
            "join(`1`, spec.list)",
            5,
            "join() argument 1 must be string, not number",
        ),
        (
            "sum(`[1, \"a\"]`)",
            4,
            "sum() argument 1 must be array[number], not array",
        ),
        (
            "sort_by(spec.list, 'name')",
            19,
            "sort_by() argument 2 must be expref, not string",
        ),
        (
            "to_string(&a)",
            10,
            "to_string() argument 1 must be object|array|boolean|number|string|null, not expref",
        ),
        (
            "merge(`{}`, spec, `[]`)",
            18,
            "merge() argument 3 must be object, not array",
        ),
        (
            "spec.a || `1` && abs(`null`)",
            21,
            "abs() argument 1 must be number, not null",
        ),
    ] {
        assert_eq!(
            rejected(expression),
            (0, column, message.to_owned()),
            "{expression}"
        );
    }
    // The leftmost of several.
    assert_eq!(
        rejected("length(@) || abs(lenght(@)) || abs('y')"),
        (
            0,
            17,
            "unknown function lenght() (did you mean length()?)".to_owned()
        )
    );
    // No suggestion for a name too short to be misspelt.
    assert_eq!(rejected("a(@)"), (0, 0, "unknown function a()".to_owned()));
    assert_eq!(
        rejected("spec.a ||\n  abs('x')"),
        (
            1,
            6,
            "abs() argument 1 must be number, not string".to_owned()
        )
    );
    assert_eq!(
        IndexFn::jmespath("by-x", "abs('x')")
            .unwrap_err()
            .to_string(),
        r#"index "by-x": expression 'abs('x')' invalid at column 4: abs() argument 1 must be number, not string"#
    );

    // What depends on the object is left to evaluation.
    for fine in [
        "abs(spec.x)",
        "length(@)",
        "sort_by(spec.list, &name)",
        "not_null(`null`, 'a')",
        "map(&a, `[]`)",
        "contains(`[1]`, 'x')",
        "to_string(`null`)",
        "type(&a)",
        "avg(`[]`)",
        "merge(`{}`, `{}`, spec)",
        "sort_by(spec.list, [&a][0])",
    ] {
        assert!(IndexFn::jmespath("ok", fine).is_ok(), "{fine}");
    }
}

/// The signature table says what the runtime's functions do: called with
/// literal arguments only, a call compiles exactly when the crate evaluates
/// it without an arity or argument-type error.
#[test]
fn function_table_agrees_with_the_crate() {
    use jmespath::{ErrorReason, RuntimeError};

    let builtins = [
        "abs",
        "avg",
        "ceil",
        "contains",
        "ends_with",
        "floor",
        "join",
        "keys",
        "length",
        "lower",
        "map",
        "max",
        "max_by",
        "merge",
        "min",
        "min_by",
        "not_null",
        "reverse",
        "sort",
        "sort_by",
        "starts_with",
        "sum",
        "to_array",
        "to_number",
        "to_string",
        "type",
        "upper",
        "values",
    ];
    let names: Vec<&str> = functions::FUNCTIONS.iter().map(|s| s.name).collect();
    assert_eq!(names, builtins);
    let args = [
        "`1`",
        "'x'",
        "`null`",
        "`true`",
        "`[]`",
        "`[1]`",
        "`[\"a\"]`",
        "`[1, \"a\"]`",
        "`{}`",
        "&a",
    ];
    let mut calls = vec![Vec::new()];
    for _ in 0..3 {
        let longer: Vec<Vec<&str>> = calls
            .iter()
            .filter(|call| call.len() == calls.last().map_or(0, Vec::len))
            .flat_map(|call| {
                args.iter().map(move |arg| {
                    let mut call = call.clone();
                    call.push(*arg);
                    call
                })
            })
            .collect();
        calls.extend(longer);
    }
    for name in builtins {
        assert!(functions::RUNTIME.get_function(name).is_some(), "{name}");
        for call in &calls {
            let expression = format!("{name}({})", call.join(", "));
            let compiled = IndexFn::jmespath("t", &expression);
            let ast = jmespath::parse(&expression).unwrap();
            let mut ctx = jmespath::Context::new(&expression, &functions::RUNTIME);
            let evaluated = jmespath::interpret(&Rcvar::new(Variable::Null), &ast, &mut ctx);
            let signature_error = matches!(
                &evaluated,
                Err(err) if matches!(
                    err.reason,
                    ErrorReason::Runtime(
                        RuntimeError::NotEnoughArguments { .. }
                            | RuntimeError::TooManyArguments { .. }
                            | RuntimeError::InvalidType { .. }
                    )
                )
            );
            assert_eq!(
                compiled.is_err(),
                signature_error,
                "{expression}: {compiled:?}, {evaluated:?}"
            );
        }
    }
}

#[test]
fn too_complex_expressions_are_rejected_not_overflowing() {
    // Parentheses nest the parser (on its helper thread), not the tree.
    let parens = format!("{}a{}", "(".repeat(2000), ")".repeat(2000));
    assert!(IndexFn::jmespath("parens", &parens).is_ok());

    let err = IndexFn::jmespath("deep", &("!".repeat(60) + "a")).unwrap_err();
    assert!(
        matches!(err, CacheError::ExpressionTooComplex { .. }),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with(r#"index "deep": expression '!!!"#),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("is too complex: nested 61 levels deep, the limit is 48"),
        "{err}"
    );

    for deep in [
        "!".repeat(1500) + "a",
        "a[*].".repeat(700) + "b",
        "a.".repeat(1500) + "b[0]",
        "@".to_owned() + &".a".repeat(60),
        "a[?".repeat(600) + "b" + &"]".repeat(600),
        format!("{}a{}", "[".repeat(1000), "]".repeat(1000)),
    ] {
        assert!(
            matches!(
                IndexFn::jmespath("deep", &deep),
                Err(CacheError::ExpressionTooComplex { .. })
            ),
            "{}",
            &deep[..20]
        );
    }

    let long = "a".repeat(MAX_EXPRESSION_LEN + 1);
    assert!(matches!(
        IndexFn::jmespath("long", &long),
        Err(CacheError::ExpressionTooComplex { .. })
    ));
}

/// Issue 12, point 4: a plain field path is read without recursion, so no
/// length of it is too complex; expressions that recurse keep the limit.
#[test]
fn plain_field_paths_of_any_length_are_accepted() {
    // About as deep as the decoder lets objects be (wire::MAX_OBJECT_DEPTH).
    let depth = 250;
    let mut deep = json!("bottom");
    for _ in 0..depth {
        deep = json!({ "a": deep });
    }
    let object = DynamicObject {
        types: None,
        metadata: ObjectMeta {
            name: Some("deep".to_owned()),
            ..ObjectMeta::default()
        },
        data: json!({ "spec": deep }),
    };
    let input = IndexInput::new(&object);
    for (path, want) in [
        (format!("spec{}", ".a".repeat(depth)), Some(vec!["bottom"])),
        (
            format!("spec{}", " | a".repeat(depth)),
            Some(vec!["bottom"]),
        ),
        (format!("spec{}", ".a".repeat(2000)), Some(vec![])),
        // An object at the end of the path.
        (format!("spec{}", ".a".repeat(60)), None),
    ] {
        let f = IndexFn::jmespath("path", &path).unwrap();
        assert!(!f.needs_conversion(), "{path}");
        match want {
            Some(want) => assert_eq!(f.evaluate("path", &input).unwrap(), want, "{path}"),
            None => assert!(f.evaluate("path", &input).is_err(), "{path}"),
        }
    }
    assert!(!input.is_converted());

    // A path into a part of metadata that is converted, not read directly.
    let managed = format!("metadata.managedFields{}", ".x".repeat(60));
    let f = IndexFn::jmespath("managed", &managed).unwrap();
    assert!(f.needs_conversion());
    assert!(f.evaluate("managed", &input).unwrap().is_empty());

    for recursing in [
        format!("@.spec{}", ".a".repeat(60)),
        format!("spec{}[0]", ".a".repeat(60)),
        format!("spec{}.[b]", ".a".repeat(60)),
    ] {
        assert!(
            matches!(
                IndexFn::jmespath("deep", &recursing),
                Err(CacheError::ExpressionTooComplex { .. })
            ),
            "{recursing}"
        );
    }
}

#[test]
fn deepest_accepted_expressions_evaluate_on_a_normal_stack() {
    let object = pod();
    for build in [
        |n: usize| "!".repeat(n - 1) + "a",
        |n: usize| "a[*].".repeat(n / 2 - 1) + "b",
        |n: usize| "a[?".repeat(n / 3) + "b" + &"]".repeat(n / 3),
        |n: usize| format!("{}a{}", "[".repeat(n - 1), "]".repeat(n - 1)),
    ] {
        let expression = build(MAX_EXPRESSION_DEPTH);
        let f = IndexFn::jmespath("deep", &expression).expect(&expression);
        let _ = f.evaluate("deep", &IndexInput::new(&object));
    }
}

#[test]
fn huge_slice_steps_do_not_overflow() {
    let object = obj(json!({"metadata": {"name": "n"}, "a": [1, 2, 3, 4]}));
    assert_eq!(eval("a[1::2147483647]", &object).unwrap(), ["2"]);
    assert_eq!(eval("a[::2]", &object).unwrap(), ["1", "3"]);
    assert_eq!(eval("a[::-2147483647]", &object).unwrap(), ["4"]);
    assert!(eval("a[::0]", &object).is_err());
}

#[test]
fn namespace_index() {
    let f = IndexFn::namespace();
    assert_eq!(
        f.evaluate(NAMESPACE_INDEX, &IndexInput::new(&pod()))
            .unwrap(),
        ["shop"]
    );
    let node = obj(json!({"metadata": {"name": "node-1"}}));
    assert!(
        f.evaluate(NAMESPACE_INDEX, &IndexInput::new(&node))
            .unwrap()
            .is_empty()
    );
    let empty_ns = obj(json!({"metadata": {"name": "x", "namespace": ""}}));
    assert!(
        f.evaluate(NAMESPACE_INDEX, &IndexInput::new(&empty_ns))
            .unwrap()
            .is_empty()
    );
    assert_eq!(f.expression(), None);
    assert_eq!(format!("{f:?}"), "IndexFn::Namespace");
}

#[test]
fn closures_errors_and_panics_are_evaluation_errors() {
    let node = obj(json!({"metadata": {"name": "node-1"}}));
    let failing = IndexFn::closure(|_| Err("no luck".to_owned()));
    let err = failing.evaluate("f", &IndexInput::new(&node)).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"index "f": cannot index object "node-1": no luck"#
    );

    let panicking = IndexFn::closure_infallible(|_| panic!("boom"));
    let err = panicking
        .evaluate("p", &IndexInput::new(&node))
        .unwrap_err();
    assert!(
        err.to_string().contains("index function panicked: boom"),
        "{err}"
    );
    assert_eq!(format!("{panicking:?}"), "IndexFn::Closure(..)");
}

#[test]
fn expression_text_and_debug() {
    let f = IndexFn::jmespath("n", "spec.nodeName").unwrap();
    assert_eq!(f.expression(), Some("spec.nodeName"));
    assert_eq!(format!("{f:?}"), r#"IndexFn::Jmespath("spec.nodeName")"#);
    assert!(!f.needs_conversion());
    assert!(
        IndexFn::jmespath("n", "spec.containers[].image")
            .unwrap()
            .needs_conversion()
    );
}

#[test]
fn each_part_is_converted_once_and_only_when_read() {
    let object = pod();
    let input = IndexInput::new(&object);
    let run = |expression: &str| {
        IndexFn::jmespath("t", expression)
            .unwrap()
            .evaluate("t", &input)
            .unwrap()
    };
    let parts = |input: &IndexInput<'_>| {
        let mut parts: Vec<String> = input.parts.borrow().keys().map(|p| p.join(".")).collect();
        parts.sort();
        parts
    };
    run("metadata.labels.app");
    assert!(!input.is_converted(), "field paths must not convert");
    run("spec.containers[].image");
    assert_eq!(parts(&input), ["spec.containers"]);
    let containers = input
        .cached(&["spec".to_owned(), "containers".to_owned()])
        .unwrap();
    run("length(spec.containers)");
    run("keys(metadata.labels)");
    assert_eq!(parts(&input), ["metadata.labels", "spec.containers"]);
    let again = input
        .cached(&["spec".to_owned(), "containers".to_owned()])
        .unwrap();
    assert!(
        Arc::ptr_eq(&containers, &again),
        "converted once, then reused"
    );
    run("length(@)");
    assert!(parts(&input).contains(&String::new()), "the whole object");
}

/// The paths an expression observes whole, as `a.b` ("" for the whole
/// object).
fn observed(expression: &str) -> Vec<String> {
    fn walk(needs: &Needs, prefix: &str, out: &mut Vec<String>) {
        if needs.full {
            out.push(prefix.to_owned());
        }
        for (field, child) in &needs.fields {
            let path = if prefix.is_empty() {
                field.clone()
            } else {
                format!("{prefix}.{field}")
            };
            walk(child, &path, out);
        }
    }
    let mut out = Vec::new();
    walk(
        &Needs::of(&jmespath::parse(expression).unwrap()),
        "",
        &mut out,
    );
    out
}

#[test]
fn analysis_marks_what_an_expression_observes() {
    assert_eq!(observed("spec.containers[].image"), ["spec.containers"]);
    assert_eq!(
        observed("metadata.ownerReferences[?controller].uid"),
        ["metadata.ownerReferences"]
    );
    assert_eq!(
        observed("join('/', [metadata.namespace, spec.nodeName])"),
        ["metadata.namespace", "spec.nodeName"]
    );
    assert_eq!(observed("@.spec.nodeName"), ["spec.nodeName"]);
    assert_eq!(observed("spec | containers[0]"), ["spec.containers"]);
    assert_eq!(observed("spec.a == spec.b"), ["spec.a", "spec.b"]);
    assert_eq!(observed("spec.a || spec"), ["spec"]);
    assert_eq!(observed("`1`"), Vec::<String>::new());
    for whole in [
        "@",
        "keys(@)",
        "[?a]",
        "*.a",
        "[0]",
        "{a: @}",
        "@ | length(@)",
    ] {
        assert_eq!(observed(whole), [""], "{whole}");
    }
}

/// The examples of issue 12: a multi-select after a `null` field is null,
/// as it is on the whole object, whichever expressions ran on the input
/// before.
#[test]
fn multi_select_after_null_is_null_whatever_ran_before() {
    let object = obj(json!({
        "apiVersion": "v1", "kind": "X", "metadata": {"name": "n"}, "spec": {"x": null}
    }));
    // `None`: an evaluation error (length of null).
    let cases: [(&str, Option<&[&str]>); 8] = [
        ("spec.x.{a: y}", Some(&[])),
        ("length(spec.x.[y])", None),
        ("spec.x.[y] || 'dflt'", Some(&["dflt"])),
        ("type(spec.x.[y])", Some(&["null"])),
        ("spec.x | {a: y}", Some(&[])),
        ("length(spec.x | [y])", None),
        ("spec.x | [y] || 'dflt'", Some(&["dflt"])),
        ("type(spec.x | [y])", Some(&["null"])),
    ];
    for before in [None, Some("keys(@)"), Some("spec.x"), Some("length(spec)")] {
        for (expression, want) in cases {
            let input = IndexInput::new(&object);
            if let Some(before) = before {
                let _ = IndexFn::jmespath("before", before)
                    .unwrap()
                    .evaluate("before", &input);
            }
            let got = IndexFn::jmespath("t", expression)
                .unwrap()
                .evaluate("t", &input);
            match want {
                Some(want) => assert_eq!(got.unwrap(), want, "{expression} after {before:?}"),
                None => assert!(
                    matches!(got, Err(CacheError::IndexEvaluation { .. })),
                    "{expression} after {before:?}: {got:?}"
                ),
            }
            assert_same_as_crate(expression, &input);
        }
    }
}

/// A multi-select that reads nothing of its value still tells a null value
/// from an object.
#[test]
fn multi_select_reading_no_field_tests_its_value_for_null() {
    let mut shadowed = pod();
    shadowed.data = json!({"metadata": {"kind": 1}, "spec": {"x": null, "o": {}, "s": "s"}});
    for object in [pod(), shadowed] {
        for expression in [
            "metadata.{x: `1`}",
            "metadata.[`1`, 'a']",
            "spec.x.{a: `1`}",
            "spec.o.{a: `1`}",
            "spec.s.[`1`]",
            "spec.missing.[`1`]",
            "spec | x.[`1`]",
            "{a: `1`}",
            "metadata.labels.{a: `1`}",
        ] {
            assert_same_as_crate(expression, &IndexInput::new(&object));
        }
    }
    assert_eq!(
        observed("spec.x.{a: `1`}"),
        Vec::<String>::new(),
        "touched, not observed whole"
    );
}

/// A value that is not an object is never stood in for by a partly
/// converted one, whatever is read of it.
#[test]
fn only_objects_are_converted_in_part() {
    for x in [
        json!(null),
        json!("s"),
        json!(""),
        json!(0),
        json!([]),
        json!([{"y": 1}]),
        json!(false),
        json!({}),
        json!({"y": null}),
        json!({"y": {"z": 1}}),
    ] {
        let object = obj(json!({"metadata": {"name": "n"}, "spec": {"x": x}}));
        for expression in [
            "spec.x.{a: y}",
            "spec.x.[y]",
            "spec.x.y.[z]",
            "spec.x.y.{a: z} || 'dflt'",
            "spec | x.[y.z]",
            "type(spec.x.[y])",
            "spec.missing.[y]",
        ] {
            assert_same_as_crate(expression, &IndexInput::new(&object));
        }
    }
}

#[test]
fn field_paths_are_recognised() {
    let path = |e: &str| field_path::of(&jmespath::parse(e).unwrap());
    assert_eq!(
        path("a.b.c"),
        Some(vec!["a".into(), "b".into(), "c".into()])
    );
    assert_eq!(
        path(r#""a b"."c.d""#),
        Some(vec!["a b".into(), "c.d".into()])
    );
    assert_eq!(path("a | b"), Some(vec!["a".into(), "b".into()]));
    assert_eq!(
        path("a | b.c"),
        Some(vec!["a".into(), "b".into(), "c".into()])
    );
    assert_eq!(path("@.a"), None);
    assert_eq!(path("a[0]"), None);
    assert_eq!(path("a.*"), None);
    assert!(
        IndexFn::jmespath("x", "metadata.ownerReferences")
            .unwrap()
            .needs_conversion()
    );
}

/// Field paths covering the identifier edge cases of the JMESPath
/// compliance suite (quoted keys, escapes, missing keys, non-object
/// intermediates, null) and every shape of a DynamicObject.
const FIELD_PATHS: &[&str] = &[
    "apiVersion",
    "kind",
    "kind.x",
    "metadata",
    "metadata.name",
    "metadata.name.x",
    "metadata.namespace",
    "metadata.uid",
    "metadata.resourceVersion",
    "metadata.generateName",
    "metadata.selfLink",
    "metadata.generation",
    "metadata.generation.x",
    "metadata.deletionGracePeriodSeconds",
    "metadata.finalizers",
    "metadata.finalizers.x",
    "metadata.labels",
    "metadata.labels.app",
    "metadata.labels.app.x",
    "metadata.labels.missing",
    r#"metadata.labels."app.kubernetes.io/name""#,
    r#"metadata.labels."app.kubernetes.io/name".x"#,
    "metadata.annotations",
    "metadata.annotations.note",
    "metadata.nonexistent",
    "metadata.nonexistent.x",
    r#""metadata"."name""#,
    "metadata | name",
    "metadata | labels | app",
    "spec",
    "spec.nodeName",
    "spec.nodeName.x",
    "spec.priority",
    "spec.ratio",
    "spec.hostNetwork",
    "spec.containers",
    "spec.nested",
    "spec.nothing",
    "spec.nothing.x",
    "spec.emptyList",
    "spec.objInList",
    "spec.missing",
    "spec.missing.x",
    "status.phase",
    "missing",
    r#""""#,
    r#""a b""#,
    r#""with \"quote\"""#,
    r#""\u00e9t\u00e9""#,
    r#""🎉""#,
    "\"\".\"\"",
    "a.b.c.d",
    "_underscore",
    "A1",
    "x.y",
    "foo.bar.baz",
];

fn assert_fast_path_matches(object: &DynamicObject) {
    for expression in FIELD_PATHS {
        let f = IndexFn::jmespath("t", expression).unwrap();
        let fast = f.evaluate("t", &IndexInput::new(object)).map_err(|_| ());
        let crate_result = reference(expression, object);
        assert_eq!(fast, crate_result, "{expression} on {object:?}");
    }
}

#[test]
fn fast_path_matches_the_jmespath_crate() {
    let every_path_is_fast = FIELD_PATHS
        .iter()
        .all(|e| !IndexFn::jmespath("t", e).unwrap().needs_conversion());
    assert!(every_path_is_fast);

    let cases = [
        pod(),
        obj(json!({"metadata": {}})),
        obj(json!({"metadata": {"name": "n", "labels": {}, "annotations": {}, "finalizers": []}})),
        obj(json!({"kind": "K", "metadata": {"name": "n"}})),
        obj(json!({"apiVersion": "v", "metadata": {"name": "n"}})),
        obj(
            json!({"apiVersion": "v", "kind": "K", "metadata": {"name": "n"},
            "": "empty key", "a b": 1, "with \"quote\"": true, "été": [1, [2]], "🎉": null,
            "a": {"b": {"c": {"d": "deep"}}}, "x": "not an object", "_underscore": 0, "A1": -1,
            "foo": {"bar": [1, 2]}}),
        ),
        obj(
            json!({"metadata": {"name": "n"}, "a": {"b": {"c": {"d": {"e": 1}}}}, "x": {"y": [[]]}, "foo": {"bar": {"baz": null}}}),
        ),
        obj(json!({"metadata": {"name": "n"}, "spec": "a string", "status": [1, 2]})),
    ];
    for object in &cases {
        assert_fast_path_matches(object);
    }

    // Keys of `data` shadow the typed fields in the converted object.
    let mut shadowed = pod();
    shadowed.data = json!({"metadata": {"name": "from-data"}, "apiVersion": 3, "kind": ["a"]});
    assert_fast_path_matches(&shadowed);
    assert_eq!(eval("metadata.name", &shadowed).unwrap(), ["from-data"]);

    // Data that cannot be flattened into the object fails both ways.
    for data in [json!("s"), json!(1), json!([1]), json!(true)] {
        let mut odd = pod();
        odd.data = data;
        assert_fast_path_matches(&odd);
        assert!(eval("spec.nodeName", &odd).is_err());
    }
    let mut no_data = pod();
    no_data.data = Value::Null;
    assert_fast_path_matches(&no_data);
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        "[a-z .\"/é]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("a".to_owned()),
        Just("b".to_owned()),
        Just("metadata".to_owned()),
        Just("kind".to_owned()),
        Just("spec".to_owned()),
        Just("name".to_owned()),
        "[a-z\" .]{0,3}",
    ]
}

fn arbitrary_object() -> impl Strategy<Value = DynamicObject> {
    (
        prop::option::of("[a-z]{1,4}"),
        prop::option::of("[a-z]{1,4}"),
        prop::option::of(prop::collection::btree_map(
            "[a-z.]{0,3}",
            "[a-z]{0,3}",
            0..4,
        )),
        prop::collection::btree_map(key(), arbitrary_json(), 0..5),
        prop::option::of(prop::option::of("[a-z/]{0,3}")),
    )
        .prop_map(|(name, namespace, labels, data, kind)| {
            let mut object = DynamicObject {
                types: kind.map(|k| kube_core::TypeMeta {
                    api_version: "v1".to_owned(),
                    kind: k.unwrap_or_default(),
                }),
                metadata: ObjectMeta {
                    name,
                    namespace,
                    labels,
                    ..ObjectMeta::default()
                },
                data: Value::Object(data.into_iter().collect()),
            };
            if object.metadata.name.as_deref() == Some("zzzz") {
                object.data = Value::Null;
            }
            object
        })
}

const EXPRESSIONS: &[&str] = &[
    "a",
    "a.b",
    "metadata.name",
    "metadata.labels.a",
    "kind",
    "spec.name",
    "a[]",
    "a[*].b",
    "a[].b[]",
    "*.a",
    "a.*",
    "a[0]",
    "a[-1]",
    "a[1:3:2]",
    "a[?b]",
    "a[?b == `1`].name",
    "keys(@)",
    "values(a)",
    "length(a)",
    "sort(a)",
    "sort_by(a, &b)",
    "max_by(a, &b)",
    "min_by(a, &name)",
    "to_string(a)",
    "to_number(a)",
    "abs(a)",
    "sum(a)",
    "avg(a)",
    "ceil(a)",
    "floor(a)",
    "join(',', a)",
    "contains(a, 'x')",
    "starts_with(a, 'x')",
    "merge(a, b)",
    "not_null(a, b)",
    "reverse(a)",
    "type(a)",
    "to_array(a)",
    "map(&b, a)",
    "[a, b]",
    "{x: a, y: b}",
    "a || b",
    "a && b",
    "!a",
    "a < b",
    "a == b",
    "@",
    "a | b | [0]",
];

/// Evaluates through the library (fast path or partial conversion) and
/// through the crate's `search` on a full conversion; they must agree,
/// and so must the raw results of the interpreter on the partial
/// conversion, even for results that are not valid index values.
fn assert_same_as_crate(expression: &str, input: &IndexInput<'_>) {
    let Ok(f) = IndexFn::jmespath("p", expression) else {
        return;
    };
    let ours = f.evaluate("p", input).map_err(|_| ());
    let theirs = reference(expression, input.object());
    assert_eq!(ours, theirs, "{expression} on {:?}", input.object());

    let Kind::Jmespath(compiled) = &f.kind else {
        unreachable!()
    };
    let raw_ours = compiled.result(input).map_err(|_| ());
    let raw_theirs = search_whole(expression, input.object());
    assert_eq!(
        raw_ours,
        raw_theirs,
        "raw result of {expression} on {:?}",
        input.object()
    );
}

/// Trickier than EXPRESSIONS for the analysis: whole-value observers at
/// several depths, truthiness, shadowed typed fields, `&expr`.
const TRICKY: &[&str] = &[
    "length(metadata)",
    "length(spec)",
    "keys(metadata)",
    "metadata.labels || spec",
    "spec && metadata.name",
    "!spec",
    "spec.a.b || a",
    "values(@)[0]",
    "to_string(spec)",
    "to_string(metadata.labels)",
    "type(kind)",
    "spec.* | [0]",
    "metadata.*",
    "metadata.labels.*",
    "@ | spec | a",
    "[spec, a][0]",
    "{x: spec.a}.x",
    "sort_by([spec, a], &to_string(@))[0]",
    "map(&name, [spec, metadata])",
    "not_null(spec.missing, metadata.name)",
    "metadata.labels.a == spec.a",
    "metadata.managedFields",
    "metadata.creationTimestamp",
    "metadata.ownerReferences[0].name",
    "length(@)",
    "a[?b].c",
    "[?a]",
    "`[1, [2, [3]]]`",
];

#[test]
fn interpreted_path_matches_the_jmespath_crate() {
    let mut shadowed = pod();
    shadowed.data = json!({"metadata": {"name": "from-data", "labels": {"a": "1"}}, "kind": {"x": 1}, "spec": {"a": [1]}});
    let mut odd = pod();
    odd.data = json!([1]);
    let objects = [
        pod(),
        shadowed,
        odd,
        obj(json!({"metadata": {}})),
        obj(
            json!({"metadata": {"name": "n", "labels": {"a": "x"}}, "spec": {"a": "x", "b": {"c": 1}}, "a": [{"b": true, "c": 1}, {"b": false, "c": 2}]}),
        ),
    ];
    for object in &objects {
        // One input shared by every expression, as in the store.
        let input = IndexInput::new(object);
        for expression in EXPRESSIONS.iter().chain(TRICKY).chain(FIELD_PATHS) {
            assert_same_as_crate(expression, &input);
        }
        // And each expression on a fresh input.
        for expression in EXPRESSIONS.iter().chain(TRICKY) {
            assert_same_as_crate(expression, &IndexInput::new(object));
        }
    }
}

/// Syntactically varied expressions over the field names the arbitrary
/// objects use.
fn arbitrary_expression() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("a"),
        Just("b"),
        Just("c"),
        Just("metadata"),
        Just("spec"),
        Just("name"),
        Just("labels"),
        Just("kind"),
        Just("\"a b\""),
        Just("@"),
        Just("`1`"),
        Just("'x'"),
        Just("`{\"a\": [1, {\"b\": 2}]}`"),
    ]
    .prop_map(str::to_owned);
    let function = prop_oneof![
        Just("length"),
        Just("keys"),
        Just("values"),
        Just("to_string"),
        Just("to_array"),
        Just("type"),
        Just("not_null"),
        Just("sort"),
        Just("reverse"),
        Just("abs"),
    ];
    leaf.prop_recursive(4, 32, 3, move |inner| {
        let pair = (inner.clone(), inner.clone());
        prop_oneof![
            pair.clone().prop_map(|(a, b)| format!("{a}.{b}")),
            pair.clone().prop_map(|(a, b)| format!("{a} | {b}")),
            inner.clone().prop_map(|a| format!("{a}[0]")),
            inner.clone().prop_map(|a| format!("{a}[-1:]")),
            pair.clone().prop_map(|(a, b)| format!("{a}[*].{b}")),
            pair.clone().prop_map(|(a, b)| format!("{a}[].{b}")),
            inner.clone().prop_map(|a| format!("{a}[]")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(a, b, c)| format!("{a}[?{b} == {c}]")),
            inner.clone().prop_map(|a| format!("{a}.*")),
            pair.clone().prop_map(|(a, b)| format!("({a} || {b})")),
            pair.clone().prop_map(|(a, b)| format!("({a} && {b})")),
            inner.clone().prop_map(|a| format!("!{a}")),
            (function.clone(), inner.clone()).prop_map(|(f, a)| format!("{f}({a})")),
            pair.clone()
                .prop_map(|(a, b)| format!("sort_by({a}, &{b})")),
            pair.clone().prop_map(|(a, b)| format!("map(&{a}, {b})")),
            pair.clone().prop_map(|(a, b)| format!("[{a}, {b}]")),
            pair.clone()
                .prop_map(|(a, b)| format!("{{x: {a}, y: {b}}}")),
            pair.prop_map(|(a, b)| format!("merge({a}, {b})")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_objects_match_the_crate(object in arbitrary_object()) {
        let input = IndexInput::new(&object);
        for expression in EXPRESSIONS.iter().chain(TRICKY) {
            assert_same_as_crate(expression, &input);
        }
        let _ = IndexFn::namespace().evaluate(NAMESPACE_INDEX, &input);
    }

    #[test]
    fn fast_path_matches_on_arbitrary_objects(object in arbitrary_object()) {
        assert_fast_path_matches(&object);
    }

    #[test]
    fn arbitrary_expressions_match_the_crate(
        expressions in prop::collection::vec(arbitrary_expression(), 1..4),
        object in arbitrary_object(),
    ) {
        let input = IndexInput::new(&object);
        for expression in &expressions {
            assert_same_as_crate(expression, &input);
        }
    }

    #[test]
    fn arbitrary_strings_never_panic(
        expression in "[a-z.@*|&!\\[\\](){},:?<>=0-9 '`\"\\-]{0,40}",
        object in arbitrary_object(),
    ) {
        assert_same_as_crate(&expression, &IndexInput::new(&object));
    }
}

mod compact;
