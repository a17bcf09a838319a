//! Edges whose retries are a real proxy's (SPEC section 17's `sidecar:`):
//! the policy the proxy applies and where its retries go
//! ([`crate::topology::proxy::edge_as_run`]), and nginx's passive health
//! check in its steady state.
//!
//! nginx takes a server out once `max_fails` attempts on it have failed,
//! for `fail_timeout` (and up to a second more: its clock counts whole
//! seconds); a request that finds every server out is answered 502 "no
//! live upstreams" without being sent. When each server fails every
//! attempt or none, the model plays nginx's rules to their steady state
//! (`topology::nginx_upstream`: over two servers failing everything,
//! `max_fails` + 2 attempts per `fail_timeout` + 1 s, as measured); when
//! they fail a share of their attempts, it bounds the attempts by
//! `max_fails` per server per `fail_timeout` + 1 s, over that share, a
//! rough figure. nginx ignores both keys for an upstream of one server.

use super::call::{fail_fast, failed_call, Callee};
use super::{CallOutcome, Dist, Record};
use crate::topology::proxy::Passive;
use crate::topology::EdgePolicy;
use error_ownership::{Attribution, Claim, DependencyMode};

/// A call through nginx with its passive health check, `first_per_sec`
/// calls a second, to `callee`: when each server fails every attempt or
/// none, nginx's rules played to their steady state
/// ([`Passive::steady`]); otherwise a rough bound ([`out_of_servers`]).
pub(super) fn passive_check(
    o: &mut CallOutcome,
    passive: Passive,
    callee: Callee,
    first_per_sec: f64,
    p: &EdgePolicy,
    (mode, attribution): (DependencyMode, Attribution),
) {
    let n = passive.servers as usize;
    let (bad, errors): (Vec<bool>, Dist) = match callee {
        Callee::One(d) if d.s <= 0.0 => (vec![true; n], d),
        Callee::One(d) if d.s >= 1.0 => return,
        Callee::Split(s) if s.bad_dist.s <= 0.0 && s.good_dist.s >= 1.0 => {
            ((0..n).map(|i| i < s.bad as usize).collect(), s.bad_dist)
        }
        _ => {
            let p_fail = 1.0 - callee.mix().s;
            return out_of_servers(o, passive, p_fail, first_per_sec, p, (mode, attribution));
        }
    };
    let st = passive.steady(&bad, p.attempts, first_per_sec);
    *o = CallOutcome {
        attempts: st.attempts,
        retries: (st.attempts - st.sent).max(0.0),
        ok: st.ok,
        ..CallOutcome::default()
    };
    let failing = 1.0 - errors.s;
    for k in Claim::ALL {
        let share = if failing > 0.0 {
            errors.of(k) / failing
        } else {
            0.0
        };
        o.fail[failed_call(p, k, mode, attribution) as usize] += st.error * share;
    }
    // nginx's own 502: no claim on it.
    o.fail[failed_call(p, Claim::Missing, mode, attribution) as usize] += st.no_live;
}

/// A call through nginx whose servers fail a share `p_fail` of their
/// attempts, `first_per_sec` calls a second: only the attempts the
/// upstream's servers take in the steady state are sent (a rough bound,
/// [`Passive::cap_per_sec`]), and the calls that find every server out
/// fail at the proxy with its 502, no claim on it.
fn out_of_servers(
    o: &mut CallOutcome,
    passive: Passive,
    p_fail: f64,
    first_per_sec: f64,
    p: &EdgePolicy,
    (mode, attribution): (DependencyMode, Attribution),
) {
    let Some(cap) = passive.cap_per_sec(p_fail) else {
        return;
    };
    let wanted = first_per_sec * o.attempts;
    if wanted <= cap {
        return;
    }
    let reach = cap / wanted;
    fail_fast(o, reach);
    // Not the caller's own error: a dependency's answer with no claim.
    o.fail[Record::Clean as usize] -= 1.0 - reach;
    o.fail[failed_call(p, Claim::Missing, mode, attribution) as usize] += 1.0 - reach;
}

#[cfg(test)]
mod tests {
    use super::super::tests::topo;
    use super::super::{predict, predict_with_latency};
    use crate::topology::Topology;

    /// A→B→C→D, every caller behind a `kind` sidecar, each callee of
    /// `replicas`, D failing every request.
    fn chain(kind: &str, replicas: u32, extra: &str) -> Topology {
        topo(&format!(
            "name: c\nload: {{ rps: 100 }}\n\
             policy: {{ preset: retry, attempts: 2, retry_on: [connect-failure, timeout, reset, 500, 502, 503] }}\n\
             services:\n  \
               A: {{ calls: [B], sidecar: {{ kind: {kind}{extra} }} }}\n  \
               B: {{ calls: [C], replicas: {replicas}, sidecar: {{ kind: {kind}{extra} }} }}\n  \
               C: {{ calls: [D], replicas: {replicas}, sidecar: {{ kind: {kind}{extra} }} }}\n  \
               D: {{ replicas: {replicas}, fault: {{ error_rate: 1.0 }} }}\n"
        ))
    }

    fn loads(t: &Topology) -> Vec<f64> {
        predict(t, &t.policy)
            .services
            .iter()
            .map(|s| s.load)
            .collect()
    }

    fn close(got: &[f64], want: &[f64]) {
        assert!(
            got.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-9),
            "{got:?} vs {want:?}"
        );
    }

    #[test]
    fn nginx_over_two_replicas_retries_once_per_hop() {
        let t = chain("nginx", 2, ", max_fails: 0");
        close(&loads(&t), &[1.0, 2.0, 4.0, 8.0]);
        let p = predict(&t, &t.policy);
        assert_eq!(p.storm_radius, 3);
        assert!((p.edges[2].retries - 4.0).abs() < 1e-9);
    }

    #[test]
    fn nginx_over_one_replica_never_retries() {
        let t = chain("nginx", 1, ", max_fails: 0");
        close(&loads(&t), &[1.0, 1.0, 1.0, 1.0]);
        assert_eq!(predict(&t, &t.policy).storm_radius, 0);
        // Three attempts over two servers: still each server once.
        let three = topo(
            "name: t\npolicy: { preset: retry, attempts: 3 }\nservices:\n  \
             A: { calls: [B], sidecar: { kind: nginx, max_fails: 0 } }\n  \
             B: { replicas: 2, fault: { error_rate: 1.0 } }\n",
        );
        close(&loads(&three), &[1.0, 2.0]);
    }

    #[test]
    fn haproxy_retries_on_the_same_server() {
        let t = chain("haproxy", 1, "");
        close(&loads(&t), &[1.0, 2.0, 4.0, 8.0]);
        // One bad replica of two: without redispatch a call that met it
        // stays on it; with it, its retry goes to the good one.
        let split = |other: bool| {
            topo(&format!(
                "name: t\npolicy: {{ preset: retry, attempts: 3, retry_other_host: {other} }}\nservices:\n  \
                 A: {{ calls: [B], sidecar: {{ kind: haproxy }} }}\n  \
                 B: {{ replicas: 2, fault: {{ error_rate: 1.0, replicas: [0] }} }}\n"
            ))
        };
        let same = split(false);
        let p = predict(&same, &same.policy);
        // Half the calls meet the bad one and stay: 3 attempts; half 1.
        close(&loads(&same), &[1.0, 2.0]);
        assert!((p.services[0].p_error - 0.5).abs() < 1e-9);
        let other = split(true);
        let p = predict(&other, &other.policy);
        close(&loads(&other), &[1.0, 1.5]);
        assert!(p.services[0].p_error.abs() < 1e-9);
    }

    #[test]
    fn only_the_conditions_the_proxy_is_given_are_retried() {
        // The proxy ignores ownership's claim: an unclaimed error is
        // retried all the same.
        let t = topo(
            "name: t\npolicy: { preset: retry, attempts: 2 }\nservices:\n  \
             A: { calls: [B], sidecar: { kind: haproxy } }\n  \
             B: { calls: [C], sidecar: { kind: haproxy } }\n  \
             C: { fault: { error_rate: 1.0 } }\n",
        );
        let mut p = t.policy.clone();
        p.mode.ownership = true;
        let loads: Vec<f64> = predict(&t, &p).services.iter().map(|s| s.load).collect();
        close(&loads, &[1.0, 2.0, 4.0]);
    }

    #[test]
    fn nginx_passive_checks_cap_a_failing_upstream() {
        // 100 calls a second, two servers failing everything, out for
        // 2 s + 1: max_fails + 2 attempts per 3 s, of the 200 a second a
        // call's two tries would send (what the lab measured with
        // nginx 1.22: 30, 40 and 50 attempts in 30 s).
        for (max_fails, want) in [(1, 1.0), (2, 4.0 / 3.0), (3, 5.0 / 3.0)] {
            let t = topo(&format!(
                "name: t\nload: {{ rps: 100 }}\npolicy: {{ preset: retry, attempts: 2 }}\nservices:\n  \
                 A: {{ calls: [B], sidecar: {{ kind: nginx, max_fails: {max_fails}, fail_timeout: 2s }} }}\n  \
                 B: {{ replicas: 2, fault: {{ error_rate: 1.0 }} }}\n"
            ));
            let p = predict_with_latency(&t, &t.policy, None);
            let per_sec = p.services[1].load * 100.0;
            assert!(
                (per_sec - want).abs() < 0.02,
                "max_fails {max_fails}: {per_sec}"
            );
            // Every call fails: at the proxy or at B.
            assert!((p.services[0].p_error - 1.0).abs() < 1e-9);
            assert!(p.edges[0].retries < 0.01);
        }
        // One bad replica of three is kept out nearly all the time, and
        // the calls succeed on the others.
        let one_bad = topo(
            "name: t\nload: { rps: 100 }\npolicy: { preset: retry, attempts: 2 }\nservices:\n  \
             A: { calls: [B], sidecar: { kind: nginx } }\n  \
             B: { replicas: 3, fault: { error_rate: 1.0, replicas: [0] } }\n",
        );
        let p = predict_with_latency(&one_bad, &one_bad.policy, None);
        assert!(p.services[0].p_error < 1e-9, "{:?}", p.services[0]);
        assert!(p.services[1].load < 1.01, "{}", p.services[1].load);
        // With max_fails 0 nothing is taken out.
        let off = topo(
            "name: t\nload: { rps: 100 }\npolicy: { preset: retry, attempts: 2 }\nservices:\n  \
             A: { calls: [B], sidecar: { kind: nginx, max_fails: 0 } }\n  \
             B: { replicas: 2, fault: { error_rate: 1.0 } }\n",
        );
        close(&loads(&off), &[1.0, 2.0]);
    }
}
