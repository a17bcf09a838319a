//! The attempt state machine: one logical call, attempt by attempt.
//!
//! # Why a machine
//!
//! A logical call on an edge is a short loop: send an attempt, see what came
//! back, decide whether to try again, perhaps wait, send again. Every rule of
//! SPEC section 1 meets in that loop — the retry table ([`retry::decide`]),
//! the attempt cap R ([`retry::stop_reason`]), the budget, the backoff — and
//! what the loop ends with feeds rule 5 (at-least-once) on the server side
//! and every retry counter the lab shows. The lab runs that loop twice: over
//! real sockets in the middleware's retry client, and over a deterministic
//! play of the topology in the rule simulation that cross-checks the
//! analytical model. If each kept its own copy, the cross-check would
//! compare two copies of the loop instead of one loop against the model.
//!
//! So the loop's *decisions* live here, once, with no I/O: no socket, no
//! timer, no clock, no random source. The driver owns all of those. It sends
//! an attempt, *classifies* the answer ([`Classified`]: success, error with
//! its claim, no response) and feeds it to [`AttemptMachine::on_answer`],
//! which *decides*: [`Next::RetryNow`], [`Next::RetryAfter`] a backoff, or
//! [`Next::Stop`] with the call's [`CallOutcome`]. Keeping classification
//! apart from the decision is the tower-http `classify` / linkerd2-proxy
//! retry split: the middleware knows HTTP, the machine knows the rules.
//!
//! The budget and the backoff's randomness are injected as two closures,
//! asked only when the rules need them, in the order they need them: the
//! budget only for a retry-eligible failure that the attempt cap would allow
//! (a suppressed error or a spent cap never costs a token), the jitter only
//! for a granted retry on an edge with a backoff base. A driver that holds
//! the budget under a lock and the random source under another thus takes
//! each lock exactly when the old inline loop did. Depositing the first
//! attempt's share into the budget stays with the driver: it is bookkeeping
//! on every call, not a decision.
//!
//! A call with a deadline (`deadline: propagate`, SPEC section 7) feeds
//! the machine one more input, read off the driver's clock: whether the
//! deadline has passed. It is asked before every attempt
//! ([`AttemptMachine::before_attempt`]: no attempt is started once the
//! caller has stopped waiting) and with every answer
//! ([`AttemptMachine::on_answer_by`]: a retry the rule and the cap would
//! allow is refused before the budget is asked, so a late retry costs no
//! token). Either way the call gives up with [`StopReason::DeadlinePassed`].
//! How long an attempt may then take is [`attempt_timeout`]: the
//! per-attempt timeout, clipped to the time left.
//!
//! The seed's three-service example: C fails and claims, B retries it once
//! (R = 2) and gives up; the error B then returns goes up unclaimed, so A,
//! under ownership, suppresses its retry.
//!
//! ```
//! use std::time::Duration;
//! use error_ownership::attempt::{AttemptMachine, Ending, Next};
//! use error_ownership::retry::StopReason;
//! use error_ownership::{Claim, Classified};
//!
//! let from_c = Classified::Error { claim: Claim::Claimed };
//! let grant = || true; // the budget allows the retry
//! let no_jitter = || 0.0; // never asked: this edge has no backoff
//!
//! // B calls C: the claimed error is retried once, then the cap is reached.
//! let mut b = AttemptMachine::new(2, true, Duration::ZERO);
//! assert_eq!(b.on_answer(from_c, grant, no_jitter), Next::RetryNow);
//! let Next::Stop(out) = b.on_answer(from_c, grant, no_jitter) else { panic!() };
//! assert_eq!(out.ending, Ending::GaveUp(StopReason::AttemptsExhausted));
//! assert_eq!((out.attempts, out.retries()), (2, 1));
//!
//! // A calls B: B's error comes back unclaimed, A does not retry it.
//! let from_b = Classified::Error { claim: Claim::Unclaimed };
//! let mut a = AttemptMachine::new(2, true, Duration::ZERO);
//! let Next::Stop(out) = a.on_answer(from_b, grant, no_jitter) else { panic!() };
//! assert_eq!(out.stop_reason(), Some(StopReason::Suppressed));
//! assert_eq!(out.retries(), 0);
//! ```

use std::time::Duration;

use super::backoff;
use super::claim::Outbound;
use super::policy::EdgePolicy;
use super::retry::{self, RetryVerdict, StopReason};
use super::signal::Advice;
use super::{Classified, DependencyMode};

/// How a logical call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// An attempt succeeded.
    Success,
    /// The call failed and no further attempt is made, for this reason.
    GaveUp(StopReason),
}

/// What a logical call did, all attempts together: what the server side's
/// dependency analysis (rule 5) and the retry counters need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallOutcome {
    /// Success, or why the call gave up.
    pub ending: Ending,
    /// The answer to the last attempt.
    pub last: Classified,
    /// Attempts made, the first included: at least 1, unless the call's
    /// deadline had passed before the first was sent.
    pub attempts: u32,
}

impl CallOutcome {
    /// Whether the call failed after all its attempts.
    pub fn failed(self) -> bool {
        self.ending != Ending::Success
    }

    /// Retries sent: every attempt after the first.
    pub fn retries(self) -> u32 {
        self.attempts.saturating_sub(1)
    }

    /// Why the call gave up; `None` when it succeeded.
    pub fn stop_reason(self) -> Option<StopReason> {
        match self.ending {
            Ending::Success => None,
            Ending::GaveUp(reason) => Some(reason),
        }
    }

    /// Rule 5's "retry criteria satisfied" for this call. A success has
    /// nothing to satisfy; a failure satisfies them unless its edge has no
    /// retries configured (see [`StopReason::criteria_satisfied`]).
    pub fn criteria_satisfied(self) -> bool {
        self.stop_reason()
            .is_none_or(StopReason::criteria_satisfied)
    }

    /// The record the dependency analysis keeps for this call, on an edge to
    /// `dependency` declared `mode`.
    pub fn outbound(self, dependency: usize, mode: DependencyMode) -> Outbound {
        let failed = self.failed();
        Outbound {
            dependency,
            mode,
            failed,
            claim_seen: if failed { self.last.claim() } else { None },
            criteria_satisfied: self.criteria_satisfied(),
        }
    }
}

/// What the driver does after feeding an answer to the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Send the next attempt at once: the edge has no backoff.
    RetryNow,
    /// Send the next attempt after this delay: the full-jitter draw for the
    /// edge's backoff base (which may itself come out as zero).
    RetryAfter(Duration),
    /// No further attempt: the call is over.
    Stop(CallOutcome),
}

/// The attempt state machine of one logical call.
///
/// Built per call from the edge's attempt cap, ownership switch and backoff
/// base, fed one [`Classified`] answer per attempt. Once it has answered
/// [`Next::Stop`] it keeps answering the same stop, whatever it is fed.
#[derive(Debug, Clone)]
pub struct AttemptMachine {
    max_attempts: u32,
    ownership: bool,
    backoff: Duration,
    /// The attempt whose answer is awaited, 0-based.
    attempt: u32,
    /// The answer to the latest attempt (no response before the first).
    last: Classified,
    done: Option<CallOutcome>,
}

/// How long the next attempt of a call may take: the per-attempt
/// `timeout`, clipped to the time `left` before the call's deadline when it
/// has one. `None` when no time is left: no attempt is started.
///
/// ```
/// use std::time::Duration;
/// use error_ownership::attempt::attempt_timeout;
///
/// let ms = Duration::from_millis;
/// assert_eq!(attempt_timeout(ms(250), None), Some(ms(250)));
/// assert_eq!(attempt_timeout(ms(250), Some(ms(40))), Some(ms(40)));
/// assert_eq!(attempt_timeout(ms(250), Some(Duration::ZERO)), None);
/// ```
pub fn attempt_timeout(timeout: Duration, left: Option<Duration>) -> Option<Duration> {
    match left {
        None => Some(timeout),
        Some(left) if left.is_zero() => None,
        Some(left) => Some(timeout.min(left)),
    }
}

impl AttemptMachine {
    /// A call allowing `max_attempts` attempts (the first included; 0 or 1
    /// means no retries), honouring claims when `ownership` is on, and
    /// waiting a full-jitter backoff on `backoff` before each retry when it
    /// is not zero.
    pub fn new(max_attempts: u32, ownership: bool, backoff: Duration) -> AttemptMachine {
        AttemptMachine {
            max_attempts,
            ownership,
            backoff,
            attempt: 0,
            last: Classified::NoResponse,
            done: None,
        }
    }

    /// A call on an edge running `policy`.
    pub fn for_policy(policy: &EdgePolicy) -> AttemptMachine {
        AttemptMachine::new(policy.attempts, policy.ownership, policy.backoff)
    }

    /// The number of the attempt whose answer is awaited (0 for the first);
    /// after the call has stopped, the number of its last attempt (or of the
    /// attempt its deadline kept from being sent).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The call's outcome, once it has stopped.
    pub fn outcome(&self) -> Option<CallOutcome> {
        self.done
    }

    /// Asked before each attempt, the first included, of a call with a
    /// deadline: whether it may be sent. When `deadline_passed`, the call
    /// gives up ([`StopReason::DeadlinePassed`]) and its outcome is
    /// returned: no attempt is started once the caller has stopped waiting.
    /// A stopped call returns its outcome whatever it is fed.
    pub fn before_attempt(&mut self, deadline_passed: bool) -> Option<CallOutcome> {
        if self.done.is_none() && deadline_passed {
            self.done = Some(CallOutcome {
                ending: Ending::GaveUp(StopReason::DeadlinePassed),
                last: self.last,
                attempts: self.attempt,
            });
        }
        self.done
    }

    /// The edge's circuit breaker refused the attempt about to be sent:
    /// the call gives up ([`StopReason::BreakerOpen`]) and its outcome is
    /// returned (the refused attempt is not counted: it was never sent).
    /// A stopped call returns its outcome.
    pub fn short_circuit(&mut self) -> CallOutcome {
        self.fail_fast(StopReason::BreakerOpen)
    }

    /// The edge's adaptive throttle rejected the attempt about to be sent
    /// (a first attempt or a retry): the call gives up
    /// ([`StopReason::Throttled`]) as it does for an open breaker.
    pub fn throttled(&mut self) -> CallOutcome {
        self.fail_fast(StopReason::Throttled)
    }

    /// The retry just decided on cannot be sent (the client has nothing
    /// left to send it from): the call stops as one with no retries
    /// configured ([`StopReason::NoRetriesConfigured`]), so that rule 5
    /// owes the hop above its retry, as for a body that cannot be copied.
    /// A stopped call returns its outcome.
    pub fn cannot_retry(&mut self) -> CallOutcome {
        self.fail_fast(StopReason::NoRetriesConfigured)
    }

    fn fail_fast(&mut self, why: StopReason) -> CallOutcome {
        *self.done.get_or_insert(CallOutcome {
            ending: Ending::GaveUp(why),
            last: self.last,
            attempts: self.attempt,
        })
    }

    /// Feeds the answer to the current attempt and decides what follows,
    /// for a call without a deadline: [`on_answer_by`](Self::on_answer_by)
    /// with a deadline that never passes.
    pub fn on_answer(
        &mut self,
        answer: Classified,
        budget: impl FnOnce() -> bool,
        jitter: impl FnOnce() -> f64,
    ) -> Next {
        self.on_answer_by(answer, false, budget, jitter)
    }

    /// Feeds the answer to the current attempt and decides what follows.
    ///
    /// `deadline_passed` says whether the call's deadline has passed: an
    /// answer the retry rule and the attempt cap would retry then stops the
    /// call ([`StopReason::DeadlinePassed`]) before the budget is asked.
    /// `budget` is asked (at most once) whether the edge's budget grants a
    /// retry, and only for an answer the retry rule and the attempt cap
    /// would retry; `true` grants it (an edge without a budget always
    /// grants). `jitter` is asked (at most once) for a uniform sample in
    /// `[0, 1)`, and only for a granted retry on an edge with a backoff.
    pub fn on_answer_by(
        &mut self,
        answer: Classified,
        deadline_passed: bool,
        budget: impl FnOnce() -> bool,
        jitter: impl FnOnce() -> f64,
    ) -> Next {
        self.on_advised_answer(answer, Advice::Silent, deadline_passed, budget, jitter)
    }

    /// Feeds the answer to the current attempt together with what the
    /// edge's don't-retry signal made of it ([`Signal::read`]), and decides
    /// what follows, as [`on_answer_by`](Self::on_answer_by) does. A
    /// failure whose `advice` is [`Advice::DontRetry`] stops the call
    /// ([`StopReason::Refused`]) once the ownership rule and the attempt
    /// cap have had their say, before the deadline and the budget are
    /// asked; [`Advice::RetryAfter`] makes the retry wait at least that
    /// long (the longer of it and the backoff draw). A success is never
    /// advised.
    ///
    /// [`Signal::read`]: super::signal::Signal::read
    pub fn on_advised_answer(
        &mut self,
        answer: Classified,
        advice: Advice,
        deadline_passed: bool,
        budget: impl FnOnce() -> bool,
        jitter: impl FnOnce() -> f64,
    ) -> Next {
        if let Some(done) = self.done {
            return Next::Stop(done);
        }
        self.last = answer;
        let verdict = retry::decide(answer, self.ownership);
        let refused = match advice {
            Advice::DontRetry(why) => Some(StopReason::Refused(why)),
            _ => None,
        };
        let ending = if verdict == RetryVerdict::Done {
            Some(Ending::Success)
        } else {
            retry::stop_reason(verdict, self.attempt, self.max_attempts)
                .or(refused)
                .or_else(|| deadline_passed.then_some(StopReason::DeadlinePassed))
                .or_else(|| (!budget()).then_some(StopReason::BudgetDenied))
                .map(Ending::GaveUp)
        };
        if let Some(ending) = ending {
            let done = CallOutcome {
                ending,
                last: answer,
                attempts: self.attempt + 1,
            };
            self.done = Some(done);
            return Next::Stop(done);
        }
        self.attempt += 1;
        let asked = match advice {
            Advice::RetryAfter(d) if !d.is_zero() => Some(d),
            _ => None,
        };
        let drawn =
            (!self.backoff.is_zero()).then(|| backoff::delay(self.backoff, self.attempt, jitter()));
        match drawn.max(asked) {
            None => Next::RetryNow,
            Some(d) => Next::RetryAfter(d),
        }
    }
}

#[cfg(test)]
mod tests;
