//! The reconcile layer: turning events into work, as client-go's
//! `workqueue` and controller-runtime's reconcilers do, on the caches of
//! this library.
//!
//! Events say that an object changed; a program mostly wants to bring
//! something in line with the object as it is *now*, once per change
//! however many events arrived, never for the same object in two places
//! at once, and again later when it failed. That is a queue of keys, not
//! of events: a [`WorkQueue`] of [`ObjectRef`]s (a resource and the
//! object's namespace and name). The object itself stays in the cache,
//! read through the resource's [`Lister`](crate::cache::Lister) when its
//! key is handed out: nothing is copied, and what is read is never older
//! than the key.
//!
//! # The work queue
//!
//! [`WorkQueue`] keeps client-go's guarantees:
//!
//! - a key waiting is queued once, however often it is added (events
//!   coalesce);
//! - a key handed out by [`get`](WorkQueue::get) is handed out to no one
//!   else until [`done`](WorkQueue::done); added meanwhile, it comes back
//!   once then;
//! - [`add_after`](WorkQueue::add_after) delays a key (the earlier of two
//!   deadlines wins), [`add_rate_limited`](WorkQueue::add_rate_limited)
//!   delays it by its [`RateLimiter`]'s answer for one more failure, and
//!   [`forget`](WorkQueue::forget) starts its backoff over;
//! - [`shut_down`](WorkQueue::shut_down) stops at once (keys waiting are
//!   dropped), [`shut_down_with_drain`](WorkQueue::shut_down_with_drain)
//!   hands out what waits and ends when all of it is done.
//!
//! Retries are rate limited as client-go's controllers retry by default
//! ([`default_controller`]): the longest of a per-key exponential backoff
//! ([`ItemExponentialBackoff`], 5 ms doubling to 1000 s) and an overall
//! token bucket ([`TokenBucket`], 10 a second, bursts of 100), combined by
//! [`MaxOf`]; any [`RateLimiter`] can take their place.
//!
//! ```no_run
//! # async fn demo(pods: kube_dynamic_informer::InformerHandle) {
//! use kube_dynamic_informer::informer::Event;
//! use kube_dynamic_informer::reconcile::{ObjectRef, WorkQueue};
//!
//! let queue = WorkQueue::new("pods");
//! let (resource, events) = (pods.resource(), queue.clone());
//! pods.informer().add_handler(move |e: Event| {
//!     if let Some(key) = ObjectRef::from_cached(&resource, e.object()) {
//!         events.add(key); // a burst of events for one pod: one key
//!     }
//! });
//! while let Some(key) = queue.get().await {
//!     let worked = match pods.lister().store().get(&key.key()) {
//!         Some(pod) => pod.uid().is_some(), // reconcile the pod as cached now
//!         None => true,                     // deleted
//!     };
//!     if worked {
//!         queue.forget(&key);
//!     } else {
//!         queue.add_rate_limited(key.clone()); // again in 5 ms, 10 ms, 20 ms...
//!     }
//!     queue.done(&key);
//! }
//! # }
//! ```
//!
//! # Reconcilers
//!
//! A [`Controller`] runs a reconcile function over such a queue, as
//! controller-runtime's reconcilers run: `N` workers, never two on one
//! key, fed by informers of resources named at run time
//! ([`watch`](Controller::watch), with handler filters and change
//! predicates through [`watch_with`](Controller::watch_with)), by owner
//! references ([`owns`](Controller::owns): an event on an owned object
//! queues its owner), by the members of a resource set as they come and go
//! ([`watch_set`](Controller::watch_set)) and by a periodic requeue of
//! everything cached. The function is handed a [`Context`] — the key, the
//! object as cached (no copy; `None` once deleted), the listers of the
//! controller's other resources, a client — and answers an [`Action`]
//! (done, or again after a delay) or an error, retried with backoff; a
//! panic is caught, logged, counted and retried like an error.
//!
//! ```no_run
//! # async fn demo(factory: kube_dynamic_informer::InformerFactory) -> Result<(), Box<dyn std::error::Error>> {
//! use std::convert::Infallible;
//! use kube_dynamic_informer::reconcile::{Action, Context, Controller};
//!
//! let pods = factory.for_resource("pods").await?;
//! factory.start()?;
//! Controller::new("pods")
//!     .workers(4)
//!     .client(factory.client().clone())
//!     .watch(&pods)
//!     .run(|ctx: Context| async move {
//!         let node = ctx.object().and_then(|pod| pod.pointer("/spec/nodeName")?.as_str().map(str::to_owned));
//!         println!("{} on {node:?}", ctx.key());
//!         Ok::<_, Infallible>(Action::Done)
//!     })
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! # Metrics
//!
//! Each queue records client-go's workqueue series through the
//! [`metrics`](::metrics) facade (see [`informer::telemetry`](crate::informer::telemetry)
//! for why, and how to export them), labelled with `name`, the queue's
//! [name](WorkQueue::name). A queue registers its series when it is
//! created: install the recorder before.
//!
//! | name | type | what |
//! |---|---|---|
//! | `workqueue_depth` | gauge | keys waiting to be handed out |
//! | `workqueue_adds_total` | counter | keys added (not one already waiting; a delayed key when it is due) |
//! | `workqueue_retries_total` | counter | rate-limited adds ([`add_rate_limited`](WorkQueue::add_rate_limited)) |
//! | `workqueue_queue_duration_seconds` | histogram | time from a key's add to its hand-out |
//! | `workqueue_work_duration_seconds` | histogram | time from a key's hand-out to its [`done`](WorkQueue::done) |
//! | `workqueue_unfinished_work_seconds` | gauge | the time the keys in flight have been processed, summed |
//! | `workqueue_longest_running_processor_seconds` | gauge | the time the longest key in flight has been processed |
//!
//! The two last are set when a key is handed out or done, and by
//! [`WorkQueue::update_unfinished_work`], which a reconciler's workers call
//! periodically (client-go every 500 ms), so that a key stuck in its work
//! shows.
//!
//! # For client-go users
//!
//! | client-go | here |
//! |---|---|
//! | `workqueue.RateLimitingInterface` (`TypedRateLimitingInterface`) | [`WorkQueue`] |
//! | `workqueue.NewNamedRateLimitingQueue` | [`WorkQueue::with_rate_limiter`] |
//! | `workqueue.RateLimiter` | [`RateLimiter`] |
//! | `workqueue.DefaultControllerRateLimiter` | [`default_controller`] |
//! | `workqueue.ItemExponentialFailureRateLimiter` | [`ItemExponentialBackoff`] |
//! | `workqueue.BucketRateLimiter` | [`TokenBucket`] |
//! | `workqueue.MaxOfRateLimiter` | [`MaxOf`] |
//! | `cache.MetaNamespaceKeyFunc`'s keys | [`ObjectRef`] (with its resource; [`ObjectRef::key`] is that key) |
//! | controller-runtime's `Reconciler`, `reconcile.Request` / `Result` | the function [`Controller::run`] calls, [`Context`] / [`Action`] |
//! | controller-runtime's `builder` (`For`, `Owns`, `Watches`), `MaxConcurrentReconciles` | [`Controller`] ([`watch`](Controller::watch), [`owns`](Controller::owns), [`watch_set`](Controller::watch_set)), [`Controller::workers`] |
//! | controller-runtime's `handler.EnqueueRequestForOwner` | [`Controller::owns`] ([`OwnsOptions::all_owners`]) |
//!
//! Searching these docs for a client-go name finds ours.

mod controller;
mod error;
mod key;
mod metrics;
mod queue;
mod rate_limit;

pub use controller::{Action, Context, Controller, OwnsOptions, ShutdownHandle};
pub use error::ReconcileError;
pub use key::ObjectRef;
pub use queue::WorkQueue;
pub use rate_limit::{
    DEFAULT_BASE_DELAY, DEFAULT_BURST, DEFAULT_MAX_DELAY, DEFAULT_QPS, ItemExponentialBackoff,
    MaxOf, RateLimiter, TokenBucket, default_controller,
};
