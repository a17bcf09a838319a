//! A fleet of nodes: the session's second kind of fleet, where each
//! service runs in a `chaoslab node` process of its own (on this machine,
//! on other hosts, in a cluster) and the session reads and drives them
//! through their control APIs.
//!
//! - **Read.** Several times a second the session reads every node's
//!   counters (`GET /counts`) and puts each node's own rows (its service,
//!   the edges it calls on) beside this process's root counts, read at the
//!   same moment, into the [`Metrics`] every front end reads. A node's
//!   lab health (event-loop lag, open-file failures) is added to the
//!   lab's, and a node that does not answer is counted, so the figures
//!   say when they are missing a node's traffic.
//! - **The storm radius.** Each node journals the retries it sent and,
//!   at a root's entry, the roots it completed and where (`GET
//!   /retries?after=N`). The roots' journals are read first in each
//!   round: every retry sent for a root happened before that root's
//!   answer, so when its entry says a root is done, its retries are
//!   already in the other nodes' journals, read next. The records are replayed into the session's own tracker,
//!   which measures each root's radius as the in-process fleet does.
//! - **The wire tap.** Each node samples the exchanges on the edges it
//!   calls on; the session reads the samples since its last read
//!   (`GET /tap?after=N`) into its own tap, so the panel and `chaoslab
//!   tap` show every edge's header lines.
//! - **Drive.** Every action the session applies is sent, in order, to
//!   every node's `POST /actions` in the scenario step syntax, so every
//!   node folds the same state (and the same model) as the session.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use thiserror::Error;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::access::Token;
use crate::lab::step::as_step;
use crate::lab::Action;
use crate::metrics::journal::Page;
use crate::metrics::tap;
use crate::metrics::{Metrics, NodeRows, OutlierCounts, WireCounts};
use crate::topology::Topology;

/// How often the nodes are read: ten times a second, or twice a sample
/// when the session samples more slowly (a mesh of thousands samples once
/// a second, and reading its shards ten times as often cost their CPU).
pub const READ_PERIOD: Duration = Duration::from_millis(100);
/// How long a node may take to answer one read.
const READ_TIMEOUT: Duration = Duration::from_secs(1);
/// How long the nodes may take to come up.
pub const READY_WITHIN: Duration = Duration::from_secs(15);
/// How long the shards of a mesh may take to come up: each reads and
/// places the whole mesh and binds its share, all at once on the
/// machine's cores (6 shards of Meta's 18,571 services on 2 cores take
/// some 50 s).
pub const SHARDS_READY_WITHIN: Duration = Duration::from_secs(120);
/// Batches of actions waiting to be sent to the nodes.
const FORWARD_QUEUE: usize = 256;

/// Why a fleet of nodes could not be driven.
#[derive(Debug, Error)]
pub enum NodesError {
    /// A node did not come up.
    #[error(
        "the node of `{service}` at {url} did not answer GET /healthz within {within:?}: {why}"
    )]
    NotReady {
        /// Its service.
        service: String,
        /// Its control URL.
        url: String,
        /// How long it was given.
        within: Duration,
        /// The last failure.
        why: String,
    },
    /// A node refused the starting state.
    #[error("the node of `{service}` at {url} refused the starting state: {why}")]
    Refused {
        /// Its service.
        service: String,
        /// Its control URL.
        url: String,
        /// What it said.
        why: String,
    },
    /// The HTTP client could not be built.
    #[error("building the HTTP client for the nodes failed: {0}")]
    Client(String),
}

/// Where each service's node answers its control API: per service,
/// topology order; `None` for a service no node runs (an outside
/// service); a replicated service's nodes, one per replica,
/// comma-separated in replica order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeControls(pub Vec<Option<String>>);

/// Where each shard of a mesh answers its control API, and the services
/// it serves (SPEC section 19).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardControls {
    /// Per shard: its control URL and its services (each service's first
    /// node, topology order).
    pub shards: Vec<(String, Vec<usize>)>,
}

/// The processes a session reads and drives: a node per service (or
/// replica), or the shards of a mesh.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Controls {
    /// A node per service.
    Nodes(NodeControls),
    /// The shards.
    Shards(ShardControls),
}

impl From<NodeControls> for Controls {
    fn from(c: NodeControls) -> Controls {
        Controls::Nodes(c)
    }
}

/// The nodes of a running session.
#[derive(Debug)]
pub struct Nodes {
    forward: mpsc::Sender<String>,
    /// The shards lost so far, for the reader.
    lost: Arc<std::sync::Mutex<Vec<usize>>>,
    topology: Arc<Topology>,
    reader: JoinHandle<()>,
    forwarder: JoinHandle<()>,
}

/// One node (or shard) as the reader knows it.
#[derive(Debug)]
struct Node {
    /// What its errors name it by: its service, or `shard K`.
    label: String,
    /// The services it serves (each service's first node).
    services: Vec<usize>,
    /// The edges whose rows it counts: its services' calls.
    edges: Vec<usize>,
    /// Which shard it is, when it is one.
    shard: Option<usize>,
    /// Lost (its process died): its rows stay as last read, and its reads
    /// failing are no longer misses.
    gone: bool,
    /// Reads failed since its last good one.
    missed: u64,
    url: String,
    /// The next journal record to read.
    next: u64,
    /// The last tap sample read.
    tapped: u64,
    /// Its rows as last read.
    last: Option<NodeRows>,
    /// The services whose rows are its own (every node of its services).
    rows: Vec<usize>,
}

impl Nodes {
    /// Waits for every node to answer, brings each to the state `topology`
    /// starts in, reads them once into `metrics`, and starts reading and
    /// driving them.
    pub async fn connect(
        topology: &Topology,
        controls: &Controls,
        metrics: Arc<Metrics>,
        token: Option<&Token>,
        sample: Duration,
    ) -> Result<Nodes, NodesError> {
        let period = (sample / 2).max(READ_PERIOD);
        // Every read and every action is JSON, with the token when the
        // nodes ask for one.
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            reqwest::header::CONTENT_TYPE,
            reqwest::header::HeaderValue::from_static("application/json"),
        );
        if let Some(t) = token {
            let mut v = reqwest::header::HeaderValue::from_str(&t.header_value())
                .map_err(|e| NodesError::Client(e.to_string()))?;
            v.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, v);
        }
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(READ_TIMEOUT)
            .default_headers(headers)
            .build()
            .map_err(|e| NodesError::Client(e.to_string()))?;
        let mut nodes = nodes_of(topology, controls);
        let name = |n: &Node| n.label.clone();
        // Shards come up while this process builds its own side of the
        // run, and take longer (each reads and places the whole mesh).
        let within = match controls {
            Controls::Nodes(_) => READY_WITHIN,
            Controls::Shards(_) => SHARDS_READY_WITHIN,
        };
        for n in &nodes {
            ready(&client, n, within)
                .await
                .map_err(|why| NodesError::NotReady {
                    service: name(n),
                    url: n.url.clone(),
                    within,
                    why,
                })?;
        }
        let start = body(topology, &crate::lab::LabState::of(topology).actions());
        for n in &nodes {
            post(&client, n, &start)
                .await
                .map_err(|why| NodesError::Refused {
                    service: name(n),
                    url: n.url.clone(),
                    why,
                })?;
        }
        let entries: Vec<usize> = topology
            .load
            .roots
            .iter()
            .map(|r| topology.services[r.entry].group)
            .collect();
        // The roots' nodes first in every round (see the module's notes).
        let at_entry = |n: &Node| n.services.iter().any(|s| entries.contains(s));
        nodes.sort_by_key(|n| !at_entry(n));
        let first = nodes.iter().take_while(|n| at_entry(n)).count();
        let mut reader = Reader {
            client: client.clone(),
            nodes,
            first,
            metrics,
            misses: 0,
            lost: Arc::default(),
        };
        let lost = reader.lost.clone();
        reader.round().await;
        let reader = tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                reader.round().await;
            }
        });
        let (forward, mut rx) = mpsc::channel::<String>(FORWARD_QUEUE);
        let urls: Vec<String> = match controls {
            Controls::Nodes(c) => {
                c.0.iter()
                    .flatten()
                    .flat_map(|u| crate::fleet::peer_urls(u))
                    .collect()
            }
            Controls::Shards(c) => c.shards.iter().map(|(u, _)| u.clone()).collect(),
        };
        let forwarder = tokio::spawn(async move {
            while let Some(body) = rx.recv().await {
                // Every node gets each batch before any gets the next.
                join_all(urls.iter().map(|u| {
                    client
                        .post(format!("{}/actions", u.trim_end_matches('/')))
                        .body(body.clone())
                        .send()
                }))
                .await;
            }
        });
        Ok(Nodes {
            forward,
            lost,
            topology: Arc::new(topology.clone()),
            reader,
            forwarder,
        })
    }

    /// Sends an action the session applied to every node.
    pub fn forward(&self, action: &Action) {
        if let Action::ShardLost { shard, .. } = action {
            self.lost
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(*shard);
        }
        let b = body(&self.topology, std::slice::from_ref(action));
        // A queue of 256 batches full means the nodes stopped answering,
        // which the reader counts as misses; the session never waits here.
        if b != "[]" {
            let _ = self.forward.try_send(b);
        }
    }

    /// Stops reading and driving the nodes (they keep running).
    pub fn stop(&self) {
        self.reader.abort();
        self.forwarder.abort();
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The nodes (or shards) `controls` name, each with the rows it counts:
/// a node serves a whole service, its endpoints its rows; a shard its
/// services' rows and their calls'.
fn nodes_of(topology: &Topology, controls: &Controls) -> Vec<Node> {
    // A node serves a whole service: its endpoints are its rows.
    let groups: Vec<usize> = topology.services.iter().map(|s| s.group).collect();
    let mut calls_of: Vec<Vec<usize>> = vec![vec![]; groups.len()];
    for (e, edge) in topology.edges.iter().enumerate() {
        calls_of[groups[edge.from]].push(e);
    }
    let node = |label: String, services: Vec<usize>, u: &str| Node {
        label,
        rows: services.iter().flat_map(|&g| topology.group(g)).collect(),
        shard: None,
        gone: false,
        missed: 0,
        edges: services
            .iter()
            .flat_map(|&s| calls_of[s].iter().copied())
            .collect(),
        services,
        url: u.trim_end_matches('/').to_string(),
        next: 0,
        tapped: 0,
        last: None,
    };
    match controls {
        Controls::Nodes(c) => {
            c.0.iter()
                .enumerate()
                .filter_map(|(service, url)| url.as_ref().map(|u| (service, u)))
                .flat_map(|(service, u)| {
                    let label = topology.services[service].name.clone();
                    crate::fleet::peer_urls(u)
                        .into_iter()
                        .map(|u| node(label.clone(), vec![service], &u))
                        .collect::<Vec<_>>()
                })
                .collect()
        }
        Controls::Shards(c) => c
            .shards
            .iter()
            .enumerate()
            .map(|(k, (u, services))| Node {
                shard: Some(k),
                ..node(format!("shard {k}"), services.clone(), u)
            })
            .collect(),
    }
}

/// Actions as a `POST /actions` body: a JSON list of steps. An action
/// that changes nothing has no step and is left out.
fn body(t: &Topology, actions: &[Action]) -> String {
    let steps: Vec<serde_json::Value> = actions
        .iter()
        .filter_map(|a| as_step(t, a))
        .filter_map(|line| serde_yaml::from_str(&line).ok())
        .collect();
    serde_json::Value::Array(steps).to_string()
}

async fn ready(client: &reqwest::Client, n: &Node, within: Duration) -> Result<(), String> {
    let until = tokio::time::Instant::now() + within;
    loop {
        let why = match client.get(format!("{}/healthz", n.url)).send().await {
            Ok(r) if r.status().is_success() => return Ok(()),
            Ok(r) => format!("HTTP {}", r.status()),
            Err(e) => crate::format::with_causes(&e),
        };
        if tokio::time::Instant::now() >= until {
            return Err(why);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn post(client: &reqwest::Client, n: &Node, body: &str) -> Result<(), String> {
    if body == "[]" {
        return Ok(());
    }
    let r = client
        .post(format!("{}/actions", n.url))
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| crate::format::with_causes(&e))?;
    let status = r.status();
    if status.is_success() {
        return Ok(());
    }
    let text = r.text().await.unwrap_or_default();
    Err(format!("HTTP {status}: {}", text.trim()))
}

async fn get_json<T: serde::de::DeserializeOwned>(
    client: &reqwest::Client,
    url: String,
) -> Option<T> {
    let r = client.get(url).send().await.ok()?;
    if !r.status().is_success() {
        return None;
    }
    serde_json::from_slice(&r.bytes().await.ok()?).ok()
}

/// Reads the nodes into the session's metrics.
struct Reader {
    client: reqwest::Client,
    /// The roots' nodes first.
    nodes: Vec<Node>,
    /// How many of them serve a root's entry.
    first: usize,
    metrics: Arc<Metrics>,
    /// Reads that failed so far.
    misses: u64,
    /// The shards lost so far (see [`Nodes::forward`]).
    lost: Arc<std::sync::Mutex<Vec<usize>>>,
}

impl Reader {
    /// One round: this process's root counts, then the entry's journal,
    /// then every other journal and every node's counters at once.
    async fn round(&mut self) {
        // A shard lost: the reads that failed since its last good one are
        // its death's, not the machine falling behind.
        let lost = self.lost.lock().unwrap_or_else(|e| e.into_inner()).clone();
        for n in &mut self.nodes {
            if !n.gone && n.shard.is_some_and(|k| lost.contains(&k)) {
                n.gone = true;
                self.misses = self.misses.saturating_sub(n.missed);
            }
        }
        let mut counts = self.metrics.local_counts();
        let client = &self.client;
        // The roots' nodes (one per replica) first, then the others.
        let (first, rest) = self.nodes.split_at_mut(self.first);
        let entry_pages = join_all(
            first
                .iter()
                .map(|n| get_json::<Page>(client, format!("{}/retries?after={}", n.url, n.next))),
        )
        .await;
        let journals = join_all(
            rest.iter()
                .map(|n| get_json::<Page>(client, format!("{}/retries?after={}", n.url, n.next))),
        );
        let all = || first.iter().chain(rest.iter());
        let reads = join_all(
            all().map(|n| get_json::<WireCounts>(client, format!("{}/counts?rows=own", n.url))),
        );
        let taps =
            join_all(all().map(|n| {
                get_json::<tap::Page>(client, format!("{}/tap?after={}", n.url, n.tapped))
            }));
        let (journals, reads, taps) = tokio::join!(journals, reads, taps);
        for (n, page) in self.nodes.iter_mut().zip(taps) {
            let Some(p) = page else { continue };
            n.tapped = p.next;
            self.metrics.tap().add(p.tapped);
        }
        let storm = self.metrics.storm();
        let mut done = vec![];
        let pages = entry_pages.into_iter().chain(journals);
        for (n, page) in self.nodes.iter_mut().zip(pages) {
            let Some(p) = page else { continue };
            n.next = p.next;
            for (root, edge) in p.retries {
                storm.record(root, edge as usize);
            }
            let at = p
                .done_at
                .iter()
                .copied()
                .map(Some)
                .chain(std::iter::repeat(None));
            done.extend(p.done.into_iter().zip(at));
        }
        for (root, at) in done {
            if let (Some(r), Some(service)) = (storm.finish(root), at) {
                self.metrics.root_radius_at(service, r);
            }
        }
        let mut missed = 0;
        // A service's rows are its nodes' summed: a node per replica.
        let mut seen = vec![false; counts.services.len()];
        let replica_row: std::collections::HashMap<(usize, u32), usize> = counts
            .replicas
            .iter()
            .enumerate()
            .map(|(k, r)| ((r.service, r.replica), k))
            .collect();
        // Each caller's node keeps its own outlier detection: an edge's
        // rows are summed over its caller's nodes (`ejected` then counts
        // the callers' processes that have the replica out).
        let mut outliers: std::collections::BTreeMap<(usize, u32), OutlierCounts> =
            std::collections::BTreeMap::new();
        for (n, read) in self.nodes.iter_mut().zip(reads) {
            let sizes = (counts.services.len(), counts.edges.len());
            match read {
                Some(w) if w.rows.as_ref().map_or(w.services.len(), |r| r.of[0]) == sizes.0 => {
                    n.last = Some(w.into_rows(&n.rows, &n.edges, sizes));
                    n.missed = 0;
                }
                _ if n.gone => {}
                _ => {
                    missed += 1;
                    n.missed += 1;
                }
            }
            let Some(c) = &n.last else { continue };
            // A service's rows are read from every node serving it (one
            // per replica), summed; a shard's services are on it alone.
            let mut again = false;
            for &s in &n.services {
                again |= std::mem::replace(&mut seen[s], true);
            }
            for (i, row) in &c.services {
                if let Some(to) = counts.services.get_mut(*i) {
                    *to = if again { to.plus(row) } else { *row };
                }
            }
            for (e, row) in &c.edges {
                if let Some(to) = counts.edges.get_mut(*e) {
                    *to = if again { to.plus(row) } else { *row };
                }
            }
            // Each node counts the replicas it sees: its own requests, the
            // attempts it sends to its callees' replicas.
            for row in &c.replicas {
                if let Some(to) = replica_row
                    .get(&(row.service, row.replica))
                    .and_then(|&k| counts.replicas.get_mut(k))
                {
                    to.requests += row.requests;
                    to.errors += row.errors;
                    to.first_attempts += row.first_attempts;
                    to.retries += row.retries;
                }
            }
            for row in &c.outliers {
                let to = outliers
                    .entry((row.edge, row.replica))
                    .or_insert(OutlierCounts {
                        ejections: 0,
                        ejected: 0,
                        ..*row
                    });
                to.ejections += row.ejections;
                to.ejected += row.ejected;
            }
            let r = &mut counts.root;
            r.fd_errors += c.root.fd_errors;
            r.ticks += c.root.ticks;
            r.lag_us += c.root.lag_us;
            r.lag_max_us = r.lag_max_us.max(c.root.lag_max_us);
        }
        if !outliers.is_empty() {
            counts.outliers = outliers.into_values().collect();
        }
        self.misses += missed;
        counts.root.node_misses = self.misses;
        self.metrics.set_remote(counts);
    }
}
