//! Endpoints (SPEC section 11): a service that declares `endpoints` is one
//! node per endpoint, named `S/E`, in the graph the cycle check, the depths
//! and the model run on; a service without is one node named `S`. Calls
//! and roots name `S` (its `default` endpoint, or its only node) or `S/E`.

use std::collections::HashMap;
use std::time::Duration;

use super::{Locator, TopologyError};
use crate::topology::spec::{CallSpec, FaultSpec, ServiceSpec};
use crate::topology::ServiceId;

/// The endpoint a bare service name means.
pub const DEFAULT_ENDPOINT: &str = "default";

/// One node of the graph, as the file gives it.
pub(super) struct Node<'s> {
    /// Its service's position in the file.
    pub service: usize,
    /// `S` or `S/E`.
    pub name: String,
    /// `E`, when the service declares endpoints.
    pub endpoint: Option<&'s str>,
    pub calls: &'s [CallSpec],
    pub parallel: bool,
    /// Its own `work:`, else the service's.
    pub work: Option<Duration>,
    /// The endpoint's own `fault:`.
    pub fault: Option<&'s FaultSpec>,
}

/// Every node, in file order (a service's endpoints together), with the
/// endpoint keys checked.
pub(super) fn nodes<'s>(
    entries: &'s [(String, ServiceSpec)],
    loc: &Locator,
) -> Result<Vec<Node<'s>>, TopologyError> {
    let mut out = Vec::with_capacity(entries.len());
    for (i, (name, s)) in entries.iter().enumerate() {
        let bad = |token: &str, message: String| TopologyError::Yaml {
            at: loc.in_service(name, token),
            service: Some(name.clone()),
            message,
        };
        let Some(endpoints) = &s.endpoints else {
            if let Some(e) = &s.fault.endpoint {
                return Err(bad(
                    "endpoint:",
                    format!("services.{name}.fault.endpoint names \"{e}\", but \"{name}\" declares no endpoints: leave the key out (the fault is on the whole service)"),
                ));
            }
            out.push(Node {
                service: i,
                name: name.clone(),
                endpoint: None,
                calls: &s.calls,
                parallel: s.parallel,
                work: s.work,
                fault: None,
            });
            continue;
        };
        if endpoints.0.is_empty() {
            return Err(bad("endpoints", format!("services.{name}.endpoints is empty: list at least one endpoint (e.g. `endpoints: {{ search: {{}} }}`), or leave the key out for one")));
        }
        if !s.calls.is_empty() || s.parallel {
            let key = if s.calls.is_empty() {
                "parallel"
            } else {
                "calls"
            };
            return Err(bad(
                &format!("{key}:"),
                format!("services.{name}.{key}: \"{name}\" declares endpoints, so its calls and `parallel` belong to each endpoint (`endpoints: {{ E: {{ {key}: ... }} }}`)"),
            ));
        }
        let listed: Vec<&str> = endpoints.0.iter().map(|(e, _)| e.as_str()).collect();
        if let Some(e) = &s.fault.endpoint {
            if !listed.contains(&e.as_str()) {
                return Err(bad(
                    "endpoint:",
                    format!(
                        "services.{name}.fault.endpoint names \"{e}\", which is not an endpoint of \"{name}\" (its endpoints: {})",
                        listed.join(", ")
                    ),
                ));
            }
        }
        for (k, (e, spec)) in endpoints.0.iter().enumerate() {
            let path = format!("services.{name}.endpoints.{e}");
            if let Some(c) = e
                .chars()
                .find(|c| !(c.is_ascii_alphanumeric() || "-_.~".contains(*c)))
                .map(|c| format!("`{c}`"))
                .or_else(|| e.is_empty().then(|| "nothing".to_string()))
            {
                return Err(bad(e, format!("{path}: an endpoint's name is a path on the wire (`GET /{e}`): letters, digits, `-`, `_`, `.` and `~` only, but it holds {c}")));
            }
            if listed[..k].contains(&e.as_str()) {
                return Err(bad(
                    e,
                    format!("{path}: \"{e}\" is listed twice among the endpoints of \"{name}\""),
                ));
            }
            if spec.fault.down.is_some() {
                return Err(bad("down", format!("{path}.fault.down: `down` closes the service's listener, which all its endpoints share: put it on services.{name}.fault")));
            }
            if spec.fault.endpoint.is_some() {
                return Err(bad("endpoint:", format!("{path}.fault.endpoint: an endpoint's own fault is on that endpoint already; leave the key out")));
            }
            let n = s.replicas.unwrap_or(1);
            if let Some(&index) = spec.fault.replicas.iter().flatten().find(|&&r| r >= n) {
                return Err(TopologyError::ReplicaOutOfRange {
                    at: loc.in_service(name, "replicas"),
                    service: name.clone(),
                    index,
                    replicas: n,
                });
            }
            if s.url.is_some() && !spec.calls.is_empty() {
                return Err(TopologyError::UrlWithCalls {
                    at: loc.in_service(name, "calls"),
                    service: name.clone(),
                });
            }
            out.push(Node {
                service: i,
                name: format!("{name}/{e}"),
                endpoint: Some(e),
                calls: &spec.calls,
                parallel: spec.parallel,
                work: spec.work.or(s.work),
                fault: Some(&spec.fault),
            });
        }
    }
    Ok(out)
}

/// What a name in a call or a root resolves to.
pub(super) struct Names<'s> {
    nodes: HashMap<&'s str, ServiceId>,
    /// A service with endpoints: its endpoints' names.
    services: HashMap<&'s str, Vec<&'s str>>,
}

/// Why a name does not resolve.
pub(super) enum Miss {
    /// No such service or endpoint.
    Unknown,
    /// A service with endpoints and no `default`, named alone: the message.
    Ambiguous(String),
}

impl<'s> Names<'s> {
    pub(super) fn new(nodes: &'s [Node<'s>], entries: &'s [(String, ServiceSpec)]) -> Names<'s> {
        let mut services: HashMap<&str, Vec<&str>> = HashMap::new();
        for n in nodes {
            if let Some(e) = n.endpoint {
                services
                    .entry(entries[n.service].0.as_str())
                    .or_default()
                    .push(e);
            }
        }
        Names {
            nodes: nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.name.as_str(), i))
                .collect(),
            services,
        }
    }

    /// The node `name` means: a node by its name, or a service with
    /// endpoints by its `default` one.
    pub(super) fn get(&self, name: &str) -> Result<ServiceId, Miss> {
        if let Some(&id) = self.nodes.get(name) {
            return Ok(id);
        }
        let Some(endpoints) = self.services.get(name) else {
            return Err(Miss::Unknown);
        };
        if let Some(&id) = self
            .nodes
            .get(format!("{name}/{DEFAULT_ENDPOINT}").as_str())
        {
            return Ok(id);
        }
        let spelled: Vec<String> = endpoints.iter().map(|e| format!("{name}/{e}")).collect();
        Err(Miss::Ambiguous(format!(
            "\"{name}\" has endpoints ({}) and none is `default`: name one, e.g. {}",
            endpoints.join(", "),
            spelled.join(" or ")
        )))
    }

    /// Every name a call may use, for a did-you-mean.
    pub(super) fn all(&self) -> Vec<&'s str> {
        let mut v: Vec<&str> = self.nodes.keys().copied().collect();
        v.extend(self.services.keys().copied());
        v.sort_unstable();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::super::from_yaml;
    use crate::topology::Topology;

    /// SPEC section 11's example, as written there.
    const SPEC: &str = "name: mesh
load:
  entries:
    - { entry: web, rps: 100 }
    - { entry: travel/search, rps: 20, arrival: poisson }
policy: { preset: ownership, lb: round-robin, retry_other_host: true }
services:
  web: { calls: [travel/trip] }
  travel:
    replicas: 3
    workers: 4
    endpoints:
      trip:   { calls: [seat/left, { to: route, p: 0.5 }] }
      search: { parallel: true, calls: [route, seat/left], work: 2ms }
    fault: { error_rate: 1.0, replicas: [0], endpoint: trip }
  seat:
    endpoints:
      left:    {}
      reserve: { calls: [travel/trip] }
  route: {}
";

    fn ok(yaml: &str) -> Topology {
        from_yaml(yaml, "t.yaml").unwrap_or_else(|e| panic!("{e}"))
    }

    fn err(yaml: &str) -> String {
        match from_yaml(yaml, "t.yaml") {
            Ok(t) => panic!("accepted: {:?}", t.services),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_service_cycle_over_acyclic_endpoints_is_a_topology() {
        let t = ok(SPEC);
        let names: Vec<&str> = t.services.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "web",
                "travel/trip",
                "travel/search",
                "seat/left",
                "seat/reserve",
                "route"
            ]
        );
        let trip = &t.services[1];
        assert_eq!(
            (trip.group, trip.service_name(), trip.path().as_str()),
            (1, "travel", "/trip")
        );
        assert_eq!(t.services[2].group, 1);
        assert_eq!(t.group(2).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(t.group(0).collect::<Vec<_>>(), [0]);
        // Shared keys reach every endpoint; work is each endpoint's own.
        assert!(t.services[1..3]
            .iter()
            .all(|s| s.replicas == 3 && s.workers == Some(4)));
        assert_eq!(t.services[2].work, std::time::Duration::from_millis(2));
        assert!(t.services[2].parallel && !t.services[1].parallel);
        // The service's fault is narrowed to trip.
        assert!(t.services[1].fault_in_force().is_active());
        assert!(!t.services[2].fault_in_force().is_active());
        // A bare name is a service; roots and calls name endpoints.
        assert_eq!(t.service_id("travel"), Some(1));
        assert_eq!(t.service_id("travel/search"), Some(2));
        assert_eq!(t.load.roots[1].entry, 2);
        // Expected baselines per root request (100 + 20 rps): route gets
        // 0.5 of web's and all of search's.
        let route = &t.services[5];
        assert!((route.multiplicity - (100.0 * 0.5 + 20.0) / 120.0).abs() < 1e-9);
        assert!((t.services[3].multiplicity - 1.0).abs() < 1e-9);
        assert_eq!(t.services[4].multiplicity, 0.0);
    }

    #[test]
    fn a_default_endpoint_answers_the_bare_name() {
        let t = ok("name: t\nload: { entry: A }\nservices:\n  A: { calls: [B] }\n  B:\n    endpoints:\n      default: {}\n      other: {}\n");
        assert_eq!(t.services[0].calls.len(), 1);
        assert_eq!(t.edges[0].to, t.service_id("B/default").unwrap());
    }

    #[test]
    fn an_endpoint_cycle_is_spelled_out() {
        let e = err("name: t\nservices:\n  travel:\n    endpoints:\n      trip: { calls: [seat/reserve] }\n  seat:\n    endpoints:\n      reserve: { calls: [travel/trip] }\n");
        assert!(
            e.contains("travel/trip -> seat/reserve -> travel/trip"),
            "{e}"
        );
        assert!(e.starts_with("t.yaml:3:3:"), "{e}");
    }

    #[test]
    fn endpoint_mistakes_say_where_and_what() {
        let base = "name: t\nservices:\n  A: { calls: [X] }\n  B:\n    endpoints:\n      left: {}\n      right: {}\n";
        let m = err(&base.replace("[X]", "[B]"));
        assert!(m.contains("\"B\" has endpoints (left, right) and none is `default`: name one, e.g. B/left or B/right"), "{m}");
        let m = err(&base.replace("[X]", "[B/middle]"));
        assert!(
            m.contains("calls \"B/middle\", which is not in the topology"),
            "{m}"
        );
        assert!(m.starts_with("t.yaml:3:"), "{m}");
        let m = err("name: t\nservices:\n  A:\n    calls: [B]\n    endpoints: { x: {} }\n  B:\n");
        assert!(
            m.contains("services.A.calls: \"A\" declares endpoints, so its calls"),
            "{m}"
        );
        let m = err("name: t\nservices:\n  A:\n    endpoints: { \"a/b\": {} }\n");
        assert!(
            m.contains("services.A.endpoints.a/b: an endpoint's name is a path on the wire"),
            "{m}"
        );
        let m = err("name: t\nservices:\n  A:\n    endpoints: {}\n");
        assert!(m.contains("services.A.endpoints is empty"), "{m}");
        let m = err("name: t\nservices:\n  A:\n    endpoints: { x: {} }\n    fault: { error_rate: 1, endpoint: y }\n");
        assert!(
            m.contains(
                "fault.endpoint names \"y\", which is not an endpoint of \"A\" (its endpoints: x)"
            ),
            "{m}"
        );
        let m = err("name: t\nservices:\n  A:\n    fault: { error_rate: 1, endpoint: y }\n");
        assert!(m.contains("\"A\" declares no endpoints"), "{m}");
        let m = err("name: t\nservices:\n  A:\n    endpoints: { x: { fault: { down: true } } }\n");
        assert!(m.contains("put it on services.A.fault"), "{m}");
        let m = err("name: t\nservices:\n  A:\n    endpoints: { x: { fault: { error_rate: 1, replicas: [2] } } }\n");
        assert!(
            m.contains("names replica 2, but \"A\" has 1 replica"),
            "{m}"
        );
        let m =
            err("name: t\nload: { entry: B }\nservices:\n  B:\n    endpoints: { l: {}, r: {} }\n");
        assert!(m.contains("load.entry: \"B\" has endpoints (l, r)"), "{m}");
    }

    #[test]
    fn an_endpoint_fault_stands_unless_the_services_is_on_it() {
        let t = ok("name: t\nload: { entry: A/x }\nservices:\n  A:\n    endpoints:\n      x: { calls: [A/y], fault: { latency: 5ms } }\n      y: {}\n");
        let x = &t.services[0];
        assert_eq!(
            x.fault_in_force().latency,
            std::time::Duration::from_millis(5)
        );
        assert!(!t.services[1].fault_in_force().is_active());
    }
}
