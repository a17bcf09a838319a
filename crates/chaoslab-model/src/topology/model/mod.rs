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
mod hedge;
pub mod limit;
pub mod outlier;
mod proxied;
mod radius;
pub mod spread;
mod storm;
pub mod throttle;
pub mod window;

use super::mesh::Passed;
use super::proxy::{AsRun, Passive, Reselect};
use super::{EdgePolicy, Fault, Phase, Policy, Service, ServiceId, Topology};
use budget::EdgeRates;
use call::failed_call;
use call::{call_outcome, Callee, Split};
use codes::Codes;
use error_ownership::claim::{self, ClaimReason, Outbound};
use error_ownership::conditions::Failure;
use error_ownership::edge_budget::BudgetModel;
use error_ownership::{is_error_status, Attribution, Claim, DependencyMode};

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

/// A response distribution: success, claimed, unclaimed, missing.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Dist {
    s: f64,
    c: f64,
    u: f64,
    m: f64,
    /// How its errors failed: statuses, timeouts, refused connections.
    codes: Codes,
}

impl Dist {
    const HEALTHY: Dist = Dist {
        s: 1.0,
        c: 0.0,
        u: 0.0,
        m: 0.0,
        codes: Codes::NONE,
    };

    /// Every attempt times out: no response, so no claim.
    const MISSING: Dist = Dist {
        s: 0.0,
        c: 0.0,
        u: 0.0,
        m: 1.0,
        codes: Codes::of(Failure::Timeout),
    };

    fn of(&self, claim: Claim) -> f64 {
        match claim {
            Claim::Claimed => self.c,
            Claim::Unclaimed => self.u,
            Claim::Missing => self.m,
        }
    }
}

/// What a service's dependency analysis holds, as far as the claim rule
/// cares, ordered so that combining two records is `max`: nothing failed;
/// only (effectively) fail-open calls failed; fail-close failures that all
/// leave rule 5's criteria unsatisfied; a fail-close failure that
/// satisfied them (or was not eligible).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Record {
    Clean = 0,
    OpenOnly = 1,
    Unsatisfied = 2,
    Satisfied = 3,
}

impl Record {
    const ALL: [Record; 4] = [
        Record::Clean,
        Record::OpenOnly,
        Record::Unsatisfied,
        Record::Satisfied,
    ];

    /// How one failed call shows in the record, by the claim rule itself.
    fn of_failure(o: Outbound, attribution: Attribution) -> Record {
        let d = claim::decide(&[o], attribution, true, |o| o.mode);
        match d.reason {
            ClaimReason::NoDependencyFailed => Record::Clean,
            ClaimReason::OnlyFailOpen => Record::OpenOnly,
            ClaimReason::AtLeastOnce => Record::Unsatisfied,
            ClaimReason::FailCloseDependency => Record::Satisfied,
        }
    }

    /// One failed call that shows as this record (attribution applied).
    fn representative(self) -> Option<Outbound> {
        let failed = |mode, sat| Outbound {
            dependency: 0,
            mode,
            failed: true,
            claim_seen: Some(Claim::Claimed),
            criteria_satisfied: sat,
        };
        match self {
            Record::Clean => None,
            Record::OpenOnly => Some(failed(DependencyMode::FailOpen, true)),
            Record::Unsatisfied => Some(failed(DependencyMode::FailClose, false)),
            Record::Satisfied => Some(failed(DependencyMode::FailClose, true)),
        }
    }

    /// Whether a service whose error comes with this record claims it.
    fn claims(self, at_least_once: bool) -> bool {
        let rep: Vec<Outbound> = self.representative().into_iter().collect();
        claim::decide(&rep, Attribution::Declared, at_least_once, |o| o.mode).claimed
    }
}

/// One logical call (all its attempts) on an edge, per call made.
#[derive(Debug, Clone, Copy, Default)]
struct CallOutcome {
    attempts: f64,
    retries: f64,
    suppressed: f64,
    denied: f64,
    ok: f64,
    /// Probability of failing, by how the failure shows in the record.
    fail: [f64; 4],
}

/// An edge as evaluated for its caller's invocation.
#[derive(Debug, Clone, Copy, Default)]
struct EdgeCall {
    /// Logical calls made per invocation of the caller.
    per_invocation: f64,
    out: CallOutcome,
}

struct Model<'a> {
    t: &'a Topology,
    policies: Vec<EdgePolicy>,
    order: Vec<ServiceId>,
    dist: Vec<Dist>,
    calls: Vec<EdgeCall>,
    /// Each edge's traffic, once a pass has computed the loads.
    rates: Vec<Option<EdgeRates>>,
    /// Each service's answer time with no queue, seconds
    /// ([`floor_latencies`]).
    floor_s: Vec<f64>,
    /// Per service, its bad and good replicas when its fault is on some of
    /// them only (as last evaluated).
    split: Vec<Option<Split>>,
    /// Per edge, where a retry goes: to a replica the call has not tried
    /// (`retry_other_host`, nginx, HAProxy's redispatch), the same one
    /// (HAProxy's `retries`) or any; every balancer draws a retry's
    /// replica uniformly from those it may take.
    reselect: Vec<Reselect>,
    /// Per edge through an nginx sidecar that takes failing servers out,
    /// how (see [`proxied`]).
    passive: Vec<Option<Passive>>,
    /// Each edge's call as a healthy evaluation left it, and the one
    /// service whose answer differs from it: an edge to any other is
    /// taken from here rather than evaluated again (the storm map's
    /// climb, where one callee at a time fails).
    reuse: Option<(Vec<CallOutcome>, ServiceId)>,
}

impl<'a> Model<'a> {
    fn new(t: &'a Topology, policy: &Policy) -> Model<'a> {
        let n = t.services.len();
        // A validated topology is acyclic; a hand-built cyclic one gets file
        // order, which is wrong but finite.
        let order =
            super::topological_order(&t.services, &t.edges).unwrap_or_else(|_| (0..n).collect());
        let floor_s = floor_latencies(t, &order);
        // Each edge as its retrier runs it: the lab's client, or the
        // caller's sidecar proxy (SPEC section 17).
        let runs: Vec<AsRun> = (0..t.edges.len())
            .map(|e| super::proxy::edge_as_run(t, policy, e))
            .collect();
        Model {
            t,
            policies: runs.iter().map(|r| r.policy).collect(),
            order,
            dist: vec![Dist::HEALTHY; n],
            calls: vec![EdgeCall::default(); t.edges.len()],
            rates: vec![None; t.edges.len()],
            split: vec![None; n],
            reselect: runs.iter().map(|r| r.reselect).collect(),
            passive: runs.iter().map(|r| r.passive).collect(),
            reuse: None,
            floor_s,
        }
    }

    /// How service `v` answers its callers: as one, or split into its bad
    /// and good replicas while its distribution is the one `eval` left.
    fn callee(&self, v: ServiceId) -> Callee {
        match self.split[v] {
            Some(s) if s.mix() == self.dist[v] => Callee::Split(s),
            _ => Callee::One(self.dist[v]),
        }
    }

    /// Service `v`'s response distribution with `fault`, from its callees'
    /// current distributions; records each of its edges in `calls`. A
    /// fault on some of its replicas only evaluates the bad and the good
    /// replicas apart; its calls are weighed by the bad replicas' share of
    /// the replicas (exact when the fault leaves its calls as they are,
    /// as an error after them does).
    fn eval(&mut self, v: ServiceId, fault: &Fault) -> Dist {
        let n = self.t.services[v].replicas.max(1);
        let share = fault.replica_share(n);
        self.split[v] = None;
        if fault.replicas.is_none() || share >= 1.0 || n == 1 {
            return self.eval_one(v, fault);
        }
        let good_dist = self.eval_one(v, &Fault::default());
        if share <= 0.0 {
            return good_dist;
        }
        let calls = self.t.services[v].calls.clone();
        let good_calls: Vec<f64> = calls
            .iter()
            .map(|&e| self.calls[e].per_invocation)
            .collect();
        let bad_dist = self.eval_one(
            v,
            &Fault {
                replicas: None,
                ..fault.clone()
            },
        );
        for (&e, g) in calls.iter().zip(good_calls) {
            let b = self.calls[e].per_invocation;
            self.calls[e].per_invocation = share * b + (1.0 - share) * g;
        }
        let split = Split {
            bad_dist,
            good_dist,
            bad: (share * f64::from(n)).round() as u32,
            n,
        };
        self.split[v] = Some(split);
        split.mix()
    }

    /// One edge's call to `callee` as its policy and proxy make it.
    fn outcome(&self, e: usize, callee: Callee) -> CallOutcome {
        let t = self.t;
        let edge = &t.edges[e];
        let attribution = t.ownership.attribution;
        let mut out = call_outcome(
            &self.policies[e],
            callee,
            self.reselect[e],
            (edge.mode, attribution),
            self.rates[e],
            self.rates[e]
                .and_then(|r| r.attempt_latency_s)
                .unwrap_or(self.floor_s[edge.to]),
            call::claims_retried(&self.policies[e], &t.ownership.header),
        );
        if let (Some(passive), Some(rates)) = (self.passive[e], self.rates[e]) {
            proxied::passive_check(
                &mut out,
                passive,
                callee,
                rates.first_per_sec,
                &self.policies[e],
                (edge.mode, attribution),
            );
        }
        out
    }

    /// [`eval`](Self::eval) for a fault on every replica.
    fn eval_one(&mut self, v: ServiceId, fault: &Fault) -> Dist {
        let t = self.t;
        let s = &t.services[v];
        for &e in &s.calls {
            self.calls[e] = EdgeCall::default();
        }
        let rate = if is_error_status(fault.status) {
            fault.error_rate.clamp(0.0, 1.0)
        } else {
            0.0
        };
        if fault.down || s.url.is_some() {
            // No listener, or not ours: no calls below, no claim header.
            let f = if fault.down { 1.0 } else { rate };
            return Dist {
                s: 1.0 - f,
                c: 0.0,
                u: 0.0,
                m: f,
                codes: Codes::of(if fault.down {
                    Failure::Refused
                } else {
                    Failure::Status(fault.status)
                }),
            };
        }
        let (before, after) = match fault.phase {
            Phase::Before => (rate, 0.0),
            Phase::After => (0.0, rate),
        };
        let mut err = [0.0; 4];
        err[Record::Clean as usize] = before;
        // Mass still running, by record; for parallel calls, a second row
        // holds the mass in which a fail-close call has failed.
        let mut run = [[0.0; 4]; 2];
        run[0][Record::Clean as usize] = 1.0 - before;
        // The calls' failures, each with how its callee's errors failed.
        let mut failed_calls: Vec<(Codes, f64)> = Vec::new();
        for &e in &s.calls {
            let edge = &t.edges[e];
            let callee = self.callee(edge.to);
            let callee_codes = callee.mix().codes;
            let reused = match &self.reuse {
                Some((outs, failing)) if edge.to != *failing => Some(outs[e]),
                _ => None,
            };
            let out = match reused {
                Some(o) => o,
                None => self.outcome(e, callee),
            };
            let closes = edge.mode == DependencyMode::FailClose;
            let per_invocation = if edge.p >= 1.0 {
                make_calls(&mut run, &mut err, &out, edge.count, closes, s.parallel)
            } else {
                // A sampled call: a share `p` of the mass makes all its
                // calls, the rest goes on as it was.
                let mut made = run.map(|row| row.map(|m| m * edge.p));
                let skipped = run.map(|row| row.map(|m| m * (1.0 - edge.p)));
                let per = make_calls(&mut made, &mut err, &out, edge.count, closes, s.parallel);
                for (r, (m, k)) in run.iter_mut().zip(made.iter().zip(&skipped)) {
                    for (x, (a, b)) in r.iter_mut().zip(m.iter().zip(k)) {
                        *x = a + b;
                    }
                }
                per
            };
            if edge.mode == DependencyMode::FailClose {
                let fails: f64 = out.fail.iter().sum();
                failed_calls.push((callee_codes, per_invocation * fails));
            }
            self.calls[e] = EdgeCall {
                per_invocation,
                out,
            };
        }
        let mut ok = 0.0;
        let mut own = before;
        for st in 0..4 {
            err[st] += run[0][st] * after + run[1][st];
            ok += run[0][st] * (1.0 - after);
            own += run[0][st] * after;
        }
        let passed = match s.errors.passed {
            Passed::Status(c) => Codes::of(Failure::Status(c)),
            Passed::Same => Codes::blend(&failed_calls).passed_same(),
        };
        let total: f64 = err.iter().sum();
        let codes = Codes::blend(&[
            (Codes::of(Failure::Status(fault.status)), own),
            (passed, (total - own).max(0.0)),
        ]);
        response(s, t.ownership.at_least_once, ok, &err, codes)
    }
}

/// Makes the `count` calls of one edge from the mass still running, `run`
/// (by record; a second row for parallel calls holds the mass in which a
/// fail-close call has failed); a failed fail-close sequential call moves
/// its mass to `err`. Returns the calls made per invocation.
fn make_calls(
    run: &mut [[f64; 4]; 2],
    err: &mut [f64; 4],
    out: &CallOutcome,
    count: u32,
    closes: bool,
    parallel: bool,
) -> f64 {
    let mut per_invocation = 0.0;
    for _ in 0..count {
        per_invocation += run[0].iter().sum::<f64>()
            + if parallel {
                run[1].iter().sum::<f64>()
            } else {
                0.0
            };
        let mut next = [[0.0; 4]; 2];
        for (row, masses) in run.iter().enumerate() {
            for (st, &mass) in masses.iter().enumerate() {
                if mass == 0.0 {
                    continue;
                }
                next[row][st] += mass * out.ok;
                for (x, &p) in out.fail.iter().enumerate() {
                    if p == 0.0 {
                        continue;
                    }
                    let to = st.max(x);
                    if !closes {
                        next[row][to] += mass * p;
                    } else if parallel {
                        next[1][to] += mass * p;
                    } else {
                        err[to] += mass * p; // the request has failed
                    }
                }
            }
        }
        *run = next;
    }
    per_invocation
}

/// Service `s`'s response: success `ok`, and its errors `err` (by record)
/// split by the claim it writes on them.
fn response(s: &Service, at_least_once: bool, ok: f64, err: &[f64; 4], codes: Codes) -> Dist {
    let mut d = Dist {
        s: ok,
        c: 0.0,
        u: 0.0,
        m: 0.0,
        codes,
    };
    for (st, &p) in err.iter().enumerate() {
        if !s.ownership {
            d.m += p;
        } else {
            // A dropped context leaves the record empty (rule 4).
            let record = if s.context_dropped {
                Record::Clean
            } else {
                Record::ALL[st]
            };
            if record.claims(at_least_once) {
                d.c += p;
            } else {
                d.u += p;
            }
        }
    }
    d
}

#[cfg(test)]
mod tests;
