//! What the Rust peers of `scripts/bench` share: their command line, the
//! datasets' resources and indexes, the two handlers, and self-measurement
//! (RSS from `/proc/self/status`, CPU from `/proc/self/stat`).
//!
//! Each peer prints JSON lines on stdout: `{"event":"synced",..}` once its
//! cache has synced (the script then starts the update burst), and one result
//! line at the end. The Go peer (bench/clientgo) prints the same fields. The
//! kdi peer with `--relist` also prints `{"event":"relist-ready",..}` when it
//! waits for the script to force a relist (see `kdi.rs`).
//!
//! Built with the cargo feature `mimalloc` or `jemalloc`, every peer of the
//! crate uses that allocator instead of the system's (glibc's) malloc;
//! `allocator()` names the one in use, and each result line carries it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kube_client::config::{KubeConfigOptions, Kubeconfig};
use kube_client::{Client, Config};
use kube_core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::{Map, Value, json};

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(all(feature = "jemalloc", not(feature = "mimalloc")))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The allocator this binary runs with: `mimalloc`, `jemalloc`, or `glibc`
/// (the system's), followed by `MALLOC_ARENA_MAX=N` when that variable is
/// set for glibc.
#[must_use]
pub fn allocator() -> String {
    if cfg!(feature = "mimalloc") {
        "mimalloc".into()
    } else if cfg!(feature = "jemalloc") {
        "jemalloc".into()
    } else {
        match std::env::var("MALLOC_ARENA_MAX") {
            Ok(n) if !n.is_empty() => format!("glibc MALLOC_ARENA_MAX={n}"),
            _ => "glibc".into(),
        }
    }
}

/// The annotation the loader stamps on each update: `<burst id>:<unix nanos>`.
pub const STAMP_ANNOTATION: &str = "bench.kdi.dev/stamp";
/// Distinct `node-N` values in both datasets (by_index queries pick among them).
pub const NODES: u32 = 1000;

/// The command line every peer takes.
#[derive(Debug, Clone)]
pub struct Args {
    /// Kubeconfig of the test server.
    pub kubeconfig: PathBuf,
    /// Workers of a reconciling peer (`--workers`, 4 by default).
    pub workers: usize,
    /// `crd` (Widgets) or `configmap`.
    pub dataset: String,
    /// Drop `metadata.managedFields` before caching.
    pub strip_managed_fields: bool,
    /// Count updates stamped by this burst; empty: no burst.
    pub burst_id: String,
    /// Updates the burst writes.
    pub burst_count: u64,
    /// `by_index` calls to time, and `get` calls (kdi).
    pub queries: usize,
    /// Timed repetitions of each whole-cache read, `list_all` and the
    /// label-selector list (kdi).
    pub list_repeats: usize,
    /// How the cache holds its objects: `objects` or `compact` (kdi).
    pub storage: String,
    /// After the run, wait for a relist forced by the script and measure it (kdi).
    pub relist: bool,
    /// Wait after sync (and after the burst) before reading steady RSS.
    pub settle: Duration,
    /// Give up after this long.
    pub timeout: Duration,
    /// Keep only this static shard, `I/N` (kdi).
    pub shard: Option<String>,
}

impl Args {
    /// Parses `--flag value` pairs (and the boolean `--strip-managed-fields`).
    ///
    /// # Panics
    /// On an unknown flag or a malformed value: this is a benchmark driver.
    #[must_use]
    pub fn parse() -> Self {
        let mut args = Self {
            kubeconfig: std::env::var_os("KUBECONFIG")
                .map(PathBuf::from)
                .unwrap_or_default(),
            workers: 4,
            dataset: "crd".into(),
            strip_managed_fields: false,
            burst_id: String::new(),
            burst_count: 0,
            queries: 20_000,
            list_repeats: 5,
            storage: String::new(),
            relist: false,
            settle: Duration::from_secs(3),
            timeout: Duration::from_secs(900),
            shard: None,
        };
        let mut it = std::env::args().skip(1);
        while let Some(flag) = it.next() {
            let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
            match flag.trim_start_matches('-') {
                "kubeconfig" => args.kubeconfig = value().into(),
                "dataset" => args.dataset = value(),
                "workers" => args.workers = value().parse().expect("--workers"),
                "strip-managed-fields" => args.strip_managed_fields = true,
                // Read by the kdi peer itself.
                "strip-per-page" | "streaming-list" => {}
                "restart" | "snapshot-dir" => {
                    value();
                }
                "burst-id" => args.burst_id = value(),
                "burst-count" => args.burst_count = value().parse().expect("--burst-count"),
                "queries" => args.queries = value().parse().expect("--queries"),
                "list-repeats" => {
                    args.list_repeats = value().parse().expect("--list-repeats");
                }
                "storage" => args.storage = value(),
                "relist" => args.relist = true,
                "settle" => args.settle = parse_duration(&value()),
                "timeout" => args.timeout = parse_duration(&value()),
                "shard" => args.shard = Some(value()),
                other => panic!("unknown flag --{other}"),
            }
        }
        assert!(
            matches!(args.dataset.as_str(), "crd" | "configmap"),
            "--dataset crd|configmap"
        );
        assert!(
            matches!(args.storage.as_str(), "" | "objects" | "compact"),
            "--storage objects|compact"
        );
        args
    }

    /// The resource of the dataset.
    #[must_use]
    pub fn resource(&self) -> ApiResource {
        if self.dataset == "crd" {
            ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("bench.kdi.dev", "v1", "Widget"),
                "widgets",
            )
        } else {
            ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("", "v1", "ConfigMap"),
                "configmaps",
            )
        }
    }

    /// The cache key (`namespace/name`) of object number `i`, as the loader
    /// (bench/clientgo/dataset.go) names it.
    #[must_use]
    pub fn key_of(&self, i: u64) -> String {
        let ns = i % 10;
        if self.dataset == "crd" {
            format!("bench-{ns}/widget-{i:06}")
        } else {
            format!("bench-{ns}/cm-{i:06}")
        }
    }

    /// `count` keys of random objects among the first `objects`, the same
    /// sequence in every run.
    #[must_use]
    pub fn random_keys(&self, objects: usize, count: usize) -> Vec<String> {
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let n = u64::try_from(objects.max(1)).unwrap_or(u64::MAX);
        (0..count)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                self.key_of(x % n)
            })
            .collect()
    }

    /// The three indexes, as JMESPath expressions (the Go peer has the same
    /// as Go functions).
    #[must_use]
    pub fn indexes(&self) -> [(&'static str, &'static str); 3] {
        if self.dataset == "crd" {
            [
                ("app", "metadata.labels.app"),
                ("node", "spec.nodeName"),
                ("tag", "spec.tags"),
            ]
        } else {
            [
                ("app", "metadata.labels.app"),
                ("node", "data.nodeName"),
                ("key", "keys(data)"),
            ]
        }
    }

    /// A client for the kubeconfig.
    ///
    /// # Panics
    /// When the kubeconfig cannot be read or used.
    pub async fn client(&self) -> Client {
        let kc = Kubeconfig::read_from(&self.kubeconfig).expect("reading the kubeconfig");
        let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .expect("using the kubeconfig");
        Client::try_from(config).expect("building the client")
    }
}

fn parse_duration(s: &str) -> Duration {
    if let Some(ms) = s.strip_suffix("ms") {
        Duration::from_millis(ms.parse().expect("duration"))
    } else {
        Duration::from_secs_f64(s.trim_end_matches('s').parse().expect("duration"))
    }
}

/// Wall-clock now in unix nanoseconds (what the loader stamps).
#[must_use]
pub fn unix_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// What the handlers read of an object, in place: a decoded `DynamicObject`
/// (kube-runtime's peer) or a cache handle (kdi's, which decodes nothing to
/// be read so).
pub trait Readable {
    /// `metadata.name`.
    fn name_of(&self) -> Option<&str>;
    /// `metadata.namespace`.
    fn namespace_of(&self) -> Option<&str>;
    /// One annotation.
    fn annotation(&self, key: &str) -> Option<&str>;
}

impl Readable for DynamicObject {
    fn name_of(&self) -> Option<&str> {
        self.metadata.name.as_deref()
    }
    fn namespace_of(&self) -> Option<&str> {
        self.metadata.namespace.as_deref()
    }
    fn annotation(&self, key: &str) -> Option<&str> {
        self.metadata
            .annotations
            .as_ref()?
            .get(key)
            .map(String::as_str)
    }
}

impl Readable for kube_dynamic_informer::cache::CachedObject {
    fn name_of(&self) -> Option<&str> {
        self.name()
    }
    fn namespace_of(&self) -> Option<&str> {
        self.namespace()
    }
    fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations().get(key)
    }
}

/// The stamp of burst `id` on `obj`, if it carries one.
#[must_use]
pub fn stamp_of(obj: &impl Readable, id: &str) -> Option<i64> {
    let value = obj.annotation(STAMP_ANNOTATION)?;
    value.strip_prefix(id)?.strip_prefix(':')?.parse().ok()
}

/// The two handlers every peer runs, and the burst bookkeeping they share.
///
/// Handler 1 records the lag (handler time − write stamp) of each stamped
/// update; handler 2 keeps a per-namespace tally of objects, the kind of
/// bookkeeping a controller does, and notes when it saw each stamped update.
#[derive(Debug)]
pub struct Handlers {
    burst_id: String,
    want: u64,
    lags_ms: Mutex<Vec<f64>>,
    per_namespace: Mutex<BTreeMap<String, i64>>,
    seen1: AtomicU64,
    seen2: AtomicU64,
    first_stamp: AtomicI64,
    last_seen: AtomicI64,
    done: tokio::sync::Notify,
}

impl Handlers {
    /// Handlers for the burst `burst_id` of `want` updates.
    #[must_use]
    pub fn new(args: &Args) -> Arc<Self> {
        Arc::new(Self {
            burst_id: args.burst_id.clone(),
            want: args.burst_count,
            lags_ms: Mutex::new(Vec::with_capacity(
                usize::try_from(args.burst_count).unwrap_or(0),
            )),
            per_namespace: Mutex::new(BTreeMap::new()),
            seen1: AtomicU64::new(0),
            seen2: AtomicU64::new(0),
            first_stamp: AtomicI64::new(i64::MAX),
            last_seen: AtomicI64::new(0),
            done: tokio::sync::Notify::new(),
        })
    }

    fn stamp(&self, obj: &impl Readable) -> Option<i64> {
        if self.burst_id.is_empty() {
            return None;
        }
        stamp_of(obj, &self.burst_id)
    }

    fn check_done(&self) {
        if self.seen1.load(Ordering::SeqCst) >= self.want
            && self.seen2.load(Ordering::SeqCst) >= self.want
        {
            self.done.notify_one();
        }
    }

    /// Handler 1: an object was updated.
    pub fn lag_on_update(&self, new: &impl Readable) {
        if let Some(stamp) = self.stamp(new) {
            let now = unix_nanos();
            #[allow(clippy::cast_precision_loss)]
            self.lags_ms
                .lock()
                .expect("lags")
                .push((now - stamp) as f64 / 1e6);
            self.first_stamp.fetch_min(stamp, Ordering::SeqCst);
            self.last_seen.fetch_max(now, Ordering::SeqCst);
            self.seen1.fetch_add(1, Ordering::SeqCst);
            self.check_done();
        }
    }

    /// Handler 2: an object was added (`delta` 1), updated (0) or deleted (-1).
    pub fn tally(&self, obj: &impl Readable, delta: i64) {
        if delta != 0 {
            let ns = obj.namespace_of().unwrap_or_default().to_owned();
            *self
                .per_namespace
                .lock()
                .expect("tally")
                .entry(ns)
                .or_default() += delta;
        } else if self.stamp(obj).is_some() {
            self.last_seen.fetch_max(unix_nanos(), Ordering::SeqCst);
            self.seen2.fetch_add(1, Ordering::SeqCst);
            self.check_done();
        }
    }

    /// Waits until both handlers saw the whole burst.
    ///
    /// # Errors
    /// How many updates each handler saw, when the timeout ran out first.
    pub async fn wait_burst(&self, timeout: Duration) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.done.notified();
            if self.seen1.load(Ordering::SeqCst) >= self.want
                && self.seen2.load(Ordering::SeqCst) >= self.want
            {
                return Ok(());
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Err(format!(
                    "burst: saw {} and {} of {} updates before the deadline",
                    self.seen1.load(Ordering::SeqCst),
                    self.seen2.load(Ordering::SeqCst),
                    self.want
                ));
            }
        }
    }

    /// The burst's updates handler 1 received (each counted once; resyncs
    /// and other updates are not counted).
    #[must_use]
    pub fn updates_received(&self) -> u64 {
        self.seen1.load(Ordering::SeqCst)
    }

    /// Throughput and lag of the burst, as result fields.
    #[must_use]
    pub fn burst_result(&self) -> Map<String, Value> {
        let mut lags = self.lags_ms.lock().expect("lags").clone();
        lags.sort_by(f64::total_cmp);
        #[allow(clippy::cast_precision_loss)]
        let span = (self.last_seen.load(Ordering::SeqCst) - self.first_stamp.load(Ordering::SeqCst))
            as f64
            / 1e9;
        let mut m = Map::new();
        m.insert("burst_updates".into(), json!(self.want));
        #[allow(clippy::cast_precision_loss)]
        m.insert(
            "burst_updates_per_s".into(),
            json!(round(self.want as f64 / span, 1)),
        );
        m.insert(
            "lag_p50_ms".into(),
            json!(round(percentile(&lags, 50.0), 2)),
        );
        m.insert(
            "lag_p99_ms".into(),
            json!(round(percentile(&lags, 99.0), 2)),
        );
        m.insert(
            "lag_max_ms".into(),
            json!(round(lags.last().copied().unwrap_or(0.0), 2)),
        );
        m
    }
}

/// What the handler of a measured phase (the kdi peer's replay and resync)
/// counts: the objects it took, the bytes of their names it read (so that
/// each object handed over is really used), and when it took the first and
/// the `want`-th.
#[derive(Debug)]
pub struct ObjectCounter {
    want: u64,
    count: AtomicU64,
    name_bytes: AtomicU64,
    first: Mutex<Option<std::time::Instant>>,
    done: Mutex<Option<std::time::Instant>>,
}

impl ObjectCounter {
    /// A counter that is done at `want` objects.
    #[must_use]
    pub fn new(want: u64) -> Arc<Self> {
        Arc::new(Self {
            want,
            count: AtomicU64::new(0),
            name_bytes: AtomicU64::new(0),
            first: Mutex::new(None),
            done: Mutex::new(None),
        })
    }

    /// Counts `object`, reading its name.
    pub fn take(&self, object: &impl Readable) {
        let name = object.name_of().map_or(0, str::len);
        self.name_bytes
            .fetch_add(u64::try_from(name).unwrap_or(0), Ordering::Relaxed);
        let n = self.count.fetch_add(1, Ordering::SeqCst) + 1;
        if n == 1 {
            *self.first.lock().expect("first") = Some(std::time::Instant::now());
        }
        if n == self.want {
            *self.done.lock().expect("done") = Some(std::time::Instant::now());
        }
    }

    /// Objects counted so far.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::SeqCst)
    }

    /// Bytes of names read so far.
    #[must_use]
    pub fn name_bytes(&self) -> u64 {
        self.name_bytes.load(Ordering::Relaxed)
    }

    /// When the first object was counted.
    #[must_use]
    pub fn first_at(&self) -> Option<std::time::Instant> {
        *self.first.lock().expect("first")
    }

    /// When the `want`-th object was counted.
    #[must_use]
    pub fn done_at(&self) -> Option<std::time::Instant> {
        *self.done.lock().expect("done")
    }

    /// Waits (polling every 2 ms) until `want` objects were counted.
    ///
    /// # Errors
    /// How many were counted, when `timeout` ran out first.
    pub async fn wait(&self, timeout: Duration) -> Result<(), String> {
        let deadline = std::time::Instant::now() + timeout;
        while self.count() < self.want {
            if std::time::Instant::now() > deadline {
                return Err(format!(
                    "{} of {} objects within {timeout:?}",
                    self.count(),
                    self.want
                ));
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        Ok(())
    }
}

/// A line of `/proc/self/status` such as `VmHWM` or `VmRSS`, in MiB.
#[must_use]
pub fn proc_status_mb(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(-1.0, |kb| kb / 1024.0)
}

/// glibc's `struct mallinfo2` (glibc 2.33 and later).
#[repr(C)]
struct MallInfo2 {
    arena: usize,
    ordblks: usize,
    smblks: usize,
    hblks: usize,
    hblkhd: usize,
    usmblks: usize,
    fsmblks: usize,
    uordblks: usize,
    fordblks: usize,
    keepcost: usize,
}

unsafe extern "C" {
    fn mallinfo2() -> MallInfo2;
}

/// What glibc's malloc has handed out and not had back (`uordblks`, plus
/// `hblkhd` for chunks it mapped on their own), in MiB: unlike the RSS, it
/// goes down as soon as memory is freed, even when malloc keeps the pages.
/// `None` with another allocator (see [`allocator`]).
#[must_use]
pub fn heap_in_use_mb() -> Option<f64> {
    if cfg!(any(feature = "mimalloc", feature = "jemalloc")) {
        return None;
    }
    // SAFETY: mallinfo2 takes no argument, returns a plain struct by value
    // and takes malloc's own locks.
    let info = unsafe { mallinfo2() };
    #[allow(clippy::cast_precision_loss)]
    Some((info.uordblks + info.hblkhd) as f64 / (1024.0 * 1024.0))
}

/// What the API server has sent for LIST requests of `plural` since it
/// started, in MiB: the sum of its `apiserver_response_sizes` histogram
/// (response bodies as encoded, before compression). The difference
/// across one run is that run's list traffic when nothing else lists the
/// resource meanwhile (the script runs one peer at a time).
pub async fn served_list_mb(client: &kube_client::Client, plural: &str) -> f64 {
    let request = http::Request::get("/metrics")
        .body(Vec::new())
        .expect("a /metrics request");
    let Ok(text) = client.request_text(request).await else {
        return -1.0;
    };
    let resource = format!("resource=\"{plural}\"");
    let bytes: f64 = text
        .lines()
        .filter(|l| {
            l.starts_with("apiserver_response_sizes_sum{")
                && l.contains(&resource)
                && l.contains("verb=\"LIST\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    bytes / (1024.0 * 1024.0)
}

/// User + system CPU seconds of this process (`/proc/self/stat` ticks; Linux
/// reports them in USER_HZ = 100 per second).
#[must_use]
pub fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line; 12 and 13 here.
    let tick = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (tick(11) + tick(12)) / 100.0
}

/// Nearest-rank percentile of sorted values.
#[must_use]
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let rank = ((p / 100.0 * sorted.len() as f64 + 0.5) as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Rounds to `digits` decimals.
#[must_use]
pub fn round(v: f64, digits: i32) -> f64 {
    let p = 10f64.powi(digits);
    (v * p).round() / p
}

/// The by_index query values: `queries` random `node-N`, the same sequence in
/// every peer run (a fixed-seed xorshift; Go uses its own fixed seed).
#[must_use]
pub fn query_values(queries: usize) -> Vec<String> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..queries)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            format!("node-{}", x % u64::from(NODES))
        })
        .collect()
}

/// The label selector of the timed `Lister::list` read: both datasets label
/// object `i` with `release: canary` when `i % 7 == 6` and `tier` cycling
/// through frontend, backend, cache (`labelsOf` in bench/clientgo/dataset.go),
/// so it matches 2 objects in 21 (4,762 of 50,000).
pub const LABEL_SELECTOR: &str = "release=canary,tier in (frontend,backend)";

/// Times `f` on each value, one call at a time, and drops what it returned
/// after the timing; returns the sorted durations in microseconds and the
/// sum of `size` of the results (hits).
pub fn time_each<T, R>(
    values: &[T],
    mut f: impl FnMut(&T) -> R,
    size: impl Fn(&R) -> usize,
) -> (Vec<f64>, usize) {
    let mut durations = Vec::with_capacity(values.len());
    let mut hits = 0;
    for value in values {
        let t = std::time::Instant::now();
        let r = f(value);
        let d = t.elapsed();
        hits += size(&r);
        drop(r);
        durations.push(d.as_secs_f64() * 1e6);
    }
    durations.sort_by(f64::total_cmp);
    (durations, hits)
}

/// Resets `VmHWM` (the peak RSS) to the current RSS: writes `5` to
/// `/proc/self/clear_refs` (Linux 4.0 and later). False when that failed.
#[must_use]
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The end of every peer's run: waits for the update burst (when there is
/// one), then adds the burst figures, end and peak RSS and CPU to `result`
/// and prints it. Burst CPU counts from the call, after the by_index
/// queries.
pub async fn finish_run(result: &mut Value, handlers: &Handlers, args: &Args) {
    end_of_run(result, handlers, args).await;
    emit(result);
}

/// [`finish_run`] without the printing: the kdi peer measures more after it.
pub async fn end_of_run(result: &mut Value, handlers: &Handlers, args: &Args) {
    let cpu_before_burst = cpu_seconds();
    let fields = result.as_object_mut().expect("object");
    if !args.burst_id.is_empty() && args.burst_count > 0 {
        handlers.wait_burst(args.timeout).await.expect("burst");
        fields.extend(handlers.burst_result());
        tokio::time::sleep(args.settle).await;
    }
    fields.insert(
        "rss_end_mb".into(),
        json!(round(proc_status_mb("VmRSS"), 1)),
    );
    fields.insert(
        "rss_peak_mb".into(),
        json!(round(proc_status_mb("VmHWM"), 1)),
    );
    fields.insert("cpu_total_s".into(), json!(round(cpu_seconds(), 3)));
    fields.insert(
        "cpu_burst_s".into(),
        json!(round(cpu_seconds() - cpu_before_burst, 3)),
    );
    fields.insert("allocator".into(), json!(allocator()));
}

/// Prints one JSON line on stdout.
pub fn emit(value: &Value) {
    println!("{value}");
}
