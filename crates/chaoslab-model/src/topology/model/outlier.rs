//! What outlier detection does to an edge over a run: when each of the
//! callee's replicas is ejected, for how long, and what share of the
//! edge's first attempts it gets.
//!
//! A replica whose answers count as failures with probability `q` (under
//! `count: all` every 5xx and every missing answer; under `count:
//! claimed` the claimed and unmarked ones, not the errors it unclaims)
//! and that receives `a` attempts a second while in service reaches a
//! streak of `n = consecutive_5xx` failures after
//!
//! * `n / a` seconds when it fails every attempt (`q = 1`);
//! * `(1/qⁿ − 1)/(1 − q)` attempts on average otherwise (the waiting time
//!   for a run of `n`, as for the breaker), divided by `a`;
//!
//! and is ejected at once if the cap allows it (`max_ejection_percent`:
//! at most [`OutlierConfig::ejectable`] of the replicas at a time; with
//! Envoy's 10% none of fewer than ten). Its k-th ejection lasts
//! `base_ejection × k` (at most `max_ejection`), rounded up to the next
//! sweep (every `interval` from the detector's start); back in service
//! it starts a new streak. While it is out it gets no first attempt,
//! and the others share them; over a window its share of the first
//! attempts is (time in service / window) / replicas. A healthy replica
//! of a middle service that only passes its callee's errors up answers
//! them as 5xx: under `count: all` it is as failing as its callee and is
//! ejected as a bad host would be; under `count: claimed` it unclaims
//! them, `q = 0`, and it is never ejected.
//!
//! When more replicas fail than the cap lets out, they take turns in the
//! slots: each slot is modelled as one replica, ejected again as soon as
//! its previous ejection ends, each time at the first multiplier (the
//! replicas rotate, and a replica back in service for an interval loses
//! a step of its multiplier at each sweep). When every replica is out the
//! balancer sends to all of them (Envoy's panic mode); their streaks then
//! go on, and each is ejected again as soon as it is back.
//!
//! ```
//! use std::time::Duration;
//! use chaoslab_model::topology::model::outlier::schedule;
//! use error_ownership::outlier::OutlierConfig;
//!
//! let cfg = OutlierConfig {
//!     interval: Duration::from_secs(1),
//!     base_ejection: Duration::from_secs(2),
//!     max_ejection_percent: 20.0,
//!     ..OutlierConfig::DEFAULT
//! };
//! // A replica failing every attempt, sent 40 a second: out after 0.125 s,
//! // back at the sweep at 3 s, out again 0.125 s later for 4 s.
//! let s = schedule(&cfg, 1.0, 40.0, false, 8.0);
//! assert_eq!(s.spans, vec![(0.125, 3.0), (3.125, 8.0)]);
//! assert_eq!(s.in_service(0.0, 8.0), 0.25);
//! ```

use error_ownership::outlier::{Count, OutlierConfig};

use super::Prediction;
use crate::topology::mesh::Passed;
use crate::topology::{EdgeId, Policy, Topology};

/// Past this many ejections a schedule stops (a run of hours at a
/// millisecond base).
const MAX_SPANS: usize = 100_000;

/// The chance that one answer of a host counts as its failure under
/// `count`, from the shares of its answers that are claimed, unclaimed
/// and unmarked (missing) errors.
pub fn counted(count: Count, claimed: f64, unclaimed: f64, missing: f64) -> f64 {
    let q = match count {
        Count::All => claimed + unclaimed + missing,
        Count::Claimed => claimed + missing,
    };
    q.clamp(0.0, 1.0)
}

/// Attempts a host failing each with probability `q` takes on average to
/// fail `n` in a row (`n` when it always fails; infinite when it never
/// does).
pub fn attempts_to_streak(q: f64, n: u32) -> f64 {
    let q = q.clamp(0.0, 1.0);
    if n == 0 || q <= 0.0 {
        return f64::INFINITY;
    }
    if q >= 1.0 {
        return f64::from(n);
    }
    (1.0 / q.powi(n as i32) - 1.0) / (1.0 - q)
}

/// Seconds in service a host takes to be ejected: its streak (by the
/// shorter of the enabled rules; the gateway rule only when its failures
/// are gateway errors) at `attempts_per_sec`.
pub fn time_to_ejection(cfg: &OutlierConfig, q: f64, attempts_per_sec: f64, gateway: bool) -> f64 {
    if attempts_per_sec <= 0.0 {
        return f64::INFINITY;
    }
    let by_5xx = attempts_to_streak(q, cfg.consecutive_5xx);
    let by_gateway = if gateway {
        attempts_to_streak(q, cfg.consecutive_gateway)
    } else {
        f64::INFINITY
    };
    by_5xx.min(by_gateway) / attempts_per_sec
}

/// The ejections of one host (or one slot of the cap) over a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    /// Each ejection that began within the run: when it began and when
    /// the sweep brings the host back (past the run's end for one still
    /// out then), seconds from the detector's start.
    pub spans: Vec<(f64, f64)>,
}

impl Schedule {
    /// Seconds from the start to the first ejection, if there is one.
    pub fn first_ejection_s(&self) -> Option<f64> {
        self.spans.first().map(|s| s.0)
    }

    /// How long each ejection lasts.
    pub fn ejected_for_s(&self) -> Vec<f64> {
        self.spans.iter().map(|(a, b)| b - a).collect()
    }

    /// Ejections that began in `from..=to`.
    pub fn ejections_between(&self, from: f64, to: f64) -> usize {
        self.spans
            .iter()
            .filter(|(a, _)| (from..=to).contains(a))
            .count()
    }

    /// Whether the host is out at `t`.
    pub fn ejected_at(&self, t: f64) -> bool {
        self.spans.iter().any(|&(a, b)| a <= t && t < b)
    }

    /// Seconds of `from..to` the host spent in service.
    pub fn in_service(&self, from: f64, to: f64) -> f64 {
        let out: f64 = self
            .spans
            .iter()
            .map(|&(a, b)| (b.min(to) - a.max(from)).max(0.0))
            .sum();
        ((to - from) - out).max(0.0)
    }
}

/// The ejections over `run_s` seconds of a host failing each attempt with
/// probability `q`, sent `attempts_per_sec` while in service (`gateway`:
/// its failures are gateway errors), with sweeps every `interval` from 0.
/// Each time back it takes its streak time again; its multiplier grows by
/// one an ejection (it is back for less than an interval when it fails
/// every attempt at any rate the lab runs) and shrinks by one a sweep it
/// spends in service after the first.
pub fn schedule(
    cfg: &OutlierConfig,
    q: f64,
    attempts_per_sec: f64,
    gateway: bool,
    run_s: f64,
) -> Schedule {
    schedule_with(
        cfg,
        time_to_ejection(cfg, q, attempts_per_sec, gateway),
        run_s,
        false,
    )
}

/// [`schedule`] from the streak time, `fresh`: each ejection at the first
/// multiplier (a slot the failing hosts take turns in).
fn schedule_with(cfg: &OutlierConfig, streak_s: f64, run_s: f64, fresh: bool) -> Schedule {
    let interval = cfg.interval.as_secs_f64();
    let sweep = |t: f64| {
        if interval > 0.0 {
            // A hair under: a time a float's rounding puts past a sweep
            // is on it.
            (t / interval - 1e-9).ceil().max(0.0) * interval
        } else {
            t
        }
    };
    let sweeps_by = |t: f64| {
        if interval > 0.0 {
            (t / interval + 1e-9).floor()
        } else {
            0.0
        }
    };
    let mut spans = vec![];
    if !streak_s.is_finite() {
        return Schedule { spans };
    }
    let (mut t, mut k, mut back) = (0.0, 0u32, None::<f64>);
    while spans.len() < MAX_SPANS {
        let out = t + streak_s;
        if out > run_s {
            break;
        }
        let decayed = back.map_or(0.0, |b| (sweeps_by(out) - sweeps_by(b)).max(0.0));
        let from = if fresh {
            0
        } else {
            k.saturating_sub(decayed as u32)
        };
        k = cfg.next_multiplier(from);
        let until = sweep(out + cfg.ejected_for(k).as_secs_f64());
        spans.push((out, until));
        if until >= run_s {
            break;
        }
        back = Some(until);
        t = until;
    }
    Schedule { spans }
}

/// One replica of a callee as an edge's outlier detection sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaOutlook {
    /// The replica (0-based).
    pub replica: u32,
    /// The chance one of its answers counts as its failure.
    pub q: f64,
    /// Attempts a second the edge sends it while it is in service.
    pub attempts_per_sec: f64,
    /// Its ejections (for a replica sharing a slot of the cap with
    /// others, the slot's, spread evenly over them).
    pub schedule: Schedule,
    /// How many replicas share its slot (1: it has one of its own).
    pub sharing: u32,
}

impl ReplicaOutlook {
    /// Whether it is ever ejected over the run.
    pub fn ejected(&self) -> bool {
        !self.schedule.spans.is_empty()
    }

    /// Its ejections that began in `from..=to` (a slot's shared evenly).
    pub fn ejections_between(&self, from: f64, to: f64) -> f64 {
        self.schedule.ejections_between(from, to) as f64 / f64::from(self.sharing.max(1))
    }
}

/// What outlier detection does on one edge over a run.
#[derive(Debug, Clone, PartialEq)]
pub struct EdgeOutlook {
    /// The callee's replicas.
    pub replicas: u32,
    /// How many may be out at once.
    pub ejectable: u32,
    /// Per replica.
    pub hosts: Vec<ReplicaOutlook>,
}

impl EdgeOutlook {
    /// Replica `r`'s share of the edge's first attempts over `from..to`:
    /// a replica in service shares them evenly with the others in
    /// service (all of them when all are out).
    pub fn first_attempt_share(&self, r: u32, from: f64, to: f64) -> f64 {
        let Some(h) = self.hosts.get(r as usize) else {
            return 0.0;
        };
        let n = f64::from(self.replicas.max(1));
        if to <= from {
            return 1.0 / n;
        }
        if h.sharing > 1 || !h.ejected() {
            // A slot the failing replicas take turns in, or never out:
            // spread evenly (what a slot holds out, the others take).
            let out = (to - from) - h.schedule.in_service(from, to);
            let share_out = out / (to - from) / f64::from(h.sharing.max(1));
            return (1.0 - share_out) / n;
        }
        h.schedule.in_service(from, to) / (to - from) / n
    }
}

/// What the model says outlier detection does on edge `edge` of `t` under
/// `policy`, over `run_s` seconds from the detector's start, with the
/// edge's traffic as `prediction` gives it; `None` when the edge runs no
/// outlier detection or its callee has one replica.
pub fn edge(
    t: &Topology,
    policy: &Policy,
    prediction: &Prediction,
    edge: EdgeId,
    run_s: f64,
) -> Option<EdgeOutlook> {
    let e = t.edges.get(edge)?;
    let cfg = policy.for_edge(&e.policy).outlier?;
    let callee = &t.services[e.to];
    let n = callee.replicas;
    if n < 2 {
        return None;
    }
    let fault = callee.fault_in_force();
    let p = prediction.services.get(e.to)?;
    let ep = prediction.edges.get(edge)?;
    let rps = t.load.rps;
    let other_host = policy.balancing(&e.policy).1;
    let bad: Vec<bool> = (0..n)
        .map(|r| fault.error_rate > 0.0 && fault.replicas.as_ref().is_none_or(|rs| rs.contains(&r)))
        .collect();
    let split = p.split.as_ref().filter(|_| fault.replicas.is_some());
    let all_fail = split.is_none();
    // What a replica answers: its own errors (the fault's status, or none
    // for a closed listener), or the errors it passes up.
    let own_gateway = fault.down || matches!(fault.status, 502..=504);
    let passed_gateway = match callee.errors.passed {
        Passed::Status(s) => matches!(s, 502..=504),
        Passed::Same => false,
    };
    let shares = |r: u32| -> (f64, bool) {
        let (c, u, m) = match split {
            Some(s) if bad[r as usize] => s.bad,
            Some(s) => s.good,
            None => (p.p_claimed, p.p_unclaimed, p.p_missing),
        };
        let q = counted(cfg.count, c, u, m);
        // Mostly its own errors, or mostly passed ones.
        let gateway = if u > c + m {
            passed_gateway
        } else {
            own_gateway
        };
        (q, gateway)
    };
    // First attempts spread evenly; a retry lands on a replica the call
    // has not tried, so a failing replica among good ones gets none of
    // the retries its own failures cause.
    let first = ep.first_attempts * rps / f64::from(n);
    let retries = ep.retries * rps;
    let failing = (0..n).filter(|&r| shares(r).0 > 0.0).count() as u32;
    let ejectable = cfg.ejectable(n);
    let hosts = (0..n)
        .map(|r| {
            let (q, gateway) = shares(r);
            let a = if all_fail || !other_host {
                first + retries / f64::from(n)
            } else if bad[r as usize] {
                first
            } else {
                first + retries / f64::from((n - failing).max(1))
            };
            let streak = time_to_ejection(&cfg, q, a, gateway);
            let (schedule, sharing) = if q <= 0.0 || ejectable == 0 {
                (Schedule { spans: vec![] }, 1)
            } else if failing <= ejectable {
                (schedule_with(&cfg, streak, run_s, false), 1)
            } else {
                // Turns in a slot: `failing` replicas over `ejectable`
                // slots.
                let per_slot = failing.div_ceil(ejectable);
                (schedule_with(&cfg, streak, run_s, true), per_slot)
            };
            ReplicaOutlook {
                replica: r,
                q,
                attempts_per_sec: a,
                schedule,
                sharing,
            }
        })
        .collect();
    Some(EdgeOutlook {
        replicas: n,
        ejectable,
        hosts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::model::predict;
    use std::time::Duration;

    fn cfg(pct: f64) -> OutlierConfig {
        OutlierConfig {
            interval: Duration::from_secs(1),
            base_ejection: Duration::from_secs(2),
            max_ejection_percent: pct,
            ..OutlierConfig::DEFAULT
        }
    }

    #[test]
    fn a_streak_takes_n_attempts_of_a_host_that_always_fails() {
        assert_eq!(attempts_to_streak(1.0, 5), 5.0);
        assert_eq!(attempts_to_streak(0.0, 5), f64::INFINITY);
        assert_eq!(attempts_to_streak(0.5, 0), f64::INFINITY);
        // Half: 62 attempts for five in a row.
        assert_eq!(attempts_to_streak(0.5, 5), 62.0);
        let c = cfg(100.0);
        assert_eq!(time_to_ejection(&c, 1.0, 50.0, false), 0.1);
        let gw = OutlierConfig {
            consecutive_gateway: 2,
            ..c
        };
        assert_eq!(time_to_ejection(&gw, 1.0, 50.0, true), 0.04);
        assert_eq!(time_to_ejection(&gw, 1.0, 50.0, false), 0.1);
        assert_eq!(time_to_ejection(&c, 1.0, 0.0, false), f64::INFINITY);
    }

    #[test]
    fn what_counts_follows_the_claims() {
        assert_eq!(counted(Count::All, 0.0, 1.0, 0.0), 1.0);
        assert_eq!(counted(Count::Claimed, 0.0, 1.0, 0.0), 0.0);
        assert_eq!(counted(Count::Claimed, 0.25, 0.5, 0.25), 0.5);
    }

    #[test]
    fn ejections_grow_to_the_cap_and_end_at_sweeps() {
        let c = OutlierConfig {
            max_ejection: Duration::from_secs(5),
            ..cfg(100.0)
        };
        let s = schedule(&c, 1.0, 10.0, false, 30.0);
        // 0.5 s to a streak; 2 s to 2.5, the sweep at 3; 4 s from 3.5 to
        // 7.5, the sweep at 8; then the 5 s cap: 8.5 to 14, 14.5 to 20,
        // 20.5 to 26, 26.5 to 32 (past the run's end).
        assert_eq!(
            s.spans,
            [
                (0.5, 3.0),
                (3.5, 8.0),
                (8.5, 14.0),
                (14.5, 20.0),
                (20.5, 26.0),
                (26.5, 32.0)
            ]
        );
        assert_eq!(s.first_ejection_s(), Some(0.5));
        assert_eq!(s.ejected_for_s()[..3], [2.5, 4.5, 5.5]);
        assert_eq!(s.ejections_between(3.0, 14.5), 3);
        assert!(s.ejected_at(3.6) && !s.ejected_at(3.0) && !s.ejected_at(3.2));
        // In service 0.5 s before each ejection: 3 s of 30.
        assert!((s.in_service(0.0, 30.0) - 3.0).abs() < 1e-9);
        // A host that never fails is never out.
        assert!(schedule(&c, 0.0, 10.0, false, 30.0).spans.is_empty());
    }

    #[test]
    fn a_host_healthy_long_enough_starts_again_at_the_base() {
        // Fails one attempt in two at 1 a second: 62 s to a streak, so
        // the multiplier has decayed back by the next ejection.
        let s = schedule(&cfg(100.0), 0.5, 1.0, false, 200.0);
        let spans: Vec<f64> = s.ejected_for_s();
        assert_eq!(spans.len(), 3, "{s:?}");
        assert!(spans.iter().all(|&d| (2.0..3.0).contains(&d)), "{spans:?}");
    }

    fn topology(yaml: &str) -> (Topology, Prediction) {
        let t = Topology::from_yaml(yaml, "t.yaml").unwrap();
        let p = predict(&t, &t.policy);
        (t, p)
    }

    #[test]
    fn one_bad_replica_of_five_is_out_nearly_all_the_time() {
        let (t, p) = topology(
            "name: t\npolicy: { preset: retry, attempts: 2, lb: round-robin, outlier: { interval: 1s, base_ejection: 2s, max_ejection_percent: 20 } }\nload: { rps: 200 }\nservices:\n  A: { calls: [B] }\n  B: { replicas: 5, fault: { error_rate: 1.0, replicas: [0] } }\n",
        );
        let o = edge(&t, &t.policy, &p, 0, 4.0).unwrap();
        assert_eq!((o.replicas, o.ejectable), (5, 1));
        let bad = &o.hosts[0];
        assert_eq!((bad.q, bad.attempts_per_sec), (1.0, 40.0));
        // Five of its 40 attempts a second: out after 0.125 s, back at 3 s,
        // out again 0.125 s later.
        assert_eq!(bad.schedule.spans, [(0.125, 3.0), (3.125, 8.0)]);
        assert!(bad.schedule.ejected_at(4.0));
        assert!(o.hosts[1..].iter().all(|h| !h.ejected()));
        // Its share: in service 0.25 s of 4, a fifth of the first attempts
        // then; none while out; the others a quarter each while it is out.
        assert!((o.first_attempt_share(0, 0.0, 4.0) - 0.25 / 4.0 / 5.0).abs() < 1e-12);
        assert_eq!(o.first_attempt_share(0, 1.0, 2.0), 0.0);
        // Envoy's 10% ejects none of five.
        let (t, p) = topology(
            "name: t\npolicy: { outlier: on }\nservices:\n  A: { calls: [B] }\n  B: { replicas: 5, fault: { error_rate: 1.0, replicas: [0] } }\n",
        );
        let o = edge(&t, &t.policy, &p, 0, 60.0).unwrap();
        assert_eq!(o.ejectable, 0);
        assert!(!o.hosts[0].ejected());
        assert_eq!(o.first_attempt_share(0, 0.0, 60.0), 0.2);
    }

    #[test]
    fn a_middle_host_passing_errors_up_is_ejected_only_when_every_5xx_counts() {
        let chain = |count: &str| {
            topology(&format!(
                "name: t\npolicy: {{ preset: ownership, outlier: {{ interval: 1s, base_ejection: 2s, max_ejection_percent: 100, count: {count} }} }}\nload: {{ rps: 100 }}\nservices:\n  A: {{ calls: [B] }}\n  B: {{ replicas: 2, calls: [C] }}\n  C: {{ fault: {{ error_rate: 1.0 }} }}\n"
            ))
        };
        let (t, p) = chain("all");
        let o = edge(&t, &t.policy, &p, 0, 5.0).unwrap();
        for h in &o.hosts {
            assert_eq!(h.q, 1.0);
            // B unclaims C's errors: A does not retry them, so each of B's
            // replicas gets half of A's 100 calls a second.
            assert_eq!(h.attempts_per_sec, 50.0);
            assert_eq!(h.schedule.spans, [(0.1, 3.0), (3.1, 8.0)]);
        }
        let (t, p) = chain("claimed");
        let o = edge(&t, &t.policy, &p, 0, 5.0).unwrap();
        assert!(o.hosts.iter().all(|h| h.q == 0.0 && !h.ejected()));
        // Not on the edge B→C (C has one replica), nor without outlier.
        assert!(edge(&t, &t.policy, &p, 1, 5.0).is_none());
        let (t, p) = topology("name: t\nservices:\n  A: { calls: [B] }\n  B: { replicas: 2 }\n");
        assert!(edge(&t, &t.policy, &p, 0, 5.0).is_none());
    }

    #[test]
    fn more_failing_replicas_than_slots_take_turns() {
        let (t, p) = topology(
            "name: t\npolicy: { preset: none, outlier: { interval: 1s, base_ejection: 2s, max_ejection_percent: 34 } }\nload: { rps: 300 }\nservices:\n  A: { calls: [B] }\n  B: { replicas: 3, fault: { error_rate: 1.0 } }\n",
        );
        let o = edge(&t, &t.policy, &p, 0, 10.0).unwrap();
        assert_eq!(o.ejectable, 1);
        // One slot, three replicas: an ejection of 2 s (3 s with the
        // sweep) about every 3 s, a third of them each.
        let h = &o.hosts[0];
        assert_eq!(h.sharing, 3);
        assert_eq!(h.schedule.spans.len(), 4, "{:?}", h.schedule);
        assert!((h.ejections_between(0.0, 10.0) - 4.0 / 3.0).abs() < 1e-12);
    }
}
