//! One edge's retry budget, whichever model it follows (SPEC section 8).
//!
//! The four budget models of the industry keep different books:
//!
//! | model         | source                                   | moves with                       |
//! |---------------|------------------------------------------|----------------------------------|
//! | `window`      | Finagle RetryBudget, Linkerd, tower      | calls (deposit), retries, time   |
//! | `concurrency` | Envoy `retry_budget`                     | requests and retries in flight   |
//! | `tokens`      | gRPC A6 `retryThrottling`                | failed and successful attempts   |
//! | `quota`       | AWS SDK `standard` retry mode            | retries (cost) and successes     |
//!
//! [`BudgetModel`] is the resolved configuration (a plain `Copy` value in an
//! [`EdgePolicy`](super::policy::EdgePolicy)); [`EdgeBudget`] the live state
//! of one edge, which the middleware keeps under a lock and feeds the four
//! moments of a call: it starts ([`EdgeBudget::call_started`]), an attempt
//! is answered ([`EdgeBudget::answered`]), a retry is asked for
//! ([`EdgeBudget::try_retry`], which hands out a [`Grant`]) and that retry
//! ends ([`EdgeBudget::retry_ended`]), and the call ends
//! ([`EdgeBudget::call_ended`]). Each model reads the moments it has a rule
//! for and ignores the others, so the call loop is the same for all four.
//!
//! ```
//! use std::time::Duration;
//! use error_ownership::edge_budget::{BudgetModel, Answered};
//! use error_ownership::quota::RetryKind;
//!
//! // gRPC: a full bucket of 10 lets a persistent failure be retried four
//! // times, then the bucket sits at or below half and retries stop.
//! let mut b = BudgetModel::GRPC.new_budget();
//! let mut retries = 0;
//! for _ in 0..20 {
//!     b.answered(Answered::Failure, None);
//!     if b.try_retry(Duration::ZERO, RetryKind::Transient).is_some() {
//!         retries += 1;
//!     }
//! }
//! assert_eq!(retries, 4);
//! assert_eq!(b.level(Duration::ZERO).value, 0.0);
//! ```

use std::time::Duration;

use serde::Serialize;

use super::budget::RetryBudget;
use super::concurrency::RetryConcurrency;
use super::quota::{QuotaCosts, RetryCost, RetryKind, RetryQuota};
use super::tokens::RetryThrottle;

/// Which budget model an edge runs, with its numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BudgetModel {
    /// Finagle's RetryBudget: retries ≤ `ratio` × calls over `ttl`, plus
    /// `min_per_sec` retries per second.
    Window {
        /// Retries per call.
        ratio: f64,
        /// Retries per second always allowed.
        min_per_sec: f64,
        /// How long a deposit lives.
        ttl: Duration,
    },
    /// Envoy's retry_budget: retries in flight ≤ max(`percent` % of the
    /// requests open on the edge, `min`).
    Concurrency {
        /// `budget_percent`, 0..=100.
        percent: f64,
        /// `min_retry_concurrency`.
        min: u32,
    },
    /// gRPC A6's retry throttle.
    Tokens {
        /// `max_tokens`.
        max: u32,
        /// `token_ratio`.
        ratio: f64,
    },
    /// The AWS SDKs' retry quota.
    Quota(QuotaCosts),
}

/// The names of the models, as written in `budget_model:`.
pub const MODEL_NAMES: [&str; 4] = ["window", "concurrency", "tokens", "quota"];

impl BudgetModel {
    /// The `finagle` preset's window: 20%, 10 retries a second, 10 s.
    pub const FINAGLE: BudgetModel = BudgetModel::Window {
        ratio: 0.2,
        min_per_sec: 10.0,
        ttl: Duration::from_secs(10),
    };
    /// The `sre` preset's per-client retry budget: retries at most 10% of
    /// requests (the SRE book's number; it gives no window, so Finagle's
    /// 10 s), no floor.
    pub const SRE: BudgetModel = BudgetModel::Window {
        ratio: 0.1,
        min_per_sec: 0.0,
        ttl: Duration::from_secs(10),
    };
    /// The `envoy` preset's budget: 20% of open requests, at least 3.
    pub const ENVOY: BudgetModel = BudgetModel::Concurrency {
        percent: RetryConcurrency::DEFAULT_BUDGET_PERCENT,
        min: RetryConcurrency::DEFAULT_MIN_RETRY_CONCURRENCY,
    };
    /// The `grpc` preset's throttle: 10 tokens, 0.1 per success.
    pub const GRPC: BudgetModel = BudgetModel::Tokens {
        max: RetryThrottle::DEFAULT_MAX_TOKENS,
        ratio: RetryThrottle::DEFAULT_TOKEN_RATIO,
    };
    /// The `aws` preset's quota (standard mode).
    pub const AWS: BudgetModel = BudgetModel::Quota(QuotaCosts::STANDARD);
    /// The `aws-2026` preset's quota.
    pub const AWS_2026: BudgetModel = BudgetModel::Quota(QuotaCosts::AWS_2026);

    /// The model's name (`window`, `concurrency`, `tokens`, `quota`).
    pub fn name(&self) -> &'static str {
        match self {
            BudgetModel::Window { .. } => MODEL_NAMES[0],
            BudgetModel::Concurrency { .. } => MODEL_NAMES[1],
            BudgetModel::Tokens { .. } => MODEL_NAMES[2],
            BudgetModel::Quota(_) => MODEL_NAMES[3],
        }
    }

    /// A fresh budget: an empty window, a full bucket or quota, nothing in
    /// flight.
    pub fn new_budget(&self) -> EdgeBudget {
        match *self {
            BudgetModel::Window {
                ratio,
                min_per_sec,
                ttl,
            } => EdgeBudget::Window(RetryBudget::new(ratio, ttl, min_per_sec)),
            BudgetModel::Concurrency { percent, min } => {
                EdgeBudget::Concurrency(RetryConcurrency::new(percent, min))
            }
            BudgetModel::Tokens { max, ratio } => {
                EdgeBudget::Tokens(RetryThrottle::new(max, ratio))
            }
            BudgetModel::Quota(costs) => EdgeBudget::Quota(RetryQuota::new(costs)),
        }
    }

    /// Whether this budget ever grants a retry: a window of ratio 0 with no
    /// floor, an empty concurrency budget, a bucket too small to stay above
    /// half, or a quota smaller than one retry never does.
    pub fn ever_grants(&self) -> bool {
        match *self {
            BudgetModel::Window {
                ratio, min_per_sec, ..
            } => ratio > 0.0 || min_per_sec > 0.0,
            BudgetModel::Concurrency { percent, min } => percent > 0.0 || min > 0,
            BudgetModel::Tokens { max, .. } => max >= 2,
            BudgetModel::Quota(c) => c.initial >= c.transient.min(c.timeout).min(c.throttling),
        }
    }

    /// The model with its numbers, for a header or a report:
    /// `window 20% +10/s`, `concurrency 20% ≥3`, `tokens 10 (0.1)`,
    /// `quota 500 (5/10)`.
    pub fn describe(&self) -> String {
        match *self {
            BudgetModel::Window {
                ratio, min_per_sec, ..
            } if min_per_sec > 0.0 => {
                format!("window {:.0}% +{min_per_sec}/s", ratio * 100.0)
            }
            BudgetModel::Window { ratio, .. } => format!("window {:.0}%", ratio * 100.0),
            BudgetModel::Concurrency { percent, min } => {
                format!("concurrency {percent}% ≥{min}")
            }
            BudgetModel::Tokens { max, ratio } => format!("tokens {max} ({ratio})"),
            BudgetModel::Quota(c) => {
                format!("quota {} ({}/{})", c.initial, c.transient, c.timeout)
            }
        }
    }
}

/// What one attempt's answer was, as the budgets see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answered {
    /// It succeeded.
    Success,
    /// It failed (an error or no answer): in the lab every error status is
    /// retryable, so gRPC's bucket pays a token for each, retried or not.
    Failure,
}

/// A retry the budget granted, held by the call until the retry ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a grant is handed back when its retry ends"]
pub enum Grant {
    /// Nothing to hand back (window, tokens).
    Free,
    /// A slot among the retries in flight (concurrency).
    InFlight,
    /// The quota's tokens this retry paid (refunded if it succeeds).
    Paid(RetryCost),
}

/// A budget's live level, for a figure: how much it holds now and the most
/// it allows.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Level {
    /// Tokens (window, tokens), quota left, or retries in flight.
    pub value: f64,
    /// The cap: a full bucket or quota, or the retries allowed in flight
    /// now (for a window: the deposits a full `ttl` at this level would
    /// hold is unknown, so the limit is the value itself).
    pub limit: f64,
}

/// One edge's live budget.
#[derive(Debug, Clone)]
pub enum EdgeBudget {
    /// Finagle's window.
    Window(RetryBudget),
    /// Envoy's retries in flight.
    Concurrency(RetryConcurrency),
    /// gRPC's bucket.
    Tokens(RetryThrottle),
    /// The AWS quota.
    Quota(RetryQuota),
}

impl EdgeBudget {
    /// A call (its first attempt) starts on the edge: the window earns its
    /// deposit, the request is open for the concurrency budget.
    pub fn call_started(&mut self, now: Duration) {
        match self {
            EdgeBudget::Window(b) => b.deposit(now),
            EdgeBudget::Concurrency(c) => c.request_started(),
            EdgeBudget::Tokens(_) | EdgeBudget::Quota(_) => {}
        }
    }

    /// Whether [`EdgeBudget::answered`] changes anything: a bucket that
    /// hears successes and failures (gRPC's, the AWS quota). A caller may
    /// skip telling the others (and taking their lock) on every attempt.
    pub fn hears_answers(&self) -> bool {
        matches!(self, EdgeBudget::Tokens(_) | EdgeBudget::Quota(_))
    }

    /// Whether [`EdgeBudget::call_ended`] changes anything: Envoy's
    /// requests in flight.
    pub fn counts_calls(&self) -> bool {
        matches!(self, EdgeBudget::Concurrency(_))
    }

    /// A call ended (answered, given up, or dropped).
    pub fn call_ended(&mut self) {
        if let EdgeBudget::Concurrency(c) = self {
            c.request_ended();
        }
    }

    /// An attempt was answered. `grant` is the grant of the retry this
    /// attempt was, if it was one: a quota refunds a successful retry's
    /// cost, and adds its increment for a success without a retry.
    pub fn answered(&mut self, answer: Answered, grant: Option<Grant>) {
        match (self, answer) {
            (EdgeBudget::Tokens(t), Answered::Success) => t.on_success(),
            (EdgeBudget::Tokens(t), Answered::Failure) => {
                t.on_retryable_failure();
            }
            (EdgeBudget::Quota(q), Answered::Success) => q.on_success(match grant {
                Some(Grant::Paid(cost)) => Some(cost),
                _ => None,
            }),
            _ => {}
        }
    }

    /// Asks for a retry after a failure of `kind` at `now`; `None` denies
    /// it and changes nothing.
    pub fn try_retry(&mut self, now: Duration, kind: RetryKind) -> Option<Grant> {
        match self {
            EdgeBudget::Window(b) => b.try_withdraw(now).then_some(Grant::Free),
            EdgeBudget::Concurrency(c) => c.try_start_retry().then_some(Grant::InFlight),
            EdgeBudget::Tokens(t) => t.retry_allowed().then_some(Grant::Free),
            EdgeBudget::Quota(q) => q.try_acquire(kind).map(Grant::Paid),
        }
    }

    /// The retry holding `grant` ended, whatever its answer (or it never
    /// got one: its call was dropped).
    pub fn retry_ended(&mut self, grant: Grant) {
        if let (EdgeBudget::Concurrency(c), Grant::InFlight) = (self, grant) {
            c.retry_ended();
        }
    }

    /// The level a person watches drain.
    pub fn level(&mut self, now: Duration) -> Level {
        match self {
            EdgeBudget::Window(b) => {
                let v = b.available(now);
                Level { value: v, limit: v }
            }
            EdgeBudget::Concurrency(c) => Level {
                value: c.retries_in_flight() as f64,
                limit: c.allowed() as f64,
            },
            EdgeBudget::Tokens(t) => Level {
                value: t.tokens(),
                limit: f64::from(t.max_tokens()),
            },
            EdgeBudget::Quota(q) => Level {
                value: f64::from(q.available()),
                limit: f64::from(q.capacity()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const T0: Duration = Duration::ZERO;

    #[test]
    fn grpc_stops_after_the_fifth_failure_and_resumes_after_successes() {
        let mut b = BudgetModel::GRPC.new_budget();
        let mut allowed = vec![];
        for _ in 0..6 {
            b.answered(Answered::Failure, None);
            allowed.push(b.try_retry(T0, RetryKind::Transient).is_some());
        }
        // 9, 8, 7, 6 tokens: retried; 5 (≤ 10/2) from the fifth failure on.
        assert_eq!(allowed, [true, true, true, true, false, false]);
        // Tokens sit at 4; 11 successes bring them to 5.1 > 5.
        for _ in 0..10 {
            b.answered(Answered::Success, None);
        }
        assert!(
            b.try_retry(T0, RetryKind::Transient).is_none(),
            "5.0 is not above 5"
        );
        b.answered(Answered::Success, None);
        assert!(b.try_retry(T0, RetryKind::Transient).is_some());
    }

    #[test]
    fn aws_pays_for_exactly_a_hundred_retries_from_a_fresh_quota() {
        let mut b = BudgetModel::AWS.new_budget();
        let n = (0..1000)
            .filter(|_| {
                b.answered(Answered::Failure, None);
                b.try_retry(T0, RetryKind::Transient).is_some()
            })
            .count();
        assert_eq!(n, 100);
        assert_eq!(b.level(T0).value, 0.0);
        let mut b = BudgetModel::AWS_2026.new_budget();
        let n = (0..1000)
            .filter(|_| b.try_retry(T0, RetryKind::Transient).is_some())
            .count();
        assert_eq!(n, 35, "500 / 14");
    }

    #[test]
    fn aws_refunds_a_successful_retry_and_adds_one_for_a_first_success() {
        let mut b = BudgetModel::AWS.new_budget();
        let g = b.try_retry(T0, RetryKind::Timeout);
        assert_eq!(b.level(T0).value, 490.0);
        b.answered(Answered::Success, g);
        assert_eq!(b.level(T0).value, 500.0);
        let g = b.try_retry(T0, RetryKind::Transient);
        b.answered(Answered::Failure, g);
        b.answered(Answered::Success, None);
        assert_eq!(b.level(T0).value, 496.0);
    }

    #[test]
    fn finagle_allows_a_fifth_of_calls_plus_ten_a_second() {
        // 100 calls a second for 5 s, each asking for one retry at once:
        // 0.2 × 500 + 10 × 5 = 150 retries (the reserve starts empty).
        let mut b = BudgetModel::FINAGLE.new_budget();
        let mut granted = 0;
        for ms in (0..5000).step_by(10) {
            let now = Duration::from_millis(ms);
            b.call_started(now);
            granted += usize::from(b.try_retry(now, RetryKind::Transient).is_some());
        }
        assert!((149..=151).contains(&granted), "{granted}");
    }

    #[test]
    fn window_ratios_are_exact_not_rounded_through_a_reciprocal() {
        // tower's TpsBudget turned 0.15 into 1/6 (tower issue #857).
        let mut b = BudgetModel::Window {
            ratio: 0.15,
            min_per_sec: 0.0,
            ttl: Duration::from_secs(10),
        }
        .new_budget();
        for _ in 0..1000 {
            b.call_started(T0);
        }
        let n = (0..1000)
            .filter(|_| b.try_retry(T0, RetryKind::Transient).is_some())
            .count();
        assert_eq!(n, 150);
    }

    #[test]
    fn envoy_counts_a_retry_until_it_ends() {
        let mut b = BudgetModel::ENVOY.new_budget();
        let grants: Vec<_> = (0..4)
            .filter_map(|_| b.try_retry(T0, RetryKind::Transient))
            .collect();
        assert_eq!(grants.len(), 3, "the floor of 3 on a quiet edge");
        assert_eq!(
            b.level(T0),
            Level {
                value: 3.0,
                limit: 3.0
            }
        );
        b.retry_ended(grants[0]);
        assert!(b.try_retry(T0, RetryKind::Transient).is_some());
    }

    proptest! {
        /// Whatever the interleaving of calls and retries, Envoy's budget
        /// never has more retries in flight than max(20% of open requests
        /// at the time of the grant, 3).
        #[test]
        fn envoy_never_exceeds_its_cap(ops in prop::collection::vec(0u8..5, 1..400)) {
            let mut b = BudgetModel::ENVOY.new_budget();
            let (mut open, mut held) = (0u64, Vec::new());
            for op in ops {
                match op {
                    0 => { b.call_started(T0); open += 1; }
                    1 if open > 0 => { b.call_ended(); open -= 1; }
                    2 | 3 => {
                        if let Some(g) = b.try_retry(T0, RetryKind::Transient) {
                            held.push(g);
                            let cap = (open / 5).max(3);
                            prop_assert!(held.len() as u64 <= cap, "{} > {cap}", held.len());
                        }
                    }
                    _ => if let Some(g) = held.pop() { b.retry_ended(g); },
                }
                prop_assert_eq!(b.level(T0).value, held.len() as f64);
            }
        }

        /// A quota never goes below zero nor above its capacity, and a
        /// denied retry takes nothing.
        #[test]
        fn a_quota_stays_within_bounds(ops in prop::collection::vec(0u8..4, 1..600)) {
            let mut b = BudgetModel::AWS.new_budget();
            let mut last = None;
            for op in ops {
                let before = b.level(T0).value;
                match op {
                    0 => { let g = b.try_retry(T0, RetryKind::Transient);
                           if g.is_none() { prop_assert_eq!(b.level(T0).value, before); }
                           last = g.or(last); }
                    1 => { let g = b.try_retry(T0, RetryKind::Timeout); last = g.or(last); }
                    2 => b.answered(Answered::Success, last.take()),
                    _ => b.answered(Answered::Failure, last.take()),
                }
                let v = b.level(T0).value;
                prop_assert!((0.0..=500.0).contains(&v));
            }
        }
    }
}
