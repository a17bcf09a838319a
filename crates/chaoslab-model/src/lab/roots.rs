//! Per-root figures of a topology of many roots (SPEC section 11): each
//! user-facing root's availability, latency and storm radius as its own
//! end users saw them, beside the model's availability and static radius
//! for that root.

use serde::Serialize;

use crate::lab::figures::Window;
use crate::topology::model::static_radius_per_root;
use crate::topology::{Policy, Topology};

/// One root's figures over a window.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RootReport {
    /// Its service.
    pub entry: String,
    /// Root requests per second offered to it.
    pub offered_rps: f64,
    /// Root requests sent to it.
    pub sent: u64,
    /// Its root requests that were answered (or given up on).
    pub requests: u64,
    /// Of those, answered with an error or not answered.
    pub errors: u64,
    /// `1 - errors / requests`; `null` with no request measured.
    pub availability: Option<f64>,
    /// The model's availability for its requests.
    pub model_availability: f64,
    /// Its end users' latency.
    pub latency_ms: Latency,
    /// The storm radius of its requests: the largest, and the mean over
    /// those that sent a retry.
    pub storm_radius: Radius,
    /// The worst single failure's radius for its requests, under the
    /// policy in force (Uber's per-API figure).
    pub static_radius: usize,
}

/// p50 and p99, ms (`null` with no request).
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Latency {
    /// Median.
    pub p50: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
}

/// A storm radius over a window.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Radius {
    /// The largest.
    pub max: u64,
    /// The mean over root requests that sent a retry.
    pub mean: f64,
}

/// More roots than this make a mesh: the table lists the storm first
/// without its roots above it ([`beyond_chance`]).
pub const MESH_ROOTS: usize = 5;

/// A service's load above its no-fault baseline over the spread chance
/// alone gives it ([`Figure::ExcessSigma`](super::figures::Figure)): how
/// the views rank services, where a rarely called service's ratio (two
/// calls where one a minute was due) would drown the storm, and a busy
/// service's noise would too.
///
/// As one sort key, highest first: the services whose excess is beyond
/// chance ([`Z_DIFFERS`](super::figures::Z_DIFFERS)), by how far; then the
/// rest by the requests they were expected to get, so a healthy mesh lists
/// its busiest services (whose ratios are the surest) and no leaf that
/// happened to get a request more.
pub fn beyond_chance(f: &super::figures::Figures) -> f64 {
    use super::figures::{Figure, Z_DIFFERS};
    /// Above every expected count a window holds.
    const BEYOND: f64 = 1e15;
    let z = f[Figure::ExcessSigma];
    let expected = f[Figure::ExpectedRequests];
    // Over too few requests for a ratio (whose amplification is withheld)
    // a normal spread says little of a count of 3 where 0.2 were due:
    // such a service is never ranked as beyond chance.
    let withheld = f[Figure::Amplification].is_nan();
    match (z.is_nan(), expected.is_nan()) {
        (false, _) if z > Z_DIFFERS && !withheld => BEYOND + z,
        (_, false) => expected,
        _ => f64::NEG_INFINITY,
    }
}

/// Each root's static radius under `policy` (0 where no single failure
/// storms), for a topology of many roots (empty otherwise).
///
/// A report measures every phase and every expectation's window apart,
/// each under the state in force, and a mesh of thousands of services and
/// hundreds of roots takes a second or two a search: the last few answers
/// are kept, keyed by what the search reads (the graph's shape, the
/// policy, each edge's own policy, which services run no middleware or
/// drop their context).
pub fn static_radii(t: &Topology, policy: &Policy) -> Vec<usize> {
    if !t.load.many_roots() {
        return vec![];
    }
    let key = radii_key(t, policy);
    let cache = RADII
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, radii)) = cache.iter().find(|(k, _)| *k == key) {
        return radii.clone();
    }
    drop(cache);
    let radii: Vec<usize> = static_radius_per_root(t, policy)
        .into_iter()
        .map(|r| r.map_or(0, |(_, r)| r))
        .collect();
    let mut cache = RADII
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if cache.len() >= RADII_KEPT {
        cache.remove(0);
    }
    cache.push((key, radii.clone()));
    radii
}

/// How many answers [`static_radii`] keeps.
const RADII_KEPT: usize = 8;

type RadiiCache = std::sync::Mutex<Vec<(u64, Vec<usize>)>>;
static RADII: RadiiCache = std::sync::Mutex::new(Vec::new());

/// What a static radius search reads, hashed.
fn radii_key(t: &Topology, policy: &Policy) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    t.name.hash(&mut h);
    format!("{policy:?}").hash(&mut h);
    for s in &t.services {
        (
            s.ownership,
            s.context_dropped,
            &s.calls,
            s.root_multiplicity.len(),
        )
            .hash(&mut h);
    }
    for e in &t.edges {
        (e.from, e.to, format!("{:?}{:?}", e.mode, e.policy)).hash(&mut h);
    }
    t.load.roots.iter().for_each(|r| r.entry.hash(&mut h));
    h.finish()
}

/// Every root's figures over the window, for a topology of many (empty
/// otherwise, or when the roots were not counted apart), beside each
/// root's static radius (`statics`, from [`static_radii`]).
pub fn roots(t: &Topology, w: &Window<'_>, statics: &[usize]) -> Vec<RootReport> {
    if !t.load.many_roots() || w.counts.roots.len() != t.load.roots.len() {
        return vec![];
    }
    t.load
        .roots
        .iter()
        .zip(&w.counts.roots)
        .enumerate()
        .map(|(k, (root, c))| {
            let (max, mean) = c.radius();
            let availability = c.availability();
            RootReport {
                entry: t.services[root.entry].name.clone(),
                offered_rps: root.rps,
                sent: c.sent,
                requests: c.completed(),
                errors: c.errors,
                availability: (!availability.is_nan()).then_some(availability),
                model_availability: w.prediction.roots.get(k).copied().unwrap_or(f64::NAN),
                latency_ms: Latency {
                    p50: c.latency.quantile_ms(0.5),
                    p99: c.latency.quantile_ms(0.99),
                },
                storm_radius: Radius { max, mean },
                static_radius: statics.get(k).copied().unwrap_or(0),
            }
        })
        .collect()
}
