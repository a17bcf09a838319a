//! Istio: VirtualService `http[].retries` and DestinationRule traffic
//! policies (connection pool `maxRetries`, `retryBudget`,
//! `outlierDetection`, per subset too).
//!
//! What Istio does where the files are silent: a route with no `retries`
//! gets pilot's default (2 retries on connect-failure, refused-stream,
//! unavailable, cancelled and 503; the lab's `istio` preset), and so does
//! every call no VirtualService routes. `retries.attempts` counts retries
//! (attempts 1 is two tries); `attempts: 0` turns retries off. A route
//! is taken by the lab's requests when it has no match, or a match they
//! satisfy (any URI under `/`, or `sourceLabels` naming the caller's
//! `app`); routes after a catch-all are never reached.

use serde_yaml::{Mapping, Value};

use super::docs::{self, Doc};
use super::{n, policy, s, BadInput, File, Note, Read, Rule, Source};

/// The default retry policy Istio gives a route without `retries`.
pub const DEFAULT: &str = "Istio's default retry policy (no VirtualService sets retries: 2 retries on connect-failure,refused-stream,unavailable,cancelled,503)";

/// Reads one file of Istio objects.
pub fn read(f: &File, out: &mut Read) -> Result<(), BadInput> {
    let docs = docs::documents(f)?;
    let mut subsets: Vec<(String, String)> = vec![];
    let mut rules = vec![];
    for d in &docs {
        match d.kind() {
            "VirtualService" => virtual_service(d, out, &mut rules, &mut subsets)?,
            "DestinationRule" => {}
            _ => d.not_read(
                &mut out.skipped,
                "an Istio object",
                "istio reads VirtualServices and DestinationRules",
            )?,
        }
    }
    for d in docs.iter().filter(|d| d.kind() == "DestinationRule") {
        destination_rule(d, out, &mut rules, &subsets)?;
    }
    out.rules.extend(rules);
    out.default = Some((policy([("preset", s("istio"))]), DEFAULT.to_string()));
    Ok(())
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_sequence)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// Who takes route `m` (its `match` list): `Some(None)` every request,
/// `Some(Some(app))` the requests of one caller, `None` none of the lab's
/// (and why).
fn taker(route: &Value) -> Result<Option<String>, String> {
    let Some(matches) = route.get("match").and_then(Value::as_sequence) else {
        return Ok(None);
    };
    if matches.is_empty() {
        return Ok(None);
    }
    let mut why = String::new();
    for m in matches {
        let Some(m) = m.as_mapping() else { continue };
        let mut from = None;
        let mut ok = true;
        for (k, v) in m {
            match k.as_str().unwrap_or_default() {
                "uri" => {
                    let prefix = v.get("prefix").and_then(Value::as_str);
                    let regex = v.get("regex").and_then(Value::as_str);
                    if !(prefix == Some("/") || regex == Some(".*")) {
                        ok = false;
                        why = "its match asks for a URI the lab's requests do not carry".into();
                    }
                }
                "sourceLabels" => match v.get("app").and_then(Value::as_str) {
                    Some(app) if v.as_mapping().is_some_and(|l| l.len() == 1) => {
                        from = Some(app.to_string());
                    }
                    _ => {
                        ok = false;
                        why = "its match asks for source labels other than `app`".into();
                    }
                },
                "name" | "ignoreUriCase" => {}
                other => {
                    ok = false;
                    why = format!(
                        "its match asks for `{other}`, which the lab's requests do not carry"
                    );
                }
            }
        }
        if ok {
            return match from {
                Some(app) => Ok(Some(app)),
                None => Ok(None),
            };
        }
    }
    Err(why)
}

fn virtual_service(
    d: &Doc<'_>,
    out: &mut Read,
    rules: &mut Vec<Rule>,
    subsets: &mut Vec<(String, String)>,
) -> Result<(), BadInput> {
    let spec = d.spec()?;
    let name = d.name();
    let hosts = strings(spec.get("hosts"));
    if hosts.is_empty() {
        return Err(BadInput::at(
            d.file,
            d.line_of("spec", 0),
            format!("VirtualService {name}: no `hosts:`"),
        ));
    }
    let gateways = strings(spec.get("gateways"));
    if !gateways.is_empty() && !gateways.iter().any(|g| g == "mesh") {
        out.notes.push(Note {
            source: Source::new(d.file, d.line_of("gateways", 0)),
            text: format!(
                "VirtualService {name} binds only gateways ({}): it governs no call between the mesh's services",
                gateways.join(", ")
            ),
        });
        return Ok(());
    }
    let routes = spec
        .get("http")
        .and_then(Value::as_sequence)
        .cloned()
        .unwrap_or_default();
    let mut taken_by_all = false;
    let mut callers_taken: Vec<String> = vec![];
    let mut retries_seen = 0;
    for (i, route) in routes.iter().enumerate() {
        let route_line = d.line_of("route", i).max(d.start);
        let retries = route.get("retries");
        let line = if retries.is_some() {
            retries_seen += 1;
            d.line_of("retries", retries_seen - 1)
        } else {
            route_line
        };
        let at = Source::new(d.file, line);
        if taken_by_all {
            out.notes.push(Note {
                source: at,
                text: format!("VirtualService {name} http[{i}]: never reached (an earlier route takes every request)"),
            });
            continue;
        }
        let from = match taker(route) {
            Ok(f) => f,
            Err(why) => {
                out.notes.push(Note {
                    source: at,
                    text: format!("VirtualService {name} http[{i}]: not taken: {why}"),
                });
                continue;
            }
        };
        if let Some(app) = &from {
            if callers_taken.contains(app) {
                continue;
            }
            callers_taken.push(app.clone());
        } else {
            taken_by_all = true;
            // The subset every request of this route goes to, if one.
            let dests = route
                .get("route")
                .and_then(Value::as_sequence)
                .cloned()
                .unwrap_or_default();
            let sets: Vec<&str> = dests
                .iter()
                .filter_map(|r| {
                    r.get("destination")
                        .and_then(|x| x.get("subset"))
                        .and_then(Value::as_str)
                })
                .collect();
            if dests.len() == 1 && sets.len() == 1 {
                for h in &hosts {
                    subsets.push((h.clone(), sets[0].to_string()));
                }
            }
        }
        let p = retries_policy(d, retries, &at, &format!("VirtualService {name} http[{i}]"))?;
        let what = match retries {
            Some(_) => format!("VirtualService {name} http[{i}].retries"),
            None => format!("VirtualService {name} http[{i}] (no retries: Istio's default)"),
        };
        if route.get("timeout").is_some() {
            out.notes.push(Note {
                source: Source::new(d.file, d.line_after(route_line, "timeout")),
                text: format!("VirtualService {name} http[{i}].timeout: the route's overall timeout is not mapped (the lab's deadline is the root's `load.timeout`)"),
            });
        }
        for h in &hosts {
            rules.push(Rule {
                host: h.clone(),
                from: from.clone(),
                policy: p.clone(),
                source: at.clone(),
                what: what.clone(),
            });
        }
    }
    Ok(())
}

/// The lab's policy for a route's `retries` (Istio's default when absent).
fn retries_policy(
    d: &Doc<'_>,
    retries: Option<&Value>,
    at: &Source,
    what: &str,
) -> Result<Mapping, BadInput> {
    let Some(r) = retries else {
        return Ok(policy([("preset", s("istio"))]));
    };
    let attempts = match r.get("attempts") {
        None => 0,
        Some(v) => v.as_u64().filter(|&a| a <= 99).ok_or_else(|| {
            BadInput::at(
                d.file,
                at.line,
                format!(
                    "{what}.retries.attempts: a number of retries from 0 to 99, got {}",
                    show(v)
                ),
            )
        })?,
    };
    if attempts == 0 {
        // Istio: retries set with no attempts turns them off.
        return Ok(policy([("attempts", n(1.0))]));
    }
    let mut p = policy([
        ("preset", s("istio")),
        ("attempts", n((attempts + 1) as f64)),
    ]);
    if let Some(on) = r.get("retryOn") {
        let on = on.as_str().ok_or_else(|| {
            BadInput::at(
                d.file,
                at.line,
                format!(
                    "{what}.retries.retryOn: a comma-separated list, got {}",
                    show(on)
                ),
            )
        })?;
        // `retriable-status-codes` is Envoy's switch for the bare codes
        // beside it: the codes carry it in the lab's words.
        let tokens: Vec<Value> = on
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty() && *t != "retriable-status-codes")
            .map(|t| match t.parse::<u16>() {
                Ok(code) => n(f64::from(code)),
                Err(_) => s(t),
            })
            .collect();
        if tokens.is_empty() {
            return Err(BadInput::at(d.file, at.line, format!("{what}.retries.retryOn: `{on}` names no condition and no status: Envoy would retry nothing")));
        }
        p.insert("retry_on".into(), Value::Sequence(tokens));
    }
    if let Some(t) = r.get("perTryTimeout") {
        let d2 = t.as_str().and_then(docs::duration).ok_or_else(|| {
            BadInput::at(
                d.file,
                at.line,
                format!(
                    "{what}.retries.perTryTimeout: a duration such as 2s or 250ms, got {}",
                    show(t)
                ),
            )
        })?;
        p.insert("timeout".into(), docs::lab_duration(d2));
    }
    Ok(p)
}

fn show(v: &Value) -> String {
    serde_yaml::to_string(v).map_or_else(|_| "?".into(), |s| s.trim().to_string())
}

/// A DestinationRule's traffic policy, and a subset's where every request
/// to its host goes to that subset.
fn destination_rule(
    d: &Doc<'_>,
    out: &mut Read,
    rules: &mut Vec<Rule>,
    subsets: &[(String, String)],
) -> Result<(), BadInput> {
    let spec = d.spec()?;
    let name = d.name();
    let Some(host) = spec.get("host").and_then(Value::as_str) else {
        return Err(BadInput::at(
            d.file,
            d.line_of("spec", 0),
            format!("DestinationRule {name}: no `host:`"),
        ));
    };
    if let Some(tp) = spec.get("trafficPolicy") {
        let what = format!("DestinationRule {name} trafficPolicy");
        traffic_policy(d, tp, host, &what, 0, out, rules)?;
    }
    let chosen: Vec<&str> = subsets
        .iter()
        .filter(|(h, _)| super::onto::names(h, host))
        .map(|(_, s)| s.as_str())
        .collect();
    for (k, sub) in spec
        .get("subsets")
        .and_then(Value::as_sequence)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let sname = sub.get("name").and_then(Value::as_str).unwrap_or("?");
        let Some(tp) = sub.get("trafficPolicy") else {
            continue;
        };
        let what = format!("DestinationRule {name} subsets[{k}] ({sname}) trafficPolicy");
        if chosen.contains(&sname) {
            traffic_policy(d, tp, host, &what, 1 + k, out, rules)?;
        } else {
            out.notes.push(Note {
                source: Source::new(d.file, d.line_of("trafficPolicy", 1 + k)),
                text: format!("{what}: no route sends every request for {host} to subset {sname}, so the lab's calls never use it"),
            });
        }
    }
    Ok(())
}

fn traffic_policy(
    d: &Doc<'_>,
    tp: &Value,
    host: &str,
    what: &str,
    nth: usize,
    out: &mut Read,
    rules: &mut Vec<Rule>,
) -> Result<(), BadInput> {
    let at_tp = d.line_of("trafficPolicy", nth);
    let http = tp.get("connectionPool").and_then(|c| c.get("http"));
    let mut p = Mapping::new();
    let mut line = at_tp;
    if let Some(mr) = http.and_then(|h| h.get("maxRetries")) {
        let v = mr.as_u64().ok_or_else(|| {
            BadInput::at(
                d.file,
                d.line_after(at_tp, "maxRetries"),
                format!(
                    "{what}.connectionPool.http.maxRetries: a whole number, got {}",
                    show(mr)
                ),
            )
        })?;
        // Envoy's circuit breaker: at most N retries in flight.
        p.insert("budget_model".into(), s("concurrency"));
        p.insert("budget_percent".into(), n(0.0));
        p.insert("min_retry_concurrency".into(), n(v as f64));
        line = d.line_after(at_tp, "maxRetries");
    }
    if let Some(rb) = tp
        .get("retryBudget")
        .or_else(|| http.and_then(|h| h.get("retryBudget")))
    {
        let pct = rb
            .get("percent")
            .and_then(|v| v.get("value").or(Some(v)))
            .and_then(Value::as_f64)
            .unwrap_or(20.0);
        let min = rb
            .get("minRetryConcurrency")
            .and_then(Value::as_u64)
            .unwrap_or(3);
        if p.contains_key("budget_model") {
            out.notes.push(Note {
                source: Source::new(d.file, d.line_after(at_tp, "retryBudget")),
                text: format!("{what}: both maxRetries and retryBudget; Envoy applies the retry budget and ignores max_retries, and so does the lab"),
            });
        }
        p.insert("budget_model".into(), s("concurrency"));
        p.insert("budget_percent".into(), n(pct));
        p.insert("min_retry_concurrency".into(), n(min as f64));
        line = d.line_after(at_tp, "retryBudget");
    }
    if let Some(od) = tp.get("outlierDetection") {
        let at = d.line_after(at_tp, "outlierDetection");
        let mut o = Mapping::new();
        let num = |k: &str| od.get(k).and_then(Value::as_u64);
        let dur = |k: &str| -> Result<Option<Value>, BadInput> {
            match od.get(k) {
                None => Ok(None),
                Some(v) => v
                    .as_str()
                    .and_then(docs::duration)
                    .map(|x| Some(docs::lab_duration(x)))
                    .ok_or_else(|| {
                        BadInput::at(
                            d.file,
                            d.line_after(at, k),
                            format!(
                                "{what}.outlierDetection.{k}: a duration such as 10s, got {}",
                                show(v)
                            ),
                        )
                    }),
            }
        };
        if let Some(v) = num("consecutive5xxErrors").or_else(|| num("consecutiveErrors")) {
            o.insert("consecutive_5xx".into(), n(v as f64));
        }
        if let Some(v) = num("consecutiveGatewayErrors") {
            o.insert("consecutive_gateway".into(), n(v as f64));
        }
        if let Some(v) = dur("interval")? {
            o.insert("interval".into(), v);
        }
        if let Some(v) = dur("baseEjectionTime")? {
            o.insert("base_ejection".into(), v);
        }
        if let Some(v) = num("maxEjectionPercent") {
            o.insert("max_ejection_percent".into(), n(v as f64));
        }
        if od.get("minHealthPercent").is_some() {
            out.notes.push(Note {
                source: Source::new(d.file, d.line_after(at, "minHealthPercent")),
                text: format!("{what}.outlierDetection.minHealthPercent: not mapped (the lab ejects whatever the percentage allows)"),
            });
        }
        p.insert(
            "outlier".into(),
            if o.is_empty() {
                s("on")
            } else {
                Value::Mapping(o)
            },
        );
        if line == at_tp {
            line = at;
        }
    }
    if !p.is_empty() {
        rules.push(Rule {
            host: host.to_string(),
            from: None,
            policy: p,
            source: Source::new(d.file, line),
            what: what.to_string(),
        });
    }
    Ok(())
}
