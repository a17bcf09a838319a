//! The comparison's tables: a row per policy, a column per service (and
//! the model's row under each), and how each policy came through the
//! scenario's trigger.

use std::fmt::Write as _;

use super::{Comparison, RECOVERED};
use crate::lab::figures::Figure;

/// An availability as a table cell: `99.50%`, or `–` when no root
/// request was measured.
fn percent(a: f64) -> String {
    if a.is_nan() {
        "–".into()
    } else {
        format!("{:.2}%", a * 100.0)
    }
}

/// The recovery table, when the runs played a scenario.
pub fn recovery_table(c: &Comparison) -> String {
    let mut out = String::new();
    let Some(first) = c.runs.iter().find_map(|r| r.recovery.as_ref()) else {
        return out;
    };
    let _ = writeln!(
        out,
        "after the trigger (it ends at {}s): recovered = goodput at {:.0}% of the offered rate or more (of the rate sent, for closed-loop clients), every second from then on",
        first.trigger_end_s,
        RECOVERED * 100.0
    );
    let _ = writeln!(
        out,
        "{:<18} {:>10} {:>10} {:>12}",
        "policy", "recovered", "model", "avail after"
    );
    let secs = |v: Option<f64>| v.map_or_else(|| "never".to_string(), |s| format!("{s:.0} s"));
    for run in &c.runs {
        let Some(r) = &run.recovery else { continue };
        let model = if !r.modelled {
            "-".to_string()
        } else {
            secs(r.model_after_s)
        };
        let _ = writeln!(
            out,
            "{:<18} {:>10} {:>10} {:>12}",
            run.policy,
            secs(r.recovered_after_s),
            model,
            percent(r.availability_after)
        );
    }
    out
}

/// The seed-style table: a row per policy, a column per service.
pub fn compare_table(c: &Comparison, with_model: bool) -> String {
    let mut out = String::new();
    let Some(first) = c.runs.first() else {
        return out;
    };
    let names: Vec<&str> = first.report.nodes.iter().map(|n| n.name.as_str()).collect();
    let w = names.iter().map(|n| n.len()).max().unwrap_or(1).max(6);
    let _ = writeln!(
        out,
        "{} · load on each service relative to the entry rate (measured{})",
        c.topology,
        if with_model { "; model below" } else { "" }
    );
    let pw = c
        .runs
        .iter()
        .map(|r| r.policy.len())
        .max()
        .unwrap_or(0)
        .max(10);
    let _ = write!(out, "{:<pw$}", "policy");
    for n in &names {
        let _ = write!(out, " {n:>w$}");
    }
    let _ = writeln!(
        out,
        " {:>8} {:>8} {:>6} {:>10}",
        "avail", "goodput", "radius", "suppressed"
    );
    // One row: a label, a figure per service, then availability, goodput,
    // radius and suppressed retries.
    let row = |out: &mut String,
               label: &str,
               amps: Vec<f64>,
               (avail, goodput): (f64, String),
               radius: u64,
               suppressed: String| {
        let _ = write!(out, "{label:<pw$}");
        for a in amps {
            let _ = write!(out, " {a:>w$.2}");
        }
        let _ = writeln!(
            out,
            " {:>8} {goodput:>8} {radius:>6} {suppressed:>10}",
            percent(avail)
        );
    };
    for run in &c.runs {
        let r = &run.report;
        row(
            &mut out,
            &run.policy.to_string(),
            r.nodes
                .iter()
                .map(|n| n.figures[Figure::Amplification])
                .collect(),
            (
                r.fleet[Figure::RootAvailability],
                format!("{:.1}", r.fleet[Figure::GoodputRps]),
            ),
            r.fleet.count(Figure::StormRadius),
            r.fleet.count(Figure::SpuriousAvoided).to_string(),
        );
        if with_model {
            row(
                &mut out,
                "  model",
                r.nodes
                    .iter()
                    .map(|n| n.figures[Figure::ModelAmplification])
                    .collect(),
                (r.fleet[Figure::ModelAvailability], "-".to_string()),
                r.fleet.count(Figure::StormRadiusModel),
                "-".to_string(),
            );
        }
    }
    out
}
