//! A watch held behind while etcd compacts: 410, relist, convergence.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use kube_client::api::{Api, DeleteParams, DynamicObject, ListParams, WatchEvent, WatchParams};
use kube_dynamic_informer::informer::SharedInformer;
use kube_dynamic_informer::vocabulary::{Namespaces, Scope};
use kube_dynamic_informer::wire::{ApiListWatch, ListPage, ListWatch, ListWatchError, WatchStream};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{Tracker, churn, churn_until, converge, pod_template_maker, pod_templates};
use crate::support::{self, wait_for};

/// A `ListWatch` whose watches the test can hold back: [`Holding::hold`]
/// ends the running watch stream and keeps the next watch request waiting
/// (remembering the resourceVersion it wants to start from) until
/// [`Holding::release`].
#[derive(Clone)]
struct Holding {
    inner: ApiListWatch,
    held: Arc<AtomicBool>,
    changed: Arc<Notify>,
    /// resourceVersion of the watch request waiting at the gate.
    waiting_from: Arc<Mutex<Option<String>>>,
}

impl Holding {
    fn new(inner: ApiListWatch) -> Self {
        Self {
            inner,
            held: Arc::default(),
            changed: Arc::default(),
            waiting_from: Arc::default(),
        }
    }

    fn hold(&self) {
        self.held.store(true, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    fn release(&self) {
        self.held.store(false, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    /// Resolves once the flag is `want`.
    fn until(&self, want: bool) -> impl Future<Output = ()> + Send + 'static {
        let (held, changed) = (self.held.clone(), self.changed.clone());
        async move {
            loop {
                let notified = changed.notified();
                if held.load(Ordering::SeqCst) == want {
                    return;
                }
                notified.await;
            }
        }
    }
}

impl ListWatch for Holding {
    fn list(&self, params: &ListParams) -> BoxFuture<'static, Result<ListPage, ListWatchError>> {
        self.inner.list(params)
    }

    fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> BoxFuture<'static, Result<WatchStream, ListWatchError>> {
        let this = self.clone();
        let params = params.clone();
        let rv = resource_version.to_string();
        async move {
            if this.held.load(Ordering::SeqCst) {
                *this.waiting_from.lock().unwrap() = Some(rv.clone());
                this.until(false).await;
                *this.waiting_from.lock().unwrap() = None;
            }
            let stream = this.inner.watch(&params, &rv).await?;
            // A hold ends the stream as a server timeout would.
            Ok(stream.take_until(this.until(true)).boxed())
        }
        .boxed()
    }
}

/// Waits until a watch from `rv` is refused with 410 (etcd compacted it).
async fn wait_until_compacted(api: &Api<DynamicObject>, rv: &str) {
    wait_for(
        &format!("resourceVersion {rv} to be compacted"),
        support::COMPACTION * 8,
        || async {
            match api.watch(&WatchParams::default().timeout(1), rv).await {
                Err(kube_client::Error::Api(s)) if s.code == 410 => Ok(()),
                Ok(s) => match s.boxed().next().await {
                    Some(Ok(WatchEvent::Error(e))) if e.code == 410 => Ok(()),
                    _ => Err("still served".to_string()),
                },
                Err(e) => Err(e.to_string()),
            }
        },
    )
    .await
}

/// Twice: the watch is held back while writers go on and etcd compacts past
/// its resourceVersion; released, it gets 410, the informer relists (and
/// says so in its counters), and at the end the cache and the handlers equal
/// the server. Objects deleted while the watch was held arrive as tombstones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_held_past_compaction_relists_under_writes_and_converges() {
    if !support::is_testenv() {
        eprintln!("skipped: needs testenv's short compaction and uncached podtemplates");
        return;
    }
    let client = support::admin().await;
    let ns = support::namespace(&client, "rel-compact").await;
    let ar = pod_templates();
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);
    let initial: Vec<String> = (0..30).map(|i| format!("seed-{i}")).collect();
    support::create_many(
        &api,
        initial
            .iter()
            .map(|n| pod_template_maker()(&ar, n, 0))
            .collect(),
        8,
    )
    .await;
    // Deleted by the test while the watch is held; the writers leave them be.
    support::create_many(
        &api,
        (1..=2)
            .map(|i| pod_template_maker()(&ar, &format!("victim-{i}"), 0))
            .collect(),
        2,
    )
    .await;
    let lw = Holding::new(
        ApiListWatch::new(client.clone(), ar.clone(), Scope::Namespaced)
            .namespaces(Namespaces::only([ns.as_str()])),
    );
    let options = crate::support::options()
        .page_size(10)
        .backoff(super::quick_backoff());
    let informer = SharedInformer::with_list_watch(lw.clone(), ar.clone(), options);
    let tracker = Tracker::default();
    informer.add_handler(tracker.handler());
    let cancel = CancellationToken::new();
    informer.start(cancel.clone()).unwrap();
    informer
        .wait_for_sync(Duration::from_secs(30))
        .await
        .unwrap();
    let stats = informer.stats();

    let stop = CancellationToken::new();
    let (writes, writers) = churn(
        api.clone(),
        ar.clone(),
        "churn",
        initial.clone(),
        pod_template_maker(),
        2,
        stop.clone(),
    );
    for round in 1..=2u64 {
        churn_until(&writes, writes.ok() + 50, Duration::from_secs(60)).await;
        lw.hold();
        let from = wait_for("the watch to be held", Duration::from_secs(30), || async {
            lw.waiting_from
                .lock()
                .unwrap()
                .clone()
                .ok_or_else(|| "no watch waiting".to_string())
        })
        .await;
        // One delete the informer is sure to miss while held.
        let victim = format!("victim-{round}");
        api.delete(&victim, &DeleteParams::default()).await.unwrap();
        wait_until_compacted(&api, &from).await;
        lw.release();
        wait_for("a relist after 410", Duration::from_secs(30), || async {
            let relists = stats.relists_after_gone.load(Ordering::Relaxed);
            if relists >= round {
                Ok(())
            } else {
                Err(format!("{relists} relists after 410"))
            }
        })
        .await;
        let key = format!("{ns}/{victim}");
        wait_for(
            "the missed delete as a tombstone",
            Duration::from_secs(30),
            || async {
                match tracker.deletes_of(&key) {
                    (1, 1) => Ok(()),
                    other => Err(format!("deletes (all, tombstones) of {key}: {other:?}")),
                }
            },
        )
        .await;
    }
    churn_until(&writes, writes.ok() + 50, Duration::from_secs(60)).await;
    stop.cancel();
    writers.await.unwrap();
    let server = converge(&informer, &tracker, &api, Duration::from_secs(60)).await;
    assert_eq!(tracker.problems(), Vec::<String>::new());
    assert_eq!(tracker.second_adds(), Vec::<String>::new());
    let relists = stats.relists_after_gone.load(Ordering::Relaxed);
    let lists = stats.lists.load(Ordering::Relaxed);
    assert!(relists >= 2, "{relists} relists after 410");
    assert!(
        lists > relists,
        "{lists} lists, {relists} of them after 410"
    );
    eprintln!(
        "compaction: writers {writes}; {} objects; {lists} lists ({relists} after 410), {} tombstones",
        server.len(),
        tracker.tombstones()
    );
    cancel.cancel();
}
