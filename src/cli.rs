//! The command line (SPEC section 4).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

/// A terminal lab for retry storms: real services, real numbers.
#[derive(Debug, Parser)]
#[command(
    name = "chaoslab",
    version,
    about,
    args_conflicts_with_subcommands = true
)]
pub struct Opts {
    /// What to do.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// `chaoslab TOPOLOGY` is `chaoslab run TOPOLOGY`.
    #[command(flatten)]
    pub run: Option<RunArgs>,
}

impl Opts {
    /// The command to run, with the bare `chaoslab TOPOLOGY` form folded in.
    pub fn into_command(self) -> Command {
        match (self.command, self.run) {
            (Some(c), _) => c,
            (None, Some(run)) => Command::Run(run),
            (None, None) => Command::Run(RunArgs::default()),
        }
    }
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start the fleet and drive load: the live dashboard, or `--headless`.
    Run(RunArgs),
    /// Run the same fault under several policies and print the table.
    Compare(CompareArgs),
    /// Print the analytical model's table; starts nothing.
    Model(ModelArgs),
    /// Validate a topology and print its graph.
    Check(CheckArgs),
    /// Start the fleet with no internal load; outside clients drive it.
    Serve(ServeArgs),
}

/// `chaoslab run`.
#[derive(Debug, Args, Default, Clone)]
pub struct RunArgs {
    /// The topology file.
    #[arg(value_name = "TOPOLOGY")]
    pub topology: Option<PathBuf>,
    /// Run without the dashboard: progress on stderr, a table on stdout.
    #[arg(long)]
    pub headless: bool,
    /// How long to run (headless; e.g. 20s, 1m).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Leading time not counted in the report.
    #[arg(long, value_parser = parse_duration)]
    pub warmup: Option<Duration>,
    /// Root requests per second into the entry (overrides `load.rps`).
    #[arg(long)]
    pub rps: Option<f64>,
    /// Policy preset: none, retry, budget, ownership.
    #[arg(long)]
    pub policy: Option<String>,
    /// Make a service fail: `D` (every request) or `D=0.3`.
    #[arg(long = "fail", value_name = "SERVICE[=RATE]")]
    pub fail: Vec<String>,
    /// Seed for every random choice (faults, arrivals, jitter).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Attribution mode: simple, declared, learned (overrides the topology).
    #[arg(long, value_parser = parse_attribution)]
    pub attribution: Option<crate::ownership::Attribution>,
    /// Turn the at-least-once rule (rule 5) on or off.
    #[arg(long, value_name = "on|off", value_parser = parse_on_off)]
    pub at_least_once: Option<bool>,
    /// A scenario file (timeline and expectations).
    #[arg(long)]
    pub scenario: Option<PathBuf>,
    /// Write the JSON report here.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Write a JUnit XML report here.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Dashboard frames per second.
    #[arg(long, default_value_t = 10)]
    pub fps: u32,
    /// No colours (NO_COLOR is honoured too).
    #[arg(long)]
    pub no_color: bool,
    /// Save the dashboard's actions as a scenario file on quit.
    #[arg(long)]
    pub record: Option<PathBuf>,
}

/// `chaoslab compare`.
#[derive(Debug, Args, Clone)]
pub struct CompareArgs {
    /// The topology file.
    pub topology: PathBuf,
    /// The service(s) to fail: `D` or `D=0.3`.
    #[arg(long = "fail", value_name = "SERVICE[=RATE]")]
    pub fail: Vec<String>,
    /// Policies to compare, comma-separated.
    #[arg(long, default_value = "retry,budget,ownership")]
    pub policies: String,
    /// How long each policy runs.
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Leading time of each run not counted.
    #[arg(long, value_parser = parse_duration)]
    pub warmup: Option<Duration>,
    /// Root requests per second.
    #[arg(long)]
    pub rps: Option<f64>,
    /// Show the model's prediction under each measured figure.
    #[arg(long)]
    pub model: bool,
    /// Seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write the comparison as JSON here.
    #[arg(long)]
    pub report: Option<PathBuf>,
}

/// `chaoslab model`.
#[derive(Debug, Args, Clone)]
pub struct ModelArgs {
    /// The topology file.
    pub topology: PathBuf,
    /// The service(s) to fail: `D` or `D=0.3`.
    #[arg(long = "fail", value_name = "SERVICE[=RATE]")]
    pub fail: Vec<String>,
    /// Policy preset (default: the topology's).
    #[arg(long)]
    pub policy: Option<String>,
}

/// `chaoslab check`.
#[derive(Debug, Args, Clone)]
pub struct CheckArgs {
    /// The topology file.
    pub topology: PathBuf,
}

/// `chaoslab serve`.
#[derive(Debug, Args, Clone)]
pub struct ServeArgs {
    /// The topology file.
    pub topology: PathBuf,
    /// Stop after this long and print the per-service table.
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Print the table at the end (with --duration).
    #[arg(long)]
    pub headless: bool,
    /// Policy preset.
    #[arg(long)]
    pub policy: Option<String>,
    /// Make a service fail: `D` or `D=0.3`.
    #[arg(long = "fail", value_name = "SERVICE[=RATE]")]
    pub fail: Vec<String>,
    /// Seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write the JSON report here at the end.
    #[arg(long)]
    pub report: Option<PathBuf>,
}

/// Parses an attribution mode.
pub fn parse_attribution(s: &str) -> Result<crate::ownership::Attribution, String> {
    use crate::ownership::Attribution;
    [
        Attribution::Simple,
        Attribution::Declared,
        Attribution::Learned,
    ]
    .into_iter()
    .find(|a| a.name() == s)
    .ok_or_else(|| format!("`{s}` is not an attribution mode (simple, declared, learned)"))
}

/// Parses `on`/`off` (also `true`/`false`).
pub fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" | "true" => Ok(true),
        "off" | "false" => Ok(false),
        _ => Err(format!("`{s}` is neither on nor off")),
    }
}

/// Parses `250ms`, `10s`, `1m`, `1h`, `1.5s`, or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    crate::topology::spec::parse_duration(s)
}
