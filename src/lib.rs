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
pub mod error;
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

use cli::{Command, Opts};

pub use error::{RunError, EXIT_BAD_INPUT, EXIT_ENVIRONMENT, EXIT_EXPECTATION};

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
