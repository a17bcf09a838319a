//! The run loop of every session: tick the lab, apply actions from the
//! front ends and steps from the timeline, publish snapshots.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use super::action::Action;
use super::lab::Lab;
use super::snapshot::Snapshot;

/// What a run does besides ticking.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Leading time not counted in the report.
    pub warmup: Duration,
    /// Stop after this long (`None`: until told to stop).
    pub until: Option<Duration>,
    /// Timeline steps, applied when their time comes, in order.
    pub steps: Vec<(Duration, Action)>,
}

/// Runs `lab` until the plan's end or until `stop` turns true. Actions
/// arriving on `actions` are applied at once (a refused one is logged in
/// the lab's events and changes nothing). Returns the lab so the session
/// can finish it.
pub async fn drive(
    mut lab: Lab,
    plan: Plan,
    mut actions: mpsc::Receiver<Action>,
    snapshots: watch::Sender<Arc<Snapshot>>,
    mut stop: watch::Receiver<bool>,
) -> Lab {
    let mut interval = tokio::time::interval(lab.tick_period());
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut steps = plan.steps;
    steps.sort_by_key(|(t, _)| *t);
    let mut steps = steps.into_iter().peekable();
    let mut warm = plan.warmup.is_zero();
    if warm {
        lab.mark_report_start();
    }
    let mut actions_open = true;
    loop {
        tokio::select! {
            _ = interval.tick() => {
                let t = lab.elapsed();
                while steps.peek().is_some_and(|(at, _)| *at <= t) {
                    let (_, a) = steps.next().expect("peeked");
                    let _ = lab.apply(a);
                }
                lab.tick();
                if !warm && t >= plan.warmup {
                    warm = true;
                    lab.mark_report_start();
                }
                let _ = snapshots.send(Arc::new(lab.snapshot()));
                if plan.until.is_some_and(|u| t >= u) {
                    break;
                }
            }
            a = actions.recv(), if actions_open => match a {
                Some(a) => {
                    let _ = lab.apply(a);
                }
                None => actions_open = false,
            },
            r = stop.changed() => {
                if r.is_err() || *stop.borrow() {
                    break;
                }
            }
        }
    }
    lab
}
