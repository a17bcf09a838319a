//! The lab's HTTP endpoints for other tools: `--metrics` (Prometheus) and
//! `--control` (an API over the actions). Each is one more front end over
//! the session, beside the dashboard and the headless runner: it reads
//! what the session publishes and sends actions, and starts nothing of
//! its own but its listener.

pub mod control;
pub mod guard;
pub mod listen;
pub mod metrics;

use std::net::SocketAddr;

use crate::error::RunError;
use crate::lab::expect::Expectation;
use crate::session::access::TOKEN_VAR;
use crate::session::{Access, Session};

/// The addresses the flags name, read before anything starts so a bad
/// one is refused before the fleet runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Endpoints {
    metrics: Option<SocketAddr>,
    control: Option<SocketAddr>,
}

impl Endpoints {
    /// Reads `--metrics` and `--control`. A control API off loopback
    /// with no token in `access` is refused here, before anything starts,
    /// unless `--control-insecure` asks for it (then it says so).
    pub fn parse(
        metrics: &Option<String>,
        control: &Option<String>,
        access: &Access,
    ) -> Result<Endpoints, RunError> {
        let read = |flag: &str, a: &Option<String>| {
            a.as_deref()
                .map(|a| listen::parse_addr(flag, a))
                .transpose()
        };
        let control = read("--control", control)?;
        if let Some(addr) = control.filter(|a| !a.ip().is_loopback() && access.token.is_none()) {
            if !access.insecure {
                return Err(RunError::Usage(format!(
                    "--control {addr}: off loopback anyone who reaches this address could drive the lab; give the API a token: \
                     `head -c 32 /dev/urandom | base64 > control.token` and --control-token-file control.token \
                     (or set {TOKEN_VAR}), or serve it open with --control-insecure"
                )));
            }
            eprintln!(
                "chaoslab: WARNING: --control {addr} with --control-insecure: anyone who can reach this address can inject faults and switch policies"
            );
        }
        Ok(Endpoints {
            metrics: read("--metrics", metrics)?,
            control,
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
