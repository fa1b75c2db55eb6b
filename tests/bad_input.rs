//! Bad input, without a control plane: arbitrary objects — odd metadata,
//! huge label sets, deep nesting, every JSON type where a string is
//! expected — through the store and its JMESPath indexes, and through a
//! whole informer fed by a scripted `ListWatch`. Nothing may panic or hang,
//! and the cache and the indexes must stay exactly what the input says.
//!
//! Property tests of single parts live next to them: JMESPath evaluation on
//! arbitrary JSON and arbitrary expressions (`src/index/tests.rs`,
//! `tests/index_props.rs`), store operations against a model
//! (`src/store.rs`), label selectors (`src/selector.rs`) and resource names
//! (`src/resource.rs`); see RELIABILITY.md.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_client::api::{ListParams, WatchParams};
use kube_core::{ApiResource, DynamicObject, TypeMeta};
use kube_dynamic_informer::cache::{IndexFn, IndexInput};
use kube_dynamic_informer::cache::{Store, StoreWriter};
use kube_dynamic_informer::informer::InformerOptions;
use kube_dynamic_informer::informer::{Event, SharedInformer};
use kube_dynamic_informer::vocabulary::ResourceName;
use kube_dynamic_informer::vocabulary::Selector;
use kube_dynamic_informer::vocabulary::object_key;
use kube_dynamic_informer::wire::{ListPage, ListWatch, ListWatchError, WatchEvent, WatchStream};
use proptest::prelude::*;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[a-c]{1,3}",
        "[a-z0-9./-]{1,12}",
        any::<String>().prop_map(|s| s.chars().take(12).collect()),
        Just("a/b".to_owned()),
        Just("x".repeat(300)),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec!["a", "b", "c", "list", "spec", "metadata", "name", "kind"])
            .prop_map(str::to_owned),
        1 => text(),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(8, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// `{"a": {"a": ... {"leaf": "bottom"}}}`, `depth` levels of `a`.
fn nested(depth: usize) -> Value {
    let mut v = json!({ "leaf": "bottom" });
    for _ in 0..depth {
        v = json!({ "a": v });
    }
    v
}

fn labels() -> impl Strategy<Value = Option<BTreeMap<String, String>>> {
    prop_oneof![
        3 => Just(None),
        6 => prop::collection::btree_map(text(), text(), 0..6).prop_map(Some),
        // Thousands of labels, as a label-happy controller makes them.
        1 => (0..3000usize).prop_map(|n| Some((0..n).map(|i| (format!("k{i}"), format!("v{}", i % 7))).collect())),
    ]
}

fn resource() -> ApiResource {
    ApiResource {
        group: "kdi-test.example.com".into(),
        version: "v1".into(),
        api_version: "kdi-test.example.com/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    }
}

fn types() -> impl Strategy<Value = Option<TypeMeta>> {
    let r = resource();
    prop_oneof![
        3 => Just(None),
        1 => Just(Some(TypeMeta { api_version: String::new(), kind: String::new() })),
        3 => Just(Some(TypeMeta { api_version: r.api_version.clone(), kind: r.kind.clone() })),
        1 => Just(Some(TypeMeta { api_version: "v1".into(), kind: "ConfigMap".into() })),
    ]
}

/// Objects as a server, a buggy proxy or a transform might produce them:
/// names missing, empty or with a slash; a namespace missing or empty on a
/// namespaced resource; any JSON where a spec is expected.
fn object() -> impl Strategy<Value = DynamicObject> {
    (
        types(),
        prop::option::weighted(0.9, prop_oneof![4 => "[a-e]", 1 => text()]),
        prop::option::of(prop_oneof![
            Just(String::new()),
            Just("ns1".to_owned()),
            text()
        ]),
        labels(),
        prop::option::of(prop::collection::btree_map(text(), text(), 0..3)),
        prop::option::of(0u8..4),
        prop_oneof![
            6 => prop::collection::btree_map(key(), json_value(), 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            1 => json_value(),
            1 => (1usize..110).prop_map(|d| json!({ "spec": nested(d) })),
        ],
    )
        .prop_map(
            |(types, name, namespace, labels, annotations, rv, data)| DynamicObject {
                types,
                metadata: ObjectMeta {
                    name,
                    namespace,
                    labels,
                    annotations,
                    resource_version: rv.map(|r| r.to_string()),
                    ..ObjectMeta::default()
                },
                data,
            },
        )
}

/// Index expressions over every part of an object, most of which fail on
/// some inputs (type errors, object results).
const EXPRESSIONS: &[(&str, &str)] = &[
    ("label-keys", "keys(metadata.labels)"),
    ("label-values", "values(metadata.labels)"),
    ("spec", "spec"),
    ("spec-values", "spec.*"),
    ("flat", "spec.list[][]"),
    ("deep", "spec.a.a.a.leaf"),
    ("length", "length(spec)"),
    (
        "multi",
        "[metadata.name, metadata.namespace, kind, apiVersion]",
    ),
    ("filter", "spec.list[?@ > `1`]"),
    ("sorted", "sort(spec.list)"),
    ("annotation", "metadata.annotations.a"),
    ("joined", "join(',', keys(@))"),
];

fn indexes() -> Vec<(String, IndexFn)> {
    let mut out: Vec<(String, IndexFn)> = EXPRESSIONS
        .iter()
        .map(|(name, expr)| (name.to_string(), IndexFn::jmespath(name, expr).unwrap()))
        .collect();
    // A user closure that panics on some objects: caught, counted.
    out.push((
        "closure".into(),
        IndexFn::closure(|o: &DynamicObject| {
            let name = o.metadata.name.clone().unwrap_or_default();
            if name.contains('c') {
                panic!("index closure bug on {name}");
            }
            Ok(vec![name])
        }),
    ));
    out
}

/// Keeps the index closure's deliberate panics out of the output.
fn quiet_closure_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info
                .payload()
                .downcast_ref::<String>()
                .map(String::as_str)
                .unwrap_or("");
            if !message.starts_with("index closure bug") {
                previous(info);
            }
        }));
    });
}

/// Checks every index of `store` against a recomputation, through the
/// public API only: each value lists exactly the objects whose index
/// function yields it.
fn check_indexes(store: &Store, indexes: &[(String, IndexFn)]) -> Result<(), TestCaseError> {
    let objects: Vec<Arc<DynamicObject>> = store.list_all().iter().map(|o| o.object()).collect();
    for (name, func) in indexes {
        let mut want: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for o in &objects {
            let key = object_key(o).expect("stored objects have keys");
            if let Ok(values) = func.evaluate(name, &IndexInput::new(o)) {
                for v in values {
                    want.entry(v).or_default().insert(key.clone());
                }
            }
        }
        let mut got: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for v in store.index_values(name).unwrap() {
            let keys: BTreeSet<String> = store.index_keys(name, &v).unwrap().into_iter().collect();
            prop_assert!(
                !keys.is_empty(),
                "index {} keeps an empty value {:?}",
                name,
                v
            );
            got.insert(v, keys);
        }
        prop_assert_eq!(&got, &want, "index {}", name);
    }
    Ok(())
}

/// `cases` cases; failures are reported, not saved to regression files.
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

#[derive(Debug, Clone)]
enum Op {
    Upsert(Box<DynamicObject>),
    Delete(usize),
    Replace(Vec<DynamicObject>),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => object().prop_map(|o| Op::Upsert(Box::new(o))),
        2 => any::<usize>().prop_map(Op::Delete),
        1 => prop::collection::vec(object(), 0..6).prop_map(Op::Replace),
    ]
}

proptest! {
    #![proptest_config(config(64))]

    /// Arbitrary objects through a store with twelve JMESPath indexes and a
    /// panicking closure: no panic escapes, the objects are exactly those
    /// with a key, and every index equals a recomputation.
    #[test]
    fn arbitrary_objects_through_a_store_with_many_indexes(ops in prop::collection::vec(op(), 1..16)) {
        quiet_closure_panics();
        let indexes = indexes();
        let mut writer = StoreWriter::new();
        let store = writer.reader();
        // Half the indexes before any object, half after some.
        let (early, late) = indexes.split_at(indexes.len() / 2);
        for (name, f) in early {
            store.add_index(name.clone(), f.clone()).unwrap();
        }
        let mut model: BTreeMap<String, Arc<DynamicObject>> = BTreeMap::new();
        for (i, op) in ops.into_iter().enumerate() {
            match op {
                Op::Upsert(o) => {
                    let o = Arc::new(*o);
                    if let Some(key) = object_key(&o) {
                        model.insert(key, o.clone());
                    }
                    writer.upsert(o);
                }
                Op::Delete(n) => {
                    if !model.is_empty() {
                        let key = model.keys().nth(n % model.len()).unwrap().clone();
                        prop_assert!(writer.delete(&key).is_some());
                        model.remove(&key);
                    }
                    prop_assert!(writer.delete("no/such-key").is_none());
                }
                Op::Replace(list) => {
                    model.clear();
                    let list: Vec<_> = list.into_iter().map(Arc::new).collect();
                    for o in &list {
                        if let Some(key) = object_key(o) {
                            model.insert(key, o.clone());
                        }
                    }
                    writer.replace(list);
                }
            }
            if i == 2 {
                for (name, f) in late {
                    store.add_index(name.clone(), f.clone()).unwrap();
                }
            }
            let mut keys = store.keys();
            keys.sort();
            prop_assert_eq!(keys, model.keys().cloned().collect::<Vec<_>>());
            let present: Vec<(String, IndexFn)> = indexes
                .iter()
                .filter(|(n, _)| store.index_names().contains(n))
                .cloned()
                .collect();
            check_indexes(&store, &present)?;
        }
    }
}

// ---------------------------------------------------------------------------
// A whole informer over a scripted ListWatch
// ---------------------------------------------------------------------------

/// Answers the first list with `list` and the first watch with `events`
/// (then nothing, forever).
#[derive(Clone)]
struct Scripted {
    list: Vec<DynamicObject>,
    events: Arc<Mutex<Option<Vec<WatchEvent>>>>,
}

impl ListWatch for Scripted {
    fn list(&self, _params: &ListParams) -> BoxFuture<'static, Result<ListPage, ListWatchError>> {
        let objects = self.list.iter().cloned().map(Into::into).collect();
        async move {
            Ok(ListPage {
                objects,
                resource_version: "100".into(),
                ..ListPage::default()
            })
        }
        .boxed()
    }

    fn watch(
        &self,
        _params: &WatchParams,
        _resource_version: &str,
    ) -> BoxFuture<'static, Result<WatchStream, ListWatchError>> {
        let events = self.events.lock().unwrap().take().unwrap_or_default();
        async move {
            Ok(futures::stream::iter(events.into_iter().map(Ok))
                .chain(futures::stream::pending())
                .boxed())
        }
        .boxed()
    }
}

/// What the reflector lets in: apiVersion/kind missing or this resource's,
/// and a non-empty name.
fn admitted(o: &DynamicObject) -> bool {
    let r = resource();
    let types_ok = match &o.types {
        None => true,
        Some(t) => {
            (t.api_version.is_empty() && t.kind.is_empty())
                || (t.api_version == r.api_version && t.kind == r.kind)
        }
    };
    types_ok && object_key(o).is_some()
}

#[derive(Debug, Clone)]
enum Change {
    Added(DynamicObject),
    Modified(DynamicObject),
    Deleted(DynamicObject),
    Bookmark,
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        3 => object().prop_map(Change::Added),
        2 => object().prop_map(Change::Modified),
        2 => object().prop_map(Change::Deleted),
        1 => Just(Change::Bookmark),
    ]
}

/// key -> resourceVersion (or "" when none).
type State = BTreeMap<String, String>;

fn state_of<'a>(objects: impl IntoIterator<Item = &'a DynamicObject>) -> State {
    objects
        .into_iter()
        .map(|o| {
            (
                object_key(o).unwrap(),
                o.metadata.resource_version.clone().unwrap_or_default(),
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(config(48))]

    /// A list and a watch full of odd objects through a shared informer
    /// with indexes and a handler: it syncs, the cache ends exactly as the
    /// input says (objects of another kind or without a name are skipped
    /// and counted), the handler's view equals the cache, and the indexes
    /// equal a recomputation.
    #[test]
    fn odd_objects_through_a_whole_informer(
        list in prop::collection::vec(object(), 0..8),
        changes in prop::collection::vec(change(), 0..10),
    ) {
        quiet_closure_panics();
        // The expected cache, by the reflector's rules.
        let mut want: BTreeMap<String, DynamicObject> = BTreeMap::new();
        let mut skipped = 0u64;
        for o in &list {
            if admitted(o) {
                want.insert(object_key(o).unwrap(), o.clone());
            } else {
                skipped += 1;
            }
        }
        let mut events = Vec::new();
        for c in &changes {
            match c {
                Change::Added(o) | Change::Modified(o) => {
                    if admitted(o) {
                        want.insert(object_key(o).unwrap(), o.clone());
                    } else {
                        skipped += 1;
                    }
                    events.push(if matches!(c, Change::Added(_)) {
                        WatchEvent::Added(o.clone().into())
                    } else {
                        WatchEvent::Modified(o.clone().into())
                    });
                }
                Change::Deleted(o) => {
                    if admitted(o) {
                        want.remove(&object_key(o).unwrap());
                    } else {
                        skipped += 1;
                    }
                    events.push(WatchEvent::Deleted(o.clone().into()));
                }
                Change::Bookmark => events.push(WatchEvent::Bookmark {
                    resource_version: "200".into(),
                    initial_events_end: false,
                }),
            }
        }
        let want = state_of(want.values());
        let want_events = events.len() as u64;

        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (cache, view, store, stats) = runtime.block_on(async move {
            let lw = Scripted { list, events: Arc::new(Mutex::new(Some(events))) };
            let informer =
                SharedInformer::with_list_watch(lw, resource(), InformerOptions::default());
            for (name, f) in indexes() {
                informer.add_index(name, f).unwrap();
            }
            let view: Arc<Mutex<State>> = Arc::default();
            let v = view.clone();
            let reg = informer.add_handler(move |e: Event| {
                let o = e.object();
                let key = object_key(&o.object()).expect("events carry keyed objects");
                let rv = o.resource_version().unwrap_or_default().to_owned();
                let mut v = v.lock().unwrap();
                match e {
                    Event::Delete { .. } => { v.remove(&key); }
                    _ => { v.insert(key, rv); }
                }
            });
            let cancel = tokio_util::sync::CancellationToken::new();
            let task = informer.start(cancel.clone()).unwrap();
            informer.wait_for_sync(Duration::from_secs(10)).await.unwrap();
            let stats = informer.stats();
            let deadline = Instant::now() + Duration::from_secs(10);
            while stats.watch_events.load(std::sync::atomic::Ordering::SeqCst) < want_events
                || reg.backlog() > 0
            {
                assert!(Instant::now() < deadline, "the informer did not take every event");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let cache: State = informer
                .store()
                .list_all()
                .iter()
                .map(|o| {
                    (
                        o.key().unwrap(),
                        o.resource_version().unwrap_or_default().to_owned(),
                    )
                })
                .collect();
            let view = view.lock().unwrap().clone();
            cancel.cancel();
            task.await.unwrap();
            (cache, view, informer.store(), stats)
        });
        prop_assert_eq!(&cache, &want);
        prop_assert_eq!(&view, &want);
        prop_assert_eq!(stats.skipped_objects.load(std::sync::atomic::Ordering::SeqCst), skipped);
        check_indexes(&store, &indexes())?;
    }
}

// ---------------------------------------------------------------------------
// Extremes
// ---------------------------------------------------------------------------

/// The deepest object kube-client's decoder lets through (serde_json stops
/// at 128 levels) is decoded, stored, indexed both by the field-path fast
/// path and by the interpreter, and removed.
#[test]
fn an_object_at_the_decoder_depth_limit_is_indexed() {
    let depth = 120;
    let text = json!({
        "apiVersion": "kdi-test.example.com/v1", "kind": "Widget",
        "metadata": { "name": "deep", "namespace": "ns1" },
        "spec": nested(depth),
    })
    .to_string();
    let o: DynamicObject = serde_json::from_str(&text).expect("decodes at this depth");
    let mut writer = StoreWriter::new();
    let store = writer.reader();
    let path = format!("spec{}.leaf", ".a".repeat(40));
    store
        .add_index("path", IndexFn::jmespath("path", &path).unwrap())
        .unwrap();
    store
        .add_index(
            "interpreted",
            IndexFn::jmespath("interpreted", &format!("spec{} && 'deep'", ".a".repeat(40)))
                .unwrap(),
        )
        .unwrap();
    store
        .add_index("keys", IndexFn::jmespath("keys", "keys(spec)").unwrap())
        .unwrap();
    writer.upsert(Arc::new(o));
    assert!(
        store.index_keys("path", "bottom").unwrap().is_empty(),
        "40 levels is not the bottom"
    );
    assert_eq!(
        store.index_keys("interpreted", "deep").unwrap(),
        ["ns1/deep"]
    );
    assert_eq!(store.index_keys("keys", "a").unwrap(), ["ns1/deep"]);
    assert!(writer.delete("ns1/deep").is_some());
    assert!(store.index_values("keys").unwrap().is_empty());
}

/// 100,000 labels on one object, and label values of a megabyte.
#[test]
fn huge_label_sets_are_indexed_and_cleaned_up() {
    let mut writer = StoreWriter::new();
    let store = writer.reader();
    store
        .add_index(
            "keys",
            IndexFn::jmespath("keys", "keys(metadata.labels)").unwrap(),
        )
        .unwrap();
    store
        .add_index(
            "app",
            IndexFn::jmespath("app", "metadata.labels.app").unwrap(),
        )
        .unwrap();
    let mut labels: BTreeMap<String, String> = (0..100_000)
        .map(|i| (format!("example.com/k{i}"), "v".into()))
        .collect();
    labels.insert("app".into(), "x".repeat(1 << 20));
    let o = DynamicObject {
        types: None,
        metadata: ObjectMeta {
            name: Some("many".into()),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        data: json!({}),
    };
    writer.upsert(Arc::new(o));
    assert_eq!(store.index_values("keys").unwrap().len(), 100_001);
    assert_eq!(
        store.index_keys("app", &"x".repeat(1 << 20)).unwrap(),
        ["many"]
    );
    let selector = Selector::parse("example.com/k99999=v,app").unwrap();
    assert!(selector.matches(&store.get("many").unwrap().labels()));
    writer.replace(Vec::new());
    assert!(store.is_empty());
    assert!(store.index_values("keys").unwrap().is_empty());
    assert!(store.index_values("app").unwrap().is_empty());
}

/// Parsers given a megabyte of input finish (no quadratic blow-up, no
/// deep recursion) and do not panic.
#[test]
fn parsers_finish_on_megabyte_inputs() {
    let inputs = [
        "a,".repeat(500_000),
        "a in (".repeat(200_000),
        "(".repeat(1 << 20),
        "!".repeat(1 << 20),
        format!("a in ({})", "b,".repeat(300_000)),
        "x".repeat(1 << 20),
        ".".repeat(1 << 20),
        "a/".repeat(500_000),
    ];
    let started = Instant::now();
    for input in &inputs {
        let _ = Selector::parse(input);
        let _ = kube_dynamic_informer::vocabulary::validate_field_selector(input);
        let _ = ResourceName::parse(input);
        let _ = IndexFn::jmespath("i", input);
    }
    // Not a benchmark: a generous bound that only a pathological parser
    // (quadratic or worse on a megabyte) would cross.
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
}
