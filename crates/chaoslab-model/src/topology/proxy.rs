//! What a real proxy makes of an edge's policy (SPEC section 17's
//! `sidecar:`): the retry directives nginx and HAProxy are given, what
//! neither can express (refused, naming the edge), and how the proxy's
//! attempts then go, for the model.
//!
//! Why here, with no runtime: the fleet writes the proxies' configuration
//! from these words, validation refuses what they cannot say, and the
//! model predicts what they do; all three must read one translation.
//!
//! | policy | nginx | HAProxy |
//! |---|---|---|
//! | `attempts` R | `proxy_next_upstream_tries R` (each server at most once: min(R, servers) attempts) | `retries R-1` |
//! | `retry_on` | `proxy_next_upstream` tokens ([`nginx_next_upstream`]) | `retry-on` keywords ([`haproxy_retry_on`]) |
//! | `retry_other_host` | always (the next server) | `option redispatch` (every retry to another server, measured with 2.6) |
//! | `lb` | round-robin, `random`, `random two least_conn` | `balance roundrobin`, `random`, `random(2)` |
//! | `timeout` | `proxy_connect/send/read_timeout` | `timeout connect`, `timeout server` |
//! | `budget`, `breaker`, `throttle`, `hedge`, `outlier`, `backoff`, a dialect | refused | refused |
//!
//! The claim header of ownership passes through both proxies untouched,
//! and neither reads it: on an edge through a sidecar every error the
//! conditions name is retried, claimed or not.
//!
//! ```
//! use chaoslab_model::topology::proxy::{haproxy_retry_on, nginx_next_upstream};
//! use error_ownership::conditions::{Condition, RetryOn};
//!
//! let only_503 = RetryOn::EMPTY.with_status(503);
//! assert_eq!(nginx_next_upstream(&only_503).unwrap(), ["http_503"]);
//! assert_eq!(haproxy_retry_on(&only_503).unwrap(), ["503"]);
//! let gateway = RetryOn::EMPTY.with(Condition::GatewayError);
//! assert_eq!(
//!     nginx_next_upstream(&gateway).unwrap(),
//!     ["error", "timeout", "http_502", "http_503", "http_504"]
//! );
//! // HAProxy cannot retry a 429.
//! assert!(haproxy_retry_on(&RetryOn::EMPTY.with_status(429)).is_err());
//! ```

use std::time::Duration;

use super::mesh::{ProxyKind, Sidecar};
use super::nginx_upstream;
pub use super::nginx_upstream::Steady;
use super::{EdgePolicy, Policy, Topology};
use crate::format::fmt_duration;
use error_ownership::conditions::{Condition, RetryOn};
use error_ownership::policy::Lb;
use error_ownership::signal::Signal;

/// The statuses nginx's `proxy_next_upstream` can name (`http_403`, ...).
pub const NGINX_STATUSES: [u16; 7] = [403, 404, 429, 500, 502, 503, 504];
/// The statuses HAProxy 2.6's `retry-on` can name.
pub const HAPROXY_STATUSES: [u16; 10] = [401, 403, 404, 408, 425, 500, 501, 502, 503, 504];

/// A part of an edge's policy a proxy cannot express.
#[derive(Debug, Clone, PartialEq)]
pub enum Unexpressible {
    /// A retry budget (its model's name).
    Budget(&'static str),
    /// A circuit breaker.
    Breaker,
    /// Client-side adaptive throttling.
    Throttle,
    /// Hedging.
    Hedge,
    /// Envoy's outlier detection (nginx's own passive check is the
    /// sidecar's `max_fails`).
    Outlier,
    /// A backoff between attempts (both retry at once).
    Backoff(Duration),
    /// Another stack's don't-retry dialect.
    Signal(Signal),
    /// `retriable-headers`.
    Headers,
    /// A retriable status the proxy has no word for.
    Status(u16),
    /// A retry condition the proxy has no word for.
    Condition(Condition),
    /// `retry_other_host: false` on nginx, which always passes a request
    /// to the next server.
    SameHost,
}

impl Unexpressible {
    /// What is refused and what to do instead, for a `kind` sidecar.
    pub fn explain(&self, kind: ProxyKind) -> String {
        let k = kind.name();
        match self {
            Unexpressible::Budget(m) => format!(
                "its retry budget (`{m}`): {k} has no retry budget; set `budget: off` (or `preset: retry`)"
            ),
            Unexpressible::Breaker => {
                format!("its circuit breaker: {k} has none; set `breaker: off`")
            }
            Unexpressible::Throttle => {
                format!("its adaptive throttling: {k} has none; set `throttle: off`")
            }
            Unexpressible::Hedge => format!("hedging: {k} does not hedge; set `hedge: off`"),
            Unexpressible::Outlier => match kind {
                ProxyKind::Nginx => "Envoy's outlier detection: nginx takes servers out by its own rules; leave `outlier` off and set the sidecar's `max_fails` and `fail_timeout`".to_string(),
                ProxyKind::Haproxy => "Envoy's outlier detection: the lab gives HAProxy no health checks; leave `outlier` off".to_string(),
            },
            Unexpressible::Backoff(d) => format!(
                "a backoff of {}: {k} retries at once; set `backoff: 0ms`",
                fmt_duration(*d)
            ),
            Unexpressible::Signal(s) => format!(
                "the `{}` dialect: {k} reads no don't-retry header; set `signal: none` (ownership's claim header passes through {k} unread)",
                s.name()
            ),
            Unexpressible::Headers => {
                format!("`retriable-headers`: {k} cannot retry on an answer's header")
            }
            Unexpressible::Status(s) => format!(
                "retrying a {s}: {k} can retry only {}",
                list(match kind {
                    ProxyKind::Nginx => &NGINX_STATUSES[..],
                    ProxyKind::Haproxy => &HAPROXY_STATUSES[..],
                })
            ),
            Unexpressible::Condition(c) => format!(
                "the retry condition `{}`: {k} has no such condition",
                c.name()
            ),
            Unexpressible::SameHost => format!(
                "`retry_other_host: false`: {k} passes a request to the next server, never to the one that failed it"
            ),
        }
    }
}

fn list(codes: &[u16]) -> String {
    codes
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// nginx's `proxy_next_upstream` for `retry_on`, in nginx's order
/// (`off` when nothing is retried). Envoy's `connect-failure` and `reset`
/// are nginx's `error` (which covers both: nginx cannot tell them apart),
/// `timeout` is `timeout`; `5xx` and every error ([`RetryOn::ANY`]) take
/// the 5xx statuses nginx can name (500, 502, 503, 504; not 501 nor
/// 505 and above). The gRPC and HTTP/2 conditions match nothing over
/// HTTP/1.1 and add nothing. An explicit status or condition nginx has
/// no word for is refused.
pub fn nginx_next_upstream(r: &RetryOn) -> Result<Vec<&'static str>, Unexpressible> {
    let (mut error, mut timeout) = (false, false);
    let mut codes: Vec<u16> = vec![];
    if r.is_any() {
        return Ok(vec![
            "error", "timeout", "http_500", "http_502", "http_503", "http_504", "http_429",
        ]);
    }
    if r.reads_headers() {
        return Err(Unexpressible::Headers);
    }
    for c in r.conditions() {
        match c {
            Condition::FiveXx => {
                (error, timeout) = (true, true);
                codes.extend([500, 502, 503, 504]);
            }
            Condition::GatewayError => {
                (error, timeout) = (true, true);
                codes.extend([502, 503, 504]);
            }
            Condition::Reset => (error, timeout) = (true, true),
            Condition::ConnectFailure => error = true,
            Condition::Timeout => timeout = true,
            Condition::RateLimited => codes.push(429),
            Condition::Retriable4xx => return Err(Unexpressible::Condition(c)),
            // Nothing over HTTP/1.1 (`never_over_http1`): nothing to retry.
            _ => {}
        }
    }
    codes.extend(nameable(r, &NGINX_STATUSES)?);
    let mut out = vec![];
    if error {
        out.push("error");
    }
    if timeout {
        out.push("timeout");
    }
    // nginx's own order of its tokens.
    for (code, word) in [
        (500, "http_500"),
        (502, "http_502"),
        (503, "http_503"),
        (504, "http_504"),
        (403, "http_403"),
        (404, "http_404"),
        (429, "http_429"),
    ] {
        if codes.contains(&code) {
            out.push(word);
        }
    }
    if out.is_empty() {
        out.push("off");
    }
    Ok(out)
}

/// HAProxy's `retry-on` for `retry_on` (`none` when nothing is retried).
/// `connect-failure` is `conn-failure`; `timeout` is `response-timeout`;
/// `reset` is all three of `conn-failure`, `empty-response` and
/// `response-timeout` (Envoy's reset includes a refused connection and a
/// per-try timeout); `5xx` and every error ([`RetryOn::ANY`]) take the
/// 5xx statuses HAProxy can name (500 to 504). HAProxy cannot retry a
/// 409 or a 429: an explicit one is refused (and [`RetryOn::ANY`]'s 429
/// is left out).
pub fn haproxy_retry_on(r: &RetryOn) -> Result<Vec<String>, Unexpressible> {
    let (mut conn, mut empty, mut timeout) = (false, false, false);
    let mut codes: Vec<u16> = vec![];
    if r.is_any() {
        (conn, empty, timeout) = (true, true, true);
        codes.extend([500, 501, 502, 503, 504]);
    } else {
        if r.reads_headers() {
            return Err(Unexpressible::Headers);
        }
        for c in r.conditions() {
            match c {
                Condition::FiveXx => {
                    (conn, empty, timeout) = (true, true, true);
                    codes.extend([500, 501, 502, 503, 504]);
                }
                Condition::GatewayError => {
                    (conn, empty, timeout) = (true, true, true);
                    codes.extend([502, 503, 504]);
                }
                Condition::Reset => (conn, empty, timeout) = (true, true, true),
                Condition::ConnectFailure => conn = true,
                Condition::Timeout => timeout = true,
                Condition::RateLimited | Condition::Retriable4xx => {
                    return Err(Unexpressible::Condition(c))
                }
                // Nothing over HTTP/1.1 (`never_over_http1`).
                _ => {}
            }
        }
        codes.extend(nameable(r, &HAPROXY_STATUSES)?);
    }
    let mut out: Vec<String> = [
        (conn, "conn-failure"),
        (empty, "empty-response"),
        (timeout, "response-timeout"),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .map(|(_, w)| w.to_string())
    .collect();
    for code in HAPROXY_STATUSES {
        if codes.contains(&code) {
            out.push(code.to_string());
        }
    }
    if out.is_empty() {
        out.push("none".into());
    }
    Ok(out)
}

/// The first part of `p` (with `other_host`, the edge's
/// `retry_other_host`) a `kind` proxy cannot express, if any.
pub fn unexpressible(kind: ProxyKind, p: &EdgePolicy, other_host: bool) -> Option<Unexpressible> {
    if let Some(b) = &p.budget {
        return Some(Unexpressible::Budget(b.name()));
    }
    if p.breaker.is_some() {
        return Some(Unexpressible::Breaker);
    }
    if p.throttle.is_some() {
        return Some(Unexpressible::Throttle);
    }
    if p.hedge.is_some() {
        return Some(Unexpressible::Hedge);
    }
    if p.outlier.is_some() {
        return Some(Unexpressible::Outlier);
    }
    if let Some(s) = p.signal {
        return Some(Unexpressible::Signal(s));
    }
    if p.attempts > 1 && !p.backoff.is_zero() {
        return Some(Unexpressible::Backoff(p.backoff));
    }
    match kind {
        ProxyKind::Nginx => {
            if !other_host && p.attempts > 1 {
                return Some(Unexpressible::SameHost);
            }
            nginx_next_upstream(&p.retry_on).err()
        }
        ProxyKind::Haproxy => haproxy_retry_on(&p.retry_on).err(),
    }
}

/// Why the edge `edge` of `t`, under `policy`, cannot run through its
/// caller's sidecar: `A -> B` and what is refused. `None` when it can, or
/// when its caller has no sidecar.
pub fn refusal(t: &Topology, policy: &Policy, edge: usize) -> Option<String> {
    let e = &t.edges[edge];
    let sidecar = t.services[e.from].sidecar?;
    let p = policy.for_edge(&e.policy);
    let (_, other_host) = policy.balancing(&e.policy);
    let why = unexpressible(sidecar.kind, &p, other_host)?;
    Some(format!(
        "{} -> {}: {}'s {} sidecar cannot express {}, or remove the sidecar",
        t.services[e.from].name,
        t.services[e.to].name,
        t.services[e.from].service_name(),
        sidecar.kind.name(),
        why.explain(sidecar.kind)
    ))
}

/// Where a proxy's retry goes among the callee's replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reselect {
    /// Drawn afresh, the one that failed included (the lab's own client
    /// without `retry_other_host`).
    Afresh,
    /// A replica the call has not tried, while one is left (nginx's next
    /// server; HAProxy's `option redispatch`; the lab's client with
    /// `retry_other_host`).
    OtherHost,
    /// The same server again (HAProxy's `retries` without `option
    /// redispatch`).
    SameHost,
}

/// An edge as its proxy runs it, for the model: the policy whose attempts
/// and retry rule the proxy applies, where its retries go, and nginx's
/// passive health check, if it takes servers out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AsRun {
    /// The policy the proxy applies: nginx's attempts capped at the
    /// callee's replicas (each server at most once); claims unread (the
    /// proxy ignores the claim header), so every error its conditions
    /// name is retried.
    pub policy: EdgePolicy,
    /// Where a retry goes.
    pub reselect: Reselect,
    /// nginx's `max_fails`/`fail_timeout` over two servers or more (nginx
    /// ignores them for a single server): `None` when it never takes one
    /// out.
    pub passive: Option<Passive>,
}

/// nginx's passive health check on an upstream of several servers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Passive {
    /// The upstream's servers.
    pub servers: u32,
    /// Failed attempts that take a server out.
    pub max_fails: u32,
    /// `fail_timeout` in nginx's whole seconds.
    pub fail_timeout_s: u64,
    /// How long a server stays out: `fail_timeout` and up to a second
    /// more, nginx's clock counting whole seconds (a server out at second
    /// T is tried again once `now - T > fail_timeout`).
    pub out_for: Duration,
}

impl Passive {
    /// The steady state of calls through it, `tries` each at most,
    /// `calls_per_sec` of them, its servers failing every attempt
    /// (`bad[i]`) or none: nginx's rules played second by second (see
    /// `nginx_upstream`).
    pub fn steady(&self, bad: &[bool], tries: u32, calls_per_sec: f64) -> Steady {
        nginx_upstream::steady(
            bad,
            self.max_fails,
            self.fail_timeout_s,
            tries,
            calls_per_sec,
        )
    }

    /// Attempts a second the upstream's servers take at most when an
    /// attempt fails with probability `p_fail`, in the steady state, as
    /// a rough bound for servers that fail some attempts: each server in
    /// turn takes attempts until `max_fails` have failed, then is out for
    /// [`out_for`](Self::out_for). `None` when nothing fails.
    pub fn cap_per_sec(&self, p_fail: f64) -> Option<f64> {
        if p_fail <= 0.0 {
            return None;
        }
        let period = self.out_for.as_secs_f64().max(1e-3);
        Some(f64::from(self.servers) * f64::from(self.max_fails) / (period * p_fail.min(1.0)))
    }
}

/// `p` (and `other_host`) as a `sidecar` in front of a callee of
/// `replicas` runs it (see [`AsRun`]).
pub fn as_run(sidecar: Sidecar, p: &EdgePolicy, other_host: bool, replicas: u32) -> AsRun {
    let n = replicas.max(1);
    let mut policy = EdgePolicy {
        ownership: false,
        signal: None,
        budget: None,
        breaker: None,
        throttle: None,
        hedge: None,
        outlier: None,
        backoff: Duration::ZERO,
        ..*p
    };
    match sidecar.kind {
        ProxyKind::Nginx => {
            policy.attempts = p.attempts.clamp(1, n);
            let fail_timeout = nginx_fail_timeout(sidecar.fail_timeout);
            let passive = (n > 1 && sidecar.max_fails > 0).then(|| Passive {
                servers: n,
                max_fails: sidecar.max_fails,
                fail_timeout_s: fail_timeout.as_secs(),
                out_for: fail_timeout + Duration::from_secs(1),
            });
            AsRun {
                policy,
                reselect: Reselect::OtherHost,
                passive,
            }
        }
        ProxyKind::Haproxy => AsRun {
            policy,
            reselect: if other_host {
                Reselect::OtherHost
            } else {
                Reselect::SameHost
            },
            passive: None,
        },
    }
}

/// Edge `e` of `t` under `policy` as its retrier runs it: the caller's
/// sidecar ([`as_run`]), or the lab's own client.
pub fn edge_as_run(t: &Topology, policy: &Policy, e: usize) -> AsRun {
    let edge = &t.edges[e];
    let p = policy.for_edge(&edge.policy);
    let (_, other_host) = policy.balancing(&edge.policy);
    match t.services[edge.from].sidecar {
        Some(s) => as_run(s, &p, other_host, t.services[edge.to].replicas),
        None => AsRun {
            policy: p,
            reselect: if other_host {
                Reselect::OtherHost
            } else {
                Reselect::Afresh
            },
            passive: None,
        },
    }
}

/// nginx's `fail_timeout` for `d`: whole seconds (nginx reads no finer
/// unit there), rounded up.
pub fn nginx_fail_timeout(d: Duration) -> Duration {
    Duration::from_secs(d.as_secs() + u64::from(d.subsec_nanos() > 0))
}

/// How a proxy spreads a call's first attempt over the servers.
pub fn balance(kind: ProxyKind, lb: Lb) -> &'static str {
    match (kind, lb) {
        (ProxyKind::Nginx, Lb::RoundRobin) => "",
        (ProxyKind::Nginx, Lb::Random) => "random",
        (ProxyKind::Nginx, Lb::P2c) => "random two least_conn",
        (ProxyKind::Haproxy, Lb::RoundRobin) => "roundrobin",
        (ProxyKind::Haproxy, Lb::Random) => "random",
        (ProxyKind::Haproxy, Lb::P2c) => "random(2)",
    }
}

/// The statuses `r` lists, each one the proxy can name (`names`), or the
/// first it cannot.
fn nameable(r: &RetryOn, names: &[u16]) -> Result<Vec<u16>, Unexpressible> {
    r.statuses()
        .map(|s| {
            if names.contains(&s) {
                Ok(s)
            } else {
                Err(Unexpressible::Status(s))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::mesh::{NGINX_FAIL_TIMEOUT, NGINX_MAX_FAILS};
    use crate::topology::Preset;

    fn retry_policy() -> EdgePolicy {
        let mut p = Policy::default();
        p.apply_preset(Preset::Retry);
        p.for_edge(&Default::default())
    }

    #[test]
    fn nginx_takes_the_lab_conditions_in_its_own_words() {
        let on = RetryOn::EMPTY
            .with(Condition::ConnectFailure)
            .with(Condition::Timeout)
            .with(Condition::Reset)
            .with_status(500)
            .with_status(502)
            .with_status(503);
        assert_eq!(
            nginx_next_upstream(&on).unwrap(),
            ["error", "timeout", "http_500", "http_502", "http_503"]
        );
        assert_eq!(nginx_next_upstream(&RetryOn::EMPTY).unwrap(), ["off"]);
        assert_eq!(
            nginx_next_upstream(&RetryOn::EMPTY.with(Condition::ConnectFailure)).unwrap(),
            ["error"]
        );
        // Istio's set: the gRPC words add nothing over HTTP/1.1.
        assert_eq!(
            nginx_next_upstream(&crate::topology::policy::ISTIO_RETRY_ON).unwrap(),
            ["error", "http_503"]
        );
        assert_eq!(
            nginx_next_upstream(&RetryOn::EMPTY.with_status(501)),
            Err(Unexpressible::Status(501))
        );
        assert_eq!(
            nginx_next_upstream(&RetryOn::EMPTY.with(Condition::Retriable4xx)),
            Err(Unexpressible::Condition(Condition::Retriable4xx))
        );
        let headers = RetryOn::EMPTY.with_header("x-error-claim", "true").unwrap();
        assert_eq!(nginx_next_upstream(&headers), Err(Unexpressible::Headers));
        assert!(nginx_next_upstream(&RetryOn::ANY)
            .unwrap()
            .contains(&"http_429"));
    }

    #[test]
    fn haproxy_takes_the_lab_conditions_in_its_own_words() {
        let on = RetryOn::EMPTY
            .with(Condition::ConnectFailure)
            .with_status(500)
            .with_status(502)
            .with_status(503);
        assert_eq!(
            haproxy_retry_on(&on).unwrap(),
            ["conn-failure", "500", "502", "503"]
        );
        assert_eq!(haproxy_retry_on(&RetryOn::EMPTY).unwrap(), ["none"]);
        assert_eq!(
            haproxy_retry_on(&RetryOn::EMPTY.with(Condition::FiveXx)).unwrap(),
            [
                "conn-failure",
                "empty-response",
                "response-timeout",
                "500",
                "501",
                "502",
                "503",
                "504"
            ]
        );
        assert_eq!(
            haproxy_retry_on(&RetryOn::EMPTY.with(Condition::RateLimited)),
            Err(Unexpressible::Condition(Condition::RateLimited))
        );
        assert_eq!(
            haproxy_retry_on(&RetryOn::EMPTY.with_status(429)),
            Err(Unexpressible::Status(429))
        );
        assert_eq!(
            haproxy_retry_on(&RetryOn::EMPTY.with_status(425)).unwrap(),
            ["425"]
        );
    }

    #[test]
    fn what_a_proxy_cannot_express_is_named() {
        let mut p = retry_policy();
        assert_eq!(unexpressible(ProxyKind::Nginx, &p, true), None);
        assert_eq!(
            unexpressible(ProxyKind::Nginx, &p, false),
            Some(Unexpressible::SameHost)
        );
        assert_eq!(unexpressible(ProxyKind::Haproxy, &p, false), None);
        // The default policy (ownership) runs a budget.
        let d = Policy::default().for_edge(&Default::default());
        assert_eq!(
            unexpressible(ProxyKind::Nginx, &d, true),
            Some(Unexpressible::Budget("window"))
        );
        p.backoff = Duration::from_millis(25);
        assert_eq!(
            unexpressible(ProxyKind::Haproxy, &p, true),
            Some(Unexpressible::Backoff(Duration::from_millis(25)))
        );
        p.backoff = Duration::ZERO;
        p.outlier = Some(error_ownership::outlier::OutlierConfig::DEFAULT);
        assert_eq!(
            unexpressible(ProxyKind::Nginx, &p, true),
            Some(Unexpressible::Outlier)
        );
        assert!(as_run(
            Sidecar {
                kind: ProxyKind::Nginx,
                max_fails: 1,
                fail_timeout: Duration::from_secs(10)
            },
            &p,
            true,
            2
        )
        .policy
        .outlier
        .is_none());
        p.outlier = None;
        p.signal = Some(Signal::Nack);
        let why = unexpressible(ProxyKind::Nginx, &p, true).unwrap();
        let why = why.explain(ProxyKind::Nginx);
        assert!(why.contains("`nack`"), "{why}");
    }

    #[test]
    fn a_refusal_names_the_edge() {
        let t = Topology::from_yaml(
            "name: t\nservices:\n  A: { calls: [B], sidecar: { kind: nginx } }\n  B: {}\n",
            "t.yaml",
        );
        // The default policy's budget is refused at load time.
        let e = t.unwrap_err().to_string();
        assert!(e.contains("A -> B"), "{e}");
        assert!(e.contains("budget"), "{e}");
    }

    #[test]
    fn nginx_tries_each_server_once_and_haproxy_the_same_one_again() {
        let mut p = retry_policy();
        p.attempts = 3;
        let nginx = Sidecar {
            kind: ProxyKind::Nginx,
            max_fails: 0,
            fail_timeout: NGINX_FAIL_TIMEOUT,
        };
        let one = as_run(nginx, &p, true, 1);
        assert_eq!(one.policy.attempts, 1, "one server: no retry");
        assert_eq!(as_run(nginx, &p, true, 2).policy.attempts, 2);
        assert_eq!(as_run(nginx, &p, true, 5).policy.attempts, 3);
        assert_eq!(one.reselect, Reselect::OtherHost);
        assert_eq!(one.passive, None);
        let haproxy = Sidecar {
            kind: ProxyKind::Haproxy,
            ..nginx
        };
        let h = as_run(haproxy, &p, false, 1);
        assert_eq!((h.policy.attempts, h.reselect), (3, Reselect::SameHost));
        assert_eq!(as_run(haproxy, &p, true, 2).reselect, Reselect::OtherHost);
        // The proxy reads no claim.
        p.ownership = true;
        assert!(!as_run(haproxy, &p, true, 2).policy.ownership);
    }

    #[test]
    fn nginx_takes_failing_servers_out_for_fail_timeout_and_a_second() {
        let p = retry_policy();
        let s = Sidecar {
            kind: ProxyKind::Nginx,
            max_fails: NGINX_MAX_FAILS,
            fail_timeout: Duration::from_secs(2),
        };
        // nginx ignores max_fails for a single server.
        assert_eq!(as_run(s, &p, true, 1).passive, None);
        let two = as_run(s, &p, true, 2).passive.unwrap();
        assert_eq!(two.out_for, Duration::from_secs(3));
        // Every attempt failing: max_fails per server per 3 s.
        assert!((two.cap_per_sec(1.0).unwrap() - 2.0 / 3.0).abs() < 1e-12);
        // Half failing: twice the attempts before max_fails of them fail.
        assert!((two.cap_per_sec(0.5).unwrap() - 4.0 / 3.0).abs() < 1e-12);
        assert_eq!(two.cap_per_sec(0.0), None);
    }
}
