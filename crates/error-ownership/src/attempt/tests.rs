use super::*;
use crate::Claim;
use proptest::prelude::*;
use std::cell::Cell;

const CLAIMED: Classified = Classified::Error {
    claim: Claim::Claimed,
};
const UNCLAIMED: Classified = Classified::Error {
    claim: Claim::Unclaimed,
};
const MISSING: Classified = Classified::Error {
    claim: Claim::Missing,
};

fn grant() -> bool {
    true
}

fn no_jitter() -> f64 {
    panic!("jitter asked on an edge without backoff")
}

fn stop(next: Next) -> CallOutcome {
    match next {
        Next::Stop(o) => o,
        other => panic!("expected a stop, got {other:?}"),
    }
}

#[test]
fn first_success_stops_at_once() {
    let mut m = AttemptMachine::new(3, true, Duration::ZERO);
    let o = stop(m.on_answer(Classified::Success, || panic!("budget"), no_jitter));
    assert_eq!(o.ending, Ending::Success);
    assert_eq!((o.attempts, o.retries()), (1, 0));
    assert!(!o.failed());
    assert_eq!(
        o.outbound(4, DependencyMode::FailOpen),
        Outbound {
            dependency: 4,
            mode: DependencyMode::FailOpen,
            failed: false,
            claim_seen: None,
            criteria_satisfied: true,
        }
    );
}

#[test]
fn success_on_a_retry() {
    let mut m = AttemptMachine::new(3, true, Duration::ZERO);
    assert_eq!(
        m.on_answer(Classified::NoResponse, grant, no_jitter),
        Next::RetryNow
    );
    assert_eq!(m.attempt(), 1);
    let o = stop(m.on_answer(Classified::Success, grant, no_jitter));
    assert_eq!(o.ending, Ending::Success);
    assert_eq!(o.retries(), 1);
    assert!(o.outbound(0, DependencyMode::FailClose).criteria_satisfied);
}

#[test]
fn claimed_and_missing_errors_use_up_the_cap() {
    for answer in [CLAIMED, MISSING, Classified::NoResponse] {
        let mut m = AttemptMachine::new(3, true, Duration::ZERO);
        assert_eq!(m.on_answer(answer, grant, no_jitter), Next::RetryNow);
        assert_eq!(m.on_answer(answer, grant, no_jitter), Next::RetryNow);
        let o = stop(m.on_answer(answer, grant, no_jitter));
        assert_eq!(o.stop_reason(), Some(StopReason::AttemptsExhausted));
        assert_eq!(o.attempts, 3);
        let out = o.outbound(1, DependencyMode::FailClose);
        assert!(out.failed && out.criteria_satisfied);
        assert_eq!(out.claim_seen, answer.claim());
    }
}

#[test]
fn unclaimed_is_suppressed_under_ownership_only() {
    let mut m = AttemptMachine::new(2, true, Duration::ZERO);
    let o = stop(m.on_answer(UNCLAIMED, || panic!("budget"), no_jitter));
    assert_eq!(o.stop_reason(), Some(StopReason::Suppressed));
    assert_eq!(
        o.outbound(0, DependencyMode::FailClose).claim_seen,
        Some(Claim::Unclaimed)
    );

    let mut m = AttemptMachine::new(2, false, Duration::ZERO);
    assert_eq!(m.on_answer(UNCLAIMED, grant, no_jitter), Next::RetryNow);
}

#[test]
fn no_retries_configured_leaves_rule_5_unsatisfied() {
    for cap in [0, 1] {
        let mut m = AttemptMachine::new(cap, true, Duration::ZERO);
        let o = stop(m.on_answer(CLAIMED, || panic!("budget"), no_jitter));
        assert_eq!(o.stop_reason(), Some(StopReason::NoRetriesConfigured));
        assert!(!o.outbound(0, DependencyMode::FailClose).criteria_satisfied);
    }
}

#[test]
fn budget_denial_stops_and_satisfies_rule_5() {
    let asked = Cell::new(0);
    let mut m = AttemptMachine::new(2, true, Duration::ZERO);
    let o = stop(m.on_answer(
        CLAIMED,
        || {
            asked.set(asked.get() + 1);
            false
        },
        no_jitter,
    ));
    assert_eq!(asked.get(), 1);
    assert_eq!(o.stop_reason(), Some(StopReason::BudgetDenied));
    assert_eq!(o.attempts, 1);
    assert!(o.criteria_satisfied());
}

#[test]
fn budget_is_not_asked_once_the_cap_is_reached() {
    let mut m = AttemptMachine::new(2, false, Duration::ZERO);
    assert_eq!(m.on_answer(CLAIMED, grant, no_jitter), Next::RetryNow);
    let o = stop(m.on_answer(CLAIMED, || panic!("budget"), no_jitter));
    assert_eq!(o.stop_reason(), Some(StopReason::AttemptsExhausted));
}

#[test]
fn backoff_doubles_per_retry_with_the_injected_jitter() {
    let base = Duration::from_millis(10);
    let mut m = AttemptMachine::new(4, true, base);
    assert_eq!(
        m.on_answer(CLAIMED, grant, || 0.5),
        Next::RetryAfter(Duration::from_millis(5))
    );
    assert_eq!(
        m.on_answer(CLAIMED, grant, || 0.5),
        Next::RetryAfter(Duration::from_millis(10))
    );
    assert_eq!(
        m.on_answer(CLAIMED, grant, || 0.0),
        Next::RetryAfter(Duration::ZERO)
    );
    let o = stop(m.on_answer(CLAIMED, grant, || panic!("jitter")));
    assert_eq!(o.attempts, 4);
}

#[test]
fn a_stopped_call_stays_stopped() {
    let mut m = AttemptMachine::new(3, true, Duration::ZERO);
    let o = stop(m.on_answer(UNCLAIMED, grant, no_jitter));
    assert_eq!(m.outcome(), Some(o));
    let again = m.on_answer(CLAIMED, || panic!("budget"), || panic!("jitter"));
    assert_eq!(again, Next::Stop(o));
    assert_eq!(m.attempt(), 0);
}

#[test]
fn for_policy_reads_the_edge() {
    let p = EdgePolicy {
        attempts: 1,
        budget: None,
        ownership: false,
        signal: None,
        breaker: None,
        backoff: Duration::ZERO,
        timeout: Duration::from_secs(1),
        deadline_propagate: false,
        throttle: None,
        hedge: None,
        outlier: None,
        retry_on: crate::conditions::RetryOn::ANY,
    };
    let mut m = AttemptMachine::for_policy(&p);
    let o = stop(m.on_answer(UNCLAIMED, grant, no_jitter));
    assert_eq!(o.stop_reason(), Some(StopReason::NoRetriesConfigured));
}

#[test]
fn no_attempt_is_started_past_the_deadline() {
    let mut m = AttemptMachine::new(3, true, Duration::ZERO);
    assert_eq!(m.before_attempt(false), None);
    let o = m.before_attempt(true).expect("the deadline has passed");
    assert_eq!(o.stop_reason(), Some(StopReason::DeadlinePassed));
    assert_eq!((o.attempts, o.retries()), (0, 0));
    // Nothing came back: a failed call with no claim, like a timeout.
    let out = o.outbound(2, DependencyMode::FailClose);
    assert!(out.failed && out.criteria_satisfied);
    assert_eq!(out.claim_seen, Some(Claim::Missing));
    // Stopped for good.
    assert_eq!(m.before_attempt(false), Some(o));
    assert_eq!(
        m.on_answer(Classified::Success, || panic!("budget"), no_jitter),
        Next::Stop(o)
    );
}

#[test]
fn a_passed_deadline_refuses_the_retry_before_the_budget_is_asked() {
    for answer in [CLAIMED, MISSING, Classified::NoResponse] {
        let mut m = AttemptMachine::new(3, true, Duration::ZERO);
        let o = stop(m.on_answer_by(answer, true, || panic!("budget"), no_jitter));
        assert_eq!(o.stop_reason(), Some(StopReason::DeadlinePassed));
        assert_eq!((o.attempts, o.last), (1, answer));
        assert!(o.criteria_satisfied());
    }
}

#[test]
fn success_suppression_and_the_cap_come_before_the_deadline() {
    let mut m = AttemptMachine::new(3, true, Duration::ZERO);
    let o = stop(m.on_answer_by(Classified::Success, true, grant, no_jitter));
    assert_eq!(o.ending, Ending::Success);
    let mut m = AttemptMachine::new(3, true, Duration::ZERO);
    let o = stop(m.on_answer_by(UNCLAIMED, true, grant, no_jitter));
    assert_eq!(o.stop_reason(), Some(StopReason::Suppressed));
    let mut m = AttemptMachine::new(1, true, Duration::ZERO);
    let o = stop(m.on_answer_by(CLAIMED, true, grant, no_jitter));
    assert_eq!(o.stop_reason(), Some(StopReason::NoRetriesConfigured));
    let mut m = AttemptMachine::new(2, true, Duration::ZERO);
    assert_eq!(
        m.on_answer_by(CLAIMED, false, grant, no_jitter),
        Next::RetryNow
    );
    let o = stop(m.on_answer_by(CLAIMED, true, grant, no_jitter));
    assert_eq!(o.stop_reason(), Some(StopReason::AttemptsExhausted));
}

#[test]
fn a_deadline_that_passes_during_the_backoff_stops_the_retry() {
    let mut m = AttemptMachine::new(3, true, Duration::from_millis(10));
    assert!(matches!(
        m.on_answer_by(CLAIMED, false, grant, || 0.5),
        Next::RetryAfter(_)
    ));
    let o = m.before_attempt(true).expect("stopped");
    assert_eq!(o.stop_reason(), Some(StopReason::DeadlinePassed));
    // One attempt went out; its answer is the call's last.
    assert_eq!((o.attempts, o.last), (1, CLAIMED));
    assert_eq!(
        o.outbound(0, DependencyMode::FailClose).claim_seen,
        Some(Claim::Claimed)
    );
}

#[test]
fn an_attempt_never_outlives_the_time_left() {
    let ms = Duration::from_millis;
    assert_eq!(attempt_timeout(ms(250), None), Some(ms(250)));
    assert_eq!(attempt_timeout(ms(250), Some(ms(300))), Some(ms(250)));
    assert_eq!(attempt_timeout(ms(250), Some(ms(250))), Some(ms(250)));
    assert_eq!(attempt_timeout(ms(250), Some(ms(1))), Some(ms(1)));
    assert_eq!(
        attempt_timeout(ms(250), Some(Duration::from_nanos(1))),
        Some(Duration::from_nanos(1))
    );
    assert_eq!(attempt_timeout(ms(250), Some(Duration::ZERO)), None);
}

fn answer() -> impl Strategy<Value = Classified> {
    prop_oneof![
        Just(Classified::Success),
        Just(Classified::NoResponse),
        Just(CLAIMED),
        Just(UNCLAIMED),
        Just(MISSING),
    ]
}

proptest! {
    /// Over any sequence of answers, budget decisions and jitter draws,
    /// the machine keeps the rules of SPEC section 1.
    #[test]
    fn keeps_the_rules(
        cap in 0u32..6,
        ownership in any::<bool>(),
        backoff_ms in prop_oneof![Just(0u64), 1u64..200],
        feed in proptest::collection::vec(
            (answer(), any::<bool>(), 0.0f64..1.0, prop_oneof![4 => Just(false), 1 => Just(true)]),
            1..12,
        ),
    ) {
        let backoff = Duration::from_millis(backoff_ms);
        let mut m = AttemptMachine::new(cap, ownership, backoff);
        let mut fed = 0u32;
        let mut stopped: Option<CallOutcome> = None;
        for (answer, grants, u, passed) in feed {
            let attempt = m.attempt();
            let budget_asked = Cell::new(false);
            let jitter_asked = Cell::new(false);
            let next = m.on_answer_by(
                answer,
                passed,
                || { budget_asked.set(true); grants },
                || { jitter_asked.set(true); u },
            );
            if let Some(done) = stopped {
                // A stopped call stays stopped and asks for nothing.
                prop_assert_eq!(next, Next::Stop(done));
                prop_assert!(!budget_asked.get() && !jitter_asked.get());
                continue;
            }
            fed += 1;
            prop_assert_eq!(attempt + 1, fed);
            // Attempts never exceed R (at least one is always made).
            prop_assert!(fed <= cap.max(1));
            let verdict = retry::decide(answer, ownership);
            // The budget is only asked for an eligible answer the cap
            // and the deadline allow.
            prop_assert_eq!(
                budget_asked.get(),
                verdict == RetryVerdict::Retry && fed < cap && !passed
            );
            match next {
                Next::Stop(o) => {
                    prop_assert_eq!(o.attempts, fed);
                    prop_assert_eq!(o.last, answer);
                    prop_assert_eq!(m.outcome(), Some(o));
                    prop_assert!(!jitter_asked.get());
                    if answer == Classified::Success {
                        prop_assert_eq!(o.ending, Ending::Success);
                    } else if ownership && answer == UNCLAIMED {
                        prop_assert_eq!(o.stop_reason(), Some(StopReason::Suppressed));
                    } else if cap <= 1 {
                        prop_assert_eq!(o.stop_reason(), Some(StopReason::NoRetriesConfigured));
                    } else if fed == cap {
                        prop_assert_eq!(o.stop_reason(), Some(StopReason::AttemptsExhausted));
                    } else if passed {
                        prop_assert_eq!(o.stop_reason(), Some(StopReason::DeadlinePassed));
                    } else {
                        // A budget denial stops.
                        prop_assert!(budget_asked.get() && !grants);
                        prop_assert_eq!(o.stop_reason(), Some(StopReason::BudgetDenied));
                    }
                    if !ownership {
                        prop_assert_ne!(o.stop_reason(), Some(StopReason::Suppressed));
                    }
                    let out = o.outbound(7, DependencyMode::FailClose);
                    prop_assert_eq!(out.failed, answer != Classified::Success);
                    prop_assert_eq!(out.claim_seen, if out.failed { answer.claim() } else { None });
                    // Rule 5 is left unsatisfied only on an edge without retries.
                    prop_assert_eq!(
                        out.criteria_satisfied,
                        o.stop_reason() != Some(StopReason::NoRetriesConfigured)
                    );
                    stopped = Some(o);
                }
                Next::RetryNow | Next::RetryAfter(_) => {
                    // Only an eligible failure, within the cap and the
                    // deadline, with the budget's consent.
                    prop_assert_eq!(verdict, RetryVerdict::Retry);
                    prop_assert!(!passed);
                    prop_assert!(!(ownership && answer == UNCLAIMED));
                    prop_assert!(fed < cap && budget_asked.get() && grants);
                    prop_assert_eq!(m.attempt(), fed);
                    prop_assert_eq!(jitter_asked.get(), !backoff.is_zero());
                    match next {
                        Next::RetryNow => prop_assert!(backoff.is_zero()),
                        Next::RetryAfter(d) => {
                            prop_assert!(!backoff.is_zero());
                            prop_assert!(d <= backoff::ceiling(backoff, fed));
                        }
                        Next::Stop(_) => unreachable!(),
                    }
                }
            }
        }
    }
}

#[test]
fn a_throttled_retry_ends_the_call_at_the_caller() {
    let mut m = AttemptMachine::new(3, false, Duration::ZERO);
    assert_eq!(m.on_answer(CLAIMED, grant, no_jitter), Next::RetryNow);
    let o = m.throttled();
    assert_eq!(o.stop_reason(), Some(StopReason::Throttled));
    // The rejected retry was never sent: one attempt, and the answer it
    // got is the last one.
    assert_eq!(o.attempts, 1);
    assert!(StopReason::Throttled.criteria_satisfied());
    // Stopped is stopped: the breaker cannot rename it.
    assert_eq!(m.short_circuit(), o);
}
