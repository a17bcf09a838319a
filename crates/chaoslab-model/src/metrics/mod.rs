//! What a run measured, as values: the counts a sample holds, latency
//! summaries, the storm radius, and a fixed-size series of samples the
//! dashboard and reports read rates from. The live counters that fill
//! them are the fleet's (`chaoslab_fleet::metrics`); a report, an
//! expectation or a frame only ever reads these.

pub mod counts;
pub mod journal;
pub mod latency;
pub mod storm;
pub mod tap;

use std::time::Duration;

pub use counts::{
    Counts, EdgeCounts, NodeRows, OutlierCounts, PerRootCounts, ReplicaCounts, RootCounts,
    ServiceCounts, WireCounts,
};
pub use storm::RadiusStats;

/// One sample: every counter at time `t`, and what happened in the
/// interval that ended at `t`.
#[derive(Debug)]
pub struct Sample {
    /// Time since the run started.
    pub t: Duration,
    /// Cumulative counters.
    pub counts: Counts,
    /// Storm radius over roots that completed in the interval.
    pub radius: RadiusStats,
    /// Root latency p50 and p99 over the interval, in ms (0 when none).
    pub latency_ms: (f64, f64),
    /// Root latency over the interval, bucketed, so a window of samples
    /// can compute its own percentiles.
    pub latency: LatencySummary,
}

impl Clone for Sample {
    fn clone(&self) -> Self {
        Sample {
            t: self.t,
            counts: self.counts.clone(),
            radius: self.radius,
            latency_ms: self.latency_ms,
            latency: self.latency.clone(),
        }
    }

    /// Field by field, reusing this sample's buffers: the ring overwrites
    /// its slots without allocating.
    fn clone_from(&mut self, src: &Self) {
        self.t = src.t;
        // Every field named: a field added to `Counts` is a compile error
        // here, not a count the ring silently drops.
        let Counts {
            services,
            edges,
            root,
            replicas,
            outliers,
            roots,
        } = &src.counts;
        self.counts.services.clone_from(services);
        self.counts.edges.clone_from(edges);
        self.counts.root = *root;
        self.counts.replicas.clone_from(replicas);
        self.counts.outliers.clone_from(outliers);
        self.counts.roots.clone_from(roots);
        self.radius = src.radius;
        self.latency_ms = src.latency_ms;
        self.latency.buckets.clone_from(&src.latency.buckets);
    }
}

/// Latency buckets reserved per ring slot: a tick rarely spreads its
/// requests over more distinct buckets than this.
const RESERVED_BUCKETS: usize = 64;

/// Sub-buckets per power of two in a [`LatencySummary`]: a value is known
/// to within 1/8 of itself, so a percentile read off the bucket's middle is
/// within about 6% of the exact one.
const SUB_BUCKETS: u64 = 8;

/// Root latency over an interval in log-spaced buckets (microseconds,
/// eight per power of two): a bounded summary that merges.
///
/// Each sample of a run keeps one, so an expectation over any window of
/// the run can read that window's percentiles without keeping every
/// request. Only occupied buckets are stored; a summary never holds more
/// than about 200 of them (1 µs to an hour), and a healthy fleet's root
/// latencies fill a few dozen.
///
/// ```
/// use chaoslab_model::metrics::LatencySummary;
///
/// let mut s = LatencySummary::default();
/// s.record(1_000, 99); // 99 requests took 1 ms
/// s.record(50_000, 1); // one took 50 ms
/// let p50 = s.quantile_ms(0.5).unwrap();
/// assert!((p50 - 1.0).abs() < 0.07);
/// assert!((s.quantile_ms(1.0).unwrap() - 50.0).abs() < 3.2);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LatencySummary {
    /// `(bucket, count)`, sorted by bucket.
    buckets: Vec<(u16, u32)>,
}

impl LatencySummary {
    /// The bucket holding `micros`.
    fn bucket(micros: u64) -> u16 {
        if micros < SUB_BUCKETS {
            return micros as u16;
        }
        let e = 63 - u64::from(micros.leading_zeros()); // floor(log2), >= 3
        let shift = e - 3;
        let sub = (micros >> shift) - SUB_BUCKETS;
        (SUB_BUCKETS + shift * SUB_BUCKETS + sub) as u16
    }

    /// The middle of a bucket, in microseconds.
    fn middle(bucket: u16) -> f64 {
        let b = u64::from(bucket);
        if b < SUB_BUCKETS {
            return b as f64;
        }
        let k = b - SUB_BUCKETS;
        let shift = k / SUB_BUCKETS;
        let low = (SUB_BUCKETS + k % SUB_BUCKETS) << shift;
        let width = 1u64 << shift;
        low as f64 + (width - 1) as f64 / 2.0
    }

    /// Adds `count` requests that took `micros` microseconds.
    pub fn record(&mut self, micros: u64, count: u64) {
        if count == 0 {
            return;
        }
        let b = Self::bucket(micros);
        let n = u32::try_from(count).unwrap_or(u32::MAX);
        match self.buckets.binary_search_by_key(&b, |&(k, _)| k) {
            Ok(i) => self.buckets[i].1 = self.buckets[i].1.saturating_add(n),
            Err(i) => self.buckets.insert(i, (b, n)),
        }
    }

    /// The summary of a histogram of microseconds.
    pub fn from_histogram(h: &hdrhistogram::Histogram<u64>) -> LatencySummary {
        let mut s = LatencySummary::default();
        for v in h.iter_recorded() {
            s.record(v.value_iterated_to(), v.count_at_value());
        }
        s
    }

    /// Adds another interval's requests.
    pub fn merge(&mut self, other: &LatencySummary) {
        for &(b, n) in &other.buckets {
            match self.buckets.binary_search_by_key(&b, |&(k, _)| k) {
                Ok(i) => self.buckets[i].1 = self.buckets[i].1.saturating_add(n),
                Err(i) => self.buckets.insert(i, (b, n)),
            }
        }
    }

    /// Requests summarised.
    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|&(_, n)| u64::from(n)).sum()
    }

    /// Whether no request is summarised.
    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    /// The latency (ms) at quantile `q` (0..=1), `None` when empty.
    pub fn quantile_ms(&self, q: f64) -> Option<f64> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for &(b, n) in &self.buckets {
            seen += u64::from(n);
            if seen >= rank {
                return Some(Self::middle(b) / 1000.0);
            }
        }
        self.buckets.last().map(|&(b, _)| Self::middle(b) / 1000.0)
    }
}

/// A sample larger than this marks a mesh of thousands of services:
/// [`Series::plan`] samples it at most once a second.
pub const LARGE_SAMPLE: usize = 1 << 20;

/// What a mesh of thousands keeps in samples ([`Series::plan`]).
pub const LARGE_RING: usize = 384 << 20;

/// A ring of samples with a fixed capacity and a fixed memory: the first
/// sample is copied into every slot, so the whole ring is allocated and
/// touched at the start, and later samples overwrite slots in place. A long
/// run keeps the same memory from its first second to its last, forgetting
/// its oldest samples, all but one: the first taken at or after the time
/// given to [`Series::keep_first_from`] (the report's start), which is
/// kept aside when the ring forgets it, so that a report over the whole
/// run still has its counters at both ends (a mesh of thousands holds
/// some fifteen seconds in its ring).
#[derive(Debug, Clone)]
pub struct Series {
    cap: usize,
    buf: Vec<Sample>,
    /// Index of the oldest sample.
    head: usize,
    len: usize,
    /// The time whose first sample is kept when the ring forgets it.
    keep_from: Option<Duration>,
    /// That sample, once the ring has forgotten it.
    kept: Option<Sample>,
}

impl Series {
    /// A series holding at most `cap` samples (at least 2).
    pub fn new(cap: usize) -> Series {
        Series {
            cap: cap.max(2),
            buf: Vec::new(),
            head: 0,
            len: 0,
            keep_from: None,
            kept: None,
        }
    }

    /// Keeps the first sample taken at or after `t` however long the run
    /// goes on: the ring's others come and go, this one stays, before
    /// them (one sample more than the ring's capacity, at the most).
    pub fn keep_first_from(&mut self, t: Duration) {
        self.keep_from = Some(t);
        self.kept = None;
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

    /// Bytes a sample of a fleet of this many services and edges holds.
    pub fn sample_bytes(services: usize, edges: usize) -> usize {
        services * std::mem::size_of::<ServiceCounts>()
            + edges * std::mem::size_of::<EdgeCounts>()
            + 128
    }

    /// The sampling period and the ring's capacity for a fleet of this
    /// many services and edges, asked to sample every `tick` and read
    /// windows of `window`, in `bytes`. A small fleet keeps `tick` and
    /// between 120 samples and an hour's. A mesh of thousands, whose
    /// samples are megabytes each (8,187 nodes and 29,828 edges: 7 MB),
    /// would hold a gigabyte in 120 of them and copy megabytes four times
    /// a second: past [`LARGE_SAMPLE`] it samples at least every second
    /// and keeps what [`LARGE_RING`] holds, never fewer than two windows'
    /// worth and eight more.
    pub fn plan(
        services: usize,
        edges: usize,
        tick: Duration,
        window: Duration,
        bytes: usize,
    ) -> (Duration, usize) {
        let hour = |tick: Duration| (3_600_000 / tick.as_millis().max(1)) as usize;
        let per = Self::sample_bytes(services, edges);
        if per <= LARGE_SAMPLE {
            return (tick, Self::capacity_for(services, edges, bytes, hour(tick)));
        }
        let tick = tick.max(Duration::from_secs(1));
        let least = (2 * window.as_millis() / tick.as_millis().max(1)) as usize + 8;
        (tick, (LARGE_RING / per).clamp(least, hour(tick).max(least)))
    }

    /// Adds a sample, overwriting the oldest when full.
    pub fn push(&mut self, s: Sample) {
        if self.buf.is_empty() {
            self.buf = (0..self.cap)
                .map(|_| {
                    let mut slot = s.clone();
                    slot.latency.buckets.reserve(RESERVED_BUCKETS);
                    slot
                })
                .collect();
        }
        let slot = (self.head + self.len) % self.cap;
        if self.len == self.cap {
            // The oldest goes: kept aside if it is the one to keep.
            let oldest = &self.buf[slot];
            if self.kept.is_none() && self.keep_from.is_some_and(|t| oldest.t >= t) {
                self.kept = Some(oldest.clone());
            }
        }
        self.buf[slot].clone_from(&s);
        if self.len < self.cap {
            self.len += 1;
        } else {
            self.head = (self.head + 1) % self.cap;
        }
    }

    fn get(&self, i: usize) -> &Sample {
        match &self.kept {
            Some(k) if i == 0 => k,
            Some(_) => &self.buf[(self.head + i - 1) % self.cap],
            None => &self.buf[(self.head + i) % self.cap],
        }
    }

    /// The newest sample.
    pub fn latest(&self) -> Option<&Sample> {
        (!self.is_empty()).then(|| self.get(self.len() - 1))
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
        (0..self.len()).map(move |i| self.get(i))
    }

    /// How many samples are held (the one kept aside with the ring's).
    pub fn len(&self) -> usize {
        self.len + usize::from(self.kept.is_some())
    }

    /// Whether no sample is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets every sample (the memory stays reserved), and the one to
    /// keep.
    pub fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
        self.keep_from = None;
        self.kept = None;
    }

    /// The deepest each service's queue got over the samples with
    /// `from < t <= to` (each sample keeps the deepest since the one
    /// before).
    pub fn queue_peaks(&self, from: Duration, to: Duration) -> Vec<u64> {
        let mut peaks: Vec<u64> = vec![];
        for x in self.between(from, to) {
            peaks.resize(x.counts.services.len(), 0);
            for (p, c) in peaks.iter_mut().zip(&x.counts.services) {
                *p = (*p).max(c.queue_peak);
            }
        }
        peaks
    }

    /// Root latency over the samples with `from < t <= to`.
    pub fn latency_between(&self, from: Duration, to: Duration) -> LatencySummary {
        let mut s = LatencySummary::default();
        for x in self.between(from, to) {
            s.merge(&x.latency);
        }
        s
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
            latency: LatencySummary::default(),
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
    fn the_reports_first_sample_outlives_the_ring() {
        let mut s = Series::new(4);
        s.keep_first_from(Duration::from_millis(2_500));
        for t in 0..20 {
            s.push(sample(t));
        }
        // 3 s is the first at or after 2.5 s: kept before the ring's four.
        let ts: Vec<u64> = s.iter().map(|x| x.t.as_secs()).collect();
        assert_eq!(ts, vec![3, 16, 17, 18, 19]);
        assert_eq!(s.len(), 5);
        assert_eq!(
            s.at_or_after(Duration::from_millis(2_500))
                .unwrap()
                .t
                .as_secs(),
            3
        );
        assert_eq!(s.latest().unwrap().t.as_secs(), 19);
        assert_eq!(s.iter().next_back().unwrap().t.as_secs(), 19);
        assert_eq!(
            s.between(Duration::from_secs(3), Duration::from_secs(17))
                .count(),
            2
        );
        // Kept once: later evictions do not move it.
        s.push(sample(20));
        assert_eq!(s.iter().next().unwrap().t.as_secs(), 3);
        // A fresh start forgets it.
        s.clear();
        assert!(s.is_empty());
        for t in 0..10 {
            s.push(sample(t));
        }
        assert_eq!(s.len(), 4, "nothing kept without being asked");
    }

    #[test]
    fn overwriting_a_slot_reuses_its_buffers() {
        let with_services = |t: u64| {
            let mut s = sample(t);
            s.counts.services = vec![ServiceCounts::default(); 7];
            s
        };
        let mut s = Series::new(3);
        for t in 0..3 {
            s.push(with_services(t));
        }
        let before: Vec<*const ServiceCounts> =
            s.buf.iter().map(|x| x.counts.services.as_ptr()).collect();
        for t in 3..30 {
            s.push(with_services(t));
        }
        let after: Vec<*const ServiceCounts> =
            s.buf.iter().map(|x| x.counts.services.as_ptr()).collect();
        assert_eq!(before, after, "no slot reallocated its counters");
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
    fn latency_buckets_are_within_an_eighth() {
        for v in [0u64, 1, 7, 8, 9, 15, 16, 100, 999, 1000, 12_345, 60_000_000] {
            let b = LatencySummary::bucket(v);
            let mid = LatencySummary::middle(b);
            assert!(
                (mid - v as f64).abs() <= (v as f64 / 16.0).max(0.5),
                "{v} -> bucket {b} middle {mid}"
            );
        }
        // Buckets are ordered like the values.
        let mut last = 0;
        for v in 0..100_000u64 {
            let b = LatencySummary::bucket(v);
            assert!(b >= last);
            last = b;
        }
        assert!(LatencySummary::bucket(3_600_000_000) < 300);
    }

    #[test]
    fn latency_windows_merge_their_samples() {
        let mut s = Series::new(10);
        for t in 0..4u64 {
            let mut x = sample(t);
            // Second 1 is slow, the others fast.
            x.latency.record(if t == 1 { 100_000 } else { 1_000 }, 10);
            s.push(x);
        }
        let all = s.latency_between(Duration::ZERO, Duration::from_secs(3));
        assert_eq!(all.count(), 30);
        assert!((all.quantile_ms(0.5).unwrap() - 1.0).abs() < 0.07);
        assert!((all.quantile_ms(0.99).unwrap() - 100.0).abs() < 6.3);
        let fast = s.latency_between(Duration::from_secs(1), Duration::from_secs(3));
        assert!((fast.quantile_ms(0.99).unwrap() - 1.0).abs() < 0.07);
        assert_eq!(
            s.latency_between(Duration::from_secs(3), Duration::from_secs(9))
                .quantile_ms(0.5),
            None
        );
        let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000, 2).unwrap();
        h.record_n(2_000, 5).unwrap();
        let from = LatencySummary::from_histogram(&h);
        assert_eq!(from.count(), 5);
        assert!((from.quantile_ms(0.5).unwrap() - 2.0).abs() < 0.13);
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

    #[test]
    fn a_mesh_of_thousands_samples_each_second_in_a_bounded_ring() {
        let (tick, window) = (Duration::from_millis(250), Duration::from_secs(2));
        let (t, cap) = Series::plan(7, 6, tick, window, 32 << 20);
        assert_eq!(t, tick);
        assert_eq!(cap, Series::capacity_for(7, 6, 32 << 20, 14_400));
        let (t, cap) = Series::plan(8_187, 29_828, tick, window, 32 << 20);
        assert_eq!(t, Duration::from_secs(1));
        let per = Series::sample_bytes(8_187, 29_828);
        assert!(per > LARGE_SAMPLE, "{per}");
        assert_eq!(cap, LARGE_RING / per);
        assert!(cap * per <= LARGE_RING && cap >= 12, "{cap}");
        // Never fewer than two windows and eight more.
        let (_, cap) = Series::plan(200_000, 400_000, tick, Duration::from_secs(30), 32 << 20);
        assert_eq!(cap, 68);
    }
}
