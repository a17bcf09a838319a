//! The closed-loop side of the command line: what `compare`'s `+closed`
//! and `+backoff` mean, and where a closed loop cannot run.

use std::time::Duration;

use super::UsageError;
use crate::topology::Topology;

/// What `+closed` and `+backoff` mean in a comparison (Marc Brooker's
/// experiment: backoff sheds load from a closed loop of clients, not from
/// an open one).
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct Population {
    /// `+closed`: this many clients, shared among the roots by their
    /// rates; each thinks clients ÷ rate between an answer and its next
    /// request, so they offer the rate while answers are instant.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::topology::MAX_CLIENTS)))]
    pub clients: u32,
    /// `+backoff`: the base delay before a retry (exponential, full
    /// jitter, as the policy's `backoff:`).
    #[arg(long, default_value = "100ms", value_parser = crate::cli::parse_duration)]
    pub backoff: Duration,
}

/// Refuses a closed-loop root where the services run as nodes (`run
/// --processes`, `--remote`, `compare --processes`): the nodes count each
/// service's requests, and the nominal requests a closed loop's
/// amplification is measured against are counted where its clients run.
pub fn closed_loop_in_one_process(t: &Topology) -> Result<(), UsageError> {
    match t.load.roots.iter().find(|r| r.closed.is_some()) {
        Some(r) => Err(UsageError(format!(
            "root `{}` is a closed loop (load.clients), which runs in one process only: the nodes count each service's requests, and the requests its clients would offer, which its amplification is measured against, are counted where they run; drop --processes/--remote, or give it `rps:`",
            t.services[r.entry].name
        ))),
        None => Ok(()),
    }
}
