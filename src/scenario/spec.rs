//! Scenario files: a timeline of steps and windowed expectations (SPEC
//! section 5), parsed against a topology into [`Action`]s on a clock and
//! [`Expectation`]s over windows of the run.
//!
//! A scenario is what turns a demo into a test: the same actions a person
//! takes at the keyboard, at fixed times, and what the measured figures
//! must be in given windows. It is a file of its own (`--scenario FILE`) or
//! the `scenario:` key of a topology.
//!
//! # The format
//!
//! ```yaml
//! description: D fails under retry, then ownership calms it down.  # optional
//! duration: 30s          # how long the run lasts after the warm-up (default 20s)
//! warmup: 2s             # leading time not counted (default 2s)
//! steps:                 # applied at their time; same `at`: in file order
//!   - at: 0s
//!     heal: D            # steps at 0s set the starting state, warm-up included
//!   - at: 5s
//!     fail: { service: D, error_rate: 1.0 }
//!   - at: 10s
//!     policy: budget
//!   - at: 15s
//!     drop_context: C
//! expect:                # each entry: a window, and one or more figures
//!   - during: 8s..10s
//!     service: D
//!     amplification: { max: 1.15 }
//!   - during: 12s..15s
//!     storm_radius: { max: 1 }
//!     root_availability: { min: 0.99 }
//! ```
//!
//! Times (`at`, `during`) count from the end of the warm-up: the run lasts
//! `warmup + duration`, and the report, the expectations and the JSON time
//! series all use the same clock. Flags on the command line win over the
//! file (`--duration`, `--warmup`), and `--scenario FILE` wins over a
//! topology's `scenario:` key. `--policy`, `--fail` and `--rps` set the
//! state the timeline starts from: a `fail` step merges into the fault
//! they leave.
//!
//! ## Steps
//! Every step has `at:` and exactly one of:
//!
//! | key | value | effect |
//! |---|---|---|
//! | `fail` | `{ service, error_rate, phase, latency, status, down }` | the keys given are merged into the service's fault as it stands at that point of the timeline |
//! | `heal` | a service | clears its fault: no errors, no added latency, listener up (phase and status are kept for a later `fail`) |
//! | `down` / `up` | a service | closes (connection refused) / reopens its listener |
//! | `policy` | a preset, or a map of policy fields | as the topology's `policy:`; a preset switches the mode and keeps R and B |
//! | `mode` | `{ retries, budget, ownership }` (booleans) | switches the mode's pieces one by one |
//! | `drop_context` / `restore_context` | a service | rule 4 on / off for it |
//! | `rps` | a positive number | the entry rate |
//! | `attribution` | `simple`, `declared` or `learned` | the attribution mode |
//! | `at_least_once` | a boolean | rule 5 on or off |
//! | `pause` | a boolean | pauses (`true`) or resumes the load |
//! | `reset` | `true` | resets counters, charts and learned memory |
//!
//! ## Expectations
//! Every entry has `during: FROM..TO` (e.g. `8s..10s`) and one or more
//! figures, each with a bound: `{ min: X }`, `{ max: X }`, both, or
//! `{ approx: X, tolerance: T }` (relative: `|seen - X| <= T * |X|`;
//! absolute when `X` is 0; `T` defaults to 0.05).
//!
//! Per-service figures need `service:`: `rps`, `baseline_rps`,
//! `amplification`, `model_amplification`, `requests`, `errors`,
//! `error_rate`, `claims_returned_true`/`_false`/`_missing`,
//! `claims_seen_true`/`_false`/`_missing`, `retries_sent`,
//! `retries_suppressed`, `budget_denied`, `own_errors`,
//! `wrongly_unclaimed`, `wrongly_claimed`, `at_least_once_claims`.
//! Fleet figures take no service: `root_availability`, `root_rps`,
//! `root_requests`, `root_errors`, `root_dropped`, `latency_p50`,
//! `latency_p99` (ms), `storm_radius` (the largest in the window),
//! `storm_radius_mean`, `spurious_avoided`. Counts are over the window.
//!
//! ## Errors
//! A bad scenario is refused before anything starts (exit status 2) with a
//! message naming the file and, where it can be found, the line: unknown
//! keys, a bad duration, an inverted window, an unknown figure, `approx`
//! without a number, an unknown service, a step or window after the end.
//! Mistakes in one value are reported where the YAML parser finds them;
//! the line of an unknown service or of a step after the end is found in
//! the text afterwards (the parser keeps no spans), with the same helpers
//! ([`crate::yaml`]) and the same messages for shared values as the
//! topology.
//!
//! ```
//! use chaoslab::scenario::spec::Scenario;
//! use chaoslab::topology::Topology;
//!
//! let t = Topology::from_yaml("name: t\nservices:\n  A: { calls: [B] }\n  B:\n", "t.yaml").unwrap();
//! let s = Scenario::from_yaml(
//!     "duration: 10s\nsteps:\n  - at: 2s\n    fail: { service: B, error_rate: 0.5 }\n",
//!     "s.yaml",
//!     &t,
//! )
//! .unwrap();
//! assert_eq!(s.steps.len(), 1);
//! let err = Scenario::from_yaml("steps:\n  - at: 2s\n    heal: X\n", "s.yaml", &t).unwrap_err();
//! assert!(err.to_string().starts_with("s.yaml:3:"), "{err}");
//! ```

use std::fmt;
use std::path::Path;
use std::time::Duration;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

use crate::ownership::Attribution;
use crate::session::Action;
use crate::topology::spec::PolicySpec;
use crate::topology::validate::{fmt_duration, fmt_num};
use crate::topology::{Fault, Phase, PolicyFields, Preset, ServiceId, Topology};
use crate::yaml::{self, parse_duration, Lines, Location};

/// The relative tolerance of `approx` when none is given.
pub const DEFAULT_TOLERANCE: f64 = 0.05;

/// Why a scenario was refused. Every message names the file, and the line
/// and column where they are known.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{file}: cannot read the scenario: {source}")]
    Read {
        /// The path as given.
        file: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Nothing in it.
    #[error("{file}: the scenario is empty: it needs `steps:`, `expect:` or both")]
    Empty {
        /// The file.
        file: String,
    },
    /// Anything found while parsing: YAML syntax, unknown keys, wrong
    /// types, bad durations, inverted windows, unknown figures, bounds
    /// without numbers.
    #[error("{at}: {message}")]
    Yaml {
        /// Where.
        at: Location,
        /// What is wrong, with the YAML path.
        message: String,
    },
    /// A step or an expectation names a service the topology lacks.
    #[error("{at}: {what}: there is no service \"{service}\" in topology {known}")]
    UnknownService {
        /// The service's name in the file.
        at: Location,
        /// The entry (`steps[2].fail`, `expect[0]`).
        what: String,
        /// The name given.
        service: String,
        /// `chain (services: A, B, C)`: the topology and what it has.
        known: String,
    },
    /// An expectation names a figure there is no such thing as.
    #[error(
        "{at}: {what}: unknown figure `{figure}`{hint}; per-service figures (with `service:`) are {}; fleet figures are {}",
        Figure::list(Scope::Service),
        Figure::list(Scope::Fleet)
    )]
    UnknownFigure {
        /// The figure's key.
        at: Location,
        /// The entry (`expect[0]`).
        what: String,
        /// The name given.
        figure: String,
        /// A "did you mean" note, or empty.
        hint: String,
    },
    /// A per-service figure without `service:`.
    #[error("{at}: {what}: `{figure}` is a per-service figure: say which service with `service:`")]
    FigureNeedsService {
        /// The figure's key.
        at: Location,
        /// The entry.
        what: String,
        /// The figure.
        figure: String,
    },
    /// A fleet figure with `service:`.
    #[error("{at}: {what}: `{figure}` is a fleet figure: it takes no `service:` (here `{service}`); put it in an expectation of its own")]
    FleetFigureWithService {
        /// The figure's key.
        at: Location,
        /// The entry.
        what: String,
        /// The figure.
        figure: String,
        /// The service given.
        service: String,
    },
    /// A step or a window ends after the run does.
    #[error("{at}: {what} is after the end of the run: the duration is {duration}{set_by}")]
    AfterDuration {
        /// The step's `at:` or the window's `during:`.
        at: Location,
        /// `steps[3]: the step at 35s`, `expect[1]: the window 25s..35s`.
        what: String,
        /// The run's duration.
        duration: String,
        /// ` (set by --duration)` or empty.
        set_by: String,
    },
}

/// A parsed scenario, resolved against a topology.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scenario {
    /// The file it came from (the topology's, for a `scenario:` key).
    pub origin: String,
    /// `description:`.
    pub description: Option<String>,
    /// `duration:` (the run after the warm-up).
    pub duration: Option<Duration>,
    /// `warmup:`.
    pub warmup: Option<Duration>,
    /// Steps as absolute actions, in time order (ties in file order).
    pub steps: Vec<Step>,
    /// Expectations, in file order.
    pub expectations: Vec<Expectation>,
}

/// One timeline step, resolved to an absolute [`Action`].
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// When, from the end of the warm-up.
    pub at: Duration,
    /// What.
    pub action: Action,
    /// Its entry in the file: `steps[3]`.
    pub entry: String,
    /// Where that entry is.
    pub source: Location,
}

/// One expectation: a figure, over a window, within a bound.
#[derive(Debug, Clone, PartialEq)]
pub struct Expectation {
    /// The window, from the end of the warm-up.
    pub window: Window,
    /// The service, for per-service figures.
    pub service: Option<ServiceId>,
    /// The service's name, for per-service figures.
    pub service_name: Option<String>,
    /// What is measured.
    pub figure: Figure,
    /// What it must be.
    pub bound: Bound,
    /// Its entry in the file: `expect[1]`.
    pub entry: String,
    /// Where its figure is written.
    pub source: Location,
    /// Where its window is written.
    pub window_source: Location,
}

impl Expectation {
    /// `D amplification <= 1.15`, `root_availability >= 0.99`.
    pub fn what(&self) -> String {
        let subject = match &self.service_name {
            Some(s) => format!("{s} {}", self.figure.name()),
            None => self.figure.name().to_string(),
        };
        format!("{subject} {}", self.bound)
    }
}

/// A window of the run, `from..to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Start.
    pub from: Duration,
    /// End (after `from`).
    pub to: Duration,
}

impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}..{}", fmt_duration(self.from), fmt_duration(self.to))
    }
}

impl Window {
    /// Parses `8s..10s`.
    pub fn parse(s: &str) -> Result<Window, String> {
        let Some((a, b)) = s.split_once("..") else {
            return Err(format!(
                "`{s}` is not a window: write FROM..TO, e.g. during: 8s..10s"
            ));
        };
        let from = parse_duration(a).map_err(|e| format!("window `{s}`: {e}"))?;
        let to = parse_duration(b).map_err(|e| format!("window `{s}`: {e}"))?;
        if to <= from {
            return Err(format!(
                "window `{s}` is inverted or empty: it must end after it starts (e.g. {}..{})",
                fmt_duration(to),
                fmt_duration(from.max(to + Duration::from_secs(1)))
            ));
        }
        Ok(Window { from, to })
    }

    /// Its length.
    pub fn len(&self) -> Duration {
        self.to.saturating_sub(self.from)
    }

    /// Whether it is empty (never, once parsed).
    pub fn is_empty(&self) -> bool {
        self.to <= self.from
    }
}

pub use crate::session::figures::Figure;
use crate::session::figures::Scope;

/// What a figure must be.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Bound {
    /// At least this.
    pub min: Option<f64>,
    /// At most this.
    pub max: Option<f64>,
    /// About this: `(value, relative tolerance)`.
    pub approx: Option<(f64, f64)>,
}

impl Bound {
    /// Whether `observed` is within the bound (never for NaN).
    pub fn check(&self, observed: f64) -> bool {
        if !observed.is_finite() {
            return false;
        }
        // A hair of slack for float noise: `max: 1.1` holds at 1.1000000001.
        let eps = |v: f64| 1e-9 * v.abs().max(1.0);
        self.min.is_none_or(|m| observed >= m - eps(m))
            && self.max.is_none_or(|m| observed <= m + eps(m))
            && self.approx.is_none_or(|(v, tol)| {
                let allowed = if v == 0.0 { tol } else { tol * v.abs() };
                (observed - v).abs() <= allowed + eps(v)
            })
    }

    /// The bound's interval `(lo, hi)`.
    pub fn interval(&self) -> (f64, f64) {
        match self.approx {
            Some((v, tol)) => {
                let d = if v == 0.0 { tol } else { tol * v.abs() };
                (v - d, v + d)
            }
            None => (
                self.min.unwrap_or(f64::NEG_INFINITY),
                self.max.unwrap_or(f64::INFINITY),
            ),
        }
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if let Some((v, tol)) = self.approx {
            return if v == 0.0 {
                write!(f, "≈ 0 ± {}", fmt_num(tol))
            } else {
                write!(f, "≈ {} ± {}%", fmt_num(v), fmt_num(tol * 100.0))
            };
        }
        match (self.min, self.max) {
            (Some(lo), Some(hi)) => write!(f, "in [{}, {}]", fmt_num(lo), fmt_num(hi)),
            (Some(lo), None) => write!(f, ">= {}", fmt_num(lo)),
            (None, Some(hi)) => write!(f, "<= {}", fmt_num(hi)),
            (None, None) => f.write_str("(any value)"),
        }
    }
}

impl Scenario {
    /// Reads and parses a scenario file against `topology` (its faults and
    /// policy as the run starts).
    pub fn load(path: &Path, topology: &Topology) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
            file: file.clone(),
            source,
        })?;
        Scenario::from_yaml(&text, &file, topology)
    }

    /// The scenario of a run: the file given with `--scenario`, else the
    /// `scenario:` key of the topology file, else none.
    pub fn for_run(
        flag: Option<&Path>,
        topology_file: &Path,
        topology: &Topology,
    ) -> Result<Option<Scenario>, ScenarioError> {
        if let Some(p) = flag {
            return Scenario::load(p, topology).map(Some);
        }
        if topology.scenario.is_none() {
            return Ok(None);
        }
        let file = topology_file.display().to_string();
        let text =
            std::fs::read_to_string(topology_file).map_err(|source| ScenarioError::Read {
                file: file.clone(),
                source,
            })?;
        Scenario::from_topology_yaml(&text, &file, topology)
    }

    /// Parses scenario text; `origin` names it in errors.
    pub fn from_yaml(
        text: &str,
        origin: &str,
        topology: &Topology,
    ) -> Result<Scenario, ScenarioError> {
        if !yaml::has_content(text) {
            return Err(ScenarioError::Empty {
                file: origin.to_string(),
            });
        }
        let spec: Option<ScenarioSpec> = yaml::from_str(text, origin)?;
        let spec = spec.ok_or_else(|| ScenarioError::Empty {
            file: origin.to_string(),
        })?;
        resolve(spec, &Locator::new(text, origin, None), topology)
    }

    /// Parses the `scenario:` key of a topology file's text, if it has one.
    pub fn from_topology_yaml(
        text: &str,
        origin: &str,
        topology: &Topology,
    ) -> Result<Option<Scenario>, ScenarioError> {
        let embedded: Embedded = yaml::from_str(text, origin)?;
        match embedded.0 {
            None => Ok(None),
            Some(spec) => resolve(
                spec,
                &Locator::new(text, origin, Some("scenario")),
                topology,
            )
            .map(Some),
        }
    }

    /// Checks every step and window against the run's duration
    /// (`set_by_flag`: the duration came from `--duration`).
    pub fn check_duration(
        &self,
        duration: Duration,
        set_by_flag: bool,
    ) -> Result<(), ScenarioError> {
        let after = |at: &Location, what: String| ScenarioError::AfterDuration {
            at: at.clone(),
            what,
            duration: fmt_duration(duration),
            set_by: if set_by_flag {
                " (set by --duration)".into()
            } else {
                String::new()
            },
        };
        for s in &self.steps {
            if s.at > duration {
                return Err(after(
                    &s.source,
                    format!("{}: the step at {}", s.entry, fmt_duration(s.at)),
                ));
            }
        }
        for e in &self.expectations {
            if e.window.to > duration {
                return Err(after(
                    &e.window_source,
                    format!("{}: the window {}", e.entry, e.window),
                ));
            }
        }
        Ok(())
    }

    /// The actions of the steps at 0 s: the state the run starts in.
    pub fn initial_actions(&self) -> Vec<Action> {
        self.steps
            .iter()
            .filter(|s| s.at.is_zero())
            .map(|s| s.action.clone())
            .collect()
    }

    /// The steps on the lab's clock: steps at 0 s at the very start (they
    /// set the state the warm-up runs in), the others `warmup` later.
    pub fn plan_steps(&self, warmup: Duration) -> Vec<(Duration, Action)> {
        self.steps
            .iter()
            .map(|s| {
                let t = if s.at.is_zero() {
                    Duration::ZERO
                } else {
                    warmup + s.at
                };
                (t, s.action.clone())
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------
// The YAML shapes.

/// The document.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioSpec {
    #[serde(default)]
    description: Option<String>,
    #[serde(default, deserialize_with = "yaml::duration")]
    duration: Option<Duration>,
    #[serde(default, deserialize_with = "yaml::duration")]
    warmup: Option<Duration>,
    #[serde(default)]
    steps: Option<Vec<StepSpec>>,
    #[serde(default)]
    expect: Option<Vec<ExpectSpec>>,
}

/// A topology file, read only for its `scenario:` key.
struct Embedded(Option<ScenarioSpec>);

impl<'de> Deserialize<'de> for Embedded {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Embedded;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a topology map")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Embedded, A::Error> {
                let mut out = None;
                while let Some(k) = map.next_key::<String>()? {
                    if k == "scenario" {
                        out = map.next_value::<Option<ScenarioSpec>>()?;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(Embedded(out))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Embedded, E> {
                Ok(Embedded(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// A step as written: `at` and exactly one action.
#[derive(Deserialize)]
#[serde(try_from = "RawStep")]
struct StepSpec {
    at: Duration,
    kind: StepKind,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    #[serde(default, deserialize_with = "yaml::duration")]
    at: Option<Duration>,
    #[serde(default)]
    fail: Option<FailSpec>,
    #[serde(default)]
    heal: Option<String>,
    #[serde(default)]
    down: Option<String>,
    #[serde(default)]
    up: Option<String>,
    #[serde(default)]
    policy: Option<PolicyStep>,
    #[serde(default)]
    mode: Option<ModeSpec>,
    #[serde(default)]
    drop_context: Option<String>,
    #[serde(default)]
    restore_context: Option<String>,
    #[serde(default, deserialize_with = "yaml::rps")]
    rps: Option<f64>,
    #[serde(default)]
    attribution: Option<Attribution>,
    #[serde(default)]
    at_least_once: Option<bool>,
    #[serde(default)]
    pause: Option<bool>,
    #[serde(default)]
    reset: Option<bool>,
}

/// What a step does, before it is resolved against the timeline.
#[derive(Debug, Clone, PartialEq)]
enum StepKind {
    Fail(FailSpec),
    Heal(String),
    Down(String),
    Up(String),
    Policy(PolicyFields),
    Mode(ModeSpec),
    DropContext(String),
    RestoreContext(String),
    Rps(f64),
    Attribution(Attribution),
    AtLeastOnce(bool),
    Pause(bool),
    Reset,
}

const STEP_KEYS: &str = "fail, heal, down, up, policy, mode, drop_context, restore_context, rps, attribution, at_least_once, pause, reset";

impl TryFrom<RawStep> for StepSpec {
    type Error = String;
    fn try_from(r: RawStep) -> Result<StepSpec, String> {
        let at = r.at.ok_or("a step needs `at:` (e.g. at: 5s)")?;
        let mut kinds = Vec::new();
        let mut names = Vec::new();
        let mut add = |name: &'static str, k: Option<StepKind>| {
            if let Some(k) = k {
                kinds.push(k);
                names.push(name);
            }
        };
        add("fail", r.fail.map(StepKind::Fail));
        add("heal", r.heal.map(StepKind::Heal));
        add("down", r.down.map(StepKind::Down));
        add("up", r.up.map(StepKind::Up));
        add("policy", r.policy.map(|p| StepKind::Policy(p.0)));
        add("mode", r.mode.map(StepKind::Mode));
        add("drop_context", r.drop_context.map(StepKind::DropContext));
        add(
            "restore_context",
            r.restore_context.map(StepKind::RestoreContext),
        );
        add("rps", r.rps.map(StepKind::Rps));
        add("attribution", r.attribution.map(StepKind::Attribution));
        add("at_least_once", r.at_least_once.map(StepKind::AtLeastOnce));
        add("pause", r.pause.map(StepKind::Pause));
        if let Some(reset) = r.reset {
            if !reset {
                return Err("`reset:` takes `true` (leave the step out to not reset)".into());
            }
            add("reset", Some(StepKind::Reset));
        }
        match kinds.len() {
            1 => Ok(StepSpec {
                at,
                kind: kinds.pop().expect("one"),
            }),
            0 => Err(format!(
                "the step at {} does nothing: give it one of {STEP_KEYS}",
                fmt_duration(at)
            )),
            _ => Err(format!(
                "the step at {} has {}: one action per step (write another step with the same `at:`)",
                fmt_duration(at),
                names.join(" and ")
            )),
        }
    }
}

/// `fail: { service, error_rate, phase, latency, status, down }`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct FailSpec {
    service: String,
    #[serde(default, deserialize_with = "yaml::rate")]
    error_rate: Option<f64>,
    #[serde(default)]
    phase: Option<Phase>,
    #[serde(default, deserialize_with = "yaml::duration")]
    latency: Option<Duration>,
    #[serde(default, deserialize_with = "yaml::status")]
    status: Option<u16>,
    #[serde(default)]
    down: Option<bool>,
}

impl FailSpec {
    /// The fault as it stands, with the keys given merged in.
    fn merge(&self, into: &Fault) -> Fault {
        Fault {
            error_rate: self.error_rate.unwrap_or(into.error_rate),
            phase: self.phase.unwrap_or(into.phase),
            latency: self.latency.unwrap_or(into.latency),
            status: self.status.unwrap_or(into.status),
            down: self.down.unwrap_or(into.down),
        }
    }
}

/// `mode: { retries, budget, ownership }`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModeSpec {
    #[serde(default)]
    retries: Option<bool>,
    #[serde(default)]
    budget: Option<bool>,
    #[serde(default)]
    ownership: Option<bool>,
}

/// `policy: ownership` or `policy: { preset: budget, attempts: 3 }`.
struct PolicyStep(PolicyFields);

impl<'de> Deserialize<'de> for PolicyStep {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PolicyStep;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a preset (none, retry, budget, ownership) or a map of policy fields")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PolicyStep, E> {
                let p = Preset::parse(v.trim()).ok_or_else(|| {
                    E::custom(format!(
                        "unknown policy `{v}`: choose none, retry, budget or ownership, or give a map of policy fields"
                    ))
                })?;
                Ok(PolicyStep(PolicyFields {
                    preset: Some(p),
                    ..PolicyFields::default()
                }))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<PolicyStep, A::Error> {
                let p = PolicySpec::deserialize(de::value::MapAccessDeserializer::new(map))?;
                let f = p.to_fields();
                if f.is_empty() {
                    return Err(de::Error::custom(
                        "the policy map sets nothing: give a preset or policy fields",
                    ));
                }
                Ok(PolicyStep(f))
            }
        }
        d.deserialize_any(V)
    }
}

/// An expectation entry as written; figure names are checked when the
/// entry is resolved, so the error can point at the key.
struct ExpectSpec {
    window: Window,
    service: Option<String>,
    figures: Vec<(String, Bound)>,
}

/// `during: 8s..10s`.
struct WindowSpec(Window);

impl<'de> Deserialize<'de> for WindowSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = WindowSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a window FROM..TO such as 8s..10s")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<WindowSpec, E> {
                Window::parse(v).map(WindowSpec).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> Deserialize<'de> for ExpectSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ExpectSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "an expectation: `during:`, optionally `service:`, and figures with bounds",
                )
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ExpectSpec, A::Error> {
                let mut window = None;
                let mut service: Option<String> = None;
                let mut figures: Vec<(String, Bound)> = Vec::new();
                while let Some(k) = map.next_key::<String>()? {
                    match k.as_str() {
                        "during" => {
                            if window.is_some() {
                                return Err(de::Error::duplicate_field("during"));
                            }
                            window = Some(map.next_value::<WindowSpec>()?.0);
                        }
                        "service" => {
                            if service.is_some() {
                                return Err(de::Error::duplicate_field("service"));
                            }
                            service = Some(map.next_value()?);
                        }
                        _ => {
                            if figures.iter().any(|(g, _)| *g == k) {
                                return Err(de::Error::custom(format!(
                                    "figure `{k}` is given twice in one expectation"
                                )));
                            }
                            let b: BoundSpec = map.next_value()?;
                            figures.push((k, b.0));
                        }
                    }
                }
                let window = window.ok_or_else(|| {
                    de::Error::custom("an expectation needs `during: FROM..TO` (e.g. 8s..10s)")
                })?;
                if figures.is_empty() {
                    return Err(de::Error::custom(format!(
                        "an expectation needs a figure with a bound, e.g. `amplification: {{ max: 1.15 }}` (per-service figures: {}; fleet figures: {})",
                        Figure::list(Scope::Service),
                        Figure::list(Scope::Fleet)
                    )));
                }
                Ok(ExpectSpec {
                    window,
                    service,
                    figures,
                })
            }
        }
        d.deserialize_map(V)
    }
}

/// `{ min }`, `{ max }`, `{ min, max }` or `{ approx, tolerance }`.
struct BoundSpec(Bound);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBound {
    #[serde(default, deserialize_with = "bound_number")]
    min: Option<f64>,
    #[serde(default, deserialize_with = "bound_number")]
    max: Option<f64>,
    #[serde(default, deserialize_with = "approx_number")]
    approx: Option<f64>,
    #[serde(default, deserialize_with = "tolerance")]
    tolerance: Option<f64>,
}

impl<'de> Deserialize<'de> for BoundSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = BoundSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a bound such as { max: 1.15 }, { min: 0.99 } or { approx: 8, tolerance: 0.05 }")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<BoundSpec, A::Error> {
                let r = RawBound::deserialize(de::value::MapAccessDeserializer::new(map))?;
                bound(r).map(BoundSpec).map_err(de::Error::custom)
            }
        }
        d.deserialize_map(V)
    }
}

fn bound(r: RawBound) -> Result<Bound, String> {
    if r.approx.is_some() && (r.min.is_some() || r.max.is_some()) {
        return Err("give either `approx` (with `tolerance`) or `min`/`max`, not both".into());
    }
    if r.tolerance.is_some() && r.approx.is_none() {
        return Err(
            "`tolerance` goes with `approx`, which is missing: write { approx: 8, tolerance: 0.05 }"
                .into(),
        );
    }
    if let (Some(lo), Some(hi)) = (r.min, r.max) {
        if lo > hi {
            return Err(format!(
                "min {} is above max {}: nothing can pass",
                fmt_num(lo),
                fmt_num(hi)
            ));
        }
    }
    if r.min.is_none() && r.max.is_none() && r.approx.is_none() {
        return Err(
            "a bound needs `min`, `max` or `approx`, e.g. { max: 1.15 } or { approx: 8, tolerance: 0.05 }"
                .into(),
        );
    }
    Ok(Bound {
        min: r.min,
        max: r.max,
        approx: r
            .approx
            .map(|v| (v, r.tolerance.unwrap_or(DEFAULT_TOLERANCE))),
    })
}

// ---------------------------------------------------------------------------
// Values checked where they are written.

fn finite(v: f64) -> Result<f64, String> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(format!("the bound must be a finite number, got {v}"))
    }
}

fn bound_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    yaml::number(d, "a number", "min and max need a number", finite)
}

fn approx_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    yaml::number(
        d,
        "a number",
        "approx needs a number (e.g. { approx: 8, tolerance: 0.05 })",
        finite,
    )
}

fn tolerance<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    yaml::number(
        d,
        "a relative tolerance such as 0.05",
        "tolerance needs a number (0.05 is 5%)",
        |v| {
            if v.is_finite() && v >= 0.0 {
                Ok(v)
            } else {
                Err(format!("tolerance must be 0 or more (0.05 is 5%), got {v}"))
            }
        },
    )
}

// ---------------------------------------------------------------------------
// Resolution: names → ids, relative steps → absolute actions.

fn resolve(spec: ScenarioSpec, loc: &Locator, t: &Topology) -> Result<Scenario, ScenarioError> {
    let steps = spec.steps.unwrap_or_default();
    let expect = spec.expect.unwrap_or_default();
    if steps.is_empty() && expect.is_empty() && spec.duration.is_none() {
        return Err(ScenarioError::Empty {
            file: loc.text.file().to_string(),
        });
    }
    let service = |name: &str, section: &str, i: usize, what: String| {
        t.service_id(name)
            .ok_or_else(|| ScenarioError::UnknownService {
                at: loc.token_in_item(section, i, name),
                what,
                service: name.to_string(),
                known: format!("{} (services: {})", t.name, service_list(t)),
            })
    };

    // Steps in time order (ties in file order), folded over the state so a
    // `fail` merges into the fault as it stands then.
    let mut order: Vec<usize> = (0..steps.len()).collect();
    order.sort_by_key(|&i| steps[i].at);
    let mut faults: Vec<Fault> = t.services.iter().map(|s| s.fault.clone()).collect();
    let mut out = Vec::with_capacity(steps.len());
    for i in order {
        let s = &steps[i];
        let what = |k: &str| format!("steps[{i}].{k}");
        let mut fault_change = |id: ServiceId, f: &dyn Fn(&Fault) -> Fault| {
            faults[id] = f(&faults[id]);
            Action::SetFault {
                service: id,
                fault: faults[id].clone(),
            }
        };
        let action = match &s.kind {
            StepKind::Fail(f) => {
                let id = service(&f.service, "steps", i, what("fail"))?;
                fault_change(id, &|old| f.merge(old))
            }
            StepKind::Heal(n) => {
                let id = service(n, "steps", i, what("heal"))?;
                fault_change(id, &|old| Fault {
                    phase: old.phase,
                    status: old.status,
                    ..Fault::default()
                })
            }
            StepKind::Down(n) => {
                let id = service(n, "steps", i, what("down"))?;
                fault_change(id, &|old| Fault {
                    down: true,
                    ..old.clone()
                })
            }
            StepKind::Up(n) => {
                let id = service(n, "steps", i, what("up"))?;
                fault_change(id, &|old| Fault {
                    down: false,
                    ..old.clone()
                })
            }
            StepKind::Policy(p) => Action::Policy(p.clone()),
            StepKind::Mode(m) => Action::Mode {
                retries: m.retries,
                budget: m.budget,
                ownership: m.ownership,
            },
            StepKind::DropContext(n) => Action::SetContextDropped {
                service: service(n, "steps", i, what("drop_context"))?,
                dropped: true,
            },
            StepKind::RestoreContext(n) => Action::SetContextDropped {
                service: service(n, "steps", i, what("restore_context"))?,
                dropped: false,
            },
            StepKind::Rps(r) => Action::SetRps(*r),
            StepKind::Attribution(a) => Action::SetAttribution(*a),
            StepKind::AtLeastOnce(b) => Action::SetAtLeastOnce(*b),
            StepKind::Pause(p) => Action::Pause(*p),
            StepKind::Reset => Action::Reset,
        };
        out.push(Step {
            at: s.at,
            action,
            entry: format!("steps[{i}]"),
            source: loc.token_in_item("steps", i, "at"),
        });
    }

    let mut expectations = Vec::new();
    for (i, e) in expect.into_iter().enumerate() {
        let (id, name) = match &e.service {
            Some(n) => (
                Some(service(n, "expect", i, format!("expect[{i}].service"))?),
                Some(n.clone()),
            ),
            None => (None, None),
        };
        for (figure_name, bound) in e.figures {
            let at = || loc.token_in_item("expect", i, &figure_name);
            let Some(figure) = Figure::parse(&figure_name) else {
                return Err(ScenarioError::UnknownFigure {
                    at: at(),
                    what: format!("expect[{i}]"),
                    hint: did_you_mean(&figure_name),
                    figure: figure_name,
                });
            };
            match (&e.service, figure.scope() == Scope::Service) {
                (None, true) => {
                    return Err(ScenarioError::FigureNeedsService {
                        at: at(),
                        what: format!("expect[{i}]"),
                        figure: figure_name,
                    })
                }
                (Some(s), false) => {
                    return Err(ScenarioError::FleetFigureWithService {
                        at: at(),
                        what: format!("expect[{i}]"),
                        figure: figure_name,
                        service: s.clone(),
                    })
                }
                _ => {}
            }
            expectations.push(Expectation {
                window: e.window,
                service: id,
                service_name: name.clone(),
                figure,
                bound,
                entry: format!("expect[{i}]"),
                source: loc.token_in_item("expect", i, figure.name()),
                window_source: loc.token_in_item("expect", i, "during"),
            });
        }
    }

    let scenario = Scenario {
        origin: loc.text.file().to_string(),
        description: spec.description,
        duration: spec.duration,
        warmup: spec.warmup,
        steps: out,
        expectations,
    };
    if let Some(d) = scenario.duration {
        scenario.check_duration(d, false)?;
    }
    Ok(scenario)
}

/// `` (did you mean `amplification`?)`` for a near miss, else empty.
fn did_you_mean(name: &str) -> String {
    yaml::did_you_mean(name, Figure::ALL.iter().map(|f| f.name()))
        .map(|n| format!(" (did you mean `{n}`?)"))
        .unwrap_or_default()
}

fn service_list(t: &Topology) -> String {
    const MAX: usize = 20;
    let mut names: Vec<&str> = t
        .services
        .iter()
        .take(MAX)
        .map(|s| s.name.as_str())
        .collect();
    if t.services.len() > MAX {
        names.push("…");
    }
    names.join(", ")
}

impl From<yaml::Error> for ScenarioError {
    fn from(e: yaml::Error) -> Self {
        ScenarioError::Yaml {
            at: e.at,
            message: e.message,
        }
    }
}

/// Finds lines in the text for errors found after parsing: the entries of
/// the block sequences `steps:` and `expect:`, at the top of the file or
/// under a top-level key (`scenario:` in a topology). Flow style falls back
/// to the section's line, or the file.
struct Locator<'a> {
    text: Lines<'a>,
    /// `(section, its key's line, first line of each item, end line)`.
    sections: Vec<(&'static str, usize, Vec<usize>, usize)>,
}

impl<'a> Locator<'a> {
    fn new(text: &'a str, file: &'a str, under: Option<&str>) -> Locator<'a> {
        let text = Lines::new(text, file);
        // The scope: the whole file, or the block under a top-level key.
        let scope = match under {
            None => 0..text.len(),
            Some(key) => text
                .find_key(0..text.len(), key)
                .map_or(0..0, |k| text.block(k)),
        };
        let sections = ["steps", "expect"]
            .into_iter()
            .filter_map(|name| {
                let k = text.find_key(scope.clone(), name)?;
                let block = text.block(k);
                let items = text
                    .entries(block.clone())
                    .into_iter()
                    .filter(|&i| text.is_item(i))
                    .collect();
                Some((name, k, items, block.end))
            })
            .collect();
        Locator { text, sections }
    }

    /// `token` in item `i` of `section`; the item's line if the token is
    /// not found; the section's line, or the file, in flow style.
    fn token_in_item(&self, section: &str, i: usize, token: &str) -> Location {
        let Some((_, k, items, end)) = self.sections.iter().find(|s| s.0 == section) else {
            return self.text.whole_file();
        };
        let Some(&first) = items.get(i) else {
            return self.text.at(*k, self.text.indent(*k));
        };
        let last = items.get(i + 1).copied().unwrap_or(*end);
        self.text
            .find(first..last.max(first + 1), token, 0)
            .unwrap_or_else(|| self.text.at(first, self.text.indent(first)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain() -> Topology {
        Topology::from_yaml(
            "name: chain\nservices:\n  A: { calls: [B] }\n  B: { calls: [C] }\n  C: { calls: [D] }\n  D:\n    fault: { error_rate: 1.0, phase: before, status: 503 }\n",
            "chain.yaml",
        )
        .unwrap()
    }

    fn ok(yaml: &str) -> Scenario {
        Scenario::from_yaml(yaml, "s.yaml", &chain()).unwrap_or_else(|e| panic!("{e}"))
    }

    fn err(yaml: &str) -> String {
        match Scenario::from_yaml(yaml, "s.yaml", &chain()) {
            Ok(s) => panic!("accepted: {s:?}"),
            Err(e) => e.to_string(),
        }
    }

    /// Asserts the message starts at `s.yaml:LINE:` and holds `text`.
    fn at(msg: &str, line: u32, text: &str) {
        assert!(
            msg.starts_with(&format!("s.yaml:{line}:")),
            "expected line {line}: {msg}"
        );
        assert!(msg.contains(text), "expected `{text}` in: {msg}");
    }

    const SPEC_EXAMPLE: &str = "duration: 30s
steps:                                   # applied at their time, in order
  - at: 5s
    fail: { service: D, error_rate: 1.0 }      # any fault keys
  - at: 10s
    policy: budget                       # a preset, or a map of policy fields
  - at: 15s
    drop_context: C                      # restore_context: C undoes it
  - at: 20s
    heal: D                              # clears D's fault
  - at: 22s
    rps: 400
expect:                                  # checked over a window of the run
  - during: 8s..10s
    service: D
    amplification: { max: 1.15 }         # any per-service figure of the report
  - during: 3s..5s
    service: D
    amplification: { approx: 8, tolerance: 0.05 }   # relative tolerance
  - during: 12s..15s
    storm_radius: { max: 1 }
  - during: 25s..30s
    root_availability: { min: 0.99 }
";

    #[test]
    fn the_spec_example_parses_to_absolute_actions() {
        let s = ok(SPEC_EXAMPLE);
        assert_eq!(s.duration, Some(Duration::from_secs(30)));
        let d = 3;
        let failing = Fault {
            error_rate: 1.0,
            phase: Phase::Before,
            status: 503,
            ..Fault::default()
        };
        let steps: Vec<(u64, Action)> = s
            .steps
            .iter()
            .map(|s| (s.at.as_secs(), s.action.clone()))
            .collect();
        assert_eq!(
            steps,
            vec![
                (
                    5,
                    Action::SetFault {
                        service: d,
                        fault: failing.clone()
                    }
                ),
                (
                    10,
                    Action::Policy(PolicyFields {
                        preset: Some(Preset::Budget),
                        ..Default::default()
                    })
                ),
                (
                    15,
                    Action::SetContextDropped {
                        service: 2,
                        dropped: true
                    }
                ),
                (
                    20,
                    Action::SetFault {
                        service: d,
                        // Phase and status stay for a later `fail`.
                        fault: Fault {
                            error_rate: 0.0,
                            ..failing
                        }
                    }
                ),
                (22, Action::SetRps(400.0)),
            ]
        );
        assert_eq!(s.steps[0].source.line, Some(3));
        let e: Vec<String> = s.expectations.iter().map(Expectation::what).collect();
        assert_eq!(
            e,
            vec![
                "D amplification <= 1.15",
                "D amplification ≈ 8 ± 5%",
                "storm_radius <= 1",
                "root_availability >= 0.99"
            ]
        );
        assert_eq!(s.expectations[1].service, Some(d));
        assert_eq!(s.expectations[1].bound.approx, Some((8.0, 0.05)));
        assert_eq!(s.expectations[1].source.line, Some(19));
        assert_eq!(
            s.expectations[3].window,
            Window {
                from: Duration::from_secs(25),
                to: Duration::from_secs(30)
            }
        );
    }

    #[test]
    fn fail_merges_into_the_fault_as_it_stands_then() {
        // Written out of order: the timeline is sorted before merging.
        let s = ok("steps:
  - at: 4s
    fail: { service: C, latency: 20ms }
  - at: 2s
    fail: { service: C, error_rate: 0.5, phase: before }
  - at: 6s
    down: C
  - at: 7s
    up: C
  - at: 8s
    heal: C
");
        let faults: Vec<Fault> = s
            .steps
            .iter()
            .map(|s| match &s.action {
                Action::SetFault { service: 2, fault } => fault.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        let half = Fault {
            error_rate: 0.5,
            phase: Phase::Before,
            ..Fault::default()
        };
        let slow = Fault {
            latency: Duration::from_millis(20),
            ..half.clone()
        };
        assert_eq!(
            faults,
            vec![
                half.clone(),
                slow.clone(),
                Fault {
                    down: true,
                    ..slow.clone()
                },
                slow,
                Fault {
                    phase: Phase::Before,
                    ..Fault::default()
                }
            ]
        );
        assert_eq!(s.steps[0].entry, "steps[1]");
        assert_eq!(s.steps[0].source.line, Some(4));
    }

    #[test]
    fn every_step_kind_parses() {
        let s = ok("steps:
  - { at: 1s, policy: { preset: ownership, attempts: 3, budget: off } }
  - { at: 1s, mode: { budget: false } }
  - { at: 2s, restore_context: C }
  - { at: 2s, attribution: simple }
  - { at: 2s, at_least_once: false }
  - { at: 3s, pause: true }
  - { at: 3.5s, reset: true }
");
        let actions: Vec<Action> = s.steps.into_iter().map(|s| s.action).collect();
        assert_eq!(
            actions,
            vec![
                Action::Policy(PolicyFields {
                    preset: Some(Preset::Ownership),
                    attempts: Some(3),
                    budget: Some(crate::topology::BudgetSetting::Off),
                    ..Default::default()
                }),
                Action::Mode {
                    retries: None,
                    budget: Some(false),
                    ownership: None
                },
                Action::SetContextDropped {
                    service: 2,
                    dropped: false
                },
                Action::SetAttribution(Attribution::Simple),
                Action::SetAtLeastOnce(false),
                Action::Pause(true),
                Action::Reset,
            ]
        );
    }

    #[test]
    fn steps_at_zero_start_the_run_and_the_rest_wait_for_the_warmup() {
        let s = ok("steps:\n  - at: 0s\n    heal: D\n  - at: 3s\n    rps: 50\n");
        assert_eq!(s.initial_actions().len(), 1);
        let plan = s.plan_steps(Duration::from_secs(2));
        assert_eq!(plan[0].0, Duration::ZERO);
        assert_eq!(plan[1].0, Duration::from_secs(5));
    }

    #[test]
    fn unknown_service_names_the_line_and_the_services() {
        let m = err("duration: 10s\nsteps:\n  - at: 1s\n    heal: D\n  - at: 2s\n    fail: { service: X, error_rate: 1 }\n");
        at(
            &m,
            6,
            "steps[1].fail: there is no service \"X\" in topology chain (services: A, B, C, D)",
        );
        assert!(m.starts_with("s.yaml:6:22:"), "{m}");
        let m = err("expect:\n  - during: 1s..2s\n    service: Q\n    rps: { min: 1 }\n");
        at(&m, 3, "expect[0].service: there is no service \"Q\"");
        let m = err("steps:\n  - at: 1s\n    drop_context: Z\n");
        at(&m, 3, "steps[0].drop_context");
    }

    #[test]
    fn unknown_figure_is_refused_with_the_list() {
        let m = err("expect:\n  - during: 1s..2s\n    service: D\n    amplificaton: { max: 1 }\n");
        at(
            &m,
            4,
            "expect[0]: unknown figure `amplificaton` (did you mean `amplification`?); per-service figures",
        );
        assert!(m.starts_with("s.yaml:4:5:"), "{m}");
        assert!(
            m.contains("fleet figures are root_rps, root_requests"),
            "{m}"
        );
        let m = err("expect:\n  - during: 1s..2s\n    happiness: { max: 1 }\n");
        at(&m, 3, "unknown figure `happiness`; per-service");
    }

    #[test]
    fn figures_and_services_must_agree() {
        let m = err("expect:\n  - during: 1s..2s\n    amplification: { max: 1 }\n");
        at(
            &m,
            3,
            "expect[0]: `amplification` is a per-service figure: say which service",
        );
        let m = err("expect:\n  - during: 1s..2s\n    service: D\n    storm_radius: { max: 1 }\n");
        at(
            &m,
            4,
            "`storm_radius` is a fleet figure: it takes no `service:` (here `D`)",
        );
        let m = err("expect:\n  - during: 1s..2s\n    service: D\n");
        at(&m, 2, "an expectation needs a figure");
        let m = err("expect:\n  - service: D\n    rps: { min: 1 }\n");
        at(&m, 2, "needs `during: FROM..TO`");
    }

    #[test]
    fn a_step_after_the_end_is_refused() {
        let m = err("duration: 10s\nsteps:\n  - at: 2s\n    heal: D\n  - at: 12s\n    heal: D\n");
        at(
            &m,
            5,
            "steps[1]: the step at 12s is after the end of the run: the duration is 10s",
        );
        // The command line's duration is checked too, and named.
        let s = ok("steps:\n  - at: 12s\n    heal: D\n");
        let m = s
            .check_duration(Duration::from_secs(10), true)
            .unwrap_err()
            .to_string();
        at(&m, 2, "the duration is 10s (set by --duration)");
        assert!(s.check_duration(Duration::from_secs(12), false).is_ok());
    }

    #[test]
    fn a_window_after_the_end_is_refused() {
        let m = err("duration: 10s\nexpect:\n  - during: 1s..2s\n    root_rps: { min: 1 }\n  - during: 8s..11s\n    root_rps: { min: 1 }\n");
        at(
            &m,
            5,
            "expect[1]: the window 8s..11s is after the end of the run: the duration is 10s",
        );
    }

    #[test]
    fn an_inverted_or_malformed_window_is_refused_where_written() {
        let m = err("expect:\n  - during: 10s..8s\n    root_rps: { min: 1 }\n");
        at(&m, 2, "window `10s..8s` is inverted or empty");
        let m = err("expect:\n  - root_rps: { min: 1 }\n    during: 5s..5s\n");
        at(&m, 3, "inverted or empty");
        let m = err("expect:\n  - during: 8s-10s\n    root_rps: { min: 1 }\n");
        at(&m, 2, "is not a window: write FROM..TO");
        let m = err("expect:\n  - during: 8s..10parsecs\n    root_rps: { min: 1 }\n");
        at(&m, 2, "unknown unit");
    }

    #[test]
    fn approx_needs_a_number() {
        let m = err(
            "expect:\n  - during: 1s..2s\n    service: D\n    amplification: { approx: eight }\n",
        );
        at(&m, 4, "approx needs a number");
        let m =
            err("expect:\n  - during: 1s..2s\n    service: D\n    amplification: { approx: }\n");
        at(&m, 4, "approx needs a number");
        let m = err(
            "expect:\n  - during: 1s..2s\n    service: D\n    amplification: { tolerance: 0.1 }\n",
        );
        at(&m, 4, "`tolerance` goes with `approx`");
        let m = err("expect:\n  - during: 1s..2s\n    service: D\n    amplification: { approx: 8, max: 9 }\n");
        at(&m, 4, "not both");
        let m = err("expect:\n  - during: 1s..2s\n    service: D\n    amplification: { }\n");
        at(&m, 4, "a bound needs `min`, `max` or `approx`");
        let m = err("expect:\n  - during: 1s..2s\n    service: D\n    amplification: 8\n");
        at(&m, 4, "a bound such as");
        let m = err(
            "expect:\n  - during: 1s..2s\n    service: D\n    amplification: { min: 3, max: 2 }\n",
        );
        at(&m, 4, "min 3 is above max 2");
        let m = err("expect:\n  - during: 1s..2s\n    service: D\n    amplification: { approx: 8, tolerance: -1 }\n");
        at(&m, 4, "tolerance must be 0 or more");
        let m =
            err("expect:\n  - during: 1s..2s\n    service: D\n    amplification: { maximum: 8 }\n");
        at(&m, 4, "unknown field `maximum`");
    }

    #[test]
    fn a_bad_duration_is_refused_where_written() {
        let m = err("duration: 10 parsecs\n");
        at(&m, 1, "unknown unit");
        let m = err("steps:\n  - at: soon\n    heal: D\n");
        at(&m, 2, "`soon` is not a duration");
        let m = err("steps:\n  - at: -1s\n    heal: D\n");
        at(&m, 2, "negative");
        let m = err("steps:\n  - at: 1s\n    fail: { service: D, latency: fast }\n");
        at(&m, 3, "`fast` is not a duration");
    }

    #[test]
    fn bad_steps_are_refused_where_written() {
        let m = err("steps:\n  - at: 1s\n");
        at(&m, 2, "the step at 1s does nothing");
        let m = err("steps:\n  - at: 1s\n    heal: D\n    rps: 5\n");
        at(&m, 2, "has heal and rps: one action per step");
        let m = err("steps:\n  - heal: D\n");
        at(&m, 2, "a step needs `at:`");
        let m = err("steps:\n  - at: 1s\n    fial: { service: D }\n");
        at(&m, 3, "unknown field `fial`");
        let m = err("steps:\n  - at: 1s\n    fail: { service: D, error_rate: 2 }\n");
        at(&m, 3, "error_rate must be a rate between 0 and 1");
        let m = err("steps:\n  - at: 1s\n    fail: { service: D, eror_rate: 1 }\n");
        at(&m, 3, "unknown field `eror_rate`");
        let m = err("steps:\n  - at: 1s\n    policy: agressive\n");
        at(&m, 3, "unknown policy `agressive`");
        let m = err("steps:\n  - at: 1s\n    policy: { attempts: 0 }\n");
        at(&m, 3, "attempts must be at least 1");
        let m = err("steps:\n  - at: 1s\n    rps: -4\n");
        at(&m, 3, "rps must be a positive");
        let m = err("steps:\n  - at: 1s\n    reset: false\n");
        at(&m, 2, "`reset:` takes `true`");
        let m = err("steps:\n  - at: 1s\n    attribution: psychic\n");
        at(&m, 3, "psychic");
        let m = err("stpes: []\n");
        at(&m, 1, "unknown field `stpes`");
    }

    #[test]
    fn empty_and_unreadable_scenarios_are_refused() {
        assert!(err("# nothing\n").contains("s.yaml: the scenario is empty"));
        assert!(err("steps: []\n").contains("the scenario is empty"));
        let m = match Scenario::load(Path::new("/nonexistent/s.yaml"), &chain()) {
            Err(e) => e.to_string(),
            Ok(_) => panic!(),
        };
        assert!(
            m.starts_with("/nonexistent/s.yaml: cannot read the scenario"),
            "{m}"
        );
        let m = err("[1, 2]\n");
        at(&m, 1, "invalid type");
    }

    #[test]
    fn a_topology_scenario_key_is_parsed_with_file_lines() {
        let text = "name: chain
services:
  A: { calls: [B] }
  B:
scenario:
  duration: 10s
  steps:
    - at: 1s
      fail: { service: B, error_rate: 1 }
  expect:
    - during: 2s..4s
      service: B
      amplification: { max: 1.2 }
    - during: 5s..12s
      root_rps: { min: 1 }
";
        let t = Topology::from_yaml(text, "t.yaml").unwrap();
        assert!(t.scenario.is_some());
        let m = Scenario::from_topology_yaml(text, "t.yaml", &t)
            .unwrap_err()
            .to_string();
        assert!(
            m.starts_with("t.yaml:14:7:") && m.contains("expect[1]: the window 5s..12s"),
            "{m}"
        );
        let fixed = text.replace("5s..12s", "5s..10s");
        let s = Scenario::from_topology_yaml(&fixed, "t.yaml", &t)
            .unwrap()
            .unwrap();
        assert_eq!(s.steps.len(), 1);
        assert_eq!(s.steps[0].source.line, Some(8));
        assert_eq!(s.expectations[0].source.line, Some(13));
        let m = Scenario::from_topology_yaml(
            &fixed.replace("service: B, error_rate", "service: B, error_rat"),
            "t.yaml",
            &t,
        )
        .unwrap_err()
        .to_string();
        assert!(
            m.starts_with("t.yaml:9:")
                && m.contains("scenario.steps[0].fail: unknown field `error_rat`"),
            "{m}"
        );
        let none = Topology::from_yaml("name: x\nservices:\n  A:\n", "x.yaml").unwrap();
        assert_eq!(
            Scenario::from_topology_yaml("name: x\nservices:\n  A:\n", "x.yaml", &none).unwrap(),
            None
        );
    }

    #[test]
    fn every_figure_has_a_unique_name() {
        for f in Figure::ALL {
            assert_eq!(Figure::parse(f.name()), Some(*f));
        }
        let mut names: Vec<&str> = Figure::ALL.iter().map(|f| f.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Figure::ALL.len());
    }
}
