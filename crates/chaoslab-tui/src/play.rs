//! A scenario played in the dashboard: its expectations judged as their
//! windows close, by a task beside the dashboard (the run loop sends a
//! copy of what it has measured; the judging is the headless report's),
//! and what the banner shows of them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::lab::expect::Expectation;
use crate::report::expect;
use crate::Lab;

/// How often the judge looks for windows that have closed.
const LOOK_EVERY: Duration = Duration::from_millis(500);

/// One expectation as the banner shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// What is expected, in words.
    pub what: String,
    /// Where its window ends on the timeline's clock (warm-up included).
    pub closes: Duration,
    /// `None` until its window has closed and it has been judged.
    pub passed: Option<bool>,
    /// What was measured, once judged.
    pub observed: f64,
}

/// The expectations of a scenario playing, judged as their windows close.
#[derive(Debug, Clone, Default)]
pub struct Verdicts(Arc<Mutex<Vec<Judged>>>);

impl Verdicts {
    /// The expectations' states now.
    pub fn now(&self) -> Vec<Judged> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Starts judging `expectations` on the lab's runtime: each once its
/// window has closed on the timeline's clock (`warmup` + its end).
pub fn judge(lab: &Lab<'_>, expectations: Vec<Expectation>, warmup: Duration) -> Verdicts {
    let verdicts = Verdicts(Arc::new(Mutex::new(
        expectations
            .iter()
            .map(|e| Judged {
                what: e.what(),
                closes: warmup + e.window.to,
                passed: None,
                observed: 0.0,
            })
            .collect(),
    )));
    if expectations.is_empty() {
        return verdicts;
    }
    let out = verdicts.clone();
    let snaps = lab.snapshots.clone();
    let actions = lab.steer.clone();
    lab.runtime.spawn(async move {
        let mut tick = tokio::time::interval(LOOK_EVERY);
        loop {
            tick.tick().await;
            let now = {
                let s = snaps.borrow();
                s.timeline.as_ref().map_or(s.t, |tl| tl.now)
            };
            let due: Vec<usize> = out
                .now()
                .iter()
                .enumerate()
                .filter(|(_, j)| j.passed.is_none() && j.closes <= now)
                .map(|(i, _)| i)
                .collect();
            if due.is_empty() {
                if out.now().iter().all(|j| j.passed.is_some()) {
                    return;
                }
                continue;
            }
            let Some(record) = actions.record_so_far().await else {
                return;
            };
            let picked: Vec<Expectation> = due.iter().map(|&i| expectations[i].clone()).collect();
            let reports = expect::evaluate(&record, &picked);
            let mut v = out.0.lock().unwrap_or_else(|e| e.into_inner());
            for (&i, r) in due.iter().zip(reports) {
                v[i].passed = Some(r.passed);
                v[i].observed = r.observed;
            }
        }
    });
    verdicts
}
