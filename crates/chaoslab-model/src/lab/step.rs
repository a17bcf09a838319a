//! An action written as a scenario step (`fail: { service: D, ... }`):
//! how a recording replays it, and how a distributed session hands the
//! same action to every node's control API. Actions are absolute, so
//! each is written with every field it sets.

use super::Action;
use crate::topology::{
    BreakerSetting, BudgetKind, BudgetSetting, Fault, HedgeSetting, Phase, PolicyFields,
    SignalSetting, ThrottleSetting, Topology,
};

/// One step's action line, or `None` for an action that changes nothing.
pub fn as_step(t: &Topology, a: &Action) -> Option<String> {
    let name = |id: usize| t.services.get(id).map(|s| quote(&s.name));
    // A service's fault and context are on all its endpoints: written by
    // the service's name, or `S/E` for a fault on one endpoint.
    let whole = |id: usize| t.services.get(id).map(|_| quote(t.group_name(id)));
    Some(match a {
        Action::SetFault { service, fault } => {
            let target = match &fault.endpoint {
                Some(e) => quote(&format!("{}/{e}", t.group_name(*service))),
                None => whole(*service)?,
            };
            format!(
                "fail: {{ service: {}, {}{} }}",
                target,
                fault_keys(fault),
                replica_keys(t, *service, fault)
            )
        }
        Action::SetContextDropped { service, dropped } => format!(
            "{}: {}",
            if *dropped {
                "drop_context"
            } else {
                "restore_context"
            },
            whole(*service)?
        ),
        Action::Policy(f) => policy(f)?,
        Action::Mode {
            retries,
            budget,
            ownership,
        } => {
            let parts: Vec<String> = [
                ("retries", retries),
                ("budget", budget),
                ("ownership", ownership),
            ]
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| format!("{k}: {v}")))
            .collect();
            if parts.is_empty() {
                return None;
            }
            format!("mode: {{ {} }}", parts.join(", "))
        }
        Action::SetAtLeastOnce(on) => format!("at_least_once: {on}"),
        Action::SetAttribution(a) => format!("attribution: {}", a.name()),
        Action::SetRps(r) if r.is_finite() && *r > 0.0 => format!("rps: {r}"),
        Action::Set {
            service,
            workers,
            work,
            queue,
        } => {
            let mut parts = vec![format!("service: {}", name(*service)?)];
            if let Some(w) = workers {
                parts.push(format!("workers: {w}"));
            }
            if let Some(w) = work {
                parts.push(format!("work: {}", exact(*w)));
            }
            if let Some(q) = queue {
                parts.push(format!("queue: {q}"));
            }
            format!("set: {{ {} }}", parts.join(", "))
        }
        Action::SetRps(_) => return None,
        Action::Pause(p) => format!("pause: {p}"),
        Action::Reset => "reset: true".into(),
        // The session's own record of a process it lost: nothing to play.
        Action::ShardLost { .. } => return None,
    })
}

fn fault_keys(f: &Fault) -> String {
    format!(
        "error_rate: {}, phase: {}, latency: {}, status: {}, down: {}",
        f.error_rate,
        match f.phase {
            Phase::Before => "before",
            Phase::After => "after",
        },
        exact(f.latency),
        f.status,
        f.down
    )
}

/// The replicas a fault is on, for a service of more than one: every
/// replica listed when it is on all (a step without the key would keep
/// the replicas an earlier step named).
fn replica_keys(t: &Topology, service: usize, f: &Fault) -> String {
    let n = t.services.get(service).map_or(1, |s| s.replicas);
    let list: Vec<String> = match &f.replicas {
        Some(r) => r.iter().map(u32::to_string).collect(),
        None if n > 1 => (0..n).map(|r| r.to_string()).collect(),
        None => return String::new(),
    };
    format!(", replicas: [{}]", list.join(", "))
}

fn policy(f: &PolicyFields) -> Option<String> {
    if f.is_empty() {
        return None;
    }
    if let (Some(p), true) = (
        f.preset,
        PolicyFields {
            preset: None,
            ..f.clone()
        }
        .is_empty(),
    ) {
        return Some(format!("policy: {}", p.name()));
    }
    let mut parts = vec![];
    if let Some(p) = f.preset {
        parts.push(format!("preset: {}", p.name()));
    }
    if let Some(a) = f.attempts {
        parts.push(format!("attempts: {a}"));
    }
    if let Some(b) = f.budget {
        parts.push(match b {
            BudgetSetting::Ratio(r) => format!("budget: {r}"),
            BudgetSetting::Off => "budget: off".into(),
        });
    }
    if let Some(m) = f.min_per_sec {
        parts.push(format!("min_per_sec: {m}"));
    }
    for (k, v) in [
        ("ttl", f.ttl),
        ("backoff", f.backoff),
        ("timeout", f.timeout),
    ] {
        if let Some(d) = v {
            parts.push(format!("{k}: {}", exact(d)));
        }
    }
    if let Some(d) = f.deadline {
        parts.push(format!("deadline: {}", if d { "propagate" } else { "off" }));
    }
    if let Some(k) = f.budget_model {
        if let Some((word, _)) = BudgetKind::WRITTEN.iter().find(|(_, w)| *w == k) {
            parts.push(format!("budget_model: {word}"));
        }
    }
    if let Some(s) = f.signal {
        parts.push(format!(
            "signal: {}",
            match s {
                SignalSetting::On(s) => s.name(),
                SignalSetting::None => "none",
            }
        ));
    }
    if let Some(v) = f.budget_percent {
        parts.push(format!("budget_percent: {v}"));
    }
    if let Some(v) = f.token_ratio {
        parts.push(format!("token_ratio: {v}"));
    }
    for (k, v) in [
        ("min_retry_concurrency", f.min_retry_concurrency),
        ("max_tokens", f.max_tokens),
        ("quota", f.quota),
        ("retry_cost", f.retry_cost),
        ("timeout_cost", f.timeout_cost),
    ] {
        if let Some(v) = v {
            parts.push(format!("{k}: {v}"));
        }
    }
    match f.breaker {
        Some(BreakerSetting::Off) => parts.push("breaker: off".into()),
        Some(BreakerSetting::On(b)) => parts.push(format!(
            "breaker: {{ consecutive: {}, failure_ratio: {}, window: {}, min_calls: {}, open_for: {}, probes: {} }}",
            b.consecutive,
            b.failure_ratio,
            b.window,
            b.min_calls,
            exact(b.open_for),
            b.probes
        )),
        None => {}
    }
    match f.throttle {
        Some(ThrottleSetting::Off) => parts.push("throttle: off".into()),
        Some(ThrottleSetting::On(t)) => parts.push(format!(
            "throttle: {{ k: {}, window: {} }}",
            t.k,
            exact(t.window)
        )),
        None => {}
    }
    match f.hedge {
        Some(HedgeSetting::Off) => parts.push("hedge: off".into()),
        Some(HedgeSetting::On(h)) => parts.push(format!(
            "hedge: {{ delay: {}, max_attempts: {}, non_fatal: {} }}",
            exact(h.delay),
            h.max_attempts,
            h.non_fatal
        )),
        None => {}
    }
    if let Some(o) = &f.outlier {
        parts.push(format!(
            "outlier: {}",
            crate::topology::outlier_spec::written(o)
        ));
    }
    if let Some(lb) = f.lb {
        parts.push(format!("lb: {}", lb.name()));
    }
    if let Some(o) = f.retry_other_host {
        parts.push(format!("retry_other_host: {o}"));
    }
    if let Some(on) = &f.retry_on {
        parts.push(format!(
            "retry_on: {}",
            crate::topology::conditions_written(on)
        ));
    }
    Some(format!("policy: {{ {} }}", parts.join(", ")))
}

use crate::format::exact;

/// A name as a YAML scalar: plain when that is safe everywhere (block and
/// flow context, not a bool, null or number), else double-quoted.
pub fn quote(s: &str) -> String {
    let plain = s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "y" | "n" | "inf" | "nan"
        );
    if plain {
        s.to_string()
    } else {
        serde_json::to_string(s).expect("a string always serialises")
    }
}
