//! The commands behind the command line: load and override a topology,
//! then run it headless (or hand it to the dashboard).

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use crate::cli::RunArgs;
use crate::error::RunError;
use crate::report::{expect, Report, TimeSeries};
use crate::scenario::{drive, Action, Lab, LabOptions, Plan, Scenario, Snapshot};
use crate::topology::{Preset, Topology};

/// Default measured duration of a headless run.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(20);
/// Default warm-up.
pub const DEFAULT_WARMUP: Duration = Duration::from_secs(2);

/// Parses `SERVICE` or `SERVICE=RATE` against a topology.
pub fn parse_fail(t: &Topology, spec: &str) -> Result<(usize, f64), RunError> {
    let (name, rate) = match spec.split_once('=') {
        Some((n, r)) => {
            let rate: f64 = r.trim().parse().map_err(|_| {
                RunError::BadInput(format!(
                    "--fail {spec}: `{r}` is not a rate (write e.g. {n}=0.3)"
                ))
            })?;
            (n.trim(), rate)
        }
        None => (spec.trim(), 1.0),
    };
    if !(0.0..=1.0).contains(&rate) {
        return Err(RunError::BadInput(format!(
            "--fail {spec}: the rate must be between 0 and 1"
        )));
    }
    let id = t.service_id(name).ok_or_else(|| {
        RunError::BadInput(format!(
            "--fail {spec}: there is no service `{name}` in topology {} (services: {})",
            t.name,
            t.services
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    Ok((id, rate))
}

/// Parses a preset name.
pub fn parse_policy(s: &str) -> Result<Preset, RunError> {
    Preset::parse(s.trim()).ok_or_else(|| {
        RunError::BadInput(format!(
            "--policy {s}: unknown policy (choose none, retry, budget or ownership)"
        ))
    })
}

/// The actions the command line asks for at time zero.
pub fn startup_actions(
    t: &Topology,
    policy: Option<&str>,
    fails: &[String],
    rps: Option<f64>,
) -> Result<Vec<Action>, RunError> {
    let mut actions = vec![];
    if let Some(p) = policy {
        actions.push(Action::Policy(crate::topology::PolicyFields {
            preset: Some(parse_policy(p)?),
            ..Default::default()
        }));
    }
    for f in fails {
        let (id, rate) = parse_fail(t, f)?;
        let mut fault = t.services[id].fault.clone();
        fault.error_rate = rate;
        fault.down = false;
        actions.push(Action::SetFault { service: id, fault });
    }
    if let Some(r) = rps {
        if !r.is_finite() || r <= 0.0 {
            return Err(RunError::BadInput(format!(
                "--rps {r}: the rate must be a positive number"
            )));
        }
        actions.push(Action::SetRps(r));
    }
    Ok(actions)
}

/// Applies actions to a topology before anything runs (so the lab starts
/// in the asked-for state and the model sees it from the first tick).
pub fn apply_to_topology(t: &mut Topology, actions: &[Action]) {
    for a in actions {
        match a {
            Action::Policy(f) => t.policy.apply_fields(f),
            Action::SetFault { service, fault } => t.services[*service].fault = fault.clone(),
            Action::SetRps(r) => t.load.rps = *r,
            _ => {}
        }
    }
}

fn topology_arg(args: &RunArgs) -> Result<&Path, RunError> {
    args.topology.as_deref().ok_or_else(|| {
        RunError::BadInput(
            "no topology given: try `chaoslab topologies/uber-chain.yaml` (see --help)".into(),
        )
    })
}

/// A multi-threaded runtime sized to the machine.
pub fn runtime() -> Result<tokio::runtime::Runtime, RunError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| RunError::Other(anyhow::anyhow!("starting the async runtime: {e}")))
}

/// `chaoslab run`.
pub fn run(args: RunArgs) -> Result<(), RunError> {
    let path = topology_arg(&args)?;
    let mut topology = Topology::load(path)?;
    let actions = startup_actions(&topology, args.policy.as_deref(), &args.fail, args.rps)?;
    apply_to_topology(&mut topology, &actions);
    if let Some(a) = args.attribution {
        topology.ownership.attribution = a;
    }
    if let Some(on) = args.at_least_once {
        topology.ownership.at_least_once = on;
    }
    if !args.headless {
        if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
            return Err(RunError::BadInput(format!(
                "the dashboard needs a terminal; for scripts and CI run `chaoslab run {} --headless`",
                path.display()
            )));
        }
        return crate::tui::run(
            topology,
            crate::tui::Options {
                fps: args.fps,
                no_color: args.no_color,
                report: args.report.clone(),
                seed: args.seed.unwrap_or(1),
                warmup: args.warmup.unwrap_or(DEFAULT_WARMUP),
                record: args.record.clone(),
            },
        );
    }
    // A scenario: `--scenario FILE`, else the topology's `scenario:` key.
    let bad = |e: crate::scenario::ScenarioError| RunError::BadInput(e.to_string());
    let scenario = Scenario::for_run(args.scenario.as_deref(), path, &topology)
        .map_err(bad)?
        .unwrap_or_default();
    let duration = args
        .duration
        .or(scenario.duration)
        .unwrap_or(DEFAULT_DURATION);
    let warmup = args.warmup.or(scenario.warmup).unwrap_or(DEFAULT_WARMUP);
    scenario
        .check_duration(duration, args.duration.is_some())
        .map_err(bad)?;
    let opts = LabOptions {
        seed: args.seed.unwrap_or(1),
        ..LabOptions::default()
    };
    let report = runtime()?.block_on(headless_scenario(
        topology, opts, warmup, duration, &scenario,
    ))?;
    print!("{}", report.table());
    if let Some(p) = &args.report {
        crate::error::write_output(p, &report.to_json(), "report")?;
    }
    if let Some(p) = &args.junit {
        let file = (!scenario.origin.is_empty()).then_some(scenario.origin.as_str());
        crate::error::write_output(
            p,
            &crate::report::junit::to_junit(&report, file),
            "JUnit report",
        )?;
    }
    let failed: Vec<String> = report
        .expectations
        .iter()
        .filter(|e| !e.passed)
        .map(|e| {
            format!(
                "{}: {} during {}s..{}s: observed {:.4}{}",
                e.source,
                e.what,
                e.window_s.0,
                e.window_s.1,
                e.observed,
                e.note
                    .as_ref()
                    .map_or_else(String::new, |n| format!(" ({n})"))
            )
        })
        .collect();
    if !failed.is_empty() {
        return Err(RunError::ExpectationFailed(format!(
            "{} of {} expectations failed:\n  {}",
            failed.len(),
            report.expectations.len(),
            failed.join("\n  ")
        )));
    }
    Ok(())
}

/// Runs a lab for `warmup + duration`, printing a progress line per second
/// to stderr, and measures the report over the time after the warm-up.
pub async fn headless(
    topology: Topology,
    opts: LabOptions,
    warmup: Duration,
    duration: Duration,
) -> Result<Report, RunError> {
    headless_scenario(topology, opts, warmup, duration, &Scenario::default()).await
}

/// [`headless`] with a scenario: its steps on the clock (those at 0 s from
/// the very start, the others counted from the end of the warm-up), its
/// expectations judged over their windows into the report, and the
/// per-second time series attached.
pub async fn headless_scenario(
    mut topology: Topology,
    opts: LabOptions,
    warmup: Duration,
    duration: Duration,
    scenario: &Scenario,
) -> Result<Report, RunError> {
    let start = topology.clone();
    // Steps at 0 s are the state the run starts in.
    apply_to_topology(&mut topology, &scenario.initial_actions());
    let steps = scenario.plan_steps(warmup);
    let lab = Lab::start(topology, opts).await?;
    let plan = Plan {
        warmup,
        until: Some(warmup + duration),
        steps: steps.clone(),
    };
    let (_actions_tx, actions) = mpsc::channel(1);
    let (snapshots, _) = watch::channel(Arc::new(lab.snapshot()));
    let (_stop_tx, stop) = watch::channel(false);
    let mut next_progress = Duration::from_secs(1);
    let lab = drive(lab, plan, actions, snapshots, stop, |s| {
        if s.t >= next_progress {
            next_progress += Duration::from_secs(1);
            let _ = writeln!(std::io::stderr().lock(), "{}", progress_line(s, warmup));
        }
    })
    .await;
    // Up to the newest sample: the run ends on the first tick past its end.
    let mut report = Report::measure(&lab, warmup, Duration::MAX);
    report.expectations = expect::evaluate(&lab, warmup, &scenario.expectations, &start, &steps);
    report.series = Some(TimeSeries::from_series(
        lab.series(),
        lab.topology(),
        warmup,
        Duration::MAX,
    ));
    lab.stop().await;
    Ok(report)
}

/// One line of headless progress.
pub fn progress_line(s: &Snapshot, warmup: Duration) -> String {
    let amps: Vec<String> = s
        .services
        .iter()
        .map(|v| {
            format!(
                "{} {}",
                v.name,
                v.amplification
                    .map_or_else(|| "-".into(), |a| format!("{a:.2}x"))
            )
        })
        .collect();
    format!(
        "[{:>5.1}s{}] {} rps, avail {:.1}%, radius {} · {}",
        s.t.as_secs_f64(),
        if s.t < warmup { " warm-up" } else { "" },
        s.root.rps.round(),
        s.root.availability * 100.0,
        s.radius_max,
        amps.join(" ")
    )
}
