//! Envoy clusters: each cluster's retry circuit breaker (or retry
//! budget) and outlier detection, Envoy's defaults written out.

use std::collections::BTreeSet;

use serde_json::{Map, Value};
use serde_yaml::{Mapping, Value as Yaml};

use super::{arr, cluster_host, obj, Reader, MAX_RETRIES};
use crate::import::config::docs::{self, num, proto_duration};
use crate::import::config::{n, policy, s, BadInput, Rule};

/// The most retries in flight the lab's `min_retry_concurrency` takes.
const MAX_CONCURRENCY: f64 = 1_000_000.0;

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

/// A cluster's retry circuit breaker (or budget) and outlier detection.
pub(super) fn cluster(
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
