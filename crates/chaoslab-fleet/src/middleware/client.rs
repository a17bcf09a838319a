//! The client side: retry-aware outbound calls over reqwest.
//!
//! [`RetryClient::call`] makes one *logical* call on an edge: it sends the
//! first attempt and *classifies* what came back; the decisions — the retry
//! rule, the attempt cap, the edge's budget, the backoff — are the
//! [`AttemptMachine`]'s, which this client only drives (it owns the socket,
//! the clock, the budget's lock and the random source). Finally it records
//! the call's outcome — including whether rule 5's retry criteria were
//! satisfied — into the current request's context, where the server layer
//! will find it, and reports every attempt, retry and failed call to the
//! [`Observer`].
//!
//! Under `deadline: propagate` (SPEC section 7) each attempt's timeout is
//! the per-attempt timeout clipped to the time the calling request has left
//! ([`attempt_timeout`]), the callee is told that time in the
//! `x-chaoslab-deadline` header, and no attempt starts once it is gone.
//! Whatever the policy, an attempt still in flight after a deadline the
//! calling request knows is reported late. Without a known deadline the
//! client reads no clock for it, and without `propagate` it sends no header.

use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::HeaderName;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use tokio::time::Instant;

use super::balance::Tried;
use super::context::Trace;
use super::server::BadHeaderName;
use super::{Attempted, CallFailed, Observer, RetrySent};
use crate::observe::{is_out_of_files, Exchanged, Then};
use error_ownership::attempt::{attempt_timeout, AttemptMachine, CallOutcome, Next};
use error_ownership::claim::Outbound;
use error_ownership::conditions::{Failure, RetryOn};
use error_ownership::policy::EdgePolicy;
use error_ownership::quota::RetryKind;
use error_ownership::retry::StopReason;
use error_ownership::signal::{Advice, DontRetry, Signal};
use error_ownership::Classified;
use tower_error_ownership::record;

use super::edge::Books;
pub use super::edge::{EdgeState, MAX_IN_FLIGHT_PER_EDGE};
use super::wire;
pub(super) use super::wire::Reply;

/// A time no attempt reaches (tokio's own "far future" for a timeout past
/// the clock's range: about 30 years).
pub(super) const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// What one logical call ended in: the record the dependency analysis
/// keeps, and how its last attempt failed (for a caller that passes the
/// failure up as `same`).
#[derive(Debug, Clone, Copy)]
pub struct Called {
    /// The call's record.
    pub outbound: Outbound,
    /// How its last attempt failed, if the call failed after one.
    pub last: Option<Failure>,
    /// It failed on an overloaded callee's answer (the `sre` dialect's
    /// "task overloaded" or "overloaded; don't retry"): the request it was
    /// made for is answered "overloaded; don't retry" if it fails.
    pub overloaded: bool,
}

/// Every attempt the lab's clients send is one the lab counts: reqwest
/// retries an HTTP/2 `REFUSED_STREAM` or a graceful `GOAWAY` twice by
/// itself unless told not to, out of sight of the edge's retry policy
/// (Istio's `refused-stream` condition would never see one), and copies
/// every request to be ready to.
pub fn no_hidden_retries() -> reqwest::retry::Builder {
    reqwest::retry::never().max_retries_per_request(0)
}

/// An HTTP/1.1 client for calls between services: a pool per callee of up
/// to 256 idle connections (one per attempt in flight, as many as an
/// edge allows), kept for 30 s.
pub fn http1_client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .retry(no_hidden_retries())
        .tcp_nodelay(true)
        .pool_idle_timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(MAX_IN_FLIGHT_PER_EDGE)
        .build()
        .expect("a plain-HTTP reqwest client always builds")
}

/// An HTTP/2 client for calls between the services of one process: clear
/// text with prior knowledge, one connection per callee multiplexing
/// every call to it, kept while the fleet runs.
pub fn http2_client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .retry(no_hidden_retries())
        .tcp_nodelay(true)
        .http2_prior_knowledge()
        .pool_idle_timeout(None)
        .build()
        .expect("a plain-HTTP reqwest client always builds")
}

/// A calling service's HTTP client with the retry layer.
pub struct RetryClient {
    http: reqwest::Client,
    /// The connections to callees in this process, when they are apart
    /// from `http` (HTTP/2, shared by every caller).
    mesh: Option<reqwest::Client>,
    pub(super) service: usize,
    header: HeaderName,
    pub(super) observer: Arc<dyn Observer>,
    epoch: Instant,
    rng: Mutex<SmallRng>,
}

impl std::fmt::Debug for RetryClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryClient")
            .field("service", &self.service)
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

/// An attempt on its way: it is reported when it ends, and if the call is
/// dropped first (this request's own caller went away, and the server
/// dropped the request), it is reported then, as ended with no response:
/// the callee counts the same request as abandoned at the same moment.
pub(super) struct InFlight<'a> {
    pub(super) observer: &'a dyn Observer,
    pub(super) sent: Instant,
    pub(super) attempted: Attempted,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.attempted.elapsed = self.sent.elapsed();
        self.observer.attempted(&self.attempted);
    }
}

impl RetryClient {
    /// A client for service number `service`, reading claims from `header`.
    pub fn new(
        service: usize,
        header: &str,
        observer: Arc<dyn Observer>,
        seed: u64,
    ) -> Result<RetryClient, BadHeaderName> {
        Self::over(service, header, observer, seed, http1_client())
    }

    /// A client like [`RetryClient::new`]'s, over `http` (a pool shared
    /// with other services' clients: cloning a `reqwest::Client` shares
    /// its connections).
    pub fn over(
        service: usize,
        header: &str,
        observer: Arc<dyn Observer>,
        seed: u64,
        http: reqwest::Client,
    ) -> Result<RetryClient, BadHeaderName> {
        let header =
            HeaderName::from_bytes(header.as_bytes()).map_err(|_| BadHeaderName(header.into()))?;
        Ok(RetryClient {
            http,
            mesh: None,
            service,
            header,
            observer,
            epoch: Instant::now(),
            rng: Mutex::new(SmallRng::seed_from_u64(seed)),
        })
    }

    /// Calls callees served by this process ([`EdgeState::in_process`])
    /// over `mesh` instead.
    pub fn with_mesh(mut self, mesh: reqwest::Client) -> RetryClient {
        self.mesh = Some(mesh);
        self
    }

    /// A whole number drawn uniformly below `n` from the client's
    /// generator.
    pub(super) fn draw(&self, n: usize) -> usize {
        self.rng
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .random_range(0..n)
    }

    /// A uniform draw in [0, 1) from the client's generator.
    pub(super) fn uniform(&self) -> f64 {
        self.rng
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .random_range(0.0..1.0)
    }

    /// The zero of this client's clock ([`RetryClient::now`]).
    pub(super) fn epoch(&self) -> Instant {
        self.epoch
    }

    /// Time on this client's clock: what its edges' budgets and breakers
    /// count in.
    pub fn now(&self) -> Duration {
        Instant::now().saturating_duration_since(self.epoch)
    }

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
        let req = wire::request(
            http,
            edge,
            url,
            trace,
            propagate.then_some(timeout),
            (signal, attempt),
        );
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
                    return Err(wire::failure_of(&e));
                }
            };
            let reply = wire::reply(&res, &self.header, signal, retry_on);
            // Drain the body so the connection goes back to the pool.
            if res.bytes().await.is_err() {
                return Err(Failure::Reset);
            }
            Ok(reply)
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

    /// Makes one logical call on `edge`, retrying as its policy allows.
    /// `trace` is the caller's own trace: the callee gets its child;
    /// `deadline`, when the calling request's caller stops waiting, if
    /// known. The outcome is recorded into the current request's record,
    /// if the task has one, and returned.
    pub async fn call(
        &self,
        edge: &EdgeState,
        trace: Option<Trace>,
        deadline: Option<Instant>,
    ) -> Called {
        // A copy: no guard or reference count held across the call.
        let policy: EdgePolicy = **edge.policy.load();
        if let Some(cfg) = policy.hedge {
            return self.call_hedged(edge, trace, &policy, cfg).await;
        }
        let child = trace.map(Trace::child);
        // The attempts keep to the deadline under `deadline: propagate`,
        // and are measured against it whatever the policy.
        let propagate = policy.deadline_propagate;
        let call = Call {
            edge,
            policy: &policy,
            trace,
            child,
            deadline,
            propagate,
            clip: deadline.filter(|_| propagate),
        };
        let (outcome, overloaded, last) = self.attempts(&call).await;
        let outbound = self.conclude(edge, outcome);
        Called {
            outbound,
            last,
            // The SRE book's rule: a request that failed on an overloaded
            // callee is answered "overloaded; don't retry".
            overloaded: overloaded && outbound.failed,
        }
    }

    /// The call's attempts, sent one after another until its machine
    /// stops: how the call ended, and whether the last answer was an
    /// overloaded callee's (in the `sre` dialect). The call is open on the
    /// edge's budget (a window earns its deposit) until this returns.
    async fn attempts(&self, call: &Call<'_>) -> (CallOutcome, bool, Option<Failure>) {
        // One clock read for the call's start on the budget and its first
        // attempt's.
        let began = Instant::now();
        let budgeted = call.policy.budget.is_some();
        let mut books = Books::open(call.edge, self.epoch, budgeted, began);
        let mut first = Some(began);
        let mut machine = AttemptMachine::for_policy(call.policy);
        let mut tried = Tried::default();
        let mut overloaded = false;
        let mut last = None;
        // A retry decided on and not yet sent: it counts once it leaves,
        // not when the breaker, the throttle or the deadline stops it.
        let mut retrying = false;
        loop {
            let now = first.take().unwrap_or_else(Instant::now);
            let cleared = match self.clear(call, &mut machine, now) {
                ControlFlow::Continue(cleared) => cleared,
                ControlFlow::Break(outcome) => return (outcome, overloaded, last),
            };
            if std::mem::take(&mut retrying) {
                self.observer.retry_sent(&RetrySent {
                    service: self.service,
                    edge: call.edge.id,
                    trace: call.trace,
                });
            }
            let attempt = machine.attempt();
            let mut in_flight = InFlight {
                sent: cleared.sent,
                observer: &*self.observer,
                attempted: Attempted {
                    // Until an answer says otherwise: dropped mid-way, the
                    // caller stopped waiting.
                    timed_out: true,
                    ..self.attempted(call.edge, attempt)
                },
            };
            let reply = self.send(call, &cleared, attempt, &mut tried).await;
            last = reply.failure;
            overloaded = call.policy.signal == Some(Signal::Sre)
                && matches!(
                    reply.advice,
                    Advice::Retry | Advice::DontRetry(DontRetry::OverloadedDontRetry)
                );
            self.settle(call, &cleared, &mut in_flight, &reply);
            drop(in_flight);
            books.answered(reply.class);
            let next = self.decide(call, &cleared, attempt, &reply, &mut machine, &mut books);
            let delay = match next {
                Next::Stop(outcome) => return (outcome, overloaded, last),
                Next::RetryNow => None,
                Next::RetryAfter(d) => Some(d),
            };
            retrying = true;
            if let Some(d) = delay {
                tokio::time::sleep(d).await;
            }
        }
    }

    /// Whether the next attempt may leave at `sent` (the clock just read),
    /// and with what time: `Break` with the call's outcome when the
    /// deadline has passed, or this service's own breaker or throttle
    /// fails it fast.
    #[inline]
    fn clear(
        &self,
        call: &Call<'_>,
        machine: &mut AttemptMachine,
        sent: Instant,
    ) -> ControlFlow<CallOutcome, Cleared> {
        let started = call.deadline.map(|_| sent);
        let left = call
            .clip
            .zip(started)
            .map(|(d, t)| d.saturating_duration_since(t));
        let Some(timeout) = attempt_timeout(call.policy.timeout, left) else {
            return ControlFlow::Break(
                machine
                    .before_attempt(true)
                    .expect("a call whose deadline has passed stops"),
            );
        };
        let breaker = call.policy.breaker.is_some();
        let now = breaker.then(|| self.now());
        if let Some(false) = now.and_then(|now| call.edge.with_breaker(|b| b.try_pass(now))) {
            // Failed fast by this service's own breaker: its error.
            record::mark_own_fault();
            return ControlFlow::Break(machine.short_circuit());
        }
        // The SRE book's throttle: every attempt, first or retry, is
        // asked for (and counted) before it is sent.
        let throttled = call.policy.throttle.is_some();
        if throttled && self.throttle_rejects(call.edge) {
            // Rejected locally: this service's own error.
            record::mark_own_fault();
            return ControlFlow::Break(machine.throttled());
        }
        ControlFlow::Continue(Cleared {
            sent,
            started,
            timeout,
            breaker,
            throttled,
        })
    }

    /// Sends attempt number `attempt` to a replica the call has not tried
    /// yet (if it has one) and waits for its reply.
    #[inline]
    async fn send(
        &self,
        call: &Call<'_>,
        cleared: &Cleared,
        attempt: u32,
        tried: &mut Tried,
    ) -> Reply {
        let edge = call.edge;
        let host = edge.balancer.pick(tried, &mut |n| self.draw(n));
        tried.add(host.replica);
        if edge.balancer.replicas() > 1 {
            self.observer
                .sent_to_replica(edge.dependency, host.replica as u32, attempt > 0);
        }
        let reply = self
            .attempt(
                edge,
                host.url,
                call.child,
                (cleared.sent, cleared.timeout),
                call.propagate,
                (call.policy.signal, attempt, &call.policy.retry_on),
            )
            .await;
        // The edge's outlier detection hears how the replica answered.
        edge.outlier_heard(host.replica, reply.status, reply.class);
        drop(host);
        reply
    }

    /// Writes an answered attempt down: in its report, and in the
    /// breaker's and the throttle's books.
    #[inline]
    fn settle(
        &self,
        call: &Call<'_>,
        cleared: &Cleared,
        in_flight: &mut InFlight<'_>,
        reply: &Reply,
    ) {
        let answer = reply.class;
        in_flight.attempted.outcome = answer;
        in_flight.attempted.timed_out =
            answer == Classified::NoResponse && reply.kind == RetryKind::Timeout;
        if cleared.breaker {
            let now = self.now();
            call.edge
                .with_breaker(|b| b.record(now, answer == Classified::Success));
        }
        if cleared.throttled {
            // Accepted: answered without an error. An error, or no
            // answer in time, is the backend's rejection.
            self.throttle_heard(call.edge, answer);
        }
        // Late: still in flight after the deadline, which its own time
        // limit allowed it to outlive (an attempt clipped to the
        // deadline ends there, give or take the timer's tick).
        if let (Some(d), Some(t)) = (call.deadline, cleared.started) {
            in_flight.attempted.late = t + cleared.timeout > d && Instant::now() > d;
        }
    }

    /// What the machine makes of an answered attempt (asking the budget
    /// for the retry it wants), told to the wire tap.
    #[inline]
    fn decide(
        &self,
        call: &Call<'_>,
        cleared: &Cleared,
        attempt: u32,
        reply: &Reply,
        machine: &mut AttemptMachine,
        books: &mut Books<'_>,
    ) -> Next {
        let deadline_passed = call.clip.is_some_and(|d| Instant::now() >= d);
        let next = machine.on_advised_answer(
            reply.class,
            reply.advice,
            deadline_passed,
            || books.try_retry(reply.kind),
            || self.uniform(),
        );
        // Through a sidecar, the tap shows the proxy's attempts as the
        // callee answered them (see `server::LabObserver`).
        if call.edge.proxied.is_some() {
            return next;
        }
        self.observer.exchanged(&Exchanged {
            service: self.service,
            edge: call.edge.id,
            attempt,
            status: reply.status,
            claim: reply.claim,
            then: match &next {
                Next::Stop(o) => o.stop_reason().map_or(Then::Done, Then::Stopped),
                _ => Then::Retried,
            },
            sent: cleared.sent,
        });
        next
    }

    /// Reports a failed call, and records the call's outcome into the
    /// current request's record, where the server layer finds it.
    fn conclude(&self, edge: &EdgeState, outcome: CallOutcome) -> Outbound {
        if let Some(reason) = outcome.stop_reason() {
            self.observer.call_failed(&CallFailed {
                service: self.service,
                edge: edge.id,
                reason,
            });
        }
        let outbound = outcome.outbound(edge.dependency, edge.mode);
        // A call the caller's own breaker or throttle failed fast never
        // reached the dependency: the dependency analysis does not see it
        // fail, so a request that fails for it is claimed by this service.
        let short_circuited = matches!(
            outcome.stop_reason(),
            Some(StopReason::BreakerOpen | StopReason::Throttled)
        );
        record::record(if short_circuited {
            Outbound {
                failed: false,
                claim_seen: None,
                ..outbound
            }
        } else {
            outbound
        });
        outbound
    }

    /// The report of attempt number `attempt` on `edge` before it ends:
    /// no response yet, neither late, timed out nor cancelled.
    #[inline]
    pub(super) fn attempted(&self, edge: &EdgeState, attempt: u32) -> Attempted {
        Attempted {
            service: self.service,
            edge: edge.id,
            attempt,
            outcome: Classified::NoResponse,
            late: false,
            elapsed: Duration::ZERO,
            timed_out: false,
            cancelled: false,
        }
    }

    /// Whether the edge's throttle turns the next attempt away (asking it
    /// counts the attempt); call it only on an edge with a throttle.
    #[inline]
    pub(super) fn throttle_rejects(&self, edge: &EdgeState) -> bool {
        let (now, u) = (self.now(), self.uniform());
        edge.with_throttle(|t| t.try_pass(now, u)) == Some(false)
    }

    /// Tells the edge's throttle how an attempt it let through was
    /// answered: accepted on a success.
    #[inline]
    pub(super) fn throttle_heard(&self, edge: &EdgeState, answer: Classified) {
        let now = self.now();
        edge.with_throttle(|t| t.record(now, answer == Classified::Success));
    }
}

/// What one call holds fixed over all its attempts.
struct Call<'a> {
    edge: &'a EdgeState,
    policy: &'a EdgePolicy,
    /// The caller's own trace, and its child, which each attempt carries.
    trace: Option<Trace>,
    child: Option<Trace>,
    /// When the calling request's caller stops waiting, if known.
    deadline: Option<Instant>,
    /// Whether the callee is told the time left (`deadline: propagate`).
    propagate: bool,
    /// The deadline the attempts keep to: `deadline` under `propagate`.
    clip: Option<Instant>,
}

/// An attempt cleared to leave: when, for how long, and whether the
/// edge's breaker and throttle are to hear how it went.
struct Cleared {
    sent: Instant,
    /// `sent`, when the call has a deadline to measure it against.
    started: Option<Instant>,
    timeout: Duration,
    breaker: bool,
    throttled: bool,
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
