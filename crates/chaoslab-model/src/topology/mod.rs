//! Topologies: the YAML contract (SPEC section 3), its validation, and the
//! analytical model of what a topology should do under a policy and faults.
//!
//! `spec` holds the serde types exactly as the YAML is written; `validate`
//! turns them into a [`Topology`], whose services are indexed and whose
//! edges are flattened, with depths and baseline multiplicities computed;
//! `model` predicts each service's load; `check` prints what `chaoslab
//! check` shows of it. Every other module works on the validated
//! [`Topology`], never on YAML.

pub mod check;
mod concurrency;
mod conditions_spec;
mod error;
pub mod generate;
pub mod mesh;
pub mod model;
mod nginx_upstream;
pub mod outlier_spec;
mod per_root;
pub mod policy;
mod policy_spec;
pub mod proxy;
pub mod shards;
pub mod sim;
pub mod spec;
mod subgraph;
pub mod validate;

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use error_ownership::{Attribution, DependencyMode, DEFAULT_CLAIM_HEADER};

pub use concurrency::Concurrency;
pub use conditions_spec::written as conditions_written;
pub use per_root::PerRoot;

pub use error::TopologyError;
/// The resolved policy of one edge lives with the mechanism that reads it;
/// [`Policy::for_edge`] produces it from the topology's settings.
pub use error_ownership::policy::EdgePolicy;
pub use policy::{
    BreakerSetting, BudgetKind, BudgetSetting, HedgeSetting, OutlierSetting, Policy, PolicyFields,
    Preset, SignalSetting, ThrottleSetting,
};

/// Requests waiting for a worker when `workers` is set and `queue` is not.
pub const DEFAULT_QUEUE: u32 = 1000;
/// The largest `queue:` accepted.
pub const MAX_QUEUE: u32 = 1_000_000;
/// The largest `workers:` accepted: more is a typo, not a service.
pub const MAX_WORKERS: u32 = 100_000;

/// A service's position in [`Topology::services`].
pub type ServiceId = usize;
/// An edge's position in [`Topology::edges`].
pub type EdgeId = usize;

/// Kahn's algorithm. On a cycle, returns one cycle (service ids in call
/// order, starting from the one listed first in the file).
pub(crate) fn topological_order(
    services: &[Service],
    edges: &[Edge],
) -> Result<Vec<ServiceId>, Vec<ServiceId>> {
    let n = services.len();
    let mut indegree = vec![0usize; n];
    for e in edges {
        indegree[e.to] += 1;
    }
    let mut order: Vec<ServiceId> = (0..n).filter(|&i| indegree[i] == 0).collect();
    let mut next = 0;
    while next < order.len() {
        let v = order[next];
        next += 1;
        for &e in &services[v].calls {
            let w = edges[e].to;
            indegree[w] -= 1;
            if indegree[w] == 0 {
                order.push(w);
            }
        }
    }
    if order.len() == n {
        return Ok(order);
    }
    // Every service left has a caller that is also left: walk callers
    // backwards until one repeats; that stretch is a cycle.
    let left: Vec<bool> = indegree.iter().map(|&d| d > 0).collect();
    let mut caller_of = vec![usize::MAX; n];
    for e in edges {
        if left[e.from] && left[e.to] && caller_of[e.to] == usize::MAX {
            caller_of[e.to] = e.from;
        }
    }
    let start = (0..n).find(|&i| left[i]).unwrap_or(0);
    let mut seen = vec![usize::MAX; n];
    let mut walk = Vec::new();
    let mut v = start;
    while seen[v] == usize::MAX {
        seen[v] = walk.len();
        walk.push(v);
        v = caller_of[v];
    }
    let mut cycle: Vec<ServiceId> = walk[seen[v]..].to_vec();
    cycle.reverse(); // callers were walked backwards
    let first = (0..cycle.len()).min_by_key(|&i| cycle[i]).unwrap_or(0);
    cycle.rotate_left(first);
    Err(cycle)
}

/// A validated topology.
#[derive(Debug, Clone, PartialEq)]
pub struct Topology {
    /// `name:`.
    pub name: String,
    /// `description:`.
    pub description: Option<String>,
    /// `ownership:`.
    pub ownership: OwnershipSettings,
    /// `policy:`, resolved: the fleet-wide default for every edge.
    pub policy: Policy,
    /// `load:`.
    pub load: LoadSettings,
    /// Services, in the order the YAML lists them.
    pub services: Vec<Service>,
    /// Every call edge, flattened: one per entry in a service's `calls`.
    pub edges: Vec<Edge>,
    /// A raw `scenario:` key, parsed by the scenario module.
    pub scenario: Option<crate::yaml::Value>,
    /// `transport:`: how the services in one process reach each other.
    pub transport: Transport,
}

/// How the services of one process call each other (`transport:`). Every
/// hop is a real HTTP exchange on a real loopback socket either way; what
/// changes is how many sockets a fleet holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// HTTP/1.1: each calling service keeps a pool of its own, a
    /// connection per call it has in flight to a callee, so a fleet holds
    /// at least two descriptors per edge.
    #[default]
    Http1,
    /// HTTP/2 in clear text (prior knowledge): one connection per callee,
    /// which every caller in the process multiplexes its calls over, as
    /// the callers behind one sidecar do; two descriptors per callee. Calls
    /// to services outside the process stay HTTP/1.1.
    Http2,
}

impl Transport {
    /// The name used in YAML.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Http1 => "http1",
            Transport::Http2 => "http2",
        }
    }
}

impl Topology {
    /// Reads and validates a topology file.
    pub fn load(path: &Path) -> Result<Topology, TopologyError> {
        validate::load(path)
    }

    /// Parses and validates YAML text; `origin` names it in errors.
    pub fn from_yaml(text: &str, origin: &str) -> Result<Topology, TopologyError> {
        validate::from_yaml(text, origin)
    }

    /// The node called `name`: a service, or an endpoint `S/E`; a service
    /// with endpoints by its name alone is its first (whose id stands for
    /// the whole service where an action names one: a fault, a context,
    /// its resources).
    pub fn service_id(&self, name: &str) -> Option<ServiceId> {
        self.services
            .iter()
            .position(|s| s.name == name)
            .or_else(|| {
                self.services
                    .iter()
                    .position(|s| s.endpoint.is_some() && s.service_name() == name)
            })
    }

    /// The endpoint `name` names when it is `S/E` (node `id`, as
    /// [`Topology::service_id`] found it); `None` when it names a service
    /// (every endpoint of it).
    pub fn endpoint_named(&self, id: ServiceId, name: &str) -> Option<String> {
        let node = self.services.get(id)?;
        node.endpoint.clone().filter(|_| node.name == name.trim())
    }

    /// Every node of `id`'s service (its endpoints), `id`'s group.
    pub fn group(&self, id: ServiceId) -> impl Iterator<Item = ServiceId> + '_ {
        let g = self.services.get(id).map_or(usize::MAX, |s| s.group);
        (g.min(self.services.len())..self.services.len())
            .take_while(move |&j| self.services[j].group == g)
    }

    /// The services (by first node) that any endpoint of `id`'s service
    /// calls, each once, in the order first called; its own not among
    /// them (a call between its endpoints stays inside it).
    pub fn services_called_by(&self, id: ServiceId) -> Vec<ServiceId> {
        let own = self.services.get(id).map_or(usize::MAX, |s| s.group);
        let mut out: Vec<ServiceId> = Vec::new();
        for j in self.group(id) {
            for &e in &self.services[j].calls {
                let to = self.services[self.edges[e].to].group;
                if to != own && !out.contains(&to) {
                    out.push(to);
                }
            }
        }
        out
    }

    /// The name an action on the whole of `id`'s service writes: the
    /// service's (not its first endpoint's).
    pub fn group_name(&self, id: ServiceId) -> &str {
        self.services.get(id).map_or("", |s| s.service_name())
    }

    /// The entry service.
    pub fn entry(&self) -> &Service {
        &self.services[self.load.entry]
    }

    /// The topology as root `k` alone sees it: that root the only entry, at
    /// its own rate, each service's multiplicity that root's. What the
    /// per-root figures of a topology of many are modelled on.
    pub fn root_view(&self, k: usize) -> Topology {
        let mut t = self.clone();
        let Some(&root) = self.load.roots.get(k) else {
            return t;
        };
        t.load.entry = root.entry;
        t.load.rps = root.rps;
        t.load.arrival = root.arrival;
        t.load.roots = vec![root];
        for s in &mut t.services {
            let m = s.root_multiplicity.get(k).unwrap_or(s.multiplicity);
            s.multiplicity = m;
            s.root_multiplicity = PerRoot::one(m);
        }
        t
    }

    /// Service `i`'s no-fault load given the root requests each root
    /// service opened (`roots_at`): the sum over the roots of that count
    /// times the calls one of its requests makes of `i`.
    pub fn baseline(&self, i: ServiceId, roots_at: impl Fn(ServiceId) -> f64) -> f64 {
        let s = &self.services[i];
        let roots = &self.load.roots;
        if roots.len() < 2 || s.root_multiplicity.len() != roots.len() {
            return roots_at(self.load.entry) * s.multiplicity;
        }
        s.root_multiplicity
            .reaching()
            .map(|(k, m)| roots_at(roots[k].entry) * m)
            .sum()
    }

    /// The largest depth of any service.
    pub fn max_depth(&self) -> usize {
        self.services.iter().map(|s| s.depth).max().unwrap_or(0)
    }
}

/// `ownership:` settings.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnershipSettings {
    /// The claim header's name, lower-case.
    pub header: String,
    /// How services attribute errors to dependencies.
    pub attribution: Attribution,
    /// Rule 5 on or off.
    pub at_least_once: bool,
}

impl Default for OwnershipSettings {
    fn default() -> Self {
        OwnershipSettings {
            header: DEFAULT_CLAIM_HEADER.to_string(),
            attribution: Attribution::Declared,
            at_least_once: true,
        }
    }
}

/// `load:` settings.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadSettings {
    /// The entry service (the first root's).
    pub entry: ServiceId,
    /// Root requests per second, over every root.
    pub rps: f64,
    /// Every root: `load.entries`, or the one `entry:` at `rps:`. Never
    /// empty; the first is [`LoadSettings::entry`].
    pub roots: Vec<Root>,
    /// How arrivals are spaced.
    pub arrival: Arrival,
    /// `load.timeout`: the end user gives up on a root request after this
    /// (a root error); `None` waits for the answer however long it takes.
    pub timeout: Option<Duration>,
}

/// One user-facing root: where its requests go, how many a second, how
/// they are spaced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Root {
    /// Its service.
    pub entry: ServiceId,
    /// Its root requests per second (at the topology's total rate).
    pub rps: f64,
    /// How its arrivals are spaced (a closed loop's think times, when
    /// `poisson`, are exponential).
    pub arrival: Arrival,
    /// A closed loop of clients in place of open-loop arrivals; its `rps`
    /// is then what they offer while answers are instant, clients ÷ think.
    pub closed: Option<Closed>,
}

/// A closed-loop root (`load.clients`, `load.think`): each client sends
/// its next request only after the answer to its last and a think time,
/// so a slow or failing fleet slows the offered load down (SPEC section
/// 15; Marc Brooker's "What is Backoff For?").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed {
    /// How many clients.
    pub clients: u32,
    /// Each client's pause between an answer and its next request.
    pub think: Duration,
}

/// The clients in force at rate `rps` (this root's share of the rate
/// knob): the rate keys and `--rps` change the population, each client
/// keeping its think time.
pub fn clients_at(rps: f64, think: std::time::Duration) -> usize {
    let n = (rps.max(0.0) * think.as_secs_f64()).round();
    if n.is_nan() {
        0
    } else {
        n.min(f64::from(MAX_CLIENTS)) as usize
    }
}

impl Closed {
    /// The rate the clients offer while answers are instant: the baseline
    /// their root's amplification is measured against.
    pub fn nominal_rps(self) -> f64 {
        f64::from(self.clients) / self.think.as_secs_f64()
    }

    /// What `check` says of a closed root `entry`, on two lines.
    pub fn describe(self, entry: &str) -> String {
        let think = crate::format::fmt_duration(self.think);
        format!(
            "{entry} with {} closed-loop clients, each thinking {think} between an answer and its next request\n           they send {} ÷ ({think} + the answer time) a second: at most {} rps, the baseline amplification is measured against",
            self.clients,
            self.clients,
            crate::format::fmt_num(self.nominal_rps()),
        )
    }
}

/// The most closed-loop clients one root may have.
pub const MAX_CLIENTS: u32 = 10_000;
/// The shortest think time: the closed loop's nominal rate, clients ÷
/// think, must be finite.
pub const MIN_THINK: Duration = Duration::from_millis(1);
/// A closed-loop client's think time when none is given.
pub const DEFAULT_THINK: Duration = Duration::from_secs(1);

impl LoadSettings {
    /// Each root's share of the root requests.
    pub fn shares(&self) -> impl Iterator<Item = (ServiceId, f64)> + '_ {
        let total: f64 = self.roots.iter().map(|r| r.rps).sum();
        self.roots.iter().map(move |r| {
            (
                r.entry,
                if total > 0.0 {
                    r.rps / total
                } else {
                    1.0 / self.roots.len() as f64
                },
            )
        })
    }

    /// Sets the total rate; every root keeps its share of it (`--rps`
    /// and the rate keys scale every root).
    pub fn set_rps(&mut self, rps: f64) {
        let shares: Vec<f64> = self.shares().map(|(_, s)| s).collect();
        for (r, s) in self.roots.iter_mut().zip(shares) {
            r.rps = rps * s;
        }
        self.rps = rps;
    }

    /// Whether the topology has more than one root.
    pub fn many_roots(&self) -> bool {
        self.roots.len() > 1
    }
}

/// How the open-loop generator spaces root requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Evenly spaced.
    #[default]
    Constant,
    /// Exponential gaps (a Poisson process).
    Poisson,
}

/// When a fault fires relative to the service's own downstream calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Before any outbound call: nothing below is called.
    Before,
    /// After the outbound calls: everything below is called first.
    #[default]
    After,
}

/// A service's fault settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    /// Probability that a request fails (0..=1).
    pub error_rate: f64,
    /// When it fails.
    pub phase: Phase,
    /// Extra latency added to every request.
    pub latency: Duration,
    /// The status of an injected error.
    pub status: u16,
    /// Listener closed: connection refused.
    pub down: bool,
    /// The replicas it is on (0-based, sorted); `None` is every replica.
    pub replicas: Option<Vec<u32>>,
    /// The one endpoint of the service it is on; `None` is every endpoint.
    pub endpoint: Option<String>,
}

impl Default for Fault {
    fn default() -> Self {
        Fault {
            error_rate: 0.0,
            phase: Phase::After,
            latency: Duration::ZERO,
            status: 500,
            down: false,
            replicas: None,
            endpoint: None,
        }
    }
}

impl Fault {
    /// Whether any fault is set.
    pub fn is_active(&self) -> bool {
        self.error_rate > 0.0 || !self.latency.is_zero() || self.down
    }

    /// Whether it is on replica `r`.
    pub fn on_replica(&self, r: u32) -> bool {
        self.replicas
            .as_ref()
            .is_none_or(|rs| rs.binary_search(&r).is_ok())
    }

    /// Whether it is on the endpoint named `e` (`None`: a service without
    /// endpoints).
    pub fn on_endpoint(&self, e: Option<&str>) -> bool {
        self.endpoint.as_deref().is_none_or(|f| Some(f) == e)
    }

    /// The fault in force on endpoint `endpoint` (`None`: a service
    /// without endpoints) when this is its service's fault and `own` the
    /// endpoint's: this one when it is active and on the endpoint, else
    /// the endpoint's own.
    pub fn in_force<'a>(&'a self, endpoint: Option<&str>, own: &'a Fault) -> &'a Fault {
        if endpoint.is_none() || (self.is_active() && self.on_endpoint(endpoint)) {
            self
        } else {
            own
        }
    }

    /// The share of `n` replicas it is on.
    pub fn replica_share(&self, n: u32) -> f64 {
        match &self.replicas {
            None => 1.0,
            Some(rs) => rs.iter().filter(|&&r| r < n).count() as f64 / f64::from(n.max(1)),
        }
    }
}

/// One service.
#[derive(Debug, Clone, PartialEq)]
pub struct Service {
    /// Its name.
    pub name: String,
    /// Its calls, in order; each names an [`Edge`].
    pub calls: Vec<EdgeId>,
    /// Whether all calls start at once.
    pub parallel: bool,
    /// Requests per second it can serve; above that it sheds with 503.
    pub capacity: Option<f64>,
    /// `concurrency:` an adaptive limit on the requests each replica
    /// serves at once; above it, it sheds with 503 (SPEC section 15).
    pub concurrency: Option<Concurrency>,
    /// `context: dropped`.
    pub context_dropped: bool,
    /// `ownership: false` turns its middleware off.
    pub ownership: bool,
    /// An outside service: called over HTTP as is, not started.
    pub url: Option<String>,
    /// Its fault.
    pub fault: Fault,
    /// Simulated service time (held on a worker when `workers` is set).
    pub work: Duration,
    /// `workers:` requests in service at once; `None` (the default) is no
    /// limit, the service behaves as without SPEC section 7.
    pub workers: Option<u32>,
    /// `queue:` requests waiting for a worker, FIFO; a request that finds it
    /// full is shed with a claimed 503. [`DEFAULT_QUEUE`] unless the file
    /// says otherwise (also when `workers` is unset, so a scenario step that
    /// gives the service workers finds the default queue).
    pub queue: u32,
    /// `cancel:` a queued job whose caller has gone is skipped when it
    /// reaches a worker (default false: it runs, and its answer is wasted).
    pub cancel: bool,
    /// Longest path from the entry (the entry is 0); every edge goes deeper.
    pub depth: usize,
    /// Calls it receives per root request with no faults and no retries
    /// (over every root, each by its share of the root requests).
    pub multiplicity: f64,
    /// Per root (in [`LoadSettings::roots`] order), the calls it receives
    /// per request of that root. Shared, not copied, by the clones a
    /// topology of many roots makes of itself (one per root, each with a
    /// list as long as the roots).
    pub root_multiplicity: PerRoot,
    /// `replicas:` listeners behind its name (1: no replicas); workers,
    /// queue and capacity are per replica.
    pub replicas: u32,
    /// The first node of its service: a service with `endpoints` is one
    /// node per endpoint (named `S/E`), sharing that service's listener,
    /// workers, queue, capacity, replicas and fault; any other node is its
    /// own group.
    pub group: ServiceId,
    /// Its endpoint's name, when its service declares `endpoints`.
    pub endpoint: Option<String>,
    /// The endpoint's own `fault:` (in force when the service's fault is
    /// not on this endpoint).
    pub endpoint_fault: Fault,
    /// `errors:` the statuses of the errors it causes and passes up.
    pub errors: mesh::Errors,
    /// `sidecar:` the real proxy carrying its calls, if any.
    pub sidecar: Option<mesh::Sidecar>,
}

/// Where endpoint `endpoint` of a service reached at `urls` (its
/// replicas', comma-separated) answers: `/E` under each; the URLs as they
/// are for a service without endpoints.
pub fn at_path(urls: &str, endpoint: Option<&str>) -> String {
    match endpoint {
        Some(e) => urls
            .split(',')
            .map(|u| format!("{}/{e}", u.trim().trim_end_matches('/')))
            .collect::<Vec<_>>()
            .join(","),
        None => urls.to_string(),
    }
}

impl Service {
    /// The fault in force on this node: the service's when it is active
    /// and on this endpoint, else the endpoint's own.
    pub fn fault_in_force(&self) -> &Fault {
        self.fault
            .in_force(self.endpoint.as_deref(), &self.endpoint_fault)
    }

    /// Its service's name: `S` of `S/E`, or its own name.
    pub fn service_name(&self) -> &str {
        match &self.endpoint {
            Some(e) => self
                .name
                .strip_suffix(e.as_str())
                .and_then(|n| n.strip_suffix('/'))
                .unwrap_or(&self.name),
            None => &self.name,
        }
    }

    /// The path its requests take on the wire: `/E`, or `/` without
    /// endpoints.
    pub fn path(&self) -> String {
        match &self.endpoint {
            Some(e) => format!("/{e}"),
            None => "/".to_string(),
        }
    }
}

/// One call edge.
#[derive(Debug, Clone, PartialEq)]
pub struct Edge {
    /// Caller.
    pub from: ServiceId,
    /// Callee.
    pub to: ServiceId,
    /// Fail-close or fail-open.
    pub mode: DependencyMode,
    /// Calls per request.
    pub count: u32,
    /// The share of requests that make the call (all its `count`), drawn
    /// per request; 1 is every request.
    pub p: f64,
    /// Per-edge policy overrides.
    pub policy: PolicyFields,
    /// Where its policy was read (`file:line`), when a configuration set it.
    pub source: Option<std::sync::Arc<str>>,
}

impl Edge {
    /// Calls on this edge per request of the caller, on average: `p × count`.
    pub fn expected_calls(&self) -> f64 {
        self.p * f64::from(self.count)
    }

    /// Whether some requests make this call (`p` above 0).
    pub fn is_made(&self) -> bool {
        self.p > 0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_rate_knob_sets_the_population_at_a_fixed_think_time() {
        let think = Duration::from_millis(500);
        assert_eq!(clients_at(100.0, think), 50);
        assert_eq!(clients_at(0.0, think), 0);
        assert_eq!(clients_at(-3.0, think), 0);
        assert_eq!(clients_at(f64::INFINITY, think), MAX_CLIENTS as usize);
        assert_eq!(clients_at(1e12, think), MAX_CLIENTS as usize);
        assert_eq!(clients_at(f64::NAN, think), 0);
    }
}
