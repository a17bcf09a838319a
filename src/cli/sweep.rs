//! `chaoslab sweep`'s flags (SPEC section 16).

use std::path::PathBuf;

use clap::Args;

use super::Contenders;

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
    /// The policies (a heatmap each), as `compare`'s, and what every
    /// cell's runs share.
    #[command(flatten)]
    pub runs: Contenders,
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
    /// Spread the mesh over N shard processes, as `run --shards N` (fresh shards for each
    /// cell).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub shards: Option<u16>,
}
