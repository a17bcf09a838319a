//! One logical call on an edge, all its attempts: what it costs and how it
//! ends, for a callee that answers as one or whose fault is on some of its
//! replicas (SPEC section 11), under the edge's retry rule and budget.

use super::breaker;
use super::budget::{self, EdgeRates};
use super::codes::Codes;
use super::hedge;
use super::throttle;
use super::{CallOutcome, Dist, Record};
use crate::topology::proxy::Reselect;
use crate::topology::EdgePolicy;
use error_ownership::claim::Outbound;
use error_ownership::hedge::HedgeConfig;
use error_ownership::retry::{self, RetryVerdict};
use error_ownership::{Attribution, Claim, Classified, DependencyMode};

/// A callee whose replicas answer alike ([`Callee::One`]), or whose fault
/// is on `bad` of its `n` replicas ([`Callee::Split`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Callee {
    One(Dist),
    Split(Split),
}

/// A service of `n` replicas, `bad` of them running its fault.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Split {
    pub(super) bad_dist: Dist,
    pub(super) good_dist: Dist,
    pub(super) bad: u32,
    pub(super) n: u32,
}

impl Split {
    /// How the service answers an attempt sent to a replica drawn at
    /// random.
    pub(super) fn mix(&self) -> Dist {
        let k = f64::from(self.bad) / f64::from(self.n.max(1));
        let (b, g) = (self.bad_dist, self.good_dist);
        Dist {
            s: k * b.s + (1.0 - k) * g.s,
            c: k * b.c + (1.0 - k) * g.c,
            u: k * b.u + (1.0 - k) * g.u,
            m: k * b.m + (1.0 - k) * g.m,
            codes: Codes::blend(&[
                (b.codes, k * (1.0 - b.s)),
                (g.codes, (1.0 - k) * (1.0 - g.s)),
            ]),
        }
    }
}

impl Callee {
    pub(super) fn mix(&self) -> Dist {
        match self {
            Callee::One(d) => *d,
            Callee::Split(s) => s.mix(),
        }
    }

    /// The chance that attempt `j` (0-based) reaches a bad replica when
    /// the call's `b` earlier attempts reached bad ones, and how each kind
    /// answers. A retry to another host draws from the replicas not yet
    /// tried (SPEC section 11); a retry to the same host (HAProxy without
    /// `option redispatch`) goes where the first attempt went; otherwise
    /// every attempt draws afresh.
    fn branches(&self, j: u32, b: u32, reselect: Reselect) -> [(f64, Dist); 2] {
        match *self {
            Callee::One(d) => [(0.0, d), (1.0, d)],
            Callee::Split(s) => {
                let p_bad = match reselect {
                    Reselect::OtherHost if j < s.n => {
                        f64::from(s.bad.saturating_sub(b)) / f64::from(s.n - j)
                    }
                    Reselect::SameHost if j > 0 => f64::from(u8::from(b > 0)),
                    // Every replica tried, a first attempt, or a draw
                    // afresh: any.
                    _ => f64::from(s.bad) / f64::from(s.n.max(1)),
                };
                [(p_bad, s.bad_dist), (1.0 - p_bad, s.good_dist)]
            }
        }
    }
}

/// Which claims an edge's `retriable-headers` rules retry whatever their
/// status: a rule on the topology's claim header `header` naming `true`
/// retries claimed errors, `false` unclaimed ones (in [`Claim::ALL`]'s
/// order).
pub(super) fn claims_retried(p: &EdgePolicy, header: &str) -> [bool; 3] {
    Claim::ALL.map(|k| {
        let value: &[u8] = match k {
            Claim::Claimed => b"true",
            Claim::Unclaimed => b"false",
            Claim::Missing => return false,
        };
        p.retry_on
            .header_rules()
            .any(|r| r.name() == header && r.value() == value)
    })
}

/// The share of `d`'s errors claimed `k` that the edge's conditions retry.
fn retriable(p: &EdgePolicy, claims: [bool; 3], d: &Dist, k: Claim) -> f64 {
    if claims[k.index()] {
        1.0
    } else {
        d.codes.retried_share(&p.retry_on)
    }
}

/// The errors of `d` a policy retries, and those it spares a retry (its
/// signal, or its retry conditions).
fn retried_and_spared(p: &EdgePolicy, claims: [bool; 3], d: Dist) -> (f64, f64) {
    let (mut e, mut su) = (0.0, 0.0);
    for k in Claim::ALL {
        match retry::decide(Classified::Error { claim: k }, p.ownership) {
            RetryVerdict::Retry => {
                let a = retriable(p, claims, &d, k);
                e += d.of(k) * a;
                su += d.of(k) * (1.0 - a);
            }
            RetryVerdict::Suppress => su += d.of(k),
            RetryVerdict::Done => {}
        }
    }
    (e, su)
}

/// One logical call on an edge with policy `p` to `callee`: attempts
/// independent, or, for a callee with one bad host among its replicas,
/// each attempt's replica drawn as the edge's balancer (or its proxy)
/// draws it ([`Reselect`]).
/// A hedged edge (`hedge:`) sends its attempts as [`hedged_call`] says,
/// its callee answering `latency_s` after each.
pub(super) fn call_outcome(
    p: &EdgePolicy,
    callee: Callee,
    reselect: Reselect,
    (mode, attribution): (DependencyMode, Attribution),
    rates: Option<EdgeRates>,
    latency_s: f64,
    claims: [bool; 3],
) -> CallOutcome {
    let mix = callee.mix();
    let mut o = match p.hedge {
        Some(cfg) => hedged_call(p, cfg, mix, (mode, attribution), rates, latency_s),
        None => retried_call(p, callee, reselect, (mode, attribution), rates, claims),
    };
    let rate = rates.map(|r| r.first_per_sec * o.attempts);
    if let Some(b) = &p.breaker {
        let open = breaker::open_share(b, 1.0 - mix.s, rate);
        fail_fast(&mut o, 1.0 - open);
    }
    if let Some(t) = &p.throttle {
        fail_fast(&mut o, throttle::pass_share(t, 1.0 - mix.s, rate));
    }
    o
}

/// One hedged call ([`hedge::hedged`]): every hedge a retry for the
/// budget, which is taken to grant each ask with the one probability
/// that lets through the hedges it allows a call. Ownership plays no part in a hedge (A6 sends the
/// next on any non-fatal failure); a committed failure carries the
/// callee's claims in their shares.
fn hedged_call(
    p: &EdgePolicy,
    cfg: HedgeConfig,
    mix: Dist,
    (mode, attribution): (DependencyMode, Attribution),
    rates: Option<EdgeRates>,
    latency_s: f64,
) -> CallOutcome {
    let hedges = |q: f64| hedge::hedged(cfg, latency_s, mix.s, q).attempts - 1.0;
    let wanted = hedges(1.0);
    let q = match p.budget {
        Some(b) if wanted > 0.0 => {
            // The grant that lets through the hedges the budget allows:
            // more hedges for a larger grant, so halve the interval.
            let allowed = budget::allowance(&b, 1.0 - mix.s, wanted, rates);
            let (mut lo, mut hi) = (0.0, 1.0);
            if hedges(1.0) <= allowed {
                lo = 1.0;
            }
            for _ in 0..40 {
                if lo >= hi {
                    break;
                }
                let mid = 0.5 * (lo + hi);
                if hedges(mid) < allowed {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            lo
        }
        _ => 1.0,
    };
    let h = hedge::hedged(cfg, latency_s, mix.s, q);
    let mut o = CallOutcome {
        attempts: h.attempts,
        retries: h.attempts - 1.0,
        denied: h.refused,
        ok: h.ok,
        ..CallOutcome::default()
    };
    let p_fail = 1.0 - mix.s;
    if p_fail > 0.0 {
        for k in Claim::ALL {
            o.fail[failed_call(p, k, mode, attribution) as usize] += h.failed * mix.of(k) / p_fail;
        }
    }
    o
}

/// One logical call with retries, as [`call_outcome`] describes.
fn retried_call(
    p: &EdgePolicy,
    callee: Callee,
    reselect: Reselect,
    (mode, attribution): (DependencyMode, Attribution),
    rates: Option<EdgeRates>,
    claims: [bool; 3],
) -> CallOutcome {
    let r = p.attempts.max(1);
    let mix = callee.mix();
    let (e, _) = retried_and_spared(p, claims, mix);
    let allowed = p
        .budget
        .map(|b| budget::allowance(&b, 1.0 - mix.s, unbudgeted_retries(e, r), rates));
    let q = grant_probability(e, r, allowed);
    let mut o = CallOutcome::default();
    // The calls still going, by how many bad replicas they have tried.
    let mut reach = vec![1.0];
    // How the calls that failed for good ended, by the claim they saw.
    let mut ended = [0.0; 3];
    for j in 0..r {
        let mut next = vec![0.0; reach.len() + 1];
        for (b, &m) in reach.iter().enumerate() {
            if m == 0.0 {
                continue;
            }
            o.attempts += m;
            for (bad, (w, d)) in callee
                .branches(j, b as u32, reselect)
                .into_iter()
                .enumerate()
            {
                let mass = m * w;
                if mass == 0.0 {
                    continue;
                }
                o.ok += mass * d.s;
                let (de, dsu) = retried_and_spared(p, claims, d);
                o.suppressed += mass * dsu;
                let mut again = 0.0;
                for (i, k) in Claim::ALL.into_iter().enumerate() {
                    let pk = mass * d.of(k);
                    if pk == 0.0 {
                        continue;
                    }
                    // The share of these errors the conditions retry.
                    let a = retriable(p, claims, &d, k);
                    match retry::decide(Classified::Error { claim: k }, p.ownership) {
                        RetryVerdict::Suppress => ended[i] += pk,
                        RetryVerdict::Retry if j + 1 < r => {
                            ended[i] += pk * (1.0 - a * q);
                            again += pk * a * q;
                        }
                        RetryVerdict::Retry => ended[i] += pk,
                        RetryVerdict::Done => {}
                    }
                }
                if j + 1 < r {
                    o.retries += mass * de * q;
                    o.denied += mass * de * (1.0 - q);
                }
                next[b + usize::from(bad == 0)] += again;
            }
        }
        reach = next;
        if reach.iter().all(|&m| m == 0.0) {
            break;
        }
    }
    for (i, k) in Claim::ALL.into_iter().enumerate() {
        if ended[i] > 0.0 {
            o.fail[failed_call(p, k, mode, attribution) as usize] += ended[i];
        }
    }
    o
}

/// Only a share `pass` of the calls is sent; the others fail fast at the
/// caller (an open breaker, a throttle's rejection): no attempt, the
/// caller's own error.
pub(super) fn fail_fast(o: &mut CallOutcome, pass: f64) {
    if pass >= 1.0 {
        return;
    }
    o.attempts *= pass;
    o.retries *= pass;
    o.suppressed *= pass;
    o.denied *= pass;
    o.ok *= pass;
    for f in &mut o.fail {
        *f *= pass;
    }
    o.fail[Record::Clean as usize] += 1.0 - pass;
}

/// How a call on an edge with policy `p` that failed with a callee's
/// error claimed `k` shows in the caller's record.
pub(super) fn failed_call(
    p: &EdgePolicy,
    k: Claim,
    mode: DependencyMode,
    attribution: Attribution,
) -> Record {
    let r = p.attempts.max(1);
    let verdict = retry::decide(Classified::Error { claim: k }, p.ownership);
    // Denied or exhausted retries satisfy rule 5's criteria alike; only
    // an edge with no retries configured leaves them unsatisfied.
    let satisfied = retry::stop_reason(verdict, r - 1, r).is_none_or(|s| s.criteria_satisfied());
    let failed = Outbound {
        dependency: 0,
        mode,
        failed: true,
        claim_seen: Some(k),
        criteria_satisfied: satisfied,
    };
    Record::of_failure(failed, attribution)
}

/// Retries per first attempt without a budget: `Σ_{k=1}^{R-1} e^k`.
fn unbudgeted_retries(e: f64, r: u32) -> f64 {
    let (mut sum, mut pow) = (0.0, 1.0);
    for _ in 1..r {
        pow *= e;
        sum += pow;
    }
    sum
}

/// The probability `q` that each retry opportunity is granted so that the
/// expected retries per first attempt, `Σ_{k=1}^{R-1} (e q)^k`, equal
/// `min(unbudgeted, B)`.
fn grant_probability(e: f64, r: u32, budget: Option<f64>) -> f64 {
    let Some(b) = budget else { return 1.0 };
    if r <= 1 || e <= 0.0 || b.is_infinite() {
        return 1.0;
    }
    if b <= 0.0 {
        return 0.0; // not the search's dust: an empty budget grants nothing
    }
    let retries = |q: f64| {
        let x = e * q;
        let (mut sum, mut pow) = (0.0, 1.0);
        for _ in 1..r {
            pow *= x;
            sum += pow;
        }
        sum
    };
    if retries(1.0) <= b {
        return 1.0;
    }
    if r == 2 {
        return (b / e).clamp(0.0, 1.0);
    }
    let (mut lo, mut hi) = (0.0, 1.0);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if retries(mid) < b {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}
