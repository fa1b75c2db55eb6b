//! Discovery against a real kube-apiserver: every name form for built-in and
//! CRD resources, refresh on a miss, aggregated and per-group discovery
//! agreeing, an aggregated API that is down, and CRDs coming and going.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList;
use kube_client::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube_client::core::ApiResource;
use kube_dynamic_informer::factory::{DiscoveryCache, DiscoveryConfig, FactoryError};
use kube_dynamic_informer::vocabulary::ResourceAvailability;
use kube_dynamic_informer::vocabulary::{ResourceKey, ResourceName, VocabularyError};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support;

/// A CRD whose plural, kind and short name no other test uses, so that even
/// bare names resolve to it alone.
pub fn gizmo_crd(group: &str, marker: &str, scope: &str) -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "metadata": { "name": format!("gizmo{marker}s.{group}") },
        "spec": {
            "group": group,
            "scope": scope,
            "names": {
                "plural": format!("gizmo{marker}s"), "singular": format!("gizmo{marker}"),
                "kind": format!("Gizmo{marker}"), "listKind": format!("Gizmo{marker}List"),
                "shortNames": [format!("gz{marker}")]
            },
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": {
                    "type": "object",
                    "properties": { "spec": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } }
                }}
            }]
        }
    }))
    .unwrap()
}

async fn resolve(discovery: &DiscoveryCache, name: &str) -> Result<String, FactoryError> {
    let parsed = ResourceName::parse(name).map_err(|problem| FactoryError::Resolve {
        problem: Box::new(problem),
        unavailable: vec![],
    })?;
    discovery
        .resolve(&parsed)
        .await
        .map(|r| r.key().to_string())
}

#[tokio::test]
async fn built_in_resources_resolve_by_every_name_form() {
    let discovery = DiscoveryCache::new(support::admin().await);
    for name in [
        "deployments.v1.apps",
        "deployments.apps",
        "apps/v1/deployments",
        "deployments",
        "deployment",
        "Deployment",
        "deploy",
        "Deployment.apps",
    ] {
        assert_eq!(
            resolve(&discovery, name).await.unwrap(),
            "deployments.v1.apps",
            "{name}"
        );
    }
    for name in ["v1/pods", "pods", "pod", "Pod", "po", "pods.v1"] {
        assert_eq!(
            resolve(&discovery, name).await.unwrap(),
            "pods.v1",
            "{name}"
        );
    }
    // "events" is in core and in events.k8s.io: the core group wins, as in
    // kubectl; naming the group picks the other.
    assert_eq!(resolve(&discovery, "ev").await.unwrap(), "events.v1");
    assert_eq!(
        resolve(&discovery, "events.events.k8s.io").await.unwrap(),
        "events.v1.events.k8s.io"
    );
    // A version left out is the group's preferred one (autoscaling serves v1
    // and v2, and prefers v2).
    assert_eq!(
        resolve(&discovery, "hpa").await.unwrap(),
        "horizontalpodautoscalers.v2.autoscaling"
    );
    assert_eq!(
        resolve(&discovery, "hpa.v1.autoscaling").await.unwrap(),
        "horizontalpodautoscalers.v1.autoscaling"
    );

    let ns = discovery
        .resolve(&ResourceName::parse("ns").unwrap())
        .await
        .unwrap();
    assert_eq!(ns.key(), ResourceKey::new("", "v1", "namespaces"));
    assert!(!ns.namespaced, "namespaces are cluster-scoped");
    assert!(
        discovery
            .resolve(&ResourceName::parse("cm").unwrap())
            .await
            .unwrap()
            .namespaced
    );

    let err = resolve(&discovery, "deploymnts").await.unwrap_err();
    assert!(
        matches!(&err, FactoryError::Resolve { problem, .. }
            if matches!(&**problem, VocabularyError::NotFound { suggestions, .. }
                if suggestions.first() == Some(&ResourceKey::new("apps", "v1", "deployments")))),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("did you mean deployments.v1.apps"),
        "{err}"
    );
    assert!(matches!(
        ResourceName::parse("pods/status"),
        Err(VocabularyError::Subresource { .. })
    ));
    // Subresources never appear as resources.
    let snapshot = discovery.snapshot();
    assert!(snapshot.resources().iter().all(|r| !r.plural.contains('/')));
    assert!(
        snapshot.is_aggregated(),
        "every supported release (v1.34 on) offers aggregated discovery"
    );
}

#[tokio::test]
async fn aggregated_and_per_group_discovery_agree() {
    let client = support::admin().await;
    let aggregated = DiscoveryCache::new(client.clone()).refresh().await.unwrap();
    let per_group =
        DiscoveryCache::with_config(client.clone(), DiscoveryConfig::default().aggregated(false))
            .refresh()
            .await
            .unwrap();
    assert!(aggregated.is_aggregated());
    assert!(!per_group.is_aggregated());
    // Built-in groups only: other tests add and remove CRDs meanwhile.
    let built_in =
        |r: &&kube_dynamic_informer::vocabulary::KnownResource| !r.group.contains("kdi-test");
    let mut a: Vec<_> = aggregated
        .resources()
        .iter()
        .filter(built_in)
        .cloned()
        .collect();
    let mut p: Vec<_> = per_group
        .resources()
        .iter()
        .filter(built_in)
        .cloned()
        .collect();
    a.sort_by_key(|r| r.key());
    p.sort_by_key(|r| r.key());
    assert_eq!(a, p);
    let deploy = a
        .iter()
        .find(|r| r.plural == "deployments" && r.group == "apps")
        .unwrap();
    assert_eq!(deploy.short_names, ["deploy"]);
    assert_eq!(deploy.singular, "deployment");
    assert!(deploy.preferred_version);
    // The per-group path reads the same documents kubectl does.
    let raw: APIResourceList = client.list_api_group_resources("apps/v1").await.unwrap();
    assert!(raw.resources.iter().any(|r| r.name == "deployments/scale"));
    assert!(!p.iter().any(|r| r.plural.contains('/')));
}

/// A client whose requests for aggregated discovery reach the server as plain
/// `application/json` requests, as from a server (or a proxy in front of it)
/// that does not offer aggregated discovery; counts the requests it changed.
fn client_without_aggregated_discovery(
    config: kube_client::Config,
) -> (kube_client::Client, Arc<AtomicUsize>) {
    let rewritten = Arc::new(AtomicUsize::new(0));
    let count = rewritten.clone();
    let layer = tower::util::MapRequestLayer::new(
        move |mut request: http::Request<kube_client::client::Body>| {
            let accept = request.headers().get(http::header::ACCEPT);
            if accept.is_some_and(|a| a.to_str().unwrap_or("").contains("apidiscovery")) {
                count.fetch_add(1, Ordering::SeqCst);
                request.headers_mut().insert(
                    http::header::ACCEPT,
                    http::HeaderValue::from_static("application/json"),
                );
            }
            request
        },
    );
    let client = kube_client::client::ClientBuilder::try_from(config)
        .expect("client stack")
        .with_layer(&layer)
        .build();
    (client, rewritten)
}

#[tokio::test]
async fn discovery_falls_back_to_each_group_version_where_aggregated_discovery_is_not_offered() {
    let admin = support::admin().await;
    let aggregated = DiscoveryCache::new(admin).refresh().await.unwrap();
    let (client, rewritten) =
        client_without_aggregated_discovery(support::config(support::User::Admin).await);
    // Aggregated discovery asked for (the default), plain documents served.
    let discovery = DiscoveryCache::new(client);
    let snapshot = discovery.refresh().await.unwrap();
    assert!(
        rewritten.load(Ordering::SeqCst) >= 1,
        "the library asked for aggregated discovery first"
    );
    assert!(aggregated.is_aggregated());
    assert!(
        !snapshot.is_aggregated(),
        "read per group version after the plain answer"
    );
    // Built-in groups only: other tests add and remove CRDs meanwhile.
    let built_in =
        |r: &&kube_dynamic_informer::vocabulary::KnownResource| !r.group.contains("kdi-test");
    let mut a: Vec<_> = aggregated
        .resources()
        .iter()
        .filter(built_in)
        .cloned()
        .collect();
    let mut p: Vec<_> = snapshot
        .resources()
        .iter()
        .filter(built_in)
        .cloned()
        .collect();
    a.sort_by_key(|r| r.key());
    p.sort_by_key(|r| r.key());
    assert_eq!(a, p);
    assert_eq!(
        resolve(&discovery, "deploy").await.unwrap(),
        "deployments.v1.apps"
    );
}

#[tokio::test]
async fn crd_resources_resolve_by_every_name_form_after_a_refresh_on_miss() {
    let client = support::admin().await;
    let discovery = DiscoveryCache::new(client.clone());
    discovery.refresh().await.unwrap();
    let before = discovery.snapshot().generation();

    let group = support::unique_group();
    let marker = support::suffix();
    support::install_crd(&client, &gizmo_crd(&group, &marker, "Namespaced")).await;
    let want = format!("gizmo{marker}s.v1.{group}");
    for name in [
        format!("gizmo{marker}s.v1.{group}"),
        format!("gizmo{marker}s.{group}"),
        format!("{group}/v1/gizmo{marker}s"),
        format!("gizmo{marker}s"),
        format!("gizmo{marker}"),
        format!("Gizmo{marker}"),
        format!("gz{marker}"),
        format!("gz{marker}.{group}"),
    ] {
        assert_eq!(resolve(&discovery, &name).await.unwrap(), want, "{name}");
    }
    assert!(
        discovery.snapshot().generation() > before,
        "the unknown name made discovery be read again"
    );
}

#[tokio::test]
async fn the_same_kind_in_two_groups_is_ambiguous_and_the_error_lists_both() {
    let client = support::admin().await;
    let (g1, g2) = (support::unique_group(), support::unique_group());
    let marker = support::suffix();
    for g in [&g1, &g2] {
        support::install_crd(&client, &gizmo_crd(g, &marker, "Namespaced")).await;
    }
    let discovery = DiscoveryCache::new(client);
    let err = resolve(&discovery, &format!("Gizmo{marker}"))
        .await
        .unwrap_err();
    match &err {
        FactoryError::Resolve { problem, .. }
            if let VocabularyError::Ambiguous { candidates, .. } = &**problem =>
        {
            assert!(candidates.contains(&ResourceKey::new(
                g1.as_str(),
                "v1",
                format!("gizmo{marker}s")
            )));
            assert!(candidates.contains(&ResourceKey::new(
                g2.as_str(),
                "v1",
                format!("gizmo{marker}s")
            )));
        }
        other => panic!("expected an ambiguity, got {other:?}"),
    }
    assert!(err.to_string().contains("is ambiguous"), "{err}");
    assert_eq!(
        resolve(&discovery, &format!("gz{marker}.{g2}"))
            .await
            .unwrap(),
        format!("gizmo{marker}s.v1.{g2}")
    );
}

#[tokio::test]
async fn an_aggregated_api_that_is_down_is_reported_and_the_rest_still_resolves() {
    let client = support::admin().await;
    let group = support::unique_group();
    let services = Api::<DynamicObject>::all_with(
        client.clone(),
        &ApiResource {
            group: "apiregistration.k8s.io".into(),
            version: "v1".into(),
            api_version: "apiregistration.k8s.io/v1".into(),
            kind: "APIService".into(),
            plural: "apiservices".into(),
        },
    );
    let name = format!("v1beta1.{group}");
    let service: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": { "name": name },
        "spec": {
            "group": group, "version": "v1beta1",
            "groupPriorityMinimum": 100, "versionPriority": 100,
            "insecureSkipTLSVerify": true,
            "service": { "name": "nothing-listens-here", "namespace": "default", "port": 443 }
        }
    }))
    .unwrap();
    services
        .create(&PostParams::default(), &service)
        .await
        .unwrap();

    for aggregated in [true, false] {
        let discovery = DiscoveryCache::with_config(
            client.clone(),
            DiscoveryConfig {
                group_timeout: Duration::from_secs(3),
                ..DiscoveryConfig::default().aggregated(aggregated)
            },
        );
        let snapshot = support::wait_for(
            &format!("discovery (aggregated: {aggregated}) to report {group} unavailable"),
            Duration::from_secs(30),
            || async {
                let s = discovery.refresh().await.map_err(|e| e.to_string())?;

                if s.unavailable().iter().any(|u| u.group == group) {
                    Ok(s)
                } else {
                    Err(format!("unavailable: {:?}", s.unavailable()))
                }
            },
        )
        .await;
        let down = snapshot
            .unavailable()
            .iter()
            .find(|u| u.group == group)
            .unwrap();
        assert_eq!(down.version, "v1beta1");
        assert!(!down.reason.is_empty());
        // Everything else still resolves.
        assert_eq!(
            resolve(&discovery, "deploy").await.unwrap(),
            "deployments.v1.apps"
        );
        // A name in the broken group says why it is not found.
        let err = resolve(&discovery, &format!("things.{group}"))
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains(&format!("{group}/v1beta1")),
            "aggregated {aggregated}: {err}"
        );
        let key = ResourceKey::new(group.as_str(), "v1beta1", "things");
        match discovery.snapshot().availability(&key) {
            ResourceAvailability::NotServed { reason } => {
                assert!(reason.contains("could not be discovered"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
    }
    services
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
}

#[tokio::test]
async fn availability_follows_a_crd_as_it_comes_and_goes() {
    let client = support::admin().await;
    let discovery = DiscoveryCache::new(client.clone());
    discovery.refresh().await.unwrap();
    let cancel = CancellationToken::new();
    let keeper = {
        let discovery = discovery.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move { discovery.keep_current(cancel).await })
    };
    let group = support::unique_group();
    let marker = support::suffix();
    let key = ResourceKey::new(group.as_str(), "v1", format!("gizmo{marker}s"));
    let mut availability = discovery.availability(&key);
    assert!(matches!(
        &*availability.borrow(),
        ResourceAvailability::NotServed { reason } if reason.contains("not in discovery")
    ));

    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    crds.create(
        &PostParams::default(),
        &gizmo_crd(&group, &marker, "Cluster"),
    )
    .await
    .unwrap();
    // Nobody asks discovery anything: the CRD watch alone brings it in.
    let served = tokio::time::timeout(
        Duration::from_secs(20),
        availability.wait_for(ResourceAvailability::is_served),
    )
    .await
    .expect("discovery noticed the new CRD")
    .unwrap()
    .clone();
    match served {
        ResourceAvailability::Served { resource, scope } => {
            assert_eq!(resource.kind, format!("Gizmo{marker}"));
            assert_eq!(scope, kube_dynamic_informer::vocabulary::Scope::Cluster);
        }
        other => panic!("{other:?}"),
    }

    crds.delete(&format!("gizmo{marker}s.{group}"), &DeleteParams::default())
        .await
        .unwrap();
    tokio::time::timeout(
        Duration::from_secs(30),
        availability.wait_for(|a| !a.is_served()),
    )
    .await
    .expect("discovery noticed the CRD is gone")
    .unwrap();
    cancel.cancel();
    keeper.await.unwrap();
}

/// A client that records the path (and query) of every request it sends.
fn recording_client(
    config: kube_client::Config,
) -> (kube_client::Client, Arc<std::sync::Mutex<Vec<String>>>) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let layer = tower::util::MapRequestLayer::new(
        move |request: http::Request<kube_client::client::Body>| {
            log.lock().unwrap().push(request.uri().to_string());
            request
        },
    );
    let client = kube_client::client::ClientBuilder::try_from(config)
        .expect("client stack")
        .with_layer(&layer)
        .build();
    (client, seen)
}

/// A factory told not to follow discovery asks, once started, for nothing
/// but its informers' lists and watches; one that follows it (the default)
/// also watches CRDs and APIServices.
#[tokio::test]
async fn a_factory_that_does_not_follow_discovery_asks_only_for_its_informers_lists_and_watches() {
    let admin = support::admin().await;
    let ns = support::namespace(&admin, "disc-fixed").await;
    for follow in [true, false] {
        let (client, seen) = recording_client(support::config(support::User::Admin).await);
        let factory = kube_dynamic_informer::InformerFactory::with_options(
            client,
            support::options().namespace(&ns),
        );
        let maps = factory.for_resource("configmaps").await.unwrap();
        assert!(maps.api_resource().is_some(), "configmaps are served");
        factory.follow_discovery(follow);
        let resolved = seen.lock().unwrap().len();
        factory.start().unwrap();
        assert!(
            factory
                .wait_for_cache_sync(Duration::from_secs(30))
                .await
                .all_synced()
        );
        // A write seen through the watch: the factory has been running for
        // a round trip of the server after its informers listed.
        let name = format!("follow-{follow}");
        let api: Api<k8s_openapi::api::core::v1::ConfigMap> =
            Api::namespaced(support::admin().await, &ns);
        let written = api
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({ "metadata": { "name": name } })).unwrap(),
            )
            .await
            .unwrap();
        maps.informer()
            .wait_for_object(&written, Duration::from_secs(10))
            .await
            .unwrap();
        if follow {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
            while !seen.lock().unwrap()[resolved..]
                .iter()
                .any(|uri| uri.contains("customresourcedefinitions"))
            {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "a following factory watches CRDs: {:?}",
                    seen.lock().unwrap()
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        } else {
            let after: Vec<String> = seen.lock().unwrap()[resolved..].to_vec();
            assert!(
                after
                    .iter()
                    .all(|uri| uri.starts_with(&format!("/api/v1/namespaces/{ns}/configmaps?"))),
                "only the informer's list and watch: {after:?}"
            );
            assert!(
                after.iter().any(|uri| uri.contains("watch=true")),
                "{after:?}"
            );
        }
        factory.shutdown().await;
    }
}
