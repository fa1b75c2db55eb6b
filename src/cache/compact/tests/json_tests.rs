//! Objects built straight from their JSON ([`super::super::parse`]) against
//! objects built from what the wire decodes of the same JSON.

use super::*;
use crate::wire::list_watch::decode_object;

/// `value` as JSON text, each map's keys rotated by `turn` places (the
/// server sorts the keys of custom resources, not those of built-in types).
fn write_turned(value: &Value, turn: usize, out: &mut String) {
    match value {
        Value::Object(map) => {
            out.push('{');
            let entries: Vec<_> = map.iter().collect();
            let n = entries.len().max(1);
            for i in 0..entries.len() {
                let (k, v) = entries[(i + turn) % n];
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(k).expect("a key"));
                out.push(':');
                write_turned(v, turn, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_turned(v, turn, out);
            }
            out.push(']');
        }
        other => out.push_str(&serde_json::to_string(other).expect("a value")),
    }
}

/// What the wire decodes of `json` and what `from_json` builds of it agree:
/// no object where the wire decodes none, else the same object, in the
/// same bytes as `from_object` of the decoded one over the same tables.
/// Returns whether `from_json` built it.
fn agree(json: &str, interner: &mut Interner) -> bool {
    let decoded = decode_object(json);
    let built = CompactObject::from_json(json, interner);
    let (decoded, built) = match (decoded, built) {
        (Ok(decoded), Some(built)) => (decoded, built),
        (Err(_), Some(_)) => panic!("built from JSON the wire does not decode: {json}"),
        (_, None) => return false,
    };
    assert_eq!(built.to_object(), decoded, "{json}");
    // Twice, so that its trees are shared (from their second sighting).
    CompactObject::from_object(&decoded, interner);
    let again = CompactObject::from_json(json, interner).expect("built before");
    let from_object = CompactObject::from_object(&decoded, interner);
    assert_eq!(again.bytes(), from_object.bytes(), "{json}");
    true
}

#[test]
fn the_widget_is_built_from_its_json_as_from_its_decoded_object() {
    let mut interner = Interner::new();
    assert!(agree(WIDGET, &mut interner));
    let value: Value = serde_json::from_str(WIDGET).expect("JSON");
    for turn in 1..5 {
        let mut text = String::new();
        write_turned(&value, turn, &mut text);
        assert!(agree(&text, &mut interner), "turned by {turn}");
    }
}

#[test]
fn digests_are_those_of_the_decoded_object() {
    let mut interner = Interner::new();
    let fields: Vec<Box<str>> = vec!["spec".into(), "status".into()];
    let decoded = decoded(WIDGET);
    let a = CompactObject::digesting(&decoded, &mut interner, &fields);
    let b =
        CompactObject::from_json_digesting(WIDGET, None, &mut interner, &fields).expect("built");
    for field in ["spec", "status"] {
        assert_eq!(a.same_field(&b, field), Some(true), "{field}");
    }
}

#[test]
fn a_list_item_without_types_gets_the_types_given() {
    let mut interner = Interner::new();
    let mut value: Value = serde_json::from_str(WIDGET).expect("JSON");
    let map = value.as_object_mut().expect("an object");
    let api_version = map.remove("apiVersion").expect("apiVersion");
    let kind = map.remove("kind").expect("kind");
    let (api_version, kind) = (
        api_version.as_str().expect("text"),
        kind.as_str().expect("text"),
    );
    let item = value.to_string();
    let types = Some((api_version, kind));
    // Trees are shared from their second sighting.
    CompactObject::from_json(WIDGET, &mut interner).expect("built");
    let built =
        CompactObject::from_json_digesting(&item, types, &mut interner, &[]).expect("built");
    let widget = CompactObject::from_json(WIDGET, &mut interner).expect("built");
    assert_eq!(built.bytes(), widget.bytes());
    // An object that has its own types keeps them.
    let own = CompactObject::from_json_digesting(WIDGET, Some(("v9", "Other")), &mut interner, &[])
        .expect("built");
    assert_eq!(own.bytes(), widget.bytes());
    // Without types given, it has none.
    let bare = CompactObject::from_json(&item, &mut interner).expect("built");
    assert_eq!(bare.api_version(), None);
    assert_eq!(bare.kind(), None);
}

#[test]
fn odd_json_is_left_to_the_decoder() {
    // Each is either not built, or built as the wire decodes it.
    let cases = [
        // Keys given twice.
        r#"{"apiVersion":"v1","kind":"A","metadata":{"name":"a"},"spec":1,"spec":2}"#,
        r#"{"apiVersion":"v1","apiVersion":"v2","kind":"A","metadata":{"name":"a"}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"name":"a","name":"b"}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"labels":{"a":"1"},"labels":null}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"labels":{"a":"1","a":"2"}}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"name":"a"},"metadata":{"name":"b"}}"#,
        r#"{"kind":"A","metadata":{"name":"a"},"spec":{"x":1,"y":{"b":1,"a":2,"b":3}}}"#,
        // Half a TypeMeta, odd types.
        r#"{"apiVersion":"v1","metadata":{"name":"a"}}"#,
        r#"{"kind":"A","metadata":{"name":"a"}}"#,
        r#"{"apiVersion":1,"kind":"A","metadata":{"name":"a"}}"#,
        r#"{"apiVersion":null,"kind":"A","metadata":{"name":"a"}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":null}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":[]}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"name":1}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"labels":{"a":null}}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"labels":null,"annotations":{}}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"generation":1.5}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"generation":"1"}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"generation":18446744073709551615}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"generation":-3}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"creationTimestamp":"yesterday"}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"creationTimestamp":"2024-02-03T04:05:06.123456789Z"}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"creationTimestamp":"2024-02-03T04:05:06+02:00"}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"finalizers":["a",null]}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"finalizers":null,"clusterName":{"x":[1]}}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"ownerReferences":[{"name":"o"}]}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"ownerReferences":[{"name":null,"uid":"u","controller":null,"x":1}]}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"ownerReferences":[{"uid":"u","controller":true,"blockOwnerDeletion":false,"kind":"K","apiVersion":"v"}]}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"ownerReferences":[{"controller":"yes"}]}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"ownerReferences":[null]}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"ownerReferences":[{"name":"a","name":"b"}]}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"managedFields":[{"manager":"m","fieldsV1":null,"time":null,"extra":[]}]}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"managedFields":[{"time":"not a time"}]}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"managedFields":[{"fieldsV1":{"f:b":{},"f:a":{".":{}}},"manager":"m"}]}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"managedFields":[{"fieldsV1":1,"fieldsV1":2}]}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{"managedFields":[{"manager":1}]}}"#,
        // Values.
        r#"{"apiVersion":"v1","kind":"A","metadata":{},"x":[1,-1,1.0,-0.0,0,1e300,-9223372036854775808,18446744073709551615]}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{},"x":"\u00e9\ud83d\ude00\"\\","\u0061":{"\n":null}}"#,
        r#"{"apiVersion":"v1","kind":"A","metadata":{},"x":1e999}"#,
        r#"{"metadata":{},"x":{}}"#,
        r#"{}"#,
        r#"[]"#,
        r#"{"apiVersion":"v1","kind":"A"} trailing"#,
        r#"{"apiVersion":"v1","kind":"A""#,
        r#"not JSON"#,
    ];
    let mut interner = Interner::new();
    let built = cases.iter().filter(|c| agree(c, &mut interner)).count();
    // Most of them decode, and many of those are built here.
    assert!(built >= 15, "{built} built");
    let deep = format!(
        r#"{{"apiVersion":"v1","kind":"A","metadata":{{}},"x":{}1{}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    assert!(
        !agree(&deep, &mut interner),
        "deeper than serde_json's limit"
    );
    let wide = format!(
        r#"{{"apiVersion":"v1","kind":"A","metadata":{{"labels":{{{}}}}},"x":[{}]}}"#,
        (0..300)
            .rev()
            .map(|i| format!(r#""k{i}":"{}""#, "v".repeat(i)))
            .collect::<Vec<_>>()
            .join(","),
        (0..300)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    assert!(agree(&wide, &mut interner), "long maps and arrays");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn built_from_json_as_from_the_decoded_object(
        objects in prop::collection::vec(arb_object(), 1..4),
        turn in 0usize..4,
    ) {
        let mut interner = Interner::new();
        for o in &objects {
            let Ok(value) = serde_json::to_value(o) else { continue };
            let mut text = String::new();
            write_turned(&value, turn, &mut text);
            prop_assert!(agree(&text, &mut interner), "not built: {}", text);
        }
    }
}
