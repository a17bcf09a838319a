//! A sliding window of counts kept in a fixed number of time buckets: what
//! the throttle and the retry histogram count over their last window,
//! with memory fixed whatever the rate.

use std::time::Duration;

/// How many buckets a window is kept in.
pub const BUCKETS: usize = 64;

/// `K` counters over the last window, in [`BUCKETS`] buckets.
#[derive(Debug, Clone)]
pub(crate) struct Window<const K: usize> {
    /// The window's length over [`BUCKETS`], in nanoseconds (at least 1).
    width: u128,
    buckets: [[u64; K]; BUCKETS],
    /// The absolute number (time / width) of the newest bucket.
    newest: u128,
    /// The sums over the buckets.
    total: [u64; K],
}

impl<const K: usize> Window<K> {
    /// An empty window `length` long.
    pub(crate) fn new(length: Duration) -> Window<K> {
        Window {
            width: (length.as_nanos() / BUCKETS as u128).max(1),
            buckets: [[0; K]; BUCKETS],
            newest: 0,
            total: [0; K],
        }
    }

    /// Drops the buckets that have left the window at `now`. Time that
    /// goes backwards is read as the newest bucket.
    fn advance(&mut self, now: Duration) -> usize {
        let at = now.as_nanos() / self.width;
        if at > self.newest {
            let stale = (at - self.newest).min(BUCKETS as u128);
            for i in 1..=stale {
                let b = &mut self.buckets[((self.newest + i) % BUCKETS as u128) as usize];
                for (t, c) in self.total.iter_mut().zip(b.iter()) {
                    *t -= c;
                }
                *b = [0; K];
            }
            self.newest = at;
        }
        (self.newest % BUCKETS as u128) as usize
    }

    /// Counts one in counter `k` at `now`.
    pub(crate) fn add(&mut self, now: Duration, k: usize) {
        let i = self.advance(now);
        self.buckets[i][k] += 1;
        self.total[k] += 1;
    }

    /// The counters over the window at `now`.
    pub(crate) fn totals(&mut self, now: Duration) -> [u64; K] {
        self.advance(now);
        self.total
    }
}
