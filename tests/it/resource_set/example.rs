//! The pattern-based example config, run as a resource set.

use std::path::Path;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube_dynamic_informer::declarative::{ResourceSet, SetEvent};
use serde_json::json;

use super::patterns::crd;
use crate::support::{self, wait_for};

/// `examples/configs/example-crds-pattern.yaml`: a CRD installed under
/// `kdi.example.com` with category `qa` gets an informer from each
/// pattern, with the `color` index on the first; its deletion removes
/// both. (Other CRDs of the shared server may match too: only this test's
/// group is looked at.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pattern_example_follows_a_crd() {
    let admin = support::admin().await;
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/configs/example-crds-pattern.yaml");
    let set = ResourceSet::from_file(admin.clone(), &path).await.unwrap();
    let reload = set.last_reload().expect("the first load is recorded");
    assert!(reload.success && reload.errors.is_empty(), "{reload:?}");
    let (_, mut events) = set.subscribe().await;
    set.start().unwrap();

    let group = format!("t{}.kdi.example.com", support::suffix());
    let mut def = serde_json::to_value(crd(&group, "widgets", "Widget", true)).unwrap();
    def["spec"]["names"]["categories"] = json!(["qa"]);
    let def: CustomResourceDefinition = serde_json::from_value(def).unwrap();
    let ar = support::install_crd(&admin, &def).await;
    let ns = support::namespace(&admin, "set-example").await;
    Api::<DynamicObject>::namespaced_with(admin.clone(), &ns, &ar)
        .create(
            &PostParams::default(),
            &support::widget(&ar, "w", json!({ "color": "red" })),
        )
        .await
        .unwrap();

    let ours = format!("widgets.v1.{group}");
    let mut entries = Vec::new();
    let mut member = None;
    while entries.len() < 2 {
        let event = tokio::time::timeout(Duration::from_secs(60), events.recv())
            .await
            .expect("the CRD's informers within 60s")
            .expect("events");
        if let SetEvent::Added(m) = event
            && m.resource == ours
        {
            entries.push(m.entry.clone());
            if m.entry == "example-crds" {
                member = Some(m);
            }
        }
    }
    entries.sort();
    assert_eq!(entries, ["example-crds", "qa"]);
    let member = member.unwrap();
    wait_for(
        "the red widget indexed",
        Duration::from_secs(30),
        || async {
            match member.informer.lister().by_index("color", "red") {
                Ok(found) if found.len() == 1 => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;

    Api::<CustomResourceDefinition>::all(admin.clone())
        .delete(&format!("widgets.{group}"), &DeleteParams::default())
        .await
        .unwrap();
    wait_for(
        "both informers of the CRD removed",
        Duration::from_secs(60),
        || async {
            let left: Vec<String> = set
                .members()
                .await
                .into_iter()
                .filter(|m| m.resource == ours)
                .map(|m| m.entry)
                .collect();
            if left.is_empty() {
                Ok(())
            } else {
                Err(format!("{left:?}"))
            }
        },
    )
    .await;
    set.shutdown().await;
}
