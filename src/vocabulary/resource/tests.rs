use std::cmp::Ordering;

use kube_core::GroupVersionResource;
use kube_core::discovery::ApiResource;
use proptest::prelude::*;

use super::resolve::{MAX_SUGGESTIONS, bounded_edit_distance};
use super::version::{looks_like_version, version_priority};
use super::*;
use crate::vocabulary::VocabularyError;

fn cmp_versions(a: &str, b: &str) -> Ordering {
    version_priority(a).cmp(&version_priority(b))
}

fn res(
    gv: &str,
    plural: &str,
    singular: &str,
    kind: &str,
    short: &[&str],
    preferred: bool,
) -> KnownResource {
    let (group, version) = gv.rsplit_once('/').unwrap_or(("", gv));
    KnownResource {
        group: group.into(),
        version: version.into(),
        plural: plural.into(),
        singular: singular.into(),
        kind: kind.into(),
        short_names: short.iter().map(|s| (*s).to_owned()).collect(),
        namespaced: true,
        preferred_version: preferred,
    }
}

fn cluster() -> Vec<KnownResource> {
    vec![
        // Legacy discovery leaves built-in singulars empty.
        res("v1", "pods", "", "Pod", &["po"], true),
        res("v1", "services", "", "Service", &["svc"], true),
        res("v1", "events", "event", "Event", &["ev"], true),
        res("v1", "configmaps", "configmap", "ConfigMap", &["cm"], true),
        res("v1", "nodes", "node", "Node", &["no"], true),
        res(
            "apps/v1",
            "deployments",
            "deployment",
            "Deployment",
            &["deploy"],
            true,
        ),
        res(
            "apps/v1beta1",
            "deployments",
            "deployment",
            "Deployment",
            &["deploy"],
            false,
        ),
        res(
            "events.k8s.io/v1",
            "events",
            "event",
            "Event",
            &["ev"],
            true,
        ),
        res(
            "autoscaling/v2",
            "horizontalpodautoscalers",
            "horizontalpodautoscaler",
            "HorizontalPodAutoscaler",
            &["hpa"],
            true,
        ),
        res(
            "autoscaling/v1",
            "horizontalpodautoscalers",
            "horizontalpodautoscaler",
            "HorizontalPodAutoscaler",
            &["hpa"],
            false,
        ),
        res(
            "metrics.k8s.io/v1beta1",
            "pods",
            "",
            "PodMetrics",
            &[],
            true,
        ),
        res(
            "example.com/v1",
            "widgets",
            "widget",
            "Widget",
            &["wd"],
            true,
        ),
        res(
            "example.com/v1alpha1",
            "widgets",
            "widget",
            "Widget",
            &["wd"],
            false,
        ),
        res(
            "v1alpha1.example.com/v1",
            "widgets",
            "widget",
            "Widget",
            &[],
            true,
        ),
        res(
            "cert-manager.io/v1",
            "certificates",
            "certificate",
            "Certificate",
            &["cert"],
            true,
        ),
        res(
            "certs.example.org/v1",
            "certificates",
            "certificate",
            "Certificate",
            &[],
            true,
        ),
        res(
            "legacy.example.com/v2",
            "gadgets",
            "gadget",
            "Gadget",
            &[],
            true,
        ),
        res(
            "legacy.example.com/v1",
            "gadgets",
            "gadget",
            "Gadget",
            &[],
            false,
        ),
        res(
            "legacy.example.com/v1",
            "oldthings",
            "oldthing",
            "OldThing",
            &[],
            false,
        ),
        res(
            "legacy.example.com/v1alpha1",
            "betathings",
            "betathing",
            "BetaThing",
            &[],
            false,
        ),
        res(
            "legacy.example.com/v1beta1",
            "betathings",
            "betathing",
            "BetaThing",
            &[],
            false,
        ),
        res(
            "legacy.example.com/v1beta2",
            "betathings",
            "betathing",
            "BetaThing",
            &[],
            false,
        ),
        res(
            "shadow.example.com/v1",
            "deploys",
            "deploy",
            "Shadow",
            &[],
            true,
        ),
    ]
}

fn resolve(input: &str) -> String {
    let known = cluster();
    match ResourceName::parse(input).and_then(|n| n.resolve(&known).map(KnownResource::key)) {
        Ok(key) => key.to_string(),
        Err(e) => panic!("{input:?}: {e}"),
    }
}

fn resolve_err(input: &str) -> VocabularyError {
    let known = cluster();
    match ResourceName::parse(input).and_then(|n| n.resolve(&known).map(KnownResource::key)) {
        Ok(key) => panic!("{input:?} resolved to {key}"),
        Err(e) => e,
    }
}

fn candidates(input: &str) -> Vec<NameCandidate> {
    ResourceName::parse(input)
        .unwrap_or_else(|e| panic!("{input:?}: {e}"))
        .candidates()
        .to_vec()
}

fn cand(group: Option<&str>, version: Option<&str>, name: &str) -> NameCandidate {
    NameCandidate::new(group.map(str::to_owned), version, name)
}

#[test]
fn key_display_and_api_version() {
    let key = ResourceKey::new("apps", "v1", "deployments");
    assert_eq!(key.to_string(), "deployments.v1.apps");
    assert_eq!(key.api_version(), "apps/v1");
    assert!(!key.is_core_group());
    let core = ResourceKey::new("", "v1", "pods");
    assert_eq!(core.to_string(), "pods.v1");
    assert_eq!(core.api_version(), "v1");
    assert!(core.is_core_group());
}

#[test]
fn key_conversions() {
    let key = ResourceKey::new("example.com", "v1", "widgets");
    let gvr = GroupVersionResource::from(&key);
    assert_eq!(
        (
            gvr.group.as_str(),
            gvr.version.as_str(),
            gvr.resource.as_str()
        ),
        ("example.com", "v1", "widgets")
    );
    assert_eq!(
        gvr,
        GroupVersionResource::gvr("example.com", "v1", "widgets")
    );
    assert_eq!(ResourceKey::from(&gvr), key);
    assert_eq!(ResourceKey::from(gvr), key);

    // A deserialised GVR has an empty private api_version, so it differs
    // from a constructed one; the keys made from both do not.
    let parsed: GroupVersionResource = serde_json::from_value(
        serde_json::json!({"group": "example.com", "version": "v1", "resource": "widgets"}),
    )
    .unwrap();
    assert_eq!(ResourceKey::from(parsed), key);

    let ar = ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    assert_eq!(ResourceKey::from(&ar), key);
    assert_eq!(ResourceKey::from(ar), key);

    let known = res("example.com/v1", "widgets", "widget", "Widget", &[], true);
    assert_eq!(ResourceKey::from(&known), key);
    let ar = known.api_resource();
    assert_eq!(
        (
            ar.api_version.as_str(),
            ar.kind.as_str(),
            ar.plural.as_str()
        ),
        ("example.com/v1", "Widget", "widgets")
    );
}

#[test]
fn key_serde_and_ordering() {
    let key = ResourceKey::new("apps", "v1", "deployments");
    let json = serde_json::to_value(&key).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"group": "apps", "version": "v1", "resource": "deployments"})
    );
    assert_eq!(serde_json::from_value::<ResourceKey>(json).unwrap(), key);
    let mut keys = [key.clone(), ResourceKey::new("", "v1", "pods")];
    keys.sort();
    assert_eq!(keys[0].group, "");
}

#[test]
fn parse_plain_names() {
    for input in ["pods", "po", "Pod", "  pods  "] {
        assert_eq!(candidates(input), vec![cand(None, None, input.trim())]);
    }
}

#[test]
fn parse_dotted_forms() {
    assert_eq!(
        candidates("deployments.apps"),
        vec![cand(Some("apps"), None, "deployments")]
    );
    assert_eq!(
        candidates("pods.v1"),
        vec![cand(Some(""), Some("v1"), "pods")]
    );
    assert_eq!(
        candidates("deployments.v1.apps"),
        vec![
            cand(Some("apps"), Some("v1"), "deployments"),
            cand(Some("v1.apps"), None, "deployments")
        ]
    );
    assert_eq!(
        candidates("widgets.example.com"),
        vec![
            cand(Some("example.com"), None, "widgets"),
            cand(Some("com"), Some("example"), "widgets")
        ]
    );
    assert_eq!(
        candidates("widgets.v1alpha1.example.com")[0],
        cand(Some("example.com"), Some("v1alpha1"), "widgets")
    );
    assert_eq!(
        candidates("widgets.v2beta3.example.com")[0],
        cand(Some("example.com"), Some("v2beta3"), "widgets")
    );
    // Not versions: no digits after alpha, upper case, no leading v.
    for input in [
        "widgets.v1alpha.example.com",
        "widgets.V1.example.com",
        "widgets.1.example.com",
    ] {
        assert_eq!(candidates(input)[0].version, None, "{input}");
    }
    assert_eq!(
        candidates("Deployment.apps")[0],
        cand(Some("apps"), None, "Deployment")
    );
}

#[test]
fn parse_slash_forms() {
    assert_eq!(
        candidates("apps/v1/deployments"),
        vec![cand(Some("apps"), Some("v1"), "deployments")]
    );
    assert_eq!(
        candidates("v1/pods"),
        vec![cand(Some(""), Some("v1"), "pods")]
    );
    assert_eq!(
        candidates("example.com/v1alpha1/widgets"),
        vec![cand(Some("example.com"), Some("v1alpha1"), "widgets")]
    );
    assert_eq!(
        candidates("apps/v1/Deployment"),
        vec![cand(Some("apps"), Some("v1"), "Deployment")]
    );
}

#[test]
fn parse_rejects_subresources_and_bad_shapes() {
    let sub = |input: &str| match ResourceName::parse(input) {
        Err(VocabularyError::Subresource {
            resource,
            subresource,
            ..
        }) => (resource, subresource),
        other => panic!("{input:?}: {other:?}"),
    };
    assert_eq!(sub("pods/status"), ("pods".to_owned(), "status".to_owned()));
    assert_eq!(
        sub("deployments/web"),
        ("deployments".to_owned(), "web".to_owned())
    );
    assert_eq!(sub("v1/pods/log"), ("v1/pods".to_owned(), "log".to_owned()));
    assert_eq!(
        sub("apps/v1/deployments/scale"),
        ("apps/v1/deployments".to_owned(), "scale".to_owned())
    );
    let msg = ResourceName::parse("pods/status").unwrap_err().to_string();
    assert_eq!(
        msg,
        r#""pods/status" names a subresource or a single object ("status" of "pods"); name the whole resource instead, e.g. "pods""#
    );

    assert!(matches!(
        ResourceName::parse("apps/v1"),
        Err(VocabularyError::GroupVersionOnly { .. })
    ));
    assert!(matches!(
        ResourceName::parse("example.com/v1beta1"),
        Err(VocabularyError::GroupVersionOnly { .. })
    ));
    assert_eq!(ResourceName::parse(""), Err(VocabularyError::EmptyName));
    assert_eq!(ResourceName::parse(" \t"), Err(VocabularyError::EmptyName));
    for input in [
        "pods..apps",
        ".pods",
        "pods.",
        "/pods",
        "apps//deployments",
        "v1/",
        "po ds",
        "pods,svc",
        "pöds",
        "a/b/c/d/e",
        "v1/pods/status/x",
        "apps/v1.x/deployments",
        "apps/v1/deployments.apps",
    ] {
        assert!(
            matches!(
                ResourceName::parse(input),
                Err(VocabularyError::InvalidName { .. })
            ),
            "{input:?}: {:?}",
            ResourceName::parse(input)
        );
    }
    let msg = ResourceName::parse("po ds").unwrap_err().to_string();
    assert!(
        msg.starts_with(r#"invalid resource name "po ds": unexpected character ' ' at column 3"#),
        "{msg}"
    );
}

#[test]
fn resolves_plurals_singulars_kinds_and_short_names_case_insensitively() {
    for input in ["pods", "pod", "Pod", "PODS", "po", "Po"] {
        assert_eq!(resolve(input), "pods.v1", "{input}");
    }
    for input in ["deployments", "deployment", "Deployment", "DEPLOYMENT"] {
        assert_eq!(resolve(input), "deployments.v1.apps", "{input}");
    }
    assert_eq!(resolve("svc"), "services.v1");
    assert_eq!(
        resolve("service"),
        "services.v1",
        "empty singular falls back to the kind"
    );
    assert_eq!(resolve("cm"), "configmaps.v1");
    assert_eq!(resolve("ConfigMap"), "configmaps.v1");
}

#[test]
fn resource_names_beat_short_names_beat_kinds() {
    // "deploy" is apps' short name but shadow.example.com's singular.
    assert_eq!(resolve("deploy"), "deploys.v1.shadow.example.com");
    assert_eq!(resolve("deploy.apps"), "deployments.v1.apps");
    // "PodMetrics" is only a kind.
    assert_eq!(resolve("PodMetrics"), "pods.v1beta1.metrics.k8s.io");
}

#[test]
fn core_group_wins_across_groups() {
    assert_eq!(resolve("events"), "events.v1");
    assert_eq!(resolve("Event"), "events.v1");
    assert_eq!(resolve("ev"), "events.v1");
    assert_eq!(
        resolve("pods"),
        "pods.v1",
        "metrics.k8s.io also serves pods"
    );
    assert_eq!(resolve("events.events.k8s.io"), "events.v1.events.k8s.io");
    assert_eq!(resolve("Event.events.k8s.io"), "events.v1.events.k8s.io");
    assert_eq!(
        resolve("pods.metrics.k8s.io"),
        "pods.v1beta1.metrics.k8s.io"
    );
    assert_eq!(
        resolve("metrics.k8s.io/v1beta1/pods"),
        "pods.v1beta1.metrics.k8s.io"
    );
}

#[test]
fn core_group_forms() {
    assert_eq!(resolve("pods.v1"), "pods.v1");
    assert_eq!(resolve("v1/pods"), "pods.v1");
    assert_eq!(resolve("v1/Pod"), "pods.v1");
    assert!(
        matches!(
            resolve_err("deployments.v1"),
            VocabularyError::NotFound { .. }
        ),
        "deployments are not in core"
    );
}

#[test]
fn named_groups_and_versions() {
    assert_eq!(resolve("deployments.apps"), "deployments.v1.apps");
    assert_eq!(resolve("deployments.v1.apps"), "deployments.v1.apps");
    assert_eq!(
        resolve("deployments.v1beta1.apps"),
        "deployments.v1beta1.apps"
    );
    assert_eq!(
        resolve("apps/v1beta1/deployments"),
        "deployments.v1beta1.apps"
    );
    assert_eq!(resolve("apps/v1/Deployment"), "deployments.v1.apps");
    assert_eq!(resolve("Deployment.v1.apps"), "deployments.v1.apps");
    assert_eq!(resolve("hpa"), "horizontalpodautoscalers.v2.autoscaling");
    assert_eq!(
        resolve("hpa.v1.autoscaling"),
        "horizontalpodautoscalers.v1.autoscaling"
    );
    assert_eq!(
        resolve("DEPLOYMENTS.APPS"),
        "deployments.v1.apps",
        "groups match case-insensitively"
    );
}

#[test]
fn crd_groups_with_dots() {
    assert_eq!(resolve("widgets.example.com"), "widgets.v1.example.com");
    assert_eq!(resolve("widget.example.com"), "widgets.v1.example.com");
    assert_eq!(resolve("wd.example.com"), "widgets.v1.example.com");
    assert_eq!(
        resolve("widgets.v1alpha1.example.com"),
        "widgets.v1alpha1.example.com"
    );
    assert_eq!(
        resolve("example.com/v1alpha1/widgets"),
        "widgets.v1alpha1.example.com"
    );
    // The second segment looks like a version, so resource.version.group
    // comes first; the group literally named v1alpha1.example.com is the
    // fallback reading and is reachable by the slash form.
    assert_eq!(
        resolve("v1alpha1.example.com/v1/widgets"),
        "widgets.v1.v1alpha1.example.com"
    );
    // A version-looking segment that is no version of example.com falls
    // back to reading it as part of the group.
    assert_eq!(
        resolve("widgets.v1alpha1.example.com"),
        "widgets.v1alpha1.example.com"
    );
    let only_dotted_group = vec![res(
        "v1alpha1.example.com/v1",
        "widgets",
        "widget",
        "Widget",
        &[],
        true,
    )];
    let found = ResourceName::parse("widgets.v1alpha1.example.com")
        .unwrap()
        .resolve(&only_dotted_group)
        .unwrap();
    assert_eq!(found.group, "v1alpha1.example.com");
}

#[test]
fn missing_version_means_preferred_then_highest() {
    assert_eq!(resolve("wd"), "widgets.v1.example.com");
    assert_eq!(resolve("gadgets"), "gadgets.v2.legacy.example.com");
    // Not in the preferred version v2: the only version serving it.
    assert_eq!(resolve("oldthings"), "oldthings.v1.legacy.example.com");
    // In no preferred version: beta2 > beta1 > alpha1.
    assert_eq!(
        resolve("betathings"),
        "betathings.v1beta2.legacy.example.com"
    );
}

#[test]
fn ambiguity_across_non_core_groups_lists_candidates() {
    assert!(matches!(
        resolve_err("widgets"),
        VocabularyError::Ambiguous { .. }
    ));
    match resolve_err("certificates") {
        VocabularyError::Ambiguous { input, candidates } => {
            assert_eq!(input, "certificates");
            assert_eq!(
                candidates,
                vec![
                    ResourceKey::new("cert-manager.io", "v1", "certificates"),
                    ResourceKey::new("certs.example.org", "v1", "certificates"),
                ]
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        resolve_err("Certificate").to_string(),
        "resource name \"Certificate\" is ambiguous: it matches certificates.v1.cert-manager.io, \
         certificates.v1.certs.example.org; name it more precisely, e.g. \"certificates.cert-manager.io\""
    );
    // A short name only one group has is not ambiguous.
    assert_eq!(resolve("cert"), "certificates.v1.cert-manager.io");
    assert_eq!(
        resolve("certificates.certs.example.org"),
        "certificates.v1.certs.example.org"
    );
}

#[test]
fn duplicates_are_not_ambiguous() {
    let mut known = cluster();
    known.extend(cluster());
    let found = ResourceName::parse("deploy.apps")
        .unwrap()
        .resolve(&known)
        .unwrap();
    assert_eq!(found.key().to_string(), "deployments.v1.apps");
}

#[test]
fn same_name_twice_in_one_group_version_is_ambiguous() {
    let known = vec![
        res("x.example.com/v1", "foos", "foo", "Foo", &["f"], true),
        res("x.example.com/v1", "fizzes", "fizz", "Fizz", &["f"], true),
    ];
    let err = ResourceName::parse("f")
        .unwrap()
        .resolve(&known)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "resource name \"f\" is ambiguous: it matches fizzes.v1.x.example.com, \
         foos.v1.x.example.com; name it more precisely, e.g. \"fizzes.v1.x.example.com\""
    );
}

#[test]
fn unknown_names_get_suggestions() {
    let suggestions = |input: &str| match resolve_err(input) {
        VocabularyError::NotFound { suggestions, .. } => suggestions
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        other => panic!("{input:?}: {other:?}"),
    };
    assert_eq!(suggestions("deploymnts")[0], "deployments.v1.apps");
    assert_eq!(suggestions("Deploymnt")[0], "deployments.v1.apps");
    assert_eq!(suggestions("configmap.v2")[0], "configmaps.v1");
    assert!(
        suggestions("widg").contains(&"widgets.v1.example.com".to_owned()),
        "{:?}",
        suggestions("widg")
    );
    assert!(
        suggestions("horizontalpod")
            .contains(&"horizontalpodautoscalers.v2.autoscaling".to_owned())
    );
    assert!(suggestions("zzzzzzzz").is_empty());
    assert!(suggestions("pods.nosuch.example.com").contains(&"pods.v1".to_owned()));
    assert!(suggestions("xx").len() <= MAX_SUGGESTIONS);
    assert!(suggestions("e").len() <= MAX_SUGGESTIONS);
    assert_eq!(
        resolve_err("deploymentz.apps").to_string(),
        "no resource matches \"deploymentz.apps\"; did you mean deployments.v1.apps or deploys.v1.shadow.example.com?"
    );
    assert_eq!(
        resolve_err("qqqqqqq").to_string(),
        "no resource matches \"qqqqqqq\" (a custom resource not installed yet is waited for when named as plural.group, e.g. widgets.example.com)"
    );
    // A short name inside an unrelated name is no suggestion.
    assert!(
        !suggestions("nosuchthing")
            .iter()
            .any(|s| s.starts_with("ingresses"))
    );
}

/// A typo of a plural in a group that serves it suggests that group's
/// resource first, however many other groups serve a similar name.
#[test]
fn suggestions_prefer_the_group_the_name_asks_for() {
    let groups: Vec<String> = (0..8).map(|i| format!("g{i}.example.com/v1")).collect();
    let known: Vec<KnownResource> = groups
        .iter()
        .map(|gv| res(gv, "widgets", "widget", "Widget", &[], true))
        .collect();
    let err = ResourceName::parse("widgetz.g6.example.com")
        .unwrap()
        .resolve(&known)
        .unwrap_err();
    let VocabularyError::NotFound { suggestions, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(
        suggestions.first(),
        Some(&ResourceKey::new("g6.example.com", "v1", "widgets")),
        "{err}"
    );
}

#[test]
fn nothing_known() {
    assert_eq!(
        ResourceName::parse("pods").unwrap().resolve(&[]),
        Err(VocabularyError::NotFound {
            input: "pods".into(),
            suggestions: vec![]
        })
    );
}

#[test]
fn name_from_key_is_exact() {
    let key = ResourceKey::new("apps", "v1beta1", "deployments");
    let name = ResourceName::from(&key);
    assert_eq!(name.as_str(), "deployments.v1beta1.apps");
    assert_eq!(name.candidates().len(), 1);
    assert_eq!(name.resolve(&cluster()).unwrap().key(), key);
    let core = ResourceName::from(ResourceKey::new("", "v1", "pods"));
    assert_eq!(
        core.resolve(&cluster()).unwrap().key().to_string(),
        "pods.v1"
    );
    // The display form of every key re-parses to the same resource.
    for known in cluster() {
        let parsed = ResourceName::parse(&known.key().to_string()).unwrap();
        assert_eq!(
            parsed.resolve(&cluster()).unwrap().key(),
            known.key(),
            "{}",
            known.key()
        );
    }
}

#[test]
fn name_accessors_and_serde() {
    let name: ResourceName = " deployments.apps ".parse().unwrap();
    assert_eq!(name.as_str(), "deployments.apps");
    assert_eq!(name.name(), "deployments");
    assert_eq!(name.to_string(), "deployments.apps");
    assert_eq!(ResourceName::try_from("po").unwrap().name(), "po");
    let json = serde_json::to_value(&name).unwrap();
    assert_eq!(json, serde_json::json!("deployments.apps"));
    assert_eq!(serde_json::from_value::<ResourceName>(json).unwrap(), name);
    assert!(serde_json::from_value::<ResourceName>(serde_json::json!("pods/status")).is_err());
    assert_eq!(
        name.candidates()[0].to_string(),
        "\"deployments\" in group apps"
    );
    assert_eq!(
        ResourceName::parse("v1/pods").unwrap().candidates()[0].to_string(),
        "\"pods\" in core/v1"
    );
}

#[test]
fn version_priority_order() {
    let mut versions = vec![
        "v1alpha1",
        "foo",
        "v2",
        "v1beta1",
        "v1",
        "v10",
        "v1beta2",
        "v2alpha1",
        "bar",
        "v11alpha2",
    ];
    versions.sort_by(|a, b| cmp_versions(b, a));
    assert_eq!(
        versions,
        vec![
            "v10",
            "v2",
            "v1",
            "v1beta2",
            "v1beta1",
            "v11alpha2",
            "v2alpha1",
            "v1alpha1",
            "bar",
            "foo"
        ]
    );
    assert!(looks_like_version("v1"));
    assert!(looks_like_version("v3beta12"));
    assert!(!looks_like_version("v"));
    assert!(!looks_like_version("v1gamma1"));
    assert!(!looks_like_version("v99999999999999999999999"));
    assert!(looks_like_version("v4294967295"));
}

#[test]
fn version_priority_follows_kubernetes_not_just_kube_core() {
    // The example of the CustomResourceDefinition versioning docs.
    let mut versions = vec![
        "v12alpha1",
        "foo10",
        "v10",
        "v3beta1",
        "v2",
        "v11alpha2",
        "v1",
        "foo1",
        "v10beta3",
        "v11beta2",
    ];
    versions.sort_by(|a, b| cmp_versions(b, a));
    assert_eq!(
        versions,
        [
            "v10",
            "v2",
            "v1",
            "v11beta2",
            "v10beta3",
            "v3beta1",
            "v12alpha1",
            "v11alpha2",
            "foo1",
            "foo10"
        ]
    );
    // kube_core::Version reads these as beta versions; apimachinery's
    // `v\d+((alpha|beta)\d+)?` does not, so they rank with other strings.
    for odd in ["v1beta", "v2alpha", "v1beta+2"] {
        assert!(!looks_like_version(odd), "{odd}");
        assert_eq!(cmp_versions(odd, "v1alpha1"), Ordering::Less, "{odd}");
        assert_eq!(cmp_versions(odd, "zzz"), Ordering::Greater, "{odd}");
    }
    assert_eq!(
        candidates("widgets.v1beta.example.com")[0],
        cand(Some("v1beta.example.com"), None, "widgets")
    );
}

#[test]
fn edit_distance() {
    assert_eq!(bounded_edit_distance("kitten", "sitting", 3), Some(3));
    assert_eq!(bounded_edit_distance("kitten", "sitting", 2), None);
    assert_eq!(bounded_edit_distance("", "ab", 2), Some(2));
    assert_eq!(bounded_edit_distance("abc", "abc", 0), Some(0));
}

proptest! {
    #[test]
    fn parsing_and_resolving_arbitrary_strings_never_panics(s in any::<String>()) {
        if let Ok(name) = ResourceName::parse(&s) {
            let _ = name.resolve(&cluster());
        }
    }

    #[test]
    fn parsing_name_like_strings_never_panics(s in "[a-zA-Z0-9./ -]{0,24}") {
        if let Ok(name) = ResourceName::parse(&s) {
            prop_assert!(!name.candidates().is_empty());
            let _ = name.resolve(&cluster());
        }
    }
}
