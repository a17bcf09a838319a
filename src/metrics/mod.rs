//! What the fleet measures: counters fed by the middleware, the storm
//! radius, and a fixed-size series of samples the dashboard and reports
//! read rates from.

pub mod counters;
pub mod storm;

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

/// A ring of samples with a fixed capacity and a fixed memory: the first
/// sample is copied into every slot, so the whole ring is allocated and
/// touched at the start, and later samples overwrite slots in place. A long
/// run keeps the same memory from its first second to its last, forgetting
/// its oldest samples.
#[derive(Debug)]
pub struct Series {
    cap: usize,
    buf: Vec<Sample>,
    /// Index of the oldest sample.
    head: usize,
    len: usize,
}

impl Series {
    /// A series holding at most `cap` samples (at least 2).
    pub fn new(cap: usize) -> Series {
        Series {
            cap: cap.max(2),
            buf: Vec::new(),
            head: 0,
            len: 0,
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

    /// Adds a sample, overwriting the oldest when full.
    pub fn push(&mut self, s: Sample) {
        if self.buf.is_empty() {
            self.buf = vec![s.clone(); self.cap];
        }
        let slot = (self.head + self.len) % self.cap;
        self.buf[slot].clone_from(&s);
        if self.len < self.cap {
            self.len += 1;
        } else {
            self.head = (self.head + 1) % self.cap;
        }
    }

    fn get(&self, i: usize) -> &Sample {
        &self.buf[(self.head + i) % self.cap]
    }

    /// The newest sample.
    pub fn latest(&self) -> Option<&Sample> {
        (self.len > 0).then(|| self.get(self.len - 1))
    }

    /// The newest sample taken at or before `t`.
    pub fn at_or_before(&self, t: Duration) -> Option<&Sample> {
        self.iter().rev().find(|s| s.t <= t)
    }

    /// The oldest sample taken at or after `t`.
    pub fn at_or_after(&self, t: Duration) -> Option<&Sample> {
        self.iter().find(|s| s.t >= t)
    }

    /// Samples with `from < t <= to`.
    pub fn between(&self, from: Duration, to: Duration) -> impl Iterator<Item = &Sample> {
        self.iter().filter(move |s| s.t > from && s.t <= to)
    }

    /// Every sample, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Sample> + ExactSizeIterator {
        (0..self.len).map(move |i| self.get(i))
    }

    /// How many samples are held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no sample is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Forgets every sample (the memory stays reserved).
    pub fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
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
    fn ring_memory_is_reserved_up_front() {
        let mut s = Series::new(4);
        s.push(sample(0));
        assert_eq!(s.buf.len(), 4, "every slot exists after the first push");
        for t in 1..20 {
            s.push(sample(t));
            assert_eq!(s.buf.len(), 4);
        }
        let ts: Vec<u64> = s.iter().map(|x| x.t.as_secs()).collect();
        assert_eq!(ts, vec![16, 17, 18, 19]);
        s.clear();
        assert!(s.is_empty() && s.latest().is_none());
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
        let per =
            7 * std::mem::size_of::<ServiceCounts>() + 6 * std::mem::size_of::<EdgeCounts>() + 128;
        let small = Series::capacity_for(7, 6, 16 << 20, 14_400);
        assert_eq!(small, ((16 << 20) / per).min(14_400));
        let big = Series::capacity_for(1000, 2000, 16 << 20, 14_400);
        assert!(big < small && big >= 120);
        assert_eq!(Series::capacity_for(7, 6, 16 << 20, 100), 120);
    }
}
