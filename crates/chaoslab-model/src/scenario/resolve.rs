//! Resolution against a topology: service names to ids, steps in time
//! order to absolute actions, figure names to figures.

use super::error::{Locator, ScenarioError};
use super::expect::{ExpectSpec, Expectation};
use super::steps::{SetSpec, StepKind, StepSpec};
use super::{Scenario, ScenarioSpec, Step};
use crate::lab::figures::{Figure, Scope};
use crate::lab::Action;
use crate::topology::{Fault, ServiceId, Topology};
use crate::yaml::{self, Location};

/// Resolves a parsed scenario against `t`; `loc` finds the lines of the
/// entries for the errors found here.
pub(super) fn resolve(
    spec: ScenarioSpec,
    loc: &Locator,
    t: &Topology,
) -> Result<Scenario, ScenarioError> {
    let steps = spec.steps.unwrap_or_default();
    let expect = spec.expect.unwrap_or_default();
    if steps.is_empty() && expect.is_empty() && spec.duration.is_none() {
        return Err(ScenarioError::Empty {
            file: loc.text.file().to_string(),
        });
    }
    let mut captions: Vec<(std::time::Duration, String)> = steps
        .iter()
        .filter_map(|s| s.say.clone().map(|say| (s.at, say)))
        .collect();
    captions.sort_by_key(|(at, _)| *at);
    let steps = resolve_steps(&steps, loc, t)?;
    let expectations = resolve_expectations(expect, loc, t)?;
    let scenario = Scenario {
        origin: loc.text.file().to_string(),
        description: spec.description,
        duration: spec.duration,
        warmup: spec.warmup,
        steps,
        captions,
        expectations,
    };
    if let Some(d) = scenario.duration {
        scenario.check_duration(d, false)?;
    }
    Ok(scenario)
}

/// Where the entries of a list of steps are, for errors found here: the
/// lines of a scenario file, or the body of a control API request.
pub(super) trait Place {
    /// The list's name (`steps`, `actions`).
    fn section(&self) -> &'static str;
    /// Where `token` is in item `i` of `section`.
    fn token_in_item(&self, section: &str, i: usize, token: &str) -> Location;
}

impl Place for Locator<'_> {
    fn section(&self) -> &'static str {
        "steps"
    }
    fn token_in_item(&self, section: &str, i: usize, token: &str) -> Location {
        Locator::token_in_item(self, section, i, token)
    }
}

/// The body of a control API request: its actions are `actions[i]`, and
/// errors name the request.
pub(super) struct Body<'a>(pub(super) &'a str);

impl Place for Body<'_> {
    fn section(&self) -> &'static str {
        "actions"
    }
    fn token_in_item(&self, _: &str, _: usize, _: &str) -> Location {
        Location::in_file(self.0)
    }
}

/// The id of the service `name`, written in item `i` of `section`.
fn service(
    loc: &dyn Place,
    t: &Topology,
    name: &str,
    (section, i): (&str, usize),
    what: String,
) -> Result<ServiceId, ScenarioError> {
    t.service_id(name)
        .ok_or_else(|| ScenarioError::UnknownService {
            at: loc.token_in_item(section, i, name),
            what,
            service: name.to_string(),
            known: format!(
                "{} (services: {}){}",
                t.name,
                service_list(t),
                yaml::did_you_mean(name, t.services.iter().map(|s| s.name.as_str()))
                    .map_or_else(String::new, |m| format!("; did you mean \"{m}\"?"))
            ),
        })
}

/// Steps in time order (ties in file order), folded over the state so a
/// `fail` merges into the fault as it stands then.
fn resolve_steps(
    steps: &[StepSpec],
    loc: &Locator,
    t: &Topology,
) -> Result<Vec<Step>, ScenarioError> {
    let mut order: Vec<usize> = (0..steps.len()).collect();
    order.sort_by_key(|&i| steps[i].at);
    let mut faults: Vec<Fault> = t.services.iter().map(|s| s.fault.clone()).collect();
    let mut out = Vec::with_capacity(steps.len());
    for i in order {
        let s = &steps[i];
        let Some(kind) = &s.kind else { continue };
        let action = step_action(kind, i, &mut faults, loc, t)?;
        out.push(Step {
            at: s.at,
            action,
            entry: format!("steps[{i}]"),
            source: loc.token_in_item("steps", i, "at"),
        });
    }
    Ok(out)
}

/// The action of step `i`; a fault change updates `faults`, the faults as
/// they stand at this point of the timeline.
pub(super) fn step_action(
    kind: &StepKind,
    i: usize,
    faults: &mut [Fault],
    loc: &dyn Place,
    t: &Topology,
) -> Result<Action, ScenarioError> {
    let section = loc.section();
    let id = |n: &str, k: &str| service(loc, t, n, (section, i), format!("{section}[{i}].{k}"));
    // A fault is the service's, on all its endpoints (its nodes) at once;
    // named as `S/E` it is on that endpoint alone.
    let mut fault_change = |id: ServiceId, f: &dyn Fn(&Fault) -> Fault| {
        let fault = f(&faults[id]);
        for j in t.group(id) {
            faults[j] = fault.clone();
        }
        Action::SetFault { service: id, fault }
    };
    let whole = |name: &str, key: &str| -> Result<ServiceId, ScenarioError> {
        let s = id(name, key)?;
        if t.endpoint_named(s, name).is_some() {
            return Err(ScenarioError::CannotSet {
                at: loc.token_in_item(section, i, name),
                what: format!("{section}[{i}].{key}"),
                service: name.to_string(),
                why: format!(
                    "is an endpoint, and `{key}` opens or closes the listener all of \"{}\"'s endpoints share: name the service",
                    t.group_name(s)
                ),
            });
        }
        Ok(s)
    };
    Ok(match kind {
        StepKind::Fail(f) => {
            let s = id(&f.service, "fail")?;
            let n = t.services[s].replicas;
            if f.replicas
                .as_ref()
                .is_some_and(|r| r.as_ref().is_some_and(Vec::is_empty))
            {
                return Err(ScenarioError::CannotSet {
                    at: loc.token_in_item(section, i, "replicas"),
                    what: format!("{section}[{i}].fail.replicas"),
                    service: f.service.clone(),
                    why: "gets an empty list of replicas: name the replicas the fault is on (e.g. [0]), or leave the key out".into(),
                });
            }
            if let Some(&r) = f.replicas.iter().flatten().flatten().find(|&&r| r >= n) {
                return Err(ScenarioError::CannotSet {
                    at: loc.token_in_item(section, i, "replicas"),
                    what: format!("{section}[{i}].fail.replicas"),
                    service: f.service.clone(),
                    why: format!(
                        "has {n} replica{} (numbered 0 to {}), so a fault cannot be on replica {r}",
                        if n == 1 { "" } else { "s" },
                        n - 1
                    ),
                });
            }
            let endpoint = t.endpoint_named(s, &f.service);
            fault_change(s, &|old| {
                let mut f = f.merge(old);
                f.endpoint = endpoint.clone();
                // Every replica named is every replica.
                if f.replicas.as_ref().is_some_and(|r| r.len() as u32 >= n) {
                    f.replicas = None;
                }
                f
            })
        }
        StepKind::Heal(n) => fault_change(id(n, "heal")?, &|old| Fault {
            phase: old.phase,
            status: old.status,
            ..Fault::default()
        }),
        StepKind::Down(n) => fault_change(whole(n, "down")?, &|old| Fault {
            down: true,
            ..old.clone()
        }),
        StepKind::Up(n) => fault_change(whole(n, "up")?, &|old| Fault {
            down: false,
            ..old.clone()
        }),
        StepKind::Policy(p) => {
            sidecars_keep_their_policy(t, loc, (section, i), "policy")?;
            Action::Policy(p.clone())
        }
        StepKind::Mode(m) => {
            sidecars_keep_their_policy(t, loc, (section, i), "mode")?;
            Action::Mode {
                retries: m.retries,
                budget: m.budget,
                ownership: m.ownership,
            }
        }
        StepKind::DropContext(n) => Action::SetContextDropped {
            service: id(n, "drop_context")?,
            dropped: true,
        },
        StepKind::RestoreContext(n) => Action::SetContextDropped {
            service: id(n, "restore_context")?,
            dropped: false,
        },
        StepKind::Rps(r) => Action::SetRps(*r),
        StepKind::Attribution(a) => Action::SetAttribution(*a),
        StepKind::AtLeastOnce(b) => Action::SetAtLeastOnce(*b),
        StepKind::Pause(p) => Action::Pause(*p),
        StepKind::Reset => Action::Reset,
        StepKind::Set(set) => {
            let service = id(&set.service, "set")?;
            check_set(set, service, i, loc, t)?;
            Action::Set {
                service,
                workers: set.workers,
                work: set.work,
                queue: set.queue,
            }
        }
    })
}

/// A `set:` step must change something, name a service of the fleet,
/// and change `workers` or `queue` only on a service that has workers.
fn check_set(
    set: &SetSpec,
    service: ServiceId,
    i: usize,
    loc: &dyn Place,
    t: &Topology,
) -> Result<(), ScenarioError> {
    let s = &t.services[service];
    let section = loc.section();
    let refuse = |token: &str, why: String| ScenarioError::CannotSet {
        at: loc.token_in_item(section, i, token),
        what: format!("{section}[{i}].set"),
        service: s.name.clone(),
        why,
    };
    if set.workers.is_none() && set.work.is_none() && set.queue.is_none() {
        return Err(refuse(
            "set",
            format!(
                "is given nothing to change: give `set:` workers, work or queue (e.g. set: {{ service: {}, workers: 1 }})",
                set.service
            ),
        ));
    }
    if s.url.is_some() {
        return Err(refuse(
            &set.service,
            "has a url, so it runs outside the fleet and the lab cannot change its workers, work or queue".into(),
        ));
    }
    if s.workers.is_none() {
        let key = if set.workers.is_some() {
            "workers"
        } else {
            "queue"
        };
        if set.workers.is_some() || set.queue.is_some() {
            return Err(refuse(
                key,
                format!("has no `workers` in the topology, so it has no {key} to change: give it `workers:` there (`set:` can change `work` alone)"),
            ));
        }
    }
    Ok(())
}

/// A policy change is refused on a topology whose calls run through a
/// real sidecar: the proxy's configuration was written from the policy
/// when the run started, and a change would reach the lab's own clients
/// but not the proxy (nginx and HAProxy are not reloaded mid-run).
fn sidecars_keep_their_policy(
    t: &Topology,
    loc: &dyn Place,
    (section, i): (&str, usize),
    key: &str,
) -> Result<(), ScenarioError> {
    let Some(s) = t.services.iter().find(|s| s.sidecar.is_some()) else {
        return Ok(());
    };
    let kind = s.sidecar.map_or("", |c| c.kind.name());
    Err(ScenarioError::CannotSet {
        at: loc.token_in_item(section, i, key),
        what: format!("{section}[{i}].{key}"),
        service: s.name.clone(),
        why: format!(
            "carries its calls through a real {kind} sidecar whose configuration was written from the policy when the run started, and a policy change would not reach it: set the policy in the topology file instead"
        ),
    })
}

/// Expectations in file order, one per figure of an entry.
fn resolve_expectations(
    expect: Vec<ExpectSpec>,
    loc: &Locator,
    t: &Topology,
) -> Result<Vec<Expectation>, ScenarioError> {
    let mut expectations = Vec::new();
    for (i, e) in expect.into_iter().enumerate() {
        let (id, name) = match &e.service {
            Some(n) => {
                let id = service(loc, t, n, ("expect", i), format!("expect[{i}].service"))?;
                // A service's endpoints each have figures of their own.
                if t.services[id].name != n.trim() {
                    let endpoints: Vec<&str> =
                        t.group(id).map(|j| t.services[j].name.as_str()).collect();
                    return Err(ScenarioError::CannotSet {
                        at: loc.token_in_item("expect", i, n),
                        what: format!("expect[{i}].service"),
                        service: n.clone(),
                        why: format!(
                            "declares endpoints, each with figures of its own: name one ({})",
                            endpoints.join(", ")
                        ),
                    });
                }
                (Some(id), Some(n.clone()))
            }
            None => (None, None),
        };
        let root = match &e.root {
            Some(n) => Some(root_of(loc, t, n, i)?),
            None => None,
        };
        for (figure_name, bound) in e.figures {
            let figure = figure(figure_name, e.service.as_deref(), i, loc)?;
            if root.is_some() && !ROOT_FIGURES.contains(&figure) {
                return Err(ScenarioError::Yaml {
                    at: loc.token_in_item("expect", i, figure.name()),
                    message: format!(
                        "expect[{i}]: `{}` is not read per root: with `root:` give one of {}",
                        figure.name(),
                        ROOT_FIGURES
                            .iter()
                            .map(|f| f.name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                });
            }
            expectations.push(Expectation {
                window: e.window,
                service: id,
                service_name: name.clone(),
                root: root.clone(),
                figure,
                bound,
                entry: format!("expect[{i}]"),
                source: loc.token_in_item("expect", i, figure.name()),
                window_source: loc.token_in_item("expect", i, "during"),
            });
        }
    }
    Ok(expectations)
}

/// The fleet figures an expectation can read over one root's requests.
const ROOT_FIGURES: [Figure; 6] = [
    Figure::RootAvailability,
    Figure::ModelAvailability,
    Figure::LatencyP50,
    Figure::LatencyP99,
    Figure::StormRadius,
    Figure::StormRadiusMean,
];

/// `root: NAME` of expectation `i`: a service that is one of the roots.
fn root_of(
    loc: &Locator,
    t: &Topology,
    name: &str,
    i: usize,
) -> Result<(usize, String), ScenarioError> {
    let id = service(loc, t, name, ("expect", i), format!("expect[{i}].root"))?;
    match t.load.roots.iter().position(|r| r.entry == id) {
        Some(k) => Ok((k, name.to_string())),
        None => Err(ScenarioError::Yaml {
            at: loc.token_in_item("expect", i, name),
            message: format!(
                "expect[{i}].root: \"{name}\" is not a root of topology {} (roots: {})",
                t.name,
                t.load
                    .roots
                    .iter()
                    .map(|r| t.services[r.entry].name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

/// The figure `figure_name` of expectation `i`, which must take a service
/// if and only if the entry names one.
fn figure(
    figure_name: String,
    service: Option<&str>,
    i: usize,
    loc: &Locator,
) -> Result<Figure, ScenarioError> {
    let at = || loc.token_in_item("expect", i, &figure_name);
    let Some(figure) = Figure::parse(&figure_name) else {
        return Err(ScenarioError::UnknownFigure {
            at: at(),
            what: format!("expect[{i}]"),
            hint: did_you_mean(&figure_name),
            figure: figure_name,
        });
    };
    match (service, figure.scope() == Scope::Service) {
        (None, true) => Err(ScenarioError::FigureNeedsService {
            at: at(),
            what: format!("expect[{i}]"),
            figure: figure_name,
        }),
        (Some(s), false) => Err(ScenarioError::FleetFigureWithService {
            at: at(),
            what: format!("expect[{i}]"),
            figure: figure_name,
            service: s.to_string(),
        }),
        _ => Ok(figure),
    }
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

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;
