//! Error ownership: the rules that let only the caller right above a
//! failure retry it, with no I/O.
//!
//! # Why ownership
//!
//! Retries multiply as they climb a call chain. With two attempts per hop
//! (one retry), a chain A→B→C→D→E→F→G in which D fails every request puts
//! 2× the load on B, 4× on C and 8× on D and everything below it, exactly
//! when the failing part of the system can least afford it. A retry budget
//! (a retry may only be sent while retries stay under 10% of first
//! attempts) tames this to (1.1)^depth: 1.1, 1.21, 1.33. Uber's answer goes
//! further: the service that *caused* an error claims it in a response
//! header, every service that merely passed an error up unclaims it, and a
//! caller only retries claimed (or unmarked) errors. Then exactly one hop —
//! the caller right above the owner — retries, and the load below the
//! failure is 1 + B = 1.1× whatever the depth. In Uber's incident of
//! 18 November 2025, retry budgets alone still let a Core Entity service
//! more than five levels deep take 46% to 135% more traffic; ownership
//! stopped 9.5 million spurious requests across the mesh.
//!
//! # What is here
//!
//! This crate holds no I/O, no clock and no random source: the caller
//! passes the time and the random numbers in, so every rule can be tested
//! as a pure function. It *classifies* what came back from a call
//! ([`Classified`]), *decides* whether to retry it ([`retry`]), whether a
//! retry may be afforded ([`budget`]; the industry's other budget models are
//! [`tokens`] for gRPC, [`quota`] for the AWS SDKs and [`concurrency`] for
//! Envoy), whether a client should not even send a first attempt to a
//! backend that rejects most of them ([`throttle`], the SRE book's adaptive
//! throttling) and whether a backend that must reject a request should say
//! "don't retry" ([`retry_counter`], the SRE book's retry counter), how many requests a service should serve at once
//! ([`gradient`], Envoy's adaptive concurrency; [`limiter`], Netflix's
//! AIMD and Vegas), when to hedge a slow
//! attempt ([`hedge`], gRPC A6), which of a callee's hosts to stop
//! sending to ([`outlier`], Envoy's outlier detection), how long to wait
//! ([`backoff`]), whether a failing service owns
//! its error ([`claim`]), and what the other stacks' don't-retry headers
//! say ([`signal`]). The [`attempt`]
//! state machine puts the client-side decisions together into the one retry
//! loop of a logical call, fed the classified answer of each attempt; the
//! edge's resolved numbers (attempts, budget, ownership, backoff) come in
//! a [`policy::EdgePolicy`], a plain value with no tie to any
//! configuration file. chaoslab's fleet wires these rules to axum and
//! reqwest, and its rule simulation drives the same machine.
//!
//! ```
//! use error_ownership::{Claim, Classified, retry::{decide, RetryVerdict}};
//!
//! // D failed on its own and claimed the error: its caller C retries.
//! let from_d = Classified::Error { claim: Claim::Claimed };
//! assert_eq!(decide(from_d, true), RetryVerdict::Retry);
//! // C passes the error up unclaimed: B must not retry it.
//! let from_c = Classified::Error { claim: Claim::Unclaimed };
//! assert_eq!(decide(from_c, true), RetryVerdict::Suppress);
//! // Without ownership every error is retried, and the storm grows.
//! assert_eq!(decide(from_c, false), RetryVerdict::Retry);
//! ```

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod attempt;
// The README's example is compiled and run with the doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
pub mod backoff;
pub mod breaker;
pub mod budget;
pub mod claim;
pub mod concurrency;
pub mod conditions;
pub mod edge_budget;
pub mod gradient;
pub mod hedge;
pub mod learn;
pub mod limiter;
pub mod outlier;
pub mod policy;
pub mod quota;
pub mod retry;
pub mod retry_counter;
pub mod signal;
pub mod throttle;
pub mod tokens;
mod window;

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// The default name of the claim header.
pub const DEFAULT_CLAIM_HEADER: &str = "x-error-claim";

/// What the claim header on an error response said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Claim {
    /// `true` or `claimed`: the callee caused the error itself.
    Claimed,
    /// `false` or `unclaimed`: the callee passed up an error from below.
    Unclaimed,
    /// No header, or a value that is neither: the callee did not say.
    Missing,
}

impl Claim {
    /// All three values, in report order (`true`, `false`, `missing`).
    pub const ALL: [Claim; 3] = [Claim::Claimed, Claim::Unclaimed, Claim::Missing];

    /// Reads a claim header's raw value. Anything unrecognised is `Missing`,
    /// as SPEC section 1 asks: a malformed header must never be trusted.
    pub fn parse(value: Option<&[u8]>) -> Claim {
        let Some(v) = value else {
            return Claim::Missing;
        };
        let v = trim_ascii(v);
        if v.eq_ignore_ascii_case(b"true") || v.eq_ignore_ascii_case(b"claimed") {
            Claim::Claimed
        } else if v.eq_ignore_ascii_case(b"false") || v.eq_ignore_ascii_case(b"unclaimed") {
            Claim::Unclaimed
        } else {
            Claim::Missing
        }
    }

    /// Reads every value a claim header arrived with. Exactly one value is
    /// read by [`Claim::parse`]; none, or more than one, is `Missing`: a
    /// header repeated (`true` then `false`, or even `true` twice) is
    /// ambiguous, and which copy a proxy keeps is anyone's guess.
    ///
    /// ```
    /// use error_ownership::Claim;
    /// let one: [&[u8]; 1] = [b"true"];
    /// assert_eq!(Claim::parse_all(one), Claim::Claimed);
    /// let two: [&[u8]; 2] = [b"true", b"false"];
    /// assert_eq!(Claim::parse_all(two), Claim::Missing);
    /// assert_eq!(Claim::parse_all(std::iter::empty::<&[u8]>()), Claim::Missing);
    /// ```
    pub fn parse_all<'a>(values: impl IntoIterator<Item = &'a [u8]>) -> Claim {
        Claim::parse(one_value(values))
    }

    /// The value written on the wire for a claim decision.
    pub fn wire_value(claimed: bool) -> &'static str {
        if claimed {
            "true"
        } else {
            "false"
        }
    }

    /// The report key for this value (`"true"`, `"false"`, `"missing"`).
    pub fn key(self) -> &'static str {
        match self {
            Claim::Claimed => "true",
            Claim::Unclaimed => "false",
            Claim::Missing => "missing",
        }
    }

    /// Index into a `[_; 3]` counter array, in [`Claim::ALL`] order.
    pub fn index(self) -> usize {
        match self {
            Claim::Claimed => 0,
            Claim::Unclaimed => 1,
            Claim::Missing => 2,
        }
    }
}

/// The one value of a header that may arrive several times: `None` when
/// it is absent or repeated. A repeated header is read as no header at
/// all: the peer said two things, so it said nothing that can be trusted.
pub fn one_value<'a>(values: impl IntoIterator<Item = &'a [u8]>) -> Option<&'a [u8]> {
    let mut values = values.into_iter();
    let first = values.next()?;
    values.next().is_none().then_some(first)
}

/// A header's value as HTTP combines its field lines (RFC 9110 section
/// 5.3): one line as it is, several joined by `", "`. What the dialects
/// read (SPEC section 8): a singleton sent twice then reads as the
/// malformed value it is (gRPC does not retry on two pushbacks; a
/// Retry-After with two values is ignored), and a header that counts by
/// presence is still present. `None` when absent.
pub fn combined<'a>(values: impl IntoIterator<Item = &'a [u8]>) -> Option<Cow<'a, [u8]>> {
    let mut values = values.into_iter();
    let first = values.next()?;
    let Some(second) = values.next() else {
        return Some(Cow::Borrowed(first));
    };
    let mut v = first.to_vec();
    for more in std::iter::once(second).chain(values) {
        v.extend_from_slice(b", ");
        v.extend_from_slice(more);
    }
    Some(Cow::Owned(v))
}

fn trim_ascii(v: &[u8]) -> &[u8] {
    let start = v
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(v.len());
    let end = v
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &v[start..end]
}

/// How one attempt of an outbound call ended, before any decision is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Classified {
    /// A response that is not an error.
    Success,
    /// An error response (5xx or 429), with what its claim header said.
    Error {
        /// The claim header's value.
        claim: Claim,
    },
    /// No response at all: connection refused, reset, or timed out.
    /// Treated as an error whose claim is missing.
    NoResponse,
}

impl Classified {
    /// Classifies an HTTP status and its claim header value.
    pub fn from_response(status: u16, claim_header: Option<&[u8]>) -> Classified {
        if is_error_status(status) {
            Classified::Error {
                claim: Claim::parse(claim_header),
            }
        } else {
            Classified::Success
        }
    }

    /// The claim this outcome carries; `None` for a success.
    pub fn claim(self) -> Option<Claim> {
        match self {
            Classified::Success => None,
            Classified::Error { claim } => Some(claim),
            Classified::NoResponse => Some(Claim::Missing),
        }
    }

    /// Whether this attempt failed.
    pub fn is_failure(self) -> bool {
        !matches!(self, Classified::Success)
    }
}

/// Whether a status code counts as an error: every 5xx, and 429.
pub fn is_error_status(status: u16) -> bool {
    status >= 500 || status == 429
}

/// Whether a failing dependency fails the request that depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum DependencyMode {
    /// The request cannot succeed without this dependency.
    #[default]
    FailClose,
    /// The request degrades gracefully without it.
    FailOpen,
}

/// How a service decides whether a dependency's failure explains its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Attribution {
    /// Any outbound failure unclaims: the coincidental-error flaw.
    Simple,
    /// Only failures of dependencies declared fail-close unclaim.
    #[default]
    Declared,
    /// Fail-close/fail-open is learned from the service's failure patterns.
    Learned,
}

impl Attribution {
    /// The next mode in the `m` key's cycle.
    pub fn next(self) -> Attribution {
        match self {
            Attribution::Simple => Attribution::Declared,
            Attribution::Declared => Attribution::Learned,
            Attribution::Learned => Attribution::Simple,
        }
    }

    /// The name used in YAML and reports.
    pub fn name(self) -> &'static str {
        match self {
            Attribution::Simple => "simple",
            Attribution::Declared => "declared",
            Attribution::Learned => "learned",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_spelling() {
        assert_eq!(Claim::parse(Some(b"true")), Claim::Claimed);
        assert_eq!(Claim::parse(Some(b"TRUE")), Claim::Claimed);
        assert_eq!(Claim::parse(Some(b" claimed ")), Claim::Claimed);
        assert_eq!(Claim::parse(Some(b"false")), Claim::Unclaimed);
        assert_eq!(Claim::parse(Some(b"Unclaimed")), Claim::Unclaimed);
        assert_eq!(Claim::parse(Some(b"yes")), Claim::Missing);
        assert_eq!(Claim::parse(Some(b"")), Claim::Missing);
        assert_eq!(Claim::parse(Some(b"\xff\xfe")), Claim::Missing);
        assert_eq!(Claim::parse(None), Claim::Missing);
    }

    #[test]
    fn a_repeated_claim_header_is_missing() {
        let v = |vs: &[&'static [u8]]| Claim::parse_all(vs.iter().copied());
        assert_eq!(v(&[b"true"]), Claim::Claimed);
        assert_eq!(v(&[b" false "]), Claim::Unclaimed);
        assert_eq!(v(&[b"true", b"false"]), Claim::Missing);
        assert_eq!(v(&[b"false", b"true"]), Claim::Missing);
        assert_eq!(v(&[b"true", b"true"]), Claim::Missing);
        assert_eq!(v(&[]), Claim::Missing);
        assert_eq!(one_value([&b"a"[..], b"b", b"c"]), None);
    }

    #[test]
    fn classifies_statuses() {
        assert_eq!(Classified::from_response(200, None), Classified::Success);
        assert_eq!(
            Classified::from_response(404, Some(b"true")),
            Classified::Success
        );
        assert_eq!(
            Classified::from_response(500, Some(b"true")),
            Classified::Error {
                claim: Claim::Claimed
            }
        );
        assert_eq!(
            Classified::from_response(503, None),
            Classified::Error {
                claim: Claim::Missing
            }
        );
        assert_eq!(
            Classified::from_response(429, Some(b"false")),
            Classified::Error {
                claim: Claim::Unclaimed
            }
        );
        assert_eq!(Classified::NoResponse.claim(), Some(Claim::Missing));
    }
}
