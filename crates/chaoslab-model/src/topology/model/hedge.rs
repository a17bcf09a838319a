//! A hedged call (gRPC A6, SPEC section 15) in the model: A6's own
//! machine ([`error_ownership::hedge::Hedge`]) driven over every outcome
//! of its attempts and of its budget's answers, on a clock where each
//! attempt answers a fixed time after it is sent.
//!
//! With answers that always succeed this is the closed form the docs
//! give, min(max_attempts, ⌈latency ÷ delay⌉) attempts a call: a hedge
//! leaves every `delay` until the first answer. Failures that are
//! non-fatal send the next hedge at once; a budget that refuses a hedge
//! stops the hedging for good. What only measurement answers: a callee
//! whose answer time varies (a queue, a tail), which this takes as the
//! time one attempt took ([`super::predict_with_latency`]) or, without
//! it, as the time the callee's work and latency faults add up to with no
//! queue.

use error_ownership::hedge::{Answer, Hedge, HedgeConfig, Step};

/// What one hedged call costs and how it ends, on average.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Hedged {
    /// Attempts sent, the first included.
    pub attempts: f64,
    /// The share of calls whose committed answer is a success.
    pub ok: f64,
    /// The share that failed: a committed failure.
    pub failed: f64,
    /// Hedges the budget refused.
    pub refused: f64,
}

/// One hedged call under `cfg` to a callee that answers `latency_s` after
/// each attempt is sent, succeeding with probability `s`; each hedge the
/// budget is asked for is granted with probability `q`.
pub(super) fn hedged(cfg: HedgeConfig, latency_s: f64, s: f64, q: f64) -> Hedged {
    let mut out = Hedged::default();
    let call = Call {
        delay: cfg.delay.as_secs_f64(),
        latency: latency_s.max(0.0),
        s: s.clamp(0.0, 1.0),
        q: q.clamp(0.0, 1.0),
    };
    let mut h = Hedge::new(cfg);
    let first = h.start();
    call.walk(
        Path {
            p: 1.0,
            h,
            now: 0.0,
            answers: vec![],
            next_delay: f64::INFINITY,
            last: Answer::Failure,
        },
        first,
        &mut out,
    );
    out
}

struct Call {
    delay: f64,
    latency: f64,
    s: f64,
    q: f64,
}

/// One branch of the call: its probability and its machine's state.
#[derive(Clone)]
struct Path {
    p: f64,
    h: Hedge,
    now: f64,
    /// When each attempt in flight answers.
    answers: Vec<(f64, u32)>,
    next_delay: f64,
    /// The answer the machine was last given.
    last: Answer,
}

impl Call {
    fn walk(&self, mut path: Path, mut step: Step, out: &mut Hedged) {
        if path.p <= 0.0 {
            return;
        }
        loop {
            match step {
                Step::Send(n) => {
                    path.answers.push((path.now + self.latency, n));
                    path.next_delay = path.now + self.delay;
                    step = Step::Wait;
                    continue;
                }
                Step::Commit { .. } => {
                    out.attempts += path.p * f64::from(path.h.sent());
                    match path.last {
                        Answer::Success => out.ok += path.p,
                        Answer::Failure => out.failed += path.p,
                    }
                    return;
                }
                Step::Wait => {}
            }
            let Some(k) = (0..path.answers.len())
                .min_by(|&a, &b| path.answers[a].0.total_cmp(&path.answers[b].0))
            else {
                // Nothing in flight and nothing committed: a refused hedge
                // left the call with no answer to take.
                out.attempts += path.p * f64::from(path.h.sent());
                out.failed += path.p;
                return;
            };
            // An answer due no later than the delay comes first.
            if path.answers[k].0 <= path.next_delay {
                let (at, n) = path.answers.swap_remove(k);
                path.now = at;
                for (answer, pa) in [(Answer::Success, self.s), (Answer::Failure, 1.0 - self.s)] {
                    self.branch(
                        &path,
                        pa,
                        out,
                        |h, grant| h.on_answer(n, answer, grant),
                        answer,
                    );
                }
            } else {
                path.now = path.next_delay;
                path.next_delay = f64::INFINITY;
                let last = path.last;
                self.branch(&path, 1.0, out, |h, grant| h.on_delay(grant), last);
            }
            return;
        }
    }

    /// Feeds `event` to the machine on a copy of `path` weighted `pe`,
    /// once with the budget granting and once refusing when it is asked.
    fn branch(
        &self,
        path: &Path,
        pe: f64,
        out: &mut Hedged,
        event: impl Fn(&mut Hedge, &mut dyn FnMut() -> bool) -> Step,
        answer: Answer,
    ) {
        if pe <= 0.0 {
            return;
        }
        for grant in [true, false] {
            let mut next = path.clone();
            let mut asked = false;
            let step = event(&mut next.h, &mut || {
                asked = true;
                grant
            });
            let w = match (asked, grant) {
                (false, true) => 1.0,
                (false, false) => continue,
                (true, true) => self.q,
                (true, false) => 1.0 - self.q,
            };
            next.p *= pe * w;
            next.last = answer;
            if asked && !grant {
                out.refused += next.p;
            }
            self.walk(next, step, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn cfg(max_attempts: u32, delay_ms: u64, non_fatal: bool) -> HedgeConfig {
        HedgeConfig {
            max_attempts,
            delay: Duration::from_millis(delay_ms),
            non_fatal,
        }
    }

    #[test]
    fn a_hedge_leaves_every_delay_until_the_first_answer() {
        // min(max_attempts, ⌈latency ÷ delay⌉).
        for (latency_ms, delay_ms, max, want) in [
            (100.0, 30, 3, 3.0),
            (100.0, 30, 5, 4.0),
            (10.0, 30, 3, 1.0),
            (65.0, 30, 5, 3.0),
        ] {
            let h = hedged(cfg(max, delay_ms, true), latency_ms / 1000.0, 1.0, 1.0);
            assert!(
                (h.attempts - want).abs() < 1e-9,
                "{latency_ms} ms / {delay_ms} ms: {h:?}"
            );
            assert!((h.ok - 1.0).abs() < 1e-9 && h.failed == 0.0);
        }
    }

    #[test]
    fn non_fatal_failures_hedge_at_once_and_fatal_ones_end_the_call() {
        // A fast callee failing half its attempts: no hedge on the delay,
        // one at once after each non-fatal failure, up to three.
        let h = hedged(cfg(3, 100, true), 0.01, 0.5, 1.0);
        assert!((h.attempts - (1.0 + 0.5 + 0.25)).abs() < 1e-9, "{h:?}");
        assert!((h.failed - 0.125).abs() < 1e-9, "{h:?}");
        let fatal = hedged(cfg(3, 100, false), 0.01, 0.5, 1.0);
        assert!((fatal.attempts - 1.0).abs() < 1e-9 && (fatal.failed - 0.5).abs() < 1e-9);
    }

    #[test]
    fn a_refused_hedge_stops_the_hedging_and_never_exceeds_max_attempts() {
        // Each hedge granted half the time: the second attempt half the
        // time, the third a quarter.
        let h = hedged(cfg(3, 30, true), 0.1, 1.0, 0.5);
        assert!((h.attempts - 1.75).abs() < 1e-9, "{h:?}");
        assert!((h.refused - 0.75).abs() < 1e-9, "{h:?}");
        for max in 1..=5 {
            let h = hedged(cfg(max, 1, true), 1.0, 0.3, 1.0);
            assert!(h.attempts <= f64::from(max) + 1e-9, "{max}: {h:?}");
            assert!((h.ok + h.failed - 1.0).abs() < 1e-9, "{max}: {h:?}");
        }
    }
}
