//! Hand-built snapshots for the dashboard's tests: realistic figures for
//! the runs the issue names, with no fleet started, so every drawing is
//! the same on every machine.

use std::time::Duration;

use crate::lab::figures::{Figure, Figures, Scope};
use crate::lab::snapshot::{EdgeView, RootView, ServiceState, ServiceView};
use crate::lab::state::Resources;
use crate::lab::{Action, Event, LabState, Snapshot};
use crate::topology::{Fault, Policy, PolicyFields, Preset};
use error_ownership::Attribution;

/// A service at `depth`, healthy, seeing `rps` with amplification 1.
fn svc(name: &str, depth: usize, rps: f64) -> ServiceView {
    let mut live = Figures::filled(Scope::Service, 0.0);
    live.set(Figure::Rps, rps);
    live.set(Figure::BaselineRps, rps);
    live.set(Figure::Amplification, 1.0);
    live.set(Figure::ModelAmplification, 1.0);
    ServiceView {
        replicas: vec![],
        service: None,
        name: name.into(),
        depth,
        live,
        total: Figures::filled(Scope::Service, 0.0),
        retry_rps: 0.0,
        ownership: true,
        outside: false,
        state: ServiceState::Healthy,
        learned: vec![],
        history: vec![1.0; 60],
    }
}

/// Sets a count figure and the two after it (claims: true, false, missing).
fn set3(f: &mut Figures, first: Figure, v: [u64; 3]) {
    for (k, n) in v.into_iter().enumerate() {
        f.set(Figure::ALL[first as usize + k], n as f64);
    }
}

fn policy(p: Preset) -> Policy {
    let mut policy = Policy::default();
    policy.apply_preset(p);
    policy
}

fn event(t: f64, action: Action, text: &str) -> Event {
    Event {
        t: Duration::from_secs_f64(t),
        action,
        text: text.into(),
        origin: crate::lab::Origin::Operator,
    }
}

fn preset_event(t: f64, p: Preset) -> Event {
    event(
        t,
        Action::Policy(PolicyFields {
            preset: Some(p),
            ..PolicyFields::default()
        }),
        &format!("policy {}", p.name()),
    )
}

fn d_fails_event(t: f64) -> Event {
    event(
        t,
        Action::SetFault {
            service: 3,
            fault: d_fault(),
        },
        "D fails 100% (after its calls, status 500)",
    )
}

fn d_fault() -> Fault {
    Fault {
        error_rate: 1.0,
        ..Fault::default()
    }
}

/// A series that is `before` until `at` of `n` points, then `after`, with
/// a small fixed wobble so charts look measured.
fn step(n: usize, at: usize, before: f64, after: f64) -> Vec<f64> {
    const WOBBLE: [f64; 7] = [0.0, 0.004, -0.003, 0.002, -0.004, 0.003, -0.001];
    (0..n)
        .map(|i| {
            let v = if i < at { before } else { after };
            v * (1.0 + WOBBLE[i % WOBBLE.len()])
        })
        .collect()
}

fn chain_edges(n: usize, retry: &[f64], attempts: &[f64]) -> Vec<EdgeView> {
    (0..n - 1)
        .map(|i| EdgeView {
            from: i,
            to: i + 1,
            attempt_rps: attempts.get(i).copied().unwrap_or(200.0),
            retry_rps: retry.get(i).copied().unwrap_or(0.0),
            budget: None,
            breaker: 0,
            outliers: vec![],
        })
        .collect()
}

fn root(availability: f64, p50: f64, p99: f64, sent: u64, errors: u64) -> RootView {
    RootView {
        rps: 200.0,
        availability,
        p50_ms: p50,
        p99_ms: p99,
        sent,
        errors,
        dropped: 0,
        availability_history: vec![],
        rps_history: vec![],
        goodput_rps: 200.0 * availability,
        goodput_history: vec![],
        offered_history: vec![],
    }
}

fn base(name: &str, t: f64, preset: Preset, services: Vec<ServiceView>) -> Snapshot {
    Snapshot {
        t: Duration::from_secs_f64(t),
        topology: name.into(),
        state: LabState {
            policy: policy(preset),
            attribution: Attribution::Declared,
            at_least_once: true,
            rps: 200.0,
            paused: false,
            faults: vec![Fault::default(); services.len()],
            context_dropped: vec![false; services.len()],
            resources: vec![
                Resources {
                    workers: None,
                    work: Duration::ZERO,
                    queue: 1000,
                };
                services.len()
            ],
            groups: vec![],
        },
        window: Duration::from_secs(2),
        root: root(1.0, 1.2, 3.9, 0, 0),
        radius_max: 0,
        radius_mean: 0.0,
        radius_model: 0,
        radius_static: 1,
        roots: vec![],
        spurious_avoided: 0,
        recovery_threshold: None,
        think: None,
        edges: chain_edges(services.len(), &[], &[]),
        services,
        events: vec![],
        refused: vec![],
        saturation: vec![],
        tap: vec![],
        timeline: None,
    }
}

const CHAIN: [&str; 7] = ["A", "B", "C", "D", "E", "F", "G"];

/// uber-chain under `ownership` with no fault: 200 rps, nothing retries.
fn uber_chain_healthy_built() -> Snapshot {
    let services = CHAIN
        .iter()
        .enumerate()
        .map(|(d, n)| svc(n, d, 200.0))
        .collect();
    let mut s = base("uber-chain", 30.0, Preset::Ownership, services);
    s.root = root(1.0, 1.2, 3.9, 6000, 0);
    s.root.availability_history = vec![1.0; 29];
    s.root.rps_history = step(29, 0, 200.0, 200.0);
    for v in &mut s.services {
        v.history = step(29, 0, 1.0, 1.0);
    }
    s
}

/// uber-chain under naive `retry` with D failing every request: the storm
/// (1, 2, 4, 8, 8, 8, 8), 30 s after D started failing.
fn uber_chain_retry_built() -> Snapshot {
    let amps = [1.0, 2.0, 4.0, 8.0, 7.995, 7.995, 7.995];
    let rps = [200.2, 400.4, 800.6, 1600.8, 1600.0, 1600.0, 1600.0];
    let services = CHAIN
        .iter()
        .enumerate()
        .map(|(d, n)| {
            let mut v = svc(n, d, rps[d]);
            v.live.set(Figure::BaselineRps, 200.2);
            v.live.set(Figure::Amplification, amps[d]);
            v.live.set(
                Figure::ModelAmplification,
                [1.0, 2.0, 4.0, 8.0, 8.0, 8.0, 8.0][d],
            );
            v.history = step(60, 15, 1.0, v.live[Figure::ModelAmplification]);
            v
        })
        .collect();
    let mut s = base("uber-chain", 45.0, Preset::Retry, services);
    // 30 s of storm at 200 roots per second.
    let roots = 6000u64;
    for (i, v) in s.services.iter_mut().enumerate() {
        match i {
            0..=2 => {
                let k = 1u64 << i; // calls per root into this service
                v.live.set(Figure::ErrorRate, 1.0);
                v.state = ServiceState::Propagating;
                set3(&mut v.total, Figure::ClaimsReturnedTrue, [0, roots * k, 0]);
                set3(&mut v.total, Figure::ClaimsSeenTrue, [0, roots * 2 * k, 0]);
                v.total.set(Figure::RetriesSent, (roots * k) as f64);
                v.retry_rps = 200.0 * k as f64;
            }
            3 => {
                v.live.set(Figure::ErrorRate, 1.0);
                v.state = ServiceState::Owner;
                set3(&mut v.total, Figure::ClaimsReturnedTrue, [roots * 8, 0, 0]);
                set3(&mut v.total, Figure::OwnErrors, [roots * 8, 0, 0]);
            }
            _ => {}
        }
    }
    s.state.faults[3] = d_fault();
    set3(
        &mut s.services[2].total,
        Figure::ClaimsSeenTrue,
        [roots * 8, 0, 0],
    );
    s.edges = chain_edges(
        7,
        &[200.0, 400.0, 800.0],
        &[400.4, 800.6, 1600.8, 1600.0, 1600.0, 1600.0],
    );
    s.root = root(0.0, 20.2, 25.1, 9000, 6000);
    s.root.availability_history = step(60, 15, 1.0, 0.0);
    s.root.rps_history = step(60, 0, 200.0, 200.0);
    s.radius_max = 3;
    s.radius_mean = 3.0;
    s.radius_model = 3;
    s.radius_static = 6;
    s.events = vec![preset_event(8.2, Preset::Retry), d_fails_event(15.0)];
    s
}

/// The same run 15 s after `4` switched to `ownership`: only C retries D,
/// within the budget; B suppresses; D and below carry 1.1×.
fn uber_chain_ownership_built() -> Snapshot {
    let mut s = uber_chain_retry();
    s.t = Duration::from_secs(60);
    s.state.policy = policy(Preset::Ownership);
    let amps = [1.0, 1.0, 1.0, 1.1, 1.098, 1.098, 1.098];
    let models = [1.0, 1.0, 1.0, 1.1, 1.1, 1.1, 1.1];
    for (i, v) in s.services.iter_mut().enumerate() {
        v.live.set(Figure::Rps, 200.1 * amps[i]);
        v.live.set(Figure::BaselineRps, 200.1);
        v.live.set(Figure::Amplification, amps[i]);
        v.live.set(Figure::ModelAmplification, models[i]);
        let storm = step(60, 0, 1.0, [1.0, 2.0, 4.0, 8.0, 8.0, 8.0, 8.0][i]);
        v.history = storm[..45].to_vec();
        v.history.extend(step(15, 0, 1.0, models[i]));
    }
    // Counters since the start: the storm's 30 s plus 15 s of ownership.
    let (roots, own) = (6000u64, 3000u64);
    set3(
        &mut s.services[0].total,
        Figure::ClaimsReturnedTrue,
        [0, roots + own, 0],
    );
    set3(
        &mut s.services[0].total,
        Figure::ClaimsSeenTrue,
        [0, 2 * roots + own, 0],
    );
    s.services[0].total.set(Figure::RetriesSent, (roots) as f64);
    s.services[0]
        .total
        .set(Figure::RetriesSuppressed, (own) as f64);
    set3(
        &mut s.services[1].total,
        Figure::ClaimsReturnedTrue,
        [0, 2 * roots + own, 0],
    );
    set3(
        &mut s.services[1].total,
        Figure::ClaimsSeenTrue,
        [0, 4 * roots + own, 0],
    );
    s.services[1]
        .total
        .set(Figure::RetriesSent, (2 * roots) as f64);
    s.services[1]
        .total
        .set(Figure::RetriesSuppressed, (own) as f64);
    set3(
        &mut s.services[2].total,
        Figure::ClaimsReturnedTrue,
        [0, 4 * roots + own, 0],
    );
    set3(
        &mut s.services[2].total,
        Figure::ClaimsSeenTrue,
        [8 * roots + own + 300, 0, 0],
    );
    s.services[2]
        .total
        .set(Figure::RetriesSent, (4 * roots + 300) as f64);
    s.services[2]
        .total
        .set(Figure::BudgetDenied, (own - 300) as f64);
    set3(
        &mut s.services[3].total,
        Figure::ClaimsReturnedTrue,
        [8 * roots + own + 300, 0, 0],
    );
    set3(
        &mut s.services[3].total,
        Figure::OwnErrors,
        [8 * roots + own + 300, 0, 0],
    );
    for v in &mut s.services {
        v.retry_rps = 0.0;
    }
    s.services[2].retry_rps = 20.0;
    s.edges = chain_edges(
        7,
        &[0.0, 0.0, 20.0],
        &[200.1, 200.1, 220.1, 220.0, 219.8, 219.8],
    );
    s.root = root(0.0, 3.1, 6.0, 12000, 9000);
    s.root.availability_history = step(60, 0, 0.0, 0.0);
    s.root.rps_history = step(60, 0, 200.0, 200.0);
    s.radius_max = 1;
    s.radius_mean = 1.0;
    s.radius_model = 1;
    s.radius_static = 1;
    s.spurious_avoided = 2 * own;
    s.events.push(preset_event(45.0, Preset::Ownership));
    s
}

/// deep-chain: 25 services under `ownership`, the deepest three failing
/// now and then (S23, S24 5%, S25 20%).
fn deep_chain_built() -> Snapshot {
    let services: Vec<ServiceView> = (0..25)
        .map(|i| {
            let mut v = svc(&format!("S{:02}", i + 1), i, 200.0);
            v.history = step(60, 0, 1.0, 1.0);
            if i < 22 {
                v.live.set(Figure::ErrorRate, 0.142);
                v.state = ServiceState::Propagating;
                set3(&mut v.total, Figure::ClaimsReturnedTrue, [0, 4260, 0]);
                set3(&mut v.total, Figure::ClaimsSeenTrue, [0, 4260, 0]);
                v.total.set(
                    Figure::RetriesSuppressed,
                    (if i == 21 { 4260 } else { 0 }) as f64,
                );
            }
            v
        })
        .collect();
    let mut s = base("deep-chain", 30.0, Preset::Ownership, services);
    let own = [
        (22usize, 0.05, 1.0, 0.190),
        (23, 0.05, 1.05, 0.151),
        (24, 0.2, 1.2, 0.2),
    ];
    for (i, rate, amp, err) in own {
        s.state.faults[i] = Fault {
            error_rate: rate,
            ..Fault::default()
        };
        let v = &mut s.services[i];
        v.live.set(Figure::Amplification, amp + 0.003);
        v.live.set(Figure::ModelAmplification, amp);
        v.live.set(Figure::Rps, 200.0 * (amp + 0.003));
        v.live.set(Figure::ErrorRate, err);
        v.state = ServiceState::Owner;
        v.history = step(30, 0, amp, amp);
    }
    s.services[23].total.set(Figure::RetriesSent, (1800) as f64);
    s.services[23].total.set(Figure::BudgetDenied, (600) as f64);
    s.services[23].retry_rps = 40.0;
    set3(
        &mut s.services[24].total,
        Figure::ClaimsReturnedTrue,
        [1200, 0, 0],
    );
    s.edges = chain_edges(25, &[], &[]);
    s.edges[22].retry_rps = 10.0;
    s.edges[23].retry_rps = 40.0;
    s.root = root(0.858, 2.4, 9.8, 6000, 852);
    s.root.availability_history = step(30, 0, 0.858, 0.858);
    s.root.rps_history = step(30, 0, 200.0, 200.0);
    s.radius_max = 1;
    s.radius_mean = 1.0;
    s.radius_model = 1;
    s.radius_static = 1;
    s.spurious_avoided = 4260;
    s
}

/// fanout: a DAG with a sequential caller, a parallel fan-out and a
/// fail-open dependency; shard2 failing under `ownership`.
fn fanout_built() -> Snapshot {
    let spec: [(&str, usize, f64); 9] = [
        ("gateway", 0, 200.0),
        ("auth", 1, 200.0),
        ("cart", 1, 400.0),
        ("inventory", 2, 400.0),
        ("recs", 2, 400.0),
        ("search", 1, 200.0),
        ("shard1", 2, 200.0),
        ("shard2", 2, 220.0),
        ("shard3", 2, 200.0),
    ];
    let services: Vec<ServiceView> = spec
        .iter()
        .map(|&(n, d, rps)| {
            let mut v = svc(n, d, rps);
            v.live
                .set(Figure::BaselineRps, if rps == 220.0 { 200.0 } else { rps });
            v.live
                .set(Figure::Amplification, rps / v.live[Figure::BaselineRps]);
            v.live.set(
                Figure::ModelAmplification,
                if rps == 220.0 { 1.1 } else { 1.0 },
            );
            v
        })
        .collect();
    let mut s = base("fanout", 20.0, Preset::Ownership, services);
    let edges = [
        (0, 1),
        (0, 2),
        (0, 5),
        (2, 3),
        (2, 4),
        (5, 6),
        (5, 7),
        (5, 8),
    ];
    s.edges = edges
        .iter()
        .map(|&(from, to)| EdgeView {
            from,
            to,
            attempt_rps: s.services[to].live[Figure::Rps],
            retry_rps: if to == 7 { 20.0 } else { 0.0 },
            budget: None,
            breaker: 0,
            outliers: vec![],
        })
        .collect();
    s.state.faults[4] = Fault {
        error_rate: 0.2,
        ..Fault::default()
    };
    s.services[4].live.set(Figure::ErrorRate, 0.2);
    s.services[4].state = ServiceState::Owner;
    s.state.faults[7] = d_fault();
    s.services[7].live.set(Figure::ErrorRate, 1.0);
    s.services[7].state = ServiceState::Owner;
    s.services[5].live.set(Figure::ErrorRate, 1.0);
    s.services[5].state = ServiceState::Propagating;
    s.services[5].total.set(Figure::RetriesSent, (400) as f64);
    s.services[5].retry_rps = 20.0;
    s.services[0].live.set(Figure::ErrorRate, 1.0);
    s.services[0].state = ServiceState::Propagating;
    s.services[0]
        .total
        .set(Figure::RetriesSuppressed, (4000) as f64);
    s.state.context_dropped[2] = true;
    s.services[2].state = ServiceState::ContextDropped;
    s.root = root(0.0, 4.2, 11.0, 4000, 4000);
    s
}

/// topologies/metastable.yaml in its metastable state under naive
/// `retry`: 42 s after a 3 s spike to 300 rps, back at 120 rps offered,
/// DB's 4 workers are all busy, its queue is full, A's 250 ms attempts
/// time out and are retried (3 per root request), DB sheds what its queue
/// cannot hold and finishes work nobody waits for. Goodput is near 0. The
/// recovery threshold is the model's, for the shipped file.
fn metastable_storm_built() -> Snapshot {
    let t = crate::topology::Topology::from_yaml(
        include_str!("../../../topologies/metastable.yaml"),
        "metastable.yaml",
    )
    .expect("the shipped topology is valid");
    let mut a = svc("A", 0, 120.0);
    let mut db = svc("DB", 1, 360.0);
    db.live.set(Figure::BaselineRps, 120.0);
    db.live.set(Figure::Amplification, 3.0);
    db.history = step(75, 31, 1.0, 3.0);
    a.history = step(75, 0, 1.0, 1.0);
    // A: every root request fails after three failed attempts.
    a.state = ServiceState::Propagating;
    a.live.set(Figure::ErrorRate, 1.0);
    a.live.set(Figure::LatencyMsP50, 502.0);
    a.live.set(Figure::LatencyMsP99, 754.0);
    a.retry_rps = 240.0;
    a.total.set(Figure::RetriesSent, 13_700.0);
    set3(&mut a.total, Figure::ClaimsReturnedTrue, [0, 6_900, 0]);
    set3(&mut a.total, Figure::ClaimsSeenTrue, [11_400, 0, 9_300]);
    // DB: 160 served a second, every answer too late; 200 shed.
    db.state = ServiceState::Shedding;
    db.live.set(Figure::ErrorRate, 0.556);
    db.live.set(Figure::Utilisation, 1.0);
    db.live.set(Figure::QueueDepth, 1000.0);
    db.live.set(Figure::QueueDepthMax, 1000.0);
    db.live.set(Figure::InService, 4.0);
    db.live.set(Figure::CapacityRps, 160.0);
    db.live.set(Figure::Shed, 400.0);
    db.live.set(Figure::WorkWasted, 320.0);
    db.live.set(Figure::Timeouts, 320.0);
    db.live.set(Figure::LatencyMsP50, 6_280.0);
    db.live.set(Figure::LatencyMsP99, 6_410.0);
    db.total.set(Figure::Shed, 11_400.0);
    db.total.set(Figure::WorkWasted, 9_250.0);
    db.total.set(Figure::Timeouts, 9_300.0);
    set3(&mut db.total, Figure::ClaimsReturnedTrue, [11_400, 0, 0]);
    set3(&mut db.total, Figure::OwnErrors, [11_400, 0, 0]);
    let mut s = base("metastable", 75.0, Preset::Retry, vec![a, db]);
    s.state = LabState::of(&t);
    s.edges = chain_edges(2, &[240.0], &[360.0]);
    s.root = root(0.0, 502.0, 754.0, 9_000, 6_900);
    s.root.rps = 120.0;
    s.root.goodput_rps = 0.0;
    // 30 s at rest, the 3 s spike, then 42 s that never recover.
    let mut offered = step(30, 30, 120.0, 120.0);
    offered.extend([300.0, 300.0, 300.0]);
    offered.extend(step(42, 0, 120.0, 120.0));
    s.root.offered_history = offered.clone();
    s.root.rps_history = offered;
    let mut goodput = step(30, 30, 120.0, 120.0);
    goodput.extend([160.0, 41.0, 6.0]);
    goodput.extend([0.0; 42]);
    s.root.goodput_history = goodput;
    let mut avail = step(30, 30, 1.0, 1.0);
    avail.extend([0.62, 0.14, 0.02]);
    avail.extend([0.0; 42]);
    s.root.availability_history = avail;
    s.radius_max = 1;
    s.radius_mean = 1.0;
    s.radius_model = 1;
    s.recovery_threshold =
        crate::topology::model::capacity::capacity(&t, &t.policy).recovery_threshold;
    let rps = |t: f64, r: f64| event(t, Action::SetRps(r), &format!("entry rate {r:.0} rps"));
    s.events = vec![rps(30.0, 300.0), rps(33.0, 120.0)];
    s
}

/// The uber chain under retry, D given ten replicas of which replica 0
/// fails every request: the replicas panel's fixture.
fn uber_chain_replicas_built() -> Snapshot {
    let mut s = uber_chain_retry();
    if let Some(d) = s.services.iter_mut().find(|v| v.name == "D") {
        d.replicas = (0..10u32)
            .map(|r| crate::lab::replicas::ReplicaReport {
                replica: r,
                rps: if r == 1 { 80.0 } else { 40.0 },
                requests: if r == 1 { 160 } else { 80 },
                errors: if r == 0 { 80 } else { 0 },
                error_rate: if r == 0 { 1.0 } else { 0.0 },
                first_attempts: 80,
                retries: if r == 1 { 80 } else { 0 },
                retry_rps: if r == 1 { 40.0 } else { 0.0 },
                first_attempt_share: 0.1,
                ejections: 0,
                ejected_now: 0,
            })
            .collect();
    }
    s
}

/// [`uber_chain_replicas`] under outlier detection: C has ejected D's
/// bad replica twice and has it out now, so it got 1% of the first
/// attempts: the replicas panel's outlier columns.
pub fn uber_chain_outliers() -> Snapshot {
    let mut s = uber_chain_replicas();
    s.state.policy.outlier = Some(error_ownership::outlier::OutlierConfig {
        max_ejection_percent: 20.0,
        ..error_ownership::outlier::OutlierConfig::DEFAULT
    });
    if let Some(d) = s.services.iter_mut().find(|v| v.name == "D") {
        for r in &mut d.replicas {
            r.first_attempt_share = if r.replica == 0 { 0.01 } else { 0.11 };
            if r.replica == 0 {
                (r.ejections, r.ejected_now, r.rps, r.requests, r.errors) = (2, 1, 4.0, 8, 8);
            }
        }
    }
    s
}

/// Two roots, and a service C of two endpoints (SPEC section 11): the
/// roots panel and the expanded service.
fn multi_root_endpoints_built() -> Snapshot {
    let mut s = uber_chain_healthy();
    for (i, e) in [(2, "x"), (3, "y")] {
        s.services[i].name = format!("C/{e}");
        s.services[i].service = Some("C".into());
    }
    let root = |entry: &str, rps: f64, avail: f64, radius: u64, stat: usize| {
        crate::lab::roots::RootReport {
            entry: entry.into(),
            offered_rps: rps,
            sent: (rps * 2.0) as u64,
            requests: (rps * 2.0) as u64,
            errors: ((1.0 - avail) * rps * 2.0) as u64,
            availability: Some(avail),
            model_availability: avail,
            latency_ms: crate::lab::roots::Latency {
                p50: Some(1.2),
                p99: Some(4.5),
            },
            storm_radius: crate::lab::roots::Radius {
                max: radius,
                mean: radius as f64,
            },
            static_radius: stat,
        }
    };
    s.roots = vec![root("A", 150.0, 1.0, 0, 3), root("C/y", 50.0, 0.96, 1, 1)];
    s
}

/// What the lab derives from a window's counts, from the figures a
/// fixture sets by hand, over a 2-second window with no chance spread
/// beyond one request: the expected requests (baseline × 2 s), the
/// excess over baseline in those units, whether the measured
/// amplification differs from the model's by over 5%, and the ratio
/// withheld (NaN) below the lab's minimum count. A test that changes a
/// fixture's rates calls it again.
pub fn derive(s: &mut Snapshot) {
    use crate::lab::figures::MIN_EXPECTED_REQUESTS;
    for v in &mut s.services {
        let f = &mut v.live;
        let (rps, base) = (f[Figure::Rps], f[Figure::BaselineRps]);
        f.set(Figure::ExpectedRequests, base * 2.0);
        f.set(Figure::ExcessSigma, (rps - base) * 2.0);
        let (amp, model) = (f[Figure::Amplification], f[Figure::ModelAmplification]);
        let differs = model > 0.0 && (amp / model - 1.0).abs() > 0.05;
        f.set(Figure::ModelDiffers, f64::from(u8::from(differs)));
        if base > 0.0 && base * 2.0 < MIN_EXPECTED_REQUESTS {
            f.set(Figure::Amplification, f64::NAN);
            f.set(Figure::Requests, (rps * 2.0).round());
        }
    }
}

/// Each fixture, its figures derived from the others ([`derive`]).
macro_rules! derived {
    ($($name:ident = $built:ident),* $(,)?) => {$(
        #[doc = concat!("[`", stringify!($built), "`] with the figures derived from the others.")]
        pub fn $name() -> Snapshot {
            let mut s = $built();
            derive(&mut s);
            s
        }
    )*};
}

derived! {
    uber_chain_healthy = uber_chain_healthy_built,
    uber_chain_retry = uber_chain_retry_built,
    uber_chain_ownership = uber_chain_ownership_built,
    deep_chain = deep_chain_built,
    fanout = fanout_built,
    metastable_storm = metastable_storm_built,
    uber_chain_replicas = uber_chain_replicas_built,
    multi_root_endpoints = multi_root_endpoints_built,
}
