//! A fleet's layout: all that starting a fleet decides before it binds a
//! port.
//!
//! Why apart: a fleet's shape follows from the topology and the options
//! alone. Which services this process serves and which it reaches at a
//! URL, how many replicas each runs here and how many the counters know,
//! the open files and memory it needs, where its root ids start, the
//! seeds each replica draws from, the policy each edge runs: none of it
//! needs a socket, so a unit test can check it without binding one, and
//! [`Fleet::spawn`](super::Fleet::spawn) is left to bind and serve what
//! the layout says.

use std::net::SocketAddr;

use super::limits::{FdNeed, MemNeed};
use super::{peer_urls, FleetOptions, Placement};
use crate::middleware::client::MAX_IN_FLIGHT_PER_EDGE;
use crate::topology::{EdgePolicy, Policy, Service, ServiceId, Topology, Transport};
use error_ownership::policy::Lb;

/// What a fleet of a topology is in this process, before any socket.
#[derive(Debug, Clone)]
pub(super) struct FleetLayout {
    /// How the services here call each other: a node's calls cross
    /// processes, over HTTP/1.1.
    pub(super) transport: Transport,
    /// Where a node's one listener binds, or a shard's first (the others
    /// on the ports after it, [`Slots`](crate::topology::shards::Slots)
    /// order); `None`: every listener on a free loopback port.
    pub(super) listen: Option<SocketAddr>,
    /// The open files it needs, weighed before the first bind.
    pub(super) fd: FdNeed,
    /// The memory it holds, the session's samples with it.
    pub(super) mem: MemNeed,
    /// Per service, topology order.
    pub(super) services: Vec<ServiceLayout>,
    /// Per edge, topology order.
    pub(super) edges: Vec<EdgeLayout>,
    /// Per service's first node, the HTTP/2 streams each of its listeners
    /// serves at once: as many as its callers' edges may have in flight,
    /// so that no call waits for a stream unseen. 0 over HTTP/1.1, where
    /// a listener serves as axum does.
    pub(super) streams: Vec<u32>,
    /// The first root id this process gives out.
    pub(super) first_root: u64,
    /// Whether it journals its retries: a node does, for the session
    /// reading the fleet.
    pub(super) journal: bool,
    /// Plain axum + reqwest, without the middleware.
    pub(super) plain: bool,
    /// The plain baseline carries the trace and the timeout.
    pub(super) plain_traced: bool,
}

/// One service (one node of the topology) in a fleet's layout.
#[derive(Debug, Clone)]
pub(super) struct ServiceLayout {
    /// Whether this process serves it: it has no `url:` and, placed, is
    /// of the local service.
    pub(super) here: bool,
    /// The listeners it binds: one per replica started here when it is
    /// its service's first node and served here (its endpoints share
    /// them); 0 otherwise.
    pub(super) listeners: u32,
    /// Where it is reached when it runs elsewhere: its `url:`, or its
    /// peer's replicas' URLs. `None` when here, or when nobody here
    /// calls it.
    pub(super) remote: Option<Vec<String>>,
    /// A service placed elsewhere is here an outside service: one per URL
    /// of its replicas.
    pub(super) placed: Vec<Service>,
    /// Its replicas as the counters know them.
    pub(super) counted: u32,
    /// Its runtimes here: one per listener it is served on, or per URL it
    /// is placed at, or one.
    pub(super) replicas: Vec<ReplicaLayout>,
}

/// One runtime of a service in this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ReplicaLayout {
    /// The replica it is (`u32::MAX`: one of many, not known which).
    pub(super) index: u32,
    /// The seed of its retry client.
    pub(super) client_seed: u64,
    /// The seed of its own draws.
    pub(super) seed: u64,
}

/// One edge in a fleet's layout.
#[derive(Debug, Clone, Copy)]
pub(super) struct EdgeLayout {
    /// How its attempts spread over the callee's replicas.
    pub(super) lb: Lb,
    /// Whether a retry goes to another replica.
    pub(super) other_host: bool,
    /// The policy it runs: the fleet's with the edge's overrides.
    pub(super) policy: EdgePolicy,
    /// Whether its callee is served in this process.
    pub(super) in_process: bool,
}

impl FleetLayout {
    /// The layout of a fleet of `t` started with `opts`.
    pub(super) fn of(t: &Topology, opts: &FleetOptions) -> FleetLayout {
        // A node's calls cross processes over HTTP/1.1; a shard's run as
        // the one-process fleet's, and cross shards the same way.
        let transport = match &opts.placement {
            Some(p) if p.shard.is_none() => Transport::Http1,
            _ => t.transport,
        };
        let services = services(t, opts);
        let fd = fd_need(t, opts, transport, &services);
        FleetLayout {
            transport,
            listen: opts.placement.as_ref().map(|p| p.listen),
            mem: MemNeed::of(&fd, opts.samples),
            fd,
            edges: edges(
                t,
                &services,
                opts.placement.as_ref().is_some_and(|p| p.shard.is_some()),
            ),
            services,
            streams: streams(t, transport),
            first_root: first_root(opts.placement.as_ref()),
            journal: opts.placement.as_ref().is_some_and(Placement::serves_any),
            plain: opts.plain,
            plain_traced: opts.plain_traced,
        }
    }
}

/// Every service's layout, in topology order.
fn services(t: &Topology, opts: &FleetOptions) -> Vec<ServiceLayout> {
    let here: Vec<bool> = (0..t.services.len()).map(|id| here(t, opts, id)).collect();
    let listeners: Vec<u32> = t
        .services
        .iter()
        .enumerate()
        .map(|(id, s)| {
            if here[id] && s.group == id {
                started(opts, s)
            } else {
                0
            }
        })
        .collect();
    t.services
        .iter()
        .enumerate()
        .map(|(id, s)| {
            let remote = remote(t, opts, id);
            let placed: Vec<Service> = match (&remote, &s.url) {
                (Some(urls), None) => urls
                    .iter()
                    .map(|u| Service {
                        url: Some(u.clone()),
                        ..s.clone()
                    })
                    .collect(),
                _ => vec![],
            };
            let served_on = if here[id] { listeners[s.group] } else { 0 };
            let bound = (served_on as usize).max(placed.len()).max(1) as u32;
            ServiceLayout {
                here: here[id],
                listeners: listeners[id],
                replicas: replicas(opts, id, s, here[id], bound),
                counted: counted(t, opts, id),
                remote,
                placed,
            }
        })
        .collect()
}

/// Whether service `id` is served by this process.
fn here(t: &Topology, opts: &FleetOptions, id: ServiceId) -> bool {
    let s = &t.services[id];
    s.url.is_none() && opts.placement.as_ref().is_none_or(|p| p.serves(s.group))
}

/// Where service `id` lives when not in this process: its `url:`, or its
/// peer under a placement.
fn remote(t: &Topology, opts: &FleetOptions, id: ServiceId) -> Option<Vec<String>> {
    let s = &t.services[id];
    match &opts.placement {
        _ if s.url.is_some() => s.url.clone().map(|u| vec![u]),
        Some(p) if !p.serves(s.group) => p.peers.get(id).cloned().flatten().map(|u| peer_urls(&u)),
        _ => None,
    }
}

/// Replicas of a service started here: a node serves one.
fn started(opts: &FleetOptions, s: &Service) -> u32 {
    match &opts.placement {
        Some(p) if p.shard.is_none() => 1,
        _ => s.replicas.max(1),
    }
}

/// Replicas counted apart: every one here and for the session of many
/// nodes; on a node, its own service's when it knows which replica it
/// is, and a peer's as many as its URLs (one, a Service's, in a cluster).
fn counted(t: &Topology, opts: &FleetOptions, id: ServiceId) -> u32 {
    let s = &t.services[id];
    let all = s.replicas.max(1);
    match &opts.placement {
        Some(p) if p.shard.is_some() => all,
        Some(p) if p.local == Some(s.group) => p.replica.map_or(1, |_| all),
        Some(p) if p.local.is_some() => p
            .peers
            .get(id)
            .cloned()
            .flatten()
            .map_or(1, |u| (peer_urls(&u).len() as u32).clamp(1, all)),
        _ => all,
    }
}

/// The runtimes of service `id` here, `bound` of them. A node is one
/// replica of a replicated service: the one `--processes` started it as,
/// or one unknown (a pod of a Deployment), which a fault on every replica
/// reaches and a fault naming replicas does not.
fn replicas(
    opts: &FleetOptions,
    id: ServiceId,
    s: &Service,
    here: bool,
    bound: u32,
) -> Vec<ReplicaLayout> {
    let known = opts.placement.as_ref().and_then(|p| p.replica);
    let one_of_many = opts.placement.as_ref().is_some_and(|p| p.shard.is_none()) && s.replicas > 1;
    (0..bound)
        .map(|r| {
            let index = match known {
                Some(k) if here => k,
                _ if one_of_many && here => u32::MAX,
                _ => r,
            };
            let (client_seed, seed) = seeds(opts.seed, id, if known.is_some() { index } else { r });
            ReplicaLayout {
                index,
                client_seed,
                seed,
            }
        })
        .collect()
}

/// The seeds of replica `r` of service `id`: its retry client's and its
/// own. Replica 0 draws from the seeds a service of one replica had, so a
/// topology without replicas runs as it always did.
fn seeds(seed: u64, id: ServiceId, r: u32) -> (u64, u64) {
    let k = u64::from(r).wrapping_mul(0xD1B5_4A32_D192_ED03);
    (
        seed ^ (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ k,
        seed.wrapping_add(id as u64 + 1) ^ k,
    )
}

/// The open files the fleet needs; in one process over HTTP/1.1, with
/// what it would need over HTTP/2, which a refusal offers.
fn fd_need(
    t: &Topology,
    opts: &FleetOptions,
    transport: Transport,
    services: &[ServiceLayout],
) -> FdNeed {
    let here = |id: ServiceId| services[id].here;
    let served = services.iter().map(|s| s.listeners as usize).sum();
    let mut need = FdNeed::of(t, transport, served, &here);
    if transport == Transport::Http1 && opts.placement.is_none() {
        need.over_http2 = Some(FdNeed::of(t, Transport::Http2, served, &here).total());
    }
    let sharded = opts.placement.as_ref().is_some_and(|p| p.shard.is_some());
    if sharded && transport == Transport::Http2 {
        // A shard calls the other shards' services over the same HTTP/2
        // connections as its own: one per callee replica elsewhere, not
        // one per call (an outside `url:` service is still one per call).
        let away = |e: &&crate::topology::Edge| here(e.from) && !here(e.to);
        let mut callees: Vec<ServiceId> = t
            .edges
            .iter()
            .filter(away)
            .filter(|e| t.services[e.to].url.is_none())
            .map(|e| t.services[e.to].group)
            .collect();
        callees.sort_unstable();
        callees.dedup();
        let shared: usize = callees
            .iter()
            .map(|&g| t.services[g].replicas.max(1) as usize)
            .sum();
        let per_call = t
            .edges
            .iter()
            .filter(away)
            .filter(|e| t.services[e.to].url.is_some())
            .count();
        need.connections = need.connections - need.outside + shared + per_call;
        need.outside = shared + per_call;
    }
    need
}

/// Root ids: a node's apart from every other node's (the session replays
/// all their journals into one tracker), in the high bits, and shifted in
/// the low ones so that nodes counting at the same pace do not share the
/// tracker's slots.
fn first_root(placement: Option<&Placement>) -> u64 {
    let k = match placement {
        Some(Placement {
            local: Some(g),
            replica,
            ..
        }) => (*g as u64 + 1) * 1024 + u64::from(replica.unwrap_or(0)),
        // A shard's apart from every node's: below the first of those.
        Some(Placement { shard: Some(s), .. }) => s.index as u64 + 1,
        _ => return 1,
    };
    (k << 40) + k * 104_729 + 1
}

/// Every edge's layout, in topology order.
fn edges(t: &Topology, services: &[ServiceLayout], sharded: bool) -> Vec<EdgeLayout> {
    t.edges
        .iter()
        .enumerate()
        .map(|(id, e)| {
            let (lb, other_host) = t.policy.balancing(&e.policy);
            EdgeLayout {
                lb,
                other_host,
                policy: edge_policy(t, &t.policy, id),
                // Through a sidecar, the callee is called at its proxy. A
                // shard calls the other shards' services over the same
                // HTTP/2 connections as its own.
                in_process: (services[e.to].here || sharded && t.services[e.to].url.is_none())
                    && t.services[e.from].sidecar.is_none(),
            }
        })
        .collect()
}

/// The policy `edge`'s client runs under `policy`: the edge's retry
/// policy, or through the caller's sidecar one attempt per call (every
/// retry is the proxy's).
pub(super) fn edge_policy(t: &Topology, policy: &Policy, edge: usize) -> EdgePolicy {
    let p = retry_policy(t, policy, edge);
    match t.services[t.edges[edge].from].sidecar {
        Some(s) => crate::sidecar::client_policy(&p, s.kind),
        None => p,
    }
}

/// The policy `edge`'s retrier runs under `policy` (the lab's client, or
/// the caller's sidecar).
pub(super) fn retry_policy(t: &Topology, policy: &Policy, edge: usize) -> EdgePolicy {
    let e = &t.edges[edge];
    let mut p = policy.for_edge(&e.policy);
    // A service without the middleware ignores claims.
    p.ownership &= t.services[e.from].ownership;
    p
}

/// Per service's first node, its listeners' HTTP/2 streams.
fn streams(t: &Topology, transport: Transport) -> Vec<u32> {
    let mut streams = vec![0u32; t.services.len()];
    if transport == Transport::Http2 {
        for e in &t.edges {
            let g = t.services[e.to].group;
            streams[g] = streams[g].saturating_add(MAX_IN_FLIGHT_PER_EDGE as u32);
        }
    }
    streams
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(yaml: &str) -> Topology {
        Topology::from_yaml(yaml, "x.yaml").unwrap()
    }

    fn id(t: &Topology, name: &str) -> ServiceId {
        t.services
            .iter()
            .position(|s| s.name == name)
            .unwrap_or_else(|| panic!("no service {name}"))
    }

    /// The options of a node serving `local` (a service's first node),
    /// its peers at `peers`.
    fn node(
        t: &Topology,
        local: &str,
        replica: Option<u32>,
        peers: &[(&str, &str)],
    ) -> FleetOptions {
        let mut urls = vec![None; t.services.len()];
        for (name, url) in peers {
            urls[id(t, name)] = Some(url.to_string());
        }
        FleetOptions {
            placement: Some(Placement {
                local: Some(id(t, local)),
                listen: "127.0.0.1:7000".parse().unwrap(),
                replica,
                peers: urls,
                shard: None,
            }),
            ..FleetOptions::default()
        }
    }

    const CHAIN: &str = "name: t\nservices:\n  A: { calls: [DB] }\n  DB: { replicas: 3 }\n";

    #[test]
    fn a_service_with_a_url_is_remote_and_binds_nothing() {
        let t =
            topo("name: t\nservices:\n  A: { calls: [B] }\n  B: { url: \"http://127.0.0.1:9\" }\n");
        let l = FleetLayout::of(&t, &FleetOptions::default());
        let (a, b) = (&l.services[id(&t, "A")], &l.services[id(&t, "B")]);
        assert!(a.here && a.remote.is_none());
        assert_eq!(a.listeners, 1);
        assert!(!b.here);
        assert_eq!(b.listeners, 0);
        assert_eq!(b.remote, Some(vec!["http://127.0.0.1:9".to_string()]));
        assert!(b.placed.is_empty(), "an outside service keeps its own spec");
        assert!(!l.edges[0].in_process);
        assert_eq!((l.fd.listeners, l.fd.calls, l.fd.outside), (1, 1, 1));
        assert_eq!(l.mem.listeners, 1);
    }

    #[test]
    fn every_replica_in_the_yaml_binds_a_listener_with_seeds_apart() {
        let t = topo(CHAIN);
        let l = FleetLayout::of(&t, &FleetOptions::default());
        let db = &l.services[id(&t, "DB")];
        assert_eq!((db.listeners, db.counted), (3, 3));
        let indices: Vec<u32> = db.replicas.iter().map(|r| r.index).collect();
        assert_eq!(indices, [0, 1, 2]);
        let mut seeds: Vec<u64> = db
            .replicas
            .iter()
            .flat_map(|r| [r.client_seed, r.seed])
            .collect();
        seeds.sort_unstable();
        seeds.dedup();
        assert_eq!(seeds.len(), 6, "every replica draws its own seeds");
        assert_eq!(l.fd.listeners, 4);
        assert_eq!(l.first_root, 1);
        assert!(!l.journal && l.listen.is_none());
    }

    #[test]
    fn replica_0_draws_the_seeds_of_a_service_of_one() {
        let opts = FleetOptions {
            seed: 42,
            ..FleetOptions::default()
        };
        let one = topo(&CHAIN.replace("{ replicas: 3 }", "{}"));
        let three = topo(CHAIN);
        let db = id(&three, "DB");
        let of_one = FleetLayout::of(&one, &opts).services[db].replicas.clone();
        let of_three = FleetLayout::of(&three, &opts).services[db].replicas.clone();
        assert_eq!(of_one.len(), 1);
        assert_eq!(of_three[0], of_one[0]);
        let reseeded = FleetLayout::of(&three, &FleetOptions::default());
        assert_ne!(reseeded.services[db].replicas[0], of_three[0]);
    }

    #[test]
    fn a_node_of_a_known_replica_draws_that_replicas_seeds() {
        let t = topo(CHAIN);
        let db = id(&t, "DB");
        let whole = FleetLayout::of(&t, &FleetOptions::default());
        let l = FleetLayout::of(&t, &node(&t, "DB", Some(2), &[("A", "http://a:1")]));
        let here = &l.services[db];
        assert_eq!((here.listeners, here.counted), (1, 3));
        assert_eq!(here.replicas, [whole.services[db].replicas[2]]);
        let unknown = FleetLayout::of(&t, &node(&t, "DB", None, &[]));
        let pod = &unknown.services[db];
        assert_eq!(pod.counted, 1);
        assert_eq!(pod.replicas[0].index, u32::MAX);
    }

    #[test]
    fn a_placement_keeps_only_its_local_group() {
        let t = topo(
            "name: t\nload: { entry: A }\nservices:\n  A: { calls: [S/trip] }\n  S:\n    replicas: 2\n    endpoints:\n      trip: { calls: [C] }\n      search: {}\n  C: { replicas: 3 }\n",
        );
        let opts = node(
            &t,
            "S/trip",
            Some(1),
            &[("A", "http://a:1"), ("C", "http://c:1, http://c:2")],
        );
        let l = FleetLayout::of(&t, &opts);
        let [a, trip, search, c] = ["A", "S/trip", "S/search", "C"].map(|n| &l.services[id(&t, n)]);
        assert!(!a.here && trip.here && search.here && !c.here);
        assert_eq!(
            [a.listeners, trip.listeners, search.listeners, c.listeners],
            [0, 1, 0, 0],
            "a node binds one listener, its service's, shared by its endpoints"
        );
        assert_eq!(search.replicas.len(), 1);
        assert!(trip
            .replicas
            .iter()
            .chain(&search.replicas)
            .all(|r| r.index == 1));
        assert_eq!(a.remote, Some(vec!["http://a:1".to_string()]));
        let c_urls = vec!["http://c:1".to_string(), "http://c:2".to_string()];
        assert_eq!(c.remote.as_ref(), Some(&c_urls));
        let placed: Vec<_> = c.placed.iter().map(|s| s.url.clone().unwrap()).collect();
        assert_eq!(placed, c_urls);
        assert_eq!((c.replicas.len(), c.counted), (2, 2));
        assert_eq!((a.counted, trip.counted), (1, 2));
        let into_s = t
            .edges
            .iter()
            .position(|e| e.to == id(&t, "S/trip"))
            .unwrap();
        let into_c = t.edges.iter().position(|e| e.to == id(&t, "C")).unwrap();
        assert!(l.edges[into_s].in_process && !l.edges[into_c].in_process);
        assert_eq!(l.listen, opts.placement.as_ref().map(|p| p.listen));
        assert!(l.journal);
        assert_eq!(l.fd.listeners, 1);
    }

    #[test]
    fn the_session_of_many_nodes_serves_nothing_and_counts_every_replica() {
        let t = topo(CHAIN);
        let mut opts = node(&t, "A", None, &[("A", "http://a:1"), ("DB", "http://d:1")]);
        opts.placement.as_mut().unwrap().local = None;
        let l = FleetLayout::of(&t, &opts);
        assert!(l.services.iter().all(|s| !s.here && s.listeners == 0));
        assert_eq!(l.services[id(&t, "DB")].counted, 3);
        assert_eq!(l.fd.listeners, 0);
        assert_eq!(l.first_root, 1);
        assert!(!l.journal);
    }

    #[test]
    fn nodes_give_out_root_ids_apart() {
        let t = topo(CHAIN);
        let roots: Vec<u64> = [
            ("A", None),
            ("DB", Some(0)),
            ("DB", Some(1)),
            ("DB", Some(2)),
        ]
        .into_iter()
        .map(|(local, replica)| FleetLayout::of(&t, &node(&t, local, replica, &[])).first_root)
        .collect();
        let mut apart = roots.clone();
        apart.sort_unstable();
        apart.dedup();
        assert_eq!(apart.len(), roots.len(), "{roots:?}");
        let db = id(&t, "DB") as u64;
        assert_eq!(
            roots[2] >> 40,
            (db + 1) * 1024 + 1,
            "the node in the high bits"
        );
        assert!(roots.iter().all(|&r| r > 1));
    }

    #[test]
    fn over_http2_each_callee_serves_its_callers_streams() {
        let yaml = "name: t\ntransport: http2\nservices:\n  A: { calls: [B, C] }\n  C: { calls: [B] }\n  B: {}\n";
        let t = topo(yaml);
        let l = FleetLayout::of(&t, &FleetOptions::default());
        let per_edge = MAX_IN_FLIGHT_PER_EDGE as u32;
        assert_eq!(l.transport, Transport::Http2);
        assert_eq!(l.streams[id(&t, "B")], 2 * per_edge);
        assert_eq!(l.streams[id(&t, "C")], per_edge);
        assert_eq!(l.streams[id(&t, "A")], 0);
        assert_eq!(l.fd.over_http2, None);

        let http1 = FleetLayout::of(
            &topo(&yaml.replace("http2", "http1")),
            &FleetOptions::default(),
        );
        assert!(http1.streams.iter().all(|&s| s == 0));
        assert!(http1.fd.over_http2.is_some_and(|n| n < http1.fd.total()));

        let a_node = FleetLayout::of(&t, &node(&t, "A", None, &[("B", "http://b:1")]));
        assert_eq!(
            a_node.transport,
            Transport::Http1,
            "a node's calls cross processes"
        );
        assert!(a_node.streams.iter().all(|&s| s == 0));
        assert_eq!(a_node.fd.over_http2, None);
    }
}
