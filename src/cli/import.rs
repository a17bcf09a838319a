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
    /// Istio VirtualServices and DestinationRules, onto a graph (`--onto`).
    Istio,
    /// An Envoy admin `/config_dump`, onto a graph.
    Envoy,
    /// Linkerd's `retry.linkerd.io/*` annotations and ServiceProfiles,
    /// onto a graph.
    Linkerd,
    /// Gateway API HTTPRoutes and BackendTrafficPolicies, onto a graph.
    #[value(name = "gateway-api")]
    GatewayApi,
    /// A gRPC service config (JSON), onto a graph.
    Grpc,
    /// nginx.conf, onto a graph: its upstreams become nginx sidecars.
    Nginx,
    /// haproxy.cfg, onto a graph: its backends become HAProxy sidecars.
    Haproxy,
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
    /// For a mesh's configuration (istio, envoy, linkerd, gateway-api,
    /// grpc, nginx, haproxy): its files, one or more.
    #[arg(required = true, value_name = "SOURCE")]
    pub sources: Vec<String>,
    /// The topology a configuration's retry policies are written onto
    /// (e.g. one `chaoslab import kiali` wrote); needed by, and only by,
    /// istio, envoy, linkerd, gateway-api, grpc, nginx and haproxy.
    #[arg(long, value_name = "GRAPH")]
    pub onto: Option<PathBuf>,
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
