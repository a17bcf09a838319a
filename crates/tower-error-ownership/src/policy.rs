//! The client side for hyper and tonic: a [`tower::retry::Policy`] that
//! retries with ownership.
//!
//! Wrap a client service in `tower::retry::Retry::new(OwnershipPolicy::new(), client)`
//! (or `ServiceBuilder::new().retry(...)`): each call's attempts are
//! classified from the answer's status and claim (for gRPC, a
//! Trailers-Only answer's `grpc-status` and claim), retried only when the
//! rules allow ([`error_ownership::attempt::AttemptMachine`]: claimed or
//! unmarked errors, at most `attempts`, within the budget, after a
//! backoff), and recorded when it ends in the current request's record,
//! where the server layer finds it.
//!
//! Two limits of tower's retry: a request whose body cannot be cloned is
//! sent once and not recorded (tower never shows the policy its answer),
//! and a gRPC answer with a body is classified as a success here, because
//! its status arrives in the trailers after the policy has decided.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use error_ownership::attempt::{AttemptMachine, Next};
use error_ownership::{is_error_status, Claim, Classified, DependencyMode};
use http::{HeaderMap, HeaderName, Request, Response};
use tower::retry::budget::{Budget, TpsBudget};

use crate::layer::CLAIM_HEADER;
use crate::{record, Dependency, FailOpen};

/// A budget that always grants: retries limited by `attempts` alone.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unbudgeted;

impl Budget for Unbudgeted {
    fn deposit(&self) {}
    fn withdraw(&self) -> bool {
        true
    }
}

/// A retry policy with ownership, for `tower::retry::Retry`.
///
/// ```
/// use std::time::Duration;
/// use tower::retry::budget::TpsBudget;
/// use tower_error_ownership::OwnershipPolicy;
///
/// // The defaults: 2 attempts, retries within 10% of calls over 10 s
/// // (and 10 a second whatever the traffic), claims honoured, no backoff.
/// let policy = OwnershipPolicy::new();
/// // Three attempts, tower's own budget, 20 ms of exponential backoff.
/// let policy = OwnershipPolicy::new()
///     .attempts(3)
///     .backoff(Duration::from_millis(20))
///     .budget(TpsBudget::new(Duration::from_secs(10), 10, 0.2));
/// # let _ = policy;
/// ```
#[derive(Debug)]
pub struct OwnershipPolicy<B = TpsBudget> {
    header: HeaderName,
    attempts: u32,
    ownership: bool,
    backoff: Duration,
    /// Shared by every call of the client.
    budget: Arc<B>,
    /// Where this call stands; a fresh one per call (tower clones the
    /// policy for each call).
    machine: AttemptMachine,
    deposited: bool,
}

impl<B> Clone for OwnershipPolicy<B> {
    fn clone(&self) -> Self {
        OwnershipPolicy {
            header: self.header.clone(),
            budget: self.budget.clone(),
            machine: AttemptMachine::new(self.attempts, self.ownership, self.backoff),
            deposited: false,
            ..*self
        }
    }
}

impl Default for OwnershipPolicy {
    fn default() -> Self {
        OwnershipPolicy::new()
    }
}

impl OwnershipPolicy {
    /// The defaults: 2 attempts (R = 2), a budget of 10% of calls over
    /// 10 s with a floor of 10 retries a second, claims honoured on
    /// `x-error-claim`, no backoff.
    pub fn new() -> OwnershipPolicy {
        OwnershipPolicy {
            header: CLAIM_HEADER.clone(),
            attempts: 2,
            ownership: true,
            backoff: Duration::ZERO,
            budget: Arc::new(TpsBudget::new(Duration::from_secs(10), 10, 0.1)),
            machine: AttemptMachine::new(2, true, Duration::ZERO),
            deposited: false,
        }
    }
}

impl<B: Budget> OwnershipPolicy<B> {
    /// The same settings with a fresh call state.
    fn fresh(self) -> OwnershipPolicy<B> {
        self.clone()
    }

    /// At most `n` attempts per call (at least 1).
    pub fn attempts(self, n: u32) -> OwnershipPolicy<B> {
        OwnershipPolicy {
            attempts: n.max(1),
            ..self
        }
        .fresh()
    }

    /// Exponential backoff with full jitter from `base`.
    pub fn backoff(self, base: Duration) -> OwnershipPolicy<B> {
        OwnershipPolicy {
            backoff: base,
            ..self
        }
        .fresh()
    }

    /// Reads (and honours) the claim on `header` instead.
    pub fn header(self, header: HeaderName) -> OwnershipPolicy<B> {
        OwnershipPolicy { header, ..self }
    }

    /// `false`: retry every error as a plain policy does, claims ignored
    /// (the storm this crate exists to stop; for comparison).
    pub fn ownership(self, on: bool) -> OwnershipPolicy<B> {
        OwnershipPolicy {
            ownership: on,
            ..self
        }
        .fresh()
    }

    /// Uses `budget` for retries: any [`tower::retry::budget::Budget`],
    /// such as tower's `TpsBudget`, or [`Unbudgeted`].
    pub fn budget<C: Budget>(self, budget: C) -> OwnershipPolicy<C> {
        OwnershipPolicy {
            header: self.header,
            attempts: self.attempts,
            ownership: self.ownership,
            backoff: self.backoff,
            budget: Arc::new(budget),
            machine: self.machine,
            deposited: false,
        }
    }

    /// Classifies an answer: an HTTP error status, or a gRPC status other
    /// than 0 in the headers, is an error with its claim.
    fn classify<R, E>(&self, result: &Result<Response<R>, E>) -> Classified {
        let Ok(res) = result else {
            return Classified::NoResponse;
        };
        let error = is_error_status(res.status().as_u16()) || grpc_error(res.headers());
        if !error {
            return Classified::Success;
        }
        let values = res.headers().get_all(&self.header);
        Classified::Error {
            claim: Claim::parse_all(values.iter().map(|v| v.as_bytes())),
        }
    }
}

fn grpc_error(headers: &HeaderMap) -> bool {
    headers
        .get("grpc-status")
        .is_some_and(|v| v.as_bytes().trim_ascii() != b"0")
}

/// The wait before a retry: none, or a backoff.
#[derive(Debug)]
pub struct Wait(Option<Pin<Box<tokio::time::Sleep>>>);

impl Future for Wait {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.0.as_mut() {
            Some(s) => s.as_mut().poll(cx),
            None => Poll::Ready(()),
        }
    }
}

impl<B, ReqB, R, E> tower::retry::Policy<Request<ReqB>, Response<R>, E> for OwnershipPolicy<B>
where
    B: Budget,
    ReqB: Clone,
{
    type Future = Wait;

    fn retry(
        &mut self,
        req: &mut Request<ReqB>,
        result: &mut Result<Response<R>, E>,
    ) -> Option<Wait> {
        if !self.deposited {
            self.deposited = true;
            self.budget.deposit();
        }
        let answer = self.classify(result);
        let budget = &self.budget;
        match self
            .machine
            .on_answer(answer, || budget.withdraw(), fastrand::f64)
        {
            Next::RetryNow => Some(Wait(None)),
            Next::RetryAfter(d) => Some(Wait(Some(Box::pin(tokio::time::sleep(d))))),
            Next::Stop(outcome) => {
                let mode = match req.extensions().get::<FailOpen>() {
                    Some(_) => DependencyMode::FailOpen,
                    None => DependencyMode::FailClose,
                };
                let dependency = req.extensions().get::<Dependency>().map_or(0, |d| d.0);
                record::record(outcome.outbound(dependency, mode));
                None
            }
        }
    }

    fn clone_request(&mut self, req: &Request<ReqB>) -> Option<Request<ReqB>> {
        let mut out = Request::new(req.body().clone());
        *out.method_mut() = req.method().clone();
        *out.uri_mut() = req.uri().clone();
        *out.version_mut() = req.version();
        *out.headers_mut() = req.headers().clone();
        *out.extensions_mut() = req.extensions().clone();
        Some(out)
    }
}
