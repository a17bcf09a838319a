//! The flag groups several front ends share, as plain data: the policy
//! and faults to start in ([`Start`]), the load ([`Load`]), where the
//! endpoints listen and who may call them ([`Endpoints`]), where the
//! other services run ([`Peers`]), what `compare` and `sweep` share
//! ([`Contenders`], [`Clock`], [`Population`]); and a run's whole options
//! ([`Run`]), which the headless runner, the dashboard and the tour
//! prepare their sessions from. The command line's clap groups (`Start`,
//! `Load`, `EndpointArgs`, `PeerArgs`, `Contenders`, ...) are turned into
//! these in `cli/options.rs` alone.
//!
//! They hold the flags' values as given: what needs the topology (a
//! service's name, a `--fail` spec) is read against it by the methods
//! here, which the front ends call once they have loaded it, in the
//! order they always have, so the first mistake of a command line is the
//! one reported.

pub mod run;

use std::path::PathBuf;
use std::time::Duration;

use crate::cli::{fail_actions, parse_policy, UsageError};
use crate::lab::Action;
use crate::session::access::TOKEN_VAR;
use crate::session::{Access, Token};
use crate::topology::{PolicyFields, Topology};

pub use run::{Pictures, Prepared, Run};

/// The policy and the faults a run (or the model) starts in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Start {
    /// A policy preset's name (`--policy`), read when the actions are.
    pub policy: Option<String>,
    /// The services to fail: `D` (every request) or `D=0.3` (`--fail`).
    pub fail: Vec<String>,
}

impl Start {
    /// The actions these ask for at time zero in topology `t`.
    pub fn actions(&self, t: &Topology) -> Result<Vec<Action>, UsageError> {
        let mut actions = vec![];
        if let Some(p) = &self.policy {
            actions.push(Action::Policy(PolicyFields {
                preset: Some(parse_policy(p)?),
                ..Default::default()
            }));
        }
        actions.extend(fail_actions(t, &self.fail)?);
        Ok(actions)
    }
}

/// The load into the entry.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Load {
    /// Root requests per second into the entry, instead of `load.rps`.
    pub rps: Option<f64>,
    /// The seed of every random choice; `None` is 1.
    pub seed: Option<u64>,
}

impl Load {
    /// The rate action `rps` asks for, if any.
    pub fn actions(&self) -> Result<Vec<Action>, UsageError> {
        match self.rps {
            Some(r) if !r.is_finite() || r <= 0.0 => Err(UsageError(format!(
                "--rps {r}: the rate must be a positive number"
            ))),
            Some(r) => Ok(vec![Action::SetRps(r)]),
            None => Ok(vec![]),
        }
    }
}

/// Where the Prometheus metrics and the control API listen, and who may
/// call them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Endpoints {
    /// The metrics' address (`9100`, `:0`, `HOST:PORT`), if served.
    pub metrics: Option<String>,
    /// The control API's address (as `metrics`), if served.
    pub control: Option<String>,
    /// Names the endpoints answer to besides their address and
    /// `localhost`.
    pub control_hosts: Vec<String>,
    /// A file holding the token every control-API request must carry;
    /// without it, `CHAOSLAB_CONTROL_TOKEN`'s.
    pub control_token_file: Option<PathBuf>,
    /// Serve the control API off loopback with no token.
    pub control_insecure: bool,
}

impl Endpoints {
    /// Who may call the endpoints: the names of `control_hosts`, and the
    /// token of `control_token_file`, else of `CHAOSLAB_CONTROL_TOKEN`.
    pub fn access(&self) -> Result<Access, UsageError> {
        let mut hosts = vec![];
        for h in &self.control_hosts {
            let name = h.trim().trim_end_matches('.').to_ascii_lowercase();
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
            {
                return Err(UsageError(format!(
                    "--control-host {h}: not a host name (letters, digits, `-` and `.`, as `lab.example`)"
                )));
            }
            hosts.push(name);
        }
        let token = match &self.control_token_file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    UsageError(format!(
                        "--control-token-file {}: cannot read it: {e}",
                        path.display()
                    ))
                })?;
                Some(Token::new(&text).map_err(|e| {
                    UsageError(format!("--control-token-file {}: {e}", path.display()))
                })?)
            }
            None => match std::env::var(TOKEN_VAR) {
                Ok(v) if !v.is_empty() => {
                    Some(Token::new(&v).map_err(|e| UsageError(format!("{TOKEN_VAR}: {e}")))?)
                }
                _ => None,
            },
        };
        Ok(Access {
            hosts,
            token,
            insecure: self.control_insecure,
        })
    }
}

/// Where the services a node calls (or the entry a load drives) run:
/// `--peer NAME=URL` for one service, `--peers TEMPLATE` for the rest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Peers {
    /// `NAME=URL`, one a service.
    pub peer: Vec<String>,
    /// A URL with `{name}` for every service without a `peer`.
    pub peers: Option<String>,
}

impl Peers {
    /// Reads them against `t`: each `peer` names a service of the
    /// topology, once, with a plain `http://` URL; the template holds
    /// `{name}`.
    pub fn read(&self, t: &Topology) -> Result<crate::cli::Peers, UsageError> {
        crate::cli::read_peers(&self.peer, self.peers.as_deref(), t)
    }
}

/// How long a run lasts, and the leading part its report leaves out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Clock {
    /// How long to run after the warm-up; `None`: the scenario's, else
    /// the front end's default.
    pub duration: Option<Duration>,
    /// Leading time not counted in the report; `None`: the scenario's,
    /// else the front end's default.
    pub warmup: Option<Duration>,
}

/// What `+closed` and `+backoff` mean in a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Population {
    /// `+closed`: this many clients, shared among the roots by their
    /// rates.
    pub clients: u32,
    /// `+backoff`: the base delay before a retry.
    pub backoff: Duration,
}

impl Default for Population {
    fn default() -> Self {
        Population {
            clients: 50,
            backoff: Duration::from_millis(100),
        }
    }
}

/// What `compare` and `sweep` share: the policies that run in turn on
/// the same fleet, and what every one of their runs keeps the same.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Contenders {
    /// The services to fail in every run: `D` or `D=0.3`.
    pub fail: Vec<String>,
    /// The policies, comma-separated, or `all`, read when they run.
    pub policies: String,
    /// What `+closed` and `+backoff` mean.
    pub population: Population,
    /// How long each run lasts and how much of it to leave out.
    pub clock: Clock,
    /// The rate and the seed.
    pub load: Load,
}
