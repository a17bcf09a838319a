//! The storm map (SPEC section 18): for every service failing a share of
//! its requests, the load it then receives over its baseline, and the path
//! whose hops multiply it most, in one pass over the graph.
//!
//! A failing service `x` answers its callers with a distribution of
//! outcomes (its status, its claim). Each caller's call to it costs the
//! attempts the caller's policy spends on that answer, and the caller in
//! turn answers *its* callers with the error it passes up (its `passed`
//! status, unclaimed). So the load a service receives while it fails is
//!
//! `load(v | D) = entry(v) + Σ over calls t→v of load(t | D_t) × calls(t→v) × attempts(t→v | D)`
//!
//! where `D_t` is what `t` answers when its call to `v` ends as `D` says.
//! The recursion climbs from the failing service to the roots and is kept
//! per (service, answer): services that answer alike share the climb
//! above them, so the whole map costs one visit per call and distinct
//! answer (a handful: statuses and claims), not one model run per
//! service. Each step is the model's own evaluation of the caller
//! ([`Model::eval_one`]) with that one callee failing, so a hop's factor
//! is the model's: attempts, retry conditions, ownership, the budget's
//! and throttle's steady state.
//!
//! Where paths rejoin (a caller reaching the failing service through two
//! of its calls), each climb takes the caller's answer from the one call
//! it climbs through: the figure is exact on trees and chains.

use std::collections::HashMap;

use super::{loads, Dist, Model, Topology};
use crate::topology::{Fault, Phase, Policy, ServiceId};

/// One service's row of the storm map.
#[derive(Debug, Clone, PartialEq)]
pub struct StormRow {
    /// The failing service.
    pub service: ServiceId,
    /// Its load while it fails, over its load when healthy.
    pub amplification: f64,
    /// The calls, root first, of the path whose hops multiply most: each
    /// edge with the attempts its caller spends per call.
    pub path: Vec<(usize, f64)>,
    /// How many hops of that path retry (spend more than one attempt).
    pub radius: usize,
    /// Whether a hop's figure is a steady state rather than a closed form
    /// (a budget, a throttle, a breaker or a hedge on the path).
    pub steady_state: bool,
}

/// What climbing from a service answering one way found.
#[derive(Debug, Clone)]
struct Climb {
    /// Its load over its healthy load.
    factor: f64,
    /// The path above it that multiplies most: its product and edges
    /// (nearest the service last).
    best: f64,
    path: Vec<(usize, f64)>,
}

/// The storm map of `t` under `policy`: each service failing a share
/// `rate` of its requests with its own status (`errors.own`), before its
/// calls.
pub fn storm_map(t: &Topology, policy: &Policy, rate: f64) -> Vec<StormRow> {
    let mut m = Model::new(t, policy);
    let order = m.order.clone();
    for &v in order.iter().rev() {
        m.dist[v] = m.eval_one(v, &Fault::default());
    }
    let base = loads(t, &m, &order);
    // The budgets' and throttles' steady state at the healthy rates.
    for (i, e) in t.edges.iter().enumerate() {
        m.rates[i] = Some(super::budget::EdgeRates {
            first_per_sec: base[e.from] * m.calls[i].per_invocation * t.load.rps,
            attempt_latency_s: None,
            poisson: t.load.arrival == crate::topology::Arrival::Poisson,
        });
    }
    let healthy = m.dist.clone();
    let healthy_calls = m.calls.clone();
    m.reuse = Some((healthy_calls.iter().map(|c| c.out).collect(), usize::MAX));
    let mut callers: Vec<Vec<usize>> = vec![vec![]; t.services.len()];
    for (i, e) in t.edges.iter().enumerate() {
        if e.is_made() {
            callers[e.to].push(i);
        }
    }
    let entry: Vec<f64> = {
        let mut v = vec![0.0; t.services.len()];
        for (r, w) in t.load.shares() {
            if let Some(x) = v.get_mut(r) {
                *x += w;
            }
        }
        v
    };
    let mut climber = Climber {
        m,
        healthy,
        healthy_calls,
        base,
        entry,
        callers,
        memo: HashMap::new(),
        climbing: vec![false; t.services.len()],
    };
    let rows: Vec<StormRow> = (0..t.services.len())
        .map(|x| {
            let s = &t.services[x];
            let fault = Fault {
                error_rate: rate.clamp(0.0, 1.0),
                phase: Phase::Before,
                status: s.errors.own,
                ..Fault::default()
            };
            let d = climber.m.eval_one(x, &fault);
            climber.m.dist[x] = climber.healthy[x];
            let c = climber.climb(x, d);
            let radius = c.path.iter().filter(|(_, a)| *a > 1.0 + 1e-9).count();
            let steady_state = c.path.iter().any(|&(e, _)| {
                let p = &climber.m.policies[e];
                p.budget.is_some()
                    || p.throttle.is_some()
                    || p.breaker.is_some()
                    || p.hedge.is_some()
            });
            StormRow {
                service: x,
                amplification: c.factor,
                path: c.path,
                radius,
                steady_state,
            }
        })
        .collect();
    rows
}

struct Climber<'a> {
    m: Model<'a>,
    healthy: Vec<Dist>,
    healthy_calls: Vec<super::EdgeCall>,
    base: Vec<f64>,
    entry: Vec<f64>,
    callers: Vec<Vec<usize>>,
    memo: HashMap<(ServiceId, String), Climb>,
    climbing: Vec<bool>,
}

impl Climber<'_> {
    /// Service `v`'s load factor while it answers `d` to every caller.
    fn climb(&mut self, v: ServiceId, d: Dist) -> Climb {
        let key = (v, format!("{d:?}"));
        if let Some(c) = self.memo.get(&key) {
            return c.clone();
        }
        if self.base[v] <= 0.0 {
            return Climb {
                factor: 1.0,
                best: 1.0,
                path: vec![],
            };
        }
        self.climbing[v] = true;
        let mut load = self.entry[v];
        let (mut best, mut path) = (1.0, vec![]);
        for i in 0..self.callers[v].len() {
            let e = self.callers[v][i];
            let t = self.m.t.edges[e].from;
            if self.climbing[t] {
                // A cycle through the endpoints: the caller at its
                // healthy load.
                load += self.base[t] * self.healthy_calls[e].per_invocation;
                continue;
            }
            let (answer, per_invocation, attempts) = self.step(t, v, d, e);
            let above = self.climb(t, answer);
            load += self.base[t] * above.factor * per_invocation * attempts;
            let product = above.best * attempts;
            if product > best + 1e-12 || (path.is_empty() && self.entry[v] <= 0.0) {
                best = product;
                path = above.path.clone();
                path.push((e, attempts));
            }
        }
        self.climbing[v] = false;
        let c = Climb {
            factor: load / self.base[v],
            best,
            path,
        };
        self.memo.insert(key, c.clone());
        c
    }

    /// Caller `t`'s answer, and its calls and attempts on edge `e`, while
    /// its callee `v` answers `d` and every other service is healthy.
    fn step(&mut self, t: ServiceId, v: ServiceId, d: Dist, e: usize) -> (Dist, f64, f64) {
        if let Some((_, failing)) = &mut self.m.reuse {
            *failing = v;
        }
        self.m.dist[v] = d;
        let fault = Fault::default();
        let answer = self.m.eval_one(t, &fault);
        let c = self.m.calls[e];
        self.m.dist[v] = self.healthy[v];
        // Leave the caller's calls as the healthy evaluation had them.
        for &k in &self.m.t.services[t].calls {
            self.m.calls[k] = self.healthy_calls[k];
        }
        (answer, c.per_invocation, c.out.attempts)
    }
}
