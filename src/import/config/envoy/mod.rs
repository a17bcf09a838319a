//! Envoy: an admin `/config_dump` (or a bare RouteConfiguration): the
//! route `retry_policy` of each virtual host the lab's calls address, and
//! each cluster's circuit breakers and outlier detection.
//!
//! What Envoy does where the dump is silent (envoyproxy.io, router filter
//! `x-envoy-max-retries`, `config.route.v3.RetryPolicy`,
//! `config.cluster.v3.CircuitBreakers`, `config.cluster.v3.OutlierDetection`):
//! - a route with no `retry_policy` (and none on its virtual host) is not
//!   retried at all, unlike Istio's implicit default: attempts 1;
//! - a `retry_policy` without `num_retries` retries once; the route's
//!   policy replaces the virtual host's whole (no field is inherited);
//! - `retriable_status_codes` and `retriable_headers` are consulted only
//!   when `retry_on` names `retriable-status-codes` / `retriable-headers`;
//! - the back-off base is 25 ms (full jitter, capped at 10 × base);
//! - with no `retry_host_predicate` a retry goes wherever the load
//!   balancer picks, the host that just failed included: the lab's
//!   `retry_other_host: false` (Istio adds `previous_hosts` itself; Envoy
//!   does not);
//! - every cluster has a retry circuit breaker, `max_retries` 3 retries in
//!   flight, which a `retry_budget` (20%, at least 3) replaces;
//! - outlier detection: `consecutive_5xx` 5 (enforced 100%), gateway
//!   failures counted but not enforced (`enforcing_consecutive_gateway_failure`
//!   0), `interval` 10 s, `base_ejection_time` 30 s, `max_ejection_time`
//!   300 s, `max_ejection_percent` 10.
//!
//! The lab's requests carry no special headers and ask for `/`: of a
//! virtual host's routes they take the first with no header, query or
//! path condition (`prefix: "/"`); the rest are listed as not taken. A
//! dump whose bootstrap names its workload (`node.metadata.LABELS.app`) is
//! that proxy's: its rules govern that service's calls only.
//!
//! The reading is in three files: this one, the dump's sections and the
//! proxy's workload; `routes.rs`, the virtual hosts' routes and retry
//! policies; `clusters.rs`, the clusters' circuit breakers and outlier
//! detection. The JSON line-finding helpers are in `docs.rs`.

mod clusters;
mod routes;

use std::collections::BTreeSet;

use serde_json::{Map, Value};
use serde_yaml::Value as Yaml;

use super::docs::{self, proto_duration, Lines};
use super::{BadInput, File, Note, Read, Source};
use clusters::cluster;
use routes::route_config;

/// Envoy's default `max_retries` circuit breaker.
const MAX_RETRIES: f64 = 3.0;

fn obj(v: Option<&Value>) -> Option<&Map<String, Value>> {
    v.and_then(Value::as_object)
}

fn arr(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// One file's reading.
struct Reader<'a> {
    file: &'a str,
    lines: Lines<'a>,
    from: Option<String>,
    out: &'a mut Read,
}

impl Reader<'_> {
    fn at(&self, o: &Map<String, Value>, key: &str) -> Source {
        Source::new(self.file, self.lines.of(o, key))
    }

    fn note(&mut self, at: Source, text: String) {
        self.out.notes.push(Note { source: at, text });
    }

    fn bad(&self, o: &Map<String, Value>, key: &str, why: String) -> BadInput {
        BadInput::at(self.file, self.lines.of(o, key), why)
    }

    fn duration(
        &self,
        o: &Map<String, Value>,
        key: &str,
        what: &str,
    ) -> Result<Option<Yaml>, BadInput> {
        match o.get(key) {
            None => Ok(None),
            Some(v) => proto_duration(v)
                .map(|d| Some(docs::lab_duration(d)))
                .ok_or_else(|| {
                    self.bad(
                        o,
                        key,
                        format!("{what}.{key}: a duration such as \"0.25s\", got {v}"),
                    )
                }),
        }
    }
}

/// Reads one file: a config dump, one of its sections, or a bare
/// RouteConfiguration.
pub fn read(f: &File, out: &mut Read) -> Result<(), BadInput> {
    let root = docs::json(&f.name, &f.text, "JSON (an Envoy /config_dump)")?;
    let Some(top) = root.as_object() else {
        return Err(BadInput::at(
            &f.name,
            1,
            "not an Envoy config dump: the document is not a JSON object",
        ));
    };
    let mut routes: Vec<&Map<String, Value>> = vec![];
    let mut clusters: Vec<&Map<String, Value>> = vec![];
    let mut from = None;
    let mut sections: Vec<&Map<String, Value>> = vec![];
    if let Some(configs) = top.get("configs").and_then(Value::as_array) {
        for c in configs {
            let Some(c) = c.as_object() else { continue };
            let t = c
                .get("@type")
                .and_then(Value::as_str)
                .unwrap_or("(no @type)");
            let short = t.rsplit('/').next().unwrap_or(t);
            if short.ends_with(".RoutesConfigDump") || short.ends_with(".ClustersConfigDump") {
                sections.push(c);
            } else if short.ends_with(".RouteConfiguration") {
                routes.push(c);
            } else if short.ends_with(".Cluster") {
                clusters.push(c);
            } else if short.ends_with(".BootstrapConfigDump") {
                from = workload(c);
            } else {
                *out.skipped.entry(short.to_string()).or_default() += 1;
            }
        }
    } else if top.contains_key("virtual_hosts") {
        routes.push(top);
    } else if [
        "static_route_configs",
        "dynamic_route_configs",
        "static_clusters",
        "dynamic_active_clusters",
    ]
    .iter()
    .any(|k| top.contains_key(*k))
    {
        sections.push(top);
    } else {
        return Err(BadInput::at(
            &f.name,
            1,
            "not an Envoy config dump: no `configs`, `virtual_hosts`, route configs or clusters (envoy reads GET /config_dump)",
        ));
    }
    for s in sections {
        for k in ["static_route_configs", "dynamic_route_configs"] {
            routes.extend(
                arr(s.get(k))
                    .iter()
                    .filter_map(|r| obj(r.get("route_config"))),
            );
        }
        for k in ["static_clusters", "dynamic_active_clusters"] {
            clusters.extend(arr(s.get(k)).iter().filter_map(|c| obj(c.get("cluster"))));
        }
    }
    let mut r = Reader {
        file: &f.name,
        lines: Lines::new(&f.text, &root),
        from,
        out,
    };
    if let Some(app) = r.from.clone() {
        r.note(
            Source::new(&f.name, 1),
            format!("the dump is {app}'s proxy (its bootstrap's node.metadata.LABELS.app): its policies govern {app}'s calls only"),
        );
    }
    // Cluster names, for routes whose virtual host matches every domain.
    let cluster_names: Vec<&str> = clusters
        .iter()
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect();
    let mut used: BTreeSet<String> = BTreeSet::new();
    let mut rules = vec![];
    for rc in &routes {
        route_config(&mut r, rc, &cluster_names, &mut used, &mut rules)?;
    }
    let mut own = vec![];
    for c in &clusters {
        cluster(&mut r, c, &used, &mut own, &mut rules)?;
    }
    if !own.is_empty() {
        let at = Source::new(&f.name, 1);
        r.note(
            at,
            format!(
                "clusters of the proxy itself, not calls between services, not mapped: {}",
                own.join(", ")
            ),
        );
    }
    r.out.rules.extend(rules);
    Ok(())
}

/// The workload a bootstrap's node names (`node.metadata.LABELS.app`).
fn workload(c: &Map<String, Value>) -> Option<String> {
    let node = c.get("bootstrap")?.get("node")?;
    let labels = node.get("metadata")?.get("LABELS")?;
    labels
        .get("app")
        .or_else(|| labels.get("app.kubernetes.io/name"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The host a cluster's name calls: Istio's `outbound|9080|v1|reviews.default.svc.cluster.local`
/// gives the host and the subset; any other name is the host itself.
fn cluster_host(name: &str) -> Option<(String, String)> {
    let parts: Vec<&str> = name.split('|').collect();
    match parts.as_slice() {
        [dir, _port, subset, host] => {
            (*dir == "outbound").then(|| (host.to_string(), subset.to_string()))
        }
        _ => Some((name.to_string(), String::new())),
    }
}
