//! Don't-retry signals: how a callee tells its caller whether to come back,
//! in the dialect of each retry policy of the industry (SPEC section 8).
//!
//! # Why signals
//!
//! A budget caps *how many* retries an edge may send; a signal says *which*
//! answers must not be retried at all. Ownership's claim header is one such
//! signal: an error its callee disowns (`x-error-claim: false`) is not worth
//! retrying, because the failure lies further down. The other stacks carry
//! the same idea in their own headers, and a preset is only tested fairly
//! against ownership when services speak its dialect on the wire. Each
//! dialect here has two halves, both pure functions over header bytes:
//!
//! * **reading** an answer ([`Signal::read`], or one `read_*` function per
//!   dialect) gives an [`Advice`]: retry, retry after a delay, don't retry
//!   (and why), or [`Advice::Silent`] when the dialect says nothing and the
//!   other rules (attempts, budget) decide;
//! * **writing** an answer ([`Signal::refusal_headers`]) gives the headers a
//!   service that sheds a request or is overloaded sets, so its callers'
//!   reader understands it. Such an answer carries [`REFUSAL_STATUS`].
//!
//! A success is never retried, so every reader is [`Advice::Silent`] on a
//! status that is not an error ([`is_error_status`]).
//!
//! # The dialects and their sources
//!
//! | signal        | header(s)                                                     | source |
//! |---------------|---------------------------------------------------------------|--------|
//! | `ownership`   | [`DEFAULT_CLAIM_HEADER`]                                      | SPEC section 1 (Uber's error ownership) |
//! | `nack`        | [`NACK_HEADER`], [`NONRETRYABLE_NACK_HEADER`], [`RETRY_AFTER_HEADER`] | Finagle `HttpNackFilter` |
//! | `overloaded`  | [`ENVOY_OVERLOADED_HEADER`]                                   | Envoy router, `x-envoy-overloaded` |
//! | `pushback`    | [`GRPC_PUSHBACK_HEADER`]                                      | gRPC proposal A6, "Pushback" |
//! | `retry-after` | [`RETRY_AFTER_HEADER`]                                        | RFC 9110 section 10.2.3 |
//! | `sre`         | [`SRE_OVERLOAD_HEADER`]                                       | Google SRE book, "Handling Overload" |
//!
//! * **`ownership`**: claim `true` → retry; `false` → don't retry (the
//!   callee disowned it); missing or malformed → silent (ownership retries
//!   unmarked errors, SPEC section 1).
//! * **`nack`** (Finagle): only a 503 is a nack. With
//!   `finagle-http-nonretryable-nack` it must not be retried; with
//!   `finagle-http-nack`, or with `Retry-After: 0`, it is a retryable nack
//!   (the request was not processed, so retrying is safe). Finagle tests
//!   each header for *presence* and never reads its value, and so does
//!   [`read_nack`]. If both nack headers are present, the non-retryable one
//!   wins: a contradictory answer must not start a retry. Writing: a shed
//!   request gets `finagle-http-nack: true` and `retry-after: 0`, exactly
//!   what Finagle's server sends for a retryable nack; an overloaded service
//!   gets `finagle-http-nonretryable-nack: true`.
//! * **`overloaded`** (Envoy): an error carrying `x-envoy-overloaded` is
//!   never retried. Envoy's router tests the header for presence, so any
//!   value (even `false`) counts. Writing: `x-envoy-overloaded: true` for
//!   both kinds of refusal, as Envoy sets on a circuit-breaker overflow or
//!   when its overload manager sheds. (Envoy 1.15 made upstream
//!   `x-envoy-overloaded` answers retryable by default; SPEC section 8
//!   follows the long-standing rule, which is also what a caller facing a
//!   local overflow sees.)
//! * **`pushback`** (gRPC A6): `grpc-retry-pushback-ms` holding a decimal
//!   integer n ≥ 0 means retry after n ms; a negative value, or one that is
//!   not a number, means don't retry. Parsing follows grpc-go (`Atoi`: an
//!   optional sign, then digits, within i64; surrounding whitespace is
//!   trimmed as HTTP does). No header → silent. Writing: a shed request gets
//!   the caller's back-off hint in ms; an overloaded service gets `-1`.
//! * **`retry-after`**: `Retry-After` in delay-seconds (one or more digits)
//!   → retry after that many seconds. The HTTP-date form is read as
//!   [`Advice::Silent`]: this module has no wall clock (clocks are injected
//!   elsewhere, and a date would also need the two hosts' clocks to agree),
//!   so the other rules decide. Any other value is malformed and, as
//!   RFC 9110 lets a recipient do, ignored: silent too. The dialect has no
//!   way to say "never", so both kinds of refusal write the back-off hint,
//!   rounded *up* to whole seconds so a caller never comes back early.
//! * **`sre`** (Google's SRE book): a backend that rejects a request answers
//!   "task overloaded", which may be retried, or "overloaded; don't retry".
//!   The book names the two answers but no wire format; here they are
//!   [`SRE_OVERLOAD_HEADER`] with the value [`SRE_TASK_OVERLOADED`] or
//!   [`SRE_DONT_RETRY`] (trimmed, compared exactly; any other value is
//!   silent). Writing: a shed request is "task overloaded", an overloaded
//!   service says "don't retry". Which of the two a backend means is the
//!   [`retry_counter`](crate::retry_counter) histogram's decision; the
//!   callers send the attempt number it counts in
//!   [`RETRY_ATTEMPT_HEADER`](crate::retry_counter::RETRY_ATTEMPT_HEADER).
//!
//! ```
//! use std::time::Duration;
//! use error_ownership::signal::{Advice, DontRetry, Refusal, Signal};
//!
//! // A gRPC server that is overloaded asks its callers not to retry.
//! let headers = Signal::Pushback.refusal_headers(Refusal::Overloaded, Duration::from_millis(50));
//! assert_eq!(headers, vec![("grpc-retry-pushback-ms", "-1".to_string())]);
//!
//! // Its caller reads the answer in the same dialect.
//! let advice = Signal::Pushback.read(503, |name| {
//!     headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_bytes())
//! });
//! assert_eq!(advice, Advice::DontRetry(DontRetry::PushbackNegative));
//!
//! // A Finagle nack is retryable unless it says otherwise.
//! assert_eq!(
//!     error_ownership::signal::read_nack(503, Some(b"true"), None, None),
//!     Advice::Retry
//! );
//! assert_eq!(Signal::parse("retry-after"), Some(Signal::RetryAfter));
//! ```

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{is_error_status, trim_ascii, Claim, DEFAULT_CLAIM_HEADER};

/// Finagle's retryable nack header (`HttpNackFilter.RetryableNackHeader`).
pub const NACK_HEADER: &str = "finagle-http-nack";
/// Finagle's non-retryable nack header
/// (`HttpNackFilter.NonRetryableNackHeader`).
pub const NONRETRYABLE_NACK_HEADER: &str = "finagle-http-nonretryable-nack";
/// Envoy's overload header, set on a circuit-breaker overflow or a shed.
pub const ENVOY_OVERLOADED_HEADER: &str = "x-envoy-overloaded";
/// gRPC A6's server pushback, in milliseconds.
pub const GRPC_PUSHBACK_HEADER: &str = "grpc-retry-pushback-ms";
/// HTTP's `Retry-After` (lowercase, as HTTP/2 and the `http` crate spell it).
pub const RETRY_AFTER_HEADER: &str = "retry-after";
/// The SRE dialect's rejection header: which of the SRE book's two
/// overload answers a rejection is.
pub const SRE_OVERLOAD_HEADER: &str = "x-overload";
/// [`SRE_OVERLOAD_HEADER`]'s "task overloaded": the caller may retry.
pub const SRE_TASK_OVERLOADED: &str = "task-overloaded";
/// [`SRE_OVERLOAD_HEADER`]'s "overloaded; don't retry".
pub const SRE_DONT_RETRY: &str = "dont-retry";
/// The status of a nack, and of every refusal written by this module.
pub const REFUSAL_STATUS: u16 = 503;

/// Which answers forbid a retry: the `signal` field of an edge's policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Signal {
    /// The claim header of SPEC section 1.
    Ownership,
    /// Finagle's HTTP nacks.
    Nack,
    /// Envoy's `x-envoy-overloaded`.
    Overloaded,
    /// gRPC A6's `grpc-retry-pushback-ms`.
    Pushback,
    /// HTTP's `Retry-After`.
    RetryAfter,
    /// The SRE book's "task overloaded" and "overloaded; don't retry".
    Sre,
}

/// What an answer's signal says about retrying it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advice {
    /// The callee invites a retry now.
    Retry,
    /// The callee invites a retry once this delay has passed.
    RetryAfter(Duration),
    /// The callee forbids a retry, for this reason.
    DontRetry(DontRetry),
    /// The dialect says nothing about this answer: the other rules decide.
    Silent,
}

/// Why a signal forbade a retry; the reason a suppressed retry is counted
/// under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum DontRetry {
    /// `ownership`: the callee disowned its error (claim `false`).
    Unclaimed,
    /// `nack`: a 503 with `finagle-http-nonretryable-nack`.
    NonRetryableNack,
    /// `overloaded`: the answer carried `x-envoy-overloaded`.
    Overloaded,
    /// `pushback`: `grpc-retry-pushback-ms` was negative.
    PushbackNegative,
    /// `pushback`: `grpc-retry-pushback-ms` was not a number.
    PushbackMalformed,
    /// `sre`: the backend answered "overloaded; don't retry".
    OverloadedDontRetry,
    /// The edge's retry conditions (`retry_on`) do not cover this failure:
    /// a status, or a missing answer, its retrier does not retry.
    NotRetriable,
}

impl DontRetry {
    /// The key this reason is reported under.
    pub fn key(self) -> &'static str {
        match self {
            DontRetry::Unclaimed => "unclaimed",
            DontRetry::NonRetryableNack => "nonretryable-nack",
            DontRetry::Overloaded => "overloaded",
            DontRetry::PushbackNegative => "pushback-negative",
            DontRetry::PushbackMalformed => "pushback-malformed",
            DontRetry::OverloadedDontRetry => "overloaded-dont-retry",
            DontRetry::NotRetriable => "not-retriable",
        }
    }
}

/// Why a service refuses a request without serving it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// The request was shed before any work (queue full, over capacity):
    /// it is safe to try again later.
    Shed,
    /// The service is overloaded and asks its callers not to retry.
    Overloaded,
}

impl Signal {
    /// Every signal, in SPEC section 8's order.
    pub const ALL: [Signal; 6] = [
        Signal::Ownership,
        Signal::Nack,
        Signal::Overloaded,
        Signal::Pushback,
        Signal::RetryAfter,
        Signal::Sre,
    ];

    /// Reads a signal's YAML/CLI word; `None` for an unknown word.
    pub fn parse(word: &str) -> Option<Signal> {
        Signal::ALL.into_iter().find(|s| s.name() == word)
    }

    /// The word used in YAML, on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Ownership => "ownership",
            Signal::Nack => "nack",
            Signal::Overloaded => "overloaded",
            Signal::Pushback => "pushback",
            Signal::RetryAfter => "retry-after",
            Signal::Sre => "sre",
        }
    }

    /// The response headers this dialect reads, so a caller knows which to
    /// look up.
    pub fn headers(self) -> &'static [&'static str] {
        match self {
            Signal::Ownership => &[DEFAULT_CLAIM_HEADER],
            Signal::Nack => &[NACK_HEADER, NONRETRYABLE_NACK_HEADER, RETRY_AFTER_HEADER],
            Signal::Overloaded => &[ENVOY_OVERLOADED_HEADER],
            Signal::Pushback => &[GRPC_PUSHBACK_HEADER],
            Signal::RetryAfter => &[RETRY_AFTER_HEADER],
            Signal::Sre => &[SRE_OVERLOAD_HEADER],
        }
    }

    /// Reads an answer in this dialect. `header` is asked for each name in
    /// [`Signal::headers`] and returns that header's raw value, if present.
    /// For `ownership` it is asked for [`DEFAULT_CLAIM_HEADER`]; a caller
    /// with a renamed claim header answers with that header instead.
    pub fn read<'a>(
        self,
        status: u16,
        header: impl Fn(&'static str) -> Option<&'a [u8]>,
    ) -> Advice {
        match self {
            Signal::Ownership => read_ownership(status, header(DEFAULT_CLAIM_HEADER)),
            Signal::Nack => read_nack(
                status,
                header(NACK_HEADER),
                header(NONRETRYABLE_NACK_HEADER),
                header(RETRY_AFTER_HEADER),
            ),
            Signal::Overloaded => read_overloaded(status, header(ENVOY_OVERLOADED_HEADER)),
            Signal::Pushback => read_pushback(status, header(GRPC_PUSHBACK_HEADER)),
            Signal::RetryAfter => read_retry_after(status, header(RETRY_AFTER_HEADER)),
            Signal::Sre => read_sre(status, header(SRE_OVERLOAD_HEADER)),
        }
    }

    /// The headers a service refusing a request sets so that callers
    /// reading this dialect understand it; the answer's status is
    /// [`REFUSAL_STATUS`]. `retry_in` is the back-off the service suggests,
    /// used by the dialects that carry a delay (`pushback` for a shed,
    /// `retry-after` for both); the others ignore it.
    pub fn refusal_headers(
        self,
        refusal: Refusal,
        retry_in: Duration,
    ) -> Vec<(&'static str, String)> {
        match (self, refusal) {
            // A service that sheds or is overloaded caused its own error.
            (Signal::Ownership, _) => {
                vec![(DEFAULT_CLAIM_HEADER, Claim::wire_value(true).to_string())]
            }
            (Signal::Nack, Refusal::Shed) => vec![
                (NACK_HEADER, "true".to_string()),
                (RETRY_AFTER_HEADER, "0".to_string()),
            ],
            (Signal::Nack, Refusal::Overloaded) => {
                vec![(NONRETRYABLE_NACK_HEADER, "true".to_string())]
            }
            (Signal::Overloaded, _) => vec![(ENVOY_OVERLOADED_HEADER, "true".to_string())],
            (Signal::Pushback, Refusal::Shed) => {
                vec![(GRPC_PUSHBACK_HEADER, retry_in.as_millis().to_string())]
            }
            (Signal::Pushback, Refusal::Overloaded) => {
                vec![(GRPC_PUSHBACK_HEADER, "-1".to_string())]
            }
            (Signal::RetryAfter, _) => {
                let secs = retry_in.as_secs() + u64::from(retry_in.subsec_nanos() > 0);
                vec![(RETRY_AFTER_HEADER, secs.to_string())]
            }
            (Signal::Sre, Refusal::Shed) => {
                vec![(SRE_OVERLOAD_HEADER, SRE_TASK_OVERLOADED.to_string())]
            }
            (Signal::Sre, Refusal::Overloaded) => {
                vec![(SRE_OVERLOAD_HEADER, SRE_DONT_RETRY.to_string())]
            }
        }
    }
}

/// `ownership`: claim `true` → retry, `false` → don't, missing or
/// malformed → silent.
pub fn read_ownership(status: u16, claim: Option<&[u8]>) -> Advice {
    if !is_error_status(status) {
        return Advice::Silent;
    }
    match Claim::parse(claim) {
        Claim::Claimed => Advice::Retry,
        Claim::Unclaimed => Advice::DontRetry(DontRetry::Unclaimed),
        Claim::Missing => Advice::Silent,
    }
}

/// `nack` (Finagle): only a 503 is a nack. The nack headers count by
/// presence; `retry_after` makes a retryable nack only when it is exactly
/// `0`, as in Finagle's `HttpNackFilter`.
pub fn read_nack(
    status: u16,
    nack: Option<&[u8]>,
    nonretryable_nack: Option<&[u8]>,
    retry_after: Option<&[u8]>,
) -> Advice {
    if status != REFUSAL_STATUS {
        return Advice::Silent;
    }
    if nonretryable_nack.is_some() {
        Advice::DontRetry(DontRetry::NonRetryableNack)
    } else if nack.is_some() || retry_after.map(trim_ascii) == Some(b"0") {
        Advice::Retry
    } else {
        Advice::Silent
    }
}

/// `overloaded` (Envoy): an error carrying `x-envoy-overloaded`, whatever
/// its value, is never retried.
pub fn read_overloaded(status: u16, overloaded: Option<&[u8]>) -> Advice {
    if is_error_status(status) && overloaded.is_some() {
        Advice::DontRetry(DontRetry::Overloaded)
    } else {
        Advice::Silent
    }
}

/// `pushback` (gRPC A6): n ≥ 0 → retry after n ms; negative → don't
/// retry; not a number → don't retry; absent → silent.
pub fn read_pushback(status: u16, pushback: Option<&[u8]>) -> Advice {
    if !is_error_status(status) {
        return Advice::Silent;
    }
    let Some(raw) = pushback else {
        return Advice::Silent;
    };
    let parsed = std::str::from_utf8(trim_ascii(raw))
        .ok()
        .and_then(|s| s.parse::<i64>().ok());
    match parsed {
        None => Advice::DontRetry(DontRetry::PushbackMalformed),
        Some(n) if n < 0 => Advice::DontRetry(DontRetry::PushbackNegative),
        Some(n) => Advice::RetryAfter(Duration::from_millis(n.unsigned_abs())),
    }
}

/// `retry-after`: delay-seconds → retry after that many seconds; an
/// HTTP-date, a malformed value or no header → silent.
pub fn read_retry_after(status: u16, retry_after: Option<&[u8]>) -> Advice {
    if !is_error_status(status) {
        return Advice::Silent;
    }
    let Some(raw) = retry_after else {
        return Advice::Silent;
    };
    let v = trim_ascii(raw);
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return Advice::Silent;
    }
    // All ASCII digits, so valid UTF-8; only an overflow can fail.
    match std::str::from_utf8(v)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        Some(secs) => Advice::RetryAfter(Duration::from_secs(secs)),
        None => Advice::Silent,
    }
}

/// `sre`: "task overloaded" → retry; "overloaded; don't retry" → don't;
/// any other value, or none → silent.
pub fn read_sre(status: u16, overload: Option<&[u8]>) -> Advice {
    if !is_error_status(status) {
        return Advice::Silent;
    }
    match overload.map(trim_ascii) {
        Some(v) if v == SRE_DONT_RETRY.as_bytes() => {
            Advice::DontRetry(DontRetry::OverloadedDontRetry)
        }
        Some(v) if v == SRE_TASK_OVERLOADED.as_bytes() => Advice::Retry,
        _ => Advice::Silent,
    }
}

#[cfg(test)]
mod tests;
