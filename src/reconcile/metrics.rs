//! Metrics of work queues, under client-go's names, recorded through the
//! [`metrics`](::metrics) facade.
//!
//! The series and what they count are listed in
//! [the layer's docs](crate::reconcile#metrics).

use std::time::Duration;

use metrics::{
    Counter, Gauge, Histogram, Unit, counter, describe_counter, describe_gauge, describe_histogram,
    gauge, histogram,
};

use crate::informer::telemetry::describe_each;

/// The series of one queue, registered once.
pub(super) struct QueueMetrics {
    depth: Gauge,
    adds: Counter,
    retries: Counter,
    queue_duration: Histogram,
    work_duration: Histogram,
    unfinished: Gauge,
    longest: Gauge,
}

/// Registers the help text and unit of every series with the recorder
/// installed at the time.
fn describe() {
    describe_each! {
        describe_gauge "workqueue_depth": "Current depth of workqueue.";
        describe_counter "workqueue_adds_total": "Total number of adds handled by workqueue.";
        describe_counter "workqueue_retries_total":
            "Total number of retries handled by workqueue.";
        describe_histogram "workqueue_queue_duration_seconds" [Seconds]:
            "How long in seconds an item stays in workqueue before being requested.";
        describe_histogram "workqueue_work_duration_seconds" [Seconds]:
            "How long in seconds processing an item from workqueue takes.";
        describe_gauge "workqueue_unfinished_work_seconds" [Seconds]:
            "How many seconds of work has been done that is in progress and hasn't been observed by \
             work_duration.";
        describe_gauge "workqueue_longest_running_processor_seconds" [Seconds]:
            "How many seconds has the longest running processor for workqueue been running.";
    }
}

impl QueueMetrics {
    /// The series of the queue named `name`.
    pub(super) fn new(name: &str) -> Self {
        describe();
        let labels = [("name", name.to_owned())];
        QueueMetrics {
            depth: gauge!("workqueue_depth", &labels),
            adds: counter!("workqueue_adds_total", &labels),
            retries: counter!("workqueue_retries_total", &labels),
            queue_duration: histogram!("workqueue_queue_duration_seconds", &labels),
            work_duration: histogram!("workqueue_work_duration_seconds", &labels),
            unfinished: gauge!("workqueue_unfinished_work_seconds", &labels),
            longest: gauge!("workqueue_longest_running_processor_seconds", &labels),
        }
    }

    /// `added` keys were added, and `depth` wait.
    pub(super) fn updated(&self, added: u64, depth: usize) {
        if added > 0 {
            self.adds.increment(added);
        }
        // Gauges are f64: exact far beyond any queue's length.
        #[allow(clippy::cast_precision_loss)]
        self.depth.set(depth as f64);
    }

    /// A rate-limited add.
    pub(super) fn retried(&self) {
        self.retries.increment(1);
    }

    /// A key was handed out after waiting `waited`.
    pub(super) fn handed_out(&self, waited: Duration) {
        self.queue_duration.record(waited.as_secs_f64());
    }

    /// A key was done after `worked`.
    pub(super) fn done(&self, worked: Duration) {
        self.work_duration.record(worked.as_secs_f64());
    }

    /// The keys in flight have been processed `unfinished` in all, the
    /// longest of them `longest`.
    pub(super) fn in_flight(&self, unfinished: Duration, longest: Duration) {
        self.unfinished.set(unfinished.as_secs_f64());
        self.longest.set(longest.as_secs_f64());
    }
}

#[cfg(test)]
mod tests;
