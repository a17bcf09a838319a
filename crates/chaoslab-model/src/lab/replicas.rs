//! One replica's figures over a window, for a service of more than one
//! (SPEC section 11): what it received and answered, how its callers'
//! load balancers spread their first attempts and retries over it, and
//! what its callers' outlier detection did to it (SPEC section 17): in
//! all, and per edge ([`edge_outliers`]).

use serde::Serialize;

use super::figures::Window;

/// One replica's figures over a window.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ReplicaReport {
    /// Its index (0-based).
    pub replica: u32,
    /// Requests it received, per second.
    pub rps: f64,
    /// Requests it received.
    pub requests: u64,
    /// Error answers it gave.
    pub errors: u64,
    /// `errors / requests` (0 with no requests).
    pub error_rate: f64,
    /// First attempts its callers sent it.
    pub first_attempts: u64,
    /// Retries its callers sent it.
    pub retries: u64,
    /// Retries its callers sent it, per second.
    pub retry_rps: f64,
    /// Its share of the first attempts sent to the service's replicas.
    pub first_attempt_share: f64,
    /// Times its callers' outlier detection ejected it, summed over the
    /// edges into the service.
    pub ejections: u64,
    /// How many of those edges have it ejected at the window's end.
    pub ejected_now: u64,
}

/// One replica of an edge's callee under the edge's outlier detection.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OutlierReport {
    /// The replica (0-based).
    pub replica: u32,
    /// Whether the edge has it ejected at the window's end.
    pub ejected_now: bool,
    /// Times the edge ejected it over the window.
    pub ejections: u64,
    /// What the model predicts for `ejections` (when the window is known
    /// from the detector's start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_ejections: Option<f64>,
}

/// Edge `edge`'s outlier rows over a window: one per replica of its
/// callee, when it has more than one.
pub fn edge_outliers(w: &Window<'_>, edge: usize) -> Vec<OutlierReport> {
    w.counts
        .outliers_of(edge)
        .iter()
        .map(|o| OutlierReport {
            replica: o.replica,
            ejected_now: o.ejected > 0,
            ejections: o.ejections,
            model_ejections: None,
        })
        .collect()
}

/// Service `i`'s replicas over a window, when it has more than one.
pub fn replicas(w: &Window<'_>, i: usize) -> Vec<ReplicaReport> {
    let mine: Vec<_> = w
        .counts
        .replicas
        .iter()
        .filter(|r| r.service == i)
        .collect();
    let firsts: u64 = mine.iter().map(|r| r.first_attempts).sum();
    // Its callers' outlier rows, summed per replica: (ejections, out now).
    let mut outliers = vec![(0, 0); mine.len()];
    if !mine.is_empty() && !w.counts.outliers.is_empty() {
        for (k, e) in w.topology.edges.iter().enumerate() {
            if e.to != i {
                continue;
            }
            for o in w.counts.outliers_of(k) {
                if let Some(x) = outliers.get_mut(o.replica as usize) {
                    x.0 += o.ejections;
                    x.1 += o.ejected;
                }
            }
        }
    }
    let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    mine.iter()
        .map(|r| ReplicaReport {
            replica: r.replica,
            rps: w.rate(r.requests),
            requests: r.requests,
            errors: r.errors,
            error_rate: ratio(r.errors, r.requests),
            first_attempts: r.first_attempts,
            retries: r.retries,
            retry_rps: w.rate(r.retries),
            first_attempt_share: ratio(r.first_attempts, firsts),
            ejections: outliers.get(r.replica as usize).map_or(0, |x| x.0),
            ejected_now: outliers.get(r.replica as usize).map_or(0, |x| x.1),
        })
        .collect()
}
