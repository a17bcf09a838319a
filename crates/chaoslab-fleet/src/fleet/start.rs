//! Starting a laid-out fleet: the part of [`Fleet::spawn`] that takes
//! sockets and builds the runtimes over them.
//!
//! Everything here follows a [`FleetLayout`]: it binds the listeners the
//! layout asks for, in topology order, before any service is built (each
//! edge must know its callee's addresses), then wires every replica's
//! retry client, server layer and seeds, and serves each listener.
//!
//! [`Fleet::spawn`]: super::Fleet::spawn

use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::layout::FleetLayout;
use super::service::{self, ServiceRuntime};
use super::{FleetError, LOOPBACK};
use crate::metrics::Metrics;
use crate::middleware::balance::Balancer;
use crate::middleware::client::{http1_client, http2_client, EdgeState, RetryClient};
use crate::middleware::server::{self, OwnershipControl, ServerConfig};
use crate::middleware::Observer;
use crate::sidecar::retries::ProxiedCalls;
use crate::sidecar::Sidecars;
use crate::topology::{Service, ServiceId, Topology, Transport};

/// The fleet's counters, shaped as the layout says: which callees are
/// outside, how many replicas each service counts, which are roots.
pub(super) fn metrics(t: &Topology, layout: &FleetLayout) -> Metrics {
    let outside: Vec<bool> = layout.services.iter().map(|s| !s.here).collect();
    let counted: Vec<u32> = layout.services.iter().map(|s| s.counted).collect();
    let roots: Vec<ServiceId> = t.load.roots.iter().map(|r| r.entry).collect();
    let metrics = Metrics::new(
        t.services.len(),
        t.edges.iter().map(|e| (e.from, e.to)).collect(),
    )
    .with_outside(&outside)
    .with_replicas(&counted)
    .with_outliers(
        &t.edges
            .iter()
            .map(|e| t.services[e.to].replicas)
            .collect::<Vec<_>>(),
    )
    .with_roots(&roots);
    if layout.journal {
        let here: Vec<bool> = layout.services.iter().map(|s| s.here).collect();
        metrics.with_journal().with_own(&here)
    } else {
        metrics
    }
}

/// Per service, its listeners and their addresses.
pub(super) type Bound = (Vec<Vec<TcpListener>>, Vec<Vec<SocketAddr>>);

/// Binds every listener the layout asks for before any service starts,
/// so that every edge knows its callee's addresses; a service's
/// endpoints share its first node's.
pub(super) async fn bind(t: &Topology, layout: &FleetLayout) -> Result<Bound, FleetError> {
    let mut listeners: Vec<Vec<TcpListener>> = Vec::with_capacity(t.services.len());
    let mut addrs: Vec<Vec<SocketAddr>> = Vec::with_capacity(t.services.len());
    // A node binds one listener at its address; a shard binds its
    // listeners on the ports after its first, one each in turn.
    let mut slot: u16 = 0;
    for (s, at) in t.services.iter().zip(&layout.services) {
        let (mut ls, mut ads) = (Vec::new(), Vec::new());
        for _ in 0..at.listeners {
            let at = layout.listen.map(|mut a| {
                if a.port() != 0 {
                    a.set_port(a.port().wrapping_add(slot));
                }
                a
            });
            slot = slot.wrapping_add(1);
            let (l, a) = listen(s.service_name(), at).await?;
            ls.push(l);
            ads.push(a);
        }
        if at.listeners == 0 && at.here {
            ads = addrs[s.group].clone();
        }
        addrs.push(ads);
        listeners.push(ls);
    }
    Ok((listeners, addrs))
}

/// One listener of service `name`: on `at` when placed, else on a free
/// loopback port.
async fn listen(
    name: &str,
    at: Option<SocketAddr>,
) -> Result<(TcpListener, SocketAddr), FleetError> {
    let l = match at {
        Some(a) => TcpListener::bind(a)
            .await
            .map_err(|e| FleetError::listen(name, a, e))?,
        None => TcpListener::bind(LOOPBACK)
            .await
            .map_err(|e| FleetError::bind(name, e))?,
    };
    let addr = l
        .local_addr()
        .map_err(|e| FleetError::local_addr(name, e))?;
    Ok((l, addr))
}

/// Every edge, calling its callee where it lives, or its caller's
/// sidecar.
pub(super) fn edges(
    t: &Topology,
    layout: &FleetLayout,
    addrs: &[Vec<SocketAddr>],
    sidecars: &Sidecars,
) -> Vec<Arc<EdgeState>> {
    // An edge whose caller runs in another process never carries a call
    // here: one inert state stands for them all (a shard of Meta's mesh
    // held 110,812 edges' states, 200 MiB, for the 15% it calls on).
    let mut inert: Option<Arc<EdgeState>> = None;
    t.edges
        .iter()
        .zip(&layout.edges)
        .enumerate()
        .map(|(id, (e, at))| {
            if !layout.services[e.from].here && t.services[e.from].url.is_none() {
                if let Some(i) = &inert {
                    return i.clone();
                }
            }
            let edge = edge(t, layout, addrs, sidecars, (id, e, at));
            if !layout.services[e.from].here && t.services[e.from].url.is_none() {
                inert = Some(edge.clone());
            }
            edge
        })
        .collect()
}

/// One edge's state: calling its callee where it lives, or its caller's
/// sidecar.
fn edge(
    t: &Topology,
    layout: &FleetLayout,
    addrs: &[Vec<SocketAddr>],
    sidecars: &Sidecars,
    (id, e, at): (usize, &crate::topology::Edge, &super::layout::EdgeLayout),
) -> Arc<EdgeState> {
    if let Some(proxy) = sidecars.url(id) {
        let url = format!("{proxy}{}", super::sidecars::path(t, layout, e.to));
        let balancer = Balancer::new(vec![url], at.lb, at.other_host);
        let edge = EdgeState::balanced(id, e.to, e.mode, balancer, at.policy);
        return Arc::new(edge.through_sidecar());
    }
    let urls = match &layout.services[e.to].remote {
        Some(urls) => urls.clone(),
        None => {
            let path = t.services[e.to].path();
            addrs[e.to]
                .iter()
                .map(|a| format!("http://{a}{path}"))
                .collect()
        }
    };
    let balancer = Balancer::new(urls, at.lb, at.other_host);
    let edge = EdgeState::balanced(id, e.to, e.mode, balancer, at.policy);
    Arc::new(if at.in_process {
        edge.in_process()
    } else {
        edge
    })
}

/// Per service, its replicas' runtimes.
pub(super) type Runtimes = Vec<Vec<Arc<ServiceRuntime>>>;

/// What each service's runtimes are built from once the listeners are
/// bound.
pub(super) struct Wiring<'a> {
    topology: &'a Topology,
    layout: &'a FleetLayout,
    addrs: &'a [Vec<SocketAddr>],
    edges: &'a [Arc<EdgeState>],
    metrics: &'a Arc<Metrics>,
    control: &'a Arc<OwnershipControl>,
    /// How callees count their callers' sidecars' retries.
    proxied: Option<Arc<ProxiedCalls>>,
    observer: Arc<dyn Observer>,
    roots: Arc<AtomicU64>,
    /// Over HTTP/2 every caller shares the process's connections: one
    /// per callee here.
    mesh: Option<reqwest::Client>,
    /// And, over HTTP/2, one pool for the callees outside.
    outbound: Option<reqwest::Client>,
}

impl<'a> Wiring<'a> {
    pub(super) fn new(
        topology: &'a Topology,
        layout: &'a FleetLayout,
        addrs: &'a [Vec<SocketAddr>],
        edges: &'a [Arc<EdgeState>],
        metrics: &'a Arc<Metrics>,
        control: &'a Arc<OwnershipControl>,
    ) -> Wiring<'a> {
        let mesh = (layout.transport == Transport::Http2).then(http2_client);
        Wiring {
            topology,
            layout,
            addrs,
            edges,
            metrics,
            control,
            proxied: super::sidecars::proxied_calls(topology),
            observer: metrics.clone(),
            roots: Arc::new(AtomicU64::new(layout.first_root)),
            outbound: mesh.as_ref().map(|_| http1_client()),
            mesh,
        }
    }

    /// Every service's runtimes and server layer, in topology order.
    pub(super) fn services(&self) -> Result<(Runtimes, Vec<ServerConfig>), FleetError> {
        let n = self.topology.services.len();
        let mut services: Runtimes = Vec::with_capacity(n);
        let mut layers = Vec::with_capacity(n);
        // What each replica of a service shares among its endpoints, by
        // its first node.
        let mut shared: Vec<Vec<service::Shared>> = Vec::with_capacity(n);
        for (id, at) in self.layout.services.iter().enumerate() {
            let spec = at.placed.first().unwrap_or(&self.topology.services[id]);
            let layer = server::layer(
                id,
                &self.topology.ownership.header,
                spec.ownership,
                self.control.clone(),
                self.observer.clone(),
                self.roots.clone(),
                self.proxied.clone(),
            )
            .map_err(|source| claim_header(spec, source))?;
            shared.push(if spec.group == id {
                at.replicas
                    .iter()
                    .map(|r| service::Shared::new(id, r.index, spec, self.metrics))
                    .collect()
            } else {
                Vec::new()
            });
            services.push(self.replicas(id, spec, &shared[spec.group], &layer)?);
            layers.push(layer);
        }
        Ok((services, layers))
    }

    /// The runtimes of service `id`'s replicas here, each with its own
    /// retry client and seeds, behind `layer`.
    fn replicas(
        &self,
        id: ServiceId,
        spec: &Service,
        shared: &[service::Shared],
        layer: &ServerConfig,
    ) -> Result<Vec<Arc<ServiceRuntime>>, FleetError> {
        let at = &self.layout.services[id];
        let calls = self.calls(spec);
        let mut replicas = Vec::with_capacity(at.replicas.len());
        for (r, replica) in at.replicas.iter().enumerate() {
            let client = self.client(id, spec, replica.client_seed)?;
            let plain = self.layout.plain.then(|| service::Plain {
                http: self.mesh.clone().unwrap_or_else(http1_client),
                traced: self.layout.plain_traced,
            });
            replicas.push(Arc::new(ServiceRuntime::new(
                (id, replica.index),
                at.placed.get(r).unwrap_or(spec),
                shared[r].clone(),
                calls.clone(),
                client,
                Arc::new(layer.clone()),
                self.addrs[id].get(r).copied(),
                replica.seed,
                plain,
                self.metrics,
            )));
        }
        Ok(replicas)
    }

    /// What a service calls, each over its edge.
    fn calls(&self, spec: &Service) -> Vec<service::Call> {
        spec.calls
            .iter()
            .map(|&e| service::Call {
                edge: self.edges[e].clone(),
                count: self.topology.edges[e].count.max(1),
                p: self.topology.edges[e].p,
            })
            .collect()
    }

    /// A replica's retry client: over HTTP/2, on the process's shared
    /// connections; over HTTP/1.1, on a pool of its own.
    fn client(&self, id: ServiceId, spec: &Service, seed: u64) -> Result<RetryClient, FleetError> {
        let client = RetryClient::over(
            id,
            &self.topology.ownership.header,
            self.observer.clone(),
            seed,
            self.outbound.clone().unwrap_or_else(http1_client),
        )
        .map_err(|source| claim_header(spec, source))?;
        Ok(match &self.mesh {
            Some(m) => client.with_mesh(m.clone()),
            None => client,
        })
    }
}

/// A claim header that is no header name, refused naming the service
/// whose layer or client would have sent it.
fn claim_header(spec: &Service, source: server::BadHeaderName) -> FleetError {
    FleetError::ClaimHeader {
        service: spec.name.clone(),
        source,
    }
}

/// Starts a server on every listener: a replica's listener serves all
/// its service's endpoints until shutdown.
pub(super) fn serve(
    t: &Topology,
    layout: &FleetLayout,
    listeners: Vec<Vec<TcpListener>>,
    services: &Runtimes,
    layers: &[ServerConfig],
    shutdown: &watch::Sender<bool>,
) -> Vec<JoinHandle<()>> {
    let mut tasks = Vec::new();
    for (g, listener) in listeners.into_iter().enumerate() {
        for (r, l) in listener.into_iter().enumerate() {
            let routes = t
                .group(g)
                .map(|j| {
                    (
                        t.services[j].path(),
                        services[j][r].clone(),
                        layers[j].clone(),
                    )
                })
                .collect();
            tasks.push(tokio::spawn(service::serve(
                routes,
                l,
                layout.streams[g],
                shutdown.subscribe(),
            )));
        }
    }
    tasks
}
