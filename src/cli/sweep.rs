//! `chaoslab sweep`'s flags (SPEC section 16).

use std::path::{Path, PathBuf};

use clap::Args;

use super::{Clock, Load, Population};

/// `chaoslab sweep`.
#[derive(Debug, Args, Clone)]
pub struct SweepArgs {
    /// The topology file (it may use the swept names as `${NAME}` too).
    pub topology: PathBuf,
    /// The scenario every cell plays; it writes a swept value as
    /// `${NAME}`, or `${NAME + 3}`, `${NAME - 1}`, `${NAME * 2}`.
    #[arg(long)]
    pub scenario: Option<PathBuf>,
    /// A name and its values: `LOAD=60..140:20` (FROM to TO by STEP).
    /// Once for a line of cells, twice for a grid.
    #[arg(long = "vary", value_name = "NAME=FROM..TO:STEP")]
    pub vary: Vec<String>,
    /// The policies, comma-separated, as `compare --policies` (`all`,
    /// `retry+backoff`, …): a heatmap each.
    #[arg(long, default_value = "retry,budget,ownership")]
    pub policies: String,
    /// What `+closed` and `+backoff` mean.
    #[command(flatten)]
    pub population: Population,
    /// How long each cell runs and how much of it to leave out.
    #[command(flatten)]
    pub clock: Clock,
    /// The rate and the seed.
    #[command(flatten)]
    pub load: Load,
    /// Make a service fail in every cell: `D` or `D=0.3`.
    #[arg(long = "fail", value_name = "SERVICE[=RATE]")]
    pub fail: Vec<String>,
    /// Write every cell as CSV here.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write the sweep as JSON here.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Write the heatmaps as one self-contained HTML file here.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Run more than 400 cells.
    #[arg(long)]
    pub yes: bool,
}

impl SweepArgs {
    /// The files the sweep writes, with their flags.
    pub fn outputs(&self) -> Vec<(&'static str, &Path)> {
        [
            ("--csv", &self.csv),
            ("--report", &self.report),
            ("--html", &self.html),
        ]
        .into_iter()
        .filter_map(|(f, p)| p.as_deref().map(|p| (f, p)))
        .collect()
    }
}
