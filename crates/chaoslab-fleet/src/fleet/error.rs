//! Why a fleet could not start.
//!
//! Starting a fleet asks the operating system for one loopback listener per
//! service and builds an HTTP client per service; a big topology can run
//! the process out of file descriptors or the machine out of loopback
//! ports. Each [`FleetError`] names the service it was starting, keeps the
//! underlying error as its source, and, for the resource limits a user can
//! change, says what to change ([`ResourceHint`]).

use std::fmt;
use std::io;

use crate::middleware::server::BadHeaderName;

// The same numbers on Linux, macOS and the BSDs.
/// `EMFILE`: this process has as many files open as its soft limit allows.
const EMFILE: i32 = 24;
/// `ENFILE`: the system-wide table of open files is full.
const ENFILE: i32 = 23;

/// Why a fleet could not start. Every message is a complete sentence that
/// names the service and quotes the underlying error (also available as
/// [`std::error::Error::source`]), followed by what to do when that is
/// something the user can change.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FleetError {
    /// No loopback port could be bound for a service.
    #[error("Could not bind a loopback port for service `{service}`: {source}.{hint}")]
    Bind {
        /// The service being started.
        service: String,
        /// The operating system's error.
        source: io::Error,
        /// What to do about it, when it is a resource limit.
        hint: ResourceHint,
    },
    /// The address a service was told to listen on (`chaoslab node
    /// --listen`) could not be bound.
    #[error("Could not listen on {addr} for service `{service}`: {source}.{hint}")]
    Listen {
        /// The service being started.
        service: String,
        /// The address it was told to listen on.
        addr: std::net::SocketAddr,
        /// The operating system's error.
        source: io::Error,
        /// What to do about it, when it is a resource limit.
        hint: ResourceHint,
    },
    /// A service's listener was bound but its address could not be read.
    #[error("Could not read the loopback address bound for service `{service}`: {source}.{hint}")]
    LocalAddr {
        /// The service being started.
        service: String,
        /// The operating system's error.
        source: io::Error,
        /// What to do about it, when it is a resource limit.
        hint: ResourceHint,
    },
    /// The topology's claim header (`ownership.header`) is not a valid HTTP
    /// header name, so the service's middleware cannot be set up. Topology
    /// validation refuses such a header first, so only a topology built in
    /// code without validation meets this.
    #[error(
        "Could not set up the ownership middleware of service `{service}`: {source}. \
         Set `ownership.header` in the topology to a valid header name, such as `x-error-claim`."
    )]
    ClaimHeader {
        /// The service being started.
        service: String,
        /// The rejected name.
        source: BadHeaderName,
    },
    /// The process may not open as many files as the fleet needs at the
    /// least, even after raising its soft limit to the hard one: refused
    /// before anything is bound.
    #[error("{}", fd_message(need, *limit))]
    FdLimit {
        /// What the fleet needs at the least, and what for.
        need: super::FdNeed,
        /// The limit after raising it as far as allowed.
        limit: u64,
    },
    /// The fleet would hold more memory than the process may take:
    /// refused before anything is bound.
    #[error(
        "The topology needs {} once started, and {}% more for the estimate's error, but {what} leaves this process {} MiB. Run a smaller topology, fewer replicas, or on a machine with more memory.",
        need.describe(),
        (super::limits::MEM_MARGIN * 100.0).round(),
        room >> 20
    )]
    Memory {
        /// What the fleet holds, and of what.
        need: super::MemNeed,
        /// The bytes the process may still take.
        room: u64,
        /// What bounds it.
        what: &'static str,
    },
    /// A sidecar proxy could not start (not installed, a policy it cannot
    /// express, or it did not come up).
    #[error(transparent)]
    Sidecar(#[from] crate::sidecar::SidecarError),
}

fn fd_message(need: &super::FdNeed, limit: u64) -> String {
    let total = need.total();
    let inside = need.connections - need.outside;
    let per = match need.transport {
        crate::topology::Transport::Http1 => format!(
            "a connection at each end of each of its {} calls between services here (HTTP/1.1)",
            inside
        ),
        crate::topology::Transport::Http2 => format!(
            "a connection at each end for each of its {inside} callees here, shared by their callers (HTTP/2)"
        ),
    };
    let outside = if need.outside > 0 {
        format!(
            ", one for each of its {} calls to services elsewhere",
            need.outside
        )
    } else {
        String::new()
    };
    let instead = match need.over_http2 {
        Some(n) if n <= limit => format!(
            " Over HTTP/2 it needs {n}, which fits: add `transport: http2` to the topology."
        ),
        _ => String::new(),
    };
    format!(
        "The topology needs at least {total} open files ({} listeners, {per}{outside}, and {} for the load generator and the lab), but this process may open {limit}.{instead} Raise the limit (`ulimit -n {total}`, or the hard limit in /etc/security/limits.conf) or run a smaller topology.",
        need.listeners,
        super::FD_RESERVE,
    )
}

impl FleetError {
    /// Binding a loopback port for `service` failed with `source`.
    pub fn bind(service: &str, source: io::Error) -> FleetError {
        FleetError::Bind {
            service: service.to_owned(),
            hint: ResourceHint::for_io(&source),
            source,
        }
    }

    /// Listening on `addr`, the address `service` was placed on, failed
    /// with `source`.
    pub fn listen(service: &str, addr: std::net::SocketAddr, source: io::Error) -> FleetError {
        // A port asked for by number that is in use is held by another
        // socket: nothing is exhausted.
        let hint = if addr.port() != 0 && source.kind() == io::ErrorKind::AddrInUse {
            ResourceHint::PortTaken
        } else {
            ResourceHint::for_io(&source)
        };
        FleetError::Listen {
            service: service.to_owned(),
            addr,
            hint,
            source,
        }
    }

    /// Reading the address of `service`'s listener failed with `source`.
    pub fn local_addr(service: &str, source: io::Error) -> FleetError {
        FleetError::LocalAddr {
            service: service.to_owned(),
            hint: ResourceHint::for_io(&source),
            source,
        }
    }

    /// Whether the machine the lab runs on refused what the fleet needs
    /// (ports, file descriptors, an HTTP client), as opposed to the fleet
    /// being given a topology that was never validated.
    pub fn is_environment(&self) -> bool {
        match self {
            FleetError::Sidecar(e) => !e.is_bad_input(),
            _ => !matches!(
                self,
                FleetError::ClaimHeader { .. }
                    | FleetError::FdLimit { .. }
                    | FleetError::Memory { .. }
            ),
        }
    }

    /// Whether the fleet was refused for what the topology asks of this
    /// machine, which the user changes (exit status 2): too big for its
    /// limits, a sidecar whose proxy is not installed or cannot express
    /// its calls' policy.
    pub fn is_bad_input(&self) -> bool {
        self.is_too_big() || matches!(self, FleetError::Sidecar(e) if e.is_bad_input())
    }

    /// Whether the fleet was refused before starting because of the
    /// topology's size against a limit the user sets (exit status 2).
    pub fn is_too_big(&self) -> bool {
        matches!(self, FleetError::FdLimit { .. } | FleetError::Memory { .. })
    }
}

/// What a user can do about an operating-system error met while starting a
/// fleet. Its [`Display`](fmt::Display) is empty for [`ResourceHint::None`],
/// otherwise one or two sentences that start with a space, so it can follow
/// the error's own sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResourceHint {
    /// Nothing the lab knows how to advise.
    None,
    /// The process has as many files open as it may (`EMFILE`, "too many
    /// open files"): every service holds a listener and pooled connections.
    TooManyOpenFiles {
        /// The soft limit on open files when the error was met, if known.
        soft: Option<u64>,
        /// The hard limit, if known and finite.
        hard: Option<u64>,
    },
    /// The whole system has as many files open as it may (`ENFILE`).
    SystemFileTable,
    /// No loopback port is left to bind (`EADDRINUSE` on a request for any
    /// free port, or `EADDRNOTAVAIL`).
    PortsExhausted,
    /// The port asked for by number is held by another socket.
    PortTaken,
}

impl ResourceHint {
    /// The hint for `e`, reading the current open-file limits when the
    /// process ran out of file descriptors.
    pub fn for_io(e: &io::Error) -> ResourceHint {
        if e.raw_os_error() == Some(EMFILE) {
            let limits = rlimit::Resource::NOFILE.get().ok();
            return ResourceHint::TooManyOpenFiles {
                soft: limits.map(|(soft, _)| soft),
                hard: limits
                    .map(|(_, hard)| hard)
                    .filter(|&h| h != rlimit::INFINITY),
            };
        }
        if e.raw_os_error() == Some(ENFILE) {
            return ResourceHint::SystemFileTable;
        }
        match e.kind() {
            // Every bind asks for port 0, so "in use" means none is free.
            io::ErrorKind::AddrInUse | io::ErrorKind::AddrNotAvailable => {
                ResourceHint::PortsExhausted
            }
            _ => ResourceHint::None,
        }
    }
}

impl fmt::Display for ResourceHint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResourceHint::None => Ok(()),
            ResourceHint::TooManyOpenFiles { soft, hard } => {
                write!(
                    f,
                    " The process has run out of file descriptors: each service holds a \
                     listener and pooled connections"
                )?;
                match (soft, hard) {
                    (Some(s), Some(h)) => write!(f, ", and the soft limit is {s} (hard {h})")?,
                    (Some(s), None) => write!(f, ", and the soft limit is {s}")?,
                    _ => {}
                }
                let target = match (soft, hard) {
                    (Some(s), Some(h)) if h > s => *h,
                    (Some(s), _) => s.saturating_mul(4).max(4096),
                    _ => 65536,
                };
                write!(
                    f,
                    ". Raise it with `ulimit -n {target}` before running chaoslab, \
                     or use a smaller topology."
                )?;
                if matches!((soft, hard), (Some(s), Some(h)) if h <= s) {
                    write!(
                        f,
                        " Going above the hard limit needs root (or an entry in \
                         /etc/security/limits.conf)."
                    )?;
                }
                Ok(())
            }
            ResourceHint::SystemFileTable => write!(
                f,
                " The whole system has run out of open files: close other programs, \
                 raise `fs.file-max`, or use a smaller topology."
            ),
            ResourceHint::PortTaken => write!(
                f,
                " Another socket holds that port: stop what listens on it, or give \
                 another with `--listen`."
            ),
            ResourceHint::PortsExhausted => write!(
                f,
                " The machine has run out of loopback ports: wait for closed connections \
                 to leave TIME_WAIT, widen `net.ipv4.ip_local_port_range`, or use a \
                 smaller topology."
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn emfile_on_bind_names_the_service_and_the_soft_limit() {
        let e = FleetError::bind("z4066", io::Error::from_raw_os_error(EMFILE));
        let msg = e.to_string();
        assert!(
            msg.starts_with("Could not bind a loopback port for service `z4066`: "),
            "{msg}"
        );
        assert!(msg.contains("ulimit -n"), "{msg}");
        assert!(msg.contains("smaller topology"), "{msg}");
        let (soft, _) = rlimit::Resource::NOFILE.get().unwrap();
        assert!(msg.contains(&format!("soft limit is {soft}")), "{msg}");
        assert!(msg.ends_with('.'), "{msg}");
        // The OS error stays reachable by type, not by its text.
        let source = e.source().and_then(|s| s.downcast_ref::<io::Error>());
        assert_eq!(source.and_then(io::Error::raw_os_error), Some(EMFILE));
        assert!(e.is_environment());
    }

    #[test]
    fn emfile_suggests_the_hard_limit_when_it_is_higher() {
        let hint = ResourceHint::TooManyOpenFiles {
            soft: Some(256),
            hard: Some(8192),
        };
        let msg = hint.to_string();
        assert!(msg.contains("soft limit is 256 (hard 8192)"), "{msg}");
        assert!(msg.contains("`ulimit -n 8192`"), "{msg}");
        assert!(!msg.contains("needs root"), "{msg}");
    }

    #[test]
    fn emfile_at_the_hard_limit_says_that_root_is_needed() {
        let hint = ResourceHint::TooManyOpenFiles {
            soft: Some(4096),
            hard: Some(4096),
        };
        let msg = hint.to_string();
        assert!(msg.contains("`ulimit -n 16384`"), "{msg}");
        assert!(msg.contains("needs root"), "{msg}");
    }

    #[test]
    fn an_unknown_limit_still_says_what_to_do() {
        let hint = ResourceHint::TooManyOpenFiles {
            soft: None,
            hard: None,
        };
        let msg = hint.to_string();
        assert!(!msg.contains("soft limit"), "{msg}");
        assert!(msg.contains("`ulimit -n 65536`"), "{msg}");
    }

    #[test]
    fn enfile_points_at_the_system_limit() {
        let e = FleetError::bind("db", io::Error::from_raw_os_error(ENFILE));
        assert!(e.to_string().contains("whole system"), "{e}");
    }

    #[test]
    fn port_exhaustion_gets_its_own_hint() {
        for kind in [io::ErrorKind::AddrInUse, io::ErrorKind::AddrNotAvailable] {
            let e = FleetError::bind("api", io::Error::new(kind, "no port"));
            let msg = e.to_string();
            assert!(msg.contains("service `api`: no port."), "{msg}");
            assert!(msg.contains("loopback ports"), "{msg}");
            assert!(msg.contains("ip_local_port_range"), "{msg}");
        }
    }

    #[test]
    fn a_port_asked_for_by_number_is_taken_not_exhausted() {
        let taken = io::Error::from(io::ErrorKind::AddrInUse);
        let e = FleetError::listen("C", "127.0.0.1:39137".parse().unwrap(), taken);
        let msg = e.to_string();
        assert!(msg.contains("Another socket holds that port"), "{msg}");
        assert!(!msg.contains("run out"), "{msg}");
        // Port 0 in use: none was free.
        let any = io::Error::from(io::ErrorKind::AddrInUse);
        let e = FleetError::listen("C", "127.0.0.1:0".parse().unwrap(), any);
        assert!(e.to_string().contains("loopback ports"), "{e}");
    }

    #[test]
    fn other_os_errors_carry_no_hint() {
        let e = FleetError::local_addr(
            "api",
            io::Error::new(io::ErrorKind::PermissionDenied, "denied"),
        );
        assert_eq!(
            e.to_string(),
            "Could not read the loopback address bound for service `api`: denied."
        );
    }

    #[test]
    fn a_bad_claim_header_says_what_to_set() {
        let e = FleetError::ClaimHeader {
            service: "api".into(),
            source: BadHeaderName("x bad".into()),
        };
        let msg = e.to_string();
        assert!(msg.contains("service `api`"), "{msg}");
        assert!(
            msg.contains("`x bad` is not a valid HTTP header name"),
            "{msg}"
        );
        assert!(msg.contains("`ownership.header`"), "{msg}");
        assert!(!e.is_environment());
    }
}
