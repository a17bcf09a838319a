//! The `chaoslab` binary: parse, run, map errors to exit codes.

use std::process::ExitCode;

use clap::Parser;

/// A thread-caching allocator: the fleet allocates on every hop from two
/// runtime threads, and glibc's arena locks showed up as futex waits.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
