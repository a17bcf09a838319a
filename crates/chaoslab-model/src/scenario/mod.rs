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
//! | `set` | `{ service, workers, work, queue }` (any of the three) | a service's resources: `workers` and `queue` only on a service that has workers, none on an outside (`url:`) one |
//!
//! A step may also carry `say:`, a caption of a sentence or two (at most
//! 400 characters) that the dashboard shows as a banner from the step's
//! time and a headless run prints as it passes; a step with `say:` alone
//! is a caption with no change.
//!
//! ## Expectations
//! Every entry has `during: FROM..TO` (e.g. `8s..10s`) and one or more
//! figures, each with a bound: `{ min: X }`, `{ max: X }`, both, or
//! `{ approx: X, tolerance: T }` (relative: `|seen - X| <= T * |X|`;
//! absolute when `X` is 0; `T` defaults to 0.05).
//!
//! The figures are those of the catalogue,
//! [`crate::lab::figures::Figure`]: per-service figures need
//! `service:`, fleet figures take none. Counts are over the window.
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
//! use chaoslab_model::scenario::Scenario;
//! use chaoslab_model::topology::Topology;
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
//!
//! Recordings, a session's actions written back as a scenario file, are
//! [`record`].

mod error;
mod expect;

#[cfg(test)]
mod fixtures;
pub mod record;
mod resolve;
mod steps;

use std::fmt;
use std::path::Path;
use std::time::Duration;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

use crate::format::fmt_duration;
use crate::lab::Action;
use crate::topology::{Fault, Topology};
use crate::yaml::{self, Location};
use error::Locator;
use expect::ExpectSpec;
use resolve::resolve;
use steps::{ActionSpec, StepSpec};

pub use crate::lab::figures::Figure;
pub use error::ScenarioError;
pub use expect::{Bound, Expectation, Window, DEFAULT_TOLERANCE};

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
    /// Captions (`say:`), from the end of the warm-up, in time order.
    pub captions: Vec<(Duration, String)>,
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

    /// The captions on the lab's clock, as [`Scenario::plan_steps`] puts
    /// the steps.
    pub fn plan_captions(&self, warmup: Duration) -> Vec<(Duration, String)> {
        self.captions
            .iter()
            .map(|(at, say)| {
                let t = if at.is_zero() {
                    Duration::ZERO
                } else {
                    warmup + *at
                };
                (t, say.clone())
            })
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
/// Actions sent to the control API: one action in the step syntax, as
/// JSON (`{"fail": {"service": "D", "error_rate": 0.5}}`, `{"policy":
/// "ownership"}`), or a list of them, applied in order. They are resolved
/// against `topology` with `faults` as they stand now, so a `fail` merges
/// into the fault in force, as a step does into the fault of its point of
/// the timeline. `origin` names the request in errors (`POST /actions`);
/// the messages are the scenario loader's, since the body is read by the
/// same parser (JSON is YAML's flow style).
///
/// ```
/// use chaoslab_model::scenario::actions_from_json;
/// use chaoslab_model::topology::Topology;
///
/// let t = Topology::from_yaml("name: t\nservices:\n  A: { calls: [B] }\n  B:\n", "t.yaml").unwrap();
/// let faults: Vec<_> = t.services.iter().map(|s| s.fault.clone()).collect();
/// let a = actions_from_json(br#"[{"fail": {"service": "B"}}, {"rps": 50}]"#, "POST /actions", &t, &faults).unwrap();
/// assert_eq!(a.len(), 2);
/// let err = actions_from_json(br#"{"heal": "C"}"#, "POST /actions", &t, &faults).unwrap_err();
/// assert!(err.to_string().contains("actions[0].heal: there is no service \"C\""), "{err}");
/// ```
pub fn actions_from_json(
    body: &[u8],
    origin: &str,
    topology: &Topology,
    faults: &[Fault],
) -> Result<Vec<Action>, ScenarioError> {
    let refuse = |at: Location, message: String| ScenarioError::Yaml { at, message };
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|e| {
        let at = if e.line() > 0 {
            Location::at(origin, e.line() - 1, e.column().saturating_sub(1))
        } else {
            Location::in_file(origin)
        };
        let text = e.to_string();
        let text = text
            .rsplit_once(" at line ")
            .map_or(text.as_str(), |(m, _)| m)
            .to_string();
        refuse(at, format!("not JSON: {text}"))
    })?;
    // Valid JSON, so valid UTF-8.
    let text = String::from_utf8_lossy(body);
    let specs: Vec<ActionSpec> = match value {
        serde_json::Value::Array(ref items) if items.is_empty() => {
            return Err(refuse(
                Location::in_file(origin),
                "an empty list does nothing: send an action such as {\"policy\": \"ownership\"}".into(),
            ))
        }
        serde_json::Value::Array(_) => yaml::from_str(&text, origin).map_err(|e| entry_path(e, true))?,
        serde_json::Value::Object(_) => {
            vec![yaml::from_str(&text, origin).map_err(|e| entry_path(e, false))?]
        }
        _ => {
            return Err(refuse(
                Location::in_file(origin),
                "expected an action, a JSON object in the scenario step syntax such as {\"policy\": \"ownership\"} or {\"fail\": {\"service\": \"D\", \"error_rate\": 0.5}}, or a list of them".into(),
            ))
        }
    };
    let place = resolve::Body(origin);
    let mut faults = faults.to_vec();
    if faults.len() != topology.services.len() {
        faults = topology.services.iter().map(|s| s.fault.clone()).collect();
    }
    specs
        .iter()
        .enumerate()
        .map(|(i, s)| resolve::step_action(&s.0, i, &mut faults, &place, topology))
        .collect()
}

/// The parser's path in a message about an API body, written as the
/// scenario loader writes a step's: `actions[1].fail.error_rate: …`.
fn entry_path(mut e: yaml::Error, list: bool) -> yaml::Error {
    let m = &e.message;
    e.message = if list {
        match m.strip_prefix(".[").or_else(|| m.strip_prefix('[')) {
            Some(rest) => format!("actions[{rest}"),
            None => m.clone(),
        }
    } else {
        match m.split_once(": ") {
            Some((path, _)) if !path.contains(' ') => format!("actions[0].{m}"),
            _ => format!("actions[0]: {m}"),
        }
    };
    e
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

#[cfg(test)]
mod tests;
