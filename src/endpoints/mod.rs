//! The lab's HTTP endpoints for other tools: `--metrics` (Prometheus) and
//! `--control` (an API over the actions). Each is one more front end over
//! the session, beside the dashboard and the headless runner: it reads
//! what the session publishes and sends actions, and starts nothing of
//! its own but its listener.

pub mod control;
pub mod listen;
pub mod metrics;

use std::net::SocketAddr;

use crate::error::RunError;
use crate::lab::expect::Expectation;
use crate::session::Session;

/// The addresses the flags name, read before anything starts so a bad
/// one is refused before the fleet runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Endpoints {
    metrics: Option<SocketAddr>,
    control: Option<SocketAddr>,
}

impl Endpoints {
    /// Reads `--metrics` and `--control`.
    pub fn parse(
        metrics: &Option<String>,
        control: &Option<String>,
    ) -> Result<Endpoints, RunError> {
        let read = |flag: &str, a: &Option<String>| {
            a.as_deref()
                .map(|a| listen::parse_addr(flag, a))
                .transpose()
        };
        Ok(Endpoints {
            metrics: read("--metrics", metrics)?,
            control: read("--control", control)?,
        })
    }

    /// Starts the endpoints asked for on `session`; returns a line for
    /// each saying where it listens (`metrics: http://127.0.0.1:9100/metrics`).
    pub fn start(
        &self,
        session: &Session,
        expectations: Vec<Expectation>,
    ) -> Result<Vec<String>, RunError> {
        let mut lines = vec![];
        if let Some(addr) = self.metrics {
            let bound = metrics::serve(session, addr)?;
            lines.push(format!("metrics: http://{bound}/metrics"));
        }
        if let Some(addr) = self.control {
            let bound = control::serve(session, addr, expectations)?;
            lines.push(format!(
                "control: http://{bound}/ (GET /state, POST /actions, GET /report)"
            ));
        }
        Ok(lines)
    }
}
