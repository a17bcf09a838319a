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

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};
use serde_yaml::{Mapping, Value as Yaml};

use super::docs::{self, json_line_of};
use super::{n, policy, s, BadInput, File, Note, Read, Rule, Source};

/// Envoy's back-off base when `retry_back_off` is absent.
const BASE_INTERVAL_MS: u64 = 25;
/// Envoy's default `max_retries` circuit breaker.
const MAX_RETRIES: f64 = 3.0;
/// The most retries in flight the lab's `min_retry_concurrency` takes.
const MAX_CONCURRENCY: f64 = 1_000_000.0;
/// The lab's most attempts.
const MAX_ATTEMPTS: u64 = 100;

/// `retry_on` words the lab's conditions know (docs/retriers.md).
const LAB_WORDS: [&str; 12] = [
    "5xx",
    "gateway-error",
    "reset",
    "connect-failure",
    "retriable-4xx",
    "envoy-ratelimited",
    "refused-stream",
    "cancelled",
    "unavailable",
    "deadline-exceeded",
    "internal",
    "resource-exhausted",
];

/// Clusters of the proxy itself (Istio's), not calls to a service.
const OWN_CLUSTERS: [&str; 8] = [
    "BlackHoleCluster",
    "PassthroughCluster",
    "InboundPassthroughCluster",
    "InboundPassthroughClusterIpv4",
    "InboundPassthroughClusterIpv6",
    "prometheus_stats",
    "agent",
    "sds-grpc",
];

/// The line of each key of a parsed JSON document: the keys are walked in
/// the text's order (serde_json keeps it), each counted with the equal
/// strings before it, so [`json_line_of`]'s `nth` finds its very line.
pub(super) struct Lines<'a> {
    text: &'a str,
    nth: HashMap<(usize, String), usize>,
}

impl<'a> Lines<'a> {
    /// Indexes `root`, parsed from `text`.
    pub fn new(text: &'a str, root: &Value) -> Lines<'a> {
        fn walk(
            v: &Value,
            counts: &mut HashMap<String, usize>,
            nth: &mut HashMap<(usize, String), usize>,
        ) {
            match v {
                Value::Object(m) => {
                    for (k, x) in m {
                        let c = counts.entry(k.clone()).or_default();
                        nth.insert((m as *const Map<String, Value> as usize, k.clone()), *c);
                        *c += 1;
                        walk(x, counts, nth);
                    }
                }
                Value::Array(a) => a.iter().for_each(|x| walk(x, counts, nth)),
                Value::String(s) => *counts.entry(s.clone()).or_default() += 1,
                _ => {}
            }
        }
        let mut nth = HashMap::new();
        walk(root, &mut HashMap::new(), &mut nth);
        Lines { text, nth }
    }

    /// The line of `key` in object `obj` (its first line's when absent).
    pub fn of(&self, obj: &Map<String, Value>, key: &str) -> usize {
        let k = (obj as *const Map<String, Value> as usize, key.to_string());
        match self.nth.get(&k) {
            Some(&i) => json_line_of(self.text, key, i),
            None => obj
                .keys()
                .next()
                .map_or(1, |first| self.of(obj, first).saturating_sub(1).max(1)),
        }
    }
}

/// A number: plain, in a string, or a wrapper's `{ "value": n }`.
pub(super) fn num(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(x) => x.as_f64(),
        Value::String(t) => t.trim().parse().ok(),
        Value::Object(o) => num(o.get("value")),
        _ => None,
    }
}

/// A protobuf Duration: `"0.025s"`, or `{ "seconds", "nanos" }`.
pub(super) fn proto_duration(v: &Value) -> Option<std::time::Duration> {
    match v {
        Value::String(t) => docs::duration(t),
        Value::Object(o) => {
            let secs =
                num(o.get("seconds")).unwrap_or(0.0) + num(o.get("nanos")).unwrap_or(0.0) / 1e9;
            (secs.is_finite() && secs >= 0.0).then(|| std::time::Duration::from_secs_f64(secs))
        }
        _ => None,
    }
}

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

/// The hosts a virtual host's `domains` name: ports dropped, addresses and
/// wildcards left out, one domain per service (`reviews`, `reviews.default`
/// and the FQDN are one).
fn hosts(domains: &[Value]) -> (Vec<String>, bool) {
    let mut out: Vec<String> = vec![];
    let mut any = false;
    for d in domains.iter().filter_map(Value::as_str) {
        if d == "*" {
            any = true;
            continue;
        }
        let h = match d.rsplit_once(':') {
            Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
            _ => d,
        };
        let h = h.trim_matches(|c| c == '[' || c == ']');
        if h.starts_with('*') || h.parse::<std::net::IpAddr>().is_ok() || h.is_empty() {
            continue;
        }
        if !out.iter().any(|o| super::onto::names(o, h)) {
            out.push(h.to_string());
        }
    }
    (out, any)
}

/// Whether the lab's requests (`GET /`, no special headers) take a route
/// with `match` `m`; why not when they don't.
fn taken(m: Option<&Map<String, Value>>) -> Result<(), String> {
    let Some(m) = m else { return Ok(()) };
    for (k, v) in m {
        match k.as_str() {
            "prefix" if matches!(v.as_str(), Some("/" | "")) => {}
            "safe_regex"
                if matches!(v.get("regex").and_then(Value::as_str), Some(".*" | "/.*")) => {}
            "headers" | "query_parameters" | "dynamic_metadata" if arr(Some(v)).is_empty() => {}
            "case_sensitive" => {}
            "prefix" | "path" | "safe_regex" | "path_separated_prefix" | "path_match_policy" => {
                return Err(format!(
                    "its match asks for a path ({k}: {v}) the lab's requests (`/`) do not take"
                ));
            }
            "headers" | "query_parameters" => {
                return Err(format!(
                    "its match asks for {k} the lab's requests do not carry"
                ));
            }
            "grpc" => return Err("its match takes gRPC requests only".into()),
            "runtime_fraction" => {
                return Err("its match takes a runtime fraction of the requests only".into())
            }
            other => {
                return Err(format!(
                    "its match asks for `{other}`, which the lab's requests do not satisfy"
                ))
            }
        }
    }
    Ok(())
}

fn route_config(
    r: &mut Reader<'_>,
    rc: &Map<String, Value>,
    cluster_names: &[&str],
    used: &mut BTreeSet<String>,
    rules: &mut Vec<Rule>,
) -> Result<(), BadInput> {
    let rc_name = rc
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("(unnamed)");
    for (i, vh) in arr(rc.get("virtual_hosts")).iter().enumerate() {
        let Some(vh) = vh.as_object() else { continue };
        let here = format!("route_config {rc_name} virtual_hosts[{i}]");
        let (mut hs, any) = hosts(arr(vh.get("domains")));
        if vh.contains_key("hedge_policy") {
            let at = r.at(vh, "hedge_policy");
            r.note(
                at,
                format!("{here}.hedge_policy: Envoy's hedging is not mapped"),
            );
        }
        let mut taken_by_all = false;
        for (j, route) in arr(vh.get("routes")).iter().enumerate() {
            let Some(route) = route.as_object() else {
                continue;
            };
            let action = obj(route.get("route"));
            let rp_route = action.and_then(|a| obj(a.get("retry_policy")));
            let at = match (action, rp_route) {
                (Some(a), Some(_)) => r.at(a, "retry_policy"),
                _ => r.at(route, "match"),
            };
            if taken_by_all {
                r.note(
                    at,
                    format!(
                        "{here} routes[{j}]: never reached (an earlier route takes every request)"
                    ),
                );
                continue;
            }
            if let Err(why) = taken(obj(route.get("match"))) {
                r.note(at, format!("{here} routes[{j}]: not taken: {why}"));
                continue;
            }
            taken_by_all = true;
            let Some(a) = action else {
                r.note(at, format!("{here} routes[{j}]: the route the lab's requests take answers them itself (no `route` action): no call"));
                continue;
            };
            // The clusters it sends to.
            let mut dests: Vec<String> = a
                .get("cluster")
                .and_then(Value::as_str)
                .map(str::to_string)
                .into_iter()
                .collect();
            dests.extend(
                arr(a.get("weighted_clusters").and_then(|w| w.get("clusters")))
                    .iter()
                    .filter_map(|c| c.get("name").and_then(Value::as_str))
                    .map(str::to_string),
            );
            used.extend(dests.iter().cloned());
            if any && hs.is_empty() {
                hs = dests
                    .iter()
                    .filter_map(|d| cluster_host(d))
                    .map(|(h, _)| h)
                    .collect();
            }
            if hs.is_empty() {
                r.note(at, format!("{here}: its domains name no service (only addresses or wildcards), not mapped"));
                continue;
            }
            if a.contains_key("timeout") {
                let t = r.at(a, "timeout");
                r.note(t, format!("{here} routes[{j}].route.timeout: the route's overall timeout is not mapped (the lab's deadline is the root's `load.timeout`)"));
            }
            if a.contains_key("hedge_policy") {
                let t = r.at(a, "hedge_policy");
                r.note(
                    t,
                    format!("{here} routes[{j}].route.hedge_policy: Envoy's hedging is not mapped"),
                );
            }
            let (p, source, what) = match (rp_route, obj(vh.get("retry_policy"))) {
                (Some(rp), _) => {
                    let what = format!("{here} routes[{j}].route.retry_policy");
                    let at = r.at(a, "retry_policy");
                    (retry_policy(r, rp, &what, &at)?, at, what)
                }
                (None, Some(rp)) => {
                    let what = format!("{here}.retry_policy (routes[{j}] sets none)");
                    let at = r.at(vh, "retry_policy");
                    (retry_policy(r, rp, &what, &at)?, at, what)
                }
                (None, None) => (
                    policy([("attempts", n(1.0))]),
                    at,
                    format!("{here} routes[{j}] (no retry_policy: Envoy does not retry)"),
                ),
            };
            let mut p = p;
            let missing: Vec<&String> = dests
                .iter()
                .filter(|d| !cluster_names.contains(&d.as_str()))
                .collect();
            if p.contains_key("preset") && !missing.is_empty() {
                // No cluster in the dump: Envoy's default retry circuit breaker.
                p.insert("budget_model".into(), s("concurrency"));
                p.insert("budget_percent".into(), n(0.0));
                p.insert("min_retry_concurrency".into(), n(MAX_RETRIES));
            }
            for h in &hs {
                rules.push(Rule {
                    host: h.clone(),
                    from: r.from.clone(),
                    policy: p.clone(),
                    source: source.clone(),
                    what: what.clone(),
                });
            }
        }
    }
    Ok(())
}

/// The lab's policy for a `retry_policy`.
fn retry_policy(
    r: &mut Reader<'_>,
    rp: &Map<String, Value>,
    what: &str,
    here: &Source,
) -> Result<Mapping, BadInput> {
    let retries = match rp.get("num_retries") {
        None => 1,
        Some(v) => num(Some(v))
            .filter(|x| x.fract() == 0.0 && *x >= 0.0)
            .map(|x| x as u64)
            .ok_or_else(|| {
                r.bad(
                    rp,
                    "num_retries",
                    format!("{what}.num_retries: a whole number of retries, got {v}"),
                )
            })?,
    };
    let mut attempts = retries + 1;
    if attempts > MAX_ATTEMPTS {
        let at = r.at(rp, "num_retries");
        r.note(
            at,
            format!("{what}.num_retries {retries}: the lab runs at most {MAX_ATTEMPTS} attempts"),
        );
        attempts = MAX_ATTEMPTS;
    }
    // Envoy answers x-envoy-overloaded with no retry: the envoy preset's signal.
    let mut p = policy([("preset", s("envoy")), ("attempts", n(attempts as f64))]);
    let on_text = match rp.get("retry_on") {
        None => String::new(),
        Some(v) => v
            .as_str()
            .ok_or_else(|| {
                r.bad(
                    rp,
                    "retry_on",
                    format!("{what}.retry_on: a comma-separated string, got {v}"),
                )
            })?
            .to_string(),
    };
    let words: Vec<&str> = on_text
        .split(',')
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .collect();
    if words.is_empty() {
        r.note(
            here.clone(),
            format!("{what}: no retry_on: Envoy retries on no condition"),
        );
    }
    let mut on: Vec<Yaml> = vec![];
    for w in &words {
        match *w {
            w if LAB_WORDS.contains(&w) => on.push(s(w)),
            "retriable-status-codes" => {
                let mut codes = vec![];
                for c in arr(rp.get("retriable_status_codes")) {
                    match num(Some(c)).filter(|x| x.fract() == 0.0 && (100.0..=599.0).contains(x)) {
                        Some(x) => codes.push(n(x)),
                        None => {
                            let at = r.at(rp, "retriable_status_codes");
                            r.note(at, format!("{what}.retriable_status_codes: {c} is no HTTP status, left out"));
                        }
                    }
                }
                if codes.is_empty() {
                    let at = r.at(rp, "retry_on");
                    r.note(at, format!("{what}: retry_on names retriable-status-codes but lists no retriable_status_codes"));
                } else {
                    on.push(Yaml::Mapping(policy([(
                        "retriable-status-codes",
                        Yaml::Sequence(codes),
                    )])));
                }
            }
            "retriable-headers" => {
                let mut rules = vec![];
                for h in arr(rp.get("retriable_headers")) {
                    let name = h.get("name").and_then(Value::as_str);
                    let exact = h
                        .get("string_match")
                        .and_then(|m| m.get("exact"))
                        .or_else(|| h.get("exact_match"))
                        .and_then(Value::as_str);
                    match (name, exact) {
                        (Some(name), Some(exact)) => rules.push(Yaml::Mapping(policy([
                            ("name", s(name)),
                            ("exact", s(exact)),
                        ]))),
                        _ => {
                            let at = r.at(rp, "retriable_headers");
                            r.note(at, format!("{what}.retriable_headers: {h} is not an exact match on a name, not mapped"));
                        }
                    }
                }
                if rules.is_empty() {
                    let at = r.at(rp, "retry_on");
                    r.note(
                        at,
                        format!(
                            "{what}: retry_on names retriable-headers but no retriable_headers map"
                        ),
                    );
                } else {
                    on.push(Yaml::Mapping(policy([(
                        "retriable-headers",
                        Yaml::Sequence(rules),
                    )])));
                }
            }
            other => {
                let at = r.at(rp, "retry_on");
                r.note(at, format!("{what}.retry_on: `{other}` is not mapped (the lab knows no such condition)"));
            }
        }
    }
    for (key, word) in [
        ("retriable_status_codes", "retriable-status-codes"),
        ("retriable_headers", "retriable-headers"),
    ] {
        if rp.contains_key(key) && !words.contains(&word) {
            let at = r.at(rp, key);
            r.note(at, format!("{what}.{key}: Envoy consults it only when retry_on names {word}, which it does not: not retried"));
        }
    }
    p.insert("retry_on".into(), Yaml::Sequence(on));
    if rp
        .get("retriable_request_headers")
        .is_some_and(|v| !arr(Some(v)).is_empty())
    {
        let at = r.at(rp, "retriable_request_headers");
        r.note(at, format!("{what}.retriable_request_headers: Envoy retries only requests carrying these headers, and the lab's carry none: attempts 1"));
        p.insert("attempts".into(), n(1.0));
    }
    if let Some(t) = r.duration(rp, "per_try_timeout", what)? {
        p.insert("timeout".into(), t);
    }
    let backoff = match obj(rp.get("retry_back_off")) {
        Some(b) => {
            if b.contains_key("max_interval") {
                let at = r.at(b, "max_interval");
                r.note(at, format!("{what}.retry_back_off.max_interval: not mapped (the lab's backoff is its base, full jitter)"));
            }
            r.duration(b, "base_interval", &format!("{what}.retry_back_off"))?
        }
        None => None,
    };
    p.insert(
        "backoff".into(),
        backoff.unwrap_or_else(|| {
            docs::lab_duration(std::time::Duration::from_millis(BASE_INTERVAL_MS))
        }),
    );
    let mut other_host = false;
    for pred in arr(rp.get("retry_host_predicate")) {
        let name = pred.get("name").and_then(Value::as_str).unwrap_or("");
        let t = pred
            .get("typed_config")
            .and_then(|t| t.get("@type"))
            .and_then(Value::as_str)
            .unwrap_or("");
        if name.ends_with("previous_hosts") || t.ends_with("PreviousHostsPredicate") {
            other_host = true;
        } else {
            let at = r.at(rp, "retry_host_predicate");
            r.note(
                at,
                format!(
                    "{what}.retry_host_predicate {name}: not mapped (the lab knows previous_hosts)"
                ),
            );
        }
    }
    p.insert("retry_other_host".into(), Yaml::Bool(other_host));
    for key in [
        "host_selection_retry_max_attempts",
        "retry_priority",
        "rate_limited_retry_back_off",
        "retry_options_predicates",
        "per_try_idle_timeout",
    ] {
        if rp.contains_key(key) {
            let at = r.at(rp, key);
            r.note(at, format!("{what}.{key}: not mapped"));
        }
    }
    Ok(p)
}

/// A cluster's retry circuit breaker (or budget) and outlier detection.
fn cluster(
    r: &mut Reader<'_>,
    c: &Map<String, Value>,
    used: &BTreeSet<String>,
    own: &mut Vec<String>,
    rules: &mut Vec<Rule>,
) -> Result<(), BadInput> {
    let name = c.get("name").and_then(Value::as_str).unwrap_or("");
    if name.is_empty() {
        return Err(BadInput::at(
            r.file,
            r.lines.of(c, "name"),
            "a cluster with no `name`",
        ));
    }
    let Some((host, subset)) =
        cluster_host(name).filter(|_| !OWN_CLUSTERS.contains(&name) && !name.ends_with("-grpc"))
    else {
        own.push(name.to_string());
        return Ok(());
    };
    let what = format!("cluster {name}");
    if !subset.is_empty() && !used.contains(name) {
        let at = r.at(c, "name");
        r.note(at, format!("{what}: subset {subset}, to which no route the lab's requests take sends, not mapped"));
        return Ok(());
    }
    let mut p = Mapping::new();
    let thresholds = arr(c
        .get("circuit_breakers")
        .and_then(|cb| cb.get("thresholds")));
    let default = thresholds.iter().enumerate().find(|(_, t)| {
        matches!(
            t.get("priority").and_then(Value::as_str),
            None | Some("DEFAULT")
        )
    });
    for (k, t) in thresholds.iter().enumerate() {
        let Some(t) = t.as_object() else { continue };
        if default.is_some_and(|(d, _)| d == k) {
            continue;
        }
        if t.contains_key("max_retries") || t.contains_key("retry_budget") {
            let at = r.at(t, "priority");
            r.note(at, format!("{what} circuit_breakers.thresholds[{k}]: not the DEFAULT priority the lab's requests have, not mapped"));
        }
    }
    let (source, mut set_by);
    match default.and_then(|(k, t)| Some((k, t.as_object()?))) {
        Some((k, t)) => {
            let max = match t.get("max_retries") {
                None => MAX_RETRIES,
                Some(v) => num(Some(v)).filter(|x| *x >= 0.0).ok_or_else(|| {
                    r.bad(t, "max_retries", format!("{what} circuit_breakers.thresholds[{k}].max_retries: a whole number, got {v}"))
                })?,
            };
            let mut at = r.at(
                t,
                if t.contains_key("max_retries") {
                    "max_retries"
                } else {
                    "priority"
                },
            );
            set_by = if t.contains_key("max_retries") {
                format!("{what} circuit_breakers.thresholds[{k}].max_retries")
            } else {
                format!("{what} circuit_breakers.thresholds[{k}] (no max_retries: Envoy's 3)")
            };
            let max = if max > MAX_CONCURRENCY {
                r.note(at.clone(), format!("{set_by}: {max} retries in flight is no limit; the lab's most is {MAX_CONCURRENCY}"));
                MAX_CONCURRENCY
            } else {
                max
            };
            let (mut pct, mut min) = (0.0, max);
            if let Some(b) = obj(t.get("retry_budget")) {
                pct = num(b.get("budget_percent")).unwrap_or(20.0);
                min = num(b.get("min_retry_concurrency")).unwrap_or(3.0);
                if t.contains_key("max_retries") {
                    let at = r.at(t, "retry_budget");
                    r.note(at, format!("{what} circuit_breakers.thresholds[{k}]: both max_retries and retry_budget; Envoy applies the retry budget and ignores max_retries, and so does the lab"));
                }
                at = r.at(t, "retry_budget");
                set_by = format!("{what} circuit_breakers.thresholds[{k}].retry_budget");
            }
            source = at;
            p.insert("budget_model".into(), s("concurrency"));
            p.insert("budget_percent".into(), n(pct));
            p.insert("min_retry_concurrency".into(), n(min.min(MAX_CONCURRENCY)));
        }
        None => {
            source = r.at(c, "name");
            set_by = format!("{what} (no circuit_breakers: Envoy's default max_retries 3)");
            p.insert("budget_model".into(), s("concurrency"));
            p.insert("budget_percent".into(), n(0.0));
            p.insert("min_retry_concurrency".into(), n(MAX_RETRIES));
        }
    }
    if let Some(od) = obj(c.get("outlier_detection")) {
        p.insert("outlier".into(), Yaml::Mapping(outlier(r, od, &what)?));
        set_by = format!(
            "{set_by}; {what} outlier_detection ({})",
            r.at(c, "outlier_detection")
        );
    }
    rules.push(Rule {
        host,
        from: r.from.clone(),
        policy: p,
        source,
        what: set_by,
    });
    Ok(())
}

/// `outlier_detection` in the lab's keys, Envoy's defaults written out.
fn outlier(r: &mut Reader<'_>, od: &Map<String, Value>, what: &str) -> Result<Mapping, BadInput> {
    let what = format!("{what} outlier_detection");
    let whole = |k: &str, default: f64| -> Result<f64, BadInput> {
        match od.get(k) {
            None => Ok(default),
            Some(v) => num(Some(v))
                .filter(|x| x.fract() == 0.0 && *x >= 0.0)
                .ok_or_else(|| r.bad(od, k, format!("{what}.{k}: a whole number, got {v}"))),
        }
    };
    let c5 = whole("consecutive_5xx", 5.0)?;
    let e5 = whole("enforcing_consecutive_5xx", 100.0)?;
    let cg = whole("consecutive_gateway_failure", 5.0)?;
    let eg = whole("enforcing_consecutive_gateway_failure", 0.0)?;
    let pct = whole("max_ejection_percent", 10.0)?;
    let es = whole("enforcing_success_rate", 100.0)?;
    let ms = |d: Option<Yaml>, default: u64| d.unwrap_or_else(|| s(format!("{default}ms")));
    let interval = ms(r.duration(od, "interval", &what)?, 10_000);
    let base = r.duration(od, "base_ejection_time", &what)?;
    let millis = |k: &str, default: u64| {
        od.get(k)
            .and_then(proto_duration)
            .map_or(default, |d| d.as_millis() as u64)
    };
    // Envoy: max_ejection_time (300 s) or the base, whichever is larger.
    r.duration(od, "max_ejection_time", &what)?;
    let max = millis("max_ejection_time", 300_000).max(millis("base_ejection_time", 30_000));
    let mut notes = vec![];
    for (k, e) in [
        ("enforcing_consecutive_5xx", e5),
        ("enforcing_consecutive_gateway_failure", eg),
    ] {
        if e != 0.0 && e != 100.0 {
            notes.push((
                k,
                format!("{what}.{k} {e}%: the lab ejects every time or never; taken as every time"),
            ));
        }
    }
    if es > 0.0 {
        notes.push((
            "outlier_detection",
            format!("{what}: success-rate ejection (enforcing_success_rate {es}%, Envoy's default, with 5 hosts or more) is not mapped"),
        ));
    }
    for k in [
        "enforcing_failure_percentage",
        "split_external_local_origin_errors",
        "max_ejection_time_jitter",
    ] {
        if od
            .get(k)
            .is_some_and(|v| v != &Value::Bool(false) && num(Some(v)) != Some(0.0))
        {
            notes.push((k, format!("{what}.{k}: not mapped")));
        }
    }
    for (k, text) in notes {
        let at = if k == "outlier_detection" {
            r.at(od, od.keys().next().map_or("interval", String::as_str))
        } else {
            r.at(od, k)
        };
        r.note(at, text);
    }
    let mut o = policy([
        ("consecutive_5xx", n(if e5 == 0.0 { 0.0 } else { c5 })),
        ("consecutive_gateway", n(if eg == 0.0 { 0.0 } else { cg })),
        ("interval", interval),
        ("base_ejection", ms(base, 30_000)),
        (
            "max_ejection",
            docs::lab_duration(std::time::Duration::from_millis(max)),
        ),
        ("max_ejection_percent", n(pct.min(100.0))),
    ]);
    if let Some(b) = od.get("always_eject_one_host").and_then(Value::as_bool) {
        o.insert("always_eject_one_host".into(), Yaml::Bool(b));
    }
    Ok(o)
}
