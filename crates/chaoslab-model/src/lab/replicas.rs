//! One replica's figures over a window, for a service of more than one
//! (SPEC section 11): what it received and answered, and how its callers'
//! load balancers spread their first attempts and retries over it.

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
        })
        .collect()
}
