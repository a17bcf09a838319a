//! The counters as a node or a shard sends them to the session reading
//! it (`GET /counts`): every row, or its own rows alone, read from the
//! counters themselves.

use std::sync::atomic::{AtomicU64, Ordering};

use super::{EdgeCounters, Metrics, ServiceCounters};
use crate::metrics::{EdgeCounts, OutlierCounts, ReplicaCounts, RootCounts, ServiceCounts};

impl Metrics {
    /// Marks the services this process serves, when it is a node or a
    /// shard of a mesh spread over processes: the rows the session reading
    /// it takes (their edges with them).
    pub fn with_own(mut self, here: &[bool]) -> Metrics {
        let services: Vec<u32> = (0..here.len())
            .filter(|&i| here[i])
            .map(|i| i as u32)
            .collect();
        let edges: Vec<u32> = self
            .callee
            .iter()
            .enumerate()
            .filter(|&(e, _)| {
                self.caller
                    .get(e)
                    .is_some_and(|&f| here.get(f) == Some(&true))
            })
            .map(|(e, _)| e as u32)
            .collect();
        self.own = Some((services, edges));
        self
    }

    /// The counters as a node sends them: its own rows alone when `own`
    /// is asked and it knows them, else every row.
    pub fn wire_counts(&self, own: bool) -> crate::metrics::WireCounts {
        match (&self.own, own) {
            (Some((s, e)), true) => self.rows(s, e),
            _ => crate::metrics::WireCounts::from(&self.local_counts()),
        }
    }

    /// The counters of the rows `services` and `edges` alone, as a node
    /// sends them: read from the counters themselves, not from a copy of
    /// every row (a shard of Meta's mesh holds 29,789 services' counters
    /// and is read ten times a second).
    fn rows(&self, services: &[u32], edges: &[u32]) -> crate::metrics::WireCounts {
        let picked: Vec<ServiceCounts> = services
            .iter()
            .filter_map(|&i| self.services.get(i as usize).map(ServiceCounters::load))
            .collect();
        crate::metrics::WireCounts {
            latency: picked.iter().map(|s| s.latency.0.to_vec()).collect(),
            services: picked,
            edges: edges
                .iter()
                .filter_map(|&i| self.edges.get(i as usize).map(edge_counts))
                .collect(),
            root: self.root_counts(),
            replicas: self.replica_counts(),
            outliers: self.outlier_counts(),
            rows: Some(crate::metrics::counts::Rows {
                of: [self.services.len(), self.edges.len()],
                services: services.to_vec(),
                edges: edges.to_vec(),
            }),
        }
    }

    pub(super) fn root_counts(&self) -> RootCounts {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        RootCounts {
            sent: l(&self.root_sent),
            ok: l(&self.root_ok),
            errors: l(&self.root_errors),
            dropped: l(&self.root_dropped),
            skipped: l(&self.root_skipped),
            ticks: l(&self.ticks),
            lag_us: l(&self.lag_us),
            lag_max_us: l(&self.lag_max_us),
            fd_errors: l(&self.fd_errors),
            node_misses: 0,
        }
    }

    pub(super) fn replica_counts(&self) -> Vec<ReplicaCounts> {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        self.replicas
            .iter()
            .map(|(service, replica, c)| ReplicaCounts {
                service: *service,
                replica: *replica,
                requests: l(&c[0]),
                errors: l(&c[1]),
                first_attempts: l(&c[2]),
                retries: l(&c[3]),
            })
            .collect()
    }

    pub(super) fn outlier_counts(&self) -> Vec<OutlierCounts> {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        self.outliers
            .iter()
            .map(|(edge, replica, c)| OutlierCounts {
                edge: *edge,
                replica: *replica,
                ejections: l(&c[0]),
                ejected: l(&c[1]),
            })
            .collect()
    }
}

/// A copy of one edge's counters.
pub(super) fn edge_counts(e: &EdgeCounters) -> EdgeCounts {
    let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
    EdgeCounts {
        attempts: l(&e.attempts),
        failed_attempts: l(&e.failed_attempts),
        retries: l(&e.retries),
        suppressed: l(&e.suppressed),
        budget_denied: l(&e.budget_denied),
        refused: l(&e.refused),
        failed_calls: l(&e.failed_calls),
        attempt_us: l(&e.attempt_us),
        short_circuited: l(&e.short_circuited),
        throttled: l(&e.throttled),
        hedges_cancelled: l(&e.hedges_cancelled),
        breaker: l(&e.breaker),
        budget_level_milli: l(&e.budget_level),
        budget_limit_milli: l(&e.budget_limit),
    }
}
