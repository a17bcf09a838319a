//! The page of a comparison (`compare --html`): the policies side by
//! side, and how each came through the scenario's trigger.

use super::chart;
use super::{cell, percent, table, Section};
use crate::lab::figures::Figure;
use crate::report::{Recovery, Report};

/// The most services the grouped bars draw: on a larger fleet, those
/// whose amplification was highest under any policy.
pub const MAX_GROUPS: usize = 16;

/// One policy's run, as the page reads it.
#[derive(Debug, Clone, Copy)]
pub struct PolicyRun<'a> {
    /// The policy's name (`retry`, `ownership+deadline`).
    pub policy: &'a str,
    /// Its run's report.
    pub report: &'a Report,
    /// How it came through the trigger, when the comparison played a
    /// scenario.
    pub recovery: Option<Recovery>,
}

/// The page of a comparison of `runs` on topology `topology`.
pub fn page(topology: &str, runs: &[PolicyRun<'_>], interrupted: bool) -> String {
    let title = format!("chaoslab compare: {topology}");
    super::page(&title, &sections(runs, interrupted))
}

/// The sections of [`page`].
pub fn sections(runs: &[PolicyRun<'_>], interrupted: bool) -> Vec<Section> {
    let policies: Vec<String> = runs.iter().map(|r| r.policy.to_string()).collect();
    let mut out = vec![amplification(runs)];
    let avail = |f: Figure| -> Vec<f64> { runs.iter().map(|r| r.report.fleet[f]).collect() };
    let mut text = format!(
        "Each policy's root availability over its run, measured and modelled. root.availability: {} root.model_availability: {}",
        Figure::RootAvailability.help(),
        Figure::ModelAvailability.help()
    );
    if interrupted {
        text.push_str(" A signal ended the comparison early: the last run is cut short and the policies after it did not run.");
    }
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let f = &r.report.fleet;
            vec![
                r.policy.to_string(),
                percent(f[Figure::RootAvailability]),
                percent(f[Figure::ModelAvailability]),
                cell(f[Figure::GoodputRps], 1),
                cell(f[Figure::StormRadius], 0),
            ]
        })
        .collect();
    out.push(Section {
        title: "Availability per policy".into(),
        text,
        svg: Some(chart::bars(
            "root availability per policy",
            "fraction of root requests that succeeded",
            &policies,
            &[
                ("measured".into(), avail(Figure::RootAvailability)),
                ("model".into(), avail(Figure::ModelAvailability)),
            ],
        )),
        html: table(
            &[
                "policy",
                "availability",
                "model",
                "goodput rps",
                "storm radius",
            ],
            &rows,
        ),
    });
    if let Some(first) = runs.iter().find_map(|r| r.recovery) {
        let secs = |v: Option<f64>| v.map_or_else(|| "never".to_string(), |s| format!("{s:.0} s"));
        let rows: Vec<Vec<String>> = runs
            .iter()
            .filter_map(|r| {
                let v = r.recovery?;
                Some(vec![
                    r.policy.to_string(),
                    secs(v.recovered_after_s),
                    if v.modelled {
                        secs(v.model_after_s)
                    } else {
                        "–".into()
                    },
                    percent(v.availability_after),
                ])
            })
            .collect();
        out.push(Section {
            title: "Recovery after the trigger".into(),
            text: format!(
                "The trigger ends at {} s after the warm-up. Recovered: goodput at 95% of the offered rate or more (of the rate sent, for closed-loop clients), every second from then on. The model is the fluid queue's prediction (– where it does not model the run: deadlines, breakers, throttles, adaptive limits, closed loops).",
                first.trigger_end_s
            ),
            svg: None,
            html: table(
                &["policy", "recovered after", "model", "availability after"],
                &rows,
            ),
        });
    }
    out
}

/// Each service's amplification under each policy, as grouped bars, and
/// the same against the model as a table.
fn amplification(runs: &[PolicyRun<'_>]) -> Section {
    let names: Vec<String> = runs
        .first()
        .map(|r| r.report.nodes.iter().map(|n| n.name.clone()).collect())
        .unwrap_or_default();
    let amp = |r: &PolicyRun<'_>, i: usize, f: Figure| {
        r.report.nodes.get(i).map_or(f64::NAN, |n| n.figures[f])
    };
    let mut shown: Vec<usize> = (0..names.len()).collect();
    let mut text = format!(
        "Each service's amplification under each policy, over each run after its warm-up. amplification: {}",
        Figure::Amplification.help()
    );
    if shown.len() > MAX_GROUPS {
        let peak = |i: usize| {
            runs.iter()
                .map(|r| amp(r, i, Figure::Amplification))
                .filter(|v| v.is_finite())
                .fold(0.0, f64::max)
        };
        shown.sort_by(|&a, &b| peak(b).total_cmp(&peak(a)));
        shown.truncate(MAX_GROUPS);
        shown.sort_unstable();
        text.push_str(&format!(
            " The {MAX_GROUPS} services of {} with the highest amplification are drawn.",
            names.len()
        ));
    }
    let groups: Vec<String> = shown.iter().map(|&i| names[i].clone()).collect();
    let series: Vec<(String, Vec<f64>)> = runs
        .iter()
        .map(|r| {
            (
                r.policy.to_string(),
                shown
                    .iter()
                    .map(|&i| amp(r, i, Figure::Amplification))
                    .collect(),
            )
        })
        .collect();
    let mut head = vec!["policy".to_string()];
    head.extend(groups.iter().cloned());
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            std::iter::once(r.policy.to_string())
                .chain(shown.iter().map(|&i| {
                    format!(
                        "{}× ({}×)",
                        cell(amp(r, i, Figure::Amplification), 2),
                        cell(amp(r, i, Figure::ModelAmplification), 2)
                    )
                }))
                .collect()
        })
        .collect();
    Section {
        title: "Amplification per policy".into(),
        text: text + " The table gives each measured figure with the model's in brackets.",
        svg: Some(chart::bars(
            "amplification per service and policy",
            "× baseline",
            &groups,
            &series,
        )),
        html: table(&head, &rows),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::figures::{Figures, Scope};
    use crate::report::NodeReport;

    /// A report of two services, `amps` their amplifications.
    fn report(policy: &str, amps: [f64; 2], availability: f64) -> Report {
        let mut fleet = Figures::filled(Scope::Fleet, 0.0);
        fleet.set(Figure::RootAvailability, availability);
        fleet.set(Figure::ModelAvailability, 1.0);
        let nodes = ["A", "<D>"]
            .iter()
            .zip(amps)
            .map(|(name, a)| {
                let mut figures = Figures::filled(Scope::Service, 1.0);
                figures.set(Figure::Amplification, a);
                NodeReport {
                    name: name.to_string(),
                    service: None,
                    endpoint: None,
                    depth: 0,
                    figures,
                    withheld: None,
                    learned: vec![],
                    replicas: vec![],
                }
            })
            .collect();
        Report {
            topology: "t".into(),
            policy: policy.into(),
            attempts: 2,
            budget: None,
            attribution: "declared".into(),
            at_least_once: true,
            duration_s: 8.0,
            interrupted: false,
            saturated: false,
            saturation: vec![],
            unmeasured: vec![],
            fleet,
            roots: vec![],
            nodes,
            services: vec![],
            edges: vec![],
            stops: vec![],
            expectations: vec![],
            events: vec![],
            shards_lost: vec![],
            phases: vec![],
            series: None,
        }
    }

    #[test]
    fn a_comparison_page_puts_the_policies_side_by_side_with_its_recovery_table() {
        let (retry, ownership) = (
            report("retry", [1.0, 8.0], 0.2),
            report("ownership", [1.0, 1.1], 0.9),
        );
        let recovery = |after| Recovery {
            trigger_end_s: 6.0,
            recovered_after_s: after,
            model_after_s: None,
            modelled: true,
            availability_after: 0.5,
        };
        let runs = [
            PolicyRun {
                policy: "retry",
                report: &retry,
                recovery: Some(recovery(None)),
            },
            PolicyRun {
                policy: "ownership",
                report: &ownership,
                recovery: Some(recovery(Some(3.0))),
            },
        ];
        let html = page("chain <x>", &runs, false);
        assert_eq!(
            html.matches("<svg").count(),
            2,
            "amplification and availability"
        );
        assert_eq!(html.matches("class=\"chart\"").count(), 2);
        assert!(html.contains("chain &lt;x&gt;"));
        assert!(html.contains("<th>&lt;D&gt;</th>"), "service names escaped");
        assert!(html.contains("8.00× (1.00×)"), "measured with the model");
        assert!(html.contains("Recovery after the trigger"));
        assert!(html.contains("<td>never</td>") && html.contains("<td>3 s</td>"));
        // Without a scenario there is no recovery table.
        let plain: Vec<PolicyRun<'_>> = runs
            .iter()
            .map(|r| PolicyRun {
                recovery: None,
                ..*r
            })
            .collect();
        assert!(!page("t", &plain, false).contains("Recovery after"));
    }
}
