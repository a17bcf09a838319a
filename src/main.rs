//! The `chaoslab` binary: parse, run, map errors to exit codes.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let opts = match chaoslab::cli::Opts::try_parse() {
        Ok(o) => o,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    ExitCode::SUCCESS
                }
                _ => ExitCode::from(chaoslab::EXIT_BAD_INPUT),
            };
        }
    };
    match chaoslab::run(opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chaoslab: {e}");
            e.exit_code()
        }
    }
}
