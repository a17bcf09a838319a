//! One attempt on the wire: the request an attempt sends (the trace, a
//! sidecar's call number, the deadline, the SRE book's retry counter),
//! its timer, and what its answer says ([`Reply`]), read from the status
//! and the headers once. The call around it, its retries and its books,
//! is [`RetryClient::call`]'s.

use std::time::Duration;

use http::HeaderName;
use smallvec::SmallVec;
use tokio::time::Instant;

use super::client::{RetryClient, FAR_FUTURE};
use super::context::{self, Trace, TraceHeader as _, DEADLINE, TRACE};
use super::edge::EdgeState;
use crate::observe::{is_out_of_files, WireValue};
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
    const NONE: Reply = Reply {
        class: Classified::NoResponse,
        advice: Advice::Silent,
        kind: RetryKind::Timeout,
        status: None,
        claim: None,
        failure: Some(Failure::Timeout),
    };

    /// The reply with the edge's retry conditions applied: a failure they
    /// do not cover is not retried, whatever the signal invited.
    fn under(mut self, retry_on: &RetryOn, retriable: bool) -> Reply {
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

impl RetryClient {
    /// One attempt begun at `sent` that may take `timeout`; with
    /// `propagate`, the callee is told what is left of it when the request
    /// leaves.
    pub(super) async fn attempt(
        &self,
        edge: &EdgeState,
        url: &str,
        trace: Option<Trace>,
        (sent, timeout): (Instant, Duration),
        propagate: bool,
        (signal, attempt, retry_on): (Option<Signal>, u32, &RetryOn),
    ) -> Reply {
        // The attempt's end, on the clock read when it began (no second
        // read for its timer); past the clock's range, never.
        let until = sent
            .checked_add(timeout)
            .unwrap_or_else(|| sent + FAR_FUTURE);
        // A free slot is taken at once; only a full edge waits (and only
        // then pays for a timer).
        let (_slot, timeout) = match edge.slots.try_take() {
            Some(slot) => (slot, timeout),
            None => {
                let timed_out =
                    || Reply::NONE.under(retry_on, retry_on.allows(Failure::Timeout, |_| None));
                let Ok(slot) = tokio::time::timeout_at(until, edge.slots.take()).await else {
                    return timed_out();
                };
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return timed_out();
                }
                (slot, left)
            }
        };
        let http = match &self.mesh {
            Some(mesh) if edge.in_process => mesh,
            _ => &self.http,
        };
        // The request itself rather than a builder: a builder is moved
        // whole on every header it is given.
        let mut req = http.get(url).build();
        if let Ok(req) = &mut req {
            let headers = req.headers_mut();
            if let Some(t) = trace {
                headers.insert(&TRACE, t.header_value());
            }
            // Through a sidecar: one attempt per call, numbered, so the
            // callee can count the proxy's retries.
            if let Some(calls) = &edge.proxied {
                headers.insert(&CALL, calls.next(edge.id));
            }
            if propagate {
                headers.insert(&DEADLINE, context::deadline_header_value(timeout));
            }
            if signal == Some(Signal::Sre) {
                // The SRE book's retry counter: how many times this call
                // was tried before, for the callee's histogram.
                headers.insert(&RETRY_ATTEMPT, http::HeaderValue::from(attempt));
            }
        }
        // One timer for the whole attempt, held in place (reqwest's own
        // per-request timeout boxes one).
        let attempt = async {
            let sent = match req {
                Ok(req) => http.execute(req).await,
                Err(e) => Err(e),
            };
            let res = match sent {
                Ok(res) => res,
                Err(e) => {
                    if is_out_of_files(&e) {
                        self.observer.out_of_files();
                    }
                    return Err(if e.is_connect() {
                        Failure::Refused
                    } else {
                        Failure::Reset
                    });
                }
            };
            let status = res.status().as_u16();
            let headers = res.headers();
            // Every copy of the claim header: a repeated one is ambiguous
            // and reads as missing, for the claim and the dialect alike
            // (which also reads the claim under this edge's header name).
            // Only an error's claim is read: a success's says nothing the
            // call needs, and the look-up hashes the name on every hop.
            let claim_value = if is_error_status(status) {
                one_value(headers.get_all(&self.header).iter().map(|v| v.as_bytes()))
            } else {
                None
            };
            let claim = Claim::parse(claim_value);
            let claim_wire = claim_value.map(WireValue::of);
            // Every dialect is silent on a success: its headers are read
            // on errors only, off the request path of the healthy fleet.
            let signal = signal.filter(|_| is_error_status(status));
            let advice = signal.map_or(Advice::Silent, |s| {
                // The dialect's other headers as HTTP combines repeated
                // lines: a singleton sent twice reads as malformed.
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
            // Whether the edge's conditions retry this answer, read while
            // its headers are at hand (only a set with retriable-headers
            // reads them).
            let failure = is_error_status(status).then_some(Failure::Status(status));
            let retriable = failure.is_some_and(|f| {
                retry_on.allows(f, |name| headers.get(name).map(|v| v.as_bytes()))
            });
            // Drain the body so the connection goes back to the pool.
            if res.bytes().await.is_err() {
                return Err(Failure::Reset);
            }
            Ok(if is_error_status(status) {
                Reply {
                    class: Classified::Error { claim },
                    advice,
                    kind: if status == 429 {
                        RetryKind::Throttling
                    } else {
                        RetryKind::Transient
                    },
                    status: Some(status),
                    claim: claim_wire,
                    failure,
                }
                .under(retry_on, retriable)
            } else {
                Reply {
                    class: Classified::Success,
                    advice: Advice::Silent,
                    kind: RetryKind::Transient,
                    status: Some(status),
                    claim: None,
                    failure: None,
                }
            })
        };
        match tokio::time::timeout_at(until, attempt).await {
            Ok(Ok(r)) => r,
            Ok(Err(f)) => Reply {
                // Refused or reset: a transient error to the AWS quota.
                kind: RetryKind::Transient,
                failure: Some(f),
                ..Reply::NONE
            }
            .under(retry_on, retry_on.allows(f, |_| None)),
            Err(_) => Reply::NONE.under(retry_on, retry_on.allows(Failure::Timeout, |_| None)),
        }
    }
}
