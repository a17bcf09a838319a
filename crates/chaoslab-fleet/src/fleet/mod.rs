//! The fleet: one real axum server per service, each on its own loopback
//! port, all in one tokio runtime, wired as the topology says.
//!
//! Every service runs the ownership middleware: the server layer around its
//! router, the retry client on its outbound calls. Faults, context drops
//! and policies change while the fleet runs, through [`Fleet`]'s methods —
//! the same calls the dashboard's keys and a scenario's steps make.
//!
//! Starting one can fail for reasons outside the lab (file descriptors,
//! loopback ports); [`FleetError`] says which service and what to change.

mod error;
mod limits;
mod service;
pub mod workers;

use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, RwLock};

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::metrics::Metrics;
use crate::middleware::balance::Balancer;
use crate::middleware::client::{
    http1_client, http2_client, EdgeState, RetryClient, MAX_IN_FLIGHT_PER_EDGE,
};
use crate::middleware::server::{self, OwnershipControl, ServerConfig};
use crate::middleware::Observer;
use crate::topology::{EdgePolicy, Fault, Policy, Service, ServiceId, Topology, Transport};
use error_ownership::Attribution;

pub use error::{FleetError, ResourceHint};
use limits::{check_memory, raise_fd_limit, FD_RESERVE};
pub use limits::{memory_room, FdNeed, MemNeed};

/// Where a fleet's services listen unless placed: a free port on loopback.
const LOOPBACK: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 0);
pub use service::ServiceRuntime;

/// How to start a fleet.
#[derive(Debug, Clone, Default)]
pub struct FleetOptions {
    /// Seed for every random choice.
    pub seed: u64,
    /// Run plain axum + reqwest with no middleware and no retries: the
    /// baseline the benchmark compares the middleware against.
    pub plain: bool,
    /// One service of many processes (`chaoslab node`), or none
    /// (`chaoslab load`): `None` runs every service here.
    pub placement: Option<Placement>,
    /// The bytes the session's ring of samples takes: counted with the
    /// fleet's own when its memory need is weighed against what the
    /// process may take.
    pub samples: u64,
}

/// Where the services run when each has a process of its own: this
/// process serves at most one of them, on `listen`; every other service
/// lives at its peer's URL and is called there over HTTP, as an outside
/// service is. The topology stays whole, so the model, the claims and
/// the policies are those of the whole fleet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The service served here (`None`: none, only the load runs here):
    /// its first node, a service with endpoints being served whole.
    pub local: Option<ServiceId>,
    /// Where the local service listens.
    pub listen: SocketAddr,
    /// Which replica of the local service this is, when the run knows
    /// (`--processes` starts a node per replica); `None`: one of them,
    /// which is not known (a pod of a Deployment).
    pub replica: Option<u32>,
    /// Per service, topology order: the URL it is reached at when it runs
    /// elsewhere (`None` for the local service and for any service nobody
    /// here calls); a replicated service's replicas, comma-separated, in
    /// replica order.
    pub peers: Vec<Option<String>>,
}

/// The URLs of a placed peer: its replicas', comma-separated.
pub fn peer_urls(peer: &str) -> Vec<String> {
    peer.split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(str::to_string)
        .collect()
}

impl Placement {
    /// Whether service `id` is served by this process.
    pub fn serves(&self, id: ServiceId) -> bool {
        self.local == Some(id)
    }
}

/// A running fleet.
pub struct Fleet {
    topology: Arc<Topology>,
    /// Per service, its replicas (one for most; one for a service served
    /// elsewhere, which holds no listener here).
    services: Vec<Vec<Arc<ServiceRuntime>>>,
    edges: Vec<Arc<EdgeState>>,
    policy: RwLock<Policy>,
    control: Arc<OwnershipControl>,
    metrics: Arc<Metrics>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Fleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fleet")
            .field("topology", &self.topology.name)
            .finish_non_exhaustive()
    }
}

impl Fleet {
    /// Binds a listener per service on 127.0.0.1 and starts them all
    /// (with a [`Placement`], only its local service, on its address).
    ///
    /// Fails, naming the service, when a port cannot be bound (often the
    /// open-file limit on a big topology), when the claim header is not a
    /// valid header name, or when an HTTP client cannot be built.
    pub async fn spawn(topology: Arc<Topology>, opts: FleetOptions) -> Result<Fleet, FleetError> {
        // Where each service lives when not in this process: its `url:`,
        // or its peer under a placement.
        let remote: Vec<Option<String>> = topology
            .services
            .iter()
            .enumerate()
            .map(|(id, s)| match &opts.placement {
                _ if s.url.is_some() => s.url.clone(),
                Some(p) if !p.serves(topology.services[id].group) => {
                    p.peers.get(id).cloned().flatten()
                }
                _ => None,
            })
            .collect();
        let here = |id: ServiceId| {
            topology.services[id].url.is_none()
                && opts
                    .placement
                    .as_ref()
                    .is_none_or(|p| p.serves(topology.services[id].group))
        };
        let outside: Vec<bool> = (0..topology.services.len()).map(|id| !here(id)).collect();
        // Replicas of each service started here: a node serves one.
        let replicas = |id: ServiceId| -> u32 {
            if opts.placement.is_some() {
                1
            } else {
                topology.services[id].replicas.max(1)
            }
        };
        // Replicas counted apart: every one here and for the session of
        // many nodes; on a node, its own service's when it knows which
        // replica it is, and a peer's as many as its URLs (one, a
        // Service's, in a cluster).
        let counted = |id: ServiceId| -> u32 {
            let all = topology.services[id].replicas.max(1);
            match &opts.placement {
                Some(p) if p.local == Some(topology.services[id].group) => {
                    p.replica.map_or(1, |_| all)
                }
                Some(p) if p.local.is_some() => p
                    .peers
                    .get(id)
                    .cloned()
                    .flatten()
                    .map_or(1, |u| (peer_urls(&u).len() as u32).clamp(1, all)),
                _ => all,
            }
        };
        // A node holds its own listener and its own calls, not the fleet's;
        // a service's endpoints share its listeners.
        let head = |id: ServiceId| topology.services[id].group == id;
        let served: usize = (0..topology.services.len())
            .filter(|&id| here(id) && head(id))
            .map(|id| replicas(id) as usize)
            .sum();
        let transport = match opts.placement {
            Some(_) => Transport::Http1,
            None => topology.transport,
        };
        let mut need = FdNeed::of(&topology, transport, served, &here);
        if transport == Transport::Http1 && opts.placement.is_none() {
            need.over_http2 = Some(FdNeed::of(&topology, Transport::Http2, served, &here).total());
        }
        raise_fd_limit(&need)?;
        check_memory(&MemNeed::of(&need, opts.samples))?;
        let mut metrics = Metrics::new(
            topology.services.len(),
            topology.edges.iter().map(|e| (e.from, e.to)).collect(),
        )
        .with_outside(&outside)
        .with_replicas(
            &(0..topology.services.len())
                .map(counted)
                .collect::<Vec<_>>(),
        )
        .with_roots(
            &topology
                .load
                .roots
                .iter()
                .map(|r| r.entry)
                .collect::<Vec<_>>(),
        );
        // A node journals its retries for the session reading the fleet.
        if opts.placement.as_ref().is_some_and(|p| p.local.is_some()) {
            metrics = metrics.with_journal();
        }
        let metrics = Arc::new(metrics);
        let observer: Arc<dyn Observer> = metrics.clone();
        let control = Arc::new(OwnershipControl::new(
            topology.ownership.attribution,
            topology.ownership.at_least_once,
        ));
        // Root ids: a node's apart from every other node's (the session
        // replays all their journals into one tracker), in the high bits,
        // and shifted in the low ones so that nodes counting at the same
        // pace do not share the tracker's slots.
        let first_root = match &opts.placement {
            Some(Placement {
                local: Some(g),
                replica,
                ..
            }) => {
                let k = (*g as u64 + 1) * 1024 + u64::from(replica.unwrap_or(0));
                (k << 40) + k * 104_729 + 1
            }
            _ => 1,
        };
        let roots = Arc::new(AtomicU64::new(first_root));
        let policy = topology.policy.clone();
        control.set_root_deadline(topology.load.timeout, policy.deadline);

        // Bind first, so every edge knows its callee's addresses: a
        // listener per replica of each service (its first node's).
        let mut listeners: Vec<Vec<TcpListener>> = Vec::with_capacity(topology.services.len());
        let mut addrs: Vec<Vec<SocketAddr>> = Vec::with_capacity(topology.services.len());
        for (id, s) in topology.services.iter().enumerate() {
            let mut ls = Vec::new();
            let mut ads = Vec::new();
            if here(id) && head(id) {
                let name = s.service_name();
                for _ in 0..replicas(id) {
                    let l = match &opts.placement {
                        Some(p) => TcpListener::bind(p.listen)
                            .await
                            .map_err(|e| FleetError::listen(name, p.listen, e))?,
                        None => TcpListener::bind(LOOPBACK)
                            .await
                            .map_err(|e| FleetError::bind(name, e))?,
                    };
                    ads.push(
                        l.local_addr()
                            .map_err(|e| FleetError::local_addr(name, e))?,
                    );
                    ls.push(l);
                }
            } else if here(id) {
                ads = addrs[s.group].clone();
            }
            addrs.push(ads);
            listeners.push(ls);
        }
        let urls_of = |id: ServiceId| -> Vec<String> {
            let path = topology.services[id].path();
            match &remote[id] {
                Some(u) if topology.services[id].url.is_some() => vec![u.clone()],
                Some(u) => peer_urls(u),
                None => addrs[id]
                    .iter()
                    .map(|a| format!("http://{a}{path}"))
                    .collect(),
            }
        };
        let edges: Vec<Arc<EdgeState>> = topology
            .edges
            .iter()
            .enumerate()
            .map(|(id, e)| {
                let (lb, other_host) = policy.balancing(&e.policy);
                let edge = EdgeState::balanced(
                    id,
                    e.to,
                    e.mode,
                    Balancer::new(urls_of(e.to), lb, other_host),
                    edge_policy(&topology, &policy, id),
                );
                Arc::new(if here(e.to) { edge.in_process() } else { edge })
            })
            .collect();

        // Over HTTP/2 every caller shares the process's connections: one
        // per callee here, one pool for callees outside.
        let mesh = (transport == Transport::Http2).then(http2_client);
        let outbound = mesh.as_ref().map(|_| http1_client());
        let (shutdown, _) = watch::channel(false);
        let mut services: Vec<Vec<Arc<ServiceRuntime>>> =
            Vec::with_capacity(topology.services.len());
        let mut layers = Vec::with_capacity(topology.services.len());
        // What each replica of a service shares among its endpoints, by
        // its first node.
        let mut shared: Vec<Vec<service::Shared>> = Vec::with_capacity(topology.services.len());
        for (id, spec) in topology.services.iter().enumerate() {
            // A service placed elsewhere is, here, an outside service: one
            // of each of its replicas' URLs.
            let placed: Vec<Service> = match &remote[id] {
                Some(u) if spec.url.is_none() => peer_urls(u)
                    .into_iter()
                    .map(|u| Service {
                        url: Some(u),
                        ..spec.clone()
                    })
                    .collect(),
                _ => vec![],
            };
            let spec = placed.first().unwrap_or(spec);
            let claim_header = |source| FleetError::ClaimHeader {
                service: spec.name.clone(),
                source,
            };
            let layer = server::layer(
                id,
                &topology.ownership.header,
                spec.ownership,
                control.clone(),
                observer.clone(),
                roots.clone(),
            )
            .map_err(claim_header)?;
            let calls: Vec<service::Call> = spec
                .calls
                .iter()
                .map(|&e| service::Call {
                    edge: edges[e].clone(),
                    count: topology.edges[e].count.max(1),
                    p: topology.edges[e].p,
                })
                .collect();
            // Replica 0 draws from the seeds a service of one replica had,
            // so a topology without replicas runs as it always did.
            let seeds = |r: u32| {
                let k = u64::from(r).wrapping_mul(0xD1B5_4A32_D192_ED03);
                (
                    opts.seed ^ (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ k,
                    opts.seed.wrapping_add(id as u64 + 1) ^ k,
                )
            };
            let mut replicas = Vec::new();
            let bound = addrs[id].len().max(placed.len()).max(1) as u32;
            // A node is one replica of a replicated service: the one
            // `--processes` started it as, or one unknown (a pod of a
            // Deployment), which a fault on every replica reaches and a
            // fault naming replicas does not.
            let known = opts.placement.as_ref().and_then(|p| p.replica);
            let one_of_many = opts.placement.is_some() && spec.replicas > 1;
            let index_of = |r: u32| match known {
                Some(k) if here(id) => k,
                _ if one_of_many && here(id) => u32::MAX,
                _ => r,
            };
            shared.push(if spec.group == id {
                (0..bound)
                    .map(|r| service::Shared::new(id, index_of(r), spec, &metrics))
                    .collect()
            } else {
                Vec::new()
            });
            for r in 0..bound {
                let index = index_of(r);
                let spec = placed.get(r as usize).unwrap_or(spec);
                let (client_seed, seed) = seeds(if known.is_some() { index } else { r });
                let mut client = RetryClient::over(
                    id,
                    &topology.ownership.header,
                    observer.clone(),
                    client_seed,
                    outbound.clone().unwrap_or_else(http1_client),
                )
                .map_err(claim_header)?;
                if let Some(m) = &mesh {
                    client = client.with_mesh(m.clone());
                }
                let plain = opts
                    .plain
                    .then(|| mesh.clone().unwrap_or_else(http1_client));
                let rt = Arc::new(ServiceRuntime::new(
                    (id, index),
                    spec,
                    shared[spec.group][r as usize].clone(),
                    calls.clone(),
                    client,
                    Arc::new(layer.clone()),
                    addrs[id].get(r as usize).copied(),
                    seed,
                    plain,
                    &metrics,
                ));
                replicas.push(rt);
            }
            services.push(replicas);
            layers.push(layer);
        }
        // A listener per replica of each service serves all its endpoints;
        // over HTTP/2, as many streams at once as its callers' edges may
        // have in flight, so that no call waits for a stream unseen.
        // Over HTTP/1.1 (0 streams) the listener serves as axum does.
        let mut streams = vec![0u32; topology.services.len()];
        if mesh.is_some() {
            for e in &topology.edges {
                let g = topology.services[e.to].group;
                streams[g] = streams[g].saturating_add(MAX_IN_FLIGHT_PER_EDGE as u32);
            }
        }
        let mut tasks = Vec::new();
        for (g, listener) in listeners.into_iter().enumerate() {
            for (r, l) in listener.into_iter().enumerate() {
                let routes = topology
                    .group(g)
                    .map(|j| {
                        (
                            topology.services[j].path(),
                            services[j][r].clone(),
                            layers[j].clone(),
                        )
                    })
                    .collect();
                tasks.push(tokio::spawn(service::serve(
                    routes,
                    l,
                    streams[g],
                    shutdown.subscribe(),
                )));
            }
        }
        let fleet = Fleet {
            topology,
            services,
            edges,
            policy: RwLock::new(policy.clone()),
            control,
            metrics,
            shutdown,
            tasks,
        };
        fleet.speak_dialects(&policy);
        Ok(fleet)
    }

    /// Tells each service which don't-retry dialect its callers read, so
    /// that its refusals (queue full, over capacity) speak it: the signal
    /// of the first edge into it, or the fleet's for the entry.
    fn speak_dialects(&self, policy: &Policy) {
        let t = &self.topology;
        for (id, replicas) in self.services.iter().enumerate() {
            let signal = match t.edges.iter().position(|e| e.to == id) {
                Some(e) => edge_policy(t, policy, e).signal,
                None => policy.for_edge(&Default::default()).signal,
            };
            for rt in replicas {
                rt.set_dialect(signal);
            }
        }
    }

    /// The topology the fleet was started from.
    pub fn topology(&self) -> &Arc<Topology> {
        &self.topology
    }

    /// Writes every edge's live gauges (budget level, breaker state) into
    /// the counters: called once a sample, so the request path only moves
    /// the budgets and breakers themselves.
    pub fn publish_gauges(&self) {
        // The edges are shared by a service's replicas: one publishes.
        for s in &self.services {
            s[0].publish_gauges(&self.metrics);
        }
    }

    /// The fleet's counters.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// A service's URL (its listener, or its outside `url`).
    pub fn url(&self, id: ServiceId) -> String {
        self.services[id][0].url()
    }

    /// Every replica's URL of a service (one for most).
    pub fn replica_urls(&self, id: ServiceId) -> Vec<String> {
        self.services[id].iter().map(|r| r.url()).collect()
    }

    /// The entry service's URL.
    pub fn entry_url(&self) -> String {
        self.url(self.topology.load.entry)
    }

    /// A service's runtime state (its first replica's).
    pub fn service(&self, id: ServiceId) -> &Arc<ServiceRuntime> {
        &self.services[id][0]
    }

    /// Every replica of a service.
    pub fn replicas(&self, id: ServiceId) -> &[Arc<ServiceRuntime>] {
        &self.services[id]
    }

    /// A service's server-side configuration (what it has learned).
    pub fn server_config(&self, id: ServiceId) -> &Arc<ServerConfig> {
        self.services[id][0].server_config()
    }

    /// An edge's runtime state.
    pub fn edge(&self, id: usize) -> &Arc<EdgeState> {
        &self.edges[id]
    }

    /// The policy in force.
    pub fn policy(&self) -> Policy {
        self.policy
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Puts a new fleet-wide policy in force on every edge, keeping each
    /// edge's overrides.
    pub fn set_policy(&self, policy: Policy) {
        for (id, edge) in self.edges.iter().enumerate() {
            edge.set_policy(edge_policy(&self.topology, &policy, id));
            let (lb, other_host) = policy.balancing(&self.topology.edges[id].policy);
            edge.balancer().set(lb, other_host);
        }
        self.speak_dialects(&policy);
        self.control
            .set_root_deadline(self.topology.load.timeout, policy.deadline);
        *self.policy.write().unwrap_or_else(|e| e.into_inner()) = policy;
    }

    /// The attribution mode in force.
    pub fn attribution(&self) -> Attribution {
        self.control.attribution()
    }

    /// Changes the attribution mode.
    pub fn set_attribution(&self, a: Attribution) {
        self.control.set_attribution(a);
    }

    /// Whether rule 5 is on.
    pub fn at_least_once(&self) -> bool {
        self.control.at_least_once()
    }

    /// Turns rule 5 on or off.
    pub fn set_at_least_once(&self, on: bool) {
        self.control.set_at_least_once(on);
    }

    /// A service's fault in force.
    pub fn fault(&self, id: ServiceId) -> Fault {
        self.services[id][0].fault()
    }

    /// Sets a service's fault (`down` closes or reopens its listener).
    /// A service's fault is on all its endpoints (narrowed by the fault's
    /// `endpoint`).
    pub fn set_fault(&self, id: ServiceId, fault: Fault) {
        for j in self.topology.group(id) {
            for r in &self.services[j] {
                r.set_fault(fault.clone());
            }
        }
    }

    /// Whether a service's request context is dropped.
    pub fn context_dropped(&self, id: ServiceId) -> bool {
        self.services[id][0].context_dropped()
    }

    /// Drops or restores a service's request context.
    /// (Every endpoint of the service's.)
    pub fn set_context_dropped(&self, id: ServiceId, dropped: bool) {
        for j in self.topology.group(id) {
            for r in &self.services[j] {
                r.set_context_dropped(dropped);
            }
        }
    }

    /// A service's resources now: workers, service time, queue.
    pub fn resources(&self, id: ServiceId) -> (Option<u32>, std::time::Duration, u32) {
        self.services[id][0].resources()
    }

    /// Changes a service's resources (SPEC section 7): its workers and
    /// queue when it has workers, and its service time.
    pub fn set_resources(
        &self,
        id: ServiceId,
        workers: Option<u32>,
        work: std::time::Duration,
        queue: u32,
    ) {
        for r in &self.services[id] {
            r.set_resources(workers, work, queue);
        }
    }

    /// Stops every server and waits for them.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        for t in self.tasks {
            let _ = t.await;
        }
    }
}

fn edge_policy(t: &Topology, policy: &Policy, edge: usize) -> EdgePolicy {
    let e = &t.edges[edge];
    let mut p = policy.for_edge(&e.policy);
    // A service without the middleware ignores claims.
    p.ownership &= t.services[e.from].ownership;
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_bad_claim_header_is_refused_naming_the_service() {
        // Validation refuses this header in YAML; a topology built in code
        // can still carry it.
        let mut t = Topology::from_yaml("name: t\nservices:\n  A:\n", "t.yaml").unwrap();
        t.ownership.header = "x bad".into();
        let e = Fleet::spawn(Arc::new(t), FleetOptions::default())
            .await
            .unwrap_err();
        assert!(
            matches!(&e, FleetError::ClaimHeader { service, .. } if service == "A"),
            "{e}"
        );
        assert!(!e.is_environment());
    }

    /// A service's endpoints share one listener, each on its own path; a
    /// fault narrowed to one endpoint leaves the other answering.
    #[tokio::test]
    async fn endpoints_answer_on_their_paths_behind_one_listener() {
        let t = Topology::from_yaml(
            "name: t\nload: { entry: A/trip }\nservices:\n  A:\n    endpoints:\n      trip: {}\n      search: {}\n    fault: { error_rate: 1.0, endpoint: trip }\n",
            "t.yaml",
        )
        .unwrap();
        let fleet = Fleet::spawn(Arc::new(t), FleetOptions::default())
            .await
            .unwrap();
        let (trip, search) = (fleet.url(0), fleet.url(1));
        assert!(
            trip.ends_with("/trip") && search.ends_with("/search"),
            "{trip} {search}"
        );
        assert_eq!(
            trip.trim_end_matches("trip"),
            search.trim_end_matches("search")
        );
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let get = |u: String| {
            let http = http.clone();
            async move {
                let r = http.get(u).send().await.unwrap();
                (r.status().as_u16(), r.text().await.unwrap())
            }
        };
        assert_eq!(get(trip.clone()).await.0, 500);
        assert_eq!(get(search.clone()).await, (200, "ok\n".to_string()));
        let (status, body) = get(format!("{}nope", trip.trim_end_matches("trip"))).await;
        assert_eq!(status, 404);
        assert_eq!(
            body,
            "no endpoint /nope: this service serves /trip, /search\n"
        );
        // Healed as a whole service, both answer.
        fleet.set_fault(1, Fault::default());
        assert_eq!(get(trip).await.0, 200);
        fleet.shutdown().await;
    }
}
