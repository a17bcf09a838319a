use proptest::prelude::*;

use super::{Answer, Hedge, HedgeConfig, Step};

fn config(max_attempts: u32, non_fatal: bool) -> HedgeConfig {
    HedgeConfig {
        max_attempts,
        non_fatal,
        ..HedgeConfig::DEFAULT
    }
}

#[test]
fn a_non_fatal_failure_sends_the_next_hedge_at_once() {
    let mut h = Hedge::new(config(3, true));
    assert_eq!(h.start(), Step::Send(0));
    assert_eq!(h.on_answer(0, Answer::Failure, || true), Step::Send(1));
    assert_eq!(h.on_delay(|| true), Step::Send(2));
    // None left: the delay sends nothing.
    assert_eq!(h.on_delay(|| true), Step::Wait);
    assert_eq!(h.on_answer(2, Answer::Failure, || true), Step::Wait);
    // The last in flight fails and none is left: the call fails with it.
    assert_eq!(
        h.on_answer(1, Answer::Failure, || true),
        Step::Commit {
            attempt: 1,
            cancel: vec![]
        }
    );
    assert!(h.is_done());
    assert_eq!(h.sent(), 3);
}

#[test]
fn a_fatal_failure_commits_and_cancels_the_rest() {
    let mut h = Hedge::new(config(4, false));
    h.start();
    assert_eq!(h.on_delay(|| true), Step::Send(1));
    assert_eq!(h.on_delay(|| true), Step::Send(2));
    assert_eq!(
        h.on_answer(1, Answer::Failure, || true),
        Step::Commit {
            attempt: 1,
            cancel: vec![0, 2]
        }
    );
    // Late answers of cancelled attempts change nothing.
    assert_eq!(h.on_answer(0, Answer::Success, || true), Step::Wait);
    assert_eq!(h.on_delay(|| true), Step::Wait);
    assert_eq!(h.sent(), 3);
}

#[test]
fn a_budget_that_refuses_stops_the_hedging() {
    let mut h = Hedge::new(config(5, true));
    h.start();
    assert_eq!(h.on_delay(|| false), Step::Wait);
    // Even when it would allow one later.
    assert_eq!(h.on_delay(|| true), Step::Wait);
    assert_eq!(
        h.on_answer(0, Answer::Failure, || true),
        Step::Commit {
            attempt: 0,
            cancel: vec![]
        }
    );
    assert_eq!(h.sent(), 1);
}

#[test]
fn max_attempts_is_capped_at_five() {
    let mut h = Hedge::new(config(9, true));
    h.start();
    let mut sent = 1;
    for _ in 0..10 {
        if let Step::Send(_) = h.on_delay(|| true) {
            sent += 1;
        }
    }
    assert_eq!((sent, h.in_flight()), (5, 5));
}

#[derive(Debug, Clone)]
enum Event {
    Delay {
        budget: bool,
    },
    Answer {
        attempt: u32,
        success: bool,
        budget: bool,
    },
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        any::<bool>().prop_map(|budget| Event::Delay { budget }),
        (0u32..7, any::<bool>(), any::<bool>()).prop_map(|(attempt, success, budget)| {
            Event::Answer {
                attempt,
                success,
                budget,
            }
        }),
    ]
}

proptest! {
    /// Whatever the timers, answers and budget do: never more than
    /// max_attempts (capped at 5) sent or in flight, attempts numbered in
    /// order, nothing sent after the commit, the commit cancels exactly
    /// the attempts still in flight.
    #[test]
    fn hedging_never_exceeds_max_attempts_in_flight(
        max_attempts in 1u32..8,
        non_fatal in any::<bool>(),
        events in proptest::collection::vec(event(), 0..60),
    ) {
        let cap = max_attempts.min(5);
        let mut h = Hedge::new(config(max_attempts, non_fatal));
        prop_assert_eq!(h.start(), Step::Send(0));
        let mut flying: Vec<u32> = vec![0];
        let mut next = 1;
        let mut committed = false;
        for e in events {
            let step = match e {
                Event::Delay { budget } => h.on_delay(|| budget),
                Event::Answer { attempt, success, budget } => {
                    let answer = if success { Answer::Success } else { Answer::Failure };
                    let step = h.on_answer(attempt, answer, || budget);
                    if !committed && flying.contains(&attempt) {
                        flying.retain(|a| *a != attempt);
                        if success || !non_fatal {
                            let Step::Commit { attempt: a, .. } = &step else {
                                return Err(TestCaseError::fail(format!("{step:?} after {answer:?}")));
                            };
                            prop_assert_eq!(*a, attempt);
                        }
                    } else {
                        prop_assert_eq!(&step, &Step::Wait);
                    }
                    step
                }
            };
            match step {
                Step::Send(n) => {
                    prop_assert!(!committed);
                    prop_assert_eq!(n, next);
                    next += 1;
                    flying.push(n);
                }
                Step::Commit { cancel, .. } => {
                    prop_assert!(!committed);
                    committed = true;
                    let mut want = flying.clone();
                    want.sort_unstable();
                    prop_assert_eq!(cancel, want);
                    flying.clear();
                }
                Step::Wait => {}
            }
            prop_assert!(h.sent() <= cap);
            prop_assert!(h.in_flight() <= cap);
            prop_assert_eq!(h.in_flight() as usize, flying.len());
            prop_assert_eq!(h.is_done(), committed);
        }
    }
}
