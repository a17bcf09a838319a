//! Real sidecars (SPEC section 17, `sidecar: { kind: nginx | haproxy }`):
//! a real nginx or HAProxy process per service that has one, on loopback,
//! carrying the service's calls; every retry on those edges is the
//! proxy's.
//!
//! Why real proxies: the retries people run are mostly not in their code
//! but in the proxy beside it, with its own rules (nginx tries each server
//! at most once and takes failing ones out; HAProxy retries the server
//! that failed unless told to redispatch). The lab's model of them is only
//! worth what a measurement against the real thing says.
//!
//! From a plain [`Plan`] (per service its proxy, per edge the callee's
//! servers and the edge's policy) [`Sidecars::start`] writes each proxy's
//! configuration into a directory of its own ([`nginx`], [`haproxy`]),
//! starts it in the foreground in a process group of its own, and waits
//! until each of its listeners answers as that proxy; the fleet then
//! points the edges at those listeners and makes one attempt per call on
//! them ([`client_policy`]). Stopping them on every exit path is
//! [`process`]'s. The callee counts the proxy's retries
//! ([`retries`]), as the lab's own client counts its own.

mod haproxy;
mod nginx;
mod process;
pub mod retries;

use std::ffi::OsStr;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

use crate::middleware::client::MAX_IN_FLIGHT_PER_EDGE;
use crate::topology::mesh::ProxyKind;
use crate::topology::EdgePolicy;
use error_ownership::conditions::RetryOn;
use error_ownership::policy::Lb;

pub use process::{kill_all, running};

/// Connections one edge holds at most through its proxy, each way: as
/// many as the edge keeps attempts in flight.
pub const MAX_CONNECTIONS_PER_EDGE: usize = MAX_IN_FLIGHT_PER_EDGE;

/// How long the proxies of a run may take to answer on every listener.
pub const READY_WITHIN: Duration = Duration::from_secs(10);

/// The path each listener answers itself on, as the proxy, when asked
/// with the run's token: how the lab knows the listener is its proxy's.
pub const READY_PATH: &str = "/chaoslab-sidecar-ready";

/// The environment variable that names nginx's program (else it is looked
/// for on `PATH`, then in `/usr/sbin`).
pub const NGINX_VAR: &str = "CHAOSLAB_NGINX";
/// The same for HAProxy.
pub const HAPROXY_VAR: &str = "CHAOSLAB_HAPROXY";

/// Where each proxy's binds are tried again after another process took
/// one of its ports first.
const BIND_TRIES: u32 = 3;

/// What to start: a proxy per service with a sidecar (this process's
/// services only).
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The proxies.
    pub proxies: Vec<ProxyPlan>,
}

/// One service's proxy.
#[derive(Debug, Clone)]
pub struct ProxyPlan {
    /// The service (by its name, endpoints sharing its sidecar).
    pub service: String,
    /// Which proxy.
    pub kind: ProxyKind,
    /// Its calls, each on a listener of its own.
    pub edges: Vec<EdgePlan>,
}

/// One outbound edge through a proxy.
#[derive(Debug, Clone)]
pub struct EdgePlan {
    /// The edge's id.
    pub edge: usize,
    /// `A -> B`, as messages and the configuration name it.
    pub name: String,
    /// The callee's replicas, `host:port` each.
    pub servers: Vec<String>,
    /// The edge's policy as the topology sets it (before the caller's
    /// client is told to make one attempt).
    pub policy: EdgePolicy,
    /// `retry_other_host`.
    pub other_host: bool,
    /// How the first attempt of each call is spread.
    pub lb: Lb,
    /// nginx's `max_fails`.
    pub max_fails: u32,
    /// nginx's `fail_timeout`.
    pub fail_timeout: Duration,
}

/// Why the sidecars could not start.
#[derive(Debug, thiserror::Error)]
pub enum SidecarError {
    /// The proxy's program is not on this machine.
    #[error("{} is not installed: apt-get install {}{}", kind.name(), kind.package(), named.as_ref().map(|(var, p)| format!(" ({var} names {}, which is not a program)", p.display())).unwrap_or_default())]
    NotInstalled {
        /// Which proxy.
        kind: ProxyKind,
        /// The environment variable that named a path that is no program.
        named: Option<(&'static str, PathBuf)>,
    },
    /// An edge's policy has a part its proxy cannot express.
    #[error("{edge}: {service}'s {} sidecar cannot express {why}, or remove the sidecar", kind.name())]
    Refused {
        /// The caller.
        service: String,
        /// `A -> B`.
        edge: String,
        /// Which proxy.
        kind: ProxyKind,
        /// What, and what to do instead.
        why: String,
    },
    /// Its directory or configuration could not be written.
    #[error("writing the {} sidecar of `{service}` into {}: {source}", kind.name(), dir.display())]
    Write {
        /// The service.
        service: String,
        /// Which proxy.
        kind: ProxyKind,
        /// Where.
        dir: PathBuf,
        /// Why not.
        #[source]
        source: std::io::Error,
    },
    /// No port on loopback for a listener.
    #[error("no free port on 127.0.0.1 for the {} sidecar of `{service}`: {source}", kind.name())]
    Port {
        /// The service.
        service: String,
        /// Which proxy.
        kind: ProxyKind,
        /// Why not.
        #[source]
        source: std::io::Error,
    },
    /// The proxy could not be started, or did not come up.
    #[error("the {} sidecar of `{service}` did not start ({status}): {log}", kind.name())]
    Start {
        /// The service.
        service: String,
        /// Which proxy.
        kind: ProxyKind,
        /// How it ended, or how long it was waited for.
        status: String,
        /// The end of what it wrote (its error log, its standard error).
        log: String,
    },
}

impl SidecarError {
    /// Whether the topology asked for what this machine or proxy cannot
    /// give (a proxy not installed, a policy the proxy cannot express):
    /// bad input, exit status 2.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            SidecarError::NotInstalled { .. } | SidecarError::Refused { .. }
        )
    }
}

/// How long the caller's one attempt through a proxy may take: every try
/// the proxy may make, with HAProxy's turn-around (up to a second) before
/// each retry of a refused connection, and a second of slack.
pub fn call_timeout(p: &EdgePolicy, kind: ProxyKind) -> Duration {
    let tries = p.attempts.max(1);
    let between = match kind {
        ProxyKind::Nginx => Duration::ZERO,
        ProxyKind::Haproxy => p.timeout.min(Duration::from_secs(1)),
    };
    p.timeout.saturating_mul(tries) + between.saturating_mul(tries - 1) + Duration::from_secs(1)
}

/// The policy the caller's own client runs on an edge through a `kind`
/// sidecar: one attempt (every retry is the proxy's), waiting as long as
/// the proxy's tries may take, with nothing that budgets or stops retries
/// (the proxy's configuration says what it cannot express).
pub fn client_policy(p: &EdgePolicy, kind: ProxyKind) -> EdgePolicy {
    EdgePolicy {
        attempts: 1,
        timeout: call_timeout(p, kind),
        budget: None,
        breaker: None,
        throttle: None,
        hedge: None,
        outlier: None,
        backoff: Duration::ZERO,
        signal: None,
        retry_on: RetryOn::ANY,
        ..*p
    }
}

/// Finds `name`'s program: the path `var` names when it is set, else on
/// `PATH`, else in the system's sbin folders (off an ordinary user's
/// `PATH` on Debian).
fn find_program(name: &str, var: Option<&'static str>) -> Result<PathBuf, Option<PathBuf>> {
    let runnable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if let Some(v) = var.and_then(std::env::var_os) {
        let p = PathBuf::from(v);
        return if runnable(&p) { Ok(p) } else { Err(Some(p)) };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/local/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| runnable(p))
        .ok_or(None)
}

/// The program of `kind`'s proxy.
pub fn program(kind: ProxyKind) -> Result<PathBuf, SidecarError> {
    let var = match kind {
        ProxyKind::Nginx => NGINX_VAR,
        ProxyKind::Haproxy => HAPROXY_VAR,
    };
    find_program(kind.program(), Some(var)).map_err(|named| SidecarError::NotInstalled {
        kind,
        named: named.map(|p| (var, p)),
    })
}

/// One proxy running: its process, and a listener per edge.
#[derive(Debug)]
struct Proxy {
    kind: ProxyKind,
    service: String,
    process: process::Running,
    /// Per edge of its plan: (edge id, port).
    ports: Vec<(usize, u16)>,
}

/// A running proxy as the lab reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    /// The service it carries the calls of.
    pub service: String,
    /// Which proxy.
    pub kind: ProxyKind,
    /// Its process id (and process group's).
    pub pid: u32,
    /// Its directory: configuration, logs.
    pub dir: PathBuf,
}

impl std::fmt::Display for Started {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "sidecar {} of {} pid {} (configuration and logs in {})",
            self.kind.name(),
            self.service,
            self.pid,
            self.dir.display()
        )
    }
}

/// The sidecars of a fleet, stopped when dropped.
#[derive(Debug, Default)]
pub struct Sidecars {
    proxies: Vec<Proxy>,
}

impl Sidecars {
    /// No sidecar.
    pub fn none() -> Sidecars {
        Sidecars::default()
    }

    /// Starts every proxy of `plan` and waits until each answers on every
    /// listener. Refused before anything starts when a proxy is not
    /// installed or an edge's policy has a part its proxy cannot express;
    /// a proxy that does not come up fails the start with what it wrote,
    /// and the ones already started are stopped.
    pub async fn start(plan: &Plan) -> Result<Sidecars, SidecarError> {
        let mut programs = Vec::with_capacity(plan.proxies.len());
        for p in &plan.proxies {
            let program = program(p.kind)?;
            // Written once to check it: the words do not depend on the
            // ports.
            let ports = vec![0; p.edges.len()];
            config(Path::new("/"), p, &ports)?;
            programs.push(program);
        }
        let mut sidecars = Sidecars::none();
        for (p, program) in plan.proxies.iter().zip(&programs) {
            sidecars.proxies.push(start_one(p, program).await?);
        }
        Ok(sidecars)
    }

    /// The URL (scheme, host and port) edge `edge`'s caller reaches its
    /// proxy's listener at, if the edge goes through one.
    pub fn url(&self, edge: usize) -> Option<String> {
        self.proxies
            .iter()
            .flat_map(|p| &p.ports)
            .find(|(e, _)| *e == edge)
            .map(|(_, port)| format!("http://127.0.0.1:{port}"))
    }

    /// The proxies running.
    pub fn started(&self) -> Vec<Started> {
        self.proxies
            .iter()
            .map(|p| Started {
                service: p.service.clone(),
                kind: p.kind,
                pid: p.process.pid(),
                dir: p.process.dir().to_path_buf(),
            })
            .collect()
    }

    /// Whether any runs.
    pub fn is_empty(&self) -> bool {
        self.proxies.is_empty()
    }

    /// Stops every proxy now.
    pub fn stop(&mut self) {
        self.proxies.clear();
    }
}

/// `plan`'s configuration in `dir`, its listeners on `ports`.
fn config(dir: &Path, plan: &ProxyPlan, ports: &[u16]) -> Result<String, SidecarError> {
    match plan.kind {
        ProxyKind::Nginx => nginx::config(dir, plan, ports),
        ProxyKind::Haproxy => haproxy::config(plan, ports),
    }
    .map(|c| with_ready(plan.kind, c, dir))
    .map_err(|r| SidecarError::Refused {
        service: plan.service.clone(),
        edge: r.edge,
        kind: plan.kind,
        why: r.why.explain(plan.kind),
    })
}

/// The token a proxy in `dir` answers its ready path with: its directory's
/// name, unique to it.
fn token(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `c` with every listener answering [`READY_PATH`] itself, with the
/// proxy's token: only that proxy answers so on that port.
fn with_ready(kind: ProxyKind, c: String, dir: &Path) -> String {
    let token = token(dir);
    match kind {
        ProxyKind::Nginx => c.replace(
            "    location / {\n",
            &format!(
                "    location = {READY_PATH} {{\n      add_header x-chaoslab-sidecar {token};\n      return 204;\n    }}\n    location / {{\n"
            ),
        ),
        ProxyKind::Haproxy => c.replace(
            "  retries ",
            &format!(
                "  http-request return status 204 hdr x-chaoslab-sidecar {token} if {{ path {READY_PATH} }}\n  retries "
            ),
        ),
    }
}

/// A directory of its own for `service`'s proxy, under the system's
/// temporary directory. The first also sweeps away the directories
/// sidecars of processes no longer running left behind (a chaoslab killed
/// outright removes none; the kernel killed its proxies).
fn new_dir(service: &str) -> std::io::Result<PathBuf> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(sweep_stale_dirs);
    let safe: String = service
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let dir = std::env::temp_dir().join(format!(
        "chaoslab-sidecar-{}-{}-{safe}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Removes `chaoslab-sidecar-PID-*` directories whose process `PID` is
/// gone (where `/proc` says which processes run).
fn sweep_stale_dirs() {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(rest) = name
            .to_str()
            .and_then(|n| n.strip_prefix("chaoslab-sidecar-"))
        else {
            continue;
        };
        let Some(pid) = rest.split('-').next().filter(|p| p.parse::<u32>().is_ok()) else {
            continue;
        };
        if !proc.join(pid).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Starts `plan`'s proxy; its ports taken first by another process, on
/// new ones, [`BIND_TRIES`] times.
async fn start_one(plan: &ProxyPlan, program: &Path) -> Result<Proxy, SidecarError> {
    let mut last = None;
    for _ in 0..BIND_TRIES {
        match try_start(plan, program).await {
            Ok(p) => return Ok(p),
            Err((e, taken)) if taken => last = Some(e),
            Err((e, _)) => return Err(e),
        }
    }
    Err(last.expect("at least one try"))
}

/// One try at starting `plan`'s proxy: the error, and whether it was a
/// port another process took.
async fn try_start(plan: &ProxyPlan, program: &Path) -> Result<Proxy, (SidecarError, bool)> {
    let (service, kind) = (plan.service.clone(), plan.kind);
    let write = |dir: &Path, source| SidecarError::Write {
        service: service.clone(),
        kind,
        dir: dir.to_path_buf(),
        source,
    };
    let dir = new_dir(&plan.service).map_err(|e| (write(Path::new("/tmp"), e), false))?;
    let held: Vec<TcpListener> = (0..plan.edges.len())
        .map(|_| crate::ports::free_port())
        .collect::<Result<_, _>>()
        .map_err(|source| {
            (
                SidecarError::Port {
                    service: service.clone(),
                    kind,
                    source,
                },
                false,
            )
        })?;
    let ports: Vec<u16> = held
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()).unwrap_or(0))
        .collect();
    let text = config(&dir, plan, &ports).map_err(|e| (e, false))?;
    let file = dir.join(match kind {
        ProxyKind::Nginx => "nginx.conf",
        ProxyKind::Haproxy => "haproxy.cfg",
    });
    std::fs::write(&file, text).map_err(|e| (write(&dir, e), false))?;
    let out = std::fs::File::create(dir.join("output.log")).map_err(|e| (write(&dir, e), false))?;
    let args: Vec<&OsStr> = match kind {
        ProxyKind::Nginx => vec![
            OsStr::new("-p"),
            dir.as_os_str(),
            OsStr::new("-c"),
            file.as_os_str(),
        ],
        ProxyKind::Haproxy => vec![OsStr::new("-f"), file.as_os_str(), OsStr::new("-db")],
    };
    // The ports are let go the moment before the proxy binds them.
    drop(held);
    let started = process::start(program, &args, &dir, out).await;
    let mut process = match started {
        Ok(p) => p,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            return Err((
                SidecarError::Start {
                    service,
                    kind,
                    status: format!("{} could not be run", program.display()),
                    log: e.to_string(),
                },
                false,
            ));
        }
    };
    match ready(&mut process, &ports, &token(&dir)).await {
        Ok(()) => Ok(Proxy {
            kind,
            service,
            process,
            ports: plan.edges.iter().map(|e| e.edge).zip(ports).collect(),
        }),
        Err(status) => {
            let log = log_tail(&dir);
            let taken = log.contains("Address already in use");
            // Dropping it kills it and removes its directory.
            drop(process);
            Err((
                SidecarError::Start {
                    service,
                    kind,
                    status,
                    log,
                },
                taken,
            ))
        }
    }
}

/// Waits until the proxy answers its ready path with its token on every
/// port: `Err` with how it ended, or how long it was waited for.
async fn ready(process: &mut process::Running, ports: &[u16], token: &str) -> Result<(), String> {
    let until = Instant::now() + READY_WITHIN;
    for &port in ports {
        loop {
            if let Some(status) = process.exited() {
                return Err(status.to_string());
            }
            if answers(port, token).await {
                break;
            }
            if Instant::now() >= until {
                return Err(format!("not answering after {READY_WITHIN:?}"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    Ok(())
}

/// Whether the listener on `port` answers [`READY_PATH`] with `token`.
async fn answers(port: u16, token: &str) -> bool {
    let ask = async {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()?;
        s.write_all(format!("GET {READY_PATH} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
            .await
            .ok()?;
        let mut buf = Vec::with_capacity(512);
        s.read_to_end(&mut buf).await.ok()?;
        let head = String::from_utf8_lossy(&buf).to_ascii_lowercase();
        Some(
            head.starts_with("http/1.")
                && head.contains(&format!(
                    "x-chaoslab-sidecar: {}",
                    token.to_ascii_lowercase()
                )),
        )
    };
    matches!(
        tokio::time::timeout(Duration::from_millis(500), ask).await,
        Ok(Some(true))
    )
}

/// The end of what a proxy in `dir` wrote: its error log (nginx) and its
/// standard output and error.
fn log_tail(dir: &Path) -> String {
    let mut out = String::new();
    for name in ["error.log", "output.log"] {
        if let Ok(t) = std::fs::read_to_string(dir.join(name)) {
            out.push_str(t.trim());
            out.push('\n');
        }
    }
    let t = out.trim();
    let start = t.len().saturating_sub(2000);
    let start = (start..t.len())
        .find(|&i| t.is_char_boundary(i))
        .unwrap_or(t.len());
    t[start..].to_string()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::topology::Topology;

    /// A's plan for A -> B under `preset: retry` with `retry_on`, B of two
    /// replicas.
    pub(crate) fn plan(kind: ProxyKind, retry_on: &str) -> ProxyPlan {
        let t = Topology::from_yaml(
            &format!(
                "name: t\npolicy: {{ preset: retry, retry_on: {retry_on} }}\nservices:\n  A: {{ calls: [B] }}\n  B: {{ replicas: 2 }}\n"
            ),
            "t.yaml",
        )
        .unwrap();
        ProxyPlan {
            service: "A".into(),
            kind,
            edges: vec![EdgePlan {
                edge: 0,
                name: "A -> B".into(),
                servers: vec!["127.0.0.1:9001".into(), "127.0.0.1:9002".into()],
                policy: t.policy.for_edge(&t.edges[0].policy),
                other_host: true,
                lb: Lb::RoundRobin,
                max_fails: 0,
                fail_timeout: Duration::from_secs(10),
            }],
        }
    }

    #[test]
    fn the_caller_makes_one_attempt_and_waits_for_every_try() {
        let p = plan(ProxyKind::Haproxy, "[500]").edges[0].policy;
        let c = client_policy(&p, ProxyKind::Haproxy);
        assert_eq!(c.attempts, 1);
        // Two tries of 1 s, a turn-around of 1 s, a second of slack.
        assert_eq!(c.timeout, Duration::from_secs(4));
        assert_eq!(call_timeout(&p, ProxyKind::Nginx), Duration::from_secs(3));
    }

    #[test]
    fn every_listener_answers_its_ready_path_with_its_token() {
        let dir = Path::new("/tmp/chaoslab-sidecar-1-0-A");
        let n = config(dir, &plan(ProxyKind::Nginx, "[500]"), &[7001]).unwrap();
        assert!(
            n.contains("location = /chaoslab-sidecar-ready {\n      add_header x-chaoslab-sidecar chaoslab-sidecar-1-0-A;\n      return 204;"),
            "{n}"
        );
        let h = config(dir, &plan(ProxyKind::Haproxy, "[500]"), &[7001]).unwrap();
        assert!(
            h.contains("http-request return status 204 hdr x-chaoslab-sidecar chaoslab-sidecar-1-0-A if { path /chaoslab-sidecar-ready }"),
            "{h}"
        );
    }

    #[test]
    fn a_missing_proxy_says_how_to_install_it() {
        let e = SidecarError::NotInstalled {
            kind: ProxyKind::Nginx,
            named: None,
        };
        assert_eq!(
            e.to_string(),
            "nginx is not installed: apt-get install nginx-light"
        );
        assert!(e.is_bad_input());
        let e = SidecarError::NotInstalled {
            kind: ProxyKind::Haproxy,
            named: Some((HAPROXY_VAR, "/nowhere/haproxy".into())),
        };
        assert_eq!(
            e.to_string(),
            "haproxy is not installed: apt-get install haproxy (CHAOSLAB_HAPROXY names /nowhere/haproxy, which is not a program)"
        );
    }
}
