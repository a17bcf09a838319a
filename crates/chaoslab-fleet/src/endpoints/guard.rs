//! Who may call the lab's endpoints.
//!
//! The control API turns faults on and switches policies, so a request to
//! it must come from the operator. On loopback the danger is a web page
//! the presenter has open in a browser: any page may send a "simple"
//! request (a form, or `text/plain`) to `127.0.0.1` without asking first,
//! and a page whose own name is made to resolve to `127.0.0.1` (DNS
//! rebinding) may even read the answers. So, as Jupyter and other local
//! servers do, every request is checked before it reaches a handler:
//!
//! - its `Host` must name the address the endpoint is bound to,
//!   `localhost`, or a name given with `--control-host` (else 421): a
//!   rebinding page sends its own name;
//! - a request that says it comes from a web page (`Origin`) of any other
//!   origin than the API's own is refused (403);
//! - off loopback, a token: `Authorization: Bearer …`, compared in constant
//!   time (401), asked of every control request but the readiness probe;
//! - a `POST` must say `Content-Type: application/json` (415): no page
//!   can send that to another origin without a preflight, which the API
//!   never grants.
//!
//! The metrics endpoint is read-only and gets the `Host` check alone.
//! Every refusal is counted by its reason and shown in the dashboard's
//! log ([`crate::metrics::refusals`]).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::json;

use crate::metrics::refusals::Reason;
use crate::session::Access;

/// Where a refusal is counted.
pub type Sink = Arc<dyn Fn(Reason, String) + Send + Sync>;

/// Which checks an endpoint gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checks {
    /// `Host` only: the metrics endpoint.
    ReadOnly,
    /// Every check: the control API.
    Control,
}

/// The rules of one endpoint.
pub struct Guard {
    bound: SocketAddr,
    access: Access,
    checks: Checks,
    sink: Sink,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("bound", &self.bound)
            .field("checks", &self.checks)
            .finish_non_exhaustive()
    }
}

/// A `Host` or an origin's authority split into its host (lower case,
/// without the brackets of an IPv6 address) and its port.
fn split_authority(a: &str) -> (String, Option<u16>) {
    let a = a.trim();
    if let Some(rest) = a.strip_prefix('[') {
        if let Some((host, after)) = rest.split_once(']') {
            let port = after.strip_prefix(':').and_then(|p| p.parse().ok());
            return (host.to_ascii_lowercase(), port);
        }
    }
    match a.rsplit_once(':') {
        Some((host, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => {
            (host.to_ascii_lowercase(), port.parse().ok())
        }
        _ => (a.to_ascii_lowercase(), None),
    }
}

impl Guard {
    /// The rules of an endpoint bound to `bound`.
    pub fn new(bound: SocketAddr, access: Access, checks: Checks, sink: Sink) -> Guard {
        Guard {
            bound,
            access,
            checks,
            sink,
        }
    }

    /// Whether `host` names this endpoint: `localhost`, the address it is
    /// bound to (any address of the machine when bound to all of them: a
    /// literal address is no rebinding page's), or a `--control-host` name.
    fn names_us(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.');
        if host == "localhost" {
            return true;
        }
        if let Ok(ip) = host.parse::<IpAddr>() {
            let b = self.bound.ip();
            return b.is_unspecified() || ip == b || (ip.is_loopback() && b.is_loopback());
        }
        self.access.hosts.iter().any(|h| h == host)
    }

    /// Whether an `Origin` is the API's own: `http://` and a host that
    /// names it, on its port.
    fn own_origin(&self, origin: &str) -> bool {
        let Some(authority) = origin.trim().strip_prefix("http://") else {
            return false;
        };
        let (host, port) = split_authority(authority.trim_end_matches('/'));
        self.names_us(&host) && port.unwrap_or(80) == self.bound.port()
    }

    /// Checks one request: `Err` with the reason and what to tell the
    /// caller.
    pub fn check(
        &self,
        method: &Method,
        path: &str,
        h: &HeaderMap,
    ) -> Result<(), (Reason, String)> {
        let text = |name| h.get(name).and_then(|v| v.to_str().ok());
        let host = text(http::header::HOST).unwrap_or("");
        if !self.names_us(&split_authority(host).0) {
            return Err((
                Reason::Host,
                format!(
                    "Host `{host}` is not a name this endpoint answers to (the address it listens on, localhost, or a --control-host name): a page whose own name points here does not drive the lab"
                ),
            ));
        }
        if self.checks == Checks::ReadOnly {
            return Ok(());
        }
        if let Some(origin) = h.get(http::header::ORIGIN) {
            let o = origin.to_str().unwrap_or("?");
            if !self.own_origin(o) {
                return Err((
                    Reason::Origin,
                    format!(
                        "a request from the web page at `{o}` is refused: the control API takes requests from the operator's own tools (curl, scripts), which send no Origin"
                    ),
                ));
            }
        }
        if let Some(token) = &self.access.token {
            let given = h.get(http::header::AUTHORIZATION).map(|v| v.as_bytes());
            if path != "/healthz" && !given.is_some_and(|g| token.admits(g)) {
                return Err((
                    Reason::Token,
                    format!(
                        "this control API asks for its token: send `Authorization: Bearer TOKEN` (the token of --control-token-file or {})",
                        crate::session::access::TOKEN_VAR
                    ),
                ));
            }
        }
        if method == Method::POST {
            let json = text(http::header::CONTENT_TYPE).is_some_and(|c| {
                c.split(';')
                    .next()
                    .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
            });
            if !json {
                return Err((
                    Reason::ContentType,
                    format!(
                        "{method} {path} takes JSON: send `Content-Type: application/json` (curl -H 'Content-Type: application/json' -d '{{...}}')"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `router` with every request checked first.
    pub fn wrap(self, router: Router) -> Router {
        router.layer(axum::middleware::from_fn_with_state(Arc::new(self), guard))
    }
}

fn status(reason: Reason) -> StatusCode {
    match reason {
        Reason::Host => StatusCode::MISDIRECTED_REQUEST,
        Reason::Origin => StatusCode::FORBIDDEN,
        Reason::Token => StatusCode::UNAUTHORIZED,
        Reason::ContentType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
    }
}

async fn guard(State(g): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    match g.check(&method, &path, req.headers()) {
        Ok(()) => next.run(req).await,
        Err((reason, why)) => {
            let h = req.headers();
            let from = h
                .get(http::header::ORIGIN)
                .or_else(|| h.get(http::header::HOST))
                .and_then(|v| v.to_str().ok())
                .unwrap_or("?");
            (g.sink)(reason, format!("{method} {path} from {from}"));
            let mut body =
                serde_json::to_string_pretty(&json!({ "error": why })).unwrap_or_default();
            body.push('\n');
            let mut r = (
                status(reason),
                [(http::header::CONTENT_TYPE, "application/json")],
                body,
            )
                .into_response();
            if reason == Reason::Token {
                r.headers_mut().insert(
                    http::header::WWW_AUTHENTICATE,
                    http::HeaderValue::from_static("Bearer"),
                );
            }
            r
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Token;

    fn guard(bound: &str, access: Access, checks: Checks) -> Guard {
        Guard::new(bound.parse().unwrap(), access, checks, Arc::new(|_, _| {}))
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    fn reason(g: &Guard, m: Method, pairs: &[(&'static str, &str)]) -> Option<Reason> {
        g.check(&m, "/actions", &headers(pairs))
            .err()
            .map(|(r, _)| r)
    }

    #[test]
    fn a_browser_page_of_another_site_cannot_drive_the_lab() {
        let g = guard("127.0.0.1:39091", Access::default(), Checks::Control);
        let json = ("content-type", "application/json");
        let host = ("host", "127.0.0.1:39091");
        // The cross-site form or text/plain POST a page may send unasked.
        let page = [
            host,
            ("origin", "http://evil.example"),
            ("content-type", "text/plain"),
        ];
        assert_eq!(reason(&g, Method::POST, &page), Some(Reason::Origin));
        assert_eq!(
            reason(&g, Method::POST, &[host, ("content-type", "text/plain")]),
            Some(Reason::ContentType)
        );
        assert_eq!(reason(&g, Method::POST, &[host]), Some(Reason::ContentType));
        // DNS rebinding: the page's own name, pointing at loopback.
        assert_eq!(
            reason(&g, Method::GET, &[("host", "evil.example:39091")]),
            Some(Reason::Host)
        );
        assert_eq!(reason(&g, Method::GET, &[]), Some(Reason::Host));
        // curl on loopback, by address or by name; the API's own origin.
        assert_eq!(reason(&g, Method::POST, &[host, json]), None);
        assert_eq!(
            reason(&g, Method::POST, &[("host", "localhost:39091"), json]),
            None
        );
        assert_eq!(
            reason(
                &g,
                Method::POST,
                &[
                    ("host", "LOCALHOST."),
                    ("content-type", "Application/JSON; charset=utf-8")
                ]
            ),
            None
        );
        assert_eq!(
            reason(
                &g,
                Method::POST,
                &[host, json, ("origin", "http://localhost:39091")]
            ),
            None
        );
        // Another local server's page is another origin.
        assert_eq!(
            reason(
                &g,
                Method::POST,
                &[host, json, ("origin", "http://localhost:3000")]
            ),
            Some(Reason::Origin)
        );
        assert_eq!(
            reason(&g, Method::POST, &[host, json, ("origin", "null")]),
            Some(Reason::Origin)
        );
        assert_eq!(
            reason(
                &g,
                Method::POST,
                &[host, json, ("origin", "https://127.0.0.1:39091")]
            ),
            Some(Reason::Origin)
        );
        // Another address of the machine names it only when bound to all.
        assert_eq!(
            reason(&g, Method::GET, &[("host", "10.0.0.7:39091")]),
            Some(Reason::Host)
        );
        let all = guard("0.0.0.0:9091", Access::default(), Checks::Control);
        assert_eq!(
            reason(&all, Method::GET, &[("host", "10.0.0.7:9091")]),
            None
        );
        assert_eq!(reason(&all, Method::GET, &[("host", "[::1]:9091")]), None);
    }

    #[test]
    fn control_host_names_and_the_token_are_asked_for() {
        let access = Access {
            hosts: vec!["b.lab.svc".into()],
            token: Some(Token::new("0123456789abcdef0123").unwrap()),
            insecure: false,
        };
        let g = guard("0.0.0.0:9091", access, Checks::Control);
        let host = ("host", "b.lab.svc:9091");
        assert_eq!(reason(&g, Method::GET, &[host]), Some(Reason::Token));
        assert_eq!(
            reason(
                &g,
                Method::GET,
                &[host, ("authorization", "Bearer wrong-token-000000")]
            ),
            Some(Reason::Token)
        );
        assert_eq!(
            reason(
                &g,
                Method::GET,
                &[host, ("authorization", "Bearer 0123456789abcdef0123")]
            ),
            None
        );
        assert_eq!(
            reason(&g, Method::GET, &[("host", "c.lab.svc:9091")]),
            Some(Reason::Host)
        );
        // The readiness probe asks for no token.
        assert!(g.check(&Method::GET, "/healthz", &headers(&[host])).is_ok());
    }

    #[test]
    fn the_metrics_endpoint_checks_the_host_alone() {
        let g = guard("127.0.0.1:9100", Access::default(), Checks::ReadOnly);
        assert_eq!(
            reason(
                &g,
                Method::GET,
                &[
                    ("host", "127.0.0.1:9100"),
                    ("origin", "http://evil.example")
                ]
            ),
            None
        );
        assert_eq!(
            reason(&g, Method::GET, &[("host", "evil.example")]),
            Some(Reason::Host)
        );
    }

    #[test]
    fn authorities_split_into_host_and_port() {
        assert_eq!(
            split_authority("Example.COM:80"),
            ("example.com".into(), Some(80))
        );
        assert_eq!(split_authority("[::1]:9091"), ("::1".into(), Some(9091)));
        assert_eq!(split_authority("[::1]"), ("::1".into(), None));
        assert_eq!(split_authority("localhost"), ("localhost".into(), None));
        assert_eq!(split_authority("a:b"), ("a:b".into(), None));
    }
}
