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

/// What a started fleet holds in memory at its peak, by what it is made
/// of. The per-item figures are a fit to the peak resident set of
/// `chaoslab run` for 2 s at 20 root requests a second, on meshes drawn
/// like Meta's (250 to 5,000 services) and like Alibaba's (1,000 to
/// 5,000): from 11% under (1,000 services) to 5% over (5,000) each run's
/// peak; 35 MiB over on the seven-service chain (`docs/performance.md`
/// has the table). The load adds the buffers of the requests in flight:
/// the 5,000-service mesh's peak was 1,020 MiB at 200 root requests a
/// second and 1,206 at 600, against 741 said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemNeed {
    /// Listeners: one per replica of each service served here, each with
    /// its server, its state and counters, its share of the connections
    /// and its endpoints.
    pub listeners: usize,
    /// Calls: the topology's edges out of the services here, each with its
    /// client and retry state.
    pub calls: usize,
    /// The ring of samples, in bytes, allocated whole at the start.
    pub samples: u64,
}

/// The process with a fleet of a few services (the runtime, the
/// binary, the load generator, the model).
pub const MEM_BASE: u64 = 64 << 20;
/// Bytes per listener.
pub const MEM_PER_LISTENER: u64 = 36 << 10;
/// Bytes per call.
pub const MEM_PER_CALL: u64 = 4 << 10;

impl MemNeed {
    /// What a fleet serving what `fd` counts holds, with a ring of
    /// `samples` bytes.
    pub fn of(fd: &FdNeed, samples: u64) -> MemNeed {
        MemNeed {
            listeners: fd.listeners,
            calls: fd.calls,
            samples,
        }
    }

    /// Bytes in all.
    pub fn total(&self) -> u64 {
        MEM_BASE
            + self.listeners as u64 * MEM_PER_LISTENER
            + self.calls as u64 * MEM_PER_CALL
            + self.samples
    }

    /// What it is made of, in words, for a refusal and for `check`.
    pub fn describe(&self) -> String {
        format!(
            "about {} MiB of memory ({} listeners × {} KiB, {} calls × {} KiB, {} MiB of samples, {} MiB for the lab)",
            mib(self.total()),
            self.listeners,
            MEM_PER_LISTENER >> 10,
            self.calls,
            MEM_PER_CALL >> 10,
            mib(self.samples),
            MEM_BASE >> 20,
        )
    }
}

fn mib(bytes: u64) -> u64 {
    bytes.div_ceil(1 << 20)
}

/// The memory this process may still take, and what bounds it: the least
/// of the machine's available memory, its control group's room
/// (`memory.max` less `memory.current`) and its data limit (`ulimit -d`,
/// which counts every private mapping). `None` when none can be read.
pub fn memory_room() -> Option<(u64, &'static str)> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let available = meminfo.as_deref().and_then(|m| {
        m.lines()
            .find(|l| l.starts_with("MemAvailable:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .map(|kb| (kb * 1024, "the machine's available memory"))
    });
    let read = |p: &str| std::fs::read_to_string(p).ok()?.trim().parse::<u64>().ok();
    let cgroup = read("/sys/fs/cgroup/memory.max").map(|max| {
        let current = read("/sys/fs/cgroup/memory.current").unwrap_or(0);
        (
            max.saturating_sub(current),
            "its control group's memory.max",
        )
    });
    let data = rlimit::Resource::DATA
        .get()
        .ok()
        .map(|(soft, _)| soft)
        .filter(|&s| s != rlimit::INFINITY)
        .map(|soft| {
            (
                soft.saturating_sub(data_size()),
                "its data limit (`ulimit -d`)",
            )
        });
    [available, cgroup, data]
        .into_iter()
        .flatten()
        .min_by_key(|&(b, _)| b)
}

/// What this process's data limit already counts (its private writable
/// mappings, `VmData`), in bytes.
fn data_size() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmData:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// The share added to a memory need before it is weighed against the
/// room: the fit's largest error under a measured peak was 11%.
pub const MEM_MARGIN: f64 = 0.15;

/// Refuses a fleet whose memory need, with [`MEM_MARGIN`], is more than
/// the process may take.
pub(super) fn check_memory(need: &MemNeed) -> Result<(), FleetError> {
    match memory_room() {
        Some((room, what)) if need.total() as f64 * (1.0 + MEM_MARGIN) > room as f64 => {
            Err(FleetError::Memory {
                need: need.clone(),
                room,
                what,
            })
        }
        _ => Ok(()),
    }
}
