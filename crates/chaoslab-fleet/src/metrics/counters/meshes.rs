//! The counters of real meshes (SPEC section 11): each replica's of a
//! service of more than one, and each root's of a topology of many.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::super::counts::RADIUS_BUCKETS;
use super::super::latency::{latency_bucket, LatencyCounters};
use super::{bump, Metrics};

/// One root's live counters.
#[derive(Debug, Default)]
pub(super) struct RootCounters {
    pub(super) sent: AtomicU64,
    pub(super) ok: AtomicU64,
    pub(super) errors: AtomicU64,
    pub(super) latency: LatencyCounters,
    pub(super) radius: [AtomicU64; RADIUS_BUCKETS],
}

impl Metrics {
    /// Counts each root apart when there are more than one: `roots` are
    /// their services, in `load.roots` order.
    pub fn with_roots(mut self, roots: &[usize]) -> Metrics {
        if roots.len() < 2 {
            return self;
        }
        self.roots = roots.iter().map(|_| RootCounters::default()).collect();
        for (k, &s) in roots.iter().enumerate() {
            if let Some(slot) = self.root_of.get_mut(s) {
                *slot = Some(k);
            }
        }
        self
    }

    /// A root request of the root entering at `service` stormed `radius`
    /// hops deep, as a session of many nodes measures it from their
    /// journals (in one process, [`Metrics`] counts it as it answers).
    pub fn root_radius_at(&self, service: usize, radius: u64) {
        let Some(k) = self.root_of.get(service).copied().flatten() else {
            return;
        };
        if let Some(c) = self.roots.get(k) {
            let b = (radius.max(1) as usize - 1).min(RADIUS_BUCKETS - 1);
            bump(&c.radius[b]);
        }
    }

    /// Root `root` (in `load.roots` order) sent a request.
    pub fn root_sent_at(&self, root: usize) {
        if let Some(r) = self.roots.get(root) {
            bump(&r.sent);
        }
    }

    /// A request of root `root` ended.
    pub fn root_done_at(&self, root: usize, ok: bool, latency: Duration) {
        if let Some(r) = self.roots.get(root) {
            bump(if ok { &r.ok } else { &r.errors });
            let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
            r.latency.0[latency_bucket(us)].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts each replica of the services with more than one:
    /// `replicas` per service, in topology order.
    pub fn with_replicas(mut self, replicas: &[u32]) -> Metrics {
        self.replicas.clear();
        for (s, &n) in replicas.iter().enumerate() {
            let start = (n > 1).then_some(self.replicas.len());
            if let Some(slot) = self.replica_start.get_mut(s) {
                *slot = start;
            }
            if n > 1 {
                self.replicas
                    .extend((0..n).map(|r| (s, r, std::array::from_fn(|_| AtomicU64::new(0)))));
            }
        }
        self
    }

    pub(super) fn replica(&self, service: usize, replica: u32) -> Option<&[AtomicU64; 4]> {
        let start = self.replica_start.get(service).copied().flatten()?;
        self.replicas
            .get(start + replica as usize)
            .filter(|(s, _, _)| *s == service)
            .map(|(_, _, c)| c)
    }

    /// Keeps outlier rows for each edge whose callee has more than one
    /// replica: `replicas` per edge, in topology order.
    pub fn with_outliers(mut self, replicas: &[u32]) -> Metrics {
        self.outliers.clear();
        for (e, &n) in replicas.iter().enumerate() {
            let start = (n > 1).then_some(self.outliers.len());
            if let Some(slot) = self.outlier_start.get_mut(e) {
                *slot = start;
            }
            if n > 1 {
                self.outliers
                    .extend((0..n).map(|r| (e, r, std::array::from_fn(|_| AtomicU64::new(0)))));
            }
        }
        self
    }

    /// Publishes what edge `edge`'s outlier detection holds: per replica,
    /// `(ejected now, ejections so far)`. The fleet calls it once a
    /// sample, with the edge's own totals (they never go back).
    pub fn set_outliers(&self, edge: usize, rows: impl Iterator<Item = (bool, u64)>) {
        let Some(start) = self.outlier_start.get(edge).copied().flatten() else {
            return;
        };
        for (r, (out, ejections)) in rows.enumerate() {
            match self.outliers.get(start + r) {
                Some((e, _, c)) if *e == edge => {
                    c[0].store(ejections, Ordering::Relaxed);
                    c[1].store(u64::from(out), Ordering::Relaxed);
                }
                _ => return,
            }
        }
    }

    /// Replica `replica` of `service` received a request.
    pub fn replica_request(&self, service: usize, replica: u32) {
        if let Some(c) = self.replica(service, replica) {
            bump(&c[0]);
        }
    }

    /// Replica `replica` of `service` answered with an error.
    pub fn replica_error(&self, service: usize, replica: u32) {
        if let Some(c) = self.replica(service, replica) {
            bump(&c[1]);
        }
    }
}
