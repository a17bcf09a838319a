//! A service's latency histogram: fixed buckets, four per power of two,
//! live as atomics and copied as plain counts.

use std::sync::atomic::AtomicU32;

/// Buckets of a service's latency histogram: four per power of two from
/// 64 µs to about 67 s, so a percentile read off a bucket's middle is
/// within 12.5% of the exact one; faster answers count in the first
/// bucket, slower in the last.
pub const LATENCY_BUCKETS: usize = 80;
/// The first bucket starts at 2^6 µs.
const LATENCY_LOW_SHIFT: u32 = 6;

/// The bucket holding `micros`.
pub fn latency_bucket(micros: u64) -> usize {
    let m = micros.max(1 << LATENCY_LOW_SHIFT);
    let e = 63 - m.leading_zeros(); // floor(log2), >= 6
    let sub = ((m >> (e - 2)) & 3) as usize;
    ((e - LATENCY_LOW_SHIFT) as usize * 4 + sub).min(LATENCY_BUCKETS - 1)
}

/// The upper bound of bucket `b`, in µs (the last is unbounded).
pub fn latency_bucket_upper_us(b: usize) -> u64 {
    let next = b as u32 + 1;
    let e = next / 4 + LATENCY_LOW_SHIFT;
    (4 + u64::from(next % 4)) << (e - 2)
}

/// The middle of bucket `b`, in ms.
fn latency_bucket_middle_ms(b: usize) -> f64 {
    let e = b as u32 / 4 + LATENCY_LOW_SHIFT;
    let width = 1u64 << (e - 2);
    let low = (4 + b as u64 % 4) * width;
    (low as f64 + width as f64 / 2.0) / 1000.0
}

/// A service's live latency histogram (the fleet's counters hold one per
/// service; here beside the buckets it counts in).
#[derive(Debug)]
pub struct LatencyCounters(pub [AtomicU32; LATENCY_BUCKETS]);

impl Default for LatencyCounters {
    fn default() -> Self {
        LatencyCounters(std::array::from_fn(|_| AtomicU32::new(0)))
    }
}

/// A copy of a service's latency histogram: requests answered per bucket
/// (counts wrap; a window takes differences, so a window of fewer than
/// 2^32 answers per bucket is exact).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LatencyCounts(pub [u32; LATENCY_BUCKETS]);

impl Default for LatencyCounts {
    fn default() -> Self {
        LatencyCounts([0; LATENCY_BUCKETS])
    }
}

impl LatencyCounts {
    /// `self - earlier`, bucket by bucket.
    pub fn since(&self, earlier: &LatencyCounts) -> LatencyCounts {
        LatencyCounts(std::array::from_fn(|b| {
            self.0[b].wrapping_sub(earlier.0[b])
        }))
    }

    /// `self + other`, bucket by bucket: two processes' histograms as one.
    pub fn plus(&self, other: &LatencyCounts) -> LatencyCounts {
        LatencyCounts(std::array::from_fn(|b| self.0[b].wrapping_add(other.0[b])))
    }

    /// Adds one answer that took `micros` (for tests and fixtures).
    pub fn record(&mut self, micros: u64) {
        let b = latency_bucket(micros);
        self.0[b] = self.0[b].wrapping_add(1);
    }

    /// The latency (ms) at quantile `q`, `None` with no answer.
    pub fn quantile_ms(&self, q: f64) -> Option<f64> {
        let total: u64 = self.0.iter().map(|&n| u64::from(n)).sum();
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (b, &n) in self.0.iter().enumerate() {
            seen += u64::from(n);
            if seen >= rank {
                return Some(latency_bucket_middle_ms(b));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_bucket_bounds_are_where_the_next_bucket_starts() {
        for b in 0..LATENCY_BUCKETS - 1 {
            let up = latency_bucket_upper_us(b);
            assert_eq!(latency_bucket(up - 1), b);
            assert_eq!(latency_bucket(up), b + 1, "bucket {b} ends at {up} µs");
        }
        assert_eq!(latency_bucket_upper_us(3), 128);
    }

    #[test]
    fn latency_buckets_hold_their_values_within_an_eighth() {
        for us in [64u64, 100, 1_000, 1_500, 20_000, 999_999, 10_000_000] {
            let mid = latency_bucket_middle_ms(latency_bucket(us)) * 1000.0;
            let err = (mid - us as f64).abs() / us as f64;
            assert!(err <= 0.125, "{us} µs read back as {mid} µs");
        }
        assert_eq!(latency_bucket(1), 0);
        assert_eq!(latency_bucket(u64::MAX), LATENCY_BUCKETS - 1);
        // Buckets are contiguous and increasing.
        let mut last = 0;
        for us in 64..200_000u64 {
            let b = latency_bucket(us);
            assert!(b == last || b == last + 1, "{us}");
            last = b;
        }
    }
}
