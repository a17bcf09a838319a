//! Why a topology was refused: one error type whose messages name the
//! file, and the line, column and service where they are known.

use crate::yaml::Location;

/// Why a topology was refused. Every message names the file, and the line,
/// column and service where they are known.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// The file could not be read.
    #[error("{file}: cannot read the topology: {source}")]
    Read {
        /// The path as given.
        file: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file holds nothing (or only comments).
    #[error("{file}: the file is empty: a topology needs at least `name:` and `services:`")]
    Empty {
        /// The file.
        file: String,
    },
    /// The document is not a map.
    #[error(
        "{file}: a topology must be a YAML map with `name:` and `services:`, but this file holds {found}"
    )]
    NotAMap {
        /// The file.
        file: String,
        /// What it holds instead ("a list", "a single value").
        found: &'static str,
    },
    /// A YAML syntax error, a value of the wrong type or out of range, an
    /// unknown or missing field: anything the YAML parser reports.
    #[error("{at}: {message}")]
    Yaml {
        /// Where the parser says.
        at: Location,
        /// The service whose entry holds the error, if any.
        service: Option<String>,
        /// What is wrong (with the YAML path when there is one).
        message: String,
    },
    /// `services:` is missing or lists nothing.
    #[error("{at}: the fleet is empty: `services:` must list at least one service")]
    EmptyFleet {
        /// The `services:` line, if any.
        at: Location,
    },
    /// A service name is listed twice.
    #[error("{at}: duplicate service name \"{service}\": each service must be listed once{first}")]
    DuplicateService {
        /// The second listing.
        at: Location,
        /// The name.
        service: String,
        /// Where the first listing is, as a note.
        first: String,
    },
    /// A service name that is empty.
    #[error("{at}: a service name must not be empty")]
    EmptyName {
        /// The listing.
        at: Location,
    },
    /// A call names a service that does not exist.
    #[error(
        "{at}: service \"{service}\" calls \"{dependency}\", which is not in the topology{hint}"
    )]
    UnknownDependency {
        /// The call.
        at: Location,
        /// The caller.
        service: String,
        /// The name it calls.
        dependency: String,
        /// A "did you mean" note, or empty.
        hint: String,
    },
    /// A service calls itself.
    #[error("{at}: service \"{service}\" calls itself; a topology must be acyclic")]
    SelfCall {
        /// The call.
        at: Location,
        /// The service.
        service: String,
    },
    /// Calls go round in a circle.
    #[error("{at}: service \"{service}\" is on a cycle: {cycle}; a topology must be acyclic")]
    Cycle {
        /// The first service of the cycle.
        at: Location,
        /// The first service of the cycle (in file order).
        service: String,
        /// The cycle spelled out, `A -> B -> C -> A`.
        cycle: String,
    },
    /// An outside service (`url:`) with calls of its own.
    #[error(
        "{at}: service \"{service}\" has a url, so it runs outside the fleet and cannot have calls"
    )]
    UrlWithCalls {
        /// The service.
        at: Location,
        /// The service.
        service: String,
    },
    /// A fault names a replica the service does not have.
    #[error("{at}: services.{service}.fault.replicas names replica {index}, but \"{service}\" has {replicas} replica{plural} (numbered 0 to {last}); set `replicas:` on the service or name a replica it has", plural = if *replicas == 1 { "" } else { "s" }, last = replicas - 1)]
    ReplicaOutOfRange {
        /// The fault.
        at: Location,
        /// The service.
        service: String,
        /// The replica named.
        index: u32,
        /// How many it has.
        replicas: u32,
    },
    /// An outside service given replicas.
    #[error("{at}: service \"{service}\" has a url, so it runs outside the fleet and the lab cannot start replicas of it; remove `replicas:` (the load balancing behind that url is its own)")]
    UrlWithReplicas {
        /// The key.
        at: Location,
        /// The service.
        service: String,
    },
    /// A key that only means something on a service with `workers`.
    #[error("{at}: service \"{service}\" sets `{key}` but not `workers`: {why}; set `workers:` or remove `{key}:`")]
    NeedsWorkers {
        /// The key.
        at: Location,
        /// The service.
        service: String,
        /// `queue` or `cancel`.
        key: &'static str,
        /// Why it means nothing without workers.
        why: &'static str,
    },
    /// An outside service (`url:`) given workers.
    #[error(
        "{at}: service \"{service}\" has a url, so it runs outside the fleet and the lab cannot give it `workers`, a `queue` or `cancel`"
    )]
    UrlWithWorkers {
        /// The key.
        at: Location,
        /// The service.
        service: String,
    },
    /// A per-attempt timeout the end user never waits out, on an edge that
    /// retries.
    #[error(
        "{at}: the per-attempt timeout on {service} -> {callee} is {timeouts}: with {attempts} attempts every retry would start after the end user has given up; make the per-attempt timeout shorter than load.timeout, or set attempts: 1"
    )]
    AttemptOutlivesUser {
        /// The per-attempt timeout where it is written, else `load.timeout`.
        at: Location,
        /// The caller.
        service: String,
        /// The callee.
        callee: String,
        /// Both timeouts, formatted: `2s (the default), not shorter than
        /// load.timeout 1s`.
        timeouts: String,
        /// Attempts on the edge.
        attempts: u32,
    },
    /// `load.entry` names no service.
    #[error("{at}: load.entry is \"{entry}\", which is not in the topology{hint}")]
    UnknownEntry {
        /// The `entry:` line.
        at: Location,
        /// The name given.
        entry: String,
        /// A "did you mean" note, or empty.
        hint: String,
    },
    /// Several services are called by nobody and `load.entry` is not set.
    #[error(
        "{at}: the entry is ambiguous: {candidates} are called by no other service; set load.entry to one of them"
    )]
    AmbiguousEntry {
        /// The file.
        at: Location,
        /// The candidates, quoted and joined.
        candidates: String,
    },
    /// Every service is called by another and `load.entry` is not set.
    #[error("{at}: every service is called by another, so there is no entry; set load.entry")]
    NoEntry {
        /// The file.
        at: Location,
    },
}

impl TopologyError {
    /// The service the error is about, when there is one.
    pub fn service(&self) -> Option<&str> {
        match self {
            TopologyError::Yaml { service, .. } => service.as_deref(),
            TopologyError::DuplicateService { service, .. }
            | TopologyError::UnknownDependency { service, .. }
            | TopologyError::SelfCall { service, .. }
            | TopologyError::Cycle { service, .. }
            | TopologyError::UrlWithCalls { service, .. }
            | TopologyError::NeedsWorkers { service, .. }
            | TopologyError::ReplicaOutOfRange { service, .. }
            | TopologyError::UrlWithReplicas { service, .. }
            | TopologyError::UrlWithWorkers { service, .. }
            | TopologyError::AttemptOutlivesUser { service, .. } => Some(service),
            TopologyError::UnknownEntry { entry, .. } => Some(entry),
            _ => None,
        }
    }
}
