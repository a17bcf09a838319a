//! A session owns one run: it starts the runtime, the fleet, the load,
//! the metrics and the model; it publishes a [`Snapshot`] every tick;
//! it takes [`Action`]s from any number of front ends; and when the run
//! ends it hands back a [`RunRecord`] for the reports.
//!
//! Every front end (the dashboard, the headless runner, `compare`,
//! `serve`) is a thin layer over a [`Session`]: it reads snapshots and
//! sends actions, and none of them assembles a run of its own. What an
//! action does to the lab is written once, in [`crate::lab::state::apply`];
//! what a figure means is written once, in [`crate::lab::figures`].
//!
//! ```no_run
//! use std::time::Duration;
//! use chaoslab_fleet::lab::Action;
//! use chaoslab_fleet::session::{Session, Setup};
//! use chaoslab_fleet::topology::Topology;
//!
//! let t = Topology::load("topologies/uber-chain.yaml".as_ref()).unwrap();
//! let mut setup = Setup::new(t);
//! setup.until = Some(Duration::from_secs(5));
//! let session = Session::start(setup).unwrap();
//! session.send(Action::SetRps(100.0));
//! let record = session.wait().unwrap();
//! assert!(record.series.len() > 1);
//! ```

pub mod access;
pub mod live;
pub mod nodes;
pub mod processes;
pub mod runner;
pub mod shards;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;
use tokio::runtime::{Handle, Runtime};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

pub use access::{Access, Token};
pub use live::{Live, LiveOptions};
pub use nodes::{Controls, NodeControls, ShardControls};
pub use processes::{Processes, Started};
pub use runner::{drive, Request, Schedule};

use crate::error::{RunError, EXIT_BAD_INPUT, EXIT_ENVIRONMENT};
use crate::fleet::{FleetError, Placement};
use crate::lab::{fold, Action, ActionError, LabState, Origin, RunRecord, Snapshot};
use crate::load::LoadError;
use crate::metrics::Metrics;
use crate::topology::Topology;

/// Actions a front end may have queued before the run loop takes them.
const ACTION_QUEUE: usize = 256;

/// Why a session could not start or finish.
#[derive(Debug, Error)]
pub enum SessionError {
    /// The async runtime could not be built.
    #[error("starting the async runtime failed: {0}")]
    Runtime(#[source] std::io::Error),
    /// The fleet could not be started.
    #[error(transparent)]
    Fleet(#[from] FleetError),
    /// The load generator could not be started.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A starting action does not apply to this topology.
    #[error("the starting state is not valid: {0}")]
    Start(#[from] ActionError),
    /// The node processes could not be started.
    #[error(transparent)]
    Processes(#[from] processes::ProcessesError),
    /// The nodes could not be read or driven.
    #[error(transparent)]
    Nodes(#[from] nodes::NodesError),
    /// The run loop panicked.
    #[error("the lab's run loop stopped unexpectedly: {0}")]
    RunLoop(#[source] tokio::task::JoinError),
}

impl SessionError {
    /// The exit status this error calls for: 2 for a fleet too big for
    /// the open-file limit (bad input), 3 when the machine refused what
    /// the fleet, the load or the nodes need, 1 otherwise.
    pub fn exit_status(&self) -> u8 {
        match self {
            SessionError::Fleet(e) if e.is_bad_input() => EXIT_BAD_INPUT,
            SessionError::Fleet(e) if e.is_environment() => EXIT_ENVIRONMENT,
            SessionError::Load(_) | SessionError::Processes(_) | SessionError::Nodes(_) => {
                EXIT_ENVIRONMENT
            }
            _ => 1,
        }
    }
}

impl From<SessionError> for RunError {
    fn from(e: SessionError) -> RunError {
        RunError::Session {
            status: e.exit_status(),
            source: Box::new(e),
        }
    }
}

/// How to run a session.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The topology, as loaded.
    pub topology: Topology,
    /// Actions folded into the state before anything starts (command-line
    /// overrides, a scenario's steps at 0 s), so the fleet and the model
    /// start in it.
    pub initial: Vec<Action>,
    /// Seed for every random choice.
    pub seed: u64,
    /// Drive load into the entry (`serve` does not).
    pub load: bool,
    /// Leading time the report leaves out.
    pub warmup: Duration,
    /// Stop this long after the start (`None`: until told to).
    pub until: Option<Duration>,
    /// Timeline steps on the lab's clock.
    pub steps: Vec<(Duration, Action)>,
    /// Captions on the same clock (a scenario's `say:`).
    pub captions: Vec<(Duration, String)>,
    /// One service per process (`chaoslab node`, `chaoslab load`): which
    /// one runs here and where the others are; `None` runs them all here.
    pub placement: Option<Placement>,
    /// Nodes running elsewhere to read and drive (`run --remote`): each
    /// service's control URL. With `placement` saying where they answer.
    pub nodes: Option<Controls>,
    /// Start one `chaoslab node` process per service of the topology at
    /// this path, and run the session over them (`run --processes`).
    pub processes: Option<PathBuf>,
    /// With `processes`: start this many shard processes instead, each
    /// serving its share of the services (`run --shards N`, SPEC section
    /// 19).
    pub shards: Option<usize>,
    /// Who may call the session's endpoints, and the token its nodes get.
    pub access: Access,
}

impl Setup {
    /// A run of `topology` as it stands, with load, until stopped.
    pub fn new(topology: Topology) -> Setup {
        Setup {
            topology,
            initial: vec![],
            seed: 1,
            load: true,
            warmup: Duration::ZERO,
            until: None,
            steps: vec![],
            captions: vec![],
            placement: None,
            nodes: None,
            processes: None,
            shards: None,
            access: Access::default(),
        }
    }
}

/// A front end's handle on the run loop: sends actions (logged with the
/// front end's [`Origin`]) and asks for the record so far.
#[derive(Debug, Clone)]
pub struct Actions {
    commands: mpsc::Sender<Request>,
    origin: Origin,
}

impl Actions {
    /// Plays the timeline's next step now; `false` when the queue is full
    /// or the run is over.
    pub fn next_step(&self) -> bool {
        self.commands.try_send(Request::NextStep).is_ok()
    }

    /// Holds the timeline (`on`) or lets it run again.
    pub fn hold(&self, on: bool) -> bool {
        self.commands.try_send(Request::Hold(on)).is_ok()
    }

    /// Sends one action; `false` when the queue is full or the run is over
    /// (the action is dropped, never waited for).
    pub fn send(&self, action: Action) -> bool {
        self.commands
            .try_send(Request::Apply(action, self.origin))
            .is_ok()
    }

    /// What the run has measured so far (`None` once the run is over).
    pub async fn record_so_far(&self) -> Option<RunRecord> {
        let (tx, rx) = oneshot::channel();
        self.commands.send(Request::RecordSoFar(tx)).await.ok()?;
        rx.await.ok()
    }
}

impl crate::lab::Steer for Actions {
    fn send(&self, action: Action) -> bool {
        Actions::send(self, action)
    }

    fn next_step(&self) -> bool {
        Actions::next_step(self)
    }

    fn hold(&self, on: bool) -> bool {
        Actions::hold(self, on)
    }

    fn record_so_far(&self) -> crate::lab::steer::RecordSoFar {
        let me = self.clone();
        Box::pin(async move { me.record_so_far().await })
    }
}

/// A running session.
#[derive(Debug)]
pub struct Session {
    rt: Runtime,
    /// The run loop's own runtime.
    clock: Runtime,
    driver: JoinHandle<(Live, crate::lab::timeline::Course)>,
    actions: Actions,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    stop: watch::Sender<bool>,
    urls: Vec<String>,
    /// The fleet's sidecar proxies, as they started.
    sidecars: Vec<crate::sidecar::Started>,
    topology: Topology,
    metrics: Arc<Metrics>,
    warmup: Duration,
    steps: Vec<(Duration, Action)>,
    /// The node processes (`run --processes`, `--shards`), stopped after
    /// the run.
    processes: Option<Arc<std::sync::Mutex<Processes>>>,
    /// Watches the shards for one that ends by itself.
    watch_lost: Option<tokio::task::JoinHandle<()>>,
    /// Who may call its endpoints.
    access: Access,
}

impl Session {
    /// Starts the runtime, the fleet (in the state `setup.initial` leads
    /// to), the load and the run loop.
    pub fn start(setup: Setup) -> Result<Session, SessionError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(SessionError::Runtime)?;
        // The run loop on a thread of its own: at the machine's limit the
        // fleet's threads hold thousands of ready tasks, and a run loop
        // queued behind them would starve the dashboard of snapshots and
        // a quit of its answer. Built before any traffic: a fleet short
        // of file descriptors would leave none for its event loop.
        let clock = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("chaoslab-run-loop")
            .enable_all()
            .build()
            .map_err(SessionError::Runtime)?;
        let mut topology = setup.topology;
        let (mut processes, placement, nodes) = match &setup.processes {
            Some(path) => {
                let token = setup.access.token.as_ref();
                let (p, placement, nodes) = match setup.shards {
                    Some(n) => shards::start(path, &topology, n, setup.seed, token)?,
                    None => Processes::start(path, &topology, setup.seed, token)?,
                };
                (Some(p), Some(placement), Some(nodes))
            }
            None => (None, setup.placement, setup.nodes),
        };
        fold(LabState::of(&topology), &setup.initial)?.write_to(&mut topology);
        search_ahead(&topology, &setup.steps);
        let opts = LiveOptions {
            seed: setup.seed,
            load: setup.load,
            placement,
            nodes,
            token: setup.access.token.clone(),
            ..LiveOptions::default()
        };
        let lost: Option<Vec<Vec<usize>>> = match &opts.nodes {
            Some(Controls::Shards(c)) => Some(c.shards.iter().map(|(_, s)| s.clone()).collect()),
            _ => None,
        };
        let lab = match rt.block_on(Live::start(topology.clone(), opts)) {
            Ok(lab) => lab,
            Err(e) => {
                // A node that ended while the run started says why.
                if let Some(ended) = processes.as_mut().and_then(Processes::first_ended) {
                    return Err(ended.into());
                }
                return Err(e);
            }
        };
        let urls = (0..topology.services.len())
            .map(|i| lab.fleet().url(i))
            .collect();
        let metrics = lab.fleet().metrics().clone();
        let sidecars = lab.fleet().sidecars();
        let (commands, commands_rx) = mpsc::channel(ACTION_QUEUE);
        let actions = Actions {
            commands,
            origin: Origin::Operator,
        };
        let (snaps_tx, snapshots) = watch::channel(Arc::new(lab.snapshot()));
        let (stop, stop_rx) = watch::channel(false);
        let schedule = Schedule {
            warmup: setup.warmup,
            until: setup.until,
            steps: setup.steps.clone(),
            captions: setup.captions.clone(),
        };
        rt.spawn(runner::probe_lag(metrics.clone(), lab.tick_period()));
        let processes = processes.map(|p| Arc::new(std::sync::Mutex::new(p)));
        let watch_lost = match (&processes, lost) {
            (Some(p), Some(services)) => {
                Some(rt.spawn(watch_lost(p.clone(), services, actions.clone())))
            }
            _ => None,
        };
        let driver = clock.spawn(drive(lab, schedule, commands_rx, snaps_tx, stop_rx));
        Ok(Session {
            rt,
            clock,
            driver,
            actions,
            snapshots,
            stop,
            urls,
            sidecars,
            topology,
            metrics,
            warmup: setup.warmup,
            steps: setup.steps,
            processes,
            watch_lost,
            access: setup.access,
        })
    }

    /// Who may call the session's endpoints.
    pub fn access(&self) -> &Access {
        &self.access
    }

    /// The sidecar proxies of the fleet (SPEC section 17), as they
    /// started.
    pub fn sidecars(&self) -> &[crate::sidecar::Started] {
        &self.sidecars
    }

    /// The node processes of a `--processes` run, topology order (empty
    /// otherwise).
    pub fn nodes(&self) -> Vec<Started> {
        self.processes.as_ref().map_or(vec![], |p| {
            p.lock()
                .unwrap_or_else(|e| e.into_inner())
                .started()
                .to_vec()
        })
    }

    /// The newest snapshot, and every one after it.
    pub fn snapshots(&self) -> watch::Receiver<Arc<Snapshot>> {
        self.snapshots.clone()
    }

    /// A sender of actions for a front end, logged as the operator's.
    /// Sending never blocks the sender on a busy run loop.
    pub fn actions(&self) -> Actions {
        self.actions.clone()
    }

    /// A sender of actions logged as sent by `origin`.
    pub fn actions_from(&self, origin: Origin) -> Actions {
        Actions {
            origin,
            ..self.actions.clone()
        }
    }

    /// Sends one action (dropped if the queue is full or the run is over).
    pub fn send(&self, action: Action) {
        self.actions.send(action);
    }

    /// The runtime the session runs on, for a front end's own tasks.
    pub fn handle(&self) -> &Handle {
        self.rt.handle()
    }

    /// Runs a front end's future on the session's runtime.
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// The topology as the run started (the starting state written in).
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The fleet's live counters, for a front end that reads them at its
    /// own pace (a metrics scrape).
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Each service's URL, topology order.
    pub fn urls(&self) -> &[String] {
        &self.urls
    }

    /// The entry's URL.
    pub fn entry_url(&self) -> &str {
        &self.urls[self.topology.load.entry]
    }

    /// Whether the run loop has ended (its schedule ran out, or it was told
    /// to stop, or it failed).
    pub fn is_finished(&self) -> bool {
        self.driver.is_finished()
    }

    /// Asks the run loop to stop; [`Session::wait`] then returns.
    pub fn stop(&self) {
        let _ = self.stop.send(true);
    }

    /// A handle that stops this session from another task (a signal).
    pub fn stopper(&self) -> watch::Sender<bool> {
        self.stop.clone()
    }

    /// Waits until the run loop ends, then stops the fleet and returns the
    /// run's record.
    pub fn wait(self) -> Result<RunRecord, SessionError> {
        self.wait_for(live::SHUTDOWN_GRACE)
    }

    /// As [`Session::wait`], giving the requests still in flight `grace`.
    fn wait_for(self, grace: Duration) -> Result<RunRecord, SessionError> {
        let Session {
            rt,
            clock,
            driver,
            actions,
            warmup,
            steps,
            stop,
            processes,
            watch_lost,
            ..
        } = self;
        drop(actions);
        let (lab, course) = rt.block_on(driver).map_err(SessionError::RunLoop)?;
        if let Some(w) = watch_lost {
            w.abort();
        }
        drop(clock);
        // Held until here: a dropped sender reads as "stop" in the loop.
        drop(stop);
        let mut record = rt.block_on(lab.finish(warmup, steps, grace));
        record.course = course;
        // The run has been read: its nodes stop now.
        drop(processes);
        if grace < live::SHUTDOWN_GRACE {
            // A person quit: the process ends next, so the tasks still in
            // flight (thousands at the machine's limit) are dropped by the
            // runtime's own threads rather than waited for here.
            rt.shutdown_background();
        }
        Ok(record)
    }

    /// Stops the run now, as a person quitting the dashboard does, and
    /// returns its record: requests in flight get [`live::QUIT_GRACE`].
    pub fn finish(self) -> Result<RunRecord, SessionError> {
        self.stop();
        self.wait_for(live::QUIT_GRACE)
    }
}

/// How often the shards are looked at for one that ended.
const LOST_PERIOD: Duration = Duration::from_millis(100);

/// Applies [`Action::ShardLost`] for each shard process that ends by
/// itself during the run (`services`: each shard's), as the lab's own
/// action, so its services read as down from then on and the report
/// names it with the time.
async fn watch_lost(
    processes: Arc<std::sync::Mutex<Processes>>,
    services: Vec<Vec<usize>>,
    actions: Actions,
) {
    let actions = Actions {
        origin: Origin::Lab,
        ..actions
    };
    let mut tick = tokio::time::interval(LOST_PERIOD);
    // A loss the run loop's full queue turned away is sent again at the
    // next look: none is dropped.
    let mut pending: Vec<Action> = vec![];
    loop {
        tick.tick().await;
        {
            let mut p = processes.lock().unwrap_or_else(|e| e.into_inner());
            for (k, why) in p.ended() {
                let pid = p.started().get(k).map_or(0, |s| s.pid);
                pending.push(Action::ShardLost {
                    shard: k,
                    services: services.get(k).cloned().unwrap_or_default(),
                    why: format!("pid {pid} {why}"),
                });
            }
        }
        pending.retain(|a| !actions.send(a.clone()));
    }
}

/// What a run of `t` with every service in this process needs of the
/// machine at the least: its open files and its memory once started (the
/// fleet's start refuses a run whose needs the process cannot meet).
pub fn needs(t: &Topology) -> (crate::fleet::FdNeed, crate::fleet::MemNeed) {
    let listeners = t
        .services
        .iter()
        .enumerate()
        .filter(|(id, s)| s.group == *id && s.url.is_none())
        .map(|(_, s)| s.replicas.max(1) as usize)
        .sum();
    let fd = crate::fleet::FdNeed::of(t, t.transport, listeners, &|id| {
        t.services[id].url.is_none()
    });
    let (_, _, samples) = LiveOptions::default().ring(t);
    let mem = crate::fleet::MemNeed::of(&fd, samples);
    (fd, mem)
}

/// Searches, before any traffic, the static radii of every policy the
/// timeline will put in force. On a mesh of thousands of services and
/// hundreds of roots a search takes seconds of a core: made when its step
/// comes, it would hold the run loop (every later step landing that much
/// late) and take the core from the fleet being measured. Searches are
/// kept (`lab::roots::static_radii`), so the step finds its answer.
fn search_ahead(topology: &Topology, steps: &[(Duration, Action)]) {
    if !topology.load.many_roots() {
        return;
    }
    let mut state = LabState::of(topology);
    let mut ahead = topology.clone();
    for (_, action) in steps {
        if let Ok(crate::lab::state::Change::Policy) = crate::lab::state::apply(&mut state, action)
        {
            state.write_to(&mut ahead);
            crate::lab::roots::static_radii(&ahead, &ahead.policy);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::process::ExitCode;

    use super::*;
    use crate::middleware::server::BadHeaderName;

    #[test]
    fn a_fleet_the_machine_refuses_exits_3() {
        let emfile = FleetError::bind("z4066", std::io::Error::from_raw_os_error(24));
        let e = RunError::from(SessionError::from(emfile));
        assert_eq!(e.exit_code(), ExitCode::from(EXIT_ENVIRONMENT));
        assert!(e.to_string().contains("service `z4066`"), "{e}");
        let header = RunError::from(SessionError::from(FleetError::ClaimHeader {
            service: "A".into(),
            source: BadHeaderName("x bad".into()),
        }));
        assert_eq!(header.exit_code(), ExitCode::FAILURE);
    }
}
