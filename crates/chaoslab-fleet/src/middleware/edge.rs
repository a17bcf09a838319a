//! One edge's runtime state as the client drives it: where it goes (the
//! callee's replicas and their balancer), the policy in force, and the
//! state its policy keeps between calls (budget, breaker, throttle,
//! outlier detection), each behind its own lock; and one call's dealings
//! with the budget.
//!
//! Outlier detection is the caller's view of its callee's replicas, as
//! each client proxy keeps its own (SPEC section 17): one detector per
//! edge, shared by the caller's replicas in one process as its budget and
//! breaker are, counting on the balancer's clock. Every answered attempt
//! is reported to it ([`EdgeState::outlier_heard`]); an ejection it
//! decides is handed to the balancer, which sends the replica nothing
//! until then.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use tokio::time::Instant;

use super::balance::Balancer;
use super::slots::Slots;
use crate::sidecar::retries::CallNumbers;
use error_ownership::breaker::{Breaker, BreakerState};
use error_ownership::edge_budget::{Answered, EdgeBudget, Grant, Level};
use error_ownership::outlier::{Answer, OutlierConfig, Outliers};
use error_ownership::policy::{EdgePolicy, Lb};
use error_ownership::quota::RetryKind;
use error_ownership::throttle::AdaptiveThrottle;
use error_ownership::{Claim, Classified, DependencyMode};

/// One edge's runtime state: where it goes, its policy, its budget.
#[derive(Debug)]
pub struct EdgeState {
    /// The edge's id (as the caller indexes edges).
    pub id: usize,
    /// The callee's id (as the caller indexes dependencies).
    pub dependency: usize,
    /// Fail-close or fail-open.
    pub mode: DependencyMode,
    /// The callee's replicas and how attempts spread over them.
    pub(super) balancer: Balancer,
    /// Read on every call from every worker thread: an `ArcSwap` reads
    /// without writing to a shared cache line.
    pub(super) policy: ArcSwap<EdgePolicy>,
    budget: Mutex<Option<EdgeBudget>>,
    breaker: Mutex<Option<Breaker>>,
    throttle: Mutex<Option<AdaptiveThrottle>>,
    outliers: Mutex<Option<Outliers>>,
    /// Attempts in flight on this edge, like a client's connection pool.
    pub(super) slots: Slots,
    /// Whether the callee is served by this process, and so reached over
    /// the client's mesh connections when it has them.
    pub(super) in_process: bool,
    /// Through a sidecar proxy: its calls' numbers, which let the callee
    /// count the proxy's retries (see [`crate::sidecar::retries`]).
    pub(super) proxied: Option<CallNumbers>,
}

/// Attempts one edge keeps in flight at most. An attempt that cannot get a
/// slot within its timeout fails with no response, as a request waiting
/// for an exhausted connection pool does; this bounds the connections (and
/// so the memory) a storm can open, whatever the load.
pub const MAX_IN_FLIGHT_PER_EDGE: usize = 256;

impl EdgeState {
    /// A new edge to `url` under `policy`.
    pub fn new(
        id: usize,
        dependency: usize,
        mode: DependencyMode,
        url: impl Into<String>,
        policy: EdgePolicy,
    ) -> EdgeState {
        Self::balanced(
            id,
            dependency,
            mode,
            Balancer::new(vec![url.into()], Lb::RoundRobin, true),
            policy,
        )
    }

    /// A new edge to a callee of several replicas, spread by `balancer`.
    pub fn balanced(
        id: usize,
        dependency: usize,
        mode: DependencyMode,
        balancer: Balancer,
        policy: EdgePolicy,
    ) -> EdgeState {
        let budget = policy.new_budget();
        let breaker = policy.breaker.map(Breaker::new);
        let throttle = policy.throttle.map(AdaptiveThrottle::new);
        let outliers = detector(policy.outlier, &balancer);
        EdgeState {
            id,
            dependency,
            mode,
            balancer,
            policy: ArcSwap::from_pointee(policy),
            budget: Mutex::new(budget),
            breaker: Mutex::new(breaker),
            throttle: Mutex::new(throttle),
            outliers: Mutex::new(outliers),
            slots: Slots::new(MAX_IN_FLIGHT_PER_EDGE),
            in_process: false,
            proxied: None,
        }
    }

    /// The same edge to a callee served by this process: a client with
    /// mesh connections ([`RetryClient::with_mesh`]) calls it over them.
    pub fn in_process(mut self) -> EdgeState {
        self.in_process = true;
        self
    }

    /// The same edge through a sidecar proxy at the balancer's URL: each
    /// call carries its number, and is never called over the mesh.
    pub fn through_sidecar(mut self) -> EdgeState {
        self.proxied = Some(CallNumbers::new());
        self.in_process = false;
        self
    }

    /// The callee's URL (its first replica's).
    pub fn url(&self) -> &str {
        self.balancer.first_url()
    }

    /// How its attempts spread over the callee's replicas.
    pub fn balancer(&self) -> &Balancer {
        &self.balancer
    }

    /// The policy in force.
    pub fn policy(&self) -> Arc<EdgePolicy> {
        self.policy.load_full()
    }

    /// The per-attempt timeout of the policy in force.
    pub(crate) fn timeout(&self) -> Duration {
        self.policy.load().timeout
    }

    /// Changes the policy. The budget keeps its tokens unless its ratio,
    /// ttl or floor changed.
    pub fn set_policy(&self, policy: EdgePolicy) {
        let old = self.policy();
        if !old.same_budget(&policy) {
            *self.budget.lock().unwrap_or_else(|e| e.into_inner()) = policy.new_budget();
        }
        if old.breaker != policy.breaker {
            *self.breaker.lock().unwrap_or_else(|e| e.into_inner()) =
                policy.breaker.map(Breaker::new);
        }
        if old.throttle != policy.throttle {
            *self.throttle.lock().unwrap_or_else(|e| e.into_inner()) =
                policy.throttle.map(AdaptiveThrottle::new);
        }
        if old.outlier != policy.outlier {
            // A new detector starts with every replica in service (and
            // its sweeps from now), as Envoy's does when a cluster's
            // outlier detection changes.
            let mut o = self.outliers.lock().unwrap_or_else(|e| e.into_inner());
            *o = detector(policy.outlier, &self.balancer);
            self.balancer.clear_ejections();
        }
        self.policy.store(Arc::new(policy));
    }

    pub(super) fn with_budget<T>(&self, f: impl FnOnce(&mut EdgeBudget) -> T) -> Option<T> {
        self.budget
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            .map(f)
    }

    pub(super) fn with_throttle<T>(&self, f: impl FnOnce(&mut AdaptiveThrottle) -> T) -> Option<T> {
        self.throttle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            .map(f)
    }

    /// The throttle's `(requests, accepts)` over its window at `now`, on
    /// the edge's client clock; `None` on an edge without one.
    pub fn throttle_counts(&self, now: Duration) -> Option<(u64, u64)> {
        self.with_throttle(|t| t.counts(now))
    }

    pub(super) fn with_breaker<T>(&self, f: impl FnOnce(&mut Breaker) -> T) -> Option<T> {
        self.breaker
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            .map(f)
    }

    /// An attempt on replica `replica` was answered with `status` (`None`:
    /// no answer: refused, reset or timed out) and classified as `class`:
    /// the edge's outlier detection counts it, and ejects the replica
    /// from the balancer if this was one failure too many. Does nothing
    /// on an edge without outlier detection or to a callee of one
    /// replica.
    pub fn outlier_heard(&self, replica: usize, status: Option<u16>, class: Classified) {
        if self.balancer.replicas() < 2 || self.policy.load().outlier.is_none() {
            return;
        }
        let answer = Answer::of(status, class.claim().unwrap_or(Claim::Missing));
        let mut guard = self.outliers.lock().unwrap_or_else(|e| e.into_inner());
        let Some(o) = guard.as_mut() else { return };
        let now = self.balancer.now();
        if let Some(until) = o.record(replica, answer, now) {
            self.balancer.eject(replica, until);
        }
    }

    /// The budget's level and the breaker's state at `now` on the edge's
    /// client clock (see [`RetryClient::now`]); `None` for what the edge
    /// does not run. Read once a sample, for the gauges.
    pub fn live(&self, now: Duration) -> (Option<Level>, Option<BreakerState>) {
        (
            self.with_budget(|b| b.level(now)),
            self.with_breaker(|b| b.state(now)),
        )
    }
}

/// An outlier detector over the balancer's replicas, from its clock's
/// now, when the policy asks for one.
fn detector(cfg: Option<OutlierConfig>, balancer: &Balancer) -> Option<Outliers> {
    cfg.map(|c| Outliers::new(c, balancer.replicas(), balancer.now()))
}

/// One call's dealings with its edge's budget: the call is open on the
/// edge until this is dropped, and so is the retry holding `grant`. Dropped
/// when the call ends, or when its future is dropped mid-way (its own
/// caller went away): either way the budget hears of it once. On an edge
/// without a budget it touches neither the lock nor the clock; on one
/// whose budget only hears calls and retries (Finagle's window), the lock
/// once a call that is not retried.
pub(super) struct Books<'a> {
    edge: &'a EdgeState,
    /// The calling client's clock's zero (see `RetryClient::now`).
    epoch: Instant,
    /// What the budget the call started on is to hear (none without one).
    hears: Hears,
    grant: Option<Grant>,
}

/// Which of a call's events its budget is to hear beyond its start and
/// its retries, as the budget said when the call started: a budget
/// replaced mid-call (a policy step) hears of the call no more than the
/// one it started on would have.
#[derive(Clone, Copy, Default)]
struct Hears {
    budgeted: bool,
    answers: bool,
    end: bool,
}

impl<'a> Books<'a> {
    /// Opens a call at `now` (the clock the caller read as it began).
    pub(super) fn open(
        edge: &'a EdgeState,
        epoch: Instant,
        budgeted: bool,
        now: Instant,
    ) -> Books<'a> {
        let mut hears = Hears {
            budgeted,
            ..Hears::default()
        };
        if budgeted {
            let now = now.saturating_duration_since(epoch);
            edge.with_budget(|b| {
                b.call_started(now);
                hears.answers = b.hears_answers();
                hears.end = b.counts_calls();
            });
        }
        Books {
            edge,
            epoch,
            hears,
            grant: None,
        }
    }

    /// An attempt was answered: the budget learns how, and the retry it
    /// was (if it was one) ends.
    pub(super) fn answered(&mut self, answer: Classified) {
        let held = self.grant.take();
        if !self.hears.answers && held.is_none() {
            return;
        }
        let how = match answer {
            Classified::Success => Answered::Success,
            _ => Answered::Failure,
        };
        self.edge.with_budget(|b| {
            b.answered(how, held);
            if let Some(g) = held {
                b.retry_ended(g);
            }
        });
    }

    /// Asks the budget for a retry after a failure of `kind`: `true`
    /// grants it (always, on an edge without a budget).
    pub(super) fn try_retry(&mut self, kind: RetryKind) -> bool {
        if !self.hears.budgeted {
            return true;
        }
        let now = Instant::now().saturating_duration_since(self.epoch);
        self.grant = self.edge.with_budget(|b| b.try_retry(now, kind)).flatten();
        self.grant.is_some()
    }
}

impl Drop for Books<'_> {
    fn drop(&mut self) {
        let held = self.grant.take();
        if !self.hears.end && held.is_none() {
            return;
        }
        self.edge.with_budget(|b| {
            if let Some(g) = held {
                b.retry_ended(g);
            }
            b.call_ended();
        });
    }
}
