//! Metrics of informers and their handlers, recorded through the
//! [`metrics`] facade.
//!
//! The library records; the application chooses where the figures go by
//! installing a recorder (an exporter) of the `metrics` ecosystem —
//! `metrics-exporter-prometheus` for a Prometheus scrape endpoint (what
//! `kdi watch --metrics-addr` uses), `metrics-exporter-opentelemetry`,
//! statsd, or none at all, in which case recording costs a branch. The
//! `metrics` crate was chosen for that split: a small, stable facade (like
//! `log`/`tracing` for logs) that libraries record into without choosing an
//! exporter, widely used, and cheap on hot paths (a handle per series is
//! resolved once; recording is an atomic operation).
//!
//! **Install the recorder before creating informers**: each informer and
//! handler registers its series once, when it is created.
//!
//! # Series
//!
//! Every informer series carries `resource` (e.g.
//! `widgets.v1.example.com`, `pods.v1`) and `namespace` (the namespaces it
//! watches, comma-separated, or empty for all). Handler series add `handler`
//! ([`HandlerOptions::name`](crate::informer::HandlerOptions::name), by
//! default `handler-<id>`). Informers of a
//! [`ClusterSet`](crate::declarative::cluster_set::ClusterSet) also carry `cluster` (its
//! name in the set), so that the same resource in several clusters makes
//! several series; other informers carry no `cluster` label.
//!
//! | name | type | labels | what | client-go / controller-runtime |
//! |---|---|---|---|---|
//! | `kdi_informer_objects` | gauge | | objects in the cache | — |
//! | `kdi_informer_lists_total` | counter | `reason`: `first`, `expired` (410), `error` (retry after a failed list), `served_again` | complete lists received | `reflector` list counts (removed from client-go in 1.17) |
//! | `kdi_informer_list_requests_total` | counter | | list requests (pages count one each) | — |
//! | `kdi_informer_list_bytes_total` | counter | | bytes of list responses (paged lists; a streaming list's events are not counted) | — |
//! | `kdi_informer_list_duration_seconds` | histogram | | time to receive a complete list | — |
//! | `kdi_informer_sync_duration_seconds` | gauge | | time from start to the first complete list | — |
//! | `kdi_informer_watch_starts_total` | counter | | watch requests | — |
//! | `kdi_informer_events_received_total` | counter | `type`: `added`, `modified`, `deleted`, `bookmark`, `skipped` | watch events received | — |
//! | `kdi_informer_skipped_objects_total` | counter | | objects that could not be decoded | — |
//! | `kdi_informer_errors_total` | counter | | failed lists and watches (each led to a backoff) | — |
//! | `kdi_informer_index_failures_total` | counter | `index` | objects an index function failed on | — |
//! | `kdi_informer_last_event_timestamp_seconds` | gauge | | Unix time of the last event, bookmark or list (time since: `time() - kdi_informer_last_event_timestamp_seconds` in PromQL) | — |
//! | `kdi_informer_stale` | gauge | | 1 while the informer is [stale](crate::informer::status::InformerStatus::Stale) | — |
//! | `kdi_informer_resource_version` | gauge | | the resourceVersion the cache is synced to, when it is a number | client-go (1.36+, named informers only) `informer_store_resource_version` (its 15 last digits) |
//! | `kdi_informer_snapshot_starts_total` | counter | `outcome`: `resumed`, or why it listed: `missing`, `mismatched`, `corrupt`, `tooOld` (410), `unidentified`, `sensitive`, `shardGroup` | starts of an informer with [snapshots](crate::informer::SnapshotOptions) | — |
//! | `kdi_informer_snapshots_written_total` | counter | `result`: `ok`, `error` | snapshots written | — |
//! | `kdi_handler_events_delivered_total` | counter | `type`: `Add`, `Update`, `Resync`, `Delete` | events handed to the handler | controller-runtime `workqueue_adds_total` (roughly) |
//! | `kdi_handler_backlog` | gauge | | events queued for the handler | client-go `informer_queued_items` (one FIFO per informer, not per handler); controller-runtime `workqueue_depth` |
//! | `kdi_handler_processing_seconds` | histogram | | time in the handler per event | client-go `informer_processing_latency_seconds`; controller-runtime `workqueue_work_duration_seconds` |
//! | `kdi_handler_panics_total` | counter | | panics caught in the handler | controller-runtime `controller_runtime_reconcile_panics_total` |
//! | `kdi_handler_events_filtered_total` | counter | `reason`: `condition` (the object does not meet the handler's [filter](crate::informer::HandlerOptions::filter)), `unchanged` (an update its [change predicate](crate::informer::HandlerOptions::changes) lets by) | events held back before the handler's queue; series only for handlers with a filter or a change predicate | — |
//! | `kdi_handler_pool_threads` | gauge | (none) | worker threads of the [handler pool](crate::informer::HandlerPoolSettings) | — |
//! | `kdi_handler_pool_blocked` | gauge | (none) | workers in one handler call longer than the stall threshold | — |
//! | `kdi_handler_pool_waiting` | gauge | (none) | handler queues waiting for a worker | controller-runtime `workqueue_depth` (roughly) |
//!
//! A [resource set](crate::declarative) records the result of its last
//! config load or reload (no labels; as kube-state-metrics does for its own
//! config):
//!
//! | name | type | what |
//! |---|---|---|
//! | `kdi_config_last_reload_successful` | gauge | 1 when the last load or reload was applied, 0 when it was refused |
//! | `kdi_config_last_reload_timestamp_seconds` | gauge | Unix time of the last load or reload, applied or not |
//! | `kdi_config_last_reload_success_timestamp_seconds` | gauge | Unix time of the last one applied |
//! | `kdi_config_last_reload_errors` | gauge | problems found in the last one (0 when applied) |
//! | `kdi_config_hash` | gauge | the low 52 bits of the FNV-1a hash of the config last tried, to tell versions apart |
//!
//! Two informers of the same resource and namespaces (say, with different
//! label selectors) share their series.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use metrics::{
    Counter, Gauge, Histogram, Label, SharedString, Unit, counter, describe_counter,
    describe_gauge, describe_histogram, gauge, histogram,
};

use crate::vocabulary::resource::ResourceKey;

tokio::task_local! {
    /// The cluster whose informers are being created, for their `cluster`
    /// label.
    static CLUSTER: std::sync::Arc<str>;
}

/// Runs `create` so that the informers it creates label their series with
/// `cluster`.
#[cfg(feature = "config")]
pub(crate) async fn in_cluster<F: std::future::Future>(
    cluster: std::sync::Arc<str>,
    create: F,
) -> F::Output {
    CLUSTER.scope(cluster, create).await
}

/// Why a complete list was made, for `kdi_informer_lists_total` (in the
/// order of [`InformerMetrics`]'s counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListReason {
    First,
    Expired,
    Error,
    ServedAgain,
}

/// The series of one informer, registered once.
#[derive(Clone)]
pub(crate) struct InformerMetrics {
    /// `resource`, `namespace`, and `cluster` when created for a cluster
    /// set.
    labels: Vec<Label>,
    pub(crate) objects: Gauge,
    lists: [Counter; 4],
    pub(crate) list_requests: Counter,
    pub(crate) list_bytes: Counter,
    pub(crate) list_duration: Histogram,
    pub(crate) sync_duration: Gauge,
    pub(crate) watch_starts: Counter,
    received: [Counter; 5],
    pub(crate) skipped: Counter,
    pub(crate) errors: Counter,
    last_event: Gauge,
    pub(crate) stale: Gauge,
    resource_version: Gauge,
}

/// A watch event type, for `kdi_informer_events_received_total`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Received {
    Added,
    Modified,
    Deleted,
    Bookmark,
    Skipped,
}

/// Describes each series, written `describe_kind "name" [Unit]: "help";`
/// (the unit optional), with the `metrics` macro of its kind.
macro_rules! describe_each {
    ($($describe:ident $name:literal $([$unit:ident])?: $help:literal;)*) => {
        $($describe!($name, $(Unit::$unit,)? $help);)*
    };
}
pub(crate) use describe_each;

/// Registers the help text and unit of every series with the recorder
/// installed at the time (exporters print them, e.g. as `# HELP`).
fn describe() {
    describe_each! {
        describe_gauge "kdi_informer_objects": "Objects in the cache.";
        describe_counter "kdi_informer_lists_total":
            "Complete lists received, by reason: first, expired (410), error, served_again.";
        describe_counter "kdi_informer_list_requests_total":
            "List requests (pages count one each).";
        describe_counter "kdi_informer_list_bytes_total" [Bytes]: "Bytes of list responses.";
        describe_histogram "kdi_informer_list_duration_seconds" [Seconds]:
            "Time to receive a complete list.";
        describe_gauge "kdi_informer_sync_duration_seconds" [Seconds]:
            "Time from start to the first complete list.";
        describe_counter "kdi_informer_watch_starts_total": "Watch requests.";
        describe_counter "kdi_informer_events_received_total": "Watch events received, by type.";
        describe_counter "kdi_informer_skipped_objects_total": "Objects that could not be decoded.";
        describe_counter "kdi_informer_errors_total": "Failed lists and watches.";
        describe_counter "kdi_informer_index_failures_total":
            "Objects an index function failed on, by index.";
        describe_gauge "kdi_informer_last_event_timestamp_seconds" [Seconds]:
            "Unix time of the last event, bookmark or list.";
        describe_counter "kdi_informer_snapshot_starts_total":
            "Starts of an informer with snapshots: resumed, or why it listed.";
        describe_counter "kdi_informer_snapshots_written_total": "Snapshots written, by result.";
        describe_gauge "kdi_informer_stale":
            "1 while nothing has arrived for longer than staleAfter.";
        describe_gauge "kdi_informer_resource_version":
            "The resourceVersion the cache reflects, when it is a number.";
        describe_counter "kdi_handler_events_delivered_total":
            "Events handed to the handler, by type.";
        describe_gauge "kdi_handler_backlog": "Events queued for the handler.";
        describe_histogram "kdi_handler_processing_seconds" [Seconds]:
            "Time in the handler per event.";
        describe_counter "kdi_handler_panics_total": "Panics caught in the handler.";
        describe_counter "kdi_handler_events_filtered_total":
            "Events held back by the handler's filter or change predicate, by reason.";
        describe_gauge "kdi_handler_pool_threads": "Worker threads of the handler pool.";
        describe_gauge "kdi_handler_pool_blocked":
            "Workers in one handler call longer than the stall threshold.";
        describe_gauge "kdi_handler_pool_waiting": "Handler queues waiting for a worker.";
    }
}

/// Records the result of a config load or reload: whether it was applied,
/// when, the config's hash (hex), and how many problems it had.
#[cfg(feature = "config")]
pub(crate) fn config_reloaded(success: bool, at_unix_seconds: f64, hash_hex: &str, errors: usize) {
    describe_each! {
        describe_gauge "kdi_config_last_reload_successful":
            "1 when the last config load or reload was applied, 0 when it was refused.";
        describe_gauge "kdi_config_last_reload_timestamp_seconds" [Seconds]:
            "Unix time of the last config load or reload.";
        describe_gauge "kdi_config_last_reload_success_timestamp_seconds" [Seconds]:
            "Unix time of the last config load or reload applied.";
        describe_gauge "kdi_config_last_reload_errors":
            "Problems found in the last config load or reload.";
        describe_gauge "kdi_config_hash": "Low 52 bits of the hash of the config last tried.";
    }
    gauge!("kdi_config_last_reload_successful").set(if success { 1.0 } else { 0.0 });
    gauge!("kdi_config_last_reload_timestamp_seconds").set(at_unix_seconds);
    if success {
        gauge!("kdi_config_last_reload_success_timestamp_seconds").set(at_unix_seconds);
    }
    #[allow(clippy::cast_precision_loss)]
    gauge!("kdi_config_last_reload_errors").set(errors as f64);
    if let Ok(hash) = u64::from_str_radix(hash_hex, 16) {
        // f64 holds 52 bits exactly.
        #[allow(clippy::cast_precision_loss)]
        gauge!("kdi_config_hash").set((hash & ((1 << 52) - 1)) as f64);
    }
}

impl InformerMetrics {
    pub(crate) fn new(resource: &ResourceKey, namespaces: &str) -> Self {
        describe();
        let mut labels = vec![
            Label::new("resource", resource.to_string()),
            Label::new("namespace", namespaces.to_owned()),
        ];
        if let Ok(cluster) = CLUSTER.try_with(|c| c.to_string()) {
            labels.push(Label::new("cluster", cluster));
        }
        let with = |key, value| with_label(&labels, key, value);
        let list =
            |reason: &'static str| counter!("kdi_informer_lists_total", with("reason", reason));
        let received =
            |kind: &'static str| counter!("kdi_informer_events_received_total", with("type", kind));
        Self {
            objects: gauge!("kdi_informer_objects", labels.clone()),
            lists: ["first", "expired", "error", "served_again"].map(list),
            list_requests: counter!("kdi_informer_list_requests_total", labels.clone()),
            list_bytes: counter!("kdi_informer_list_bytes_total", labels.clone()),
            list_duration: histogram!("kdi_informer_list_duration_seconds", labels.clone()),
            sync_duration: gauge!("kdi_informer_sync_duration_seconds", labels.clone()),
            watch_starts: counter!("kdi_informer_watch_starts_total", labels.clone()),
            received: ["added", "modified", "deleted", "bookmark", "skipped"].map(received),
            skipped: counter!("kdi_informer_skipped_objects_total", labels.clone()),
            errors: counter!("kdi_informer_errors_total", labels.clone()),
            last_event: gauge!("kdi_informer_last_event_timestamp_seconds", labels.clone()),
            stale: gauge!("kdi_informer_stale", labels.clone()),
            resource_version: gauge!("kdi_informer_resource_version", labels.clone()),
            labels,
        }
    }

    /// An informer with snapshots started: `resumed`, or why it listed.
    pub(crate) fn snapshot_start(&self, outcome: &'static str) {
        let labels = with_label(&self.labels, "outcome", outcome);
        counter!("kdi_informer_snapshot_starts_total", labels).increment(1);
    }

    /// A snapshot was written, or failed to be.
    pub(crate) fn snapshot_written(&self, ok: bool) {
        let labels = with_label(&self.labels, "result", if ok { "ok" } else { "error" });
        counter!("kdi_informer_snapshots_written_total", labels).increment(1);
    }

    pub(crate) fn listed(&self, reason: ListReason, took: Duration) {
        self.lists[reason as usize].increment(1);
        self.list_duration.record(took.as_secs_f64());
        self.touched();
    }

    pub(crate) fn received(&self, kind: Received) {
        self.received[kind as usize].increment(1);
        self.touched();
    }

    /// Something arrived from the server now.
    fn touched(&self) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        self.last_event.set(now);
    }

    /// The resourceVersion the cache is synced to, when it is a number.
    pub(crate) fn synced_to(&self, resource_version: &str) {
        if let Ok(rv) = resource_version.parse::<u64>() {
            // Gauges are f64: exact up to 2^53, beyond any etcd revision.
            #[allow(clippy::cast_precision_loss)]
            self.resource_version.set(rv as f64);
        }
    }

    /// The counter of index `index`'s failures.
    pub(crate) fn index_failures(&self, index: &str) -> Counter {
        let labels = with_label(&self.labels, "index", index.to_owned());
        counter!("kdi_informer_index_failures_total", labels)
    }

    /// The series of a handler of this informer; the filtered events' only
    /// for one that `filters` (has a filter or a change predicate).
    pub(crate) fn handler(&self, name: &str, filters: bool) -> HandlerMetrics {
        let labels = with_label(&self.labels, "handler", name.to_owned());
        let delivered = |kind: &'static str| {
            counter!(
                "kdi_handler_events_delivered_total",
                with_label(&labels, "type", kind)
            )
        };
        let filtered = |reason: &'static str| {
            if filters {
                counter!(
                    "kdi_handler_events_filtered_total",
                    with_label(&labels, "reason", reason)
                )
            } else {
                Counter::noop()
            }
        };
        HandlerMetrics {
            delivered: ["Add", "Update", "Resync", "Delete"].map(delivered),
            filtered: ["condition", "unchanged"].map(filtered),
            backlog: gauge!("kdi_handler_backlog", labels.clone()),
            processing: histogram!("kdi_handler_processing_seconds", labels.clone()),
            panics: counter!("kdi_handler_panics_total", labels.clone()),
        }
    }
}

/// `labels` and one more.
fn with_label(labels: &[Label], key: &'static str, value: impl Into<SharedString>) -> Vec<Label> {
    let mut labels = labels.to_vec();
    labels.push(Label::new(key, value));
    labels
}

/// The series of one handler registration.
#[derive(Clone)]
pub(crate) struct HandlerMetrics {
    delivered: [Counter; 4],
    /// By [`Dropped`](super::filter::Dropped) (its order).
    filtered: [Counter; 2],
    backlog: Gauge,
    processing: Histogram,
    pub(crate) panics: Counter,
}

impl HandlerMetrics {
    /// One event of kind `kind` (from [`Event::kind`](crate::informer::Event::kind))
    /// was handled in `took`.
    pub(crate) fn delivered(&self, kind: &str, took: Duration) {
        let i = match kind {
            "Add" => 0,
            "Update" => 1,
            "Resync" => 2,
            _ => 3,
        };
        self.delivered[i].increment(1);
        self.processing.record(took.as_secs_f64());
    }

    /// `count` events held back for `why`.
    pub(super) fn filtered(&self, why: super::filter::Dropped, count: u64) {
        self.filtered[why as usize].increment(count);
    }

    /// Sets the backlog gauge.
    pub(crate) fn backlog(&self, backlog: usize) {
        #[allow(clippy::cast_precision_loss)]
        self.backlog.set(backlog as f64);
    }
}

impl Default for HandlerMetrics {
    /// Series that record nothing.
    fn default() -> Self {
        Self {
            delivered: std::array::from_fn(|_| Counter::noop()),
            filtered: std::array::from_fn(|_| Counter::noop()),
            backlog: Gauge::noop(),
            processing: Histogram::noop(),
            panics: Counter::noop(),
        }
    }
}

impl std::fmt::Debug for HandlerMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HandlerMetrics")
    }
}
