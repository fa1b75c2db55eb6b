use serde_json::{Value, json};

use super::*;

/// `{"a": {"a": ... {"leaf": "bottom"}}}`, `depth` levels of `a`.
fn nested(depth: usize) -> Value {
    let mut v = json!({ "leaf": "bottom" });
    for _ in 0..depth {
        v = json!({ "a": v });
    }
    v
}

/// Serialises without recursion limits (`serde_json::to_string` has none).
fn widget(name: &str, rv: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "resourceVersion": rv,
            "uid": format!("uid-{name}"),
            "labels": { "app": "x" },
            "managedFields": [{
                "manager": "m", "operation": "Update", "apiVersion": "example.com/v1",
                "fieldsType": "FieldsV1", "fieldsV1": { "f:spec": { "f:color": {} } }
            }]
        },
        "spec": spec,
        "status": { "phase": "Ready" }
    })
}

#[test]
fn an_object_decodes_as_kube_core_decodes_it() {
    let text = widget(
        "w",
        "7",
        json!({ "color": "red", "list": [1, "two", null] }),
    )
    .to_string();
    let ours = decode_object(&text).unwrap();
    let theirs: DynamicObject = serde_json::from_str(&text).unwrap();
    assert_eq!(ours, theirs);
    assert_eq!(ours.types.as_ref().unwrap().kind, "Widget");
    assert_eq!(ours.data["status"]["phase"], "Ready");
}

#[test]
fn an_object_without_type_fields_or_metadata_decodes() {
    let ours = decode_object(r#"{"spec":{"x":1}}"#).unwrap();
    assert_eq!(ours.types, None);
    assert_eq!(ours.metadata, ObjectMeta::default());
    assert_eq!(ours.data, json!({ "spec": { "x": 1 } }));

    // Half a TypeMeta is kept in data rather than lost.
    let ours = decode_object(r#"{"kind":"Widget","metadata":null}"#).unwrap();
    assert_eq!(ours.types, None);
    assert_eq!(ours.data, json!({ "kind": "Widget" }));
}

#[test]
fn malformed_objects_are_errors_not_panics() {
    for text in [
        "",
        "[]",
        "7",
        r#"{"metadata": 5}"#,
        r#"{"a": 1} trailing"#,
        "{\"a\":",
    ] {
        assert!(decode_object(text).is_err(), "{text:?} decoded");
    }
}

#[test]
fn objects_deeper_than_serde_json_s_default_limit_decode_in_full() {
    let object = widget("deep", "9", nested(MAX_OBJECT_DEPTH - 2));
    let decoded = decode_object(&object.to_string()).unwrap();
    let mut spec = &decoded.data["spec"];
    for _ in 0..MAX_OBJECT_DEPTH - 2 {
        spec = &spec["a"];
    }
    assert_eq!(spec["leaf"], "bottom");
}

#[test]
fn objects_deeper_than_the_limit_are_refused_with_their_depth() {
    let text = widget("deeper", "9", nested(MAX_OBJECT_DEPTH)).to_string();
    let err = decode_object(&text).unwrap_err();
    assert!(
        err.contains(&format!("nested {} levels deep", MAX_OBJECT_DEPTH + 2)),
        "{err}"
    );
}

#[test]
fn an_object_at_the_limit_fits_a_small_thread_stack() {
    // Cloning, comparing and dropping recurse once per level; the limit
    // leaves room for them on half a thread's usual stack, in an
    // unoptimised build too. (Decoding has a thread of its own.)
    let text = nested(MAX_OBJECT_DEPTH - 1).to_string();
    assert_eq!(json_depth(text.as_bytes()), MAX_OBJECT_DEPTH);
    std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || {
            let object = decode_object(&text).unwrap();
            let copy = object.clone();
            assert_eq!(copy, object);
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn depth_ignores_brackets_in_strings() {
    assert_eq!(json_depth(br#"{"a":"{{[[\"]]"}"#), 1);
    assert_eq!(json_depth(br#"[[],[[{}]]]"#), 4);
    assert_eq!(json_depth(b"7"), 0);
    assert_eq!(json_depth(b"}}}{"), 1);
}

#[test]
fn a_list_leaves_out_only_the_objects_it_cannot_decode() {
    let list = json!({
        "apiVersion": "example.com/v1",
        "kind": "WidgetList",
        "metadata": { "resourceVersion": "42", "continue": "next" },
        "items": [
            widget("a", "1", json!({})),
            widget("too-deep", "2", nested(MAX_OBJECT_DEPTH + 10)),
            widget("b", "3", nested(MAX_OBJECT_DEPTH - 2)),
            json!({ "metadata": { "name": 7 } }),
        ]
    });
    let page = decode_list(&list.to_string()).unwrap();
    let names: Vec<_> = page
        .objects
        .iter()
        .map(|o| o.decoded().unwrap().metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(page.resource_version, "42");
    assert_eq!(page.continue_token.as_deref(), Some("next"));
    let skipped = page.skipped;
    assert_eq!(skipped.len(), 2);
    assert_eq!(skipped[0].name.as_deref(), Some("too-deep"));
    assert_eq!(skipped[0].namespace.as_deref(), Some("ns"));
    assert_eq!(skipped[0].resource_version.as_deref(), Some("2"));
    assert!(
        skipped[0]
            .to_string()
            .starts_with("ns/too-deep (resourceVersion 2): nested")
    );
    assert_eq!(skipped[1].name, None);
}

#[test]
fn a_list_s_items_handed_on_as_json_are_each_item_s_text() {
    let items = [
        widget("a", "1", json!({ "x": "é, \"}\"" })),
        widget("too-deep", "2", nested(MAX_OBJECT_DEPTH + 10)),
        json!({ "metadata": { "name": 7 } }),
    ];
    let text = format!(
        r#"{{"kind":"WidgetList","metadata":{{"resourceVersion":"42","continue":"next"}},"items":[ {} ,{},{}]}}"#,
        items[0], items[1], items[2]
    );
    let page = list_items(text).unwrap();
    assert_eq!(page.resource_version, "42");
    assert_eq!(page.continue_token.as_deref(), Some("next"));
    assert!(page.skipped.is_empty(), "nothing is decoded here");
    let sent: Vec<_> = page.objects.iter().map(|o| o.json().unwrap()).collect();
    let expected: Vec<_> = items.iter().map(Value::to_string).collect();
    assert_eq!(sent, expected);
    // Each decodes, or not, as the list's own decoding says.
    let mut objects = page.objects.into_iter();
    let a = objects.next().unwrap().decode().unwrap();
    assert_eq!(a.data["spec"]["x"], "é, \"}\"");
    assert_eq!(
        objects
            .next()
            .unwrap()
            .decode()
            .unwrap_err()
            .name
            .as_deref(),
        Some("too-deep")
    );
    assert!(objects.next().unwrap().decode().is_err());
    // What is not a list is an error.
    assert!(list_items("[1]".into()).is_err());
    assert!(list_items(r#"{"items":[1,"#.into()).is_err());
}

#[test]
fn a_list_with_null_or_no_items_is_empty() {
    for text in [r#"{"metadata":{},"items":null}"#, r#"{"metadata":{}}"#] {
        let page = list_items(text.into()).unwrap();
        assert!(page.objects.is_empty() && page.skipped.is_empty());
        let page = decode_list(text).unwrap();
        assert!(page.objects.is_empty() && page.skipped.is_empty());
        assert_eq!(page.continue_token, None);
    }
    assert!(decode_list("{\"items\": [").is_err());
    let last = decode_list(r#"{"metadata":{"continue":""}}"#).unwrap();
    assert_eq!(last.continue_token, None, "an empty token ends the list");
}

fn line(kind: &str, object: Value) -> String {
    json!({ "type": kind, "object": object }).to_string()
}

fn is_client_error(event: Option<Result<WatchEvent, ListWatchError>>) -> bool {
    matches!(
        event,
        Some(Err(ListWatchError::Client(kube_client::Error::SerdeError(
            _
        ))))
    )
}

#[test]
fn watch_lines_decode_to_events() {
    let decode = |line: &str| decode_watch_line(line.to_owned());
    let added = line("ADDED", widget("a", "5", json!({})));
    match decode(&added) {
        Some(Ok(WatchEvent::Added(o))) => {
            // The object is handed on as the JSON it is in the line.
            let json: Value = serde_json::from_str(o.json().unwrap()).unwrap();
            assert_eq!(json, widget("a", "5", json!({})));
            assert_eq!(o.resource_version().as_deref(), Some("5"));
            assert_eq!(o.decode().unwrap().metadata.name.as_deref(), Some("a"));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        decode(&line("MODIFIED", widget("a", "6", json!({})))),
        Some(Ok(WatchEvent::Modified(_)))
    ));
    assert!(matches!(
        decode(&line("DELETED", widget("a", "7", json!({})))),
        Some(Ok(WatchEvent::Deleted(_)))
    ));
    let bookmark = |annotations: Value| {
        json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": { "resourceVersion": "8", "annotations": annotations }
        })
    };
    match decode(&line(
        "BOOKMARK",
        bookmark(json!({ "k8s.io/initial-events-end": "true" })),
    )) {
        Some(Ok(WatchEvent::Bookmark {
            resource_version,
            initial_events_end: true,
        })) => assert_eq!(resource_version, "8"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        decode(&line("BOOKMARK", bookmark(json!({})))),
        Some(Ok(WatchEvent::Bookmark {
            initial_events_end: false,
            ..
        }))
    ));
    let status = json!({ "kind": "Status", "status": "Failure", "code": 410, "reason": "Expired", "message": "too old" });
    match decode(&line("ERROR", status.clone())) {
        Some(Err(e)) => assert!(e.is_gone(), "{e}"),
        other => panic!("{other:?}"),
    }
    // A bare Status instead of an event is the server's error.
    match decode(&status.to_string()) {
        Some(Err(ListWatchError::Status { reason, code, .. })) => {
            assert_eq!((reason.as_str(), code), ("Expired", 410));
        }
        other => panic!("{other:?}"),
    }
    assert!(decode("").is_none());
    assert!(
        decode("{\"type\":\"ADD").is_none(),
        "a line cut short is passed over"
    );
    assert!(is_client_error(decode("nonsense")));
    assert!(is_client_error(decode("{}")));
    assert!(is_client_error(decode(&line("EXPLODED", json!({})))));
}

#[test]
fn an_undecodable_watch_object_says_what_could_be_read_of_it() {
    let deep = widget("deep", "11", nested(MAX_OBJECT_DEPTH + 1));
    for kind in ["ADDED", "MODIFIED", "DELETED"] {
        match decode_watch_line(line(kind, deep.clone())) {
            Some(Ok(WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o))) => {
                let object = o.decode().unwrap_err();
                assert_eq!(object.name.as_deref(), Some("deep"), "{kind}");
                assert_eq!(object.namespace.as_deref(), Some("ns"));
                assert_eq!(object.resource_version.as_deref(), Some("11"));
                assert!(object.reason.contains("levels deep"), "{}", object.reason);
            }
            other => panic!("{other:?}"),
        }
    }
    // Without even a name it is still reported.
    let nameless = json!({ "spec": nested(MAX_OBJECT_DEPTH + 1) });
    match decode_watch_line(line("ADDED", nameless)) {
        Some(Ok(WatchEvent::Added(o))) => {
            let mut o = o;
            let object = o.object_mut().unwrap_err();
            assert_eq!(object.name, None);
            assert_eq!(object.resource_version, None);
            // Left as it was.
            assert!(o.json().is_some());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_continue_token_is_read_from_the_list_metadata() {
    let list = |metadata: Value, items: Vec<Value>| {
        json!({ "kind": "WidgetList", "apiVersion": "example.com/v1",
                "metadata": metadata, "items": items })
        .to_string()
    };
    let page = list(
        json!({ "resourceVersion": "9", "continue": "abc" }),
        vec![widget("a", "8", json!({}))],
    );
    assert_eq!(continue_token(&page).as_deref(), Some("abc"));

    let last = list(json!({ "resourceVersion": "9", "continue": "" }), vec![]);
    assert_eq!(continue_token(&last), None);
    let unpaged = list(json!({ "resourceVersion": "9" }), vec![]);
    assert_eq!(continue_token(&unpaged), None);

    // Items too deep to skip do not matter when the metadata comes first,
    // as the API server writes it...
    let deep = list(
        json!({ "continue": "def" }),
        vec![widget("deep", "8", nested(300))],
    );
    assert_eq!(continue_token(&deep).as_deref(), Some("def"));
    // ...and items before the metadata are skipped.
    let items_first =
        r#"{"items": [{"metadata": {"name": "a"}}], "metadata": {"continue": "ghi"}}"#;
    assert_eq!(continue_token(items_first).as_deref(), Some("ghi"));

    for not_a_list in [
        "",
        "[]",
        "null",
        r#"{"metadata": 5}"#,
        r#"{"metadata": {"continue": 5}}"#,
        "{\"metadata\": {\"continue\": \"x\"",
    ] {
        assert_eq!(continue_token(not_a_list), None, "{not_a_list:?}");
    }
}

#[test]
fn a_closed_or_timed_out_connection_ends_a_watch_and_other_errors_do_not() {
    use std::io::{Error, ErrorKind};
    assert!(ends_watch(&Error::from(ErrorKind::UnexpectedEof)));
    assert!(ends_watch(&Error::other(Error::from(ErrorKind::TimedOut))));
    assert!(ends_watch(&Error::other(Error::other(
        "unexpected EOF during chunk size line"
    ))));
    assert!(!ends_watch(&Error::from(ErrorKind::ConnectionReset)));
    assert!(!ends_watch(&Error::other(Error::from(
        ErrorKind::ConnectionReset
    ))));
}
