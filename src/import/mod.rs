//! `chaoslab import FORMAT SOURCE [-o FILE]` (SPEC section 12): the call
//! graph a tracing system or a mesh exports, written as a topology the lab
//! runs. SOURCE is a file, `-`, or the `http://` URL of the running tool.
//! The written file is checked as `chaoslab check` would before anything
//! is written; bad input is exit 2, naming the place, and writes nothing.

pub mod formats;
pub mod graph;
mod json;
pub mod trace;
pub mod write;

use std::io::Read as _;
use std::time::Duration;

use crate::cli::{ImportArgs, ImportFormat};
use crate::error::RunError;
use crate::topology::Topology;

/// How long the tool at a URL may take to answer.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The most a source may hold.
const MAX_SOURCE: usize = 64 << 20;

/// Runs `chaoslab import`.
pub fn run(args: ImportArgs) -> Result<(), RunError> {
    let yaml = import(&args)?;
    crate::error::write_or_print(args.output.as_deref(), &yaml, "topology")
}

/// The topology text `args` asks for, checked.
pub fn import(args: &ImportArgs) -> Result<String, RunError> {
    let virtual_client = virtual_client(args)?;
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
        let hint = if args.format == ImportFormat::Servicegraph {
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

/// The connector's name for the callers outside the mesh: `user`, or
/// `--virtual-client`, which only the servicegraph format reads.
fn virtual_client(args: &ImportArgs) -> Result<&str, RunError> {
    match args.virtual_client.as_deref() {
        None => Ok("user"),
        Some(_) if args.format != ImportFormat::Servicegraph => Err(RunError::Usage(format!(
            "--virtual-client: only the servicegraph format names the callers outside the mesh (not {})",
            args.format.name()
        ))),
        Some("") => Err(RunError::Usage("--virtual-client: give a name".into())),
        Some(name) => Ok(name),
    }
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
fn read_source(format: ImportFormat, source: &str) -> Result<String, RunError> {
    let bad = |why: String| RunError::Usage(format!("{} {source}: {why}", format.name()));
    if source.starts_with("https://") {
        return Err(bad("only plain http:// URLs are fetched".into()));
    }
    if let Some(rest) = source.strip_prefix("http://") {
        let url = match rest.split_once('/') {
            Some((_, path)) if !path.is_empty() => source.to_string(),
            _ if format == ImportFormat::JaegerTrace => {
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
fn default_path(format: ImportFormat) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    match format {
        ImportFormat::Jaeger => format!("/api/dependencies?endTs={now}&lookback=3600000"),
        ImportFormat::Zipkin => format!("/api/v2/dependencies?endTs={now}&lookback=3600000"),
        // A range selector: Prometheus answers a matrix of samples, whose
        // rates are the rates the mesh saw.
        ImportFormat::Servicegraph => format!("/api/v1/query?query={SERVICEGRAPH_QUERY}"),
        ImportFormat::Kiali => "/kiali/api/namespaces/graph?graphType=service".into(),
        // `/api/traces` needs a `service=`: no default would do.
        ImportFormat::JaegerTrace => String::new(),
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
