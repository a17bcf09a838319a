//! Circuit breakers: the other defence people reach for, per edge, in the
//! style of resilience4j's CircuitBreaker and Envoy's outlier detection.
//!
//! # The states
//!
//! * **closed**: attempts go through and their outcomes are recorded in a
//!   count-based sliding window of the last `window` attempts. The breaker
//!   opens after `consecutive` failures in a row (Envoy's
//!   `consecutive_5xx`), or when at least `min_calls` outcomes are in the
//!   window and the failed share reaches `failure_ratio` (resilience4j's
//!   `failureRateThreshold`).
//! * **open**: for `open_for`, every attempt fails fast without reaching
//!   the callee.
//! * **half-open**: after `open_for`, `probes` attempts are let through. If
//!   every probe succeeds the breaker closes (with an empty window); the
//!   first failing probe opens it again for another `open_for`.
//!
//! # Ownership
//!
//! An attempt the open breaker refused never reached the callee, so the
//! callee has no say in it: the failure is the caller's own (its breaker
//! decided), and a caller running the ownership middleware claims it. The
//! caller's own callers may then retry it once, as they would any claimed
//! error, and the retry fails fast again at no cost to the callee. A
//! refused attempt is never retried by the caller whose breaker refused
//! it: retrying into an open breaker only fails faster.
//!
//! The state machine is pure: the clock is passed in.
//!
//! ```
//! use std::time::Duration;
//! use error_ownership::breaker::{Breaker, BreakerConfig, BreakerState};
//!
//! let s = Duration::from_secs;
//! let mut b = Breaker::new(BreakerConfig { consecutive: 3, probes: 1, ..BreakerConfig::DEFAULT });
//! for _ in 0..3 {
//!     assert!(b.try_pass(s(0)));
//!     b.record(s(0), false);
//! }
//! assert_eq!(b.state(s(1)), BreakerState::Open);
//! assert!(!b.try_pass(s(1)));                 // fails fast
//! assert_eq!(b.state(s(5)), BreakerState::HalfOpen);
//! assert!(b.try_pass(s(5)));                  // a probe
//! b.record(s(5), true);
//! assert_eq!(b.state(s(5)), BreakerState::Closed);
//! ```

use std::time::Duration;

/// A breaker's numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakerConfig {
    /// Failures in a row that open it (0: never on this rule).
    pub consecutive: u32,
    /// The failed share of the window that opens it (0..=1; 0: never on
    /// this rule).
    pub failure_ratio: f64,
    /// Attempts the sliding window holds (1..=1000).
    pub window: u32,
    /// Outcomes the window must hold before the ratio is judged.
    pub min_calls: u32,
    /// How long it stays open.
    pub open_for: Duration,
    /// Attempts let through when half-open (at least 1).
    pub probes: u32,
}

impl BreakerConfig {
    /// The defaults of `breaker: on`: 5 failures in a row (Envoy), or half
    /// of the last 100 once 20 are in (resilience4j's rule, smaller
    /// numbers for a lab), open for 5 s, 3 probes.
    pub const DEFAULT: BreakerConfig = BreakerConfig {
        consecutive: 5,
        failure_ratio: 0.5,
        window: 100,
        min_calls: 20,
        open_for: Duration::from_secs(5),
        probes: 3,
    };

    /// The largest `window` accepted.
    pub const MAX_WINDOW: u32 = 1000;
}

/// Where a breaker stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BreakerState {
    /// Attempts go through.
    Closed,
    /// Probes go through.
    HalfOpen,
    /// Attempts fail fast.
    Open,
}

impl BreakerState {
    /// `closed`, `half-open`, `open`.
    pub fn name(self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::HalfOpen => "half-open",
            BreakerState::Open => "open",
        }
    }

    /// 0, 1, 2: how a gauge holds it.
    pub fn level(self) -> u64 {
        match self {
            BreakerState::Closed => 0,
            BreakerState::HalfOpen => 1,
            BreakerState::Open => 2,
        }
    }

    /// The state a gauge's [`level`](Self::level) stands for.
    pub fn from_level(level: u64) -> BreakerState {
        match level {
            0 => BreakerState::Closed,
            1 => BreakerState::HalfOpen,
            _ => BreakerState::Open,
        }
    }
}

/// One edge's breaker.
#[derive(Debug, Clone)]
pub struct Breaker {
    cfg: BreakerConfig,
    /// Outcomes in the window, oldest first overwritten (`true`: failed).
    ring: Vec<bool>,
    next: usize,
    filled: usize,
    failed: usize,
    in_a_row: u32,
    /// When it opened, if it is open or half-open.
    opened: Option<Duration>,
    /// Probes in flight since it went half-open.
    probes_out: u32,
    /// Probes that succeeded since it went half-open.
    probes_ok: u32,
}

impl Breaker {
    /// A closed breaker with an empty window.
    pub fn new(cfg: BreakerConfig) -> Breaker {
        let size = cfg.window.clamp(1, BreakerConfig::MAX_WINDOW) as usize;
        Breaker {
            cfg,
            ring: vec![false; size],
            next: 0,
            filled: 0,
            failed: 0,
            in_a_row: 0,
            opened: None,
            probes_out: 0,
            probes_ok: 0,
        }
    }

    /// Its numbers.
    pub fn config(&self) -> BreakerConfig {
        self.cfg
    }

    /// Where it stands at `now`.
    pub fn state(&self, now: Duration) -> BreakerState {
        match self.opened {
            None => BreakerState::Closed,
            Some(at) if now < at + self.cfg.open_for => BreakerState::Open,
            Some(_) => BreakerState::HalfOpen,
        }
    }

    /// Asks to send an attempt at `now`: `false` means it fails fast.
    pub fn try_pass(&mut self, now: Duration) -> bool {
        match self.state(now) {
            BreakerState::Closed => true,
            BreakerState::Open => false,
            BreakerState::HalfOpen if self.probes_out + self.probes_ok < self.cfg.probes.max(1) => {
                self.probes_out += 1;
                true
            }
            BreakerState::HalfOpen => false,
        }
    }

    /// Records the outcome of an attempt it let through.
    pub fn record(&mut self, now: Duration, ok: bool) {
        match self.state(now) {
            BreakerState::Closed => self.record_closed(now, ok),
            BreakerState::HalfOpen if !ok => self.open(now),
            BreakerState::HalfOpen => {
                self.probes_out = self.probes_out.saturating_sub(1);
                self.probes_ok += 1;
                if self.probes_ok >= self.cfg.probes.max(1) {
                    self.close();
                }
            }
            // An attempt let through before it opened, answering late.
            BreakerState::Open => {}
        }
    }

    fn record_closed(&mut self, now: Duration, ok: bool) {
        let failed = !ok;
        if self.filled == self.ring.len() {
            self.failed -= usize::from(self.ring[self.next]);
        } else {
            self.filled += 1;
        }
        self.ring[self.next] = failed;
        self.failed += usize::from(failed);
        self.next = (self.next + 1) % self.ring.len();
        self.in_a_row = if failed { self.in_a_row + 1 } else { 0 };
        let by_streak = self.cfg.consecutive > 0 && self.in_a_row >= self.cfg.consecutive;
        let by_ratio = self.cfg.failure_ratio > 0.0
            && self.filled >= self.cfg.min_calls.max(1) as usize
            && self.failed as f64 >= self.cfg.failure_ratio * self.filled as f64;
        if by_streak || by_ratio {
            self.open(now);
        }
    }

    fn open(&mut self, now: Duration) {
        self.opened = Some(now);
        self.probes_out = 0;
        self.probes_ok = 0;
    }

    fn close(&mut self) {
        *self = Breaker::new(self.cfg);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_streak_of_failures_opens_it_and_a_success_breaks_the_streak() {
        let mut b = Breaker::new(BreakerConfig {
            failure_ratio: 0.0,
            ..BreakerConfig::DEFAULT
        });
        for ok in [false, false, false, false, true, false, false, false, false] {
            assert!(b.try_pass(S(0)));
            b.record(S(0), ok);
        }
        assert_eq!(b.state(S(0)), BreakerState::Closed, "4 in a row, then 4");
        b.record(S(0), false);
        assert_eq!(b.state(S(0)), BreakerState::Open);
    }

    #[test]
    fn a_failure_ratio_opens_it_once_enough_calls_are_in() {
        let mut b = Breaker::new(BreakerConfig {
            consecutive: 0,
            ..BreakerConfig::DEFAULT
        });
        // Alternating: 50% failed. Judged from the 20th outcome on.
        for i in 0..19 {
            b.record(S(0), i % 2 == 0);
        }
        assert_eq!(b.state(S(0)), BreakerState::Closed, "19 < min_calls");
        b.record(S(0), false);
        assert_eq!(b.state(S(0)), BreakerState::Open, "10 of 20 failed");
    }

    #[test]
    fn the_window_forgets_old_failures() {
        let mut b = Breaker::new(BreakerConfig {
            consecutive: 0,
            failure_ratio: 0.5,
            window: 10,
            min_calls: 10,
            ..BreakerConfig::DEFAULT
        });
        for _ in 0..4 {
            b.record(S(0), false);
        }
        for _ in 0..20 {
            b.record(S(0), true);
        }
        for _ in 0..4 {
            b.record(S(0), false);
        }
        assert_eq!(b.state(S(0)), BreakerState::Closed, "4 of the last 10");
        b.record(S(0), false);
        assert_eq!(b.state(S(0)), BreakerState::Open, "5 of the last 10");
    }

    #[test]
    fn half_open_lets_probes_through_and_a_failed_probe_reopens() {
        let mut b = Breaker::new(BreakerConfig::DEFAULT);
        for _ in 0..5 {
            b.record(S(10), false);
        }
        assert!(!b.try_pass(S(14)));
        assert_eq!(b.state(S(15)), BreakerState::HalfOpen);
        assert!(b.try_pass(S(15)) && b.try_pass(S(15)) && b.try_pass(S(15)));
        assert!(!b.try_pass(S(15)), "three probes at most");
        b.record(S(15), true);
        b.record(ms(15_001), false);
        assert_eq!(b.state(ms(15_002)), BreakerState::Open);
        assert_eq!(b.state(ms(20_001)), BreakerState::HalfOpen);
    }

    #[test]
    fn three_good_probes_close_it_with_an_empty_window() {
        let mut b = Breaker::new(BreakerConfig::DEFAULT);
        for _ in 0..5 {
            b.record(S(0), false);
        }
        for _ in 0..3 {
            assert!(b.try_pass(S(5)));
            b.record(S(5), true);
        }
        assert_eq!(b.state(S(5)), BreakerState::Closed);
        for _ in 0..4 {
            b.record(S(5), false);
        }
        assert_eq!(
            b.state(S(5)),
            BreakerState::Closed,
            "the old streak is gone"
        );
    }

    proptest! {
        /// Whatever happens, an open breaker lets nothing through before
        /// `open_for` has passed, and a half-open one no more than
        /// `probes` attempts at a time.
        #[test]
        fn open_means_nothing_passes(ops in prop::collection::vec((0u64..400, any::<bool>()), 1..300)) {
            let cfg = BreakerConfig { consecutive: 3, open_for: ms(1000), probes: 2, ..BreakerConfig::DEFAULT };
            let mut b = Breaker::new(cfg);
            let mut now = Duration::ZERO;
            let mut out = 0u32;
            for (dt, ok) in ops {
                now += ms(dt);
                let before = b.state(now);
                if b.try_pass(now) {
                    prop_assert_ne!(before, BreakerState::Open);
                    if before == BreakerState::HalfOpen {
                        out += 1;
                        prop_assert!(out <= 2);
                    }
                    b.record(now, ok);
                    if b.state(now) != BreakerState::HalfOpen { out = 0; } else { out -= 1; }
                }
            }
        }
    }
}
