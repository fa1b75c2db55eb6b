//! A controller's workers: take a key, read its object from the cache,
//! call the reconcile function (panics caught), settle the key as the
//! answer says.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use futures::FutureExt;
use metrics::{
    Counter, Gauge, Histogram, Unit, counter, describe_counter, describe_gauge, describe_histogram,
    gauge, histogram,
};

use crate::informer::telemetry::describe_each;
use crate::vocabulary::error_chain;

use super::super::key::ObjectRef;
use super::super::queue::WorkQueue;
use super::Action;
use super::context::Context;
use super::sources::Shared;

/// How one reconcile of a key ended.
#[derive(Debug)]
pub(super) enum Outcome {
    /// The function answered.
    Answered(Action),
    /// It returned an error, said as its cause chain.
    Failed(String),
    /// It panicked, with this message.
    Panicked(String),
}

/// Settles `key` in `queue` after a reconcile that ended with `outcome`:
/// a success forgets its failures (and, for `RequeueAfter`, queues it
/// again after the delay); a failure queues it after its rate limiter's
/// delay.
pub(super) fn settle(queue: &WorkQueue<ObjectRef>, key: ObjectRef, outcome: &Outcome) {
    match outcome {
        Outcome::Answered(action) => {
            queue.forget(&key);
            queue.done(&key);
            if let Action::RequeueAfter(delay) = action {
                queue.add_after(key, *delay);
            }
        }
        Outcome::Failed(_) | Outcome::Panicked(_) => {
            queue.done(&key);
            queue.add_rate_limited(key);
        }
    }
}

/// One worker: reconciles keys until the queue is shut down.
pub(super) async fn work<F, Fut, E>(shared: Arc<Shared>, reconcile: Arc<F>)
where
    F: Fn(Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    let metrics = ReconcileMetrics::new(&shared.name);
    while let Some(key) = shared.queue.get().await {
        let Some(context) = context(&shared, &key) else {
            tracing::debug!(controller = %shared.name, key = %key, "no informer of the key's resource (any more): dropped");
            shared.queue.forget(&key);
            shared.queue.done(&key);
            continue;
        };
        shared.busy.fetch_add(1, Ordering::SeqCst);
        metrics.active.increment(1.0);
        let started = Instant::now();
        let call = AssertUnwindSafe(async { (*reconcile)(context).await }).catch_unwind();
        let outcome = match call.await {
            Ok(Ok(action)) => Outcome::Answered(action),
            Ok(Err(error)) => Outcome::Failed(error_chain(&error)),
            Err(panic) => Outcome::Panicked(panic_message(panic.as_ref())),
        };
        metrics.duration.record(started.elapsed().as_secs_f64());
        metrics.active.decrement(1.0);
        shared.busy.fetch_sub(1, Ordering::SeqCst);
        metrics.count(&outcome);
        report(&shared, &key, &outcome);
        settle(&shared.queue, key, &outcome);
    }
}

/// The context of `key`: its informer and cached object (`None` when no
/// informer of its resource is registered).
fn context(shared: &Arc<Shared>, key: &ObjectRef) -> Option<Context> {
    let (handle, object) = shared.registry.read().find(&key.resource, &key.key())?;
    Some(Context {
        retries: shared.queue.num_requeues(key),
        key: key.clone(),
        object,
        handle,
        shared: shared.clone(),
    })
}

/// Logs a failure: an error as a warning, a panic as an error.
fn report(shared: &Shared, key: &ObjectRef, outcome: &Outcome) {
    let retries = shared.queue.num_requeues(key);
    match outcome {
        Outcome::Answered(_) => {}
        Outcome::Failed(error) => {
            tracing::warn!(controller = %shared.name, key = %key, retries, error = %error, "reconcile failed; retried with backoff");
        }
        Outcome::Panicked(message) => {
            tracing::error!(controller = %shared.name, key = %key, retries, panic = %message, "reconcile panicked; retried with backoff");
        }
    }
}

/// The text of a panic's payload.
pub(super) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "<non-string panic>".into())
}

/// The series of one controller's workers, registered once per worker.
struct ReconcileMetrics {
    success: Counter,
    requeue_after: Counter,
    error: Counter,
    panic: Counter,
    errors: Counter,
    panics: Counter,
    duration: Histogram,
    active: Gauge,
}

impl ReconcileMetrics {
    fn new(controller: &str) -> Self {
        describe();
        let controller = controller.to_owned();
        let total = |result: &'static str| counter!("kdi_reconcile_total", "controller" => controller.clone(), "result" => result);
        ReconcileMetrics {
            success: total("success"),
            requeue_after: total("requeue_after"),
            error: total("error"),
            panic: total("panic"),
            errors: counter!("kdi_reconcile_errors_total", "controller" => controller.clone()),
            panics: counter!("kdi_reconcile_panics_total", "controller" => controller.clone()),
            duration: histogram!("kdi_reconcile_duration_seconds", "controller" => controller.clone()),
            active: gauge!("kdi_reconcile_active_workers", "controller" => controller),
        }
    }

    fn count(&self, outcome: &Outcome) {
        match outcome {
            Outcome::Answered(Action::Done) => self.success.increment(1),
            Outcome::Answered(Action::RequeueAfter(_)) => self.requeue_after.increment(1),
            Outcome::Failed(_) => {
                self.error.increment(1);
                self.errors.increment(1);
            }
            Outcome::Panicked(_) => {
                self.panic.increment(1);
                self.panics.increment(1);
            }
        }
    }
}

/// Registers the help text and unit of each series with the recorder
/// installed at the time.
fn describe() {
    describe_each! {
        describe_counter "kdi_reconcile_total":
            "Reconciles, by result: success, requeue_after, error, panic.";
        describe_counter "kdi_reconcile_errors_total": "Reconciles that returned an error.";
        describe_counter "kdi_reconcile_panics_total": "Panics caught in the reconcile function.";
        describe_histogram "kdi_reconcile_duration_seconds" [Seconds]:
            "Time in the reconcile function.";
        describe_gauge "kdi_reconcile_active_workers": "Workers reconciling a key now.";
    }
}
