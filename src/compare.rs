//! The comparison front end: `chaoslab compare TOPOLOGY` runs the same
//! fault under each policy on a fresh session and prints the seed-style
//! table, one row per policy (and the model's row under each).

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use crate::cli::{fail_actions, parse_policy, CompareArgs};
use crate::error::{write_output, RunError};
use crate::report::Report;
use crate::session::figures::Figure;
use crate::session::{Action, Session, Setup};
use crate::topology::{PolicyFields, Preset, Topology};

/// Default measured time of each run.
pub const COMPARE_DURATION: Duration = Duration::from_secs(8);
/// Default warm-up of each run.
pub const COMPARE_WARMUP: Duration = Duration::from_secs(2);

/// One policy's run in a comparison.
#[derive(Debug, Clone, Serialize)]
pub struct CompareRun {
    /// The preset.
    pub policy: String,
    /// The run's report.
    pub report: Report,
}

/// A whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Topology name.
    pub topology: String,
    /// One run per policy, in the order asked.
    pub runs: Vec<CompareRun>,
}

/// `chaoslab compare`: the same fault under each policy, each on a fresh
/// session, one after another.
pub fn run(args: CompareArgs) -> Result<(), RunError> {
    let base = Topology::load(&args.topology)?;
    let presets: Vec<Preset> = args
        .policies
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(parse_policy)
        .collect::<Result<_, _>>()
        .map_err(RunError::usage)?;
    if presets.is_empty() {
        return Err(RunError::Usage(
            "--policies is empty: name at least one of none, retry, budget, ownership".into(),
        ));
    }
    let duration = args.clock.duration.unwrap_or(COMPARE_DURATION);
    let warmup = args.clock.warmup.unwrap_or(COMPARE_WARMUP);
    let mut runs = vec![];
    for preset in presets {
        let mut initial = vec![Action::Policy(PolicyFields {
            preset: Some(preset),
            ..Default::default()
        })];
        initial.extend(fail_actions(&base, &args.fail).map_err(RunError::usage)?);
        initial.extend(args.load.actions().map_err(RunError::usage)?);
        eprintln!(
            "compare: {} under {} for {:.0?} (+{:.0?} warm-up)…",
            base.name,
            preset.name(),
            duration,
            warmup
        );
        let session = Session::start(Setup {
            initial,
            seed: args.load.seed.unwrap_or(1),
            warmup,
            until: Some(warmup + duration),
            ..Setup::new(base.clone())
        })?;
        session.stop_on_ctrl_c();
        let record = session.wait()?;
        runs.push(CompareRun {
            policy: preset.name().into(),
            report: Report::measure(&record, warmup, Duration::MAX),
        });
    }
    let cmp = Comparison {
        topology: base.name.clone(),
        runs,
    };
    print!("{}", compare_table(&cmp, args.model));
    if let Some(p) = &args.report {
        let json = serde_json::to_string_pretty(&cmp).expect("a comparison serialises");
        write_output(p, &json, "report")?;
    }
    Ok(())
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
    let _ = write!(out, "{:<10}", "policy");
    for n in &names {
        let _ = write!(out, " {n:>w$}");
    }
    let _ = writeln!(out, " {:>8} {:>6} {:>10}", "avail", "radius", "suppressed");
    // One row: a label, a figure per service, then availability, radius
    // and suppressed retries.
    let row = |out: &mut String,
               label: &str,
               amps: Vec<f64>,
               avail: f64,
               radius: u64,
               suppressed: String| {
        let _ = write!(out, "{label:<10}");
        for a in amps {
            let _ = write!(out, " {a:>w$.2}");
        }
        let _ = writeln!(out, " {:>7.2}% {radius:>6} {suppressed:>10}", avail * 100.0);
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
            r.fleet[Figure::RootAvailability],
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
                r.fleet[Figure::ModelAvailability],
                r.fleet.count(Figure::StormRadiusModel),
                "-".to_string(),
            );
        }
    }
    out
}
