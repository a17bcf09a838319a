//! A hedged call (gRPC A6, SPEC section 15): the first attempt at once,
//! another every `delay` while none has answered, the first success (or
//! fatal failure) wins and the attempts still in flight are cancelled.
//! Each hedge asks the edge's budget and throttle as a retry would; the
//! decisions are `error_ownership::hedge`'s machine's, which this only
//! drives (it owns the sockets, the timer and the clock).

use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::time::Instant;

use super::balance::Tried;
use super::client::{Called, InFlight, Reply, RetryClient, FAR_FUTURE};
use super::context::Trace;
use super::edge::{Books, EdgeState};
use super::{Attempted, CallFailed, RetrySent};
use error_ownership::claim::Outbound;
use error_ownership::conditions::RetryOn;
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
    ) -> Called {
        let race = self.race(edge, trace, policy, cfg).await;
        let last = race.last.and_then(|r| r.failure);
        Called {
            outbound: self.conclude_hedged(edge, race),
            last,
            overloaded: false,
        }
    }

    /// Sends the attempts the hedge asks for and waits for their answers
    /// until it commits to one, or nothing is left in flight. What still
    /// runs then is cancelled (its connection is closed), and the call is
    /// closed on the edge's budget.
    async fn race(
        &self,
        edge: &EdgeState,
        trace: Option<Trace>,
        policy: &EdgePolicy,
        cfg: HedgeConfig,
    ) -> Race {
        let child = trace.map(Trace::child);
        let mut books = Books::open(edge, self.epoch(), policy.budget.is_some(), Instant::now());
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
                    if policy.throttle.is_some() && self.throttle_rejects(edge) {
                        throttled = true;
                        if running.is_empty() {
                            break None;
                        }
                        next_hedge = Instant::now() + FAR_FUTURE;
                        continue;
                    }
                    let (host, sent) = self.pick_hedge(edge, trace, &mut tried, n);
                    running.push(self.hedge_attempt(edge, policy, host, child, sent, n));
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
                    step = self.hedge_answered(edge, policy, &mut hedge, &mut books, n, &reply);
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
        Race {
            committed,
            last,
            throttled,
        }
    }

    /// Picks the replica attempt `n` goes to (a hedge past the first is
    /// reported as a retry sent): its URL and number, and when the
    /// attempt leaves.
    #[inline]
    fn pick_hedge(
        &self,
        edge: &EdgeState,
        trace: Option<Trace>,
        tried: &mut Tried,
        n: u32,
    ) -> ((String, usize), Instant) {
        if n > 0 {
            self.observer.retry_sent(&RetrySent {
                service: self.service,
                edge: edge.id,
                trace,
            });
        }
        let host = edge.balancer.pick(tried, &mut |k| self.draw(k));
        tried.add(host.replica);
        let picked = (host.url.to_string(), host.replica);
        drop(host);
        (picked, Instant::now())
    }

    /// Attempt `n`, sent at `sent` to `url` (replica `replica`): its
    /// number and reply. It is reported when it ends, or when it is
    /// cancelled (dropped) because another attempt won. The edge's
    /// outlier detection hears how it was answered: an error as a 5xx
    /// that is not a gateway error (a hedged call keeps no status), no
    /// answer as a gateway error; a cancelled attempt not at all.
    async fn hedge_attempt(
        &self,
        edge: &EdgeState,
        policy: &EdgePolicy,
        (url, replica): (String, usize),
        child: Option<Trace>,
        sent: Instant,
        n: u32,
    ) -> (u32, Reply) {
        let mut in_flight = InFlight {
            observer: &*self.observer,
            sent,
            attempted: Attempted {
                // Until it answers.
                cancelled: true,
                ..self.attempted(edge, n)
            },
        };
        let reply = self
            .attempt(
                edge,
                &url,
                child,
                (sent, policy.timeout),
                false,
                // Hedging has its own rule for failures (`non_fatal`).
                (policy.signal, n, &RetryOn::ANY),
            )
            .await;
        let status = match reply.class {
            Classified::Success => Some(200),
            Classified::Error { .. } => Some(500),
            Classified::NoResponse => None,
        };
        edge.outlier_heard(replica, status, reply.class);
        in_flight.attempted.outcome = reply.class;
        in_flight.attempted.timed_out = reply.class == Classified::NoResponse;
        in_flight.attempted.cancelled = false;
        (n, reply)
    }

    /// Attempt `n` answered: the throttle and the budget hear how, and the
    /// hedge says what next (asking the budget for the retry it wants).
    #[inline]
    fn hedge_answered(
        &self,
        edge: &EdgeState,
        policy: &EdgePolicy,
        hedge: &mut Hedge,
        books: &mut Books<'_>,
        n: u32,
        reply: &Reply,
    ) -> Step {
        let answer = reply.class;
        if policy.throttle.is_some() {
            self.throttle_heard(edge, answer);
        }
        books.answered(answer);
        let a = if answer == Classified::Success {
            Answer::Success
        } else {
            Answer::Failure
        };
        hedge.on_answer(n, a, || books.try_retry(reply.kind))
    }

    /// Reports a failed hedged call and records its outcome, as
    /// [`RetryClient::call`] does.
    fn conclude_hedged(&self, edge: &EdgeState, race: Race) -> Outbound {
        let Race {
            committed,
            last,
            throttled,
        } = race;
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

/// How a hedged call's race ended: the attempt it committed to (`None`:
/// none answered as the hedge wanted, or the throttle let none leave),
/// that attempt's reply, and whether the throttle turned one away.
struct Race {
    committed: Option<u32>,
    last: Option<Reply>,
    throttled: bool,
}
