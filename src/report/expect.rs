//! Expectations, judged over windows of a finished run.
//!
//! Each expectation's window is measured with [`Report::measure`] (the
//! same arithmetic as the whole-run report, over the two samples nearest
//! the window's ends), then its figure is read by name and checked against
//! its bound. What was seen, where, and every figure of that window go into
//! an [`ExpectationReport`], so a failing CI run says why without a rerun.
//!
//! Three figures need more than two samples: the storm radius (the largest
//! and the mean over the samples inside the window) and the latency
//! percentiles, read off the window's merged
//! [`LatencySummary`](crate::metrics::LatencySummary) rather than the whole
//! run's histogram. The model's figures are those of the state in force at
//! the window's start (the topology with every step up to then applied).

use std::time::Duration;

use super::{ExpectationReport, Latency, Report, WindowFigures};
use crate::scenario::spec::{Expectation, Figure, Window};
use crate::scenario::{Action, Lab};
use crate::topology::model;
use crate::topology::{ServiceId, Topology};

/// Judges every expectation of a finished run. `warmup` is where the
/// scenario's clock starts on the lab's; `start` is the topology the run
/// started from and `steps` the scenario's steps on the lab's clock (for the
/// model's figures of each window).
pub fn evaluate(
    lab: &Lab,
    warmup: Duration,
    expectations: &[Expectation],
    start: &Topology,
    steps: &[(Duration, Action)],
) -> Vec<ExpectationReport> {
    expectations
        .iter()
        .map(|e| {
            let mut figures = measure_window(lab, warmup, e.window, e.service);
            let state = state_at(start, steps, warmup + e.window.from);
            apply_model(&mut figures, &state, e.service);
            judge(e, figures)
        })
        .collect()
}

/// Measures one window (on the scenario's clock: `warmup` is added).
pub fn measure_window(
    lab: &Lab,
    warmup: Duration,
    window: Window,
    service: Option<ServiceId>,
) -> WindowFigures {
    // Samples come every tick; take the ones nearest the window's ends.
    let slack = lab.tick_period() / 2;
    let from = (warmup + window.from).saturating_sub(slack);
    let to = warmup + window.to + slack;
    let r = Report::measure(lab, from, to);
    let series = lab.series();
    let first = series.at_or_after(from).or_else(|| series.latest());
    let (t0, t1) = match first {
        Some(f) => {
            let last = series
                .at_or_before(to)
                .filter(|s| s.t >= f.t)
                .map_or(f.t, |s| s.t);
            (f.t, last)
        }
        None => (from, from),
    };
    let latency = series.latency_between(t0, t1);
    let mut root = r.root;
    root.latency_ms = Latency {
        p50: latency.quantile_ms(0.5).unwrap_or(0.0),
        p99: latency.quantile_ms(0.99).unwrap_or(0.0),
    };
    let rel = |t: Duration| t.as_secs_f64() - warmup.as_secs_f64();
    WindowFigures {
        measured_s: (rel(t0), rel(t1)),
        root,
        storm_radius: r.storm_radius,
        spurious_avoided: r.spurious_avoided,
        service: service.and_then(|i| r.nodes.get(i).cloned()),
    }
}

/// Reads a figure from a window's figures (NaN when the figure is
/// per-service and the window has no service).
pub fn observe(f: &WindowFigures, figure: Figure) -> f64 {
    let root = &f.root;
    let fleet = match figure {
        Figure::RootAvailability => Some(root.availability),
        Figure::RootRps => Some(root.rps),
        Figure::RootRequests => Some(root.requests as f64),
        Figure::RootErrors => Some(root.errors as f64),
        Figure::RootDropped => Some(root.dropped as f64),
        Figure::LatencyP50 => Some(root.latency_ms.p50),
        Figure::LatencyP99 => Some(root.latency_ms.p99),
        Figure::StormRadius => Some(f.storm_radius.max as f64),
        Figure::StormRadiusMean => Some(f.storm_radius.mean),
        Figure::SpuriousAvoided => Some(f.spurious_avoided as f64),
        _ => None,
    };
    if let Some(v) = fleet {
        return v;
    }
    let Some(n) = &f.service else {
        return f64::NAN;
    };
    match figure {
        Figure::Rps => n.rps,
        Figure::BaselineRps => n.baseline_rps,
        Figure::Amplification => n.amplification,
        Figure::ModelAmplification => n.model_amplification,
        Figure::Requests => n.requests as f64,
        Figure::Errors => n.errors as f64,
        Figure::ErrorRate => {
            if n.requests > 0 {
                n.errors as f64 / n.requests as f64
            } else {
                0.0
            }
        }
        Figure::ClaimsReturnedTrue => n.claims_returned.claimed as f64,
        Figure::ClaimsReturnedFalse => n.claims_returned.unclaimed as f64,
        Figure::ClaimsReturnedMissing => n.claims_returned.missing as f64,
        Figure::ClaimsSeenTrue => n.claims_seen.claimed as f64,
        Figure::ClaimsSeenFalse => n.claims_seen.unclaimed as f64,
        Figure::ClaimsSeenMissing => n.claims_seen.missing as f64,
        Figure::RetriesSent => n.retries_sent as f64,
        Figure::RetriesSuppressed => n.retries_suppressed as f64,
        Figure::BudgetDenied => n.budget_denied as f64,
        Figure::OwnErrors => n.attribution.own_errors as f64,
        Figure::WronglyUnclaimed => n.attribution.wrongly_unclaimed as f64,
        Figure::WronglyClaimed => n.attribution.wrongly_claimed as f64,
        Figure::AtLeastOnceClaims => n.at_least_once_claims as f64,
        // Fleet figures were answered above.
        _ => f64::NAN,
    }
}

/// Judges one expectation against its window's figures.
pub fn judge(e: &Expectation, figures: WindowFigures) -> ExpectationReport {
    let (a, b) = figures.measured_s;
    let (observed, note) = if b > a {
        (observe(&figures, e.figure), None)
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
        expected: e.bound.to_string(),
        source: e.source.to_string(),
        line: e.source.line,
        note,
        figures,
    }
}

/// The topology with every step up to `t` (the lab's clock) applied.
fn state_at(start: &Topology, steps: &[(Duration, Action)], t: Duration) -> Topology {
    let mut s = start.clone();
    for (at, a) in steps {
        if *at > t {
            continue;
        }
        match a {
            Action::SetFault { service, fault } => {
                if let Some(x) = s.services.get_mut(*service) {
                    x.fault = fault.clone();
                }
            }
            Action::SetContextDropped { service, dropped } => {
                if let Some(x) = s.services.get_mut(*service) {
                    x.context_dropped = *dropped;
                }
            }
            Action::Policy(f) => s.policy.apply_fields(f),
            Action::Mode {
                retries,
                budget,
                ownership,
            } => {
                let p = &mut s.policy;
                p.retries = retries.unwrap_or(p.retries);
                p.budget_on = budget.unwrap_or(p.budget_on);
                p.ownership = ownership.unwrap_or(p.ownership);
            }
            Action::SetAtLeastOnce(on) => s.ownership.at_least_once = *on,
            Action::SetAttribution(a) => s.ownership.attribution = *a,
            Action::SetRps(r) => s.load.rps = *r,
            Action::Pause(_) | Action::Reset => {}
        }
    }
    s
}

/// Puts the model's figures for `state` into a window's figures.
fn apply_model(f: &mut WindowFigures, state: &Topology, service: Option<ServiceId>) {
    let p = model::predict(state, &state.policy);
    f.root.model_availability = p.root_availability;
    f.storm_radius.model = p.storm_radius;
    f.storm_radius.static_radius = model::static_radius(state, &state.policy);
    if let (Some(n), Some(i)) = (f.service.as_mut(), service) {
        if let Some(m) = p.services.get(i) {
            n.model_amplification = m.amplification;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Counts, LatencySummary, RadiusStats, Sample, Series, ServiceCounts};
    use crate::report::{
        AttributionCounts, ClaimCounts, NodeReport, RadiusReport, RootReport, TimeSeries,
    };
    use crate::scenario::spec::Scenario;

    fn chain() -> Topology {
        Topology::from_yaml(
            "name: c\nload: { rps: 100 }\nservices:\n  A: { calls: [B] }\n  B: { calls: [C] }\n  C:\n",
            "c.yaml",
        )
        .unwrap()
    }

    fn node(name: &str, rps: f64, baseline: f64, requests: u64, errors: u64) -> NodeReport {
        NodeReport {
            name: name.into(),
            depth: 1,
            rps,
            baseline_rps: baseline,
            amplification: rps / baseline,
            model_amplification: 1.0,
            requests,
            errors,
            claims_returned: ClaimCounts {
                claimed: 3,
                unclaimed: 4,
                missing: 5,
            },
            claims_seen: ClaimCounts::default(),
            retries_sent: 7,
            retries_suppressed: 8,
            budget_denied: 9,
            attribution: AttributionCounts {
                own_errors: 10,
                wrongly_unclaimed: 11,
                wrongly_claimed: 12,
            },
            at_least_once_claims: 13,
            learned: vec![],
        }
    }

    fn figures(measured: (f64, f64), service: Option<NodeReport>) -> WindowFigures {
        WindowFigures {
            measured_s: measured,
            root: RootReport {
                rps: 100.0,
                requests: 200,
                errors: 2,
                availability: 0.99,
                model_availability: 1.0,
                latency_ms: Latency { p50: 1.5, p99: 9.0 },
                dropped: 0,
            },
            storm_radius: RadiusReport {
                max: 3,
                mean: 2.5,
                static_radius: 3,
                model: 3,
            },
            spurious_avoided: 42,
            service,
        }
    }

    fn expectations(yaml: &str) -> Vec<Expectation> {
        Scenario::from_yaml(yaml, "s.yaml", &chain())
            .unwrap_or_else(|e| panic!("{e}"))
            .expectations
    }

    #[test]
    fn every_figure_reads_its_field() {
        let f = figures((0.0, 2.0), Some(node("B", 220.0, 100.0, 440, 11)));
        let cases = [
            (Figure::Rps, 220.0),
            (Figure::BaselineRps, 100.0),
            (Figure::Amplification, 2.2),
            (Figure::ModelAmplification, 1.0),
            (Figure::Requests, 440.0),
            (Figure::Errors, 11.0),
            (Figure::ErrorRate, 0.025),
            (Figure::ClaimsReturnedTrue, 3.0),
            (Figure::ClaimsReturnedFalse, 4.0),
            (Figure::ClaimsReturnedMissing, 5.0),
            (Figure::ClaimsSeenTrue, 0.0),
            (Figure::RetriesSent, 7.0),
            (Figure::RetriesSuppressed, 8.0),
            (Figure::BudgetDenied, 9.0),
            (Figure::OwnErrors, 10.0),
            (Figure::WronglyUnclaimed, 11.0),
            (Figure::WronglyClaimed, 12.0),
            (Figure::AtLeastOnceClaims, 13.0),
            (Figure::RootAvailability, 0.99),
            (Figure::RootRps, 100.0),
            (Figure::RootRequests, 200.0),
            (Figure::RootErrors, 2.0),
            (Figure::RootDropped, 0.0),
            (Figure::LatencyP50, 1.5),
            (Figure::LatencyP99, 9.0),
            (Figure::StormRadius, 3.0),
            (Figure::StormRadiusMean, 2.5),
            (Figure::SpuriousAvoided, 42.0),
        ];
        for (fig, want) in cases {
            let got = observe(&f, fig);
            assert!(
                (got - want).abs() < 1e-12,
                "{}: {got} != {want}",
                fig.name()
            );
        }
        assert!(observe(&figures((0.0, 2.0), None), Figure::Rps).is_nan());
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
    fn an_empty_window_fails_with_a_note() {
        let es = expectations("expect:\n  - during: 2s..4s\n    root_availability: { min: 0 }\n");
        let r = judge(&es[0], figures((3.0, 3.0), None));
        assert!(!r.passed);
        assert!(r.observed.is_nan());
        assert!(r.note.unwrap().contains("no two samples"));
    }

    #[test]
    fn approx_zero_is_absolute_and_floats_get_a_hair() {
        use crate::scenario::spec::Bound;
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
        let steps = s.plan_steps(Duration::from_secs(1));
        let during = state_at(&t, &steps, Duration::from_secs(4));
        assert_eq!(during.services[2].fault.error_rate, 1.0);
        let after = state_at(&t, &steps, Duration::from_secs(8));
        assert_eq!(after.services[2].fault.error_rate, 0.0);
        let mut f = figures((3.0, 5.0), Some(node("C", 400.0, 100.0, 800, 800)));
        apply_model(&mut f, &during, Some(2));
        assert_eq!(f.service.unwrap().model_amplification, 4.0);
        assert_eq!(f.storm_radius.model, 2);
        assert_eq!(f.root.model_availability, 0.0);
    }
}
