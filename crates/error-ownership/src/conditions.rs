//! Retry conditions: which failed attempts an edge retries at all, in
//! Envoy's words (`x-envoy-retry-on`, a route's `retry_on`).
//!
//! A mesh decides whether to retry on what the callee answered, not on "an
//! error": Istio's default retries a 503 and a refused connection and
//! nothing else, Linkerd's `retry.linkerd.io/http: 5xx` any 5xx, a Gateway
//! API route the codes it lists. [`RetryOn`] is that set, a plain `Copy`
//! value, and [`RetryOn::allows`] asks it about one [`Failure`]: an answered
//! status (with the answer's headers, for `retriable-headers`), a refused
//! connection, a reset, or a per-try timeout.
//!
//! The tokens and what each one matches (Envoy's router documentation,
//! `config/route/v3/route_components.proto` and `x-envoy-retry-on`):
//!
//! | token | matches |
//! |---|---|
//! | `5xx` | any 5xx, a reset (a refused stream too), a refused connection, a per-try timeout |
//! | `gateway-error` | 502, 503, 504, a reset (a refused stream too), a refused connection, a per-try timeout |
//! | `reset` | a reset (a refused stream too), a refused connection, a per-try timeout |
//! | `connect-failure` | a refused connection |
//! | `timeout` | a per-try timeout |
//! | `retriable-4xx` | 409 |
//! | `envoy-ratelimited` | 429 |
//! | `retriable-status-codes` | the codes listed beside it |
//! | `retriable-headers` | an answer carrying the header with that value |
//! | `refused-stream` | an HTTP/2 stream the callee refused (`REFUSED_STREAM`, unprocessed): never over HTTP/1.1 |
//! | `cancelled`, `unavailable`, `deadline-exceeded`, `internal`, `resource-exhausted` | nothing over plain HTTP/1.1 (a `grpc-status`) |
//!
//! [`RetryOn::ANY`] is the lab's own retriers' set: every error (a status
//! of 500 or more, or 429) and every attempt with no answer.
//!
//! ```
//! use error_ownership::conditions::{Condition, Failure, RetryOn};
//!
//! // Istio with no retries configured: a refused connection and a 503.
//! let istio = RetryOn::EMPTY
//!     .with(Condition::ConnectFailure)
//!     .with_status(503);
//! assert!(istio.allows(Failure::Status(503), |_| None));
//! assert!(!istio.allows(Failure::Status(500), |_| None));
//! assert!(istio.allows(Failure::Refused, |_| None));
//! // Envoy retrying only an answer that claims its error.
//! let claimed = RetryOn::EMPTY.with_header("x-error-claim", "true").unwrap();
//! assert!(claimed.allows(Failure::Status(503), |h| (h == "x-error-claim").then_some(&b"true"[..])));
//! assert!(!claimed.allows(Failure::Status(503), |_| Some(&b"false"[..])));
//! ```

use std::fmt;

/// One of Envoy's retry-on tokens that is not a list of codes or headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Condition {
    /// `5xx`.
    FiveXx,
    /// `gateway-error`.
    GatewayError,
    /// `reset`.
    Reset,
    /// `connect-failure`.
    ConnectFailure,
    /// `timeout`: the per-try timeout.
    Timeout,
    /// `retriable-4xx`: a 409.
    Retriable4xx,
    /// `envoy-ratelimited`: a 429.
    RateLimited,
    /// `refused-stream`: an HTTP/2 `REFUSED_STREAM` (never over HTTP/1.1).
    RefusedStream,
    /// `cancelled` (gRPC).
    Cancelled,
    /// `unavailable` (gRPC).
    Unavailable,
    /// `deadline-exceeded` (gRPC).
    DeadlineExceeded,
    /// `internal` (gRPC).
    Internal,
    /// `resource-exhausted` (gRPC).
    ResourceExhausted,
}

impl Condition {
    /// Every token, with its word.
    pub const ALL: [(&'static str, Condition); 13] = [
        ("5xx", Condition::FiveXx),
        ("gateway-error", Condition::GatewayError),
        ("reset", Condition::Reset),
        ("connect-failure", Condition::ConnectFailure),
        ("timeout", Condition::Timeout),
        ("retriable-4xx", Condition::Retriable4xx),
        ("envoy-ratelimited", Condition::RateLimited),
        ("refused-stream", Condition::RefusedStream),
        ("cancelled", Condition::Cancelled),
        ("unavailable", Condition::Unavailable),
        ("deadline-exceeded", Condition::DeadlineExceeded),
        ("internal", Condition::Internal),
        ("resource-exhausted", Condition::ResourceExhausted),
    ];

    /// The token's word.
    pub fn name(self) -> &'static str {
        Condition::ALL
            .iter()
            .find(|(_, c)| *c == self)
            .map_or("?", |(w, _)| w)
    }

    /// Parses a token.
    pub fn parse(word: &str) -> Option<Condition> {
        Condition::ALL
            .iter()
            .find(|(w, _)| *w == word)
            .map(|(_, c)| *c)
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }

    /// Whether this token names what never happens over HTTP/1.1 (an
    /// HTTP/2 `REFUSED_STREAM`, a `grpc-status`): over HTTP/1.1 it
    /// matches nothing.
    pub fn never_over_http1(self) -> bool {
        matches!(
            self,
            Condition::RefusedStream
                | Condition::Cancelled
                | Condition::Unavailable
                | Condition::DeadlineExceeded
                | Condition::Internal
                | Condition::ResourceExhausted
        )
    }

    /// Whether this token alone matches `f`.
    pub fn matches(self, f: Failure) -> bool {
        if self == Condition::RefusedStream {
            return f == Failure::RefusedStream;
        }
        if self.never_over_http1() {
            return false;
        }
        let no_answer = matches!(
            f,
            Failure::Refused | Failure::Reset | Failure::RefusedStream | Failure::Timeout
        );
        match self {
            Condition::FiveXx => {
                no_answer || matches!(f, Failure::Status(s) if (500..600).contains(&s))
            }
            Condition::GatewayError => no_answer || matches!(f, Failure::Status(502..=504)),
            Condition::Reset => no_answer,
            Condition::ConnectFailure => f == Failure::Refused,
            Condition::Timeout => f == Failure::Timeout,
            Condition::Retriable4xx => f == Failure::Status(409),
            Condition::RateLimited => f == Failure::Status(429),
            // Never over HTTP/1.1 (returned above).
            _ => false,
        }
    }
}

/// How one attempt failed, as a retry condition sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Failure {
    /// The callee answered with this status.
    Status(u16),
    /// The connection was refused: the callee was never reached.
    Refused,
    /// The connection was reset, or closed before an answer.
    Reset,
    /// The callee refused the HTTP/2 stream (`REFUSED_STREAM`) before
    /// processing it: a reset that Envoy's `refused-stream` names apart.
    RefusedStream,
    /// No answer within the per-try timeout.
    Timeout,
}

impl Failure {
    /// The status a caller that passes this failure up as `same` answers:
    /// the status itself, 504 for a timeout, 502 for a refused or reset
    /// connection (what a gateway answers for each).
    pub fn passed_status(self) -> u16 {
        match self {
            Failure::Status(s) => s,
            Failure::Timeout => 504,
            Failure::Refused | Failure::Reset | Failure::RefusedStream => 502,
        }
    }
}

/// The most bytes of a `retriable-headers` name or value.
pub const MAX_HEADER_BYTES: usize = 48;
/// The most `retriable-headers` rules one set holds.
pub const MAX_HEADER_RULES: usize = 2;

/// `retriable-headers`: an answer carrying header `name` with exactly
/// `value`. Held inline, so a [`RetryOn`] stays `Copy`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct HeaderRule {
    name: [u8; MAX_HEADER_BYTES],
    name_len: u8,
    value: [u8; MAX_HEADER_BYTES],
    value_len: u8,
}

impl HeaderRule {
    /// A rule for `name` (compared lower-cased) equal to `value`; `None`
    /// when either is longer than [`MAX_HEADER_BYTES`].
    pub fn new(name: &str, value: &str) -> Option<HeaderRule> {
        if name.len() > MAX_HEADER_BYTES || value.len() > MAX_HEADER_BYTES {
            return None;
        }
        let mut rule = HeaderRule {
            name: [0; MAX_HEADER_BYTES],
            name_len: name.len() as u8,
            value: [0; MAX_HEADER_BYTES],
            value_len: value.len() as u8,
        };
        rule.name[..name.len()].copy_from_slice(name.to_ascii_lowercase().as_bytes());
        rule.value[..value.len()].copy_from_slice(value.as_bytes());
        Some(rule)
    }

    /// The header's name, lower-cased.
    pub fn name(&self) -> &str {
        std::str::from_utf8(&self.name[..self.name_len as usize]).unwrap_or("")
    }

    /// The value it must have.
    pub fn value(&self) -> &[u8] {
        &self.value[..self.value_len as usize]
    }
}

impl fmt::Debug for HeaderRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}",
            self.name(),
            String::from_utf8_lossy(self.value())
        )
    }
}

/// A set of retry conditions: the tokens, the retriable status codes and
/// the retriable headers, or [`RetryOn::ANY`].
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RetryOn {
    any: bool,
    tokens: u16,
    /// Statuses 0..640, one bit each.
    codes: [u64; 10],
    headers: [Option<HeaderRule>; MAX_HEADER_RULES],
}

impl Default for RetryOn {
    fn default() -> Self {
        RetryOn::ANY
    }
}

impl RetryOn {
    /// Every error and every attempt with no answer: what the lab's own
    /// retriers (and every preset before the mesh presets) retry.
    pub const ANY: RetryOn = RetryOn {
        any: true,
        tokens: 0,
        codes: [0; 10],
        headers: [None; MAX_HEADER_RULES],
    };

    /// Nothing at all: a start for [`with`](Self::with) and its kin.
    pub const EMPTY: RetryOn = RetryOn {
        any: false,
        tokens: 0,
        codes: [0; 10],
        headers: [None; MAX_HEADER_RULES],
    };

    /// This set and `c`.
    pub const fn with(mut self, c: Condition) -> RetryOn {
        self.tokens |= 1 << (c as u16);
        self
    }

    /// This set and status `code` (`retriable-status-codes`); a code over
    /// 639 is none.
    pub const fn with_status(mut self, code: u16) -> RetryOn {
        if code < 640 {
            self.codes[(code / 64) as usize] |= 1 << (code % 64);
        }
        self
    }

    /// This set and a `retriable-headers` rule; `None` when the rule is too
    /// long or the set holds [`MAX_HEADER_RULES`] already.
    pub fn with_header(mut self, name: &str, value: &str) -> Option<RetryOn> {
        let rule = HeaderRule::new(name, value)?;
        let free = self.headers.iter_mut().find(|h| h.is_none())?;
        *free = Some(rule);
        Some(self)
    }

    /// Whether this is [`RetryOn::ANY`].
    pub fn is_any(&self) -> bool {
        self.any
    }

    /// Whether `c` is in the set.
    pub fn has(&self, c: Condition) -> bool {
        self.tokens & c.bit() != 0
    }

    /// The tokens in the set, in [`Condition::ALL`]'s order.
    pub fn conditions(&self) -> impl Iterator<Item = Condition> + '_ {
        Condition::ALL
            .iter()
            .map(|(_, c)| *c)
            .filter(|c| self.has(*c))
    }

    /// The retriable status codes, ascending.
    pub fn statuses(&self) -> impl Iterator<Item = u16> + '_ {
        (0..640u16).filter(|c| self.codes[(c / 64) as usize] & (1 << (c % 64)) != 0)
    }

    /// The retriable-headers rules.
    pub fn header_rules(&self) -> impl Iterator<Item = &HeaderRule> {
        self.headers.iter().flatten()
    }

    /// Whether the set reads an answer's headers (so a client must keep
    /// them to ask [`allows`](Self::allows)).
    pub fn reads_headers(&self) -> bool {
        self.headers.iter().any(Option::is_some)
    }

    /// Whether a retry of `f` is allowed: any token matches it, its status
    /// is listed, or (an answer) it carries a listed header with its
    /// value. `header` gives an answer's header by lower-case name.
    pub fn allows<'h>(&self, f: Failure, header: impl Fn(&str) -> Option<&'h [u8]>) -> bool {
        if self.any {
            return match f {
                Failure::Status(s) => crate::is_error_status(s),
                _ => true,
            };
        }
        if Condition::ALL
            .iter()
            .any(|(_, c)| self.has(*c) && c.matches(f))
        {
            return true;
        }
        let Failure::Status(s) = f else {
            return false;
        };
        if s < 640 && self.codes[(s / 64) as usize] & (1 << (s % 64)) != 0 {
            return true;
        }
        self.header_rules()
            .any(|r| header(r.name()).is_some_and(|v| v == r.value()))
    }

    /// The set in Envoy's words, comma-separated (`any error` for
    /// [`RetryOn::ANY`], `nothing` for an empty set).
    pub fn describe(&self) -> String {
        if self.any {
            return "any error (5xx, 429, no answer)".into();
        }
        let mut parts: Vec<String> = self.conditions().map(|c| c.name().to_string()).collect();
        let codes: Vec<String> = self.statuses().map(|c| c.to_string()).collect();
        if !codes.is_empty() {
            parts.push(format!("retriable-status-codes [{}]", codes.join(" ")));
        }
        for h in self.header_rules() {
            parts.push(format!("retriable-headers [{h:?}]"));
        }
        if parts.is_empty() {
            "nothing".into()
        } else {
            parts.join(", ")
        }
    }
}

impl fmt::Debug for RetryOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &str) -> Option<&'static [u8]> {
        None
    }

    #[test]
    fn any_is_every_error_and_every_missing_answer() {
        for f in [Failure::Refused, Failure::Reset, Failure::Timeout] {
            assert!(RetryOn::ANY.allows(f, none));
        }
        assert!(RetryOn::ANY.allows(Failure::Status(500), none));
        assert!(RetryOn::ANY.allows(Failure::Status(429), none));
        assert!(!RetryOn::ANY.allows(Failure::Status(404), none));
    }

    #[test]
    fn each_token_matches_what_envoy_documents() {
        let on = |c| RetryOn::EMPTY.with(c);
        let five = on(Condition::FiveXx);
        assert!(five.allows(Failure::Status(501), none));
        assert!(five.allows(Failure::Refused, none));
        assert!(!five.allows(Failure::Status(429), none));
        let gw = on(Condition::GatewayError);
        assert!(gw.allows(Failure::Status(503), none));
        assert!(!gw.allows(Failure::Status(500), none));
        let cf = on(Condition::ConnectFailure);
        assert!(cf.allows(Failure::Refused, none));
        assert!(!cf.allows(Failure::Reset, none));
        assert!(!cf.allows(Failure::Timeout, none));
        assert!(on(Condition::Timeout).allows(Failure::Timeout, none));
        assert!(!on(Condition::Timeout).allows(Failure::Status(504), none));
        assert!(on(Condition::Retriable4xx).allows(Failure::Status(409), none));
        assert!(on(Condition::RateLimited).allows(Failure::Status(429), none));
        for (_, c) in Condition::ALL.iter().skip(7) {
            for f in [
                Failure::Status(503),
                Failure::Refused,
                Failure::Reset,
                Failure::Timeout,
            ] {
                assert!(!on(*c).allows(f, none), "{c:?} {f:?}");
            }
        }
        assert!(!RetryOn::EMPTY.allows(Failure::Status(500), none));
    }

    #[test]
    fn a_refused_stream_is_a_reset_that_refused_stream_names_apart() {
        let on = |c| RetryOn::EMPTY.with(c);
        let refused = on(Condition::RefusedStream);
        assert!(refused.allows(Failure::RefusedStream, none));
        for f in [Failure::Reset, Failure::Refused, Failure::Status(503)] {
            assert!(!refused.allows(f, none), "{f:?}");
        }
        for c in [Condition::FiveXx, Condition::GatewayError, Condition::Reset] {
            assert!(on(c).allows(Failure::RefusedStream, none), "{c:?}");
        }
        for c in [
            Condition::ConnectFailure,
            Condition::Timeout,
            Condition::Unavailable,
        ] {
            assert!(!on(c).allows(Failure::RefusedStream, none), "{c:?}");
        }
        assert!(RetryOn::ANY.allows(Failure::RefusedStream, none));
        assert_eq!(Failure::RefusedStream.passed_status(), 502);
    }

    #[test]
    fn codes_and_headers() {
        let s = RetryOn::EMPTY.with_status(503).with_status(409);
        assert_eq!(s.statuses().collect::<Vec<_>>(), [409, 503]);
        assert!(s.allows(Failure::Status(409), none));
        assert!(!s.allows(Failure::Status(502), none));
        let h = RetryOn::EMPTY.with_header("X-Error-Claim", "true").unwrap();
        assert!(h.reads_headers());
        assert!(h.allows(Failure::Status(500), |n| (n == "x-error-claim")
            .then_some(&b"true"[..])));
        assert!(!h.allows(Failure::Refused, |_| Some(&b"true"[..])));
        let long = "x".repeat(MAX_HEADER_BYTES + 1);
        assert!(RetryOn::EMPTY.with_header(&long, "v").is_none());
        let two = h.with_header("a", "b").unwrap();
        assert!(two.with_header("c", "d").is_none());
    }

    #[test]
    fn names_round_trip_and_describe() {
        for (w, c) in Condition::ALL {
            assert_eq!(Condition::parse(w), Some(c));
            assert_eq!(c.name(), w);
        }
        let s = RetryOn::EMPTY
            .with(Condition::ConnectFailure)
            .with_status(503);
        assert_eq!(
            s.describe(),
            "connect-failure, retriable-status-codes [503]"
        );
        assert_eq!(RetryOn::ANY.describe(), "any error (5xx, 429, no answer)");
        let top = RetryOn::EMPTY.with_status(599);
        assert!(top.allows(Failure::Status(599), none));
        assert_eq!(top.statuses().collect::<Vec<_>>(), [599]);
    }

    #[test]
    fn passed_statuses() {
        assert_eq!(Failure::Status(503).passed_status(), 503);
        assert_eq!(Failure::Timeout.passed_status(), 504);
        assert_eq!(Failure::Refused.passed_status(), 502);
    }
}
