//! Hedging, as gRPC's proposal A6 defines it: a call sends a second
//! attempt when the first has not answered within a delay, without
//! waiting for it to fail, and takes whichever answers first.
//!
//! # Why hedging counts as retrying
//!
//! Hedging trades load for tail latency: every hedge is a request the
//! callee serves, whether or not its answer is used. A6 therefore counts
//! each hedge as a retry: the retry throttle (or any budget) is asked
//! before each one, and a throttle that refuses stops the hedging. A
//! callee that fails slowly under load draws a hedge from every caller
//! that waits longer than the delay — the storm a retry budget is there to
//! cap.
//!
//! # The rules (gRPC A6, "Hedging Policy")
//!
//! * The first attempt is sent at once; while fewer than `max_attempts`
//!   have been sent and none has committed, another is sent every
//!   `delay` ([`Hedge::on_delay`]).
//! * A success, or a failure whose status is not in `non_fatal`, commits
//!   the call: its answer is the call's, and every other attempt still in
//!   flight is cancelled.
//! * A non-fatal failure sends the next hedge at once (the delay is
//!   skipped) if one is left and the budget allows it; when it was the last
//!   attempt in flight and none is left, the call fails with it.
//! * At most `max_attempts` are ever sent, so at most that many are in
//!   flight (A6 caps `maxAttempts` at 5).
//!
//! The machine is pure: the caller runs the timer, sends what it is told
//! to send and feeds the answers back.
//!
//! ```
//! use error_ownership::hedge::{Answer, Hedge, HedgeConfig, Step};
//!
//! let mut h = Hedge::new(HedgeConfig { max_attempts: 3, ..HedgeConfig::DEFAULT });
//! assert_eq!(h.start(), Step::Send(0));
//! // No answer within the delay: a hedge, if the budget allows.
//! assert_eq!(h.on_delay(|| true), Step::Send(1));
//! // The hedge answers first: the call commits, the first is cancelled.
//! assert_eq!(h.on_answer(1, Answer::Success, || true), Step::Commit { attempt: 1, cancel: vec![0] });
//! assert_eq!(h.in_flight(), 0);
//! ```

use std::time::Duration;

/// A hedging policy: gRPC A6's `hedgingPolicy`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HedgeConfig {
    /// Attempts sent at most, the first included (2..=5 in A6; values
    /// above 5 are read as 5).
    pub max_attempts: u32,
    /// How long to wait for an answer before the next hedge.
    pub delay: Duration,
    /// Whether a failure is non-fatal (A6's `nonFatalStatusCodes`): the
    /// next hedge is sent at once instead of the call failing.
    pub non_fatal: bool,
}

impl HedgeConfig {
    /// Three attempts 100 ms apart, failures non-fatal.
    pub const DEFAULT: HedgeConfig = HedgeConfig {
        max_attempts: 3,
        delay: Duration::from_millis(100),
        non_fatal: true,
    };

    /// A6 caps `maxAttempts` at 5.
    pub const MAX_ATTEMPTS_CAP: u32 = 5;

    fn cap(&self) -> u32 {
        self.max_attempts.clamp(1, Self::MAX_ATTEMPTS_CAP)
    }
}

/// How an attempt answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// A success.
    Success,
    /// A failure (an error status or no answer).
    Failure,
}

/// What the caller does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Send attempt `n` (numbered from 0) now.
    Send(u32),
    /// Wait: for the delay, or for an attempt in flight to answer.
    Wait,
    /// The call is over with this attempt's answer; cancel the others
    /// still in flight (counted by the caller as hedges cancelled).
    Commit {
        /// The attempt whose answer is the call's.
        attempt: u32,
        /// The attempts still in flight, to cancel.
        cancel: Vec<u32>,
    },
}

/// One call's hedging: what was sent, what is in flight.
#[derive(Debug, Clone)]
pub struct Hedge {
    config: HedgeConfig,
    sent: u32,
    /// Bit n: attempt n is in flight (at most 5 attempts).
    in_flight: u32,
    done: bool,
    /// The budget refused a hedge: no more are sent.
    refused: bool,
}

impl Hedge {
    /// A call about to start.
    pub fn new(config: HedgeConfig) -> Hedge {
        Hedge {
            config,
            sent: 0,
            in_flight: 0,
            done: false,
            refused: false,
        }
    }

    /// Attempts in flight now.
    pub fn in_flight(&self) -> u32 {
        self.in_flight.count_ones()
    }

    /// Attempts sent so far.
    pub fn sent(&self) -> u32 {
        self.sent
    }

    /// Whether the call has committed (or failed).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The first attempt (no budget is asked for it).
    pub fn start(&mut self) -> Step {
        if self.sent > 0 || self.done {
            return Step::Wait;
        }
        self.send()
    }

    fn send(&mut self) -> Step {
        let n = self.sent;
        self.sent += 1;
        self.in_flight |= 1 << n;
        Step::Send(n)
    }

    /// Asks `budget` for a hedge when one is left; a refusal stops the
    /// hedging for good, as A6's throttle does.
    fn hedge(&mut self, budget: impl FnOnce() -> bool) -> Option<Step> {
        if self.done || self.refused || self.sent >= self.config.cap() {
            return None;
        }
        if !budget() {
            self.refused = true;
            return None;
        }
        Some(self.send())
    }

    /// The delay has passed since the last attempt was sent with no answer
    /// that ended the call: the next hedge, if one is left and `budget`
    /// allows it.
    pub fn on_delay(&mut self, budget: impl FnOnce() -> bool) -> Step {
        if self.in_flight == 0 {
            // Nothing in flight: the delay timer of a call already over.
            return Step::Wait;
        }
        self.hedge(budget).unwrap_or(Step::Wait)
    }

    /// Attempt `attempt` answered. A success or a fatal failure commits;
    /// a non-fatal failure sends the next hedge at once when one is left
    /// and `budget` allows it, and commits the call to this failure when it
    /// was the last attempt in flight and no other can be sent. An answer
    /// from an attempt not in flight (cancelled, or unknown) is ignored.
    pub fn on_answer(
        &mut self,
        attempt: u32,
        answer: Answer,
        budget: impl FnOnce() -> bool,
    ) -> Step {
        let bit = 1u32.checked_shl(attempt).unwrap_or(0);
        if self.done || self.in_flight & bit == 0 {
            return Step::Wait;
        }
        self.in_flight &= !bit;
        if answer == Answer::Success || !self.config.non_fatal {
            return self.commit(attempt);
        }
        if let Some(step) = self.hedge(budget) {
            return step;
        }
        if self.in_flight == 0 {
            return self.commit(attempt);
        }
        Step::Wait
    }

    fn commit(&mut self, attempt: u32) -> Step {
        self.done = true;
        let cancel = (0..32).filter(|n| self.in_flight & (1 << n) != 0).collect();
        self.in_flight = 0;
        Step::Commit { attempt, cancel }
    }
}

#[cfg(test)]
mod tests;
