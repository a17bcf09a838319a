//! The model against the seed's tables, closed forms and a brute-force
//! enumeration.

use super::*;
use crate::topology::Preset;
use error_ownership::claim::{self, Outbound};
use error_ownership::{Attribution, Claim, DependencyMode};
use proptest::prelude::*;

pub(super) fn topo(yaml: &str) -> Topology {
    Topology::from_yaml(yaml, "test.yaml").unwrap_or_else(|e| panic!("{e}"))
}

pub(super) fn with(t: &Topology, preset: Preset) -> Policy {
    let mut p = t.policy.clone();
    p.apply_preset(preset);
    p
}

fn loads(p: &Prediction) -> Vec<f64> {
    p.services.iter().map(|s| s.load).collect()
}

fn assert_close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 1e-9, "{got:?} vs {want:?}");
    }
}

pub(super) const UBER: &str = "
name: uber
policy: { preset: ownership, attempts: 2, budget: 0.1 }
services:
  A: { calls: [B] }
  B: { calls: [C] }
  C: { calls: [D] }
  D: { calls: [E], fault: { error_rate: 1.0, phase: after } }
  E: { calls: [F] }
  F: { calls: [G] }
  G: {}
";

#[test]
fn seed_chain_loads() {
    let t = topo(UBER);
    let retry = predict(&t, &with(&t, Preset::Retry));
    assert_close(&loads(&retry), &[1., 2., 4., 8., 8., 8., 8.]);
    assert_eq!(retry.storm_radius, 3);
    let budget = predict(&t, &with(&t, Preset::Budget));
    assert_close(
        &loads(&budget),
        &[1., 1.1, 1.21, 1.331, 1.331, 1.331, 1.331],
    );
    assert_eq!(budget.storm_radius, 3);
    let own = predict(&t, &t.policy);
    assert_close(&loads(&own), &[1., 1., 1., 1.1, 1.1, 1.1, 1.1]);
    assert_eq!(own.storm_radius, 1);
    // C disowns D's failure; B suppresses one retry per root request.
    assert_eq!(own.services[2].p_unclaimed, 1.0);
    assert!((own.edges[1].suppressed - 1.0).abs() < 1e-12);
    assert!((own.edges[2].retries - 0.1).abs() < 1e-12);
    assert!((own.edges[2].budget_denied - 0.9).abs() < 1e-12);
    assert_eq!(own.root_availability, 0.0);
    // Amplification below D under retry is R^3.
    assert_eq!(retry.services[5].amplification, 8.0);
}

#[test]
fn availability_formula() {
    for p in [0.001f64, 0.01, 0.05, 0.1, 0.2, 0.3, 0.9] {
        let t = topo(&format!(
                "name: a\npolicy: {{ preset: budget, attempts: 2, budget: 0.1 }}\nservices:\n  A: {{ calls: [B] }}\n  B: {{ fault: {{ error_rate: {p} }} }}\n"
            ));
        let pred = predict(&t, &t.policy);
        let want = 1.0 - (p - p.min(0.1) * (1.0 - p));
        assert!(
            (pred.root_availability - want).abs() < 1e-12,
            "p={p}: {} vs {want}",
            pred.root_availability
        );
        assert!((pred.edges[0].retries - p.min(0.1)).abs() < 1e-12);
        assert!((pred.edges[0].budget_denied - (p - p.min(0.1))).abs() < 1e-12);
    }
}

#[test]
fn three_nodes_b_retries_once_a_never() {
    let t = topo(
            "name: t\npolicy: { preset: ownership, budget: off }\nservices:\n  A: { calls: [B] }\n  B: { calls: [C] }\n  C: { fault: { error_rate: 1.0 } }\n",
        );
    let p = predict(&t, &t.policy);
    assert_close(&loads(&p), &[1., 1., 2.]);
    assert_eq!(p.edges[0].retries, 0.0);
    assert_eq!(p.edges[0].suppressed, 1.0);
    assert_eq!(p.edges[1].retries, 1.0);
    assert_eq!(p.services[1].p_unclaimed, 1.0);
    assert_eq!(p.services[2].p_claimed, 1.0);
}

#[test]
fn context_drop_moves_retries_up_one_hop() {
    let t = topo(
            "name: t\npolicy: { preset: ownership, attempts: 2, budget: off }\nservices:\n  A: { calls: [B] }\n  B: { calls: [C] }\n  C: { calls: [D], context: dropped }\n  D: { fault: { error_rate: 1.0 } }\n",
        );
    let p = predict(&t, &t.policy);
    assert_close(&loads(&p), &[1., 1., 2., 4.]);
    assert_eq!(p.storm_radius, 2);
    assert_eq!(p.services[2].p_claimed, 1.0);
    assert_eq!(p.services[1].p_unclaimed, 1.0);
    let naive = predict(&t, &with(&t, Preset::Retry));
    assert_close(&loads(&naive), &[1., 2., 4., 8.]);
}

#[test]
fn coincidental_errors_under_simple_attribution() {
    let yaml = |attr: &str| {
        format!(
                "name: c\nownership: {{ attribution: {attr}, at_least_once: false }}\nservices:\n  U: {{ calls: [S] }}\n  S:\n    calls:\n      - {{ to: X, mode: fail-open, policy: {{ attempts: 1 }} }}\n      - {{ to: Y, mode: fail-open, policy: {{ attempts: 1 }} }}\n    fault: {{ error_rate: 0.1 }}\n  X: {{ fault: {{ error_rate: 0.1 }} }}\n  Y: {{ fault: {{ error_rate: 0.1 }} }}\n"
            )
    };
    let t = topo(&yaml("simple"));
    let s = &predict(&t, &t.policy).services[1];
    assert!((s.p_error - 0.1).abs() < 1e-12);
    assert!((s.p_unclaimed - 0.019).abs() < 1e-12, "{s:?}");
    assert!((s.p_claimed - 0.081).abs() < 1e-12);
    for attr in ["declared", "learned"] {
        let t = topo(&yaml(attr));
        let s = &predict(&t, &t.policy).services[1];
        assert_eq!(s.p_unclaimed, 0.0);
        assert!((s.p_claimed - 0.1).abs() < 1e-12);
    }
}

#[test]
fn at_least_once_claims_where_the_edge_cannot_retry() {
    let yaml = |alo: bool| {
        format!(
                "name: a\nownership: {{ at_least_once: {alo} }}\npolicy: {{ preset: ownership, attempts: 2, budget: 0.1 }}\nservices:\n  A: {{ calls: [B] }}\n  B: {{ calls: [C] }}\n  C: {{ calls: [{{ to: D, policy: {{ attempts: 1 }} }}] }}\n  D: {{ fault: {{ error_rate: 0.3 }} }}\n"
            )
    };
    let t = topo(&yaml(true));
    let p = predict(&t, &t.policy);
    assert!((p.services[2].p_claimed - 0.3).abs() < 1e-12);
    assert_close(&loads(&p), &[1., 1., 1.1, 1.1]);
    assert!((p.root_availability - 0.77).abs() < 1e-12);
    assert_eq!(p.storm_radius, 1);
    let t = topo(&yaml(false));
    let p = predict(&t, &t.policy);
    assert_close(&loads(&p), &[1., 1., 1., 1.]);
    assert!((p.root_availability - 0.7).abs() < 1e-12);
    assert_eq!(p.storm_radius, 0);
}

#[test]
fn sequential_stops_parallel_does_not() {
    let yaml = |parallel: bool| {
        format!(
                "name: f\npolicy: {{ preset: none }}\nservices:\n  A: {{ calls: [B, {{ to: C, count: 2 }}], parallel: {parallel} }}\n  B: {{ fault: {{ error_rate: 0.5 }} }}\n  C: {{}}\n"
            )
    };
    let t = topo(&yaml(false));
    let p = predict(&t, &t.policy);
    assert_close(&loads(&p), &[1., 1., 1.]); // C twice, half the time
    assert_eq!(t.services[2].multiplicity, 2.0);
    assert_eq!(p.services[2].amplification, 0.5);
    let t = topo(&yaml(true));
    let p = predict(&t, &t.policy);
    assert_close(&loads(&p), &[1., 1., 2.]);
    assert!((p.root_availability - 0.5).abs() < 1e-12);
}

#[test]
fn sampled_calls_count_by_their_share() {
    // B for 30% of A's requests; B calls C twice, always.
    let t = topo("name: p\nservices:\n  A: { calls: [{ to: B, p: 0.3 }] }\n  B: { calls: [{ to: C, count: 2 }] }\n  C: {}\n");
    let m: Vec<f64> = t.services.iter().map(|s| s.multiplicity).collect();
    assert_close(&m, &[1.0, 0.3, 0.6]);
    let p = predict(&t, &t.policy);
    assert_close(&loads(&p), &[1.0, 0.3, 0.6]);

    // Under naive retries, C failing: the storm has the same shape on the
    // requests that make the call, and none on the others.
    let failing = "name: p\nservices:\n  A: { calls: [{ to: B, p: 0.5 }] }\n  B: { calls: [C] }\n  C: { fault: { error_rate: 1.0 } }\n";
    let t = topo(failing);
    let p = predict(&t, &with(&t, Preset::Retry));
    assert_close(&loads(&p), &[1.0, 1.0, 2.0]);
    let amp: Vec<f64> = p.services.iter().map(|s| s.amplification).collect();
    assert_close(&amp, &[1.0, 2.0, 4.0]);
    // Half the roots never reach the failure.
    assert!((p.root_availability - 0.5).abs() < 1e-12);
    assert_eq!(p.storm_radius, 2);
    assert_eq!(static_radius(&t, &with(&t, Preset::Retry)), 2);

    // `p: 0`: no request makes the call, so it can fail nothing.
    let never = failing.replace("p: 0.5", "p: 0");
    let t = topo(&never);
    let p = predict(&t, &with(&t, Preset::Retry));
    assert_close(&loads(&p), &[1.0, 0.0, 0.0]);
    assert_eq!(p.root_availability, 1.0);
    assert_eq!(static_radius(&t, &with(&t, Preset::Retry)), 0);
}

#[test]
fn down_and_phase_before_call_nothing_below() {
    let t = topo(
            "name: d\npolicy: { preset: retry, attempts: 3 }\nservices:\n  A: { calls: [B] }\n  B: { calls: [C], fault: { down: true } }\n  C: {}\n",
        );
    let p = predict(&t, &t.policy);
    assert_close(&loads(&p), &[1., 3., 0.]);
    assert_eq!(p.services[1].p_missing, 1.0);
    let t = topo(
            "name: d\npolicy: { preset: ownership, budget: off }\nservices:\n  A: { calls: [B] }\n  B: { calls: [C], fault: { error_rate: 1, phase: before } }\n  C: {}\n",
        );
    let p = predict(&t, &t.policy);
    assert_close(&loads(&p), &[1., 2., 0.]);
    assert_eq!(p.services[1].p_claimed, 1.0);
}

#[test]
fn budget_with_more_attempts() {
    // R=3, e=1: unbudgeted 2 retries per call, budget 0.5 -> 0.5.
    let t = topo(
            "name: b\npolicy: { preset: budget, attempts: 3, budget: 0.5 }\nservices:\n  A: { calls: [B] }\n  B: { fault: { error_rate: 1 } }\n",
        );
    let p = predict(&t, &t.policy);
    assert!((p.edges[0].retries - 0.5).abs() < 1e-9);
    assert!((p.services[1].load - 1.5).abs() < 1e-9);
}

#[test]
fn record_max_agrees_with_the_claim_rule() {
    // Combining failures by `max` must give the rule's own answer.
    let kinds = [
        (DependencyMode::FailOpen, Claim::Claimed, true),
        (DependencyMode::FailOpen, Claim::Claimed, false),
        (DependencyMode::FailClose, Claim::Claimed, true),
        (DependencyMode::FailClose, Claim::Claimed, false),
        (DependencyMode::FailClose, Claim::Missing, false),
        (DependencyMode::FailClose, Claim::Unclaimed, false),
    ];
    let out = |(mode, claim, sat): (DependencyMode, Claim, bool)| Outbound {
        dependency: 0,
        mode,
        failed: true,
        claim_seen: Some(claim),
        criteria_satisfied: sat,
    };
    for attr in [Attribution::Simple, Attribution::Declared] {
        for alo in [true, false] {
            for a in kinds {
                for b in kinds {
                    let both = [out(a), out(b)];
                    let want = claim::decide(&both, attr, alo, |o| o.mode).claimed;
                    let rec =
                        Record::of_failure(out(a), attr).max(Record::of_failure(out(b), attr));
                    assert_eq!(rec.claims(alo), want, "{a:?} {b:?} {attr:?} {alo}");
                }
            }
        }
    }
}

/// A random DAG: service i > 0 is called by a random earlier one, and
/// sometimes by a second; with `sampled`, a third of the first calls are
/// made for only some requests (`p`).
pub(super) fn random_dag(n: usize, seed: u64, sampled: bool) -> String {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = |m: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % m as u64) as usize
    };
    let mut calls: Vec<Vec<String>> = vec![Vec::new(); n];
    for i in 1..n {
        let a = next(i);
        let count = 1 + next(2);
        let mode = if next(4) == 0 {
            "fail-open"
        } else {
            "fail-close"
        };
        let p = if sampled {
            [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.5, 0.25][next(9)]
        } else {
            1.0
        };
        calls[a].push(format!(
            "{{ to: s{i}, count: {count}, mode: {mode}, p: {p} }}"
        ));
        if i > 1 && next(5) == 0 {
            let b = next(i);
            if b != a {
                calls[b].push(format!("s{i}"));
            }
        }
    }
    let mut y = String::from("name: dag\nservices:\n");
    for (i, c) in calls.iter().enumerate() {
        let parallel = next(3) == 0;
        y += &format!(
            "  s{i}: {{ parallel: {parallel}, calls: [{}] }}\n",
            c.join(", ")
        );
    }
    y
}

#[test]
fn ten_thousand_services_in_well_under_two_seconds() {
    let mut t = topo(&random_dag(10_000, 7, true));
    for (i, s) in t.services.iter_mut().enumerate() {
        if i % 97 == 3 {
            s.fault.error_rate = 0.2;
        }
    }
    let started = std::time::Instant::now();
    let p = predict(&t, &t.policy);
    let predicted = started.elapsed();
    let radius = static_radius(&t, &with(&t, Preset::Retry));
    let both = started.elapsed();
    // Generous for a debug build on a busy two-core machine; a release
    // build answers both in well under 0.1 s.
    assert!(predicted.as_secs_f64() < 2.0, "predict took {predicted:?}");
    assert!(both.as_secs_f64() < 10.0, "static radius took {both:?}");
    assert_eq!(p.services.len(), 10_000);
    assert!(radius >= 1);
    assert!(p.services.iter().all(|s| s.load.is_finite()));
}

fn chain_yaml(len: usize, fail: usize, r: u32, b: f64) -> String {
    let mut y = format!("name: c\npolicy: {{ attempts: {r}, budget: {b} }}\nservices:\n");
    for i in 0..len {
        let calls = if i + 1 < len {
            format!("[s{}]", i + 1)
        } else {
            "[]".into()
        };
        let fault = if i == fail {
            ", fault: { error_rate: 1.0 }"
        } else {
            ""
        };
        y += &format!("  s{i}: {{ calls: {calls}{fault} }}\n");
    }
    y
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// With no faults every service sees exactly its baseline.
    #[test]
    fn no_faults_means_baseline(n in 1usize..40, seed in any::<u64>(), preset in 0usize..4) {
        let t = topo(&random_dag(n, seed, true));
        let p = predict(&t, &with(&t, Preset::ALL[preset]));
        for (s, sp) in t.services.iter().zip(&p.services) {
            prop_assert!((sp.load - s.multiplicity).abs() <= 1e-9 * s.multiplicity.max(1.0));
            prop_assert!((sp.amplification - 1.0).abs() < 1e-9);
            prop_assert_eq!(sp.p_error, 0.0);
        }
        prop_assert_eq!(p.root_availability, 1.0);
        prop_assert_eq!(p.storm_radius, 0);
    }

    /// One service failing every request: ownership ≤ budget ≤ retry.
    /// Without sampled calls: a retry of a call whose failure hangs on a
    /// sampled call below is a request of its own, which draws again and
    /// may succeed, so there ownership, which leaves an unclaimed error
    /// alone, can leave more errors for the layer above to retry.
    #[test]
    fn policies_are_ordered(n in 2usize..30, seed in any::<u64>(), fail in 0usize..30,
                            r in 1u32..5, b in 0.0f64..1.0) {
        let mut t = topo(&random_dag(n, seed, false));
        let fail = fail % n;
        t.services[fail].fault.error_rate = 1.0;
        t.policy.attempts = r;
        t.policy.budget = Some(b);
        let own = predict(&t, &with(&t, Preset::Ownership));
        let bud = predict(&t, &with(&t, Preset::Budget));
        let ret = predict(&t, &with(&t, Preset::Retry));
        for i in 0..n {
            let (o, bu, re) = (own.services[i].load, bud.services[i].load, ret.services[i].load);
            let tol = 1e-9 * re.max(1.0);
            prop_assert!(o <= bu + tol && bu <= re + tol, "{i}: {o} {bu} {re}");
        }
        prop_assert!(own.storm_radius <= ret.storm_radius);
        prop_assert!(static_radius(&t, &with(&t, Preset::Ownership))
            <= static_radius(&t, &with(&t, Preset::Retry)));
    }

    /// On a chain under naive retries, amplification is R^depth down to
    /// the failure and stays there below it.
    #[test]
    fn chain_amplification_is_r_to_the_depth(len in 1usize..12, fail in 0usize..12, r in 1u32..4) {
        let fail = fail % len;
        let t = topo(&chain_yaml(len, fail, r, 0.1));
        let p = predict(&t, &with(&t, Preset::Retry));
        for (i, s) in p.services.iter().enumerate() {
            let want = f64::from(r).powi(i.min(fail) as i32);
            prop_assert!((s.amplification - want).abs() < 1e-9 * want, "{i}: {} vs {want}", s.amplification);
        }
        let radius = if r > 1 { fail } else { 0 };
        prop_assert_eq!(p.storm_radius, radius);
        prop_assert_eq!(static_radius(&t, &with(&t, Preset::Retry)), if r > 1 { len - 1 } else { 0 });
    }

    /// With a budget B on a chain, load is (1+B)^depth down to the failure
    /// (R=2); with ownership it is 1 above the owner and 1+B below.
    #[test]
    fn chain_budget_and_ownership(len in 2usize..12, fail in 1usize..12, b in 0.0f64..1.0) {
        let fail = fail % len;
        let t = topo(&chain_yaml(len, fail, 2, b));
        let bud = predict(&t, &with(&t, Preset::Budget));
        let own = predict(&t, &with(&t, Preset::Ownership));
        for i in 0..len {
            let want = (1.0 + b).powi(i.min(fail) as i32);
            prop_assert!((bud.services[i].load - want).abs() < 1e-9 * want);
            let want = if i >= fail && fail > 0 { 1.0 + b } else { 1.0 };
            prop_assert!((own.services[i].load - want).abs() < 1e-9);
        }
    }
}

/// SPEC section 17's reference behaviours: statuses travel, and whether a
/// hop retries depends on the status its callee answered.
mod statuses {
    use super::*;

    fn chain(passed: &str, preset: &str, retry_on: &str) -> Vec<f64> {
        let t = topo(&format!(
            "name: s
policy: {{ preset: {preset}{retry_on} }}
services:
  A: {{ calls: [B], errors: {{ passed: {passed} }} }}
  B: {{ calls: [C], errors: {{ passed: {passed} }} }}
  C: {{ calls: [D], errors: {{ passed: {passed} }} }}
  D: {{ fault: {{ error_rate: 1.0, status: 503 }} }}
"
        ));
        loads(&predict(&t, &t.policy))
    }

    #[test]
    fn istio_multiplies_a_503_passed_as_itself_and_stops_at_a_500() {
        assert_close(&chain("same", "istio", ""), &[1., 3., 9., 27.]);
        assert_close(&chain("500", "istio", ""), &[1., 1., 1., 3.]);
    }

    #[test]
    fn ownership_without_code_retries_only_above_the_owner() {
        // The owner answers 503, whoever passes it up 502: a retrier of
        // 503 alone retries only at the hop above the owner.
        let t = topo(
            "name: s
policy: { preset: retry, attempts: 2, retry_on: [503] }
services:
  A: { calls: [B], errors: { own: 503, passed: 502 } }
  B: { calls: [C], errors: { own: 503, passed: 502 } }
  C: { calls: [D], errors: { own: 503, passed: 502 } }
  D: { fault: { error_rate: 1.0 }, errors: { own: 503, passed: 502 } }
",
        );
        assert_close(&loads(&predict(&t, &t.policy)), &[1., 1., 1., 2.]);
        // The same chain passing 500 under `retry` on every 5xx storms.
        let storm = chain("500", "retry", ", attempts: 2, retry_on: [5xx]");
        assert_close(&storm, &[1., 2., 4., 8.]);
        // Every old preset retries every error, whatever its status.
        assert_close(&chain("same", "retry", ", attempts: 2"), &[1., 2., 4., 8.]);
    }

    #[test]
    fn linkerd_and_the_gateway_api_read_their_codes() {
        // Linkerd retries any 5xx once: 2 attempts per hop.
        assert_close(&chain("500", "linkerd", ""), &[1., 2., 4., 8.]);
        // The Gateway API's codes leave out 501; at the topology's R of 2.
        let t = topo(
            "name: s
policy: { preset: gateway-api, attempts: 2 }
services:
  A: { calls: [B] }
  B: { fault: { error_rate: 1.0, status: 501 } }
",
        );
        assert_close(&loads(&predict(&t, &t.policy)), &[1., 1.]);
    }

    #[test]
    fn a_refused_connection_passes_up_as_502_and_a_timeout_as_504() {
        let t = topo(
            "name: s
policy: { preset: retry, attempts: 2, retry_on: [502] }
services:
  A: { calls: [B] }
  B: { calls: [C], errors: { passed: same } }
  C: { fault: { down: true } }
",
        );
        // B's call to C is refused (connect-failure is not retried), and B
        // passes it up as 502, which A retries.
        assert_close(&loads(&predict(&t, &t.policy)), &[1., 2., 2.]);
    }
}
