//! Actions: the one vocabulary for changing a running lab.
//!
//! A dashboard key becomes an [`Action`]; a scenario step is an [`Action`]
//! on a clock; the command line's `--fail` and `--policy` are actions
//! applied at time zero. Actions are absolute ("budget on", not "toggle
//! the budget"), so a recorded session replays to the same state.

use std::fmt;

use crate::topology::{Fault, PolicyFields, ServiceId, Topology};
use error_ownership::Attribution;

/// One change to a running lab.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Replace a service's fault.
    SetFault {
        /// The service.
        service: ServiceId,
        /// Its new fault.
        fault: Fault,
    },
    /// Drop (`true`) or restore a service's request context.
    SetContextDropped {
        /// The service.
        service: ServiceId,
        /// Dropped or not.
        dropped: bool,
    },
    /// Apply policy fields (a preset switches the mode, keeping R and B).
    Policy(PolicyFields),
    /// Switch the mode's pieces one by one.
    Mode {
        /// Retries on or off.
        retries: Option<bool>,
        /// Budget on or off.
        budget: Option<bool>,
        /// Ownership on or off.
        ownership: Option<bool>,
    },
    /// Rule 5 on or off.
    SetAtLeastOnce(bool),
    /// The attribution mode.
    SetAttribution(Attribution),
    /// The entry rate.
    SetRps(f64),
    /// Change a service's resources: its workers, its service time, its
    /// queue (each only when given).
    Set {
        /// The service.
        service: ServiceId,
        /// Workers.
        workers: Option<u32>,
        /// Service time held on a worker.
        work: Option<std::time::Duration>,
        /// Places in its queue.
        queue: Option<u32>,
    },
    /// Pause (`true`) or resume the load.
    Pause(bool),
    /// Reset counters, charts and the learned memory.
    Reset,
    /// A shard process of the mesh died (SPEC section 19): every service
    /// it served is down (connection refused) from now on. The session
    /// applies it when it sees the process end; no person or timeline
    /// sends it, and it has no scenario step.
    ShardLost {
        /// Which shard, from 0.
        shard: usize,
        /// The services it served (each service's first node).
        services: Vec<ServiceId>,
        /// How it ended (`killed by signal 9`).
        why: String,
    },
}

impl Action {
    /// A one-line description for the event log, naming services.
    pub fn describe(&self, t: &Topology) -> String {
        let name = |id: ServiceId| {
            t.services
                .get(id)
                .map_or_else(|| format!("#{id}"), |s| s.name.clone())
        };
        match self {
            Action::SetFault { service, fault } => {
                // A service's fault is on all its endpoints: named by the
                // service, or `S/E` when it is on one endpoint alone.
                let mut s = match &fault.endpoint {
                    Some(e) => format!("{}/{e}", t.group_name(*service)),
                    None if *service < t.services.len() => t.group_name(*service).to_string(),
                    None => name(*service),
                };
                if let Some(r) = &fault.replicas {
                    let list: Vec<String> = r.iter().map(u32::to_string).collect();
                    let word = if r.len() == 1 { "replica" } else { "replicas" };
                    s = format!("{s} {word} {}", list.join(", "));
                }
                if fault.down {
                    format!("{s} down (connection refused)")
                } else if !fault.is_active() {
                    format!("{s} healed")
                } else {
                    let mut parts = vec![];
                    if fault.error_rate > 0.0 {
                        parts.push(format!(
                            "fails {:.0}% ({}, status {})",
                            fault.error_rate * 100.0,
                            match fault.phase {
                                crate::topology::Phase::Before => "before its calls",
                                crate::topology::Phase::After => "after its calls",
                            },
                            fault.status
                        ));
                    }
                    if !fault.latency.is_zero() {
                        parts.push(format!("+{:?} latency", fault.latency));
                    }
                    format!("{s} {}", parts.join(", "))
                }
            }
            Action::SetContextDropped { service, dropped } => format!(
                "{} context {}",
                if *service < t.services.len() {
                    t.group_name(*service).to_string()
                } else {
                    name(*service)
                },
                if *dropped { "dropped" } else { "restored" }
            ),
            Action::Policy(f) => {
                let mut parts = vec![];
                if let Some(p) = f.preset {
                    parts.push(format!("policy {}", p.name()));
                }
                if let Some(a) = f.attempts {
                    parts.push(format!("attempts {a}"));
                }
                if let Some(b) = f.budget {
                    parts.push(match b {
                        crate::topology::BudgetSetting::Ratio(r) => format!("budget {r}"),
                        crate::topology::BudgetSetting::Off => "budget off".into(),
                    });
                }
                if parts.is_empty() {
                    "policy fields changed".into()
                } else {
                    parts.join(", ")
                }
            }
            Action::Mode {
                retries,
                budget,
                ownership,
            } => {
                let on = |b: bool| if b { "on" } else { "off" };
                let mut parts = vec![];
                if let Some(r) = retries {
                    parts.push(format!("retries {}", on(*r)));
                }
                if let Some(b) = budget {
                    parts.push(format!("budget {}", on(*b)));
                }
                if let Some(o) = ownership {
                    parts.push(format!("ownership {}", on(*o)));
                }
                parts.join(", ")
            }
            Action::SetAtLeastOnce(on) => {
                format!("at-least-once {}", if *on { "on" } else { "off" })
            }
            Action::SetAttribution(a) => format!("attribution {}", a.name()),
            Action::SetRps(r) => format!("entry rate {r:.0} rps"),
            Action::Set {
                service,
                workers,
                work,
                queue,
            } => {
                let mut parts = vec![];
                if let Some(w) = workers {
                    parts.push(format!("{w} workers"));
                }
                if let Some(w) = work {
                    parts.push(format!("work {w:?}"));
                }
                if let Some(q) = queue {
                    parts.push(format!("queue {q}"));
                }
                format!("{} {}", name(*service), parts.join(", "))
            }
            Action::Pause(p) => (if *p { "load paused" } else { "load resumed" }).into(),
            Action::Reset => "counters reset".into(),
            Action::ShardLost {
                shard,
                services,
                why,
            } => format!(
                "shard {shard} lost ({why}): its {} service{} down (connection refused)",
                services.len(),
                if services.len() == 1 { "" } else { "s" }
            ),
        }
    }
}

/// Who sent an action: the event log and the report say so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Origin {
    /// A person at the dashboard, or the command line.
    #[default]
    Operator,
    /// A scenario's timeline.
    Timeline,
    /// The control API (`--control`).
    Api,
    /// The lab itself: what it saw happen to its own processes (a shard
    /// lost).
    Lab,
}

impl Origin {
    /// `operator`, `timeline` or `api`.
    pub fn name(self) -> &'static str {
        match self {
            Origin::Operator => "operator",
            Origin::Timeline => "timeline",
            Origin::Api => "api",
            Origin::Lab => "lab",
        }
    }
}

/// An action as it happened: when, what, and who sent it.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Time since the run started.
    pub t: std::time::Duration,
    /// What was done.
    pub action: Action,
    /// Its description (actions that came over the control API say so).
    pub text: String,
    /// Who sent it.
    pub origin: Origin,
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:>7.1}s  {}", self.t.as_secs_f64(), self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{Fault, Topology};

    /// A service's fault and context are on all its endpoints: the log and
    /// the phase lines name the service, not its first endpoint, unless
    /// the fault is on one endpoint alone.
    #[test]
    fn a_services_fault_is_named_by_the_service() {
        let t = Topology::from_yaml(
            "name: e\nload: { rps: 1, entry: web }\nservices:\n  web: { calls: [shop/cart, shop/list] }\n  shop:\n    endpoints:\n      cart: {}\n      list: {}\n",
            "e.yaml",
        )
        .unwrap();
        let cart = (0..t.services.len())
            .find(|&i| t.services[i].name == "shop/cart")
            .unwrap();
        let fault = Fault {
            error_rate: 1.0,
            ..Fault::default()
        };
        let whole = Action::SetFault {
            service: cart,
            fault: fault.clone(),
        };
        assert!(whole.describe(&t).starts_with("shop fails 100%"));
        let one = Action::SetFault {
            service: cart,
            fault: Fault {
                endpoint: Some("cart".into()),
                ..fault
            },
        };
        assert!(one.describe(&t).starts_with("shop/cart fails 100%"));
        let dropped = Action::SetContextDropped {
            service: cart,
            dropped: true,
        };
        assert_eq!(dropped.describe(&t), "shop context dropped");
    }
}
