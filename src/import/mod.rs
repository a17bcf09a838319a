//! `chaoslab import FORMAT SOURCE [-o FILE]` (SPEC section 12): the call
//! graph a tracing system or a mesh exports, written as a topology the lab
//! runs. SOURCE is a file, `-`, or the `http://` URL of the running tool.
//! The written file is checked as `chaoslab check` would before anything
//! is written; bad input is exit 2, naming the place, and writes nothing.

pub mod config;
pub mod formats;
pub mod graph;
mod json;
pub mod trace;
pub mod write;

use std::io::Read as _;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::RunError;
use crate::topology::Topology;

/// How long the tool at a URL may take to answer.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The most a source may hold.
const MAX_SOURCE: usize = 64 << 20;

/// The exports `chaoslab import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
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
    /// Jaeger's trace JSON (`/api/traces`, or a trace the UI downloads).
    JaegerTrace,
}

impl Format {
    /// Every format, in the command line's order.
    pub const ALL: [Format; 5] = [
        Format::Jaeger,
        Format::Zipkin,
        Format::Servicegraph,
        Format::Kiali,
        Format::JaegerTrace,
    ];

    /// Its name on the command line, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Format::Jaeger => "jaeger",
            Format::Zipkin => "zipkin",
            Format::Servicegraph => "servicegraph",
            Format::Kiali => "kiali",
            Format::JaegerTrace => "jaeger-trace",
        }
    }
}

/// What `chaoslab import` is asked to read and write.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// What `source` holds.
    pub format: Format,
    /// A file, `-` for standard input, or the `http://` URL of the
    /// running tool (its API path, or the tool's address alone).
    pub source: String,
    /// Where to write the topology; `None` is standard output.
    pub output: Option<PathBuf>,
    /// The topology's `name:`; `None` takes the source's file name, or
    /// `imported`.
    pub name: Option<String>,
    /// Root requests per second over every root, shared as observed;
    /// `None` takes the observed rates where the source gives them, else
    /// 100.
    pub rps: Option<f64>,
    /// Write the observed error ratios as live faults (else commented).
    pub with_faults: bool,
    /// The servicegraph connector's name for callers outside the mesh,
    /// not empty; `None` is `user`. Only the servicegraph format reads
    /// it (the command line refuses it with any other).
    pub virtual_client: Option<String>,
}

/// Runs `chaoslab import`.
pub fn run(args: Options) -> Result<(), RunError> {
    let yaml = import(&args)?;
    crate::error::write_or_print(args.output.as_deref(), &yaml, "topology")
}

/// The topology text `args` asks for, checked.
pub fn import(args: &Options) -> Result<String, RunError> {
    let virtual_client = args.virtual_client.as_deref().unwrap_or("user");
    let text = read_source(args.format, &args.source)?;
    let mut g = formats::read(args.format, &text, virtual_client)
        .map_err(|e| RunError::Usage(format!("{} {}: {e}", args.format.name(), args.source)))?;
    if let Some(name) = args.virtual_client.as_deref() {
        if !g.nodes.iter().any(|n| n.service == name) && g.entered.iter().all(|&e| e == 0.0) {
            return Err(RunError::Usage(format!(
                "--virtual-client {name}: no sample of {} has the client {name:?}",
                args.source
            )));
        }
    }
    for w in &g.warnings {
        eprintln!("warning: {w}");
    }
    if g.links.is_empty() {
        return Err(RunError::Usage(format!(
            "{} {}: the graph has no calls between services: nothing to import",
            args.format.name(),
            args.source
        )));
    }
    let cuts = g.cut_cycles();
    let name = args
        .name
        .clone()
        .unwrap_or_else(|| default_name(&args.source));
    let written = write::Written {
        name: &name,
        source: &format!("{} {}", args.format.name(), args.source),
        rps: args.rps,
        with_faults: args.with_faults,
    };
    let yaml = write::topology(&g, &cuts, &written).ok_or_else(|| {
        let hint = if args.format == Format::Servicegraph {
            format!(
                " (requests from outside are the calls of the client `{virtual_client}`: give --virtual-client NAME if the connector names them otherwise)"
            )
        } else {
            String::new()
        };
        RunError::Usage(format!(
            "{} {}: no root: every service is called by another and no request enters from outside{hint}",
            args.format.name(),
            args.source
        ))
    })?;
    // What is written must be a topology the lab runs.
    Topology::from_yaml(&yaml, "the imported topology")?;
    Ok(yaml)
}

/// `name:` from the source: a file's stem, else `imported`.
fn default_name(source: &str) -> String {
    if source == "-" || source.starts_with("http://") {
        return "imported".into();
    }
    std::path::Path::new(source)
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| !s.is_empty())
        .unwrap_or("imported")
        .to_string()
}

/// The text of SOURCE: a file, standard input, or what the tool at a URL
/// answers (its API's default path when the URL gives none).
fn read_source(format: Format, source: &str) -> Result<String, RunError> {
    let bad = |why: String| RunError::Usage(format!("{} {source}: {why}", format.name()));
    if source.starts_with("https://") {
        return Err(bad("only plain http:// URLs are fetched".into()));
    }
    if let Some(rest) = source.strip_prefix("http://") {
        let url = match rest.split_once('/') {
            Some((_, path)) if !path.is_empty() => source.to_string(),
            _ if format == Format::JaegerTrace => {
                return Err(bad(format!(
                    "give Jaeger's trace search with the service to trace, e.g. http://{}/api/traces?service=frontend&limit=100&lookback=1h",
                    rest.trim_end_matches('/')
                )));
            }
            _ => format!(
                "http://{}{}",
                rest.trim_end_matches('/'),
                default_path(format)
            ),
        };
        return fetch(&url).map_err(bad);
    }
    let mut text = String::new();
    let read = if source == "-" {
        std::io::stdin()
            .take(MAX_SOURCE as u64 + 1)
            .read_to_string(&mut text)
    } else {
        std::fs::File::open(source)
            .and_then(|f| f.take(MAX_SOURCE as u64 + 1).read_to_string(&mut text))
    };
    read.map_err(|e| bad(format!("cannot read it: {e}")))?;
    if text.len() > MAX_SOURCE {
        return Err(bad(format!("more than {} MiB", MAX_SOURCE >> 20)));
    }
    Ok(text)
}

/// The API path each tool answers its graph on, for a URL without one.
fn default_path(format: Format) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    match format {
        Format::Jaeger => format!("/api/dependencies?endTs={now}&lookback=3600000"),
        Format::Zipkin => format!("/api/v2/dependencies?endTs={now}&lookback=3600000"),
        // A range selector: Prometheus answers a matrix of samples, whose
        // rates are the rates the mesh saw.
        Format::Servicegraph => format!("/api/v1/query?query={SERVICEGRAPH_QUERY}"),
        Format::Kiali => "/kiali/api/namespaces/graph?graphType=service".into(),
        // `/api/traces` needs a `service=`: no default would do.
        Format::JaegerTrace => String::new(),
    }
}

/// `{__name__=~"traces_service_graph_request_(failed_)?total"}[1m]`,
/// URL-encoded.
pub const SERVICEGRAPH_QUERY: &str =
    "%7B__name__%3D~%22traces_service_graph_request_(failed_)%3Ftotal%22%7D%5B1m%5D";

/// GETs `url`, within [`FETCH_TIMEOUT`].
fn fetch(url: &str) -> Result<String, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the HTTP client failed: {e}"))?;
    rt.block_on(async {
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(FETCH_TIMEOUT)
            .build()
            .map_err(|e| e.to_string())?;
        let r = client
            .get(url)
            .send()
            .await
            .map_err(|e| format!("GET {url} failed: {}", crate::format::with_causes(&e)))?;
        let status = r.status();
        let body = r
            .bytes()
            .await
            .map_err(|e| format!("reading the answer of GET {url} failed: {e}"))?;
        if !status.is_success() {
            return Err(format!("GET {url} answered HTTP {status}"));
        }
        if body.len() > MAX_SOURCE {
            return Err(format!(
                "GET {url} answered more than {} MiB",
                MAX_SOURCE >> 20
            ));
        }
        String::from_utf8(body.to_vec())
            .map_err(|_| format!("GET {url} answered bytes that are not UTF-8"))
    })
}
