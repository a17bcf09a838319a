//! The dashboard front end: `chaoslab TOPOLOGY` (and `chaoslab run
//! TOPOLOGY` in a terminal). It prepares the run from the command line,
//! starts the session and the endpoints asked for, hands both to the
//! dashboard ([`crate::tui`]) until the person quits, then prints the
//! summary and writes the report, the recording, the HTML page and the
//! series if asked.

use std::io::{self, IsTerminal, Write};
use std::sync::Arc;
use std::time::Duration;

use crate::endpoints::Endpoints;
use crate::error::{check_outputs, write_output, RunError};
use crate::options::{Prepared, Run};
use crate::report::{html, Report};
use crate::scenario::{record, Scenario};
use crate::session::Session;
use crate::topology::Topology;
use crate::tui::{self, cast, play, Options};

/// `chaoslab TOPOLOGY`: starts a session for the command line, runs the
/// dashboard over it until the user quits, then prints a summary and
/// writes the report and the recording if asked.
pub fn run(args: Run) -> Result<(), RunError> {
    let path = args.topology.as_path();
    check_outputs(&args.outputs(), &args.inputs())?;
    let series = args.pictures.series_format().map_err(RunError::usage)?;
    let topology = Topology::load(path)?;
    if !io::stdout().is_terminal() || !io::stdin().is_terminal() {
        return Err(RunError::Usage(format!(
            "the dashboard needs a terminal; for scripts and CI run `chaoslab run {} --headless`",
            path.display()
        )));
    }
    // A scenario plays live: `--scenario FILE`, else the topology's own.
    let scenario =
        Scenario::for_run(args.scenario.as_deref(), path, &topology).map_err(RunError::input)?;
    let title = format!("chaoslab {}", topology.name);
    let Prepared {
        setup,
        expectations,
        end,
        warmup,
    } = args.prepare(topology, scenario.as_ref(), false)?;
    let endpoints = Endpoints::parse(
        &args.endpoints.metrics,
        &args.endpoints.control,
        &setup.access,
    )?;
    let session = Session::start(setup)?;
    let listening = endpoints.start(&session, expectations.clone())?;
    // Created once the lab is up: a lab that fails to start leaves an
    // earlier recording of that name as it was.
    let cast = args
        .cast
        .as_deref()
        .map(|p| cast::Cast::open(p, &title))
        .transpose()?;
    let lab = lab(&session);
    let verdicts = play::judge(&lab, expectations, warmup);
    let opts = Options {
        fps: args.fps,
        no_color: args.no_color,
        listening: listening.clone(),
        cast,
        scenario: end.map(|e| (e, verdicts)),
        tour: false,
        big: args.big,
        theme: args.theme,
    };
    let outcome = tui::dashboard(&lab, &opts).map_err(RunError::from);
    drop(lab);
    let record = session.finish()?;
    // A signal ends the dashboard as `q` does, but the reports say so and
    // the exit status is the signal's.
    let interrupted = match outcome {
        Err(e @ RunError::Interrupted(_)) => Some(e),
        other => {
            other?;
            None
        }
    };
    for line in &listening {
        eprintln!("{line} (served while the dashboard ran)");
    }
    let mut report = Report::measure(&record, record.warmup, Duration::MAX);
    if interrupted.is_some() {
        report.mark_interrupted();
    }
    if let Some(p) = &args.report {
        write_output(p, &report.to_json(), "report")?;
    }
    let recording = args.record.as_ref().map(|p| (p, record::of_run(&record)));
    if let Some((p, yaml)) = &recording {
        write_output(p, yaml, "recording")?;
    }
    let series = args.pictures.series.as_deref().zip(series);
    let pictures = html::run::outputs(&record, &report, args.pictures.html.as_deref(), series);
    for (p, text, what) in &pictures {
        write_output(p, text, what)?;
    }
    let events: Vec<String> = record.events.iter().map(|e| e.to_string()).collect();
    // Not `print!`: after a hang-up there is no terminal to print to.
    let mut out = io::stdout().lock();
    let _ = write!(out, "{}", tui::summary(&report, &events, record.uptime));
    if let Some(p) = &args.report {
        let _ = writeln!(out, "report written to {}", p.display());
    }
    for (p, _, what) in &pictures {
        let _ = writeln!(out, "{what} written to {}", p.display());
    }
    if let Some((p, _)) = &recording {
        let _ = writeln!(
            out,
            "session recorded to {} (replay: chaoslab run TOPOLOGY --headless --scenario {})",
            p.display(),
            p.display()
        );
    }
    let _ = out.flush();
    interrupted.map_or(Ok(()), Err)
}

/// The dashboard's view of a session: its snapshots, its actions and its
/// runtime (the dashboard's crate knows nothing else of the fleet).
pub fn lab(session: &Session) -> tui::Lab<'_> {
    tui::Lab {
        snapshots: session.snapshots(),
        steer: Arc::new(session.actions()),
        runtime: session.handle(),
        finished: Box::new(|| session.is_finished()),
    }
}
