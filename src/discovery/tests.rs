use super::fetch::add_aggregated;
use super::follow::*;
use super::*;
use kube_core::DynamicObject;
use serde_json::json;

fn aggregated(doc: serde_json::Value) -> DiscoverySnapshot {
    let mut snapshot = DiscoverySnapshot {
        generation: 1,
        ..DiscoverySnapshot::default()
    };
    add_aggregated(&mut snapshot, serde_json::from_value(doc).unwrap());
    snapshot
}

fn sample() -> DiscoverySnapshot {
    aggregated(json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "items": [
            { "metadata": { "name": "apps" }, "versions": [
                { "version": "v1", "resources": [{
                    "resource": "deployments",
                    "responseKind": { "group": "", "version": "", "kind": "Deployment" },
                    "scope": "Namespaced", "singularResource": "deployment",
                    "verbs": ["get", "list", "watch"], "shortNames": ["deploy"],
                    "subresources": [{ "subresource": "scale", "verbs": ["get"] }]
                }]},
                { "version": "v1beta1", "resources": [{
                    "resource": "deployments",
                    "responseKind": { "kind": "Deployment" },
                    "scope": "Namespaced", "singularResource": "deployment",
                    "verbs": ["list", "watch"]
                }]}
            ]},
            { "metadata": { "name": "authentication.k8s.io" }, "versions": [
                { "version": "v1", "resources": [{
                    "resource": "tokenreviews", "responseKind": { "kind": "TokenReview" },
                    "scope": "Cluster", "singularResource": "tokenreview", "verbs": ["create"]
                }]}
            ]},
            { "metadata": { "name": "metrics.k8s.io" }, "versions": [
                { "version": "v1beta1", "freshness": "Stale" }
            ]}
        ]
    }))
}

#[test]
fn aggregated_documents_become_known_resources() {
    let s = sample();
    let keys: Vec<String> = s.resources().iter().map(|r| r.key().to_string()).collect();
    assert_eq!(
        keys,
        [
            "deployments.v1.apps",
            "deployments.v1beta1.apps",
            "tokenreviews.v1.authentication.k8s.io"
        ]
    );
    let d = &s.resources()[0];
    assert_eq!(d.kind, "Deployment");
    assert_eq!(d.singular, "deployment");
    assert_eq!(d.short_names, ["deploy"]);
    assert!(d.namespaced && d.preferred_version);
    assert!(!s.resources()[1].preferred_version);
    assert!(!s.resources()[2].namespaced);
    assert_eq!(
        s.unavailable(),
        [UnavailableGroupVersion {
            group: "metrics.k8s.io".into(),
            version: "v1beta1".into(),
            reason: "its API server did not answer discovery (freshness Stale)".into()
        }]
    );
}

#[test]
fn availability_says_why() {
    let s = sample();
    let deploy = ResourceKey::new("apps", "v1", "deployments");
    match s.availability(&deploy) {
        ResourceAvailability::Served { resource, scope } => {
            assert_eq!(resource.kind, "Deployment");
            assert_eq!(resource.api_version, "apps/v1");
            assert_eq!(scope, Scope::Namespaced);
        }
        other => panic!("{other:?}"),
    }
    let reason = |key: ResourceKey| match s.availability(&key) {
        ResourceAvailability::NotServed { reason } => reason,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        reason(ResourceKey::new("example.com", "v1", "widgets")),
        "widgets.v1.example.com is not served by the API server (not in discovery)"
    );
    assert_eq!(
        reason(ResourceKey::new("metrics.k8s.io", "v1beta1", "pods")),
        "pods.v1beta1.metrics.k8s.io is not served: API group version metrics.k8s.io/v1beta1 \
         could not be discovered: its API server did not answer discovery (freshness Stale)"
    );
    assert_eq!(
        reason(ResourceKey::new(
            "authentication.k8s.io",
            "v1",
            "tokenreviews"
        )),
        "tokenreviews.v1.authentication.k8s.io is served but cannot be listed and watched (verbs: create)"
    );
    assert!(
        !DiscoverySnapshot::default()
            .availability(&deploy)
            .is_served()
    );
}

#[test]
fn unavailable_groups_are_named_in_resolution_errors() {
    let s = sample();
    let name = ResourceName::parse("pods.metrics.k8s.io").unwrap();
    assert_eq!(s.unavailable_for(&name).len(), 1);
    let name = ResourceName::parse("deployments.apps").unwrap();
    assert!(s.unavailable_for(&name).is_empty());
    let err = DiscoveryError::Resolve {
        source: ResourceError::NotFound {
            input: "podmetrics".into(),
            suggestions: vec![],
        },
        unavailable: s.unavailable_for(&ResourceName::parse("podmetrics").unwrap()),
    };
    assert_eq!(
        err.to_string(),
        "no resource matches \"podmetrics\" (not discovered, so not searched: \
         metrics.k8s.io/v1beta1: its API server did not answer discovery (freshness Stale))"
    );
}

fn crd(
    group: &str,
    plural: &str,
    versions: &[(&str, bool)],
    established: bool,
) -> Arc<DynamicObject> {
    let versions: Vec<_> = versions
        .iter()
        .map(|(v, served)| json!({ "name": v, "served": served, "schema": { "big": true } }))
        .collect();
    Arc::new(
        serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": { "name": format!("{plural}.{group}") },
            "spec": { "group": group, "names": { "plural": plural }, "versions": versions },
            "status": { "conditions": [{ "type": "Established", "status": if established { "True" } else { "False" } }] }
        }))
        .unwrap(),
    )
}

#[test]
fn crd_expectations_detect_lagging_discovery() {
    let mut snapshot = sample();
    let widgets = crd(
        "example.com",
        "widgets",
        &[("v1", true), ("v2", false)],
        true,
    );
    let e = CrdExpectation::from_store(std::slice::from_ref(&widgets));
    let mut seen: HashSet<ResourceKey> = e.served.iter().chain(&e.not_served).cloned().collect();
    assert_eq!(
        e.mismatch(&snapshot, &seen).unwrap(),
        "widgets.v1.example.com is established but not in discovery yet"
    );
    snapshot.resources.push(KnownResource {
        group: "example.com".into(),
        version: "v1".into(),
        plural: "widgets".into(),
        ..KnownResource::default()
    });
    assert_eq!(e.mismatch(&snapshot, &seen), None);
    // The CRD is deleted; discovery still has it.
    let none = CrdExpectation::from_store(&[]);
    assert!(
        none.mismatch(&snapshot, &seen)
            .unwrap()
            .contains("still in discovery")
    );
    seen.clear();
    assert_eq!(none.mismatch(&snapshot, &seen), None);
    // Not established yet: not expected.
    let pending =
        CrdExpectation::from_store(&[crd("example.org", "gadgets", &[("v1", true)], false)]);
    assert!(pending.served.is_empty());
}

#[test]
fn slim_crd_drops_schemas() {
    let slim = slim_crd((*crd("example.com", "widgets", &[("v1", true)], true)).clone());
    assert!(slim.data["spec"]["versions"][0].get("schema").is_none());
    assert_eq!(slim.data["spec"]["versions"][0]["name"], "v1");
}
