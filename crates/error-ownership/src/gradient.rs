//! Server-side adaptive concurrency, as Envoy's adaptive concurrency filter
//! computes it (its *gradient controller*): a service limits the requests
//! it serves at once, and moves the limit by how its latency compares with
//! the latency it has when it is not queueing.
//!
//! # Why a concurrency limit
//!
//! Retry budgets and ownership decide what callers send; a service that
//! cannot keep up still queues what arrives, and a queued request that
//! times out upstream has cost work for nothing. A concurrency limit sheds
//! the excess at once instead (chaoslab answers it with a claimed 503:
//! the shedding service owns that error). A fixed limit is wrong as soon as
//! the service's speed changes, so Envoy measures it:
//!
//! * **minRTT**: the latency with no queue. Every `min_rtt_interval` the
//!   limit is pinned to `min_concurrency` until `min_rtt_requests`
//!   requests have been sampled, and their `percentile` latency becomes
//!   minRTT.
//! * **sampleRTT**: between those, the `percentile` latency of each
//!   `interval` (Envoy's `concurrency_update_interval`, 100 ms).
//! * each interval, `gradient = (minRTT + B) / sampleRTT`, clamped to
//!   [0.5, 2], with the buffer B = `buffer` × minRTT (25%), and
//!
//!   ```text
//!   limit = gradient × limit + √(gradient × limit)
//!   ```
//!
//!   clamped to [`min_concurrency`, `max_limit`]. Latency above
//!   minRTT + B makes the gradient below 1 and the limit falls (once the
//!   limit is large enough for the headroom √ not to outweigh the cut);
//!   latency at or under it lets the limit grow by at least √limit.
//!
//! Samples are kept up to [`MAX_SAMPLES`] per interval (the rest of an
//! interval is not sampled), so the memory is fixed whatever the rate. The
//! clock is passed in. Envoy also delays each minRTT measurement by a
//! random jitter (10% of its interval); a caller may vary
//! `min_rtt_interval` for that.
//!
//! [`min_concurrency`]: GradientConfig::min_concurrency
//! [`max_limit`]: GradientConfig::max_limit
//!
//! ```
//! use std::time::Duration;
//! use error_ownership::gradient::{GradientConfig, GradientLimit};
//!
//! let ms = Duration::from_millis;
//! let mut g = GradientLimit::new(GradientConfig::ENVOY);
//! // minRTT first: the limit is pinned while 50 requests are sampled.
//! for _ in 0..50 {
//!     assert_eq!(g.limit(), 3);
//!     g.sample(ms(10), ms(10)); // each started at 0
//! }
//! assert_eq!(g.min_rtt(), Some(ms(10)));
//! // An interval at minRTT: the gradient is (10 + 2.5) / 10 = 1.25.
//! g.sample(ms(50), ms(10));
//! g.update(ms(100));
//! assert_eq!(g.limit(), (1.25f64 * 3.0 + (1.25f64 * 3.0).sqrt()) as u32); // 5
//! ```

use std::time::Duration;

/// Latency samples kept per interval.
pub const MAX_SAMPLES: usize = 4096;

/// The controller's numbers: Envoy's `gradient_controller_config`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GradientConfig {
    /// How often the limit is recomputed (`concurrency_update_interval`).
    pub interval: Duration,
    /// Which latency percentile of a window is read (0..=1; Envoy's 50%).
    pub percentile: f64,
    /// B as a share of minRTT (`min_rtt_calc_params.buffer`, 25%).
    pub buffer: f64,
    /// How often minRTT is measured again (`min_rtt_calc_params.interval`).
    pub min_rtt_interval: Duration,
    /// Requests sampled for minRTT (`min_rtt_calc_params.request_count`).
    pub min_rtt_requests: u32,
    /// The limit while minRTT is measured, and its floor
    /// (`min_rtt_calc_params.min_concurrency`).
    pub min_concurrency: u32,
    /// The limit's ceiling (`max_concurrency_limit`).
    pub max_limit: u32,
}

impl GradientConfig {
    /// Envoy's defaults.
    pub const ENVOY: GradientConfig = GradientConfig {
        interval: Duration::from_millis(100),
        percentile: 0.5,
        buffer: 0.25,
        min_rtt_interval: Duration::from_secs(60),
        min_rtt_requests: 50,
        min_concurrency: 3,
        max_limit: 1000,
    };
}

/// One service's live limit.
#[derive(Debug, Clone)]
pub struct GradientLimit {
    config: GradientConfig,
    /// The limit while running (kept while minRTT is measured).
    limit: u32,
    min_rtt: Option<Duration>,
    /// Measuring minRTT (the limit pinned) or, when false, running.
    measuring: bool,
    /// When the current minRTT measurement started: requests started
    /// before it are not sampled.
    epoch: Duration,
    /// When minRTT is measured next.
    next_min_rtt: Duration,
    /// Intervals in a row that set the limit to `min_concurrency`.
    at_floor: u32,
    samples: Vec<Duration>,
}

impl GradientLimit {
    /// A controller that starts by measuring minRTT, at `min_concurrency`.
    pub fn new(config: GradientConfig) -> GradientLimit {
        GradientLimit {
            config,
            limit: config.min_concurrency.max(1),
            min_rtt: None,
            measuring: true,
            epoch: Duration::ZERO,
            next_min_rtt: Duration::ZERO,
            at_floor: 0,
            samples: Vec::new(),
        }
    }

    /// Requests that may be served at once now.
    pub fn limit(&self) -> u32 {
        if self.measuring {
            self.config.min_concurrency.max(1)
        } else {
            self.limit
        }
    }

    /// The latency with no queue, once measured.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// A request served at `now` took `latency`. One started before the
    /// current minRTT measurement began is not sampled (it may have
    /// queued). While minRTT is measured, the last of `min_rtt_requests`
    /// samples sets it and starts the limit moving again from where it was.
    pub fn sample(&mut self, now: Duration, latency: Duration) {
        if self.measuring
            && now
                .checked_sub(latency)
                .is_none_or(|start| start < self.epoch)
        {
            return;
        }
        if self.samples.len() < MAX_SAMPLES {
            self.samples.push(latency);
        }
        if self.measuring && self.samples.len() >= self.config.min_rtt_requests.max(1) as usize {
            self.min_rtt = self.percentile();
            self.samples.clear();
            self.measuring = false;
            self.next_min_rtt = now + self.config.min_rtt_interval;
        }
    }

    /// The end of an interval at `now`: the limit moves by the gradient of
    /// the interval's samples (none: it stays), and minRTT is measured
    /// again when its interval has passed, or after five intervals in a
    /// row that set the limit to `min_concurrency` (Envoy reads that as a
    /// minRTT measured wrong).
    pub fn update(&mut self, now: Duration) {
        if self.measuring {
            return;
        }
        if let (Some(min_rtt), Some(sample_rtt)) = (self.min_rtt, self.percentile()) {
            let next = self.next_limit(min_rtt, sample_rtt);
            let floor = self.config.min_concurrency.max(1);
            self.at_floor = if next == floor && self.limit == floor {
                self.at_floor + 1
            } else {
                0
            };
            self.limit = next;
        }
        self.samples.clear();
        if now >= self.next_min_rtt || self.at_floor >= 5 {
            self.measuring = true;
            self.epoch = now;
            self.at_floor = 0;
        }
    }

    /// `gradient × limit + √(gradient × limit)`, truncated to a whole
    /// number and clamped, with the gradient `(minRTT + B) / sampleRTT`
    /// clamped to [0.5, 2].
    pub fn next_limit(&self, min_rtt: Duration, sample_rtt: Duration) -> u32 {
        let min_rtt = min_rtt.as_secs_f64();
        let target = min_rtt + self.config.buffer * min_rtt;
        let gradient = (target / sample_rtt.as_secs_f64().max(1e-9)).clamp(0.5, 2.0);
        let limit = gradient * f64::from(self.limit);
        let floor = self.config.min_concurrency.max(1);
        ((limit + limit.sqrt()) as u32).clamp(floor, self.config.max_limit.max(floor))
    }

    fn percentile(&mut self) -> Option<Duration> {
        if self.samples.is_empty() {
            return None;
        }
        let p = self.config.percentile.clamp(0.0, 1.0);
        let i = ((self.samples.len() - 1) as f64 * p).round() as usize;
        Some(*self.samples.select_nth_unstable(i).1)
    }
}

#[cfg(test)]
mod tests;
