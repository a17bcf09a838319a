//! Netflix concurrency-limits' two classic limit algorithms, AIMD and
//! Vegas: like Envoy's [`gradient`](super::gradient) controller, a
//! service limits the requests it serves at once and learns the limit
//! from what each request's latency says, one sample at a time.
//!
//! # AIMD ([`Aimd`], `AIMDLimit`)
//!
//! Additive increase, multiplicative decrease, as TCP does: a drop (a
//! request shed, failed for want of capacity, or slower than `timeout`)
//! multiplies the limit by `backoff` (0.9); otherwise, when the limit is in
//! use (at least half of it in flight), it grows by one. Bounded to
//! [`min`, `max`] (20 and 200).
//!
//! # Vegas ([`Vegas`], `VegasLimit`)
//!
//! TCP Vegas' delay-based estimate: the lowest latency seen is the latency
//! with no queue (`rtt_noload`), and a sample's latency `rtt` says how many
//! requests wait: `queue = ⌈limit × (1 − rtt_noload / rtt)⌉`. With
//! `log = max(1, ⌊log10 limit⌋)`: a drop decreases the limit by `log`; a
//! limit not in use (under half of it in flight) stays; a queue of at most
//! `log` adds `6·log` (no queueing: grow fast), under `3·log` adds `log`,
//! over `6·log` takes `log` away, and in between the limit stays. A sample
//! lower than `rtt_noload` only lowers it. Every `probe × limit` samples
//! `rtt_noload` is taken afresh from the sample, so a service that got
//! slower for good is not held to a minimum it no longer has.
//!
//! Both are pure; the caller feeds each request's latency, what was in
//! flight when it started, and whether it was dropped.
//!
//! ```
//! use std::time::Duration;
//! use error_ownership::limiter::{Aimd, Vegas};
//!
//! let ms = Duration::from_millis;
//! let mut a = Aimd::default();
//! a.sample(ms(5), 20, false);
//! assert_eq!(a.limit(), 21);
//! a.sample(ms(5), 20, true);
//! assert_eq!(a.limit(), 20); // 21 × 0.9 = 18.9, held at the minimum
//!
//! let mut v = Vegas::default();
//! v.sample(ms(10), 20, false); // the first sample sets rtt_noload
//! v.sample(ms(10), 20, false); // no queue: 20 + 6 × ⌊log10 20⌋
//! assert_eq!(v.limit(), 26);
//! ```

use std::time::Duration;

/// Netflix's `AIMDLimit`.
#[derive(Debug, Clone)]
pub struct Aimd {
    limit: u32,
    /// The floor (`minLimit`).
    pub min: u32,
    /// The ceiling (`maxLimit`).
    pub max: u32,
    /// What a drop multiplies the limit by (`backoffRatio`, 0.5..1).
    pub backoff: f64,
    /// A sample slower than this counts as a drop.
    pub timeout: Duration,
}

impl Default for Aimd {
    /// Netflix's defaults: from 20, within [20, 200], × 0.9 on a drop, a
    /// 5 s timeout.
    fn default() -> Aimd {
        Aimd {
            limit: 20,
            min: 20,
            max: 200,
            backoff: 0.9,
            timeout: Duration::from_secs(5),
        }
    }
}

impl Aimd {
    /// Requests that may be served at once.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// A request took `rtt` with `in_flight` requests in flight when it
    /// started; `dropped` if it was shed or failed for want of capacity.
    pub fn sample(&mut self, rtt: Duration, in_flight: u32, dropped: bool) {
        let mut limit = self.limit;
        if dropped || rtt > self.timeout {
            limit = (f64::from(limit) * self.backoff) as u32;
        } else if u64::from(in_flight) * 2 >= u64::from(limit) {
            limit = limit.saturating_add(1);
        }
        self.limit = limit.max(self.min).min(self.max.max(self.min));
    }
}

/// Netflix's `VegasLimit`.
#[derive(Debug, Clone)]
pub struct Vegas {
    limit: f64,
    rtt_noload: Option<Duration>,
    samples: u64,
    /// The ceiling (`maxConcurrency`).
    pub max: u32,
    /// How far a new limit moves the old one (0..=1; 1: all the way).
    pub smoothing: f64,
    /// `rtt_noload` is sampled afresh every `probe × limit` samples
    /// (`probeMultiplier`; Netflix also draws a jitter of 0.5..1 on it).
    pub probe: u32,
}

impl Default for Vegas {
    /// Netflix's defaults: from 20, at most 1,000, no smoothing, a probe
    /// every 30 × limit samples.
    fn default() -> Vegas {
        Vegas {
            limit: 20.0,
            rtt_noload: None,
            samples: 0,
            max: 1000,
            smoothing: 1.0,
            probe: 30,
        }
    }
}

/// `max(1, ⌊log10 limit⌋)`: Netflix's `Log10RootFunction`.
fn log10(limit: f64) -> f64 {
    limit.log10().floor().max(1.0)
}

impl Vegas {
    /// Requests that may be served at once.
    pub fn limit(&self) -> u32 {
        self.limit as u32
    }

    /// The latency with no queue, as last estimated.
    pub fn rtt_noload(&self) -> Option<Duration> {
        self.rtt_noload
    }

    /// A request took `rtt` with `in_flight` requests in flight when it
    /// started; `dropped` if it was shed or failed for want of capacity.
    pub fn sample(&mut self, rtt: Duration, in_flight: u32, dropped: bool) {
        self.samples += 1;
        let probe_after = f64::from(self.probe.max(1)) * self.limit;
        if self.samples as f64 >= probe_after {
            self.samples = 0;
            self.rtt_noload = Some(rtt);
            return;
        }
        let noload = match self.rtt_noload {
            Some(n) if rtt >= n && !rtt.is_zero() => n,
            _ => {
                self.rtt_noload = Some(rtt);
                return;
            }
        };
        let limit = self.limit;
        let log = log10(limit);
        let queue = (limit * (1.0 - noload.as_secs_f64() / rtt.as_secs_f64())).ceil();
        let next = if dropped {
            limit - log
        } else if f64::from(in_flight) * 2.0 < limit {
            return;
        } else if queue <= log {
            limit + 6.0 * log
        } else if queue < 3.0 * log {
            limit + log
        } else if queue > 6.0 * log {
            limit - log
        } else {
            return;
        };
        let next = next.clamp(1.0, f64::from(self.max.max(1)));
        let s = self.smoothing.clamp(0.0, 1.0);
        self.limit = (1.0 - s) * limit + s * next;
    }
}

#[cfg(test)]
mod tests;
