//! One service of the fleet: its runtime state here, what it does with a
//! request in `request`, its listener in `listen`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use futures_util::future::join_all;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::metrics::Metrics;
use crate::middleware::client::{Called, EdgeState, RetryClient};
use crate::middleware::context::{Trace, TraceHeader as _};
use crate::middleware::server::ServerConfig;
use crate::topology::mesh::Errors;
use crate::topology::{Fault, Service};
use error_ownership::conditions::Failure;
use error_ownership::retry_counter::{
    read_attempt, Rejection, RetryHistogram, DEFAULT_RETRY_SHARE,
};
use error_ownership::signal::{Refusal, Signal};
use error_ownership::DependencyMode;

use super::workers::Workers;

/// One entry of a service's calls while the fleet runs.
#[derive(Debug, Clone)]
pub(super) struct Call {
    pub(super) edge: Arc<EdgeState>,
    /// Calls per request.
    pub(super) count: u32,
    /// The share of requests that make them (drawn once a request).
    pub(super) p: f64,
}

/// A service's state while the fleet runs.
pub struct ServiceRuntime {
    id: usize,
    /// Which of the service's replicas this is (0 for a service of one).
    replica: u32,
    /// Whether the service has more than one (its replicas are counted).
    replicated: bool,
    name: String,
    calls: Vec<Call>,
    parallel: bool,
    /// Service time, µs (changed by `set`).
    work_us: AtomicU64,
    outside_url: Option<String>,
    addr: Option<SocketAddr>,
    fault: RwLock<Fault>,
    /// Its endpoint, when its service declares endpoints, and that
    /// endpoint's own fault.
    endpoint: Option<String>,
    endpoint_fault: Fault,
    context_dropped: AtomicBool,
    down: Arc<watch::Sender<bool>>,
    capacity: Option<Arc<Mutex<Shedder>>>,
    limit: Option<Arc<AdaptiveLimit>>,
    workers: Option<Arc<Workers>>,
    /// The queue length the topology gives (kept for a service without
    /// workers, whose queue is never used).
    queue: u32,
    rng: Mutex<SmallRng>,
    /// The don't-retry dialect its callers read (SPEC section 8): its
    /// refusals carry that dialect's headers.
    dialect: RwLock<Option<Signal>>,
    /// The attempt numbers its requests carried lately, read when it must
    /// refuse one under the `sre` dialect; time on it runs from `born`.
    attempts_seen: Mutex<RetryHistogram>,
    /// The dialect is `sre`: read on each request without the lock.
    counts_attempts: AtomicBool,
    born: Instant,
    client: RetryClient,
    server: Arc<ServerConfig>,
    plain: Option<Plain>,
    /// Where its listener counts the connections it could not accept.
    metrics: Arc<Metrics>,
    /// The statuses of the errors it causes and passes up.
    errors: Errors,
}

impl std::fmt::Debug for ServiceRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceRuntime")
            .field("name", &self.name)
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// A token bucket that admits `capacity` requests per second.
#[derive(Debug)]
struct Shedder {
    rate: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
}

impl Shedder {
    fn admit(&mut self) -> bool {
        let now = Instant::now();
        let dt = now.saturating_duration_since(self.at).as_secs_f64();
        self.at = now;
        self.tokens = (self.tokens + dt * self.rate).min(self.burst);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// What the endpoints of one replica of a service share: its capacity, its
/// workers and queue, its listener's state.
#[derive(Clone)]
pub(super) struct Shared {
    capacity: Option<Arc<Mutex<Shedder>>>,
    limit: Option<Arc<AdaptiveLimit>>,
    workers: Option<Arc<Workers>>,
    down: Arc<watch::Sender<bool>>,
}

impl Shared {
    /// Replica `replica` of the service whose first node is `id`.
    pub(super) fn new(id: usize, replica: u32, spec: &Service, metrics: &Arc<Metrics>) -> Shared {
        let (down, _) = watch::channel(spec.fault.down && spec.fault.on_replica(replica));
        Shared {
            limit: spec
                .concurrency
                .as_ref()
                .map(|c| Arc::new(AdaptiveLimit::new(c))),
            capacity: spec.capacity.map(|rate| {
                let burst = (rate / 20.0).max(1.0);
                Arc::new(Mutex::new(Shedder {
                    rate,
                    burst,
                    tokens: burst,
                    at: Instant::now(),
                }))
            }),
            workers: spec.workers.map(|n| {
                Workers::new(
                    id,
                    n as usize,
                    spec.queue as usize,
                    spec.cancel,
                    metrics.clone(),
                )
            }),
            down: Arc::new(down),
        }
    }
}

impl ServiceRuntime {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        (id, replica): (usize, u32),
        spec: &Service,
        shared: Shared,
        calls: Vec<Call>,
        client: RetryClient,
        server: Arc<ServerConfig>,
        addr: Option<SocketAddr>,
        seed: u64,
        plain: Option<Plain>,
        metrics: &Arc<Metrics>,
    ) -> ServiceRuntime {
        ServiceRuntime {
            id,
            replica,
            replicated: spec.replicas > 1,
            name: spec.name.clone(),
            calls,
            parallel: spec.parallel,
            work_us: AtomicU64::new(u64::try_from(spec.work.as_micros()).unwrap_or(u64::MAX)),
            outside_url: spec.url.clone(),
            addr,
            fault: RwLock::new(spec.fault.clone()),
            endpoint: spec.endpoint.clone(),
            endpoint_fault: spec.endpoint_fault.clone(),
            context_dropped: AtomicBool::new(spec.context_dropped),
            down: shared.down,
            capacity: shared.capacity,
            limit: shared.limit,
            workers: shared.workers,
            queue: spec.queue,
            rng: Mutex::new(SmallRng::seed_from_u64(seed)),
            dialect: RwLock::new(None),
            attempts_seen: Mutex::new(RetryHistogram::new(ATTEMPTS_WINDOW)),
            counts_attempts: AtomicBool::new(false),
            born: Instant::now(),
            client,
            server,
            plain,
            metrics: metrics.clone(),
            errors: spec.errors,
        }
    }

    /// The service's index in the topology.
    pub fn id(&self) -> usize {
        self.id
    }

    /// The service's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its URL.
    pub fn url(&self) -> String {
        match (&self.outside_url, self.addr) {
            (Some(u), _) => u.clone(),
            (None, Some(a)) => format!(
                "http://{a}/{}",
                self.endpoint.as_deref().unwrap_or_default()
            ),
            (None, None) => String::new(),
        }
    }

    /// Whether it runs outside this process (`url:`, or placed on
    /// another node): what the lab knows of it is what its callers here
    /// measured.
    pub fn is_outside(&self) -> bool {
        self.addr.is_none()
    }

    /// Its server-side configuration.
    pub fn server_config(&self) -> &Arc<ServerConfig> {
        &self.server
    }

    /// Its fault in force.
    pub fn fault(&self) -> Fault {
        self.fault.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Which of the service's replicas this is.
    pub fn replica(&self) -> u32 {
        self.replica
    }

    /// Sets its fault (the service's: it holds on this replica when it
    /// names it, or names none); `down` closes or reopens the listener.
    pub fn set_fault(&self, fault: Fault) {
        let down = fault.down && fault.on_replica(self.replica);
        *self.fault.write().unwrap_or_else(|e| e.into_inner()) = fault;
        self.down.send_if_modified(|d| {
            let changed = *d != down;
            *d = down;
            changed
        });
    }

    /// Its service time.
    pub fn work(&self) -> Duration {
        Duration::from_micros(self.work_us.load(Ordering::Relaxed))
    }

    /// Changes its resources: workers and queue (when it has workers) and
    /// service time.
    pub fn set_resources(&self, workers: Option<u32>, work: Duration, queue: u32) {
        let us = u64::try_from(work.as_micros()).unwrap_or(u64::MAX);
        self.work_us.store(us, Ordering::Relaxed);
        if let (Some(pool), Some(n)) = (&self.workers, workers) {
            pool.set_workers(n as usize);
            pool.set_queue(queue as usize);
        }
    }

    /// Its resources now: workers, service time, queue.
    pub fn resources(&self) -> (Option<u32>, Duration, u32) {
        match &self.workers {
            Some(p) => (
                Some(u32::try_from(p.workers()).unwrap_or(u32::MAX)),
                self.work(),
                u32::try_from(p.queue()).unwrap_or(u32::MAX),
            ),
            None => (None, self.work(), self.queue),
        }
    }

    /// Its workers and queue, when it has them.
    pub fn workers(&self) -> Option<&Arc<Workers>> {
        self.workers.as_ref()
    }

    /// Whether its context is dropped.
    pub fn context_dropped(&self) -> bool {
        self.context_dropped.load(Ordering::Relaxed)
    }

    /// Writes its edges' live gauges (budget level, breaker state, read on
    /// its client's clock; the replicas out, on the edge's balancer's).
    pub(super) fn publish_gauges(&self, metrics: &Metrics) {
        let now = self.client.now();
        for c in &self.calls {
            let (level, breaker) = c.edge.live(now);
            metrics.set_edge_gauges(c.edge.id, level, breaker);
            let b = c.edge.balancer();
            metrics.set_outliers(c.edge.id, b.outliers(b.now()));
        }
        if let Some(l) = &self.limit {
            let (limit, no_load) = l.live();
            metrics.set_limit_gauges(self.id, limit, no_load);
        }
    }

    /// Sets the dialect its refusals speak.
    pub fn set_dialect(&self, signal: Option<Signal>) {
        *self.dialect.write().unwrap_or_else(|e| e.into_inner()) = signal;
        self.counts_attempts
            .store(signal == Some(Signal::Sre), Ordering::Relaxed);
    }

    /// The dialect its refusals speak.
    pub fn dialect(&self) -> Option<Signal> {
        *self.dialect.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts an arriving request's attempt number (a request without one
    /// is a first attempt), under the `sre` dialect only.
    fn saw_attempt(&self, value: Option<&[u8]>) {
        let now = self.born.elapsed();
        let attempt = read_attempt(value).unwrap_or(0);
        self.attempts_seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .observe(now, attempt);
    }

    /// What a refusal says under the `sre` dialect: "task overloaded"
    /// (a shed, retryable) unless more than [`DEFAULT_RETRY_SHARE`] of what
    /// arrived lately were retries, then "overloaded; don't retry".
    fn sre_refusal(&self) -> Refusal {
        let now = self.born.elapsed();
        let seen = self
            .attempts_seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .rejection(now, DEFAULT_RETRY_SHARE);
        match seen {
            Rejection::Overloaded => Refusal::Shed,
            Rejection::OverloadedDontRetry => Refusal::Overloaded,
        }
    }

    /// How long a shed request had better wait before coming back: about
    /// the time the queue in front of the workers takes to drain.
    fn drain_time(&self) -> Duration {
        match &self.workers {
            Some(w) if w.workers() > 0 => {
                self.work() * (w.queue() as u32).min(1_000_000) / (w.workers() as u32).max(1)
            }
            _ => Duration::from_secs(1),
        }
    }

    /// Drops or restores its context.
    pub fn set_context_dropped(&self, dropped: bool) {
        self.context_dropped.store(dropped, Ordering::Relaxed);
    }

    fn roll(&self, rate: f64) -> bool {
        if rate <= 0.0 {
            return false;
        }
        if rate >= 1.0 {
            return true;
        }
        self.rng
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .random_bool(rate)
    }

    fn admit(&self) -> bool {
        match &self.capacity {
            None => true,
            Some(s) => s.lock().unwrap_or_else(|e| e.into_inner()).admit(),
        }
    }

    /// The calls this request makes, each sampled call drawn once (all its
    /// `count` or none) from the service's seeded generator as the request
    /// reaches it; no allocation on the request path.
    fn drawn(&self) -> impl Iterator<Item = &Call> {
        self.calls.iter().filter(|c| self.roll(c.p))
    }

    /// Makes this request's outbound calls, for a request at `trace` whose
    /// caller stops waiting at `deadline` (if known); an error when a
    /// fail-close call failed (the request has failed).
    async fn run_calls(
        &self,
        trace: Option<Trace>,
        deadline: Option<Instant>,
    ) -> Result<(), CallsFailed> {
        let failing =
            |c: &Called| c.outbound.failed && c.outbound.mode == DependencyMode::FailClose;
        if self.parallel {
            let calls = self
                .drawn()
                .flat_map(|c| std::iter::repeat_n(&c.edge, c.count as usize))
                .map(|e| self.client.call(e, trace, deadline));
            let called = join_all(calls).await;
            return match called.iter().find(|c| failing(c)) {
                Some(c) => Err(CallsFailed {
                    last: c.last,
                    overloaded: called.iter().any(|c| c.overloaded),
                }),
                None => Ok(()),
            };
        }
        let mut overloaded = false;
        for c in self.drawn() {
            for _ in 0..c.count {
                let o = self.client.call(&c.edge, trace, deadline).await;
                overloaded |= o.overloaded;
                if failing(&o) {
                    return Err(CallsFailed {
                        last: o.last,
                        overloaded,
                    });
                }
            }
        }
        Ok(())
    }

    /// The plain baseline: the same calls with bare reqwest, no retries, no
    /// records; traced (see [`Plain`]), each with the child of `trace`
    /// and within its edge's per-attempt timeout.
    async fn run_calls_plain(
        &self,
        plain: &Plain,
        trace: Option<Trace>,
    ) -> Result<(), CallsFailed> {
        let child = trace.map(Trace::child).filter(|_| plain.traced);
        for c in self.drawn() {
            for _ in 0..c.count {
                let call = plain_call(&plain.http, c.edge.url(), child);
                let ok = if plain.traced {
                    let timeout = c.edge.timeout();
                    tokio::time::timeout(timeout, call).await.unwrap_or(false)
                } else {
                    call.await
                };
                if !ok && c.edge.mode == DependencyMode::FailClose {
                    return Err(CallsFailed {
                        last: None,
                        overloaded: false,
                    });
                }
            }
        }
        Ok(())
    }
}

/// The plain baseline's client, and whether it carries the lab's trace
/// and the per-attempt timeout ([`super::FleetOptions::plain_traced`]).
#[derive(Debug, Clone)]
pub(super) struct Plain {
    pub(super) http: reqwest::Client,
    pub(super) traced: bool,
}

/// One plain call to `url`, with `trace` in the lab's header if given:
/// whether it succeeded, its body read.
async fn plain_call(http: &reqwest::Client, url: &str, trace: Option<Trace>) -> bool {
    let sent = match trace {
        None => http.get(url).send().await,
        Some(t) => match http.get(url).build() {
            Ok(mut req) => {
                req.headers_mut()
                    .insert(&crate::middleware::context::TRACE, t.header_value());
                http.execute(req).await
            }
            Err(e) => Err(e),
        },
    };
    match sent {
        Ok(r) => {
            let ok = r.status().is_success();
            r.bytes().await.is_ok() && ok
        }
        Err(_) => false,
    }
}

/// A request's calls failed it: how the failing call's last attempt
/// failed (`None`: no attempt left, the caller's own breaker, throttle or
/// deadline stopped it, which makes the error the caller's own).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct CallsFailed {
    pub(super) last: Option<Failure>,
    /// A call of the request's failed on an overloaded callee's answer
    /// (see [`Called::overloaded`]).
    pub(super) overloaded: bool,
}

/// How far back the `sre` dialect counts attempt numbers ("recent history").
const ATTEMPTS_WINDOW: Duration = Duration::from_secs(10);

mod limit;
mod listen;
mod request;
use limit::{AdaptiveLimit, Admitted};
pub(super) use listen::serve;
pub use request::router;
