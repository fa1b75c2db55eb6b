//! What one cached object costs, in memory and in read time, in each candidate
//! representation for the store (issue "Half of client-go's memory: a compact
//! cache"):
//!
//! - `DynamicObject` — today: the object as decoded, in an `Arc`;
//! - `tree` — `compact::CompactObject`, one allocation of bytes with keys
//!   numbered per store, but no shared trees (`Interner::without_shared_trees`);
//! - `tree+shared` — the same, `fieldsV1` trees shared between objects from
//!   their second sighting (`Interner::new`, the module's default);
//! - `json` — the object's JSON text (`Box<str>`) with name, namespace, uid,
//!   resourceVersion and labels extracted (interned label keys, strings of up
//!   to 22 bytes inline), decoded on read;
//! - `json+zstd` — the same text compressed with zstd (level 3) and a
//!   dictionary trained per store on its first 1,000 objects;
//! - `projected` — `DynamicObject` and `tree+shared` again, of objects
//!   cut by a `Projection` as the reflector cuts them (Widgets: keep
//!   `metadata.labels` and `spec`; ConfigMaps: `metadata.labels` and `data`).
//!
//! Datasets, generated in the shape of `bench/clientgo/dataset.go` (with the
//! metadata the API server adds: uid, resourceVersion, creationTimestamp,
//! generation, managedFields of a server-side apply):
//!
//! - 50k Widgets as in the benchmark (~2.5 KB of JSON each);
//! - 50k Widgets with a `kubectl.kubernetes.io/last-applied-configuration`
//!   annotation, as `kubectl apply` leaves them (~3.9 KB);
//! - 10k ConfigMaps with ~1 KB of data.
//!
//! Memory: bytes live after building all objects minus before, counted by a
//! global allocator (requested sizes) and by glibc (`mallinfo2().uordblks`,
//! chunk sizes, which is what RSS sees); both include the `Vec` holding the
//! objects (the struct itself, or the `Arc` pointer for `DynamicObject`),
//! and the interner or dictionary of the store. zstd allocates through
//! `malloc`, so only glibc's column sees its contexts.
//!
//! Times are per object, over all objects in a random order (as a lister
//! reads them), best of 3 passes. `build` starts from the decoded
//! `DynamicObject`; `full` is a read that needs the whole object as an
//! `Arc<DynamicObject>` (today an `Arc` clone; for the others a decode);
//! `pointer` reads a string at a JSON pointer (`/spec/nodeName`,
//! `/data/nodeName`); `json` writes the whole object's JSON text.
//!
//! `cargo bench --bench compact` (`-- --quick` for a smaller run, `-- --hot`
//! for the hot-loop table only, `-- --decode` for `CompactObject::to_object`
//! of the benchmark's Widget only)

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use kube_core::DynamicObject;
use kube_dynamic_informer::cache::Projection;
use kube_dynamic_informer::cache::{CompactEntry, CompactObject, Interner};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------
// Counting allocator
// ---------------------------------------------------------------------------

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

/// Allocation calls, counted only while `COUNT_CALLS` is set (`--decode`).
static COUNT_CALLS: AtomicBool = AtomicBool::new(false);
static CALLS: AtomicUsize = AtomicUsize::new(0);

fn count_call() {
    if COUNT_CALLS.load(Ordering::Relaxed) {
        CALLS.fetch_add(1, Ordering::Relaxed);
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_call();
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_call();
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_call();
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

fn glibc_in_use() -> isize {
    // SAFETY: mallinfo2 only reads glibc's counters.
    unsafe { libc::mallinfo2() }.uordblks as isize
}

// ---------------------------------------------------------------------------
// Datasets (bench/clientgo/dataset.go, plus what the API server adds)
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq)]
enum Dataset {
    Widget,
    WidgetLastApplied,
    ConfigMap,
}

impl Dataset {
    fn title(self) -> &'static str {
        match self {
            Dataset::Widget => "Widget (the benchmark's)",
            Dataset::WidgetLastApplied => "Widget + kubectl last-applied annotation",
            Dataset::ConfigMap => "ConfigMap, ~1 KB of data",
        }
    }
    fn pointer(self) -> &'static str {
        match self {
            Dataset::ConfigMap => "/data/nodeName",
            _ => "/spec/nodeName",
        }
    }
    /// The paths of the projected rows: labels and the object's own content.
    fn projection(self) -> Projection {
        let content = match self {
            Dataset::ConfigMap => "data",
            _ => "spec",
        };
        Projection::new(["metadata.labels", content]).expect("valid paths")
    }
    fn json(self, i: usize) -> String {
        match self {
            Dataset::Widget => widget(i, false),
            Dataset::WidgetLastApplied => widget(i, true),
            Dataset::ConfigMap => config_map(i),
        }
    }
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn uid(i: usize) -> String {
    let a = splitmix(i as u64);
    let b = splitmix(a);
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        0x8000 | (b >> 48) & 0x3fff,
        b & 0xffff_ffff_ffff
    )
}

fn timestamp(i: usize) -> String {
    // Loaded at ~392 objects/s from 2026-12-02T16:18:14Z.
    let t = k8s_openapi::jiff::Timestamp::from_second(1_796_228_294 + (i / 392) as i64)
        .expect("in range");
    k8s_openapi::jiff::fmt::strtime::format("%Y-%m-%dT%H:%M:%SZ", t).expect("formats")
}

fn labels(i: usize) -> Value {
    let tier = ["frontend", "backend", "cache"][i % 3];
    let release = ["stable", "canary"][i % 7 / 6];
    json!({
        "app": format!("app-{}", i % 100),
        "app.kubernetes.io/name": "widget",
        "app.kubernetes.io/part-of": format!("shop-{}", i % 20),
        "app.kubernetes.io/managed-by": "bench-operator",
        "tier": tier,
        "release": release,
    })
}

fn labels_fields() -> Value {
    json!({
        "f:app": {}, "f:app.kubernetes.io/managed-by": {}, "f:app.kubernetes.io/name": {},
        "f:app.kubernetes.io/part-of": {}, "f:release": {}, "f:tier": {},
    })
}

fn widget(i: usize, last_applied: bool) -> String {
    let name = format!("widget-{i:06}");
    let namespace = format!("bench-{}", i % 10);
    let owner = format!("team-{}", i % 37);
    let spec = json!({
        "replicas": 1 + i % 5,
        "nodeName": format!("node-{}", i % 1000),
        "image": format!("registry.example.com/shop/widget:v1.{}.3", i % 40),
        "tags": [format!("tag-{}", i % 20), format!("tag-{}", (i / 20) % 20), format!("tag-{}", (i * 7 + 3) % 20)],
        "resources": {"cpu": "250m", "memory": "256Mi"},
        "env": [
            {"name": "LOG_LEVEL", "value": "info"},
            {"name": "REGION", "value": "eu-west-1"},
            {"name": "WIDGET_ID", "value": i.to_string()},
        ],
        "ports": [
            {"name": "http", "port": 8080, "protocol": "TCP"},
            {"name": "metrics", "port": 9090, "protocol": "TCP"},
        ],
    });
    let status = json!({
        "phase": "Running",
        "observedGeneration": 1,
        "readyReplicas": 1 + i % 5,
        "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z",
             "reason": "MinimumReplicasAvailable", "message": "All replicas are ready and serving."},
            {"type": "Progressing", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z",
             "reason": "NewReplicaSetAvailable", "message": "Rollout of revision 3 has completed."},
        ],
    });
    let mut annotations = json!({"bench.kdi.dev/owner": owner});
    let mut annotation_fields = json!({"f:bench.kdi.dev/owner": {}});
    let (manager, operation) = if last_applied {
        let applied = json!({
            "apiVersion": "bench.kdi.dev/v1", "kind": "Widget",
            "metadata": {"annotations": {"bench.kdi.dev/owner": owner}, "labels": labels(i),
                         "name": name, "namespace": namespace},
            "spec": spec, "status": status,
        });
        annotations["kubectl.kubernetes.io/last-applied-configuration"] =
            Value::String(format!("{applied}\n"));
        annotation_fields["f:kubectl.kubernetes.io/last-applied-configuration"] = json!({});
        ("kubectl-client-side-apply", "Update")
    } else {
        ("bench-loader", "Apply")
    };
    let cond = |t: &str| {
        (
            format!("k:{{\"type\":\"{t}\"}}"),
            json!({".": {}, "f:lastTransitionTime": {}, "f:message": {}, "f:reason": {}, "f:status": {}, "f:type": {}}),
        )
    };
    let (ready, ready_fields) = cond("Ready");
    let (progressing, progressing_fields) = cond("Progressing");
    let fields = json!({
        "f:metadata": {"f:annotations": annotation_fields, "f:labels": labels_fields()},
        "f:spec": {
            "f:env": {
                "k:{\"name\":\"LOG_LEVEL\"}": {".": {}, "f:name": {}, "f:value": {}},
                "k:{\"name\":\"REGION\"}": {".": {}, "f:name": {}, "f:value": {}},
                "k:{\"name\":\"WIDGET_ID\"}": {".": {}, "f:name": {}, "f:value": {}},
            },
            "f:image": {}, "f:nodeName": {},
            "f:ports": {
                "k:{\"name\":\"http\"}": {".": {}, "f:name": {}, "f:port": {}, "f:protocol": {}},
                "k:{\"name\":\"metrics\"}": {".": {}, "f:name": {}, "f:port": {}, "f:protocol": {}},
            },
            "f:replicas": {}, "f:resources": {"f:cpu": {}, "f:memory": {}}, "f:tags": {},
        },
        "f:status": {
            "f:conditions": {ready: ready_fields, progressing: progressing_fields},
            "f:observedGeneration": {}, "f:phase": {}, "f:readyReplicas": {},
        },
    });
    let ts = timestamp(i);
    json!({
        "apiVersion": "bench.kdi.dev/v1",
        "kind": "Widget",
        "metadata": {
            "annotations": annotations,
            "creationTimestamp": ts,
            "generation": 1,
            "labels": labels(i),
            "managedFields": [{
                "apiVersion": "bench.kdi.dev/v1", "fieldsType": "FieldsV1", "fieldsV1": fields,
                "manager": manager, "operation": operation, "time": ts,
            }],
            "name": name,
            "namespace": namespace,
            "resourceVersion": (7000 + 3 * i).to_string(),
            "uid": uid(i),
        },
        "spec": spec,
        "status": status,
    })
    .to_string()
}

fn config_map(i: usize) -> String {
    let props: Vec<String> = (0..24)
        .map(|k| format!("service.component{k:02}.setting = value-{i}-{k}"))
        .collect();
    let ts = timestamp(i);
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "annotations": {"bench.kdi.dev/owner": format!("team-{}", i % 37)},
            "creationTimestamp": ts,
            "labels": labels(i),
            "managedFields": [{
                "apiVersion": "v1", "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:data": {"f:application.properties": {}, "f:log-level": {}, "f:nodeName": {}, "f:region": {}, "f:tags": {}},
                    "f:metadata": {"f:annotations": {"f:bench.kdi.dev/owner": {}}, "f:labels": labels_fields()},
                },
                "manager": "bench-loader", "operation": "Apply", "time": ts,
            }],
            "name": format!("cm-{i:06}"),
            "namespace": format!("bench-{}", i % 10),
            "resourceVersion": (90000 + 3 * i).to_string(),
            "uid": uid(i + 1_000_000),
        },
        "data": {
            "nodeName": format!("node-{}", i % 1000),
            "log-level": "info",
            "region": "eu-west-1",
            "application.properties": props.join("\n"),
            "tags": "a,b",
        },
    })
    .to_string()
}

fn decode(text: &str) -> DynamicObject {
    serde_json::from_str(text).expect("a DynamicObject")
}

// ---------------------------------------------------------------------------
// Candidates
// ---------------------------------------------------------------------------

trait Candidate: Sized {
    const NAME: &'static str;
    type Ctx;
    fn ctx(samples: &[DynamicObject]) -> Self::Ctx;
    /// Builds from the decoded object (`None`: the candidate keeps it as it is).
    fn build(object: &DynamicObject, ctx: &mut Self::Ctx) -> Option<Self>;
    /// Keeps the decoded object itself (today's store).
    fn keep(object: DynamicObject) -> Option<Self> {
        let _ = object;
        None
    }
    fn full(&self, ctx: &Self::Ctx) -> Arc<DynamicObject>;
    fn name(&self) -> Option<&str>;
    fn namespace(&self) -> Option<&str>;
    fn label(&self, key: &str) -> Option<&str>;
    fn resource_version(&self) -> Option<&str>;
    /// The length of the string at `pointer`.
    fn pointer_len(&self, ctx: &Self::Ctx, pointer: &str) -> Option<usize>;
    fn write_json(&self, ctx: &Self::Ctx, out: &mut Vec<u8>);
}

struct Today(Arc<DynamicObject>);

impl Candidate for Today {
    const NAME: &'static str = "DynamicObject (today)";
    type Ctx = ();
    fn ctx(_: &[DynamicObject]) {}
    fn build(_: &DynamicObject, _: &mut ()) -> Option<Self> {
        None
    }
    fn keep(object: DynamicObject) -> Option<Self> {
        Some(Today(Arc::new(object)))
    }
    fn full(&self, _: &()) -> Arc<DynamicObject> {
        Arc::clone(&self.0)
    }
    fn name(&self) -> Option<&str> {
        self.0.metadata.name.as_deref()
    }
    fn namespace(&self) -> Option<&str> {
        self.0.metadata.namespace.as_deref()
    }
    fn label(&self, key: &str) -> Option<&str> {
        self.0
            .metadata
            .labels
            .as_ref()?
            .get(key)
            .map(String::as_str)
    }
    fn resource_version(&self) -> Option<&str> {
        self.0.metadata.resource_version.as_deref()
    }
    fn pointer_len(&self, _: &(), pointer: &str) -> Option<usize> {
        self.0.data.pointer(pointer)?.as_str().map(touch)
    }
    fn write_json(&self, _: &(), out: &mut Vec<u8>) {
        serde_json::to_writer(out, &*self.0).expect("serialises");
    }
}

trait Sharing {
    const NAME: &'static str;
    fn interner() -> Interner;
}
struct KeysOnly;
impl Sharing for KeysOnly {
    const NAME: &'static str = "tree (compact.rs, keys interned)";
    fn interner() -> Interner {
        Interner::without_shared_trees()
    }
}
struct SharedTrees;
impl Sharing for SharedTrees {
    const NAME: &'static str = "tree+shared (compact.rs default)";
    fn interner() -> Interner {
        Interner::new()
    }
}

struct Tree<S>(CompactObject, std::marker::PhantomData<S>);

impl<S: Sharing> Candidate for Tree<S> {
    const NAME: &'static str = S::NAME;
    type Ctx = Interner;
    fn ctx(_: &[DynamicObject]) -> Interner {
        S::interner()
    }
    fn build(object: &DynamicObject, interner: &mut Interner) -> Option<Self> {
        Some(Tree(
            CompactObject::from_object(object, interner),
            std::marker::PhantomData,
        ))
    }
    fn full(&self, _: &Interner) -> Arc<DynamicObject> {
        Arc::new(self.0.to_object())
    }
    fn name(&self) -> Option<&str> {
        self.0.name()
    }
    fn namespace(&self) -> Option<&str> {
        self.0.namespace()
    }
    fn label(&self, key: &str) -> Option<&str> {
        self.0.labels().get(key)
    }
    fn resource_version(&self) -> Option<&str> {
        self.0.resource_version()
    }
    fn pointer_len(&self, _: &Interner, pointer: &str) -> Option<usize> {
        self.0.pointer(pointer)?.as_str().map(touch)
    }
    fn write_json(&self, _: &Interner, out: &mut Vec<u8>) {
        self.0.write_json(out).expect("serialises");
    }
}

/// A string of 24 bytes, inline up to 22 (as in compact.rs).
enum SmallStr {
    Inline(u8, [u8; 22]),
    Heap(Box<str>),
}

impl SmallStr {
    fn new(s: &str) -> Self {
        if s.len() <= 22 {
            let mut buf = [0; 22];
            buf[..s.len()].copy_from_slice(s.as_bytes());
            SmallStr::Inline(s.len() as u8, buf)
        } else {
            SmallStr::Heap(s.into())
        }
    }
    fn as_str(&self) -> &str {
        match self {
            SmallStr::Inline(len, buf) => std::str::from_utf8(&buf[..*len as usize]).unwrap_or(""),
            SmallStr::Heap(s) => s,
        }
    }
}

/// What the JSON candidates keep parsed beside the text.
struct Extracted {
    name: Option<SmallStr>,
    namespace: Option<SmallStr>,
    #[allow(dead_code)] // kept as the store would keep it; no read of it is timed
    uid: Option<SmallStr>,
    resource_version: Option<SmallStr>,
    labels: Box<[(Arc<str>, SmallStr)]>,
}

impl Extracted {
    fn new(o: &DynamicObject, keys: &mut HashSet<Arc<str>>) -> Self {
        let m = &o.metadata;
        let s = |v: &Option<String>| v.as_deref().map(SmallStr::new);
        Extracted {
            name: s(&m.name),
            namespace: s(&m.namespace),
            uid: s(&m.uid),
            resource_version: s(&m.resource_version),
            labels: m
                .labels
                .iter()
                .flatten()
                .map(|(k, v)| {
                    let key = match keys.get(k.as_str()) {
                        Some(key) => Arc::clone(key),
                        None => {
                            let key: Arc<str> = Arc::from(k.as_str());
                            keys.insert(Arc::clone(&key));
                            key
                        }
                    };
                    (key, SmallStr::new(v))
                })
                .collect(),
        }
    }
    fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .map(|i| self.labels[i].1.as_str())
    }
}

/// Finds the value at a pointer in JSON text without decoding the rest:
/// other values are skipped (validated, not built); the walk stops at the
/// value found.
fn raw_pointer<'t>(
    de: &mut serde_json::Deserializer<impl serde_json::de::Read<'t>>,
    tokens: &[&str],
) -> Option<&'t RawValue> {
    let found = Cell::new(None);
    let _ = Walk {
        tokens,
        found: &found,
    }
    .deserialize(de);
    found.get()
}

struct Walk<'a, 't> {
    tokens: &'a [&'a str],
    found: &'a Cell<Option<&'t RawValue>>,
}

fn stop<E: de::Error>() -> E {
    E::custom("stop")
}

impl<'de> DeserializeSeed<'de> for Walk<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if self.tokens.is_empty() {
            let raw: &'de RawValue = serde::Deserialize::deserialize(d)?;
            self.found.set(Some(raw));
            return Err(stop());
        }
        d.deserialize_any(self)
    }
}

struct KeyIs<'a>(&'a str);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E>(self, v: &str) -> Result<bool, E> {
        Ok(v == self.0)
    }
}

impl<'de> Visitor<'de> for Walk<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a container")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Some((first, rest)) = self.tokens.split_first() else {
            return Err(stop());
        };
        while let Some(hit) = map.next_key_seed(KeyIs(first))? {
            if hit {
                map.next_value_seed(Walk {
                    tokens: rest,
                    found: self.found,
                })?;
                return Err(stop());
            }
            map.next_value::<IgnoredAny>()?;
        }
        Err(stop())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Some((first, rest)) = self.tokens.split_first() else {
            return Err(stop());
        };
        let Ok(index) = first.parse::<usize>() else {
            return Err(stop());
        };
        for _ in 0..index {
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Err(stop());
            }
        }
        seq.next_element_seed(Walk {
            tokens: rest,
            found: self.found,
        })?;
        Err(stop())
    }
}

fn raw_str_len(raw: &RawValue) -> Option<usize> {
    match serde_json::from_str::<&str>(raw.get()) {
        Ok(s) => Some(touch(s)),
        Err(_) => serde_json::from_str::<String>(raw.get())
            .ok()
            .map(|s| touch(&s)),
    }
}

fn tokens(pointer: &str) -> Vec<&str> {
    pointer.split('/').skip(1).collect()
}

struct JsonText {
    meta: Extracted,
    text: Box<str>,
}

impl Candidate for JsonText {
    const NAME: &'static str = "json (text + metadata)";
    type Ctx = HashSet<Arc<str>>;
    fn ctx(_: &[DynamicObject]) -> Self::Ctx {
        HashSet::new()
    }
    fn build(object: &DynamicObject, keys: &mut Self::Ctx) -> Option<Self> {
        Some(JsonText {
            meta: Extracted::new(object, keys),
            text: serde_json::to_string(object)
                .expect("serialises")
                .into_boxed_str(),
        })
    }
    fn full(&self, _: &Self::Ctx) -> Arc<DynamicObject> {
        Arc::new(decode(&self.text))
    }
    fn name(&self) -> Option<&str> {
        self.meta.name.as_ref().map(SmallStr::as_str)
    }
    fn namespace(&self) -> Option<&str> {
        self.meta.namespace.as_ref().map(SmallStr::as_str)
    }
    fn label(&self, key: &str) -> Option<&str> {
        self.meta.label(key)
    }
    fn resource_version(&self) -> Option<&str> {
        self.meta.resource_version.as_ref().map(SmallStr::as_str)
    }
    fn pointer_len(&self, _: &Self::Ctx, pointer: &str) -> Option<usize> {
        let mut de = serde_json::Deserializer::from_str(&self.text);
        raw_str_len(raw_pointer(&mut de, &tokens(pointer))?)
    }
    fn write_json(&self, _: &Self::Ctx, out: &mut Vec<u8>) {
        out.extend_from_slice(self.text.as_bytes());
    }
}

struct Zstd<D> {
    dictionary: std::marker::PhantomData<D>,
    meta: Extracted,
    len: u32,
    compressed: Box<[u8]>,
}

struct ZstdCtx {
    keys: HashSet<Arc<str>>,
    dictionary_bytes: usize,
    compressor: RefCell<zstd::bulk::Compressor<'static>>,
    decompressor: RefCell<zstd::bulk::Decompressor<'static>>,
    scratch: RefCell<Vec<u8>>,
}

trait Dictionary {
    const NAME: &'static str;
    const TRAINED: bool;
}
struct Trained;
impl Dictionary for Trained {
    const NAME: &'static str = "json+zstd (dictionary per store)";
    const TRAINED: bool = true;
}
struct NoDictionary;
impl Dictionary for NoDictionary {
    const NAME: &'static str = "json+zstd (no dictionary)";
    const TRAINED: bool = false;
}

impl<D> Zstd<D> {
    fn decompress<R>(&self, ctx: &ZstdCtx, f: impl FnOnce(&[u8]) -> R) -> R {
        let mut buf = ctx.scratch.borrow_mut();
        buf.clear();
        buf.reserve(self.len as usize);
        ctx.decompressor
            .borrow_mut()
            .decompress_to_buffer(&self.compressed, &mut *buf)
            .expect("decompresses");
        f(&buf)
    }
}

impl<D: Dictionary> Candidate for Zstd<D> {
    const NAME: &'static str = D::NAME;
    type Ctx = ZstdCtx;
    fn ctx(samples: &[DynamicObject]) -> ZstdCtx {
        let texts: Vec<Vec<u8>> = samples
            .iter()
            .map(|o| serde_json::to_vec(o).expect("serialises"))
            .collect();
        let dictionary = if D::TRAINED {
            zstd::dict::from_samples(&texts, 32 * 1024).expect("a dictionary")
        } else {
            Vec::new()
        };
        ZstdCtx {
            keys: HashSet::new(),
            dictionary_bytes: dictionary.len(),
            compressor: RefCell::new(
                zstd::bulk::Compressor::with_dictionary(3, &dictionary).expect("a compressor"),
            ),
            decompressor: RefCell::new(
                zstd::bulk::Decompressor::with_dictionary(&dictionary).expect("a decompressor"),
            ),
            scratch: RefCell::new(Vec::new()),
        }
    }
    fn build(object: &DynamicObject, ctx: &mut ZstdCtx) -> Option<Self> {
        let text = serde_json::to_vec(object).expect("serialises");
        let mut scratch = ctx.scratch.borrow_mut();
        scratch.clear();
        scratch.reserve(zstd::zstd_safe::compress_bound(text.len()));
        ctx.compressor
            .borrow_mut()
            .compress_to_buffer(&text, &mut *scratch)
            .expect("compresses");
        Some(Zstd {
            dictionary: std::marker::PhantomData,
            meta: Extracted::new(object, &mut ctx.keys),
            len: text.len() as u32,
            compressed: scratch.as_slice().into(),
        })
    }
    fn full(&self, ctx: &ZstdCtx) -> Arc<DynamicObject> {
        self.decompress(ctx, |text| {
            Arc::new(serde_json::from_slice(text).expect("decodes"))
        })
    }
    fn name(&self) -> Option<&str> {
        self.meta.name.as_ref().map(SmallStr::as_str)
    }
    fn namespace(&self) -> Option<&str> {
        self.meta.namespace.as_ref().map(SmallStr::as_str)
    }
    fn label(&self, key: &str) -> Option<&str> {
        self.meta.label(key)
    }
    fn resource_version(&self) -> Option<&str> {
        self.meta.resource_version.as_ref().map(SmallStr::as_str)
    }
    fn pointer_len(&self, ctx: &ZstdCtx, pointer: &str) -> Option<usize> {
        self.decompress(ctx, |text| {
            let mut de = serde_json::Deserializer::from_slice(text);
            raw_str_len(raw_pointer(&mut de, &tokens(pointer))?)
        })
    }
    fn write_json(&self, ctx: &ZstdCtx, out: &mut Vec<u8>) {
        out.reserve(self.len as usize);
        ctx.decompressor
            .borrow_mut()
            .decompress_to_buffer(&self.compressed, out)
            .expect("decompresses");
    }
}

// ---------------------------------------------------------------------------
// Measurement
// ---------------------------------------------------------------------------

struct Row {
    candidate: String,
    heap: f64,
    glibc: f64,
    build_us: Option<f64>,
    full_us: f64,
    name_ns: f64,
    namespace_ns: f64,
    label_ns: f64,
    rv_ns: f64,
    pointer_ns: f64,
    json_us: f64,
    note: String,
}

/// Uses a string read: its length and its last byte (so that the bytes are
/// read, as any use of the string would).
fn touch(s: &str) -> usize {
    s.len() + usize::from(s.as_bytes().last().copied().unwrap_or(0))
}

/// The median, robust to the time slices other processes take on a shared machine.
fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(f64::NAN)
}

fn per_op(d: Duration, n: usize) -> f64 {
    d.as_secs_f64() * 1e9 / n as f64
}

/// Best of `rounds` timings of `f` over every index of `order`, in ns per call.
fn time_reads(order: &[usize], rounds: usize, mut f: impl FnMut(usize) -> usize) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..rounds {
        let start = Instant::now();
        let mut sum = 0usize;
        for &i in order {
            sum = sum.wrapping_add(f(i));
        }
        black_box(sum);
        best = best.min(per_op(start.elapsed(), order.len()));
    }
    best
}

fn permutation(n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for i in (1..n).rev() {
        x = splitmix(x);
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    order
}

const BATCH: usize = 1000;
const CHECKED: usize = 2000;

fn measure<C: Candidate>(dataset: Dataset, n: usize, samples: &[DynamicObject]) -> Row {
    measure_with::<C>(dataset, n, samples, None)
}

/// A row of `C`, of each object as `projection` leaves it (when given),
/// applied right after decoding as the reflector does.
fn measure_with<C: Candidate>(
    dataset: Dataset,
    n: usize,
    samples: &[DynamicObject],
    projection: Option<&Projection>,
) -> Row {
    let checked = n.min(CHECKED);
    // Allocated before the first count: they hold one time per object.
    let mut builds: Vec<f64> = Vec::with_capacity(n);
    let mut projections: Vec<f64> = Vec::with_capacity(if projection.is_some() { n } else { 0 });
    let (live0, glibc0) = (live(), glibc_in_use());
    let mut ctx = C::ctx(samples);
    let mut store: Vec<C> = Vec::with_capacity(n);
    let mut out = Vec::new();
    let mut mismatches = 0usize;
    for first in (0..n).step_by(BATCH) {
        let last = (first + BATCH).min(n);
        let texts: Vec<String> = (first..last).map(|i| dataset.json(i)).collect();
        for (k, text) in texts.iter().enumerate() {
            // Built right after decoding, as the informer would (the decoded
            // object is still in cache); its drop is not timed.
            let mut object = decode(text);
            if let Some(projection) = projection {
                let start = Instant::now();
                object = projection.apply(object);
                projections.push(start.elapsed().as_secs_f64() * 1e6);
            }
            let original = (first + k < checked).then(|| object.clone());
            let c = match C::keep(object.clone()) {
                Some(kept) => kept,
                None => {
                    let start = Instant::now();
                    let built = C::build(&object, &mut ctx);
                    builds.push(start.elapsed().as_secs_f64() * 1e6);
                    built.expect("built")
                }
            };
            drop(object);
            if let Some(original) = original {
                out.clear();
                c.write_json(&ctx, &mut out);
                if *c.full(&ctx) != original || out != serde_json::to_vec(&original).expect("JSON")
                {
                    mismatches += 1;
                }
            }
            store.push(c);
        }
    }
    let (live1, glibc1) = (live(), glibc_in_use());
    let heap = (live1 - live0) as f64 / n as f64;
    let glibc = (glibc1 - glibc0) as f64 / n as f64;
    assert_eq!(mismatches, 0, "{}: round trip or JSON differs", C::NAME);

    let order = permutation(n);
    let rounds = 3;
    let pointer = dataset.pointer();
    let s = &store;
    let ctx = &ctx;
    let name_ns = time_reads(&order, rounds, |i| s[i].name().map_or(0, touch));
    let namespace_ns = time_reads(&order, rounds, |i| s[i].namespace().map_or(0, touch));
    let label_ns = time_reads(&order, rounds, |i| s[i].label("app").map_or(0, touch));
    let rv_ns = time_reads(&order, rounds, |i| s[i].resource_version().map_or(0, touch));
    let pointer_ns = time_reads(&order, rounds, |i| {
        s[i].pointer_len(ctx, pointer).unwrap_or(0)
    });
    let json_us = time_reads(&order, rounds, |i| {
        out.clear();
        s[i].write_json(ctx, &mut out);
        out.len()
    }) / 1000.0;
    // Whole objects, one by one, dropped outside of the timing.
    let mut fulls: Vec<f64> = Vec::with_capacity(n);
    let mut made = Vec::with_capacity(256);
    for chunk in order.chunks(256) {
        for &i in chunk {
            let start = Instant::now();
            let object = s[i].full(ctx);
            fulls.push(start.elapsed().as_secs_f64() * 1e6);
            made.push(object);
        }
        made.clear();
    }
    let full_us = median(&mut fulls);
    let (candidate, note) = match projection {
        None => (C::NAME.to_owned(), String::new()),
        Some(projection) => (
            format!(
                "{}, projected to {}",
                C::NAME,
                projection.paths().join(" + ")
            ),
            format!(
                "projection applied in {:.2} µs (median)",
                median(&mut projections)
            ),
        ),
    };
    Row {
        candidate,
        heap,
        glibc,
        build_us: (!builds.is_empty()).then(|| median(&mut builds)),
        full_us,
        name_ns,
        namespace_ns,
        label_ns,
        rv_ns,
        pointer_ns,
        json_us,
        note,
    }
}

fn print_table(rows: &[Row]) {
    println!(
        "| candidate | heap B/obj (counted) | glibc B/obj (mallinfo2) | vs today | build µs (median) | full object µs (median) | name ns | namespace ns | label `app` ns | resourceVersion ns | pointer ns | JSON µs | |"
    );
    println!("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|");
    let today = rows.first().map_or(1.0, |r| r.glibc);
    for r in rows {
        println!(
            "| {} | {:.0} | {:.0} | {:.2}× | {} | {:.2} | {:.1} | {:.1} | {:.1} | {:.1} | {:.0} | {:.2} | {} |",
            r.candidate,
            r.heap,
            r.glibc,
            r.glibc / today,
            r.build_us.map_or("–".to_owned(), |b| format!("{b:.2}")),
            r.full_us,
            r.name_ns,
            r.namespace_ns,
            r.label_ns,
            r.rv_ns,
            r.pointer_ns,
            r.json_us,
            r.note,
        );
    }
}

fn zstd_row<D: Dictionary>(dataset: Dataset, n: usize, samples: &[DynamicObject]) -> Row {
    let mut row = measure::<Zstd<D>>(dataset, n, samples);
    let mut ctx = Zstd::<D>::ctx(samples);
    // Compressed size of objects the dictionary was not trained on.
    let sizes: Vec<usize> = (n.saturating_sub(1000)..n)
        .filter_map(|i| Zstd::<D>::build(&decode(&dataset.json(i)), &mut ctx))
        .map(|z| z.compressed.len())
        .collect();
    row.note = format!(
        "{} B compressed on average; {} B dictionary",
        sizes.iter().sum::<usize>() / sizes.len().max(1),
        ctx.dictionary_bytes
    );
    row
}

fn run(dataset: Dataset, n: usize) {
    let text = dataset.json(0);
    println!(
        "\n### {}: {n} objects, {} bytes of JSON each (object 0), pointer `{}`\n",
        dataset.title(),
        text.len(),
        dataset.pointer()
    );
    // Decoding cost, for reference (what the wire does before any of these).
    let texts: Vec<String> = (0..BATCH.min(n)).map(|i| dataset.json(i)).collect();
    let start = Instant::now();
    let decoded: Vec<DynamicObject> = texts.iter().map(|t| decode(t)).collect();
    let decode_us = per_op(start.elapsed(), texts.len()) / 1000.0;
    drop(decoded);
    let samples: Vec<DynamicObject> = (0..n.min(1000)).map(|i| decode(&dataset.json(i))).collect();

    let mut rows = vec![measure::<Today>(dataset, n, &samples)];
    rows.push(measure::<Tree<KeysOnly>>(dataset, n, &samples));
    let mut shared = measure::<Tree<SharedTrees>>(dataset, n, &samples);
    {
        // How many trees and keys the interner holds for this dataset.
        let mut interner = Interner::new();
        let kept: Vec<CompactObject> = samples
            .iter()
            .map(|o| CompactObject::from_object(o, &mut interner))
            .collect();
        shared.note = format!(
            "{} shared tree(s), {} keys for the first {}",
            interner.shared_trees(),
            interner.keys(),
            kept.len()
        );
    }
    rows.push(shared);
    rows.push(measure::<JsonText>(dataset, n, &samples));
    rows.push(zstd_row::<Trained>(dataset, n, &samples));
    rows.push(zstd_row::<NoDictionary>(dataset, n, &samples));
    let projection = dataset.projection();
    rows.push(measure_with::<Today>(
        dataset,
        n,
        &samples,
        Some(&projection),
    ));
    rows.push(measure_with::<Tree<SharedTrees>>(
        dataset,
        n,
        &samples,
        Some(&projection),
    ));
    print_table(&rows);
    println!(
        "\nDecoding the JSON text into a `DynamicObject` (the wire's work, for reference): {decode_us:.2} µs per object."
    );
}

/// Reads of the whole object through `CompactEntry`: a `Weak` hit (someone
/// still holds the last copy handed out) against a decode.
fn weak_cache(n: usize) {
    let mut interner = Interner::new();
    let held: Vec<Arc<DynamicObject>> = (0..n)
        .map(|i| Arc::new(decode(&Dataset::Widget.json(i))))
        .collect();
    let entries: Vec<CompactEntry> = held
        .iter()
        .map(|o| CompactEntry::new(CompactObject::from_object(o, &mut interner), Some(o)))
        .collect();
    let order = permutation(n);
    let hit_ns = time_reads(&order, 3, |i| Arc::strong_count(&entries[i].get()));
    drop(held);
    let mut misses: Vec<f64> = Vec::with_capacity(n);
    let mut kept = Vec::with_capacity(256);
    for chunk in order.chunks(256) {
        for &i in chunk {
            let start = Instant::now();
            let object = entries[i].get();
            misses.push(start.elapsed().as_secs_f64() * 1e6);
            kept.push(object);
        }
        kept.clear();
    }
    let (live0, glibc0) = (live(), glibc_in_use());
    let forgotten = entries.iter().filter(|e| e.forget_dropped()).count();
    let (live1, glibc1) = (live(), glibc_in_use());
    println!("\n### Reads of the whole object through `CompactEntry` (Widgets, {n})\n");
    println!("- `get()` while someone holds the last copy (a `Weak` upgrade): {hit_ns:.1} ns");
    println!(
        "- `get()` once nobody does (decode, remember the new `Weak`): {:.2} µs (median)",
        median(&mut misses)
    );
    println!(
        "- a dead `Weak` keeps the `Arc`'s allocation: {} B counted, {} B glibc per object freed by `forget_dropped` ({forgotten} entries); size_of CompactObject {} B, CompactEntry {} B, DynamicObject {} B",
        (live0 - live1) / n.max(1) as isize,
        (glibc0 - glibc1) / n.max(1) as isize,
        std::mem::size_of::<CompactObject>(),
        std::mem::size_of::<CompactEntry>(),
        std::mem::size_of::<DynamicObject>(),
    );
}

/// The same conversions on one Widget in a hot loop (no cache misses): what
/// each costs in itself, best of 5 rounds.
fn hot_loop() {
    let text = Dataset::Widget.json(13);
    let object = decode(&text);
    let mut interner = Interner::new();
    // Built twice: a tree is shared from its second sighting, as it is for
    // every object of a store but the first with it.
    let _first = CompactObject::from_object(&object, &mut interner);
    let compact = CompactObject::from_object(&object, &mut interner);
    let mut plain = Interner::without_shared_trees();
    let unshared = CompactObject::from_object(&object, &mut plain);
    let rounds = 5;
    let n = 2000;
    let time = |f: &mut dyn FnMut() -> usize| {
        let mut best = f64::MAX;
        for _ in 0..rounds {
            let start = Instant::now();
            let mut sum = 0usize;
            for _ in 0..n {
                sum = sum.wrapping_add(f());
            }
            black_box(sum);
            best = best.min(per_op(start.elapsed(), n));
        }
        best
    };
    let mut out = Vec::with_capacity(4096);
    println!("\n### One Widget in a hot loop (ns per call, best of {rounds} × {n})\n");
    println!("| operation | ns |\n|---|--:|");
    let rows: Vec<(&str, f64)> = vec![
        (
            "decode JSON text → DynamicObject (and drop it)",
            time(&mut || {
                decode(black_box(&text))
                    .metadata
                    .name
                    .map_or(0, |n| n.len())
            }),
        ),
        (
            "CompactObject::from_json, shared trees (and drop it)",
            time(&mut || {
                CompactObject::from_json(black_box(&text), &mut interner)
                    .and_then(|c| c.name().map(str::len))
                    .unwrap_or(0)
            }),
        ),
        (
            "DynamicObject clone (and drop it)",
            time(&mut || {
                black_box(&object)
                    .clone()
                    .metadata
                    .name
                    .map_or(0, |n| n.len())
            }),
        ),
        (
            "CompactObject::from_object, shared trees (and drop it)",
            time(&mut || {
                CompactObject::from_object(black_box(&object), &mut interner)
                    .name()
                    .map_or(0, str::len)
            }),
        ),
        (
            "CompactObject::from_object, keys only (and drop it)",
            time(&mut || {
                CompactObject::from_object(black_box(&object), &mut plain)
                    .name()
                    .map_or(0, str::len)
            }),
        ),
        (
            "CompactObject::to_object, shared trees (and drop it)",
            time(&mut || {
                black_box(&compact)
                    .to_object()
                    .metadata
                    .name
                    .map_or(0, |n| n.len())
            }),
        ),
        (
            "CompactObject::to_object, keys only (and drop it)",
            time(&mut || {
                black_box(&unshared)
                    .to_object()
                    .metadata
                    .name
                    .map_or(0, |n| n.len())
            }),
        ),
        (
            "serde_json::to_writer(DynamicObject)",
            time(&mut || {
                out.clear();
                serde_json::to_writer(&mut out, black_box(&object)).expect("JSON");
                out.len()
            }),
        ),
        (
            "CompactObject::write_json",
            time(&mut || {
                out.clear();
                black_box(&compact).write_json(&mut out).expect("JSON");
                out.len()
            }),
        ),
        (
            "DynamicObject metadata.name",
            time(&mut || black_box(&object).metadata.name.as_deref().map_or(0, touch)),
        ),
        (
            "CompactObject::name",
            time(&mut || black_box(&compact).name().map_or(0, touch)),
        ),
        (
            "DynamicObject metadata.namespace",
            time(&mut || {
                black_box(&object)
                    .metadata
                    .namespace
                    .as_deref()
                    .map_or(0, touch)
            }),
        ),
        (
            "CompactObject::namespace",
            time(&mut || black_box(&compact).namespace().map_or(0, touch)),
        ),
        (
            "DynamicObject metadata.labels[\"app\"]",
            time(&mut || {
                black_box(&object)
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("app"))
                    .map_or(0, |v| touch(v))
            }),
        ),
        (
            "CompactObject::labels().get(\"app\")",
            time(&mut || black_box(&compact).labels().get("app").map_or(0, touch)),
        ),
        (
            "DynamicObject metadata.resourceVersion",
            time(&mut || {
                black_box(&object)
                    .metadata
                    .resource_version
                    .as_deref()
                    .map_or(0, touch)
            }),
        ),
        (
            "CompactObject::resource_version",
            time(&mut || black_box(&compact).resource_version().map_or(0, touch)),
        ),
        (
            "DynamicObject data.pointer(\"/spec/nodeName\")",
            time(&mut || {
                black_box(&object)
                    .data
                    .pointer("/spec/nodeName")
                    .and_then(Value::as_str)
                    .map_or(0, str::len)
            }),
        ),
        (
            "CompactObject::pointer(\"/spec/nodeName\")",
            time(&mut || {
                black_box(&compact)
                    .pointer("/spec/nodeName")
                    .and_then(|v| v.as_str())
                    .map_or(0, str::len)
            }),
        ),
    ];
    for (what, ns) in rows {
        println!("| {what} | {ns:.1} |");
    }
}

/// `-- --decode`: only `CompactObject::to_object` of the benchmark's Widget
/// (`bench/peers/data/widget.json`): the median (p50) and p10 of per-call
/// times over batches of 20 calls (robust to a busy machine), with the
/// allocation calls per call. "and drop it" as in the hot-loop table;
/// "kept" times the decodes only, dropping them after the clock stops.
/// `DynamicObject::clone` builds the same object with no decoding at all.
fn decode_only() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/bench/peers/data/widget.json"
    ))
    .expect("bench/peers/data/widget.json");
    let object = decode(&text);
    let mut interner = Interner::new();
    // Built twice: a tree is shared from its second sighting.
    let _first = CompactObject::from_object(&object, &mut interner);
    let shared = CompactObject::from_object(&object, &mut interner);
    let mut plain = Interner::without_shared_trees();
    let unshared = CompactObject::from_object(&object, &mut plain);
    assert!(shared.to_object() == object && unshared.to_object() == object);
    println!("\n### CompactObject::to_object of bench/peers/data/widget.json\n");
    println!("| operation | p50 ns | p10 ns | allocations per call |\n|---|--:|--:|--:|");
    let rows: [(&str, &dyn Fn() -> DynamicObject); 3] = [
        ("CompactObject::to_object, shared trees", &|| {
            black_box(&shared).to_object()
        }),
        ("CompactObject::to_object, keys only", &|| {
            black_box(&unshared).to_object()
        }),
        ("DynamicObject clone", &|| black_box(&object).clone()),
    ];
    for (what, f) in rows {
        for keep in [false, true] {
            let (p50, p10) = batch_percentiles(f, keep);
            CALLS.store(0, Ordering::Relaxed);
            COUNT_CALLS.store(true, Ordering::Relaxed);
            drop(black_box(f()));
            COUNT_CALLS.store(false, Ordering::Relaxed);
            let calls = CALLS.load(Ordering::Relaxed);
            let how = if keep { "kept" } else { "and drop it" };
            println!("| {what} ({how}) | {p50:.0} | {p10:.0} | {calls} |");
        }
    }
}

/// p50 and p10 of the per-call time of `f` over batches of calls; with
/// `keep`, the objects are dropped after each batch's clock stops.
fn batch_percentiles(f: &dyn Fn() -> DynamicObject, keep: bool) -> (f64, f64) {
    let (batches, n) = (2000, 20);
    let mut times = Vec::with_capacity(batches);
    let mut kept = Vec::with_capacity(n);
    for _ in 0..batches {
        let start = Instant::now();
        for _ in 0..n {
            let o = f();
            if keep {
                kept.push(o);
            } else {
                black_box(o.metadata.name.map_or(0, |s| s.len()));
            }
        }
        times.push(per_op(start.elapsed(), n));
        kept.clear();
    }
    times.sort_by(f64::total_cmp);
    (times[batches / 2], times[batches / 10])
}

fn main() {
    if std::env::args().any(|a| a == "--decode") {
        decode_only();
        return;
    }
    if std::env::args().any(|a| a == "--hot") {
        hot_loop();
        return;
    }
    let quick = std::env::args().any(|a| a == "--quick");
    let (widgets, config_maps) = if quick {
        (5_000, 2_000)
    } else {
        (50_000, 10_000)
    };
    println!(
        "## Compact cache candidates (`cargo bench --bench compact{}`)",
        if quick { " -- --quick" } else { "" }
    );
    run(Dataset::Widget, widgets);
    run(Dataset::WidgetLastApplied, widgets);
    run(Dataset::ConfigMap, config_maps);
    weak_cache(widgets);
    hot_loop();
}
