//! The run loop of every session: tick the lab, apply actions from the
//! front ends and steps from the timeline, publish snapshots.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};

use super::live::Live;
use crate::lab::timeline::{Course, Timeline};
use crate::lab::{Action, Origin, RunRecord, Snapshot};

/// What a run does besides ticking.
#[derive(Debug, Clone, Default)]
pub struct Schedule {
    /// Leading time not counted in the report.
    pub warmup: Duration,
    /// Stop after this long (`None`: until told to stop).
    pub until: Option<Duration>,
    /// Timeline steps, applied when their time comes, in order.
    pub steps: Vec<(Duration, Action)>,
    /// Captions, shown when their time comes.
    pub captions: Vec<(Duration, String)>,
}

/// What a front end asks of the run loop.
#[derive(Debug)]
// Actions are nearly every message; they go unboxed, as before there
// were queries.
#[allow(clippy::large_enum_variant)]
pub enum Request {
    /// Apply an action now, logged as sent by its origin.
    Apply(Action, Origin),
    /// Send back what the run has measured so far.
    RecordSoFar(oneshot::Sender<RunRecord>),
    /// Play the timeline's next step now (the rest comes that much
    /// sooner).
    NextStep,
    /// Hold the timeline (`true`; the load keeps running) or let it run.
    Hold(bool),
}

/// Measures the fleet's event loop: a timer every `period` on the fleet's
/// runtime, and how late it fires. The run loop itself runs on its own
/// thread (so the dashboard gets its snapshots even when the fleet's
/// threads are saturated); this probe is what still feels the fleet's
/// delay.
pub async fn probe_lag(metrics: Arc<crate::metrics::Metrics>, period: Duration) {
    let mut interval = tokio::time::interval(period);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let due = interval.tick().await;
        metrics.tick_lag(due.elapsed());
    }
}

/// Runs `lab` until the schedule's end or until `stop` turns true. Actions
/// arriving on `commands` are applied at once (a refused one is logged in
/// the lab's events and changes nothing). Returns the lab so the session
/// can finish it, and how the timeline's clock went (for the windows
/// written on it).
pub async fn drive(
    mut lab: Live,
    schedule: Schedule,
    mut commands: mpsc::Receiver<Request>,
    snapshots: watch::Sender<Arc<Snapshot>>,
    mut stop: watch::Receiver<bool>,
) -> (Live, Course) {
    let mut interval = tokio::time::interval(lab.tick_period());
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut all_steps = schedule.steps.clone();
    all_steps.sort_by_key(|(t, _)| *t);
    let mut timeline = Timeline::new(all_steps.clone(), schedule.captions.clone());
    let mut warm = schedule.warmup.is_zero();
    if warm {
        lab.mark_report_start();
    }
    // Steps due are played right after a sample and dated at it: the
    // phase each opens starts at that sample (see `Live::apply_dated`).
    let play = |lab: &mut Live, timeline: &mut Timeline, at: Option<Duration>| {
        for a in timeline.due(lab.elapsed()) {
            let _ = lab.apply_dated(a, Origin::Timeline, at);
        }
    };
    let publish = |lab: &Live, timeline: &Timeline| {
        let mut snap = lab.snapshot();
        if !timeline.is_empty() {
            snap.timeline = Some(timeline.view(lab.elapsed()));
        }
        let _ = snapshots.send(Arc::new(snap));
    };
    let mut commands_open = true;
    let (every, mut ticks) = (lab.snapshot_every(), 0u64);
    // The tick from which the next snapshot may be built (see
    // `snapshot_gap`).
    let mut due = 0u64;
    loop {
        tokio::select! {
            _ = interval.tick() => {
                ticks += 1;
                let t = lab.elapsed();
                let sampled = lab.tick();
                play(&mut lab, &mut timeline, Some(sampled));
                if !warm && t >= schedule.warmup {
                    warm = true;
                    lab.mark_report_start();
                }
                if ticks % every == 0 && ticks >= due {
                    let built = tokio::time::Instant::now();
                    publish(&lab, &timeline);
                    due = ticks + snapshot_gap(built.elapsed(), lab.tick_period());
                }
                if schedule.until.is_some_and(|u| timeline.plan_at(t) >= u) {
                    break;
                }
            }
            c = commands.recv(), if commands_open => match c {
                Some(Request::Apply(a, origin)) => {
                    let _ = lab.apply_from(a, origin);
                }
                Some(Request::RecordSoFar(reply)) => {
                    let mut r = lab.record_so_far(schedule.warmup, all_steps.clone());
                    r.course = timeline.course().clone();
                    let _ = reply.send(r);
                }
                Some(Request::NextStep) => {
                    timeline.skip_to_next(lab.elapsed());
                    play(&mut lab, &mut timeline, None);
                    publish(&lab, &timeline);
                }
                Some(Request::Hold(on)) => {
                    timeline.hold(lab.elapsed(), on);
                    publish(&lab, &timeline);
                }
                None => commands_open = false,
            },
            r = stop.changed() => {
                if r.is_err() || *stop.borrow() {
                    break;
                }
            }
        }
    }
    let course = timeline.course().clone();
    (lab, course)
}

/// How many ticks apart the front ends' snapshots are built, when the last
/// one took `took` to build: every tick while a snapshot takes under half
/// of one, else as many ticks as keep their building to half the
/// session's time (at most ten). The snapshot of a mesh of thousands
/// takes 0.3 to 1.1 s of each 1 s tick (Meta's 29,789 rows), on the cores
/// the reads of its nodes, the load and the samples need: those come
/// first, and the dashboard and the progress line come as often as the
/// machine allows.
fn snapshot_gap(took: Duration, tick: Duration) -> u64 {
    let ticks = 2.0 * took.as_secs_f64() / tick.as_secs_f64().max(1e-3);
    (ticks.ceil() as u64).clamp(1, 10)
}

#[cfg(test)]
mod gap_tests {
    use super::*;

    #[test]
    fn a_snapshot_that_takes_over_half_a_tick_is_built_less_often() {
        let ms = Duration::from_millis;
        assert_eq!(snapshot_gap(ms(0), ms(250)), 1);
        assert_eq!(snapshot_gap(ms(120), ms(250)), 1);
        assert_eq!(snapshot_gap(ms(600), Duration::from_secs(1)), 2);
        assert_eq!(snapshot_gap(ms(1_100), Duration::from_secs(1)), 3);
        assert_eq!(
            snapshot_gap(Duration::from_secs(60), Duration::from_secs(1)),
            10
        );
    }
}
