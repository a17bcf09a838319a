//! The live storm radius: the most consecutive hops on one call path that
//! sent retries for the same root request.
//!
//! Every retry is recorded against its root request's id and the edge it
//! was sent on. When the root request completes, the edges that retried for
//! it form a sub-graph of the (acyclic) topology; its longest chain of
//! consecutive edges — one edge's callee is the next edge's caller — is that
//! root's radius. Uber's chain with D failing under naive retries: A→B,
//! B→C, C→D all retry: 3. Under ownership only C→D: 1.
//!
//! Memory is fixed: roots live in a ring of slots indexed by id, each slot
//! holding at most [`MAX_EDGES_PER_ROOT`] distinct edges. A root whose slot
//! was taken over by a much later root before it completed is simply not
//! measured (counted in [`StormTracker::evicted`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Slots in the ring: roots in flight at once that can be tracked.
pub const SLOTS: usize = 16_384;
/// Distinct retrying edges remembered per root.
pub const MAX_EDGES_PER_ROOT: usize = 64;
/// Edge-list capacity reserved per slot at start.
const INITIAL_EDGES: usize = 8;

#[derive(Debug, Default)]
struct Slot {
    root: u64,
    edges: Vec<u32>,
}

/// Interval statistics: over roots that saw at least one retry.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct RadiusStats {
    /// Largest radius.
    pub max: u64,
    /// Sum of radii.
    pub sum: u64,
    /// Roots with at least one retry.
    pub count: u64,
}

impl RadiusStats {
    /// Mean radius over roots with a retry (0 when none).
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// Combines two intervals.
    pub fn merge(&mut self, o: &RadiusStats) {
        self.max = self.max.max(o.max);
        self.sum += o.sum;
        self.count += o.count;
    }
}

/// Tracks retries per root request.
pub struct StormTracker {
    slots: Vec<Mutex<Slot>>,
    /// Edge id → (caller, callee).
    edges: Vec<(usize, usize)>,
    max: AtomicU64,
    sum: AtomicU64,
    count: AtomicU64,
    evicted: AtomicU64,
}

impl std::fmt::Debug for StormTracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StormTracker").finish_non_exhaustive()
    }
}

impl StormTracker {
    /// A tracker for a topology with these edges, as (caller, callee).
    pub fn new(edges: Vec<(usize, usize)>) -> StormTracker {
        StormTracker {
            // Each slot's edge list is reserved now, so a long run's memory
            // does not creep up as roots first land in each slot.
            slots: (0..SLOTS)
                .map(|_| {
                    Mutex::new(Slot {
                        root: 0,
                        edges: Vec::with_capacity(INITIAL_EDGES),
                    })
                })
                .collect(),
            edges,
            max: AtomicU64::new(0),
            sum: AtomicU64::new(0),
            count: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
        }
    }

    fn slot(&self, root: u64) -> std::sync::MutexGuard<'_, Slot> {
        self.slots[(root % SLOTS as u64) as usize]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Records a retry sent on `edge` for `root`.
    pub fn record(&self, root: u64, edge: usize) {
        let mut s = self.slot(root);
        if s.root != root {
            if !s.edges.is_empty() {
                self.evicted.fetch_add(1, Ordering::Relaxed);
            }
            s.root = root;
            s.edges.clear();
        }
        let e = edge as u32;
        if !s.edges.contains(&e) && s.edges.len() < MAX_EDGES_PER_ROOT {
            s.edges.push(e);
        }
    }

    /// The root request completed: measure and forget it. Its radius,
    /// when it sent a retry.
    pub fn finish(&self, root: u64) -> Option<u64> {
        let edges = {
            let mut s = self.slot(root);
            if s.root != root || s.edges.is_empty() {
                return None;
            }
            std::mem::take(&mut s.edges)
        };
        let r = longest_chain(&edges, &self.edges) as u64;
        self.max.fetch_max(r, Ordering::Relaxed);
        self.sum.fetch_add(r, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        // Give the slot's allocation back for the next root.
        let mut s = self.slot(root);
        if s.root == root && s.edges.is_empty() {
            s.edges = edges;
            s.edges.clear();
        }
        Some(r)
    }

    /// Takes the statistics gathered since the last call.
    pub fn take_interval(&self) -> RadiusStats {
        RadiusStats {
            max: self.max.swap(0, Ordering::Relaxed),
            sum: self.sum.swap(0, Ordering::Relaxed),
            count: self.count.swap(0, Ordering::Relaxed),
        }
    }

    /// Roots whose slot was reused before they completed.
    pub fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }
}

/// The longest chain of consecutive edges among `retried` (edge ids), given
/// every edge's (caller, callee). The topology is acyclic, so a memoised
/// depth-first walk terminates.
pub fn longest_chain(retried: &[u32], edges: &[(usize, usize)]) -> usize {
    let ends: Vec<(usize, usize)> = retried
        .iter()
        .filter_map(|&e| edges.get(e as usize).copied())
        .collect();
    let mut memo = vec![0usize; ends.len()];
    fn walk(i: usize, ends: &[(usize, usize)], memo: &mut [usize], guard: usize) -> usize {
        if memo[i] != 0 {
            return memo[i];
        }
        let mut best = 0;
        if guard > 0 {
            for j in 0..ends.len() {
                if ends[j].0 == ends[i].1 {
                    best = best.max(walk(j, ends, memo, guard - 1));
                }
            }
        }
        memo[i] = best + 1;
        memo[i]
    }
    (0..ends.len())
        .map(|i| walk(i, &ends, &mut memo, ends.len()))
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A→B→C→D→E→F→G as edges 0..6.
    fn chain() -> Vec<(usize, usize)> {
        (0..6).map(|i| (i, i + 1)).collect()
    }

    #[test]
    fn chain_radii() {
        let t = StormTracker::new(chain());
        for e in [2, 1, 0, 2, 2] {
            t.record(7, e);
        }
        t.record(8, 2);
        t.finish(7);
        t.finish(8);
        t.finish(9); // no retries: not counted
        let s = t.take_interval();
        assert_eq!(
            s,
            RadiusStats {
                max: 3,
                sum: 4,
                count: 2
            }
        );
        assert_eq!(t.take_interval(), RadiusStats::default());
    }

    #[test]
    fn gaps_break_the_chain() {
        assert_eq!(longest_chain(&[0, 2, 3], &chain()), 2);
        assert_eq!(longest_chain(&[5, 0], &chain()), 1);
        assert_eq!(longest_chain(&[], &chain()), 0);
    }

    #[test]
    fn parallel_branches_are_separate_paths() {
        // A→B, A→C, B→D, C→E: B and C are both at depth 1 but no path
        // joins A→B with C→E.
        let edges = vec![(0, 1), (0, 2), (1, 3), (2, 4)];
        assert_eq!(longest_chain(&[0, 3], &edges), 1);
        assert_eq!(longest_chain(&[1, 3], &edges), 2);
    }

    #[test]
    fn reused_slot_counts_eviction() {
        let t = StormTracker::new(chain());
        t.record(1, 0);
        t.record(1 + SLOTS as u64, 1);
        assert_eq!(t.evicted(), 1);
        t.finish(1);
        assert_eq!(t.take_interval().count, 0);
    }
}
