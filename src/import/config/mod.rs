//! `chaoslab import FORMAT FILES... --onto GRAPH -o OUT` (SPEC section
//! 18): the retry behaviour a mesh's configuration sets, written onto a
//! call graph as a `policy:` on every call it governs.
//!
//! Each format's reader turns its files into [`Read`]: rules in the lab's
//! policy words, each with the `file:line` that set it, and notes on what
//! it could not map. [`onto`] matches the rules' hosts to the graph's
//! services and writes the topology, checked before it is written.

mod docs;
mod envoy;
mod gateway;
mod grpc;
mod haproxy;
mod istio;
mod linkerd;
mod nginx;
mod onto;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde_yaml::{Mapping, Value};

use crate::error::RunError;

pub use onto::onto;

/// The configurations `chaoslab import` reads onto a graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigFormat {
    /// VirtualServices and DestinationRules.
    Istio,
    /// An Envoy admin `/config_dump`.
    Envoy,
    /// Linkerd's `retry.linkerd.io/*` annotations and ServiceProfiles.
    Linkerd,
    /// Gateway API HTTPRoutes and BackendTrafficPolicies.
    GatewayApi,
    /// A gRPC service config (JSON).
    Grpc,
    /// nginx.conf.
    Nginx,
    /// haproxy.cfg.
    Haproxy,
}

impl ConfigFormat {
    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ConfigFormat::Istio => "istio",
            ConfigFormat::Envoy => "envoy",
            ConfigFormat::Linkerd => "linkerd",
            ConfigFormat::GatewayApi => "gateway-api",
            ConfigFormat::Grpc => "grpc",
            ConfigFormat::Nginx => "nginx",
            ConfigFormat::Haproxy => "haproxy",
        }
    }
}

/// Where a setting was read: a file and a 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Source {
    /// The file, as given on the command line.
    pub file: String,
    /// Its line, from 1.
    pub line: usize,
}

impl Source {
    /// `file` at `line`.
    pub fn new(file: &str, line: usize) -> Source {
        Source {
            file: file.to_string(),
            line: line.max(1),
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// A retry policy the configuration sets on the calls into a host.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// The host the calls are addressed to, as the configuration writes
    /// it (a short name, `name.namespace`, an FQDN, a gRPC service).
    pub host: String,
    /// Only the calls from this service (`None`: from every caller).
    pub from: Option<String>,
    /// The policy, in the lab's keys (a call's `policy:` map).
    pub policy: Mapping,
    /// The line that set its retries.
    pub source: Source,
    /// What set it, for the written comment: `VirtualService reviews,
    /// http[0].retries`.
    pub what: String,
}

/// A setting on a service itself (its sidecar proxy).
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceRule {
    /// The service's host, as for [`Rule::host`].
    pub host: String,
    /// Keys of the service's map (`sidecar:`).
    pub set: Mapping,
    /// Where it was read.
    pub source: Source,
    /// What set it.
    pub what: String,
}

/// What could not be mapped, or a route the lab's requests never take.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Note {
    /// Where.
    pub source: Source,
    /// What, and why.
    pub text: String,
}

/// What a format's reader found in its files.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Read {
    /// Policies on calls, in the order the tool applies them (a later rule
    /// for the same calls wins key by key).
    pub rules: Vec<Rule>,
    /// Settings on services.
    pub services: Vec<ServiceRule>,
    /// The policy on every call no rule names (Istio's implicit retries),
    /// and where it comes from.
    pub default: Option<(Mapping, String)>,
    /// What was not mapped, or not taken.
    pub notes: Vec<Note>,
    /// Documents of kinds the format does not read, counted by kind.
    pub skipped: BTreeMap<String, usize>,
}

impl Read {
    /// `policy` on the calls into each of `hosts` from every caller,
    /// set at `source` by `what`.
    pub fn rule_for_each(
        &mut self,
        hosts: impl IntoIterator<Item = String>,
        policy: &Mapping,
        source: &Source,
        what: &str,
    ) {
        self.rules.extend(hosts.into_iter().map(|host| Rule {
            host,
            from: None,
            policy: policy.clone(),
            source: source.clone(),
            what: what.to_string(),
        }));
    }
}

/// A file's text and the name it was given by.
#[derive(Debug, Clone)]
pub struct File {
    /// The path as given.
    pub name: String,
    /// Its text.
    pub text: String,
}

/// Input the format cannot read: where, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadInput {
    /// Where.
    pub at: Source,
    /// What is wrong.
    pub why: String,
}

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}: {}", self.at, self.why)
    }
}

impl BadInput {
    /// A mistake at `file:line`.
    pub fn at(file: &str, line: usize, why: impl Into<String>) -> BadInput {
        BadInput {
            at: Source::new(file, line),
            why: why.into(),
        }
    }
}

/// Reads `files` as `format`.
pub fn read(format: ConfigFormat, files: &[File]) -> Result<Read, BadInput> {
    let mut out = Read::default();
    for f in files {
        match format {
            ConfigFormat::Istio => istio::read(f, &mut out)?,
            ConfigFormat::Envoy => envoy::read(f, &mut out)?,
            ConfigFormat::Linkerd => linkerd::read(f, &mut out)?,
            ConfigFormat::GatewayApi => gateway::read(f, &mut out)?,
            ConfigFormat::Grpc => grpc::read(f, &mut out)?,
            ConfigFormat::Nginx => nginx::read(f, &mut out)?,
            ConfigFormat::Haproxy => haproxy::read(f, &mut out)?,
        }
    }
    if format == ConfigFormat::Linkerd {
        linkerd::profiles_win(&mut out);
    }
    Ok(out)
}

/// What `chaoslab import FORMAT FILES... --onto GRAPH` is asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The configuration's format.
    pub format: ConfigFormat,
    /// Its files.
    pub files: Vec<PathBuf>,
    /// The topology to write the policies onto.
    pub onto: PathBuf,
    /// Where to write (`None`: standard output).
    pub output: Option<PathBuf>,
}

/// Runs `chaoslab import FORMAT FILES... --onto GRAPH`.
pub fn run(args: &Options) -> Result<(), RunError> {
    let files = args
        .files
        .iter()
        .map(|p| {
            let name = p.display().to_string();
            std::fs::read_to_string(p)
                .map(|text| File {
                    name: name.clone(),
                    text,
                })
                .map_err(|e| {
                    RunError::Usage(format!(
                        "{} {name}: cannot read it: {e}",
                        args.format.name()
                    ))
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let graph_name = args.onto.display().to_string();
    let graph = std::fs::read_to_string(&args.onto)
        .map_err(|e| RunError::Usage(format!("--onto {graph_name}: cannot read it: {e}")))?;
    let read = read(args.format, &files)
        .map_err(|e| RunError::Usage(format!("{} {e}", args.format.name())))?;
    let written = onto(args.format, &read, &graph, &graph_name)?;
    for line in &written.notes {
        eprintln!("note: {line}");
    }
    crate::error::write_or_print(args.output.as_deref(), &written.yaml, "topology")
}

/// A policy map from `(key, value)` pairs.
pub(crate) fn policy(pairs: impl IntoIterator<Item = (&'static str, Value)>) -> Mapping {
    pairs
        .into_iter()
        .map(|(k, v)| (Value::String(k.into()), v))
        .collect()
}

/// A YAML string value.
pub(crate) fn s(v: impl Into<String>) -> Value {
    Value::String(v.into())
}

/// A YAML number value.
pub(crate) fn n(v: impl Into<f64>) -> Value {
    let v: f64 = v.into();
    if v.fract() == 0.0 && v.abs() < 1e15 {
        Value::Number((v as i64).into())
    } else {
        Value::Number(v.into())
    }
}

#[cfg(test)]
mod tests;
