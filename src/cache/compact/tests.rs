use super::*;
use proptest::prelude::*;
use serde::Deserialize;
use serde_json::json;

fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).expect("a DynamicObject")
}

fn decoded(text: &str) -> DynamicObject {
    serde_json::from_str(text).expect("a DynamicObject")
}

/// The benchmark's Widget, and a copy of it named `name` (the same
/// `fieldsV1` trees).
fn widget_and_copy(name: &str) -> (DynamicObject, DynamicObject) {
    let a = decoded(WIDGET);
    let mut b = a.clone();
    b.metadata.name = Some(name.into());
    (a, b)
}

/// Round trip, JSON and every zero-copy read against the original.
fn check(o: &DynamicObject, interner: &mut Interner) -> CompactObject {
    let c = CompactObject::from_object(o, interner);
    let back = c.to_object();
    assert_eq!(&back, o);
    let expected = serde_json::to_vec(o);
    let mut out = b"prefix".to_vec();
    let written = c.write_json(&mut out);
    match expected {
        Ok(expected) => {
            assert!(written.is_ok(), "{written:?}");
            assert_eq!(
                String::from_utf8_lossy(&out[6..]),
                String::from_utf8_lossy(&expected)
            );
            // The round trip keeps representations too (0.0 == -0.0 for ==).
            assert_eq!(serde_json::to_vec(&back).ok(), Some(expected.clone()));
            let mut de = serde_json::Deserializer::from_slice(&expected);
            de.disable_recursion_limit();
            let value = Value::deserialize(&mut de).expect("JSON");
            check_pointers(&c, &value, "", &value);
        }
        Err(_) => {
            assert!(written.is_err());
            assert_eq!(out, b"prefix");
        }
    }
    assert_eq!(c.name(), o.metadata.name.as_deref());
    assert_eq!(c.namespace(), o.metadata.namespace.as_deref());
    assert_eq!(c.uid(), o.metadata.uid.as_deref());
    assert_eq!(c.resource_version(), o.metadata.resource_version.as_deref());
    let labels: BTreeMap<String, String> = c
        .labels()
        .iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    assert_eq!(labels, o.metadata.labels.clone().unwrap_or_default());
    for (k, v) in o.metadata.labels.iter().flatten() {
        assert_eq!(c.labels().get(k), Some(v.as_str()));
    }
    for (k, v) in o.metadata.annotations.iter().flatten() {
        assert_eq!(c.annotations().get(k), Some(v.as_str()));
    }
    let refs: Vec<_> = c.owner_references().map(|r| r.to_reference()).collect();
    assert_eq!(
        refs,
        o.metadata.owner_references.clone().unwrap_or_default()
    );
    c
}

/// Every pointer into `value` reads the same through the compact object.
fn check_pointers(c: &CompactObject, root: &Value, pointer: &str, value: &Value) {
    let got = c.pointer(pointer).map(|v| v.to_value());
    assert_eq!(got.as_ref(), root.pointer(pointer), "pointer {pointer:?}");
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let token = k.replace('~', "~0").replace('/', "~1");
                check_pointers(c, root, &format!("{pointer}/{token}"), v);
            }
            let missing = format!("{pointer}/no-such-key");
            assert!(c.pointer(&missing).is_none(), "{missing}");
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                check_pointers(c, root, &format!("{pointer}/{i}"), v);
            }
            for bad in ["/-", "/01", "/+0", "/x"] {
                assert_eq!(
                    c.pointer(&format!("{pointer}{bad}"))
                        .map(|v| v.to_value())
                        .as_ref(),
                    root.pointer(&format!("{pointer}{bad}"))
                );
            }
        }
        _ => {
            assert!(c.pointer(&format!("{pointer}/0")).is_none());
        }
    }
}

const WIDGET: &str = include_str!("../../../bench/peers/data/widget.json");

#[test]
fn an_object_is_one_thin_allocation() {
    assert_eq!(std::mem::size_of::<CompactObject>(), 8);
    assert_eq!(std::mem::size_of::<CompactEntry>(), 8);
    let mut interner = Interner::new();
    let o = decoded(WIDGET);
    let c = CompactObject::from_object(&o, &mut interner);
    let json = serde_json::to_vec(&o).unwrap().len();
    // The Widget's keys are numbers into the tables: its bytes are well
    // under its JSON, its first `fieldsV1` tree written in place.
    assert!(
        c.bytes().len() < json * 3 / 5,
        "{} of {json}",
        c.bytes().len()
    );
    let entry = CompactEntry::new(c.clone(), None);
    // The reference count, header and length (40 bytes), and the count of
    // digests kept (none).
    assert_eq!(entry.allocated(), c.bytes().len() + 41);
}

#[test]
fn digests_kept_beside_an_object_change_nothing_it_reads_or_writes() {
    let mut interner = Interner::new();
    let o = decoded(WIDGET);
    // The first object writes its `fieldsV1` tree in place, the next ones
    // share it.
    CompactObject::from_object(&o, &mut interner);
    let plain = CompactObject::from_object(&o, &mut interner);
    let fields: Vec<Box<str>> = ["spec", "absent", "status"].map(Into::into).into();
    let digested = CompactObject::digesting(&o, &mut interner, &fields);
    assert_eq!(digested.bytes(), plain.bytes());
    assert_eq!(digested, plain);
    assert_eq!(digested.to_object(), o);
    assert_eq!(digested.pointer("/spec"), plain.pointer("/spec"));
    let (mut a, mut b) = (Vec::new(), Vec::new());
    digested.write_json(&mut a).unwrap();
    plain.write_json(&mut b).unwrap();
    assert_eq!(a, b);
    // Two digests (20 bytes each): `absent` is not in the Widget.
    let allocated = |c: &CompactObject| CompactEntry::new(c.clone(), None).allocated();
    assert_eq!(allocated(&digested), allocated(&plain) + 40);
    assert_eq!(digested.same_field(&plain, "spec"), None);
    let again = CompactObject::digesting(&o, &mut interner, &fields);
    assert_eq!(digested.same_field(&again, "spec"), Some(true));
    assert_eq!(digested.same_field(&again, "status"), Some(true));
    assert_eq!(digested.same_field(&again, "absent"), None);
    // Other tables, other seeds: not compared.
    let elsewhere = CompactObject::digesting(&o, &mut Interner::new(), &fields);
    assert_eq!(digested.same_field(&elsewhere, "spec"), None);
}

#[test]
fn shareable_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<CompactObject>();
    send_sync::<CompactEntry>();
    send_sync::<Interner>();
    send_sync::<ValueRef<'static>>();
}

#[test]
fn serde_json_maps_are_sorted() {
    // The tree's binary searches rely on serde_json's Map iterating in key
    // order: this fails if serde_json's `preserve_order` is ever enabled.
    let v = json!({"b": 1, "a": 2, "c": 3});
    let keys: Vec<_> = v
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| k.as_str())
        .collect();
    assert_eq!(keys, ["a", "b", "c"]);
}

#[test]
fn widget_round_trip_and_reads() {
    let mut interner = Interner::new();
    let o = decoded(WIDGET);
    let c = check(&o, &mut interner);
    assert_eq!(c.labels().get("app"), Some("app-13"));
    assert_eq!(
        c.pointer("/spec/nodeName").and_then(|v| v.as_str()),
        Some("node-13")
    );
    assert_eq!(
        c.pointer("/spec/replicas").and_then(|v| v.as_i64()),
        Some(4)
    );
    assert_eq!(
        c.pointer("/status/conditions/1/type")
            .and_then(|v| v.as_str()),
        Some("Progressing")
    );
    assert_eq!(
        c.pointer("/metadata/labels/app.kubernetes.io~1name")
            .and_then(|v| v.as_str()),
        Some("widget")
    );
    assert_eq!(
        c.pointer("/metadata/name").and_then(|v| v.as_str()),
        Some("widget-000013")
    );
    assert_eq!(
        c.pointer("/metadata/generation").and_then(|v| v.as_i64()),
        Some(1)
    );
    assert_eq!(
        c.pointer("/metadata/creationTimestamp")
            .map(|v| v.to_value()),
        Some(json!("2026-12-02T16:18:14Z"))
    );
    let mf: Vec<_> = c.managed_fields().collect();
    assert_eq!(mf.len(), 1);
    assert_eq!(mf[0].manager(), Some("bench-loader"));
    assert!(
        mf[0]
            .fields_v1()
            .and_then(|f| f.pointer("/f:spec/f:tags"))
            .is_some()
    );
    assert_eq!(c.api_version(), Some("bench.kdi.dev/v1"));
    assert_eq!(c.kind(), Some("Widget"));
    assert_eq!(c.generation(), Some(1));
}

#[test]
fn identical_fields_v1_trees_are_shared_from_their_second_sighting() {
    let mut interner = Interner::new();
    let (a, b) = widget_and_copy("widget-000001");
    let ca = check(&a, &mut interner);
    assert_eq!(interner.shared_trees(), 0);
    let cb = check(&b, &mut interner);
    assert_eq!(interner.shared_trees(), 1);
    let cc = check(&b, &mut interner);
    assert_eq!(interner.shared_trees(), 1);
    // The first object keeps its tree; the others refer to the shared one.
    assert!(cb.bytes().len() < ca.bytes().len());
    assert_eq!(cb.bytes(), cc.bytes());
    let tree = |c: &CompactObject| {
        let entry = c.managed_fields().next().unwrap();
        entry.fields_v1().unwrap().to_value()
    };
    assert_eq!(tree(&ca), tree(&cb));

    let mut plain = Interner::without_shared_trees();
    let ca = check(&a, &mut plain);
    let cb = check(&b, &mut plain);
    assert_eq!(plain.shared_trees(), 0);
    assert_eq!(ca.bytes().len(), cb.bytes().len());
}

#[test]
fn a_shared_tree_is_written_once_for_every_object_written() {
    let mut interner = Interner::new();
    let (a, b) = widget_and_copy("widget-000003");
    check(&a, &mut interner);
    // `check` wrote `b`'s JSON, from the shared tree: its text is kept...
    check(&b, &mut interner);
    let tree = b.metadata.managed_fields.as_ref().unwrap()[0]
        .fields_v1
        .clone()
        .unwrap();
    let kept = interner.tables().tree_json(0).map(<[u8]>::to_vec);
    assert_eq!(kept, Some(serde_json::to_vec(&tree).unwrap()));
    // ...and copied into the next object's (which `check` compares with
    // serde_json's).
    check(&b, &mut interner);
}

#[test]
fn a_shared_tree_is_decoded_once_for_every_object_decoded() {
    let mut interner = Interner::new();
    let (a, b) = widget_and_copy("widget-000002");
    check(&a, &mut interner);
    let cb = check(&b, &mut interner);
    let tables = interner.tables();
    // `check` decoded `cb`, whose tree is shared: its value is kept.
    let kept = tables
        .tree_value(0, || unreachable!("decoded once"))
        .cloned();
    let tree = b.metadata.managed_fields.as_ref().unwrap()[0]
        .fields_v1
        .clone();
    assert_eq!(kept, tree.map(|t| t.0));
    assert_eq!(cb.to_object(), b);
}

#[test]
fn trees_differing_only_in_number_representation_are_not_shared() {
    let mut interner = Interner::new();
    let mk = |n: Value| {
        object(json!({
            "apiVersion": "v1", "kind": "X",
            "metadata": {"name": "a", "managedFields": [{"fieldsV1": {"n": n}}]},
        }))
    };
    let values = [
        json!(0.0),
        json!(-0.0),
        json!(0),
        json!(1),
        json!(1.0),
        json!(-1),
    ];
    // Each twice: a tree is shared from its second sighting.
    let objects: Vec<_> = values
        .iter()
        .chain(&values)
        .map(|v| mk(v.clone()))
        .collect();
    let compact: Vec<_> = objects.iter().map(|o| check(o, &mut interner)).collect();
    assert_eq!(interner.shared_trees(), values.len());
    for (c, o) in compact.iter().zip(&objects) {
        assert_eq!(
            serde_json::to_vec(&c.to_object()).unwrap(),
            serde_json::to_vec(o).unwrap()
        );
    }
}

#[test]
fn odd_objects() {
    let mut interner = Interner::new();
    let odd = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "ünïcödé-名前-🦀",
            "namespace": "",
            "labels": {},
            "annotations": {"a.b/c~d": "x\"y\\z\n\u{0}\u{1f}", "empty": ""},
            "finalizers": [],
            "generateName": "gen-",
            "selfLink": "/api/v1/x",
            "deletionGracePeriodSeconds": -30,
            "deletionTimestamp": "2026-01-01T00:00:01Z",
            "creationTimestamp": "1970-01-01T00:00:00Z",
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": true, "blockOwnerDeletion": false},
                {"apiVersion": "v1", "kind": "X", "name": "a-name-that-is-longer-than-inline", "uid": ""},
            ],
            "managedFields": [
                {},
                {"manager": "m", "operation": "Update", "subresource": "status", "fieldsType": "FieldsV1", "fieldsV1": {}},
                {"fieldsV1": null},
                {"fieldsV1": [1, "two", {"three": 3.0}]},
            ],
        },
        "data": {
            "": "",
            "a.b/c": "keys with dots and slashes",
            "~1/0": "pointer escapes",
            "nums": [1e300, -0.0, 0.0, 3.0, 18446744073709551615u64, -9223372036854775808i64, 0, -1, 1.5e-300, 123456789012345678u64],
            "empty": {"o": {}, "a": [], "s": ""},
            "nul": null,
            "bools": [true, false],
            "exactly-22-bytes-long!": "exactly-22-bytes-long!",
            "exactly-23-bytes-long!!": "exactly-23-bytes-long!!",
            "🦀": "多字节字符串，比二十二个字节更长的字符串",
        },
    });
    check(&object(odd), &mut interner);
    // Missing metadata, no type fields, and data that is null.
    check(
        &DynamicObject {
            types: None,
            metadata: ObjectMeta::default(),
            data: Value::Null,
        },
        &mut interner,
    );
    check(&object(json!({})), &mut interner);
    // Floats that print in exponent form, from text (as the wire decodes them).
    check(
        &decoded(
            r#"{"apiVersion":"v1","kind":"X","metadata":{},"spec":{"a":1e300,"b":-0.0,"c":3.0,"d":-9223372036854775808,"e":18446744073709551615,"f":1E-7}}"#,
        ),
        &mut interner,
    );
}

#[test]
fn data_that_cannot_be_flattened_fails_as_serde_json_does() {
    let mut interner = Interner::new();
    for data in [json!(true), json!(1), json!("s"), json!([1]), json!(-0.0)] {
        let o = DynamicObject {
            types: None,
            metadata: ObjectMeta::default(),
            data,
        };
        assert!(serde_json::to_vec(&o).is_err());
        check(&o, &mut interner);
    }
}

#[test]
fn data_keys_named_like_the_typed_fields() {
    // Not something the wire produces (serde takes these keys for the
    // typed fields), but a DynamicObject can be built so; the JSON then
    // has the key twice, as serde_json writes it.
    let mut interner = Interner::new();
    let o = DynamicObject {
        types: None,
        metadata: ObjectMeta {
            name: Some("n".into()),
            ..Default::default()
        },
        data: json!({"apiVersion": "data/v1", "metadata": {"x": 1}}),
    };
    let c = CompactObject::from_object(&o, &mut interner);
    assert_eq!(c.to_object(), o);
    let mut out = Vec::new();
    c.write_json(&mut out).unwrap();
    assert_eq!(out, serde_json::to_vec(&o).unwrap());
    assert_eq!(c.pointer("/metadata/x").and_then(|v| v.as_i64()), Some(1));
    assert_eq!(
        c.pointer("/apiVersion").and_then(|v| v.as_str()),
        Some("data/v1")
    );
    assert_eq!(c.name(), Some("n"));
}

#[test]
fn deep_nesting() {
    let mut interner = Interner::new();
    for depth in [1usize, 2, 100, 250] {
        let mut v = json!("leaf");
        for i in 0..depth {
            v = if i % 2 == 0 {
                json!({ "k": v })
            } else {
                json!([v])
            };
        }
        let o = object(
            json!({"apiVersion": "v1", "kind": "X", "metadata": {"managedFields": [{"fieldsV1": v.clone()}]}, "spec": v}),
        );
        check(&o, &mut interner);
    }
}

#[test]
fn sub_second_timestamps_survive_the_round_trip() {
    // Time serialises to the second; the compact form keeps the value.
    let mut interner = Interner::new();
    let o = decoded(
        r#"{"metadata":{"creationTimestamp":"2026-01-01T00:00:00.123456789Z","managedFields":[{"time":"2026-01-01T00:00:00.5Z"}]}}"#,
    );
    let c = CompactObject::from_object(&o, &mut interner);
    assert_eq!(c.to_object(), o);
    let mut out = Vec::new();
    c.write_json(&mut out).unwrap();
    assert_eq!(out, serde_json::to_vec(&o).unwrap());
}

#[test]
fn widget_round_trips_without_shared_trees() {
    let o = decoded(WIDGET);
    let mut plain = Interner::without_shared_trees();
    let c = check(&o, &mut plain);
    // Twice: the second decode reads what the first left untouched.
    assert_eq!(c.to_object(), o);
    assert_eq!(c.to_object(), c.to_object());
}

/// A map of `n` entries, keys out of order in the source text (`to_object`
/// builds small and large maps in different ways).
fn map_of(n: usize, value: impl Fn(usize) -> Value) -> Value {
    Value::Object(
        (0..n)
            .rev()
            .map(|i| (format!("k{i:02}"), value(i)))
            .collect(),
    )
}

#[test]
fn every_metadata_field_round_trips() {
    let sizes = [0, 1, 2, 3, 4, 5, 11, 12, 13, 40];
    let maps: serde_json::Map<String, Value> = sizes
        .iter()
        .map(|&n| (format!("m{n}"), map_of(n, |i| map_of(i % 5, |j| json!(j)))))
        .collect();
    for n in sizes {
        let text = map_of(n, |i| json!(format!("value-{i}")));
        let o = object(json!({
            "apiVersion": "example.com/v1",
            "kind": "Everything",
            "metadata": {
                "annotations": text.clone(),
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "deletionGracePeriodSeconds": 30,
                "deletionTimestamp": "2026-01-02T00:00:00Z",
                "finalizers": ["example.com/a", "example.com/b"],
                "generateName": "everything-",
                "generation": 7,
                "labels": text,
                "managedFields": [
                    {
                        "apiVersion": "example.com/v1",
                        "fieldsType": "FieldsV1",
                        "fieldsV1": {"f:spec": maps.clone()},
                        "manager": "m",
                        "operation": "Update",
                        "subresource": "status",
                        "time": "2026-01-01T00:00:01Z",
                    },
                    {"manager": "other", "operation": "Apply"},
                ],
                "name": "everything",
                "namespace": "ns",
                "ownerReferences": [{
                    "apiVersion": "apps/v1",
                    "blockOwnerDeletion": true,
                    "controller": false,
                    "kind": "ReplicaSet",
                    "name": "rs",
                    "uid": "owner-uid",
                }],
                "resourceVersion": "12345",
                "selfLink": "/apis/example.com/v1/namespaces/ns/everythings/everything",
                "uid": "4c04d0df-f050-45b1-84bf-67c991af0f6b",
            },
            "spec": maps.clone(),
        }));
        let m = &o.metadata;
        assert!(
            m.annotations.is_some()
                && m.creation_timestamp.is_some()
                && m.deletion_grace_period_seconds.is_some()
                && m.deletion_timestamp.is_some()
                && m.finalizers.is_some()
                && m.generate_name.is_some()
                && m.generation.is_some()
                && m.labels.is_some()
                && m.managed_fields.is_some()
                && m.name.is_some()
                && m.namespace.is_some()
                && m.owner_references.is_some()
                && m.resource_version.is_some()
                && m.self_link.is_some()
                && m.uid.is_some()
        );
        check(&o, &mut Interner::new());
        check(&o, &mut Interner::without_shared_trees());
    }
}

#[test]
fn entry_hands_out_the_events_arc_while_held_and_remembers_no_other() {
    let mut interner = Interner::new();
    let o = Arc::new(decoded(WIDGET));
    let entry = CompactEntry::new(CompactObject::from_object(&o, &mut interner), Some(&o));
    assert!(Arc::ptr_eq(&entry.get(), &o));
    assert!(!entry.forget_dropped());
    drop(o);
    // Nobody holds the event's object: its allocation is freed once.
    assert!(entry.forget_dropped());
    assert!(!entry.forget_dropped());
    // A reader's decode is its own, and nothing of it stays in the entry.
    let fresh = entry.get();
    assert_eq!(*fresh, decoded(WIDGET));
    let again = entry.get();
    assert!(!Arc::ptr_eq(&fresh, &again));
    assert_eq!(Arc::strong_count(&fresh) + Arc::weak_count(&fresh), 1);
    drop((fresh, again));
    assert!(!entry.forget_dropped());
}

// ---- proptest --------------------------------------------------------

fn arb_string() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z./~-]{0,8}", ".{0,30}", "\\PC{20,40}",]
}

fn arb_number() -> impl Strategy<Value = Number> {
    prop_oneof![
        any::<u64>().prop_map(Number::from),
        any::<i64>().prop_map(Number::from),
        any::<f64>().prop_filter_map("finite", Number::from_f64),
        Just(Number::from_f64(-0.0).unwrap()),
        Just(Number::from_f64(3.0).unwrap()),
        Just(Number::from_f64(1e300).unwrap()),
    ]
}

fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        arb_number().prop_map(Value::Number),
        arb_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(arb_string(), inner, 0..12)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn arb_time() -> impl Strategy<Value = Time> {
    (0i64..4_000_000_000, 0i32..1_000_000_000)
        .prop_map(|(s, ns)| Time(k8s_openapi::jiff::Timestamp::new(s, ns).unwrap_or_default()))
}

fn arb_map() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map(arb_string(), arb_string(), 0..12)
}

fn arb_meta() -> impl Strategy<Value = ObjectMeta> {
    let entry = (
        prop::option::of(arb_string()),
        prop::option::of(arb_string()),
        prop::option::of(arb_value()),
        prop::option::of(arb_string()),
        prop::option::of(arb_time()),
    )
        .prop_map(
            |(manager, operation, fields, subresource, time)| ManagedFieldsEntry {
                api_version: Some("v1".into()),
                fields_type: Some("FieldsV1".into()),
                fields_v1: fields.map(FieldsV1),
                manager,
                operation,
                subresource,
                time,
            },
        );
    let owner = (
        arb_string(),
        arb_string(),
        prop::option::of(any::<bool>()),
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(name, uid, controller, block)| OwnerReference {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name,
            uid,
            controller,
            block_owner_deletion: block,
        });
    (
        (
            prop::option::of(arb_string()),
            prop::option::of(arb_string()),
            prop::option::of(arb_string()),
            prop::option::of(arb_string()),
            prop::option::of(any::<i64>()),
            prop::option::of(arb_time()),
        ),
        (
            prop::option::of(arb_map()),
            prop::option::of(arb_map()),
            prop::option::of(prop::collection::vec(entry, 0..3)),
            prop::option::of(prop::collection::vec(owner, 0..3)),
        ),
        (
            prop::option::of(any::<i64>()),
            prop::option::of(arb_time()),
            prop::option::of(prop::collection::vec(arb_string(), 0..3)),
            prop::option::of(arb_string()),
            prop::option::of(arb_string()),
        ),
    )
        .prop_map(
            |(
                (name, namespace, uid, rv, generation, created),
                (labels, annotations, mf, owners),
                (grace, deleted, finalizers, gen_name, self_link),
            )| ObjectMeta {
                name,
                namespace,
                uid,
                resource_version: rv,
                generation,
                creation_timestamp: created,
                labels,
                annotations,
                managed_fields: mf,
                owner_references: owners,
                deletion_grace_period_seconds: grace,
                deletion_timestamp: deleted,
                finalizers,
                generate_name: gen_name,
                self_link,
            },
        )
}

fn arb_object() -> impl Strategy<Value = DynamicObject> {
    (
        prop::option::of((arb_string(), arb_string())),
        arb_meta(),
        prop_oneof![
            4 => prop::collection::btree_map(
                arb_string().prop_filter("typed keys", |k| !matches!(k.as_str(), "apiVersion" | "kind" | "metadata")),
                arb_value(),
                0..14,
            ).prop_map(|m| Value::Object(m.into_iter().collect())),
            1 => arb_value(),
        ],
    )
        .prop_map(|(types, metadata, data)| DynamicObject {
            types: types.map(|(api_version, kind)| TypeMeta { api_version, kind }),
            metadata,
            data,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn round_trip(objects in prop::collection::vec(arb_object(), 1..4)) {
        // One interner for several objects, so that keys and trees are shared.
        let mut interner = Interner::new();
        let compact: Vec<_> = objects.iter().map(|o| check(o, &mut interner)).collect();
        for (c, o) in compact.iter().zip(&objects) {
            prop_assert_eq!(&c.to_object(), o);
        }
    }

    #[test]
    fn round_trip_through_json_text(objects in prop::collection::vec(arb_object(), 1..3)) {
        // What the wire does: objects decoded from JSON text.
        let mut interner = Interner::without_shared_trees();
        for o in &objects {
            if let Ok(text) = serde_json::to_string(o)
                && let Ok(decoded) = serde_json::from_str::<DynamicObject>(&text)
            {
                check(&decoded, &mut interner);
            }
        }
    }
}

mod binary_tests;
mod json_tests;
