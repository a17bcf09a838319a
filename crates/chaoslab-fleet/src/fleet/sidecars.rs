//! The sidecars a fleet starts (SPEC section 17): which of its services
//! have one here, and what each proxy is told, from the layout and the
//! callees' addresses; the [`crate::sidecar`] module starts them.

use std::net::SocketAddr;

use super::layout::{retry_policy, FleetLayout};
use crate::sidecar::retries::ProxiedCalls;
use crate::sidecar::{EdgePlan, Plan, ProxyPlan};
use crate::topology::Topology;

/// The proxies of the services with a `sidecar:` that this process
/// serves (one per service, its endpoints' calls sharing it), each edge
/// to the callee's replicas where they listen.
pub(super) fn plan(t: &Topology, layout: &FleetLayout, addrs: &[Vec<SocketAddr>]) -> Plan {
    let mut proxies: Vec<ProxyPlan> = vec![];
    for (id, s) in t.services.iter().enumerate() {
        let Some(sidecar) = s.sidecar else { continue };
        if !layout.services[id].here || s.calls.is_empty() {
            continue;
        }
        let edges = s.calls.iter().map(|&e| {
            let edge = &t.edges[e];
            let (lb, other_host) = t.policy.balancing(&edge.policy);
            EdgePlan {
                edge: e,
                name: format!("{} -> {}", s.name, t.services[edge.to].name),
                servers: servers(layout, addrs, edge.to),
                policy: retry_policy(t, &t.policy, e),
                other_host,
                lb,
                max_fails: sidecar.max_fails,
                fail_timeout: sidecar.fail_timeout,
            }
        });
        let service = s.service_name().to_string();
        match proxies.iter_mut().find(|p| p.service == service) {
            Some(p) => p.edges.extend(edges),
            None => proxies.push(ProxyPlan {
                service,
                kind: sidecar.kind,
                edges: edges.collect(),
            }),
        }
    }
    Plan { proxies }
}

/// Where callee `to`'s replicas listen, `host:port` each: its listeners
/// here, or the URLs it is reached at elsewhere.
fn servers(layout: &FleetLayout, addrs: &[Vec<SocketAddr>], to: usize) -> Vec<String> {
    match &layout.services[to].remote {
        Some(urls) => urls.iter().map(|u| host_port(u).to_string()).collect(),
        None => addrs[to].iter().map(SocketAddr::to_string).collect(),
    }
}

/// `host:port` of `http://host:port/path`.
fn host_port(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split('/').next().unwrap_or(rest)
}

/// The path callee `to` is called at, as its edge's URL ends: what the
/// caller asks its proxy for (the proxy passes the path on).
pub(super) fn path(t: &Topology, layout: &FleetLayout, to: usize) -> String {
    match layout.services[to].remote.as_ref().and_then(|u| u.first()) {
        Some(u) => {
            let rest = u.split_once("://").map_or(u.as_str(), |(_, r)| r);
            match rest.find('/') {
                Some(i) => rest[i..].to_string(),
                None => "/".to_string(),
            }
        }
        None => t.services[to].path(),
    }
}

/// The tables with which callees count the retries of their callers'
/// sidecars: every edge whose caller has one, wherever it runs.
pub(super) fn proxied_calls(t: &Topology) -> Option<std::sync::Arc<ProxiedCalls>> {
    let proxied: Vec<(usize, usize, usize)> = t
        .edges
        .iter()
        .enumerate()
        .filter(|(_, e)| t.services[e.from].sidecar.is_some())
        .map(|(i, e)| (i, e.from, e.to))
        .collect();
    (!proxied.is_empty()).then(|| std::sync::Arc::new(ProxiedCalls::new(t.edges.len(), proxied)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::FleetOptions;
    use crate::topology::mesh::ProxyKind;

    #[test]
    fn a_proxy_per_service_with_a_sidecar_to_its_callees_replicas() {
        let t = Topology::from_yaml(
            "name: t\npolicy: { preset: retry }\nservices:\n  \
             A: { calls: [B, C], sidecar: { kind: haproxy } }\n  \
             B: { replicas: 2 }\n  C: {}\n",
            "t.yaml",
        )
        .unwrap();
        let layout = FleetLayout::of(&t, &FleetOptions::default());
        let addrs: Vec<Vec<SocketAddr>> = vec![
            vec!["127.0.0.1:7000".parse().unwrap()],
            vec![
                "127.0.0.1:7001".parse().unwrap(),
                "127.0.0.1:7002".parse().unwrap(),
            ],
            vec!["127.0.0.1:7003".parse().unwrap()],
        ];
        let p = plan(&t, &layout, &addrs);
        assert_eq!(p.proxies.len(), 1);
        let a = &p.proxies[0];
        assert_eq!((a.service.as_str(), a.kind), ("A", ProxyKind::Haproxy));
        let names: Vec<&str> = a.edges.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["A -> B", "A -> C"]);
        assert_eq!(a.edges[0].servers, ["127.0.0.1:7001", "127.0.0.1:7002"]);
        assert_eq!(
            a.edges[0].policy.attempts, 2,
            "the topology's, not the client's"
        );
        assert_eq!(path(&t, &layout, 1), "/");
        let calls = proxied_calls(&t).unwrap();
        assert!(!calls.is_empty());
        assert_eq!(host_port("http://10.0.0.1:80/trip"), "10.0.0.1:80");
    }
}
