//! Client-side adaptive throttling, as Google's SRE book describes it
//! ("Handling Overload", chapter 21): a client that sees its backend
//! reject requests starts rejecting some of them itself, before they are
//! sent.
//!
//! # Why a throttle
//!
//! A retry budget caps the retries a client adds; it does nothing about the
//! first attempts. When a backend is out of capacity, even first attempts
//! it can only reject still cost it the work of rejecting them, and every
//! layer above retries them. The SRE book's client keeps two counts over
//! the last two minutes: `requests`, what the application asked it to send,
//! and `accepts`, what the backend accepted. While the backend accepts at
//! least one request in K the client sends everything; past that it
//! rejects each new request locally with probability
//!
//! ```text
//! max(0, (requests − K · accepts) / (requests + 1))
//! ```
//!
//! so the backend receives about K × accepts. With K = 2 (the book's
//! value) a backend that accepts nothing sees the probability approach 1:
//! of n requests in a window the client sends about ln n (the harmonic
//! sum of 1 / (i + 1)), a handful a window however high the rate, and each
//! one it accepts again lowers the probability for the next. A request the
//! client rejects is the client's own error: it never reached the backend,
//! so the caller running ownership claims it.
//!
//! # The two mistakes
//!
//! go-zero's issue #5011 describes the two ways an implementation of this
//! formula goes wrong, and this one avoids both: a request is counted when
//! it is *asked for* ([`AdaptiveThrottle::try_pass`], rejected or not), not
//! when its answer comes back, so a slow backend cannot make the window
//! hold more accepts than requests; and the window must be longer than the
//! calls' latency, or the accepts of the requests sent in one window land
//! in the next (chaoslab refuses a window shorter than a tick).
//!
//! The window is kept in [`BUCKETS`] buckets of counts, so the memory is
//! fixed whatever the rate. The clock and the random number are passed in.
//!
//! ```
//! use std::time::Duration;
//! use error_ownership::throttle::{AdaptiveThrottle, ThrottleConfig};
//!
//! let ms = Duration::from_millis;
//! let mut t = AdaptiveThrottle::new(ThrottleConfig::SRE);
//! // A healthy backend: every request is accepted, none rejected locally.
//! for i in 0..100 {
//!     assert!(t.try_pass(ms(i), 0.0));
//!     t.record(ms(i), true);
//! }
//! // It starts rejecting everything. Up to 2 × 100 requests the client
//! // still sends all; past that it rejects some locally.
//! for i in 100..400 {
//!     if t.try_pass(ms(i), 0.999) {
//!         t.record(ms(i), false);
//!     }
//! }
//! assert_eq!(t.counts(ms(400)), (400, 100));
//! assert_eq!(t.rejection_probability(ms(400)), (400.0 - 2.0 * 100.0) / 401.0);
//! // Two minutes on, the window has forgotten both.
//! assert_eq!(t.rejection_probability(Duration::from_secs(121)), 0.0);
//! ```

use std::time::Duration;

use crate::window::Window;
pub use crate::window::BUCKETS;

/// A throttle's numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThrottleConfig {
    /// K: how many requests the client sends per accepted one before it
    /// starts rejecting (the book's 2: more lets more through to a
    /// struggling backend, 1 rejects as soon as one request fails). Must be
    /// above 0.
    pub k: f64,
    /// How far back `requests` and `accepts` are counted.
    pub window: Duration,
}

impl ThrottleConfig {
    /// The SRE book's numbers: K = 2 over two minutes.
    pub const SRE: ThrottleConfig = ThrottleConfig {
        k: 2.0,
        window: Duration::from_secs(120),
    };
}

// The counters of a throttle's window.
const REQUESTS: usize = 0;
const ACCEPTS: usize = 1;

/// One client's throttle towards one backend: the counts of the last
/// window, and the rejection probability they give.
#[derive(Debug, Clone)]
pub struct AdaptiveThrottle {
    config: ThrottleConfig,
    window: Window<2>,
}

impl AdaptiveThrottle {
    /// An empty throttle: nothing counted, nothing rejected.
    pub fn new(config: ThrottleConfig) -> AdaptiveThrottle {
        AdaptiveThrottle {
            config,
            window: Window::new(config.window),
        }
    }

    /// The throttle's numbers.
    pub fn config(&self) -> ThrottleConfig {
        self.config
    }

    /// The probability that the next request is rejected locally at `now`:
    /// max(0, (requests − K · accepts) / (requests + 1)).
    pub fn rejection_probability(&mut self, now: Duration) -> f64 {
        let [requests, accepts] = self.window.totals(now).map(|c| c as f64);
        ((requests - self.config.k * accepts) / (requests + 1.0)).max(0.0)
    }

    /// Asks to send a request at `now`; `u` is a uniform random number in
    /// [0, 1). Counts the request whatever the answer (rejected requests
    /// count too: that is what lets the probability climb), and says
    /// whether it may be sent. A rejected request is the client's own
    /// error.
    pub fn try_pass(&mut self, now: Duration, u: f64) -> bool {
        let p = self.rejection_probability(now);
        self.window.add(now, REQUESTS);
        u >= p
    }

    /// Records the answer to a request that was sent: `accepted` unless the
    /// backend rejected it (an error, or no answer).
    pub fn record(&mut self, now: Duration, accepted: bool) {
        if accepted {
            self.window.add(now, ACCEPTS);
        }
    }

    /// `(requests, accepts)` over the window at `now`.
    pub fn counts(&mut self, now: Duration) -> (u64, u64) {
        let [requests, accepts] = self.window.totals(now);
        (requests, accepts)
    }
}

#[cfg(test)]
mod tests;
