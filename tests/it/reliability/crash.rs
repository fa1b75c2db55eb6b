//! kill -9 of the control plane in the middle of creates, updates and
//! deletes, and a restart on the same data dir.

use std::sync::atomic::Ordering;
use std::time::Duration;

use kube_client::api::{Api, DeleteParams, DynamicObject};
use kube_dynamic_informer::informer::{InformerStatus, SharedInformer};
use kube_dynamic_informer::vocabulary::Scope;
use tokio_util::sync::CancellationToken;

use super::{Tracker, churn, churn_until, config_map_maker, configmaps, converge, quick_backoff};
use crate::support::controlplane::{ControlPlane, Options};
use crate::support::proxy::Proxy;
use crate::support::{self, wait_for};

async fn start(opts: Options) -> ControlPlane {
    tokio::task::spawn_blocking(move || ControlPlane::start(&opts))
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The informer reaches the control plane through a proxy that refuses
/// connections from the crash until the test lets it in again, so that the
/// deletes made right after the restart certainly happen while the informer
/// is cut off. Afterwards the cache equals a fresh list (resourceVersions
/// included) and every object deleted meanwhile reached the handlers as a
/// Delete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_control_plane_crash_mid_churn_converges_and_delivers_every_delete() {
    if !support::is_testenv() {
        eprintln!("skipped: needs a local testenv to kill and restart");
        return;
    }
    let dir = super::tempdir("crash");
    let opts = Options {
        data_dir: Some(dir.clone()),
        ..support::local_options()
    };
    let cp = start(opts.clone()).await;
    let port = cp.port();
    let kubeconfig = cp.ready().kubeconfig("admin").to_path_buf();
    let config = support::config_from_file(&kubeconfig).await;
    let proxy = Proxy::start(super::server_addr(&config)).await;
    let mut via_proxy = config.clone();
    via_proxy.cluster_url = proxy.url().parse().unwrap();
    let client = kube_client::Client::try_from(config).unwrap();
    let informer_client = kube_client::Client::try_from(via_proxy).unwrap();

    let ns = support::namespace(&client, "crash").await;
    let ar = configmaps();
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);
    let initial: Vec<String> = (0..100).map(|i| format!("seed-{i}")).collect();
    support::create_many(
        &api,
        initial
            .iter()
            .map(|n| config_map_maker(64)(&ar, n, 0))
            .collect(),
        8,
    )
    .await;
    let outage: Vec<String> = (0..20).map(|i| format!("outage-{i}")).collect();
    support::create_many(
        &api,
        outage
            .iter()
            .map(|n| config_map_maker(64)(&ar, n, 0))
            .collect(),
        8,
    )
    .await;

    let options = crate::support::options()
        .namespace(&ns)
        .page_size(50)
        .backoff(quick_backoff());
    let informer =
        SharedInformer::new(informer_client, ar.clone(), Scope::Namespaced, options).unwrap();
    let tracker = Tracker::default();
    let reg = informer.add_handler(tracker.handler());
    let cancel = CancellationToken::new();
    let task = informer.start(cancel.clone()).unwrap();
    informer
        .wait_for_sync(Duration::from_secs(30))
        .await
        .unwrap();

    let stop = CancellationToken::new();
    let (stats, writers) = churn(
        api.clone(),
        ar.clone(),
        "churn",
        initial,
        config_map_maker(64),
        4,
        stop.clone(),
    );
    churn_until(&stats, 300, Duration::from_secs(60)).await;

    // The crash, with writes in flight.
    proxy.set_refusing(true);
    tokio::task::spawn_blocking(move || cp.kill())
        .await
        .unwrap();
    let errors_at_crash = stats.errors();
    wait_for("the writers to fail", Duration::from_secs(30), || async {
        if stats.errors() >= errors_at_crash + 8 {
            Ok(())
        } else {
            Err(stats.to_string())
        }
    })
    .await;
    // The informer says it lost the server, and still serves its cache.
    let status = wait_for(
        "the informer to report the lost server",
        Duration::from_secs(30),
        || async {
            match informer.status() {
                s @ InformerStatus::BackingOff {
                    synced_before: true,
                    ..
                } => Ok(s),
                other => Err(other.to_string()),
            }
        },
    )
    .await;
    eprintln!("status during the outage: {status}");
    assert!(informer.has_synced());
    assert!(!informer.store().is_empty());

    let cp = start(Options {
        port: Some(port),
        ..opts
    })
    .await;
    assert_eq!(cp.port(), port);
    churn_until(&stats, stats.ok() + 100, Duration::from_secs(60)).await;
    // Deleted while the informer cannot see the server (the writers never
    // touch these). The restarted server may still refuse for a moment.
    let mut deleted_in_outage = Vec::new();
    for name in &outage {
        wait_for(
            &format!("deleting {name}"),
            Duration::from_secs(30),
            || async {
                api.delete(name, &DeleteParams::default())
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            },
        )
        .await;
        deleted_in_outage.push(format!("{ns}/{name}"));
    }
    proxy.set_refusing(false);

    churn_until(&stats, stats.ok() + 300, Duration::from_secs(60)).await;
    stop.cancel();
    writers.await.unwrap();
    let server = converge(&informer, &tracker, &api, Duration::from_secs(60)).await;
    wait_for("the handler to drain", Duration::from_secs(30), || async {
        if reg.backlog() == 0 {
            Ok(())
        } else {
            Err(format!("backlog {}", reg.backlog()))
        }
    })
    .await;

    for key in &deleted_in_outage {
        assert!(!server.contains_key(key), "{key} is back on the server");
        let (deletes, _) = tracker.deletes_of(key);
        assert_eq!(deletes, 1, "{key} was deleted during the outage");
    }
    assert_eq!(tracker.problems(), Vec::<String>::new());
    assert_eq!(tracker.second_adds(), Vec::<String>::new());
    let s = informer.stats();
    eprintln!(
        "crash: writers {stats}; {} objects at the end; informer: {} lists ({} after 410), {} watches, {} errors; {} tombstones",
        server.len(),
        s.lists.load(Ordering::Relaxed),
        s.relists_after_gone.load(Ordering::Relaxed),
        s.watch_requests.load(Ordering::Relaxed),
        s.errors.load(Ordering::Relaxed),
        tracker.tombstones(),
    );
    assert!(s.errors.load(Ordering::Relaxed) >= 1);

    cancel.cancel();
    task.await.unwrap();
    drop(proxy);
    let log = cp.log().to_path_buf();
    let stopping = std::time::Instant::now();
    let status = tokio::task::spawn_blocking(move || cp.stop())
        .await
        .unwrap();
    assert!(
        status.success(),
        "testenv exited with {status} after {:?}; log {}:\n{}",
        stopping.elapsed(),
        log.display(),
        crate::support::controlplane::tail(&log, 20)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
