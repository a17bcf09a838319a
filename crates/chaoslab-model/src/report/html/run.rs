//! The page of one run (`run --html`): its headline table, then the
//! figures over time, each chart drawn from [`Samples`] and every action
//! applied during the run marked where it happened.

use std::collections::HashMap;

use super::chart::{self, Line, Mark};
use super::{cell, escape, percent, table, Section};
use crate::lab::figures::Figure;
use crate::lab::RunRecord;
use crate::report::samples::Samples;
use crate::report::{NodeReport, Report};

/// The most services the amplification chart draws: on a larger fleet,
/// those whose amplification peaked highest (the page says so).
pub const MAX_LINES: usize = 10;

/// The most events marked on a chart; the list under it has them all.
pub const MAX_MARKS: usize = 60;

/// The page of a finished run: `report` is its report (the headline
/// table), `samples` its figures per sample (the charts).
pub fn page(r: &RunRecord, report: &Report, samples: &Samples) -> String {
    let title = format!("chaoslab run: {} under {}", r.topology.name, report.policy);
    super::page(&title, &sections(r, report, samples))
}

/// The sections of [`page`], for a front end that adds its own.
pub fn sections(r: &RunRecord, report: &Report, samples: &Samples) -> Vec<Section> {
    let marks = marks(r);
    let xs = &samples.t_s;
    let x = "seconds after the warm-up";
    let fleet = |f: Figure| samples.column(f, None).unwrap_or_default();
    let line = |name: &str, f: Figure| Line {
        name: name.into(),
        ys: fleet(f),
    };
    let help = |f: Figure| format!("{}: {}", f.path(), f.help());
    // A chart of fleet figures over time: its heading, what it shows (each
    // figure's meaning from the catalogue in between), and its lines.
    let over_time = |title: &str,
                     (before, after): (&str, &str),
                     (chart_title, unit): (&str, &str),
                     figures: &[(&str, Figure)]| {
        let meaning: Vec<String> = figures.iter().map(|(_, f)| help(*f)).collect();
        let lines: Vec<Line> = figures.iter().map(|(n, f)| line(n, *f)).collect();
        Section::chart(
            title,
            format!("{before} {} {after}", meaning.join(" ")).trim_end(),
            chart::lines(chart_title, x, unit, xs, &lines, &marks),
        )
    };
    let mut out = vec![
        headline(report),
        amplification(r, samples, &marks),
        over_time(
            "Goodput against offered load",
            (
                "What the end users got against what they asked for, each second.",
                "Where goodput falls below the offered rate, root requests failed; where the rate sent falls below it, the load generator could not keep up.",
            ),
            ("goodput and offered load", "root requests per second"),
            &[
                ("offered", Figure::OfferedRps),
                ("sent", Figure::RootRps),
                ("goodput", Figure::GoodputRps),
            ],
        ),
        over_time(
            "Root latency",
            (
                "How long the end users waited, each second (over the root requests that ended in it).",
                "",
            ),
            ("root latency", "ms"),
            &[("p50", Figure::LatencyP50), ("p99", Figure::LatencyP99)],
        ),
        over_time(
            "Storm radius",
            ("How far the storm spread, each second.", ""),
            ("storm radius", "hops"),
            &[
                ("max", Figure::StormRadius),
                ("mean", Figure::StormRadiusMean),
                ("model", Figure::StormRadiusModel),
            ],
        ),
    ];
    if report.phases.len() > 1 {
        out.push(phases(report));
    }
    out
}

/// The samples the charts draw: every fleet figure, and the
/// amplification of the [`MAX_LINES`] services with the highest over the
/// run (of every service on a fleet no larger), so a mesh of thousands
/// keeps its charts at a point a second.
pub fn charted(r: &RunRecord, report: &Report) -> Samples {
    let mut by_amp: Vec<(usize, f64)> = report
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (i, n.figures[Figure::Amplification]))
        .collect();
    by_amp.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut shown: Vec<usize> = by_amp.iter().take(MAX_LINES).map(|x| x.0).collect();
    shown.sort_unstable();
    let columns = Samples::columns_of(&r.topology)
        .into_iter()
        .filter(|c| match c.service {
            None => true,
            Some(i) => c.figure == Figure::Amplification && shown.contains(&i),
        })
        .collect();
    Samples::of_columns(r, columns)
}

/// Every event after the warm-up as a mark on the samples' clock.
fn marks(r: &RunRecord) -> Vec<Mark> {
    let warmup = r.warmup.as_secs_f64();
    r.events
        .iter()
        .filter(|e| e.t >= r.warmup)
        .take(MAX_MARKS)
        .map(|e| Mark {
            x: e.t.as_secs_f64() - warmup,
            label: e.text.clone(),
        })
        .collect()
}

/// The headline: the policy, the availability measured and modelled, and
/// each service's amplification against the model's.
fn headline(report: &Report) -> Section {
    let f = &report.fleet;
    let mut html = table(
        &["run", "value"],
        &[
            vec!["topology".into(), report.topology.clone()],
            vec!["policy at the end".into(), report.policy.clone()],
            vec!["measured".into(), format!("{:.1} s", report.duration_s)],
            vec!["availability".into(), percent(f[Figure::RootAvailability])],
            vec![
                "availability, model".into(),
                percent(f[Figure::ModelAvailability]),
            ],
            vec!["goodput".into(), cell(f[Figure::GoodputRps], 1) + " rps"],
            vec!["storm radius (max)".into(), cell(f[Figure::StormRadius], 0)],
        ],
    );
    let rows: Vec<Vec<String>> = report
        .nodes
        .iter()
        .map(|n| {
            vec![
                n.name.clone(),
                cell(n.figures[Figure::Rps], 1),
                cell(n.figures[Figure::Amplification], 2) + "×",
                cell(n.figures[Figure::ModelAmplification], 2) + "×",
                percent(n.figures[Figure::ErrorRate]),
            ]
        })
        .collect();
    html.push_str(&table(
        &["service", "rps", "amplification", "model", "errors"],
        &rows,
    ));
    for why in &report.saturation {
        html.push_str(&format!(
            "<p class=\"warn\">Saturated: {}</p>\n",
            escape(why)
        ));
    }
    if report.interrupted {
        html.push_str("<p class=\"warn\">A signal ended the run before its time: the figures cover the part that ran.</p>\n");
    }
    Section {
        title: "The run".into(),
        text: format!(
            "Measured over the whole run after the warm-up, against the analytical model of the state it ended in. amplification: {} model: {}",
            Figure::Amplification.help(),
            Figure::ModelAmplification.help()
        ),
        svg: None,
        html,
    }
}

/// A row per phase (the run cut at each change of policy or fault): its
/// span, what opened it, and each service's amplification against the
/// model of the state in force during it; on a fleet of more than
/// [`MAX_LINES`] services, those whose amplification peaked highest in
/// any phase (the page says so).
pub(crate) fn phases(report: &Report) -> Section {
    // Each phase's services by name, looked up once each.
    let by_name: Vec<HashMap<&str, &NodeReport>> = report
        .phases
        .iter()
        .map(|p| {
            p.report
                .nodes
                .iter()
                .map(|n| (n.name.as_str(), n))
                .collect()
        })
        .collect();
    let amplification = |k: usize, name: &str| {
        by_name[k].get(name).map(|m| {
            (
                m.figures[Figure::Amplification],
                m.figures[Figure::ModelAmplification],
            )
        })
    };
    let mut peaks: Vec<(usize, f64)> = report
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let peak = (0..by_name.len())
                .filter_map(|k| amplification(k, &n.name))
                .map(|(a, _)| a)
                .filter(|a| a.is_finite())
                .fold(f64::NEG_INFINITY, f64::max);
            (i, peak)
        })
        .collect();
    peaks.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut shown: Vec<usize> = peaks.iter().take(MAX_LINES).map(|p| p.0).collect();
    shown.sort_unstable();
    let names: Vec<&str> = shown
        .iter()
        .map(|&i| report.nodes[i].name.as_str())
        .collect();
    let mut head = vec!["phase (s)", "after", "availability"];
    head.extend(names.iter().copied());
    let rows: Vec<Vec<String>> = report
        .phases
        .iter()
        .enumerate()
        .map(|(k, p)| {
            let f = &p.report.fleet;
            let mut row = vec![
                format!("{:.1}–{:.1}", p.from_s, p.to_s),
                p.after.join("; "),
                format!(
                    "{} ({})",
                    percent(f[Figure::RootAvailability]),
                    percent(f[Figure::ModelAvailability])
                ),
            ];
            row.extend(names.iter().map(|name| {
                amplification(k, name).map_or_else(
                    || "–".to_string(),
                    |(a, model)| format!("{}× ({}×)", cell(a, 2), cell(model, 2)),
                )
            }));
            row
        })
        .collect();
    let mut text = "The run cut at each change of policy, fault, context, at-least-once, attribution or resources, each phase measured on its own against the model of the state in force during it (the model in brackets): the whole run's figures above average phases no policy produces on its own.".to_string();
    if shown.len() < report.nodes.len() {
        text += &format!(
            " The {} services of {} whose amplification peaked highest in any phase; the JSON report (--report) has every one.",
            shown.len(),
            report.nodes.len()
        );
    }
    Section {
        title: "Phase by phase".into(),
        text,
        svg: None,
        html: table(&head, &rows),
    }
}

/// Each service's amplification over time, the events marked, and the
/// list of every event under the chart.
fn amplification(r: &RunRecord, samples: &Samples, marks: &[Mark]) -> Section {
    let t = &r.topology;
    let mut lines: Vec<(f64, Line)> = (0..t.services.len())
        .filter_map(|i| Some((i, samples.column(Figure::Amplification, Some(i))?)))
        .map(|(i, ys)| {
            let peak = ys
                .iter()
                .copied()
                .filter(|v| v.is_finite())
                .fold(0.0, f64::max);
            (
                peak,
                Line {
                    name: t.services[i].name.clone(),
                    ys,
                },
            )
        })
        .collect();
    let mut text = format!(
        "Each line is one service's amplification, each second: {} Every action applied during the run (a policy switch, a fault set or cleared, a rate change; from the timeline, the dashboard or the control API) is a grey vertical line with its label.",
        Figure::Amplification.help()
    );
    if samples.period_s > 1.0 {
        text.push_str(&format!(
            " On a run this long a point covers {} s.",
            samples.period_s
        ));
    }
    if t.services.len() > lines.len() {
        text.push_str(&format!(
            " The {} services of {} with the highest amplification over the run are drawn.",
            lines.len(),
            t.services.len()
        ));
    }
    if lines.len() > MAX_LINES {
        lines.sort_by(|a, b| b.0.total_cmp(&a.0));
        lines.truncate(MAX_LINES);
    }
    let lines: Vec<Line> = lines.into_iter().map(|(_, l)| l).collect();
    let svg = chart::lines(
        "amplification per service",
        "seconds after the warm-up",
        "× baseline",
        &samples.t_s,
        &lines,
        marks,
    );
    let warmup = r.warmup.as_secs_f64();
    let mut html = format!(
        "<details><summary>{} events (times in seconds after the warm-up)</summary>\n<ul>\n",
        r.events.len()
    );
    for e in &r.events {
        html.push_str(&format!(
            "<li>{:.1} s: {} ({})</li>\n",
            e.t.as_secs_f64() - warmup,
            escape(&e.text),
            e.origin.name()
        ));
    }
    html.push_str("</ul>\n</details>\n");
    Section {
        title: "Amplification over time".into(),
        text,
        svg: Some(svg),
        html,
    }
}

/// What `run --html FILE` and `run --series FILE` write for a finished
/// run, as (path, text, what it is): the samples measured once for both.
pub fn outputs<'p>(
    r: &RunRecord,
    report: &Report,
    html: Option<&'p std::path::Path>,
    series: Option<(&'p std::path::Path, crate::report::samples::Format)>,
) -> Vec<(&'p std::path::Path, String, &'static str)> {
    if html.is_none() && series.is_none() {
        return vec![];
    }
    let mut out = vec![];
    if let Some(p) = html {
        out.push((p, page(r, report, &charted(r, report)), "HTML report"));
    }
    if let Some((p, format)) = series {
        out.push((p, Samples::of(r).render(format), "series"));
    }
    out
}
