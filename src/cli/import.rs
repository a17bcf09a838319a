//! `chaoslab import`: its arguments (SPEC section 12).

use std::path::PathBuf;

use clap::Args;

/// The formats `chaoslab import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ImportFormat {
    /// Jaeger's `/api/dependencies` (`{"data": [...]}`) or v2's
    /// `/api/v3/dependencies` (`{"dependencies": [...]}`).
    Jaeger,
    /// Zipkin's `/api/v2/dependencies` (a list of links).
    Zipkin,
    /// The OpenTelemetry Collector servicegraph connector's metrics, as
    /// Prometheus text or a Prometheus HTTP API query result.
    Servicegraph,
    /// Kiali's graph JSON (`elements.nodes` and `elements.edges`).
    Kiali,
    /// Jaeger's trace JSON (`/api/traces`, or a trace the UI downloads):
    /// endpoints, calls per request and parallel calls from the spans.
    JaegerTrace,
}

impl ImportFormat {
    /// Its name on the command line.
    pub fn name(self) -> String {
        super::value_name(&self)
    }
}

/// `chaoslab import`.
#[derive(Debug, Args, Clone)]
pub struct ImportArgs {
    /// What SOURCE holds.
    #[arg(value_enum)]
    pub format: ImportFormat,
    /// A file, `-` for standard input, or the `http://` URL of the
    /// running tool (its API path, or the tool's address alone for
    /// jaeger, zipkin and a Prometheus holding servicegraph metrics).
    pub source: String,
    /// Write the topology here (default: standard output).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The topology's `name:` (default: the source's file name, or
    /// `imported`).
    #[arg(long)]
    pub name: Option<String>,
    /// Root requests per second over every root, shared as observed
    /// (default: the observed rates where the source gives rates per
    /// second, Kiali and a Prometheus range; else 100).
    #[arg(long, value_parser = super::parse_rps)]
    pub rps: Option<f64>,
    /// Write the observed error ratios as live faults (else commented).
    #[arg(long)]
    pub with_faults: bool,
    /// servicegraph: the connector's name for callers outside the mesh,
    /// whose calls enter the roots (default `user`; a service of the mesh
    /// with that name is read as a service).
    #[arg(long, value_name = "NAME")]
    pub virtual_client: Option<String>,
}
