//! The analytical model: what a topology *should* do under a policy and its
//! faults, computed in linear time, so a live run can be checked against it.
//!
//! # Why a model
//!
//! The lab's numbers are measured on real sockets, and a measurement is
//! only convincing next to the figure the mechanism predicts. For Uber's
//! chain A→B→C→D→E→F→G with D failing every request the model gives, per
//! root request:
//!
//! | policy | A | B | C | D..G |
//! |---|---|---|---|---|
//! | `retry`, R=2 | 1 | 2 | 4 | 8 |
//! | `budget`, R=2, B=0.1 | 1 | 1.1 | 1.21 | 1.331 |
//! | `ownership`, R=2, B=0.1 | 1 | 1 | 1 | 1.1 |
//!
//! # Method
//!
//! Every service's *response* to one invocation is a distribution over
//! success, claimed error, unclaimed error and missing claim. It is computed
//! bottom-up (reverse topological order) from the callees' distributions:
//!
//! * a call on an edge with `attempts` R sees, per attempt, the callee's
//!   distribution; [`error_ownership::retry::decide`] says which answers
//!   are retry-eligible (probability `e`) and which are suppressed. Without
//!   a budget a call makes `Σ_{k<R} e^k` attempts. With a budget B each
//!   retry is granted with a probability `q`, chosen so the expected
//!   retries per first attempt are `min(unbudgeted, B)`; for R=2 that is
//!   `min(e, B)` retries per call, and the caller of a callee failing at
//!   random with probability p sees `1 − (p − min(p, B)(1 − p))`;
//! * the service makes its calls (in order, stopping at the first failing
//!   fail-close call, or all at once with `parallel`), its own fault fires
//!   before or after them, and the claim on its error is decided by
//!   [`error_ownership::claim::decide`] from what its calls did (a dropped
//!   context leaves that record empty, so it claims); `ownership: false`,
//!   `url` and `down` services answer with no claim (*missing*).
//!
//! Calls are assumed independent. Then invocation rates flow top-down from
//! the entry (1 per root request), and each edge's first attempts, retries,
//! suppressed retries and budget denials follow. The storm radius is the
//! longest path of consecutive edges that send retries. Latency, timeouts,
//! `capacity` and `min_per_sec` are not modelled here; [`capacity`] adds
//! what `workers` imply (utilisation, capacity and the recovery threshold
//! of a storm of timeouts) on top of these loads.
//!
//! ```
//! use chaoslab_model::topology::{model, Preset, Topology};
//!
//! let t = Topology::from_yaml(
//!     "name: t\nservices:\n  A: { calls: [B] }\n  B: { calls: [C] }\n  C: { fault: { error_rate: 1.0 } }\n",
//!     "t.yaml",
//! ).unwrap();
//! let mut p = t.policy.clone();
//! p.apply_preset(Preset::Retry);
//! let loads: Vec<f64> = model::predict(&t, &p).services.iter().map(|s| s.load).collect();
//! assert_eq!(loads, [1.0, 2.0, 4.0]);
//! assert_eq!(model::static_radius(&t, &p), 2);
//! ```

mod breaker;
mod budget;
mod call;
pub mod capacity;
mod codes;
mod eval;
mod hedge;
pub mod limit;
pub mod outlier;
mod proxied;
mod radius;
pub mod spread;
mod storm;
pub mod throttle;
pub mod window;

use super::{Policy, ServiceId, Topology};
use budget::EdgeRates;
use call::failed_call;
use error_ownership::edge_budget::BudgetModel;
use eval::{CallOutcome, Dist, EdgeCall, Model, Record};

pub use radius::{per_root as static_radius_per_root, static_radius, worst_failure};
pub use storm::{storm_map, StormRow};

/// Retries per root request below this count as none (floating-point dust).
const EPS: f64 = 1e-12;

/// What the model predicts for a topology under a policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// Per service, in [`Topology::services`] order.
    pub services: Vec<ServicePrediction>,
    /// Per edge, in [`Topology::edges`] order.
    pub edges: Vec<EdgePrediction>,
    /// The probability that a root request succeeds (over every root, by
    /// its share of the root requests).
    pub root_availability: f64,
    /// Per root (in `load.roots` order), the probability that one of its
    /// requests succeeds.
    pub roots: Vec<f64>,
    /// The longest path of consecutive edges that send retries.
    pub storm_radius: usize,
    /// How much each service's count varies by chance per root request.
    pub spread: spread::Spread,
}

/// One service's predicted figures.
#[derive(Debug, Clone, PartialEq)]
pub struct ServicePrediction {
    /// Invocations (attempts it receives) per root request.
    pub load: f64,
    /// `load / multiplicity` (1.0 if the multiplicity is 0).
    pub amplification: f64,
    /// Probability that one invocation's response is an error.
    pub p_error: f64,
    /// ... an error it claims.
    pub p_claimed: f64,
    /// ... an error it disowns.
    pub p_unclaimed: f64,
    /// ... an error with no claim (no middleware, outside, or down).
    pub p_missing: f64,
    /// When its fault is on some of its replicas only: how those and the
    /// others answer.
    pub split: Option<ReplicaSplit>,
}

/// A service whose fault is on some of its replicas: the shares of the
/// answers of a bad and of a good replica that are claimed, unclaimed and
/// unmarked (missing) errors.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReplicaSplit {
    /// How many replicas run the fault.
    pub bad_replicas: u32,
    /// A bad replica's (claimed, unclaimed, missing).
    pub bad: (f64, f64, f64),
    /// A good replica's.
    pub good: (f64, f64, f64),
}

/// One edge's predicted figures, per root request.
#[derive(Debug, Clone, PartialEq)]
pub struct EdgePrediction {
    /// First attempts (logical calls).
    pub first_attempts: f64,
    /// Retries sent.
    pub retries: f64,
    /// Retries not sent because the callee's error was unclaimed.
    pub suppressed: f64,
    /// Retries refused by the budget.
    pub budget_denied: f64,
}

/// Predicts every service's load and outcome, and every edge's retries,
/// under `policy` (with each edge's overrides) and the faults in `t`.
pub fn predict(t: &Topology, policy: &Policy) -> Prediction {
    predict_with_latency(t, policy, None)
}

/// [`predict`], knowing how long one attempt takes on each edge (seconds,
/// in [`Topology::edges`] order, e.g. measured): what a `concurrency`
/// budget lets through depends on it, and without it the model assumes
/// the cap never binds.
pub fn predict_with_latency(
    t: &Topology,
    policy: &Policy,
    attempt_latency_s: Option<&[f64]>,
) -> Prediction {
    let mut m = Model::new(t, policy);
    let order = m.order.clone();
    // A window's floor and a concurrency cap depend on the edge's calls a
    // second, which depend on the retries granted above it: iterate from
    // the rate-free answer until the loads settle.
    let rate_bound = m.passive.iter().any(Option::is_some)
        || m.policies.iter().any(|p| {
            p.breaker.is_some_and(|b| b.consecutive > 0)
                || matches!(
                    p.budget,
                    Some(BudgetModel::Window { min_per_sec, .. }) if min_per_sec > 0.0
                )
                || matches!(p.budget, Some(BudgetModel::Concurrency { .. }))
                || p.throttle.is_some()
        });
    let mut load = vec![];
    for _ in 0..50 {
        for &v in order.iter().rev() {
            m.dist[v] = m.eval(v, t.services[v].fault_in_force());
        }
        let next = loads(t, &m, &order);
        let settled = next.len() == load.len()
            && next
                .iter()
                .zip(&load)
                .all(|(a, b): (&f64, &f64)| (a - b).abs() < 1e-9);
        load = next;
        if !rate_bound || settled {
            break;
        }
        for (i, e) in t.edges.iter().enumerate() {
            m.rates[i] = Some(EdgeRates {
                first_per_sec: load[e.from] * m.calls[i].per_invocation * t.load.rps,
                attempt_latency_s: attempt_latency_s.and_then(|l| l.get(i).copied()),
                poisson: t.load.arrival == super::Arrival::Poisson,
            });
        }
    }
    let edges: Vec<EdgePrediction> = t
        .edges
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let c = &m.calls[i];
            let first = load[e.from] * c.per_invocation;
            EdgePrediction {
                first_attempts: first,
                retries: first * c.out.retries,
                suppressed: first * c.out.suppressed,
                budget_denied: first * c.out.denied,
            }
        })
        .collect();
    let storm_radius = longest_run(t, &order, |e| edges[e].retries > EPS);
    let services = t
        .services
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let d = m.dist[i];
            ServicePrediction {
                load: load[i],
                amplification: if s.multiplicity > 0.0 {
                    load[i] / s.multiplicity
                } else {
                    1.0
                },
                p_error: d.c + d.u + d.m,
                p_claimed: d.c,
                p_unclaimed: d.u,
                p_missing: d.m,
                split: m.split[i].map(|s| ReplicaSplit {
                    bad_replicas: s.bad,
                    bad: (s.bad_dist.c, s.bad_dist.u, s.bad_dist.m),
                    good: (s.good_dist.c, s.good_dist.u, s.good_dist.m),
                }),
            }
        })
        .collect();
    let mut p = Prediction {
        services,
        edges,
        spread: spread::Spread::default(),
        root_availability: t
            .load
            .shares()
            .map(|(r, w)| w * m.dist.get(r).map_or(1.0, |d| d.s))
            .sum(),
        roots: t
            .load
            .roots
            .iter()
            .map(|r| m.dist.get(r.entry).map_or(1.0, |d| d.s))
            .collect(),
        storm_radius,
    };
    p.spread = spread::spread(t, &p);
    p
}

/// Each service's answer time with no queue and no failure, seconds: its
/// work and latency fault, and its calls' (one after another, or the
/// slowest when it calls in parallel; a sampled call weighed by its
/// share). What a hedge's delay is measured against when no attempt
/// latency was measured.
fn floor_latencies(t: &Topology, order: &[ServiceId]) -> Vec<f64> {
    let mut floor = vec![0.0; t.services.len()];
    for &v in order.iter().rev() {
        let s = &t.services[v];
        let calls = s.calls.iter().map(|&e| {
            let edge = &t.edges[e];
            floor[edge.to]
                * edge.p.clamp(0.0, 1.0)
                * if s.parallel {
                    1.0
                } else {
                    f64::from(edge.count)
                }
        });
        let below = if s.parallel {
            calls.fold(0.0, f64::max)
        } else {
            calls.sum()
        };
        floor[v] = (s.work + s.fault_in_force().latency).as_secs_f64() + below;
    }
    floor
}

/// Invocations per root request of every service, top-down from the entry.
fn loads(t: &Topology, m: &Model<'_>, order: &[ServiceId]) -> Vec<f64> {
    let mut load = vec![0.0; t.services.len()];
    for (r, w) in t.load.shares() {
        if let Some(l) = load.get_mut(r) {
            *l += w;
        }
    }
    for &v in order {
        for &e in &t.services[v].calls {
            let c = &m.calls[e];
            load[t.edges[e].to] += load[v] * c.per_invocation * c.out.attempts;
        }
    }
    load
}

/// The longest path of consecutive edges that hold `hot`.
fn longest_run(t: &Topology, order: &[ServiceId], hot: impl Fn(usize) -> bool) -> usize {
    let mut best_in = vec![0usize; t.services.len()];
    let mut radius = 0;
    for &v in order {
        for &e in &t.services[v].calls {
            if hot(e) {
                let run = best_in[v] + 1;
                let w = t.edges[e].to;
                best_in[w] = best_in[w].max(run);
                radius = radius.max(run);
            }
        }
    }
    radius
}

#[cfg(test)]
mod tests;
