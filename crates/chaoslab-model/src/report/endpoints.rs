//! Per-service figures of a topology whose services declare endpoints
//! (SPEC section 11): the report's nodes are its endpoints (`S/E`), each
//! with its own figures; a service's figures are theirs summed, since its
//! endpoints share its workers, queue and replicas.

use serde::Serialize;

use super::NodeReport;
use crate::lab::figures::Figure;
use crate::topology::Topology;

/// One service with endpoints, over a window.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ServiceReport {
    /// The service.
    pub name: String,
    /// Its endpoints, in file order.
    pub endpoints: Vec<String>,
    /// Requests per second it received, over its endpoints.
    pub rps: f64,
    /// Its no-fault load at the root rates measured.
    pub baseline_rps: f64,
    /// `rps / baseline_rps` (`null` with no baseline).
    pub amplification: Option<f64>,
    /// Requests it received over the window.
    pub requests: u64,
    /// Of those, answered with an error.
    pub errors: u64,
    /// Each endpoint's share of its requests.
    pub shares: Vec<f64>,
}

/// Every service that declares endpoints, its endpoints' nodes summed
/// (empty for a topology without endpoints).
pub fn services(t: &Topology, nodes: &[NodeReport]) -> Vec<ServiceReport> {
    let mut out = Vec::new();
    for (g, s) in t.services.iter().enumerate() {
        if s.group != g || s.endpoint.is_none() {
            continue;
        }
        let members: Vec<&NodeReport> = t.group(g).filter_map(|j| nodes.get(j)).collect();
        let sum = |f: Figure| -> f64 {
            members
                .iter()
                .map(|n| n.figures[f])
                .filter(|x| x.is_finite())
                .sum()
        };
        let (rps, baseline) = (sum(Figure::Rps), sum(Figure::BaselineRps));
        let requests = sum(Figure::Requests);
        out.push(ServiceReport {
            name: s.service_name().to_string(),
            endpoints: t
                .group(g)
                .filter_map(|j| t.services[j].endpoint.clone())
                .collect(),
            rps,
            baseline_rps: baseline,
            amplification: (baseline > 0.0).then(|| rps / baseline),
            requests: requests as u64,
            errors: sum(Figure::Errors) as u64,
            shares: members
                .iter()
                .map(|n| {
                    if requests > 0.0 {
                        n.figures[Figure::Requests] / requests
                    } else {
                        0.0
                    }
                })
                .collect(),
        });
    }
    out
}
