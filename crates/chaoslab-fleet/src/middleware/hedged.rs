//! A hedged call (gRPC A6, SPEC section 15): the first attempt at once,
//! another every `delay` while none has answered, the first success (or
//! fatal failure) wins and the attempts still in flight are cancelled.
//! Each hedge asks the edge's budget and throttle as a retry would; the
//! decisions are `error_ownership::hedge`'s machine's, which this only
//! drives (it owns the sockets, the timer and the clock).

use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::time::Instant;

use super::balance::Tried;
use super::client::{InFlight, Reply, RetryClient, FAR_FUTURE};
use super::context::Trace;
use super::edge::{Books, EdgeState};
use super::{Attempted, CallFailed, RetrySent};
use error_ownership::claim::Outbound;
use error_ownership::hedge::{Answer, Hedge, HedgeConfig, Step};
use error_ownership::policy::EdgePolicy;
use error_ownership::retry::StopReason;
use error_ownership::Classified;
use tower_error_ownership::record;

impl RetryClient {
    /// One logical call on `edge`, hedged by `cfg`; the outcome is
    /// recorded into the current request's record, as [`RetryClient::call`]
    /// records it, and returned. Hedged calls carry no deadline.
    pub(super) async fn call_hedged(
        &self,
        edge: &EdgeState,
        trace: Option<Trace>,
        policy: &EdgePolicy,
        cfg: HedgeConfig,
    ) -> Outbound {
        let child = trace.map(Trace::child);
        let mut books = Books::open(edge, self.epoch(), policy.budget.is_some());
        let mut hedge = Hedge::new(cfg);
        let mut tried = Tried::default();
        let mut running = FuturesUnordered::new();
        let mut step = hedge.start();
        let mut next_hedge = Instant::now() + FAR_FUTURE;
        // The answer the call commits to, and why it stopped sending.
        let mut throttled = false;
        let mut last: Option<Reply> = None;
        let committed = loop {
            match std::mem::replace(&mut step, Step::Wait) {
                Step::Send(n) => {
                    if policy.throttle.is_some() {
                        let (now, u) = (self.now(), self.uniform());
                        if edge.with_throttle(|t| t.try_pass(now, u)) == Some(false) {
                            throttled = true;
                            if running.is_empty() {
                                break None;
                            }
                            next_hedge = Instant::now() + FAR_FUTURE;
                            continue;
                        }
                    }
                    if n > 0 {
                        self.observer.retry_sent(&RetrySent {
                            service: self.service,
                            edge: edge.id,
                            trace,
                        });
                    }
                    let host = edge.balancer.pick(&tried, &mut |k| self.draw(k));
                    tried.add(host.replica);
                    let url = host.url.to_string();
                    drop(host);
                    let sent = Instant::now();
                    running.push(async move {
                        // Reported when it ends, or when it is cancelled
                        // (dropped) because another attempt won.
                        let mut in_flight = InFlight {
                            observer: &*self.observer,
                            sent,
                            attempted: Attempted {
                                service: self.service,
                                edge: edge.id,
                                attempt: n,
                                outcome: Classified::NoResponse,
                                late: false,
                                elapsed: Duration::ZERO,
                                timed_out: false,
                                // Until it answers.
                                cancelled: true,
                            },
                        };
                        let reply = self
                            .attempt(
                                edge,
                                &url,
                                child,
                                (sent, policy.timeout),
                                false,
                                (policy.signal, n),
                            )
                            .await;
                        in_flight.attempted.outcome = reply.class;
                        in_flight.attempted.timed_out = reply.class == Classified::NoResponse;
                        in_flight.attempted.cancelled = false;
                        (n, reply)
                    });
                    next_hedge = sent + cfg.delay;
                    continue;
                }
                Step::Commit { attempt, cancel } => {
                    if !cancel.is_empty() {
                        self.observer
                            .hedges_cancelled(self.service, edge.id, cancel.len() as u32);
                    }
                    break Some(attempt);
                }
                Step::Wait => {}
            }
            if running.is_empty() {
                break None;
            }
            tokio::select! {
                Some((n, reply)) = running.next() => {
                    let answer = reply.class;
                    if policy.throttle.is_some() {
                        let now = self.now();
                        edge.with_throttle(|t| t.record(now, answer == Classified::Success));
                    }
                    books.answered(answer);
                    let a = if answer == Classified::Success { Answer::Success } else { Answer::Failure };
                    step = hedge.on_answer(n, a, || books.try_retry(reply.kind));
                    if let Step::Commit { attempt, .. } = &step {
                        debug_assert_eq!(*attempt, n);
                        last = Some(reply);
                    }
                }
                _ = tokio::time::sleep_until(next_hedge) => {
                    next_hedge = Instant::now() + FAR_FUTURE;
                    step = hedge.on_delay(|| books.try_retry(error_ownership::quota::RetryKind::Transient));
                }
            }
        };
        // Dropping what still runs cancels it (its connection is closed).
        drop(running);
        drop(books);
        let class = last.map_or(Classified::NoResponse, |r| r.class);
        let failed = committed.is_none() || class != Classified::Success;
        if failed {
            self.observer.call_failed(&CallFailed {
                service: self.service,
                edge: edge.id,
                reason: if throttled && committed.is_none() {
                    StopReason::Throttled
                } else {
                    StopReason::AttemptsExhausted
                },
            });
        }
        let claim_seen = match class {
            Classified::Error { claim } => Some(claim),
            _ => None,
        };
        let outbound = Outbound {
            dependency: edge.dependency,
            mode: edge.mode,
            failed,
            claim_seen: if committed.is_some() {
                claim_seen
            } else {
                None
            },
            criteria_satisfied: true,
        };
        if committed.is_none() && throttled {
            // Rejected by its own throttle: this service's error.
            record::mark_own_fault();
            record::record(Outbound {
                failed: false,
                claim_seen: None,
                ..outbound
            });
        } else {
            record::record(outbound);
        }
        outbound
    }
}
