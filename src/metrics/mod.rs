//! What the fleet measures: counters fed by the middleware, the storm
//! radius, and a fixed-size series of samples the dashboard and reports
//! read rates from.

pub mod counters;
pub mod storm;

use std::collections::VecDeque;
use std::time::Duration;

pub use counters::{Counts, EdgeCounts, Metrics, RootCounts, ServiceCounts};
pub use storm::RadiusStats;

/// One sample: every counter at time `t`, and what happened in the
/// interval that ended at `t`.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Time since the run started.
    pub t: Duration,
    /// Cumulative counters.
    pub counts: Counts,
    /// Storm radius over roots that completed in the interval.
    pub radius: RadiusStats,
    /// Root latency p50 and p99 over the interval, in ms (0 when none).
    pub latency_ms: (f64, f64),
}

/// A ring of samples with a fixed capacity: a long run keeps a fixed
/// memory, forgetting its oldest samples.
#[derive(Debug)]
pub struct Series {
    cap: usize,
    samples: VecDeque<Sample>,
}

impl Series {
    /// A series holding at most `cap` samples (at least 2).
    pub fn new(cap: usize) -> Series {
        let cap = cap.max(2);
        Series {
            cap,
            samples: VecDeque::with_capacity(cap),
        }
    }

    /// A capacity that keeps the series near `bytes` for a fleet of this
    /// many services and edges, between 120 and `max` samples.
    pub fn capacity_for(services: usize, edges: usize, bytes: usize, max: usize) -> usize {
        let per = (services * std::mem::size_of::<ServiceCounts>()
            + edges * std::mem::size_of::<EdgeCounts>()
            + 128)
            .max(1);
        (bytes / per).clamp(120, max.max(120))
    }

    /// Adds a sample, dropping the oldest when full.
    pub fn push(&mut self, s: Sample) {
        if self.samples.len() == self.cap {
            self.samples.pop_front();
        }
        self.samples.push_back(s);
    }

    /// The newest sample.
    pub fn latest(&self) -> Option<&Sample> {
        self.samples.back()
    }

    /// The newest sample taken at or before `t`.
    pub fn at_or_before(&self, t: Duration) -> Option<&Sample> {
        self.samples.iter().rev().find(|s| s.t <= t)
    }

    /// The oldest sample taken at or after `t`.
    pub fn at_or_after(&self, t: Duration) -> Option<&Sample> {
        self.samples.iter().find(|s| s.t >= t)
    }

    /// Samples with `from < t <= to`.
    pub fn between(&self, from: Duration, to: Duration) -> impl Iterator<Item = &Sample> {
        self.samples.iter().filter(move |s| s.t > from && s.t <= to)
    }

    /// Every sample, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Sample> {
        self.samples.iter()
    }

    /// How many samples are held.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether no sample is held.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// Forgets every sample.
    pub fn clear(&mut self) {
        self.samples.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t: u64) -> Sample {
        Sample {
            t: Duration::from_secs(t),
            counts: Counts::default(),
            radius: RadiusStats::default(),
            latency_ms: (0.0, 0.0),
        }
    }

    #[test]
    fn ring_is_bounded() {
        let mut s = Series::new(3);
        for t in 0..10 {
            s.push(sample(t));
        }
        assert_eq!(s.len(), 3);
        assert_eq!(s.iter().next().unwrap().t, Duration::from_secs(7));
        assert_eq!(
            s.at_or_before(Duration::from_millis(8500))
                .unwrap()
                .t
                .as_secs(),
            8
        );
        assert_eq!(
            s.at_or_after(Duration::from_millis(8500))
                .unwrap()
                .t
                .as_secs(),
            9
        );
        assert_eq!(
            s.between(Duration::from_secs(7), Duration::from_secs(9))
                .count(),
            2
        );
    }

    #[test]
    fn capacity_shrinks_for_big_fleets() {
        let small = Series::capacity_for(7, 6, 8 << 20, 14_400);
        let big = Series::capacity_for(1000, 2000, 8 << 20, 14_400);
        assert_eq!(small, 14_400);
        assert!(big < small && big >= 120);
    }
}
