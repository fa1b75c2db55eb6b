//! This library's reconciling peer: `reconcile::Controller` with `--workers`
//! workers (4) over the Widgets' informer (a factory's, default options),
//! doing the trivial reconcile client-go's peer does
//! (`bench/clientgo/reconcile.go`): read the object the key names from the
//! cache (`Context::object`), read its stamp, record the time since the
//! write, answer `Action::Done`.
//!
//! After sync it waits until the reconciles of the initial list are done
//! (`initial_reconciled_s` from the start), reads its steady RSS after
//! `--settle`, resets the peak RSS, prints `{"event":"synced",..}` (the
//! script then writes the burst: at most one update per object) and
//! waits until every written object has been reconciled in the state the
//! burst wrote. Then it prints its result: the latency from each write to
//! the first reconcile that read it (p50, p99, max), the reconciles done
//! during the burst, the CPU they took (the process's, from the synced
//! line to the last of them) and each one's share, and the peak RSS.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kdi_bench_peers::{
    Args, STAMP_ANNOTATION, allocator, cpu_seconds, emit, percentile, proc_status_mb,
    reset_peak_rss, round, unix_nanos,
};
use kube_dynamic_informer::cache::CachedObject;
use kube_dynamic_informer::factory::InformerFactory;
use kube_dynamic_informer::reconcile::{Action, Context, Controller, ObjectRef, WorkQueue};
use kube_dynamic_informer::vocabulary::ResourceKey;
use serde_json::{Map, Value, json};

/// What the reconciles record: for each object, the burst's stamp it last
/// reconciled, and the time from each write to the first reconcile of the
/// state it wrote. The burst is over when `want` objects have been
/// reconciled in a state it wrote (each object is written at most once).
struct Lags {
    burst_id: String,
    want: usize,
    reconciles: AtomicU64,
    seen: Mutex<Seen>,
    done: tokio::sync::Notify,
}

#[derive(Default)]
struct Seen {
    stamps: HashMap<ObjectRef, i64>,
    lags_ms: Vec<f64>,
    first_stamp: Option<i64>,
    last: i64,
}

impl Lags {
    fn new(args: &Args) -> Arc<Self> {
        Arc::new(Self {
            burst_id: args.burst_id.clone(),
            want: usize::try_from(args.burst_count).unwrap_or(usize::MAX),
            reconciles: AtomicU64::new(0),
            seen: Mutex::new(Seen::default()),
            done: tokio::sync::Notify::new(),
        })
    }

    /// A reconcile of `key`, which read `object` from the cache.
    fn observe(&self, key: &ObjectRef, object: Option<&CachedObject>) {
        self.reconciles.fetch_add(1, Ordering::Relaxed);
        if self.burst_id.is_empty() {
            return;
        }
        let Some(stamp) = object.and_then(|o| self.stamp(o)) else {
            return;
        };
        let now = unix_nanos();
        let mut seen = self.seen.lock().expect("lags");
        if seen.stamps.get(key) == Some(&stamp) {
            return; // this state was reconciled already
        }
        seen.stamps.insert(key.clone(), stamp);
        #[allow(clippy::cast_precision_loss)]
        seen.lags_ms.push((now - stamp) as f64 / 1e6);
        seen.first_stamp = Some(seen.first_stamp.map_or(stamp, |f| f.min(stamp)));
        seen.last = seen.last.max(now);
        if seen.stamps.len() == self.want {
            self.done.notify_one();
        }
    }

    fn stamp(&self, object: &CachedObject) -> Option<i64> {
        let value = object.annotations().get(STAMP_ANNOTATION)?;
        value
            .strip_prefix(self.burst_id.as_str())?
            .strip_prefix(':')?
            .parse()
            .ok()
    }

    fn reconciled_objects(&self) -> usize {
        self.seen.lock().expect("lags").stamps.len()
    }

    /// Waits until the initial list's `objects` keys have been reconciled
    /// and nothing waits in `queue`.
    async fn wait_initial(&self, queue: &WorkQueue<ObjectRef>, objects: usize, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let objects = u64::try_from(objects).unwrap_or(u64::MAX);
        while self.reconciles.load(Ordering::Relaxed) < objects || !queue.is_empty() {
            assert!(
                Instant::now() < deadline,
                "initial reconciles: {} of {objects} done",
                self.reconciles.load(Ordering::Relaxed)
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Waits until the burst is over; its figures, with the reconciles
    /// done since `before` reconciles and the CPU since `cpu_before`.
    async fn wait_burst(
        &self,
        timeout: Duration,
        before: u64,
        cpu_before: f64,
    ) -> Map<String, Value> {
        // The last reconcile's notify_one leaves a permit if nobody waits yet.
        if tokio::time::timeout(timeout, self.done.notified())
            .await
            .is_err()
        {
            panic!(
                "burst: {} of {} written objects reconciled before the deadline",
                self.reconciled_objects(),
                self.want
            );
        }
        let cpu = cpu_seconds() - cpu_before;
        let reconciles = self.reconciles.load(Ordering::Relaxed) - before;
        let mut m = self.result();
        #[allow(clippy::cast_precision_loss)]
        let per_reconcile = cpu * 1e6 / reconciles.max(1) as f64;
        m.insert("reconciles".into(), json!(reconciles));
        m.insert("cpu_burst_s".into(), json!(round(cpu, 3)));
        m.insert(
            "cpu_per_reconcile_us".into(),
            json!(round(per_reconcile, 1)),
        );
        m.insert(
            "rss_peak_mb".into(),
            json!(round(proc_status_mb("VmHWM"), 1)),
        );
        m
    }

    /// The burst's figures, once it is over.
    fn result(&self) -> Map<String, Value> {
        let seen = self.seen.lock().expect("lags");
        let mut sorted = seen.lags_ms.clone();
        sorted.sort_by(f64::total_cmp);
        #[allow(clippy::cast_precision_loss)]
        let span_s = (seen.last - seen.first_stamp.unwrap_or(seen.last)) as f64 / 1e9;
        #[allow(clippy::cast_precision_loss)]
        let per_s = sorted.len() as f64 / span_s.max(1e-9);
        let mut m = Map::new();
        m.insert("reconciled_writes".into(), json!(sorted.len()));
        m.insert("reconciled_writes_per_s".into(), json!(round(per_s, 1)));
        m.insert(
            "latency_p50_ms".into(),
            json!(round(percentile(&sorted, 50.0), 2)),
        );
        m.insert(
            "latency_p99_ms".into(),
            json!(round(percentile(&sorted, 99.0), 2)),
        );
        m.insert(
            "latency_max_ms".into(),
            json!(round(sorted.last().copied().unwrap_or(0.0), 2)),
        );
        m
    }
}

#[tokio::main]
async fn main() {
    let start = Instant::now();
    let args = Args::parse();
    let factory = InformerFactory::new(args.client().await);
    let handle = factory
        .for_resource(ResourceKey::from(&args.resource()))
        .await
        .expect("the Widgets' informer");
    let lags = Lags::new(&args);
    let controller = Controller::new("widgets")
        .workers(args.workers)
        .client(factory.client().clone())
        .watch(&handle);
    let queue = controller.queue().clone();
    let shutdown = controller.shutdown_handle();
    let observer = lags.clone();
    factory.start().expect("starting the factory");
    let run = tokio::spawn(controller.run(move |ctx: Context| {
        observer.observe(ctx.key(), ctx.object());
        async { Ok::<_, Infallible>(Action::Done) }
    }));
    let report = factory.wait_for_cache_sync(args.timeout).await;
    assert!(
        handle.has_synced(),
        "not synced within {:?}: {report:?}",
        args.timeout
    );
    let sync_s = start.elapsed().as_secs_f64();
    let objects = handle.lister().store().len();
    // The initial list queued every object: its reconciles come first.
    lags.wait_initial(&queue, objects, args.timeout).await;
    let mut result = json!({
        "peer": "kdi", "dataset": args.dataset, "objects": objects, "workers": args.workers,
        "sync_s": round(sync_s, 3), "initial_reconciled_s": round(start.elapsed().as_secs_f64(), 3),
        "initial_reconciles": lags.reconciles.load(Ordering::Relaxed),
        "cpu_sync_s": round(cpu_seconds(), 3), "allocator": allocator(),
    });
    tokio::time::sleep(args.settle).await;
    result["rss_steady_mb"] = json!(round(proc_status_mb("VmRSS"), 1));
    result["peak_rss_reset"] = json!(reset_peak_rss());
    let before = lags.reconciles.load(Ordering::Relaxed);
    let cpu_before = cpu_seconds();
    emit(&json!({"event": "synced", "peer": "kdi", "objects": objects}));

    if !args.burst_id.is_empty() && args.burst_count > 0 {
        let fields = result.as_object_mut().expect("object");
        fields.extend(lags.wait_burst(args.timeout, before, cpu_before).await);
        fields.insert("burst_updates".into(), json!(args.burst_count));
    }
    result["rss_end_mb"] = json!(round(proc_status_mb("VmRSS"), 1));
    result["cpu_total_s"] = json!(round(cpu_seconds(), 3));
    emit(&result);
    shutdown.shut_down();
    let _ = run.await;
    factory.shutdown().await;
}
