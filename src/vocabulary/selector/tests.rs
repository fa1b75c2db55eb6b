use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1 as metav1;
use kube_core::{Expression, SelectorExt};
use proptest::prelude::*;

use super::parse::{
    EXPECT_END, EXPECT_KEY, EXPECT_KEY_AFTER_COMMA, EXPECT_KEY_AFTER_NOT, EXPECT_LIST_NEXT,
    EXPECT_LIST_START, EXPECT_OPEN, EXPECT_OPERATOR, EXPECT_VALUE, MAX_FOUND_LEN,
};
use super::*;
use crate::vocabulary::VocabularyError;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn sel(s: &str) -> Selector {
    Selector::parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
}

fn err(s: &str) -> VocabularyError {
    match Selector::parse(s) {
        Ok(parsed) => panic!("{s:?} should not parse, got {parsed:?}"),
        Err(e) => e,
    }
}

fn single(s: &str) -> Requirement {
    let parsed = sel(s);
    assert_eq!(parsed.requirements().len(), 1, "{s:?}");
    parsed.requirements()[0].clone()
}

#[test]
fn empty_and_blank_select_everything() {
    for s in ["", " ", " \t\r\n "] {
        let parsed = sel(s);
        assert!(parsed.is_everything());
        assert!(parsed.matches(&labels(&[])));
        assert_eq!(parsed.to_string(), "");
    }
    assert_eq!(Selector::everything(), sel(""));
}

#[test]
fn equality_operators() {
    for s in ["a=b", "a==b", " a = b ", "a\t==\tb"] {
        let r = single(s);
        assert_eq!(
            (r.key(), r.operator(), r.values()),
            ("a", Operator::Equals, &["b".to_owned()][..])
        );
    }
    let r = single("a!=b");
    assert_eq!(r.operator(), Operator::NotEquals);
    let s = sel("a=b");
    assert!(s.matches(&labels(&[("a", "b")])));
    assert!(!s.matches(&labels(&[("a", "c")])));
    assert!(!s.matches(&labels(&[])));
    let s = sel("a!=b");
    assert!(!s.matches(&labels(&[("a", "b")])));
    assert!(s.matches(&labels(&[("a", "c")])));
    assert!(s.matches(&labels(&[])), "!= matches a missing label");
}

#[test]
fn empty_exact_value() {
    let r = single("a=");
    assert_eq!(r.values(), [""]);
    assert!(sel("a=").matches(&labels(&[("a", "")])));
    assert!(!sel("a=").matches(&labels(&[])));
    assert_eq!(sel("a=,b").to_string(), "a=,b");
    assert_eq!(sel("a!=").to_string(), "a!=");
}

#[test]
fn set_operators() {
    let r = single("env in (prod, qa,prod)");
    assert_eq!(r.operator(), Operator::In);
    assert_eq!(r.values(), ["prod", "qa"]);
    let s = sel("env in (prod,qa)");
    assert!(s.matches(&labels(&[("env", "qa")])));
    assert!(!s.matches(&labels(&[("env", "dev")])));
    assert!(!s.matches(&labels(&[])));
    let s = sel("env notin (prod,qa)");
    assert!(!s.matches(&labels(&[("env", "qa")])));
    assert!(s.matches(&labels(&[("env", "dev")])));
    assert!(s.matches(&labels(&[])), "notin matches a missing label");
    // Keywords need no surrounding space next to a parenthesis.
    assert_eq!(sel("env in(a)"), sel("env in (a)"));
    assert_eq!(sel("env notin(a)"), sel("env notin (a)"));
}

#[test]
fn empty_entries_in_value_sets_are_the_empty_string() {
    assert_eq!(single("x in ()").values(), [""]);
    assert_eq!(single("x in (,)").values(), [""]);
    assert_eq!(single("x in (,a)").values(), ["", "a"]);
    assert_eq!(single("x in (a,)").values(), ["", "a"]);
    assert_eq!(single("x in (a,,b)").values(), ["", "a", "b"]);
    assert!(sel("x in ()").matches(&labels(&[("x", "")])));
    assert_eq!(sel("x in (a,,b)").to_string(), "x in (,a,b)");
}

#[test]
fn existence_operators() {
    let r = single("a");
    assert_eq!((r.operator(), r.values().len()), (Operator::Exists, 0));
    let r = single(" ! a ");
    assert_eq!((r.key(), r.operator()), ("a", Operator::DoesNotExist));
    assert!(sel("a").matches(&labels(&[("a", "")])));
    assert!(!sel("a").matches(&labels(&[("b", "")])));
    assert!(sel("!a").matches(&labels(&[("b", "")])));
    assert!(!sel("!a").matches(&labels(&[("a", "x")])));
}

#[test]
fn integer_comparisons() {
    let r = single("replicas>3");
    assert_eq!(
        (r.operator(), r.values()),
        (Operator::GreaterThan, &["3".to_owned()][..])
    );
    let gt = sel("n > 3");
    assert!(gt.matches(&labels(&[("n", "4")])));
    assert!(!gt.matches(&labels(&[("n", "3")])));
    assert!(
        !gt.matches(&labels(&[("n", "x")])),
        "non-integer label never matches"
    );
    assert!(!gt.matches(&labels(&[])), "missing label never matches");
    let lt = sel("n<10");
    assert!(lt.matches(&labels(&[("n", "9")])));
    assert!(lt.matches(&labels(&[("n", "-20")])));
    assert!(!lt.matches(&labels(&[("n", "10")])));
    assert!(sel("n>007").matches(&labels(&[("n", "8")])));
}

#[test]
fn integer_comparison_values_must_be_integers() {
    for (s, value) in [
        ("n>x", "x"),
        ("n>", ""),
        ("n<1.5", "1.5"),
        ("n>99999999999999999999", "99999999999999999999"),
    ] {
        match err(s) {
            VocabularyError::InvalidValue {
                value: v, reason, ..
            } => {
                assert_eq!(v, value);
                assert!(reason.contains("integer"), "{reason}");
            }
            other => panic!("{s:?}: {other:?}"),
        }
    }
    // A leading sign is an integer but not a label value, as in apimachinery.
    assert!(matches!(err("n>-1"), VocabularyError::InvalidValue { .. }));
}

#[test]
fn keywords_are_values_outside_operator_position() {
    let r = single("in in (in,notin)");
    assert_eq!(
        (r.key(), r.operator(), r.values()),
        (
            "in",
            Operator::In,
            &["in".to_owned(), "notin".to_owned()][..]
        )
    );
    assert_eq!(single("notin=in").values(), ["in"]);
    assert_eq!(single("notin").operator(), Operator::Exists);
    assert_eq!(sel("in in (in)").to_string(), "in in (in)");
}

#[test]
fn several_requirements_are_anded_and_canonically_ordered() {
    let s = sel("b=1, a in (x), !c, d");
    // Sorted by key, as apimachinery sorts them.
    assert_eq!(s.to_string(), "a in (x),b=1,!c,d");
    assert!(s.matches(&labels(&[("a", "x"), ("b", "1"), ("d", "")])));
    assert!(!s.matches(&labels(&[("a", "x"), ("b", "1"), ("d", ""), ("c", "")])));
    assert!(!s.matches(&labels(&[("a", "x"), ("d", "")])));
    assert_eq!(sel("a=1,b=2"), sel("b=2, a=1"));
    assert_eq!(sel("a=1,a=1"), sel("a=1"));
    assert_eq!(sel("a==1").to_string(), "a=1");
}

#[test]
fn prefixed_keys() {
    let r = single("app.kubernetes.io/name=web");
    assert_eq!(r.key(), "app.kubernetes.io/name");
    assert!(sel("!example.com/x-y_z.w").matches(&labels(&[])));
}

#[test]
fn invalid_keys() {
    let long = "a".repeat(64);
    let long_prefix = format!("{}/a", "a".repeat(254));
    let cases: Vec<(&str, &str)> = vec![
        ("-a=b", "name part"),
        ("a-=b", "name part"),
        ("a/b/c=d", "single '/'"),
        ("/a=b", "prefix part must be non-empty"),
        ("a/=b", "name part must be non-empty"),
        ("Example.com/a=b", "prefix part"),
        ("ex_ample.com/a=b", "prefix part"),
        (&long, "no more than 63"),
        (&long_prefix, "no more than 253"),
        ("é", "name part"),
        ("a\0b", "name part"),
    ];
    for (s, reason_part) in cases {
        match err(s) {
            VocabularyError::InvalidKey { reason, offset, .. } => {
                assert!(reason.contains(reason_part), "{s:?}: {reason}");
                assert_eq!(offset, 0);
            }
            other => panic!("{s:?}: {other:?}"),
        }
    }
    assert!(sel(&"a".repeat(63)).requirements().len() == 1);
}

#[test]
fn invalid_values() {
    let long = format!("a={}", "v".repeat(64));
    for s in [
        "a=-b",
        "a=b-",
        "a=b c=d",
        "a in (x, -y)",
        "a=b/c",
        "a=ü",
        &long,
    ] {
        let e = Selector::parse(s).unwrap_err();
        assert!(
            matches!(
                e,
                VocabularyError::InvalidValue { .. } | VocabularyError::SelectorSyntax { .. }
            ),
            "{s:?}: {e:?}"
        );
    }
    match err("a in (x, -y)") {
        VocabularyError::InvalidValue {
            key, value, column, ..
        } => {
            assert_eq!((key.as_str(), value.as_str(), column), ("a", "-y", 10));
        }
        other => panic!("{other:?}"),
    }
    assert!(sel(&format!("a={}", "v".repeat(63))).requirements().len() == 1);
    assert_eq!(single("a=A.b_c-D9").values(), ["A.b_c-D9"]);
}

#[test]
fn syntax_errors_name_position_and_token() {
    let cases: &[(&str, usize, &str, Option<&str>)] = &[
        ("app in (a", 9, EXPECT_LIST_NEXT, None),
        ("a b", 2, EXPECT_OPERATOR, Some("b")),
        ("a,", 2, EXPECT_KEY_AFTER_COMMA, None),
        ("a,,b", 2, EXPECT_KEY_AFTER_COMMA, Some(",")),
        (",a", 0, EXPECT_KEY, Some(",")),
        ("=a", 0, EXPECT_KEY, Some("=")),
        ("!", 1, EXPECT_KEY_AFTER_NOT, None),
        ("!!a", 1, EXPECT_KEY_AFTER_NOT, Some("!")),
        ("!a=b", 2, EXPECT_END, Some("=")),
        ("a in b", 5, EXPECT_OPEN, Some("b")),
        ("a in", 4, EXPECT_OPEN, None),
        ("a in (b c)", 8, EXPECT_LIST_NEXT, Some("c")),
        ("a in (=)", 6, EXPECT_LIST_START, Some("=")),
        ("a in (b,", 8, EXPECT_LIST_START, None),
        ("a=b c", 4, EXPECT_END, Some("c")),
        ("a=(b)", 2, EXPECT_VALUE, Some("(")),
        ("a===b", 3, EXPECT_VALUE, Some("=")),
        ("a ! b", 2, EXPECT_OPERATOR, Some("!")),
        ("a in (b))", 8, EXPECT_END, Some(")")),
        ("a=b)", 3, EXPECT_END, Some(")")),
        ("a=>1", 2, EXPECT_VALUE, Some(">")),
    ];
    for &(s, offset, expected, found) in cases {
        match err(s) {
            VocabularyError::SelectorSyntax {
                offset: o,
                column,
                expected: e,
                found: f,
                input,
            } => {
                assert_eq!(
                    (o, column, e, f.as_deref()),
                    (offset, offset + 1, expected, found),
                    "{s:?}"
                );
                assert_eq!(input, s);
            }
            other => panic!("{s:?}: {other:?}"),
        }
    }
}

#[test]
fn error_messages() {
    assert_eq!(
        err("app in (a").to_string(),
        r#"label selector "app in (a": expected ')' or ',' at column 10"#
    );
    assert_eq!(
        err("app foo").to_string(),
        r#"label selector "app foo": expected an operator ('=', '==', '!=', 'in', 'notin', '>' or '<') at column 5, found "foo""#
    );
    assert_eq!(
        err("app=web,-x").to_string(),
        "label selector \"app=web,-x\": invalid label key \"-x\" at column 9: name part must consist of \
         alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
    );
}

#[test]
fn columns_count_characters_not_bytes() {
    match err("é=a,b c") {
        VocabularyError::InvalidKey { column, .. } => assert_eq!(column, 1),
        other => panic!("{other:?}"),
    }
    match err("a=b,ééé x") {
        VocabularyError::InvalidKey { offset, column, .. } => {
            assert_eq!((offset, column), (4, 5))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn long_found_tokens_are_truncated() {
    let s = format!("a {}", "b".repeat(1000));
    match err(&s) {
        VocabularyError::SelectorSyntax {
            found: Some(found), ..
        } => assert!(found.chars().count() <= MAX_FOUND_LEN + 1),
        other => panic!("{other:?}"),
    }
}

#[test]
fn requirement_new_validates() {
    assert!(Requirement::new("a", Operator::Equals, ["b"]).is_ok());
    assert!(Requirement::new("a", Operator::Equals, ["b", "c"]).is_err());
    assert!(Requirement::new("a", Operator::Equals, Vec::<String>::new()).is_err());
    assert!(Requirement::new("a", Operator::In, Vec::<String>::new()).is_err());
    assert!(Requirement::new("a", Operator::Exists, ["b"]).is_err());
    assert!(Requirement::new("a", Operator::GreaterThan, ["b"]).is_err());
    assert!(Requirement::new("a", Operator::LessThan, ["1"]).is_ok());
    assert!(Requirement::new("-a", Operator::Exists, Vec::<String>::new()).is_err());
    assert!(Requirement::new("a", Operator::NotIn, ["ok", "not ok"]).is_err());
    let e = Requirement::new("a", Operator::In, ["-x"]).unwrap_err();
    assert!(
        e.to_string()
            .starts_with(r#"invalid label selector requirement for key "a": invalid value "-x""#),
        "{e}"
    );
}

#[test]
fn from_labels() {
    let s = Selector::from_labels(&labels(&[("b", "2"), ("a", "1")])).unwrap();
    assert_eq!(s.to_string(), "a=1,b=2");
    assert!(Selector::from_labels(&labels(&[])).unwrap().is_everything());
    assert!(Selector::from_labels(&labels(&[("a", "-")])).is_err());
}

#[test]
fn from_label_selector() {
    let spec: LabelSelector = serde_json::from_value(serde_json::json!({
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["a", "b"]},
            {"key": "canary", "operator": "DoesNotExist"},
            {"key": "zone", "operator": "Exists", "values": null},
        ]
    }))
    .unwrap();
    let s = Selector::from_label_selector(&spec).unwrap();
    assert_eq!(s, sel("app=web,tier in (a,b),!canary,zone"));
    assert_eq!(Selector::try_from(&spec).unwrap(), s);

    let empty: LabelSelector =
        serde_json::from_value(serde_json::json!({"matchLabels": null})).unwrap();
    assert!(
        Selector::from_label_selector(&empty)
            .unwrap()
            .is_everything()
    );

    let bad = |expr: serde_json::Value| {
        let spec: LabelSelector =
            serde_json::from_value(serde_json::json!({ "matchExpressions": [expr] })).unwrap();
        Selector::from_label_selector(&spec).unwrap_err()
    };
    let e = bad(serde_json::json!({"key": "a", "operator": "Gt", "values": ["1"]}));
    assert!(
        e.to_string()
            .contains(r#""Gt" is not a valid label selector operator"#),
        "{e}"
    );
    assert!(matches!(
        bad(serde_json::json!({"key": "a", "operator": "In"})),
        VocabularyError::InvalidRequirement { .. }
    ));
    assert!(matches!(
        bad(serde_json::json!({"key": "a", "operator": "Exists", "values": ["x"]})),
        VocabularyError::InvalidRequirement { .. }
    ));
    assert!(matches!(
        bad(serde_json::json!({"key": "a b", "operator": "Exists"})),
        VocabularyError::InvalidRequirement { .. }
    ));
}

#[test]
fn from_k8s_openapi_label_selector() {
    let json = serde_json::json!({
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["b", "a"]},
            {"key": "env", "operator": "NotIn", "values": ["prod"]},
            {"key": "canary", "operator": "DoesNotExist"},
            {"key": "zone", "operator": "Exists", "values": []},
        ]
    });
    let spec: metav1::LabelSelector = serde_json::from_value(json.clone()).unwrap();
    let s = Selector::try_from(&spec).unwrap();
    assert_eq!(
        s,
        sel("app=web,tier in (a,b),env notin (prod),!canary,zone")
    );
    // The same spec read into our own type gives the same selector.
    let ours: LabelSelector = serde_json::from_value(json).unwrap();
    assert_eq!(Selector::from_label_selector(&ours).unwrap(), s);
    // Through the string form and back.
    assert_eq!(Selector::parse(&s.to_string()).unwrap(), s);
    assert_eq!(Selector::try_from(spec).unwrap(), s);

    for empty in [
        metav1::LabelSelector::default(),
        metav1::LabelSelector {
            match_labels: Some(BTreeMap::new()),
            match_expressions: Some(vec![]),
        },
    ] {
        assert!(Selector::try_from(&empty).unwrap().is_everything());
    }
}

#[test]
fn k8s_openapi_label_selector_errors_name_the_culprit() {
    let expr = |key: &str, operator: &str, values: Option<&[&str]>| metav1::LabelSelector {
        match_labels: None,
        match_expressions: Some(vec![metav1::LabelSelectorRequirement {
            key: key.to_owned(),
            operator: operator.to_owned(),
            values: values.map(|v| v.iter().map(|s| (*s).to_owned()).collect()),
        }]),
    };
    let message = |spec: metav1::LabelSelector| match Selector::try_from(&spec) {
        Err(e @ VocabularyError::InvalidRequirement { .. }) => e.to_string(),
        other => panic!("{spec:?}: {other:?}"),
    };
    assert_eq!(
        message(expr("a", "Gt", Some(&["1"]))),
        r#"invalid label selector requirement for key "a": "Gt" is not a valid label selector operator (expected In, NotIn, Exists or DoesNotExist)"#
    );
    assert!(
        message(expr("a", "in", Some(&["x"]))).contains(r#""in" is not a valid"#),
        "operators are case-sensitive, as in apimachinery"
    );
    let bad_value = message(expr("tier", "In", Some(&["web", "-x"])));
    assert!(
        bad_value.starts_with(
            r#"invalid label selector requirement for key "tier": invalid value "-x""#
        ),
        "{bad_value}"
    );
    assert!(message(expr("a", "In", None)).contains("can't be empty"));
    assert!(message(expr("a", "NotIn", Some(&[]))).contains("can't be empty"));
    assert!(message(expr("a", "Exists", Some(&["x"]))).contains("must be empty"));
    assert!(message(expr("a b", "Exists", None)).contains(r#"key "a b": invalid key"#));
    let bad_label = metav1::LabelSelector {
        match_labels: Some([("app".to_owned(), "not ok".to_owned())].into()),
        match_expressions: None,
    };
    assert!(message(bad_label).contains(r#"invalid value "not ok""#));
}

#[test]
fn into_kube_core_selector() {
    let s = sel("a=1, b!=2, c in (x,y), d notin (z), e, !f");
    let converted = kube_core::Selector::try_from(&s).unwrap();
    let set = |values: &[&str]| values.iter().map(|v| (*v).to_owned()).collect();
    let expected: kube_core::Selector = [
        Expression::Equal("a".into(), "1".into()),
        Expression::NotEqual("b".into(), "2".into()),
        Expression::In("c".into(), set(&["x", "y"])),
        Expression::NotIn("d".into(), set(&["z"])),
        Expression::Exists("e".into()),
        Expression::DoesNotExist("f".into()),
    ]
    .into_iter()
    .collect();
    // Our canonical order puts !f first; kube-core keeps the order given.
    assert_eq!(converted.to_string(), s.to_string());
    assert_eq!(
        converted.clone().into_iter().collect::<BTreeSet<_>>(),
        expected.into_iter().collect::<BTreeSet<_>>()
    );
    assert_eq!(Selector::parse(&converted.to_string()).unwrap(), s);
    assert_eq!(kube_core::Selector::try_from(s.clone()).unwrap(), converted);

    for pairs in [
        &[][..],
        &[("a", "1"), ("c", "x"), ("e", "")],
        &[("a", "1"), ("b", "2"), ("c", "y"), ("e", "v")],
        &[("a", "1"), ("c", "x"), ("d", "z"), ("e", "")],
        &[("a", "1"), ("c", "x"), ("e", ""), ("f", "")],
    ] {
        let labels = labels(pairs);
        assert_eq!(converted.matches(&labels), s.matches(&labels), "{pairs:?}");
    }

    let everything = kube_core::Selector::try_from(&Selector::everything()).unwrap();
    assert!(everything.selects_all());
    let empty_value = kube_core::Selector::try_from(&sel("a=,b in ()")).unwrap();
    assert_eq!(empty_value.to_string(), "a=,b in ()");
    assert_eq!(sel(&empty_value.to_string()), sel("a=,b in ()"));
}

#[test]
fn greater_and_less_than_have_no_kube_core_expression() {
    for (s, requirement) in [("a=1,n>3", "n>3"), ("n<10", "n<10")] {
        match kube_core::Selector::try_from(&sel(s)) {
            Err(VocabularyError::Inexpressible {
                requirement: r,
                target,
            }) => assert_eq!((r.as_str(), target), (requirement, "kube_core::Selector")),
            other => panic!("{s:?}: {other:?}"),
        }
    }
    assert_eq!(
        kube_core::Selector::try_from(sel("n>3"))
            .unwrap_err()
            .to_string(),
        r#"label selector requirement "n>3" cannot be expressed as a kube_core::Selector, which has no '>' or '<' operator; pass the selector as a string instead"#
    );
}

#[test]
fn round_trip_through_k8s_openapi_via_kube_core() {
    // kube-core turns a selector into a k8s-openapi LabelSelector; reading it
    // back gives the same selector, except that `!=` comes back as a
    // one-value `notin`, which selects the same objects.
    let s = sel("app=web,tier in (a,b),env notin (prod),zone,!canary,track!=beta");
    let spec = metav1::LabelSelector::from(kube_core::Selector::try_from(&s).unwrap());
    let back = Selector::try_from(&spec).unwrap();
    assert_eq!(
        back,
        sel("app=web,tier in (a,b),env notin (prod),zone,!canary,track notin (beta)")
    );
    for pairs in [
        &[("app", "web"), ("tier", "a"), ("zone", "z")][..],
        &[
            ("app", "web"),
            ("tier", "a"),
            ("zone", "z"),
            ("track", "beta"),
        ],
        &[
            ("app", "web"),
            ("tier", "b"),
            ("zone", "z"),
            ("track", "ga"),
        ],
    ] {
        let labels = labels(pairs);
        assert_eq!(back.matches(&labels), s.matches(&labels), "{pairs:?}");
    }
}

#[test]
fn matches_object_reads_metadata_labels() {
    let mut object: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "labels": {"app": "web"}}
    }))
    .unwrap();
    assert!(sel("app=web").matches_object(&object));
    assert!(!sel("app=db").matches_object(&object));
    object.metadata.labels = None;
    assert!(sel("!app").matches_object(&object));
    assert!(!sel("app").matches_object(&object));
    assert!(Selector::everything().matches_object(&object));
}

#[test]
fn serde_uses_the_string_form() {
    let s = sel("b notin (y,x), a");
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json, serde_json::json!("a,b notin (x,y)"));
    assert_eq!(serde_json::from_value::<Selector>(json).unwrap(), s);
    assert!(serde_json::from_value::<Selector>(serde_json::json!("a in")).is_err());
}

#[test]
fn field_selectors() {
    for ok in [
        "",
        ",",
        "metadata.name=web",
        "metadata.name==web",
        "status.phase!=Running",
        "a=b,c!=d,e==f",
        "a=",
        "a=x\\,y\\=z\\\\",
        "spec.nodeName=",
        "a=b,,c=d",
    ] {
        assert!(
            validate_field_selector(ok).is_ok(),
            "{ok:?}: {:?}",
            validate_field_selector(ok)
        );
    }
    let cases: &[(&str, usize, &str)] = &[
        ("a", 0, "expected '=', '==' or '!='"),
        ("a=b,c", 4, "expected '=', '==' or '!='"),
        ("=b", 0, "missing field name"),
        ("a b=c", 1, "whitespace"),
        ("a=b=c", 3, "unescaped '='"),
        ("a===b", 3, "unescaped '='"),
        ("a=b\\x", 3, "invalid escape sequence"),
        ("a=b\\", 3, "lone"),
    ];
    for &(s, offset, reason_part) in cases {
        match validate_field_selector(s) {
            Err(VocabularyError::FieldSyntax {
                offset: o,
                column,
                reason,
                ..
            }) => {
                assert_eq!((o, column), (offset, offset + 1), "{s:?}");
                assert!(reason.contains(reason_part), "{s:?}: {reason}");
            }
            other => panic!("{s:?}: {other:?}"),
        }
    }
    // An escaped comma does not split terms.
    assert!(validate_field_selector("a=x\\,b").is_ok());
}

fn key_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]([-a-z0-9_.]{0,10}[a-z0-9])?",
        "[a-z0-9]{1,5}(\\.[a-z0-9]{1,5}){0,2}/[A-Za-z0-9]([-A-Za-z0-9_.]{0,8}[A-Za-z0-9])?",
        Just("in".to_owned()),
        Just("notin".to_owned()),
    ]
}

fn value_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[A-Za-z0-9]([-A-Za-z0-9_.]{0,8}[A-Za-z0-9])?",
        Just("in".to_owned())
    ]
}

fn requirement_strategy() -> impl Strategy<Value = Requirement> {
    (
        key_strategy(),
        0..8usize,
        prop::collection::vec(value_strategy(), 1..4),
        0..1000i64,
    )
        .prop_map(|(key, op, values, n)| {
            let (operator, values) = match op {
                0 => (Operator::Equals, vec![values[0].clone()]),
                1 => (Operator::NotEquals, vec![values[0].clone()]),
                2 => (Operator::In, values),
                3 => (Operator::NotIn, values),
                4 => (Operator::Exists, vec![]),
                5 => (Operator::DoesNotExist, vec![]),
                6 => (Operator::GreaterThan, vec![n.to_string()]),
                _ => (Operator::LessThan, vec![n.to_string()]),
            };
            Requirement::new(key, operator, values).expect("strategy builds valid requirements")
        })
}

proptest! {
    #[test]
    fn parsing_arbitrary_strings_never_panics(s in any::<String>()) {
        let _ = Selector::parse(&s);
        let _ = validate_field_selector(&s);
    }

    #[test]
    fn parsing_selector_like_strings_never_panics_and_round_trips(
        s in "[ a-c!=<>(),0-9]{0,12}|([a-c]{1,2}( ?(in|notin|=|==|!=|<|>) ?)?[ (,)a-c0-9]{0,6},?){0,3}"
    ) {
        if let Ok(parsed) = Selector::parse(&s) {
            let shown = parsed.to_string();
            prop_assert_eq!(Selector::parse(&shown), Ok(parsed), "{:?} -> {:?}", s, shown);
        }
    }

    #[test]
    fn kube_core_conversion_keeps_the_string_form(
        requirements in prop::collection::vec(requirement_strategy(), 0..5)
    ) {
        let selector = Selector::new(requirements);
        match kube_core::Selector::try_from(&selector) {
            Ok(converted) => {
                let shown = converted.to_string();
                prop_assert_eq!(&shown, &selector.to_string());
                prop_assert_eq!(Selector::parse(&shown), Ok(selector));
            }
            Err(VocabularyError::Inexpressible { .. }) => prop_assert!(
                selector.requirements().iter().any(|r| matches!(
                    r.operator(),
                    Operator::GreaterThan | Operator::LessThan
                ))
            ),
            Err(other) => prop_assert!(false, "{:?}", other),
        }
    }

    #[test]
    fn display_round_trips(requirements in prop::collection::vec(requirement_strategy(), 0..5)) {
        let selector = Selector::new(requirements);
        let shown = selector.to_string();
        prop_assert_eq!(Selector::parse(&shown), Ok(selector), "{:?}", shown);
    }

    #[test]
    fn field_selector_like_strings_never_panic(s in "[a-c=!,\\\\ é]{0,16}") {
        let _ = validate_field_selector(&s);
    }
}
