//! A CRD deleted and created again while a factory's informer watches it and
//! writers keep creating, updating and deleting its objects.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::api::{Api, DeleteParams, DynamicObject};
use kube_dynamic_informer::factory::InformerFactory;
use kube_dynamic_informer::informer::InformerStatus;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{MakeObject, Tracker, churn, churn_until, converge, quick_backoff};
use crate::support::{self, wait_for};

fn widget_maker() -> MakeObject {
    std::sync::Arc::new(|ar, name, n| support::widget(ar, name, json!({ "n": n })))
}

/// Twice under writes: the CRD is deleted (the informer empties its cache,
/// the handlers get a Delete for every object, the status says Gone), then
/// created again (the informer lists again by itself). At the end the cache
/// and the handlers equal the server, with no second Add and no event for
/// an object the handlers did not have.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_deleted_and_created_again_under_writes_is_followed() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "rel-crd").await;
    let group = support::unique_group();
    let crd = support::widget_crd(&group);
    let ar = support::install_crd(&client, &crd).await;
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);
    let crds = Api::<CustomResourceDefinition>::all(client.clone());

    let factory = InformerFactory::with_options(
        client.clone(),
        crate::support::options()
            .namespace(&ns)
            .backoff(quick_backoff()),
    );
    let widgets = factory
        .for_resource(format!("widgets.v1.{group}"))
        .await
        .unwrap();
    let tracker = Tracker::default();
    widgets.informer().add_handler(tracker.handler());
    factory.start().unwrap();
    assert!(
        factory
            .wait_for_cache_sync(Duration::from_secs(30))
            .await
            .all_synced()
    );

    for round in 0..2 {
        let stop = CancellationToken::new();
        let (writes, writers) = churn(
            api.clone(),
            ar.clone(),
            &format!("r{round}"),
            Vec::new(),
            widget_maker(),
            3,
            stop.clone(),
        );
        churn_until(&writes, 150, Duration::from_secs(60)).await;
        let cached = widgets.informer().store().keys();
        assert!(!cached.is_empty());

        // Deleted while written to.
        crds.delete(&format!("widgets.{group}"), &DeleteParams::default())
            .await
            .unwrap();
        wait_for(
            "the informer to report Gone",
            Duration::from_secs(60),
            || async {
                match widgets.status() {
                    InformerStatus::Gone { .. } => Ok(()),
                    other => Err(other.to_string()),
                }
            },
        )
        .await;
        assert!(
            widgets.informer().store().is_empty(),
            "the cache was emptied"
        );
        wait_for(
            "a Delete for every cached object",
            Duration::from_secs(30),
            || async {
                let view = tracker.objects();
                if view.is_empty() {
                    Ok(())
                } else {
                    Err(format!("{} objects left in the handler's view", view.len()))
                }
            },
        )
        .await;
        for key in &cached {
            assert!(
                tracker.deletes_of(key).0 >= 1,
                "{key} was cached and never deleted"
            );
        }

        // Created again while the writers still try.
        wait_for(
            "the old CRD to be gone",
            Duration::from_secs(60),
            || async {
                match crds.get_opt(&format!("widgets.{group}")).await {
                    Ok(None) => Ok(()),
                    Ok(Some(_)) => Err("still terminating".to_string()),
                    Err(e) => Err(e.to_string()),
                }
            },
        )
        .await;
        support::install_crd(&client, &crd).await;
        churn_until(&writes, writes.ok() + 100, Duration::from_secs(60)).await;
        stop.cancel();
        writers.await.unwrap();
        let server = converge(widgets.informer(), &tracker, &api, Duration::from_secs(60)).await;
        assert!(!server.is_empty());
        assert_eq!(widgets.status(), InformerStatus::Synced);
        eprintln!(
            "crd round {round}: writers {writes}; {} cached before the delete, {} objects after re-creation; {} tombstones so far",
            cached.len(),
            server.len(),
            tracker.tombstones()
        );
    }
    assert_eq!(tracker.problems(), Vec::<String>::new());
    assert_eq!(tracker.second_adds(), Vec::<String>::new());
    factory.shutdown().await;
}
