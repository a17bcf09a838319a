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
//!
//! A fleet is laid out before it is started: `layout` decides, with no
//! socket, what runs here and how; `start` binds and serves that.

mod error;
mod layout;
mod limits;
mod service;
mod sidecars;
mod start;
pub mod workers;

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::metrics::Metrics;
use crate::middleware::client::EdgeState;
use crate::middleware::server::{OwnershipControl, ServerConfig};
use crate::sidecar::Sidecars;
use crate::topology::{Fault, Policy, ServiceId, Topology};
use error_ownership::Attribution;

pub use error::{FleetError, ResourceHint};
use layout::{edge_policy, FleetLayout};
use limits::{check_memory, raise_fd_limit, FD_RESERVE};
pub use limits::{memory_room, FdNeed, MemNeed};
use start::{bind, edges, metrics, serve, Wiring};

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
    /// With `plain`: the baseline carries the lab's trace header on every
    /// call (read on the way in, its child written on the way out) and
    /// bounds each call with its edge's per-attempt timeout, as a chain
    /// that traces its requests and times out its calls does. What the
    /// middleware costs over such a chain rather than over a bare one
    /// (`cargo bench --bench middleware_overhead -- --fixed traced N`).
    pub plain_traced: bool,
    /// One service of many processes (`chaoslab node`), a shard of them
    /// (`chaoslab node --shard`), or none (`chaoslab load`): `None` runs
    /// every service here.
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
    /// A shard of the mesh (SPEC section 19): this process serves its
    /// share of the services, every replica of each, on consecutive ports
    /// from `listen`'s, and calls the services of the other shards over
    /// HTTP/2. `local` and `replica` are then `None`.
    pub shard: Option<Shard>,
}

/// A shard's share of a mesh spread over several processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    /// Which shard this is, from 0.
    pub index: usize,
    /// How many shards the mesh is spread over.
    pub count: usize,
    /// Per service, topology order: whether this shard serves it.
    pub serves: Vec<bool>,
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
        self.local == Some(id) || self.shard.as_ref().is_some_and(|s| s.serves[id])
    }

    /// Whether this process serves services (a node or a shard), not only
    /// load.
    pub fn serves_any(&self) -> bool {
        self.local.is_some() || self.shard.is_some()
    }
}

/// A running fleet.
pub struct Fleet {
    topology: Arc<Topology>,
    /// Per service, its replicas (one for most; one for a service served
    /// elsewhere, which holds no listener here).
    services: Vec<Vec<Arc<ServiceRuntime>>>,
    edges: Vec<Arc<EdgeState>>,
    /// Per service, whether this process serves it (its calls' edges are
    /// its own).
    here: Vec<bool>,
    policy: RwLock<Policy>,
    control: Arc<OwnershipControl>,
    metrics: Arc<Metrics>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    /// The proxies carrying its services' calls (SPEC section 17): killed
    /// with the fleet (last, when it shuts down).
    sidecars: Sidecars,
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
    ///
    /// What needs no socket is laid out first, so a machine that cannot
    /// hold the fleet refuses it before any port is taken; every listener
    /// is bound before any service is built, so each edge knows its
    /// callee's addresses.
    pub async fn spawn(topology: Arc<Topology>, opts: FleetOptions) -> Result<Fleet, FleetError> {
        let layout = FleetLayout::of(&topology, &opts);
        raise_fd_limit(&layout.fd)?;
        check_memory(&layout.mem)?;
        let metrics = Arc::new(metrics(&topology, &layout));
        let control = Arc::new(OwnershipControl::new(
            topology.ownership.attribution,
            topology.ownership.at_least_once,
        ));
        let policy = topology.policy.clone();
        control.set_root_deadline(topology.load.timeout, policy.deadline);
        let (listeners, addrs) = bind(&topology, &layout).await?;
        // The sidecars start once their callees' ports are bound, before
        // any edge is built (an edge through one calls its listener).
        let sidecars = Sidecars::start(&sidecars::plan(&topology, &layout, &addrs)).await?;
        let edges = edges(&topology, &layout, &addrs, &sidecars);
        let (services, layers) =
            Wiring::new(&topology, &layout, &addrs, &edges, &metrics, &control).services()?;
        let (shutdown, _) = watch::channel(false);
        let tasks = serve(&topology, &layout, listeners, &services, &layers, &shutdown);
        let fleet = Fleet {
            here: layout.services.iter().map(|s| s.here).collect(),
            topology,
            services,
            edges,
            policy: RwLock::new(policy.clone()),
            control,
            metrics,
            shutdown,
            tasks,
            sidecars,
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
        // The edges are shared by a service's replicas: one publishes. A
        // service served elsewhere calls nothing from here.
        for (s, &here) in self.services.iter().zip(&self.here) {
            if here {
                s[0].publish_gauges(&self.metrics);
            }
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

    /// The sidecar proxies it runs.
    pub fn sidecars(&self) -> Vec<crate::sidecar::Started> {
        self.sidecars.started()
    }

    /// Stops every server and waits for them, then its sidecars.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        for t in std::mem::take(&mut self.tasks) {
            let _ = t.await;
        }
        self.sidecars.stop();
    }
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
