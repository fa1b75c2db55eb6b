//! How long a key waits before it is retried: client-go's rate limiters,
//! per key ([`ItemExponentialBackoff`]), overall ([`TokenBucket`]), and the
//! longest of several ([`MaxOf`], [`default_controller`]).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use super::key::ObjectRef;

/// Decides how long a key waits before it is retried, and remembers each
/// key's failures until it is forgotten.
///
/// A [`WorkQueue`](super::WorkQueue) calls [`when`](Self::when) from
/// [`add_rate_limited`](super::WorkQueue::add_rate_limited) (a failure:
/// the key comes back after the delay), [`forget`](Self::forget) from
/// [`forget`](super::WorkQueue::forget) (a success: the key's backoff
/// starts over) and [`retries`](Self::retries) from
/// [`num_requeues`](super::WorkQueue::num_requeues).
#[doc(alias = "TypedRateLimiter")]
pub trait RateLimiter<K>: Send + Sync + 'static {
    /// Records a failure of `key` and returns how long it waits before
    /// it is retried.
    fn when(&self, key: &K) -> Duration;
    /// Forgets `key`'s failures: its next delay is the first one again.
    fn forget(&self, key: &K);
    /// How many failures of `key` are remembered.
    fn retries(&self, key: &K) -> u32;
}

impl<K, R: RateLimiter<K> + ?Sized> RateLimiter<K> for Box<R> {
    fn when(&self, key: &K) -> Duration {
        (**self).when(key)
    }
    fn forget(&self, key: &K) {
        (**self).forget(key);
    }
    fn retries(&self, key: &K) -> u32 {
        (**self).retries(key)
    }
}

/// A limiter shared by several queues counts their failures together.
impl<K, R: RateLimiter<K> + ?Sized> RateLimiter<K> for Arc<R> {
    fn when(&self, key: &K) -> Duration {
        (**self).when(key)
    }
    fn forget(&self, key: &K) {
        (**self).forget(key);
    }
    fn retries(&self, key: &K) -> u32 {
        (**self).retries(key)
    }
}

/// Per-key exponential backoff: a key that failed `n` times before waits
/// `base * 2^n`, at most `cap` (client-go's
/// `ItemExponentialFailureRateLimiter`).
///
/// ```
/// use std::time::Duration;
/// use kube_dynamic_informer::reconcile::{ItemExponentialBackoff, RateLimiter};
///
/// let backoff = ItemExponentialBackoff::new(Duration::from_millis(5), Duration::from_secs(1000));
/// let delays: Vec<_> = (0..3).map(|_| backoff.when(&"shop/web")).collect();
/// assert_eq!(delays, [5, 10, 20].map(Duration::from_millis));
/// backoff.forget(&"shop/web");
/// assert_eq!(backoff.when(&"shop/web"), Duration::from_millis(5));
/// ```
#[doc(alias = "ItemExponentialFailureRateLimiter")]
pub struct ItemExponentialBackoff<K = ObjectRef> {
    base: Duration,
    cap: Duration,
    failures: Mutex<HashMap<K, u32>>,
}

impl<K> ItemExponentialBackoff<K> {
    /// Backoff from `base`, doubling at each failure of a key, at most
    /// `cap`.
    #[must_use]
    pub fn new(base: Duration, cap: Duration) -> Self {
        ItemExponentialBackoff {
            base,
            cap,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// The delay after `failures` earlier failures: `base * 2^failures`,
    /// at most `cap`.
    fn delay(&self, failures: u32) -> Duration {
        const NANOS: u128 = 1_000_000_000;
        if self.base.is_zero() {
            return Duration::ZERO;
        }
        let delay = 1u128
            .checked_shl(failures)
            .and_then(|factor| self.base.as_nanos().checked_mul(factor));
        match delay {
            // Below the cap, so its seconds fit.
            Some(d) if d < self.cap.as_nanos() => Duration::new(
                u64::try_from(d / NANOS).unwrap_or(u64::MAX),
                u32::try_from(d % NANOS).unwrap_or(0),
            ),
            _ => self.cap,
        }
    }
}

impl<K> std::fmt::Debug for ItemExponentialBackoff<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ItemExponentialBackoff")
            .field("base", &self.base)
            .field("cap", &self.cap)
            .field("keys", &self.failures.lock().len())
            .finish()
    }
}

impl<K> RateLimiter<K> for ItemExponentialBackoff<K>
where
    K: Clone + Eq + Hash + Send + Sync + 'static,
{
    fn when(&self, key: &K) -> Duration {
        let mut failures = self.failures.lock();
        let n = match failures.get_mut(key) {
            Some(n) => n,
            None => failures.entry(key.clone()).or_insert(0),
        };
        let earlier = *n;
        *n = n.saturating_add(1);
        drop(failures);
        self.delay(earlier)
    }

    fn forget(&self, key: &K) {
        self.failures.lock().remove(key);
    }

    fn retries(&self, key: &K) -> u32 {
        self.failures.lock().get(key).copied().unwrap_or(0)
    }
}

/// An overall rate limit, the same for every key: `burst` retries at once,
/// then `qps` a second (client-go's `BucketRateLimiter` over
/// `golang.org/x/time/rate`).
///
/// Each call of [`when`](RateLimiter::when) takes a token; when none is
/// left it reserves the next one and answers the time until it is there,
/// so that retries are spaced `1/qps` apart however many fail at once. A
/// `qps` that is not a positive number sets no limit. It keeps no key:
/// [`forget`](RateLimiter::forget) does nothing and
/// [`retries`](RateLimiter::retries) is 0.
#[doc(alias = "BucketRateLimiter")]
#[derive(Debug)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    /// Tokens left at `at`; below zero when retries are reserved ahead.
    state: Mutex<(f64, Option<Instant>)>,
}

impl TokenBucket {
    /// A bucket of `burst` tokens, refilled at `qps` a second; full at
    /// first.
    #[must_use]
    pub fn new(qps: f64, burst: u32) -> Self {
        TokenBucket {
            qps,
            burst: f64::from(burst),
            state: Mutex::new((f64::from(burst), None)),
        }
    }

    /// Takes a token now; the time until it is there.
    fn reserve(&self) -> Duration {
        if !(self.qps > 0.0 && self.qps.is_finite()) {
            return Duration::ZERO;
        }
        let now = Instant::now();
        let mut state = self.state.lock();
        let (tokens, at) = &mut *state;
        if let Some(at) = at {
            let refill = now.saturating_duration_since(*at).as_secs_f64() * self.qps;
            *tokens = (*tokens + refill).min(self.burst);
        }
        *at = Some(now);
        *tokens -= 1.0;
        if *tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-*tokens / self.qps)
        }
    }
}

impl<K> RateLimiter<K> for TokenBucket {
    fn when(&self, _: &K) -> Duration {
        self.reserve()
    }
    fn forget(&self, _: &K) {}
    fn retries(&self, _: &K) -> u32 {
        0
    }
}

/// The longest delay of several limiters (client-go's
/// `MaxOfRateLimiter`): each of them records every failure, and a key's
/// retries are the most any of them counts.
#[doc(alias = "MaxOfRateLimiter")]
pub struct MaxOf<K> {
    limiters: Vec<Box<dyn RateLimiter<K>>>,
}

impl<K> MaxOf<K> {
    /// The longest delay of `limiters`; none at all with none.
    #[must_use]
    pub fn new(limiters: Vec<Box<dyn RateLimiter<K>>>) -> Self {
        MaxOf { limiters }
    }
}

impl<K> std::fmt::Debug for MaxOf<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MaxOf")
            .field("limiters", &self.limiters.len())
            .finish()
    }
}

impl<K: 'static> RateLimiter<K> for MaxOf<K> {
    fn when(&self, key: &K) -> Duration {
        let delays = self.limiters.iter().map(|l| l.when(key));
        delays.max().unwrap_or(Duration::ZERO)
    }

    fn forget(&self, key: &K) {
        for limiter in &self.limiters {
            limiter.forget(key);
        }
    }

    fn retries(&self, key: &K) -> u32 {
        let retries = self.limiters.iter().map(|l| l.retries(key));
        retries.max().unwrap_or(0)
    }
}

/// client-go's `DefaultControllerRateLimiter` (controller-runtime's
/// default too): the longest of per-key exponential backoff from 5 ms to
/// 1000 s and an overall 10 retries a second with bursts of 100.
///
/// ```
/// use std::time::Duration;
/// use kube_dynamic_informer::reconcile::{RateLimiter, default_controller};
///
/// let limiter = default_controller::<&str>();
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(10));
/// assert_eq!(limiter.retries(&"a"), 2);
/// ```
#[doc(alias = "DefaultControllerRateLimiter")]
#[doc(alias = "DefaultTypedControllerRateLimiter")]
#[must_use]
pub fn default_controller<K>() -> MaxOf<K>
where
    K: Clone + Eq + Hash + Send + Sync + 'static,
{
    MaxOf::new(vec![
        Box::new(ItemExponentialBackoff::new(
            DEFAULT_BASE_DELAY,
            DEFAULT_MAX_DELAY,
        )),
        Box::new(TokenBucket::new(DEFAULT_QPS, DEFAULT_BURST)),
    ])
}

/// [`default_controller`]'s first delay of a key (client-go's 5 ms).
pub const DEFAULT_BASE_DELAY: Duration = Duration::from_millis(5);
/// [`default_controller`]'s longest delay of a key (client-go's 1000 s).
pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(1000);
/// [`default_controller`]'s overall retries a second (client-go's 10).
pub const DEFAULT_QPS: f64 = 10.0;
/// [`default_controller`]'s overall burst (client-go's 100).
pub const DEFAULT_BURST: u32 = 100;

#[cfg(test)]
mod tests;
