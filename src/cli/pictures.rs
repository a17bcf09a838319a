//! The flags that write a run's pictures and numbers for people and
//! notebooks: `--html` (one self-contained page of charts) and `--series`
//! (every figure of the catalogue per sample, CSV or JSON). In a file of
//! their own so `run` and `compare` share them without growing `cli`.

use std::path::PathBuf;

use clap::Args;

/// `run --html` and `run --series`.
#[derive(Debug, Args, Default, Clone)]
pub struct Pictures {
    /// Write one self-contained HTML page of the run when it ends: charts
    /// of amplification, goodput, latency and storm radius over time, every
    /// action and fault marked (inline SVG, no script, no network)
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write every figure of the catalogue per sample (about one a second)
    /// when the run ends: CSV when FILE ends in .csv, JSON when in .json
    #[arg(long, value_name = "FILE")]
    pub series: Option<PathBuf>,
}

/// `compare --html`: the policies side by side on one page. A comparison
/// has no `--series` (each policy's run has its own samples; `run
/// --series` writes one run's).
#[derive(Debug, Args, Default, Clone)]
pub struct ComparePictures {
    /// Write the comparison as one self-contained HTML page: each
    /// service's amplification and the availability per policy, and the
    /// recovery table with --scenario (inline SVG, no script, no network)
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}
