//! What one attempt sends and reads on the wire: its request's headers
//! (the trace, a sidecar's call number, the deadline, the SRE book's retry
//! counter) and what its answer says ([`Reply`]), read from the status and
//! the headers once. Sending it, its timer and the call around it are
//! `RetryClient`'s, in `client` (kept in one module: the attempt's
//! future is inlined into the call's there).

use std::time::Duration;

use http::HeaderName;
use smallvec::SmallVec;

use super::context::{self, Trace, TraceHeader as _, DEADLINE, TRACE};
use super::edge::EdgeState;
use crate::observe::WireValue;
use crate::sidecar::retries::CALL;
use error_ownership::conditions::{Failure, RetryOn};
use error_ownership::quota::RetryKind;
use error_ownership::retry_counter::RETRY_ATTEMPT_HEADER;
use error_ownership::signal::{Advice, DontRetry, Signal};
use error_ownership::{
    combined, is_error_status, one_value, Claim, Classified, DEFAULT_CLAIM_HEADER,
};

/// [`RETRY_ATTEMPT_HEADER`] as a ready header name.
static RETRY_ATTEMPT: HeaderName = HeaderName::from_static(RETRY_ATTEMPT_HEADER);

/// What one attempt came back with: its class, what the edge's signal
/// made of it, and the kind of failure a retry of it would be.
#[derive(Debug, Clone, Copy)]
pub(super) struct Reply {
    pub(super) class: Classified,
    pub(super) advice: Advice,
    pub(super) kind: RetryKind,
    /// The status, when there was an answer.
    pub(super) status: Option<u16>,
    /// The claim header's value as sent, on an error.
    pub(super) claim: Option<WireValue>,
    /// How it failed, if it did: what the edge's retry conditions and a
    /// caller passing it up as `same` read.
    pub(super) failure: Option<Failure>,
}

impl Reply {
    /// No answer within the attempt's time.
    pub(super) const NONE: Reply = Reply {
        class: Classified::NoResponse,
        advice: Advice::Silent,
        kind: RetryKind::Timeout,
        status: None,
        claim: None,
        failure: Some(Failure::Timeout),
    };

    /// The reply with the edge's retry conditions applied: a failure they
    /// do not cover is not retried, whatever the signal invited.
    pub(super) fn under(mut self, retry_on: &RetryOn, retriable: bool) -> Reply {
        if !retry_on.is_any()
            && self.failure.is_some()
            && !retriable
            && !matches!(self.advice, Advice::DontRetry(_))
        {
            self.advice = Advice::DontRetry(DontRetry::NotRetriable);
        }
        self
    }
}

/// An attempt's request: the trace, a sidecar's call number, the
/// deadline left when it is propagated (`deadline`), the SRE book's
/// retry counter. The request itself rather than a builder: a builder
/// is moved whole on every header it is given.
#[inline]
pub(super) fn request(
    http: &reqwest::Client,
    edge: &EdgeState,
    url: &str,
    trace: Option<Trace>,
    deadline: Option<Duration>,
    (signal, attempt): (Option<Signal>, u32),
) -> reqwest::Result<reqwest::Request> {
    let mut req = http.get(url).build()?;
    let headers = req.headers_mut();
    if let Some(t) = trace {
        headers.insert(&TRACE, t.header_value());
    }
    // Through a sidecar: one attempt per call, numbered, so the callee
    // can count the proxy's retries.
    if let Some(calls) = &edge.proxied {
        headers.insert(&CALL, calls.next(edge.id));
    }
    if let Some(left) = deadline {
        headers.insert(&DEADLINE, context::deadline_header_value(left));
    }
    if signal == Some(Signal::Sre) {
        // The SRE book's retry counter: how many times this call was
        // tried before, for the callee's histogram.
        headers.insert(&RETRY_ATTEMPT, http::HeaderValue::from(attempt));
    }
    Ok(req)
}

/// How an attempt that got no answer failed: the connection refused,
/// the HTTP/2 stream refused by the callee (`REFUSED_STREAM`, Envoy's
/// `refused-stream`), or reset (any other error on the way).
pub(super) fn failure_of(e: &reqwest::Error) -> Failure {
    if e.is_connect() {
        return Failure::Refused;
    }
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        if let Some(h2) = c.downcast_ref::<h2::Error>() {
            if h2.is_remote() && h2.reason() == Some(h2::Reason::REFUSED_STREAM) {
                return Failure::RefusedStream;
            }
        }
        cause = c.source();
    }
    Failure::Reset
}

/// What an answer says, read from its status and headers once: its
/// class and claim (under `claim_header`), the edge's dialect's advice,
/// whether the edge's retry conditions cover it.
#[inline]
pub(super) fn reply(
    res: &reqwest::Response,
    claim_header: &HeaderName,
    signal: Option<Signal>,
    retry_on: &RetryOn,
) -> Reply {
    let status = res.status().as_u16();
    if !is_error_status(status) {
        // Every dialect is silent on a success, and its claim says
        // nothing the call needs: no header is looked up (each
        // look-up hashes its name, on every hop of the healthy fleet).
        return Reply {
            class: Classified::Success,
            advice: Advice::Silent,
            kind: RetryKind::Transient,
            status: Some(status),
            claim: None,
            failure: None,
        };
    }
    let headers = res.headers();
    // Every copy of the claim header: a repeated one is ambiguous and
    // reads as missing, for the claim and the dialect alike (which
    // also reads the claim under this edge's header name).
    let claim_value = one_value(headers.get_all(claim_header).iter().map(|v| v.as_bytes()));
    let advice = signal.map_or(Advice::Silent, |s| {
        // The dialect's other headers as HTTP combines repeated lines:
        // a singleton sent twice reads as malformed.
        let others: SmallVec<[_; 3]> = s
            .headers()
            .iter()
            .filter(|&&name| name != DEFAULT_CLAIM_HEADER)
            .map(|&name| {
                let v = combined(headers.get_all(name).iter().map(|v| v.as_bytes()));
                (name, v)
            })
            .collect();
        s.read(status, |name| {
            if name == DEFAULT_CLAIM_HEADER {
                claim_value
            } else {
                others
                    .iter()
                    .find(|(n, _)| *n == name)
                    .and_then(|(_, v)| v.as_deref())
            }
        })
    });
    // Whether the edge's conditions retry this answer, read while its
    // headers are at hand (only a set with retriable-headers reads
    // them).
    let failure = Failure::Status(status);
    let retriable = retry_on.allows(failure, |name| headers.get(name).map(|v| v.as_bytes()));
    Reply {
        class: Classified::Error {
            claim: Claim::parse(claim_value),
        },
        advice,
        kind: if status == 429 {
            RetryKind::Throttling
        } else {
            RetryKind::Transient
        },
        status: Some(status),
        claim: claim_value.map(WireValue::of),
        failure: Some(failure),
    }
    .under(retry_on, retriable)
}
