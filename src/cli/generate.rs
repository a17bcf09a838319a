//! `chaoslab generate`: its arguments (SPEC section 12).

use std::path::PathBuf;

use clap::Args;

/// Whose published call-graph statistics a generated mesh follows (the
/// command line's twin of [`crate::generate::Like`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Like {
    /// Meta's 2023 topology study: per-service fan-out median 4, p90 13,
    /// p99 about 100; call paths up to 19 services deep.
    #[default]
    Meta,
    /// Alibaba's 2021 traces: children sets of 1 to 10, call graphs 2 to 6
    /// deep, 16.2% of calls repeated.
    Alibaba,
    /// Uber's incident of 18 November 2025: a mesh like Meta's with a
    /// Core Entity service more than five levels deep, reached through
    /// paths on which four to nine hops retry (SPEC section 14).
    UberIncident,
}

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
