//! The client-side retry rule (SPEC section 1, "Retry decision").
//!
//! [`decide`] answers one question per failed attempt: is this error worth
//! retrying? Whether a retry can then be *afforded* (attempt cap, budget) is
//! asked separately by the caller, so the table below stays a pure function
//! of what came back and whether ownership is on.
//!
//! | callee answer            | ownership on | ownership off |
//! |--------------------------|--------------|---------------|
//! | success                  | done         | done          |
//! | error, claim `true`      | retry        | retry         |
//! | error, claim missing     | retry        | retry         |
//! | error, claim `false`     | suppress     | retry         |

use super::signal::DontRetry;
use super::{Claim, Classified};

/// What to do after one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryVerdict {
    /// The attempt succeeded: nothing to retry.
    Done,
    /// The error is eligible for a retry (if attempts and budget allow).
    Retry,
    /// The callee disowned the error: retrying it would only add load to a
    /// chain that is already failing below the callee. Counted as
    /// *suppressed*.
    Suppress,
}

/// The retry rule for one attempt.
pub fn decide(outcome: Classified, ownership: bool) -> RetryVerdict {
    match outcome {
        Classified::Success => RetryVerdict::Done,
        Classified::NoResponse => RetryVerdict::Retry,
        Classified::Error { claim } => match claim {
            Claim::Unclaimed if ownership => RetryVerdict::Suppress,
            _ => RetryVerdict::Retry,
        },
    }
}

/// Why a logical call (all its attempts) stopped retrying after a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum StopReason {
    /// The callee's error came back unclaimed under ownership.
    Suppressed,
    /// The callee's answer forbade a retry in another stack's dialect
    /// (a non-retryable nack, `x-envoy-overloaded`, a negative pushback).
    /// Counted as suppressed, with the reason.
    Refused(DontRetry),
    /// The edge's circuit breaker was open: the attempt failed fast
    /// without reaching the callee, and is not retried.
    BreakerOpen,
    /// The edge's adaptive throttle rejected the attempt locally
    /// ([`throttle`](crate::throttle)): it never reached the callee, and
    /// the call stops.
    Throttled,
    /// The attempt cap was reached after at least one retry was sent.
    AttemptsExhausted,
    /// The edge has no retries configured (`attempts: 1`).
    NoRetriesConfigured,
    /// The retry budget refused the retry.
    BudgetDenied,
    /// The call's deadline had passed (`deadline: propagate`): its caller
    /// has stopped waiting, so no further attempt is started.
    DeadlinePassed,
}

impl StopReason {
    /// Rule 5's "retry criteria satisfied": a retry was sent, refused by
    /// budget, cap or deadline, or the callee disowned its error. Only an
    /// edge with no retries configured leaves the criteria unsatisfied.
    pub fn criteria_satisfied(self) -> bool {
        !matches!(self, StopReason::NoRetriesConfigured)
    }
}

/// Given a failed attempt numbered `attempt` (0-based) on an edge allowing
/// `max_attempts`, why the call would stop here if no retry follows; `None`
/// when the verdict and the cap allow another attempt (the budget is asked
/// next).
pub fn stop_reason(verdict: RetryVerdict, attempt: u32, max_attempts: u32) -> Option<StopReason> {
    match verdict {
        RetryVerdict::Done => None,
        RetryVerdict::Suppress => Some(StopReason::Suppressed),
        RetryVerdict::Retry if max_attempts <= 1 => Some(StopReason::NoRetriesConfigured),
        RetryVerdict::Retry if attempt + 1 >= max_attempts => Some(StopReason::AttemptsExhausted),
        RetryVerdict::Retry => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_row_of_the_table() {
        use Claim::*;
        let rows = [
            (Classified::Success, RetryVerdict::Done, RetryVerdict::Done),
            (
                Classified::Error { claim: Claimed },
                RetryVerdict::Retry,
                RetryVerdict::Retry,
            ),
            (
                Classified::Error { claim: Missing },
                RetryVerdict::Retry,
                RetryVerdict::Retry,
            ),
            (
                Classified::NoResponse,
                RetryVerdict::Retry,
                RetryVerdict::Retry,
            ),
            (
                Classified::Error { claim: Unclaimed },
                RetryVerdict::Suppress,
                RetryVerdict::Retry,
            ),
        ];
        for (outcome, on, off) in rows {
            assert_eq!(decide(outcome, true), on, "{outcome:?} with ownership");
            assert_eq!(decide(outcome, false), off, "{outcome:?} without");
        }
    }

    #[test]
    fn stop_reasons() {
        assert_eq!(stop_reason(RetryVerdict::Retry, 0, 2), None);
        assert_eq!(
            stop_reason(RetryVerdict::Retry, 1, 2),
            Some(StopReason::AttemptsExhausted)
        );
        assert_eq!(
            stop_reason(RetryVerdict::Retry, 0, 1),
            Some(StopReason::NoRetriesConfigured)
        );
        assert_eq!(
            stop_reason(RetryVerdict::Suppress, 0, 3),
            Some(StopReason::Suppressed)
        );
        assert!(!StopReason::NoRetriesConfigured.criteria_satisfied());
        assert!(StopReason::BudgetDenied.criteria_satisfied());
        assert!(StopReason::Suppressed.criteria_satisfied());
        assert!(StopReason::AttemptsExhausted.criteria_satisfied());
        assert!(StopReason::DeadlinePassed.criteria_satisfied());
    }

    fn outcome() -> impl Strategy<Value = Classified> {
        prop_oneof![
            Just(Classified::Success),
            Just(Classified::NoResponse),
            prop_oneof![
                Just(Claim::Claimed),
                Just(Claim::Unclaimed),
                Just(Claim::Missing)
            ]
            .prop_map(|claim| Classified::Error { claim }),
        ]
    }

    proptest! {
        /// Ownership only ever removes retries, never adds one.
        #[test]
        fn ownership_never_adds_retries(o in outcome()) {
            if decide(o, true) == RetryVerdict::Retry {
                prop_assert_eq!(decide(o, false), RetryVerdict::Retry);
            }
        }

        /// A call never makes more attempts than its cap.
        #[test]
        fn cap_is_respected(attempt in 0u32..10, max in 1u32..10) {
            if stop_reason(RetryVerdict::Retry, attempt, max).is_none() {
                prop_assert!(attempt + 1 < max);
            }
        }
    }
}
