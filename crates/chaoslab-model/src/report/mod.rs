//! Reports: the JSON of SPEC section 6 and the terminal table, both
//! computed from a finished run's [`RunRecord`] over a window of it. Every
//! figure in them comes from the catalogue of [`crate::lab::figures`];
//! the JUnit XML of a scenario's expectations lives in [`junit`], the
//! per-second series in [`series`], the headless table in [`table`], and
//! the run cut into [`phases`] at each change of policy or fault.

pub mod endpoints;
pub mod expect;
pub mod html;
pub mod junit;
pub mod phases;
pub mod samples;
pub mod series;
pub mod table;

pub use crate::lab::replicas::{edge_outliers, replicas, OutlierReport, ReplicaReport};
pub use crate::lab::roots::RootReport;
pub use endpoints::ServiceReport;
use std::time::Duration;

use serde::Serialize;

pub use phases::PhaseReport;
pub use series::{ServiceSeries, TimeSeries};

use crate::lab::expect::Expectation;
use crate::lab::figures::{Figure, Figures, Scope, Window};
use crate::lab::{Event, LabState, RunRecord};
use crate::metrics::{RadiusStats, Sample};
use crate::topology::model::Prediction;
use crate::topology::Topology;
use error_ownership::breaker::BreakerState;
use error_ownership::learn::Learned;
use error_ownership::DependencyMode;

/// What a service learned about one dependency.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LearnedReport {
    /// The dependency.
    pub dependency: String,
    /// What the topology declares.
    pub declared: String,
    /// What the service learned.
    pub learned: String,
    /// 0..1.
    pub confidence: f64,
    /// Dependency failures remembered (decayed).
    pub samples: f64,
}

/// One edge's figures.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EdgeReport {
    /// Caller.
    pub from: String,
    /// Callee.
    pub to: String,
    /// Attempts sent.
    pub attempts: u64,
    /// Retries sent.
    pub retries: u64,
    /// Retries suppressed.
    pub suppressed: u64,
    /// Retries the budget refused.
    pub budget_denied: u64,
    /// Retries the callee's don't-retry signal forbade (among `suppressed`).
    pub refused: u64,
    /// How long one attempt took on average, ms.
    pub attempt_ms_mean: f64,
    /// Calls its open circuit breaker failed fast.
    pub short_circuited: u64,
    /// Attempts its adaptive throttle rejected locally.
    pub throttled: u64,
    /// Hedges cancelled when another attempt of their call answered first.
    pub hedges_cancelled: u64,
    /// Its circuit breaker's state at the window's end; absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breaker: Option<&'static str>,
    /// The edge's budget at the end of the window; absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetLevel>,
    /// The model's retries per root request.
    pub model_retries_per_root: f64,
    /// Per replica of its callee, what its outlier detection did (SPEC
    /// section 17); absent without outlier detection or with a callee of
    /// one replica.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outliers: Vec<OutlierReport>,
}

/// An edge's budget as it stood: a bucket draining, a quota spent, retries
/// in flight against those allowed.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BudgetLevel {
    /// The model and its numbers (`tokens 10 (0.1)`).
    pub model: Option<String>,
    /// Tokens (window, tokens), quota left, or retries in flight.
    pub level: f64,
    /// A full bucket or quota, or the retries allowed in flight.
    pub limit: f64,
}

/// One expectation's outcome.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ExpectationReport {
    /// What was expected, in words.
    pub what: String,
    /// Whether it held.
    pub passed: bool,
    /// What was measured.
    pub observed: f64,
    /// The window it was measured over, seconds.
    pub window_s: (f64, f64),
    /// The figure's name (`amplification`, `root_availability`).
    pub figure: String,
    /// The service, for a per-service figure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    /// The root, for a fleet figure read over one root's requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// The bound, in words: `<= 1.15`, `≈ 8 ± 5%`.
    pub expected: String,
    /// Where the expectation is written: `story.yaml:42:5`.
    pub source: String,
    /// Its line in that file, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Why it could not be judged (no samples in the window), if so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The window's figures the observation was read from.
    pub figures: WindowFigures,
}

/// One service's figures.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NodeReport {
    /// Name (`S/E` for an endpoint).
    pub name: String,
    /// Its service and endpoint, when its service declares endpoints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    /// (See `service`.)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Depth.
    pub depth: usize,
    /// Every per-service figure of the catalogue.
    #[serde(flatten)]
    pub figures: Figures,
    /// Why its ratios are `null`: too few requests in the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub withheld: Option<String>,
    /// Learned classification of its dependencies.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub learned: Vec<LearnedReport>,
    /// Per replica, for a service of more than one (SPEC section 11).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<ReplicaReport>,
}

/// The figures of one window of the run: what an expectation read.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WindowFigures {
    /// The samples actually used, seconds from the end of the warm-up (a
    /// sample is taken every tick, so this is the asked-for window to
    /// within half a tick).
    pub measured_s: (f64, f64),
    /// Every fleet figure over the window (`root`, `storm_radius`, ...).
    #[serde(flatten)]
    pub fleet: Figures,
    /// The named service's figures over the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<NodeReport>,
}

impl WindowFigures {
    /// Reads a figure (NaN when it is per service and the window has no
    /// service).
    pub fn get(&self, f: Figure) -> f64 {
        match f.scope() {
            Scope::Fleet => self.fleet[f],
            Scope::Service => self.service.as_ref().map_or(f64::NAN, |n| n.figures[f]),
        }
    }
}

/// One action applied during the run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EventReport {
    /// Seconds since the run started (the warm-up included).
    pub t_s: f64,
    /// What was done.
    pub event: String,
    /// Who sent it: `operator`, `timeline` or `api`.
    pub origin: &'static str,
}

/// A shard process the run lost (SPEC section 19).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LostShard {
    /// Which shard, from 0.
    pub shard: usize,
    /// When the lab saw it end: seconds since the run started (the
    /// warm-up included).
    pub t_s: f64,
    /// How it ended (`pid 4242 killed by signal 9`).
    pub why: String,
    /// How many services it served, down from then on.
    pub services: usize,
}

/// How a run came through a trigger (`compare --scenario`, a sweep's
/// cells, the comparison's page).
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Recovery {
    /// When the trigger ended (the last step), seconds after the warm-up.
    pub trigger_end_s: f64,
    /// Seconds from then until goodput stays ≥ 95% of the offered rate;
    /// `null` when it never did before the run ended.
    pub recovered_after_s: Option<f64>,
    /// What the model's fluid queue predicts (`null`: never recovers, the
    /// steps are not a load spike, or deadlines propagate, which it does
    /// not model).
    pub model_after_s: Option<f64>,
    /// Root availability from the trigger's end to the run's end.
    pub availability_after: f64,
    /// Whether the fluid queue models the run at all (not with deadlines,
    /// breakers, throttles or adaptive concurrency limits): when it does
    /// not, `model_after_s` is `null` for that reason.
    pub modelled: bool,
}

/// The whole report (SPEC section 6, extended).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Report {
    /// Topology name.
    pub topology: String,
    /// Policy mode at the end.
    pub policy: String,
    /// Attempts (R).
    pub attempts: u32,
    /// Budget ratio (B), `null` when off.
    pub budget: Option<f64>,
    /// Attribution mode at the end.
    pub attribution: String,
    /// Rule 5 at the end.
    pub at_least_once: bool,
    /// Measured seconds (after warm-up).
    pub duration_s: f64,
    /// A signal ended the run before its time: the figures cover the
    /// part that ran.
    pub interrupted: bool,
    /// The machine could not carry the load in the measured window: the
    /// measured figures are lower bounds. See `saturation`.
    pub saturated: bool,
    /// Why (empty when the lab kept up).
    pub saturation: Vec<String>,
    /// Figures the window has no value for, and why (`root.availability`
    /// is null: no root requests were measured).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unmeasured: Vec<String>,
    /// Every fleet figure (`root`, `storm_radius`, `spurious_avoided`).
    #[serde(flatten)]
    pub fleet: Figures,
    /// Per root, for a topology of many (SPEC section 11).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub roots: Vec<RootReport>,
    /// Per service: per endpoint (`S/E`) for a service with endpoints.
    pub nodes: Vec<NodeReport>,
    /// Each service that declares endpoints, over its endpoints (SPEC
    /// section 11).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<ServiceReport>,
    /// Per edge.
    pub edges: Vec<EdgeReport>,
    /// Per immediate caller of a failing service, the retries ownership
    /// stopped on the paths through it (`spurious_avoided_top_caller` is
    /// the first's; `spurious_avoided_by_callers` their sum), largest
    /// first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stops: Vec<StopsReport>,
    /// Expectations checked.
    pub expectations: Vec<ExpectationReport>,
    /// Every action applied during the run, in order: from the timeline,
    /// the dashboard or the control API.
    pub events: Vec<EventReport>,
    /// The shard processes that died during the run, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shards_lost: Vec<LostShard>,
    /// The window cut at each change of policy, fault, context,
    /// at-least-once, attribution or resources, each phase measured on its
    /// own against the model of the state in force during it (absent in a
    /// phase's own figures).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseReport>,
    /// Figures sampled each second after the warm-up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series: Option<TimeSeries>,
}

fn mode_name(m: DependencyMode) -> String {
    match m {
        DependencyMode::FailClose => "fail-close".into(),
        DependencyMode::FailOpen => "fail-open".into(),
    }
}

/// The retries ownership stopped on the paths through one immediate
/// caller of a failing service.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StopsReport {
    /// The immediate caller.
    pub caller: String,
    /// The failing service it calls (it claimed errors in the window).
    pub owner: String,
    /// Retries suppressed on calls into the caller and into every service
    /// above it.
    pub stopped: u64,
}

/// Edge `edge`'s outlier rows over the window `from..to` of the run's
/// clock, each with the model's ejections over it (the model counts from
/// the detector's start, which is the run's: a policy changed mid-run
/// starts a new detector the model does not know of). None when the edge
/// runs no outlier detection.
fn outlier_rows(
    t: &Topology,
    w: &Window<'_>,
    edge: usize,
    (from, to): (Duration, Duration),
) -> Vec<OutlierReport> {
    if t.policy.for_edge(&t.edges[edge].policy).outlier.is_none() {
        return vec![];
    }
    let (from, to) = (from.as_secs_f64(), to.as_secs_f64());
    let model = crate::topology::model::outlier::edge(t, &t.policy, w.prediction, edge, to);
    edge_outliers(w, edge)
        .into_iter()
        .map(|mut r| {
            r.model_ejections = model
                .as_ref()
                .and_then(|m| m.hosts.get(r.replica as usize))
                .map(|h| (h.ejections_between(from, to) * 1000.0).round() / 1000.0);
            r
        })
        .collect()
}

/// The samples nearest the ends of `from..to`: the oldest at or after
/// `from` and the newest at or before `to` (never before the first).
pub fn samples_between(r: &RunRecord, from: Duration, to: Duration) -> (&Sample, &Sample) {
    let first = r
        .series
        .at_or_after(from)
        .or_else(|| r.series.latest())
        .expect("the series is never empty");
    let last = r
        .series
        .at_or_before(to)
        .filter(|s| s.t >= first.t)
        .unwrap_or(first);
    (first, last)
}

/// The counters between two samples, and the model's view, as a window
/// the catalogue reads.
pub fn window<'a>(
    r: &'a RunRecord,
    (first, last): (&Sample, &Sample),
    model: (&'a Prediction, usize),
    root_latency_ms: (f64, f64),
) -> Window<'a> {
    let mut radius = RadiusStats::default();
    for s in r.series.between(first.t, last.t) {
        radius.merge(&s.radius);
    }
    Window {
        counts: last.counts.since(&first.counts),
        dt: last.t.saturating_sub(first.t).as_secs_f64(),
        topology: &r.topology,
        prediction: model.0,
        static_radius: model.1,
        radius,
        root_latency_ms,
        queue_peaks: r.series.queue_peaks(first.t, last.t),
        cache: Default::default(),
    }
}

/// One service's report over a window.
pub fn node(r: &RunRecord, w: &Window<'_>, i: usize) -> NodeReport {
    let t = &r.topology;
    let s = &t.services[i];
    NodeReport {
        name: s.name.clone(),
        service: s.endpoint.as_ref().map(|_| s.service_name().to_string()),
        endpoint: s.endpoint.clone(),
        depth: s.depth,
        figures: Figures::measure(w, Scope::Service, i),
        withheld: w.too_few(i).then(|| {
            format!(
                "too few requests for a ratio: n={}, {:.1} expected in the window (below {})",
                w.counts.services[i].requests,
                w.expected_requests(i),
                crate::lab::figures::MIN_EXPECTED_REQUESTS
            )
        }),
        learned: r.learned[i].iter().map(|l| learned(t, i, l)).collect(),
        replicas: replicas(w, i),
    }
}

fn learned(t: &Topology, i: usize, l: &Learned) -> LearnedReport {
    LearnedReport {
        dependency: t
            .services
            .get(l.dependency)
            .map_or_else(|| format!("#{}", l.dependency), |d| d.name.clone()),
        declared: t.services[i]
            .calls
            .iter()
            .map(|&e| &t.edges[e])
            .find(|e| e.to == l.dependency)
            .map_or_else(|| "?".into(), |e| mode_name(e.mode)),
        learned: mode_name(l.mode),
        confidence: l.confidence,
        samples: l.failures,
    }
}

/// What a window's fleet figures cannot say, and why.
fn unmeasured(fleet: &Figures) -> Vec<String> {
    if fleet.count(Figure::RootRequests) == 0 {
        vec![NO_ROOTS.to_string()]
    } else {
        vec![]
    }
}

/// Why a window has no availability and no root latency.
pub const NO_ROOTS: &str =
    "no root requests in this window: root.availability and root.latency_ms are null";

impl Report {
    /// The report of a finished run with a timeline: from the warm-up's
    /// end to the newest sample (the run ends on the first tick past its
    /// end), with `expectations` judged and the per-second series
    /// attached. What a headless run writes, and a tour chapter prints.
    pub fn of_run(record: &RunRecord, expectations: &[Expectation]) -> Report {
        let mut report = Report::measure(record, record.warmup, Duration::MAX);
        report.set_expectations(expect::evaluate(record, expectations));
        report.series = Some(TimeSeries::from_series(
            &record.series,
            &record.topology,
            record.warmup,
            Duration::MAX,
        ));
        report
    }

    /// Measures the window `from..to` of a finished run (root latency from
    /// the end of the warm-up, the model of the state it ended in), and
    /// each of its [`phases`] against the model of its own state.
    pub fn measure(r: &RunRecord, from: Duration, to: Duration) -> Report {
        let ends = samples_between(r, from, to);
        let latency = (r.latency_ms(0.5), r.latency_ms(0.99));
        let events: Vec<&Event> = r.events.iter().collect();
        let mut report = Report::measure_state(r, ends, &r.state, latency, &events);
        report.phases = phases::measure(r, from, to);
        report
    }

    /// The figures between two samples with the model of `state` (told
    /// the window's latencies), listing `events`; no phases.
    pub fn measure_state(
        r: &RunRecord,
        ends: (&Sample, &Sample),
        state: &LabState,
        root_latency_ms: (f64, f64),
        events: &[&Event],
    ) -> Report {
        let counts = ends.1.counts.since(&ends.0.counts);
        let (prediction, static_radius) = r.model_measured(state, Some(&counts));
        let t = &state.applied_to(&r.topology);
        let mut w = window(r, ends, (&prediction, static_radius), root_latency_ms);
        w.topology = t;
        let c = &w.counts;
        let fleet = Figures::measure(&w, Scope::Fleet, 0);
        let saturation = crate::lab::figures::saturation(&fleet);
        let nodes: Vec<NodeReport> = (0..t.services.len()).map(|i| node(r, &w, i)).collect();
        Report {
            topology: t.name.clone(),
            policy: t.policy.name(),
            attempts: t.policy.effective_attempts(),
            budget: t.policy.budget,
            attribution: t.ownership.attribution.name().into(),
            at_least_once: t.ownership.at_least_once,
            duration_s: w.dt,
            interrupted: false,
            saturated: !saturation.is_empty(),
            unmeasured: unmeasured(&fleet),
            saturation,
            fleet,
            roots: crate::lab::roots::roots(t, &w, &crate::lab::roots::static_radii(t, &t.policy)),
            services: endpoints::services(t, &nodes),
            nodes,
            edges: t
                .edges
                .iter()
                .enumerate()
                .map(|(i, e)| EdgeReport {
                    from: t.services[e.from].name.clone(),
                    to: t.services[e.to].name.clone(),
                    attempts: c.edges[i].attempts,
                    retries: c.edges[i].retries,
                    suppressed: c.edges[i].suppressed,
                    budget_denied: c.edges[i].budget_denied,
                    refused: c.edges[i].refused,
                    attempt_ms_mean: c.edges[i].attempt_latency_s() * 1000.0,
                    short_circuited: c.edges[i].short_circuited,
                    throttled: c.edges[i].throttled,
                    hedges_cancelled: c.edges[i].hedges_cancelled,
                    breaker: t
                        .policy
                        .for_edge(&e.policy)
                        .breaker
                        .map(|_| BreakerState::from_level(c.edges[i].breaker).name()),
                    budget: c.edges[i].budget_level().map(|(level, limit)| BudgetLevel {
                        model: t.policy.for_edge(&e.policy).budget.map(|b| b.describe()),
                        level,
                        limit,
                    }),
                    model_retries_per_root: w.prediction.edges[i].retries,
                    outliers: outlier_rows(t, &w, i, (ends.0.t, ends.1.t)),
                })
                .collect(),
            stops: w
                .stops_by_caller()
                .into_iter()
                .map(|c| StopsReport {
                    caller: t.services[c.caller].name.clone(),
                    owner: t.services[c.owner].name.clone(),
                    stopped: c.stopped,
                })
                .collect(),
            expectations: vec![],
            shards_lost: events
                .iter()
                .filter_map(|e| match &e.action {
                    crate::lab::Action::ShardLost {
                        shard,
                        services,
                        why,
                    } => Some(LostShard {
                        shard: *shard,
                        t_s: (e.t.as_secs_f64() * 1000.0).round() / 1000.0,
                        why: why.clone(),
                        services: services.len(),
                    }),
                    _ => None,
                })
                .collect(),
            events: events
                .iter()
                .map(|e| EventReport {
                    t_s: (e.t.as_secs_f64() * 1000.0).round() / 1000.0,
                    event: e.text.clone(),
                    origin: e.origin.name(),
                })
                .collect(),
            phases: vec![],
            series: None,
        }
    }

    /// Sets the expectations judged, and gives each phase those whose
    /// samples lie inside its own.
    pub fn set_expectations(&mut self, expectations: Vec<ExpectationReport>) {
        self.expectations = expectations;
        phases::share(&mut self.phases, &self.expectations);
    }

    /// The JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serialises")
    }

    /// Marks the report as cut short by a signal: the expectations whose
    /// windows had not closed by then fail, saying so.
    pub fn mark_interrupted(&mut self) {
        self.interrupted = true;
        let ran = self.duration_s;
        for e in &mut self.expectations {
            if e.window_s.1 > ran + 1e-9 {
                e.passed = false;
                e.note = Some(format!(
                    "the run was interrupted at {ran:.1}s, before this window closed"
                ));
            }
        }
        if let Some(last) = self.phases.last_mut() {
            last.report.interrupted = true;
        }
        phases::share(&mut self.phases, &self.expectations);
    }

    /// The node called `name`.
    pub fn node(&self, name: &str) -> Option<&NodeReport> {
        self.nodes.iter().find(|n| n.name == name)
    }
}

impl Report {
    /// The per-service table a headless run prints: on a fleet of more
    /// than [`table::TOP_ROWS`] services, the roots and the services with
    /// the highest amplification (a line says how many are left out).
    pub fn table(&self) -> String {
        table::render(self, table::Rows::Top)
    }

    /// The table with a row for every service (`--all`).
    pub fn table_all(&self) -> String {
        table::render(self, table::Rows::All)
    }

    /// The table's title and the rows of the services named.
    pub fn rows_of(&self, names: &[&str]) -> String {
        table::rows(self, &|n| names.contains(&n))
    }

    /// The table's entry line, and its saturation lines when the machine
    /// could not carry the load.
    pub fn entry_lines(&self) -> String {
        table::entry(self)
    }
}
