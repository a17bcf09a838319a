//! The lab's state and the one fold that changes it.
//!
//! Everything a key, a scenario step, a control call or a command-line
//! flag can change lives in [`LabState`], and [`apply`] is the only code
//! that says what an [`Action`] does to it. The running lab applies the
//! returned [`Change`] to its fleet; the dashboard shows a key's effect at
//! once by folding the same action into its copy; expectations read the
//! state in force at a window's start by folding a scenario's steps; the
//! command line's `--policy`/`--fail`/`--rps` are actions folded into the
//! starting state, and a `--record` file opens with [`LabState::actions`].
//!
//! ```
//! use chaoslab_model::lab::{apply, Action, Change, LabState};
//! use chaoslab_model::topology::Topology;
//!
//! let t = Topology::from_yaml("name: t\nservices:\n  A: { calls: [B] }\n  B:\n", "t.yaml").unwrap();
//! let mut s = LabState::of(&t);
//! assert_eq!(apply(&mut s, &Action::SetRps(50.0)), Ok(Change::Rps));
//! assert_eq!(s.rps, 50.0);
//! assert!(apply(&mut s, &Action::SetContextDropped { service: 7, dropped: true }).is_err());
//! ```

use thiserror::Error;

use super::action::Action;
use crate::topology::{
    BreakerSetting, BudgetSetting, Fault, HedgeSetting, OutlierSetting, Policy, PolicyFields,
    Preset, ServiceId, SignalSetting, ThrottleSetting, Topology,
};
use error_ownership::signal::Signal;
use error_ownership::Attribution;

/// What the actions can change, and nothing else: the topology's shape is
/// fixed for a run.
#[derive(Debug, Clone, PartialEq)]
pub struct LabState {
    /// The fleet-wide retry policy.
    pub policy: Policy,
    /// The attribution mode.
    pub attribution: Attribution,
    /// Rule 5 (at-least-once).
    pub at_least_once: bool,
    /// The entry rate offered, root requests per second.
    pub rps: f64,
    /// Whether the load is paused.
    pub paused: bool,
    /// Each service's fault, topology order.
    pub faults: Vec<Fault>,
    /// Each service's context dropped, topology order.
    pub context_dropped: Vec<bool>,
    /// Each service's resources, topology order.
    pub resources: Vec<Resources>,
    /// Each node's group (the first node of its service, SPEC section 11):
    /// a fault, a context and workers are a service's, set on all its
    /// endpoints at once. Empty: every node is a service of its own.
    pub groups: Vec<ServiceId>,
}

/// A service's finite capacity (SPEC section 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resources {
    /// Workers (`None`: unbounded, as a service without `workers`).
    pub workers: Option<u32>,
    /// Service time held on a worker.
    pub work: std::time::Duration,
    /// Places in the queue in front of the workers.
    pub queue: u32,
}

/// What an applied action changed: the part of the fleet the lab must
/// update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// One service's fault.
    Fault(ServiceId),
    /// One service's request context.
    Context(ServiceId),
    /// One service's resources.
    Resources(ServiceId),
    /// The policy (mode or numbers).
    Policy,
    /// Rule 5.
    AtLeastOnce,
    /// The attribution mode.
    Attribution,
    /// The entry rate.
    Rps,
    /// Paused or resumed.
    Pause,
    /// Counters, charts and learned memory cleared (the state is unchanged).
    Reset,
    /// Many services' faults at once (a shard lost).
    Faults,
}

/// An action that cannot apply to this lab.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ActionError {
    /// A service index past the topology's end.
    #[error("there is no service #{service}: the topology has {count} services")]
    NoService {
        /// The index asked for.
        service: ServiceId,
        /// How many services there are.
        count: usize,
    },
    /// An entry rate that is not a finite number ≥ 0.
    #[error("entry rate {} is not a number of requests per second ≥ 0", crate::format::fmt_num(*.0))]
    BadRate(f64),
    /// An entry rate above what the load generator schedules.
    #[error("entry rate {}: the load generator schedules at most {} root requests per second (one arrival a microsecond)", crate::format::fmt_rate(*.0), crate::format::fmt_rate(crate::yaml::MAX_RPS))]
    TooFast(f64),
    /// An error rate outside 0..=1.
    #[error("error rate {0} is not between 0 and 1")]
    BadErrorRate(f64),
    /// Zero attempts per call.
    #[error("attempts must be at least 1 (the first attempt counts)")]
    NoAttempts,
    /// A budget ratio that is not a finite number ≥ 0.
    #[error("budget ratio {0} is not a number ≥ 0")]
    BadBudget(f64),
    /// Workers or a queue set on a service that has no workers.
    #[error("service #{0} has no `workers`: give it some in the topology to change them")]
    NoWorkers(ServiceId),
    /// Zero workers.
    #[error("a service needs at least 1 worker")]
    ZeroWorkers,
}

impl LabState {
    /// The state a topology file describes.
    pub fn of(t: &Topology) -> LabState {
        LabState {
            policy: t.policy.clone(),
            attribution: t.ownership.attribution,
            at_least_once: t.ownership.at_least_once,
            rps: t.load.rps,
            paused: false,
            faults: t.services.iter().map(|s| s.fault.clone()).collect(),
            context_dropped: t.services.iter().map(|s| s.context_dropped).collect(),
            resources: t
                .services
                .iter()
                .map(|s| Resources {
                    workers: s.workers,
                    work: s.work,
                    queue: s.queue,
                })
                .collect(),
            groups: t.services.iter().map(|s| s.group).collect(),
        }
    }

    /// Every node of `i`'s service (`i` alone without endpoints).
    fn group(&self, i: ServiceId) -> Vec<ServiceId> {
        match self.groups.get(i) {
            Some(&g) => (0..self.groups.len())
                .filter(|&j| self.groups[j] == g)
                .collect(),
            None => vec![i],
        }
    }

    /// Writes this state into a topology of the same shape, so the model
    /// and the reports see the faults and policy in force.
    pub fn write_to(&self, t: &mut Topology) {
        t.policy = self.policy.clone();
        t.ownership.attribution = self.attribution;
        t.ownership.at_least_once = self.at_least_once;
        t.load.set_rps(self.rps);
        for (i, s) in t.services.iter_mut().enumerate() {
            if let Some(f) = self.faults.get(i) {
                s.fault = f.clone();
            }
            if let Some(&c) = self.context_dropped.get(i) {
                s.context_dropped = c;
            }
            if let Some(r) = self.resources.get(i) {
                s.workers = r.workers;
                s.work = r.work;
                s.queue = r.queue;
            }
        }
    }

    /// `t` with this state written in.
    pub fn applied_to(&self, t: &Topology) -> Topology {
        let mut t = t.clone();
        self.write_to(&mut t);
        t
    }

    /// Absolute actions that put a fresh fleet of this shape into this
    /// state whatever its topology file says (the opening of a recording).
    pub fn actions(&self) -> Vec<Action> {
        let p = &self.policy;
        // The first preset running the same budget model brings it (and
        // the Finagle or 2026 numbers no field can write); the fields then
        // set the signal and every number, the mode switches the rest.
        let base = Preset::ALL
            .into_iter()
            .find(|q| q.mode().model == p.mode.model);
        let mut actions = vec![
            Action::Policy(PolicyFields {
                preset: base,
                attempts: Some(p.attempts),
                budget: Some(p.budget.map_or(BudgetSetting::Off, BudgetSetting::Ratio)),
                signal: Some(match (p.mode.ownership, p.mode.signal) {
                    (_, Some(s)) => SignalSetting::On(s),
                    (true, None) => SignalSetting::On(Signal::Ownership),
                    (false, None) => SignalSetting::None,
                }),
                budget_percent: Some(p.budget_percent),
                min_retry_concurrency: Some(p.min_retry_concurrency),
                max_tokens: Some(p.max_tokens),
                token_ratio: Some(p.token_ratio),
                quota: Some(p.quota.initial),
                retry_cost: Some(p.quota.transient),
                timeout_cost: Some(p.quota.timeout),
                breaker: Some(p.breaker.map_or(BreakerSetting::Off, BreakerSetting::On)),
                hedge: Some(p.hedge.map_or(HedgeSetting::Off, HedgeSetting::On)),
                outlier: Some(Box::new(
                    p.outlier.map_or(OutlierSetting::Off, OutlierSetting::On),
                )),
                throttle: Some(if p.mode.throttle {
                    ThrottleSetting::On(p.throttle_config)
                } else {
                    ThrottleSetting::Off
                }),
                lb: Some(p.lb),
                retry_other_host: Some(p.retry_other_host),
                retry_on: Some(Box::new(p.mode.retry_on)),
                ..PolicyFields::default()
            }),
            Action::Mode {
                retries: Some(p.mode.retries),
                budget: Some(p.mode.budget_on),
                ownership: Some(p.mode.ownership),
            },
            Action::SetAttribution(self.attribution),
            Action::SetAtLeastOnce(self.at_least_once),
            Action::SetRps(self.rps),
        ];
        // A service's fault is on every endpoint: its first node says it.
        for (i, f) in self.faults.iter().enumerate() {
            if f.is_active() && self.groups.get(i).is_none_or(|&g| g == i) {
                actions.push(Action::SetFault {
                    service: i,
                    fault: f.clone(),
                });
            }
        }
        for (i, r) in self.resources.iter().enumerate() {
            if r.workers.is_some() || !r.work.is_zero() {
                actions.push(Action::Set {
                    service: i,
                    workers: r.workers,
                    work: Some(r.work),
                    queue: r.workers.map(|_| r.queue),
                });
            }
        }
        for (i, &c) in self.context_dropped.iter().enumerate() {
            if c {
                actions.push(Action::SetContextDropped {
                    service: i,
                    dropped: true,
                });
            }
        }
        actions
    }

    fn service(&self, service: ServiceId) -> Result<ServiceId, ActionError> {
        if service < self.faults.len() {
            Ok(service)
        } else {
            Err(ActionError::NoService {
                service,
                count: self.faults.len(),
            })
        }
    }
}

/// Applies one action to a state: the one place an action's meaning is
/// written. A refused action leaves the state as it was.
pub fn apply(s: &mut LabState, action: &Action) -> Result<Change, ActionError> {
    Ok(match action {
        Action::SetFault { service, fault } => {
            let i = s.service(*service)?;
            if !(0.0..=1.0).contains(&fault.error_rate) {
                return Err(ActionError::BadErrorRate(fault.error_rate));
            }
            for j in s.group(i) {
                s.faults[j] = fault.clone();
            }
            Change::Fault(i)
        }
        Action::SetContextDropped { service, dropped } => {
            let i = s.service(*service)?;
            for j in s.group(i) {
                s.context_dropped[j] = *dropped;
            }
            Change::Context(i)
        }
        Action::Policy(fields) => {
            if fields.attempts == Some(0) {
                return Err(ActionError::NoAttempts);
            }
            if let Some(BudgetSetting::Ratio(r)) = fields.budget {
                if !r.is_finite() || r < 0.0 {
                    return Err(ActionError::BadBudget(r));
                }
            }
            s.policy.apply_fields(fields);
            Change::Policy
        }
        Action::Mode {
            retries,
            budget,
            ownership,
        } => {
            let p = &mut s.policy;
            p.mode.retries = retries.unwrap_or(p.mode.retries);
            p.mode.budget_on = budget.unwrap_or(p.mode.budget_on);
            p.mode.ownership = ownership.unwrap_or(p.mode.ownership);
            Change::Policy
        }
        Action::SetAtLeastOnce(on) => {
            s.at_least_once = *on;
            Change::AtLeastOnce
        }
        Action::SetAttribution(a) => {
            s.attribution = *a;
            Change::Attribution
        }
        Action::SetRps(r) => {
            if !r.is_finite() || *r < 0.0 {
                return Err(ActionError::BadRate(*r));
            }
            if *r > crate::yaml::MAX_RPS {
                return Err(ActionError::TooFast(*r));
            }
            s.rps = *r;
            Change::Rps
        }
        Action::Set {
            service,
            workers,
            work,
            queue,
        } => {
            let i = s.service(*service)?;
            let r = &mut s.resources[i];
            if (workers.is_some() || queue.is_some()) && r.workers.is_none() {
                return Err(ActionError::NoWorkers(i));
            }
            if *workers == Some(0) {
                return Err(ActionError::ZeroWorkers);
            }
            // Workers and queue are the service's, shared by its endpoints;
            // the work is the endpoint's own.
            r.work = work.unwrap_or(r.work);
            for j in s.group(i) {
                let r = &mut s.resources[j];
                r.workers = workers.or(r.workers);
                r.queue = queue.unwrap_or(r.queue);
            }
            Change::Resources(i)
        }
        Action::Pause(p) => {
            s.paused = *p;
            Change::Pause
        }
        Action::Reset => Change::Reset,
        Action::ShardLost { services, .. } => {
            for &id in services {
                let i = s.service(id)?;
                for j in s.group(i) {
                    s.faults[j] = Fault {
                        down: true,
                        ..Fault::default()
                    };
                }
            }
            Change::Faults
        }
    })
}

/// Folds actions into a state in order, stopping at the first refused one.
pub fn fold<'a>(
    mut s: LabState,
    actions: impl IntoIterator<Item = &'a Action>,
) -> Result<LabState, ActionError> {
    for a in actions {
        apply(&mut s, a)?;
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Preset;

    fn chain() -> Topology {
        Topology::from_yaml(
            "name: t\nservices:\n  A: { calls: [B] }\n  B: { calls: [C] }\n  C:\n    fault: { error_rate: 1.0 }\n",
            "t.yaml",
        )
        .unwrap()
    }

    #[test]
    fn the_state_round_trips_through_a_topology() {
        let t = chain();
        let mut s = LabState::of(&t);
        apply(
            &mut s,
            &Action::SetContextDropped {
                service: 1,
                dropped: true,
            },
        )
        .unwrap();
        apply(&mut s, &Action::SetRps(7.0)).unwrap();
        assert_eq!(
            LabState::of(&s.applied_to(&t)),
            LabState { paused: false, ..s }
        );
    }

    #[test]
    fn the_opening_actions_rebuild_the_state_from_any_start() {
        let t = chain();
        let mut s = LabState::of(&t);
        for a in [
            Action::Policy(PolicyFields {
                preset: Some(Preset::Retry),
                attempts: Some(3),
                budget: Some(BudgetSetting::Off),
                ..Default::default()
            }),
            Action::SetFault {
                service: 2,
                fault: Fault::default(),
            },
            Action::SetFault {
                service: 0,
                fault: Fault {
                    error_rate: 0.5,
                    ..Fault::default()
                },
            },
            Action::SetContextDropped {
                service: 1,
                dropped: true,
            },
            Action::SetAttribution(Attribution::Declared),
            Action::SetAtLeastOnce(true),
            Action::SetRps(12.0),
        ] {
            apply(&mut s, &a).unwrap();
        }
        // From the file's own state (C failing) the opening actions still
        // reach `s`, except a fault that is healed: that one the file keeps.
        let rebuilt = fold(LabState::of(&t), &s.actions()).unwrap();
        assert_eq!(rebuilt.policy, s.policy);
        assert_eq!(rebuilt.faults[0], s.faults[0]);
        assert_eq!(rebuilt.context_dropped, s.context_dropped);
        assert_eq!(rebuilt.rps, 12.0);
    }

    #[test]
    fn refused_actions_leave_the_state_alone() {
        let t = chain();
        let mut s = LabState::of(&t);
        let before = s.clone();
        for a in [
            Action::SetRps(f64::NAN),
            Action::SetRps(-1.0),
            Action::SetContextDropped {
                service: 3,
                dropped: true,
            },
            Action::SetFault {
                service: 0,
                fault: Fault {
                    error_rate: 1.5,
                    ..Fault::default()
                },
            },
            Action::Policy(PolicyFields {
                attempts: Some(0),
                ..Default::default()
            }),
        ] {
            assert!(apply(&mut s, &a).is_err(), "{a:?}");
        }
        assert_eq!(s, before);
        assert_eq!(
            apply(
                &mut s,
                &Action::SetContextDropped {
                    service: 3,
                    dropped: true
                }
            )
            .unwrap_err()
            .to_string(),
            "there is no service #3: the topology has 3 services"
        );
    }
}
