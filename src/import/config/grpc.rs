//! gRPC: a service config (JSON; gRFC A6): `methodConfig[].retryPolicy`,
//! `hedgingPolicy` and the top-level `retryThrottling`, matched to the
//! graph by service name.
//!
//! What gRPC does (A6, grpc.io "Retry" and "Request Hedging" guides):
//! - a method config sets a `retryPolicy` or a `hedgingPolicy`, never
//!   both: gRPC refuses the service config, and so does the import;
//! - with neither, calls are not retried (attempts 1);
//! - `maxAttempts` counts the first attempt, must be 2 or more, and is
//!   capped at 5 by the client; `initialBackoff`, `maxBackoff`,
//!   `backoffMultiplier` and a non-empty `retryableStatusCodes` are
//!   required (a config without them is refused);
//! - `retryThrottling { maxTokens, tokenRatio }`: one bucket per server
//!   name, each failure −1, each success +ratio, no retry or hedge while
//!   the tokens are at most half: the lab's `tokens` budget, on every
//!   rule of the file;
//! - a server's `grpc-retry-pushback-ms` is always honoured: the lab's
//!   `pushback` signal (the `grpc` preset's, or given with `retry` when
//!   there is no throttling, since the `grpc` preset carries a bucket).
//!
//! A status code is the HTTP status the lab's services answer for it:
//! google.rpc.Code's documented HTTP mapping (UNAVAILABLE 503, INTERNAL and
//! UNKNOWN 500, DEADLINE_EXCEEDED 504, RESOURCE_EXHAUSTED 429, ...); OK
//! and CANCELLED (499, the client's own) are no callee's answer and are
//! listed as not mapped. A service `ratings.Ratings` is the graph's
//! service named by its package's first label (`ratings`), or by the
//! service's name lowercased when that differs. A method config naming a
//! method is not taken: the lab's calls name no gRPC method.

use serde_json::{Map, Value};
use serde_yaml::{Mapping, Value as Yaml};

use super::docs::{self, num, proto_duration, Lines};
use super::{n, policy, s, BadInput, File, Note, Read, Rule, Source};

/// gRPC's client-side cap on `maxAttempts` (A6).
const MAX_ATTEMPTS: f64 = 5.0;

/// The status codes by number, and the HTTP status each maps to
/// (google.rpc.Code's "HTTP Mapping"); `None`: no callee answers it.
const CODES: [(&str, Option<u16>); 17] = [
    ("OK", None),
    ("CANCELLED", None),
    ("UNKNOWN", Some(500)),
    ("INVALID_ARGUMENT", Some(400)),
    ("DEADLINE_EXCEEDED", Some(504)),
    ("NOT_FOUND", Some(404)),
    ("ALREADY_EXISTS", Some(409)),
    ("PERMISSION_DENIED", Some(403)),
    ("RESOURCE_EXHAUSTED", Some(429)),
    ("FAILED_PRECONDITION", Some(400)),
    ("ABORTED", Some(409)),
    ("OUT_OF_RANGE", Some(400)),
    ("UNIMPLEMENTED", Some(501)),
    ("INTERNAL", Some(500)),
    ("UNAVAILABLE", Some(503)),
    ("DATA_LOSS", Some(500)),
    ("UNAUTHENTICATED", Some(401)),
];

/// A key of `o`, as gRPC's parsers take it: `maxAttempts`, `max_attempts`
/// (protobuf JSON) or `MaxAttempts` (Go's case-insensitive decoder).
fn get<'a>(o: &'a Map<String, Value>, key: &str) -> Option<(&'a str, &'a Value)> {
    let norm = |k: &str| k.replace('_', "").to_ascii_lowercase();
    let want = norm(key);
    o.iter()
        .find(|(k, _)| norm(k) == want)
        .map(|(k, v)| (k.as_str(), v))
}

struct Reader<'a> {
    file: &'a str,
    lines: Lines<'a>,
    out: &'a mut Read,
}

impl Reader<'_> {
    fn line(&self, o: &Map<String, Value>, key: &str) -> usize {
        get(o, key).map_or_else(|| self.lines.of(o, key), |(k, _)| self.lines.of(o, k))
    }

    fn note(&mut self, o: &Map<String, Value>, key: &str, text: String) {
        let source = Source::new(self.file, self.line(o, key));
        self.out.notes.push(Note { source, text });
    }

    fn bad(&self, o: &Map<String, Value>, key: &str, why: String) -> BadInput {
        BadInput::at(self.file, self.line(o, key), why)
    }

    /// A required positive duration.
    fn duration(
        &self,
        o: &Map<String, Value>,
        key: &str,
        what: &str,
    ) -> Result<std::time::Duration, BadInput> {
        let v = get(o, key).map(|(_, v)| v);
        v.and_then(proto_duration).filter(|d| !d.is_zero()).ok_or_else(|| {
            self.bad(o, key, format!("{what}.{key}: required, a duration above 0 such as \"0.1s\" (gRPC refuses the config otherwise), got {}", v.map_or("nothing".into(), Value::to_string)))
        })
    }

    /// Status codes, each as gRPC reads it (a name or a number).
    fn codes(
        &mut self,
        o: &Map<String, Value>,
        key: &str,
        what: &str,
    ) -> Result<Vec<(String, Option<u16>)>, BadInput> {
        let mut out = vec![];
        for c in get(o, key)
            .and_then(|(_, v)| v.as_array())
            .map_or(&[][..], Vec::as_slice)
        {
            let found = match c {
                Value::String(name) => CODES
                    .iter()
                    .find(|(w, _)| w.eq_ignore_ascii_case(name.trim())),
                v => num(Some(v))
                    .filter(|x| x.fract() == 0.0 && *x >= 0.0)
                    .and_then(|x| CODES.get(x as usize)),
            };
            let Some((name, http)) = found else {
                return Err(self.bad(
                    o,
                    key,
                    format!("{what}.{key}: {c} is no gRPC status code (gRPC refuses the config)"),
                ));
            };
            out.push((name.to_string(), *http));
        }
        Ok(out)
    }
}

/// Reads one service config.
pub fn read(f: &File, out: &mut Read) -> Result<(), BadInput> {
    let root = docs::json(&f.name, &f.text, "JSON (a gRPC service config)")?;
    let top = root.as_object().map(|o| {
        get(o, "serviceConfig")
            .and_then(|(_, v)| v.as_object())
            .unwrap_or(o)
    });
    let Some(top) =
        top.filter(|o| get(o, "methodConfig").is_some() || get(o, "retryThrottling").is_some())
    else {
        return Err(BadInput::at(
            &f.name,
            1,
            "not a gRPC service config: no `methodConfig` or `retryThrottling` (grpc reads a service config's JSON)",
        ));
    };
    let mut r = Reader {
        file: &f.name,
        lines: Lines::new(&f.text, &root),
        out,
    };
    let throttling = match get(top, "retryThrottling") {
        None => None,
        Some((_, t)) => Some(throttling(&mut r, top, t)?),
    };
    let configs = get(top, "methodConfig")
        .and_then(|(_, v)| v.as_array())
        .map_or(&[][..], Vec::as_slice);
    let mut named: Vec<(String, usize)> = vec![];
    let mut rules = vec![];
    for (i, mc) in configs.iter().enumerate() {
        let Some(mc) = mc.as_object() else { continue };
        let here = format!("methodConfig[{i}]");
        let retry = get(mc, "retryPolicy").and_then(|(_, v)| v.as_object());
        let hedge = get(mc, "hedgingPolicy").and_then(|(_, v)| v.as_object());
        if retry.is_some() && hedge.is_some() {
            return Err(r.bad(mc, "hedgingPolicy", format!("{here} sets both retryPolicy and hedgingPolicy: gRPC refuses such a service config (A6: a method is retried or hedged, not both)")));
        }
        if get(mc, "timeout").is_some() {
            r.note(mc, "timeout", format!("{here}.timeout: the call's deadline is not mapped (the lab's deadline is the root's `load.timeout`)"));
        }
        let (mut p, key, what) = match (retry, hedge) {
            (Some(rp), _) => (
                retry_policy(&mut r, rp, &here)?,
                "retryPolicy",
                format!("{here}.retryPolicy"),
            ),
            (_, Some(hp)) => (
                hedging_policy(&mut r, hp, &here)?,
                "hedgingPolicy",
                format!("{here}.hedgingPolicy"),
            ),
            (None, None) => (
                policy([("attempts", n(1.0))]),
                "name",
                format!("{here} (no retryPolicy: gRPC does not retry)"),
            ),
        };
        if retry.is_some() || hedge.is_some() {
            match &throttling {
                Some(t) => {
                    p.insert("preset".into(), s("grpc"));
                    p.extend(t.clone());
                }
                None => {
                    p.insert("preset".into(), s("retry"));
                    p.insert("signal".into(), s("pushback"));
                }
            }
        }
        let source = Source::new(r.file, r.line(mc, key));
        let names = get(mc, "name")
            .and_then(|(_, v)| v.as_array())
            .map_or(&[][..], Vec::as_slice);
        if names.is_empty() {
            r.note(
                mc,
                key,
                format!("{here}: no `name`, so it governs no method"),
            );
        }
        for (k, nm) in names.iter().enumerate() {
            let Some(nm) = nm.as_object() else { continue };
            let service = get(nm, "service")
                .and_then(|(_, v)| v.as_str())
                .unwrap_or("")
                .trim();
            let method = get(nm, "method")
                .and_then(|(_, v)| v.as_str())
                .unwrap_or("")
                .trim();
            if service.is_empty() {
                r.note(mc, "name", format!("{here}.name[{k}]: the default for every method of the channel, whose server the file does not name: not mapped"));
                continue;
            }
            if !method.is_empty() {
                r.note(mc, "name", format!("{here}.name[{k}]: {service}/{method}: not taken (the lab's calls name no gRPC method; only whole-service names are mapped)"));
                continue;
            }
            if let Some((_, j)) = named.iter().find(|(sv, _)| sv == service) {
                return Err(r.bad(mc, "name", format!("{here}.name[{k}]: service {service} is named again (methodConfig[{j}] names it): gRPC refuses duplicate names")));
            }
            named.push((service.to_string(), i));
            for (host, how) in hosts(service) {
                rules.push(Rule {
                    host,
                    from: None,
                    policy: p.clone(),
                    source: source.clone(),
                    what: format!("{what} (service {service} as {how})"),
                });
            }
        }
    }
    r.out.rules.extend(rules);
    Ok(())
}

/// The graph's hosts a gRPC service may be: its package's first label,
/// and its own name lowercased when that differs.
fn hosts(service: &str) -> Vec<(String, String)> {
    let (pkg, name) = service.rsplit_once('.').unwrap_or(("", service));
    let mut out = vec![];
    if let Some(first) = pkg.split('.').next().filter(|f| !f.is_empty()) {
        let h = first.to_ascii_lowercase();
        out.push((h.clone(), format!("host {h}, its package's first label")));
    }
    let lower = name.to_ascii_lowercase();
    if out.iter().all(|(h, _)| *h != lower) {
        out.push((lower.clone(), format!("host {lower}, its name lowercased")));
    }
    out
}

/// `retryThrottling` as the lab's `tokens` budget.
fn throttling(
    r: &mut Reader<'_>,
    top: &Map<String, Value>,
    t: &Value,
) -> Result<Mapping, BadInput> {
    let Some(t) = t.as_object() else {
        return Err(r.bad(
            top,
            "retryThrottling",
            "retryThrottling: a map of maxTokens and tokenRatio".into(),
        ));
    };
    let max = get(t, "maxTokens").and_then(|(_, v)| num(Some(v)));
    let max = max.filter(|m| *m > 0.0 && *m <= 1000.0 && m.fract() == 0.0).ok_or_else(|| {
        r.bad(t, "maxTokens", format!("retryThrottling.maxTokens: required, a whole number from 1 to 1000 (gRPC refuses the config otherwise), got {max:?}"))
    })?;
    let ratio = get(t, "tokenRatio").and_then(|(_, v)| num(Some(v)));
    let mut ratio = ratio.filter(|x| *x > 0.0 && x.is_finite()).ok_or_else(|| {
        r.bad(t, "tokenRatio", format!("retryThrottling.tokenRatio: required, a number above 0 (gRPC refuses the config otherwise), got {ratio:?}"))
    })?;
    if ratio > 1.0 {
        r.note(t, "tokenRatio", format!("retryThrottling.tokenRatio {ratio}: the lab's token_ratio is at most 1; written as 1"));
        ratio = 1.0;
    }
    Ok(policy([
        ("budget_model", s("tokens")),
        ("max_tokens", n(max)),
        ("token_ratio", n((ratio * 1000.0).round() / 1000.0)),
    ]))
}

/// `maxAttempts`, required, 2 or more, capped at 5.
fn max_attempts(r: &mut Reader<'_>, o: &Map<String, Value>, what: &str) -> Result<f64, BadInput> {
    let v = get(o, "maxAttempts").and_then(|(_, v)| num(Some(v)));
    let a = v.filter(|a| *a >= 2.0 && a.fract() == 0.0).ok_or_else(|| {
        r.bad(o, "maxAttempts", format!("{what}.maxAttempts: required, a whole number of attempts of 2 or more (gRPC refuses the config otherwise), got {v:?}"))
    })?;
    if a > MAX_ATTEMPTS {
        r.note(
            o,
            "maxAttempts",
            format!("{what}.maxAttempts {a}: gRPC caps it at {MAX_ATTEMPTS}, and so does the lab"),
        );
    }
    Ok(a.min(MAX_ATTEMPTS))
}

fn retry_policy(
    r: &mut Reader<'_>,
    rp: &Map<String, Value>,
    here: &str,
) -> Result<Mapping, BadInput> {
    let what = format!("{here}.retryPolicy");
    let attempts = max_attempts(r, rp, &what)?;
    let backoff = r.duration(rp, "initialBackoff", &what)?;
    let max_backoff = r.duration(rp, "maxBackoff", &what)?;
    let mult = get(rp, "backoffMultiplier").and_then(|(_, v)| num(Some(v)));
    let mult = mult.filter(|m| *m > 0.0).ok_or_else(|| {
        r.bad(rp, "backoffMultiplier", format!("{what}.backoffMultiplier: required, a number above 0 (gRPC refuses the config otherwise), got {mult:?}"))
    })?;
    if mult != 1.0 || max_backoff != backoff {
        r.note(rp, "backoffMultiplier", format!("{what}: backoffMultiplier {mult} and maxBackoff are not mapped (the lab's backoff is initialBackoff, full jitter, every retry)"));
    }
    let codes = r.codes(rp, "retryableStatusCodes", &what)?;
    if codes.is_empty() {
        return Err(r.bad(rp, "retryableStatusCodes", format!("{what}.retryableStatusCodes: required and non-empty (gRPC refuses the config otherwise)")));
    }
    let mut http: Vec<u16> = vec![];
    for (name, status) in &codes {
        match status {
            Some(h) => http.push(*h),
            None => r.note(
                rp,
                "retryableStatusCodes",
                format!(
                    "{what}.retryableStatusCodes: {name} is no callee's HTTP answer, not mapped"
                ),
            ),
        }
    }
    http.sort_unstable();
    http.dedup();
    let on = if http.is_empty() {
        vec![]
    } else {
        let list = http.iter().map(|h| n(f64::from(*h))).collect();
        vec![Yaml::Mapping(policy([(
            "retriable-status-codes",
            Yaml::Sequence(list),
        )]))]
    };
    Ok(policy([
        ("attempts", n(attempts)),
        ("backoff", docs::lab_duration(backoff)),
        ("retry_on", Yaml::Sequence(on)),
    ]))
}

fn hedging_policy(
    r: &mut Reader<'_>,
    hp: &Map<String, Value>,
    here: &str,
) -> Result<Mapping, BadInput> {
    let what = format!("{here}.hedgingPolicy");
    let attempts = max_attempts(r, hp, &what)?;
    let delay = match get(hp, "hedgingDelay") {
        None => std::time::Duration::ZERO,
        Some((_, v)) => proto_duration(v).ok_or_else(|| {
            r.bad(
                hp,
                "hedgingDelay",
                format!("{what}.hedgingDelay: a duration such as \"0.5s\", got {v}"),
            )
        })?,
    };
    let delay = if delay.is_zero() {
        r.note(hp, "hedgingDelay", format!("{what}.hedgingDelay 0 (or none) sends every attempt at once; the lab needs a delay above 0: 1ms"));
        std::time::Duration::from_millis(1)
    } else {
        delay
    };
    let codes = r.codes(hp, "nonFatalStatusCodes", &what)?;
    if !codes.is_empty() {
        let names: Vec<&str> = codes.iter().map(|(c, _)| c.as_str()).collect();
        r.note(hp, "nonFatalStatusCodes", format!("{what}.nonFatalStatusCodes [{}]: the lab's non_fatal is every failure or none; every failure is taken as non-fatal", names.join(", ")));
    }
    Ok(policy([(
        "hedge",
        Yaml::Mapping(policy([
            ("delay", docs::lab_duration(delay)),
            ("max_attempts", n(attempts)),
            ("non_fatal", Yaml::Bool(!codes.is_empty())),
        ])),
    )]))
}
