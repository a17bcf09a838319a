//! The static storm radius: how far retries spread when one service fails
//! every request. Each single failure is tried in turn over the failing
//! service and its callers only, so the cost stays the sum of the ancestor
//! sets' sizes rather than a full prediction per service.

use super::{Dist, Model, EPS};
use crate::topology::{Fault, Phase, Policy, ServiceId, Topology};

/// The static storm radius: the worst [`super::Prediction::storm_radius`] over
/// each single service failing every request (phase after), every other
/// fault cleared.
pub fn static_radius(t: &Topology, policy: &Policy) -> usize {
    worst_failure(t, policy).map_or(0, |(_, r)| r)
}

/// The service whose failure gives the static storm radius, and that
/// radius; `None` when no single failure makes any edge retry. Ties go to
/// the service listed first.
///
/// Each failure is evaluated over the failing service and its callers
/// only, so the cost is the sum of the ancestor sets' sizes.
pub fn worst_failure(t: &Topology, policy: &Policy) -> Option<(ServiceId, usize)> {
    let n = t.services.len();
    let mut m = Model::new(t, policy);
    let mut pos = vec![0usize; n];
    for (i, &v) in m.order.iter().enumerate() {
        pos[v] = i;
    }
    let mut callers: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, e) in t.edges.iter().enumerate() {
        callers[e.to].push(i);
    }
    let failing = Fault {
        error_rate: 1.0,
        phase: Phase::After,
        ..Fault::default()
    };
    let healthy = Fault::default();
    let mut mark = vec![usize::MAX; n];
    let mut load = vec![0.0; n];
    let mut best_in = vec![0usize; n];
    let mut best: Option<(ServiceId, usize)> = None;
    let mut set = Vec::new();
    for x in 0..n {
        ancestors(t, &callers, x, &mut mark, &mut set);
        if mark.get(t.load.entry) != Some(&x) {
            continue; // the entry never reaches x: no load, no storm
        }
        set.sort_unstable_by_key(|&v| pos[v]);
        for &v in set.iter().rev() {
            let f = if v == x { &failing } else { &healthy };
            m.dist[v] = m.eval(v, f);
        }
        for &v in &set {
            load[v] = 0.0;
            best_in[v] = 0;
        }
        load[t.load.entry] = 1.0;
        let mut radius = 0;
        for &v in &set {
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
        for &v in &set {
            m.dist[v] = Dist::HEALTHY;
        }
        if radius > 0 && best.is_none_or(|(_, r)| radius > r) {
            best = Some((x, radius));
        }
    }
    best
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
}
