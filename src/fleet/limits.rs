//! What a fleet needs of the machine's open-file limit, and raising the
//! soft limit toward the hard one so it fits, or refusing it up front.

use super::FleetError;
use crate::topology::{ServiceId, Topology, Transport};

/// Open files a fleet needs at the least, and what for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FdNeed {
    /// How the services here call each other.
    pub transport: Transport,
    /// Listeners: one per replica of each service served here.
    pub listeners: usize,
    /// Calls made from here: edges out of the services served here.
    pub calls: usize,
    /// Connections the calls hold at the least, each with a descriptor at
    /// both ends when its callee is served here too: one per call over
    /// HTTP/1.1, one per callee over HTTP/2.
    pub connections: usize,
    /// Of those, connections to callees outside this process (one end here).
    pub outside: usize,
    /// The descriptors the same fleet would need over HTTP/2, when it
    /// runs over HTTP/1.1 in one process.
    pub over_http2: Option<u64>,
}

/// Descriptors for the load generator's connections and the lab's own
/// (its terminal, endpoints, files).
pub(super) const FD_RESERVE: u64 = 128;

impl FdNeed {
    /// What a fleet of `topology` needs, serving `listeners` listeners
    /// and the services `here` says.
    pub fn of(
        topology: &Topology,
        transport: Transport,
        listeners: usize,
        here: &dyn Fn(ServiceId) -> bool,
    ) -> FdNeed {
        let calls: Vec<_> = topology.edges.iter().filter(|e| here(e.from)).collect();
        let outside = calls.iter().filter(|e| !here(e.to)).count();
        let inside = match transport {
            Transport::Http1 => calls.len() - outside,
            Transport::Http2 => {
                let mut callees: Vec<ServiceId> = calls
                    .iter()
                    .filter(|e| here(e.to))
                    .map(|e| topology.services[e.to].group)
                    .collect();
                callees.sort_unstable();
                callees.dedup();
                callees
                    .iter()
                    .map(|&g| topology.services[g].replicas.max(1) as usize)
                    .sum()
            }
        };
        FdNeed {
            transport,
            listeners,
            calls: calls.len(),
            connections: inside + outside,
            outside,
            over_http2: None,
        }
    }

    /// Descriptors in all.
    pub fn total(&self) -> u64 {
        let inside = (self.connections - self.outside) as u64;
        self.listeners as u64 + 2 * inside + self.outside as u64 + FD_RESERVE
    }

    /// The limit worth asking for: room for a storm's extra connections
    /// (HTTP/1.1 opens one per attempt in flight).
    fn wanted(&self) -> u64 {
        match self.transport {
            Transport::Http1 => (self.listeners as u64 + self.calls as u64) * 8 + 1024,
            Transport::Http2 => self.total() + self.outside as u64 * 8 + 1024,
        }
    }
}

/// Raises the soft open-file limit toward the hard one when a big fleet
/// needs it, and refuses a fleet that cannot fit even then.
pub(super) fn raise_fd_limit(need: &FdNeed) -> Result<(), FleetError> {
    let want = need.wanted();
    let Ok((soft, hard)) = rlimit::Resource::NOFILE.get() else {
        return Ok(());
    };
    let mut limit = soft;
    if soft < want && rlimit::Resource::NOFILE.set(want.min(hard), hard).is_ok() {
        limit = want.min(hard);
    }
    if limit < need.total() {
        return Err(FleetError::FdLimit {
            need: need.clone(),
            limit,
        });
    }
    Ok(())
}
