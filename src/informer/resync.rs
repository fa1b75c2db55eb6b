//! Resync period arithmetic, as client-go's shared informer defines it.
//!
//! A resync re-delivers every cached object to a handler as an
//! `Update { old == new, is_resync: true }` on a timer. It never contacts the
//! API server: it exists so that handlers which act on the world (not only on
//! changes) get a periodic chance to correct drift.
//!
//! The informer checks for due resyncs every *check period*; each handler has
//! its own *effective period*. The rules, each copied from client-go:
//!
//! - an informer created with period 0 never resyncs, whatever a handler asks;
//! - a handler period of 0 means "no resync for this handler";
//! - periods under 1 s become 1 s;
//! - before the informer starts, a handler asking for less than the check
//!   period lowers the check period (and every handler's period is computed
//!   again); after start, the handler's period is raised to the check period
//!   instead, because the running timer cannot be re-planned for everyone;
//! - since resyncs happen only on check ticks, the effective period is the
//!   requested one rounded up to a multiple of the check period.

use std::time::Duration;

/// The shortest resync period; shorter requests are raised to it.
pub const MIN_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// The informer-wide resync state: its check period.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ResyncClock {
    /// How often due resyncs are looked for; zero disables resync.
    check_period: Duration,
}

/// What adding a handler did to the resync clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HandlerResync {
    /// The handler's effective period (zero: never).
    pub(crate) period: Duration,
    /// True when the informer's check period was lowered, so every other
    /// handler's effective period must be computed again.
    pub(crate) check_period_lowered: bool,
}

impl ResyncClock {
    /// The clock of an informer whose default resync period is `period`.
    pub(crate) fn new(period: Duration) -> Self {
        Self {
            check_period: clamp(period),
        }
    }

    /// The check period; zero when resync is disabled.
    pub(crate) fn check_period(&self) -> Duration {
        self.check_period
    }

    /// Admits a handler that asks for `requested` (zero: never).
    pub(crate) fn add_handler(&mut self, requested: Duration, started: bool) -> HandlerResync {
        let requested = clamp(requested);
        // A zero check period (no resync at all) is never lowered.
        let check_period_lowered =
            !started && !requested.is_zero() && requested < self.check_period;
        if check_period_lowered {
            self.check_period = requested;
        }
        HandlerResync {
            period: self.effective(requested),
            check_period_lowered,
        }
    }

    /// The effective period of a handler that asked for `requested`, under
    /// the current check period.
    pub(crate) fn effective(&self, requested: Duration) -> Duration {
        let requested = clamp(requested);
        let check = self.check_period;
        if requested.is_zero() || check.is_zero() {
            return Duration::ZERO;
        }
        if requested <= check {
            return check;
        }
        let check_nanos = check.as_nanos();
        let ticks = requested.as_nanos().div_ceil(check_nanos);
        let nanos = ticks.saturating_mul(check_nanos);
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

/// Zero stays zero (disabled); anything else is at least one second.
fn clamp(period: Duration) -> Duration {
    if period.is_zero() {
        period
    } else {
        period.max(MIN_RESYNC_PERIOD)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;
    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn informer_period_zero_disables_every_handler() {
        let mut clock = ResyncClock::new(Duration::ZERO);
        assert_eq!(clock.add_handler(S(5), false).period, Duration::ZERO);
        assert_eq!(clock.add_handler(S(5), true).period, Duration::ZERO);
        assert_eq!(clock.check_period(), Duration::ZERO);
    }

    #[test]
    fn handler_period_zero_means_never() {
        let mut clock = ResyncClock::new(S(10));
        assert_eq!(
            clock.add_handler(Duration::ZERO, false).period,
            Duration::ZERO
        );
        assert_eq!(clock.check_period(), S(10));
    }

    #[test]
    fn periods_under_one_second_become_one_second() {
        let mut clock = ResyncClock::new(MS(10));
        assert_eq!(clock.check_period(), S(1));
        assert_eq!(clock.add_handler(MS(200), false).period, S(1));
    }

    #[test]
    fn before_start_a_smaller_period_lowers_the_check_period() {
        let mut clock = ResyncClock::new(S(30));
        let r = clock.add_handler(S(10), false);
        assert_eq!(
            r,
            HandlerResync {
                period: S(10),
                check_period_lowered: true
            }
        );
        assert_eq!(clock.check_period(), S(10));
        // A handler that had asked for 25 s now resyncs every 30 s (3 ticks).
        assert_eq!(clock.effective(S(25)), S(30));
    }

    #[test]
    fn after_start_a_smaller_period_is_raised_to_the_check_period() {
        let mut clock = ResyncClock::new(S(30));
        let r = clock.add_handler(S(10), true);
        assert_eq!(
            r,
            HandlerResync {
                period: S(30),
                check_period_lowered: false
            }
        );
        assert_eq!(clock.check_period(), S(30));
    }

    #[test]
    fn periods_round_up_to_a_multiple_of_the_check_period() {
        let mut clock = ResyncClock::new(S(10));
        assert_eq!(clock.add_handler(S(25), true).period, S(30));
        assert_eq!(clock.add_handler(S(30), true).period, S(30));
        assert_eq!(clock.add_handler(S(31), false).period, S(40));
        assert_eq!(clock.effective(MS(10_001)), S(20));
    }

    #[test]
    fn huge_periods_do_not_overflow() {
        let clock = ResyncClock::new(S(7));
        assert!(clock.effective(Duration::MAX) >= S(7));
    }
}
