//! `--metrics ADDR`: the lab's figures as a Prometheus endpoint.
//!
//! `GET /metrics` answers in the OpenMetrics text format, read from the
//! live counters at the moment of the scrape (no second set of counters,
//! no global registry): a [`Collector`] copies the fleet's counters and
//! the newest snapshot and writes them out. Counters are totals since the
//! fleet started, so `rate()` in PromQL gives per-second figures; gauges
//! (amplification, storm radius, queue depth) are the dashboard's values
//! at the scrape. The HELP line of each metric that has a figure in the
//! catalogue is the figure's own meaning.
//!
//! This is one more front end over the session, beside the dashboard and
//! the headless runner: it reads what the session publishes and starts
//! nothing of its own but its listener.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::routing::get;
use axum::Router;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use tokio::sync::watch;

use crate::error::RunError;
use crate::metrics::Metrics;
use crate::session::figures::Figure;
use crate::session::{Session, Snapshot};

/// What a scrape reads: the counters, the names, the newest snapshot.
#[derive(Debug)]
struct Exporter {
    metrics: Arc<Metrics>,
    services: Vec<String>,
    /// Each edge's caller and callee.
    edges: Vec<(String, String)>,
    snapshot: watch::Receiver<Arc<Snapshot>>,
}

type Labels = Vec<(&'static str, String)>;

/// One metric family: its name (without `chaoslab_`), help, and a value
/// per label set.
fn family<M: EncodeMetric>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    values: impl IntoIterator<Item = (Labels, M)>,
) -> Result<(), std::fmt::Error> {
    let mut values = values.into_iter().peekable();
    let Some((_, first)) = values.peek() else {
        return Ok(());
    };
    let mut metric = encoder.encode_descriptor(name, help, None, first.metric_type())?;
    for (labels, value) in values {
        value.encode(metric.encode_family(&labels)?)?;
    }
    Ok(())
}

fn counter(v: u64) -> ConstCounter<u64> {
    ConstCounter::new(v)
}

fn gauge(v: f64) -> ConstGauge<f64> {
    ConstGauge::new(if v.is_finite() { v } else { 0.0 })
}

impl Collector for Exporter {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let c = self.metrics.counts();
        let snap = self.snapshot.borrow().clone();
        let svc = |i: usize| -> Labels { vec![("service", self.services[i].clone())] };
        let edge = |i: usize| -> Labels {
            let (from, to) = &self.edges[i];
            vec![("caller", from.clone()), ("callee", to.clone())]
        };
        let per_service = |f: &dyn Fn(usize) -> u64| {
            (0..self.services.len())
                .map(|i| (svc(i), counter(f(i))))
                .collect::<Vec<_>>()
        };
        let per_edge = |f: &dyn Fn(usize) -> u64| {
            (0..self.edges.len())
                .map(|i| (edge(i), counter(f(i))))
                .collect::<Vec<_>>()
        };
        family(
            &mut e,
            "chaoslab_requests",
            "Requests the service answered.",
            per_service(&|i| c.services[i].requests),
        )?;
        family(
            &mut e,
            "chaoslab_errors",
            Figure::Errors.help(),
            per_service(&|i| c.services[i].errors),
        )?;
        for (name, help, pick) in [
            (
                "chaoslab_claims_returned",
                "Claim headers it wrote on its error responses, by value (true, false, missing).",
                0,
            ),
            (
                "chaoslab_claims_seen",
                "Claims it read on its failed outbound attempts, by value (true, false, missing).",
                1,
            ),
        ] {
            let values = (0..self.services.len()).flat_map(|i| {
                let triple = if pick == 0 {
                    c.services[i].claims_returned
                } else {
                    c.services[i].claims_seen
                };
                ["true", "false", "missing"]
                    .into_iter()
                    .zip(triple)
                    .map(move |(claim, v)| {
                        let mut l = svc(i);
                        l.push(("claim", claim.to_string()));
                        (l, counter(v))
                    })
            });
            family(&mut e, name, help, values.collect::<Vec<_>>())?;
        }
        family(
            &mut e,
            "chaoslab_retries",
            "Retries sent on the call.",
            per_edge(&|i| c.edges[i].retries),
        )?;
        family(
            &mut e,
            "chaoslab_retries_suppressed",
            "Retries not sent on the call: the callee's error came back unclaimed, or its don't-retry header forbade one.",
            per_edge(&|i| c.edges[i].suppressed),
        )?;
        family(
            &mut e,
            "chaoslab_budget_denied",
            "Retries the call's retry budget refused.",
            per_edge(&|i| c.edges[i].budget_denied),
        )?;
        family(
            &mut e,
            "chaoslab_root_requests",
            "Root requests the end user sent.",
            [(vec![], counter(c.root.sent))],
        )?;
        family(
            &mut e,
            "chaoslab_root_errors",
            "Root requests answered with an error, or not answered.",
            [(vec![], counter(c.root.errors))],
        )?;
        family(
            &mut e,
            "chaoslab_amplification",
            Figure::Amplification.help(),
            snap.services
                .iter()
                .enumerate()
                .map(|(i, s)| (svc(i), gauge(s.live[Figure::Amplification])))
                .collect::<Vec<_>>(),
        )?;
        family(
            &mut e,
            "chaoslab_queue_depth",
            Figure::QueueDepth.help(),
            (0..self.services.len())
                .map(|i| (svc(i), gauge(c.services[i].queue_depth as f64)))
                .collect::<Vec<_>>(),
        )?;
        family(
            &mut e,
            "chaoslab_storm_radius",
            "The storm radius over the dashboard's window: the most consecutive hops that retried for one root request (max), and its mean over roots with retries (mean).",
            [
                (vec![("stat", "max".to_string())], gauge(snap.radius_max as f64)),
                (vec![("stat", "mean".to_string())], gauge(snap.radius_mean)),
            ],
        )?;
        Ok(())
    }
}

/// Where `--metrics` (or `--control`) binds: `9100` or `:9100` is
/// 127.0.0.1:9100, `:0` a free port, `HOST:PORT` as written.
pub fn parse_addr(flag: &str, s: &str) -> Result<SocketAddr, RunError> {
    let t = s.trim();
    let full = if let Some(port) = t.strip_prefix(':') {
        format!("127.0.0.1:{port}")
    } else if t.chars().all(|c| c.is_ascii_digit()) && !t.is_empty() {
        format!("127.0.0.1:{t}")
    } else {
        t.to_string()
    };
    full.parse().map_err(|_| {
        RunError::Usage(format!(
            "{flag} {s}: not an address to listen on (e.g. 9100, :0, 127.0.0.1:9100)"
        ))
    })
}

/// Serves `GET /metrics` for `session` on `addr`; returns the address
/// bound (a free port for `:0`), which the caller prints.
pub fn serve(session: &Session, addr: SocketAddr) -> Result<SocketAddr, RunError> {
    let t = session.topology();
    let exporter = Exporter {
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
        snapshot: session.snapshots(),
    };
    let mut registry = Registry::default();
    registry.register_collector(Box::new(exporter));
    let registry = Arc::new(registry);
    let listener = session
        .block_on(tokio::net::TcpListener::bind(addr))
        .map_err(|e| RunError::Usage(format!("--metrics {addr}: cannot listen there: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| RunError::Usage(format!("--metrics {addr}: {e}")))?;
    let app = Router::new().route(
        "/metrics",
        get(move || {
            let registry = registry.clone();
            async move {
                let mut body = String::new();
                let _ = prometheus_client::encoding::text::encode(&mut body, &registry);
                (
                    [(
                        http::header::CONTENT_TYPE,
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    body,
                )
            }
        }),
    );
    session.handle().spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(bound)
}

/// The line a front end prints once the endpoint listens.
pub fn announce(bound: SocketAddr) -> String {
    let mut s = String::new();
    let _ = write!(s, "metrics: http://{bound}/metrics");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_default_to_loopback() {
        assert_eq!(
            parse_addr("--metrics", "9100").unwrap(),
            "127.0.0.1:9100".parse().unwrap()
        );
        assert_eq!(
            parse_addr("--metrics", ":0").unwrap(),
            "127.0.0.1:0".parse().unwrap()
        );
        assert_eq!(
            parse_addr("--metrics", "0.0.0.0:80").unwrap(),
            "0.0.0.0:80".parse().unwrap()
        );
        assert!(parse_addr("--metrics", "localhost:x").is_err());
    }
}
