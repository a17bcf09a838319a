//! What a finished run leaves behind: the inputs of every report.
//!
//! A [`RunRecord`] holds the sample series, the state the run started and
//! ended in, every action applied (with its time) and the scenario's steps
//! on the lab's clock. Reports, expectations and recordings are computed
//! from it after the fleet has stopped, so no front end ever needs the
//! fleet to write one.

use std::time::Duration;

use hdrhistogram::Histogram;

use super::action::{Action, Event};
use super::state::{self, LabState};
use super::timeline::Course;
use crate::metrics::{Counts, EdgeCounts, Series};
use crate::topology::model::{self, Prediction};
use crate::topology::Topology;
use error_ownership::learn::Learned;

/// A finished run.
#[derive(Debug)]
pub struct RunRecord {
    /// The state the run started in.
    pub start: LabState,
    /// The state it ended in.
    pub state: LabState,
    /// The topology with the end state written in.
    pub topology: Topology,
    /// Every sample kept.
    pub series: Series,
    /// Every action applied, in order (bounded).
    pub events: Vec<Event>,
    /// The scenario's steps on the lab's clock.
    pub steps: Vec<(Duration, Action)>,
    /// The model's prediction for the end state.
    pub prediction: Prediction,
    /// The static radius under the end state's policy.
    pub static_radius: usize,
    /// Root latency from the warm-up's end (or the last reset).
    pub latency: Histogram<u64>,
    /// Each service's learned memory at the end.
    pub learned: Vec<Vec<Learned>>,
    /// The sampling period.
    pub tick: Duration,
    /// Leading time the report leaves out.
    pub warmup: Duration,
    /// How long the lab ran.
    pub uptime: Duration,
    /// How the timeline's clock went against the lab's (a presenter's
    /// jumps and holds); the steps' times and every window written on the
    /// timeline are on its clock.
    pub course: Course,
}

impl RunRecord {
    /// Where the timeline's time `plan` fell on the lab's clock.
    pub fn lab_time(&self, plan: Duration) -> Duration {
        self.course.lab_at(plan)
    }

    /// Root latency (ms) at quantile `q` from the report's start.
    pub fn latency_ms(&self, q: f64) -> f64 {
        if self.latency.is_empty() {
            0.0
        } else {
            self.latency.value_at_quantile(q) as f64 / 1000.0
        }
    }

    /// The state in force at `t` on the lab's clock by the scenario's
    /// plan: the start state with every step due by then folded in.
    pub fn planned_state_at(&self, t: Duration) -> LabState {
        let mut s = self.start.clone();
        for (_, a) in self.steps.iter().filter(|(at, _)| *at <= t) {
            // A step the running lab refused was refused here too.
            let _ = state::apply(&mut s, a);
        }
        s
    }

    /// The model's prediction and static radius for a state of this run.
    pub fn model_of(&self, s: &LabState) -> (Prediction, usize) {
        self.model_measured(s, None)
    }

    /// [`model_of`](Self::model_of), told what a window measured: where a
    /// budget's effect depends on latency (a `concurrency` budget), the
    /// model predicts from each edge's measured attempt latency.
    pub fn model_measured(&self, s: &LabState, counts: Option<&Counts>) -> (Prediction, usize) {
        let t = s.applied_to(&self.topology);
        let latency: Option<Vec<f64>> =
            counts.map(|c| c.edges.iter().map(EdgeCounts::attempt_latency_s).collect());
        (
            model::predict_with_latency(&t, &t.policy, latency.as_deref()),
            // With many roots, the largest of each root's, as searched
            // once per state for every phase and window of a report.
            if t.load.many_roots() {
                super::roots::static_radii(&t, &t.policy)
                    .into_iter()
                    .max()
                    .unwrap_or(0)
            } else {
                model::static_radius(&t, &t.policy)
            },
        )
    }
}
