//! The policy one edge runs: the numbers the retry mechanism works with.
//!
//! The topology file speaks of presets, fleet-wide defaults and per-edge
//! overrides; none of that is the mechanism's business. By the time a call
//! is made all of it has been resolved into one [`EdgePolicy`]: how many
//! attempts, which budget, whether claims are honoured, how long to wait.
//! Keeping that resolved value here, beside the rules that read it, lets the
//! middleware and the attempt state machine depend on plain numbers and not
//! on the configuration types that produce them (the way linkerd2-proxy keeps
//! its mechanism crates free of configuration).
//!
//! ```
//! use std::time::Duration;
//! use chaoslab::ownership::policy::EdgePolicy;
//!
//! let p = EdgePolicy {
//!     attempts: 2,
//!     budget: Some(0.1),
//!     ownership: true,
//!     min_per_sec: 0.0,
//!     ttl: Duration::from_secs(10),
//!     backoff: Duration::ZERO,
//!     timeout: Duration::from_secs(1),
//!     deadline_propagate: false,
//! };
//! let mut budget = p.new_budget().expect("a ratio is set");
//! budget.deposit(Duration::ZERO);
//! assert!(!budget.try_withdraw(Duration::ZERO)); // one first attempt earns 0.1 retry
//! ```

use std::time::Duration;

use super::budget::RetryBudget;

/// The policy in force on one edge.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EdgePolicy {
    /// Attempts per call (1: no retries).
    pub attempts: u32,
    /// The budget ratio, if a budget applies.
    pub budget: Option<f64>,
    /// Whether unclaimed errors are spared a retry.
    pub ownership: bool,
    /// Retries per second always allowed.
    pub min_per_sec: f64,
    /// Budget deposit lifetime.
    pub ttl: Duration,
    /// Backoff base.
    pub backoff: Duration,
    /// Per-attempt timeout.
    pub timeout: Duration,
    /// `deadline: propagate`: each call carries the time its caller has
    /// left, and the callee's attempts never outlive it (SPEC section 7).
    pub deadline_propagate: bool,
}

impl EdgePolicy {
    /// A fresh, empty budget bucket for this policy; `None` when the edge
    /// runs without a budget.
    pub fn new_budget(&self) -> Option<RetryBudget> {
        self.budget
            .map(|ratio| RetryBudget::new(ratio, self.ttl, self.min_per_sec))
    }

    /// Whether `other` asks for the same budget bucket (ratio, ttl and
    /// floor), so a policy change may keep the tokens already earned.
    pub fn same_budget(&self, other: &EdgePolicy) -> bool {
        self.budget == other.budget
            && self.ttl == other.ttl
            && self.min_per_sec == other.min_per_sec
    }
}
