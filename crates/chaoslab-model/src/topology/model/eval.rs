//! The evaluation: each service's response distribution, bottom-up from
//! its callees' (see the module above for the method), and what its calls
//! on each edge send.

use super::budget::EdgeRates;
use super::call::{call_outcome, Callee, Split};
use super::codes::Codes;
use crate::topology::mesh::Passed;
use crate::topology::proxy::{AsRun, Passive, Reselect};
use crate::topology::{EdgePolicy, Fault, Phase, Policy, Service, ServiceId, Topology};
use error_ownership::claim::{self, ClaimReason, Outbound};
use error_ownership::conditions::Failure;
use error_ownership::{is_error_status, Attribution, Claim, DependencyMode};

/// A response distribution: success, claimed, unclaimed, missing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Dist {
    pub(super) s: f64,
    pub(super) c: f64,
    pub(super) u: f64,
    pub(super) m: f64,
    /// How its errors failed: statuses, timeouts, refused connections.
    pub(super) codes: Codes,
}

impl Dist {
    pub(super) const HEALTHY: Dist = Dist {
        s: 1.0,
        c: 0.0,
        u: 0.0,
        m: 0.0,
        codes: Codes::NONE,
    };

    /// Every attempt times out: no response, so no claim.
    pub(super) const MISSING: Dist = Dist {
        s: 0.0,
        c: 0.0,
        u: 0.0,
        m: 1.0,
        codes: Codes::of(Failure::Timeout),
    };

    pub(super) fn of(&self, claim: Claim) -> f64 {
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
pub(super) enum Record {
    Clean = 0,
    OpenOnly = 1,
    Unsatisfied = 2,
    Satisfied = 3,
}

impl Record {
    pub(super) const ALL: [Record; 4] = [
        Record::Clean,
        Record::OpenOnly,
        Record::Unsatisfied,
        Record::Satisfied,
    ];

    /// How one failed call shows in the record, by the claim rule itself.
    pub(super) fn of_failure(o: Outbound, attribution: Attribution) -> Record {
        let d = claim::decide(&[o], attribution, true, |o| o.mode);
        match d.reason {
            ClaimReason::NoDependencyFailed => Record::Clean,
            ClaimReason::OnlyFailOpen => Record::OpenOnly,
            ClaimReason::AtLeastOnce => Record::Unsatisfied,
            ClaimReason::FailCloseDependency => Record::Satisfied,
        }
    }

    /// One failed call that shows as this record (attribution applied).
    pub(super) fn representative(self) -> Option<Outbound> {
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
    pub(super) fn claims(self, at_least_once: bool) -> bool {
        let rep: Vec<Outbound> = self.representative().into_iter().collect();
        claim::decide(&rep, Attribution::Declared, at_least_once, |o| o.mode).claimed
    }
}

/// One logical call (all its attempts) on an edge, per call made.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct CallOutcome {
    pub(super) attempts: f64,
    pub(super) retries: f64,
    pub(super) suppressed: f64,
    pub(super) denied: f64,
    pub(super) ok: f64,
    /// Probability of failing, by how the failure shows in the record.
    pub(super) fail: [f64; 4],
}

/// An edge as evaluated for its caller's invocation.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct EdgeCall {
    /// Logical calls made per invocation of the caller.
    pub(super) per_invocation: f64,
    pub(super) out: CallOutcome,
}

pub(super) struct Model<'a> {
    pub(super) t: &'a Topology,
    pub(super) policies: Vec<EdgePolicy>,
    pub(super) order: Vec<ServiceId>,
    pub(super) dist: Vec<Dist>,
    pub(super) calls: Vec<EdgeCall>,
    /// Each edge's traffic, once a pass has computed the loads.
    pub(super) rates: Vec<Option<EdgeRates>>,
    /// Each service's answer time with no queue, seconds
    /// ([`floor_latencies`]).
    pub(super) floor_s: Vec<f64>,
    /// Per service, its bad and good replicas when its fault is on some of
    /// them only (as last evaluated).
    pub(super) split: Vec<Option<Split>>,
    /// Per edge, where a retry goes: to a replica the call has not tried
    /// (`retry_other_host`, nginx, HAProxy's redispatch), the same one
    /// (HAProxy's `retries`) or any; every balancer draws a retry's
    /// replica uniformly from those it may take.
    pub(super) reselect: Vec<Reselect>,
    /// Per edge through an nginx sidecar that takes failing servers out,
    /// how (see [`proxied`]).
    pub(super) passive: Vec<Option<Passive>>,
    /// Each edge's call as a healthy evaluation left it, and the one
    /// service whose answer differs from it: an edge to any other is
    /// taken from here rather than evaluated again (the storm map's
    /// climb, where one callee at a time fails).
    pub(super) reuse: Option<(Vec<CallOutcome>, ServiceId)>,
}

impl<'a> Model<'a> {
    pub(super) fn new(t: &'a Topology, policy: &Policy) -> Model<'a> {
        let n = t.services.len();
        // A validated topology is acyclic; a hand-built cyclic one gets file
        // order, which is wrong but finite.
        let order = crate::topology::topological_order(&t.services, &t.edges)
            .unwrap_or_else(|_| (0..n).collect());
        let floor_s = super::floor_latencies(t, &order);
        // Each edge as its retrier runs it: the lab's client, or the
        // caller's sidecar proxy (SPEC section 17).
        let runs: Vec<AsRun> = (0..t.edges.len())
            .map(|e| crate::topology::proxy::edge_as_run(t, policy, e))
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
    pub(super) fn callee(&self, v: ServiceId) -> Callee {
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
    pub(super) fn eval(&mut self, v: ServiceId, fault: &Fault) -> Dist {
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
    pub(super) fn outcome(&self, e: usize, callee: Callee) -> CallOutcome {
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
            super::call::claims_retried(&self.policies[e], &t.ownership.header),
        );
        if let (Some(passive), Some(rates)) = (self.passive[e], self.rates[e]) {
            super::proxied::passive_check(
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
    pub(super) fn eval_one(&mut self, v: ServiceId, fault: &Fault) -> Dist {
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
pub(super) fn make_calls(
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
pub(super) fn response(
    s: &Service,
    at_least_once: bool,
    ok: f64,
    err: &[f64; 4],
    codes: Codes,
) -> Dist {
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
