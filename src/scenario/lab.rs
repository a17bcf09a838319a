//! The lab: one fleet, its load, its metrics and its model, changed only
//! through [`Action`]s and read only through [`Snapshot`]s and reports.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::action::{Action, Event};
use super::snapshot::{EdgeView, RootView, ServiceState, ServiceView, Snapshot};
use crate::fleet::{Fleet, FleetError, FleetOptions};
use crate::load::{self, LoadControl};
use crate::metrics::{Counts, LatencySummary, RadiusStats, Sample, Series};
use crate::topology::model::{self, Prediction};
use crate::topology::{Policy, Topology};

/// Events kept for the log.
const MAX_EVENTS: usize = 200;
/// Points of history a snapshot carries per series.
pub const HISTORY_POINTS: usize = 120;

/// How to run a lab.
#[derive(Debug, Clone)]
pub struct LabOptions {
    /// Seed for every random choice.
    pub seed: u64,
    /// Whether to drive load into the entry (`serve` does not).
    pub load: bool,
    /// Sampling period.
    pub tick: Duration,
    /// Window for live rates.
    pub window: Duration,
    /// Root requests in flight at most.
    pub max_in_flight: usize,
}

impl Default for LabOptions {
    fn default() -> Self {
        LabOptions {
            seed: 1,
            load: true,
            tick: Duration::from_millis(250),
            window: Duration::from_secs(2),
            max_in_flight: load::DEFAULT_MAX_IN_FLIGHT,
        }
    }
}

/// A running lab.
pub struct Lab {
    fleet: Fleet,
    topology: Topology,
    control: Arc<LoadControl>,
    stop: watch::Sender<bool>,
    load_task: Option<JoinHandle<()>>,
    started: Instant,
    opts: LabOptions,
    series: Series,
    /// Counters at the last reset.
    base: Counts,
    events: VecDeque<Event>,
    all_events: Vec<Event>,
    prediction: Prediction,
    static_radius: usize,
    /// Root latency since `hist_since`.
    latency: Histogram<u64>,
    hist_since: Duration,
}

impl std::fmt::Debug for Lab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lab")
            .field("topology", &self.topology.name)
            .finish_non_exhaustive()
    }
}

impl Lab {
    /// Starts the fleet and (unless `opts.load` is off) the load.
    pub async fn start(topology: Topology, opts: LabOptions) -> Result<Lab, FleetError> {
        let fleet = Fleet::spawn(
            Arc::new(topology.clone()),
            FleetOptions {
                seed: opts.seed,
                plain: false,
            },
        )
        .await?;
        let control = Arc::new(LoadControl::new(topology.load.rps));
        let (stop, stop_rx) = watch::channel(false);
        let load_task = opts.load.then(|| {
            load::spawn(
                fleet.entry_url(),
                control.clone(),
                topology.load.arrival,
                opts.max_in_flight
                    .min(load::in_flight_for(topology.load.rps)),
                opts.seed.wrapping_mul(31).wrapping_add(7),
                fleet.metrics().clone(),
                stop_rx,
            )
        });
        let load_task = load_task.transpose()?;
        let cap = Series::capacity_for(
            topology.services.len(),
            topology.edges.len(),
            16 << 20,
            (Duration::from_secs(3600).as_millis() / opts.tick.as_millis().max(1)) as usize,
        );
        let base = fleet.metrics().counts();
        let prediction = model::predict(&topology, &topology.policy);
        let static_radius = model::static_radius(&topology, &topology.policy);
        let mut lab = Lab {
            fleet,
            topology,
            control,
            stop,
            load_task,
            started: Instant::now(),
            opts,
            series: Series::new(cap),
            base: base.clone(),
            events: VecDeque::new(),
            all_events: Vec::new(),
            prediction,
            static_radius,
            latency: new_histogram(),
            hist_since: Duration::ZERO,
        };
        lab.series.push(Sample {
            t: Duration::ZERO,
            counts: base,
            radius: RadiusStats::default(),
            latency_ms: (0.0, 0.0),
            latency: LatencySummary::default(),
        });
        Ok(lab)
    }

    /// The sampling period.
    pub fn tick_period(&self) -> Duration {
        self.opts.tick
    }

    /// Time since the lab started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// The fleet.
    pub fn fleet(&self) -> &Fleet {
        &self.fleet
    }

    /// The topology as it is now (faults and policy included).
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The sample series.
    pub fn series(&self) -> &Series {
        &self.series
    }

    /// Every action applied so far, in order.
    pub fn events(&self) -> &[Event] {
        &self.all_events
    }

    /// The model's prediction for the faults and policy in force.
    pub fn prediction(&self) -> &Prediction {
        &self.prediction
    }

    /// The static storm radius under the policy in force.
    pub fn static_radius(&self) -> usize {
        self.static_radius
    }

    /// The entry URL.
    pub fn entry_url(&self) -> String {
        self.fleet.entry_url()
    }

    /// Applies an action now and logs it.
    pub fn apply(&mut self, action: Action) {
        let mut policy_changed = false;
        match &action {
            Action::SetFault { service, fault } => {
                if let Some(s) = self.topology.services.get_mut(*service) {
                    s.fault = fault.clone();
                    self.fleet.set_fault(*service, fault.clone());
                }
            }
            Action::SetContextDropped { service, dropped } => {
                if let Some(s) = self.topology.services.get_mut(*service) {
                    s.context_dropped = *dropped;
                    self.fleet.set_context_dropped(*service, *dropped);
                }
            }
            Action::Policy(fields) => {
                self.topology.policy.apply_fields(fields);
                policy_changed = true;
            }
            Action::Mode {
                retries,
                budget,
                ownership,
            } => {
                let p = &mut self.topology.policy;
                if let Some(r) = retries {
                    p.retries = *r;
                }
                if let Some(b) = budget {
                    p.budget_on = *b;
                }
                if let Some(o) = ownership {
                    p.ownership = *o;
                }
                policy_changed = true;
            }
            Action::SetAtLeastOnce(on) => {
                self.topology.ownership.at_least_once = *on;
                self.fleet.set_at_least_once(*on);
            }
            Action::SetAttribution(a) => {
                self.topology.ownership.attribution = *a;
                self.fleet.set_attribution(*a);
            }
            Action::SetRps(r) => {
                self.topology.load.rps = r.max(0.0);
                self.control.set_rps(*r);
            }
            Action::Pause(p) => self.control.set_paused(*p),
            Action::Reset => self.reset(),
        }
        if policy_changed {
            self.fleet.set_policy(self.topology.policy.clone());
        }
        self.prediction = model::predict(&self.topology, &self.topology.policy);
        if policy_changed {
            self.static_radius = model::static_radius(&self.topology, &self.topology.policy);
        }
        let ev = Event {
            t: self.elapsed(),
            text: action.describe(&self.topology),
            action,
        };
        if self.events.len() == MAX_EVENTS {
            self.events.pop_front();
        }
        self.events.push_back(ev.clone());
        if self.all_events.len() < 100_000 {
            self.all_events.push(ev);
        }
    }

    fn reset(&mut self) {
        self.base = self.fleet.metrics().counts();
        let now = self.elapsed();
        self.series.clear();
        self.series.push(Sample {
            t: now,
            counts: self.base.clone(),
            radius: RadiusStats::default(),
            latency_ms: (0.0, 0.0),
            latency: LatencySummary::default(),
        });
        for s in 0..self.topology.services.len() {
            self.fleet.server_config(s).learner().reset();
        }
        self.latency = new_histogram();
        self.hist_since = now;
    }

    /// Starts a fresh latency histogram for the report (at warm-up's end).
    pub fn mark_report_start(&mut self) {
        self.latency = new_histogram();
        self.hist_since = self.elapsed();
    }

    /// Takes a sample. Call once per `tick`.
    pub fn tick(&mut self) {
        let m = self.fleet.metrics();
        let interval = m.take_latency();
        let latency_ms = if interval.is_empty() {
            (0.0, 0.0)
        } else {
            (
                interval.value_at_quantile(0.5) as f64 / 1000.0,
                interval.value_at_quantile(0.99) as f64 / 1000.0,
            )
        };
        let _ = self.latency.add(&interval);
        self.series.push(Sample {
            t: self.elapsed(),
            counts: m.counts(),
            radius: m.storm().take_interval(),
            latency_ms,
            latency: LatencySummary::from_histogram(&interval),
        });
    }

    /// Root latency (ms) at quantile `q` since the report start.
    pub fn latency_ms(&self, q: f64) -> f64 {
        if self.latency.is_empty() {
            0.0
        } else {
            self.latency.value_at_quantile(q) as f64 / 1000.0
        }
    }

    /// What the front ends show now.
    pub fn snapshot(&self) -> Snapshot {
        let latest = self.series.latest().expect("the series is never empty");
        let now = latest.t;
        let from_t = now.saturating_sub(self.opts.window);
        let from = self
            .series
            .at_or_before(from_t)
            .or_else(|| self.series.iter().next())
            .expect("the series is never empty");
        let dt = (now.saturating_sub(from.t)).as_secs_f64();
        let w = latest.counts.since(&from.counts);
        let total = latest.counts.since(&self.base);
        let rate = |n: u64| if dt > 0.0 { n as f64 / dt } else { 0.0 };
        let entry = self.topology.load.entry;
        let root_rate = rate(w.services[entry].roots);
        let mut radius = RadiusStats::default();
        for s in self.series.between(from.t, now) {
            radius.merge(&s.radius);
        }
        let history: Vec<&Sample> = {
            let n = self.series.len();
            let step = self.opts.tick.max(Duration::from_millis(1));
            let per_point = (Duration::from_secs(1).as_millis() / step.as_millis()).max(1) as usize;
            self.series
                .iter()
                .skip(n.saturating_sub(HISTORY_POINTS * per_point + 1))
                .step_by(per_point)
                .collect()
        };
        let services = self
            .topology
            .services
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let c = &w.services[i];
                let rps = rate(c.requests);
                let baseline = root_rate * s.multiplicity;
                let amplification = (baseline > 0.0).then(|| rps / baseline);
                let error_rate = if c.requests > 0 {
                    c.errors as f64 / c.requests as f64
                } else {
                    0.0
                };
                let fault = self.fleet.fault(i);
                let context_dropped = self.fleet.context_dropped(i);
                let shedding = s.capacity.is_some_and(|cap| rps > cap * 1.02) && c.own_errors > 0;
                let state = if fault.down {
                    ServiceState::Down
                } else if context_dropped {
                    ServiceState::ContextDropped
                } else if shedding {
                    ServiceState::Shedding
                } else if c.requests == 0 {
                    ServiceState::Idle
                } else if c.errors * 100 < c.requests {
                    ServiceState::Healthy
                } else if c.own_errors * 2 >= c.errors {
                    ServiceState::Owner
                } else {
                    ServiceState::Propagating
                };
                let t = &total.services[i];
                let history = history
                    .windows(2)
                    .map(|p| {
                        let d = p[1].counts.since(&p[0].counts);
                        let r = d.services[entry].roots as f64;
                        if r > 0.0 && s.multiplicity > 0.0 {
                            d.services[i].requests as f64 / (r * s.multiplicity)
                        } else {
                            0.0
                        }
                    })
                    .collect();
                ServiceView {
                    name: s.name.clone(),
                    depth: s.depth,
                    rps,
                    baseline_rps: baseline,
                    amplification,
                    model_amplification: self.prediction.services[i].amplification,
                    error_rate,
                    claims_returned: t.claims_returned,
                    claims_seen: t.claims_seen,
                    retries_sent: t.retries_sent,
                    retries_suppressed: t.retries_suppressed,
                    budget_denied: t.budget_denied,
                    retry_rps: rate(c.retries_sent),
                    attribution: (t.own_errors, t.wrongly_unclaimed, t.wrongly_claimed),
                    at_least_once_claims: t.at_least_once_claims,
                    fault,
                    context_dropped,
                    ownership: s.ownership,
                    outside: s.url.is_some(),
                    state,
                    learned: self.fleet.server_config(i).learner().all(),
                    history,
                }
            })
            .collect();
        let edges = self
            .topology
            .edges
            .iter()
            .enumerate()
            .map(|(i, e)| EdgeView {
                from: e.from,
                to: e.to,
                attempt_rps: rate(w.edges[i].attempts),
                retry_rps: rate(w.edges[i].retries),
            })
            .collect();
        let root = RootView {
            offered_rps: self.control.rps(),
            rps: rate(w.root.sent),
            availability: w.root.availability(),
            p50_ms: latest.latency_ms.0,
            p99_ms: latest.latency_ms.1,
            sent: total.root.sent,
            errors: total.root.errors,
            dropped: total.root.dropped,
            availability_history: history
                .windows(2)
                .map(|p| p[1].counts.root.since(&p[0].counts.root).availability())
                .collect(),
            rps_history: history
                .windows(2)
                .map(|p| {
                    let d = p[1].t.saturating_sub(p[0].t).as_secs_f64();
                    let n = p[1].counts.root.since(&p[0].counts.root).sent as f64;
                    if d > 0.0 {
                        n / d
                    } else {
                        0.0
                    }
                })
                .collect(),
        };
        Snapshot {
            t: now,
            topology: self.topology.name.clone(),
            policy: self.topology.policy.clone(),
            attribution: self.topology.ownership.attribution,
            at_least_once: self.topology.ownership.at_least_once,
            window: self.opts.window,
            paused: self.control.paused(),
            root,
            radius_max: radius.max,
            radius_mean: radius.mean(),
            radius_model: self.prediction.storm_radius,
            radius_static: self.static_radius,
            spurious_avoided: total.spurious_avoided(),
            services,
            edges,
            events: self.events.iter().cloned().collect(),
        }
    }

    /// The policy in force.
    pub fn policy(&self) -> &Policy {
        &self.topology.policy
    }

    /// Stops the load, then the fleet.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.load_task {
            let _ = t.await;
        }
        self.fleet.shutdown().await;
    }
}

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 2).expect("valid histogram bounds")
}
