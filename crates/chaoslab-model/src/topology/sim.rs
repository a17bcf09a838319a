//! A simulation of the decision rules, independent of the model.
//!
//! The model ([`super::model`]) computes expected rates arithmetically. This
//! module instead *plays* one root request through the topology with
//! deterministic faults, hop by hop, driving the same code the middleware
//! drives — the [`AttemptMachine`] for each call's attempts and
//! [`claim::decide`] for each error's claim — and records which edges sent
//! retries. It serves to cross-check the model's storm radius: the model's
//! arithmetic and the middleware's own decisions must agree.
//!
//! With deterministic faults, every invocation of a service ends the same
//! way, so each service is played once and remembered; a 25-deep chain
//! under naive retries (2^24 calls if played literally) takes 25 steps.

use error_ownership::attempt::{AttemptMachine, Next};
use error_ownership::claim::{self, Outbound};
use error_ownership::{Attribution, Claim, Classified, DependencyMode};

use super::{Phase, Policy, ServiceId, Topology};

#[derive(Clone, Copy)]
struct Played {
    response: Classified,
    /// Longest run of consecutive retrying edges starting at this service.
    run: usize,
}

struct Sim<'a> {
    t: &'a Topology,
    policy: &'a Policy,
    failing: &'a dyn Fn(ServiceId) -> Option<Phase>,
    memo: Vec<Option<Played>>,
    best: usize,
    /// When set, the services that reach the failing ones (and those): any
    /// other sees no error below it, so it answers as a healthy service
    /// does, without retries, and is not played.
    above: Option<&'a [bool]>,
}

/// What a service that reaches no failing one answers.
const HEALTHY: Played = Played {
    response: Classified::Success,
    run: 0,
};

impl Sim<'_> {
    fn play(&mut self, v: ServiceId) -> Played {
        if let Some(p) = self.memo[v] {
            return p;
        }
        if self.above.is_some_and(|a| !a[v]) {
            return HEALTHY;
        }
        let s = &self.t.services[v];
        let fault = (self.failing)(v);
        let claim_of_own = |claimed: bool| {
            if s.ownership && s.url.is_none() {
                if claimed {
                    Claim::Claimed
                } else {
                    Claim::Unclaimed
                }
            } else {
                Claim::Missing
            }
        };
        if fault == Some(Phase::Before) {
            let response = Classified::Error {
                claim: claim_of_own(true),
            };
            let p = Played { response, run: 0 };
            self.memo[v] = Some(p);
            return p;
        }
        let mut outbound = vec![];
        let mut run = 0;
        let mut failed_close = false;
        'calls: for &e in &s.calls {
            let edge = &self.t.edges[e];
            if !edge.is_made() {
                continue; // `p: 0`: no request makes it
            }
            // As its retrier runs it: a sidecar's proxy, or the client.
            let mut ep = super::proxy::edge_as_run(self.t, self.policy, e).policy;
            ep.ownership &= s.ownership;
            let callee = self.play(edge.to);
            // A zero budget never grants; any other grants some.
            let budget_grants = ep.budget.is_none_or(|b| b.ever_grants());
            for _ in 0..edge.count {
                // Deterministic faults: every attempt gets the callee's one
                // answer. Time plays no part: a backoff's delay is skipped.
                let mut machine = AttemptMachine::for_policy(&ep);
                let end = loop {
                    if let Next::Stop(end) =
                        machine.on_answer(callee.response, || budget_grants, || 0.0)
                    {
                        break end;
                    }
                };
                if end.retries() > 0 {
                    run = run.max(1 + callee.run);
                }
                let out = end.outbound(edge.to, edge.mode);
                outbound.push(out);
                if out.failed && edge.mode == DependencyMode::FailClose {
                    failed_close = true;
                    if !s.parallel {
                        break 'calls;
                    }
                }
            }
        }
        let response = if failed_close || fault == Some(Phase::After) {
            let seen: &[Outbound] = if s.context_dropped { &[] } else { &outbound };
            let attribution = match self.t.ownership.attribution {
                Attribution::Learned => Attribution::Declared,
                a => a,
            };
            let d = claim::decide(seen, attribution, self.t.ownership.at_least_once, |o| {
                o.mode
            });
            Classified::Error {
                claim: claim_of_own(d.claimed),
            }
        } else {
            Classified::Success
        };
        self.best = self.best.max(run);
        let p = Played { response, run };
        self.memo[v] = Some(p);
        p
    }
}

/// The storm radius of one root request when the services `failing` names
/// fail every request (in the given phase), every other fault ignored.
pub fn radius(
    t: &Topology,
    policy: &Policy,
    failing: &dyn Fn(ServiceId) -> Option<Phase>,
) -> usize {
    let mut sim = Sim {
        t,
        policy,
        failing,
        memo: vec![None; t.services.len()],
        best: 0,
        above: None,
    };
    sim.play(t.load.entry);
    sim.best
}

/// The static radius by simulation: the worst radius over each single
/// service failing every request after its calls.
///
/// With one service `x` failing, a service that does not reach `x` sees
/// no error and sends no retry, so each `x` plays only `x` and the
/// services above it: on a mesh, its depth times its fan-in rather than
/// the whole graph.
pub fn static_radius(t: &Topology, policy: &Policy) -> usize {
    let n = t.services.len();
    let mut callers: Vec<Vec<ServiceId>> = vec![vec![]; n];
    for e in &t.edges {
        if e.from < n && e.to < n {
            callers[e.to].push(e.from);
        }
    }
    let (mut memo, mut above, mut marked) = (vec![None; n], vec![false; n], vec![]);
    let mut worst = 0;
    for x in 0..n {
        marked.clear();
        above[x] = true;
        marked.push(x);
        let mut i = 0;
        while let Some(&v) = marked.get(i) {
            i += 1;
            for &c in &callers[v] {
                if !above[c] {
                    above[c] = true;
                    marked.push(c);
                }
            }
        }
        let failing = move |v: ServiceId| (v == x).then_some(Phase::After);
        let mut sim = Sim {
            t,
            policy,
            failing: &failing,
            memo: std::mem::take(&mut memo),
            best: 0,
            above: Some(&above),
        };
        sim.play(t.load.entry);
        worst = worst.max(sim.best);
        memo = sim.memo;
        // Only the services above `x` were played (and remembered).
        for &v in &marked {
            memo[v] = None;
            above[v] = false;
        }
    }
    worst
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{model, Preset, Topology};
    use proptest::prelude::*;

    fn chain(n: usize) -> Topology {
        let mut y = String::from("name: chain\nservices:\n");
        for i in 0..n {
            if i + 1 < n {
                y += &format!("  S{i}: {{ calls: [S{}] }}\n", i + 1);
            } else {
                y += &format!("  S{i}: {{}}\n");
            }
        }
        Topology::from_yaml(&y, "chain").unwrap()
    }

    #[test]
    fn chains_agree_with_the_seed() {
        for (n, retry_r) in [(7, 6), (25, 24)] {
            let t = chain(n);
            let mut p = t.policy.clone();
            p.apply_preset(Preset::Retry);
            assert_eq!(static_radius(&t, &p), retry_r);
            p.apply_preset(Preset::Ownership);
            assert_eq!(static_radius(&t, &p), 1);
        }
    }

    #[test]
    fn uber_chain_with_d_failing() {
        let t = chain(7);
        let mut p = t.policy.clone();
        let d = |v| (v == 3).then_some(Phase::After);
        p.apply_preset(Preset::Retry);
        assert_eq!(radius(&t, &p, &d), 3);
        p.apply_preset(Preset::Ownership);
        assert_eq!(radius(&t, &p, &d), 1);
    }

    /// A random DAG in YAML: service i may call any j > i.
    fn dag() -> impl Strategy<Value = String> {
        (2usize..9).prop_flat_map(|n| {
            let edges = proptest::collection::vec(
                (0..n, 0..n, any::<bool>(), 1u32..3, 1u32..4),
                0..(n * 2),
            );
            (Just(n), edges, any::<bool>(), any::<bool>(), 0..n)
        })
        .prop_map(|(n, edges, parallel, at_least_once, dropped)| {
            let mut calls: Vec<Vec<String>> = vec![vec![]; n];
            for (a, b, open, count, attempts) in edges {
                let (a, b) = (a.min(b), a.max(b));
                if a == b || calls[a].iter().any(|c| c.contains(&format!("to: S{b},"))) {
                    continue;
                }
                calls[a].push(format!(
                    "{{ to: S{b}, mode: {}, count: {count}, policy: {{ attempts: {attempts} }} }}",
                    if open { "fail-open" } else { "fail-close" }
                ));
            }
            let mut y = format!(
                "name: dag\nownership: {{ at_least_once: {at_least_once} }}\nload: {{ entry: S0 }}\nservices:\n"
            );
            for (i, c) in calls.iter().enumerate() {
                let mut extra = String::new();
                if parallel && i % 2 == 0 {
                    extra += ", parallel: true";
                }
                if i == dropped && i > 0 {
                    extra += ", context: dropped";
                }
                y += &format!("  S{i}: {{ calls: [{}]{extra} }}\n", c.join(", "));
            }
            y
        })
    }

    proptest! {
        /// The model and the simulation agree on every single-service
        /// failure, under every preset whose budget grants some retries
        /// however long the failure lasts (a gRPC bucket or an AWS quota
        /// drains under a persistent failure: the model, which speaks of
        /// the long run, predicts no retries; one simulated request still
        /// finds the bucket full).
        #[test]
        fn model_and_simulation_agree(y in dag()) {
            let t = Topology::from_yaml(&y, "dag").map_err(|e| TestCaseError::fail(format!("{e}\n{y}")))?;
            let lasting = |p: &Preset| !matches!(p, Preset::Grpc | Preset::Aws | Preset::Aws2026 | Preset::Sre);
            for preset in Preset::ALL.into_iter().filter(lasting) {
                let mut p = t.policy.clone();
                p.apply_preset(preset);
                for x in 0..t.services.len() {
                    let mut tx = t.clone();
                    for (i, s) in tx.services.iter_mut().enumerate() {
                        s.fault = Default::default();
                        if i == x {
                            s.fault.error_rate = 1.0;
                        }
                    }
                    let m = model::predict(&tx, &p).storm_radius;
                    let s = radius(&t, &p, &|v| (v == x).then_some(Phase::After));
                    prop_assert_eq!(m, s, "preset {:?}, {} failing\n{}", preset, t.services[x].name, y);
                }
            }
        }

        /// Playing only the services above the failing one gives the
        /// radius playing every service gives.
        #[test]
        fn the_static_radius_plays_only_what_lies_above_the_failure(y in dag()) {
            let t = Topology::from_yaml(&y, "dag").map_err(|e| TestCaseError::fail(format!("{e}\n{y}")))?;
            for preset in Preset::ALL {
                let mut p = t.policy.clone();
                p.apply_preset(preset);
                let every = (0..t.services.len())
                    .map(|x| radius(&t, &p, &|v| (v == x).then_some(Phase::After)))
                    .max()
                    .unwrap_or(0);
                prop_assert_eq!(static_radius(&t, &p), every, "preset {:?}\n{}", preset, y);
            }
        }
    }
}
