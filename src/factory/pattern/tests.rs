use std::collections::HashSet;

use serde_json::json;

use super::*;
use crate::factory::FactoryError;

fn resource(
    plural: &str,
    kind: &str,
    scope: &str,
    verbs: &[&str],
    categories: &[&str],
) -> serde_json::Value {
    json!({
        "resource": plural,
        "responseKind": { "kind": kind },
        "scope": scope,
        "verbs": verbs,
        "categories": categories,
        "shortNames": if plural == "events" { vec!["ev"] } else { vec![] },
    })
}

const LW: &[&str] = &["get", "list", "watch"];

/// Core pods, events, namespaces, bindings (create only); apps deployments;
/// events.k8s.io events; example.com widgets (v2 preferred, v1 too, category
/// qa) and gadgets (cluster); sub.example.com things (v1 only, qa);
/// other.io parts.
fn snapshot() -> DiscoverySnapshot {
    let doc = json!({ "items": [
        { "metadata": { "name": "" }, "versions": [{ "version": "v1", "resources": [
            resource("pods", "Pod", "Namespaced", LW, &["all"]),
            resource("events", "Event", "Namespaced", LW, &[]),
            resource("namespaces", "Namespace", "Cluster", LW, &[]),
            resource("bindings", "Binding", "Namespaced", &["create"], &[]),
        ]}]},
        { "metadata": { "name": "apps" }, "versions": [{ "version": "v1", "resources": [
            resource("deployments", "Deployment", "Namespaced", LW, &["all"]),
        ]}]},
        { "metadata": { "name": "events.k8s.io" }, "versions": [{ "version": "v1", "resources": [
            resource("events", "Event", "Namespaced", LW, &[]),
        ]}]},
        { "metadata": { "name": "example.com" }, "versions": [
            { "version": "v2", "resources": [
                resource("widgets", "Widget", "Namespaced", LW, &["qa"]),
            ]},
            { "version": "v1", "resources": [
                resource("widgets", "Widget", "Namespaced", LW, &["qa"]),
                resource("gadgets", "Gadget", "Cluster", LW, &[]),
            ]},
        ]},
        { "metadata": { "name": "sub.example.com" }, "versions": [{ "version": "v1", "resources": [
            resource("things", "Thing", "Namespaced", LW, &["qa"]),
        ]}]},
        { "metadata": { "name": "other.io" }, "versions": [{ "version": "v1", "resources": [
            resource("parts", "Part", "Namespaced", LW, &[]),
        ]}]},
    ]});
    let custom: HashSet<(String, String)> = [
        ("example.com", "widgets"),
        ("example.com", "gadgets"),
        ("sub.example.com", "things"),
        ("other.io", "parts"),
    ]
    .into_iter()
    .map(|(g, p)| (g.to_string(), p.to_string()))
    .collect();
    DiscoverySnapshot::from_aggregated(serde_json::from_value(doc).unwrap(), Some(custom))
}

fn keys(pattern: &ResourcePattern) -> Vec<String> {
    pattern
        .select(&snapshot())
        .iter()
        .map(|r| r.key().to_string())
        .collect()
}

#[test]
fn a_group_glob_selects_subdomains_in_the_preferred_version() {
    let p = ResourcePattern::default().groups(["*.example.com"]);
    assert_eq!(keys(&p), ["things.v1.sub.example.com"]);
    let p = ResourcePattern::default().groups(["example.com", "*.example.com"]);
    assert_eq!(
        keys(&p),
        [
            "gadgets.v1.example.com",
            "widgets.v2.example.com",
            "things.v1.sub.example.com"
        ]
    );
}

#[test]
fn a_pinned_version_selects_only_resources_served_in_it() {
    let p = ResourcePattern::default()
        .groups(["example.com"])
        .version("v1");
    assert_eq!(
        keys(&p),
        ["gadgets.v1.example.com", "widgets.v1.example.com"]
    );
    let p = ResourcePattern::default()
        .groups(["example.com"])
        .version("v9");
    assert!(keys(&p).is_empty());
}

#[test]
fn star_selects_every_watchable_resource_once() {
    let all = keys(&ResourcePattern::default().groups(["*"]));
    assert!(all.contains(&"pods.v1".to_string()), "{all:?}");
    assert!(
        !all.iter().any(|k| k.starts_with("bindings")),
        "create-only: {all:?}"
    );
    assert_eq!(all.iter().filter(|k| k.starts_with("widgets")).count(), 1);
    assert_eq!(all.len(), 9, "{all:?}");
}

#[test]
fn categories_and_custom_resources_narrow_each_other() {
    assert_eq!(
        keys(&ResourcePattern::default().categories(["qa"])),
        ["widgets.v2.example.com", "things.v1.sub.example.com"]
    );
    assert_eq!(
        keys(&ResourcePattern::default().categories(["all"])),
        ["pods.v1", "deployments.v1.apps"]
    );
    assert_eq!(
        keys(&ResourcePattern::default().custom_resources(true)),
        [
            "gadgets.v1.example.com",
            "widgets.v2.example.com",
            "parts.v1.other.io",
            "things.v1.sub.example.com"
        ]
    );
    assert_eq!(
        keys(
            &ResourcePattern::default()
                .custom_resources(true)
                .categories(["qa"])
                .groups(["example.com"])
        ),
        ["widgets.v2.example.com"]
    );
}

#[test]
fn unknown_crds_select_nothing_rather_than_everything() {
    let known = snapshot();
    let p = ResourcePattern::default().custom_resources(true);
    assert!(p.select_with(&known, &|_, _| false).is_empty());
}

#[test]
fn scope_include_and_exclude() {
    let namespaced_but_events = ResourcePattern::default()
        .groups(["*"])
        .scope(ScopeFilter::Namespaced)
        .exclude(["events"]);
    let got = keys(&namespaced_but_events);
    assert!(!got.iter().any(|k| k.starts_with("events")), "{got:?}");
    assert!(
        !got.iter()
            .any(|k| k.starts_with("namespaces") || k.starts_with("gadgets")),
        "{got:?}"
    );
    assert!(got.contains(&"pods.v1".to_string()));

    // A group after the name narrows it; a short name or kind works too.
    let core_events_out = ResourcePattern::default()
        .groups(["*"])
        .exclude(["ev.core", "Deployment"]);
    let got = keys(&core_events_out);
    assert!(
        got.contains(&"events.v1.events.k8s.io".to_string()),
        "{got:?}"
    );
    assert!(!got.contains(&"events.v1".to_string()), "{got:?}");
    assert!(!got.iter().any(|k| k.starts_with("deployments")), "{got:?}");

    // include adds whatever the criteria say; exclude wins over it.
    let p = ResourcePattern::default()
        .groups(["other.io"])
        .include(["pods", "namespaces"])
        .scope(ScopeFilter::Namespaced);
    assert_eq!(keys(&p), ["pods.v1", "parts.v1.other.io"]);
    let p = ResourcePattern::default()
        .include(["pods", "deployment"])
        .exclude(["pod"]);
    assert_eq!(keys(&p), ["deployments.v1.apps"]);
    // An include of something not watchable adds nothing.
    assert!(keys(&ResourcePattern::default().include(["bindings"])).is_empty());
}

#[test]
fn problems_are_all_reported_with_their_place() {
    assert!(matches!(
        ResourcePattern::default().check(),
        Err(FactoryError::EmptyPattern)
    ));
    let p = ResourcePattern::default()
        .groups(["ok.io", "Bad_Group"])
        .exclude(["", "fine"])
        .categories(["q a"]);
    let found: Vec<(&str, Option<usize>)> = p.problems().iter().map(|(f, i, _)| (*f, *i)).collect();
    assert_eq!(
        found,
        [
            ("groups", Some(1)),
            ("categories", Some(0)),
            ("exclude", Some(0))
        ]
    );
    let message = p.check().unwrap_err().to_string();
    assert!(message.contains("\"Bad_Group\""), "{message}");
}

#[test]
fn command_line_forms() {
    assert_eq!(ResourcePattern::parse("pods").unwrap(), None);
    assert_eq!(ResourcePattern::parse("widgets.example.com").unwrap(), None);
    let p = ResourcePattern::parse("*").unwrap().unwrap();
    assert_eq!(p.groups, ["*"]);
    let p = ResourcePattern::parse("category:qa, all").unwrap().unwrap();
    assert_eq!(p.categories, ["qa", "all"]);
    let p = ResourcePattern::parse("group:apps").unwrap().unwrap();
    assert_eq!(p.groups, ["apps"]);
    for bad in [
        "category:",
        "custom:,",
        "group:",
        "*.Example.com",
        "custom:a b",
    ] {
        assert!(ResourcePattern::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn globs_never_backtrack_badly_and_match_whole_groups() {
    assert!(group_matches("*", ""));
    assert!(group_matches("core", ""));
    assert!(!group_matches("core", "core.io"));
    assert!(group_matches("*.example.com", "a.b.example.com"));
    assert!(!group_matches("*.example.com", "example.com"));
    assert!(!group_matches("*.example.com", "example.com.evil.io"));
    assert!(group_matches("a*b*c", "aXbYc"));
    assert!(!group_matches("a*b*c", "aXbY"));
    let long = "a".repeat(10_000);
    assert!(!group_matches(&format!("{}b", "*a".repeat(50)), &long));
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Whatever a command line says, parsing answers without a panic.
        #[test]
        fn parsing_never_panics(input in ".{0,80}") {
            let _ = ResourcePattern::parse(&input);
        }

        /// A group matches the glob made by replacing any part of it with
        /// `*`, and never a glob with a literal it lacks.
        #[test]
        fn a_star_stands_for_any_part(group in "[a-z0-9.-]{0,30}", from in 0usize..31, len in 0usize..31) {
            let from = from.min(group.len());
            let to = (from + len).min(group.len());
            let glob = format!("{}*{}", &group[..from], &group[to..]);
            prop_assert!(glob_matches(glob.as_bytes(), group.as_bytes()), "{glob} {group}");
            let with_x = format!("{group}X");
            prop_assert!(!glob_matches(with_x.as_bytes(), group.as_bytes()));
        }
    }
}
