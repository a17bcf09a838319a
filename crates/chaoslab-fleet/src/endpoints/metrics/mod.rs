//! `--metrics ADDR`: the lab's figures as a Prometheus endpoint.
//!
//! `GET /metrics` answers in the OpenMetrics text format, read from the
//! live counters at the moment of the scrape (no second set of counters,
//! no global registry): a
//! [`Collector`](prometheus_client::collector::Collector) copies the
//! fleet's counters and the newest snapshot and writes them out
//! (`encode.rs`). Counters are totals since the
//! fleet started, so `rate()` in PromQL gives per-second figures; gauges
//! (amplification, storm radius, queue depth) are the dashboard's values
//! at the scrape. [`CATALOGUE`] names every metric once, with its help
//! (the figure catalogue's meaning where the metric is a figure); the
//! encoder and the table in `docs/telemetry.md` both read it.
//!
//! `compare` runs one session per policy: its endpoint reads whichever
//! runs now, with a `policy` label, so each policy's counters are their
//! own series.

use std::net::SocketAddr;
use std::sync::Arc;

use arc_swap::ArcSwapOption;
use axum::routing::get;
use axum::Router;
use prometheus_client::registry::Registry;
use tokio::runtime::Handle;
use tokio::sync::watch;

use crate::error::RunError;
use crate::lab::Snapshot;
use crate::metrics::Metrics;
use crate::session::{Access, Session};

use super::guard::{Checks, Guard};
use super::listen::bind;

mod catalogue;
mod encode;
mod servicegraph;

pub use catalogue::{catalogue, markdown_table, Kind, MetricDoc, CATALOGUE};
use encode::{counter, family, Exporter, Labels};

/// What a scrape reads: the counters, the names, the newest snapshot.
#[derive(Debug)]
pub struct Source {
    metrics: Arc<Metrics>,
    services: Vec<String>,
    /// Each edge's caller and callee.
    edges: Vec<(String, String)>,
    /// Each root's service, in `load.roots` order.
    roots: Vec<String>,
    /// The servicegraph connector's view: each pair of services an edge
    /// joins (endpoints summed), and the pair of each edge.
    service_pairs: Vec<(String, String)>,
    pair_of_edge: Vec<usize>,
    /// Each root's service without its endpoint.
    root_services: Vec<String>,
    snapshot: watch::Receiver<Arc<Snapshot>>,
    /// The `policy` label, under `compare`.
    policy: Option<String>,
}

impl Source {
    /// What a scrape of `session` reads; `policy` labels every series.
    pub fn of(session: &Session, policy: Option<String>) -> Source {
        let t = session.topology();
        let (service_pairs, pair_of_edge) = servicegraph::pairs(t);
        Source {
            metrics: session.metrics().clone(),
            services: t.services.iter().map(|s| s.name.clone()).collect(),
            edges: t
                .edges
                .iter()
                .map(|e| {
                    (
                        t.services[e.from].name.clone(),
                        t.services[e.to].name.clone(),
                    )
                })
                .collect(),
            roots: t
                .load
                .roots
                .iter()
                .map(|r| t.services[r.entry].name.clone())
                .collect(),
            service_pairs,
            pair_of_edge,
            root_services: t
                .load
                .roots
                .iter()
                .map(|r| t.group_name(r.entry).to_string())
                .collect(),
            snapshot: session.snapshots(),
            policy,
        }
    }
}

/// The session a scrape reads: fixed for `run` and `serve`, swapped per
/// policy by `compare` (nothing between two runs).
pub type Current = Arc<ArcSwapOption<Source>>;

/// The text a scrape answers.
pub fn scrape(current: &Current) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Exporter(current.clone())));
    let mut body = String::new();
    let _ = prometheus_client::encoding::text::encode(&mut body, &registry);
    body
}

fn router(current: Current, guard: Guard) -> Router {
    let r = Router::new().route(
        "/metrics",
        get(move || {
            let current = current.clone();
            async move {
                (
                    [(
                        http::header::CONTENT_TYPE,
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    scrape(&current),
                )
            }
        }),
    );
    guard.wrap(r)
}

/// Serves `GET /metrics` for `session` on `addr`; returns the address
/// bound (a free port for `:0`).
pub fn serve(session: &Session, addr: SocketAddr) -> Result<SocketAddr, RunError> {
    let current: Current = Arc::new(ArcSwapOption::from_pointee(Source::of(session, None)));
    let listener = bind(session.handle(), "--metrics", addr)?;
    let metrics = session.metrics().clone();
    let guard = Guard::new(
        listener.addr,
        session.access().clone(),
        Checks::ReadOnly,
        Arc::new(move |reason, what| metrics.refusals().refuse(reason, what)),
    );
    Ok(listener.serve(session.handle(), router(current, guard)))
}

/// Serves `GET /metrics` on `addr` from `rt` for whatever `current` holds
/// (`compare` swaps one session in after another).
pub fn serve_current(
    rt: &Handle,
    addr: SocketAddr,
    current: Current,
) -> Result<SocketAddr, RunError> {
    let listener = bind(rt, "--metrics", addr)?;
    // A refusal counts in the run of the moment, if one runs.
    let now = current.clone();
    let guard = Guard::new(
        listener.addr,
        Access::default(),
        Checks::ReadOnly,
        Arc::new(move |reason, what| {
            if let Some(s) = now.load_full() {
                s.metrics.refusals().refuse(reason, what);
            }
        }),
    );
    Ok(listener.serve(rt, router(current, guard)))
}
