//! The static storm radius: how far retries spread when one service fails
//! every request.
//!
//! # Cost
//!
//! Trying one failure walks the failing service's callers (its ancestors)
//! and their calls. Tried for every service that is quadratic: a
//! 10,000-service DAG of 100 layers took 6.5 s, a 20,000-service chain
//! 14 s. So one linear pass first bounds each failure's radius from above
//! ([`upper_bounds`]), the failures are tried highest bound first, and the
//! search stops once no bound left can beat the radius found (or tie it
//! for a service listed earlier). The answer is the same as trying every
//! failure; for the shapes people write (chains, layers, fan-outs, under
//! any preset) one or a few failures are tried.

use std::cmp::Reverse;

use super::{failed_call, Dist, Model, Record, EPS};
use crate::topology::{Fault, Phase, Policy, ServiceId, Topology};
use error_ownership::retry::{self, RetryVerdict};
use error_ownership::{Claim, Classified, DependencyMode};

/// The static storm radius: the worst [`super::Prediction::storm_radius`] over
/// each single service failing every request (phase after), every other
/// fault cleared.
///
/// With many roots, the largest over the roots (each root's radius is its
/// own worst failure's; see [`per_root`]).
pub fn static_radius(t: &Topology, policy: &Policy) -> usize {
    worst_failure(t, policy).map_or(0, |(_, r)| r)
}

/// The service whose failure gives the static storm radius, and that
/// radius; `None` when no single failure makes any edge retry. Ties go to
/// the service listed first; with many roots, to the root listed first.
pub fn worst_failure(t: &Topology, policy: &Policy) -> Option<(ServiceId, usize)> {
    if !t.load.many_roots() {
        return search(t, policy).0;
    }
    per_root(t, policy).into_iter().flatten().fold(
        None,
        |best: Option<(ServiceId, usize)>, (x, r)| match best {
            Some((_, br)) if br >= r => best,
            _ => Some((x, r)),
        },
    )
}

/// Each root's static radius (SPEC section 11): the worst single failure
/// for that root's requests, as [`worst_failure`] finds it on
/// [`Topology::root_view`]. Uber gives the maximum and the mean over its
/// user-facing APIs.
pub fn per_root(t: &Topology, policy: &Policy) -> Vec<Option<(ServiceId, usize)>> {
    if !t.load.many_roots() {
        return vec![search(t, policy).0];
    }
    let one = |k: usize| {
        let (sub, ids) = t.root_subgraph(k);
        search(&sub, policy).0.map(|(x, r)| (ids[x], r))
    };
    // Each root is a search of its own: a mesh of hundreds of roots
    // shares them out over the cores.
    let roots = t.load.roots.len();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(roots / 16)
        .max(1);
    if threads == 1 {
        return (0..roots).map(one).collect();
    }
    let chunk = roots.div_ceil(threads);
    std::thread::scope(|scope| {
        let parts: Vec<_> = (0..roots)
            .step_by(chunk)
            .map(|lo| {
                scope.spawn(move || (lo..(lo + chunk).min(roots)).map(one).collect::<Vec<_>>())
            })
            .collect();
        parts
            .into_iter()
            .flat_map(|p| p.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// [`worst_failure`], and the work it took: services and calls walked
/// while trying failures.
pub(super) fn search(t: &Topology, policy: &Policy) -> (Option<(ServiceId, usize)>, usize) {
    let mut m = Model::new(t, policy);
    let bound = upper_bounds(t, &mut m);
    let mut candidates: Vec<ServiceId> = (0..t.services.len()).filter(|&x| bound[x] > 0).collect();
    candidates.sort_unstable_by_key(|&x| (Reverse(bound[x]), x));
    let mut walk = Walk::new(t, &m);
    let mut best: Option<(ServiceId, usize)> = None;
    for x in candidates {
        if let Some((bx, br)) = best {
            // Sorted by bound, then by position: nothing left can win.
            if bound[x] < br || (bound[x] == br && x > bx) {
                break;
            }
        }
        let r = walk.radius(&mut m, x);
        if r > 0 && best.is_none_or(|(bx, br)| r > br || (r == br && x < bx)) {
            best = Some((x, r));
        }
    }
    (best, walk.work)
}

/// The claims an error may carry, one bit per [`Claim::ALL`] entry.
type Claims = u8;

fn bit(c: Claim) -> Claims {
    1 << Claim::ALL.iter().position(|&k| k == c).unwrap_or(0)
}

fn claims_of(d: Dist) -> Claims {
    Claim::ALL
        .into_iter()
        .filter(|&k| d.of(k) > 0.0)
        .fold(0, |a, k| a | bit(k))
}

/// For every service, a bound on the radius when it alone fails, in one
/// pass over the graph (0 where no failure of it can make anything retry).
///
/// A retry needs a callee answering with an error its caller's edge
/// retries. Under a failure of `x` the callees that err are `x` itself,
/// whose claims are known (its own fault, its callees healthy), and
/// services above it that fail because something below them did, whose
/// claims are bounded by the union over every failure below (`below`).
/// A retrying run ends at `x` or at a service above it; so it is at most
/// the longest run of edges that may retry into such services (`run`)
/// ending at one of `x`'s callers, plus one, or ending anywhere above `x`
/// (`above`).
fn upper_bounds(t: &Topology, m: &mut Model<'_>) -> Vec<usize> {
    let n = t.services.len();
    let failing = Fault {
        error_rate: 1.0,
        phase: Phase::After,
        ..Fault::default()
    };
    // The model's distributions are all healthy here: each service fails
    // with its callees healthy.
    let own: Vec<Claims> = (0..n).map(|x| claims_of(m.eval(x, &failing))).collect();
    let attribution = t.ownership.attribution;
    let mut below: Vec<Claims> = vec![0; n];
    for &v in m.order.iter().rev() {
        let s = &t.services[v];
        let fails = s.url.is_none()
            && s.calls
                .iter()
                .any(|&e| t.edges[e].mode == DependencyMode::FailClose && t.edges[e].is_made());
        if !fails {
            continue;
        }
        // Its record is the highest of its failed calls' records, one of
        // them a fail-close call's (else it does not fail): so at least the
        // lowest record a fail-close call can leave.
        let mut records = 0u8;
        let mut lowest_close = Record::Satisfied;
        for &e in s.calls.iter().filter(|&&e| t.edges[e].is_made()) {
            let edge = &t.edges[e];
            let p = &m.policies[e];
            let callee = own[edge.to] | below[edge.to];
            let mut call = Claim::ALL
                .into_iter()
                .filter(|&k| callee & bit(k) != 0)
                .map(|k| failed_call(p, k, edge.mode, attribution))
                .collect::<Vec<Record>>();
            if p.breaker.is_some() || p.throttle.is_some() {
                call.push(Record::Clean);
            }
            for &r in &call {
                records |= 1 << r as u8;
                if edge.mode == DependencyMode::FailClose {
                    lowest_close = lowest_close.min(r);
                }
            }
        }
        for r in Record::ALL.into_iter().filter(|&r| r < lowest_close) {
            records &= !(1 << r as u8);
        }
        if s.context_dropped {
            records = 1 << Record::Clean as u8;
        }
        below[v] = if !s.ownership {
            bit(Claim::Missing)
        } else {
            Record::ALL
                .into_iter()
                .filter(|&r| records & (1 << r as u8) != 0)
                .map(|r| {
                    if r.claims(t.ownership.at_least_once) {
                        bit(Claim::Claimed)
                    } else {
                        bit(Claim::Unclaimed)
                    }
                })
                .fold(0, |a, b| a | b)
        };
    }
    // Without sampled calls a failing callee fails every attempt (its
    // callees either always answer or always fail), so a budget's
    // allowance is its allowance at a failure rate of 1: a drained bucket
    // or quota never grants. A sampled call below can make a callee fail
    // some requests only, at any rate: then any budget that ever grants
    // may.
    let sampled = t.edges.iter().any(|e| e.p < 1.0);
    let retries = |e: usize, callee: Claims| {
        let p = &m.policies[e];
        p.attempts > 1
            && p.budget.is_none_or(|b| {
                if sampled {
                    b.ever_grants()
                } else {
                    super::budget::allowance(&b, 1.0, 1.0, None) > 0.0
                }
            })
            // A throttle shuts on an edge whose every attempt fails.
            && (sampled || p.throttle.is_none_or(|c| super::throttle::pass_share(&c, 1.0, None) > 0.0))
            && Claim::ALL.into_iter().any(|k| {
                callee & bit(k) != 0
                    && retry::decide(Classified::Error { claim: k }, p.ownership)
                        == RetryVerdict::Retry
            })
    };
    // Runs need load: only services the entry reaches take part.
    let mut reached = vec![false; n];
    let mut run = vec![0usize; n];
    let mut above = vec![0usize; n];
    let mut into_own = vec![0usize; n];
    if let Some(r) = reached.get_mut(t.load.entry) {
        *r = true;
    }
    for &v in &m.order {
        if !reached[v] {
            continue;
        }
        for &e in &t.services[v].calls {
            let w = t.edges[e].to;
            reached[w] = true;
            if retries(e, below[w]) {
                run[w] = run[w].max(run[v] + 1);
            }
            if retries(e, own[w]) {
                into_own[w] = into_own[w].max(run[v] + 1);
            }
            above[w] = above[w].max(above[v]).max(run[v]);
        }
    }
    (0..n)
        .map(|x| {
            if reached[x] {
                above[x].max(into_own[x])
            } else {
                0
            }
        })
        .collect()
}

/// One failure tried at a time, over the failing service and its callers
/// only; the buffers are kept between tries.
struct Walk<'t> {
    t: &'t Topology,
    pos: Vec<usize>,
    callers: Vec<Vec<usize>>,
    mark: Vec<usize>,
    load: Vec<f64>,
    best_in: Vec<usize>,
    set: Vec<ServiceId>,
    /// Services and calls walked so far.
    work: usize,
}

impl<'t> Walk<'t> {
    fn new(t: &'t Topology, m: &Model<'_>) -> Walk<'t> {
        let n = t.services.len();
        let mut pos = vec![0usize; n];
        for (i, &v) in m.order.iter().enumerate() {
            pos[v] = i;
        }
        let mut callers: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, e) in t.edges.iter().enumerate() {
            callers[e.to].push(i);
        }
        Walk {
            t,
            pos,
            callers,
            mark: vec![usize::MAX; n],
            load: vec![0.0; n],
            best_in: vec![0; n],
            set: Vec::new(),
            work: 0,
        }
    }

    /// The storm radius when `x` fails every request.
    fn radius(&mut self, m: &mut Model<'_>, x: ServiceId) -> usize {
        let t = self.t;
        let failing = Fault {
            error_rate: 1.0,
            phase: Phase::After,
            ..Fault::default()
        };
        let healthy = Fault::default();
        ancestors(t, &self.callers, x, &mut self.mark, &mut self.set);
        self.work += self.set.len();
        if self.mark.get(t.load.entry) != Some(&x) {
            return 0; // the entry never reaches x: no load, no storm
        }
        let (set, mark, load, best_in) =
            (&mut self.set, &self.mark, &mut self.load, &mut self.best_in);
        let pos = &self.pos;
        set.sort_unstable_by_key(|&v| pos[v]);
        for &v in set.iter().rev() {
            let f = if v == x { &failing } else { &healthy };
            m.dist[v] = m.eval(v, f);
            self.work += t.services[v].calls.len();
        }
        for &v in set.iter() {
            load[v] = 0.0;
            best_in[v] = 0;
        }
        load[t.load.entry] = 1.0;
        let mut radius = 0;
        for &v in set.iter() {
            for &e in &t.services[v].calls {
                let w = t.edges[e].to;
                if mark[w] != x {
                    continue; // healthy callee: nothing to retry
                }
                let c = &m.calls[e];
                let first = load[v] * c.per_invocation;
                load[w] += first * c.out.attempts;
                if first * c.out.retries > EPS {
                    let run = best_in[v] + 1;
                    best_in[w] = best_in[w].max(run);
                    radius = radius.max(run);
                }
            }
        }
        for &v in set.iter() {
            m.dist[v] = Dist::HEALTHY;
        }
        radius
    }
}

/// Fills `set` with `x` and everything that can reach it, marking each
/// with `x` in `mark`.
pub(super) fn ancestors(
    t: &Topology,
    callers: &[Vec<usize>],
    x: ServiceId,
    mark: &mut [usize],
    set: &mut Vec<ServiceId>,
) {
    set.clear();
    set.push(x);
    mark[x] = x;
    let mut i = 0;
    while i < set.len() {
        for &e in &callers[set[i]] {
            let from = t.edges[e].from;
            if mark[from] != x {
                mark[from] = x;
                set.push(from);
            }
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{topo, with, UBER};
    use super::*;
    use crate::topology::generate::{chain, layered};
    use crate::topology::Preset;

    #[test]
    fn seed_static_radius() {
        let t = topo(UBER);
        assert_eq!(static_radius(&t, &with(&t, Preset::Retry)), 6);
        assert_eq!(worst_failure(&t, &with(&t, Preset::Retry)), Some((6, 6)));
        assert_eq!(static_radius(&t, &t.policy), 1);
        assert_eq!(static_radius(&t, &with(&t, Preset::None)), 0);
        let mut chain = String::from("name: deep\nservices:\n");
        for i in 1..=25 {
            if i < 25 {
                chain += &format!("  S{i:02}: {{ calls: [S{:02}] }}\n", i + 1);
            } else {
                chain += &format!("  S{i:02}: {{}}\n");
            }
        }
        let t = topo(&chain);
        assert_eq!(static_radius(&t, &with(&t, Preset::Retry)), 24);
        assert_eq!(static_radius(&t, &with(&t, Preset::Budget)), 24);
        assert_eq!(static_radius(&t, &t.policy), 1);
    }

    /// Every failure tried, as before the bound: the answer to match.
    fn every_failure(t: &Topology, policy: &Policy) -> Option<(ServiceId, usize)> {
        let mut m = Model::new(t, policy);
        let mut walk = Walk::new(t, &m);
        let mut best: Option<(ServiceId, usize)> = None;
        for x in 0..t.services.len() {
            let r = walk.radius(&mut m, x);
            if r > 0 && best.is_none_or(|(_, b)| r > b) {
                best = Some((x, r));
            }
        }
        best
    }

    #[test]
    fn the_bound_finds_what_trying_every_failure_finds() {
        let mut shapes: Vec<String> = (0..40)
            .map(|seed| super::super::tests::random_dag(60, seed, seed % 2 == 0))
            .collect();
        shapes.push(UBER.to_string());
        shapes.push(layered(6, 5, "{ preset: ownership }"));
        for dir in ["topologies"] {
            let root =
                std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join(dir);
            for f in std::fs::read_dir(root).unwrap() {
                let path = f.unwrap().path();
                // Every root of a shipped mesh of thousands tried by brute
                // force under every preset would take minutes; its radii
                // are held to a simulation of the rules, root by root, in
                // the integration tests (incident.rs).
                let text = std::fs::read_to_string(&path).unwrap();
                if path.extension().is_some_and(|e| e == "yaml") && text.len() < 64 << 10 {
                    shapes.push(text);
                }
            }
        }
        for (i, yaml) in shapes.iter().enumerate() {
            let mut t = topo(yaml);
            // Some services without the middleware, with a dropped context,
            // behind a breaker or a single attempt, to vary the claims.
            if i % 3 == 1 {
                for (j, s) in t.services.iter_mut().enumerate() {
                    s.ownership = j % 5 != 2;
                    s.context_dropped = j % 7 == 3;
                }
                for (j, e) in t.edges.iter_mut().enumerate() {
                    if j % 4 == 1 {
                        e.policy.attempts = Some(1);
                    }
                }
            }
            for preset in Preset::ALL {
                let p = with(&t, preset);
                // With many roots, each root's radius is its own search.
                let views: Vec<Topology> = if t.load.many_roots() {
                    (0..t.load.roots.len()).map(|k| t.root_view(k)).collect()
                } else {
                    vec![t.clone()]
                };
                for (k, v) in views.iter().enumerate() {
                    assert_eq!(
                        worst_failure(v, &p),
                        every_failure(v, &p),
                        "shape {i}, root {k}, under {preset:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn layered_dags_and_chains_try_few_failures() {
        let shapes = [
            crate::topology::generate::dag(3000, 42),
            layered(30, 30, "{ preset: ownership }"),
            layered(30, 30, "{ preset: retry }"),
            layered(30, 30, "{ preset: budget }"),
        ];
        for yaml in &shapes {
            let t = topo(yaml);
            let size = t.services.len() + t.edges.len();
            for preset in Preset::ALL {
                let (best, work) = search(&t, &with(&t, preset));
                assert!(
                    work <= 2 * size,
                    "{preset:?}: walked {work} for {size} services and calls (best {best:?})"
                );
            }
        }
        let t = topo(&chain(3001, "{}"));
        for preset in Preset::ALL {
            let (best, work) = search(&t, &with(&t, preset));
            assert!(
                work <= 2 * 6001,
                "{preset:?}: walked {work} (best {best:?})"
            );
        }
        assert_eq!(static_radius(&t, &with(&t, Preset::Retry)), 3000);
    }
}
