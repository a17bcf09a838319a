//! `chaoslab run --processes`: one `chaoslab node` OS process per service
//! on loopback, each with its own listener and control API, wired to its
//! callees by `--peer`; the session then drives them as [`super::nodes`]
//! says.
//!
//! No node outlives the run. Each is started with its standard input a
//! pipe from this process and told to stop when that pipe closes, which
//! it does when the run ends, when this process panics, and when it is
//! killed outright; [`Processes`] also closes the pipes, waits, and kills
//! what is still running on drop. Each node runs in a process group of
//! its own, so a Ctrl-C at the terminal reaches this process alone, which
//! reads the nodes one last time before stopping them.

use std::io::Read as _;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use thiserror::Error;

use super::access::{Token, TOKEN_VAR};
use super::nodes::{Controls, NodeControls, READY_WITHIN};
use crate::fleet::Placement;
use crate::topology::Topology;

/// How long the nodes get to stop by themselves before they are killed.
const STOP_GRACE: Duration = Duration::from_secs(3);
/// The tail of a node's standard error kept to explain a failed start.
const STDERR_TAIL: usize = 4096;

/// Why the node processes could not be started.
#[derive(Debug, Error)]
pub enum ProcessesError {
    /// This program's own path is unknown.
    #[error("finding this program to start the nodes failed: {0}")]
    Exe(#[source] std::io::Error),
    /// No free port on loopback.
    #[error("reserving a port on 127.0.0.1 for the node of `{service}` failed: {source}")]
    Port {
        /// The service.
        service: String,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// A node could not be started.
    #[error("starting the node of `{service}` failed: {source}")]
    Spawn {
        /// The service.
        service: String,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// A node stopped, or did not listen, before the run began.
    #[error("the node of `{service}` did not come up ({status}): {stderr}")]
    Start {
        /// The service.
        service: String,
        /// Its exit status, or how long it was waited for.
        status: String,
        /// The end of what it wrote to standard error.
        stderr: String,
    },
}

/// One node process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    /// The service it serves.
    pub service: String,
    /// Its process id.
    pub pid: u32,
    /// Where the service answers.
    pub url: String,
    /// Where its control API answers.
    pub control: String,
}

impl std::fmt::Display for Started {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "node {} pid {} at {} (control {})",
            self.service, self.pid, self.url, self.control
        )
    }
}

#[derive(Debug)]
struct Running {
    child: Child,
    stdin: Option<ChildStdin>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

/// The node processes of one run; stopped on drop.
#[derive(Debug)]
pub struct Processes {
    running: Vec<Running>,
    started: Vec<Started>,
    /// Per node, whether [`Processes::ended`] has told of its end.
    reported: Vec<bool>,
}

/// A free port on 127.0.0.1, held until the nodes are started: outside
/// the ephemeral range when there is room, else any.
fn reserve(service: &str) -> Result<TcpListener, ProcessesError> {
    crate::ports::free_port().map_err(|source| ProcessesError::Port {
        service: service.to_string(),
        source,
    })
}

fn addr_of(l: &TcpListener, service: &str) -> Result<SocketAddr, ProcessesError> {
    l.local_addr().map_err(|source| ProcessesError::Port {
        service: service.to_string(),
        source,
    })
}

impl Processes {
    /// Starts a node per service of `topology` (read from `path`; services
    /// with a `url:` stay outside), each seeded with `seed`, and waits
    /// until each listens. Returns the placement of this process (no
    /// service; every one at its node) and the nodes' control URLs.
    pub fn start(
        path: &Path,
        topology: &Topology,
        seed: u64,
        token: Option<&Token>,
    ) -> Result<(Processes, Placement, Controls), ProcessesError> {
        let exe = std::env::current_exe().map_err(ProcessesError::Exe)?;
        let n = topology.services.len();
        // Ports are taken now and let go just before the nodes bind them:
        // a node per replica, its service's URLs comma-separated in
        // replica order.
        let mut held = vec![];
        let mut replica_urls: Vec<Vec<(String, String)>> = vec![vec![]; n];
        // A service with endpoints is one node (per replica), by its
        // first node.
        for (id, s) in topology.services.iter().enumerate() {
            if s.url.is_some() || s.group != id {
                continue;
            }
            for _ in 0..s.replicas.max(1) {
                let (a, b) = (reserve(&s.name)?, reserve(&s.name)?);
                replica_urls[id].push((
                    format!("http://{}/", addr_of(&a, &s.name)?),
                    format!("http://{}/", addr_of(&b, &s.name)?),
                ));
                held.push((a, b));
            }
        }
        drop(held);
        let joined = |id: usize, k: fn(&(String, String)) -> &String| {
            (!replica_urls[id].is_empty()).then(|| {
                replica_urls[id]
                    .iter()
                    .map(k)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(",")
            })
        };
        let controls: Vec<Option<String>> = (0..n).map(|id| joined(id, |p| &p.1)).collect();
        // Where each node is called: its service's URLs, at its path.
        let urls: Vec<Option<String>> = topology
            .services
            .iter()
            .map(|s| {
                joined(s.group, |p| &p.0)
                    .map(|u| crate::topology::at_path(&u, s.endpoint.as_deref()))
            })
            .collect();
        let mut procs = Processes::none();
        let nodes = topology.services.iter().enumerate().flat_map(|(id, s)| {
            replica_urls[id]
                .iter()
                .enumerate()
                .map(move |(r, (url, control))| (id, s, r, url, control))
        });
        for (id, s, r, url, control) in nodes {
            let replicated = s.replicas > 1;
            let mut cmd = Command::new(&exe);
            cmd.arg("node")
                .arg(path)
                .args(["--service", s.service_name()])
                .args(["--listen", hostport(url)])
                .args(["--control", hostport(control)])
                .args(["--seed", &seed.to_string()])
                .arg("--exit-with-stdin");
            if replicated {
                cmd.args(["--replica", &r.to_string()]);
            }
            // The token by the environment, where no other user's `ps`
            // can read it; none given, a node asks for none.
            match token {
                Some(t) => cmd.env(TOKEN_VAR, t.secret()),
                None => cmd.env_remove(TOKEN_VAR),
            };
            // Each service it calls (any endpoint's call), once, at its
            // service's URLs.
            for to in topology.services_called_by(id) {
                if let Some(u) = joined(to, |p| &p.0) {
                    cmd.arg("--peer")
                        .arg(format!("{}={u}", topology.services[to].service_name()));
                }
            }
            let label = if replicated {
                format!("{}#{r}", s.service_name())
            } else {
                s.service_name().to_string()
            };
            procs.spawn(
                cmd,
                Started {
                    service: label,
                    pid: 0,
                    url: url.clone(),
                    control: control.clone(),
                },
            )?;
        }
        procs.wait_listening(READY_WITHIN)?;
        let placement = Placement {
            local: None,
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            replica: None,
            peers: urls,
            shard: None,
        };
        Ok((procs, placement, NodeControls(controls).into()))
    }

    /// No process yet.
    pub(super) fn none() -> Processes {
        Processes {
            running: vec![],
            started: vec![],
            reported: vec![],
        }
    }

    /// Starts `cmd` as the node `started` describes (its pid filled in):
    /// its standard input a pipe it stops at the end of, its standard
    /// error drained for its whole life with the tail kept, in a process
    /// group of its own.
    pub(super) fn spawn(
        &mut self,
        mut cmd: Command,
        mut started: Started,
    ) -> Result<(), ProcessesError> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd.spawn().map_err(|source| ProcessesError::Spawn {
            service: started.service.clone(),
            source,
        })?;
        let stderr = Arc::new(Mutex::new(Vec::new()));
        if let Some(mut pipe) = child.stderr.take() {
            let tail = stderr.clone();
            // Drained for the node's whole life, so it never blocks on a
            // full pipe; only the tail is kept.
            std::thread::spawn(move || {
                let mut buf = [0u8; 1024];
                while let Ok(k) = pipe.read(&mut buf) {
                    if k == 0 {
                        break;
                    }
                    let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
                    t.extend_from_slice(&buf[..k]);
                    let over = t.len().saturating_sub(STDERR_TAIL);
                    t.drain(..over);
                }
            });
        }
        started.pid = child.id();
        self.started.push(started);
        self.running.push(Running {
            stdin: child.stdin.take(),
            child,
            stderr,
        });
        self.reported.push(false);
        Ok(())
    }

    /// The nodes that ended by themselves since the last call, each once:
    /// its index among [`Processes::started`] and how it ended (`killed by
    /// signal 9`, `exit status 1`), with the end of what it wrote.
    pub fn ended(&mut self) -> Vec<(usize, String)> {
        let mut out = vec![];
        for (i, r) in self.running.iter_mut().enumerate() {
            if self.reported[i] {
                continue;
            }
            if let Ok(Some(status)) = r.child.try_wait() {
                self.reported[i] = true;
                out.push((i, ended_by(status)));
            }
        }
        out
    }

    /// Waits until every node's control API accepts connections; a node
    /// that exits first fails the start with what it wrote.
    pub(super) fn wait_listening(&mut self, within: Duration) -> Result<(), ProcessesError> {
        let until = Instant::now() + within;
        for i in 0..self.running.len() {
            let addr: SocketAddr = match hostport(&self.started[i].control).parse() {
                Ok(a) => a,
                Err(_) => continue,
            };
            loop {
                if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                    break;
                }
                let r = &mut self.running[i];
                let status = match r.child.try_wait() {
                    Ok(Some(status)) => Some(status.to_string()),
                    _ if Instant::now() >= until => Some(format!("not listening after {within:?}")),
                    _ => None,
                };
                if let Some(status) = status {
                    // Give the drain a moment to take the last lines.
                    std::thread::sleep(Duration::from_millis(50));
                    let tail = r.stderr.lock().unwrap_or_else(|e| e.into_inner());
                    return Err(ProcessesError::Start {
                        service: self.started[i].service.clone(),
                        status,
                        stderr: String::from_utf8_lossy(&tail).trim().to_string(),
                    });
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Ok(())
    }

    /// The first node that has ended, as the error of a start that failed:
    /// its exit status and the end of what it wrote.
    pub fn first_ended(&mut self) -> Option<ProcessesError> {
        let i = self
            .running
            .iter_mut()
            .position(|r| matches!(r.child.try_wait(), Ok(Some(_))))?;
        let r = &mut self.running[i];
        let status = r.child.try_wait().ok().flatten().map(ended_by)?;
        // Give the drain a moment to take the last lines.
        std::thread::sleep(Duration::from_millis(50));
        let tail = r.stderr.lock().unwrap_or_else(|e| e.into_inner());
        Some(ProcessesError::Start {
            service: self.started[i].service.clone(),
            status,
            stderr: String::from_utf8_lossy(&tail).trim().to_string(),
        })
    }

    /// The nodes, in topology order.
    pub fn started(&self) -> &[Started] {
        &self.started
    }

    /// Stops every node: closes its pipe (it stops as on SIGTERM), waits
    /// up to [`STOP_GRACE`] in all, then kills what is left.
    pub fn stop(&mut self) {
        for r in &mut self.running {
            r.stdin.take();
        }
        let until = Instant::now() + STOP_GRACE;
        for r in &mut self.running {
            while matches!(r.child.try_wait(), Ok(None)) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
            if matches!(r.child.try_wait(), Ok(None)) {
                let _ = r.child.kill();
            }
            let _ = r.child.wait();
        }
        self.running.clear();
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How a process ended, in words: `killed by signal 9`, `exit status 1`.
fn ended_by(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => status.to_string(),
    }
}

/// `127.0.0.1:8080` of `http://127.0.0.1:8080/`.
pub(super) fn hostport(url: &str) -> &str {
    url.trim_start_matches("http://").trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_listen_outside_the_ephemeral_range() {
        use crate::ports::{ephemeral_range, node_ports};
        // A reserved port is outside the machine's own range.
        let l = reserve("A").unwrap();
        let port = l.local_addr().unwrap().port();
        let (lo, hi) = ephemeral_range();
        if node_ports((lo, hi)).is_some() {
            assert!(!(lo..=hi).contains(&port), "{port} in {lo}..={hi}");
        }
    }
}
