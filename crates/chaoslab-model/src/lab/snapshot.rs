//! Snapshots: what the dashboard and the headless progress line read.
//!
//! The runner publishes one [`Snapshot`] per tick. Front ends only read
//! snapshots and send actions; they never touch the fleet.

use std::time::Duration;

use std::collections::VecDeque;

use super::action::Event;
use super::figures::{Figure, Figures, Scope, Window};
use super::state::LabState;
use crate::metrics::tap::Tapped;
use crate::metrics::tap::Then;
use crate::metrics::{Counts, RadiusStats, Sample, Series};
use crate::topology::model::Prediction;
use crate::topology::Topology;
use error_ownership::learn::Learned;
use error_ownership::retry::StopReason;

/// Points of history a snapshot carries per series.
pub const HISTORY_POINTS: usize = 120;

/// What a service is doing right now, for colouring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceState {
    /// Answering successfully.
    Healthy,
    /// Failing on its own and claiming: the owner.
    Owner,
    /// Passing errors from below up, unclaimed.
    Propagating,
    /// Its request context is dropped.
    ContextDropped,
    /// Listener closed.
    Down,
    /// Shedding over capacity.
    Shedding,
    /// No traffic in the window.
    Idle,
}

/// One service, live.
#[derive(Debug, Clone)]
pub struct ServiceView {
    /// Name.
    pub name: String,
    /// Depth from the entry.
    pub depth: usize,
    /// Every per-service figure of the catalogue over the live window
    /// (rates, error rate, amplification and the model's).
    pub live: Figures,
    /// Every per-service figure since the last reset (claim, retry and
    /// attribution counts).
    pub total: Figures,
    /// Retries per second over the window.
    pub retry_rps: f64,
    /// Runs the ownership middleware.
    pub ownership: bool,
    /// An outside service.
    pub outside: bool,
    /// What it is doing.
    pub state: ServiceState,
    /// What its learned memory says about its dependencies (by service).
    pub learned: Vec<Learned>,
    /// Amplification per sample, oldest first (bounded).
    pub history: Vec<f64>,
    /// Per replica over the window, for a service of more than one.
    pub replicas: Vec<super::replicas::ReplicaReport>,
    /// Its service, when it is one of that service's endpoints (SPEC
    /// section 11).
    pub service: Option<String>,
}

impl ServiceView {
    /// `rps / baseline_rps` over the window, `None` with no baseline
    /// traffic.
    pub fn amplification(&self) -> Option<f64> {
        let a = self.live[Figure::Amplification];
        (self.live[Figure::BaselineRps] > 0.0 && !a.is_nan()).then_some(a)
    }

    /// The requests it answered over the live window, when that window
    /// expected too few of them for a ratio: what a view shows instead
    /// (`n=3`).
    pub fn too_few(&self) -> Option<u64> {
        let a = self.live[Figure::Amplification];
        (self.live[Figure::BaselineRps] > 0.0 && a.is_nan())
            .then(|| self.live.count(Figure::Requests))
    }

    /// Whether its live count differs from the model's beyond chance.
    pub fn differs_from_model(&self) -> bool {
        self.live[Figure::ModelDiffers] > 0.0
    }

    /// A count figure since the last reset and the two after it in the
    /// catalogue (claims: true, false, missing).
    pub fn claims(&self, first: Figure) -> [u64; 3] {
        let f = |k: usize| self.total.count(Figure::ALL[first as usize + k]);
        [f(0), f(1), f(2)]
    }
}

/// One edge, live.
#[derive(Debug, Clone)]
pub struct EdgeView {
    /// Caller.
    pub from: usize,
    /// Callee.
    pub to: usize,
    /// Attempts per second.
    pub attempt_rps: f64,
    /// Retries per second.
    pub retry_rps: f64,
    /// Its budget's level and limit now (tokens, quota left, or retries
    /// in flight against those allowed); `None` without a budget.
    pub budget: Option<(f64, f64)>,
    /// Its circuit breaker's state now: 0 closed (or none), 1 half-open,
    /// 2 open.
    pub breaker: u64,
    /// Per replica of its callee (when it has more than one): whether its
    /// outlier detection has it ejected now, and its ejections over the
    /// window.
    pub outliers: Vec<super::replicas::OutlierReport>,
}

/// The end user's view.
#[derive(Debug, Clone, Default)]
pub struct RootView {
    /// Sent per second over the window.
    pub rps: f64,
    /// Success fraction over the window.
    pub availability: f64,
    /// Latency p50 over the last sample, ms.
    pub p50_ms: f64,
    /// Latency p99 over the last sample, ms.
    pub p99_ms: f64,
    /// Sent since the last reset.
    pub sent: u64,
    /// Errors since the last reset.
    pub errors: u64,
    /// Dropped (in-flight bound) since the last reset.
    pub dropped: u64,
    /// Availability per sample, oldest first (bounded).
    pub availability_history: Vec<f64>,
    /// Sent per second per sample, oldest first (bounded).
    pub rps_history: Vec<f64>,
    /// Root requests per second that succeeded, over the window.
    pub goodput_rps: f64,
    /// Succeeded per second, one point a second, oldest first (bounded).
    pub goodput_history: Vec<f64>,
    /// Offered per second (sent, or not sent because too many were in
    /// flight), one point a second, oldest first (bounded).
    pub offered_history: Vec<f64>,
}

/// Everything a front end shows, at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Time since the run started.
    pub t: Duration,
    /// The topology's name.
    pub topology: String,
    /// Everything the actions have set: policy, faults, contexts, rate,
    /// attribution, rule 5, paused.
    pub state: LabState,
    /// The window rates are measured over.
    pub window: Duration,
    /// The end user's view.
    pub root: RootView,
    /// Storm radius over the window: max, and mean over roots with retries.
    pub radius_max: u64,
    /// See `radius_max`.
    pub radius_mean: f64,
    /// The model's radius for the faults and policy in force.
    pub radius_model: usize,
    /// The worst radius over every service failing, under this policy.
    pub radius_static: usize,
    /// Per root over the live window, for a topology of many (SPEC
    /// section 11).
    pub roots: Vec<super::roots::RootReport>,
    /// Retries suppressed since the last reset.
    pub spurious_avoided: u64,
    /// The model's recovery threshold under the policy in force (SPEC
    /// section 7): the highest entry rate at which the fleet drains when
    /// every attempt times out. `None` when no service has workers.
    pub recovery_threshold: Option<f64>,
    /// The one root's think time when it is a closed loop of clients:
    /// its clients in force are the offered rate times it.
    pub think: Option<Duration>,
    /// Per service, topology order.
    pub services: Vec<ServiceView>,
    /// Per edge, topology order.
    pub edges: Vec<EdgeView>,
    /// The newest events, oldest first (bounded).
    pub events: Vec<Event>,
    /// The newest requests the endpoints refused, with when (bounded):
    /// `POST /actions from http://evil.example (refused: origin)`.
    pub refused: Vec<(Duration, String)>,
    /// Why the live window's figures are lower bounds (the machine could
    /// not carry the load); empty when the lab keeps up.
    pub saturation: Vec<String>,
    /// The wire tap: sampled exchanges on the edges of the services this
    /// process runs, oldest first (bounded).
    pub tap: Vec<TapLine>,
    /// A scenario's timeline as it plays (`None`: no scenario).
    pub timeline: Option<super::timeline::TimelineView>,
}

/// One sampled exchange, as the wire carried it and as its caller took
/// it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TapLine {
    /// Its number: a reader skips what it has shown.
    pub seq: u64,
    /// When, on the lab's clock (roughly: the tap's clock started with
    /// the fleet).
    pub t: Duration,
    /// The caller.
    pub from: usize,
    /// The callee.
    pub to: usize,
    /// The caller's and the callee's names.
    pub names: (String, String),
    /// The answer: `500`, or `no answer`.
    pub status: Option<u16>,
    /// The claim header line as sent (`x-error-claim: false`), if any.
    pub header: Option<String>,
    /// What the caller did: `retried`, `not retried: …`, `done`.
    pub then: String,
}

impl TapLine {
    /// `B → C  500  x-error-claim: false  (not retried: unclaimed)`.
    pub fn text(&self) -> String {
        let status = self
            .status
            .map_or_else(|| "no answer".to_string(), |s| s.to_string());
        let header = self
            .header
            .as_ref()
            .map_or_else(String::new, |h| format!("  {h}"));
        format!(
            "{} → {}  {status}{header}  ({})",
            self.names.0, self.names.1, self.then
        )
    }
}

/// What a caller did after an answer to its attempt `attempt`, in words.
fn then_text(then: Then, attempt: u32) -> String {
    match then {
        Then::Done => "done".into(),
        Then::Retried => "retried".into(),
        Then::Proxy if attempt == 0 => "the sidecar's first try".into(),
        Then::Proxy => format!("the sidecar's retry {attempt}"),
        Then::Stopped(r) => match r {
            StopReason::Suppressed => "not retried: unclaimed".into(),
            StopReason::Refused(_) => "not retried: told not to".into(),
            StopReason::BreakerOpen => "breaker open".into(),
            StopReason::Throttled => "throttled".into(),
            StopReason::AttemptsExhausted => "not retried: attempts used".into(),
            StopReason::NoRetriesConfigured => "not retried: no retries".into(),
            StopReason::BudgetDenied => "not retried: budget".into(),
            StopReason::DeadlinePassed => "not retried: deadline passed".into(),
        },
    }
}

/// The tap's samples as lines (`header` is the claim header's name).
fn tap_lines(tapped: &[Tapped], t: &Topology) -> Vec<TapLine> {
    tapped
        .iter()
        .filter_map(|x| {
            let e = t.edges.get(x.edge)?;
            Some(TapLine {
                seq: x.seq,
                t: x.t,
                from: e.from,
                to: e.to,
                names: (
                    t.services[e.from].name.clone(),
                    t.services[e.to].name.clone(),
                ),
                status: x.status,
                header: x
                    .claim
                    .map(|v| format!("{}: {}", t.ownership.header, v.text())),
                then: then_text(x.then, x.attempt),
            })
        })
        .collect()
}

impl Snapshot {
    /// The caption this snapshot shows, if it is not `said` (the one
    /// shown last), which it then becomes: each caption once, as it
    /// passes (the headless runner and the tour print them so).
    pub fn new_caption(&self, said: &mut Option<(Duration, String)>) -> Option<String> {
        let c = self.timeline.as_ref()?.caption.clone()?;
        if said.as_ref() == Some(&c) {
            return None;
        }
        let text = c.1.clone();
        *said = Some(c);
        Some(text)
    }
}

/// What [`build`] reads: the lab's parts, borrowed.
#[derive(Debug)]
pub struct Inputs<'a> {
    /// The sample series.
    pub series: &'a Series,
    /// Counters at the last reset.
    pub base: &'a Counts,
    /// The window live rates are measured over.
    pub window: Duration,
    /// The sampling period.
    pub tick: Duration,
    /// The topology with the state written in.
    pub topology: &'a Topology,
    /// The state in force.
    pub state: &'a LabState,
    /// The model's prediction for it.
    pub prediction: &'a Prediction,
    /// The static radius under its policy.
    pub static_radius: usize,
    /// Each root's, for a topology of many roots.
    pub static_radii: &'a [usize],
    /// The recovery threshold under its policy.
    pub recovery_threshold: Option<f64>,
    /// The wire tap's newest samples.
    pub tap: &'a [Tapped],
    /// Per service: whether it is outside the fleet (a `url:`).
    pub outside: &'a [bool],
    /// Per service: what its memory has learned of its dependencies.
    pub learned: Vec<Vec<Learned>>,
    /// The newest events.
    pub events: &'a VecDeque<Event>,
    /// The newest refusals of the endpoints, with when.
    pub refused: Vec<(Duration, String)>,
}

/// The live window (the newest sample against the one a window earlier)
/// and the counts since the last reset, as windows the catalogue reads.
struct Live<'a> {
    latest: &'a Sample,
    w: Window<'a>,
    total: Window<'a>,
    /// One sample a second, for the history sparklines.
    history: Vec<&'a Sample>,
}

/// The snapshot of a running lab.
pub fn build(mut i: Inputs<'_>) -> Snapshot {
    let mut learned = std::mem::take(&mut i.learned);
    learned.resize_with(i.topology.services.len(), Vec::new);
    let series = i.series;
    let latest = series.latest().expect("the series is never empty");
    let first = series.iter().next().expect("the series is never empty");
    let from = series
        .at_or_before(latest.t.saturating_sub(i.window))
        .unwrap_or(first);
    let mut radius = RadiusStats::default();
    for s in series.between(from.t, latest.t) {
        radius.merge(&s.radius);
    }
    let window = |counts: Counts, dt: f64, radius: RadiusStats, since: Duration| Window {
        counts,
        dt,
        topology: i.topology,
        prediction: i.prediction,
        static_radius: i.static_radius,
        radius,
        root_latency_ms: latest.latency_ms,
        queue_peaks: series.queue_peaks(since, latest.t),
        cache: Default::default(),
    };
    let per_point = (Duration::from_secs(1).as_millis()
        / i.tick.max(Duration::from_millis(1)).as_millis())
    .max(1) as usize;
    let live = Live {
        latest,
        w: window(
            latest.counts.since(&from.counts),
            latest.t.saturating_sub(from.t).as_secs_f64(),
            radius,
            from.t,
        ),
        total: window(
            latest.counts.since(i.base),
            latest.t.saturating_sub(first.t).as_secs_f64(),
            RadiusStats::default(),
            first.t,
        ),
        history: series
            .iter()
            .skip(series.len().saturating_sub(HISTORY_POINTS * per_point + 1))
            .step_by(per_point)
            .collect(),
    };
    Snapshot {
        t: latest.t,
        topology: i.topology.name.clone(),
        state: i.state.clone(),
        window: i.window,
        root: root_view(&live),
        radius_max: radius.max,
        radius_mean: radius.mean(),
        radius_model: i.prediction.storm_radius,
        radius_static: i.static_radius,
        roots: super::roots::roots(i.topology, &live.w, i.static_radii),
        spurious_avoided: live.total.counts.spurious_avoided(),
        saturation: super::figures::saturation(&Figures::measure(&live.w, Scope::Fleet, 0)),
        tap: tap_lines(i.tap, i.topology),
        timeline: None,
        recovery_threshold: i.recovery_threshold,
        think: match i.topology.load.roots.as_slice() {
            [one] => one.closed.map(|c| c.think),
            _ => None,
        },
        services: (0..i.topology.services.len())
            .map(|s| service_view(&i, &live, s, std::mem::take(&mut learned[s])))
            .collect(),
        edges: i
            .topology
            .edges
            .iter()
            .enumerate()
            .map(|(k, e)| EdgeView {
                from: e.from,
                to: e.to,
                attempt_rps: live.w.rate(live.w.counts.edges[k].attempts),
                retry_rps: live.w.rate(live.w.counts.edges[k].retries),
                budget: live.w.counts.edges[k].budget_level(),
                breaker: live.w.counts.edges[k].breaker,
                outliers: super::replicas::edge_outliers(&live.w, k),
            })
            .collect(),
        events: i.events.iter().cloned().collect(),
        refused: std::mem::take(&mut i.refused),
    }
}

fn root_view(live: &Live<'_>) -> RootView {
    let per_second = |f: &dyn Fn(&Sample, &Sample) -> f64| -> Vec<f64> {
        live.history.windows(2).map(|p| f(p[0], p[1])).collect()
    };
    let (w, total) = (&live.w.counts.root, &live.total.counts.root);
    let per_sec = |n: u64, a: &Sample, b: &Sample| {
        let d = b.t.saturating_sub(a.t).as_secs_f64();
        if d > 0.0 {
            n as f64 / d
        } else {
            0.0
        }
    };
    RootView {
        rps: live.w.rate(w.sent),
        availability: w.availability(),
        p50_ms: live.latest.latency_ms.0,
        p99_ms: live.latest.latency_ms.1,
        sent: total.sent,
        errors: total.errors,
        dropped: total.dropped,
        availability_history: per_second(&|a, b| {
            b.counts.root.since(&a.counts.root).availability()
        }),
        rps_history: per_second(&|a, b| per_sec(b.counts.root.since(&a.counts.root).sent, a, b)),
        goodput_rps: Figure::GoodputRps.read(&live.w, 0),
        goodput_history: per_second(&|a, b| per_sec(b.counts.root.since(&a.counts.root).ok, a, b)),
        offered_history: per_second(&|a, b| {
            let r = b.counts.root.since(&a.counts.root);
            per_sec(r.sent + r.dropped, a, b)
        }),
    }
}

fn service_view(i: &Inputs<'_>, live: &Live<'_>, id: usize, learned: Vec<Learned>) -> ServiceView {
    let s = &i.topology.services[id];
    let outside = i.outside[id];
    let c = &live.w.counts.services[id];
    let rps = live.w.rate(c.requests);
    let fault = &i.state.faults[id];
    let context_dropped = i.state.context_dropped[id];
    // Over its rate limit, or its queue full (a claimed 503 at once) for
    // at least 1% of what it received.
    let queue_full = c.shed > 0 && c.shed * 100 >= c.requests;
    let shedding = (s
        .capacity
        .is_some_and(|cap| rps > cap * f64::from(s.replicas.max(1)) * 1.02)
        || queue_full)
        && c.own_errors > 0;
    // Down on every replica (a fault on some is shown by its errors).
    let state = if fault.down && fault.replicas.is_none() {
        ServiceState::Down
    } else if context_dropped {
        ServiceState::ContextDropped
    } else if shedding {
        ServiceState::Shedding
    } else if c.requests == 0 {
        ServiceState::Idle
    } else if c.errors * 100 < c.requests {
        ServiceState::Healthy
    } else if outside || c.own_errors * 2 >= c.errors {
        // An outside service calls nothing the lab knows of: its errors
        // are its own.
        ServiceState::Owner
    } else {
        ServiceState::Propagating
    };
    ServiceView {
        name: s.name.clone(),
        depth: s.depth,
        live: Figures::measure(&live.w, Scope::Service, id),
        total: Figures::measure(&live.total, Scope::Service, id),
        retry_rps: live.w.rate(c.retries_sent),
        ownership: s.ownership,
        outside,
        state,
        learned,
        history: live
            .history
            .windows(2)
            .map(|p| {
                let (a, b) = (&p[0].counts.services, &p[1].counts.services);
                let base = i.topology.baseline(id, |r| {
                    b[r].baseline_roots().saturating_sub(a[r].baseline_roots()) as f64
                });
                if base > 0.0 {
                    b[id].requests.saturating_sub(a[id].requests) as f64 / base
                } else {
                    0.0
                }
            })
            .collect(),
        replicas: super::replicas::replicas(&live.w, id),
        service: s.endpoint.as_ref().map(|_| s.service_name().to_string()),
    }
}
