//! The headless front end: `chaoslab run TOPOLOGY --headless`.
//!
//! It starts a [`Session`] for the command line (and its scenario),
//! prints a progress line a second to stderr from the snapshots (less
//! often on a mesh of thousands, whose snapshot takes over half a second
//! to build: see the session's runner), and when
//! the run ends prints the table (one per phase when the policy or a fault
//! changed), writes the JSON and JUnit reports, the HTML page and the
//! series, and exits 1 if an
//! expectation failed.

use std::io::Write as _;
use std::time::Duration;

use crate::endpoints::Endpoints;
use crate::error::{check_outputs, write_output, RunError};
use crate::format::fmt_rate;
use crate::lab::Snapshot;
use crate::options::{Prepared, Run};
use crate::report::{html, junit, Report};
use crate::scenario::Scenario;
use crate::session::Session;
use crate::signals::Interrupts;
use crate::topology::Topology;

/// `chaoslab run --headless`.
pub fn run(args: Run) -> Result<(), RunError> {
    let path = args.topology.as_path();
    if let Some(c) = &args.cast {
        return Err(RunError::Usage(format!(
            "--cast {}: records the dashboard's frames, and a headless run draws none; drop --headless, or use --record for the actions",
            c.display()
        )));
    }
    check_outputs(&args.outputs(), &args.inputs())?;
    let series = args.pictures.series_format().map_err(RunError::usage)?;
    let topology = Topology::load(path)?;
    // A scenario: `--scenario FILE`, else the topology's `scenario:` key.
    let scenario = Scenario::for_run(args.scenario.as_deref(), path, &topology)
        .map_err(RunError::input)?
        .unwrap_or_default();
    let Prepared {
        setup,
        expectations,
        warmup,
        end,
    } = args.prepare(topology, Some(&scenario), true)?;
    if let Some(line) = short_window(&setup.topology, end.map(|e| e.saturating_sub(warmup))) {
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
    let endpoints = Endpoints::parse(
        &args.endpoints.metrics,
        &args.endpoints.control,
        &setup.access,
    )?;
    let interrupts = Interrupts::watch();
    let session = Session::start(setup)?;
    interrupts.attach(session.stopper());
    for line in endpoints.start(&session, expectations)? {
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
    for node in session.nodes() {
        let _ = writeln!(std::io::stderr().lock(), "{node}");
    }
    for sidecar in session.sidecars() {
        let _ = writeln!(std::io::stderr().lock(), "{sidecar}");
    }
    let mut snaps = session.snapshots();
    session.block_on(async {
        let mut next = Duration::from_secs(1);
        let mut said = None;
        // The run loop drops its sender when the run ends.
        while snaps.changed().await.is_ok() {
            let s = snaps.borrow_and_update().clone();
            // The captions as they pass, each once.
            if let Some(say) = s.new_caption(&mut said) {
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "[{:>5.1}s] » {say}",
                    s.t.as_secs_f64()
                );
            }
            if s.t >= next {
                next += Duration::from_secs(1);
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "{}",
                    progress_line(&s, warmup, args.all)
                );
            }
        }
    });
    let record = session.wait()?;
    let mut report = Report::of_run(&record, &scenario.expectations);
    if interrupts.interrupted() {
        report.mark_interrupted();
    }
    print!(
        "{}",
        if args.all {
            report.table_all()
        } else {
            report.table()
        }
    );
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
    let series = args.pictures.series.as_deref().zip(series);
    for (p, text, what) in
        html::run::outputs(&record, &report, args.pictures.html.as_deref(), series)
    {
        write_output(p, &text, what)?;
    }
    interrupts.outcome()?;
    if let Some(l) = report.shards_lost.first() {
        return Err(RunError::ShardLost(format!(
            "shard {} died at {:.1}s ({}); the results are the run's to its end, its services down from then",
            l.shard, l.t_s, l.why
        )));
    }
    verdict(&report)
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

/// The line a run too short for some of its services' ratios prints
/// once, before it starts: how many it reads within ±10% at 95%.
fn short_window(t: &Topology, measured: Option<Duration>) -> Option<String> {
    let m = measured?.as_secs_f64();
    let (read, of) = crate::topology::model::window::read_within(t, m);
    (read < of).then(|| {
        format!(
            "note: {m:.0}s of measuring reads {read} of {of} services' amplification within ±10% at 95% at this rate; the others show a wider interval, or their count (n=…) below {} expected requests (`chaoslab check` gives the window each needs)",
            crate::lab::figures::MIN_EXPECTED_REQUESTS
        )
    })
}

/// The most services a progress line names unless asked for all: a
/// larger fleet shows those with the highest amplification.
pub const PROGRESS_SERVICES: usize = 8;

/// One line of headless progress: the entry's figures, then each
/// service's amplification (on a fleet of more than
/// [`PROGRESS_SERVICES`], unless `all`, the highest few and how many are
/// left out).
pub fn progress_line(s: &Snapshot, warmup: Duration, all: bool) -> String {
    let mut shown: Vec<(usize, Option<f64>)> = s
        .services
        .iter()
        .enumerate()
        .map(|(i, v)| (i, v.amplification()))
        .collect();
    let left = if all || shown.len() <= PROGRESS_SERVICES {
        0
    } else {
        let top = PROGRESS_SERVICES - 2;
        // The storm first: load above baseline beyond what chance gives,
        // not a rarely called service's ratio.
        let excess = |i: usize| crate::lab::roots::beyond_chance(&s.services[i].live);
        shown.sort_by(|a, b| excess(b.0).total_cmp(&excess(a.0)));
        let left = shown.len() - top;
        shown.truncate(top);
        left
    };
    let mut amps: Vec<String> = shown
        .iter()
        .map(|&(i, a)| {
            format!(
                "{} {}",
                s.services[i].name,
                match (s.services[i].too_few(), a) {
                    (Some(n), _) => format!("n={n}"),
                    (None, Some(a)) => format!("{a:.2}x"),
                    (None, None) => "-".into(),
                }
            )
        })
        .collect();
    if left > 0 {
        amps.push(format!("(+{left} more)"));
    }
    format!(
        "[{:>5.1}s{}] {} of {} rps, avail {}, radius {} · {}{}",
        s.t.as_secs_f64(),
        if s.t < warmup { " warm-up" } else { "" },
        fmt_rate(s.root.rps.round()),
        fmt_rate(s.state.rps.round()),
        match s.root.availability {
            a if a.is_nan() => "–".to_string(),
            a => format!("{:.1}%", a * 100.0),
        },
        s.radius_max,
        amps.join(" "),
        if s.saturation.is_empty() {
            String::new()
        } else {
            format!(" · SATURATED: {}", s.saturation.join("; "))
        }
    )
}
