//! `chaoslab model`, `compare` and `serve`.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::{mpsc, watch};

use crate::app::{apply_to_topology, parse_policy, runtime, startup_actions};
use crate::cli::{CompareArgs, ModelArgs, ServeArgs};
use crate::error::RunError;
use crate::report::Report;
use crate::scenario::{drive, Lab, LabOptions, Plan};
use crate::topology::{model, Preset, Topology};

/// Default measured time of each `compare` run.
pub const COMPARE_DURATION: Duration = Duration::from_secs(8);
/// Default warm-up of each `compare` run.
pub const COMPARE_WARMUP: Duration = Duration::from_secs(2);

/// `chaoslab model`: the analytical table, nothing started.
pub fn model(args: ModelArgs) -> Result<(), RunError> {
    let mut t = Topology::load(&args.topology)?;
    let actions = startup_actions(&t, args.policy.as_deref(), &args.fail, None)?;
    apply_to_topology(&mut t, &actions);
    print!("{}", model_table(&t));
    Ok(())
}

/// The model's table for a topology as it stands (faults and policy).
pub fn model_table(t: &Topology) -> String {
    let p = model::predict(t, &t.policy);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} · model · policy {} (R={}, B={}) · attribution {}",
        t.name,
        t.policy.mode_name(),
        t.policy.attempts,
        t.policy
            .budget
            .map_or_else(|| "off".into(), |b| format!("{b}")),
        t.ownership.attribution.name()
    );
    let _ = writeln!(
        out,
        "{:<12} {:>5} {:>9} {:>10} {:>8} {:>8} {:>9} {:>9}",
        "service", "depth", "baseline", "load/root", "amp", "err%", "claimed%", "unclaim%"
    );
    for (s, sp) in t.services.iter().zip(&p.services) {
        let _ = writeln!(
            out,
            "{:<12} {:>5} {:>9.3} {:>10.3} {:>7.3}x {:>7.2}% {:>8.2}% {:>8.2}%",
            s.name,
            s.depth,
            s.multiplicity,
            sp.load,
            sp.amplification,
            sp.p_error * 100.0,
            sp.p_claimed * 100.0,
            sp.p_unclaimed * 100.0
        );
    }
    let _ = writeln!(
        out,
        "entry availability {:.4}% · storm radius {} · static radius {}",
        p.root_availability * 100.0,
        p.storm_radius,
        model::static_radius(t, &t.policy)
    );
    out
}

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
/// fleet, one after another.
pub fn compare(args: CompareArgs) -> Result<(), RunError> {
    let base = Topology::load(&args.topology)?;
    let presets: Vec<Preset> = args
        .policies
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(parse_policy)
        .collect::<Result<_, _>>()?;
    if presets.is_empty() {
        return Err(RunError::BadInput(
            "--policies is empty: name at least one of none, retry, budget, ownership".into(),
        ));
    }
    let duration = args.duration.unwrap_or(COMPARE_DURATION);
    let warmup = args.warmup.unwrap_or(COMPARE_WARMUP);
    let rt = runtime()?;
    let mut runs = vec![];
    for preset in presets {
        let mut t = base.clone();
        let actions = startup_actions(&t, Some(preset.name()), &args.fail, args.rps)?;
        apply_to_topology(&mut t, &actions);
        eprintln!(
            "compare: {} under {} for {:.0?} (+{:.0?} warm-up)…",
            t.name,
            preset.name(),
            duration,
            warmup
        );
        let opts = LabOptions {
            seed: args.seed.unwrap_or(1),
            ..LabOptions::default()
        };
        let report = rt.block_on(run_for(t, opts, warmup, Some(duration)))?;
        runs.push(CompareRun {
            policy: preset.name().into(),
            report,
        });
    }
    let cmp = Comparison {
        topology: base.name.clone(),
        runs,
    };
    print!("{}", compare_table(&cmp, args.model));
    if let Some(p) = &args.report {
        let json = serde_json::to_string_pretty(&cmp).expect("a comparison serialises");
        crate::error::write_output(p, &json, "report")?;
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
            r.nodes.iter().map(|n| n.amplification).collect(),
            r.root.availability,
            r.storm_radius.max,
            r.spurious_avoided.to_string(),
        );
        if with_model {
            row(
                &mut out,
                "  model",
                r.nodes.iter().map(|n| n.model_amplification).collect(),
                r.root.model_availability,
                r.storm_radius.model as u64,
                "-".to_string(),
            );
        }
    }
    out
}

/// Runs a lab for `warmup + duration` (or until Ctrl-C when `duration` is
/// `None`) with no progress output, and measures the time after warm-up.
pub async fn run_for(
    topology: Topology,
    opts: LabOptions,
    warmup: Duration,
    duration: Option<Duration>,
) -> Result<Report, RunError> {
    let lab = Lab::start(topology, opts).await?;
    Ok(measure_run(lab, warmup, duration.map(|d| warmup + d)).await)
}

/// Drives a started lab until `until` (or Ctrl-C), then measures the time
/// after `warmup` and stops the lab.
async fn measure_run(lab: Lab, warmup: Duration, until: Option<Duration>) -> Report {
    let plan = Plan {
        warmup,
        until,
        steps: vec![],
    };
    let (_actions_tx, actions) = mpsc::channel(1);
    let (snapshots, _) = watch::channel(Arc::new(lab.snapshot()));
    let (stop_tx, stop) = watch::channel(false);
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            let _ = stop_tx.send(true);
        }
    });
    let lab = drive(lab, plan, actions, snapshots, stop, |_| {}).await;
    let report = Report::measure(&lab, warmup, Duration::MAX);
    lab.stop().await;
    report
}

/// `chaoslab serve`: the fleet with no internal load.
pub fn serve(args: ServeArgs) -> Result<(), RunError> {
    let mut t = Topology::load(&args.topology)?;
    let actions = startup_actions(&t, args.policy.as_deref(), &args.fail, None)?;
    apply_to_topology(&mut t, &actions);
    let opts = LabOptions {
        seed: args.seed.unwrap_or(1),
        load: false,
        ..LabOptions::default()
    };
    let rt = runtime()?;
    let report = rt.block_on(async {
        let lab = Lab::start(t, opts).await?;
        {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(
                out,
                "entry {} {}",
                lab.topology().entry().name,
                lab.entry_url()
            );
            for (i, s) in lab.topology().services.iter().enumerate() {
                let _ = writeln!(out, "service {} {}", s.name, lab.fleet().url(i));
            }
            let _ = writeln!(
                out,
                "serving {}{}",
                lab.topology().name,
                match args.duration {
                    Some(d) => format!(" for {d:?}"),
                    None => " until Ctrl-C".into(),
                }
            );
            let _ = out.flush();
        }
        let report = measure_run(lab, Duration::ZERO, args.duration).await;
        Ok::<_, RunError>(report)
    })?;
    if args.headless || args.duration.is_some() {
        print!("{}", report.table());
    }
    if let Some(p) = &args.report {
        crate::error::write_output(p, &report.to_json(), "report")?;
    }
    Ok(())
}
