//! Per-service, per-edge and root counters, fed by the middleware.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;

use super::counts::{with_service_counters, Counts, PerRootCounts, ServiceCounts, RADIUS_BUCKETS};
use super::journal::Journal;

mod meshes;
mod wire;
use super::latency::{latency_bucket, LatencyCounters, LatencyCounts};
use super::refusals::Refusals;
use super::storm::StormTracker;
use super::tap::Tap;
use crate::observe::{Attempted, CallFailed, Exchanged, Observer, RetrySent, Served, ABANDONED};
use error_ownership::breaker::BreakerState;
use error_ownership::claim::ClaimReason;
use error_ownership::edge_budget::Level;
use error_ownership::retry::StopReason;
use error_ownership::{Claim, Classified};
use meshes::RootCounters;
use wire::edge_counts;

/// A service's live counters ([`ServiceCounters`], atomics) and the
/// load of their copy ([`ServiceCounts`]), from the one list of
/// [`super::counts::with_service_counters`].
macro_rules! service_counters {
    (
        counts { $($(#[doc = $d:literal])* $c:ident,)* }
        triples { $($(#[doc = $td:literal])* $t:ident,)* }
        gauges { $($(#[doc = $gd:literal])* $g:ident,)* }
    ) => {
        /// One service's live counters.
        #[derive(Debug, Default)]
        pub struct ServiceCounters {
            $($c: AtomicU64,)*
            $($t: [AtomicU64; 3],)*
            $($g: AtomicU64,)*
            latency: LatencyCounters,
        }

        impl ServiceCounters {
            /// A copy of every counter.
            fn load(&self) -> ServiceCounts {
                let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
                ServiceCounts {
                    $($c: l(&self.$c),)*
                    $($t: std::array::from_fn(|k| l(&self.$t[k])),)*
                    $($g: l(&self.$g),)*
                    latency: LatencyCounts(std::array::from_fn(|b| {
                        self.latency.0[b].load(Ordering::Relaxed)
                    })),
                }
            }
        }
    };
}

with_service_counters!(service_counters);

/// One edge's live counters.
#[derive(Debug, Default)]
pub struct EdgeCounters {
    attempts: AtomicU64,
    failed_attempts: AtomicU64,
    retries: AtomicU64,
    suppressed: AtomicU64,
    budget_denied: AtomicU64,
    refused: AtomicU64,
    failed_calls: AtomicU64,
    attempt_us: AtomicU64,
    short_circuited: AtomicU64,
    throttled: AtomicU64,
    hedges_cancelled: AtomicU64,
    /// The breaker's state (gauge: 0 closed, 1 half-open, 2 open).
    breaker: AtomicU64,
    /// The budget's level and limit, in thousandths (gauges).
    budget_level: AtomicU64,
    budget_limit: AtomicU64,
}

/// Latency histogram bounds: 1 µs to 60 s, two significant digits.
fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 2).expect("valid histogram bounds")
}

/// All of a fleet's counters. Implements [`Observer`].
#[derive(Debug)]
pub struct Metrics {
    services: Vec<ServiceCounters>,
    edges: Vec<EdgeCounters>,
    storm: StormTracker,
    root_sent: AtomicU64,
    root_ok: AtomicU64,
    root_errors: AtomicU64,
    root_dropped: AtomicU64,
    root_skipped: AtomicU64,
    ticks: AtomicU64,
    lag_us: AtomicU64,
    lag_max_us: AtomicU64,
    fd_errors: AtomicU64,
    /// Latency since the last `take_latency`, in µs.
    interval_latency: Mutex<Histogram<u64>>,
    /// Per edge, its callee.
    callee: Vec<usize>,
    /// Per edge, its caller.
    caller: Vec<usize>,
    /// Per edge, its callee when that runs outside the fleet (`url:`).
    outside_callee: Vec<Option<usize>>,
    /// A node's retry records, for the session that reads it.
    journal: Option<Journal>,
    /// A node's or a shard's own rows: the services it serves and the
    /// edges they call on (`GET /counts?rows=own`).
    own: Option<(Vec<u32>, Vec<u32>)>,
    /// A sample of the exchanges on every edge.
    tap: Tap,
    /// What the endpoints refused.
    refusals: Refusals,
    /// Every counter as last read from the nodes a distributed session
    /// drives (see [`Metrics::set_remote`]).
    remote: Mutex<Option<Counts>>,
    /// Per service, where its replicas' counters start in `replicas`
    /// (services of one replica have none).
    replica_start: Vec<Option<usize>>,
    /// Per replica: service, replica, and its requests, errors, first
    /// attempts and retries.
    replicas: Vec<(usize, u32, [AtomicU64; 4])>,
    /// Per edge, where its callee's replicas' outlier rows start in
    /// `outliers` (edges to a callee of one replica have none).
    outlier_start: Vec<Option<usize>>,
    /// Per edge and callee replica: its ejections and whether it is out
    /// now, as last published (see [`Metrics::set_outliers`]).
    outliers: Vec<(usize, u32, [AtomicU64; 2])>,
    /// Per service, the root it is, in a topology of many.
    root_of: Vec<Option<usize>>,
    /// Per root of a topology of many.
    roots: Vec<RootCounters>,
}

impl Metrics {
    /// Counters for a fleet of `services` services and these edges
    /// (caller, callee), in topology order.
    pub fn new(services: usize, edges: Vec<(usize, usize)>) -> Metrics {
        let edge_count = edges.len();
        Metrics {
            services: (0..services).map(|_| ServiceCounters::default()).collect(),
            edges: edges.iter().map(|_| EdgeCounters::default()).collect(),
            callee: edges.iter().map(|&(_, to)| to).collect(),
            caller: edges.iter().map(|&(from, _)| from).collect(),
            outside_callee: vec![None; edges.len()],
            storm: StormTracker::new(edges),
            root_sent: AtomicU64::new(0),
            root_ok: AtomicU64::new(0),
            root_errors: AtomicU64::new(0),
            root_dropped: AtomicU64::new(0),
            root_skipped: AtomicU64::new(0),
            ticks: AtomicU64::new(0),
            lag_us: AtomicU64::new(0),
            lag_max_us: AtomicU64::new(0),
            fd_errors: AtomicU64::new(0),
            interval_latency: Mutex::new(new_histogram()),
            journal: None,
            own: None,
            tap: Tap::new(edge_count),
            refusals: Refusals::default(),
            remote: Mutex::new(None),
            replica_start: vec![None; services],
            replicas: Vec::new(),
            outlier_start: vec![None; edge_count],
            outliers: Vec::new(),
            root_of: vec![None; services],
            roots: Vec::new(),
        }
    }

    /// Keeps a [`Journal`] of the retries sent here and the roots
    /// completed here, for a session that reads this process as one node
    /// of a fleet.
    pub fn with_journal(mut self) -> Metrics {
        self.journal = Some(Journal::new());
        self
    }

    /// The wire tap.
    pub fn tap(&self) -> &Tap {
        &self.tap
    }

    /// The journal, on a node.
    pub fn journal(&self) -> Option<&Journal> {
        self.journal.as_ref()
    }

    /// In a distributed session, the counters live in the nodes: from now
    /// on [`Metrics::counts`] answers `counts`, the fleet's counters as
    /// read from every node together with this process's own root counts
    /// at the same moment, until the next call.
    pub fn set_remote(&self, counts: Counts) {
        *self.remote.lock().unwrap_or_else(|e| e.into_inner()) = Some(counts);
    }

    /// Marks the services that run outside the fleet (`url:`, by
    /// `outside[id]`). Nothing serves them in the lab, so what their
    /// callers measured is counted for them: each attempt sent is a
    /// request, answered (with its status, its claim header and its time)
    /// or not: no answer in time is a timeout, a refused, reset or cut-off
    /// connection an error with no claim.
    pub fn with_outside(mut self, outside: &[bool]) -> Metrics {
        self.outside_callee = self
            .callee
            .iter()
            .map(|&to| outside.get(to).copied().unwrap_or(false).then_some(to))
            .collect();
        self
    }

    /// An attempt on an edge into an outside service ended: count it as
    /// that service's request.
    fn outside_answered(&self, service: usize, e: &Attempted) {
        let Some(s) = self.services.get(service) else {
            return;
        };
        bump(&s.requests);
        let us = u64::try_from(e.elapsed.as_micros()).unwrap_or(u64::MAX);
        s.latency.0[latency_bucket(us)].fetch_add(1, Ordering::Relaxed);
        s.latency_us.fetch_add(us, Ordering::Relaxed);
        let claim = match e.outcome {
            Classified::Success => return,
            Classified::NoResponse if e.timed_out => {
                bump(&s.timeouts);
                return;
            }
            Classified::NoResponse => Claim::Missing,
            Classified::Error { claim } => claim,
        };
        bump(&s.errors);
        bump(&s.claims_returned[claim.index()]);
    }

    /// What the endpoints refused.
    pub fn refusals(&self) -> &Refusals {
        &self.refusals
    }

    /// The storm tracker.
    pub fn storm(&self) -> &StormTracker {
        &self.storm
    }

    /// A root request is sent.
    pub fn root_sent(&self) {
        self.root_sent.fetch_add(1, Ordering::Relaxed);
    }

    /// A root request could not be sent: too many in flight.
    pub fn root_dropped(&self) {
        self.root_dropped.fetch_add(1, Ordering::Relaxed);
    }

    /// `n` root requests offered by `service`'s closed-loop clients at
    /// their nominal rate ([`ServiceCounts::baseline_roots`]).
    ///
    /// [`ServiceCounts::baseline_roots`]: crate::metrics::ServiceCounts::baseline_roots
    pub fn nominal_roots(&self, service: usize, n: u64) {
        if let Some(s) = self.services.get(service) {
            s.nominal_roots.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// `n` root requests were not sent: the generator fell behind.
    pub fn root_skipped(&self, n: u64) {
        self.root_skipped.fetch_add(n, Ordering::Relaxed);
    }

    /// The lab could not open or accept a connection for want of file
    /// descriptors.
    pub fn fd_error(&self) {
        bump(&self.fd_errors);
    }

    /// The lab ticked `late` after its schedule.
    pub fn tick_lag(&self, late: Duration) {
        let us = u64::try_from(late.as_micros()).unwrap_or(u64::MAX);
        self.ticks.fetch_add(1, Ordering::Relaxed);
        self.lag_us.fetch_add(us, Ordering::Relaxed);
        self.lag_max_us.store(us, Ordering::Relaxed);
    }

    /// A root request completed.
    pub fn root_done(&self, ok: bool, latency: Duration) {
        if ok {
            self.root_ok.fetch_add(1, Ordering::Relaxed);
        } else {
            self.root_errors.fetch_add(1, Ordering::Relaxed);
        }
        let us = (latency.as_micros() as u64).clamp(1, 60_000_000);
        let _ = self
            .interval_latency
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .record(us);
    }

    /// Takes the latency histogram gathered since the last call.
    pub fn take_latency(&self) -> Histogram<u64> {
        std::mem::replace(
            &mut *self
                .interval_latency
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
            new_histogram(),
        )
    }

    /// A job was refused: `service`'s queue was full.
    pub fn shed(&self, service: usize) {
        if let Some(s) = self.services.get(service) {
            bump(&s.shed);
        }
    }

    /// A job joined one of `service`'s queues: the depth is the sum over
    /// its replicas' queues.
    pub fn queued(&self, service: usize) {
        if let Some(s) = self.services.get(service) {
            let d = s.queue_depth.fetch_add(1, Ordering::Relaxed) + 1;
            s.queue_peak.fetch_max(d, Ordering::Relaxed);
        }
    }

    /// A job left one of `service`'s queues for a worker.
    pub fn dequeued(&self, service: usize) {
        if let Some(s) = self.services.get(service) {
            let _ = s
                .queue_depth
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |d| {
                    Some(d.saturating_sub(1))
                });
        }
    }

    /// A request to `service` was refused over its concurrency limit.
    pub fn limited(&self, service: usize) {
        if let Some(s) = self.services.get(service) {
            bump(&s.limited);
        }
    }

    /// `service`'s adaptive concurrency limit and its estimate of the
    /// latency with no queue, now.
    pub fn set_limit_gauges(&self, service: usize, limit: u32, no_load: Option<Duration>) {
        if let Some(s) = self.services.get(service) {
            s.concurrency_limit
                .store(u64::from(limit), Ordering::Relaxed);
            let us = no_load.map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
            s.no_load_us.store(us, Ordering::Relaxed);
        }
    }

    /// A job of `service` took a worker.
    pub fn job_started(&self, service: usize) {
        if let Some(s) = self.services.get(service) {
            s.in_service.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A job of `service` gave its worker back after `busy`.
    pub fn job_done(&self, service: usize, busy: Duration) {
        if let Some(s) = self.services.get(service) {
            s.in_service.fetch_sub(1, Ordering::Relaxed);
            let us = u64::try_from(busy.as_micros()).unwrap_or(u64::MAX);
            s.busy_us.fetch_add(us, Ordering::Relaxed);
        }
    }

    /// A finished job's answer had nobody to go to.
    pub fn work_wasted(&self, service: usize) {
        if let Some(s) = self.services.get(service) {
            bump(&s.work_wasted);
        }
    }

    /// A job whose caller had gone was skipped.
    pub fn job_skipped(&self, service: usize) {
        if let Some(s) = self.services.get(service) {
            bump(&s.skipped);
        }
    }

    /// Sets an edge's live gauges: its budget's level (`None`: no budget,
    /// read as 0 and 0) and its breaker's state (`None`: no breaker, read
    /// as closed). The fleet calls it once a sample, not the request path.
    pub fn set_edge_gauges(
        &self,
        edge: usize,
        level: Option<Level>,
        breaker: Option<BreakerState>,
    ) {
        let Some(e) = self.edges.get(edge) else {
            return;
        };
        let milli = |v: f64| (v.max(0.0) * 1000.0).round() as u64;
        let (value, limit) = level.map_or((0, 0), |l| (milli(l.value), milli(l.limit)));
        e.budget_level.store(value, Ordering::Relaxed);
        e.budget_limit.store(limit, Ordering::Relaxed);
        let state = breaker.unwrap_or(BreakerState::Closed);
        e.breaker.store(state.level(), Ordering::Relaxed);
    }

    /// A copy of every counter. Each service's queue peak starts again
    /// from the depth now, so a sample's peak is the deepest since the
    /// sample before.
    ///
    /// In a distributed session, the counters as last read from the nodes
    /// (see [`Metrics::set_remote`]).
    pub fn counts(&self) -> Counts {
        if let Some(c) = &*self.remote.lock().unwrap_or_else(|e| e.into_inner()) {
            return c.clone();
        }
        self.local_counts()
    }

    /// A copy of the counters of this process, whatever the nodes say.
    pub fn local_counts(&self) -> Counts {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Counts {
            services: self.services.iter().map(ServiceCounters::load).collect(),
            edges: self.edges.iter().map(edge_counts).collect(),
            root: self.root_counts(),
            roots: self
                .roots
                .iter()
                .map(|r| PerRootCounts {
                    sent: l(&r.sent),
                    ok: l(&r.ok),
                    errors: l(&r.errors),
                    latency: LatencyCounts(std::array::from_fn(|b| {
                        r.latency.0[b].load(Ordering::Relaxed)
                    })),
                    radius: r.radius.iter().map(l).collect(),
                })
                .collect(),
            replicas: self.replica_counts(),
            outliers: self.outlier_counts(),
        }
    }
}

fn bump(a: &AtomicU64) {
    a.fetch_add(1, Ordering::Relaxed);
}

impl Observer for Metrics {
    fn out_of_files(&self) {
        self.fd_error();
    }

    fn sent_to_replica(&self, callee: usize, replica: u32, retry: bool) {
        if let Some(c) = self.replica(callee, replica) {
            bump(&c[if retry { 3 } else { 2 }]);
        }
    }

    fn served(&self, e: &Served) {
        let Some(s) = self.services.get(e.service) else {
            return;
        };
        bump(&s.requests);
        let us = u64::try_from(e.elapsed.as_micros()).unwrap_or(u64::MAX);
        s.latency.0[latency_bucket(us)].fetch_add(1, Ordering::Relaxed);
        s.latency_us.fetch_add(us, Ordering::Relaxed);
        if e.is_root {
            bump(&s.roots);
            let radius = self.storm.finish(e.trace.root);
            if let (Some(r), Some(k)) = (radius, self.root_of.get(e.service).copied().flatten()) {
                if let Some(c) = self.roots.get(k) {
                    let b = (r.max(1) as usize - 1).min(RADIUS_BUCKETS - 1);
                    bump(&c.radius[b]);
                }
            }
            if let Some(j) = &self.journal {
                j.done(e.trace.root, e.service);
            }
        }
        if e.status == ABANDONED {
            bump(&s.timeouts);
            return;
        }
        if !error_ownership::is_error_status(e.status) {
            return;
        }
        bump(&s.errors);
        match e.status {
            500 => bump(&s.errors_500),
            502 => bump(&s.errors_502),
            503 => bump(&s.errors_503),
            504 => bump(&s.errors_504),
            _ => {}
        }
        let claim = match e.claim {
            Some((true, _)) => Claim::Claimed,
            Some((false, _)) => Claim::Unclaimed,
            None => Claim::Missing,
        };
        bump(&s.claims_returned[claim.index()]);
        if e.own_fault {
            bump(&s.own_errors);
            if claim == Claim::Unclaimed {
                bump(&s.wrongly_unclaimed);
            }
        }
        match e.claim {
            Some((true, ClaimReason::AtLeastOnce)) => bump(&s.at_least_once_claims),
            Some((true, _)) if !e.own_fault => bump(&s.wrongly_claimed),
            _ => {}
        }
    }

    fn attempted(&self, e: &Attempted) {
        if let Some(edge) = self.edges.get(e.edge) {
            bump(&edge.attempts);
            if e.outcome.is_failure() && !e.cancelled {
                bump(&edge.failed_attempts);
            }
            let us = u64::try_from(e.elapsed.as_micros()).unwrap_or(u64::MAX);
            edge.attempt_us.fetch_add(us, Ordering::Relaxed);
        }
        if let Some(&Some(to)) = self.outside_callee.get(e.edge) {
            self.outside_answered(to, e);
        }
        let Some(s) = self.services.get(e.service) else {
            return;
        };
        if let Some(claim) = e.outcome.claim() {
            bump(&s.claims_seen[claim.index()]);
        }
        if e.late {
            bump(&s.late_attempts);
        }
    }

    fn exchanged(&self, e: &Exchanged) {
        self.tap.offer(e);
    }

    fn retry_sent(&self, e: &RetrySent) {
        if let Some(s) = self.services.get(e.service) {
            bump(&s.retries_sent);
        }
        if let Some(edge) = self.edges.get(e.edge) {
            bump(&edge.retries);
        }
        if let Some(t) = e.trace {
            self.storm.record(t.root, e.edge);
            if let Some(j) = &self.journal {
                j.retry(t.root, e.edge);
            }
        }
    }

    fn hedges_cancelled(&self, _service: usize, edge: usize, cancelled: u32) {
        if let Some(e) = self.edges.get(edge) {
            e.hedges_cancelled
                .fetch_add(u64::from(cancelled), Ordering::Relaxed);
        }
    }

    fn call_failed(&self, e: &CallFailed) {
        let (Some(s), Some(edge)) = (self.services.get(e.service), self.edges.get(e.edge)) else {
            return;
        };
        bump(&edge.failed_calls);
        match e.reason {
            StopReason::Suppressed => {
                bump(&s.retries_suppressed);
                bump(&edge.suppressed);
            }
            StopReason::Refused(_) => {
                bump(&s.retries_suppressed);
                bump(&edge.suppressed);
                bump(&edge.refused);
            }
            StopReason::BudgetDenied => {
                bump(&s.budget_denied);
                bump(&edge.budget_denied);
            }
            StopReason::BreakerOpen => bump(&edge.short_circuited),
            StopReason::Throttled => bump(&edge.throttled),
            StopReason::AttemptsExhausted
            | StopReason::NoRetriesConfigured
            | StopReason::DeadlinePassed => {}
        }
    }
}

#[cfg(test)]
mod tests;
