//! The headless front end: `chaoslab run TOPOLOGY --headless`.
//!
//! It starts a [`Session`] for the command line (and its scenario),
//! prints a progress line a second to stderr from the snapshots, and when
//! the run ends prints the table (one per phase when the policy or a fault
//! changed), writes the JSON and JUnit reports, and exits 1 if an
//! expectation failed.

use std::io::Write as _;
use std::time::Duration;

use crate::cli::{RunArgs, DEFAULT_DURATION};
use crate::endpoints::Endpoints;
use crate::error::{check_outputs, write_output, RunError};
use crate::report::{expect, junit, Report, TimeSeries};
use crate::scenario::Scenario;
use crate::session::{Record, Session, Snapshot};
use crate::signals::Interrupts;
use crate::topology::Topology;

/// `chaoslab run --headless`.
pub fn run(args: RunArgs) -> Result<(), RunError> {
    let path = args.topology_path().map_err(RunError::usage)?;
    if let Some(c) = &args.cast {
        return Err(RunError::Usage(format!(
            "--cast {}: records the dashboard's frames, and a headless run draws none; drop --headless, or use --record for the actions",
            c.display()
        )));
    }
    check_outputs(&args.outputs(), &args.inputs())?;
    let topology = Topology::load(path)?;
    // A scenario: `--scenario FILE`, else the topology's `scenario:` key.
    let scenario = Scenario::for_run(args.scenario.as_deref(), path, &topology)
        .map_err(RunError::input)?
        .unwrap_or_default();
    let duration = args
        .clock
        .duration
        .or(scenario.duration)
        .unwrap_or(DEFAULT_DURATION);
    scenario
        .check_duration(duration, args.clock.duration.is_some())
        .map_err(RunError::input)?;
    let warmup = args.warmup(scenario.warmup);
    let mut setup = args
        .setup(
            topology,
            scenario.initial_actions(),
            scenario.plan_steps(warmup),
            warmup,
            Some(duration),
        )
        .map_err(RunError::usage)?;
    setup.captions = scenario.plan_captions(warmup);
    let endpoints = Endpoints::parse(&args.endpoints)?;
    let interrupts = Interrupts::watch();
    let session = Session::start(setup)?;
    interrupts.attach(&session);
    for line in endpoints.start(&session, scenario.expectations.clone())? {
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
    for node in session.nodes() {
        let _ = writeln!(std::io::stderr().lock(), "{node}");
    }
    let mut snaps = session.snapshots();
    session.block_on(async {
        let mut next = Duration::from_secs(1);
        let mut said = None;
        // The run loop drops its sender when the run ends.
        while snaps.changed().await.is_ok() {
            let s = snaps.borrow_and_update().clone();
            // The captions as they pass, each once.
            if let Some(say) = new_caption(&s, &mut said) {
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "[{:>5.1}s] » {say}",
                    s.t.as_secs_f64()
                );
            }
            if s.t >= next {
                next += Duration::from_secs(1);
                let _ = writeln!(std::io::stderr().lock(), "{}", progress_line(&s, warmup));
            }
        }
    });
    let record = session.wait()?;
    let mut report = report(&record, &scenario);
    if interrupts.interrupted() {
        report.mark_interrupted();
    }
    print!("{}", report.table());
    if let Some(p) = &args.report {
        write_output(p, &report.to_json(), "report")?;
    }
    if let Some(p) = &args.junit {
        let file = (!scenario.origin.is_empty()).then_some(scenario.origin.as_str());
        write_output(p, &junit::to_junit(&report, file), "JUnit report")?;
    }
    if let Some(p) = &args.record {
        write_output(p, &crate::scenario::record::of_run(&record), "recording")?;
    }
    interrupts.outcome()?;
    verdict(&report)
}

/// The caption `s` shows, if it is not `said` (the one shown last), which
/// it then becomes: each caption once, as it passes.
pub fn new_caption(s: &Snapshot, said: &mut Option<(Duration, String)>) -> Option<String> {
    let c = s.timeline.as_ref()?.caption.clone()?;
    if said.as_ref() == Some(&c) {
        return None;
    }
    let text = c.1.clone();
    *said = Some(c);
    Some(text)
}

/// The report of a finished headless run: from the warm-up's end to the
/// newest sample (the run ends on the first tick past its end), with the
/// scenario's expectations judged and the per-second series attached.
pub fn report(record: &Record, scenario: &Scenario) -> Report {
    let mut report = Report::measure(record, record.warmup, Duration::MAX);
    report.set_expectations(expect::evaluate(record, &scenario.expectations));
    report.series = Some(TimeSeries::from_series(
        &record.series,
        &record.topology,
        record.warmup,
        Duration::MAX,
    ));
    report
}

/// Exit status 1, with each failure, when an expectation failed.
fn verdict(report: &Report) -> Result<(), RunError> {
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
    if failed.is_empty() {
        return Ok(());
    }
    Err(RunError::ExpectationFailed(format!(
        "{} of {} expectations failed:\n  {}",
        failed.len(),
        report.expectations.len(),
        failed.join("\n  ")
    )))
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
                v.amplification()
                    .map_or_else(|| "-".into(), |a| format!("{a:.2}x"))
            )
        })
        .collect();
    format!(
        "[{:>5.1}s{}] {} of {} rps, avail {:.1}%, radius {} · {}{}",
        s.t.as_secs_f64(),
        if s.t < warmup { " warm-up" } else { "" },
        s.root.rps.round(),
        s.state.rps.round(),
        s.root.availability * 100.0,
        s.radius_max,
        amps.join(" "),
        if s.saturation.is_empty() {
            String::new()
        } else {
            format!(" · SATURATED: {}", s.saturation.join("; "))
        }
    )
}
