//! Cluster sets against several real control planes started in one test:
//! a CRD present in some clusters only, clusters added and removed at run
//! time, access granted in one cluster and not another, and a cluster
//! killed and restarted while the others take writes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube_client::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube_client::{Client, Config};
use kube_dynamic_informer::cache::IndexFn;
use kube_dynamic_informer::declarative::{
    AccessPolicy, ClusterEvent, ClusterSet, ClusterSyncReport, DeclarativeError, InformerSet,
    ResourceState, RetryDelays,
};
use kube_dynamic_informer::informer::InformerStatus;
use kube_dynamic_informer::vocabulary::Namespaces;
use serde_json::json;

use crate::reliability::{quick_backoff, tempdir};
use crate::support::controlplane::{ControlPlane, Options};
use crate::support::{self, User, wait_for};

async fn start(opts: Options) -> ControlPlane {
    tokio::task::spawn_blocking(move || ControlPlane::start(&opts))
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Starts `n` control planes side by side.
async fn start_many(n: usize) -> Vec<ControlPlane> {
    futures::future::join_all((0..n).map(|_| start(support::local_options()))).await
}

async fn config_of(cp: &ControlPlane, user: User) -> Config {
    support::config_from_file(cp.ready().kubeconfig(user.name())).await
}

fn quick_set() -> ClusterSet {
    ClusterSet::with_retry(
        support::options().backoff(quick_backoff()),
        RetryDelays {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(1),
        },
    )
}

async fn create_namespace(client: &Client, name: &str) {
    let ns: Namespace = serde_json::from_value(json!({ "metadata": { "name": name } })).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap_or_else(|e| panic!("creating namespace {name}: {e}"));
}

async fn create_config_map(client: &Client, ns: &str, name: &str, app: &str) {
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": name, "labels": { "app": app } },
        "data": { "k": "v" }
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &cm)
        .await
        .unwrap_or_else(|e| panic!("creating configmap {ns}/{name}: {e}"));
}

async fn create_widget(client: &Client, group: &str, ns: &str, name: &str) {
    let ar = kube_client::api::ApiResource {
        group: group.to_string(),
        version: "v1".into(),
        api_version: format!("{group}/v1"),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{group}/v1"),
        "kind": "Widget",
        "metadata": { "name": name },
        "spec": { "size": 1 }
    }))
    .unwrap();
    Api::<DynamicObject>::namespaced_with(client.clone(), ns, &ar)
        .create(&PostParams::default(), &widget)
        .await
        .unwrap_or_else(|e| panic!("creating widget {ns}/{name}: {e}"));
}

/// What the set's handler was told: (cluster, resource, event kind, object
/// name), in arrival order.
type SeenEvent = (String, String, String, String);

#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<SeenEvent>>>);

impl Seen {
    fn handler(&self) -> impl Fn(ClusterEvent) + Send + Sync + 'static {
        let seen = self.0.clone();
        move |e: ClusterEvent| {
            let name = e.event.object().name().unwrap_or_default().to_owned();
            seen.lock().unwrap().push((
                e.cluster.to_string(),
                e.resource.to_string(),
                e.event.kind().to_string(),
                name,
            ));
        }
    }

    fn of_cluster(&self, cluster: &str) -> usize {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.0 == cluster)
            .count()
    }

    /// Waits until the handler was told of `name` in `cluster` (handlers
    /// run after the cache is updated).
    async fn wait(&self, cluster: &str, name: &str) {
        wait_for(
            &format!("the handler to see {cluster} {name}"),
            Duration::from_secs(30),
            || async {
                if self.has(cluster, name) {
                    Ok(())
                } else {
                    Err(format!("{} events", self.0.lock().unwrap().len()))
                }
            },
        )
        .await;
    }

    fn has(&self, cluster: &str, name: &str) -> bool {
        self.0
            .lock()
            .unwrap()
            .iter()
            .any(|s| s.0 == cluster && s.3 == name)
    }
}

/// Why `resource` did not sync in `cluster`, which the report must say.
fn failure<'a>(
    report: &'a ClusterSyncReport,
    cluster: &str,
    resource: &str,
) -> &'a DeclarativeError {
    match report.in_cluster(cluster, resource) {
        Some(Err(e)) => e,
        other => panic!("{cluster} {resource}: expected a failure, got {other:?}"),
    }
}

fn keys(objects: &[kube_dynamic_informer::declarative::ClusterObject]) -> Vec<String> {
    let mut keys: Vec<String> = objects.iter().map(|o| o.key()).collect();
    keys.sort();
    keys
}

/// The same CRD in two clusters and absent from a third; then installed in
/// the third; a cluster removed and another added at run time; and a user
/// allowed to read in one cluster and forbidden in another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_of_three_clusters_merges_follows_crds_and_changes_at_run_time() {
    if !support::is_testenv() {
        eprintln!("skipped: needs local testenv control planes");
        return;
    }
    let cps = start_many(3).await;
    let names = ["a", "b", "c"];
    let mut admins = BTreeMap::new();
    for (name, cp) in names.iter().zip(&cps) {
        let client = Client::try_from(config_of(cp, User::Admin).await).unwrap();
        admins.insert(*name, client);
    }
    let ns = format!("fleet-{}", support::suffix());
    let group = support::unique_group();
    let crd = support::widget_crd(&group);
    for (name, client) in &admins {
        create_namespace(client, &ns).await;
        create_config_map(client, &ns, &format!("web-{name}"), "web").await;
        create_config_map(client, &ns, &format!("db-{name}"), "db").await;
        if *name != "c" {
            support::install_crd(client, &crd).await;
            create_widget(client, &group, &ns, "w1").await;
        }
    }

    let widgets = format!("widgets.{group}");
    let set = quick_set();
    set.add_resource(widgets.as_str());
    set.add_resource_with("configmaps", support::options().namespace(&ns));
    let seen = Seen::default();
    set.add_handler(seen.handler());
    for (name, cp) in names.iter().zip(&cps) {
        set.add_cluster(*name, config_of(cp, User::Admin).await)
            .unwrap();
    }
    set.start().unwrap();
    // An index declared after start reaches every cluster's informer as it
    // is resolved.
    set.add_index(
        "configmaps",
        "app",
        IndexFn::jmespath("app", "metadata.labels.app").unwrap(),
    )
    .unwrap();

    let report = set.wait_for_cache_sync(Duration::from_secs(10)).await;
    for r in &report.results {
        eprintln!("{r}");
    }
    for cluster in names {
        assert!(
            matches!(report.in_cluster(cluster, "configmaps"), Some(Ok(()))),
            "{cluster}: {:?}",
            report.in_cluster(cluster, "configmaps")
        );
    }
    assert!(
        matches!(report.in_cluster("a", &widgets), Some(Ok(()))),
        "{:?}",
        report.in_cluster("a", &widgets)
    );
    assert!(
        matches!(report.in_cluster("b", &widgets), Some(Ok(()))),
        "{:?}",
        report.in_cluster("b", &widgets)
    );
    let missing = failure(&report, "c", &widgets);
    assert_eq!(missing.reason(), "notServed", "{missing}");
    assert_eq!(report.results.len(), 6);

    // The merged view.
    let widget_lister = set.lister(&widgets);
    assert_eq!(
        keys(&widget_lister.list_all()),
        vec![format!("a/{ns}/w1"), format!("b/{ns}/w1")]
    );
    assert!(widget_lister.get(&format!("b/{ns}/w1")).is_some());
    assert!(widget_lister.get(&format!("c/{ns}/w1")).is_none());
    let cms = set.lister("configmaps");
    assert_eq!(
        keys(&cms.by_index("app", "web").unwrap()),
        names.map(|c| format!("{c}/{ns}/web-{c}")).to_vec()
    );
    assert_eq!(
        keys(&cms.list("app=db").unwrap()),
        names.map(|c| format!("{c}/{ns}/db-{c}")).to_vec()
    );
    assert_eq!(cms.cluster("b").unwrap().list_all().len(), 2);
    seen.wait("a", "w1").await;
    seen.wait("b", "w1").await;
    seen.wait("c", "web-c").await;
    assert!(matches!(
        set.status()
            .iter()
            .find(|(c, r, _)| &**c == "c" && **r == *widgets)
            .map(|s| &s.2),
        Some(ResourceState::Informer(InformerStatus::Pending { .. }))
    ));

    // The CRD installed in the third cluster: synced there, no restart.
    support::install_crd(&admins["c"], &crd).await;
    create_widget(&admins["c"], &group, &ns, "w1").await;
    wait_for(
        "c's widget in the merged view",
        Duration::from_secs(30),
        || async {
            let got = keys(&widget_lister.list_all());
            if got.len() == 3 {
                Ok(())
            } else {
                Err(format!("{got:?}"))
            }
        },
    )
    .await;
    seen.wait("c", "w1").await;
    let report = set.wait_for_cache_sync(Duration::from_secs(10)).await;
    assert!(report.all_synced(), "{:?}", report.results);

    // The CRD deleted in the first cluster: gone there, its widget leaves
    // the merged view, the others carry on.
    Api::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>::all(
        admins["a"].clone(),
    )
    .delete(&format!("widgets.{group}"), &DeleteParams::default())
    .await
    .unwrap();
    wait_for("the CRD gone from a", Duration::from_secs(60), || async {
        let status = set.informer("a", &widgets).map(|gi| gi.status());
        let got = keys(&widget_lister.list_all());
        match status {
            Some(InformerStatus::Gone { .. }) if got.len() == 2 => Ok(()),
            other => Err(format!("{other:?} {got:?}")),
        }
    })
    .await;
    wait_for(
        "the delete of a's widget",
        Duration::from_secs(30),
        || async {
            let deleted = seen
                .0
                .lock()
                .unwrap()
                .iter()
                .any(|s| s.0 == "a" && s.2 == "Delete" && s.3 == "w1");
            if deleted {
                Ok(())
            } else {
                Err("not yet".to_string())
            }
        },
    )
    .await;
    let gone = set.wait_for_cache_sync(Duration::from_secs(2)).await;
    assert_eq!(failure(&gone, "a", &widgets).reason(), "gone");
    assert_eq!(gone.failures().count(), 1);

    // Removing a cluster: its caches leave the view, nothing more arrives.
    let b_informer = set.informer("b", "configmaps").unwrap();
    assert!(set.remove_cluster("b").await);
    assert_eq!(b_informer.status(), InformerStatus::Stopped);
    drop(b_informer);
    assert!(cms.cluster("b").is_none());
    assert!(cms.list_all().iter().all(|o| &*o.cluster != "b"));
    let from_b = seen.of_cluster("b");
    create_config_map(&admins["b"], &ns, "after-removal", "web").await;
    // An event of another cluster created after b's proves the pipeline
    // has moved past the moment b's would have arrived.
    create_config_map(&admins["a"], &ns, "after-removal", "web").await;
    wait_for("a's new configmap", Duration::from_secs(30), || async {
        if seen.has("a", "after-removal") {
            Ok(())
        } else {
            Err("not yet".to_string())
        }
    })
    .await;
    assert_eq!(
        seen.of_cluster("b"),
        from_b,
        "an event of a removed cluster"
    );

    // Adding a cluster at run time (b's server again, under a new name).
    set.add_cluster("b2", config_of(&cps[1], User::Admin).await)
        .unwrap();
    wait_for("b2's caches", Duration::from_secs(30), || async {
        let got: Vec<String> = keys(&cms.list_all())
            .into_iter()
            .filter(|k| k.starts_with("b2/"))
            .collect();
        if got.len() == 3 {
            Ok(())
        } else {
            Err(format!("{got:?}"))
        }
    })
    .await;
    seen.wait("b2", "after-removal").await;
    assert_eq!(
        set.clusters()
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>(),
        vec!["a", "b2", "c"]
    );
    set.shutdown().await;

    // Access: alice may read configmaps in a, not in c.
    support::grant_configmap_read(&admins["a"], &ns, User::Alice).await;
    let alice = quick_set();
    alice.add_resource_with("configmaps", support::options().namespace(&ns));
    alice
        .add_cluster("a", config_of(&cps[0], User::Alice).await)
        .unwrap();
    alice
        .add_cluster("c", config_of(&cps[2], User::Alice).await)
        .unwrap();
    alice.start().unwrap();
    let report = alice.wait_for_cache_sync(Duration::from_secs(5)).await;
    for r in &report.results {
        eprintln!("{r}");
    }
    assert!(
        matches!(report.in_cluster("a", "configmaps"), Some(Ok(()))),
        "{:?}",
        report.in_cluster("a", "configmaps")
    );
    let refused = failure(&report, "c", "configmaps");
    assert_eq!(refused.reason(), "forbidden", "{refused}");
    assert_eq!(report.failures().count(), 1);
    alice.shutdown().await;

    for cp in cps {
        tokio::task::spawn_blocking(move || cp.kill())
            .await
            .unwrap();
    }
}

/// A cluster set made from a config runs it in every cluster as a
/// resource set: a pattern follows each cluster's own CRDs, access is
/// checked per cluster (a resource forbidden in one is skipped there, and
/// starts once access is granted), and a reload reaches every cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patterns_access_checks_and_reloads_work_in_every_cluster() {
    if !support::is_testenv() {
        eprintln!("skipped: needs local testenv control planes");
        return;
    }
    let cps = start_many(2).await;
    let admins: Vec<Client> = futures::future::join_all(
        cps.iter()
            .map(|cp| async { Client::try_from(config_of(cp, User::Admin).await).unwrap() }),
    )
    .await;
    let ns = format!("fleet-{}", support::suffix());
    let group = support::unique_group();
    let crd = support::widget_crd(&group);
    for (i, admin) in admins.iter().enumerate() {
        create_namespace(admin, &ns).await;
        create_config_map(admin, &ns, &format!("web-{i}"), "web").await;
        support::grant_configmap_read(admin, &ns, User::Alice).await;
    }
    // b serves widgets from the start; a not yet.
    support::install_crd(&admins[1], &crd).await;
    create_widget(&admins[1], &group, &ns, "w1").await;

    let names = ["configmaps".to_owned(), format!("group:{group}")];
    let namespaces = Namespaces::only([ns.clone()]);
    let mut config =
        InformerSet::from_names(&names, Default::default(), &namespaces, &[], None).unwrap();
    config.defaults = support::options().backoff(quick_backoff());
    let retry = RetryDelays {
        initial: Duration::from_millis(100),
        max: Duration::from_secs(1),
    };
    let policy = AccessPolicy::Skip {
        recheck: Duration::from_secs(1),
    };
    let set = ClusterSet::from_config(config.clone(), policy, retry);
    let seen = Seen::default();
    set.add_handler(seen.handler());
    // Cluster a as its admin; cluster b as alice, who may read configmaps
    // there and nothing else.
    set.add_cluster("a", config_of(&cps[0], User::Admin).await)
        .unwrap();
    set.add_cluster("b", config_of(&cps[1], User::Alice).await)
        .unwrap();
    set.start().unwrap();

    // In b the pattern selects widgets, and access, checked there as
    // alice, leaves them out; a has none yet.
    let widgets = wait_for("b's widgets skipped", Duration::from_secs(30), || async {
        let skipped = set.status().into_iter().find(|(c, r, state)| {
            &**c == "b"
                && r.contains(&group)
                && matches!(state, ResourceState::Unresolved { error: Some(_), .. })
        });
        skipped
            .map(|s| s.1)
            .ok_or_else(|| format!("{:?}", set.status()))
    })
    .await;
    let report = set.wait_for_cache_sync(Duration::from_secs(20)).await;
    for r in &report.results {
        eprintln!("{r}");
    }
    let refused = failure(&report, "b", &widgets);
    assert_eq!(refused.reason(), "forbidden", "{refused}");
    assert_eq!(report.failures().count(), 1, "{:?}", report.results);
    assert_eq!(report.cluster("a").count(), 1, "{:?}", report.results);
    let skipped = set.resource_set("b").unwrap().status().await.skipped;
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert!(skipped[0].denied, "{skipped:?}");

    // The CRD installed in a: a's pattern follows a's discovery.
    support::install_crd(&admins[0], &crd).await;
    create_widget(&admins[0], &group, &ns, "w0").await;
    seen.wait("a", "w0").await;

    // Access granted: b's widgets start at the next check.
    support::grant_read(
        &admins[1],
        &ns,
        User::Alice,
        &group,
        "widgets",
        "read-widgets",
    )
    .await;
    seen.wait("b", "w1").await;
    let lister = set.lister(&widgets);
    assert_eq!(
        keys(&lister.list_all()),
        vec![format!("a/{ns}/w0"), format!("b/{ns}/w1")]
    );

    // A reload: an index on configmaps, in both clusters.
    config.informers[0]
        .indexes
        .insert("app".into(), "metadata.labels.app".into());
    set.apply(config);
    let cms = set.lister("configmaps");
    wait_for(
        "the index in both clusters",
        Duration::from_secs(30),
        || async {
            match cms.by_index("app", "web") {
                Ok(found) if found.len() == 2 => Ok(keys(&found)),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    assert_eq!(
        keys(&cms.by_index("app", "web").unwrap()),
        vec![format!("a/{ns}/web-0"), format!("b/{ns}/web-1")]
    );
    set.shutdown().await;
    for cp in cps {
        tokio::task::spawn_blocking(move || cp.kill())
            .await
            .unwrap();
    }
}

/// One cluster killed (kill -9) while another takes writes, a third that
/// refuses connections and a fourth that accepts them and never answers:
/// the live cluster's events keep arriving, the dead one is reported, and
/// once restarted it resyncs and converges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_cluster_holds_up_no_other_and_converges_when_back() {
    if !support::is_testenv() {
        eprintln!("skipped: needs local testenv control planes to kill and restart");
        return;
    }
    let dir = tempdir("cluster-set-crash");
    let b_opts = Options {
        data_dir: Some(dir.clone()),
        ..support::local_options()
    };
    let (a, b) = tokio::join!(start(support::local_options()), start(b_opts.clone()));
    let b_port = b.port();
    let a_client = Client::try_from(config_of(&a, User::Admin).await).unwrap();
    let b_config = config_of(&b, User::Admin).await;
    let ns = format!("fleet-{}", support::suffix());
    create_namespace(&a_client, &ns).await;
    {
        let b_client = Client::try_from(b_config.clone()).unwrap();
        create_namespace(&b_client, &ns).await;
        for i in 0..20 {
            create_config_map(&b_client, &ns, &format!("seed-{i}"), "seed").await;
        }
    }

    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut nowhere = b_config.clone();
    nowhere.cluster_url = format!("https://127.0.0.1:{closed}").parse().unwrap();
    // A server that accepts connections and never answers: requests hang.
    let silent_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut silent = b_config.clone();
    silent.cluster_url = format!("https://{}", silent_listener.local_addr().unwrap())
        .parse()
        .unwrap();

    let set = quick_set();
    set.add_resource_with("configmaps", support::options().namespace(&ns));
    let arrivals: Arc<Mutex<BTreeMap<String, Instant>>> = Arc::default();
    {
        let arrivals = arrivals.clone();
        set.add_handler(move |e: ClusterEvent| {
            if &*e.cluster == "a" && e.event.kind() == "Add" {
                let name = e.event.object().name().unwrap_or_default().to_owned();
                arrivals.lock().unwrap().insert(name, Instant::now());
            }
        });
    }
    set.add_cluster("a", config_of(&a, User::Admin).await)
        .unwrap();
    set.add_cluster("b", b_config.clone()).unwrap();
    set.add_cluster("nowhere", nowhere).unwrap();
    set.add_cluster("silent", silent).unwrap();
    set.start().unwrap();
    let report = set.wait_for_cache_sync(Duration::from_secs(10)).await;
    assert!(
        matches!(report.in_cluster("a", "configmaps"), Some(Ok(()))),
        "{:?}",
        report.in_cluster("a", "configmaps")
    );
    assert!(
        matches!(report.in_cluster("b", "configmaps"), Some(Ok(()))),
        "{:?}",
        report.in_cluster("b", "configmaps")
    );
    let down = failure(&report, "nowhere", "configmaps");
    assert_eq!(down.reason(), "unreachable", "{down}");
    let hanging = failure(&report, "silent", "configmaps");
    assert_eq!(hanging.reason(), "timedOut", "{hanging}");

    // Writes to a, timed from the request to the handler.
    let lag_of = |prefix: &'static str, n: usize| {
        let a_client = a_client.clone();
        let ns = ns.clone();
        let arrivals = arrivals.clone();
        async move {
            let mut lags = Vec::new();
            for i in 0..n {
                let name = format!("{prefix}-{i}");
                let sent = Instant::now();
                create_config_map(&a_client, &ns, &name, prefix).await;
                let arrived = wait_for(
                    &format!("{name} to reach the handler"),
                    Duration::from_secs(30),
                    || async {
                        arrivals
                            .lock()
                            .unwrap()
                            .get(&name)
                            .copied()
                            .ok_or_else(|| "not yet".to_string())
                    },
                )
                .await;
                lags.push(arrived.duration_since(sent));
            }
            lags.sort();
            lags[lags.len() / 2]
        }
    };
    let before = lag_of("before", 20).await;

    tokio::task::spawn_blocking(move || b.kill()).await.unwrap();
    wait_for("b reported as lost", Duration::from_secs(30), || async {
        match set.informer("b", "configmaps").map(|gi| gi.status()) {
            Some(InformerStatus::BackingOff {
                synced_before: true,
                ..
            }) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let during = lag_of("during", 20).await;
    assert_eq!(
        set.lister("configmaps")
            .cluster("a")
            .unwrap()
            .list_all()
            .len(),
        40
    );
    // b's cache is still served while it is away.
    assert_eq!(
        set.lister("configmaps")
            .cluster("b")
            .unwrap()
            .list_all()
            .len(),
        20
    );
    eprintln!("median lag of a's events: {before:?} with b up, {during:?} with b killed");

    // b back on the same port and data: changes made there meanwhile
    // reach the set.
    let b = start(Options {
        port: Some(b_port),
        ..b_opts
    })
    .await;
    let b_client = Client::try_from(config_of(&b, User::Admin).await).unwrap();
    let b_api = Api::<ConfigMap>::namespaced(b_client.clone(), &ns);
    wait_for("deleting seed-0 in b", Duration::from_secs(30), || async {
        b_api
            .delete("seed-0", &DeleteParams::default())
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    })
    .await;
    create_config_map(&b_client, &ns, "after-restart", "new").await;
    wait_for("b to converge", Duration::from_secs(60), || async {
        let server: Vec<String> = b_api
            .list(&Default::default())
            .await
            .map_err(|e| e.to_string())?
            .items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .collect();
        let mut cached: Vec<String> = set
            .lister("configmaps")
            .cluster("b")
            .map(|l| l.list_all())
            .unwrap_or_default()
            .iter()
            .filter_map(|o| o.name().map(str::to_owned))
            .collect();
        let mut server = server;
        server.sort();
        cached.sort();
        if server == cached {
            Ok(())
        } else {
            Err(format!(
                "server {} objects, cache {}",
                server.len(),
                cached.len()
            ))
        }
    })
    .await;
    let report = set.wait_for_cache_sync(Duration::from_secs(10)).await;
    assert!(
        matches!(report.in_cluster("b", "configmaps"), Some(Ok(()))),
        "{:?}",
        report.in_cluster("b", "configmaps")
    );
    set.shutdown().await;
    drop(silent_listener);
    tokio::task::spawn_blocking(move || a.kill()).await.unwrap();
    tokio::task::spawn_blocking(move || b.kill()).await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// One kubeconfig with a context per (name, admin kubeconfig file), each
/// renamed to `name`.
fn merged_kubeconfig(
    parts: &[(&str, &std::path::Path)],
    extra_server: Option<(&str, u16)>,
) -> String {
    use kube_client::config::Kubeconfig;
    let mut merged = Kubeconfig::default();
    for (name, path) in parts {
        let mut kc = Kubeconfig::read_from(path).unwrap();
        let mut cluster = kc.clusters.remove(0);
        cluster.name = name.to_string();
        let mut user = kc.auth_infos.remove(0);
        user.name = name.to_string();
        let mut context = kc.contexts.remove(0);
        context.name = name.to_string();
        let inner = context.context.as_mut().unwrap();
        inner.cluster = name.to_string();
        inner.user = Some(name.to_string());
        merged.clusters.push(cluster);
        merged.auth_infos.push(user);
        merged.contexts.push(context);
    }
    if let Some((name, port)) = extra_server {
        let mut cluster = merged.clusters[0].clone();
        cluster.name = name.to_string();
        cluster.cluster.as_mut().unwrap().server = Some(format!("https://127.0.0.1:{port}"));
        let mut user = merged.auth_infos[0].clone();
        user.name = name.to_string();
        let mut context = merged.contexts[0].clone();
        context.name = name.to_string();
        let inner = context.context.as_mut().unwrap();
        inner.cluster = name.to_string();
        inner.user = Some(name.to_string());
        merged.clusters.push(cluster);
        merged.auth_infos.push(user);
        merged.contexts.push(context);
    }
    merged.current_context = Some(parts[0].0.to_string());
    serde_json::to_string_pretty(&merged).unwrap()
}

#[cfg(feature = "cli")]
async fn kdi(args: &[&str]) -> std::process::Output {
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_kdi"))
        .args(args)
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .unwrap_or_else(|_| panic!("kdi {args:?} did not end within 120 s"))
        .unwrap()
}

/// `kdi --context` repeated, `--all-contexts` and a config file's
/// `clusters:` section: the cluster in every line, a column of tables, a
/// cluster that cannot be reached reported without its credentials.
#[cfg(feature = "cli")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kdi_reads_and_watches_several_clusters() {
    if !support::is_testenv() {
        eprintln!("skipped: needs local testenv control planes");
        return;
    }
    let support::Env::Testenv { ready, .. } = support::env() else {
        unreachable!()
    };
    let one = ready.kubeconfig("admin").to_path_buf();
    let cp = start(support::local_options()).await;
    let two = cp.ready().kubeconfig("admin").to_path_buf();
    let ns = format!("kdi-fleet-{}", support::suffix());
    for (name, path) in [("one", &one), ("two", &two)] {
        let client = Client::try_from(support::config_from_file(path).await).unwrap();
        create_namespace(&client, &ns).await;
        create_config_map(&client, &ns, &format!("cm-{name}"), "web").await;
    }
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempdir("kdi-fleet");
    let merged = dir.join("merged.json");
    let text = merged_kubeconfig(&[("one", &one), ("two", &two)], Some(("down", closed)));
    std::fs::write(&merged, &text).unwrap();
    let token =
        serde_json::from_str::<serde_json::Value>(&text).unwrap()["users"][0]["user"]["token"]
            .as_str()
            .map(str::to_string);
    let merged_arg = merged.to_str().unwrap();

    // `kdi get` over clusters one and two, which succeeds: its stdout.
    let get_in_both = |args: &'static [&'static str], resource: String| {
        let ns = ns.clone();
        async move {
            let mut all = vec![
                "--kubeconfig",
                merged_arg,
                "--context",
                "one",
                "--context",
                "two",
            ];
            all.extend(["get", "-r", &resource, "-n", &ns]);
            all.extend(args);
            let out = kdi(&all).await;
            let stdout = String::from_utf8_lossy(&out.stdout).to_string();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
            stdout
        }
    };
    let table = get_in_both(&["-l", "app=web"], "configmaps".into()).await;
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("CLUSTER"), "{table}");
    assert!(
        lines[1].starts_with("one ") && lines[1].contains("cm-one"),
        "{table}"
    );
    assert!(
        lines[2].starts_with("two ") && lines[2].contains("cm-two"),
        "{table}"
    );

    // A pattern: what it selects in each cluster is printed, per cluster.
    let group = support::unique_group();
    for path in [&one, &two] {
        let client = Client::try_from(support::config_from_file(path).await).unwrap();
        support::install_crd(&client, &support::widget_crd(&group)).await;
        create_widget(&client, &group, &ns, "w").await;
    }
    let names = get_in_both(&["-o", "name"], format!("group:{group}")).await;
    assert_eq!(
        names.lines().collect::<Vec<_>>(),
        [
            format!("one/widget.{group}/{ns}/w"),
            format!("two/widget.{group}/{ns}/w")
        ],
        "{names}"
    );

    // Every context, one of them down: what synced is printed, the rest
    // is reported, and the exit code says not everything synced.
    let out = kdi(&[
        "--kubeconfig",
        merged_arg,
        "--all-contexts",
        "get",
        "-r",
        "configmaps",
        "-n",
        &ns,
        "-l",
        "app=web",
        "-o",
        "json",
        "--timeout",
        "5s",
    ])
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let items: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let clusters: Vec<&str> = items
        .iter()
        .map(|i| i["cluster"].as_str().unwrap())
        .collect();
    assert_eq!(clusters, ["one", "two"]);
    assert!(
        stderr.contains("down") && stderr.contains("unreachable"),
        "{stderr}"
    );
    if let Some(token) = &token {
        assert!(!stderr.contains(token.as_str()), "the token in: {stderr}");
    }

    // watch: the cluster is a field of every line.
    let out = kdi(&[
        "--kubeconfig",
        merged_arg,
        "--context",
        "one",
        "--context",
        "two",
        "watch",
        "-r",
        "configmaps",
        "-n",
        &ns,
        "-l",
        "app=web",
        "--max-events",
        "2",
    ])
    .await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut seen: Vec<(String, String)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["cluster"].as_str().unwrap().to_string(),
                v["key"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("one".to_string(), format!("{ns}/cm-one")),
            ("two".to_string(), format!("{ns}/cm-two"))
        ]
    );

    // watch over several clusters ends when its reader goes away.
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_kdi"))
        .args([
            "--kubeconfig",
            merged_arg,
            "--context",
            "one",
            "--context",
            "two",
            "watch",
            "-r",
            "configmaps",
            "-n",
            &ns,
        ])
        .env_remove("KUBECONFIG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines =
        tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(child.stdout.take().unwrap()));
    let first = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(first.starts_with(r#"{"cluster":"#), "{first}");
    drop(lines);
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("kdi watch over several clusters to end once its output is closed")
        .unwrap();
    assert!(status.success(), "{status}");

    // A cluster that cannot be reached is said again at each progress
    // interval while the others' events are printed.
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_kdi"))
        .args([
            "--kubeconfig",
            merged_arg,
            "--all-contexts",
            "watch",
            "-r",
            "configmaps",
            "-n",
            &ns,
            "--timeout",
            "1s",
            "--progress-interval",
            "1s",
        ])
        .env_remove("KUBECONFIG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut errors =
        tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(child.stderr.take().unwrap()));
    let mut said = Vec::new();
    while said
        .iter()
        .filter(|l: &&String| l.contains("\"waiting\""))
        .count()
        < 2
    {
        let line = tokio::time::timeout(Duration::from_secs(30), errors.next_line())
            .await
            .unwrap_or_else(|_| panic!("no progress lines; so far: {said:?}"))
            .unwrap()
            .unwrap_or_else(|| panic!("stderr closed; so far: {said:?}"));
        said.push(line);
    }
    for line in &said {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["cluster"], "down", "{line}");
        if let Some(token) = &token {
            assert!(!line.contains(token.as_str()), "the token in: {line}");
        }
    }
    assert!(said[0].contains("unreachable"), "{said:?}");
    child.kill().await.unwrap();

    // A config file whose clusters are the kubeconfigs of a directory.
    let fleet = dir.join("fleet");
    std::fs::create_dir_all(&fleet).unwrap();
    std::fs::copy(&one, fleet.join("east.yaml")).unwrap();
    std::fs::copy(&two, fleet.join("west.yaml")).unwrap();
    let config = dir.join("fleet.yaml");
    std::fs::write(
        &config,
        format!(
            "apiVersion: kube-dynamic-informer.io/v1alpha1\nkind: InformerSet\nclusters:\n  directory: {}\ninformers:\n  - resource: configmaps\n    name: web\n    namespaces: [{ns}]\n    labelSelector: app=web\n",
            fleet.display()
        ),
    )
    .unwrap();
    let out = kdi(&["get", "-f", config.to_str().unwrap(), "-o", "name"]).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("east/{ns}/cm-one\nwest/{ns}/cm-two\n")
    );

    // The local cluster (here: the default kubeconfig) and a kubeconfig file.
    std::fs::write(
        &config,
        format!(
            "apiVersion: kube-dynamic-informer.io/v1alpha1\nkind: InformerSet\nclusters:\n  local: home\n  kubeconfigs: [{}]\ninformers:\n  - resource: configmaps\n    namespaces: [{ns}]\n    labelSelector: app=web\n",
            fleet.join("west.yaml").display()
        ),
    )
    .unwrap();
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_kdi"))
        .args(["get", "-f", config.to_str().unwrap(), "-o", "name"])
        .env("KUBECONFIG", &one)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("home/{ns}/cm-one\nwest/{ns}/cm-two\n")
    );
    tokio::task::spawn_blocking(move || cp.kill())
        .await
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Peak RSS (KiB) and CPU seconds (user + system) of a command, from
/// `/usr/bin/time`.
async fn measured(args: &[String]) -> (u64, f64) {
    let bin = std::env::var("KDI_MEASURE_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_kdi").into());
    let out = tokio::process::Command::new("/usr/bin/time")
        .args(["-f", "MEASURED %M %U %S"])
        .arg(bin)
        .args(args)
        .env_remove("KUBECONFIG")
        .stdout(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let line = stderr
        .lines()
        .find_map(|l| l.strip_prefix("MEASURED "))
        .unwrap();
    let v: Vec<f64> = line.split(' ').map(|x| x.parse().unwrap()).collect();
    (v[0] as u64, v[1] + v[2])
}

/// N clusters × the same resource: one `kdi` over all of them against one
/// `kdi` per cluster, each syncing and printing every object once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "measurement, run by hand: cargo build --release --features cli --bin kdi && KDI_MEASURE_BIN=target/release/kdi cargo test --features cli --test it cluster_set::measure -- --ignored --nocapture"]
async fn measure_one_process_against_one_per_cluster() {
    use futures::StreamExt;
    let n: usize = std::env::var("KDI_MEASURE_CLUSTERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let objects: usize = std::env::var("KDI_MEASURE_OBJECTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let cps = start_many(n).await;
    let ns = format!("measure-{}", support::suffix());
    for cp in &cps {
        let client = Client::try_from(config_of(cp, User::Admin).await).unwrap();
        create_namespace(&client, &ns).await;
        let api = Api::<ConfigMap>::namespaced(client, &ns);
        futures::stream::iter((0..objects).map(|i| {
            let api = api.clone();
            async move {
                let cm: ConfigMap = serde_json::from_value(json!({
                    "metadata": { "name": format!("cm-{i}"), "labels": { "app": "measure" } },
                    "data": { "payload": "x".repeat(1024) }
                }))
                .unwrap();
                api.create(&PostParams::default(), &cm).await.unwrap();
            }
        }))
        .buffer_unordered(16)
        .collect::<Vec<()>>()
        .await;
    }
    let names: Vec<String> = (0..n).map(|i| format!("c{i}")).collect();
    let paths: Vec<std::path::PathBuf> = cps
        .iter()
        .map(|cp| cp.ready().kubeconfig("admin").to_path_buf())
        .collect();
    let parts: Vec<(&str, &std::path::Path)> = names
        .iter()
        .map(String::as_str)
        .zip(paths.iter().map(|p| p.as_path()))
        .collect();
    let dir = tempdir("measure-clusters");
    let merged = dir.join("merged.json");
    std::fs::write(&merged, merged_kubeconfig(&parts, None)).unwrap();
    let base = |contexts: &[String], events: usize| {
        let mut args = vec!["--kubeconfig".to_string(), merged.display().to_string()];
        for c in contexts {
            args.extend(["--context".to_string(), c.clone()]);
        }
        args.extend(
            [
                "watch",
                "-r",
                "configmaps",
                "-n",
                &ns,
                "--max-events",
                &events.to_string(),
            ]
            .map(String::from),
        );
        args
    };
    let (one_rss, one_cpu) = measured(&base(&names, n * objects)).await;
    let mut sum_rss = 0;
    let mut sum_cpu = 0.0;
    let each = futures::future::join_all(names.iter().map(|c| {
        let args = base(std::slice::from_ref(c), objects);
        async move { measured(&args).await }
    }))
    .await;
    for (rss, cpu) in each {
        sum_rss += rss;
        sum_cpu += cpu;
    }
    eprintln!(
        "{n} clusters x {objects} ConfigMaps (1 KiB): one process {:.1} MiB peak RSS, {one_cpu:.2} s CPU; \
         {n} processes {:.1} MiB peak RSS in total, {sum_cpu:.2} s CPU in total",
        one_rss as f64 / 1024.0,
        sum_rss as f64 / 1024.0
    );
    for cp in cps {
        tokio::task::spawn_blocking(move || cp.kill())
            .await
            .unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `kdi get` over a cluster set is one-shot as over one cluster: a cluster
/// that refuses access is said at once (exit 3, its reason `forbidden`),
/// not after `--timeout`, and the clusters that synced are printed.
#[cfg(feature = "cli")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kdi_get_over_clusters_says_a_refusal_at_once() {
    if !support::is_testenv() {
        eprintln!("skipped: needs testenv's ordinary users as kubeconfigs");
        return;
    }
    let admin = support::admin().await;
    let ns = support::namespace(&admin, "kdi-fleet-403").await;
    create_config_map(&admin, &ns, "cm-admin", "web").await;
    let dir = tempdir("kdi-fleet-403");
    let merged = dir.join("merged.json");
    let (admin_file, alice_file) = (
        support::kubeconfig_path(User::Admin),
        support::kubeconfig_path(User::Alice),
    );
    std::fs::write(
        &merged,
        merged_kubeconfig(&[("allowed", &admin_file), ("denied", &alice_file)], None),
    )
    .unwrap();
    // kdi() fails the test after 120 s: long before the 10 minutes a wait
    // for access would take.
    let out = kdi(&[
        "--kubeconfig",
        merged.to_str().unwrap(),
        "--context",
        "allowed",
        "--context",
        "denied",
        "get",
        "-r",
        "configmaps",
        "-n",
        &ns,
        "-o",
        "name",
        "--timeout",
        "10m",
    ])
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let refused: Vec<serde_json::Value> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        refused
            .iter()
            .any(|l| l["cluster"] == "denied" && l["reason"] == "forbidden"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("allowed/") && stdout.contains("cm-admin"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
