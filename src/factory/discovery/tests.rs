use super::fetch::add_aggregated;
use super::follow::*;
use super::*;
use crate::factory::FactoryError;
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
    let err = FactoryError::Resolve {
        problem: Box::new(VocabularyError::NotFound {
            input: "podmetrics".into(),
            suggestions: vec![],
        }),
        unavailable: s.unavailable_for(&ResourceName::parse("podmetrics").unwrap()),
    };
    assert_eq!(
        err.to_string(),
        "no resource matches \"podmetrics\" (a custom resource not installed yet is waited for when named as plural.group, e.g. widgets.example.com) (not discovered, so not searched: \
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

fn widgets(versions: &[&str]) -> DiscoverySnapshot {
    let versions: Vec<_> = versions
        .iter()
        .map(|v| {
            json!({ "version": v, "resources": [{
                "resource": "widgets", "responseKind": { "kind": "Widget" },
                "scope": "Namespaced", "singularResource": "widget",
                "verbs": ["list", "watch"], "shortNames": ["wdg"]
            }]})
        })
        .collect();
    aggregated(json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "items": [{ "metadata": { "name": "example.com" }, "versions": versions }]
    }))
}

fn served_key(a: &ResourceAvailability) -> Option<String> {
    a.served().map(|(r, _)| ResourceKey::from(r).to_string())
}

#[test]
fn versions_are_listed_preferred_first_then_by_priority() {
    let s = widgets(&["v1beta1", "v2", "v1", "v10alpha1"]);
    let versions: Vec<&str> = s
        .versions_of("example.com", "widgets")
        .iter()
        .map(|r| r.version.as_str())
        .collect();
    assert_eq!(versions, ["v1beta1", "v2", "v1", "v10alpha1"]);
    let s = widgets(&["v1", "v1beta1", "v2"]);
    let versions: Vec<&str> = s
        .versions_of("example.com", "widgets")
        .iter()
        .map(|r| r.version.as_str())
        .collect();
    assert_eq!(versions, ["v1", "v2", "v1beta1"]);
    assert!(s.versions_of("example.com", "gadgets").is_empty());
}

#[test]
fn a_name_without_version_designates_the_preferred_one() {
    let name = ResourceName::parse("widgets.example.com").unwrap();
    let s = widgets(&["v2", "v1"]);
    assert_eq!(
        served_key(&s.availability_of_name(&name)).as_deref(),
        Some("widgets.v2.example.com")
    );
    let singular = ResourceName::parse("widget.example.com").unwrap();
    assert_eq!(
        served_key(&s.availability_of_name(&singular)).as_deref(),
        Some("widgets.v2.example.com")
    );
    match sample().availability_of_name(&name) {
        ResourceAvailability::NotServed { reason } => assert_eq!(
            reason,
            "widgets.example.com is not served by the API server (not in discovery)"
        ),
        other => panic!("{other:?}"),
    }
    let typo = ResourceName::parse("deploymnts.apps").unwrap();
    match sample().availability_of_name(&typo) {
        ResourceAvailability::NotServed { reason } => assert!(
            reason.contains("did you mean deployments.v1.apps?"),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
    // Suggestions from the group named come first, alone.
    let mut both = widgets(&["v1"]);
    both.resources.extend(sample().resources);
    both.resources.push(KnownResource {
        group: "other.org".into(),
        version: "v1".into(),
        plural: "widgets".into(),
        preferred_version: true,
        ..KnownResource::default()
    });
    let typo = ResourceName::parse("deploymentz.example.com").unwrap();
    match both.availability_of_name(&typo) {
        ResourceAvailability::NotServed { reason } => {
            assert!(reason.contains("deployments.v1.apps"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    let typo = ResourceName::parse("widgetz.example.com").unwrap();
    match both.availability_of_name(&typo) {
        ResourceAvailability::NotServed { reason } => assert!(
            reason.ends_with("did you mean widgets.v1.example.com?)"),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
    let resembled: Vec<String> = both
        .resembling(&typo)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(resembled, ["widgets.v1.example.com"]);
    let served = ResourceName::parse("widgets.example.com").unwrap();
    assert!(both.resembling(&served).is_empty());
    assert!(
        !DiscoverySnapshot::default()
            .availability_of_name(&name)
            .is_served()
    );
}

#[test]
fn a_name_channel_keeps_its_version_while_served_and_moves_through_not_served() {
    let name = ResourceName::parse("widgets.example.com").unwrap();
    let v1 = widgets(&["v1"]).availability_of_name(&name);
    // v2 is added and preferred: the channel stays on v1.
    let (now, moves) = widgets(&["v2", "v1"]).follow_name(&name, &v1);
    assert_eq!(served_key(&now).as_deref(), Some("widgets.v1.example.com"));
    assert!(!moves);
    // v1 is no longer served: not served first, then v2.
    let (now, moves) = widgets(&["v2"]).follow_name(&name, &v1);
    match &now {
        ResourceAvailability::NotServed { reason } => assert!(
            reason.starts_with("widgets.v1.example.com is no longer served")
                && reason.contains("widgets.v2.example.com"),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
    assert!(moves);
    let (next, moves) = widgets(&["v2"]).follow_name(&name, &now);
    assert_eq!(served_key(&next).as_deref(), Some("widgets.v2.example.com"));
    assert!(!moves);
    // The CRD is deleted.
    let (gone, moves) = sample().follow_name(&name, &next);
    assert!(!gone.is_served());
    assert!(!moves);
}
