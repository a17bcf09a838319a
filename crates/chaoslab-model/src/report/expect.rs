//! Expectations, judged over windows of a finished run.
//!
//! Each expectation's window is measured from the two samples nearest its
//! ends (the same arithmetic as the whole-run report, through the same
//! catalogue), then its figure is read and checked against its bound. What
//! was seen, where, and every figure of that window go into an
//! [`ExpectationReport`], so a failing CI run says why without a rerun.
//!
//! Three figures need more than two samples: the storm radius (the largest
//! and the mean over the samples inside the window) and the root latency
//! percentiles, read off the window's merged
//! [`LatencySummary`](crate::metrics::LatencySummary) rather than the whole
//! run's histogram. The model's figures are those of the state in force at
//! the window's start by the scenario's plan
//! ([`RunRecord::planned_state_at`]).

use std::time::Duration;

use super::{node, samples_between, window, ExpectationReport, WindowFigures};
use crate::lab::expect::{self as spec, Expectation};
use crate::lab::figures::{Figure, Figures, Scope};
use crate::lab::RunRecord;
use crate::topology::ServiceId;

/// Judges every expectation of a finished run.
pub fn evaluate(r: &RunRecord, expectations: &[Expectation]) -> Vec<ExpectationReport> {
    expectations
        .iter()
        .map(|e| {
            let mut figures = measure_window(r, e.window, e.service);
            // One root's figures are the fleet's when it is the only one.
            if let (Some((k, _)), true) = (&e.root, r.topology.load.many_roots()) {
                figures.fleet = measure_root(r, e.window, *k);
            }
            judge(e, figures)
        })
        .collect()
}

/// The fleet figures of one window read over root `k`'s requests alone:
/// its end users' counts, latency and storm radius, and the model's
/// availability for it.
pub fn measure_root(r: &RunRecord, span: spec::Window, k: usize) -> Figures {
    let slack = r.tick / 2;
    let from = r.lab_time(r.warmup + span.from).saturating_sub(slack);
    let to = r.lab_time(r.warmup + span.to) + slack;
    let ends = samples_between(r, from, to);
    let state = r.planned_state_at(r.warmup + span.from);
    let counts = ends.1.counts.since(&ends.0.counts);
    let (mut prediction, static_radius) = r.model_measured(&state, Some(&counts));
    if let Some(&a) = prediction.roots.get(k) {
        prediction.root_availability = a;
    }
    let mine = counts.roots.get(k).cloned().unwrap_or_default();
    let latency_ms = (
        mine.latency.quantile_ms(0.5).unwrap_or(0.0),
        mine.latency.quantile_ms(0.99).unwrap_or(0.0),
    );
    let mut w = window(r, ends, (&prediction, static_radius), latency_ms);
    w.counts.root.sent = mine.sent;
    w.counts.root.ok = mine.ok;
    w.counts.root.errors = mine.errors;
    let (max, mean) = mine.radius();
    let count: u64 = mine.radius.iter().sum();
    w.radius = crate::metrics::RadiusStats {
        max,
        sum: (mean * count as f64).round() as u64,
        count,
    };
    Figures::measure(&w, Scope::Fleet, 0)
}

/// Measures one window (on the scenario's clock: the warm-up is added).
pub fn measure_window(
    r: &RunRecord,
    span: spec::Window,
    service: Option<ServiceId>,
) -> WindowFigures {
    // Samples come every tick; take the ones nearest the window's ends.
    // The window is written on the timeline's clock: found on the lab's
    // where the timeline passed it (a presenter may have held or skipped).
    let slack = r.tick / 2;
    let from = r.lab_time(r.warmup + span.from).saturating_sub(slack);
    let to = r.lab_time(r.warmup + span.to) + slack;
    let ends = samples_between(r, from, to);
    let (t0, t1) = (ends.0.t, ends.1.t);
    let latency = r.series.latency_between(t0, t1);
    let latency_ms = (
        latency.quantile_ms(0.5).unwrap_or(0.0),
        latency.quantile_ms(0.99).unwrap_or(0.0),
    );
    let state = r.planned_state_at(r.warmup + span.from);
    let counts = ends.1.counts.since(&ends.0.counts);
    let (prediction, static_radius) = r.model_measured(&state, Some(&counts));
    let w = window(r, ends, (&prediction, static_radius), latency_ms);
    let rel = |t: Duration| t.as_secs_f64() - r.warmup.as_secs_f64();
    WindowFigures {
        measured_s: (rel(t0), rel(t1)),
        fleet: Figures::measure(&w, Scope::Fleet, 0),
        service: service.map(|i| node(r, &w, i)),
    }
}

/// Judges one expectation against its window's figures.
pub fn judge(e: &Expectation, figures: WindowFigures) -> ExpectationReport {
    let (a, b) = figures.measured_s;
    let saturation = crate::lab::figures::saturation(&figures.fleet);
    let no_roots = figures.fleet.count(Figure::RootRequests) == 0
        && matches!(
            e.figure,
            Figure::RootAvailability | Figure::LatencyP50 | Figure::LatencyP99
        );
    let (observed, note) = if b > a && no_roots {
        (
            f64::NAN,
            Some("no root requests in this window".to_string()),
        )
    } else if b > a && e.figure.is_measured() && !saturation.is_empty() {
        (
            figures.get(e.figure),
            Some(format!(
                "the lab was saturated in this window, so the figure is a lower bound, not what the mechanism does: {}",
                saturation.join("; ")
            )),
        )
    } else if b > a
        && e.figure == Figure::Amplification
        && figures.get(e.figure).is_nan()
        && figures.service.is_some()
    {
        let n = figures
            .service
            .as_ref()
            .map_or(0.0, |s| s.figures[Figure::Requests]);
        let expected = figures
            .service
            .as_ref()
            .map_or(0.0, |s| s.figures[Figure::ExpectedRequests]);
        (
            f64::NAN,
            Some(format!(
                "too few requests for a ratio: n={n}, {expected:.1} expected in this window (below {}); a longer window or a higher rate reads one",
                crate::lab::figures::MIN_EXPECTED_REQUESTS
            )),
        )
    } else if b > a {
        (figures.get(e.figure), None)
    } else {
        (
            f64::NAN,
            Some(format!(
                "no two samples in the window {}: it is shorter than the sampling tick, the run ended before it, or a reset cleared it",
                e.window
            )),
        )
    };
    ExpectationReport {
        what: e.what(),
        passed: note.is_none() && e.bound.check(observed),
        observed,
        window_s: (e.window.from.as_secs_f64(), e.window.to.as_secs_f64()),
        figure: e.figure.name().to_string(),
        service: e.service_name.clone(),
        root: e.root.as_ref().map(|(_, n)| n.clone()),
        expected: e.bound.to_string(),
        source: e.source.to_string(),
        line: e.source.line,
        note,
        figures,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::LabState;
    use crate::metrics::{Counts, LatencySummary, RadiusStats, Sample, Series, ServiceCounts};
    use crate::report::{NodeReport, TimeSeries};
    use crate::scenario::Scenario;
    use crate::topology::model;
    use crate::topology::Topology;

    fn chain() -> Topology {
        Topology::from_yaml(
            "name: c\nload: { rps: 100 }\nservices:\n  A: { calls: [B] }\n  B: { calls: [C] }\n  C:\n",
            "c.yaml",
        )
        .unwrap()
    }

    fn node(name: &str, rps: f64, baseline: f64, requests: u64, errors: u64) -> NodeReport {
        let mut f = Figures::filled(Scope::Service, 0.0);
        f.set(Figure::Rps, rps);
        f.set(Figure::BaselineRps, baseline);
        f.set(Figure::Amplification, rps / baseline);
        f.set(Figure::Requests, requests as f64);
        f.set(Figure::Errors, errors as f64);
        NodeReport {
            name: name.into(),
            depth: 1,
            figures: f,
            withheld: None,
            learned: vec![],
            replicas: vec![],
            service: None,
            endpoint: None,
        }
    }

    fn figures(measured: (f64, f64), service: Option<NodeReport>) -> WindowFigures {
        let mut fleet = Figures::filled(Scope::Fleet, 0.0);
        fleet.set(Figure::StormRadius, 3.0);
        fleet.set(Figure::RootAvailability, 0.99);
        fleet.set(Figure::RootRequests, 400.0);
        WindowFigures {
            measured_s: measured,
            fleet,
            service,
        }
    }

    fn expectations(yaml: &str) -> Vec<Expectation> {
        Scenario::from_yaml(yaml, "s.yaml", &chain())
            .unwrap_or_else(|e| panic!("{e}"))
            .expectations
    }

    #[test]
    fn a_window_reads_fleet_and_service_figures_by_scope() {
        let f = figures((0.0, 2.0), Some(node("B", 220.0, 100.0, 440, 11)));
        assert_eq!(f.get(Figure::Amplification), 2.2);
        assert_eq!(f.get(Figure::RootAvailability), 0.99);
        assert!(figures((0.0, 2.0), None).get(Figure::Rps).is_nan());
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(v["root"]["availability"], 0.99);
        assert_eq!(v["storm_radius"]["max"], 3);
        assert_eq!(v["service"]["rps"], 220.0);
        assert_eq!(v["service"]["name"], "B");
    }

    #[test]
    fn bounds_pass_and_fail_with_what_was_seen() {
        let es = expectations(
            "duration: 10s\nexpect:\n  - during: 2s..4s\n    service: B\n    amplification: { max: 2.5 }\n    rps: { approx: 200, tolerance: 0.05 }\n    errors: { min: 12 }\n  - during: 2s..4s\n    storm_radius: { max: 1 }\n    root_availability: { min: 0.95, max: 1 }\n",
        );
        let f = figures((2.0, 4.0), Some(node("B", 220.0, 100.0, 440, 11)));
        let got: Vec<(String, bool, f64)> = es
            .iter()
            .map(|e| {
                let r = judge(e, f.clone());
                (r.what, r.passed, r.observed)
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("B amplification <= 2.5".into(), true, 2.2),
                ("B rps ≈ 200 ± 5%".into(), false, 220.0),
                ("B errors >= 12".into(), false, 11.0),
                ("storm_radius <= 1".into(), false, 3.0),
                ("root_availability in [0.95, 1]".into(), true, 0.99),
            ]
        );
        let r = judge(&es[1], f.clone());
        assert_eq!(r.window_s, (2.0, 4.0));
        assert_eq!(r.expected, "≈ 200 ± 5%");
        assert_eq!(r.service.as_deref(), Some("B"));
        assert_eq!(r.source, "s.yaml:6:5");
        assert_eq!(r.figures.service.as_ref().unwrap().name, "B");
    }

    #[test]
    fn an_amplification_over_too_few_requests_fails_saying_so() {
        let es = expectations(
            "expect:\n  - during: 2s..4s\n    service: B\n    amplification: { max: 2 }\n",
        );
        let mut b = node("B", 1.0, 0.5, 2, 0);
        b.figures.set(Figure::Amplification, f64::NAN);
        b.figures.set(Figure::ExpectedRequests, 1.0);
        let r = judge(&es[0], figures((2.0, 4.0), Some(b)));
        assert!(!r.passed);
        let note = r.note.unwrap();
        assert!(
            note.starts_with("too few requests for a ratio: n=2, 1.0 expected"),
            "{note}"
        );
    }

    #[test]
    fn a_window_without_root_requests_has_no_availability_to_judge() {
        let es = expectations("expect:\n  - during: 2s..4s\n    root_availability: { max: 1 }\n");
        let mut f = figures((2.0, 4.0), None);
        f.fleet.set(Figure::RootRequests, 0.0);
        f.fleet.set(Figure::RootAvailability, f64::NAN);
        let r = judge(&es[0], f);
        assert!(!r.passed);
        assert!(r.observed.is_nan());
        assert_eq!(r.note.as_deref(), Some("no root requests in this window"));
    }

    #[test]
    fn an_empty_window_fails_with_a_note() {
        let es = expectations("expect:\n  - during: 2s..4s\n    root_availability: { min: 0 }\n");
        let r = judge(&es[0], figures((3.0, 3.0), None));
        assert!(!r.passed);
        assert!(r.observed.is_nan());
        assert!(r.note.unwrap().contains("no two samples"));
    }

    #[test]
    fn approx_zero_is_absolute_and_floats_get_a_hair() {
        use crate::scenario::Bound;
        let b = Bound {
            approx: Some((0.0, 0.5)),
            ..Bound::default()
        };
        assert!(b.check(0.4) && b.check(-0.5) && !b.check(0.6));
        let m = Bound {
            max: Some(1.1),
            ..Bound::default()
        };
        assert!(m.check(1.1 + 1e-12) && !m.check(1.1001));
        assert!(!m.check(f64::NAN));
    }

    /// Samples of a synthetic run of the chain A→B→C at 100 rps: a healthy
    /// second, then two where B retries every call to C (C sees 2×).
    fn synthetic() -> Series {
        let mut series = Series::new(64);
        let mut counts = Counts {
            services: vec![ServiceCounts::default(); 3],
            edges: vec![Default::default(); 2],
            root: Default::default(),
            replicas: vec![],
            outliers: vec![],
            roots: vec![],
        };
        for tick in 0..=12u64 {
            let storm = tick > 4;
            if tick > 0 {
                // 25 roots per 250 ms tick.
                counts.root.sent += 25;
                counts.root.ok += 25;
                counts.services[0].roots += 25;
                counts.services[0].requests += 25;
                counts.services[1].requests += 25;
                counts.services[2].requests += if storm { 50 } else { 25 };
            }
            let mut latency = LatencySummary::default();
            latency.record(if storm { 20_000 } else { 1_000 }, 25);
            series.push(Sample {
                t: Duration::from_millis(250 * tick),
                counts: counts.clone(),
                radius: RadiusStats {
                    max: u64::from(storm),
                    sum: if storm { 25 } else { 0 },
                    count: if storm { 25 } else { 0 },
                },
                latency_ms: (0.0, 0.0),
                latency,
            });
        }
        series
    }

    #[test]
    fn the_time_series_is_per_second_from_synthetic_samples() {
        let t = chain();
        let ts = TimeSeries::from_series(&synthetic(), &t, Duration::ZERO, Duration::from_secs(3));
        assert_eq!(ts.period_s, 1.0);
        assert_eq!(ts.t_s, vec![1.0, 2.0, 3.0]);
        assert_eq!(ts.entry_rps, vec![100.0, 100.0, 100.0]);
        assert_eq!(ts.availability, vec![1.0, 1.0, 1.0]);
        assert_eq!(ts.services[2].name, "C");
        assert_eq!(ts.services[2].rps, vec![100.0, 200.0, 200.0]);
        assert_eq!(ts.services[2].amplification, vec![1.0, 2.0, 2.0]);
        assert_eq!(ts.services[1].amplification, vec![1.0, 1.0, 1.0]);
    }

    #[test]
    fn window_latency_and_radius_come_from_the_window_alone() {
        let s = synthetic();
        let calm = s.latency_between(Duration::ZERO, Duration::from_secs(1));
        let storm = s.latency_between(Duration::from_millis(1250), Duration::from_secs(3));
        assert!((calm.quantile_ms(0.99).unwrap() - 1.0).abs() < 0.07);
        assert!((storm.quantile_ms(0.5).unwrap() - 20.0).abs() < 1.3);
        let mut r = RadiusStats::default();
        for x in s.between(Duration::ZERO, Duration::from_secs(1)) {
            r.merge(&x.radius);
        }
        assert_eq!(r.max, 0);
    }

    /// A finished run of the synthetic samples, its scenario's steps on
    /// the lab's clock.
    fn record(t: &Topology, steps: Vec<(Duration, crate::lab::Action)>) -> RunRecord {
        let start = LabState::of(t);
        RunRecord {
            state: start.clone(),
            start,
            topology: t.clone(),
            series: synthetic(),
            events: vec![],
            steps,
            prediction: model::predict(t, &t.policy),
            static_radius: model::static_radius(t, &t.policy),
            latency: hdrhistogram::Histogram::new_with_bounds(1, 60_000_000, 2).unwrap(),
            learned: vec![vec![]; t.services.len()],
            tick: Duration::from_millis(250),
            warmup: Duration::ZERO,
            uptime: Duration::from_secs(3),
            course: Default::default(),
        }
    }

    #[test]
    fn a_window_is_measured_from_its_own_samples() {
        let t = chain();
        let r = record(&t, vec![]);
        let span = spec::Window::parse("1s..3s").unwrap();
        let f = measure_window(&r, span, Some(2));
        assert_eq!(f.measured_s, (1.0, 3.0));
        let c = f.service.as_ref().unwrap();
        // C: 50 per tick from 1.25 s on (B retries every call), 25 before.
        assert_eq!(c.figures[Figure::Requests], 400.0);
        assert_eq!(c.figures[Figure::Rps], 200.0);
        assert_eq!(c.figures[Figure::Amplification], 2.0);
        assert_eq!(f.get(Figure::RootRps), 100.0);
        assert_eq!(f.get(Figure::StormRadius), 1.0);
        assert!((f.get(Figure::LatencyP50) - 20.0).abs() < 1.3);
    }

    #[test]
    fn the_model_follows_the_steps_to_the_window() {
        let t = Topology::from_yaml(
            "name: c\npolicy: { preset: retry }\nservices:\n  A: { calls: [B] }\n  B: { calls: [C] }\n  C:\n",
            "c.yaml",
        )
        .unwrap();
        let s = Scenario::from_yaml(
            "duration: 10s\nsteps:\n  - at: 2s\n    fail: { service: C, error_rate: 1.0 }\n  - at: 6s\n    heal: C\n",
            "s.yaml",
            &t,
        )
        .unwrap();
        let r = record(&t, s.plan_steps(Duration::from_secs(1)));
        let during = r.planned_state_at(Duration::from_secs(4));
        assert_eq!(during.faults[2].error_rate, 1.0);
        let after = r.planned_state_at(Duration::from_secs(8));
        assert_eq!(after.faults[2].error_rate, 0.0);
        let (p, radius) = r.model_of(&during);
        assert_eq!(p.services[2].amplification, 4.0);
        assert_eq!(p.storm_radius, 2);
        assert_eq!(p.root_availability, 0.0);
        assert_eq!(radius, 2);
    }
}
