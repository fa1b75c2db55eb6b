//! Connections between the informer and the server reset in the middle of a
//! list page and in the middle of a watch.

use std::sync::atomic::Ordering;
use std::time::Duration;

use kube_client::api::{Api, DynamicObject};
use kube_dynamic_informer::informer::SharedInformer;
use kube_dynamic_informer::vocabulary::Scope;
use tokio_util::sync::CancellationToken;

use super::{Tracker, churn, churn_until, config_map_maker, configmaps, converge, quick_backoff};
use crate::support::proxy::Proxy;
use crate::support::{self, wait_for};

const OBJECTS: usize = 600;
const PAGE: u32 = 100;
/// Padding per object: a page is then about 100 × 2.3 KB ≈ 230 KB.
const PAD: usize = 2048;

/// The informer talks to the server through a proxy that resets every
/// connection: once 1.5 pages into the first list, then six times while
/// writers create, update and delete objects (once more in the middle of a
/// chunk of watch events). No event is lost — the handlers' view ends equal
/// to the server, resourceVersion by resourceVersion — and no object is
/// added twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_cut_mid_list_page_and_mid_watch_lose_no_event() {
    if !support::is_testenv() {
        eprintln!("skipped: the proxy forwards to a local testenv only");
        return;
    }
    let client = support::admin().await;
    let ns = support::namespace(&client, "rel-cuts").await;
    let ar = configmaps();
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);
    let initial: Vec<String> = (0..OBJECTS).map(|i| format!("seed-{i}")).collect();
    support::create_many(
        &api,
        initial
            .iter()
            .map(|n| config_map_maker(PAD)(&ar, n, 0))
            .collect(),
        16,
    )
    .await;

    let mut config = support::config(support::User::Admin).await;
    let proxy = Proxy::start(super::server_addr(&config)).await;
    config.cluster_url = proxy.url().parse().unwrap();
    let through_proxy = kube_client::Client::try_from(config).unwrap();
    let options = crate::support::options()
        .namespace(&ns)
        .page_size(PAGE)
        .backoff(quick_backoff());
    let informer =
        SharedInformer::new(through_proxy, ar.clone(), Scope::Namespaced, options).unwrap();
    let tracker = Tracker::default();
    let reg = informer.add_handler(tracker.handler());

    // Mid-list: about a page and a half into the first list.
    let page_bytes = (PAGE as u64) * (PAD as u64 + 250);
    proxy.cut_after_bytes(page_bytes * 3 / 2);
    let cancel = CancellationToken::new();
    informer.start(cancel.clone()).unwrap();
    informer
        .wait_for_sync(Duration::from_secs(60))
        .await
        .unwrap();
    let stats = informer.stats();
    assert_eq!(proxy.cuts(), 1, "the armed cut fired during the list");
    assert_eq!(informer.store().len(), OBJECTS);
    let pages = OBJECTS as u64 / PAGE as u64;
    let list_requests = stats.list_requests.load(Ordering::Relaxed);
    assert!(
        list_requests > pages,
        "{list_requests} page requests: the cut page was not requested again"
    );
    assert_eq!(stats.lists.load(Ordering::Relaxed), 1, "one complete list");
    assert!(stats.errors.load(Ordering::Relaxed) >= 1);

    // Mid-watch: cut while writers keep the watch busy.
    let stop = CancellationToken::new();
    let (writes, writers) = churn(
        api.clone(),
        ar.clone(),
        "churn",
        initial,
        config_map_maker(64),
        3,
        stop.clone(),
    );
    let mut cut_open = 0;
    for i in 0..6 {
        churn_until(&writes, writes.ok() + 60, Duration::from_secs(60)).await;
        let watches = stats.watch_requests.load(Ordering::Relaxed);
        if i == 3 {
            // Lands inside a chunk of watch events.
            proxy.cut_after_bytes(1500);
            wait_for("the armed cut", Duration::from_secs(30), || async {
                if proxy.cut_armed() {
                    Err("armed".to_string())
                } else {
                    Ok(())
                }
            })
            .await;
        } else {
            cut_open += proxy.cut();
        }
        wait_for("a new watch", Duration::from_secs(30), || async {
            let now = stats.watch_requests.load(Ordering::Relaxed);
            if now > watches {
                Ok(())
            } else {
                Err(format!("{now} watch requests"))
            }
        })
        .await;
    }
    churn_until(&writes, writes.ok() + 60, Duration::from_secs(60)).await;
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
    assert!(
        cut_open >= 5,
        "only {cut_open} connections were open at the cuts"
    );
    assert_eq!(tracker.problems(), Vec::<String>::new());
    assert_eq!(tracker.second_adds(), Vec::<String>::new());
    eprintln!(
        "cuts: {} cuts, {} connections reset, {} accepted; writers {writes}; {} objects; \
         informer: {list_requests} page requests for the first list, {} lists ({} after 410), {} watches, {} errors; \
         handler saw {} events ({} updates)",
        proxy.cuts(),
        proxy.connections_cut(),
        proxy.accepted(),
        server.len(),
        stats.lists.load(Ordering::Relaxed),
        stats.relists_after_gone.load(Ordering::Relaxed),
        stats.watch_requests.load(Ordering::Relaxed),
        stats.errors.load(Ordering::Relaxed),
        tracker.events(),
        tracker.updates(),
    );
    cancel.cancel();
}

/// While the server cannot be reached the status never says synced: it
/// stays backing off through the retries, and a retry that hangs (a server
/// that accepts and never answers) is not "synced" either, until a watch is
/// open again. (The reflector used to say synced before each attempt.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_keeps_the_status_off_synced_through_retries() {
    if !support::is_testenv() {
        eprintln!("skipped: the proxy forwards to a local testenv only");
        return;
    }
    let client = support::admin().await;
    let ns = support::namespace(&client, "rel-down").await;
    let mut config = support::config(support::User::Admin).await;
    let proxy = Proxy::start(super::server_addr(&config)).await;
    config.cluster_url = proxy.url().parse().unwrap();
    let through_proxy = kube_client::Client::try_from(config).unwrap();
    let options = crate::support::options()
        .namespace(&ns)
        .backoff(quick_backoff());
    let informer =
        SharedInformer::new(through_proxy, configmaps(), Scope::Namespaced, options).unwrap();
    let cancel = CancellationToken::new();
    informer.start(cancel.clone()).unwrap();
    informer
        .wait_for_sync(Duration::from_secs(60))
        .await
        .unwrap();

    // Down: every connection refused.
    proxy.set_refusing(true);
    proxy.cut();
    wait_for(
        "the informer to back off",
        Duration::from_secs(30),
        || async {
            match informer.status() {
                kube_dynamic_informer::informer::InformerStatus::BackingOff { .. } => Ok(()),
                other => Err(other.to_string()),
            }
        },
    )
    .await;
    // Unreachable: the next retry connects and hangs.
    proxy.set_refusing(false);
    proxy.set_hanging(true);
    let accepted = proxy.accepted();
    wait_for("a retry to connect", Duration::from_secs(30), || async {
        if proxy.accepted() > accepted {
            Ok(())
        } else {
            Err(informer.status().to_string())
        }
    })
    .await;
    let status = informer.status();
    assert!(
        !status.is_synced(),
        "a retry under way is not synced: {status}"
    );
    assert!(informer.time_since_current().is_some());

    // Back: the hanging connections end, the watch opens again.
    proxy.set_hanging(false);
    proxy.cut();
    wait_for("synced again", Duration::from_secs(60), || async {
        match informer.status() {
            kube_dynamic_informer::informer::InformerStatus::Synced => Ok(()),
            other => Err(other.to_string()),
        }
    })
    .await;
    cancel.cancel();
}
