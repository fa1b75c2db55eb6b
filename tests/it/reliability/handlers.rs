//! Faulty handlers: one panics, one is slow, one never returns. The others
//! keep their pace, and the stuck one's backlog is visible.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube_client::api::{Api, DynamicObject};
use kube_dynamic_informer::cache::Transform;
use kube_dynamic_informer::informer::{Event, InformerStatus, SharedInformer};
use kube_dynamic_informer::vocabulary::Scope;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::Tracker;
use crate::support::{self, wait_for};

const BEFORE: u64 = 10;
const PANIC_MESSAGE: &str = "a handler bug the test expects";

/// Keeps the expected panics (dozens, each with a backtrace when
/// RUST_BACKTRACE is set) out of the test output; every other panic goes to
/// the previous hook.
fn quiet_expected_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<&str>() != Some(&PANIC_MESSAGE) {
                previous(info);
            }
        }));
    });
}
const CREATED: u64 = 150;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panicking_slow_and_stuck_handlers_do_not_hold_back_the_others() {
    quiet_expected_panics();
    let client = support::admin().await;
    let ns = support::namespace(&client, "rel-handlers").await;
    let ar = support::install_crd(&client, &support::widget_crd(&support::unique_group())).await;
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);
    support::create_many(
        &api,
        (0..BEFORE)
            .map(|i| support::widget(&ar, &format!("before-{i}"), json!({})))
            .collect(),
        8,
    )
    .await;

    // Stamped when an object enters the cache (the transform runs just
    // before), to measure each handler's lag behind the cache.
    let cached_at: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let stamps = cached_at.clone();
    let options = crate::support::options()
        .namespace(&ns)
        .transform(Transform::new("stamp", move |o: DynamicObject| {
            let key = format!(
                "{}@{}",
                o.metadata.name.clone().unwrap_or_default(),
                o.metadata.resource_version.clone().unwrap_or_default()
            );
            stamps.lock().unwrap().insert(key, Instant::now());
            o
        }));
    let informer =
        SharedInformer::new(client.clone(), ar.clone(), Scope::Namespaced, options).unwrap();

    // Panics on every fifth event.
    let panicking = informer.add_handler({
        let n = AtomicU64::new(0);
        move |_e: Event| {
            if n.fetch_add(1, Ordering::SeqCst).is_multiple_of(5) {
                std::panic::panic_any(PANIC_MESSAGE);
            }
        }
    });
    // 20 ms per event.
    let slow = informer.add_handler(|_e: Event| std::thread::sleep(Duration::from_millis(20)));
    // Never returns from its first event until the test lets it.
    let (release, released) = std::sync::mpsc::channel::<()>();
    let released = Mutex::new(released);
    let stuck = informer.add_handler(move |_e: Event| {
        let _ = released.lock().unwrap().recv();
    });
    // Two well-behaved handlers: one measures its lag, one checks the view.
    let lags: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let probe = informer.add_handler({
        let (lags, stamps) = (lags.clone(), cached_at.clone());
        move |e: Event| {
            let o = e.object();
            let key = format!(
                "{}@{}",
                o.name().unwrap_or_default().to_owned(),
                o.resource_version().unwrap_or_default().to_owned()
            );
            if let Some(at) = stamps.lock().unwrap().get(&key) {
                lags.lock().unwrap().push(at.elapsed());
            }
        }
    });
    let tracker = Tracker::default();
    let checker = informer.add_handler(tracker.handler());

    let cancel = CancellationToken::new();
    let task = informer.start(cancel.clone()).unwrap();
    informer
        .wait_for_sync(Duration::from_secs(30))
        .await
        .unwrap();
    support::create_many(
        &api,
        (0..CREATED)
            .map(|i| support::widget(&ar, &format!("w-{i}"), json!({ "i": i })))
            .collect(),
        8,
    )
    .await;
    let total = BEFORE + CREATED;
    wait_for(
        "the good handlers to get every event",
        Duration::from_secs(60),
        || async {
            if probe.delivered() == total && checker.delivered() == total {
                Ok(())
            } else {
                Err(format!(
                    "probe {}, checker {}",
                    probe.delivered(),
                    checker.delivered()
                ))
            }
        },
    )
    .await;
    // At that moment the stuck handler is still on its first event, with
    // everything else queued, and it never synced.
    assert_eq!(stuck.delivered(), 0);
    assert_eq!(stuck.backlog() as u64, total, "stuck backlog");
    assert!(!stuck.has_synced());
    assert!(probe.has_synced() && checker.has_synced());
    assert_eq!(tracker.objects().len() as u64, total);
    assert_eq!(tracker.problems(), Vec::<String>::new());

    let lags = lags.lock().unwrap().clone();
    let mut sorted = lags.clone();
    sorted.sort();
    let p50 = sorted[sorted.len() / 2];
    let max = *sorted.last().unwrap();
    eprintln!(
        "handlers: probe lag behind the cache over {} events: p50 {p50:?}, max {max:?}; slow handler at {} of {total}; stuck backlog {}",
        lags.len(),
        slow.delivered(),
        stuck.backlog()
    );
    // Generous: the bound is about isolation, not speed. The slow handler
    // alone needs 20 ms × 160 = 3.2 s for what the probe saw.
    assert!(max < Duration::from_secs(1), "probe lag up to {max:?}");

    wait_for(
        "the panicking handler to go through everything",
        Duration::from_secs(30),
        || async {
            if panicking.delivered() == total {
                Ok(())
            } else {
                Err(format!("{} delivered", panicking.delivered()))
            }
        },
    )
    .await;
    assert_eq!(panicking.panics(), total.div_ceil(5));
    assert!(
        panicking.has_synced(),
        "panics do not stop a handler syncing"
    );

    // Stopping the informer does not hang on the stuck handler.
    cancel.cancel();
    let stopped = Instant::now();
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("the informer stops with a stuck handler")
        .unwrap();
    eprintln!("stopped in {:?} with a stuck handler", stopped.elapsed());
    assert_eq!(informer.status(), InformerStatus::Stopped);
    // Let the stuck thread end.
    drop(release);
}
