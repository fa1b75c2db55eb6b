use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use kube_client::Config;
use kube_core::{DynamicObject, ObjectMeta};

use super::*;
use crate::cache::StoreWriter;
use crate::declarative::sources::cluster_name_of;
use crate::factory::FactoryError;
use crate::informer::WhenNotServed;
use crate::vocabulary::resource::ResourceKey;

fn config(url: &str) -> Config {
    Config::new(url.parse().unwrap())
}

#[test]
fn merged_keys_carry_the_cluster() {
    let object = |ns: Option<&str>| {
        let mut writer = StoreWriter::new();
        writer.upsert(Arc::new(DynamicObject {
            types: None,
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: ns.map(str::to_string),
                ..ObjectMeta::default()
            },
            data: serde_json::json!({}),
        }));
        let key = ns.map_or_else(|| "web".to_owned(), |ns| format!("{ns}/web"));
        ClusterObject {
            cluster: "east".into(),
            object: writer.reader().get(&key).unwrap(),
        }
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
    let cache = |source| DeclarativeError::Cache {
        cluster: "east".into(),
        source: Box::new(source),
    };
    let key = ResourceKey::new("", "v1", "configmaps");
    assert_eq!(
        cache(FactoryError::NotSynced {
            resource: key.clone(),
            reason: crate::informer::NotSynced::Forbidden {
                message: "no".into()
            }
        })
        .reason(),
        "forbidden"
    );
    assert_eq!(
        cache(FactoryError::NotServed {
            resource: key,
            reason: "no".into(),
            when: WhenNotServed::Wait,
        })
        .reason(),
        "notServed"
    );
    let unreachable = DeclarativeError::Unreachable {
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
        Err(DeclarativeError::DuplicateCluster(_))
    ));
    assert!(matches!(
        set.add_cluster("a/b", config("https://127.0.0.1:1")),
        Err(DeclarativeError::BadClusterName(_))
    ));
    assert!(matches!(
        set.add_cluster("", config("https://127.0.0.1:1")),
        Err(DeclarativeError::BadClusterName(_))
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
    let result = report.in_cluster("down", "configmaps").unwrap();
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

/// A kubeconfig with one context per (name, port), each with a token.
fn kubeconfig_text(contexts: &[(&str, u16)]) -> String {
    let mut clusters = String::new();
    let mut users = String::new();
    let mut ctxs = String::new();
    for (name, port) in contexts {
        clusters.push_str(&format!(
            "- name: {name}\n  cluster:\n    server: https://127.0.0.1:{port}\n    insecure-skip-tls-verify: true\n"
        ));
        users.push_str(&format!(
            "- name: {name}\n  user:\n    token: secret-of-{name}\n"
        ));
        ctxs.push_str(&format!(
            "- name: {name}\n  context:\n    cluster: {name}\n    user: {name}\n"
        ));
    }
    format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: {}\nclusters:\n{clusters}users:\n{users}contexts:\n{ctxs}",
        contexts[0].0
    )
}

#[cfg(feature = "config")]
#[tokio::test]
async fn the_clusters_section_names_contexts_files_and_a_directory() {
    use crate::declarative::config::InformerSet;

    let dir = std::env::temp_dir().join(format!("kdi-clusters-{}", std::process::id()));
    let fleet = dir.join("fleet");
    std::fs::create_dir_all(&fleet).unwrap();
    let main = dir.join("main.yaml");
    std::fs::write(
        &main,
        kubeconfig_text(&[("east", 1), ("west", 2), ("lab", 3)]),
    )
    .unwrap();
    std::fs::write(fleet.join("north.yaml"), kubeconfig_text(&[("n", 4)])).unwrap();
    std::fs::write(fleet.join("south.kubeconfig"), kubeconfig_text(&[("s", 5)])).unwrap();
    std::fs::write(fleet.join(".hidden"), "not a kubeconfig").unwrap();
    let text = format!(
        "apiVersion: kube-dynamic-informer.io/v1alpha1\nkind: InformerSet\nclusters:\n  kubeconfig: {}\n  contexts: [west, east]\n  kubeconfigs: [{}]\n  directory: {}\ninformers:\n  - resource: pods\n    name: web-pods\n    labelSelector: app=web\n    indexes: {{ node: spec.nodeName }}\n",
        main.display(),
        fleet.join("north.yaml").display(),
        fleet.display()
    );
    let file = InformerSet::load_str(&text, "fleet.yaml").unwrap();
    let clusters = file.clusters.clusters().await.unwrap();
    let names: Vec<&str> = clusters.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["west", "east", "north", "north", "south"]);
    assert_eq!(clusters[0].1.cluster_url.port_u16(), Some(2));

    let all = crate::declarative::config::ClustersConfig {
        kubeconfig: Some(main.clone()),
        all_contexts: true,
        ..Default::default()
    };
    let names: Vec<String> = all
        .clusters()
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.0)
        .collect();
    assert_eq!(names, ["east", "west", "lab"]);

    let missing = crate::declarative::config::ClustersConfig {
        kubeconfig: Some(main.clone()),
        contexts: vec!["nope".into()],
        ..Default::default()
    };
    let err = missing.clusters().await.unwrap_err().to_string();
    assert!(err.contains("\"nope\""), "{err}");
    assert!(!err.contains("secret-of"), "{err}");

    let set = file.cluster_set();
    assert_eq!(set.resources(), vec![Arc::<str>::from("web-pods")]);

    let bad = text.replace("  contexts:", "  contxts:");
    let errors = InformerSet::load_str(&bad, "fleet.yaml")
        .unwrap_err()
        .to_string();
    assert!(errors.contains("contxts"), "{errors}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A recorder that keeps the keys of the series registered.
#[derive(Default)]
struct Keys(parking_lot::Mutex<Vec<metrics::Key>>);

impl metrics::Recorder for Keys {
    fn describe_counter(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_gauge(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_histogram(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn register_counter(&self, key: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Counter {
        self.0.lock().push(key.clone());
        metrics::Counter::noop()
    }
    fn register_gauge(&self, key: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Gauge {
        self.0.lock().push(key.clone());
        metrics::Gauge::noop()
    }
    fn register_histogram(
        &self,
        key: &metrics::Key,
        _: &metrics::Metadata<'_>,
    ) -> metrics::Histogram {
        self.0.lock().push(key.clone());
        metrics::Histogram::noop()
    }
}

/// Informers created for a cluster of a set label their series with it;
/// others do not.
#[test]
fn series_of_a_cluster_carry_its_name() {
    use crate::informer::telemetry::{InformerMetrics, in_cluster};
    let key = ResourceKey::new("", "v1", "configmaps");
    let labels_of = |cluster: Option<&str>| {
        let recorder = Keys::default();
        metrics::with_local_recorder(&recorder, || {
            let metrics = match cluster {
                Some(c) => futures::executor::block_on(in_cluster(c.into(), async {
                    InformerMetrics::new(&key, "")
                })),
                None => InformerMetrics::new(&key, ""),
            };
            let _ = metrics.handler("print", false);
        });
        recorder.0.into_inner()
    };
    let east = labels_of(Some("east"));
    assert!(!east.is_empty());
    for k in &east {
        assert!(
            k.labels()
                .any(|l| l.key() == "cluster" && l.value() == "east"),
            "{k:?}"
        );
    }
    let objects = east
        .iter()
        .find(|k| k.name() == "kdi_informer_objects")
        .unwrap();
    let names: Vec<&str> = objects.labels().map(|l| l.key()).collect();
    assert_eq!(names, ["resource", "namespace", "cluster"]);
    for k in labels_of(None) {
        assert!(k.labels().all(|l| l.key() != "cluster"), "{k:?}");
    }
}

#[test]
fn each_cluster_keeps_its_snapshots_in_a_directory_of_its_own() {
    use crate::informer::SnapshotOptions;
    let options = InformerOptions::default().snapshot(SnapshotOptions::new("/var/cache/kdi"));
    let a = in_cluster_dir(options.clone(), "prod-eu");
    let b = in_cluster_dir(options, "..");
    assert_eq!(
        a.snapshot.unwrap().dir,
        Path::new("/var/cache/kdi/cluster-prod-eu")
    );
    assert_eq!(
        b.snapshot.unwrap().dir,
        Path::new("/var/cache/kdi/cluster-..")
    );
    assert_eq!(
        in_cluster_dir(InformerOptions::default(), "x").snapshot,
        None
    );
}
