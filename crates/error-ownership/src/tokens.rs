//! The `tokens` budget model: gRPC's retry throttling (gRFC A6
//! `retryThrottling`), per edge.
//!
//! # Why a token bucket
//!
//! A ratio budget (see [`super::budget`]) still lets every caller retry a
//! tenth of its traffic while the callee is down. gRPC takes the other
//! view: when most calls fail, retries are unlikely to help, so stop them
//! altogether until calls start succeeding again. Each channel keeps a
//! bucket that starts full at `max_tokens`; every failure with a retryable
//! status spends one token (never below zero), every successful call earns
//! `token_ratio` back (never above `max_tokens`), and a failure may only be
//! retried while the bucket holds *more* than half of `max_tokens`.
//!
//! With gRPC's usual numbers (`max_tokens` 10, `token_ratio` 0.1) a full
//! bucket lets the first four consecutive failures be retried; the fifth
//! brings it down to 5 = max/2 and is not retried, nor is any failure
//! after it. Under a persistent fault the bucket drains and the edge stops
//! retrying: amplification falls to 1×, and so does the availability a
//! retry could have saved. Each success earns a tenth of a token, so from
//! the point where retries stopped (5 tokens) one success lifts the bucket
//! above the threshold, but the next failure spends a whole token again:
//! it takes 11 successes (5 + 1.1 = 6.1, 6.1 − 1 = 5.1 > 5) before a
//! failure is retried again. From an empty bucket it takes 61.
//!
//! A6 fixes `token_ratio` to three decimal places and `max_tokens` to at
//! most 1000, so the bucket counts in whole milli-tokens, as gRPC's C core
//! does: ten successes at 0.1 make exactly one token, with no drift. A6
//! also caps `maxAttempts` at [`MAX_ATTEMPTS_CAP`]. The model needs no
//! clock: the bucket moves only with outcomes, never with time.
//!
//! ```
//! use error_ownership::tokens::RetryThrottle;
//!
//! let mut bucket = RetryThrottle::default(); // 10 tokens, ratio 0.1
//! for _ in 0..4 {
//!     assert!(bucket.on_retryable_failure()); // 9, 8, 7, 6 > 5: retry
//! }
//! assert!(!bucket.on_retryable_failure()); // 5 ≤ 5: the fifth is not retried
//! for _ in 0..11 {
//!     bucket.on_success();
//! }
//! assert!(bucket.on_retryable_failure()); // 6.1 − 1 = 5.1 > 5: retried again
//! ```

/// Milli-tokens in one token.
const MILLI: u32 = 1000;

/// gRPC clamps a method's `maxAttempts` to this (A6).
pub const MAX_ATTEMPTS_CAP: u32 = 5;

/// A6's limit on `max_tokens`.
pub const MAX_TOKENS_LIMIT: u32 = 1000;

/// One channel's (here: one edge's) retry throttle, as in gRFC A6.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryThrottle {
    max_milli: u32,
    ratio_milli: u32,
    tokens_milli: u32,
}

impl Default for RetryThrottle {
    /// `max_tokens` 10, `token_ratio` 0.1: the numbers of A6's example and
    /// of the `grpc` preset.
    fn default() -> RetryThrottle {
        RetryThrottle::new(
            RetryThrottle::DEFAULT_MAX_TOKENS,
            RetryThrottle::DEFAULT_TOKEN_RATIO,
        )
    }
}

impl RetryThrottle {
    /// The `grpc` preset's `max_tokens`.
    pub const DEFAULT_MAX_TOKENS: u32 = 10;
    /// The `grpc` preset's `token_ratio`.
    pub const DEFAULT_TOKEN_RATIO: f64 = 0.1;

    /// A full bucket of `max_tokens` earning `token_ratio` per success.
    ///
    /// `max_tokens` is clamped to `1..=1000` and `token_ratio` rounded to
    /// three decimal places (negative or not finite: 0), the ranges A6
    /// allows; rejecting bad input with a message is the topology's job.
    pub fn new(max_tokens: u32, token_ratio: f64) -> RetryThrottle {
        let max_milli = max_tokens.clamp(1, MAX_TOKENS_LIMIT) * MILLI;
        let ratio_milli = if token_ratio.is_finite() && token_ratio > 0.0 {
            (token_ratio * f64::from(MILLI))
                .round()
                .min(f64::from(max_milli)) as u32
        } else {
            0
        };
        RetryThrottle {
            max_milli,
            ratio_milli,
            tokens_milli: max_milli,
        }
    }

    /// A retryable failure: spends one token (never below zero) and says
    /// whether *this* failure may be retried, i.e. whether the bucket still
    /// holds more than half of `max_tokens` after the spend. A failure is
    /// counted whether or not it is retried, as in gRPC.
    pub fn on_retryable_failure(&mut self) -> bool {
        self.tokens_milli = self.tokens_milli.saturating_sub(MILLI);
        self.retry_allowed()
    }

    /// A successful call: earns `token_ratio` (never above `max_tokens`).
    pub fn on_success(&mut self) {
        self.tokens_milli = (self.tokens_milli + self.ratio_milli).min(self.max_milli);
    }

    /// Whether the bucket is above the threshold (`tokens > max_tokens / 2`)
    /// right now. [`RetryThrottle::on_retryable_failure`] asks this after
    /// spending the failure's token.
    pub fn retry_allowed(&self) -> bool {
        self.tokens_milli > self.max_milli / 2
    }

    /// Tokens in the bucket, in milli-tokens (exact).
    pub fn milli_tokens(&self) -> u32 {
        self.tokens_milli
    }

    /// Tokens in the bucket (for display).
    pub fn tokens(&self) -> f64 {
        f64::from(self.tokens_milli) / f64::from(MILLI)
    }

    /// The bucket's size in tokens.
    pub fn max_tokens(&self) -> u32 {
        self.max_milli / MILLI
    }

    /// The ratio earned per success, as stored (three decimal places).
    pub fn token_ratio(&self) -> f64 {
        f64::from(self.ratio_milli) / f64::from(MILLI)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_full_bucket_stops_retrying_at_the_fifth_consecutive_failure() {
        let mut b = RetryThrottle::default();
        let verdicts: Vec<bool> = (0..8).map(|_| b.on_retryable_failure()).collect();
        assert_eq!(
            verdicts,
            [true, true, true, true, false, false, false, false]
        );
        assert_eq!(b.milli_tokens(), 2000);
    }

    #[test]
    fn eleven_successes_bring_retries_back_after_they_stopped() {
        let mut b = RetryThrottle::default();
        for _ in 0..5 {
            b.on_retryable_failure();
        }
        assert_eq!(b.milli_tokens(), 5000);
        assert!(!b.retry_allowed());
        // One success lifts the bucket above the threshold...
        b.on_success();
        assert!(b.retry_allowed());
        // ...but a failure then spends a whole token: 10 successes are not enough.
        let mut probe = b.clone();
        for _ in 0..9 {
            probe.on_success();
        }
        assert_eq!(probe.milli_tokens(), 6000);
        assert!(!probe.on_retryable_failure());
        // The eleventh makes 6.1, and 6.1 − 1 = 5.1 > 5.
        for _ in 0..10 {
            b.on_success();
        }
        assert_eq!(b.milli_tokens(), 6100);
        assert!(b.on_retryable_failure());
        assert_eq!(b.milli_tokens(), 5100);
    }

    #[test]
    fn an_empty_bucket_floors_at_zero_and_needs_61_successes() {
        let mut b = RetryThrottle::default();
        for _ in 0..25 {
            b.on_retryable_failure();
        }
        assert_eq!(b.milli_tokens(), 0);
        for _ in 0..60 {
            b.on_success();
        }
        assert_eq!(b.milli_tokens(), 6000); // sixty tenths are six tokens, exactly
        assert!(!b.clone().on_retryable_failure());
        b.on_success();
        assert!(b.on_retryable_failure());
    }

    #[test]
    fn successes_cap_at_max_tokens() {
        let mut b = RetryThrottle::default();
        b.on_retryable_failure();
        for _ in 0..1000 {
            b.on_success();
        }
        assert_eq!(b.milli_tokens(), 10_000);
        assert_eq!(b.tokens(), 10.0);
    }

    #[test]
    fn construction_clamps_to_a6_ranges() {
        assert_eq!(RetryThrottle::new(0, 0.1).max_tokens(), 1);
        assert_eq!(RetryThrottle::new(5000, 0.1).max_tokens(), 1000);
        assert_eq!(RetryThrottle::new(10, 0.57).token_ratio(), 0.57);
        assert_eq!(RetryThrottle::new(10, 0.1234).token_ratio(), 0.123);
        assert_eq!(RetryThrottle::new(10, -1.0).token_ratio(), 0.0);
        assert_eq!(RetryThrottle::new(10, f64::NAN).token_ratio(), 0.0);
    }

    #[derive(Debug, Clone, Copy)]
    enum Outcome {
        Success,
        Failure,
    }

    fn outcome() -> impl Strategy<Value = Outcome> {
        prop_oneof![Just(Outcome::Success), Just(Outcome::Failure)]
    }

    proptest! {
        /// From a full bucket of `max`, consecutive failures are retried
        /// exactly while `max − k > max/2`: the first ⌈max/2⌉ − 1 of them.
        #[test]
        fn consecutive_failures_from_full(max in 1u32..=1000, ratio_milli in 0u32..=1000) {
            let mut b = RetryThrottle::new(max, f64::from(ratio_milli) / 1000.0);
            let mut retried = 0u32;
            while b.on_retryable_failure() {
                retried += 1;
            }
            prop_assert_eq!(retried, max.div_ceil(2) - 1);
        }

        /// Over any run the bucket stays within [0, max], and the retries it
        /// grants never exceed what A6's arithmetic allows: each spends a
        /// whole token and must leave more than max/2, so
        /// 1000·retries < 1000·max/2 + ratio_milli·successes.
        #[test]
        fn retries_are_bounded_by_half_the_bucket_plus_earnings(
            max in 1u32..=50,
            ratio_milli in 0u32..=1000,
            run in proptest::collection::vec(outcome(), 0..400),
        ) {
            let mut b = RetryThrottle::new(max, f64::from(ratio_milli) / 1000.0);
            let (mut successes, mut retries) = (0u64, 0u64);
            for o in run {
                match o {
                    Outcome::Success => {
                        b.on_success();
                        successes += 1;
                    }
                    Outcome::Failure => {
                        let before = b.milli_tokens();
                        let allowed = b.on_retryable_failure();
                        prop_assert_eq!(b.milli_tokens(), before.saturating_sub(1000));
                        prop_assert_eq!(allowed, 2 * u64::from(b.milli_tokens()) > u64::from(max) * 1000);
                        if allowed {
                            retries += 1;
                        }
                    }
                }
                prop_assert!(b.milli_tokens() <= max * 1000);
                if retries > 0 {
                    prop_assert!(
                        2000 * retries < u64::from(max) * 1000 + 2 * u64::from(ratio_milli) * successes,
                        "{} retries from {} successes", retries, successes
                    );
                }
            }
        }
    }
}
