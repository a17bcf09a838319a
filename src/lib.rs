//! chaoslab: a terminal lab for retry storms.
//!
//! One process starts a fleet of real axum services on loopback, wired as a
//! YAML topology says, drives open-loop load into the entry, and measures
//! what every service sees while faults and retry policies change. Every
//! service runs the error-ownership middleware of [`middleware`], whose
//! decisions live, free of I/O, in [`ownership`].

pub mod app;
pub mod cli;
pub mod commands;
pub mod fleet;
pub mod load;
pub mod metrics;
pub mod middleware;
pub mod ownership;
pub mod report;
pub mod scenario;
pub mod topology;
pub mod tui;
pub mod yaml;

use std::process::ExitCode;

use cli::{Command, Opts};

/// Exit status: an expectation failed.
pub const EXIT_EXPECTATION: u8 = 1;
/// Exit status: bad input or usage.
pub const EXIT_BAD_INPUT: u8 = 2;

/// An error that carries its exit status.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Bad input: a topology, scenario, flag or file the user gave.
    #[error("{0}")]
    BadInput(String),
    /// One or more expectations failed (already reported).
    #[error("{0}")]
    ExpectationFailed(String),
    /// Anything else: the lab itself failed.
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

impl From<topology::TopologyError> for RunError {
    fn from(e: topology::TopologyError) -> Self {
        RunError::BadInput(e.to_string())
    }
}

impl RunError {
    /// The process exit status for this error.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            RunError::BadInput(_) => ExitCode::from(EXIT_BAD_INPUT),
            RunError::ExpectationFailed(_) => ExitCode::from(EXIT_EXPECTATION),
            RunError::Other(_) => ExitCode::FAILURE,
        }
    }
}

/// Runs one command line.
pub fn run(opts: Opts) -> Result<(), RunError> {
    match opts.into_command() {
        Command::Check(args) => {
            let t = topology::Topology::load(&args.topology)?;
            print!("{}", topology::validate::render_check(&t));
            Ok(())
        }
        Command::Run(args) => app::run(args),
        Command::Model(args) => commands::model(args),
        Command::Compare(args) => commands::compare(args),
        Command::Serve(args) => commands::serve(args),
    }
}
