//! The OpenTelemetry Collector servicegraph connector's two counters,
//! served from the lab's own: a Prometheus that scrapes a lab run holds
//! the same graph it would hold for a traced mesh, and `chaoslab import
//! servicegraph` reads it back (SPEC section 12). The connector pairs a
//! client span with its server span, so it counts attempts on the wire,
//! retries included, between services (not endpoints); the end users are
//! its virtual client `user`.

use std::collections::HashMap;

use prometheus_client::encoding::DescriptorEncoder;

use super::{counter, family, Labels, Source};
use crate::metrics::Counts;
use crate::topology::Topology;

/// The pairs of services edges join, in the order first met, and the
/// pair each edge belongs to.
pub(super) fn pairs(t: &Topology) -> (Vec<(String, String)>, Vec<usize>) {
    let mut pairs: Vec<(String, String)> = vec![];
    let mut index: HashMap<(String, String), usize> = HashMap::new();
    let of_edge = t
        .edges
        .iter()
        .map(|e| {
            let pair = (
                t.group_name(e.from).to_string(),
                t.group_name(e.to).to_string(),
            );
            *index.entry(pair.clone()).or_insert_with(|| {
                pairs.push(pair);
                pairs.len() - 1
            })
        })
        .collect();
    (pairs, of_edge)
}

impl Source {
    pub(super) fn encode_servicegraph(
        &self,
        e: &mut DescriptorEncoder,
        c: &Counts,
    ) -> Result<(), std::fmt::Error> {
        // (client, server) → (requests, failed), the users first.
        let mut rows: Vec<(String, String, u64, u64)> = vec![];
        for (root, sent, errors) in self.root_rows(&self.root_services, c) {
            match rows.iter_mut().find(|r| r.0 == "user" && r.1 == root) {
                Some(r) => {
                    r.2 += sent;
                    r.3 += errors;
                }
                None => rows.push(("user".into(), root, sent, errors)),
            }
        }
        let users = rows.len();
        rows.extend(
            self.service_pairs
                .iter()
                .map(|(a, b)| (a.clone(), b.clone(), 0, 0)),
        );
        for (k, edge) in c.edges.iter().enumerate() {
            if let Some(&p) = self.pair_of_edge.get(k) {
                rows[users + p].2 += edge.attempts;
                rows[users + p].3 += edge.failed_attempts;
            }
        }
        let labels = |r: &(String, String, u64, u64)| -> Labels {
            self.labels(vec![("client", r.0.clone()), ("server", r.1.clone())])
        };
        family(
            e,
            "traces_service_graph_request",
            rows.iter().map(|r| (labels(r), counter(r.2))).collect(),
        )?;
        family(
            e,
            "traces_service_graph_request_failed",
            rows.iter().map(|r| (labels(r), counter(r.3))).collect(),
        )
    }
}
