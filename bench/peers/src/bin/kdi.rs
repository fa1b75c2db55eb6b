//! This library's peer: a shared informer with three JMESPath indexes and two
//! handlers, measuring itself (see the crate docs for the output).
//!
//! `--storage objects|compact` chooses how the cache holds its objects
//! (`InformerOptions::storage`; the library's default, compact, without
//! it); the peer is named `kdi` in the default storage and `kdi-objects`
//! otherwise, and its result's `storage` says which.
//!
//! With `--strip-per-page` (and `--strip-managed-fields`) the transform runs
//! inside a wrapping `ListWatch`, on each list page and watch event as it
//! arrives: what a user could do by hand, against which the built-in
//! transform (which also runs page by page) is checked.
//!
//! After sync (and the burst, when there is one: `cpu_per_update_us` is the
//! process's CPU from the synced line to the end of the burst divided by the
//! updates handler 1 received) and its memory figures, the peer measures,
//! through the public API and one phase after the other, each resetting the
//! peak RSS first (`/proc/self/clear_refs`) and reading `VmHWM` after it, so
//! that the run's `rss_peak_mb` counts none of them:
//!
//! 1. replay (`replay_s`, `replay_rss_peak_mb`): a late handler, which
//!    receives the whole cache as `Add { in_initial_list: true }` and reads
//!    each object's name, until it has had every object; then it is removed;
//! 2. resync (`resync_s`, `resync_rss_peak_mb`): a handler asking a resync
//!    every [`RESYNC_PERIOD`] (the informer is built with that period so
//!    that it resyncs at all; handlers 1 and 2 ask none) takes its replay,
//!    then, peak reset, one `Update { is_resync: true }` of every object,
//!    timed from the first to the last; then it is removed;
//! 3. the reads a controller makes through its `Lister` (`reads_rss_peak_mb`):
//!    `get` of random keys, `get` followed by `CachedObject::object` (the
//!    whole `DynamicObject`: a decode with compact storage), `list_all`, and
//!    `list` with [`LABEL_SELECTOR`], all of them handles;
//! 4. `decode_p50_us` (`decode_p99_us`): `CachedObject::object` on a sample
//!    of [`DECODE_SAMPLE`] of the cache's objects that nobody else holds (a
//!    pointer copy with objects storage); then `clone_p50_us`
//!    (`clone_p99_us`): `DynamicObject::clone` of the same objects, each
//!    decoded once untimed and held while the clones are timed: what
//!    `object()` costs beside a plain copy of the object it returns;
//! 5. `write_json_mb_s`: `CachedObject::write_json` of every cached object
//!    into one buffer, cleared before each object, no warm-up: the bytes
//!    written (`write_json_bytes`, `write_json_objects`) over the time of the
//!    whole pass (`write_json_s`), in MiB (2^20 bytes) per second, as every
//!    `_mb` field here counts MiB. Objects storage serialises each decoded
//!    `DynamicObject`; compact storage writes from the compact form;
//! 6. `rss_after_idle_mb`: the RSS [`IDLE`] after them, once the informer
//!    has freed what the dropped decoded objects kept (every 5 s, compact
//!    storage), beside `rss_after_phases_mb` read as they ended; and the
//!    same for what glibc's malloc has handed out (`heap_before_phases_mb`,
//!    `heap_after_phases_mb`, `heap_after_idle_mb`; null with another
//!    allocator), which, unlike the RSS, shows memory freed and kept by
//!    malloc;
//! 7. decode all, last, so that the fields above do not count it:
//!    `CachedObject::object` of every cached object, all of them held at
//!    once (`decode_all_s` to take them, `decode_all_objects`), with the
//!    peak RSS reset first: `decode_all_peak_mb` (`VmHWM`),
//!    `decode_all_rss_held_mb` and `decode_all_heap_held_mb` read while
//!    they are held; then they are dropped and the RSS sampled every
//!    100 ms for [`DECODE_ALL_AFTER`]: `decode_all_rss_after_mb` and
//!    `decode_all_heap_after_mb` at its end, `decode_all_rss_after_by_s_mb`
//!    the RSS at each whole second after the drop, `decode_all_rss_after_min_mb`
//!    the lowest sample. The phase allocates nothing while the objects are
//!    held that outlives them (its results are put together at its end): a
//!    block taken from the top of glibc's heap then would keep the memory
//!    below it from going back to the system, and measure the bench.
//!
//! With `--shard I/N` the informer keeps only that static shard (filtered
//! by the server where it can, here otherwise); the result says where
//! (`shard_filtering`) and how many objects arrived and were dropped. Every
//! run reports what the server sent for its lists until sync
//! (`served_list_mb`, from the server's metrics).
//!
//! With `--relist` it skips those reads, prints `{"event":"relist-ready",..}`,
//! resets the peak RSS and waits until the reflector has relisted after a
//! 410 Gone (`ReflectorStats::relists_after_gone`) that the script forces by
//! restarting the API server: its new watch cache starts at a newer
//! resourceVersion than the informer's, so the informer's next watch gets 410
//! and it lists everything again. The relist fields are the RSS before it,
//! the peak during it, the time from the 410 to the watch that follows the
//! list, and the CPU in between.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use kdi_bench_peers::{
    Args, Handlers, LABEL_SELECTOR, ObjectCounter, cpu_seconds, emit, end_of_run, heap_in_use_mb,
    percentile, proc_status_mb, query_values, reset_peak_rss, round, served_list_mb, time_each,
};
use kube::api::{ListParams, WatchParams};
use kube_core::DynamicObject;
use kube_dynamic_informer::Lister;
use kube_dynamic_informer::cache::Storage;
use kube_dynamic_informer::cache::{CachedObject, IndexFn};
use kube_dynamic_informer::informer::{Event, HandlerOptions, Registration, SharedInformer};
use kube_dynamic_informer::informer::{InformerOptions, SnapshotOptions};
use kube_dynamic_informer::vocabulary::ResourceKey;
use kube_dynamic_informer::vocabulary::Scope;
use kube_dynamic_informer::wire::{
    ApiListWatch, Capabilities, ListPage, ListWatch, ListWatchError, WatchEvent, WatchStream,
};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

/// Strips managedFields from every object as each list page or watch event
/// arrives.
struct StripPerPage(ApiListWatch);

fn strip(obj: &mut DynamicObject) {
    obj.metadata.managed_fields = None;
}

impl ListWatch for StripPerPage {
    fn list(&self, params: &ListParams) -> BoxFuture<'static, Result<ListPage, ListWatchError>> {
        let page = self.0.list(params);
        async move {
            let mut page = page.await?;
            // An object that does not decode is left for the informer to
            // skip.
            for o in &mut page.objects {
                if let Ok(o) = o.object_mut() {
                    strip(o);
                }
            }
            Ok(page)
        }
        .boxed()
    }

    fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> BoxFuture<'static, Result<WatchStream, ListWatchError>> {
        let stream = self.0.watch(params, resource_version);
        async move {
            let stream = stream.await?.map(|event| {
                event.map(|mut e| {
                    // An object that does not decode is left for the
                    // informer to skip.
                    if let WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) =
                        &mut e
                        && let Ok(o) = o.object_mut()
                    {
                        strip(o);
                    }
                    e
                })
            });
            Ok(stream.boxed())
        }
        .boxed()
    }

    fn capabilities(&self) -> Capabilities {
        self.0.capabilities()
    }
}

#[tokio::main]
async fn main() {
    let mut start = Instant::now();
    let strip_per_page = std::env::args().any(|a| a == "--strip-per-page");
    let streaming_list = std::env::args().any(|a| a == "--streaming-list");
    let args = Args::parse();
    // A restart with a snapshot directory: `cold` lists (the directory is
    // empty) and writes the snapshot when it stops, `warm` starts from it.
    let restart = flag_value("--restart");
    let snapshot_dir = flag_value("--snapshot-dir");
    let client = args.client().await;
    // The server's metrics, read for served_list_mb: not the peer's work,
    // so not in its time to sync.
    let scrape = Instant::now();
    let served_before = served_list_mb(&client, &args.resource().plural).await;
    start += scrape.elapsed();
    let metrics_client = client.clone();

    let storage = match args.storage.as_str() {
        "compact" => Storage::Compact,
        "objects" => Storage::Objects,
        _ => Storage::default(),
    };
    let storage_name = match storage {
        Storage::Compact => "compact",
        Storage::Objects => "objects",
    };
    let mut peer = match (strip_per_page, streaming_list) {
        (true, _) => "kdi-strip-per-page",
        (false, true) => "kdi-streaming-list",
        (false, false) => "kdi",
    }
    .to_string();
    // Named for the storage when it is not the library's default.
    if storage != Storage::default() {
        peer = format!("{peer}-{storage_name}");
    }
    let shard = args.shard.as_deref().map(|s| {
        s.parse::<kube_dynamic_informer::vocabulary::StaticShard>()
            .unwrap_or_else(|e| panic!("--shard {s}: {e}"))
    });
    if let Some(shard) = shard {
        peer = format!("{peer}-shard-{}-of-{}", shard.index(), shard.count());
    }
    if let Some(restart) = &restart {
        peer = format!("kdi-{restart}-restart");
    }

    // The phases after the run (see the module docs): not in the relist
    // phase nor in a restart run.
    let phases = !args.relist && restart.is_none();
    let mut options = InformerOptions::default()
        .streaming_list(streaming_list)
        .storage(storage);
    if phases {
        // An informer whose period is 0 resyncs no handler; handlers 1 and
        // 2 ask for none.
        options = options.resync(RESYNC_PERIOD);
    }
    options.cache.shard = shard;
    if let Some(dir) = &snapshot_dir {
        options = options.snapshot(SnapshotOptions::new(dir).interval(Duration::ZERO));
    }
    let informer = if strip_per_page {
        SharedInformer::with_list_watch(
            StripPerPage(ApiListWatch::new(
                client,
                args.resource(),
                Scope::Namespaced,
            )),
            args.resource(),
            options,
        )
    } else {
        if args.strip_managed_fields {
            options = options.strip_managed_fields();
        }
        SharedInformer::new(client, args.resource(), Scope::Namespaced, options)
            .expect("building the informer")
    };
    for (name, expression) in args.indexes() {
        informer
            .add_index(
                name,
                IndexFn::jmespath(name, expression).expect("index expression"),
            )
            .expect("adding an index");
    }

    let handlers = Handlers::new(&args);
    let no_resync = || HandlerOptions::default().resync(Duration::ZERO);
    let h1 = handlers.clone();
    let r1 = informer.add_handler_with(
        move |event: Event| {
            if let Event::Update {
                new,
                is_resync: false,
                ..
            } = &event
            {
                h1.lag_on_update(new);
            }
        },
        no_resync(),
    );
    let h2 = handlers.clone();
    let r2 = informer.add_handler_with(
        move |event: Event| match &event {
            Event::Add { object, .. } => h2.tally(object, 1),
            Event::Update { new, .. } => h2.tally(new, 0),
            Event::Delete { object, .. } => h2.tally(object, -1),
        },
        no_resync(),
    );

    let cancel = CancellationToken::new();
    let task = informer
        .start(cancel.clone())
        .expect("starting the informer");
    informer.wait_for_sync(args.timeout).await.expect("sync");
    let sync_s = start.elapsed().as_secs_f64();
    let cpu_sync = cpu_seconds();
    let rss_sync = proc_status_mb("VmRSS");
    let served_list =
        served_list_mb(&metrics_client, &args.resource().plural).await - served_before;
    tokio::time::sleep(args.settle).await;
    let rss_steady = proc_status_mb("VmRSS");
    let store = informer.store();
    let objects = store.len();

    let values = query_values(args.queries);
    // One untimed pass first, as every peer does: the first touch of each
    // object since it was cached is not what a steady reader sees.
    for value in &values {
        drop(store.by_index("node", value));
    }
    let (durations, hits) = time_each(
        &values,
        |value| store.by_index("node", value).expect("node index"),
        Vec::len,
    );

    #[allow(clippy::cast_precision_loss)]
    let mut result = json!({
        "peer": peer, "storage": storage_name,
        "dataset": args.dataset, "objects": objects, "strip": args.strip_managed_fields || strip_per_page,
        "sync_s": round(sync_s, 3), "cpu_sync_s": round(cpu_sync, 3),
        "rss_sync_mb": round(rss_sync, 1), "rss_steady_mb": round(rss_steady, 1),
        "by_index_p50_us": round(percentile(&durations, 50.0), 2),
        "by_index_p99_us": round(percentile(&durations, 99.0), 2),
        "by_index_hits_avg": round(hits as f64 / values.len().max(1) as f64, 1),
        "served_list_mb": round(served_list, 1),
        "list_requests": informer.stats().list_requests.load(Ordering::Relaxed),
    });
    if let Some(start) = informer.stats().snapshot_start() {
        result["snapshot"] = json!(start.to_string());
        // The restart runs' name for what the server sent for the lists.
        result["server_list_mb"] = result["served_list_mb"].clone();
    }
    if shard.is_some() {
        let stats = informer.stats();
        result["shard"] = json!(args.shard);
        result["shard_filtering"] = json!(stats.shard_filtering().map(|f| f.to_string()));
        result["shard_objects_dropped"] =
            json!(stats.shard_objects_dropped.load(Ordering::Relaxed));
    }
    emit(&json!({"event": "synced", "peer": peer, "objects": objects}));

    end_of_run(&mut result, &handlers, &args).await;
    let received = handlers.updates_received();
    if result.get("burst_updates").is_some() && received > 0 {
        #[allow(clippy::cast_precision_loss)]
        let per_update = result["cpu_burst_s"].as_f64().unwrap_or(0.0) * 1e6 / received as f64;
        result["cpu_per_update_us"] = json!(round(per_update, 1));
        result["burst_updates_received"] = json!(received);
    }
    let lister = Lister::new(
        informer.store(),
        ResourceKey::from(&args.resource()),
        Scope::Namespaced,
    );
    let fields = result.as_object_mut().expect("object");
    if args.relist {
        // No reads first: what they allocate and free (a whole decoded list,
        // in compact mode) would count in the RSS before the relist.
        fields.extend(relist(&informer, &[r1, r2], &args, &peer).await);
    } else if phases {
        fields.extend(after_run(&informer, &lister, &args).await);
    }
    // Stopping writes the snapshot of a restart peer: timed.
    let stopping = Instant::now();
    cancel.cancel();
    let _ = task.await;
    if restart.is_some() {
        result["stop_s"] = json!(round(stopping.elapsed().as_secs_f64(), 3));
        result["rss_peak_mb"] = json!(round(proc_status_mb("VmHWM"), 1));
    }
    emit(&result);
}

/// The value after `flag` on the command line.
fn flag_value(flag: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1).cloned())
}

/// Median of sorted microseconds, in milliseconds.
fn median_ms(sorted_us: &[f64]) -> f64 {
    round(percentile(sorted_us, 50.0) / 1000.0, 3)
}

/// The resync period the resync phase asks for: the shortest the informer
/// allows (shorter periods are raised to 1 s). The informer is built with
/// it: after start, a handler's period is at least the informer's.
const RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// How long after the phases `rss_after_idle_mb` is read: longer than the
/// 5 s at which a compact informer frees what dropped decoded objects keep.
const IDLE: Duration = Duration::from_secs(6);

/// Objects whose `CachedObject::object` is timed by the decode phase.
const DECODE_SAMPLE: usize = 2000;

/// How long after dropping every decoded object the decode-all phase reads
/// `decode_all_rss_after_mb`: twice the 5 s at which a compact informer
/// frees what dropped decoded objects keep.
const DECODE_ALL_AFTER: Duration = Duration::from_secs(10);

/// How often the decode-all phase samples the RSS after the drop.
const DECODE_ALL_SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// The peak RSS since `reset` (`VmHWM`), or null when it could not be reset.
fn peak_since(reset: bool) -> Value {
    if reset {
        json!(round(proc_status_mb("VmHWM"), 1))
    } else {
        Value::Null
    }
}

/// The phases after the run, in order (see the module docs).
async fn after_run(informer: &SharedInformer, lister: &Lister, args: &Args) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        "heap_before_phases_mb".into(),
        json!(heap_in_use_mb().map(|mb| round(mb, 1))),
    );
    m.extend(replay(informer, args).await);
    m.extend(resync(informer, args).await);
    m.extend(reads(lister, args, lister.len()));
    m.extend(decode(lister));
    m.extend(write_json(lister));
    m.insert(
        "rss_after_phases_mb".into(),
        json!(round(proc_status_mb("VmRSS"), 1)),
    );
    m.insert(
        "heap_after_phases_mb".into(),
        json!(heap_in_use_mb().map(|mb| round(mb, 1))),
    );
    tokio::time::sleep(IDLE).await;
    m.insert(
        "rss_after_idle_mb".into(),
        json!(round(proc_status_mb("VmRSS"), 1)),
    );
    m.insert(
        "heap_after_idle_mb".into(),
        json!(heap_in_use_mb().map(|mb| round(mb, 1))),
    );
    m.insert("idle_s".into(), json!(IDLE.as_secs_f64()));
    m.extend(decode_all(lister).await);
    m
}

/// Replay: a late handler, counting each replayed Add and reading its name,
/// until it has had every cached object; then removed. `replay_s` runs from
/// `add_handler` to the handler's return from the last Add.
async fn replay(informer: &SharedInformer, args: &Args) -> Map<String, Value> {
    let mut m = Map::new();
    let want = informer.store().len() as u64;
    let reset = reset_peak_rss();
    let counter = ObjectCounter::new(want);
    let c = counter.clone();
    let started = Instant::now();
    let registration = informer.add_handler_with(
        move |event: Event| {
            if let Event::Add {
                object,
                in_initial_list: true,
                ..
            } = &event
            {
                c.take(object);
            }
        },
        HandlerOptions::default()
            .resync(Duration::ZERO)
            .name("bench-replay"),
    );
    let waited = counter.wait(args.timeout).await;
    m.insert("replay_rss_peak_mb".into(), peak_since(reset));
    registration.remove();
    match (waited, counter.done_at()) {
        (Ok(()), Some(done)) => {
            m.insert(
                "replay_s".into(),
                json!(round((done - started).as_secs_f64(), 4)),
            );
        }
        (Err(e), _) => {
            eprintln!("kdi: replay: {e}");
            m.insert("replay_error".into(), json!(e));
        }
        (Ok(()), None) => {}
    }
    m.insert("replay_objects".into(), json!(counter.count()));
    m.insert("replay_name_bytes".into(), json!(counter.name_bytes()));
    m
}

/// Resync: a handler asking [`RESYNC_PERIOD`] takes its replay, then (peak
/// RSS reset) one resync of every object, reading each one's name; then it
/// is removed. `resync_s` runs from the handler's first resync event to its
/// return from the last of the round.
async fn resync(informer: &SharedInformer, args: &Args) -> Map<String, Value> {
    let mut m = Map::new();
    let want = informer.store().len() as u64;
    let replayed = ObjectCounter::new(want);
    let resynced = ObjectCounter::new(want);
    let (a, b) = (replayed.clone(), resynced.clone());
    let registration = informer.add_handler_with(
        move |event: Event| match &event {
            Event::Add {
                object,
                in_initial_list: true,
                ..
            } => a.take(object),
            Event::Update {
                new,
                is_resync: true,
                ..
            } => b.take(new),
            _ => {}
        },
        HandlerOptions::default()
            .resync(RESYNC_PERIOD)
            .name("bench-resync"),
    );
    let period = registration.resync_period();
    m.insert("resync_period_s".into(), json!(period.as_secs_f64()));
    if period.is_zero() {
        registration.remove();
        m.insert(
            "resync_error".into(),
            json!("the informer gave no resync period"),
        );
        return m;
    }
    let waited = match replayed.wait(args.timeout).await {
        Ok(()) => {
            let reset = reset_peak_rss();
            let waited = resynced.wait(args.timeout).await;
            m.insert("resync_rss_peak_mb".into(), peak_since(reset));
            waited
        }
        Err(e) => Err(format!("its replay: {e}")),
    };
    registration.remove();
    match (waited, resynced.first_at(), resynced.done_at()) {
        (Ok(()), Some(first), Some(done)) => {
            m.insert(
                "resync_s".into(),
                json!(round((done - first).as_secs_f64(), 4)),
            );
        }
        (Err(e), ..) => {
            eprintln!("kdi: resync: {e}");
            m.insert("resync_error".into(), json!(e));
        }
        _ => {}
    }
    m.insert("resync_objects".into(), json!(resynced.count()));
    m
}

/// Times `CachedObject::object` on [`DECODE_SAMPLE`] objects spread over
/// the cache, which nobody else holds decoded (the phases before dropped
/// everything they decoded): a decode with compact storage, a pointer copy
/// with objects storage. Then `DynamicObject::clone` of the same objects,
/// decoded again untimed and held meanwhile, against which `object()`
/// compares. Each result is dropped outside the timing.
fn decode(lister: &Lister) -> Map<String, Value> {
    let handles = lister.list_all();
    let step = (handles.len() / DECODE_SAMPLE).max(1);
    let sample: Vec<&CachedObject> = handles.iter().step_by(step).take(DECODE_SAMPLE).collect();
    let named = |o: &DynamicObject| usize::from(o.metadata.name.is_some());
    let (durations, decoded) = time_each(&sample, |handle| handle.object(), |o| named(o));
    let objects: Vec<Arc<DynamicObject>> = sample.iter().map(|handle| handle.object()).collect();
    let (clones, _) = time_each(&objects, |o| DynamicObject::clone(o), named);
    drop(objects);
    let mut m = Map::new();
    m.insert(
        "decode_p50_us".into(),
        json!(round(percentile(&durations, 50.0), 3)),
    );
    m.insert(
        "decode_p99_us".into(),
        json!(round(percentile(&durations, 99.0), 3)),
    );
    m.insert("decode_sample".into(), json!(decoded));
    m.insert(
        "clone_p50_us".into(),
        json!(round(percentile(&clones, 50.0), 3)),
    );
    m.insert(
        "clone_p99_us".into(),
        json!(round(percentile(&clones, 99.0), 3)),
    );
    m
}

/// Writes every cached object's JSON with `CachedObject::write_json` into
/// one buffer, cleared before each object, and reports the bytes over the
/// time of the whole pass. No warm-up: neither storage keeps anything from
/// a write that would make the next one cheaper.
#[allow(clippy::cast_precision_loss)]
fn write_json(lister: &Lister) -> Map<String, Value> {
    let handles = lister.list_all();
    let mut buf = Vec::with_capacity(1 << 16);
    let mut bytes = 0usize;
    let mut failed = 0usize;
    let started = Instant::now();
    for handle in &handles {
        buf.clear();
        match handle.write_json(&mut buf) {
            Ok(()) => bytes += buf.len(),
            Err(_) => failed += 1,
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let mut m = Map::new();
    m.insert(
        "write_json_mb_s".into(),
        json!(round(bytes as f64 / MIB / secs.max(1e-9), 1)),
    );
    m.insert("write_json_bytes".into(), json!(bytes));
    m.insert("write_json_objects".into(), json!(handles.len() - failed));
    m.insert("write_json_s".into(), json!(round(secs, 4)));
    if failed > 0 {
        m.insert("write_json_failed".into(), json!(failed));
    }
    m
}

/// Bytes in a MiB, the unit of every `_mb` field.
const MIB: f64 = 1024.0 * 1024.0;

/// Decode all (see the module docs): `CachedObject::object` of every cached
/// object, all held at once, the peak RSS reset before; then dropped, and
/// the RSS sampled every [`DECODE_ALL_SAMPLE_EVERY`] for
/// [`DECODE_ALL_AFTER`].
async fn decode_all(lister: &Lister) -> Map<String, Value> {
    // Nothing allocated while the objects are held may outlive them: a block
    // taken from the top of the heap then (a map entry, a growing vector)
    // would keep glibc from giving back the memory below it, and the RSS
    // after the drop would measure this function, not the cache.
    let mut by_s =
        Vec::with_capacity(usize::try_from(DECODE_ALL_AFTER.as_secs()).unwrap_or_default() + 1);
    let handles = lister.list_all();
    let reset = reset_peak_rss();
    let started = Instant::now();
    let objects: Vec<Arc<DynamicObject>> = handles.iter().map(CachedObject::object).collect();
    let decode_s = started.elapsed().as_secs_f64();
    let decoded = objects.len();
    let rss_held = proc_status_mb("VmRSS");
    let heap_held = heap_in_use_mb();
    let peak = reset.then(|| proc_status_mb("VmHWM"));
    drop(objects);
    drop(handles);
    let dropped = tokio::time::Instant::now();
    let samples_per_s =
        (Duration::from_secs(1).as_millis() / DECODE_ALL_SAMPLE_EVERY.as_millis()).max(1);
    let mut lowest = f64::INFINITY;
    let mut last = proc_status_mb("VmRSS");
    let mut tick = 0u32;
    while DECODE_ALL_SAMPLE_EVERY * tick < DECODE_ALL_AFTER {
        tick += 1;
        tokio::time::sleep_until(dropped + DECODE_ALL_SAMPLE_EVERY * tick).await;
        last = proc_status_mb("VmRSS");
        lowest = lowest.min(last);
        if u128::from(tick) % samples_per_s == 0 {
            by_s.push(round(last, 1));
        }
    }
    let mut m = Map::new();
    m.insert("decode_all_s".into(), json!(round(decode_s, 3)));
    m.insert("decode_all_objects".into(), json!(decoded));
    m.insert("decode_all_rss_held_mb".into(), json!(round(rss_held, 1)));
    m.insert(
        "decode_all_heap_held_mb".into(),
        json!(heap_held.map(|mb| round(mb, 1))),
    );
    m.insert(
        "decode_all_peak_mb".into(),
        json!(peak.map(|mb| round(mb, 1))),
    );
    m.insert("decode_all_rss_after_mb".into(), json!(round(last, 1)));
    m.insert(
        "decode_all_heap_after_mb".into(),
        json!(heap_in_use_mb().map(|mb| round(mb, 1))),
    );
    m.insert("decode_all_rss_after_by_s_mb".into(), json!(by_s));
    m.insert(
        "decode_all_rss_after_min_mb".into(),
        json!(round(lowest, 1)),
    );
    m.insert(
        "decode_all_after_s".into(),
        json!(DECODE_ALL_AFTER.as_secs_f64()),
    );
    m
}

/// Times the `Lister` reads, all of them handles: `get` of random keys
/// (one untimed pass first, as for `by_index`), `get` and
/// `CachedObject::object` of the same keys (no untimed pass: it would
/// decode nothing the timed one can reuse), then `list_all` and
/// `list(LABEL_SELECTOR)`, each once untimed and `--list-repeats` times
/// timed. Results are dropped outside the timed calls.
#[allow(clippy::cast_precision_loss)]
fn reads(lister: &Lister, args: &Args, objects: usize) -> Map<String, Value> {
    let reset = reset_peak_rss();
    let started = Instant::now();
    let keys = args.random_keys(objects, args.queries);
    for key in &keys {
        drop(lister.get(key));
    }
    let (get, found) = time_each(&keys, |key| lister.get(key), |o| usize::from(o.is_some()));
    let (get_object, _) = time_each(
        &keys,
        |key| lister.get(key).map(|o| o.object()),
        |o| usize::from(o.is_some()),
    );
    let repeats: Vec<usize> = (0..args.list_repeats.max(1)).collect();
    drop(lister.list_all());
    let (all, all_hits) = time_each(&repeats, |_| lister.list_all(), Vec::len);
    drop(lister.list(LABEL_SELECTOR));
    let (selected, selected_hits) = time_each(
        &repeats,
        |_| lister.list(LABEL_SELECTOR).expect("label selector"),
        Vec::len,
    );
    let mut m = Map::new();
    m.insert("get_p50_us".into(), json!(round(percentile(&get, 50.0), 2)));
    m.insert("get_p99_us".into(), json!(round(percentile(&get, 99.0), 2)));
    m.insert(
        "get_object_p50_us".into(),
        json!(round(percentile(&get_object, 50.0), 2)),
    );
    m.insert(
        "get_object_p99_us".into(),
        json!(round(percentile(&get_object, 99.0), 2)),
    );
    m.insert("get_found".into(), json!(found));
    m.insert("get_calls".into(), json!(keys.len()));
    m.insert("list_all_ms".into(), json!(median_ms(&all)));
    m.insert("list_all_objects".into(), json!(all_hits / repeats.len()));
    m.insert("label_selector".into(), json!(LABEL_SELECTOR));
    m.insert("label_list_ms".into(), json!(median_ms(&selected)));
    m.insert(
        "label_list_hits".into(),
        json!(selected_hits / repeats.len()),
    );
    m.insert("list_repeats".into(), json!(repeats.len()));
    m.insert(
        "reads_s".into(),
        json!(round(started.elapsed().as_secs_f64(), 2)),
    );
    m.insert("reads_rss_peak_mb".into(), peak_since(reset));
    m
}

/// How long the relist phase waits for the 410 and the relist after it: a
/// restart of the API server and the informer's backoff (30 s at most) take
/// well under a minute.
const RELIST_TIMEOUT: Duration = Duration::from_secs(300);

/// What the poller saw of a relist, in seconds from the `relist-ready` line.
struct RelistSeen {
    gone_s: f64,
    done_s: f64,
    cpu_s: f64,
    relists: u64,
}

/// Waits (on a thread of its own, so that a busy runtime does not delay the
/// readings) until `relists_after_gone` has gone up, then until the list that
/// follows is complete (`lists` up) and the next watch was requested, which
/// the reflector does right after the store took the list. Polls every 10 ms.
fn wait_for_relist(
    informer: &SharedInformer,
    ready: Instant,
    timeout: Duration,
) -> Result<RelistSeen, String> {
    let stats = informer.stats();
    let gone0 = stats.relists_after_gone.load(Ordering::SeqCst);
    let lists0 = stats.lists.load(Ordering::SeqCst);
    let mut gone: Option<(Instant, f64)> = None;
    let mut listed: Option<(Instant, u64)> = None;
    loop {
        let now = Instant::now();
        let relists = stats.relists_after_gone.load(Ordering::SeqCst);
        let lists = stats.lists.load(Ordering::SeqCst);
        let watches = stats.watch_requests.load(Ordering::SeqCst);
        if gone.is_none() && relists > gone0 {
            gone = Some((now, cpu_seconds()));
        }
        if let Some((gone_at, gone_cpu)) = gone {
            if listed.is_none() && lists > lists0 {
                listed = Some((now, watches));
            }
            if let Some((listed_at, watches_then)) = listed {
                // The watch after the list; or, had it started before this
                // thread saw the list, the list itself (5 s without another
                // watch request).
                let done_at = if watches > watches_then {
                    Some(now)
                } else if now - listed_at > Duration::from_secs(5) {
                    Some(listed_at)
                } else {
                    None
                };
                if let Some(done_at) = done_at {
                    return Ok(RelistSeen {
                        gone_s: (gone_at - ready).as_secs_f64(),
                        done_s: (done_at - ready).as_secs_f64(),
                        cpu_s: cpu_seconds() - gone_cpu,
                        relists: relists - gone0,
                    });
                }
            }
        }
        if now - ready > timeout {
            return Err(format!(
                "no relist after 410 within {timeout:?} (relists after 410: {relists}, lists: {lists}, status: {})",
                informer.status()
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The relist phase (`--relist`): see the module docs.
#[allow(clippy::cast_precision_loss)]
async fn relist(
    informer: &SharedInformer,
    registrations: &[Registration],
    args: &Args,
    peer: &str,
) -> Map<String, Value> {
    let mut m = Map::new();
    let rss_before = proc_status_mb("VmRSS");
    let reset = reset_peak_rss();
    // RSS sampled every 10 ms besides VmHWM (the only peak when the reset
    // is refused).
    let stop = Arc::new(AtomicBool::new(false));
    let sampled_kb = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (stop, sampled_kb) = (stop.clone(), sampled_kb.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let kb = (proc_status_mb("VmRSS") * 1024.0) as u64;
                sampled_kb.fetch_max(kb, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    let ready = Instant::now();
    emit(&json!({"event": "relist-ready", "peer": peer, "rss_mb": round(rss_before, 1)}));
    let seen = {
        let informer = informer.clone();
        let timeout = args.timeout.min(RELIST_TIMEOUT);
        tokio::task::spawn_blocking(move || wait_for_relist(&informer, ready, timeout))
            .await
            .expect("relist poller")
    };
    m.insert("relist_rss_before_mb".into(), json!(round(rss_before, 1)));
    match seen {
        Ok(seen) => {
            // The handlers take the relist's events (changed objects only).
            let drained = Instant::now();
            while registrations.iter().any(|r| r.backlog() > 0) && drained.elapsed() < args.timeout
            {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            tokio::time::sleep(args.settle).await;
            m.insert("relist_wait_s".into(), json!(round(seen.gone_s, 2)));
            m.insert(
                "relist_s".into(),
                json!(round(seen.done_s - seen.gone_s, 3)),
            );
            m.insert("relist_cpu_s".into(), json!(round(seen.cpu_s, 3)));
            m.insert("relists_after_gone".into(), json!(seen.relists));
            m.insert("relist_objects".into(), json!(informer.store().len()));
            m.insert(
                "relist_rss_after_mb".into(),
                json!(round(proc_status_mb("VmRSS"), 1)),
            );
        }
        Err(e) => {
            eprintln!("kdi: {e}");
            m.insert("relist_error".into(), json!(e));
        }
    }
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    let sampled_mb = sampled_kb.load(Ordering::Relaxed) as f64 / 1024.0;
    m.insert("relist_peak_sampled_mb".into(), json!(round(sampled_mb, 1)));
    m.insert(
        "relist_peak_mb".into(),
        json!(round(
            if reset {
                proc_status_mb("VmHWM").max(sampled_mb)
            } else {
                sampled_mb
            },
            1
        )),
    );
    m.insert(
        "relist_peak_from".into(),
        json!(if reset { "VmHWM" } else { "sampled" }),
    );
    m
}
