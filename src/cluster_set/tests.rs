use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use kube_client::Config;
use kube_core::{DynamicObject, ObjectMeta};

use super::source::cluster_name_of;
use super::*;
use crate::factory::CacheSyncError;
use crate::resource::ResourceKey;

fn config(url: &str) -> Config {
    Config::new(url.parse().unwrap())
}

#[test]
fn merged_keys_carry_the_cluster() {
    let object = |ns: Option<&str>| ClusterObject {
        cluster: "east".into(),
        object: Arc::new(DynamicObject {
            types: None,
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: ns.map(str::to_string),
                ..ObjectMeta::default()
            },
            data: serde_json::json!({}),
        }),
    };
    assert_eq!(object(Some("shop")).key(), "east/shop/web");
    assert_eq!(object(None).key(), "east/web");
}

#[test]
fn cluster_names_come_from_file_names() {
    assert_eq!(cluster_name_of(Path::new("/k/east.yaml")), "east");
    assert_eq!(cluster_name_of(Path::new("/k/west")), "west");
    assert_eq!(cluster_name_of(Path::new("/k/a.b.kubeconfig")), "a.b");
}

#[test]
fn reasons_are_short_words() {
    let cache = |source| ClusterSyncError::Cache {
        cluster: "east".into(),
        source,
    };
    let key = ResourceKey::new("", "v1", "configmaps");
    assert_eq!(
        cache(CacheSyncError::Forbidden {
            resource: key.clone(),
            message: "no".into()
        })
        .reason(),
        "forbidden"
    );
    assert_eq!(
        cache(CacheSyncError::NotServed {
            resource: key,
            reason: "no".into()
        })
        .reason(),
        "not-served"
    );
    let unreachable = ClusterSyncError::Unreachable {
        cluster: "west".into(),
        resource: "cm".into(),
        error: "connection refused".into(),
    };
    assert_eq!(unreachable.reason(), "unreachable");
    assert_eq!(
        unreachable.to_string(),
        "cluster west: cm: unreachable: connection refused"
    );
}

#[tokio::test]
async fn cluster_names_are_checked() {
    let set = ClusterSet::new(InformerOptions::default());
    set.add_cluster("east", config("https://127.0.0.1:1"))
        .unwrap();
    assert!(matches!(
        set.add_cluster("east", config("https://127.0.0.1:1")),
        Err(ClusterSetError::DuplicateCluster(_))
    ));
    assert!(matches!(
        set.add_cluster("a/b", config("https://127.0.0.1:1")),
        Err(ClusterSetError::BadClusterName(_))
    ));
    assert!(matches!(
        set.add_cluster("", config("https://127.0.0.1:1")),
        Err(ClusterSetError::BadClusterName(_))
    ));
    assert_eq!(set.clusters(), vec![Arc::<str>::from("east")]);
    assert!(set.remove_cluster("east").await);
    assert!(!set.remove_cluster("east").await);
    assert!(set.clusters().is_empty());
}

/// A cluster whose server refuses connections is reported unreachable,
/// with the client's error and without the credentials of its config.
#[tokio::test]
async fn an_unreachable_cluster_is_reported_without_its_token() {
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut config = config(&format!("https://127.0.0.1:{port}"));
    let token = "kdi-secret-token-4711";
    config.auth_info.token = Some(token.to_string().into());
    let set = ClusterSet::with_retry(
        InformerOptions::default(),
        RetryDelays {
            initial: Duration::from_millis(50),
            max: Duration::from_millis(200),
        },
    );
    set.add_resource("configmaps");
    set.add_cluster("down", config).unwrap();
    set.start().unwrap();
    let report = set.wait_for_cache_sync(Duration::from_secs(3)).await;
    let result = report.get("down", "configmaps").unwrap();
    let err = result.as_ref().unwrap_err();
    assert_eq!(err.reason(), "unreachable", "{err}");
    let text = format!("{err} {err:?} {set:?} {:?}", set.status());
    assert!(!text.contains(token), "{text}");
    assert!(matches!(
        &set.status()[0].2,
        ResourceState::Unresolved {
            unreachable: true,
            error: Some(_)
        }
    ));
    set.shutdown().await;
}
