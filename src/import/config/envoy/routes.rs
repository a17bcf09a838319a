//! Envoy routes: the virtual hosts of each RouteConfiguration, the route
//! the lab's requests (`GET /`, no special headers) take, and its
//! `retry_policy` (else its virtual host's) in the lab's policy words.

use std::collections::BTreeSet;

use serde_json::{Map, Value};
use serde_yaml::{Mapping, Value as Yaml};

use super::{arr, cluster_host, obj, Reader, MAX_RETRIES};
use crate::import::config::docs::{self, num};
use crate::import::config::{n, onto, policy, s, BadInput, Rule, Source};

/// Envoy's back-off base when `retry_back_off` is absent.
const BASE_INTERVAL_MS: u64 = 25;
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
        if !out.iter().any(|o| onto::names(o, h)) {
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

/// The rules of a RouteConfiguration's virtual hosts, and the clusters
/// their taken routes send to.
pub(super) fn route_config(
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
    let on = conditions(r, rp, what, &words);
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

/// The lab's conditions for the words of a `retry_on`, with a note for
/// each it does not map.
fn conditions(
    r: &mut Reader<'_>,
    rp: &Map<String, Value>,
    what: &str,
    words: &[&str],
) -> Vec<Yaml> {
    let mut on: Vec<Yaml> = vec![];
    for w in words {
        match *w {
            w if LAB_WORDS.contains(&w) => on.push(s(w)),
            "retriable-status-codes" => on.extend(status_codes(r, rp, what)),
            "retriable-headers" => on.extend(headers(r, rp, what)),
            other => {
                let at = r.at(rp, "retry_on");
                r.note(at, format!("{what}.retry_on: `{other}` is not mapped (the lab knows no such condition)"));
            }
        }
    }
    on
}

/// `retriable-status-codes` with the codes `retriable_status_codes`
/// lists; none when it lists none.
fn status_codes(r: &mut Reader<'_>, rp: &Map<String, Value>, what: &str) -> Option<Yaml> {
    let mut codes = vec![];
    for c in arr(rp.get("retriable_status_codes")) {
        match num(Some(c)).filter(|x| x.fract() == 0.0 && (100.0..=599.0).contains(x)) {
            Some(x) => codes.push(n(x)),
            None => {
                let at = r.at(rp, "retriable_status_codes");
                r.note(
                    at,
                    format!("{what}.retriable_status_codes: {c} is no HTTP status, left out"),
                );
            }
        }
    }
    if codes.is_empty() {
        let at = r.at(rp, "retry_on");
        r.note(
            at,
            format!(
                "{what}: retry_on names retriable-status-codes but lists no retriable_status_codes"
            ),
        );
        return None;
    }
    Some(Yaml::Mapping(policy([(
        "retriable-status-codes",
        Yaml::Sequence(codes),
    )])))
}

/// `retriable-headers` with the exact matches `retriable_headers` lists;
/// none when it lists none.
fn headers(r: &mut Reader<'_>, rp: &Map<String, Value>, what: &str) -> Option<Yaml> {
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
                r.note(
                    at,
                    format!(
                        "{what}.retriable_headers: {h} is not an exact match on a name, not mapped"
                    ),
                );
            }
        }
    }
    if rules.is_empty() {
        let at = r.at(rp, "retry_on");
        r.note(
            at,
            format!("{what}: retry_on names retriable-headers but no retriable_headers map"),
        );
        return None;
    }
    Some(Yaml::Mapping(policy([(
        "retriable-headers",
        Yaml::Sequence(rules),
    )])))
}
