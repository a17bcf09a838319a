//! Phases: a run cut wherever the model's prediction could change.
//!
//! A run whose policy or faults change half-way measures two mechanisms:
//! over the whole run, D's 8× under naive retries and its 1.1× under
//! ownership average to a figure neither policy produces, and the model
//! column can only show one of them. So the report cuts the measured
//! window at every action that changes what the model is told (the
//! policy, a fault, a dropped context, at-least-once, attribution, a
//! service's resources; not the entry rate, nor a pause) and measures each
//! phase on its own, next to the model of the state in force during it.
//!
//! [`cut`] is the pure part (events in, spans of the lab's clock out, each
//! with its state folded by the one [`apply`]); [`measure`] reads each
//! span's samples. Both front ends (the headless table, the dashboard's
//! summary) and the JSON report's `phases` read what [`measure`] returns.

use std::time::Duration;

use serde::Serialize;

use super::{ExpectationReport, Report};
use crate::lab::state::apply;
use crate::lab::{Action, Event, LabState, RunRecord};
use crate::metrics::Sample;

/// A stretch of the lab's clock in which the model's inputs held still.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// Where it starts on the lab's clock.
    pub from: Duration,
    /// Where it ends (the next span's start, or the window's end).
    pub to: Duration,
    /// The state in force at its end: the model's inputs are those of the
    /// whole span, the entry rate the last one set in it.
    pub state: LabState,
    /// The actions that opened it, as the event log says them (none for
    /// the first span).
    pub after: Vec<String>,
}

/// Whether two states differ in what the model is told: anything but the
/// entry rate and a pause.
pub fn model_differs(a: &LabState, b: &LabState) -> bool {
    let inputs = |s: &LabState| LabState {
        rps: 0.0,
        paused: false,
        ..s.clone()
    };
    inputs(a) != inputs(b)
}

/// Cuts `from..to` of the lab's clock at every event that changes the
/// model's inputs. `start` is the state the run started in and `events`
/// every action applied, in order; actions before `from` set the first
/// span's state, actions at or after `to` are left out, and a refused
/// action (logged, but not applied) changes nothing here either. Never
/// empty: a run without changes is one span.
pub fn cut(start: &LabState, events: &[Event], from: Duration, to: Duration) -> Vec<Span> {
    let mut state = start.clone();
    let mut spans = vec![Span {
        from,
        to,
        state: state.clone(),
        after: vec![],
    }];
    for e in events.iter().take_while(|e| e.t < to) {
        let before = state.clone();
        if apply(&mut state, &e.action).is_err() {
            continue;
        }
        let changed = model_differs(&before, &state);
        let last = spans.last_mut().expect("never empty");
        if changed && e.t > last.from {
            last.to = e.t;
            spans.push(Span {
                from: e.t,
                to,
                state: state.clone(),
                after: vec![e.text.clone()],
            });
        } else {
            // Actions at the same instant open one span together.
            last.state = state.clone();
            if changed && e.t > from {
                last.after.push(e.text.clone());
            }
        }
    }
    spans
}

/// One phase of a run: its span, the state in force, and its figures.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PhaseReport {
    /// Where it starts, seconds from the end of the warm-up (the
    /// scenario's clock, as an expectation's window).
    pub from_s: f64,
    /// Where it ends, on the same clock.
    pub to_s: f64,
    /// The samples its figures were read between, on the same clock.
    pub measured_s: (f64, f64),
    /// The actions that opened it (none for the first phase).
    pub after: Vec<String>,
    /// The faults in force, in words (`D fails 100% (after its calls,
    /// status 500)`).
    pub faults: Vec<String>,
    /// The services whose request context was dropped.
    pub context_dropped: Vec<String>,
    /// Its figures, the model's being those of the state in force; its
    /// `events` are the actions applied during it and its `expectations`
    /// those whose windows lie inside it.
    #[serde(flatten)]
    pub report: Report,
}

/// The phases of the window `from..to` of a finished run, in order. A
/// phase with fewer than two samples (shorter than a sampling tick, or
/// cleared by a reset) cannot be measured and is left out; its actions
/// are still in the report's `events`.
pub fn measure(r: &RunRecord, from: Duration, to: Duration) -> Vec<PhaseReport> {
    // Looked up by bisection: a session can hold many short phases.
    let samples: Vec<&Sample> = r.series.iter().collect();
    cut(&r.start, &r.events, from, to)
        .into_iter()
        .filter_map(|s| phase(r, &samples, s))
        .collect()
}

/// One span's figures: from its first sample at or after its start to its
/// last at or before its end (as [`samples_between`](super::samples_between)),
/// `None` without two.
fn phase(r: &RunRecord, samples: &[&Sample], s: Span) -> Option<PhaseReport> {
    let first = samples.get(samples.partition_point(|x| x.t < s.from))?;
    let last = samples[..samples.partition_point(|x| x.t <= s.to)].last()?;
    let (t0, t1) = (first.t, last.t);
    if t1 <= t0 {
        return None;
    }
    let ends = (*first, *last);
    let latency = r.series.latency_between(t0, t1);
    let latency_ms = (
        latency.quantile_ms(0.5).unwrap_or(0.0),
        latency.quantile_ms(0.99).unwrap_or(0.0),
    );
    let lo = r.events.partition_point(|e| e.t < s.from);
    let hi = r.events.partition_point(|e| e.t < s.to).max(lo);
    let events: Vec<&Event> = r.events[lo..hi].iter().collect();
    let report = Report::measure_state(r, ends, &s.state, latency_ms, &events);
    let rel = |t: Duration| t.as_secs_f64() - r.warmup.as_secs_f64();
    let ms = |x: f64| (x * 1000.0).round() / 1000.0;
    let t = &r.topology;
    Some(PhaseReport {
        from_s: ms(rel(s.from.max(r.warmup))),
        to_s: ms(rel(s.to.min(r.uptime.max(t1)))),
        measured_s: (rel(t0), rel(t1)),
        after: s.after,
        faults: s
            .state
            .faults
            .iter()
            .enumerate()
            .filter(|(_, f)| f.is_active())
            .map(|(i, f)| {
                Action::SetFault {
                    service: i,
                    fault: f.clone(),
                }
                .describe(t)
            })
            .fold(Vec::new(), distinct),
        // A context is a service's, on all its endpoints.
        context_dropped: s
            .state
            .context_dropped
            .iter()
            .enumerate()
            .filter(|&(_, &d)| d)
            .map(|(i, _)| t.group_name(i).to_string())
            .fold(Vec::new(), distinct),
        report,
    })
}

/// `list` with `item` at its end unless it is there already: a service's
/// endpoints (consecutive nodes) that carry its fault name it once.
fn distinct(mut list: Vec<String>, item: String) -> Vec<String> {
    if list.last() != Some(&item) {
        list.push(item);
    }
    list
}

/// Gives each phase the expectations whose samples lie inside its own.
pub fn share(phases: &mut [PhaseReport], expectations: &[ExpectationReport]) {
    const EPS: f64 = 1e-9;
    for p in phases {
        let (a, b) = p.measured_s;
        p.report.expectations = expectations
            .iter()
            .filter(|e| {
                let (x, y) = e.figures.measured_s;
                x + EPS >= a && y <= b + EPS
            })
            .cloned()
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::figures::Figure;
    use crate::lab::Origin;
    use crate::metrics::{Counts, LatencySummary, RadiusStats, Series, ServiceCounts};
    use crate::topology::{model, Fault, PolicyFields, Preset, Topology};

    /// A→B→C, C failing every request, naive retries (R = 2).
    fn chain() -> Topology {
        Topology::from_yaml(
            "name: c\nload: { rps: 40 }\npolicy: { preset: retry, attempts: 2, budget: 0.1 }\nservices:\n  A: { calls: [B] }\n  B: { calls: [C] }\n  C:\n    fault: { error_rate: 1.0 }\n",
            "c.yaml",
        )
        .unwrap()
    }

    fn at(ms: u64, action: Action, t: &Topology) -> Event {
        Event {
            t: Duration::from_millis(ms),
            text: action.describe(t),
            action,
            origin: Origin::Timeline,
        }
    }

    fn policy(p: Preset) -> Action {
        Action::Policy(PolicyFields {
            preset: Some(p),
            ..PolicyFields::default()
        })
    }

    fn heal(service: usize) -> Action {
        Action::SetFault {
            service,
            fault: Fault::default(),
        }
    }

    fn secs(s: &Span) -> (f64, f64) {
        (s.from.as_secs_f64(), s.to.as_secs_f64())
    }

    #[test]
    fn the_window_is_cut_where_the_model_changes() {
        let t = chain();
        let start = LabState::of(&t);
        let events = vec![
            // Before the window: it sets the first span's state.
            at(500, Action::SetAtLeastOnce(false), &t),
            // The rate and a pause change no model figure.
            at(1500, Action::SetRps(80.0), &t),
            at(1700, Action::Pause(true), &t),
            at(1800, Action::Pause(false), &t),
            at(3000, policy(Preset::Ownership), &t),
            // The same instant opens the same span.
            at(
                3000,
                Action::SetContextDropped {
                    service: 1,
                    dropped: true,
                },
                &t,
            ),
            // Refused (no service #9), and the same policy again: no cut.
            at(
                4000,
                Action::SetContextDropped {
                    service: 9,
                    dropped: true,
                },
                &t,
            ),
            at(4500, policy(Preset::Ownership), &t),
            at(6000, heal(2), &t),
            // At or past the window's end: left out.
            at(9000, policy(Preset::None), &t),
        ];
        let spans = cut(
            &start,
            &events,
            Duration::from_secs(1),
            Duration::from_secs(9),
        );
        let got: Vec<(f64, f64)> = spans.iter().map(secs).collect();
        assert_eq!(got, vec![(1.0, 3.0), (3.0, 6.0), (6.0, 9.0)]);
        assert!(spans[0].after.is_empty());
        assert_eq!(
            spans[1].after,
            vec!["policy ownership".to_string(), "B context dropped".into()]
        );
        assert_eq!(spans[2].after, vec!["C healed".to_string()]);
        // Each span's state is the fold up to its end.
        assert!(!spans[0].state.at_least_once);
        assert_eq!(spans[0].state.policy.name(), "retry");
        assert_eq!(spans[0].state.rps, 80.0);
        assert!(!spans[0].state.paused);
        assert_eq!(spans[1].state.policy.name(), "ownership");
        assert!(spans[1].state.context_dropped[1]);
        assert_eq!(spans[1].state.faults[2].error_rate, 1.0);
        assert_eq!(spans[2].state.faults[2].error_rate, 0.0);
        assert_eq!(spans[2].state.policy.name(), "ownership");
        // No event: one span, the start state.
        let one = cut(&start, &[], Duration::ZERO, Duration::MAX);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].state, start);
    }

    /// A run of the chain, a tick every 250 ms for 6 s, 40 roots a second:
    /// naive retries until 3 s (C sees 4×), ownership after (1.1×).
    fn switched_run() -> RunRecord {
        let t = chain();
        let events = vec![at(3000, policy(Preset::Ownership), &t)];
        let start = LabState::of(&t);
        let state =
            crate::lab::fold(start.clone(), events.iter().map(|e| &e.action)).expect("applies");
        let topology = state.applied_to(&t);
        let mut series = Series::new(64);
        let mut counts = Counts {
            services: vec![ServiceCounts::default(); 3],
            edges: vec![Default::default(); 2],
            root: Default::default(),
            replicas: vec![],
            outliers: vec![],
            roots: vec![],
        };
        for tick in 0..=24u64 {
            let storm = tick <= 12;
            if tick > 0 {
                counts.root.sent += 10;
                counts.root.errors += 10;
                counts.services[0].roots += 10;
                counts.services[0].requests += 10;
                counts.services[1].requests += if storm { 20 } else { 10 };
                counts.services[2].requests += if storm { 40 } else { 11 };
            }
            let mut latency = LatencySummary::default();
            latency.record(1_000, 10);
            series.push(Sample {
                t: Duration::from_millis(250 * tick + 1),
                counts: counts.clone(),
                radius: RadiusStats::default(),
                latency_ms: (1.0, 1.0),
                latency,
            });
        }
        RunRecord {
            prediction: model::predict(&topology, &topology.policy),
            static_radius: model::static_radius(&topology, &topology.policy),
            start,
            state,
            topology,
            series,
            events,
            steps: vec![],
            latency: hdrhistogram::Histogram::new_with_bounds(1, 60_000_000, 2).unwrap(),
            learned: vec![vec![]; 3],
            tick: Duration::from_millis(250),
            warmup: Duration::from_secs(1),
            uptime: Duration::from_millis(6001),
            course: Default::default(),
        }
    }

    #[test]
    fn the_html_phase_table_of_a_large_fleet_keeps_the_services_that_peaked() {
        let r = switched_run();
        let mut report = Report::measure(&r, r.warmup, Duration::MAX);
        // 30 services: S7 peaks in the first phase, S22 in the second,
        // the rest stay at 1×.
        let grow = |nodes: &mut Vec<crate::report::NodeReport>, peak: &str, amp: f64| {
            let template = nodes[0].clone();
            *nodes = (0..30)
                .map(|i| {
                    let mut n = template.clone();
                    n.name = format!("S{i}");
                    n.figures.set(
                        Figure::Amplification,
                        if n.name == peak { amp } else { 1.0 },
                    );
                    n
                })
                .collect();
        };
        grow(&mut report.nodes, "S7", 4.0);
        grow(&mut report.phases[0].report.nodes, "S7", 9.0);
        grow(&mut report.phases[1].report.nodes, "S22", 6.0);
        let section = crate::report::html::run::phases(&report);
        let header = section.html.split("</tr>").next().unwrap().to_string();
        assert_eq!(
            header.matches("<th>").count(),
            3 + crate::report::html::run::MAX_LINES
        );
        assert!(header.contains("<th>S7</th>") && header.contains("<th>S22</th>"));
        assert!(section.html.contains("9.00×") && section.html.contains("6.00×"));
        assert!(
            section.text.contains("The 10 services of 30"),
            "{}",
            section.text
        );
        // A small fleet keeps every service and says nothing of it.
        let small = Report::measure(&r, r.warmup, Duration::MAX);
        let section = crate::report::html::run::phases(&small);
        assert!(!section.text.contains("services of"));
    }

    #[test]
    fn a_policy_switch_gives_two_phases_each_with_its_own_model() {
        let r = switched_run();
        let retry = model::predict(&chain(), &chain().policy);
        let end = r.topology.clone();
        let ownership = model::predict(&end, &end.policy);
        let c = |p: &PhaseReport, f: Figure| p.report.nodes[2].figures[f];
        assert_ne!(
            retry.services[2].amplification,
            ownership.services[2].amplification
        );

        let phases = measure(&r, r.warmup, Duration::MAX);
        assert_eq!(phases.len(), 2);
        let (before, after) = (&phases[0], &phases[1]);
        assert_eq!((before.from_s, before.to_s), (0.0, 2.0));
        assert_eq!((after.from_s, after.to_s), (2.0, 5.001));
        assert_eq!(before.report.policy, "retry");
        assert_eq!(after.report.policy, "ownership");
        assert_eq!(after.after, vec!["policy ownership".to_string()]);
        assert_eq!(before.faults, after.faults);
        assert!(before.faults[0].starts_with("C fails 100%"));
        // The model columns: each phase's own policy, never the other's.
        assert_eq!(
            c(before, Figure::ModelAmplification),
            retry.services[2].amplification
        );
        assert_eq!(
            c(after, Figure::ModelAmplification),
            ownership.services[2].amplification
        );
        // The measured columns: each phase's own samples, no tick across
        // the switch.
        assert_eq!(c(before, Figure::Amplification), 4.0);
        assert!((c(after, Figure::Amplification) - 1.1).abs() < 1e-9);
        let near = |(a, b): (f64, f64), (x, y): (f64, f64)| (a - x).abs() + (b - y).abs() < 1e-9;
        assert!(
            near(before.measured_s, (0.001, 1.751)),
            "{:?}",
            before.measured_s
        );
        assert!(
            near(after.measured_s, (2.001, 5.001)),
            "{:?}",
            after.measured_s
        );
        assert_eq!(before.report.events.len(), 0);
        assert_eq!(after.report.events.len(), 1);

        // The whole run's report carries them; its table prints one table
        // per phase, its JSON a `phases` array.
        let report = Report::measure(&r, r.warmup, Duration::MAX);
        // (Through JSON: a figure the window has no value for is NaN.)
        assert_eq!(
            serde_json::to_value(&report.phases).unwrap(),
            serde_json::to_value(&phases).unwrap()
        );
        let table = report.table();
        assert!(
            table.starts_with("phase 1 of 2 · 0.0s..2.0s · C fails 100%"),
            "{table}"
        );
        assert!(
            table.contains("\nphase 2 of 2 · 2.0s..5.0s · after policy ownership · C fails"),
            "{table}"
        );
        assert_eq!(table.matches("storm radius:").count(), 2);
        let v = serde_json::to_value(&report).unwrap();
        let p = v["phases"].as_array().unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[1]["policy"], "ownership");
        assert_eq!(p[1]["from_s"], 2.0);
        assert_eq!(
            p[1]["nodes"][2]["amplification"],
            c(after, Figure::Amplification)
        );
        assert!(p[1].get("phases").is_none());
    }

    #[test]
    fn one_phase_prints_the_table_as_before() {
        let mut r = switched_run();
        r.events.clear();
        r.start = r.state.clone();
        let report = Report::measure(&r, r.warmup, Duration::MAX);
        assert_eq!(report.phases.len(), 1);
        assert!(report
            .table()
            .starts_with("c · policy ownership (R=2, B=0.1)"));
        assert_eq!(report.table().matches("storm radius:").count(), 1);
    }

    #[test]
    fn a_phase_shorter_than_a_tick_is_left_out() {
        let mut r = switched_run();
        let t = chain();
        // Back to naive retries 100 ms after the switch: no two samples.
        r.events.push(at(3100, policy(Preset::Retry), &t));
        r.state = r.start.clone();
        let phases = measure(&r, r.warmup, Duration::MAX);
        assert_eq!(phases.len(), 2);
        assert_eq!(phases[0].report.policy, "retry");
        assert_eq!(phases[1].report.policy, "retry");
        assert_eq!(phases[1].after, vec!["policy retry".to_string()]);
    }

    fn judged(what: &str, measured_s: (f64, f64)) -> ExpectationReport {
        use crate::lab::figures::{Figures, Scope};
        use crate::report::WindowFigures;
        ExpectationReport {
            what: what.into(),
            passed: true,
            observed: 1.0,
            window_s: measured_s,
            figure: "amplification".into(),
            service: None,
            root: None,
            expected: "<= 2".into(),
            source: "s.yaml:1:1".into(),
            line: None,
            note: None,
            figures: WindowFigures {
                measured_s,
                fleet: Figures::filled(Scope::Fleet, 1.0),
                service: None,
            },
        }
    }

    #[test]
    fn each_phase_gets_the_expectations_read_inside_it() {
        let r = switched_run();
        let mut report = Report::measure(&r, r.warmup, Duration::MAX);
        report.set_expectations(vec![
            judged("before", (0.501, 1.751)),
            judged("across", (1.001, 3.001)),
            judged("after", (2.001, 5.001)),
        ]);
        let names = |k: usize| -> Vec<String> {
            report.phases[k]
                .report
                .expectations
                .iter()
                .map(|e| e.what.clone())
                .collect()
        };
        assert_eq!(names(0), vec!["before".to_string()]);
        assert_eq!(names(1), vec!["after".to_string()]);
        assert_eq!(report.expectations.len(), 3);
        // Interrupted: the last phase says so, and the shared copies keep
        // the verdicts of the whole run's.
        report.duration_s = 4.0;
        report.mark_interrupted();
        assert!(!report.phases[0].report.interrupted);
        assert!(report.phases[1].report.interrupted);
        assert!(!report.phases[1].report.expectations[0].passed);
    }
}
