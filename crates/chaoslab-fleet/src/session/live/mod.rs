//! The lab: one fleet, its load, its metrics and its model, changed only
//! through [`Action`]s folded by [`crate::lab::state::apply`], read only
//! through [`Snapshot`]s while it runs and through a [`RunRecord`] once it
//! has finished.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::access::Token;
use super::nodes::{Controls, Nodes};
use super::SessionError;
use crate::fleet::{Fleet, FleetOptions, Placement};
use crate::lab::snapshot::{self, Snapshot};
use crate::lab::state::{self, ActionError, Change, LabState};
use crate::lab::{Action, Event, Origin, RunRecord};
use crate::load::{self, LoadControl};
use crate::metrics::{Counts, LatencySummary, RadiusStats, Sample, Series};
use crate::topology::model::{self, Prediction};
use crate::topology::Topology;

/// Events kept for the log.
const MAX_EVENTS: usize = 200;
/// Events kept for a recording and for the report.
const MAX_ALL_EVENTS: usize = 100_000;

/// How to run a lab.
#[derive(Debug, Clone)]
pub struct LiveOptions {
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
    /// Which service runs here when each has a process of its own.
    pub placement: Option<Placement>,
    /// The nodes to read and drive when the services run elsewhere.
    pub nodes: Option<Controls>,
    /// The token the nodes' control APIs ask for.
    pub token: Option<Token>,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            seed: 1,
            load: true,
            tick: Duration::from_millis(250),
            window: Duration::from_secs(2),
            max_in_flight: load::DEFAULT_MAX_IN_FLIGHT,
            placement: None,
            nodes: None,
            token: None,
        }
    }
}

/// A running lab.
pub struct Live {
    fleet: Fleet,
    /// The topology with [`Live::state`] written in (the model reads it).
    topology: Topology,
    state: LabState,
    start_state: LabState,
    control: Arc<LoadControl>,
    stop: watch::Sender<bool>,
    load_task: Option<JoinHandle<()>>,
    started: Instant,
    opts: LiveOptions,
    series: Series,
    /// Counters at the last reset.
    base: Counts,
    events: VecDeque<Event>,
    all_events: Vec<Event>,
    prediction: Prediction,
    static_radius: usize,
    /// Each root's static radius, for a topology of many roots.
    static_radii: Vec<usize>,
    /// The model's recovery threshold for the state in force.
    recovery_threshold: Option<f64>,
    /// Root latency since the report's start.
    latency: Histogram<u64>,
    /// The nodes, when the services run in processes of their own.
    nodes: Option<Nodes>,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("topology", &self.topology.name)
            .finish_non_exhaustive()
    }
}

/// The samples a node or a shard of a mesh of thousands keeps.
const NODE_LARGE_RING: usize = 4;

impl LiveOptions {
    /// The sampling period, the ring's capacity and the bytes it holds
    /// (allocated whole at the start) for a run of `t` with these options.
    /// A node's own series serves only its /state and its exit table: the
    /// session reading the fleet keeps the run's.
    pub fn ring(&self, t: &Topology) -> (Duration, usize, u64) {
        let node = self.placement.as_ref().is_some_and(Placement::serves_any);
        let (services, edges) = (t.services.len(), t.edges.len());
        let bytes = if node { 4 << 20 } else { 32 << 20 };
        let (tick, mut cap) = Series::plan(services, edges, self.tick, self.window, bytes);
        // A node or a shard of a mesh of thousands: each sample holds the
        // whole mesh's rows, and two windows of them took 400 MiB in each
        // of Meta's eight shards. Its own series keeps the last few
        // seconds (its /state and its exit table); the session keeps the
        // run's.
        if node && Series::sample_bytes(services, edges) > crate::metrics::LARGE_SAMPLE {
            cap = cap.min(NODE_LARGE_RING);
        }
        (
            tick,
            cap,
            (Series::sample_bytes(services, edges) * cap) as u64,
        )
    }
}

impl Live {
    /// Starts the fleet in the state `topology` describes and (unless
    /// `opts.load` is off) the load.
    pub async fn start(topology: Topology, mut opts: LiveOptions) -> Result<Live, SessionError> {
        let (tick, cap, samples) = opts.ring(&topology);
        opts.tick = tick;
        let fleet = Fleet::spawn(
            Arc::new(topology.clone()),
            FleetOptions {
                seed: opts.seed,
                plain: false,
                plain_traced: false,
                placement: opts.placement.clone(),
                samples,
            },
        )
        .await?;
        // The nodes come up, take the starting state and are read once
        // before the load starts and before the first sample.
        let nodes = match &opts.nodes {
            Some(c) => Some(
                Nodes::connect(
                    &topology,
                    c,
                    fleet.metrics().clone(),
                    opts.token.as_ref(),
                    opts.tick,
                )
                .await?,
            ),
            None => None,
        };
        let base = fleet.metrics().counts();
        let state = LabState::of(&topology);
        let prediction = model::predict(&topology, &topology.policy);
        let serving = opts.placement.as_ref().is_some_and(Placement::serves_any);
        let (static_radius, static_radii) = static_radii(&topology, serving);
        let recovery_threshold = recovery_threshold(&topology);
        // The load starts once the model and the radii are known: on a
        // mesh of thousands they take the session's cores for seconds, in
        // which generators already running fall behind their schedules
        // and then send in a burst (Meta's mesh over six shards: 261 root
        // requests a second against 50, and shards' reads timed out).
        let control = Arc::new(LoadControl::new(topology.load.rps));
        let (stop, stop_rx) = watch::channel(false);
        // A generator per root, each with its share of the rate; the
        // first draws from the seed one root always did.
        let many = topology.load.many_roots();
        let load_task = opts
            .load
            .then(|| -> Result<JoinHandle<()>, load::LoadError> {
                let shares: Vec<(usize, f64)> = topology.load.shares().collect();
                let mut tasks = Vec::with_capacity(shares.len());
                for (k, ((entry, share), root)) in
                    shares.into_iter().zip(&topology.load.roots).enumerate()
                {
                    let target = load::Target {
                        urls: fleet.replica_urls(entry),
                        share,
                        root: many.then_some(k),
                    };
                    let seed = opts
                        .seed
                        .wrapping_mul(31)
                        .wrapping_add(7)
                        .wrapping_add(k as u64 * 0x9E37_79B9);
                    let spawned = if let Some(closed) = root.closed {
                        load::closed::spawn(
                            target,
                            entry,
                            closed,
                            control.clone(),
                            root.arrival,
                            topology.load.timeout,
                            seed,
                            fleet.metrics().clone(),
                            stop_rx.clone(),
                        )
                    } else {
                        load::spawn(
                            target,
                            control.clone(),
                            root.arrival,
                            topology.load.timeout,
                            // The run's in-flight bound, shared by the roots.
                            ((opts.max_in_flight as f64 * share).ceil() as usize)
                                .max(1)
                                .min(load::in_flight_for(topology.load.rps * share)),
                            seed,
                            fleet.metrics().clone(),
                            stop_rx.clone(),
                        )
                    };
                    match spawned {
                        Ok(t) => tasks.push(t),
                        Err(e) => {
                            // None of the roots runs when one cannot.
                            for t in &tasks {
                                t.abort();
                            }
                            return Err(e);
                        }
                    }
                }
                Ok(tokio::spawn(async move {
                    for t in tasks {
                        let _ = t.await;
                    }
                }))
            });
        let load_task = load_task.transpose()?;
        let mut lab = Live {
            fleet,
            topology,
            start_state: state.clone(),
            state,
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
            static_radii,
            recovery_threshold,
            latency: new_histogram(),
            nodes,
        };
        lab.series.push(empty_sample(Duration::ZERO, base));
        Ok(lab)
    }

    /// The sampling period.
    pub fn tick_period(&self) -> Duration {
        self.opts.tick
    }

    /// Publish a snapshot every this many ticks: 1, but 10 in a node or a
    /// shard of a mesh of thousands, whose snapshot only its own `/state`
    /// reads (the session reading it builds its own), and whose building
    /// each second over Meta's 29,789 rows took a fifth of each shard's
    /// CPU.
    pub fn snapshot_every(&self) -> u64 {
        let serving = self
            .opts
            .placement
            .as_ref()
            .is_some_and(Placement::serves_any);
        let (s, e) = (self.topology.services.len(), self.topology.edges.len());
        if serving && Series::sample_bytes(s, e) > crate::metrics::LARGE_SAMPLE {
            10
        } else {
            1
        }
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

    /// The state every action so far has folded into.
    pub fn state(&self) -> &LabState {
        &self.state
    }

    /// Every action applied so far, in order.
    pub fn events(&self) -> &[Event] {
        &self.all_events
    }

    /// The entry URL.
    pub fn entry_url(&self) -> String {
        self.fleet.entry_url()
    }

    /// Applies an action now: folds it into the state, makes the fleet
    /// match, and logs it. A refused action changes nothing and is logged
    /// as refused.
    pub fn apply(&mut self, action: Action) -> Result<(), ActionError> {
        self.apply_from(action, Origin::Operator)
    }

    /// [`apply`](Self::apply), logged as sent by `origin` (an action from
    /// the control API says so in the event log).
    pub fn apply_from(&mut self, action: Action, origin: Origin) -> Result<(), ActionError> {
        self.apply_dated(action, origin, None)
    }

    /// [`apply_from`](Self::apply_from), dated `at` on the lab's clock
    /// (`None`: when it is done). A timeline's step is dated at the
    /// sample taken just before it, so the phase it opens starts at that
    /// sample and holds all it caused: a budget spends what it saved in
    /// the first milliseconds of a fault, before the model's figures for
    /// the new state are computed.
    pub fn apply_dated(
        &mut self,
        action: Action,
        origin: Origin,
        at: Option<Duration>,
    ) -> Result<(), ActionError> {
        let at = |lab: &Self| at.unwrap_or_else(|| lab.elapsed());
        let mark = |text: String| match origin {
            Origin::Api => format!("{text} (api)"),
            _ => text,
        };
        let change = match state::apply(&mut self.state, &action) {
            Ok(c) => c,
            Err(e) => {
                let text = mark(format!("refused: {e}"));
                self.log(Event {
                    t: at(self),
                    action,
                    text,
                    origin,
                });
                return Err(e);
            }
        };
        self.enact(change);
        if let Some(n) = &self.nodes {
            n.forward(&action);
        }
        self.state.write_to(&mut self.topology);
        self.prediction = model::predict(&self.topology, &self.topology.policy);
        if change == Change::Policy {
            let serving = self
                .opts
                .placement
                .as_ref()
                .is_some_and(Placement::serves_any);
            (self.static_radius, self.static_radii) = static_radii(&self.topology, serving);
        }
        // The threshold depends on the policy and on every service time
        // (work and injected latency) and worker count.
        if matches!(
            change,
            Change::Policy | Change::Resources(_) | Change::Fault(_) | Change::Faults
        ) {
            self.recovery_threshold = recovery_threshold(&self.topology);
        }
        let ev = Event {
            t: at(self),
            text: mark(action.describe(&self.topology)),
            action,
            origin,
        };
        if self.all_events.len() < MAX_ALL_EVENTS {
            self.all_events.push(ev.clone());
        }
        self.log(ev);
        Ok(())
    }

    /// Makes the fleet and the load match the state after `change`.
    fn enact(&mut self, change: Change) {
        let s = &self.state;
        match change {
            Change::Fault(i) => self.fleet.set_fault(i, s.faults[i].clone()),
            Change::Context(i) => self.fleet.set_context_dropped(i, s.context_dropped[i]),
            Change::Resources(i) => {
                let r = s.resources[i];
                self.fleet.set_resources(i, r.workers, r.work, r.queue);
            }
            Change::Policy => self.fleet.set_policy(s.policy.clone()),
            Change::AtLeastOnce => self.fleet.set_at_least_once(s.at_least_once),
            Change::Attribution => self.fleet.set_attribution(s.attribution),
            Change::Rps => self.control.set_rps(s.rps),
            Change::Pause => self.control.set_paused(s.paused),
            Change::Reset => self.reset(),
            Change::Faults => {
                for (i, f) in s.faults.iter().enumerate() {
                    if self.topology.services[i].group == i {
                        self.fleet.set_fault(i, f.clone());
                    }
                }
            }
        }
    }

    fn log(&mut self, ev: Event) {
        if self.events.len() == MAX_EVENTS {
            self.events.pop_front();
        }
        self.events.push_back(ev);
    }

    fn reset(&mut self) {
        self.base = self.fleet.metrics().counts();
        let now = self.elapsed();
        self.series.clear();
        self.series.push(empty_sample(now, self.base.clone()));
        // The report measures from here now (the run's warm-up is over,
        // or it will be measured from its end, which comes later).
        self.series.keep_first_from(now);
        for s in 0..self.topology.services.len() {
            self.fleet.server_config(s).learner().reset();
        }
        self.latency = new_histogram();
    }

    /// Starts a fresh latency histogram for the report (at warm-up's end),
    /// and keeps the series' first sample from now on however long the
    /// run, so the report's counters span the whole run.
    pub fn mark_report_start(&mut self) {
        self.latency = new_histogram();
        let now = self.elapsed();
        self.series.keep_first_from(now);
    }

    /// Takes a sample. Call once per `tick`. Returns when it was taken.
    pub fn tick(&mut self) -> Duration {
        self.fleet.publish_gauges();
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
        let t = self.elapsed();
        self.series.push(Sample {
            t,
            counts: m.counts(),
            radius: m.storm().take_interval(),
            latency_ms,
            latency: LatencySummary::from_histogram(&interval),
        });
        t
    }

    /// What the front ends show now.
    pub fn snapshot(&self) -> Snapshot {
        let n = self.topology.services.len();
        let outside: Vec<bool> = (0..n)
            .map(|id| self.fleet.service(id).is_outside())
            .collect();
        let learned = (0..n)
            .map(|id| self.fleet.server_config(id).learner().all())
            .collect();
        snapshot::build(snapshot::Inputs {
            series: &self.series,
            base: &self.base,
            window: self.opts.window,
            tick: self.opts.tick,
            topology: &self.topology,
            state: &self.state,
            prediction: &self.prediction,
            static_radius: self.static_radius,
            static_radii: &self.static_radii,
            recovery_threshold: self.recovery_threshold,
            tap: &self.fleet.metrics().tap().recent(),
            outside: &outside,
            learned,
            events: &self.events,
            refused: self
                .fleet
                .metrics()
                .refusals()
                .recent()
                .into_iter()
                .map(|(at, text)| (at.saturating_duration_since(self.started), text))
                .collect(),
        })
    }

    /// What the run has measured so far, as a [`RunRecord`] (a copy; the run
    /// goes on): the report a run would write if it ended now.
    pub fn record_so_far(&self, warmup: Duration, steps: Vec<(Duration, Action)>) -> RunRecord {
        RunRecord {
            start: self.start_state.clone(),
            state: self.state.clone(),
            topology: self.topology.clone(),
            series: self.series.clone(),
            events: self.all_events.clone(),
            steps,
            prediction: self.prediction.clone(),
            static_radius: self.static_radius,
            latency: self.latency.clone(),
            learned: self.learned(),
            tick: self.opts.tick,
            warmup,
            uptime: self.elapsed(),
            course: Default::default(),
        }
    }

    fn learned(&self) -> Vec<Vec<error_ownership::learn::Learned>> {
        (0..self.topology.services.len())
            .map(|i| self.fleet.server_config(i).learner().all())
            .collect()
    }

    /// Stops the load, then the fleet, and keeps what the run measured.
    pub async fn finish(
        self,
        warmup: Duration,
        steps: Vec<(Duration, Action)>,
        grace: Duration,
    ) -> RunRecord {
        let learned = self.learned();
        let uptime = self.elapsed();
        if let Some(n) = &self.nodes {
            n.stop();
        }
        let _ = self.stop.send(true);
        // The load stops and the requests still in flight get `grace`, in
        // all, to finish; a storm of slow ones (or a generator starved of
        // its thread) does not hold the end of the run.
        let deadline = tokio::time::Instant::now() + grace;
        if let Some(mut t) = self.load_task {
            if tokio::time::timeout_at(deadline, &mut t).await.is_err() {
                t.abort();
            }
        }
        let _ = tokio::time::timeout_at(deadline, self.fleet.shutdown()).await;
        RunRecord {
            start: self.start_state,
            state: self.state,
            topology: self.topology,
            series: self.series,
            events: self.all_events,
            steps,
            prediction: self.prediction,
            static_radius: self.static_radius,
            latency: self.latency,
            learned,
            tick: self.opts.tick,
            warmup,
            uptime,
            course: Default::default(),
        }
    }
}

/// How long the fleet's requests in flight may take to finish when a run
/// ends by itself or on a signal.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// The same when a person quits the dashboard: what is still in flight
/// changes no figure they will read, and `q` must give the terminal back
/// within a second even at the machine's limit.
pub const QUIT_GRACE: Duration = Duration::from_millis(250);

/// The model's recovery threshold of `t` under its own policy, `None`
/// when no service has workers (or nothing bounds it).
fn recovery_threshold(t: &Topology) -> Option<f64> {
    model::capacity::capacity(t, &t.policy).recovery_threshold
}

fn empty_sample(t: Duration, counts: Counts) -> Sample {
    Sample {
        t,
        counts,
        radius: RadiusStats::default(),
        latency_ms: (0.0, 0.0),
        latency: LatencySummary::default(),
    }
}

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 2).expect("valid histogram bounds")
}

/// The static radius under the topology's policy, and each root's when
/// it has many (the radius is then their largest; each search once).
/// None in a node or a shard (`serving`): the session reading it has
/// them, and on a mesh of thousands each search of the roots holds the
/// run loop seconds, in every shard at once after a policy change.
fn static_radii(t: &Topology, serving: bool) -> (usize, Vec<usize>) {
    if serving {
        return (0, vec![]);
    }
    let radii = crate::lab::roots::static_radii(t, &t.policy);
    match radii.iter().max() {
        Some(&max) => (max, radii),
        None => (model::static_radius(t, &t.policy), radii),
    }
}

#[cfg(test)]
mod tests;
