//! Checks of a service's keys that need more than one value: replicas a
//! fault names, keys that need `workers`, attempt timeouts the end user
//! never waits out.

use std::time::Duration;

use super::{Locator, TopologyError};
use crate::format::fmt_duration;
use crate::topology::spec::ServiceSpec;
use crate::topology::{Edge, Policy, Service};

/// A fault names replicas the service has; an outside service has none
/// the lab starts.
pub(super) fn check_replicas(
    name: &str,
    s: &ServiceSpec,
    loc: &Locator,
) -> Result<(), TopologyError> {
    let n = s.replicas.unwrap_or(1);
    if s.url.is_some() && s.replicas.is_some() {
        return Err(TopologyError::UrlWithReplicas {
            at: loc.in_service(name, "replicas:"),
            service: name.to_string(),
        });
    }
    if s.fault.replicas.as_ref().is_some_and(Vec::is_empty) {
        return Err(TopologyError::Yaml {
            at: loc.in_service(name, "fault"),
            service: Some(name.to_string()),
            message: format!(
                "services.{name}.fault.replicas is empty: name the replicas the fault is on (e.g. [0]), or leave the key out for every replica"
            ),
        });
    }
    let named = s.fault.replicas.iter().flatten();
    if let Some(&index) = named.clone().find(|&&r| r >= n) {
        return Err(TopologyError::ReplicaOutOfRange {
            at: loc.in_service(name, "fault"),
            service: name.to_string(),
            index,
            replicas: n,
        });
    }
    Ok(())
}

/// `queue` and `cancel` need `workers`; an outside service gets none.
pub(super) fn check_workers(
    name: &str,
    s: &ServiceSpec,
    loc: &Locator,
) -> Result<(), TopologyError> {
    if s.url.is_some() {
        let key = [
            ("workers", s.workers.is_some()),
            ("queue", s.queue.is_some()),
            ("cancel", s.cancel.is_some()),
        ]
        .into_iter()
        .find(|(_, set)| *set);
        if let Some((key, _)) = key {
            return Err(TopologyError::UrlWithWorkers {
                at: loc.in_service(name, &format!("{key}:")),
                service: name.to_string(),
            });
        }
    }
    if s.workers.is_some() {
        return Ok(());
    }
    let missing = if s.queue.is_some() {
        Some((
            "queue",
            "the queue holds requests waiting for a worker, and without workers no request ever waits",
        ))
    } else if s.cancel.is_some() {
        Some((
            "cancel",
            "cancel skips queued work whose caller has gone, and without workers nothing is queued",
        ))
    } else {
        None
    };
    match missing {
        Some((key, why)) => Err(TopologyError::NeedsWorkers {
            at: loc.in_service(name, &format!("{key}:")),
            service: name.to_string(),
            key,
            why,
        }),
        None => Ok(()),
    }
}

/// On an edge that retries (as the file's policy stands), a per-attempt
/// timeout of `user` or more means every retry starts after the end user
/// has given up: refused.
pub(super) fn check_attempt_timeouts(
    services: &[Service],
    edges: &[Edge],
    policy: &Policy,
    fleet: &crate::topology::PolicyFields,
    user: Duration,
    loc: &Locator,
) -> Result<(), TopologyError> {
    for e in edges {
        let p = policy.for_edge(&e.policy);
        if p.attempts <= 1 || p.timeout < user {
            continue;
        }
        let from = &services[e.from].name;
        let (at, default) = if e.policy.timeout.is_some() {
            (
                loc.in_service(services[e.from].service_name(), "timeout:"),
                "",
            )
        } else if fleet.timeout.is_some() {
            (loc.key_under("policy", "timeout"), "")
        } else {
            (loc.key_under("load", "timeout"), " (the default)")
        };
        return Err(TopologyError::AttemptOutlivesUser {
            at,
            service: from.clone(),
            callee: services[e.to].name.clone(),
            timeouts: format!(
                "{}{default}, not shorter than load.timeout {}",
                fmt_duration(p.timeout),
                fmt_duration(user)
            ),
            attempts: p.attempts,
        });
    }
    Ok(())
}
