//! Where each service runs when a mesh is spread over N shards (SPEC
//! section 19): callers beside their callees where that cuts the calls
//! that cross shards, the shards balanced by expected load.
//!
//! A service's endpoints share its workers and its listener, so a
//! service moves as one unit with all its endpoints. Each unit weighs
//! its expected requests per root request (the model's healthy load,
//! summed over its endpoints) plus the mean unit's load again for what
//! every service costs at rest (its listener, its connections, its
//! memory): a shard of many idle services is not empty, and the services'
//! count and their load weigh alike.
//!
//! 1. The units are laid out in the order a depth-first walk from the
//!    roots along the calls meets them, so a chain of calls stays
//!    together, and the order is cut into N runs of about equal weight.
//! 2. Passes then move a unit to the shard it exchanges the most call
//!    traffic with, while that shard stays within [`SLACK`] of the mean
//!    weight and the traffic crossing shards falls.
//! 3. A shard the cut left light takes units from the shards over the
//!    mean, the ones it exchanges the most traffic with first, until it
//!    is within [`SLACK`] of the mean too.

use super::model::predict;
use super::{ServiceId, Topology};

/// How far over the mean weight a shard may grow when a move cuts the
/// traffic crossing shards.
pub const SLACK: f64 = 0.10;
/// What a service weighs at rest, as a share of the mean unit's load: a
/// shard's listeners, connections and memory grow with its services, its
/// CPU with their load, and the two weigh alike.
const AT_REST: f64 = 1.0;
/// The most refining passes.
const PASSES: usize = 8;

/// A placement of a topology's services on shards.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    /// Each service's shard, from 0.
    pub shard_of: Vec<usize>,
    /// Each shard's weight (expected load and the services' at rest), as a
    /// share of the whole.
    pub weight: Vec<f64>,
    /// Each shard's services.
    pub services: Vec<usize>,
    /// The share of the call traffic (expected calls a root request makes)
    /// that crosses shards.
    pub crossing: f64,
    /// The share of the calls (edges of the graph) that cross shards.
    pub crossing_calls: f64,
}

/// Why there is no placement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacementError(pub String);

impl std::fmt::Display for PlacementError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The units (a service with its endpoints): each service's unit, and
/// each unit's services.
fn units(t: &Topology) -> (Vec<usize>, Vec<Vec<ServiceId>>) {
    let mut unit_of = vec![usize::MAX; t.services.len()];
    let mut members: Vec<Vec<ServiceId>> = vec![];
    for id in 0..t.services.len() {
        if unit_of[id] != usize::MAX {
            continue;
        }
        let u = members.len();
        let group: Vec<ServiceId> = t.group(id).collect();
        let group = if group.contains(&id) { group } else { vec![id] };
        for &j in &group {
            unit_of[j] = u;
        }
        members.push(group);
    }
    (unit_of, members)
}

/// Places `t`'s services on `n` shards.
pub fn place(t: &Topology, n: usize) -> Result<Placement, PlacementError> {
    let (unit_of, members) = units(t);
    if n == 0 {
        return Err(PlacementError("--shards needs at least 1 shard".into()));
    }
    if n > members.len() {
        return Err(PlacementError(format!(
            "--shards {n}: the topology has {} service{} to place; give at most that many shards",
            members.len(),
            if members.len() == 1 { "" } else { "s" }
        )));
    }
    let p = predict(t, &t.policy);
    let load: Vec<f64> = p.services.iter().map(|s| s.load.max(0.0)).collect();
    let units_n = members.len();
    let mut w: Vec<f64> = members
        .iter()
        .map(|m| m.iter().map(|&s| load[s]).sum())
        .collect();
    let mean = w.iter().sum::<f64>() / units_n as f64;
    let rest = (mean * AT_REST).max(1e-9);
    for x in &mut w {
        *x += rest;
    }
    // Call traffic between units: expected calls a root request makes.
    let mut links: Vec<Vec<(usize, f64)>> = vec![vec![]; units_n];
    for e in &t.edges {
        let (a, b) = (unit_of[e.from], unit_of[e.to]);
        if a == b {
            continue;
        }
        let traffic = load[e.from] * e.expected_calls();
        links[a].push((b, traffic));
        links[b].push((a, traffic));
    }
    // 1. Depth-first from the roots, then whatever no root reaches.
    let order = walk(t, &unit_of, units_n);
    let total: f64 = w.iter().sum();
    let target = total / n as f64;
    let mut shard = vec![0usize; units_n];
    let (mut k, mut filled) = (0usize, 0.0);
    for (i, &u) in order.iter().enumerate() {
        let left_units = units_n - i;
        let left_shards = n - k;
        if k + 1 < n && (filled + w[u] / 2.0 > target || left_units < left_shards) && filled > 0.0 {
            k += 1;
            filled = 0.0;
        }
        shard[u] = k;
        filled += w[u];
    }
    // 2. Moves that cut the crossing traffic within the slack.
    let mut weight = vec![0.0; n];
    let mut count = vec![0usize; n];
    for u in 0..units_n {
        weight[shard[u]] += w[u];
        count[shard[u]] += 1;
    }
    let cap = target * (1.0 + SLACK);
    for _ in 0..PASSES {
        let mut moved = false;
        for &u in &order {
            let here = shard[u];
            if count[here] == 1 {
                continue;
            }
            let mut to = vec![0.0; n];
            for &(v, x) in &links[u] {
                to[shard[v]] += x;
            }
            let best = (0..n)
                .filter(|&s| s != here && weight[s] + w[u] <= cap)
                .max_by(|&a, &b| to[a].total_cmp(&to[b]));
            if let Some(s) = best {
                if to[s] > to[here] + 1e-12 {
                    weight[here] -= w[u];
                    weight[s] += w[u];
                    count[here] -= 1;
                    count[s] += 1;
                    shard[u] = s;
                    moved = true;
                }
            }
        }
        if !moved {
            break;
        }
    }
    // 3. A shard left light by the cut takes, one at a time, the unit it
    //    exchanges the most traffic with from a shard over the mean.
    let floor = target * (1.0 - SLACK);
    for _ in 0..units_n {
        let Some(light) = (0..n).min_by(|&a, &b| weight[a].total_cmp(&weight[b])) else {
            break;
        };
        if weight[light] >= floor {
            break;
        }
        let mut best: Option<(usize, f64)> = None;
        for u in 0..units_n {
            let from = shard[u];
            // Only from a shard over the mean, and never leaving it light.
            if from == light
                || count[from] == 1
                || weight[from] <= target
                || weight[from] - w[u] < floor
            {
                continue;
            }
            if weight[light] + w[u] > cap {
                continue;
            }
            let (mut to_light, mut to_own) = (0.0, 0.0);
            for &(v, x) in &links[u] {
                if shard[v] == light {
                    to_light += x;
                } else if shard[v] == from {
                    to_own += x;
                }
            }
            let score = to_light - to_own;
            if best.is_none_or(|(_, b)| score > b) {
                best = Some((u, score));
            }
        }
        let Some((u, _)) = best else { break };
        let from = shard[u];
        weight[from] -= w[u];
        weight[light] += w[u];
        count[from] -= 1;
        count[light] += 1;
        shard[u] = light;
    }
    let shard_of: Vec<usize> = unit_of.iter().map(|&u| shard[u]).collect();
    let (crossing, crossing_calls) = crossing(t, &shard_of, &load);
    let mut services = vec![0usize; n];
    for &s in &shard_of {
        services[s] += 1;
    }
    Ok(Placement {
        shard_of,
        weight: weight.iter().map(|x| x / total).collect(),
        services,
        crossing,
        crossing_calls,
    })
}

/// Where a shard's listeners bind: each replica of each service it serves
/// takes the next port after its shard's first, in topology order, so that
/// every process that knows the topology, the number of shards and where
/// each shard's first port is knows every service's address without
/// being told it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slots {
    /// Per service (every endpoint as its service's first node): its
    /// shard and the slot of its first replica; `None` for a service with
    /// a `url:` (it runs outside the lab).
    pub of: Vec<Option<(usize, u32)>>,
    /// Per shard, the listeners it binds.
    pub count: Vec<u32>,
}

impl Slots {
    /// The slots of `t`'s services placed as `shard_of` says, on `n`
    /// shards.
    pub fn of(t: &Topology, shard_of: &[usize], n: usize) -> Slots {
        let mut count = vec![0u32; n];
        let mut of: Vec<Option<(usize, u32)>> = vec![None; t.services.len()];
        for (id, s) in t.services.iter().enumerate() {
            if s.url.is_some() {
                continue;
            }
            if s.group != id {
                of[id] = of[s.group];
                continue;
            }
            let k = shard_of[id];
            of[id] = Some((k, count[k]));
            count[k] += s.replicas.max(1);
        }
        Slots { of, count }
    }

    /// The port offsets of service `id`'s replicas from its shard's first
    /// port, with its shard.
    pub fn ports(&self, t: &Topology, id: ServiceId) -> Option<(usize, std::ops::Range<u32>)> {
        let (k, first) = self.of.get(id).copied().flatten()?;
        let replicas = t.services[t.services[id].group].replicas.max(1);
        Some((k, first..first + replicas))
    }
}

/// The units in the order a depth-first walk from the roots along the
/// calls first meets them, then the ones no root reaches, in file order.
fn walk(t: &Topology, unit_of: &[usize], units_n: usize) -> Vec<usize> {
    let mut seen = vec![false; units_n];
    let mut order = Vec::with_capacity(units_n);
    let mut stack: Vec<ServiceId> = t.load.roots.iter().rev().map(|r| r.entry).collect();
    let mut starts: Vec<ServiceId> = (0..t.services.len()).rev().collect();
    loop {
        while let Some(s) = stack.pop() {
            let u = unit_of[s];
            if seen[u] {
                continue;
            }
            seen[u] = true;
            order.push(u);
            // Every endpoint's calls, the first called walked first.
            let calls: Vec<ServiceId> = t
                .group(s)
                .chain(std::iter::once(s))
                .flat_map(|m| t.services[m].calls.iter().map(|&e| t.edges[e].to))
                .collect();
            for &c in calls.iter().rev() {
                if !seen[unit_of[c]] {
                    stack.push(c);
                }
            }
        }
        match starts.pop() {
            Some(s) if !seen[unit_of[s]] => stack.push(s),
            Some(_) => {}
            None => break,
        }
    }
    order
}

/// The share of the call traffic, and of the calls, that crosses shards
/// under `shard_of`.
pub fn crossing(t: &Topology, shard_of: &[usize], load: &[f64]) -> (f64, f64) {
    let (mut all, mut cross, mut calls, mut cross_calls) = (0.0, 0.0, 0usize, 0usize);
    for e in &t.edges {
        let x = load[e.from] * e.expected_calls();
        all += x;
        calls += 1;
        if shard_of[e.from] != shard_of[e.to] {
            cross += x;
            cross_calls += 1;
        }
    }
    (
        if all > 0.0 { cross / all } else { 0.0 },
        if calls > 0 {
            cross_calls as f64 / calls as f64
        } else {
            0.0
        },
    )
}

/// The placement as `check --shards N` prints it, beside what placing the
/// services round-robin would cross.
pub fn describe(t: &Topology, p: &Placement) -> String {
    use std::fmt::Write as _;
    let n = p.weight.len();
    let mut s = String::new();
    let mean = 1.0 / n as f64;
    let (lo, hi) = p
        .weight
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), &w| (lo.min(w), hi.max(w)));
    let _ = writeln!(
        s,
        "shards     {n}: callers beside their callees, balanced by expected load and service count (the shards weigh {:.2} to {:.2} of the mean)",
        lo / mean,
        hi / mean
    );
    for k in 0..n {
        let _ = writeln!(
            s,
            "  shard {k:<3} {:>6} services  {:>5.1}% of the weight (load and services)",
            p.services[k],
            p.weight[k] * 100.0
        );
    }
    let load: Vec<f64> = predict(t, &t.policy)
        .services
        .iter()
        .map(|x| x.load)
        .collect();
    let round_robin: Vec<usize> = (0..t.services.len())
        .map(|i| t.services[i].group % n)
        .collect();
    let (rr, _) = crossing(t, &round_robin, &load);
    let _ = writeln!(
        s,
        "  calls crossing shards: {:.1}% of the call traffic ({:.1}% of the calls); placed round-robin, {:.1}%",
        p.crossing * 100.0,
        p.crossing_calls * 100.0,
        rr * 100.0
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topology(yaml: &str) -> Topology {
        Topology::from_yaml(yaml, "t.yaml").unwrap()
    }

    #[test]
    fn a_chain_in_two_shards_is_cut_once_in_the_middle() {
        let t = topology(
            "name: c\nservices:\n  A: { calls: [B] }\n  B: { calls: [C] }\n  C: { calls: [D] }\n  D: { calls: [E] }\n  E: { calls: [F] }\n  F: {}\n",
        );
        let p = place(&t, 2).unwrap();
        assert_eq!(p.shard_of, [0, 0, 0, 1, 1, 1]);
        assert!((p.crossing_calls - 0.2).abs() < 1e-9, "{p:?}");
        assert_eq!(p.services, [3, 3]);
        assert!((p.weight[0] - 0.5).abs() < 1e-9);
    }

    #[test]
    fn two_trees_each_get_a_shard_whatever_the_file_order() {
        let t = topology(
            "name: t\nload:\n  entries:\n    - { entry: A, rps: 10 }\n    - { entry: X, rps: 10 }\nservices:\n  A: { calls: [B, C] }\n  X: { calls: [Y, Z] }\n  C: {}\n  Z: {}\n  B: {}\n  Y: {}\n",
        );
        let p = place(&t, 2).unwrap();
        let a = p.shard_of[t.service_id("A").unwrap()];
        for s in ["B", "C"] {
            assert_eq!(p.shard_of[t.service_id(s).unwrap()], a, "{s}");
        }
        for s in ["X", "Y", "Z"] {
            assert_ne!(p.shard_of[t.service_id(s).unwrap()], a, "{s}");
        }
        assert_eq!(p.crossing, 0.0);
    }

    #[test]
    fn slots_number_each_shards_listeners_in_topology_order() {
        let t = topology(
            "name: s\nload: { entry: A }\nservices:\n  A: { calls: [S/x, B] }\n  B: { replicas: 2, calls: [X] }\n  S:\n    endpoints: { x: {}, y: {} }\n  X: { url: 'http://127.0.0.1:9/' }\n",
        );
        let id = |n: &str| t.service_id(n).unwrap();
        let shard_of: Vec<usize> = (0..t.services.len())
            .map(|i| usize::from(t.services[i].name.starts_with('S')))
            .collect();
        let s = Slots::of(&t, &shard_of, 2);
        assert_eq!(s.of[id("A")], Some((0, 0)));
        assert_eq!(s.ports(&t, id("B")), Some((0, 1..3)));
        assert_eq!(s.of[id("S/y")], s.of[id("S/x")]);
        assert_eq!(s.of[id("S/x")], Some((1, 0)));
        assert_eq!(s.of[id("X")], None);
        assert_eq!(s.count, [3, 1]);
    }

    #[test]
    fn endpoints_of_a_service_share_its_shard() {
        let t = topology(
            "name: e\nservices:\n  A: { calls: [S/x, B] }\n  B: { calls: [S/y] }\n  S:\n    endpoints: { x: {}, y: {} }\n",
        );
        for n in 1..=3 {
            let p = place(&t, n).unwrap();
            let (x, y) = (t.service_id("S/x").unwrap(), t.service_id("S/y").unwrap());
            assert_eq!(p.shard_of[x], p.shard_of[y], "{n}: {p:?}");
        }
    }

    #[test]
    fn a_drawn_mesh_crosses_far_less_than_round_robin_and_every_shard_holds_some() {
        let t = topology(&crate::topology::generate::dag(400, 7));
        for n in [2, 4, 8] {
            let p = place(&t, n).unwrap();
            let load: Vec<f64> = predict(&t, &t.policy)
                .services
                .iter()
                .map(|x| x.load)
                .collect();
            let rr: Vec<usize> = (0..t.services.len()).map(|i| i % n).collect();
            let (round_robin, _) = crossing(&t, &rr, &load);
            assert!(
                p.crossing < round_robin / 2.0,
                "{n}: {} against {round_robin}",
                p.crossing
            );
            assert!(p.services.iter().all(|&k| k > 0), "{n}: {:?}", p.services);
            assert!((p.weight.iter().sum::<f64>() - 1.0).abs() < 1e-9);
            // No shard holds more than twice its share.
            assert!(
                p.weight.iter().all(|&w| w < 2.0 / n as f64),
                "{n}: {:?}",
                p.weight
            );
        }
    }

    #[test]
    fn more_shards_than_services_is_refused_and_one_shard_crosses_nothing() {
        let t = topology("name: s\nservices:\n  A: { calls: [B] }\n  B: {}\n");
        assert!(place(&t, 3)
            .unwrap_err()
            .0
            .contains("at most that many shards"));
        assert!(place(&t, 0).is_err());
        let p = place(&t, 1).unwrap();
        assert_eq!(p.crossing, 0.0);
        assert_eq!(p.services, [2]);
    }
}
