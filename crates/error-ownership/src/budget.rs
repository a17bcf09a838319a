//! A per-edge retry budget in the style of Finagle and Linkerd.
//!
//! # Why budgets
//!
//! A fixed attempt count multiplies load by `R` per hop whenever the callee
//! is failing, so a chain of `d` retrying hops offers `R^d` times the load
//! to a part of the system that is already sick. A budget ties retries to
//! the traffic the edge carries anyway: every first attempt deposits
//! `ratio` tokens, every retry withdraws one, deposits expire after `ttl`.
//! With `ratio = 0.1` an edge never sends more than 10% extra requests, so a
//! storm grows as `1.1^d` instead of `2^d` (1.1, 1.21, 1.33 at depths 1-3 of
//! Uber's chain). `min_per_sec` lets a quiet edge still retry at a trickle.
//!
//! Time is injected (`now` is a [`Duration`] since any fixed epoch), so the
//! bucket is a plain value that tests drive with any clock.
//!
//! ```
//! use error_ownership::budget::RetryBudget;
//! use std::time::Duration;
//!
//! let mut b = RetryBudget::new(0.1, Duration::from_secs(10), 0.0);
//! let t = Duration::ZERO;
//! for _ in 0..10 { b.deposit(t); }     // ten first attempts earn one retry
//! assert!(b.try_withdraw(t));
//! assert!(!b.try_withdraw(t));         // the eleventh request's retry is denied
//! ```

use std::time::Duration;

/// How many slots a `ttl` window is cut into; deposits expire slot by slot.
const SLOTS: usize = 10;
/// Fixed-point scale: one retry costs this many milli-tokens.
const TOKEN: i64 = 1000;

/// A windowed token bucket: retries ≤ `ratio` × first attempts over any
/// `ttl`, plus `min_per_sec` retries per second.
#[derive(Debug, Clone)]
pub struct RetryBudget {
    ratio: f64,
    deposit_milli: i64,
    /// A slot's length in nanoseconds (u64 arithmetic: a division of
    /// u128s is a call to a software routine on every deposit).
    slot_nanos: u64,
    /// `(slot number, milli-tokens)`; a slot number is `now / slot_len`.
    slots: [(u64, i64); SLOTS],
    min_per_sec: f64,
    reserve: f64,
    reserve_cap: f64,
    reserve_at: Duration,
}

impl RetryBudget {
    /// A budget with `ratio` tokens per first attempt, deposits living for
    /// `ttl`, and `min_per_sec` retries per second always allowed.
    pub fn new(ratio: f64, ttl: Duration, min_per_sec: f64) -> RetryBudget {
        let ratio = if ratio.is_finite() {
            ratio.max(0.0)
        } else {
            0.0
        };
        let min_per_sec = if min_per_sec.is_finite() {
            min_per_sec.max(0.0)
        } else {
            0.0
        };
        let ttl = ttl.max(Duration::from_millis(SLOTS as u64));
        RetryBudget {
            ratio,
            deposit_milli: (ratio * TOKEN as f64).round() as i64,
            slot_nanos: u64::try_from((ttl / SLOTS as u32).as_nanos())
                .unwrap_or(u64::MAX)
                .max(1),
            slots: [(0, 0); SLOTS],
            min_per_sec,
            reserve: 0.0,
            reserve_cap: min_per_sec.max(1.0),
            reserve_at: Duration::ZERO,
        }
    }

    /// The ratio this budget was built with.
    pub fn ratio(&self) -> f64 {
        self.ratio
    }

    fn slot_of(&self, now: Duration) -> u64 {
        let nanos = now
            .as_secs()
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::from(now.subsec_nanos()));
        nanos / self.slot_nanos
    }

    fn slot_mut(&mut self, now: Duration) -> &mut i64 {
        let n = self.slot_of(now);
        let s = &mut self.slots[(n % SLOTS as u64) as usize];
        if s.0 != n {
            *s = (n, 0);
        }
        &mut s.1
    }

    fn balance_milli(&self, now: Duration) -> i64 {
        let n = self.slot_of(now);
        self.slots
            .iter()
            .filter(|(slot, _)| *slot + (SLOTS as u64) > n && *slot <= n)
            .map(|(_, v)| *v)
            .sum()
    }

    fn refill_reserve(&mut self, now: Duration) {
        if now > self.reserve_at {
            let dt = (now - self.reserve_at).as_secs_f64();
            self.reserve = (self.reserve + dt * self.min_per_sec).min(self.reserve_cap);
            self.reserve_at = now;
        }
    }

    /// Records a first attempt.
    pub fn deposit(&mut self, now: Duration) {
        self.deposit_many(now, 1);
    }

    /// Records `n` first attempts at once (a caller that dates its calls
    /// in batches, to read its clock once per batch).
    ///
    /// ```
    /// use error_ownership::budget::RetryBudget;
    /// use std::time::Duration;
    ///
    /// let mut b = RetryBudget::new(0.1, Duration::from_secs(10), 0.0);
    /// b.deposit_many(Duration::ZERO, 20);
    /// assert_eq!(b.available(Duration::ZERO), 2.0);
    /// ```
    pub fn deposit_many(&mut self, now: Duration, n: u32) {
        let d = self.deposit_milli.saturating_mul(i64::from(n));
        let slot = self.slot_mut(now);
        *slot = slot.saturating_add(d);
    }

    /// Asks for one retry; `true` withdraws a token, `false` means the
    /// retry is denied.
    pub fn try_withdraw(&mut self, now: Duration) -> bool {
        if self.balance_milli(now) >= TOKEN {
            *self.slot_mut(now) -= TOKEN;
            return true;
        }
        self.refill_reserve(now);
        if self.reserve >= 1.0 {
            self.reserve -= 1.0;
            return true;
        }
        false
    }

    /// Tokens available now (for display).
    pub fn available(&mut self, now: Duration) -> f64 {
        self.refill_reserve(now);
        self.balance_milli(now).max(0) as f64 / TOKEN as f64 + self.reserve.floor()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const TTL: Duration = Duration::from_secs(10);

    #[test]
    fn ten_percent_of_first_attempts() {
        let mut b = RetryBudget::new(0.1, TTL, 0.0);
        let mut granted = 0;
        for i in 0..1000u64 {
            let now = Duration::from_millis(i);
            b.deposit(now);
            if b.try_withdraw(now) {
                granted += 1;
            }
        }
        assert_eq!(granted, 100);
    }

    #[test]
    fn deposits_expire_after_ttl() {
        let mut b = RetryBudget::new(0.5, TTL, 0.0);
        for _ in 0..4 {
            b.deposit(Duration::ZERO);
        }
        assert_eq!(b.available(Duration::from_secs(5)), 2.0);
        assert_eq!(b.available(Duration::from_secs(11)), 0.0);
        assert!(!b.try_withdraw(Duration::from_secs(11)));
    }

    #[test]
    fn min_per_sec_trickles_on_a_quiet_edge() {
        let mut b = RetryBudget::new(0.1, TTL, 2.0);
        assert!(!b.try_withdraw(Duration::ZERO));
        assert!(b.try_withdraw(Duration::from_millis(500)));
        assert!(!b.try_withdraw(Duration::from_millis(500)));
        assert!(b.try_withdraw(Duration::from_secs(1)));
    }

    #[test]
    fn zero_ratio_denies_everything() {
        let mut b = RetryBudget::new(0.0, TTL, 0.0);
        for i in 0..100 {
            b.deposit(Duration::from_millis(i));
            assert!(!b.try_withdraw(Duration::from_millis(i)));
        }
    }

    proptest! {
        /// Over any run, retries never exceed ratio × first attempts +
        /// min_per_sec × elapsed, within one token.
        #[test]
        fn never_exceeds_ratio_plus_reserve(
            ratio in 0.0f64..1.0,
            min_per_sec in 0.0f64..5.0,
            ttl_ms in 100u64..20_000,
            events in proptest::collection::vec((0u64..200, any::<bool>()), 1..600),
        ) {
            let mut b = RetryBudget::new(ratio, Duration::from_millis(ttl_ms), min_per_sec);
            let mut now = Duration::ZERO;
            let (mut deposits, mut granted) = (0u64, 0u64);
            for (step_ms, is_deposit) in events {
                now += Duration::from_millis(step_ms);
                if is_deposit {
                    b.deposit(now);
                    deposits += 1;
                } else if b.try_withdraw(now) {
                    granted += 1;
                }
                let bound = (ratio * 1000.0).round() / 1000.0 * deposits as f64
                    + min_per_sec * now.as_secs_f64()
                    + 1.0;
                prop_assert!(granted as f64 <= bound,
                    "granted {} > bound {} (deposits {}, t {:?})", granted, bound, deposits, now);
            }
        }

        /// With a steady stream and every request wanting a retry, the
        /// budget grants the ratio (the seed's 1.1×), within one token.
        #[test]
        fn steady_state_grants_the_ratio(ratio in 0.01f64..0.5, n in 100u64..3000) {
            let mut b = RetryBudget::new(ratio, TTL, 0.0);
            let mut granted = 0u64;
            for i in 0..n {
                let now = Duration::from_millis(i * 2);
                b.deposit(now);
                if b.try_withdraw(now) {
                    granted += 1;
                }
            }
            let expected = (ratio * 1000.0).round() / 1000.0 * n as f64;
            prop_assert!((granted as f64 - expected).abs() <= 1.0,
                "granted {} expected {}", granted, expected);
        }
    }
}
