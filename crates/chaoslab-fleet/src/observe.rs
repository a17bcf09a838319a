//! What the middleware reports as it works: plain events (a request
//! answered, an attempt ended, a retry sent, a call given up), the trait
//! that receives them, and the trace that ties a request to its root.
//!
//! The lab's metrics implement [`Observer`]; they read these events and
//! nothing else of the middleware, so counting stays apart from the
//! mechanism that is counted.

pub use chaoslab_model::metrics::tap::{Then, WireValue};
use error_ownership::claim::ClaimReason;
use error_ownership::retry::StopReason;
use error_ownership::Classified;

/// The status of a request whose caller went away before the answer (its
/// attempt timed out, or it disconnected): nginx's "client closed
/// request". Such a request is counted, with no claim, and is no error.
pub const ABANDONED: u16 = 499;

/// One inbound request answered (server side), or abandoned by its caller
/// (status [`ABANDONED`]).
#[derive(Debug, Clone, Copy)]
pub struct Served {
    /// The service that answered.
    pub service: usize,
    /// Its trace.
    pub trace: Trace,
    /// Whether it opened the root.
    pub is_root: bool,
    /// The response status.
    pub status: u16,
    /// The claim decision written on an error response (`None` on success,
    /// or when the service runs no ownership middleware).
    pub claim: Option<(bool, ClaimReason)>,
    /// Ground truth: the service's own fault caused the error.
    pub own_fault: bool,
    /// Whether any outbound call of this request failed (as recorded).
    pub dependency_failed: bool,
    /// From the request's arrival to its answer.
    pub elapsed: std::time::Duration,
}

/// One attempt of an outbound call ended (client side).
#[derive(Debug, Clone, Copy)]
pub struct Attempted {
    /// The calling service.
    pub service: usize,
    /// The edge.
    pub edge: usize,
    /// 0 for the first attempt.
    pub attempt: u32,
    /// How it ended.
    pub outcome: Classified,
    /// It was still in flight after its call's deadline (the time the
    /// calling request's own caller had left), which its time limit did not
    /// stop it at: work nobody was waiting for any more.
    pub late: bool,
    /// How long it took, waiting for a connection slot included.
    pub elapsed: std::time::Duration,
    /// It ended with no answer because the caller stopped waiting (its
    /// time limit passed, or the call itself was dropped), rather than
    /// because the connection was refused, reset or closed mid-answer.
    /// Only meaningful with [`Classified::NoResponse`].
    pub timed_out: bool,
    /// A hedge cancelled because another attempt of its call answered
    /// first: sent, but neither answered nor failed.
    pub cancelled: bool,
}

/// A retry is about to be sent.
#[derive(Debug, Clone, Copy)]
pub struct RetrySent {
    /// The calling service.
    pub service: usize,
    /// The edge.
    pub edge: usize,
    /// The root request it serves, when known.
    pub trace: Option<Trace>,
}

/// An attempt's answer as it came off the wire, and what the caller did
/// next: what the wire tap shows.
#[derive(Debug, Clone, Copy)]
pub struct Exchanged {
    /// The calling service.
    pub service: usize,
    /// The edge.
    pub edge: usize,
    /// 0 for the first attempt.
    pub attempt: u32,
    /// The answer's status (`None`: no answer: refused, reset, timed out).
    pub status: Option<u16>,
    /// The claim header's value as sent, its first [`WireValue::MAX`]
    /// bytes (`None`: no such header).
    pub claim: Option<WireValue>,
    /// What the caller did next.
    pub then: Then,
    /// When the attempt was sent (read once for the attempt already).
    pub sent: tokio::time::Instant,
}

/// A logical outbound call (all its attempts) ended in failure.
#[derive(Debug, Clone, Copy)]
pub struct CallFailed {
    /// The calling service.
    pub service: usize,
    /// The edge.
    pub edge: usize,
    /// Why it stopped retrying.
    pub reason: StopReason,
}

/// Receives what the middleware sees. The lab's metrics implement it; a
/// plain service can pass [`NoopObserver`].
pub trait Observer: Send + Sync + 'static {
    /// An inbound request was answered.
    fn served(&self, _e: &Served) {}
    /// An outbound attempt ended.
    fn attempted(&self, _e: &Attempted) {}
    /// A retry is being sent.
    fn retry_sent(&self, _e: &RetrySent) {}
    /// An attempt was answered (or not) and the caller decided.
    fn exchanged(&self, _e: &Exchanged) {}
    /// A logical outbound call failed for good.
    fn call_failed(&self, _e: &CallFailed) {}
    /// A hedged call committed with `cancelled` of its attempts still in
    /// flight, cancelled (gRPC A6 hedging).
    fn hedges_cancelled(&self, _service: usize, _edge: usize, _cancelled: u32) {}
    /// The lab's own process had no file descriptor left for a connection
    /// (`EMFILE`, `ENFILE`): a failure of the machine, not of the callee.
    fn out_of_files(&self) {}
    /// An attempt went to replica `replica` of service `callee` (a first
    /// attempt, or a retry).
    fn sent_to_replica(&self, _callee: usize, _replica: u32, _retry: bool) {}
}

/// Whether an error, or any error it was caused by, is the process (or
/// the system) running out of file descriptors.
pub fn is_out_of_files(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(e);
    while let Some(e) = cause {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if matches!(io.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) {
                return true;
            }
        }
        cause = e.source();
    }
    false
}

/// An observer that ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoopObserver;

impl Observer for NoopObserver {}

/// Where a request sits in its root request's call tree. It travels in
/// the `x-chaoslab-trace` header (see `middleware::context`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trace {
    /// The root request's id.
    pub root: u64,
    /// Hops from the entry: 0 at the entry.
    pub depth: u32,
}

impl Trace {
    /// The trace a callee of this request carries.
    pub fn child(self) -> Trace {
        Trace {
            root: self.root,
            depth: self.depth.saturating_add(1),
        }
    }
}
