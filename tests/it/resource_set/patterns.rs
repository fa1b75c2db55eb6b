//! A pattern over two groups while CRDs are created, moved to a new
//! preferred version and deleted.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube_dynamic_informer::declarative::{InformerSet, PatternSpec};
use kube_dynamic_informer::declarative::{Removal, ResourceSet, SetEvent, SetMember};
use kube_dynamic_informer::factory::ResourcePattern;
use kube_dynamic_informer::informer::InformerStatus;
use serde_json::json;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::support::{self, wait_for};

/// A CRD `<plural>.<group>` like [`support::widget_crd`], of another
/// name, namespaced or not.
pub fn crd(group: &str, plural: &str, kind: &str, namespaced: bool) -> CustomResourceDefinition {
    let mut value = serde_json::to_value(support::widget_crd(group)).unwrap();
    value["metadata"]["name"] = json!(format!("{plural}.{group}"));
    value["spec"]["names"] = json!({
        "plural": plural, "singular": kind.to_lowercase(), "kind": kind,
        "listKind": format!("{kind}List"), "categories": ["kdi-test"]
    });
    value["spec"]["scope"] = json!(if namespaced { "Namespaced" } else { "Cluster" });
    serde_json::from_value(value).unwrap()
}

/// The next set event that is not a reload, within a deadline.
pub async fn next_change(events: &mut UnboundedReceiver<SetEvent>) -> SetEvent {
    loop {
        match tokio::time::timeout(Duration::from_secs(60), events.recv()).await {
            Ok(Some(SetEvent::Reloaded(_))) => continue,
            Ok(Some(e)) => return e,
            Ok(None) => panic!("the set's events ended"),
            Err(_) => panic!("no set event within 60s"),
        }
    }
}

fn added(e: SetEvent) -> SetMember {
    match e {
        SetEvent::Added(m) => m,
        other => panic!("expected an Added event, got {other:?}"),
    }
}

fn removed(e: SetEvent) -> (SetMember, Removal) {
    match e {
        SetEvent::Removed { member, reason } => (member, reason),
        other => panic!("expected a Removed event, got {other:?}"),
    }
}

/// Widgets in group `a.<base>`, gadgets (cluster-scoped) in `b.<base>`,
/// and one CRD outside the pattern. The pattern `*.<base>` (custom
/// resources, index `color`) gets an informer for each CRD of its groups
/// as it is served; moving widgets to a new preferred version replaces its
/// informer by one in that version with the same objects; deleting gadgets
/// removes its informer, which stops, and the factory holds exactly the
/// members afterwards, with fewer tasks alive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pattern_over_two_groups_follows_crds_created_moved_and_deleted() {
    let admin = support::admin().await;
    let ns = support::namespace(&admin, "set-pattern").await;
    let base = support::unique_group();
    let (group_a, group_b) = (format!("a.{base}"), format!("b.{base}"));
    let mut set = InformerSet {
        api_version: kube_dynamic_informer::declarative::API_VERSION.into(),
        kind: kube_dynamic_informer::declarative::KIND.into(),
        defaults: crate::support::options(),
        informers: Vec::new(),
        patterns: Vec::new(),
        clusters: Default::default(),
        shard_group: None,
    };
    let mut spec = PatternSpec::new(
        "example",
        ResourcePattern::default()
            .groups([format!("*.{base}")])
            .custom_resources(true),
    );
    spec.options = crate::support::options();
    spec.indexes.insert("color".into(), "spec.color".into());
    set.patterns.push(spec);

    let resource_set = ResourceSet::new(admin.clone(), set).await.unwrap();
    let (members, mut events) = resource_set.subscribe().await;
    assert!(members.is_empty(), "{members:?}");
    resource_set.start().unwrap();

    // Outside the pattern: never selected.
    let outside = crd(&format!("other-{base}"), "widgets", "Widget", true);
    support::install_crd(&admin, &outside).await;

    let widgets_crd = crd(&group_a, "widgets", "Widget", true);
    let ar = support::install_crd(&admin, &widgets_crd).await;
    let widgets = added(next_change(&mut events).await);
    assert_eq!(widgets.resource, format!("widgets.v1.{group_a}"));
    assert_eq!(widgets.entry, "example");
    let api = Api::<DynamicObject>::namespaced_with(admin.clone(), &ns, &ar);
    for (name, spec) in [
        ("red-1", json!({ "color": "red" })),
        ("plain", json!({ "size": 3 })),
    ] {
        api.create(&PostParams::default(), &support::widget(&ar, name, spec))
            .await
            .unwrap();
    }
    let lister = widgets.informer.lister();
    wait_for("both widgets cached", Duration::from_secs(30), || async {
        let n = lister.list_all().len();
        if n == 2 {
            Ok(())
        } else {
            Err(format!("{n} cached"))
        }
    })
    .await;
    // An object the index expression gives nothing for is simply not in it.
    let red = lister.by_index("color", "red").unwrap();
    assert_eq!(red.len(), 1);
    assert_eq!(
        widgets
            .informer
            .informer()
            .store()
            .index_values("color")
            .unwrap(),
        ["red"]
    );

    let gadgets_crd = crd(&group_b, "gadgets", "Gadget", false);
    support::install_crd(&admin, &gadgets_crd).await;
    let gadgets = added(next_change(&mut events).await);
    assert_eq!(gadgets.resource, format!("gadgets.v1.{group_b}"));
    wait_for("gadgets synced", Duration::from_secs(30), || async {
        if gadgets.informer.has_synced() {
            Ok(())
        } else {
            Err(gadgets.informer.status().to_string())
        }
    })
    .await;
    let tasks = tokio::runtime::Handle::current().metrics();
    let alive_with_both = tasks.num_alive_tasks();

    // A new served version, v2, becomes the preferred one: the informer of
    // v1 makes way for one of v2 with the same objects.
    let crds = Api::<CustomResourceDefinition>::all(admin.clone());
    let mut v2 = serde_json::to_value(&widgets_crd.spec.versions[0]).unwrap();
    v2["name"] = json!("v2");
    v2["storage"] = json!(false);
    crds.patch(
        &widgets_crd.metadata.name.clone().unwrap(),
        &PatchParams::default(),
        &Patch::Merge(json!({ "spec": { "versions": [
            serde_json::to_value(&widgets_crd.spec.versions[0]).unwrap(), v2
        ]}})),
    )
    .await
    .unwrap();
    let (old, why) = removed(next_change(&mut events).await);
    assert_eq!(old.resource, format!("widgets.v1.{group_a}"));
    assert_eq!(why, Removal::NoLongerSelected);
    let moved = added(next_change(&mut events).await);
    assert_eq!(moved.resource, format!("widgets.v2.{group_a}"));
    let moved_lister = moved.informer.lister();
    wait_for(
        "widgets listed again in v2",
        Duration::from_secs(30),
        || async {
            let all = moved_lister.list_all();
            if all.len() == 2
                && all
                    .iter()
                    .all(|o| o.api_version().is_some_and(|v| v.ends_with("/v2")))
            {
                Ok(())
            } else {
                Err(format!(
                    "{} cached: {:?}",
                    all.len(),
                    all.iter()
                        .map(|o| (o.api_version(), o.kind()))
                        .collect::<Vec<_>>()
                ))
            }
        },
    )
    .await;
    assert_eq!(moved_lister.by_index("color", "red").unwrap().len(), 1);
    assert_eq!(old.informer.status(), InformerStatus::Stopped);

    // Deleting gadgets' CRD removes its informer and stops it.
    crds.delete(
        &gadgets_crd.metadata.name.clone().unwrap(),
        &DeleteParams::default(),
    )
    .await
    .unwrap();
    let (gone, why) = removed(next_change(&mut events).await);
    assert_eq!(gone.resource, format!("gadgets.v1.{group_b}"));
    assert_eq!(why, Removal::NoLongerSelected);
    wait_for(
        "the gadgets informer to stop",
        Duration::from_secs(30),
        || async {
            match gone.informer.status() {
                InformerStatus::Stopped => Ok(()),
                other => Err(other.to_string()),
            }
        },
    )
    .await;

    // Nothing leaks: the factory holds the members and nothing else, and
    // fewer tasks run than with both informers.
    let members = resource_set.members().await;
    assert_eq!(members.len(), 1, "{members:?}");
    let held: Vec<String> = resource_set
        .factory()
        .informers()
        .iter()
        .map(|i| i.resource().to_string())
        .collect();
    assert_eq!(held, [format!("widgets.v2.{group_a}")]);
    wait_for(
        "fewer tasks once gadgets stopped",
        Duration::from_secs(30),
        || async {
            let now = tasks.num_alive_tasks();
            if now < alive_with_both {
                Ok(())
            } else {
                Err(format!("{now} alive, {alive_with_both} before"))
            }
        },
    )
    .await;
    resource_set.shutdown().await;
    assert_eq!(moved.informer.status(), InformerStatus::Stopped);
    for c in [&widgets_crd, &outside] {
        let _ = crds
            .delete(&c.metadata.name.clone().unwrap(), &DeleteParams::default())
            .await;
    }
}
