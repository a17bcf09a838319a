//! HAProxy's configuration for one service's sidecar: a `listen` section
//! per edge on loopback, its servers the callee's replicas, the edge's
//! policy in `retries`, `retry-on` and `option redispatch` (see
//! [`chaoslab_model::topology::proxy`] for the words).
//!
//! Written for Debian's `haproxy` 2.6, run in the foreground
//! (`haproxy -f FILE -db`) as one process with one thread. Measured with
//! it: without `option redispatch` a retry goes to the server that failed
//! it; with it, every retry goes to another server (not only the last).

use std::fmt::Write as _;
use std::time::Duration;

use super::nginx::Refused;
use super::{EdgePlan, ProxyPlan, MAX_CONNECTIONS_PER_EDGE};
use crate::topology::mesh::ProxyKind;
use crate::topology::proxy;

/// The configuration of `plan`'s HAProxy, each edge listening on its port
/// of `ports` (edge order); refused, naming the edge, when an edge's
/// policy has a part HAProxy cannot express.
pub(super) fn config(plan: &ProxyPlan, ports: &[u16]) -> Result<String, Refused> {
    let edges = plan.edges.len().max(1);
    let maxconn = edges * 2 * MAX_CONNECTIONS_PER_EDGE + 64;
    let mut c = String::new();
    let _ = writeln!(
        c,
        "# {}'s sidecar, written by chaoslab from the policy of its calls.\n\
         global\n  \
           maxconn {maxconn}\n  \
           nbthread 1\n\
         defaults\n  \
           mode http\n  \
           timeout http-keep-alive 60s",
        plan.service
    );
    for (e, port) in plan.edges.iter().zip(ports) {
        edge(&mut c, e, *port)?;
    }
    Ok(c)
}

fn edge(c: &mut String, e: &EdgePlan, port: u16) -> Result<(), Refused> {
    let refused = |why| Refused {
        edge: e.name.clone(),
        why,
    };
    if let Some(why) = proxy::unexpressible(ProxyKind::Haproxy, &e.policy, e.other_host) {
        return Err(refused(why));
    }
    let retry_on = proxy::haproxy_retry_on(&e.policy.retry_on).map_err(refused)?;
    let attempts = e.policy.attempts.max(1);
    let ms = |d: Duration| d.as_millis().max(1);
    let per_try = ms(e.policy.timeout);
    let _ = writeln!(
        c,
        "# {}\n\
         listen e{}\n  \
           bind 127.0.0.1:{port}\n  \
           maxconn {}\n  \
           balance {}\n  \
           timeout connect {per_try}ms\n  \
           timeout server {per_try}ms\n  \
           timeout client {}ms\n  \
           retries {}\n  \
           retry-on {}",
        e.name,
        e.edge,
        2 * MAX_CONNECTIONS_PER_EDGE,
        proxy::balance(ProxyKind::Haproxy, e.lb),
        ms(super::call_timeout(&e.policy, ProxyKind::Haproxy)),
        attempts - 1,
        retry_on.join(" "),
    );
    if e.other_host {
        c.push_str("  option redispatch\n");
    }
    for (i, s) in e.servers.iter().enumerate() {
        let _ = writeln!(c, "  server s{i} {s}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::plan;
    use super::*;
    use crate::topology::proxy::Unexpressible;

    #[test]
    fn the_policy_becomes_haproxy_directives() {
        let p = plan(ProxyKind::Haproxy, "[500, 502, 503]");
        let c = config(&p, &[7001]).unwrap();
        for line in [
            "global\n  maxconn 576\n  nbthread 1\n",
            "# A -> B\nlisten e0\n  bind 127.0.0.1:7001\n",
            "  balance roundrobin\n",
            "  timeout connect 1000ms\n  timeout server 1000ms\n",
            "  retries 1\n  retry-on 500 502 503\n  option redispatch\n",
            "  server s0 127.0.0.1:9001\n  server s1 127.0.0.1:9002\n",
        ] {
            assert!(c.contains(line), "no `{line}` in\n{c}");
        }
        let mut same = p.clone();
        same.edges[0].other_host = false;
        assert!(!config(&same, &[7001]).unwrap().contains("redispatch"));
    }

    #[test]
    fn what_haproxy_cannot_express_is_refused_naming_the_edge() {
        let p = plan(ProxyKind::Haproxy, "[envoy-ratelimited]");
        let e = config(&p, &[7001]).unwrap_err();
        assert_eq!(e.edge, "A -> B");
        assert!(matches!(e.why, Unexpressible::Condition(_)), "{e:?}");
    }
}
