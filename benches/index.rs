//! Cost of indexing one pod-sized object (~5 KB of JSON).
//!
//! Run with `cargo bench --bench index`.
//!
//! Groups, each with 1, 3 and 10 index functions evaluated on one object
//! through one `IndexInput` (as the store does):
//!
//! - `field_paths`: plain field paths (`spec.nodeName`, `metadata.labels.app`),
//!   evaluated on the `DynamicObject` without conversion;
//! - `field_paths_interpreted`: the same paths written `@.spec.nodeName`, which
//!   the fast path does not recognise: one conversion of the object, then the
//!   `jmespath` interpreter;
//! - `field_paths_closure`: hand-written closures doing the same work;
//! - `general`: projections, filters and functions (`spec.containers[].image`,
//!   `metadata.ownerReferences[?controller].uid`), one conversion shared;
//! - `general_search_per_index`: the same through `jmespath`'s `search`, which
//!   converts the object again for every expression (what we avoid);
//! - `general_closure`: hand-written closures doing the same work.
//!
//! `store_upsert` updates an existing object in a store of 1000 pods with the
//! namespace index and 3 more (two field paths, one projection).
//!
//! `store_by_index` queries a store of 50,000 pods spread over 1000 nodes (50
//! objects a call), one node after another: `Store::by_index` and, for
//! comparison, `Store::index_keys`. The store is built once, and only when
//! one of these two is selected (`cargo bench --bench index -- by_index`).

use std::cell::OnceCell;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use kube_core::DynamicObject;
use kube_dynamic_informer::cache::{IndexFn, IndexInput};
use kube_dynamic_informer::cache::{Store, StoreWriter};
use serde_json::{Value, json};

fn pod(namespace: &str, name: &str, resource_version: &str, node: &str) -> DynamicObject {
    let managed = |manager: &str, operation: &str, subresource: Option<&str>| {
        json!({
            "manager": manager, "operation": operation, "apiVersion": "v1",
            "time": "2024-05-01T10:00:00Z", "fieldsType": "FieldsV1", "subresource": subresource,
            "fieldsV1": {
                "f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}},
                    "f:ownerReferences": {".": {}, "k:{\"uid\":\"5e1f0a4c-2b7d-4b8e-9a51-0c6f1d2e3a4b\"}": {}}},
                "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:imagePullPolicy": {},
                    "f:name": {}, "f:ports": {".": {}, "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {},
                    "f:containerPort": {}, "f:protocol": {}}}, "f:resources": {".": {}, "f:limits": {".": {}, "f:memory": {}},
                    "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}}}},
                    "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {}, "f:schedulerName": {}}
            }
        })
    };
    let value = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": "web-7d9c5b8f4-",
            "namespace": namespace,
            "uid": "9b2f4a6e-3c1d-4e8f-a7b5-2d6c8e0f1a3b",
            "resourceVersion": resource_version,
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": {
                "app": "web",
                "app.kubernetes.io/name": "web",
                "app.kubernetes.io/part-of": "shop",
                "pod-template-hash": "7d9c5b8f4",
                "tier": "front"
            },
            "annotations": {
                "kubectl.kubernetes.io/restartedAt": "2024-05-01T09:59:00Z",
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "9090"
            },
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9c5b8f4",
                "uid": "5e1f0a4c-2b7d-4b8e-9a51-0c6f1d2e3a4b", "controller": true, "blockOwnerDeletion": true
            }],
            "managedFields": [
                managed("kube-controller-manager", "Update", None),
                managed("kubelet", "Update", Some("status"))
            ]
        },
        "spec": {
            "nodeName": node,
            "serviceAccountName": "web",
            "schedulerName": "default-scheduler",
            "restartPolicy": "Always",
            "dnsPolicy": "ClusterFirst",
            "terminationGracePeriodSeconds": 30,
            "containers": [
                {
                    "name": "web", "image": "registry.example.com/shop/web:1.42.0", "imagePullPolicy": "IfNotPresent",
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}, {"containerPort": 9090, "name": "metrics", "protocol": "TCP"}],
                    "env": [{"name": "LOG_LEVEL", "value": "info"}, {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                    "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
                    "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10},
                    "volumeMounts": [{"name": "config", "mountPath": "/etc/web"}, {"name": "kube-api-access-x7k2p", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}]
                },
                {
                    "name": "envoy", "image": "envoyproxy/envoy:v1.30.1", "imagePullPolicy": "IfNotPresent",
                    "ports": [{"containerPort": 15001, "protocol": "TCP"}],
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
                    "volumeMounts": [{"name": "kube-api-access-x7k2p", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}]
                }
            ],
            "volumes": [
                {"name": "config", "configMap": {"name": "web-config", "defaultMode": 420}},
                {"name": "kube-api-access-x7k2p", "projected": {"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}
                ]}}
            ],
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            ]
        },
        "status": {
            "phase": "Running",
            "qosClass": "Burstable",
            "hostIP": "10.0.3.17",
            "podIP": "10.244.3.52",
            "podIPs": [{"ip": "10.244.3.52"}],
            "startTime": "2024-05-01T10:00:01Z",
            "conditions": [
                {"type": "Initialized", "status": "True", "lastTransitionTime": "2024-05-01T10:00:01Z"},
                {"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T10:00:09Z"},
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2024-05-01T10:00:09Z"},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z"}
            ],
            "containerStatuses": [
                {"name": "web", "ready": true, "restartCount": 0, "started": true,
                 "image": "registry.example.com/shop/web:1.42.0", "imageID": "registry.example.com/shop/web@sha256:3f1c9d2b7e",
                 "containerID": "containerd://a1b2c3d4e5f6", "state": {"running": {"startedAt": "2024-05-01T10:00:03Z"}}},
                {"name": "envoy", "ready": true, "restartCount": 1, "started": true,
                 "image": "docker.io/envoyproxy/envoy:v1.30.1", "imageID": "docker.io/envoyproxy/envoy@sha256:9e8d7c6b5a",
                 "containerID": "containerd://f6e5d4c3b2a1", "state": {"running": {"startedAt": "2024-05-01T10:00:04Z"}}}
            ]
        }
    });
    serde_json::from_value(value).expect("valid pod")
}

const FIELD_PATHS: [&str; 10] = [
    "spec.nodeName",
    "metadata.labels.app",
    "status.phase",
    "metadata.labels.\"app.kubernetes.io/name\"",
    "spec.serviceAccountName",
    "metadata.annotations.\"prometheus.io/port\"",
    "status.podIP",
    "spec.schedulerName",
    "metadata.uid",
    "status.qosClass",
];

type Closure = fn(&DynamicObject) -> Vec<String>;

fn string_at(value: &Value, pointer: &str) -> Vec<String> {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .into_iter()
        .collect()
}

fn label(obj: &DynamicObject, key: &str) -> Vec<String> {
    obj.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(key))
        .cloned()
        .into_iter()
        .collect()
}

const FIELD_CLOSURES: [Closure; 10] = [
    |o| string_at(&o.data, "/spec/nodeName"),
    |o| label(o, "app"),
    |o| string_at(&o.data, "/status/phase"),
    |o| label(o, "app.kubernetes.io/name"),
    |o| string_at(&o.data, "/spec/serviceAccountName"),
    |o| {
        o.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("prometheus.io/port"))
            .cloned()
            .into_iter()
            .collect()
    },
    |o| string_at(&o.data, "/status/podIP"),
    |o| string_at(&o.data, "/spec/schedulerName"),
    |o| o.metadata.uid.clone().into_iter().collect(),
    |o| string_at(&o.data, "/status/qosClass"),
];

const GENERAL: [&str; 10] = [
    "spec.containers[].image",
    "metadata.ownerReferences[?controller].uid",
    "keys(metadata.labels)",
    "spec.volumes[].configMap.name",
    "status.containerStatuses[?ready].name",
    "spec.containers[].ports[].containerPort",
    "status.conditions[?status=='True'].type",
    "spec.tolerations[].key",
    "join('/', [metadata.namespace, spec.nodeName])",
    "spec.containers[].resources.requests.cpu",
];

fn each<'a>(value: &'a Value, pointer: &str) -> impl Iterator<Item = &'a Value> {
    value
        .pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn strings<'a>(values: impl Iterator<Item = &'a Value>, pointer: &str) -> Vec<String> {
    values
        .filter_map(|v| v.pointer(pointer)?.as_str().map(str::to_owned))
        .collect()
}

const GENERAL_CLOSURES: [Closure; 10] = [
    |o| strings(each(&o.data, "/spec/containers"), "/image"),
    |o| {
        o.metadata
            .owner_references
            .iter()
            .flatten()
            .filter(|r| r.controller == Some(true))
            .map(|r| r.uid.clone())
            .collect()
    },
    |o| {
        o.metadata
            .labels
            .iter()
            .flat_map(|l| l.keys().cloned())
            .collect()
    },
    |o| strings(each(&o.data, "/spec/volumes"), "/configMap/name"),
    |o| {
        strings(
            each(&o.data, "/status/containerStatuses").filter(|s| s["ready"] == true),
            "/name",
        )
    },
    |o| {
        each(&o.data, "/spec/containers")
            .flat_map(|c| c["ports"].as_array().into_iter().flatten())
            .filter_map(|p| p.get("containerPort").map(Value::to_string))
            .collect()
    },
    |o| {
        strings(
            each(&o.data, "/status/conditions").filter(|c| c["status"] == "True"),
            "/type",
        )
    },
    |o| strings(each(&o.data, "/spec/tolerations"), "/key"),
    |o| {
        let ns = o.metadata.namespace.as_deref().unwrap_or_default();
        let node = o
            .data
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or_default();
        vec![format!("{ns}/{node}")]
    },
    |o| strings(each(&o.data, "/spec/containers"), "/resources/requests/cpu"),
];

fn compile(expressions: &[&str]) -> Vec<IndexFn> {
    expressions
        .iter()
        .map(|e| IndexFn::jmespath(e, e).expect("compiles"))
        .collect()
}

fn run_all(functions: &[IndexFn], obj: &DynamicObject) -> usize {
    let input = IndexInput::new(obj);
    functions
        .iter()
        .map(|f| f.evaluate("bench", &input).expect("evaluates").len())
        .sum()
}

fn index_one_object(c: &mut Criterion) {
    let obj = pod("shop", "web-7d9c5b8f4-x2x9q", "1", "node-3");
    eprintln!(
        "pod JSON size: {} bytes",
        serde_json::to_string(&obj).unwrap().len()
    );

    // The closures must compute what the expressions compute.
    for (expressions, closures) in [
        (&FIELD_PATHS, &FIELD_CLOSURES),
        (&GENERAL, &GENERAL_CLOSURES),
    ] {
        for (expression, closure) in expressions.iter().zip(closures) {
            let input = IndexInput::new(&obj);
            let from_expression = IndexFn::jmespath("check", expression)
                .unwrap()
                .evaluate("check", &input)
                .unwrap();
            assert_eq!(from_expression, closure(&obj), "{expression}");
        }
    }

    let interpreted: Vec<String> = FIELD_PATHS.iter().map(|p| format!("@.{p}")).collect();
    let interpreted: Vec<&str> = interpreted.iter().map(String::as_str).collect();

    let sets: [(&str, Vec<IndexFn>); 5] = [
        ("field_paths", compile(&FIELD_PATHS)),
        ("field_paths_interpreted", compile(&interpreted)),
        (
            "field_paths_closure",
            FIELD_CLOSURES
                .iter()
                .map(|f| IndexFn::closure_infallible(*f))
                .collect(),
        ),
        ("general", compile(&GENERAL)),
        (
            "general_closure",
            GENERAL_CLOSURES
                .iter()
                .map(|f| IndexFn::closure_infallible(*f))
                .collect(),
        ),
    ];
    let mut group = c.benchmark_group("index_one_object");
    for (name, functions) in &sets {
        for n in [1, 3, 10] {
            group.bench_with_input(
                BenchmarkId::new(*name, n),
                &functions[..n],
                |b, functions| b.iter(|| run_all(functions, black_box(&obj))),
            );
        }
    }

    let searched: Vec<jmespath::Expression<'static>> = GENERAL
        .iter()
        .map(|e| jmespath::compile(e).expect("compiles"))
        .collect();
    for n in [1, 3, 10] {
        group.bench_with_input(
            BenchmarkId::new("general_search_per_index", n),
            &searched[..n],
            |b, exprs| {
                b.iter(|| {
                    exprs
                        .iter()
                        .map(|e| {
                            e.search(black_box(&obj))
                                .expect("evaluates")
                                .as_array()
                                .map_or(1, Vec::len)
                        })
                        .sum::<usize>()
                })
            },
        );
    }
    group.finish();
}

fn store_upsert(c: &mut Criterion) {
    let mut writer = StoreWriter::new();
    let store = writer.reader();
    store
        .add_index(
            "by-node",
            IndexFn::jmespath("by-node", "spec.nodeName").unwrap(),
        )
        .unwrap();
    store
        .add_index(
            "by-app",
            IndexFn::jmespath("by-app", "metadata.labels.app").unwrap(),
        )
        .unwrap();
    store
        .add_index(
            "by-image",
            IndexFn::jmespath("by-image", "spec.containers[].image").unwrap(),
        )
        .unwrap();
    for i in 0..1000 {
        writer.upsert(Arc::new(pod(
            &format!("ns-{}", i % 10),
            &format!("pod-{i}"),
            "1",
            &format!("node-{}", i % 20),
        )));
    }

    let mut group = c.benchmark_group("store_upsert");
    // A status-style update: new resourceVersion, same index values.
    let versions = [
        Arc::new(pod("ns-1", "pod-1", "2", "node-1")),
        Arc::new(pod("ns-1", "pod-1", "3", "node-1")),
    ];
    let mut i = 0;
    group.bench_function("update_same_values_3_indexes", |b| {
        b.iter(|| {
            i += 1;
            writer.upsert(versions[i % 2].clone())
        })
    });
    // The object moves between nodes: its by-node entry moves each time.
    let versions = [
        Arc::new(pod("ns-1", "pod-1", "4", "node-1")),
        Arc::new(pod("ns-1", "pod-1", "5", "node-2")),
    ];
    group.bench_function("update_moving_values_3_indexes", |b| {
        b.iter(|| {
            i += 1;
            writer.upsert(versions[i % 2].clone())
        })
    });
    group.finish();
    assert_eq!(store.len(), 1000);
}

const BY_INDEX_PODS: u32 = 50_000;
const BY_INDEX_NODES: u32 = 1000;

/// A store of `BY_INDEX_PODS` pods with a `by-node` index, and the writer
/// that must outlive the reads.
fn by_index_store() -> (StoreWriter, Store) {
    let mut writer = StoreWriter::new();
    let store = writer.reader();
    store
        .add_index(
            "by-node",
            IndexFn::jmespath("by-node", "spec.nodeName").unwrap(),
        )
        .unwrap();
    let template = pod("ns-0", "pod-0", "1", "node-0");
    for i in 0..BY_INDEX_PODS {
        let mut obj = template.clone();
        obj.metadata.name = Some(format!("web-{i:06}"));
        obj.metadata.namespace = Some(format!("ns-{}", i % 10));
        obj.data["spec"]["nodeName"] = json!(format!("node-{}", i % BY_INDEX_NODES));
        writer.upsert(Arc::new(obj));
    }
    assert_eq!(store.len(), BY_INDEX_PODS as usize);
    (writer, store)
}

fn store_by_index(c: &mut Criterion) {
    let built = OnceCell::new();
    let nodes: Vec<String> = (0..BY_INDEX_NODES).map(|n| format!("node-{n}")).collect();
    let per_node = (BY_INDEX_PODS / BY_INDEX_NODES) as usize;
    let mut group = c.benchmark_group("store_by_index");
    let mut i = 0;
    group.bench_function("by_index_50k_50_per_call", |b| {
        let (_, store) = built.get_or_init(by_index_store);
        assert_eq!(store.by_index("by-node", "node-0").unwrap().len(), per_node);
        b.iter(|| {
            i = (i + 1) % nodes.len();
            store.by_index("by-node", black_box(&nodes[i])).unwrap()
        })
    });
    group.bench_function("index_keys_50k_50_per_call", |b| {
        let (_, store) = built.get_or_init(by_index_store);
        b.iter(|| {
            i = (i + 1) % nodes.len();
            store.index_keys("by-node", black_box(&nodes[i])).unwrap()
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50);
    targets = index_one_object, store_upsert, store_by_index
}
criterion_main!(benches);
