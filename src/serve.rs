//! The serving front end: `chaoslab serve TOPOLOGY` starts a session with
//! no internal load and prints each service's URL, so outside clients
//! (wrk, oha, curl) drive the fleet and the fleet counts their traffic.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::{check_outputs, write_output, RunError};
use crate::launch::{launch, Launched};
use crate::options;
use crate::report::Report;
use crate::session::Setup;
use crate::topology::Topology;

/// What `chaoslab serve` is asked to serve, and for how long.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The topology file.
    pub topology: PathBuf,
    /// Stop after this long and print the per-service table; `None`
    /// serves until SIGINT or SIGTERM.
    pub duration: Option<Duration>,
    /// Print the table at the end even when no duration ends it.
    pub headless: bool,
    /// The policy and faults to start in.
    pub start: options::Start,
    /// The seed of every random choice (faults, jitter); `None` is 1.
    pub seed: Option<u64>,
    /// Where to write the JSON report at the end.
    pub report: Option<PathBuf>,
    /// Prometheus metrics and the control API.
    pub endpoints: options::Endpoints,
    /// The mesh over this many shard processes.
    pub shards: Option<usize>,
}

/// `chaoslab serve`.
pub fn run(args: Options) -> Result<(), RunError> {
    let outputs: Vec<(&str, &std::path::Path)> = args
        .report
        .iter()
        .map(|p| ("--report", p.as_path()))
        .collect();
    check_outputs(&outputs, &[&args.topology])?;
    let t = Topology::load(&args.topology)?;
    let initial = args.start.actions(&t).map_err(RunError::usage)?;
    let Launched {
        session,
        interrupts,
        listening,
    } = launch(
        &args.endpoints,
        Setup {
            initial,
            seed: args.seed.unwrap_or(1),
            load: false,
            until: args.duration,
            processes: args.shards.map(|_| args.topology.clone()),
            shards: args.shards,
            ..Setup::new(t)
        },
    )?;
    {
        let t = session.topology();
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "entry {} {}", t.entry().name, session.entry_url());
        for (s, url) in t.services.iter().zip(session.urls()) {
            let _ = writeln!(out, "service {} {url}", s.name);
        }
        for line in &listening {
            let _ = writeln!(out, "{line}");
        }
        let _ = writeln!(
            out,
            "serving {}{}",
            t.name,
            match args.duration {
                Some(d) => format!(" for {d:?}"),
                None => " until Ctrl-C or SIGTERM".into(),
            }
        );
        let _ = out.flush();
    }
    let record = session.wait()?;
    let mut report = Report::measure(&record, Duration::ZERO, Duration::MAX);
    if interrupts.interrupted() {
        report.mark_interrupted();
    }
    if args.headless || args.duration.is_some() || interrupts.interrupted() {
        print!("{}", report.table());
    }
    if let Some(p) = &args.report {
        write_output(p, &report.to_json(), "report")?;
    }
    interrupts.outcome().map_err(RunError::from)
}
