//! The retry counter in the request, as Google's SRE book describes it
//! ("Handling Overload", "Deciding to Retry"): every attempt says how many
//! times its call was tried before, and a backend that must reject a
//! request reads its recent history of those counts to decide whether its
//! callers may retry.
//!
//! # Why a counter
//!
//! A backend that rejects a request for want of capacity answers either
//! "task overloaded", which its caller may retry on another task, or
//! "overloaded; don't retry". The SRE book's backends keep a histogram of
//! the attempt numbers they received recently: when many of them are
//! retries, the overload is not one task's but everyone's, and retrying
//! elsewhere only adds load, so the backend says "don't retry". Together
//! with the rule that a service whose own call failed after its retries
//! answers "don't retry" too, only the layer right above the overloaded one
//! retries: ownership's idea, reached from the other end.
//!
//! The attempt number travels in [`RETRY_ATTEMPT_HEADER`]: `0` on a first
//! attempt, `1` on the first retry, and so on. [`RetryHistogram`] keeps the
//! counts of first attempts, first retries and later retries over a
//! window, in fixed memory, with the clock passed in. The SRE book gives no
//! number for "many"; [`DEFAULT_RETRY_SHARE`] is the per-client retry
//! budget's 10%: past it, more retries arrive than the budgets mean to
//! allow.
//!
//! ```
//! use std::time::Duration;
//! use error_ownership::retry_counter::{read_attempt, Rejection, RetryHistogram};
//!
//! let s = Duration::from_secs;
//! let mut h = RetryHistogram::new(s(60));
//! for i in 0..90 {
//!     h.observe(s(i % 60), read_attempt(Some(b"0")).unwrap());
//! }
//! for i in 0..10 {
//!     h.observe(s(i), read_attempt(Some(b"1")).unwrap());
//! }
//! assert_eq!(h.retry_share(s(59)), 0.1);
//! assert_eq!(h.rejection(s(59), 0.1), Rejection::Overloaded);
//! h.observe(s(59), 2);
//! assert_eq!(h.rejection(s(59), 0.1), Rejection::OverloadedDontRetry);
//! ```

use std::time::Duration;

use crate::window::Window;

/// The request header that carries the attempt number.
pub const RETRY_ATTEMPT_HEADER: &str = "x-retry-attempt";

/// The share of retries among recent requests above which a rejection
/// says "don't retry".
pub const DEFAULT_RETRY_SHARE: f64 = 0.1;

/// Reads [`RETRY_ATTEMPT_HEADER`]: one to three ASCII digits, surrounding
/// whitespace allowed, as HTTP trims. Anything else (missing, empty, signs,
/// more digits than any retry policy allows) is `None`: the request is read
/// as a first attempt by whoever counts it.
pub fn read_attempt(value: Option<&[u8]>) -> Option<u32> {
    let v = value?.trim_ascii();
    if v.is_empty() || v.len() > 3 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(v.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
}

/// What a backend that must reject a request answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// "Task overloaded": the caller may retry (on another task).
    Overloaded,
    /// "Overloaded; don't retry": many recent requests were retries
    /// already.
    OverloadedDontRetry,
}

/// A backend's recent attempt numbers: first attempts, first retries and
/// later retries over a window.
#[derive(Debug, Clone)]
pub struct RetryHistogram {
    window: Window<3>,
}

impl RetryHistogram {
    /// An empty histogram over `window`.
    pub fn new(window: Duration) -> RetryHistogram {
        RetryHistogram {
            window: Window::new(window),
        }
    }

    /// A request numbered `attempt` (0 for a first attempt) arrived at
    /// `now`.
    pub fn observe(&mut self, now: Duration, attempt: u32) {
        self.window.add(now, attempt.min(2) as usize);
    }

    /// `[first attempts, first retries, later retries]` over the window at
    /// `now`.
    pub fn counts(&mut self, now: Duration) -> [u64; 3] {
        self.window.totals(now)
    }

    /// The share of the window's requests that were retries (0 when none
    /// arrived).
    pub fn retry_share(&mut self, now: Duration) -> f64 {
        let [first, retry, later] = self.counts(now);
        let all = first + retry + later;
        if all == 0 {
            0.0
        } else {
            (retry + later) as f64 / all as f64
        }
    }

    /// What a rejection at `now` says: "don't retry" when the retries'
    /// share of the window is above `threshold`.
    pub fn rejection(&mut self, now: Duration, threshold: f64) -> Rejection {
        if self.retry_share(now) > threshold {
            Rejection::OverloadedDontRetry
        } else {
            Rejection::Overloaded
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn attempts_read_as_digits_and_nothing_else() {
        assert_eq!(read_attempt(Some(b"0")), Some(0));
        assert_eq!(read_attempt(Some(b" 2 ")), Some(2));
        assert_eq!(read_attempt(Some(b"999")), Some(999));
        for bad in [
            &b""[..],
            b"-1",
            b"+1",
            b"1.0",
            b"1000",
            b"one",
            b"0x1",
            b" ",
        ] {
            assert_eq!(
                read_attempt(Some(bad)),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(read_attempt(None), None);
    }

    #[test]
    fn the_window_forgets_old_retries() {
        let s = Duration::from_secs;
        let mut h = RetryHistogram::new(s(64));
        for _ in 0..50 {
            h.observe(s(0), 1);
        }
        h.observe(s(10), 0);
        assert_eq!(h.counts(s(10)), [1, 50, 0]);
        assert_eq!(
            h.rejection(s(10), DEFAULT_RETRY_SHARE),
            Rejection::OverloadedDontRetry
        );
        // A minute on, the retries of second 0 have left the window.
        assert_eq!(h.counts(s(64)), [1, 0, 0]);
        assert_eq!(
            h.rejection(s(64), DEFAULT_RETRY_SHARE),
            Rejection::Overloaded
        );
        assert_eq!(h.counts(s(1_000)), [0, 0, 0]);
        assert_eq!(h.retry_share(s(1_000)), 0.0);
    }

    proptest! {
        /// Any header bytes: no panic, and a number only from up to three
        /// digits.
        #[test]
        fn any_bytes_read_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..8)) {
            let trimmed = bytes.trim_ascii();
            let digits = (1..=3).contains(&trimmed.len()) && trimmed.iter().all(u8::is_ascii_digit);
            match read_attempt(Some(&bytes)) {
                Some(n) => {
                    prop_assert!(digits);
                    prop_assert_eq!(Some(n), std::str::from_utf8(trimmed).unwrap().parse().ok());
                }
                None => prop_assert!(!digits),
            }
        }

        /// Within one window the counts are exactly what was observed, and
        /// the rejection says "don't retry" exactly above the threshold.
        #[test]
        fn counts_and_the_threshold(attempts in proptest::collection::vec(0u32..6, 0..300), threshold in 0.0f64..1.0) {
            let mut h = RetryHistogram::new(Duration::from_secs(60));
            let mut want = [0u64; 3];
            for (i, a) in attempts.iter().enumerate() {
                h.observe(Duration::from_millis(i as u64), *a);
                want[(*a).min(2) as usize] += 1;
            }
            let now = Duration::from_millis(attempts.len() as u64);
            prop_assert_eq!(h.counts(now), want);
            let all = want.iter().sum::<u64>();
            let share = if all == 0 { 0.0 } else { (want[1] + want[2]) as f64 / all as f64 };
            let dont = h.rejection(now, threshold) == Rejection::OverloadedDontRetry;
            prop_assert_eq!(dont, share > threshold);
        }
    }
}
