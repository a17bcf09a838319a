//! The flags that write a run's pictures and numbers for people and
//! notebooks: `--html` (one self-contained page of charts) and `--series`
//! (every figure of the catalogue per sample, CSV or JSON). In a file of
//! their own so `run` and `compare` share them without growing `cli`.

use std::path::{Path, PathBuf};

use clap::Args;

use super::UsageError;
use crate::report::samples::Format;

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

impl Pictures {
    /// The files these flags write, with their flags.
    pub fn outputs(&self) -> impl Iterator<Item = (&'static str, &Path)> {
        [("--html", &self.html), ("--series", &self.series)]
            .into_iter()
            .filter_map(|(f, p)| p.as_deref().map(|p| (f, p)))
    }

    /// The format `--series` asks for by its file's name; a name ending
    /// in neither `.csv` nor `.json` is a usage error.
    pub fn series_format(&self) -> Result<Option<Format>, UsageError> {
        self.series
            .as_deref()
            .map(Format::of)
            .transpose()
            .map_err(UsageError)
    }
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
