//! `IndexFn::evaluate_compact` against `IndexFn::evaluate` on the decoded
//! object.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::cache::compact::{CompactObject, Interner};

/// Whether `f` is one `evaluate_compact` must answer.
fn reads_compact(f: &IndexFn) -> bool {
    match &f.kind {
        Kind::Namespace => true,
        Kind::Jmespath(compiled) => matches!(compiled.plan, Plan::Direct(_)),
        Kind::Closure(_) => false,
    }
}

/// `f` on the compact form of `object`: `Some` of what `evaluate` gives on
/// the decoded object when `f` reads the compact form, `None` otherwise.
fn compact_result(
    f: &IndexFn,
    object: &DynamicObject,
    interner: &mut Interner,
) -> Option<Result<Vec<String>, CacheError>> {
    let compact = CompactObject::from_object(object, interner);
    let decoded = compact.to_object();
    assert_eq!(&decoded, object, "round trip");
    let got = f.evaluate_compact("idx", &compact);
    if reads_compact(f) {
        let expected = f.evaluate("idx", &IndexInput::new(&decoded));
        assert_eq!(got.as_ref(), Some(&expected), "{f:?} on {object:?}");
    } else {
        assert!(got.is_none(), "{f:?} on {object:?} gave {got:?}");
    }
    got
}

/// Nested arrays `depth` deep around a string.
fn deep_array(depth: usize) -> Value {
    let mut value = json!("bottom");
    for _ in 0..depth {
        value = Value::Array(vec![value, Value::Null]);
    }
    value
}

fn compact_objects() -> Vec<DynamicObject> {
    let mut objects = vec![
        pod(),
        obj(json!({"metadata": {}})),
        obj(json!({"metadata": {"namespace": "ns"}, "spec": {"nodeName": "n"}})),
        obj(json!({"metadata": {"name": "node-1"}, "spec": {"nodeName": "self"}})),
        obj(json!({"metadata": {"name": "odd", "namespace": ""}})),
        obj(json!({"apiVersion": "", "kind": "", "metadata": {"name": "n"}})),
        obj(json!({"metadata": {"name": "n", "labels": {}, "annotations": {}, "finalizers": []}})),
        obj(json!({
            "apiVersion": "v1", "kind": "Thing",
            "metadata": {
                "name": "meta", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                "generation": -2, "deletionGracePeriodSeconds": 30, "generateName": "meta-",
                "selfLink": "/x/y", "finalizers": ["a", "b/c", ""],
                "labels": {"app": "a", "x.y": "dot", "a/b": "slash", "~": "tilde", " ": "space", "": "empty"},
                "annotations": {"note": "n", "x.y": "dot", "~1": "escaped?"}
            }
        })),
        obj(
            json!({"metadata": {"name": "zero", "generation": 0, "deletionGracePeriodSeconds": 0}}),
        ),
        obj(json!({
            "metadata": {"name": "numbers"},
            "spec": {
                "int": 3, "neg": -5, "float": 1.5, "floatInt": 3.0, "negZero": -0.0,
                "big": u64::MAX, "min": i64::MIN, "huge": 1e300, "tiny": 1e-7, "exp": 2e19,
                "yes": true, "no": false, "nothing": null, "text": "t", "empty": "",
                "list": [{"x": 1}, {"x": 2}], "scalars": [1, -1.5, true, "s", null],
                "nested": [[1, [2, [true, null, "x"]]], [], null], "objInNested": [[{"a": 1}]],
                "emptyList": [], "emptyObject": {}
            }
        })),
        obj(json!({
            "metadata": {"name": "keys"},
            "a~b": {"c/d": "cd", "~0": "tilde-zero", "~1": "tilde-one", "c": {"d": "no"}},
            "x.y": {" ": "space", "z": "dotted"}, "a/b": "slash", "a b": "spaced", "~": "tilde"
        })),
        // More keys than a short scan covers, so lookups go by halves.
        obj(json!({
            "metadata": {"name": "wide"},
            "spec": {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8, "i": 9,
                     "j": 10, "k": 11, "list": ["w"], "nodeName": "wide-node", "zz": "last"},
            "s1": 1, "s2": 2, "s3": 3, "s4": 4, "s5": 5, "s6": 6, "s7": 7, "s8": 8, "s9": 9
        })),
        obj(json!({"metadata": {"name": "deep"}, "spec": {"list": deep_array(300)}})),
    ];

    // Keys of the data shadow the typed fields.
    let mut shadowed = pod();
    shadowed.data = json!({
        "metadata": {"name": "from-data", "labels": {"app": "data-app"}, "finalizers": {"x": "fx"}},
        "apiVersion": {"x": "api-x"}, "kind": ["k1", ["k2"]], "spec": {"nodeName": "n"}
    });
    objects.push(shadowed);
    for metadata in [
        json!(null),
        json!("s"),
        json!(3),
        json!([1, "m"]),
        json!({}),
    ] {
        let mut object = pod();
        object.data = json!({"metadata": metadata, "kind": null, "apiVersion": false});
        objects.push(object);
    }
    // Data that is null has no keys; data that is neither null nor an
    // object fails every path.
    for data in [
        Value::Null,
        json!([{"metadata": {}}]),
        json!("s"),
        json!(1),
        json!(true),
        json!([]),
    ] {
        let mut object = pod();
        object.data = data.clone();
        objects.push(object);
        let mut unnamed = obj(json!({"metadata": {"namespace": "ns"}}));
        unnamed.data = data;
        objects.push(unnamed);
    }
    objects
}

/// Plain field paths beyond `FIELD_PATHS`.
const COMPACT_PATHS: &[&str] = &[
    "spec.list",
    "spec.list.x",
    "spec.scalars",
    "spec.nested",
    "spec.objInNested",
    "spec.int",
    "spec.neg",
    "spec.float",
    "spec.floatInt",
    "spec.negZero",
    "spec.big",
    "spec.min",
    "spec.huge",
    "spec.tiny",
    "spec.exp",
    "spec.yes",
    "spec.no",
    "spec.text",
    "spec.text.x",
    "spec.empty",
    "spec.emptyObject",
    "spec.emptyObject.x",
    "spec.zz",
    "spec.k",
    "s9",
    "apiVersion.x",
    "metadata.labels.\"x.y\"",
    "metadata.labels.\"a/b\"",
    "metadata.labels.\"~\"",
    "metadata.labels.\" \"",
    "metadata.labels.\"\"",
    "metadata.annotations.\"x.y\"",
    "metadata.annotations.\"~1\"",
    "metadata.annotations.note.x",
    "metadata.finalizers.\"0\"",
    "metadata.deletionGracePeriodSeconds.x",
    "metadata.\"labels/app\"",
    "metadata.\"labels~\"",
    "metadata.\"name~\"",
    "metadata.\"~1\"",
    "metadata.\"\"",
    "metadata.\"name\".\"\"",
    "\"a~b\"",
    "\"a~b\".\"c/d\"",
    "\"a~b\".\"~0\"",
    "\"a~b\".\"~1\"",
    "\"a~b\".c.d",
    "\"x.y\".\" \"",
    "\"x.y\".z",
    "\"a/b\"",
    "\"~\"",
    "\"a b\"",
    "spec.list | x",
    "spec.scalars.\"0\"",
    "spec.list.\"1\".x",
    "spec.nested.\"0\"",
];

/// Expressions that need the decoded object.
const NOT_COMPACT: &[&str] = &[
    "spec.containers[].image",
    "spec.list[0]",
    "spec.list[*].x",
    "metadata.creationTimestamp",
    "metadata.deletionTimestamp",
    "metadata.ownerReferences",
    "metadata.ownerReferences.name",
    "metadata.managedFields",
    "metadata.managedFields.x",
    "length(spec.list)",
    "to_string(metadata.labels)",
    "spec.*",
    "[spec.nodeName]",
    "@",
    "@.spec",
];

fn every_function() -> Vec<IndexFn> {
    let mut functions = vec![
        IndexFn::namespace(),
        IndexFn::closure_infallible(|obj| obj.metadata.name.iter().cloned().collect()),
        IndexFn::closure(|_| Err("never read".to_owned())),
    ];
    for expression in FIELD_PATHS.iter().chain(COMPACT_PATHS) {
        let f = IndexFn::jmespath("idx", expression).unwrap();
        assert!(reads_compact(&f), "{expression} is a plain field path");
        functions.push(f);
    }
    for expression in NOT_COMPACT {
        let f = IndexFn::jmespath("idx", expression).unwrap();
        assert!(!reads_compact(&f), "{expression} needs the decoded object");
        functions.push(f);
    }
    functions
}

#[test]
fn compact_reads_match_the_decoded_object() {
    let mut interner = Interner::new();
    let (mut values, mut empty, mut errors, mut declined) = (0, 0, 0, 0);
    for object in &compact_objects() {
        for f in &every_function() {
            match compact_result(f, object, &mut interner) {
                Some(Ok(found)) if found.is_empty() => empty += 1,
                Some(Ok(found)) => values += found.len(),
                Some(Err(_)) => errors += 1,
                None => declined += 1,
            }
        }
    }
    // Every kind of outcome was compared.
    assert!(values > 150, "{values} values");
    assert!(empty > 500, "{empty} empty");
    assert!(errors > 500, "{errors} errors");
    assert!(declined > 400, "{declined} declined");
}

#[test]
fn compact_reads_spot_checks() {
    let mut interner = Interner::new();
    let read = |expression: &str, object: &DynamicObject, interner: &mut Interner| {
        let f = IndexFn::jmespath("by-x", expression).unwrap();
        compact_result(&f, object, interner).unwrap()
    };
    let objects = compact_objects();
    let shadowed = objects
        .iter()
        .find(|o| o.data.pointer("/metadata/name") == Some(&json!("from-data")))
        .unwrap();
    assert_eq!(
        read("metadata.name", shadowed, &mut interner).unwrap(),
        ["from-data"]
    );
    assert_eq!(
        read("apiVersion.x", shadowed, &mut interner).unwrap(),
        ["api-x"]
    );
    assert_eq!(read("kind", shadowed, &mut interner).unwrap(), ["k1", "k2"]);
    assert_eq!(
        read("metadata.labels", &pod(), &mut interner),
        Err(CacheError::IndexEvaluation {
            index: "idx".to_owned(),
            object: "shop/web-0".to_owned(),
            message: values::OBJECT_RESULT.to_owned(),
        })
    );
    let unnamed = obj(json!({"metadata": {"namespace": "ns"}, "spec": "text"}));
    assert_eq!(read("spec", &unnamed, &mut interner).unwrap(), ["text"]);
    let mut odd = unnamed.clone();
    odd.data = json!(["a"]);
    let err = read("spec", &odd, &mut interner).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"index "idx": cannot index object "<unnamed>": converting the object for JMESPath: object data is not a JSON object"#
    );
    let keys =
        obj(json!({"metadata": {"name": "k", "labels": {"a/b": "slash"}}, "a~b": {"c/d": "cd"}}));
    assert_eq!(
        read("\"a~b\".\"c/d\"", &keys, &mut interner).unwrap(),
        ["cd"]
    );
    assert_eq!(
        read("metadata.labels.\"a/b\"", &keys, &mut interner).unwrap(),
        ["slash"]
    );
    let namespaces = IndexFn::namespace();
    let cluster_scoped = obj(json!({"metadata": {"name": "node-1"}}));
    assert_eq!(
        compact_result(&namespaces, &pod(), &mut interner),
        Some(Ok(vec!["shop".to_owned()]))
    );
    assert_eq!(
        compact_result(&namespaces, &cluster_scoped, &mut interner),
        Some(Ok(vec![]))
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn compact_reads_match_on_arbitrary_objects(object in arbitrary_object()) {
        let mut interner = Interner::new();
        for f in &every_function() {
            compact_result(f, &object, &mut interner);
        }
    }
}
