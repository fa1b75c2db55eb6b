//! Exponential backoff with jitter for list and watch failures.
//!
//! The [layer docs](crate::informer) say more.

use std::time::Duration;

use tokio::time::Instant;

use crate::vocabulary::duration::go;

/// Settings of the retry backoff.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "config", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct BackoffConfig {
    /// Wait after the first failure. client-go: 800 ms.
    #[serde(with = "go")]
    #[cfg_attr(feature = "config", schemars(schema_with = "go::schema"))]
    pub initial: Duration,
    /// Upper bound of the wait before jitter. client-go: 30 s.
    #[serde(with = "go")]
    #[cfg_attr(feature = "config", schemars(schema_with = "go::schema"))]
    pub max: Duration,
    /// Failure-free time after which the next failure starts again from
    /// `initial`. client-go: 2 minutes.
    #[serde(with = "go")]
    #[cfg_attr(feature = "config", schemars(schema_with = "go::schema"))]
    pub reset_after: Duration,
    /// Each wait is extended by a random fraction of itself up to this factor
    /// (0.0 = no jitter). client-go uses 1.0; the default here is 0.5, so
    /// the longest wait stays within 45 s.
    #[cfg_attr(feature = "config", schemars(range(min = 0.0, max = 10.0)))]
    pub jitter: f64,
}

// Jitter compares by its bits, so that backoff settings can be part of what
// makes two informer requests the same.
impl BackoffConfig {
    /// The settings as equality and hashing see them.
    fn compared(&self) -> (Duration, Duration, Duration, u64) {
        let jitter = self.jitter.to_bits();
        (self.initial, self.max, self.reset_after, jitter)
    }
}

impl PartialEq for BackoffConfig {
    fn eq(&self, other: &Self) -> bool {
        self.compared() == other.compared()
    }
}

impl Eq for BackoffConfig {}

impl std::hash::Hash for BackoffConfig {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.compared().hash(state);
    }
}

impl Default for BackoffConfig {
    /// 800 ms doubling to 30 s, reset after 2 minutes, jitter 0.5.
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(800),
            max: Duration::from_secs(30),
            reset_after: Duration::from_secs(120),
            jitter: 0.5,
        }
    }
}

/// Backoff state: how many failures in a row, and when the last one was.
#[derive(Debug)]
pub(crate) struct Backoff {
    config: BackoffConfig,
    failures: u32,
    last_failure: Option<Instant>,
}

impl Backoff {
    pub(crate) fn new(config: BackoffConfig) -> Self {
        Self {
            config,
            failures: 0,
            last_failure: None,
        }
    }

    /// Records a failure now and returns how long to wait before retrying.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let now = Instant::now();
        if let Some(last) = self.last_failure
            && now.duration_since(last) >= self.config.reset_after
        {
            self.failures = 0;
        }
        self.last_failure = Some(now);
        let base = self.base_delay(self.failures);
        self.failures = self.failures.saturating_add(1);
        // Settings come from config files too: a NaN, negative or huge jitter
        // must not make the multiplication below panic.
        let jitter = self.config.jitter;
        if jitter.is_nan() || jitter <= 0.0 {
            return base;
        }
        base.checked_mul(11).map_or(base, |_| {
            base.mul_f64(1.0 + rand::random::<f64>() * jitter.min(10.0))
        })
    }

    /// The wait before jitter after `failures` earlier failures in a row.
    fn base_delay(&self, failures: u32) -> Duration {
        let factor = 2u32.saturating_pow(failures.min(31));
        self.config
            .initial
            .checked_mul(factor)
            .unwrap_or(self.config.max)
            .min(self.config.max)
    }

    /// Failures in a row so far.
    pub(crate) fn failures(&self) -> u32 {
        self.failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_jitter() -> BackoffConfig {
        BackoffConfig {
            jitter: 0.0,
            ..BackoffConfig::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn doubles_from_800ms_to_30s() {
        let mut b = Backoff::new(no_jitter());
        let delays: Vec<u64> = (0..9).map(|_| b.next_delay().as_millis() as u64).collect();
        assert_eq!(
            delays,
            [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn two_quiet_minutes_reset_the_sequence() {
        let mut b = Backoff::new(no_jitter());
        b.next_delay();
        b.next_delay();
        assert_eq!(b.next_delay(), Duration::from_millis(3200));
        tokio::time::advance(Duration::from_secs(119)).await;
        assert_eq!(b.next_delay(), Duration::from_millis(6400));
        tokio::time::advance(Duration::from_secs(120)).await;
        assert_eq!(b.next_delay(), Duration::from_millis(800));
    }

    #[tokio::test(start_paused = true)]
    async fn jitter_stays_within_its_factor() {
        let mut b = Backoff::new(BackoffConfig::default());
        for i in 0..50 {
            let d = b.next_delay();
            let base = b.base_delay(i);
            assert!(d >= base && d <= base.mul_f64(1.5), "{d:?} vs {base:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn many_failures_do_not_overflow() {
        let mut b = Backoff::new(no_jitter());
        for _ in 0..1000 {
            assert!(b.next_delay() <= Duration::from_secs(30));
        }
        assert_eq!(b.failures(), 1000);
    }
}
