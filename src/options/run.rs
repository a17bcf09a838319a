//! A run as its options and its scenario describe it: the session's
//! setup, the expectations to judge, and where the scenario ends. The
//! headless runner, the dashboard and the tour all start their runs so.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Endpoints, Load, Peers, Start};
use crate::cli::{closed_loop_in_one_process, read_remote, UsageError};
use crate::error::RunError;
use crate::fleet::Placement;
use crate::lab::expect::Expectation;
use crate::lab::Action;
use crate::report::samples::Format;
use crate::scenario::Scenario;
use crate::session::{Controls, NodeControls, Setup};
use crate::theme::Theme;
use crate::topology::Topology;

/// Default measured duration of a headless run.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(20);
/// Default warm-up of a run.
pub const DEFAULT_WARMUP: Duration = Duration::from_secs(2);

/// What `chaoslab run` is asked for, headless or on the dashboard.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Run {
    /// The topology file.
    pub topology: PathBuf,
    /// How long to run after the warm-up; `None`: the scenario's, else
    /// [`DEFAULT_DURATION`] (headless), or until stopped (dashboard).
    pub duration: Option<Duration>,
    /// The leading time not counted in the report; `None`: the
    /// scenario's, else [`DEFAULT_WARMUP`].
    pub warmup: Option<Duration>,
    /// The rate and the seed.
    pub load: Load,
    /// The policy and faults to start in.
    pub start: Start,
    /// The attribution mode, instead of the topology's.
    pub attribution: Option<error_ownership::Attribution>,
    /// The at-least-once rule (rule 5) on or off, instead of the
    /// topology's.
    pub at_least_once: Option<bool>,
    /// A scenario file; `None`: the topology's `scenario:`, if any.
    pub scenario: Option<PathBuf>,
    /// Where to write the JSON report.
    pub report: Option<PathBuf>,
    /// Where to write a JUnit XML report.
    pub junit: Option<PathBuf>,
    /// Where to write the HTML page and the series.
    pub pictures: Pictures,
    /// Dashboard frames per second.
    pub fps: u32,
    /// No colours.
    pub no_color: bool,
    /// The dashboard for a projector.
    pub big: bool,
    /// The dashboard's colours.
    pub theme: Theme,
    /// Where to save the run's actions as a scenario when it ends.
    pub record: Option<PathBuf>,
    /// Every service in the headless table and progress line.
    pub all: bool,
    /// Where to record the dashboard as an asciicast v2 file.
    pub cast: Option<PathBuf>,
    /// Prometheus metrics and the control API.
    pub endpoints: Endpoints,
    /// Each service an OS process of its own.
    pub processes: bool,
    /// The mesh over this many shard processes.
    pub shards: Option<usize>,
    /// Nodes already running elsewhere: where each one's control API
    /// answers, `NAME=URL` or a template with `{name}`.
    pub remote: Vec<String>,
    /// Where the entry runs, for `remote`.
    pub peers: Peers,
}

/// Where a run writes its pictures and numbers for people and
/// notebooks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pictures {
    /// One self-contained HTML page of the run.
    pub html: Option<PathBuf>,
    /// Every figure of the catalogue per sample: CSV when the file ends
    /// in `.csv`, JSON when in `.json`.
    pub series: Option<PathBuf>,
}

impl Pictures {
    /// The files these write, with their flags.
    pub fn outputs(&self) -> impl Iterator<Item = (&'static str, &Path)> {
        [("--html", &self.html), ("--series", &self.series)]
            .into_iter()
            .filter_map(|(f, p)| p.as_deref().map(|p| (f, p)))
    }

    /// The format of the series by its file's name; a name ending in
    /// neither `.csv` nor `.json` is a usage error.
    pub fn series_format(&self) -> Result<Option<Format>, UsageError> {
        self.series
            .as_deref()
            .map(Format::of)
            .transpose()
            .map_err(UsageError)
    }
}

/// A run prepared from its options and its scenario.
#[derive(Debug)]
pub struct Prepared {
    /// How to start the session.
    pub setup: Setup,
    /// The scenario's expectations.
    pub expectations: Vec<Expectation>,
    /// Where the scenario's run ends on the lab's clock (its warm-up and
    /// duration), when a scenario plays.
    pub end: Option<Duration>,
    /// The warm-up.
    pub warmup: Duration,
}

impl Run {
    /// The files the run writes, with their flags.
    pub fn outputs(&self) -> Vec<(&'static str, &Path)> {
        [
            ("--report", &self.report),
            ("--junit", &self.junit),
            ("--record", &self.record),
            ("--cast", &self.cast),
        ]
        .into_iter()
        .filter_map(|(f, p)| p.as_deref().map(|p| (f, p)))
        .chain(self.pictures.outputs())
        .collect()
    }

    /// The files the run reads: the topology and the scenario.
    pub fn inputs(&self) -> Vec<&Path> {
        std::iter::once(&self.topology)
            .chain(&self.scenario)
            .map(PathBuf::as_path)
            .collect()
    }

    /// The warm-up: the one asked for, else the scenario's, else the
    /// default.
    pub fn warmup(&self, scenario: Option<Duration>) -> Duration {
        self.warmup.or(scenario).unwrap_or(DEFAULT_WARMUP)
    }

    /// The run of `topology` with `scenario` (if any) under these
    /// options. `until_end`: the session stops where the scenario's run
    /// ends (headless); otherwise it stays open until it is stopped (a
    /// dashboard: the person quits).
    pub fn prepare(
        &self,
        topology: Topology,
        scenario: Option<&Scenario>,
        until_end: bool,
    ) -> Result<Prepared, RunError> {
        let warmup = self.warmup(scenario.and_then(|s| s.warmup));
        let Some(sc) = scenario else {
            let setup = self
                .setup(topology, vec![], vec![], warmup, None)
                .map_err(RunError::usage)?;
            return Ok(Prepared {
                setup,
                expectations: vec![],
                end: None,
                warmup,
            });
        };
        let duration = self.duration.or(sc.duration).unwrap_or(DEFAULT_DURATION);
        sc.check_duration(duration, self.duration.is_some())
            .map_err(RunError::input)?;
        let mut setup = self
            .setup(
                topology,
                sc.initial_actions(),
                sc.plan_steps(warmup),
                warmup,
                until_end.then_some(duration),
            )
            .map_err(RunError::usage)?;
        setup.captions = sc.plan_captions(warmup);
        Ok(Prepared {
            setup,
            expectations: sc.expectations.clone(),
            end: Some(warmup + duration),
            warmup,
        })
    }

    /// The session these options ask for: `topology` with every
    /// override as an action at time zero, then `initial` (a scenario's
    /// steps at 0 s) and `steps` on the lab's clock. A run without
    /// `duration` lasts until it is stopped.
    pub fn setup(
        &self,
        topology: Topology,
        initial: Vec<Action>,
        steps: Vec<(Duration, Action)>,
        warmup: Duration,
        duration: Option<Duration>,
    ) -> Result<Setup, UsageError> {
        let mut first = self.start.actions(&topology)?;
        first.extend(self.load.actions()?);
        if let Some(a) = self.attribution {
            first.push(Action::SetAttribution(a));
        }
        if let Some(on) = self.at_least_once {
            first.push(Action::SetAtLeastOnce(on));
        }
        first.extend(initial);
        let (placement, nodes) = self.remote_nodes(&topology)?;
        let endpoints = topology.services.iter().find(|s| s.endpoint.is_some());
        if let (Some(s), true) = (endpoints, !self.remote.is_empty()) {
            return Err(UsageError(format!(
                "service `{}` declares endpoints, and --remote drives one node per service it is given: run it with --processes (a node per service, serving all its endpoints) or in one process",
                s.service_name()
            )));
        }
        if self.processes || self.shards.is_some() || !self.remote.is_empty() {
            closed_loop_in_one_process(&topology)?;
        }
        if let Some(n) = self.shards {
            crate::topology::shards::place(&topology, n).map_err(|e| UsageError(e.0))?;
        }
        let replicated = topology.services.iter().find(|s| s.replicas > 1);
        if let (Some(s), true) = (replicated, !self.remote.is_empty()) {
            return Err(UsageError(format!(
                "service `{}` has {} replicas, and --remote drives one node per service: run it with --processes (a node per replica) or in one process, where each replica is a listener of its own",
                s.name, s.replicas
            )));
        }
        Ok(Setup {
            topology,
            initial: first,
            seed: self.load.seed.unwrap_or(1),
            load: true,
            warmup,
            until: duration.map(|d| warmup + d),
            steps,
            captions: vec![],
            placement,
            nodes,
            processes: (self.processes || self.shards.is_some()).then(|| self.topology.clone()),
            shards: self.shards,
            access: self.endpoints.access()?,
        })
    }

    /// With `remote`, where the entry runs and where each node answers
    /// its control API.
    fn remote_nodes(
        &self,
        t: &Topology,
    ) -> Result<(Option<Placement>, Option<Controls>), UsageError> {
        let peers_given = !self.peers.peer.is_empty() || self.peers.peers.is_some();
        if self.remote.is_empty() {
            if peers_given {
                return Err(UsageError(
                    "--peer and --peers say where the entry of a --remote run answers: give --remote with each node's control API too".into(),
                ));
            }
            return Ok((None, None));
        }
        if self.processes || self.shards.is_some() {
            return Err(UsageError(format!(
                "--remote drives nodes already running and {} starts its own: give one of them",
                if self.processes {
                    "--processes"
                } else {
                    "--shards"
                }
            )));
        }
        let controls = read_remote(&self.remote, t)?;
        let peers = self.peers.read(t)?;
        let mut c = vec![None; t.services.len()];
        for (id, s) in t.services.iter().enumerate() {
            if s.url.is_none() {
                let why = format!("--remote: `{}` runs as a node", s.name);
                c[id] = Some(controls.url(t, id, &why)?);
            }
        }
        // The load goes to every root where the peers say it runs.
        let placed = peers.roots(t)?;
        let placement = Placement {
            local: None,
            listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            replica: None,
            peers: placed,
            shard: None,
        };
        Ok((Some(placement), Some(NodeControls(c).into())))
    }
}
