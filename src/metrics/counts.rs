//! Copies of the fleet's counters at one moment, and their differences:
//! what every window, figure and report is computed from.

use serde::{Deserialize, Serialize};

use super::counters::{EdgeCounts, LatencyCounts, ServiceCounts};
use super::latency::LATENCY_BUCKETS;

/// A copy of all counters at one moment.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Per service, in topology order.
    pub services: Vec<ServiceCounts>,
    /// Per edge, in topology order.
    pub edges: Vec<EdgeCounts>,
    /// The end user's view.
    pub root: RootCounts,
}

impl Counts {
    /// `self - earlier`.
    pub fn since(&self, e: &Counts) -> Counts {
        Counts {
            services: self
                .services
                .iter()
                .zip(&e.services)
                .map(|(a, b)| a.since(b))
                .collect(),
            edges: self
                .edges
                .iter()
                .zip(&e.edges)
                .map(|(a, b)| a.since(b))
                .collect(),
            root: self.root.since(&e.root),
        }
    }

    /// Retries suppressed across the fleet: spurious requests avoided.
    pub fn spurious_avoided(&self) -> u64 {
        self.services.iter().map(|s| s.retries_suppressed).sum()
    }
}

/// What the end user (the load generator) saw, and how well the lab kept
/// its own schedule: what tells a measured figure from one the machine
/// could not carry.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootCounts {
    /// Root requests sent.
    pub sent: u64,
    /// Answered with success.
    pub ok: u64,
    /// Answered with an error, or not answered.
    pub errors: u64,
    /// Not sent: too many already in flight (open-loop overload).
    pub dropped: u64,
    /// Not sent: the load generator fell behind its schedule (the machine
    /// did not give it the time to send them).
    pub skipped: u64,
    /// Ticks of the probe timer on the fleet's event loop so far.
    pub ticks: u64,
    /// How late the ticks came, summed, in µs: the fleet's event loop
    /// waiting for the machine.
    pub lag_us: u64,
    /// The latest tick's lateness, in µs (kept, not summed).
    pub lag_max_us: u64,
    /// Connections the lab could not open or accept for want of file
    /// descriptors (`EMFILE`, `ENFILE`).
    pub fd_errors: u64,
    /// Reads of a node's counters that failed (a distributed session):
    /// that node's rows are as last read, missing its newest traffic.
    pub node_misses: u64,
}

impl RootCounts {
    /// `self - earlier`.
    pub fn since(&self, e: &RootCounts) -> RootCounts {
        RootCounts {
            sent: self.sent.saturating_sub(e.sent),
            ok: self.ok.saturating_sub(e.ok),
            errors: self.errors.saturating_sub(e.errors),
            dropped: self.dropped.saturating_sub(e.dropped),
            skipped: self.skipped.saturating_sub(e.skipped),
            ticks: self.ticks.saturating_sub(e.ticks),
            lag_us: self.lag_us.saturating_sub(e.lag_us),
            lag_max_us: self.lag_max_us,
            fd_errors: self.fd_errors.saturating_sub(e.fd_errors),
            node_misses: self.node_misses.saturating_sub(e.node_misses),
        }
    }

    /// Root requests due by the schedule: sent, dropped or skipped.
    pub fn offered(&self) -> u64 {
        self.sent + self.dropped + self.skipped
    }

    /// Completed requests.
    pub fn completed(&self) -> u64 {
        self.ok + self.errors
    }

    /// Fraction of completed requests that succeeded (1 when none).
    pub fn availability(&self) -> f64 {
        if self.completed() == 0 {
            1.0
        } else {
            self.ok as f64 / self.completed() as f64
        }
    }
}

/// Every counter of one process as it crosses the wire (`GET /counts` on
/// a node's control API): the counts with each service's latency
/// histogram as a list.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireCounts {
    /// Per service, in topology order.
    pub services: Vec<ServiceCounts>,
    /// Per service, its latency histogram's buckets.
    pub latency: Vec<Vec<u32>>,
    /// Per edge, in topology order.
    pub edges: Vec<EdgeCounts>,
    /// The root counts (the lab's health, on a node).
    pub root: RootCounts,
}

impl From<&Counts> for WireCounts {
    fn from(c: &Counts) -> WireCounts {
        WireCounts {
            services: c.services.clone(),
            latency: c.services.iter().map(|s| s.latency.0.to_vec()).collect(),
            edges: c.edges.clone(),
            root: c.root,
        }
    }
}

impl From<WireCounts> for Counts {
    fn from(w: WireCounts) -> Counts {
        let mut services = w.services;
        for (s, l) in services.iter_mut().zip(&w.latency) {
            let mut buckets = [0; LATENCY_BUCKETS];
            for (b, v) in buckets.iter_mut().zip(l) {
                *b = *v;
            }
            s.latency = LatencyCounts(buckets);
        }
        Counts {
            services,
            edges: w.edges,
            root: w.root,
        }
    }
}
