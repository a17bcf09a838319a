//! Finite capacity in the model (SPEC section 7): how busy each service
//! with `workers` is at the configured load, what it can serve, and the
//! **recovery threshold**, the highest entry rate at which a fleet caught
//! in a storm of timeouts still drains.
//!
//! # Why a threshold
//!
//! A service with `workers: 4, work: 25ms` serves 4 / 25 ms = 160 requests
//! per second. At 120 rps offered it is 75 % busy and answers in time. A
//! trigger (a burst, a slow dependency) fills its queue; every caller's
//! attempt now times out, and under a retrying policy every timed-out
//! attempt is sent again, while the abandoned work still holds a worker
//! (work is not cancelled by default). Once the trigger ends the fleet
//! recovers only if the load a root request puts on the service *while
//! every attempt times out* fits its capacity. A timed-out attempt has no
//! response and so no claim (*missing*), which every retrying policy
//! retries, ownership included; only a budget caps it. So:
//!
//! threshold = min over services with workers of
//! capacity_rps / (attempts it receives per root request when every
//! attempt leading to it times out).
//!
//! Above it under a policy, a trigger that fills the queue leaves the fleet
//! down after the trigger ends: a *metastable* failure.
//!
//! # Method
//!
//! - **capacity_rps** = workers / (work + fault latency): a request holds a
//!   worker for its whole service time.
//! - **utilisation** = entry rate × [`super::predict`]'s load per root
//!   request × service time / workers, reported raw: above 1 the service
//!   is overloaded and its queue grows.
//! - **storm load** of a service X: X and every service that can reach it
//!   answer every attempt with no response (a timeout: its callers wait on
//!   X's attempts, so they time out too), while the services that cannot
//!   reach X answer as the faults in force say. Each caller still makes its
//!   calls and retries by its policy; a budget caps retries at its ratio
//!   exactly as in [`super::predict`]. The faults of X and its callers are
//!   set aside: the storm is the fault. On a chain this is every attempt
//!   anywhere failing; on a wider graph it spares X's load from sibling
//!   calls that would have failed for no reason of X's.
//!
//! The threshold assumes abandoned work runs (`cancel: false`, no
//! `deadline: propagate`). With either, work nobody waits for is skipped,
//! the fleet drains faster, and the threshold is a lower bound.
//!
//! # Worked example
//!
//! entry → A → DB, DB `workers: 4, work: 25ms` (capacity 160 rps), 3
//! attempts per call. Without retries a storm puts one attempt on DB per
//! root request: threshold 160 rps. Naive retries put three: 160 / 3 ≈ 53.3
//! rps, below the 120 rps offered, so a trigger leaves the fleet down. A
//! 10 % budget puts 1.1: 160 / 1.1 ≈ 145 rps.
//!
//! ```
//! use chaoslab_model::topology::{model::capacity, Preset, Topology};
//!
//! let t = Topology::from_yaml(
//!     "name: m\nload: { rps: 120 }\npolicy: { attempts: 3, budget: 0.1 }\nservices:\n  A: { calls: [DB] }\n  DB: { workers: 4, work: 25ms }\n",
//!     "m.yaml",
//! )
//! .unwrap();
//! let at = |preset: Preset| {
//!     let mut p = t.policy.clone();
//!     p.apply_preset(preset);
//!     capacity::capacity(&t, &p)
//! };
//! let none = at(Preset::None);
//! let db = &none.services[0];
//! assert!((db.capacity_rps - 160.0).abs() < 1e-9);
//! assert!((db.utilisation - 0.75).abs() < 1e-9);
//! assert!((none.recovery_threshold.unwrap() - 160.0).abs() < 1e-9);
//! let retry = at(Preset::Retry).recovery_threshold.unwrap();
//! assert!((retry - 160.0 / 3.0).abs() < 1e-9); // 53.3 rps
//! let budget = at(Preset::Budget).recovery_threshold.unwrap();
//! assert!((budget - 160.0 / 1.1).abs() < 1e-9); // ≈ 145 rps
//! let ownership = at(Preset::Ownership).recovery_threshold.unwrap();
//! assert!((ownership - budget).abs() < 1e-9); // a timeout carries no claim
//! ```

use std::time::Duration;

use super::{Dist, Model};
use crate::topology::{Policy, Service, ServiceId, Topology};

/// One service with workers, under one policy.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceCapacity {
    /// The service.
    pub service: ServiceId,
    /// Its `workers`.
    pub workers: u32,
    /// How long a request holds a worker: work + fault latency.
    pub service_time: Duration,
    /// workers / service time: requests per second it can serve
    /// (`f64::INFINITY` when the service time is 0).
    pub capacity_rps: f64,
    /// Attempts it receives per root request, at the faults in force.
    pub load: f64,
    /// Busy workers / workers at the configured entry rate, raw: above 1
    /// it is overloaded.
    pub utilisation: f64,
    /// Attempts it receives per root request when every attempt leading
    /// to it times out.
    pub storm_load: f64,
    /// capacity_rps / storm_load: the highest entry rate at which it
    /// drains during a storm (`f64::INFINITY` when the storm never
    /// reaches it).
    pub threshold_rps: f64,
}

/// The capacity figures of a topology under one policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Capacity {
    /// Every service with workers, in [`Topology::services`] order.
    pub services: Vec<ServiceCapacity>,
    /// The recovery threshold in root requests per second: the lowest of
    /// the services' thresholds. `None` when nothing bounds it (no
    /// service with workers is reached, or none takes any time).
    pub recovery_threshold: Option<f64>,
    /// The service that sets the threshold.
    pub bottleneck: Option<ServiceId>,
}

impl Capacity {
    /// Whether any service has workers.
    pub fn is_empty(&self) -> bool {
        self.services.is_empty()
    }
}

/// How long one request holds a worker, on average over the replicas:
/// `work` plus the fault's latency on the replicas it is on (a balanced
/// load sends each replica its share).
pub fn service_time(s: &Service) -> Duration {
    let f = s.fault_in_force();
    s.work
        .saturating_add(f.latency.mul_f64(f.replica_share(s.replicas.max(1))))
}

/// workers / service time, `None` without workers; `f64::INFINITY` when
/// the service time is 0.
pub fn capacity_rps(s: &Service) -> Option<f64> {
    // Workers are per replica: the service serves with all of them.
    let w = f64::from(s.workers?) * f64::from(s.replicas.max(1));
    let secs = service_time(s).as_secs_f64();
    Some(if secs > 0.0 { w / secs } else { f64::INFINITY })
}

/// Utilisation, capacity and the recovery threshold of every service with
/// workers in `t` under `policy`, at `t.load.rps` and the faults in `t`.
pub fn capacity(t: &Topology, policy: &Policy) -> Capacity {
    let with_workers: Vec<ServiceId> = (0..t.services.len())
        .filter(|&i| t.services[i].workers.is_some())
        .collect();
    if with_workers.is_empty() {
        return Capacity {
            services: Vec::new(),
            recovery_threshold: None,
            bottleneck: None,
        };
    }
    let loads = super::predict(t, policy);
    let storm = storm_loads(t, policy, &with_workers);
    let mut services = Vec::with_capacity(with_workers.len());
    for (&i, &storm_load) in with_workers.iter().zip(&storm) {
        let s = &t.services[i];
        let workers = s.workers.unwrap_or(1);
        let time = service_time(s);
        let capacity_rps = capacity_rps(s).unwrap_or(f64::INFINITY);
        let load = loads.services[i].load;
        services.push(ServiceCapacity {
            service: i,
            workers,
            service_time: time,
            capacity_rps,
            load,
            utilisation: t.load.rps * load * time.as_secs_f64()
                / (f64::from(workers) * f64::from(s.replicas.max(1))),
            storm_load,
            threshold_rps: if storm_load > 0.0 {
                capacity_rps / storm_load
            } else {
                f64::INFINITY
            },
        });
    }
    share_workers(t, &mut services);
    let best = services
        .iter()
        .filter(|s| s.threshold_rps.is_finite())
        .min_by(|a, b| a.threshold_rps.total_cmp(&b.threshold_rps));
    Capacity {
        recovery_threshold: best.map(|s| s.threshold_rps),
        bottleneck: best.map(|s| s.service),
        services,
    }
}

/// The endpoints of a service share its workers (SPEC section 11): each
/// endpoint's utilisation is the service's (the sum of its endpoints'
/// busy workers), its capacity the service's at this mix of endpoints, and
/// its threshold the entry rate at which the storm loads of all of them
/// fill the workers together.
fn share_workers(t: &Topology, services: &mut [ServiceCapacity]) {
    let mut k = 0;
    while k < services.len() {
        let g = t.services[services[k].service].group;
        let end = (k..services.len())
            .find(|&j| t.services[services[j].service].group != g)
            .unwrap_or(services.len());
        if end - k > 1 {
            let group = &services[k..end];
            let s = &t.services[group[0].service];
            let workers = f64::from(group[0].workers) * f64::from(s.replicas.max(1));
            let busy: f64 = group.iter().map(|c| c.utilisation).sum();
            let held = |load: fn(&ServiceCapacity) -> f64| -> f64 {
                group
                    .iter()
                    .map(|c| load(c) * c.service_time.as_secs_f64())
                    .sum()
            };
            let (held_now, held_storm) = (held(|c| c.load), held(|c| c.storm_load));
            let load: f64 = group.iter().map(|c| c.load).sum();
            let capacity = if held_now > 0.0 {
                workers * load / held_now
            } else {
                f64::INFINITY
            };
            let threshold = if held_storm > 0.0 {
                workers / held_storm
            } else {
                f64::INFINITY
            };
            for c in &mut services[k..end] {
                c.utilisation = busy;
                c.capacity_rps = capacity;
                c.threshold_rps = threshold;
            }
        }
        k = end;
    }
}

/// For each service in `targets`, the attempts it receives per root
/// request when it and everything that can reach it time out.
fn storm_loads(t: &Topology, policy: &Policy, targets: &[ServiceId]) -> Vec<f64> {
    let n = t.services.len();
    let mut m = Model::new(t, policy);
    let order = m.order.clone();
    // Everything at the faults in force first: the services a storm does
    // not reach answer as they would.
    for &v in order.iter().rev() {
        m.dist[v] = m.eval(v, t.services[v].fault_in_force());
    }
    let mut pos = vec![0usize; n];
    for (i, &v) in order.iter().enumerate() {
        pos[v] = i;
    }
    let mut callers: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, e) in t.edges.iter().enumerate() {
        callers[e.to].push(i);
    }
    let mut mark = vec![usize::MAX; n];
    let mut load = vec![0.0; n];
    let mut set = Vec::new();
    let healthy = crate::topology::Fault::default();
    targets
        .iter()
        .map(|&x| {
            super::radius::ancestors(t, &callers, x, &mut mark, &mut set);
            // Every root that reaches x, by its share of the root requests.
            let roots: Vec<(ServiceId, f64)> = t
                .load
                .shares()
                .filter(|&(r, _)| mark.get(r) == Some(&x))
                .collect();
            if roots.is_empty() {
                return 0.0; // no root reaches x
            }
            set.sort_unstable_by_key(|&v| pos[v]);
            for &v in set.iter().rev() {
                // It makes its calls (its own fault set aside); every
                // attempt on it times out.
                m.eval(v, &healthy);
                m.dist[v] = Dist::MISSING;
            }
            for &v in &set {
                load[v] = 0.0;
            }
            for &(r, share) in &roots {
                load[r] += share;
            }
            for &v in &set {
                for &e in &t.services[v].calls {
                    let w = t.edges[e].to;
                    if mark[w] == x {
                        let c = &m.calls[e];
                        load[w] += load[v] * c.per_invocation * c.out.attempts;
                    }
                }
            }
            // Back to the faults in force, for the next service's storm.
            for &v in set.iter().rev() {
                m.dist[v] = m.eval(v, t.services[v].fault_in_force());
            }
            load[x]
        })
        .collect()
}

/// A load spike: `rps` offered for `secs` seconds, then `after` again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trigger {
    /// The entry rate during the spike.
    pub rps: f64,
    /// How long it lasts.
    pub secs: f64,
    /// The entry rate after it.
    pub after: f64,
}

/// How long after `trigger` ends the bottleneck's queue drains back to
/// what it serves within the callers' timeout, by a fluid model of its
/// queue; `None` when it never does (the rate after the trigger is above
/// the policy's recovery threshold).
///
/// The queue grows by what arrives less what the workers serve. While a
/// job waits longer than `timeout` (the queue holds more than
/// capacity × timeout jobs) every caller's attempt times out, so each root
/// request brings the policy's storm load; otherwise its normal load. The
/// queue is capped at its length (the rest is shed). Work is not
/// cancelled: an abandoned job still takes its worker. Recovery is the
/// moment the queue is back under capacity × timeout. Against SPEC
/// section 7's reference (entry → A → DB, 160 rps, 120 offered, 250 ms
/// timeouts, R = 3, 300 rps for 3 s) it gives about 10 s with no retries,
/// about 17 s with a 10 % budget, and never under naive retries.
///
/// ```
/// use chaoslab_model::topology::{model::capacity::{recovery_after, Trigger}, Preset, Topology};
///
/// let mut t = Topology::from_yaml(
///     "name: m\npolicy: { preset: retry, attempts: 3, timeout: 250ms }\nload: { rps: 120 }\nservices:\n  A: { calls: [DB] }\n  DB: { workers: 4, work: 25ms }\n",
///     "m.yaml",
/// ).unwrap();
/// let spike = Trigger { rps: 300.0, secs: 3.0, after: 120.0 };
/// assert_eq!(recovery_after(&t, &t.policy, spike), None);
/// t.policy.apply_preset(Preset::None);
/// let none = recovery_after(&t, &t.policy, spike).unwrap().as_secs_f64();
/// assert!((9.0..12.0).contains(&none), "{none}");
/// ```
pub fn recovery_after(t: &Topology, policy: &Policy, trigger: Trigger) -> Option<Duration> {
    let cap = capacity(t, policy);
    let b = cap.bottleneck?;
    let s = cap.services.iter().find(|c| c.service == b)?;
    let mu = s.capacity_rps;
    let limit = f64::from(t.services[b].queue);
    // A job waiting longer than this is abandoned by its caller.
    let timeout = policy.timeout.as_secs_f64();
    let storming = |q: f64| q > mu * timeout;
    let load = |q: f64| if storming(q) { s.storm_load } else { s.load };
    const DT: f64 = 0.01;
    let mut q = 0.0f64;
    let mut t_s = 0.0;
    while t_s < trigger.secs {
        q = (q + (trigger.rps * load(q) - mu) * DT).clamp(0.0, limit);
        t_s += DT;
    }
    // After the trigger: drained, or stuck.
    let mut after = 0.0;
    while storming(q) {
        let next = (q + (trigger.after * load(q) - mu) * DT).clamp(0.0, limit);
        if next >= q && after > 0.0 {
            return None;
        }
        q = next;
        after += DT;
    }
    Some(Duration::from_secs_f64(after))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{random_dag, topo, with};
    use super::*;
    use crate::topology::Preset;
    use proptest::prelude::*;

    const METASTABLE: &str = "name: m\nload: { rps: 120 }\npolicy: { attempts: 3, budget: 0.1 }\nservices:\n  A: { calls: [DB] }\n  DB: { workers: 4, work: 25ms }\n";

    fn threshold(t: &Topology, preset: Preset) -> Option<f64> {
        capacity(t, &with(t, preset)).recovery_threshold
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn the_reference_fleet() {
        let t = topo(METASTABLE);
        for (preset, want) in [
            (Preset::None, 160.0),
            (Preset::Retry, 160.0 / 3.0),
            (Preset::Budget, 160.0 / 1.1),
            (Preset::Ownership, 160.0 / 1.1),
        ] {
            let c = capacity(&t, &with(&t, preset));
            assert!(
                close(c.recovery_threshold.unwrap(), want),
                "{preset:?}: {c:?}"
            );
            assert_eq!(c.bottleneck, Some(1));
            // No fault in force: one attempt per root request, 75 % busy.
            assert!(close(c.services[0].utilisation, 0.75), "{c:?}");
        }
    }

    /// Every root that reaches a service adds its storm by its share: web
    /// (half the roots) reaches DB over one retrying edge (3 attempts),
    /// mobile over two (9); DB's storm load is 0.5 × 3 + 0.5 × 9 = 6.
    #[test]
    fn every_root_adds_its_storm_by_its_share() {
        let t = topo("name: m\npolicy: { preset: retry, attempts: 3 }\nload:\n  entries:\n    - { entry: web, rps: 50 }\n    - { entry: mobile, rps: 50 }\nservices:\n  web: { calls: [DB] }\n  mobile: { calls: [X] }\n  X: { calls: [DB] }\n  DB: { workers: 4, work: 25ms }\n");
        let c = capacity(&t, &t.policy);
        assert!(close(c.services[0].storm_load, 6.0), "{c:?}");
        assert!(close(c.recovery_threshold.unwrap(), 160.0 / 6.0), "{c:?}");
    }

    /// A latency fault on one replica of two holds a worker that much
    /// longer for half the requests.
    #[test]
    fn latency_on_some_replicas_counts_by_their_share() {
        let t = topo("name: m\nservices:\n  A: { calls: [DB] }\n  DB: { replicas: 2, workers: 4, work: 10ms, fault: { latency: 10ms, replicas: [0] } }\n");
        assert_eq!(service_time(&t.services[1]), Duration::from_millis(15));
    }

    #[test]
    fn fault_latency_lowers_capacity_and_raises_utilisation() {
        let mut t = topo(METASTABLE);
        t.services[1].fault.latency = Duration::from_millis(25);
        let c = capacity(&t, &with(&t, Preset::None));
        assert!(close(c.services[0].capacity_rps, 80.0));
        assert!(close(c.services[0].utilisation, 1.5)); // overloaded, reported raw
        assert!(close(c.recovery_threshold.unwrap(), 80.0));
        // Errors in force raise the load that utilisation sees.
        let mut t = topo(METASTABLE);
        t.services[1].fault.error_rate = 1.0;
        let c = capacity(&t, &with(&t, Preset::Retry));
        assert!(close(c.services[0].load, 3.0));
        assert!(close(c.services[0].utilisation, 2.25));
    }

    #[test]
    fn no_workers_no_figures() {
        let t = topo("name: t\nservices:\n  A: { calls: [B] }\n  B: { work: 5ms }\n");
        let c = capacity(&t, &t.policy);
        assert!(c.is_empty());
        assert_eq!((c.recovery_threshold, c.bottleneck), (None, None));
        // Workers but no work: unbounded.
        let t = topo("name: t\nservices:\n  A: { calls: [B] }\n  B: { workers: 2 }\n");
        let c = capacity(&t, &t.policy);
        assert_eq!(c.services[0].capacity_rps, f64::INFINITY);
        assert_eq!(c.recovery_threshold, None);
    }

    #[test]
    fn a_sibling_that_does_not_lead_to_the_bottleneck_still_answers() {
        // A calls X then DB in order; a storm at DB does not fail X, so
        // DB is still called. Ownership's claims change nothing: a
        // timeout carries none.
        let t = topo("name: t\npolicy: { attempts: 2, budget: off }\nservices:\n  A: { calls: [X, DB] }\n  X: {}\n  DB: { workers: 1, work: 10ms }\n");
        assert!(close(threshold(&t, Preset::None).unwrap(), 100.0));
        assert!(close(threshold(&t, Preset::Retry).unwrap(), 50.0));
        assert!(close(threshold(&t, Preset::Ownership).unwrap(), 50.0));
        // Evaluating the storm leaves the model's state as it found it.
        let c = capacity(&t, &with(&t, Preset::Retry));
        assert!(close(c.services[0].load, 1.0));
    }

    /// A chain s0 → … → s(len-1) whose service `b` has workers.
    fn chain(len: usize, b: usize, workers: u32, r: u32, budget: f64) -> Topology {
        let mut y = format!("name: c\npolicy: {{ attempts: {r}, budget: {budget} }}\nservices:\n");
        for i in 0..len {
            let calls = if i + 1 < len {
                format!("[s{}]", i + 1)
            } else {
                "[]".into()
            };
            let w = if i == b {
                format!(", workers: {workers}, work: 10ms")
            } else {
                String::new()
            };
            y += &format!("  s{i}: {{ calls: {calls}{w} }}\n");
        }
        topo(&y)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Naive retries divide a chain's threshold by R per hop above the
        /// bottleneck; no retries leave the plain capacity; a budget B
        /// (R = 2) divides it by (1 + B) per hop.
        #[test]
        fn chain_thresholds(len in 1usize..10, b in 0usize..10, workers in 1u32..20,
                            r in 1u32..5, budget in 0.0f64..1.0) {
            let b = b % len;
            let t = chain(len, b, workers, r, budget);
            let cap = f64::from(workers) / 0.010;
            let none = threshold(&t, Preset::None).unwrap();
            prop_assert!(close(none, cap), "{none} vs {cap}");
            let retry = threshold(&t, Preset::Retry).unwrap();
            let want = cap / f64::from(r).powi(b as i32);
            prop_assert!(close(retry, want), "{retry} vs {want}");
            let t = chain(len, b, workers, 2, budget);
            let bud = threshold(&t, Preset::Budget).unwrap();
            let want = cap / (1.0 + budget).powi(b as i32);
            prop_assert!(close(bud, want), "{bud} vs {want}");
        }

        /// On any graph: more workers never lower the threshold; retry ≤
        /// budget ≤ none; ownership = budget (timeouts carry no claim);
        /// no retries is at least the plain capacity over the baseline.
        #[test]
        fn thresholds_are_ordered_and_monotone(n in 2usize..25, seed in any::<u64>(),
                                               pick in any::<u64>(), workers in 1u32..8,
                                               more in 1u32..8, r in 1u32..4,
                                               budget in 0.0f64..1.0) {
            let mut t = topo(&random_dag(n, seed, true));
            t.policy.attempts = r;
            t.policy.budget = Some(budget);
            let picked: Vec<usize> = (0..n).filter(|i| (pick >> (i % 64)) & 1 == 1).collect();
            for &i in &picked {
                t.services[i].workers = Some(workers);
                t.services[i].work = Duration::from_millis(1 + i as u64);
            }
            let th = |t: &Topology, p| threshold(t, p).unwrap_or(f64::INFINITY);
            let (none, retry, bud, own) = (
                th(&t, Preset::None),
                th(&t, Preset::Retry),
                th(&t, Preset::Budget),
                th(&t, Preset::Ownership),
            );
            let tol = |x: f64| 1e-9 * x.abs().max(1.0);
            prop_assert!(retry <= bud + tol(bud) || bud.is_infinite(), "{retry} {bud}");
            prop_assert!(bud <= none + tol(none) || none.is_infinite(), "{bud} {none}");
            prop_assert!(own == bud || close(own, bud), "{own} vs {bud}");
            let plain = picked
                .iter()
                .filter(|&&i| t.services[i].multiplicity > 0.0)
                .map(|&i| capacity_rps(&t.services[i]).unwrap() / t.services[i].multiplicity)
                .fold(f64::INFINITY, f64::min);
            prop_assert!(plain.is_infinite() || none >= plain - tol(plain), "{none} vs {plain}");
            if let Some(&i) = picked.first() {
                let mut bigger = t.clone();
                bigger.services[i].workers = Some(workers + more);
                for p in Preset::ALL {
                    let (before, after) = (th(&t, p), th(&bigger, p));
                    prop_assert!(before.is_infinite() || after >= before - tol(before), "{p:?}: {before} -> {after}");
                }
            }
        }
    }
}
