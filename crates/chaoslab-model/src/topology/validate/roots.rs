//! The roots a topology's load drives (its `load.entries`, or the one
//! entry at `load.rps`, or its closed-loop clients) and each service's
//! layer below them.

use std::time::Duration;

use super::endpoints::{Miss, Names};
use super::{did_you_mean, Location, Locator, TopologyError, DEFAULT_RPS};
use crate::topology::spec::LoadSpec;
use crate::topology::{Closed, Edge, Root, Service, ServiceId, DEFAULT_THINK};

/// The entry: `load.entry` if given, else the one service nothing calls.
/// The roots: `load.entries`, each named service checked (a did-you-mean
/// for a near miss) and listed once; or the one `entry` at `rps`.
pub(super) fn find_roots(
    load: &LoadSpec,
    names: &Names,
    services: &[Service],
    edges: &[Edge],
    loc: &Locator,
) -> Result<Vec<Root>, TopologyError> {
    let arrival = load.arrival.unwrap_or_default();
    let Some(entries) = &load.entries else {
        let entry = find_entry(load.entry.as_deref(), names, services, edges, loc)?;
        let (rps, closed) = rate_or_clients(
            "load",
            (load.rps, load.clients, load.think),
            None,
            &loc.key_under(
                "load",
                if load.clients.is_some() {
                    "clients"
                } else {
                    "think"
                },
            ),
        )?;
        return Ok(vec![Root {
            entry,
            rps,
            arrival,
            closed,
        }]);
    };
    let at = loc.key_under("load", "entries");
    let bad = |message: String| TopologyError::Yaml {
        at: at.clone(),
        service: None,
        message,
    };
    if load.clients.is_some() {
        return Err(bad(
            "load.clients: give each root its own `clients:` under `entries:` (`load.think` is every entry's default think time)".into(),
        ));
    }
    if load.entry.is_some() || load.rps.is_some() {
        return Err(bad(format!(
            "load.entries: give the roots either as `entries:` (each with its own entry and rps) or as one `entry:` and `rps:`, not both{}",
            load.entry.as_deref().map(|e| format!(" (here entry: {e})")).unwrap_or_default()
        )));
    }
    if entries.is_empty() {
        return Err(bad(
            "load.entries: the list is empty: list at least one root, e.g. `- { entry: web, rps: 100 }`".into(),
        ));
    }
    let mut roots: Vec<Root> = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        let id = match names.get(&e.entry) {
            Ok(id) => id,
            Err(miss) => {
                return Err(TopologyError::Yaml {
                    at: at.clone(),
                    service: Some(e.entry.clone()),
                    message: match miss {
                        Miss::Unknown => format!(
                            "load.entries[{i}].entry: there is no service \"{}\" in the topology{}",
                            e.entry,
                            did_you_mean(&e.entry, &names.all())
                        ),
                        Miss::Ambiguous(why) => format!("load.entries[{i}].entry: {why}"),
                    },
                })
            }
        };
        if let Some(first) = roots.iter().position(|r| r.entry == id) {
            return Err(bad(format!(
                "load.entries[{i}]: \"{}\" is already a root (load.entries[{first}]): list each root once, with the sum of its rates",
                e.entry
            )));
        }
        let (rps, closed) = rate_or_clients(
            &format!("load.entries[{i}]"),
            (e.rps, e.clients, e.think),
            load.think,
            &at,
        )?;
        roots.push(Root {
            entry: id,
            rps,
            arrival: e.arrival.unwrap_or(arrival),
            closed,
        });
    }
    Ok(roots)
}

/// A root's rate: open-loop at `rps` (default [`DEFAULT_RPS`]), or a
/// closed loop of `clients` thinking `think` (default `think_default`,
/// then [`DEFAULT_THINK`]), whose rate is what they offer while answers
/// are instant. `what` names the root in the message.
pub(super) fn rate_or_clients(
    what: &str,
    (rps, clients, think): (Option<f64>, Option<u32>, Option<Duration>),
    think_default: Option<Duration>,
    at: &Location,
) -> Result<(f64, Option<Closed>), TopologyError> {
    let bad = |message: String| TopologyError::Yaml {
        at: at.clone(),
        service: None,
        message,
    };
    match (rps, clients) {
        (Some(r), Some(c)) => Err(bad(format!(
            "{what}: give either `rps:` (open loop: requests leave on a schedule) or `clients:` (closed loop: each client waits for its answer), not both (here rps: {r}, clients: {c})"
        ))),
        (_, Some(clients)) => {
            let closed = Closed {
                clients,
                think: think.or(think_default).unwrap_or(DEFAULT_THINK),
            };
            Ok((closed.nominal_rps(), Some(closed)))
        }
        (rps, None) if think.is_some() => Err(bad(format!(
            "{what}.think: a think time is for closed-loop clients: give `clients:` too{}",
            rps.map(|r| format!(" in place of rps: {r}")).unwrap_or_default()
        ))),
        (rps, None) => Ok((rps.unwrap_or(DEFAULT_RPS), None)),
    }
}

pub(super) fn find_entry(
    given: Option<&str>,
    names: &Names,
    services: &[Service],
    edges: &[Edge],
    loc: &Locator,
) -> Result<ServiceId, TopologyError> {
    if let Some(e) = given {
        return match names.get(e) {
            Ok(id) => Ok(id),
            Err(Miss::Unknown) => Err(TopologyError::UnknownEntry {
                at: loc.key_line("entry"),
                entry: e.to_string(),
                hint: did_you_mean(e, &names.all()),
            }),
            Err(Miss::Ambiguous(why)) => Err(TopologyError::Yaml {
                at: loc.key_line("entry"),
                service: Some(e.to_string()),
                message: format!("load.entry: {why}"),
            }),
        };
    }
    let mut called = vec![false; services.len()];
    for e in edges {
        called[e.to] = true;
    }
    let roots: Vec<ServiceId> = (0..services.len()).filter(|&i| !called[i]).collect();
    match roots.as_slice() {
        [one] => Ok(*one),
        [] => Err(TopologyError::NoEntry { at: loc.file() }),
        many => Err(TopologyError::AmbiguousEntry {
            at: loc.file(),
            candidates: many
                .iter()
                .map(|&i| format!("\"{}\"", services[i].name))
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// Depth (longest path from a root) and baseline multiplicity (the sum
/// over paths of the products of `p × count`, per root and over the roots
/// by their shares), over the services in topological `order`.
pub(super) fn layer(services: &mut [Service], edges: &[Edge], order: &[ServiceId], roots: &[Root]) {
    let n = services.len();
    let mut reached = vec![false; n];
    let mut per_root = vec![vec![0.0; roots.len()]; n];
    for (k, r) in roots.iter().enumerate() {
        reached[r.entry] = true;
        per_root[r.entry][k] = 1.0;
    }
    for &v in order {
        for &e in &services[v].calls {
            let w = edges[e].to;
            if reached[v] {
                reached[w] = true;
                let calls = edges[e].expected_calls();
                let from = per_root[v].clone();
                for (to, m) in per_root[w].iter_mut().zip(from) {
                    *to += m * calls;
                }
            }
        }
    }
    let total: f64 = roots.iter().map(|r| r.rps).sum();
    let share = |k: usize| {
        if total > 0.0 {
            roots[k].rps / total
        } else {
            1.0 / roots.len() as f64
        }
    };
    let multiplicity: Vec<f64> = per_root
        .iter()
        .map(|m| m.iter().enumerate().map(|(k, x)| share(k) * x).sum())
        .collect();
    let mut depth = vec![0usize; n];
    for &v in order {
        for &e in &services[v].calls {
            let w = edges[e].to;
            // Services the entry never reaches are layered among themselves.
            if reached[v] == reached[w] {
                depth[w] = depth[w].max(depth[v] + 1);
            }
        }
    }
    for (i, (s, m)) in services.iter_mut().zip(per_root).enumerate() {
        s.depth = depth[i];
        s.multiplicity = multiplicity[i];
        s.root_multiplicity = crate::topology::PerRoot::from_dense(&m);
    }
}
