//! Timeline steps as written: `at:` and exactly one action, checked
//! where they are written, before they are resolved against a topology.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use crate::format::fmt_duration;
use crate::topology::spec::PolicySpec;
use crate::topology::{Fault, Phase, PolicyFields};
use crate::yaml;
use error_ownership::Attribution;

/// A step as written: `at`, at most one action and a caption (`say:`),
/// one of them at least.
#[derive(Deserialize)]
#[serde(try_from = "RawStep")]
pub(super) struct StepSpec {
    pub(super) at: Duration,
    pub(super) kind: Option<StepKind>,
    pub(super) say: Option<String>,
}

/// The longest caption: a sentence or two on a banner.
pub(super) const MAX_SAY: usize = 400;

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
    #[serde(default)]
    set: Option<SetSpec>,
    #[serde(default)]
    say: Option<String>,
}

/// What a step does, before it is resolved against the timeline.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum StepKind {
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
    Set(SetSpec),
}

const STEP_KEYS: &str = "fail, heal, down, up, policy, mode, drop_context, restore_context, rps, attribution, at_least_once, pause, reset, set";

impl TryFrom<RawStep> for StepSpec {
    type Error = String;
    fn try_from(mut r: RawStep) -> Result<StepSpec, String> {
        let at = r.at.ok_or("a step needs `at:` (e.g. at: 5s)")?;
        let say = match r.say.take() {
            Some(text) => {
                let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
                if text.is_empty() {
                    return Err(format!(
                        "the step at {}: `say:` is empty: write the caption, or leave the key out",
                        fmt_duration(at)
                    ));
                }
                if text.chars().count() > MAX_SAY {
                    return Err(format!(
                        "the step at {}: `say:` has {} characters: a caption is a sentence or two (at most {MAX_SAY})",
                        fmt_duration(at),
                        text.chars().count()
                    ));
                }
                Some(text)
            }
            None => None,
        };
        let what = format!("the step at {}", fmt_duration(at));
        let kind = r.kind_if_any(
            &what,
            "one action per step (write another step with the same `at:`)",
        )?;
        // A caption alone is a step: the words, no change.
        if kind.is_none() && say.is_none() {
            return Err(format!(
                "{what} does nothing: give it one of {STEP_KEYS}, or a caption (say:)"
            ));
        }
        Ok(StepSpec { at, kind, say })
    }
}

/// An action sent to the control API: a step without `at:` (it applies
/// when it arrives).
#[derive(Deserialize)]
#[serde(try_from = "RawStep")]
pub(super) struct ActionSpec(pub(super) StepKind);

impl TryFrom<RawStep> for ActionSpec {
    type Error = String;
    fn try_from(r: RawStep) -> Result<ActionSpec, String> {
        if r.say.is_some() {
            return Err(
                "`say` is a caption on a scenario's timeline: an action sent to the API has none"
                    .into(),
            );
        }
        if r.at.is_some() {
            return Err(
                "`at` has no place in an action sent to the API: it applies when it arrives".into(),
            );
        }
        r.kind(
            "the action",
            "one action per object (send a list for several)",
        )
        .map(ActionSpec)
    }
}

impl RawStep {
    /// Its one action; `what` names it in errors (`the step at 5s`), and
    /// `one` says what to do with several.
    fn kind(self, what: &str, one: &str) -> Result<StepKind, String> {
        self.kind_if_any(what, one)?
            .ok_or_else(|| format!("{what} does nothing: give it one of {STEP_KEYS}"))
    }

    /// Its action, if it has one (several are an error).
    fn kind_if_any(self, what: &str, one: &str) -> Result<Option<StepKind>, String> {
        let r = self;
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
        add("set", r.set.map(StepKind::Set));
        if let Some(reset) = r.reset {
            if !reset {
                return Err("`reset:` takes `true` (leave the step out to not reset)".into());
            }
            add("reset", Some(StepKind::Reset));
        }
        match kinds.len() {
            0 | 1 => Ok(kinds.pop()),
            _ => Err(format!("{what} has {}: {one}", names.join(" and "))),
        }
    }
}

/// `fail: { service, error_rate, phase, latency, status, down }`, or the
/// command line's shorthand: `fail: D` (every request) or `fail: D=0.3`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct FailSpec {
    pub(super) service: String,
    error_rate: Option<f64>,
    phase: Option<Phase>,
    latency: Option<Duration>,
    status: Option<u16>,
    down: Option<bool>,
    /// `replicas:` the replicas it is on; `Some(None)` is every replica,
    /// `None` keeps the replicas the fault had.
    pub(super) replicas: Option<Option<Vec<u32>>>,
}

/// The map form of `fail:`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FailMap {
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
    #[serde(default)]
    replicas: Option<Vec<u32>>,
}

/// What `fail:` takes, for a message.
const FAIL_FORMS: &str =
    "give a service name such as \"D\", \"D=0.3\", or {\"service\": \"D\", \"error_rate\": 0.3}";

impl FailSpec {
    /// `D` (every request fails) or `D=0.3`, as `--fail` takes them.
    fn short(s: &str) -> Result<FailSpec, String> {
        let (name, rate) = match s.split_once('=') {
            Some((n, r)) => {
                let rate: f64 = r.trim().parse().map_err(|_| {
                    format!(
                        "`{s}`: `{r}` is not a rate between 0 and 1 (write e.g. {}=0.3)",
                        n.trim()
                    )
                })?;
                (n.trim(), rate)
            }
            None => (s.trim(), 1.0),
        };
        if name.is_empty() {
            return Err(format!("`{s}`: {FAIL_FORMS}"));
        }
        if !(0.0..=1.0).contains(&rate) {
            return Err(format!(
                "`{s}`: error_rate must be a rate between 0 and 1 (e.g. 0.1 for 10%), got {rate}"
            ));
        }
        Ok(FailSpec {
            service: name.to_string(),
            error_rate: Some(rate),
            phase: None,
            latency: None,
            status: None,
            down: Some(false),
            replicas: Some(None),
        })
    }
}

impl<'de> Deserialize<'de> for FailSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FailSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(FAIL_FORMS)
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<FailSpec, E> {
                FailSpec::short(s).map_err(E::custom)
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<FailSpec, A::Error> {
                let f = FailMap::deserialize(de::value::MapAccessDeserializer::new(m))?;
                Ok(FailSpec {
                    service: f.service,
                    error_rate: f.error_rate,
                    phase: f.phase,
                    latency: f.latency,
                    status: f.status,
                    down: f.down,
                    replicas: f.replicas.map(|mut r| {
                        r.sort_unstable();
                        r.dedup();
                        Some(r)
                    }),
                })
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<FailSpec, E> {
                Err(E::custom(format!("{FAIL_FORMS}, not {v}")))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<FailSpec, E> {
                Err(E::custom(format!("{FAIL_FORMS}, not the number {v}")))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<FailSpec, E> {
                Err(E::custom(format!("{FAIL_FORMS}, not the number {v}")))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<FailSpec, E> {
                Err(E::custom(format!("{FAIL_FORMS}, not the number {v}")))
            }
            fn visit_unit<E: de::Error>(self) -> Result<FailSpec, E> {
                Err(E::custom(format!("{FAIL_FORMS}, not nothing")))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<FailSpec, A::Error> {
                Err(de::Error::custom(format!("{FAIL_FORMS}, not a list")))
            }
        }
        d.deserialize_any(V)
    }
}

impl FailSpec {
    /// The fault as it stands, with the keys given merged in.
    pub(super) fn merge(&self, into: &Fault) -> Fault {
        Fault {
            error_rate: self.error_rate.unwrap_or(into.error_rate),
            phase: self.phase.unwrap_or(into.phase),
            latency: self.latency.unwrap_or(into.latency),
            status: self.status.unwrap_or(into.status),
            down: self.down.unwrap_or(into.down),
            replicas: self
                .replicas
                .clone()
                .unwrap_or_else(|| into.replicas.clone()),
            endpoint: into.endpoint.clone(),
        }
    }
}

/// `set: { service, workers, work, queue }`: a service's resources, the
/// keys given (the resolver checks that at least one is).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SetSpec {
    pub(super) service: String,
    #[serde(default, deserialize_with = "crate::topology::spec::workers")]
    pub(super) workers: Option<u32>,
    #[serde(default, deserialize_with = "yaml::duration")]
    pub(super) work: Option<Duration>,
    #[serde(default, deserialize_with = "crate::topology::spec::queue")]
    pub(super) queue: Option<u32>,
}

/// `mode: { retries, budget, ownership }`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ModeSpec {
    #[serde(default)]
    pub(super) retries: Option<bool>,
    #[serde(default)]
    pub(super) budget: Option<bool>,
    #[serde(default)]
    pub(super) ownership: Option<bool>,
}

/// `policy: ownership` or `policy: { preset: budget, attempts: 3 }`.
pub(super) struct PolicyStep(PolicyFields);

impl<'de> Deserialize<'de> for PolicyStep {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PolicyStep;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a preset (none, retry, budget, ownership, finagle, envoy, grpc, aws, aws-2026) or a map of policy fields")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PolicyStep, E> {
                let p = crate::topology::spec::parse_preset(v.trim())
                    .map_err(|e| E::custom(format!("{e}, or give a map of policy fields")))?;
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

#[cfg(test)]
mod tests {
    use super::super::fixtures::{at, err, ok};
    use crate::lab::Action;
    use crate::topology::{PolicyFields, Preset};
    use error_ownership::Attribution;

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
    fn a_policy_step_sets_the_deadline() {
        let s = ok("steps:\n  - { at: 1s, policy: { deadline: propagate } }\n");
        assert_eq!(
            s.steps[0].action,
            Action::Policy(PolicyFields {
                deadline: Some(true),
                ..Default::default()
            })
        );
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
        at(&m, 3, "unknown preset `agressive`");
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
}
