//! The counters as they cross the wire between processes (`GET /counts`
//! on a node's or a shard's control API): the latency histograms as lists,
//! and a node's own rows alone, at their indices in the mesh.

use serde::{Deserialize, Serialize};

use super::{Counts, EdgeCounts, OutlierCounts, ReplicaCounts, RootCounts, ServiceCounts};
use crate::metrics::latency::{LatencyCounts, LATENCY_BUCKETS};

/// Every counter of one process as it crosses the wire (`GET /counts` on
/// a node's control API): the counts with each service's latency
/// histogram as a list.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireCounts {
    /// Per service, in topology order.
    pub services: Vec<ServiceCounts>,
    /// Per service, its latency histogram's buckets.
    pub latency: Vec<Vec<u32>>,
    /// Per edge, in topology order.
    pub edges: Vec<EdgeCounts>,
    /// The root counts (the lab's health, on a node).
    pub root: RootCounts,
    /// Per replica of each service with more than one.
    #[serde(default)]
    pub replicas: Vec<ReplicaCounts>,
    /// Per replica of each edge's callee with more than one.
    #[serde(default)]
    pub outliers: Vec<OutlierCounts>,
    /// When only some rows are sent (`GET /counts?rows=own`: a node's or a
    /// shard's own services and calls): which, `services`, `latency` and
    /// `edges` holding those rows alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<Rows>,
}

/// The most services or edges a sparse [`WireCounts`] is expanded to.
pub const MAX_ROWS: usize = 1 << 20;

/// Which rows a sparse [`WireCounts`] carries.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rows {
    /// How many services and edges there are in all.
    pub of: [usize; 2],
    /// The services sent, in order.
    pub services: Vec<u32>,
    /// The edges sent, in order.
    pub edges: Vec<u32>,
}

/// A node's rows as the session reading it keeps them: each by its index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeRows {
    /// Its services' rows.
    pub services: Vec<(usize, ServiceCounts)>,
    /// Its calls' rows.
    pub edges: Vec<(usize, EdgeCounts)>,
    /// Its root counts (its lab's health).
    pub root: RootCounts,
    /// Per replica it sees.
    pub replicas: Vec<ReplicaCounts>,
    /// Per callee replica its outlier detection knows.
    pub outliers: Vec<OutlierCounts>,
}

impl WireCounts {
    /// The rows a node sent, each with its index: all a sparse answer
    /// holds, or of a whole one the `services` and `edges` given (the
    /// node's own). Rows past `n` services or `m` edges are dropped.
    pub fn into_rows(
        self,
        services: &[usize],
        edges: &[usize],
        (n, m): (usize, usize),
    ) -> NodeRows {
        let mut rows: Vec<(usize, ServiceCounts)> = Vec::new();
        let with_latency = |mut s: ServiceCounts, l: &[u32]| {
            let mut buckets = [0; LATENCY_BUCKETS];
            for (b, v) in buckets.iter_mut().zip(l) {
                *b = *v;
            }
            s.latency = LatencyCounts(buckets);
            s
        };
        let edge_rows: Vec<(usize, EdgeCounts)> = match &self.rows {
            Some(r) => {
                for ((&i, s), l) in r.services.iter().zip(&self.services).zip(&self.latency) {
                    if (i as usize) < n {
                        rows.push((i as usize, with_latency(*s, l)));
                    }
                }
                r.edges
                    .iter()
                    .zip(&self.edges)
                    .filter(|(e, _)| (**e as usize) < m)
                    .map(|(&e, c)| (e as usize, *c))
                    .collect()
            }
            None => {
                for &i in services {
                    if let (Some(s), Some(l)) = (self.services.get(i), self.latency.get(i)) {
                        rows.push((i, with_latency(*s, l)));
                    }
                }
                edges
                    .iter()
                    .filter_map(|&e| Some((e, *self.edges.get(e)?)))
                    .collect()
            }
        };
        NodeRows {
            services: rows,
            edges: edge_rows,
            root: self.root,
            replicas: self.replicas,
            outliers: self.outliers,
        }
    }
}

impl From<&Counts> for WireCounts {
    fn from(c: &Counts) -> WireCounts {
        WireCounts {
            services: c.services.clone(),
            latency: c.services.iter().map(|s| s.latency.0.to_vec()).collect(),
            edges: c.edges.clone(),
            root: c.root,
            replicas: c.replicas.clone(),
            outliers: c.outliers.clone(),
            rows: None,
        }
    }
}

impl From<WireCounts> for Counts {
    fn from(mut w: WireCounts) -> Counts {
        // Sparse: each row sent in its place, the others zero. A row past
        // the end it gives is dropped.
        if let Some(r) = w.rows.take() {
            // Bounded whatever the sender says: past any mesh the lab runs.
            let of = [r.of[0].min(MAX_ROWS), r.of[1].min(MAX_ROWS)];
            let mut services = vec![ServiceCounts::default(); of[0]];
            let mut latency = vec![vec![]; of[0]];
            for ((&i, s), l) in r.services.iter().zip(w.services).zip(w.latency) {
                if let (Some(to), Some(lt)) =
                    (services.get_mut(i as usize), latency.get_mut(i as usize))
                {
                    *to = s;
                    *lt = l;
                }
            }
            let mut edges = vec![EdgeCounts::default(); of[1]];
            for (&i, e) in r.edges.iter().zip(w.edges) {
                if let Some(to) = edges.get_mut(i as usize) {
                    *to = e;
                }
            }
            w.services = services;
            w.latency = latency;
            w.edges = edges;
        }
        let mut services = w.services;
        for (s, l) in services.iter_mut().zip(&w.latency) {
            let mut buckets = [0; LATENCY_BUCKETS];
            for (b, v) in buckets.iter_mut().zip(l) {
                *b = *v;
            }
            s.latency = LatencyCounts(buckets);
        }
        Counts {
            services,
            edges: w.edges,
            root: w.root,
            replicas: w.replicas,
            outliers: w.outliers,
            roots: vec![],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(requests: u64, bucket: u64) -> ServiceCounts {
        let mut s = ServiceCounts {
            requests,
            ..ServiceCounts::default()
        };
        s.latency.0[3] = bucket as u32;
        s
    }

    /// A node's own rows, sent sparse (`rows=own`) or whole, come back at
    /// their indices with their latency; a row past the mesh is dropped.
    #[test]
    fn a_nodes_rows_come_back_at_their_indices_sparse_or_whole() {
        let whole = Counts {
            services: (0..5).map(|i| service(10 * i, i)).collect(),
            edges: (0..3)
                .map(|i| EdgeCounts {
                    attempts: 100 + i,
                    ..EdgeCounts::default()
                })
                .collect(),
            ..Counts::default()
        };
        let dense = WireCounts::from(&whole);
        let picked = dense.clone().into_rows(&[1, 3], &[2], (5, 3));
        assert_eq!(
            picked.services,
            vec![(1, whole.services[1]), (3, whole.services[3])]
        );
        assert_eq!(picked.edges, vec![(2, whole.edges[2])]);
        // The same rows sent alone, as a node sends its own, and a row
        // past the mesh's end.
        let sparse = WireCounts {
            services: vec![whole.services[1], whole.services[3], service(1, 1)],
            latency: vec![
                whole.services[1].latency.0.to_vec(),
                whole.services[3].latency.0.to_vec(),
                vec![1],
            ],
            edges: vec![whole.edges[2]],
            rows: Some(Rows {
                of: [5, 3],
                services: vec![1, 3, 9],
                edges: vec![2],
            }),
            ..dense
        };
        let back: WireCounts =
            serde_json::from_str(&serde_json::to_string(&sparse).unwrap()).unwrap();
        let rows = back.into_rows(&[], &[], (5, 3));
        assert_eq!(rows.services, picked.services);
        assert_eq!(rows.edges, picked.edges);
        assert_eq!(rows.services[1].1.latency.0[3], 3);
    }
}
