//! Backoff between attempts: exponential with full jitter.
//!
//! Full jitter (a uniform delay between zero and `base × 2^retry`, capped)
//! spreads retries out so that a fleet of callers that failed together does
//! not retry together. A zero base means no delay at all, which the lab uses
//! by default so the seed's arithmetic is not blurred by time.

use std::time::Duration;

/// The largest delay any retry waits, whatever the base and retry number.
pub const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// The upper bound of the jitter window before the `retry`-th retry
/// (1-based): `base × 2^(retry-1)`, capped at [`MAX_BACKOFF`].
pub fn ceiling(base: Duration, retry: u32) -> Duration {
    let factor = 1u32 << retry.saturating_sub(1).min(16);
    base.saturating_mul(factor).min(MAX_BACKOFF)
}

/// The delay before the `retry`-th retry, given a uniform sample `u` in
/// `[0, 1)` (the caller owns the random source, so this stays pure).
pub fn delay(base: Duration, retry: u32, u: f64) -> Duration {
    if base.is_zero() {
        return Duration::ZERO;
    }
    ceiling(base, retry).mul_f64(u.clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn zero_base_is_no_delay() {
        assert_eq!(delay(Duration::ZERO, 3, 0.9), Duration::ZERO);
    }

    #[test]
    fn doubles_per_retry() {
        let b = Duration::from_millis(10);
        assert_eq!(ceiling(b, 1), Duration::from_millis(10));
        assert_eq!(ceiling(b, 2), Duration::from_millis(20));
        assert_eq!(ceiling(b, 3), Duration::from_millis(40));
        assert_eq!(ceiling(b, 40), MAX_BACKOFF);
    }

    proptest! {
        #[test]
        fn jitter_stays_in_window(ms in 0u64..5_000, retry in 1u32..20, u in 0.0f64..1.0) {
            let base = Duration::from_millis(ms);
            let d = delay(base, retry, u);
            prop_assert!(d <= ceiling(base, retry));
            prop_assert!(d <= MAX_BACKOFF);
        }
    }
}
