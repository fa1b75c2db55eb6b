//! The tables the API server prints for common built-in kinds (its
//! `pkg/printers/internalversion`): the columns as it defines them, word
//! for word, and each object's cells as it computes them. The API server
//! always computes the wide columns (priority 1); `kubectl get` shows them
//! with `-o wide`. A built-in kind not listed here gets the default table.

use std::collections::BTreeSet;

use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

use crate::vocabulary::selector::{LabelSelector, Selector};

use super::format::age;
use super::{Column, Row, pod};

/// A built-in kind's table: its columns and how each object fills them.
pub(super) struct Kind {
    pub(super) group: &'static str,
    pub(super) plural: &'static str,
    pub(super) columns: &'static [Column],
    pub(super) cells: fn(&Value, Timestamp) -> Row,
}

/// The kind `group` and `plural` name, if its table is known.
pub(super) fn kind(group: &str, plural: &str) -> Option<&'static Kind> {
    KINDS
        .iter()
        .find(|k| k.group == group && k.plural == plural)
}

static KINDS: &[Kind] = &[
    Kind {
        group: "",
        plural: "pods",
        columns: POD,
        cells: pod::cells,
    },
    Kind {
        group: "",
        plural: "configmaps",
        columns: CONFIG_MAP,
        cells: config_map,
    },
    Kind {
        group: "",
        plural: "secrets",
        columns: SECRET,
        cells: secret,
    },
    Kind {
        group: "",
        plural: "namespaces",
        columns: NAMESPACE,
        cells: namespace,
    },
    Kind {
        group: "",
        plural: "services",
        columns: SERVICE,
        cells: service,
    },
    Kind {
        group: "",
        plural: "serviceaccounts",
        columns: SERVICE_ACCOUNT,
        cells: service_account,
    },
    Kind {
        group: "",
        plural: "nodes",
        columns: NODE,
        cells: node,
    },
    Kind {
        group: "",
        plural: "podtemplates",
        columns: POD_TEMPLATE,
        cells: pod_template,
    },
    Kind {
        group: "apps",
        plural: "deployments",
        columns: DEPLOYMENT,
        cells: deployment,
    },
    Kind {
        group: "apps",
        plural: "replicasets",
        columns: REPLICA_SET,
        cells: replica_set,
    },
    Kind {
        group: "apps",
        plural: "statefulsets",
        columns: STATEFUL_SET,
        cells: stateful_set,
    },
    Kind {
        group: "apps",
        plural: "daemonsets",
        columns: DAEMON_SET,
        cells: daemon_set,
    },
];

/// The `Name` column every table starts with.
pub(super) const NAME: Column = Column {
    name: "Name",
    kind: "string",
    format: "name",
    priority: 0,
    description: "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
};

/// What `metadata.creationTimestamp` is (the `Age` and `Created At`
/// columns).
pub(super) const CREATION_TIMESTAMP: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

const AGE: Column = string("Age", 0, CREATION_TIMESTAMP);
const CONTAINERS: Column = string("Containers", 1, "Names of each container in the template.");
const IMAGES: Column = string(
    "Images",
    1,
    "Images referenced by each container in the template.",
);

const fn string(name: &'static str, priority: u8, description: &'static str) -> Column {
    Column {
        name,
        kind: "string",
        format: "",
        priority,
        description,
    }
}

const fn integer(name: &'static str, description: &'static str) -> Column {
    Column {
        name,
        kind: "integer",
        format: "",
        priority: 0,
        description,
    }
}

const POD: &[Column] = &[
    NAME,
    string(
        "Ready",
        0,
        "The aggregate readiness state of this pod for accepting traffic.",
    ),
    string(
        "Status",
        0,
        "The aggregate status of the containers in this pod.",
    ),
    string(
        "Restarts",
        0,
        "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
    ),
    AGE,
    string(
        "IP",
        1,
        "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
    ),
    string(
        "Node",
        1,
        "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename",
    ),
    string(
        "Nominated Node",
        1,
        "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.",
    ),
    string(
        "Readiness Gates",
        1,
        "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
    ),
];

const CONFIG_MAP: &[Column] = &[
    NAME,
    string(
        "Data",
        0,
        "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.",
    ),
    AGE,
];

const SECRET: &[Column] = &[
    NAME,
    string(
        "Type",
        0,
        "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types",
    ),
    string(
        "Data",
        0,
        "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4",
    ),
    AGE,
];

const NAMESPACE: &[Column] = &[
    NAME,
    string("Status", 0, "The status of the namespace"),
    AGE,
];

const SERVICE: &[Column] = &[
    NAME,
    string(
        "Type",
        0,
        "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types",
    ),
    string(
        "Cluster-IP",
        0,
        "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies",
    ),
    string(
        "External-IP",
        0,
        "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system.",
    ),
    string(
        "Port(s)",
        0,
        "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies",
    ),
    AGE,
    string(
        "Selector",
        1,
        "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/",
    ),
];

const SERVICE_ACCOUNT: &[Column] = &[NAME, AGE];

/// What the node's addresses are (both IP columns say the same).
const NODE_ADDRESSES: &str = "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).";

const NODE: &[Column] = &[
    NAME,
    string("Status", 0, "The status of the node"),
    string("Roles", 0, "The roles of the node"),
    AGE,
    string("Version", 0, "Kubelet Version reported by the node."),
    string("Internal-IP", 1, NODE_ADDRESSES),
    string("External-IP", 1, NODE_ADDRESSES),
    string(
        "OS-Image",
        1,
        "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
    ),
    string(
        "Kernel-Version",
        1,
        "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
    ),
    string(
        "Container-Runtime",
        1,
        "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
    ),
];

const POD_TEMPLATE: &[Column] = &[
    NAME,
    string("Containers", 0, "Names of each container in the template."),
    string(
        "Images",
        0,
        "Images referenced by each container in the template.",
    ),
    string("Pod Labels", 0, "The labels for the pod template."),
];

const DEPLOYMENT: &[Column] = &[
    NAME,
    string("Ready", 0, "Number of the pod with ready state"),
    string(
        "Up-to-date",
        0,
        "Total number of non-terminating pods targeted by this deployment that have the desired template spec.",
    ),
    string(
        "Available",
        0,
        "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    string(
        "Selector",
        1,
        "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment. It must match the pod template's labels.",
    ),
];

const REPLICA_SET: &[Column] = &[
    NAME,
    integer(
        "Desired",
        "Replicas is the number of desired pods. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset",
    ),
    integer(
        "Current",
        "Replicas is the most recently observed number of non-terminating pods. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset",
    ),
    integer(
        "Ready",
        "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    string(
        "Selector",
        1,
        "Selector is a label query over pods that should match the replica count. Label keys and values that must match in order to be controlled by this replica set. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
    ),
];

const STATEFUL_SET: &[Column] = &[
    NAME,
    string("Ready", 0, "Number of the pod with ready state"),
    AGE,
    CONTAINERS,
    IMAGES,
];

const DAEMON_SET: &[Column] = &[
    NAME,
    integer(
        "Desired",
        "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/",
    ),
    integer(
        "Current",
        "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/",
    ),
    integer(
        "Ready",
        "numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition.",
    ),
    integer(
        "Up-to-date",
        "The total number of nodes that are running updated daemon pod",
    ),
    integer(
        "Available",
        "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)",
    ),
    string(
        "Node Selector",
        0,
        "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    string(
        "Selector",
        1,
        "A label query over pods that are managed by the daemon set. Must match in order to be controlled. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
    ),
];

/// The string at `pointer`; empty when absent, as Go's zero value.
pub(super) fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The integer at `pointer`; zero when absent.
pub(super) fn number(object: &Value, pointer: &str) -> i64 {
    object
        .pointer(pointer)
        .and_then(Value::as_i64)
        .unwrap_or_default()
}

/// How many entries the map or list at `pointer` has.
fn count(object: &Value, pointer: &str) -> i64 {
    let len = match object.pointer(pointer) {
        Some(Value::Object(map)) => map.len(),
        Some(Value::Array(items)) => items.len(),
        _ => 0,
    };
    i64::try_from(len).unwrap_or(i64::MAX)
}

/// The items of the list at `pointer`.
pub(super) fn items<'a>(object: &'a Value, pointer: &str) -> &'a [Value] {
    object
        .pointer(pointer)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn name(object: &Value) -> Value {
    Value::from(text(object, "/metadata/name"))
}

pub(super) fn created(object: &Value, now: Timestamp) -> Value {
    Value::from(age(object.pointer("/metadata/creationTimestamp"), now))
}

/// `labels.FormatLabels`: `k=v,k2=v2` sorted, `<none>` when empty.
fn format_labels(labels: Option<&Value>) -> String {
    let pairs: Vec<String> = labels
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    if pairs.is_empty() {
        "<none>".to_owned()
    } else {
        pairs.join(",")
    }
}

/// A `metav1.LabelSelector` as a selector string; `Err` when it is not a
/// valid selector.
fn selector_string(selector: Option<&Value>) -> Result<String, ()> {
    let Some(selector) = selector.filter(|s| !s.is_null()) else {
        return Ok(String::new());
    };
    let spec: LabelSelector = serde_json::from_value(selector.clone()).map_err(|_| ())?;
    Selector::from_label_selector(&spec)
        .map(|s| s.to_string())
        .map_err(|_| ())
}

/// `metav1.FormatLabelSelector`: `<none>` when empty, `<error>` when
/// invalid.
fn format_label_selector(selector: Option<&Value>) -> String {
    match selector_string(selector) {
        Ok(s) if s.is_empty() => "<none>".to_owned(),
        Ok(s) => s,
        Err(()) => "<error>".to_owned(),
    }
}

/// The names and images of the containers at `pointer`, each joined with
/// commas (`layoutContainerCells`).
fn containers(object: &Value, pointer: &str) -> (Value, Value) {
    let containers = items(object, pointer);
    let names: Vec<&str> = containers.iter().map(|c| text(c, "/name")).collect();
    let images: Vec<&str> = containers.iter().map(|c| text(c, "/image")).collect();
    (names.join(",").into(), images.join(",").into())
}

fn config_map(object: &Value, now: Timestamp) -> Row {
    let data = count(object, "/data") + count(object, "/binaryData");
    Row::of(vec![name(object), data.into(), created(object, now)])
}

fn secret(object: &Value, now: Timestamp) -> Row {
    Row::of(vec![
        name(object),
        text(object, "/type").into(),
        count(object, "/data").into(),
        created(object, now),
    ])
}

fn namespace(object: &Value, now: Timestamp) -> Row {
    Row::of(vec![
        name(object),
        text(object, "/status/phase").into(),
        created(object, now),
    ])
}

fn service_account(object: &Value, now: Timestamp) -> Row {
    Row::of(vec![name(object), created(object, now)])
}

fn service(object: &Value, now: Timestamp) -> Row {
    let cluster_ip = items(object, "/spec/clusterIPs")
        .first()
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    let ports: Vec<String> = items(object, "/spec/ports")
        .iter()
        .map(|p| {
            let (port, node_port) = (number(p, "/port"), number(p, "/nodePort"));
            let protocol = text(p, "/protocol");
            if node_port > 0 {
                format!("{port}:{node_port}/{protocol}")
            } else {
                format!("{port}/{protocol}")
            }
        })
        .collect();
    let ports = if ports.is_empty() {
        "<none>".to_owned()
    } else {
        ports.join(",")
    };
    Row::of(vec![
        name(object),
        text(object, "/spec/type").into(),
        cluster_ip.into(),
        external_ip(object).into(),
        ports.into(),
        created(object, now),
        format_labels(object.pointer("/spec/selector")).into(),
    ])
}

/// A Service's external addresses, by its type (`getServiceExternalIP`,
/// wide: never clipped).
fn external_ip(service: &Value) -> String {
    let external: Vec<&str> = items(service, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    match text(service, "/spec/type") {
        "ClusterIP" | "NodePort" if external.is_empty() => "<none>".to_owned(),
        "ClusterIP" | "NodePort" => external.join(","),
        "LoadBalancer" => {
            let balancers: BTreeSet<&str> = items(service, "/status/loadBalancer/ingress")
                .iter()
                .map(|i| match text(i, "/ip") {
                    "" => text(i, "/hostname"),
                    ip => ip,
                })
                .filter(|address| !address.is_empty())
                .collect();
            let mut all: Vec<&str> = balancers.into_iter().collect();
            all.extend(external);
            if all.is_empty() {
                "<pending>".to_owned()
            } else {
                all.join(",")
            }
        }
        "ExternalName" => text(service, "/spec/externalName").to_owned(),
        _ => "<unknown>".to_owned(),
    }
}

fn node(object: &Value, now: Timestamp) -> Row {
    // The last condition of a type counts, as in the printer's map.
    let ready = items(object, "/status/conditions")
        .iter()
        .rev()
        .find(|c| text(c, "/type") == "Ready");
    let mut status = vec![match ready {
        Some(c) if text(c, "/status") == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if object
        .pointer("/spec/unschedulable")
        .and_then(Value::as_bool)
        .unwrap_or(false)
    {
        status.push("SchedulingDisabled");
    }
    let roles: BTreeSet<&str> = object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(key, value)| {
            if let Some(role) = key.strip_prefix("node-role.kubernetes.io/") {
                (!role.is_empty()).then_some(role)
            } else if key == "kubernetes.io/role" {
                value.as_str().filter(|v| !v.is_empty())
            } else {
                None
            }
        })
        .collect();
    let roles = if roles.is_empty() {
        "<none>".to_owned()
    } else {
        roles.into_iter().collect::<Vec<_>>().join(",")
    };
    let address = |kind: &str| -> Value {
        items(object, "/status/addresses")
            .iter()
            .find(|a| text(a, "/type") == kind)
            .map_or("<none>", |a| text(a, "/address"))
            .into()
    };
    let info = |field: &str| -> Value {
        match text(object, &format!("/status/nodeInfo/{field}")) {
            "" => "<unknown>".into(),
            value => value.into(),
        }
    };
    Row::of(vec![
        name(object),
        status.join(",").into(),
        roles.into(),
        created(object, now),
        text(object, "/status/nodeInfo/kubeletVersion").into(),
        address("InternalIP"),
        address("ExternalIP"),
        info("osImage"),
        info("kernelVersion"),
        info("containerRuntimeVersion"),
    ])
}

fn pod_template(object: &Value, _now: Timestamp) -> Row {
    let (names, images) = containers(object, "/template/spec/containers");
    Row::of(vec![
        name(object),
        names,
        images,
        format_labels(object.pointer("/template/metadata/labels")).into(),
    ])
}

fn deployment(object: &Value, now: Timestamp) -> Row {
    let (names, images) = containers(object, "/spec/template/spec/containers");
    let selector =
        selector_string(object.pointer("/spec/selector")).unwrap_or_else(|()| "<invalid>".into());
    Row::of(vec![
        name(object),
        format!(
            "{}/{}",
            number(object, "/status/readyReplicas"),
            number(object, "/spec/replicas")
        )
        .into(),
        number(object, "/status/updatedReplicas").into(),
        number(object, "/status/availableReplicas").into(),
        created(object, now),
        names,
        images,
        selector.into(),
    ])
}

fn replica_set(object: &Value, now: Timestamp) -> Row {
    let (names, images) = containers(object, "/spec/template/spec/containers");
    Row::of(vec![
        name(object),
        number(object, "/spec/replicas").into(),
        number(object, "/status/replicas").into(),
        number(object, "/status/readyReplicas").into(),
        created(object, now),
        names,
        images,
        format_label_selector(object.pointer("/spec/selector")).into(),
    ])
}

fn stateful_set(object: &Value, now: Timestamp) -> Row {
    let (names, images) = containers(object, "/spec/template/spec/containers");
    Row::of(vec![
        name(object),
        format!(
            "{}/{}",
            number(object, "/status/readyReplicas"),
            number(object, "/spec/replicas")
        )
        .into(),
        created(object, now),
        names,
        images,
    ])
}

fn daemon_set(object: &Value, now: Timestamp) -> Row {
    let (names, images) = containers(object, "/spec/template/spec/containers");
    Row::of(vec![
        name(object),
        number(object, "/status/desiredNumberScheduled").into(),
        number(object, "/status/currentNumberScheduled").into(),
        number(object, "/status/numberReady").into(),
        number(object, "/status/updatedNumberScheduled").into(),
        number(object, "/status/numberAvailable").into(),
        format_labels(object.pointer("/spec/template/spec/nodeSelector")).into(),
        created(object, now),
        names,
        images,
        format_label_selector(object.pointer("/spec/selector")).into(),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        "2024-05-01T12:00:00Z".parse().unwrap()
    }

    fn cells(group: &str, plural: &str, object: &Value) -> Vec<Value> {
        let kind = kind(group, plural).unwrap();
        let row = (kind.cells)(object, now());
        assert_eq!(row.cells.len(), kind.columns.len(), "{plural}");
        row.cells
    }

    #[test]
    fn every_kind_fills_each_of_its_columns_even_from_an_empty_object() {
        for kind in KINDS {
            let row = (kind.cells)(&json!({}), now());
            assert_eq!(row.cells.len(), kind.columns.len(), "{}", kind.plural);
            assert_eq!(kind.columns[0].name, "Name");
        }
    }

    #[test]
    fn services_show_their_addresses_and_ports_by_type() {
        let service = json!({
            "metadata": { "name": "web", "creationTimestamp": "2024-05-01T11:00:00Z" },
            "spec": {
                "type": "NodePort", "clusterIPs": ["10.0.0.7"],
                "ports": [{ "port": 80, "nodePort": 30080, "protocol": "TCP" }, { "port": 53, "protocol": "UDP" }],
                "selector": { "tier": "web", "app": "shop" },
            },
        });
        assert_eq!(
            cells("", "services", &service),
            [
                json!("web"),
                json!("NodePort"),
                json!("10.0.0.7"),
                json!("<none>"),
                json!("80:30080/TCP,53/UDP"),
                json!("60m"),
                json!("app=shop,tier=web"),
            ]
        );
        let balanced = json!({
            "spec": { "type": "LoadBalancer", "externalIPs": ["1.2.3.4"] },
            "status": { "loadBalancer": { "ingress": [{ "hostname": "lb.example.com" }, { "ip": "5.6.7.8" }] } },
        });
        assert_eq!(external_ip(&balanced), "5.6.7.8,lb.example.com,1.2.3.4");
        assert_eq!(
            external_ip(&json!({ "spec": { "type": "LoadBalancer" } })),
            "<pending>"
        );
        assert_eq!(
            external_ip(
                &json!({ "spec": { "type": "ExternalName", "externalName": "db.example.com" } })
            ),
            "db.example.com"
        );
    }

    #[test]
    fn nodes_show_readiness_roles_and_addresses() {
        let node = json!({
            "metadata": { "name": "n1", "labels": {
                "node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "edge",
            }},
            "spec": { "unschedulable": true },
            "status": {
                "conditions": [{ "type": "Ready", "status": "False" }],
                "addresses": [{ "type": "InternalIP", "address": "10.1.0.4" }],
                "nodeInfo": { "kubeletVersion": "v1.37.2", "osImage": "Debian" },
            },
        });
        let cells = cells("", "nodes", &node);
        assert_eq!(cells[1], "NotReady,SchedulingDisabled");
        assert_eq!(cells[2], "control-plane,edge");
        assert_eq!(cells[4], "v1.37.2");
        assert_eq!(cells[5], "10.1.0.4");
        assert_eq!(cells[6], "<none>");
        assert_eq!(cells[7], "Debian");
        assert_eq!(cells[8], "<unknown>");
    }

    #[test]
    fn workloads_count_replicas_and_format_selectors() {
        let deployment = json!({
            "metadata": { "name": "d1" },
            "spec": {
                "replicas": 3,
                "selector": { "matchLabels": { "app": "d1" }, "matchExpressions": [{ "key": "tier", "operator": "In", "values": ["b", "a"] }] },
                "template": { "spec": { "containers": [{ "name": "web", "image": "nginx" }, { "name": "log", "image": "busybox" }] } },
            },
            "status": { "readyReplicas": 2, "updatedReplicas": 3 },
        });
        let d = cells("apps", "deployments", &deployment);
        assert_eq!(d[1], "2/3");
        assert_eq!((d[2].clone(), d[3].clone()), (json!(3), json!(0)));
        assert_eq!(
            (d[5].clone(), d[6].clone()),
            (json!("web,log"), json!("nginx,busybox"))
        );
        assert_eq!(d[7], "app=d1,tier in (a,b)");
        let r = cells(
            "apps",
            "replicasets",
            &json!({ "spec": { "selector": {} } }),
        );
        assert_eq!(r[7], "<none>");
        let bad = json!({ "spec": { "selector": { "matchExpressions": [{ "key": "x", "operator": "Near" }] } } });
        assert_eq!(cells("apps", "replicasets", &bad)[7], "<error>");
        assert_eq!(cells("apps", "deployments", &bad)[7], "<invalid>");
    }

    #[test]
    fn config_maps_and_secrets_count_their_keys() {
        let config_map = json!({ "data": { "a": "1" }, "binaryData": { "b": "AA==" } });
        assert_eq!(cells("", "configmaps", &config_map)[1], 2);
        let secret = json!({ "type": "Opaque", "data": { "a": "<redacted>" } });
        assert_eq!(
            cells("", "secrets", &secret)[1..3],
            [json!("Opaque"), json!(1)]
        );
    }
}
