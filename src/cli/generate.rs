//! `chaoslab generate`: its arguments (SPEC section 12).

use std::path::PathBuf;

use clap::Args;

pub use crate::generate::Like;

/// `chaoslab generate`.
#[derive(Debug, Args, Clone)]
pub struct GenerateArgs {
    /// How many services (10 to 20,000: every service holds its calls per
    /// request of each root, and 13% of a mesh are roots, so that grows
    /// as the square; 20,000 validate in 2 s and under 1 GB).
    #[arg(long, value_parser = clap::value_parser!(u32).range(10..=20_000))]
    pub services: u32,
    /// Whose published statistics the mesh follows.
    #[arg(long, value_enum, default_value_t = Like::Meta)]
    pub like: Like,
    /// The random seed: the same seed writes the same file.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Root requests per second over every root.
    #[arg(long, default_value_t = 100.0, value_parser = super::parse_rps)]
    pub rps: f64,
    /// Write the topology here (default: standard output).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}
