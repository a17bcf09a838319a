//! Linkerd: the `retry.linkerd.io/*` annotations (2.16+) on a Service or
//! on an HTTPRoute whose parent is a Service, and ServiceProfiles
//! (`spec.retryBudget`, `routes[].isRetryable`).
//!
//! What Linkerd does where the files are silent (linkerd.io reference,
//! "Retries"; the policy controller's `parse_http_retry`): nothing is
//! retried unless configured, so there is no default policy; with any
//! retry annotation `retry.linkerd.io/limit` is 1 (and a limit of 0 is
//! read as unset, so 1 too); `retry.linkerd.io/http` takes codes, ranges
//! `500-504`, `gateway-error` (502 to 504 only: no connection errors, as
//! the proxy's balancer handles those before a response) and `5xx` (500
//! to 599); a try that outlives `retry.linkerd.io/timeout` is cancelled
//! and retried, so `timeout` joins the conditions when one is set.
//! Annotations on an HTTPRoute override all of its parent Service's.
//!
//! Where a ServiceProfile exists for a Service its retries are the only
//! ones: the annotations are ignored ([`profiles_win`]). A profile route
//! marked `isRetryable` retries 5xx answers (Linkerd's default response
//! classes) "until either the timeout is reached or the retry budget is
//! exceeded": no count per request, so the lab's largest R (100 attempts)
//! under the window budget of `retryBudget` (Finagle's, as Linkerd's is:
//! `retryRatio` 0.2, `minRetriesPerSecond` 10, `ttl` 10s by default).
//! Of a profile's routes the lab's requests (`GET /`) take the first
//! whose condition they satisfy.

use std::collections::BTreeSet;

use serde_yaml::{Mapping, Value};

use super::docs::{self, Doc};
use super::gateway::{self, item_lines, line_in, show};
use super::{n, policy, s, BadInput, File, Note, Read, Rule, Source};

/// The lab's largest R: a profile's retries are bounded by its budget only.
const BUDGET_ONLY_ATTEMPTS: f64 = 100.0;

/// The retries of `retry.linkerd.io/limit` the lab can run (R up to 100).
const MAX_LIMIT: u64 = 99;

/// `retry.linkerd.io/grpc`'s words, which are the lab's `retry_on` tokens.
const GRPC: [&str; 5] = [
    "cancelled",
    "deadline-exceeded",
    "internal",
    "resource-exhausted",
    "unavailable",
];

/// Reads one file of Kubernetes objects for Linkerd.
pub fn read(f: &File, out: &mut Read) -> Result<(), BadInput> {
    let docs = docs::documents(f)?;
    for d in &docs {
        match d.kind() {
            "Service" => {
                let host = host_of(d.name(), d.namespace());
                let what = format!("Service {}", d.name());
                if let Some((p, line)) = annotations(d, &what, out)? {
                    out.rules.push(Rule {
                        host,
                        from: None,
                        policy: p,
                        source: Source::new(d.file, line),
                        what: format!("{what} retry.linkerd.io annotations"),
                    });
                }
            }
            "HTTPRoute" => http_route(d, out)?,
            "GRPCRoute" => {
                let what = format!("GRPCRoute {}", d.name());
                if let Some((_, line)) = annotations(d, &what, out)? {
                    out.notes.push(Note {
                        source: Source::new(d.file, line),
                        text: format!(
                            "{what} retry.linkerd.io annotations: not taken: the lab's requests are HTTP GETs, not gRPC"
                        ),
                    });
                }
            }
            "ServiceProfile" => profile(d, out)?,
            _ => d.not_read(
                &mut out.skipped,
                "a Kubernetes object",
                "linkerd reads Services, HTTPRoutes and ServiceProfiles",
            )?,
        }
    }
    // A call no route or profile governs is not retried: the mesh
    // retries only what its configuration asks for.
    out.default = Some((super::policy([("preset", super::s("none"))]), "Linkerd's default: no retries (no retry.linkerd.io annotation or ServiceProfile route asks for them)".to_string()));
    Ok(())
}

fn host_of(name: &str, ns: Option<&str>) -> String {
    match ns {
        Some(ns) => format!("{name}.{ns}"),
        None => name.to_string(),
    }
}

/// Whether a rule was set by annotations, and by which kind of object.
fn annotated(r: &Rule) -> Option<&'static str> {
    if !r.what.ends_with(" retry.linkerd.io annotations") {
        None
    } else if r.what.starts_with("Service ") {
        Some("Service")
    } else {
        Some("HTTPRoute")
    }
}

/// Annotations are ignored where a ServiceProfile exists, as Linkerd does;
/// and an HTTPRoute's annotations override all of its parent Service's.
pub fn profiles_win(out: &mut Read) {
    let profiles: Vec<(String, Source)> = out
        .rules
        .iter()
        .filter(|r| r.what.starts_with("ServiceProfile "))
        .map(|r| (r.host.clone(), r.source.clone()))
        .collect();
    let routes: Vec<(String, String, Source)> = out
        .rules
        .iter()
        .filter(|r| annotated(r) == Some("HTTPRoute"))
        .map(|r| (r.host.clone(), r.what.clone(), r.source.clone()))
        .collect();
    let mut kept = vec![];
    for r in std::mem::take(&mut out.rules) {
        let Some(kind) = annotated(&r) else {
            kept.push(r);
            continue;
        };
        if let Some((host, at)) = profiles
            .iter()
            .find(|(h, _)| super::onto::names(h, &r.host))
        {
            out.notes.push(Note {
                source: r.source.clone(),
                text: format!(
                    "{}: ignored: ServiceProfile {host} ({at}) exists for this service, and Linkerd then takes its retries from the profile and ignores retry annotations",
                    r.what
                ),
            });
            continue;
        }
        if kind == "Service" {
            if let Some((_, what, at)) = routes
                .iter()
                .find(|(h, _, _)| super::onto::names(h, &r.host))
            {
                out.notes.push(Note {
                    source: r.source.clone(),
                    text: format!(
                        "{}: overridden by {what} ({at}): a route's retry annotations override all of its parent Service's",
                        r.what
                    ),
                });
                continue;
            }
        }
        kept.push(r);
    }
    out.rules = kept;
}

fn annotation<'a>(ann: &'a Mapping, key: &str) -> Option<&'a Value> {
    ann.get(key)
}

/// An annotation's value as text (numbers written bare are read too).
fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The policy a document's `retry.linkerd.io/*` annotations set, and the
/// line that set it; notes for `timeout.linkerd.io/*`.
fn annotations(
    d: &Doc<'_>,
    what: &str,
    out: &mut Read,
) -> Result<Option<(Mapping, usize)>, BadInput> {
    let Some(ann) = d
        .value
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_mapping)
    else {
        return Ok(None);
    };
    for (k, _) in ann {
        let Some(k) = k.as_str() else { continue };
        if k.starts_with("timeout.linkerd.io/") {
            out.notes.push(Note {
                source: Source::new(d.file, d.line_of(k, 0)),
                text: format!("{what} {k}: not mapped (a request's overall timeout; the lab's deadline is the root's `load.timeout`)"),
            });
        }
    }
    let keys = [
        "retry.linkerd.io/http",
        "retry.linkerd.io/grpc",
        "retry.linkerd.io/limit",
        "retry.linkerd.io/timeout",
    ];
    let Some(first) = keys.iter().find(|k| ann.contains_key(**k)) else {
        return Ok(None);
    };
    let line = d.line_of(first, 0);
    let limit = limit(d, ann, what, out)?;
    let timeout = timeout(d, ann, what)?;
    let codes = http_codes(d, ann, what)?;
    let grpc = grpc_codes(d, ann, what, out)?;
    let mut p = policy([("preset", s("linkerd"))]);
    p.insert("attempts".into(), n((limit + 1) as f64));
    let all_5xx = codes
        .as_ref()
        .is_some_and(|c| c.len() == 100 && c.first() == Some(&500));
    if codes.is_none() && grpc.is_empty() && timeout.is_none() {
        out.notes.push(Note {
            source: Source::new(d.file, line),
            text: format!("{what}: retry annotations with no `retry.linkerd.io/http`, `grpc` or `timeout`: no condition is set, and the lab retries nothing"),
        });
        return Ok(Some((policy([("attempts", n(1.0))]), line)));
    }
    if let Some(t) = timeout {
        p.insert("timeout".into(), docs::lab_duration(t));
    }
    if !(all_5xx && grpc.is_empty() && timeout.is_none()) {
        // The `linkerd` preset retries 500 to 599; anything else is spelled
        // out (the lab's `5xx` token would also retry resets).
        let mut on: Vec<Value> = codes
            .into_iter()
            .flatten()
            .map(|c| n(f64::from(c)))
            .collect();
        on.extend(grpc.iter().map(|w| s(*w)));
        if timeout.is_some() {
            on.push(s("timeout"));
        }
        p.insert("retry_on".into(), Value::Sequence(on));
    }
    Ok(Some((p, line)))
}

/// A bad annotation value, at its line.
fn bad(d: &Doc<'_>, key: &str, why: String) -> BadInput {
    BadInput::at(d.file, d.line_of(key, 0), why)
}

/// `retry.linkerd.io/limit`: the retries, 1 when unset (or 0, which
/// Linkerd's policy controller reads as unset), at most the lab's.
fn limit(d: &Doc<'_>, ann: &Mapping, what: &str, out: &mut Read) -> Result<u64, BadInput> {
    if let Some(v) = annotation(ann, "retry.linkerd.io/limit") {
        let key = "retry.linkerd.io/limit";
        let l = text(v).and_then(|t| t.parse::<u16>().ok()).ok_or_else(|| {
            bad(
                d,
                key,
                format!(
                    "{what} {key}: a number of retries such as \"2\", got {}",
                    show(v)
                ),
            )
        })?;
        return Ok(match u64::from(l) {
            0 => {
                out.notes.push(Note {
                    source: Source::new(d.file, d.line_of(key, 0)),
                    text: format!("{what} {key}: 0 is read as unset by Linkerd's policy controller, so 1 retry"),
                });
                1
            }
            l if l > MAX_LIMIT => {
                out.notes.push(Note {
                    source: Source::new(d.file, d.line_of(key, 0)),
                    text: format!(
                        "{what} {key}: {l} retries; the lab runs at most {MAX_LIMIT} (R 100)"
                    ),
                });
                MAX_LIMIT
            }
            l => l,
        });
    }
    Ok(1)
}

/// `retry.linkerd.io/timeout`: each try's timeout, a GEP-2257 duration
/// (none when zero or unset).
fn timeout(
    d: &Doc<'_>,
    ann: &Mapping,
    what: &str,
) -> Result<Option<std::time::Duration>, BadInput> {
    if let Some(v) = annotation(ann, "retry.linkerd.io/timeout") {
        let key = "retry.linkerd.io/timeout";
        let t = text(v)
            .and_then(|t| gateway::gep2257(&t).or_else(|| docs::duration(&t).filter(|_| t.ends_with(|c: char| c.is_ascii_alphabetic()))))
            .ok_or_else(|| {
                bad(
                    d,
                    key,
                    format!(
                        "{what} {key}: a duration with its unit, such as 5s or 200ms (GEP-2257; `5` is not one), got {}",
                        show(v)
                    ),
                )
            })?;
        return Ok(Some(t).filter(|t| !t.is_zero()));
    }
    Ok(None)
}

/// `retry.linkerd.io/http`: the statuses retried (statuses, ranges,
/// `gateway-error`, `5xx`), none when unset.
fn http_codes(d: &Doc<'_>, ann: &Mapping, what: &str) -> Result<Option<BTreeSet<u16>>, BadInput> {
    if let Some(v) = annotation(ann, "retry.linkerd.io/http") {
        let key = "retry.linkerd.io/http";
        let t = text(v).unwrap_or_default();
        let mut set = BTreeSet::new();
        for c in t.split(',').map(str::trim) {
            let code = |x: &str| x.parse::<u16>().ok().filter(|c| (100..600).contains(c));
            let range = if c.eq_ignore_ascii_case("5xx") {
                Some((500, 599))
            } else if c.eq_ignore_ascii_case("gateway-error") {
                Some((502, 504))
            } else if let Some(x) = code(c) {
                Some((x, x))
            } else if let Some((a, b)) = c.split_once('-') {
                code(a.trim()).zip(code(b.trim())).filter(|(a, b)| a <= b)
            } else {
                None
            };
            let (a, b) = range.ok_or_else(|| {
                bad(
                    d,
                    key,
                    format!(
                        "{what} {key}: `{c}` is not a status (504), a range (500-504), gateway-error or 5xx"
                    ),
                )
            })?;
            set.extend(a..=b);
        }
        return Ok(Some(set));
    }
    Ok(None)
}

/// `retry.linkerd.io/grpc`: the gRPC statuses retried.
fn grpc_codes(
    d: &Doc<'_>,
    ann: &Mapping,
    what: &str,
    out: &mut Read,
) -> Result<Vec<&'static str>, BadInput> {
    let mut grpc = vec![];
    if let Some(v) = annotation(ann, "retry.linkerd.io/grpc") {
        let key = "retry.linkerd.io/grpc";
        let t = text(v).unwrap_or_default();
        for c in t.split(',').map(str::trim) {
            let word = GRPC
                .iter()
                .find(|w| w.eq_ignore_ascii_case(c))
                .ok_or_else(|| {
                    bad(
                        d,
                        key,
                        format!("{what} {key}: `{c}` is not one of {}", GRPC.join(", ")),
                    )
                })?;
            grpc.push(*word);
        }
        if !what.starts_with("GRPCRoute ") {
            out.notes.push(Note {
            source: Source::new(d.file, d.line_of(key, 0)),
            text: format!("{what} {key}: mapped, but gRPC statuses never reach the lab's HTTP/1.1 calls, so they retry nothing there"),
        });
        }
    }
    Ok(grpc)
}

/// An HTTPRoute's annotations, on the calls to its parent Services when
/// the lab's requests take one of its rules.
fn http_route(d: &Doc<'_>, out: &mut Read) -> Result<(), BadInput> {
    let name = d.name();
    let what = format!("HTTPRoute {name}");
    let Some((p, line)) = annotations(d, &what, out)? else {
        return Ok(());
    };
    let spec = d.spec()?;
    let (services, _) = gateway::parents(d, spec);
    if services.is_empty() {
        out.notes.push(Note {
            source: Source::new(d.file, line),
            text: format!("{what} retry.linkerd.io annotations: no parentRefs names a Service, so they govern no call between the mesh's services"),
        });
        return Ok(());
    }
    let rules = spec
        .get("rules")
        .and_then(Value::as_sequence)
        .cloned()
        .unwrap_or_default();
    let why = rules
        .iter()
        .map(gateway::taker)
        .try_fold(String::new(), |_, t| match t {
            Ok(_) => Err(()),
            Err(w) => Ok(w),
        });
    if let Ok(why) = why {
        if !rules.is_empty() {
            out.notes.push(Note {
                source: Source::new(d.file, line),
                text: format!(
                    "{what} retry.linkerd.io annotations: not taken: no rule takes the lab's requests ({why})"
                ),
            });
            return Ok(());
        }
    }
    let what = format!("{what} retry.linkerd.io annotations");
    out.rule_for_each(services, &p, &Source::new(d.file, line), &what);
    Ok(())
}

/// Whether the lab's requests (`GET /`) satisfy a ServiceProfile route's
/// `condition`, or why the lab cannot tell.
fn condition(c: &Value) -> Result<bool, String> {
    let Some(m) = c.as_mapping() else {
        return Err(format!("a condition that is not a map: {}", show(c)));
    };
    let mut ok = true;
    for (k, v) in m {
        let holds = match k.as_str().unwrap_or_default() {
            "method" => v.as_str().is_some_and(|m| m.eq_ignore_ascii_case("GET")),
            "pathRegex" => {
                let re = v.as_str().unwrap_or_default();
                gateway::regex_matches_slash(re).ok_or_else(|| {
                    format!("the lab cannot tell whether pathRegex `{re}` matches /")
                })?
            }
            "all" => {
                let mut all = true;
                for x in v.as_sequence().into_iter().flatten() {
                    all &= condition(x)?;
                }
                all
            }
            "any" => {
                let mut any = false;
                for x in v.as_sequence().into_iter().flatten() {
                    any |= condition(x)?;
                }
                any
            }
            "not" => !condition(v)?,
            other => return Err(format!("a condition on `{other}`")),
        };
        ok &= holds;
    }
    Ok(ok)
}

fn profile(d: &Doc<'_>, out: &mut Read) -> Result<(), BadInput> {
    let spec = d.spec()?;
    let name = d.name();
    if name.is_empty() {
        return Err(BadInput::at(
            d.file,
            d.start,
            "ServiceProfile: no `metadata.name` (the service's FQDN, reviews.default.svc.cluster.local)",
        ));
    }
    let end = d.start + d.lines.len();
    let budget = spec.get("retryBudget");
    let at_budget = d.line_of("retryBudget", 0);
    let num = |key: &str, default: f64| -> Result<f64, BadInput> {
        match budget.and_then(|b| b.get(key)) {
            None => Ok(default),
            Some(v) => v
                .as_f64()
                .filter(|x| *x >= 0.0 && x.is_finite())
                .ok_or_else(|| {
                    BadInput::at(
                        d.file,
                        line_in(d, at_budget, end, key),
                        format!(
                        "ServiceProfile {name} retryBudget.{key}: a number of 0 or more, got {}",
                        show(v)
                    ),
                    )
                }),
        }
    };
    let ratio = num("retryRatio", 0.2)?;
    let min = num("minRetriesPerSecond", 10.0)?;
    let ttl = match budget.and_then(|b| b.get("ttl")) {
        None => std::time::Duration::from_secs(10),
        Some(v) => v
            .as_str()
            .and_then(docs::duration)
            .filter(|t| !t.is_zero())
            .ok_or_else(|| {
                BadInput::at(
                    d.file,
                    line_in(d, at_budget, end, "ttl"),
                    format!(
                        "ServiceProfile {name} retryBudget.ttl: a duration such as 10s, got {}",
                        show(v)
                    ),
                )
            })?,
    };
    let routes = spec
        .get("routes")
        .and_then(Value::as_sequence)
        .cloned()
        .unwrap_or_default();
    let chosen = route_taken(d, name, &routes, end, out);
    let (p, line, what) = match chosen {
        Some((i, from, to)) => {
            let r = &routes[i];
            let rname = r.get("name").and_then(Value::as_str).unwrap_or("?");
            let what = format!("ServiceProfile {name} routes[{i}] ({rname})");
            match r.get("isRetryable") {
                Some(Value::Bool(true)) => (
                    policy([
                        ("preset", s("linkerd")),
                        ("attempts", n(BUDGET_ONLY_ATTEMPTS)),
                        ("budget_model", s("window")),
                        ("budget", n(ratio)),
                        ("min_per_sec", n(min)),
                        ("ttl", docs::lab_duration(ttl)),
                    ]),
                    line_in(d, from, to, "isRetryable"),
                    format!(
                        "{what}: isRetryable, bounded by the retry budget only (R 100 under budget {ratio}, {min}/s, ttl {}s)",
                        ttl.as_secs_f64()
                    ),
                ),
                None | Some(Value::Bool(false)) => (
                    policy([("attempts", n(1.0))]),
                    from,
                    format!("{what}: not retryable, so not retried"),
                ),
                Some(v) => {
                    return Err(BadInput::at(
                        d.file,
                        line_in(d, from, to, "isRetryable"),
                        format!("{what}.isRetryable: true or false, got {}", show(v)),
                    ));
                }
            }
        }
        None => (
            policy([("attempts", n(1.0))]),
            d.line_of("spec", 0),
            format!(
                "ServiceProfile {name}: no route takes the lab's requests, so they are not retried"
            ),
        ),
    };
    out.rules.push(Rule {
        host: name.to_string(),
        from: None,
        policy: p,
        source: Source::new(d.file, line),
        what,
    });
    Ok(())
}

/// The route of a ServiceProfile the lab's requests (GET /) take: the
/// first whose condition matches, as its index and its lines; a note for
/// each route not taken and each setting not mapped.
fn route_taken(
    d: &Doc<'_>,
    name: &str,
    routes: &[Value],
    end: usize,
    out: &mut Read,
) -> Option<(usize, usize, usize)> {
    let starts = item_lines(d, "routes");
    let mut chosen: Option<(usize, usize, usize)> = None;
    for (i, r) in routes.iter().enumerate() {
        let from = starts
            .get(i)
            .copied()
            .unwrap_or_else(|| d.line_of("routes", 0));
        let to = starts.get(i + 1).copied().unwrap_or(end);
        let rname = r.get("name").and_then(Value::as_str).unwrap_or("?");
        let what = format!("ServiceProfile {name} routes[{i}] ({rname})");
        for (key, why) in [
            ("responseClasses", "not mapped: the lab retries the 5xx answers of Linkerd's default classes"),
            ("timeout", "not mapped: the route's timeout spans its retries (the lab's deadline is the root's `load.timeout`)"),
        ] {
            if r.get(key).is_some() {
                out.notes.push(Note {
                    source: Source::new(d.file, line_in(d, from, to, key)),
                    text: format!("{what}.{key}: {why}"),
                });
            }
        }
        if let Some((k, _, _)) = chosen {
            out.notes.push(Note {
                source: Source::new(d.file, from),
                text: format!(
                    "{what}: never reached by the lab's requests (routes[{k}] takes them first)"
                ),
            });
            continue;
        }
        let taken = match r.get("condition") {
            None => Ok(true),
            Some(c) => condition(c),
        };
        match taken {
            Ok(true) => chosen = Some((i, from, to)),
            Ok(false) => out.notes.push(Note {
                source: Source::new(d.file, from),
                text: format!(
                    "{what}: not taken: its condition does not match the lab's requests (GET /)"
                ),
            }),
            Err(why) => out.notes.push(Note {
                source: Source::new(d.file, from),
                text: format!("{what}: not taken: {why}"),
            }),
        }
    }
    chosen
}
