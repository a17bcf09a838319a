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
//! use error_ownership::edge_budget::BudgetModel;
//! use error_ownership::policy::EdgePolicy;
//! use error_ownership::quota::RetryKind;
//!
//! let p = EdgePolicy {
//!     attempts: 2,
//!     budget: Some(BudgetModel::Window {
//!         ratio: 0.1,
//!         min_per_sec: 0.0,
//!         ttl: Duration::from_secs(10),
//!     }),
//!     ownership: true,
//!     signal: None,
//!     breaker: None,
//!     throttle: None,
//!     hedge: None,
//!     outlier: None,
//!     backoff: Duration::ZERO,
//!     timeout: Duration::from_secs(1),
//!     deadline_propagate: false,
//!     retry_on: error_ownership::conditions::RetryOn::ANY,
//! };
//! let mut budget = p.new_budget().expect("a ratio is set");
//! budget.call_started(Duration::ZERO);
//! // One call earns 0.1 retry: not enough for one.
//! assert!(budget.try_retry(Duration::ZERO, RetryKind::Transient).is_none());
//! ```

use std::time::Duration;

use super::breaker::BreakerConfig;
use super::conditions::RetryOn;
use super::edge_budget::{BudgetModel, EdgeBudget};
use super::hedge::HedgeConfig;
use super::outlier::OutlierConfig;
use super::signal::Signal;
use super::throttle::ThrottleConfig;

/// How an edge spreads its attempts over the callee's replicas (SPEC
/// section 11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Lb {
    /// Each attempt to the next replica in turn (the default).
    #[default]
    RoundRobin,
    /// Each attempt to a replica drawn uniformly.
    Random,
    /// The power of two choices: of two replicas drawn, the one with fewer
    /// of this caller's attempts in flight.
    P2c,
}

impl Lb {
    /// Its name in the topology file.
    pub fn name(self) -> &'static str {
        match self {
            Lb::RoundRobin => "round-robin",
            Lb::Random => "random",
            Lb::P2c => "p2c",
        }
    }
}

/// The policy in force on one edge.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EdgePolicy {
    /// Attempts per call (1: no retries).
    pub attempts: u32,
    /// The budget model and its numbers, if a budget applies.
    pub budget: Option<BudgetModel>,
    /// Whether unclaimed errors are spared a retry.
    pub ownership: bool,
    /// Another stack's don't-retry dialect read on every error answer
    /// (`nack`, `overloaded`, `pushback`, `retry-after`); ownership's
    /// claim header is the `ownership` switch.
    pub signal: Option<Signal>,
    /// A circuit breaker in front of the callee, if any.
    pub breaker: Option<BreakerConfig>,
    /// Client-side adaptive throttling on every attempt (the SRE book's),
    /// if any: a rejected attempt fails at the caller, its own error.
    pub throttle: Option<ThrottleConfig>,
    /// gRPC A6 hedging instead of retrying after a failure, if any: a
    /// hedge every `delay` without an answer, each asking the budget as a
    /// retry; the first success wins and the others are cancelled.
    pub hedge: Option<HedgeConfig>,
    /// Outlier detection over the callee's replicas (Envoy's), if any:
    /// the caller stops sending attempts to a replica that failed too
    /// many in a row, for a while.
    pub outlier: Option<OutlierConfig>,
    /// Backoff base.
    pub backoff: Duration,
    /// Per-attempt timeout.
    pub timeout: Duration,
    /// `deadline: propagate`: each call carries the time its caller has
    /// left, and the callee's attempts never outlive it (SPEC section 7).
    pub deadline_propagate: bool,
    /// Which failed attempts are retried at all (Envoy's `retry_on`);
    /// [`RetryOn::ANY`] retries every error.
    pub retry_on: RetryOn,
}

impl EdgePolicy {
    /// A fresh, empty budget bucket for this policy; `None` when the edge
    /// runs without a budget.
    pub fn new_budget(&self) -> Option<EdgeBudget> {
        self.budget.as_ref().map(BudgetModel::new_budget)
    }

    /// Whether `other` asks for the same budget (model and numbers), so a
    /// policy change may keep the tokens already earned.
    pub fn same_budget(&self, other: &EdgePolicy) -> bool {
        self.budget == other.budget
    }
}
