//! Warm restarts: an informer stopped with a snapshot and started again
//! resumes from it, against the real API server.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::PodTemplate;
use kube_client::Client;
use kube_client::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube_client::api::{ApiResource, DynamicObject};
use kube_dynamic_informer::cache::IndexFn;
use kube_dynamic_informer::informer::{
    Event, InformerOptions, SharedInformer, SnapshotOptions, SnapshotRefusal, SnapshotStart,
};
use kube_dynamic_informer::vocabulary::Scope;
use tokio_util::sync::CancellationToken;

use crate::support::{self, pod_template, pod_templates};

fn options(ns: &str, dir: &Path) -> InformerOptions {
    support::options()
        .namespace(ns)
        .snapshot(SnapshotOptions::new(dir))
}

/// An informer run until `stop`, recording its handler's events.
struct Run {
    informer: SharedInformer,
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
    events: Arc<Mutex<Vec<String>>>,
}

impl Run {
    async fn start(client: &Client, options: InformerOptions) -> Run {
        Self::start_of(client, pod_templates(), options).await
    }

    async fn start_of(client: &Client, resource: ApiResource, options: InformerOptions) -> Run {
        let informer =
            SharedInformer::new(client.clone(), resource, Scope::Namespaced, options).unwrap();
        // One index read in place from a compact object, one that needs it
        // decoded: a snapshot's objects are indexed either way.
        for (name, expression) in [("name", "metadata.name"), ("types", "spec.limits[].type")] {
            informer
                .add_index(name, IndexFn::jmespath(name, expression).unwrap())
                .unwrap();
        }
        let events = Arc::new(Mutex::new(Vec::new()));
        let log = events.clone();
        informer.add_handler(move |e: Event| {
            let name = e.object().name().unwrap_or_default().to_owned();
            log.lock().unwrap().push(match e {
                Event::Add {
                    in_initial_list: true,
                    ..
                } => format!("initial {name}"),
                Event::Add { .. } => format!("add {name}"),
                Event::Update { .. } => format!("update {name}"),
                Event::Delete {
                    final_state_unknown: true,
                    ..
                } => format!("tombstone {name}"),
                Event::Delete { .. } => format!("delete {name}"),
            });
        });
        let cancel = CancellationToken::new();
        let task = informer.start(cancel.clone()).unwrap();
        informer
            .wait_for_sync(Duration::from_secs(60))
            .await
            .unwrap();
        Run {
            informer,
            cancel,
            task,
            events,
        }
    }

    async fn stop(self) -> SharedInformer {
        self.cancel.cancel();
        self.task.await.unwrap();
        self.informer
    }

    fn cached(&self) -> BTreeMap<String, String> {
        support::cached_versions(&self.informer.store())
            .into_iter()
            .collect()
    }

    /// The events after the initial ones, in order; the initial ones sorted.
    fn events(&self) -> (Vec<String>, Vec<String>) {
        let events = self.events.lock().unwrap().clone();
        let (mut initial, live): (Vec<_>, Vec<_>) =
            events.into_iter().partition(|e| e.starts_with("initial "));
        initial.sort();
        (initial, live)
    }

    /// Waits until the cache holds what the server holds.
    async fn wait_equal<K>(&self, api: &Api<K>)
    where
        K: kube_client::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    {
        support::wait_for(
            "the cache to equal the server",
            Duration::from_secs(30),
            || {
                let cached = self.cached();
                async move {
                    let server = server(api).await;
                    if cached == server {
                        Ok(())
                    } else {
                        Err(format!("cache {cached:?}, server {server:?}"))
                    }
                }
            },
        )
        .await;
    }
}

async fn server<K>(api: &Api<K>) -> BTreeMap<String, String>
where
    K: kube_client::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|o| {
            let meta = o.meta();
            (
                meta.name.clone().unwrap(),
                meta.resource_version.clone().unwrap(),
            )
        })
        .collect()
}

async fn templates(client: &Client, prefix: &str, n: usize) -> (String, Api<PodTemplate>) {
    let ns = support::namespace(client, prefix).await;
    let api = Api::<PodTemplate>::namespaced(client.clone(), &ns);
    for i in 0..n {
        api.create(&PostParams::default(), &pod_template(&format!("pt{i}")))
            .await
            .unwrap();
    }
    (ns, api)
}

/// What happens while the process is down: two adds (`new0`, `new1`), two
/// updates (`PREFIX0`, `PREFIX1`), two deletes (`PREFIX2`, `PREFIX3`).
async fn changes_while_down<K>(api: &Api<K>, object: impl Fn(&str) -> K, prefix: &str)
where
    K: kube_client::Resource
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    for name in ["new0", "new1"] {
        api.create(&PostParams::default(), &object(name))
            .await
            .unwrap();
    }
    for i in [0, 1] {
        let patch = serde_json::json!({ "metadata": { "labels": { "changed": "yes" } } });
        api.patch(
            &format!("{prefix}{i}"),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .unwrap();
    }
    for i in [2, 3] {
        api.delete(&format!("{prefix}{i}"), &DeleteParams::default())
            .await
            .unwrap();
    }
}

/// `limitranges.v1`: a resource no other test lists, so that the server's
/// count of its list requests is this test's.
fn limit_ranges() -> ApiResource {
    ApiResource::erase::<k8s_openapi::api::core::v1::LimitRange>(&())
}

fn limit_range(name: &str) -> DynamicObject {
    let mut o = DynamicObject::new(name, &limit_ranges());
    o.data = serde_json::json!({ "spec": { "limits": [{ "type": "Container", "max": { "cpu": "1" } }] } });
    o
}

#[tokio::test]
async fn a_restarted_informer_resumes_from_its_snapshot_without_listing() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "snap-resume").await;
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &limit_ranges());
    for i in 0..12 {
        api.create(&PostParams::default(), &limit_range(&format!("lr{i}")))
            .await
            .unwrap();
    }
    let dir = support::scratch_dir("snapshot-resume");
    let first = Run::start_of(&client, limit_ranges(), options(&ns, &dir)).await;
    assert!(matches!(
        first.informer.stats().snapshot_start(),
        Some(SnapshotStart::Listed {
            reason: SnapshotRefusal::Missing(_)
        })
    ));
    let first = first.stop().await;
    assert!(first.stats().snapshots_written.load(Ordering::Relaxed) >= 1);
    assert!(first_file(&dir).is_some(), "a snapshot file in {dir:?}");

    changes_while_down(&api, limit_range, "lr").await;
    let lists_before = support::server_list_requests(&client, "limitranges").await;
    let second = Run::start_of(&client, limit_ranges(), options(&ns, &dir)).await;
    // Synced: counted before the test lists to compare.
    assert_eq!(
        support::server_list_requests(&client, "limitranges").await,
        lists_before,
        "the API server served no list of limitranges for the restart"
    );
    second.wait_equal(&api).await;
    let stats = second.informer.stats();
    assert_eq!(
        stats.list_requests.load(Ordering::Relaxed),
        0,
        "no list request"
    );
    match stats.snapshot_start() {
        Some(SnapshotStart::Resumed { objects: 12, .. }) => {}
        other => panic!("resumed from the snapshot of 12 objects: {other:?}"),
    }
    let store = second.informer.store();
    assert_eq!(store.by_index("name", "lr5").unwrap().len(), 1);
    assert_eq!(store.by_index("types", "Container").unwrap().len(), 12);
    support::wait_for("the six changes", Duration::from_secs(30), || {
        let (_, live) = second.events();
        async move {
            if live.len() >= 6 {
                Ok(())
            } else {
                Err(format!("{live:?}"))
            }
        }
    })
    .await;
    let (initial, mut live) = second.events();
    assert_eq!(initial.len(), 12, "the snapshot as the initial list");
    live.sort();
    assert_eq!(
        live,
        [
            "add new0",
            "add new1",
            "delete lr2",
            "delete lr3",
            "update lr0",
            "update lr1"
        ],
        "each change once, deletes as deletes"
    );
    second.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The snapshot file in `dir`, if any.
pub fn first_file(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "snapshot"))
}

#[tokio::test]
async fn a_snapshot_older_than_the_servers_history_falls_back_to_one_relist() {
    if !support::is_testenv() {
        eprintln!("skipped: needs testenv's short compaction and uncached podtemplates");
        return;
    }
    let client = support::admin().await;
    let (ns, api) = templates(&client, "snap-gone", 8).await;
    let dir = support::scratch_dir("snapshot-gone");
    let first = Run::start(&client, options(&ns, &dir)).await.stop().await;
    let rv = first.store().resource_version().unwrap().to_string();
    changes_while_down(&api, pod_template, "pt").await;
    support::wait_until_compacted(&api, &rv).await;

    let second = Run::start(&client, options(&ns, &dir)).await;
    second.wait_equal(&api).await;
    let stats = second.informer.stats();
    assert_eq!(
        stats.snapshot_start(),
        Some(SnapshotStart::Listed {
            reason: SnapshotRefusal::TooOld
        })
    );
    assert!(stats.list_requests.load(Ordering::Relaxed) >= 1);
    assert_eq!(
        stats.counters().tombstones,
        2,
        "the two objects deleted while down"
    );
    let (initial, live) = second.events();
    let tombstones: Vec<&String> = live.iter().filter(|e| e.starts_with("tombstone")).collect();
    assert_eq!(
        tombstones,
        ["tombstone pt2", "tombstone pt3"],
        "exactly the deleted objects, as tombstones: {live:?}"
    );
    // Created while it was down: in the relist, an initial add or an add
    // (when the snapshot counted as synced before the 410 came).
    assert!(
        initial.contains(&"initial new0".to_owned()) || live.contains(&"add new0".to_owned()),
        "{initial:?} {live:?}"
    );
    second.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn snapshots_of_another_cluster_or_damaged_ones_are_refused() {
    let client = support::admin().await;
    let (ns, api) = templates(&client, "snap-refused", 5).await;
    let dir = support::scratch_dir("snapshot-refused");
    let elsewhere = options(&ns, &dir).snapshot(SnapshotOptions::new(&dir).cluster("elsewhere"));
    Run::start(&client, elsewhere).await.stop().await;
    let file = first_file(&dir).unwrap();

    // Made for another cluster.
    let run = Run::start(&client, options(&ns, &dir)).await;
    run.wait_equal(&api).await;
    match run.informer.stats().snapshot_start() {
        Some(SnapshotStart::Listed {
            reason: SnapshotRefusal::Mismatched { what, .. },
        }) => assert!(what.contains("elsewhere"), "{what}"),
        other => panic!("refused as another cluster's: {other:?}"),
    }
    run.stop().await;

    // Damaged: truncated, then random bytes.
    let whole = std::fs::read(&file).unwrap();
    let random: Vec<u8> = (0..whole.len() as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
        .collect();
    for (what, bytes) in [
        ("truncated", whole[..whole.len() / 2].to_vec()),
        ("random", random),
    ] {
        std::fs::write(&file, bytes).unwrap();
        let run = Run::start(&client, options(&ns, &dir)).await;
        run.wait_equal(&api).await;
        match run.informer.stats().snapshot_start() {
            Some(SnapshotStart::Listed {
                reason: SnapshotRefusal::Corrupt { .. },
            }) => {}
            other => panic!("{what}: refused as corrupt: {other:?}"),
        }
        run.stop().await;
    }

    // Another selector shapes another cache: its own snapshot, none yet.
    let narrower = options(&ns, &dir).label_selector("app=demo");
    let run = Run::start(&client, narrower).await;
    assert!(matches!(
        run.informer.stats().snapshot_start(),
        Some(SnapshotStart::Listed {
            reason: SnapshotRefusal::Missing(_)
        })
    ));
    run.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn secrets_are_not_written_unless_asked() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "snap-secret").await;
    let dir = support::scratch_dir("snapshot-secret");
    let secrets = kube_client::api::ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: "Secret".into(),
        plural: "secrets".into(),
    };
    let informer = SharedInformer::new(
        client.clone(),
        secrets,
        Scope::Namespaced,
        options(&ns, &dir),
    )
    .unwrap();
    let cancel = CancellationToken::new();
    let task = informer.start(cancel.clone()).unwrap();
    informer
        .wait_for_sync(Duration::from_secs(60))
        .await
        .unwrap();
    cancel.cancel();
    task.await.unwrap();
    assert_eq!(
        informer.stats().snapshot_start(),
        Some(SnapshotStart::Listed {
            reason: SnapshotRefusal::Sensitive
        })
    );
    assert_eq!(first_file(&dir), None, "nothing written");
}
