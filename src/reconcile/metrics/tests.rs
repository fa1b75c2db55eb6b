//! The queue's series, read from a recorder of the test's own.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
    SharedString, Unit,
};
use parking_lot::Mutex;
use tokio::time::advance;

use crate::reconcile::{ItemExponentialBackoff, WorkQueue};

/// One series: a counter's or gauge's value, a histogram's samples.
#[derive(Default)]
struct Series {
    value: Mutex<f64>,
    samples: Mutex<Vec<f64>>,
}

impl CounterFn for Series {
    #[allow(clippy::cast_precision_loss)]
    fn increment(&self, by: u64) {
        *self.value.lock() += by as f64;
    }
    #[allow(clippy::cast_precision_loss)]
    fn absolute(&self, value: u64) {
        *self.value.lock() = value as f64;
    }
}

impl GaugeFn for Series {
    fn increment(&self, by: f64) {
        *self.value.lock() += by;
    }
    fn decrement(&self, by: f64) {
        *self.value.lock() -= by;
    }
    fn set(&self, value: f64) {
        *self.value.lock() = value;
    }
}

impl HistogramFn for Series {
    fn record(&self, value: f64) {
        self.samples.lock().push(value);
    }
}

/// Every series registered, by `name{label=value,...}`.
#[derive(Default)]
struct Recorded(Mutex<BTreeMap<String, Arc<Series>>>);

impl Recorded {
    fn series(&self, key: &Key) -> Arc<Series> {
        let labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        let id = format!("{}{{{}}}", key.name(), labels.join(","));
        self.0.lock().entry(id).or_default().clone()
    }

    /// The value of `name` of the queue `queue`.
    fn value(&self, name: &str, queue: &str) -> f64 {
        *self.get(name, queue).value.lock()
    }

    /// The samples of histogram `name` of the queue `queue`.
    fn samples(&self, name: &str, queue: &str) -> Vec<f64> {
        self.get(name, queue).samples.lock().clone()
    }

    fn get(&self, name: &str, queue: &str) -> Arc<Series> {
        let id = format!("{name}{{name={queue}}}");
        let series = self.0.lock().get(&id).cloned();
        series.unwrap_or_else(|| panic!("no series {id} in {:?}", self.0.lock().keys()))
    }
}

impl Recorder for Recorded {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.series(key))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(self.series(key))
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(self.series(key))
    }
}

fn secs(ms: u64) -> f64 {
    Duration::from_millis(ms).as_secs_f64()
}

#[tokio::test(start_paused = true)]
async fn a_queue_records_client_gos_workqueue_series_under_its_name() {
    let recorder = Recorded::default();
    let (queue, other) = metrics::with_local_recorder(&recorder, || {
        let backoff = ItemExponentialBackoff::new(Duration::from_millis(5), Duration::from_secs(1));
        (
            WorkQueue::with_rate_limiter("widgets", backoff),
            WorkQueue::<u8>::new("gadgets"),
        )
    });
    let value = |name| recorder.value(name, "widgets");
    queue.add(1);
    queue.add(2);
    queue.add(1); // waiting: not an add
    assert_eq!(value("workqueue_adds_total"), 2.0);
    assert_eq!(value("workqueue_depth"), 2.0);

    advance(Duration::from_millis(30)).await;
    assert_eq!(queue.get().await, Some(1));
    assert_eq!(value("workqueue_depth"), 1.0);
    advance(Duration::from_millis(10)).await;
    queue.update_unfinished_work();
    assert_eq!(value("workqueue_unfinished_work_seconds"), secs(10));
    assert_eq!(
        value("workqueue_longest_running_processor_seconds"),
        secs(10)
    );
    assert_eq!(queue.get().await, Some(2));
    let waited = recorder.samples("workqueue_queue_duration_seconds", "widgets");
    assert_eq!(waited, [secs(30), secs(40)]);

    queue.add(1); // in flight: an add, not in the depth
    assert_eq!(value("workqueue_adds_total"), 3.0);
    assert_eq!(value("workqueue_depth"), 0.0);
    advance(Duration::from_millis(5)).await;
    queue.update_unfinished_work();
    assert_eq!(value("workqueue_unfinished_work_seconds"), secs(15 + 5));
    assert_eq!(
        value("workqueue_longest_running_processor_seconds"),
        secs(15)
    );
    queue.done(&1);
    let worked = recorder.samples("workqueue_work_duration_seconds", "widgets");
    assert_eq!(worked, [secs(15)]);
    assert_eq!(value("workqueue_depth"), 1.0, "1 came back");
    assert_eq!(value("workqueue_unfinished_work_seconds"), secs(5));
    assert_eq!(
        value("workqueue_longest_running_processor_seconds"),
        secs(5)
    );

    queue.add_rate_limited(3);
    queue.add_rate_limited(3);
    assert_eq!(value("workqueue_retries_total"), 2.0);
    assert_eq!(value("workqueue_adds_total"), 3.0, "delayed: not added yet");
    advance(Duration::from_millis(5)).await;
    assert_eq!(queue.len(), 2);
    assert_eq!(value("workqueue_adds_total"), 4.0, "due: added once");
    assert_eq!(value("workqueue_depth"), 2.0);

    other.add(9);
    assert_eq!(recorder.value("workqueue_adds_total", "gadgets"), 1.0);
    assert_eq!(value("workqueue_adds_total"), 4.0);
    for id in recorder.0.lock().keys() {
        assert!(
            id.starts_with("workqueue_")
                && (id.ends_with("{name=widgets}") || id.ends_with("{name=gadgets}")),
            "{id}"
        );
    }
}
