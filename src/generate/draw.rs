//! Drawing a mesh from [`Params`]: roles, levels, fan-outs, callees,
//! endpoints and sampled calls, all from one seeded generator.
//!
//! Services are ordered entries, then middle services level by level,
//! then leaves; a service calls only services later in that order, so the
//! mesh is acyclic by construction and the longest path is a pass over
//! the order. Fan-outs are drawn stratified (one draw per equal slice of
//! the distribution, dealt out at random), so the mesh's fan-out
//! quantiles are the published ones and not a sample's scatter around
//! them. Every middle service gets a caller on the level just above it
//! and every leaf a caller somewhere, from the callers' drawn slots where
//! one is free (a slot added where none is, counted in `forced`).

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::like::Params;

/// Endpoints a service other than an entry has, 1 to 4, by these shares
/// (an assumption of the lab).
const ENDPOINT_SHARES: [f64; 4] = [0.4, 0.3, 0.2, 0.1];
/// The Zipf exponent of the callees' weights.
const ZIPF: f64 = 0.9;
/// Root requests simulated to tune and to report the touched services.
const SIMULATED: usize = 1000;
/// A simulated request stops counting past this many calls.
const MAX_VISITS: usize = 50_000;

/// What a service is in the mesh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Called by nobody in the mesh: a root.
    Entry,
    /// Called and calling.
    Middle,
    /// Called, calling nobody.
    Leaf,
}

/// One call an endpoint makes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Call {
    /// The service called.
    pub to: usize,
    /// Its endpoint.
    pub endpoint: usize,
    /// Times per request.
    pub count: u32,
    /// Share of requests that make it.
    pub p: f64,
    /// Whether the call may be retried (its edge's policy otherwise says
    /// `attempts: 1`).
    pub retries: bool,
}

/// A generated service.
#[derive(Debug, Clone, PartialEq)]
pub struct Service {
    /// Its role.
    pub role: Role,
    /// Its level: 0 for entries, 1 and on for middle services, one past
    /// the deepest middle level for leaves.
    pub level: usize,
    /// Its endpoints' calls (one endpoint: a plain service).
    pub endpoints: Vec<Vec<Call>>,
    /// Whether it runs the ownership middleware.
    pub ownership: bool,
    /// Whether it drops its request context on its calls.
    pub context_dropped: bool,
}

/// A generated mesh and what was measured on it.
#[derive(Debug, Clone)]
pub struct Mesh {
    /// Entries, then middle services by level, then leaves.
    pub services: Vec<Service>,
    /// Each entry's share of the root requests (summing to 1).
    pub shares: Vec<f64>,
    /// Each calling service's distinct callees, for the header's figures.
    pub fan_outs: Vec<usize>,
    /// Caller slots added where the drawn fan-outs had none free.
    pub forced: usize,
    /// The sampled calls' scale: an endpoint of `c` calls makes each with
    /// `p = min(1, beta / c)`.
    pub beta: f64,
    /// Services one simulated root request touched, sorted.
    pub touched: Vec<usize>,
}

impl Mesh {
    /// Services on the longest path a request takes (from endpoint to
    /// endpoint).
    pub fn depth(&self) -> usize {
        let mut longest: Vec<Vec<usize>> = self
            .services
            .iter()
            .map(|s| vec![1; s.endpoints.len()])
            .collect();
        for i in (0..self.services.len()).rev() {
            for e in 0..self.services[i].endpoints.len() {
                let below = self.services[i].endpoints[e]
                    .iter()
                    .map(|c| longest[c.to][c.endpoint])
                    .max()
                    .unwrap_or(0);
                longest[i][e] = 1 + below;
            }
        }
        longest.into_iter().flatten().max().unwrap_or(0)
    }

    /// Calls between endpoints.
    pub fn endpoint_edges(&self) -> usize {
        self.services
            .iter()
            .flat_map(|s| &s.endpoints)
            .map(Vec::len)
            .sum()
    }
}

/// The quantile `q` of sorted `v`, nearest rank.
pub fn quantile(v: &[usize], q: f64) -> usize {
    if v.is_empty() {
        return 0;
    }
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

/// Draws a mesh of `n` services (at least 3).
pub fn mesh(n: usize, params: &Params, seed: u64) -> Mesh {
    // The steps draw from one generator, in this order: a seed's mesh
    // is the same only while the order is.
    let mut rng = StdRng::seed_from_u64(seed);
    let shape = shape(n.max(3), params);
    let fan = drawn_fan_outs(&shape, params, &mut rng);
    let mut free = fan.clone();
    let (mut callees, forced) = covering_callers(&shape, &mut free, &mut rng);
    // Each caller's first `covering[s]` callees are the calls above.
    let covering: Vec<usize> = callees.iter().map(Vec::len).collect();
    let cumulative = callee_weights(&shape, &mut rng);
    fill_slots(&shape, &fan, &mut free, &cumulative, &mut callees, &mut rng);
    let kinds = endpoint_counts(&shape, &callees, &mut rng);
    let mut services = bare_services(&shape, &kinds);
    let fan_outs = wire_calls(
        &mut services,
        &mut callees,
        &covering,
        &kinds,
        params.repeated,
        &mut rng,
    );
    let shares = root_shares(shape.entries, &mut rng);

    let mut mesh = Mesh {
        services,
        shares,
        fan_outs,
        forced,
        beta: 1.0,
        touched: vec![],
    };
    let sim_seed = rng.random::<u64>();
    mesh.beta = tune(&mut mesh, params.touched, sim_seed);
    mesh.touched = simulate(&mesh, sim_seed ^ 0x5eed);
    mesh
}

/// The mesh's roles and levels, before any call is drawn.
struct Shape {
    /// Services in all.
    n: usize,
    /// Entries: services `0..entries`.
    entries: usize,
    /// Entries and middle services: the services that call.
    callers: usize,
    /// Middle levels.
    levels: usize,
    /// Each service's level.
    level: Vec<usize>,
    /// The first service of each level (and one past the last).
    start: Vec<usize>,
}

/// How many services are entries, middle services and leaves, by the
/// roles' shares: one of each at least.
fn roles(n: usize, params: &Params) -> (usize, usize, usize) {
    let entries = ((n as f64 * params.roles[0]).round() as usize).max(1);
    let leaves = ((n as f64 * params.roles[2]).round() as usize).max(1);
    let middles = n.saturating_sub(entries + leaves).max(1);
    let leaves = n - entries - middles;
    (entries, middles, leaves)
}

/// The roles, and the levels of the middle services: one middle service
/// on each at least, the rest by decay.
fn shape(n: usize, params: &Params) -> Shape {
    let (entries, middles, leaves) = roles(n, params);
    let levels = params.depth.saturating_sub(2).clamp(1, middles);
    let weights: Vec<f64> = (0..levels)
        .map(|k| params.level_decay.powi(k as i32))
        .collect();
    let sizes = apportion(middles, &weights);
    let mut level = vec![0usize; entries];
    for (k, &size) in sizes.iter().enumerate() {
        level.extend(std::iter::repeat_n(k + 1, size));
    }
    level.extend(std::iter::repeat_n(levels + 1, leaves));
    let mut start = vec![0usize; levels + 3];
    for l in 0..=levels + 1 {
        start[l + 1] = start[l] + level.iter().filter(|&&x| x == l).count();
    }
    Shape {
        n,
        entries,
        callers: entries + middles,
        levels,
        level,
        start,
    }
}

/// Each caller's fan-out: stratified draws dealt out at random, each
/// capped by the services below its level.
fn drawn_fan_outs(shape: &Shape, params: &Params, rng: &mut StdRng) -> Vec<usize> {
    let Shape {
        n,
        callers,
        level,
        start,
        ..
    } = shape;
    let mut fan: Vec<usize> = (0..*callers)
        .map(|i| params.fan_out_at((i as f64 + 0.5) / *callers as f64))
        .collect();
    shuffle(&mut fan, rng);
    for (s, f) in fan.iter_mut().enumerate() {
        *f = (*f).min(n - start[level[s] + 1]);
    }
    fan
}

/// Each caller's callees once everyone below the entries has a caller (a
/// middle service on the level just above it, a leaf anywhere), taken from
/// the callers' `free` slots where one is; and the slots added where none
/// was.
fn covering_callers(
    shape: &Shape,
    free: &mut [usize],
    rng: &mut StdRng,
) -> (Vec<Vec<usize>>, usize) {
    let Shape {
        n,
        entries,
        callers,
        levels,
        level,
        start,
    } = shape;
    let mut callees: Vec<Vec<usize>> = vec![vec![]; *callers];
    let mut forced = 0;
    for t in *entries..*n {
        let (lo, hi) = if level[t] <= *levels {
            (start[level[t] - 1], start[level[t]])
        } else {
            (0, *callers)
        };
        let picked = (0..32)
            .map(|_| rng.random_range(lo..hi))
            .find(|&s| free[s] > 0 && !callees[s].contains(&t));
        let s = match picked {
            Some(s) => {
                free[s] -= 1;
                s
            }
            None => {
                forced += 1;
                rng.random_range(lo..hi)
            }
        };
        if !callees[s].contains(&t) {
            callees[s].push(t);
        }
    }
    (callees, forced)
}

/// The callees' cumulative Zipf weights over a random ranking of the
/// callable services (`cumulative[t]` sums the weights of the services
/// before `t`; an entry weighs nothing).
fn callee_weights(shape: &Shape, rng: &mut StdRng) -> Vec<f64> {
    let (n, entries) = (shape.n, shape.entries);
    let mut rank: Vec<usize> = (0..n - entries).collect();
    shuffle(&mut rank, rng);
    let mut cumulative = vec![0.0f64; n + 1];
    for t in 0..n {
        let w = if t < entries {
            0.0
        } else {
            (rank[t - entries] as f64 + 1.0).powf(-ZIPF)
        };
        cumulative[t + 1] = cumulative[t] + w;
    }
    cumulative
}

/// The rest of each caller's slots, by the callees' weights.
fn fill_slots(
    shape: &Shape,
    fan: &[usize],
    free: &mut [usize],
    cumulative: &[f64],
    callees: &mut [Vec<usize>],
    rng: &mut StdRng,
) {
    let n = shape.n;
    for s in 0..shape.callers {
        let lo = shape.start[shape.level[s] + 1];
        let mut tries = 0;
        while free[s] > 0 && callees[s].len() < n - lo {
            let t = if tries < 64 * fan[s] {
                tries += 1;
                let x = cumulative[lo] + rng.random::<f64>() * (cumulative[n] - cumulative[lo]);
                cumulative[lo..=n]
                    .partition_point(|&c| c <= x)
                    .saturating_sub(1)
                    + lo
            } else {
                // Heavily weighted callees are taken: any not yet called.
                match (lo..n).find(|t| !callees[s].contains(t)) {
                    Some(t) => t,
                    None => break,
                }
            };
            let t = t.min(n - 1);
            if !callees[s].contains(&t) {
                callees[s].push(t);
                free[s] -= 1;
            }
        }
    }
}

/// Each service's endpoints: entries have one; others 1-4, no more than
/// callers.
fn endpoint_counts(shape: &Shape, callees: &[Vec<usize>], rng: &mut StdRng) -> Vec<usize> {
    let mut inbound: Vec<usize> = vec![0; shape.n];
    for c in callees {
        for &t in c {
            inbound[t] += 1;
        }
    }
    (0..shape.n)
        .map(|t| {
            if t < shape.entries {
                return 1;
            }
            let x: f64 = rng.random();
            let mut acc = 0.0;
            let k = ENDPOINT_SHARES
                .iter()
                .position(|w| {
                    acc += w;
                    x < acc
                })
                .unwrap_or(ENDPOINT_SHARES.len() - 1)
                + 1;
            k.min(inbound[t].max(1))
        })
        .collect()
}

/// The services with their roles, levels and `kinds` endpoints, calling
/// nobody yet.
fn bare_services(shape: &Shape, kinds: &[usize]) -> Vec<Service> {
    (0..shape.n)
        .map(|t| Service {
            role: if t < shape.entries {
                Role::Entry
            } else if t < shape.callers {
                Role::Middle
            } else {
                Role::Leaf
            },
            level: shape.level[t],
            endpoints: vec![vec![]; kinds[t]],
            ownership: true,
            context_dropped: false,
        })
        .collect()
}

/// Each caller's callees as calls from its endpoints to theirs (a share
/// `repeated` of them made 2 or 3 times a request); returns the callers'
/// fan-outs, sorted.
fn wire_calls(
    services: &mut [Service],
    callees: &mut [Vec<usize>],
    covering: &[usize],
    kinds: &[usize],
    repeated: f64,
    rng: &mut StdRng,
) -> Vec<usize> {
    // Every callee's first endpoint takes its covering call.
    let mut served = vec![1usize; services.len()];
    let mut fan_outs = vec![];
    for (s, mine) in callees.iter_mut().enumerate() {
        fan_outs.push(mine.len());
        let cover = covering[s];
        shuffle(&mut mine[cover..], rng);
        for (j, &t) in mine.iter().enumerate() {
            // A covering call runs from the first endpoint to the first, so
            // the levels' chain is a path a request takes (the longest is
            // `depth` services); the callee's other endpoints are each
            // called once before any twice.
            let (from, endpoint) = if j < cover {
                (0, 0)
            } else if served[t] < kinds[t] {
                served[t] += 1;
                (j - cover, served[t] - 1)
            } else {
                (j - cover, rng.random_range(0..kinds[t]))
            };
            let count = if rng.random::<f64>() < repeated {
                rng.random_range(2..=3)
            } else {
                1
            };
            let k = services[s].endpoints.len();
            services[s].endpoints[from % k].push(Call {
                to: t,
                endpoint,
                count,
                p: 1.0,
                retries: true,
            });
        }
    }
    fan_outs.sort_unstable();
    fan_outs
}

/// Each entry's share of the root requests: Zipf over a random ranking of
/// the entries.
fn root_shares(entries: usize, rng: &mut StdRng) -> Vec<f64> {
    let mut order: Vec<usize> = (0..entries).collect();
    shuffle(&mut order, rng);
    let raw: Vec<f64> = order.iter().map(|&r| 1.0 / (r as f64 + 1.0)).collect();
    let total: f64 = raw.iter().sum();
    raw.iter().map(|w| w / total).collect()
}

/// `total` apportioned by `weights`, each part at least 1 (largest
/// remainders get the rest).
fn apportion(total: usize, weights: &[f64]) -> Vec<usize> {
    let k = weights.len();
    let rest = total.saturating_sub(k) as f64;
    let sum: f64 = weights.iter().sum();
    let exact: Vec<f64> = weights.iter().map(|w| rest * w / sum).collect();
    let mut parts: Vec<usize> = exact.iter().map(|x| 1 + x.floor() as usize).collect();
    let mut left = total.saturating_sub(parts.iter().sum());
    let mut by_remainder: Vec<usize> = (0..k).collect();
    by_remainder
        .sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())));
    for &i in by_remainder.iter().cycle().take(k * 2) {
        if left == 0 {
            break;
        }
        parts[i] += 1;
        left -= 1;
    }
    parts
}

fn shuffle<T>(v: &mut [T], rng: &mut StdRng) {
    for i in (1..v.len()).rev() {
        v.swap(i, rng.random_range(0..=i));
    }
}

/// Sets every call's `p` for `beta`.
fn sample(mesh: &mut Mesh, beta: f64) {
    for s in &mut mesh.services {
        for calls in &mut s.endpoints {
            let p = (beta / calls.len().max(1) as f64).min(1.0);
            for c in calls.iter_mut() {
                c.p = (p * 1e4).round().max(1.0) / 1e4;
            }
        }
    }
}

/// The `beta` at which a root request touches `target` services on
/// average (bisection on a log scale, the same simulated requests each
/// time so the mean rises with `beta`).
fn tune(mesh: &mut Mesh, target: f64, seed: u64) -> f64 {
    let (mut lo, mut hi) = (0.02f64.ln(), 20f64.ln());
    for _ in 0..22 {
        let mid = (lo + hi) / 2.0;
        sample(mesh, mid.exp());
        let t = simulate(mesh, seed);
        let mean = t.iter().sum::<usize>() as f64 / t.len().max(1) as f64;
        if mean < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let beta = ((lo + hi) / 2.0).exp();
    sample(mesh, beta);
    beta
}

/// The services each of [`SIMULATED`] root requests touches, sorted.
fn simulate(mesh: &Mesh, seed: u64) -> Vec<usize> {
    let mut rng = StdRng::seed_from_u64(seed);
    let n = mesh.services.len();
    let mut seen = vec![usize::MAX; n];
    let mut cumulative = Vec::with_capacity(mesh.shares.len());
    let mut acc = 0.0;
    for s in &mesh.shares {
        acc += s;
        cumulative.push(acc);
    }
    let mut touched = Vec::with_capacity(SIMULATED);
    let mut stack: Vec<(usize, usize)> = vec![];
    for r in 0..SIMULATED {
        let x = rng.random::<f64>() * acc;
        let root = cumulative
            .partition_point(|&c| c < x)
            .min(mesh.shares.len() - 1);
        let mut count = 0;
        let mut visits = 0;
        stack.clear();
        stack.push((root, 0));
        while let Some((s, e)) = stack.pop() {
            visits += 1;
            if seen[s] != r {
                seen[s] = r;
                count += 1;
            }
            if visits > MAX_VISITS {
                break;
            }
            for c in &mesh.services[s].endpoints[e] {
                if c.p >= 1.0 || rng.random::<f64>() < c.p {
                    stack.push((c.to, c.endpoint));
                }
            }
        }
        touched.push(count);
    }
    touched.sort_unstable();
    touched
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::like::params;
    use crate::generate::like::Like;

    #[test]
    fn the_fan_out_quantiles_are_the_published_ones() {
        let p = params(Like::Meta);
        let m = mesh(5000, &p, 7);
        let f = &m.fan_outs;
        let near = |got: usize, want: f64| (got as f64 - want).abs() <= 0.1 * want;
        assert!(near(quantile(f, 0.5), 4.0), "median {}", quantile(f, 0.5));
        assert!(near(quantile(f, 0.9), 13.0), "p90 {}", quantile(f, 0.9));
        assert!(near(quantile(f, 0.99), 100.0), "p99 {}", quantile(f, 0.99));
        assert_eq!(m.depth(), 19);
        let roles = |r: Role| m.services.iter().filter(|s| s.role == r).count();
        assert_eq!(
            (roles(Role::Entry), roles(Role::Middle), roles(Role::Leaf)),
            (650, 2400, 1950)
        );
    }

    #[test]
    fn a_root_request_touches_tens_of_services_not_the_mesh() {
        for like in [Like::Meta, Like::Alibaba] {
            let p = params(like);
            let m = mesh(2000, &p, 3);
            let mean = m.touched.iter().sum::<usize>() as f64 / m.touched.len() as f64;
            assert!(
                (mean - p.touched).abs() < 0.15 * p.touched,
                "{like:?}: {mean} touched, beta {}",
                m.beta
            );
            assert!(quantile(&m.touched, 0.5) < 200, "{like:?}");
        }
    }

    #[test]
    fn every_service_below_the_entries_has_a_caller_and_calls_go_down() {
        let m = mesh(300, &params(Like::Alibaba), 11);
        let mut called = vec![false; m.services.len()];
        for (i, s) in m.services.iter().enumerate() {
            for c in s.endpoints.iter().flatten() {
                assert!(c.to > i && m.services[c.to].level > s.level);
                assert!(c.endpoint < m.services[c.to].endpoints.len());
                called[c.to] = true;
            }
        }
        for (i, s) in m.services.iter().enumerate() {
            assert_eq!(called[i], s.role != Role::Entry, "service {i}");
        }
        assert!(m.depth() <= 6);
    }
}
