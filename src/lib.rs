//! chaoslab: a terminal lab for retry storms.
//!
//! One process starts a fleet of real axum services on loopback, wired as a
//! YAML topology says, drives open-loop load into the entry, and measures
//! what every service sees while faults and retry policies change. Every
//! service runs the error-ownership middleware of [`middleware`], whose
//! decisions live, free of I/O, in [`error_ownership`]; what needs no
//! runtime (the contract, the model, reports) is [`chaoslab_model`]'s.

pub mod cli;
pub mod compare;
pub mod dashboard;
pub mod fuzzing;
pub mod generate;
pub mod headless;
pub mod import;
pub mod inspect;
pub mod k8s;
pub mod launch;
pub mod lint;
pub mod node;
pub mod options;
pub mod serve;
pub mod tap;
pub mod tour;

pub use chaoslab_fleet::{endpoints, fleet, load, metrics, middleware, observe, session, signals};
pub use chaoslab_model::{docs, error, format, lab, report, scenario, topology, yaml};
pub use chaoslab_tui as tui;
pub use chaoslab_tui::theme;

use cli::{Command, Opts};

pub use error::{RunError, EXIT_BAD_INPUT, EXIT_ENVIRONMENT, EXIT_EXPECTATION};

/// Runs one command line: each command is a front end over a session
/// (`run`, `compare`, `serve`, `node`, `load`, `tap`) or starts nothing
/// (`check`, `model`, `k8s`, `import`, `generate`). The command's flags
/// become its front end's plain options in [`cli`] (`cli/options.rs`),
/// the one module that knows clap.
pub fn run(opts: Opts) -> Result<(), RunError> {
    match opts.into_command() {
        Command::Check(args) => inspect::check(args.into()),
        Command::Lint(args) => lint::run(&args.into()),
        Command::Model(args) => inspect::model(args.into()),
        Command::Run(args) if args.headless => {
            headless::run(args.options().map_err(RunError::usage)?)
        }
        Command::Run(args) => dashboard::run(args.options().map_err(RunError::usage)?),
        Command::Compare(args) => compare::run(args.into()),
        Command::Sweep(args) => compare::sweep::run(args.into()),
        Command::Serve(args) => serve::run(args.into()),
        Command::Node(args) => node::serve(args.into()),
        Command::Load(args) => node::load(args.into()),
        Command::K8s(args) => k8s::run(args.into()),
        Command::Import(args) => match args.options().map_err(RunError::usage)? {
            cli::ImportJob::Graph(o) => import::run(o),
            cli::ImportJob::Config(o) => import::config::run(&o),
        },
        Command::Generate(args) => generate::run(args.into()),
        Command::Tap(args) => tap::run(args.into()),
        Command::Tour(args) => tour::run(args.into()),
    }
}
