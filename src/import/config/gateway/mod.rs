//! Gateway API: HTTPRoute `rules[].retry` (GEP-1731) with the rule's
//! `timeouts`, and the retry budget of a BackendTrafficPolicy (GEP-3388,
//! `retryConstraint`).
//!
//! What the specification says where the files are silent: a rule with no
//! `retry` is not retried (Gateway API has no implicit retries, though an
//! implementation may add its own: Istio's mesh default, for one); a
//! `retry` with no `attempts` retries an implementation-specific number of
//! times, so the lab keeps the topology's R. `attempts` counts RETRIES,
//! "in addition to the initial request" (GEP-1731's `HTTPRouteRetry`), so
//! attempts 2 is three tries in the lab's R; an explicit 0 turns retries
//! off. A `retry` stanza SHOULD also retry a connection that could not be
//! established, so `connect-failure` joins the codes; a try that reaches
//! `timeouts.backendRequest` SHOULD be retried, so `timeout` joins them
//! when one is set.
//!
//! Routing: a route whose `parentRefs` name a Service (GAMMA) governs the
//! calls to that Service; a route attached only to a Gateway governs
//! ingress, no call between the mesh's services. Of a route's rules the
//! lab's requests (`GET /`, no headers, no query) take the most specific
//! one they satisfy (an `Exact` path before a prefix, then a method
//! match; the first on a tie), as Gateway API's precedence orders them.

use std::time::Duration;

use serde_yaml::{Mapping, Value};

use super::docs::{self, Doc};
use super::{n, policy, s, BadInput, File, Note, Read, Source};

mod takes;
pub(super) use takes::{regex_matches_slash, taker};

/// The lab's largest R (`attempts` up to 100, the first included).
const MAX_RETRIES: u64 = 99;

/// Reads one file of Gateway API objects.
pub fn read(f: &File, out: &mut Read) -> Result<(), BadInput> {
    let docs = docs::documents(f)?;
    for d in &docs {
        match d.kind() {
            "HTTPRoute" => http_route(d, out)?,
            "GRPCRoute" => out.notes.push(Note {
                source: Source::new(d.file, d.line_of("kind", 0)),
                text: format!(
                    "GRPCRoute {}: not taken: the lab's requests are HTTP GETs, not gRPC",
                    d.name()
                ),
            }),
            "BackendTrafficPolicy" | "XBackendTrafficPolicy" => backend_traffic_policy(d, out)?,
            _ => d.not_read(
                &mut out.skipped,
                "a Kubernetes object",
                "gateway-api reads HTTPRoutes and BackendTrafficPolicies",
            )?,
        }
    }
    // A call no route or profile governs is not retried: the mesh
    // retries only what its configuration asks for.
    out.default = Some((
        super::policy([("preset", super::s("none"))]),
        "Gateway API's default: no retries (no HTTPRoute rule sets `retry`)".to_string(),
    ));
    Ok(())
}

pub(super) fn show(v: &Value) -> String {
    serde_yaml::to_string(v).map_or_else(|_| "?".into(), |s| s.trim().to_string())
}

/// A duration as Gateway API writes it (GEP-2257: `^([0-9]{1,5}(h|m|s|ms)){1,4}$`,
/// `1h30m`, `250ms`, `10s`).
pub(super) fn gep2257(v: &str) -> Option<Duration> {
    let mut rest = v;
    let mut total = Duration::ZERO;
    let mut parts = 0;
    while !rest.is_empty() {
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits == 0 || digits > 5 {
            return None;
        }
        let x: u64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let (unit, len) = if rest.starts_with("ms") {
            (Duration::from_millis(1), 2)
        } else if rest.starts_with('h') {
            (Duration::from_secs(3600), 1)
        } else if rest.starts_with('m') {
            (Duration::from_secs(60), 1)
        } else if rest.starts_with('s') {
            (Duration::from_secs(1), 1)
        } else {
            return None;
        };
        rest = &rest[len..];
        total += unit * u32::try_from(x).ok()?;
        parts += 1;
    }
    (1..=4).contains(&parts).then_some(total)
}

/// The file lines at which the items of the list under `key:` (its first
/// occurrence in the document) start.
pub(super) fn item_lines(d: &Doc<'_>, key: &str) -> Vec<usize> {
    let at = d.line_of(key, 0);
    let idx = at - d.start;
    let Some(head) = d.lines.get(idx) else {
        return vec![];
    };
    let t = head.trim_start();
    if !(t.starts_with(&format!("{key}:")) || t.starts_with(&format!("- {key}:"))) {
        return vec![];
    }
    let key_col = head.len() - t.trim_start_matches("- ").len();
    let mut col = None;
    let mut out = vec![];
    for (i, l) in d.lines.iter().enumerate().skip(idx + 1) {
        let body = l.trim_start();
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        let indent = l.len() - body.len();
        match col {
            None if body.starts_with("- ") || body == "-" => {
                col = Some(indent);
                out.push(d.start + i);
            }
            None => return out,
            Some(c) if indent == c && (body.starts_with("- ") || body == "-") => {
                out.push(d.start + i);
            }
            Some(c) if indent <= c && (indent < c || indent <= key_col) => return out,
            Some(_) => {}
        }
    }
    out
}

/// The file line of the first line in `[from, to)` holding `key:`; `from`
/// when none does.
pub(super) fn line_in(d: &Doc<'_>, from: usize, to: usize, key: &str) -> usize {
    let at = d.line_after(from, key);
    if at < to {
        at
    } else {
        from
    }
}

/// The Services and the Gateways a route's `parentRefs` attach it to, as
/// hosts (`name` or `name.namespace`).
pub(super) fn parents(d: &Doc<'_>, spec: &Mapping) -> (Vec<String>, Vec<String>) {
    let mut services = vec![];
    let mut gateways = vec![];
    for p in spec
        .get("parentRefs")
        .and_then(Value::as_sequence)
        .into_iter()
        .flatten()
    {
        let Some(name) = p.get("name").and_then(Value::as_str) else {
            continue;
        };
        let kind = p.get("kind").and_then(Value::as_str).unwrap_or("Gateway");
        let group = p.get("group").and_then(Value::as_str).unwrap_or("");
        let ns = p
            .get("namespace")
            .and_then(Value::as_str)
            .or_else(|| d.namespace());
        let host = match ns {
            Some(ns) => format!("{name}.{ns}"),
            None => name.to_string(),
        };
        if kind == "Service" && (group.is_empty() || group == "core") {
            services.push(host);
        } else {
            gateways.push(format!("{kind} {name}"));
        }
    }
    (services, gateways)
}

fn http_route(d: &Doc<'_>, out: &mut Read) -> Result<(), BadInput> {
    let spec = d.spec()?;
    let name = d.name();
    let (services, gateways) = parents(d, spec);
    let at_parents = d.line_of("parentRefs", 0);
    if services.is_empty() {
        let text = if gateways.is_empty() {
            format!(
                "HTTPRoute {name}: no parentRefs names a Service, so it governs no call between the mesh's services"
            )
        } else {
            format!(
                "HTTPRoute {name} is attached only to {}: it governs ingress, no call between the mesh's services",
                gateways.join(", ")
            )
        };
        out.notes.push(Note {
            source: Source::new(d.file, at_parents),
            text,
        });
        return Ok(());
    }
    if !gateways.is_empty() {
        out.notes.push(Note {
            source: Source::new(d.file, at_parents),
            text: format!(
                "HTTPRoute {name} is also attached to {}: that ingress is not in the graph and is not mapped",
                gateways.join(", ")
            ),
        });
    }
    let rules = spec
        .get("rules")
        .and_then(Value::as_sequence)
        .cloned()
        .unwrap_or_default();
    let starts = item_lines(d, "rules");
    let end = d.start + d.lines.len();
    let mut best: Option<(usize, u32)> = None;
    let mut taken = vec![];
    let mut policies = vec![];
    for (i, rule) in rules.iter().enumerate() {
        let from = starts
            .get(i)
            .copied()
            .unwrap_or_else(|| d.line_of("rules", 0));
        let to = starts.get(i + 1).copied().unwrap_or(end);
        let what = format!("HTTPRoute {name} rules[{i}]");
        // Every rule's values are checked, taken or not.
        policies.push(rule_policy(d, rule, from, to, &what, out)?);
        match taker(rule) {
            Ok(rank) => {
                taken.push(i);
                if best.is_none_or(|(_, b)| rank > b) {
                    best = Some((i, rank));
                }
            }
            Err(why) => out.notes.push(Note {
                source: Source::new(d.file, policies[i].1),
                text: format!("{what}: not taken: {why}"),
            }),
        }
    }
    let Some((chosen, _)) = best else {
        if rules.is_empty() {
            out.notes.push(Note {
                source: Source::new(d.file, d.line_of("spec", 0)),
                text: format!("HTTPRoute {name}: no rules"),
            });
        }
        return Ok(());
    };
    for i in taken.into_iter().filter(|&i| i != chosen) {
        out.notes.push(Note {
            source: Source::new(d.file, policies[i].1),
            text: format!(
                "HTTPRoute {name} rules[{i}]: never reached (rules[{chosen}] takes the lab's requests first by Gateway API's precedence)"
            ),
        });
    }
    let (p, line, what) = policies.swap_remove(chosen);
    out.rule_for_each(services, &p, &Source::new(d.file, line), &what);
    Ok(())
}

/// A rule's policy, the line that set its retries, and what set it.
fn rule_policy(
    d: &Doc<'_>,
    rule: &Value,
    from: usize,
    to: usize,
    what: &str,
    out: &mut Read,
) -> Result<(Mapping, usize, String), BadInput> {
    let dur = |v: &Value, key: &str, line: usize| -> Result<Duration, BadInput> {
        v.as_str().and_then(gep2257).ok_or_else(|| {
            BadInput::at(
                d.file,
                line,
                format!(
                    "{what}.{key}: a Gateway API duration (GEP-2257: digits and a unit h, m, s or ms, up to four parts, such as 100ms, 10s or 1m30s), got `{}`",
                    show(v)
                ),
            )
        })
    };
    let timeouts = rule.get("timeouts");
    let at_timeouts = line_in(d, from, to, "timeouts");
    let mut per_try = None;
    if let Some(t) = timeouts {
        if let Some(b) = t.get("backendRequest") {
            let line = line_in(d, at_timeouts, to, "backendRequest");
            per_try = Some(dur(b, "timeouts.backendRequest", line)?);
        }
        if let Some(r) = t.get("request") {
            let line = line_in(d, at_timeouts, to, "request");
            dur(r, "timeouts.request", line)?;
            out.notes.push(Note {
                source: Source::new(d.file, line),
                text: format!("{what}.timeouts.request: the request's overall timeout is not mapped (the lab's deadline is the root's `load.timeout`)"),
            });
        }
    }
    let Some(r) = rule.get("retry") else {
        let mut p = policy([("attempts", n(1.0))]);
        if let Some(t) = per_try {
            p.insert("timeout".into(), docs::lab_duration(t));
        }
        return Ok((
            p,
            from,
            format!("{what} (no retry: Gateway API sets none; an implementation may add its own)"),
        ));
    };
    let line = line_in(d, from, to, "retry");
    let mut p = policy([("preset", s("gateway-api"))]);
    match r.get("attempts") {
        None => out.notes.push(Note {
            source: Source::new(d.file, line),
            text: format!("{what}.retry: no `attempts`: the number of retries is implementation-specific (GEP-1731); the lab keeps the topology's R"),
        }),
        Some(v) => {
            let a = v.as_u64().filter(|&a| a <= MAX_RETRIES).ok_or_else(|| {
                BadInput::at(
                    d.file,
                    line_in(d, line, to, "attempts"),
                    format!(
                        "{what}.retry.attempts: a number of retries from 0 to {MAX_RETRIES}, got {}",
                        show(v)
                    ),
                )
            })?;
            if a == 0 {
                // GEP-1731: an explicit zero MUST disable retries.
                return Ok((
                    policy([("attempts", n(1.0))]),
                    line,
                    format!("{what}.retry (attempts 0: retries off)"),
                ));
            }
            // `attempts` counts retries after the first try.
            p.insert("attempts".into(), n((a + 1) as f64));
        }
    }
    let mut on: Vec<Value> = vec![];
    if let Some(codes) = r.get("codes") {
        let at = line_in(d, line, to, "codes");
        let list = codes.as_sequence().ok_or_else(|| {
            BadInput::at(
                d.file,
                at,
                format!(
                    "{what}.retry.codes: a list of status codes, got {}",
                    show(codes)
                ),
            )
        })?;
        for c in list {
            let code = c
                .as_u64()
                .filter(|c| (400..=599).contains(c))
                .ok_or_else(|| {
                    BadInput::at(
                        d.file,
                        at,
                        format!(
                            "{what}.retry.codes: a status code from 400 to 599, got {}",
                            show(c)
                        ),
                    )
                })?;
            on.push(n(code as f64));
        }
    }
    // GEP-1731: a retry stanza SHOULD retry a connection that could not be
    // established.
    on.push(s("connect-failure"));
    if let Some(t) = per_try {
        // A try that reaches `backendRequest` SHOULD be retried.
        on.push(s("timeout"));
        p.insert("timeout".into(), docs::lab_duration(t));
    }
    p.insert("retry_on".into(), Value::Sequence(on));
    if let Some(b) = r.get("backoff") {
        let at = line_in(d, line, to, "backoff");
        p.insert(
            "backoff".into(),
            docs::lab_duration(dur(b, "retry.backoff", at)?),
        );
    }
    Ok((p, line, format!("{what}.retry")))
}

/// A BackendTrafficPolicy's retry budget on the Services it targets.
fn backend_traffic_policy(d: &Doc<'_>, out: &mut Read) -> Result<(), BadInput> {
    let spec = d.spec()?;
    let name = d.name();
    let kind = d.kind();
    let envoy_gateway = d
        .value
        .get("apiVersion")
        .and_then(Value::as_str)
        .is_some_and(|v| v.starts_with("gateway.envoyproxy.io/"));
    let mut hosts = vec![];
    for t in spec
        .get("targetRefs")
        .and_then(Value::as_sequence)
        .into_iter()
        .flatten()
    {
        let tname = t.get("name").and_then(Value::as_str).unwrap_or("?");
        let tkind = t.get("kind").and_then(Value::as_str).unwrap_or("");
        if tkind == "Service" {
            hosts.push(match d.namespace() {
                Some(ns) => format!("{tname}.{ns}"),
                None => tname.to_string(),
            });
        } else {
            out.notes.push(Note {
                source: Source::new(d.file, d.line_of("targetRefs", 0)),
                text: format!(
                    "{kind} {name}: its target {tkind} {tname} is not a Service, so no call of the graph is matched to it"
                ),
            });
        }
    }
    if envoy_gateway && spec.get("retry").is_some() {
        out.notes.push(Note {
            source: Source::new(d.file, d.line_of("retry", 0)),
            text: format!(
                "{kind} {name}.retry: Envoy Gateway's own retry policy (numRetries, retryOn, perRetry) is not mapped; its Envoy config dump can be read with `chaoslab import envoy`"
            ),
        });
    }
    let Some(rc) = spec.get("retryConstraint") else {
        return Ok(());
    };
    let at = d.line_of("retryConstraint", 0);
    let end = d.start + d.lines.len();
    let dur = |v: Option<&Value>, key: &str, default: Duration| -> Result<Duration, BadInput> {
        match v {
            None => Ok(default),
            Some(v) => v.as_str().and_then(gep2257).ok_or_else(|| {
                BadInput::at(
                    d.file,
                    line_in(d, at, end, key.rsplit('.').next().unwrap_or(key)),
                    format!(
                        "{kind} {name} retryConstraint.{key}: a Gateway API duration (GEP-2257: digits and a unit h, m, s or ms, such as 10s or 1m), got `{}`",
                        show(v)
                    ),
                )
            }),
        }
    };
    // GEP-3388's defaults: budget {percent: 20, interval: 10s},
    // minRetryRate {count: 10, interval: 1s}.
    let budget = rc.get("budget");
    let percent = match budget.and_then(|b| b.get("percent")) {
        None => 20.0,
        Some(v) => v
            .as_f64()
            .filter(|p| (0.0..=100.0).contains(p))
            .ok_or_else(|| {
                BadInput::at(
                    d.file,
                    line_in(d, at, end, "percent"),
                    format!(
                        "{kind} {name} retryConstraint.budget.percent: a percentage from 0 to 100, got {}",
                        show(v)
                    ),
                )
            })?,
    };
    let interval = dur(
        budget.and_then(|b| b.get("interval")),
        "budget.interval",
        Duration::from_secs(10),
    )?;
    let rate = rc.get("minRetryRate");
    let count = match rate.and_then(|r| r.get("count")) {
        None => 10.0,
        Some(v) => v.as_f64().filter(|c| *c >= 0.0).ok_or_else(|| {
            BadInput::at(
                d.file,
                line_in(d, at, end, "count"),
                format!(
                    "{kind} {name} retryConstraint.minRetryRate.count: a number of retries, got {}",
                    show(v)
                ),
            )
        })?,
    };
    let rate_interval = dur(
        rate.and_then(|r| r.get("interval")),
        "minRetryRate.interval",
        Duration::from_secs(1),
    )?;
    if rate_interval.is_zero() {
        return Err(BadInput::at(
            d.file,
            at,
            format!("{kind} {name} retryConstraint.minRetryRate.interval: above 0"),
        ));
    }
    // Retries as a share of the requests of the last `interval` (GEP-3388,
    // Finagle's budget): the lab's window budget, B = percent / 100 with
    // deposits living `interval`, and the minimum rate as retries a second.
    let min_per_sec = (count / rate_interval.as_secs_f64() * 1000.0).round() / 1000.0;
    let p = policy([
        ("budget_model", s("window")),
        ("budget", n(percent / 100.0)),
        ("min_per_sec", n(min_per_sec)),
        ("ttl", docs::lab_duration(interval)),
    ]);
    let what = format!("{kind} {name} retryConstraint");
    out.rule_for_each(hosts, &p, &Source::new(d.file, at), &what);
    Ok(())
}
