//! A window of a run: the counters every figure of the catalogue is
//! computed from, what the model said for it, and the quantities several
//! figures read (a service's baseline, the root rate, the budget's level).

use crate::metrics::{Counts, RadiusStats, ServiceCounts};
use crate::topology::model::Prediction;
use crate::topology::Topology;

/// The counters of one window of a run, and what the model said for it:
/// everything a figure is computed from.
#[derive(Debug)]
pub struct Window<'a> {
    /// Counters over the window (later sample minus earlier).
    pub counts: Counts,
    /// The window's length, seconds.
    pub dt: f64,
    /// The topology's shape (multiplicities, the entry).
    pub topology: &'a Topology,
    /// The model's prediction for the state in force.
    pub prediction: &'a Prediction,
    /// The static radius under the policy in force.
    pub static_radius: usize,
    /// Storm radius over the roots that completed in the window.
    pub radius: RadiusStats,
    /// Root latency p50 and p99 over the window, ms.
    pub root_latency_ms: (f64, f64),
    /// The deepest each service's queue got over the window's samples.
    pub queue_peaks: Vec<u64>,
    /// What several figures of every service read, computed once for the
    /// window (`WindowCache::default()` to build one).
    pub cache: WindowCache,
}

/// What a window computes once for all its figures: each service's
/// baseline (a sum over the roots that reach it, for a mesh of many) and
/// the root rate.
#[derive(Debug, Default)]
pub struct WindowCache {
    baselines: std::cell::OnceCell<Vec<f64>>,
    root_rate: std::cell::OnceCell<f64>,
}

impl Window<'_> {
    /// Requests abandoned by their caller over the window, when the
    /// topology in force has nothing slow or failing that could explain
    /// one (0 otherwise): what only a machine too slow for its load makes.
    pub fn machine_timeouts(&self) -> u64 {
        let t = self.topology;
        let explained = t.services.iter().any(|s| {
            let f = s.fault_in_force();
            !s.work.is_zero()
                || !f.latency.is_zero()
                || f.error_rate > 0.0
                || f.down
                || s.workers.is_some()
                || s.capacity.is_some()
                || s.url.is_some()
        });
        // Outside load (`serve`) may hang up on its own requests: only
        // the lab's own end users wait by the rules.
        if explained || self.counts.root.sent == 0 {
            return 0;
        }
        self.counts.services.iter().map(|s| s.timeouts).sum()
    }

    /// `n` events over the window, per second.
    pub fn rate(&self, n: u64) -> f64 {
        if self.dt > 0.0 {
            n as f64 / self.dt
        } else {
            0.0
        }
    }

    pub(super) fn svc(&self, i: usize) -> &ServiceCounts {
        &self.counts.services[i]
    }

    /// Service `i`'s outbound edges.
    pub(super) fn out_edges(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        self.topology.services[i].calls.iter().copied()
    }

    /// The lowest fraction left of any of service `i`'s edge budgets; NaN
    /// (null) when none reports a limit.
    pub(super) fn budget_level(&self, i: usize) -> f64 {
        self.out_edges(i)
            .filter_map(|e| {
                let c = &self.counts.edges[e];
                let (level, limit) = c.budget_level()?;
                let edge = self
                    .topology
                    .policy
                    .for_edge(&self.topology.edges[e].policy);
                match edge.budget? {
                    error_ownership::edge_budget::BudgetModel::Window { .. } => None,
                    error_ownership::edge_budget::BudgetModel::Concurrency { .. } => {
                        Some(1.0 - level / limit.max(1.0))
                    }
                    _ if limit > 0.0 => Some(level / limit),
                    _ => None,
                }
            })
            .fold(f64::NAN, f64::min)
    }

    /// Root requests per second the roots opened (the entry's, for one).
    pub fn root_rate(&self) -> f64 {
        *self.cache.root_rate.get_or_init(|| self.root_rate_now())
    }

    pub(super) fn root_rate_now(&self) -> f64 {
        self.topology
            .load
            .roots
            .iter()
            .map(|r| self.rate(self.svc(r.entry).roots))
            .sum()
    }

    /// Root requests that ended, and how many failed: the load
    /// generator's count, or the entry's own when there was no internal
    /// load (`serve`).
    pub(super) fn root_outcomes(&self) -> (u64, u64) {
        let r = &self.counts.root;
        if r.sent > 0 {
            (r.completed(), r.errors)
        } else {
            let e = self.svc(self.topology.load.entry);
            (e.roots, e.errors)
        }
    }

    /// Service `i`'s no-fault load at the root rates measured: each
    /// root's rate times the calls one of its requests makes of `i`.
    pub(super) fn baseline(&self, i: usize) -> f64 {
        let all = self.cache.baselines.get_or_init(|| {
            (0..self.topology.services.len())
                .map(|k| {
                    self.topology
                        .baseline(k, |r| self.rate(self.svc(r).baseline_roots()))
                })
                .collect()
        });
        all.get(i).copied().unwrap_or(0.0)
    }

    /// Service `i`'s workers, when it has them.
    /// Over every replica: workers are per replica.
    pub(super) fn workers(&self, i: usize) -> Option<f64> {
        let s = &self.topology.services[i];
        s.workers
            .map(|w| f64::from(w) * f64::from(s.replicas.max(1)))
    }

    /// Busy worker time over available worker time.
    pub(super) fn utilisation(&self, i: usize) -> f64 {
        match self.workers(i) {
            Some(n) if self.dt > 0.0 => self.svc(i).busy_us as f64 / 1e6 / (n * self.dt),
            _ => 0.0,
        }
    }

    /// Workers ÷ (work + injected latency); NaN (no limit) without workers.
    pub(super) fn capacity(&self, i: usize) -> f64 {
        let s = &self.topology.services[i];
        let time = (s.work + s.fault_in_force().latency).as_secs_f64();
        match self.workers(i) {
            Some(n) if time > 0.0 => n / time,
            _ => f64::NAN,
        }
    }

    /// Successful root requests per second.
    pub(super) fn goodput(&self) -> f64 {
        let r = &self.counts.root;
        if r.sent > 0 {
            self.rate(r.ok)
        } else {
            let e = self.svc(self.topology.load.entry);
            self.rate(e.roots.saturating_sub(e.errors + e.timeouts))
        }
    }
}

/// Error responses whose status is none of 500, 502, 503 and 504.
pub(super) fn other_errors(c: &ServiceCounts) -> u64 {
    c.errors
        .saturating_sub(c.errors_500 + c.errors_502 + c.errors_503 + c.errors_504)
}

/// The status most error responses carried: 500, 502, 503 or 504, or 1
/// for another status being the most common; 0 without errors.
pub(super) fn main_status(c: &ServiceCounts) -> f64 {
    let by = [
        (500.0, c.errors_500),
        (502.0, c.errors_502),
        (503.0, c.errors_503),
        (504.0, c.errors_504),
        (1.0, other_errors(c)),
    ];
    by.into_iter()
        .filter(|(_, n)| *n > 0)
        .max_by_key(|(_, n)| *n)
        .map_or(0.0, |(s, _)| s)
}

pub(super) fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}
