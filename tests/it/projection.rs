//! Projections against a real kube-apiserver: the cache holds only the kept
//! fields, from the list and from watch events, in either storage mode, and
//! equal projections share one informer in a factory.

use std::time::Duration;

use kube_client::api::{Api, DynamicObject, Patch, PatchParams};
use kube_dynamic_informer::cache::IndexFn;
use kube_dynamic_informer::cache::Projection;
use kube_dynamic_informer::cache::Storage;
use kube_dynamic_informer::factory::InformerFactory;
use serde_json::{Value, json};

use crate::support;

fn keep(paths: &[&str]) -> Projection {
    Projection::new(paths).unwrap()
}

#[tokio::test]
async fn a_projected_cache_holds_only_the_kept_fields_and_equal_projections_share_it() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "projection").await;
    let ar = support::install_crd(&client, &support::widget_crd(&support::unique_group())).await;
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);
    let mut widget = support::widget(
        &ar,
        "w0",
        json!({
            "color": "red",
            "size": 3,
            "parts": [{ "name": "a", "weight": 1 }, { "name": "b" }],
        }),
    );
    widget.metadata.labels = Some(
        [
            ("app.kubernetes.io/name".to_string(), "widget".to_string()),
            ("tier".to_string(), "front".to_string()),
        ]
        .into(),
    );
    widget.metadata.annotations = Some([("note".to_string(), "x".to_string())].into());
    let created = support::create_many(&api, vec![widget], 1).await.remove(0);

    let factory = InformerFactory::with_options(client.clone(), support::options().namespace(&ns));
    // The storage mode the suite does not run in, so that both are tried.
    let other_storage = match support::options().cache.storage {
        Storage::Objects => Storage::Compact,
        Storage::Compact => Storage::Objects,
    };
    let resource = format!("{}.{}.{}", ar.plural, ar.version, ar.group);
    let projected = factory
        .for_resource_with(&resource, |o| {
            o.projection(keep(&[
                "spec.color",
                "spec.parts",
                r#"metadata.labels["app.kubernetes.io/name"]"#,
            ]))
        })
        .await
        .unwrap();
    let same = factory
        .for_resource_with(&resource, |o| {
            o.projection(keep(&[
                "spec.parts",
                "metadata.labels['app.kubernetes.io/name']",
                "spec.color",
                "spec.parts.name",
            ]))
        })
        .await
        .unwrap();
    let identity_only = factory
        .for_resource_with(&resource, |o| o.projection(keep(&[])))
        .await
        .unwrap();
    let in_other_storage = factory
        .for_resource_with(&resource, |o| {
            o.projection(keep(&[
                "spec.color",
                "spec.parts",
                r#"metadata.labels["app.kubernetes.io/name"]"#,
            ]))
            .storage(other_storage)
        })
        .await
        .unwrap();
    let whole = factory.for_resource(&resource).await.unwrap();
    assert_eq!(projected, same);
    assert_ne!(projected, whole);
    assert_ne!(projected, identity_only);
    assert_ne!(projected, in_other_storage);
    assert_eq!(factory.informers().len(), 4);
    projected
        .informer()
        .add_index("color", IndexFn::jmespath("color", "spec.color").unwrap())
        .unwrap();
    projected
        .informer()
        .add_index("size", IndexFn::jmespath("size", "spec.size").unwrap())
        .unwrap();
    factory.start().unwrap();
    assert!(
        factory
            .wait_for_cache_sync(Duration::from_secs(60))
            .await
            .all_synced()
    );

    let key = format!("{ns}/w0");
    let cached = |informer: &kube_dynamic_informer::InformerHandle| {
        serde_json::to_value(informer.lister().get(&key).expect("w0 cached")).unwrap()
    };
    // What the server sends and a projection drops.
    let full = cached(&whole);
    for dropped in [
        "creationTimestamp",
        "generation",
        "managedFields",
        "annotations",
    ] {
        assert!(full["metadata"].get(dropped).is_some(), "{dropped}: {full}");
    }
    let identity = |rv: &str| {
        json!({
            "apiVersion": ar.api_version,
            "kind": "Widget",
            "metadata": {
                "name": "w0",
                "namespace": ns,
                "uid": created.metadata.uid.as_deref().unwrap(),
                "resourceVersion": rv,
            },
        })
    };
    let kept = |rv: &str, color: &str| {
        let mut object = identity(rv);
        object["metadata"]["labels"] = json!({ "app.kubernetes.io/name": "widget" });
        object["spec"] = json!({
            "color": color,
            "parts": [{ "name": "a", "weight": 1 }, { "name": "b" }],
        });
        object
    };
    let created_rv = created.metadata.resource_version.as_deref().unwrap();
    assert_eq!(cached(&projected), kept(created_rv, "red"));
    assert_eq!(cached(&in_other_storage), kept(created_rv, "red"));
    assert_eq!(cached(&identity_only), identity(created_rv));

    // Indexes, and the lister's label selectors, read the projected object.
    let lister = projected.lister();
    assert_eq!(lister.by_index("color", "red").unwrap().len(), 1);
    assert!(lister.by_index("size", "3").unwrap().is_empty());
    assert!(whole.lister().list("tier=front").unwrap().len() == 1);
    assert!(lister.list("tier=front").unwrap().is_empty());
    assert_eq!(
        lister.list("app.kubernetes.io/name=widget").unwrap().len(),
        1
    );

    // An update arrives through the watch, projected too.
    let patched = api
        .patch(
            "w0",
            &PatchParams::default(),
            &Patch::Merge(json!({
                "metadata": { "annotations": { "note": "y" } },
                "spec": { "color": "blue", "size": 4 },
            })),
        )
        .await
        .unwrap();
    let patched_rv = patched.metadata.resource_version.clone().unwrap();
    let seen: Value = support::wait_for(
        "the update in the projected cache",
        Duration::from_secs(30),
        || {
            let now = cached(&projected);
            let rv = patched_rv.clone();
            async move {
                if now["metadata"]["resourceVersion"] == rv.as_str() {
                    Ok(now)
                } else {
                    Err(now.to_string())
                }
            }
        },
    )
    .await;
    assert_eq!(seen, kept(&patched_rv, "blue"));
    support::wait_for(
        "the update in the projected cache of the other storage mode",
        Duration::from_secs(30),
        || {
            let now = cached(&in_other_storage);
            let expected = kept(&patched_rv, "blue");
            async move {
                if now == expected {
                    Ok(())
                } else {
                    Err(now.to_string())
                }
            }
        },
    )
    .await;
    assert_eq!(lister.by_index("color", "blue").unwrap().len(), 1);
    factory.shutdown().await;
}
