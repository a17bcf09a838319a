//! The validator's own tests: forms, defaults and each kind of refusal.

use super::*;
use crate::topology::check::render_check;
use crate::topology::Arrival;
use crate::topology::{BudgetSetting, PolicyFields, Preset};
use crate::topology::{Closed, DEFAULT_THINK};
use error_ownership::{Attribution, DependencyMode};

fn ok(yaml: &str) -> Topology {
    from_yaml(yaml, "t.yaml").unwrap_or_else(|e| panic!("{e}"))
}

fn err(yaml: &str) -> TopologyError {
    match from_yaml(yaml, "t.yaml") {
        Ok(t) => panic!("accepted: {t:?}"),
        Err(e) => e,
    }
}

#[test]
fn the_spec_example() {
    let text = std::fs::read_to_string(
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("topologies/uber-chain.yaml"),
    )
    .unwrap();
    let t = ok(&text);
    assert_eq!(t.name, "uber-chain");
    assert_eq!(t.entry().name, "A");
    assert_eq!(t.load.rps, 200.0);
    assert_eq!(t.load.arrival, Arrival::Constant);
    assert_eq!(t.policy.preset(), Some(Preset::Ownership));
    assert_eq!((t.policy.attempts, t.policy.budget), (2, Some(0.1)));
    assert_eq!(t.policy.ttl, Duration::from_secs(10));
    assert_eq!(t.policy.timeout, Duration::from_secs(1));
    assert_eq!(t.ownership, OwnershipSettings::default());
    let depths: Vec<usize> = t.services.iter().map(|s| s.depth).collect();
    assert_eq!(depths, [0, 1, 2, 3, 4, 5, 6]);
    assert!(t.services.iter().all(|s| s.multiplicity == 1.0));
    let d = &t.services[3];
    assert_eq!(d.fault.error_rate, 1.0);
    assert_eq!(d.fault.phase, super::super::Phase::After);
    assert_eq!(t.services[6].work, Duration::from_millis(1));
    assert_eq!(t.edges.len(), 6);
    assert_eq!(t.max_depth(), 6);
}

#[test]
fn defaults_and_forms() {
    let t = ok("name: t\nownership: { header: X-Uber-Error-Claim, attribution: simple }\n\
                policy: { budget: off, ttl: 2, backoff: 1.5s }\n\
                services:\n  A:\n    calls:\n      - B\n      - { to: C, mode: fail-open, count: 3, policy: { attempts: 1, budget: false } }\n  B:\n  C: {}\n");
    assert_eq!(t.ownership.header, "x-uber-error-claim");
    assert_eq!(t.ownership.attribution, Attribution::Simple);
    assert_eq!(t.policy.budget, None);
    assert_eq!(t.policy.ttl, Duration::from_secs(2));
    assert_eq!(t.policy.backoff, Duration::from_millis(1500));
    assert_eq!(t.load.rps, DEFAULT_RPS);
    assert_eq!(t.services[0].calls, vec![0, 1]);
    let c = &t.edges[1];
    assert_eq!((c.from, c.to, c.count), (0, 2, 3));
    assert_eq!(c.mode, DependencyMode::FailOpen);
    assert_eq!(c.policy.attempts, Some(1));
    assert_eq!(c.policy.budget, Some(BudgetSetting::Off));
    assert!(t.edges[0].policy.is_empty());
    assert_eq!(t.services[2].multiplicity, 3.0);
    assert!(t.services[1].ownership);
    assert_eq!(t.policy.for_edge(&c.policy).attempts, 1);
}

#[test]
fn depth_is_the_longest_path_and_multiplicity_counts_paths() {
    let t = ok("name: t\nservices:\n  A: { calls: [B, { to: C, count: 2 }, D] }\n  B: { calls: [D] }\n  C: { calls: [D] }\n  D: {}\n");
    let d = &t.services[3];
    assert_eq!(d.depth, 2);
    assert_eq!(d.multiplicity, 1.0 + 1.0 + 2.0);
    for e in &t.edges {
        assert!(t.services[e.to].depth > t.services[e.from].depth);
    }
}

#[test]
fn an_explicit_entry_leaves_others_unreached() {
    let t = ok("name: t\nload: { entry: B }\nservices:\n  A: { calls: [B] }\n  B: { calls: [C] }\n  C: {}\n  Z: { calls: [C] }\n");
    assert_eq!(t.entry().name, "B");
    let m: Vec<f64> = t.services.iter().map(|s| s.multiplicity).collect();
    assert_eq!(m, [0.0, 1.0, 1.0, 0.0]);
    assert_eq!((t.services[1].depth, t.services[2].depth), (0, 1));
    assert!(render_check(&t).contains("not reached from the entry"));
}

#[test]
fn graph_errors_are_the_right_kind() {
    assert!(matches!(
        err("name: t\nservices:\n  A: { calls: [B] }\n  B: { calls: [C] }\n  C: { calls: [A] }\n  Z: { calls: [A] }\n"),
        TopologyError::Cycle { ref cycle, .. } if cycle == "A -> B -> C -> A"
    ));
    assert!(matches!(
        err("name: t\nservices:\n  A: { calls: [B] }\n  B: {}\n  A: {}\n"),
        TopologyError::DuplicateService { ref service, at: Location { line: Some(5), .. }, .. } if service == "A"
    ));
    assert!(matches!(
        err("name: t\nservices:\n  A: { calls: [A] }\n"),
        TopologyError::SelfCall { .. }
    ));
    assert!(matches!(
        err("name: t\nservices:\n  A: {}\n  B: {}\n"),
        TopologyError::AmbiguousEntry { .. }
    ));
    assert!(matches!(
        err("name: t\nservices:\n"),
        TopologyError::EmptyFleet { .. }
    ));
    assert!(matches!(err("   \n"), TopologyError::Empty { .. }));
    assert!(matches!(err("~\n"), TopologyError::Empty { .. }));
    assert!(matches!(err("42\n"), TopologyError::NotAMap { .. }));
    assert!(matches!(
        err("[a, b]\n"),
        TopologyError::NotAMap {
            found: "a list",
            ..
        }
    ));
    let e = err("name: t\nservices:\n  A: { calls: [B] }\n  B: { fault: { error_rate: 2 } }\n");
    assert_eq!(e.service(), Some("B"));
    assert!(matches!(
        e,
        TopologyError::Yaml {
            at: Location {
                line: Some(4),
                column: Some(29),
                ..
            },
            ..
        }
    ));
}

#[test]
fn flow_style_services_still_report_the_file() {
    let e = err("name: t\nservices: { A: { calls: [X] } }\n");
    assert!(e.to_string().starts_with("t.yaml"), "{e}");
    assert!(e.to_string().contains(r#"calls "X""#), "{e}");
}

#[test]
fn cycles_start_at_the_first_listed_service() {
    let t = ok("name: t\nservices:\n  A: { calls: [B] }\n  B: {}\n");
    let mut services = t.services.clone();
    let mut edges = t.edges.clone();
    edges.push(Edge {
        from: 1,
        to: 0,
        mode: DependencyMode::FailClose,
        count: 1,
        p: 1.0,
        policy: PolicyFields::default(),
        source: None,
    });
    services[1].calls.push(1);
    assert_eq!(
        super::super::topological_order(&services, &edges),
        Err(vec![0, 1])
    );
}

#[test]
fn scenario_is_kept_raw() {
    let t = ok("name: t\nservices:\n  A: {}\nscenario:\n  duration: 30s\n  steps: []\n");
    let s = t.scenario.expect("scenario");
    assert_eq!(s["duration"].as_str(), Some("30s"));
}

#[test]
fn overload_keys_and_their_defaults() {
    let t = ok("name: t\nload: { timeout: 4s }\npolicy: { timeout: 250ms, attempts: 3, deadline: propagate }\n\
                services:\n  A:\n    calls:\n      - { to: DB, policy: { deadline: off } }\n      - C\n  \
                DB: { workers: 4, work: 25ms, cancel: true }\n  C: { workers: 1, queue: 0 }\n");
    assert_eq!(t.load.timeout, Some(Duration::from_secs(4)));
    assert!(t.policy.deadline);
    assert_eq!(t.edges[0].policy.deadline, Some(false));
    assert!(!t.policy.for_edge(&t.edges[0].policy).deadline_propagate);
    assert!(
        t.policy
            .for_edge(&PolicyFields::default())
            .deadline_propagate
    );
    let a = &t.services[0];
    assert_eq!((a.workers, a.queue, a.cancel), (None, DEFAULT_QUEUE, false));
    let db = &t.services[1];
    assert_eq!((db.workers, db.queue, db.cancel), (Some(4), 1000, true));
    assert_eq!(db.work, Duration::from_millis(25));
    assert_eq!((t.services[2].workers, t.services[2].queue), (Some(1), 0));
    // Without the keys, nothing changes.
    let t = ok("name: t\nservices:\n  A: {}\n");
    assert_eq!(t.load.timeout, None);
    assert!(!t.policy.deadline);
    // A preset switch keeps the deadline setting.
    let mut p = ok("name: t\npolicy: { deadline: propagate }\nservices:\n  A: {}\n").policy;
    p.apply_preset(Preset::None);
    assert!(p.deadline);
}

#[test]
fn overload_keys_refused_with_the_reason() {
    let yaml = |l: &str| match err(l) {
        e @ TopologyError::Yaml { .. } => e.to_string(),
        e => panic!("not a parser error: {e:?}"),
    };
    let m = yaml("name: t\nservices:\n  A: { workers: 0 }\n");
    assert!(
        m.starts_with("t.yaml:3:17: ") && m.contains("at least 1"),
        "{m}"
    );
    let m = yaml("name: t\nservices:\n  A: { workers: 2.5 }\n");
    assert!(m.contains("whole number"), "{m}");
    let m = yaml("name: t\nservices:\n  A: { workers: 2, queue: -1 }\n");
    assert!(
        m.starts_with("t.yaml:3:27: ") && m.contains("from 0 to 1000000"),
        "{m}"
    );
    let m = yaml("name: t\nservices:\n  A: { workers: 2, queue: 5000000 }\n");
    assert!(m.contains("services.A.queue"), "{m}");
    let m = yaml("name: t\nload: { timeout: 0s }\nservices:\n  A: {}\n");
    assert!(
        m.starts_with("t.yaml:2:18: ") && m.contains("more than 0"),
        "{m}"
    );
    let m = yaml("name: t\npolicy: { deadline: on }\nservices:\n  A: {}\n");
    assert!(m.contains("`propagate` or `off`"), "{m}");

    let e = err("name: t\nservices:\n  A:\n    work: 5ms\n    queue: 10\n");
    assert_eq!(e.service(), Some("A"));
    assert!(
        matches!(
            e,
            TopologyError::NeedsWorkers {
                key: "queue",
                at: Location {
                    line: Some(5),
                    column: Some(5),
                    ..
                },
                ..
            }
        ),
        "{e:?}"
    );
    let e = err("name: t\nservices:\n  A: { cancel: false }\n");
    assert!(
        matches!(e, TopologyError::NeedsWorkers { key: "cancel", .. }),
        "{e}"
    );
    assert!(e.to_string().contains("nothing is queued"), "{e}");
    let e = err("name: t\nservices:\n  A: { calls: [B] }\n  B: { url: \"http://127.0.0.1:9\", workers: 2 }\n");
    assert!(
        matches!(
            e,
            TopologyError::UrlWithWorkers {
                at: Location {
                    line: Some(4),
                    column: Some(35),
                    ..
                },
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn an_attempt_timeout_the_user_never_waits_out_is_refused() {
    // Written on the fleet policy: points there.
    let e = err("name: t\nload:\n  timeout: 2s\npolicy:\n  attempts: 3\n  timeout: 2s\nservices:\n  A: { calls: [B] }\n  B: {}\n");
    assert!(
        matches!(
            e,
            TopologyError::AttemptOutlivesUser {
                at: Location {
                    line: Some(6),
                    column: Some(3),
                    ..
                },
                attempts: 3,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains("A -> B is 2s, not shorter than load.timeout 2s"),
        "{e}"
    );
    // The default 1s, unwritten: points at load.timeout.
    let e = err("name: t\nload: { timeout: 500ms }\nservices:\n  A: { calls: [B] }\n  B: {}\n");
    assert!(e.to_string().starts_with("t.yaml:2:9: "), "{e}");
    assert!(e.to_string().contains("1s (the default)"), "{e}");
    // On one edge's override: points at it.
    let e = err("name: t\nload: { timeout: 3s }\nservices:\n  A:\n    calls:\n      - { to: B, policy: { timeout: 5s } }\n  B: {}\n");
    assert!(e.to_string().starts_with("t.yaml:6:28: "), "{e}");
    // No retries (the mode, or one attempt), or a shorter timeout: fine.
    ok("name: t\nload: { timeout: 500ms }\npolicy: { preset: none }\nservices:\n  A: { calls: [B] }\n  B: {}\n");
    ok("name: t\nload: { timeout: 500ms }\npolicy: { attempts: 1 }\nservices:\n  A: { calls: [B] }\n  B: {}\n");
    ok("name: t\nload: { timeout: 5s }\nservices:\n  A: { calls: [B] }\n  B: {}\n");
}

#[test]
fn did_you_mean_names_a_near_miss() {
    assert_eq!(did_you_mean("X", &["A", "B"]), "");
    assert_eq!(
        did_you_mean("carts", &["cart"]),
        r#" (did you mean "cart"?)"#
    );
}

#[test]
fn closed_loop_roots_offer_clients_over_think_and_mix_with_open_ones() {
    let t = ok("name: t\nload: { clients: 50, think: 250ms }\nservices:\n  A: {}\n");
    let root = t.load.roots[0];
    assert_eq!(
        root.closed,
        Some(Closed {
            clients: 50,
            think: Duration::from_millis(250)
        })
    );
    assert_eq!((t.load.rps, root.rps), (200.0, 200.0));
    // The default think time, and `load.think` as every entry's default.
    let t = ok("name: t\nload: { clients: 5 }\nservices:\n  A: {}\n");
    assert_eq!(t.load.roots[0].closed.unwrap().think, DEFAULT_THINK);
    let t = ok("name: t\nload:\n  think: 2s\n  entries:\n    - { entry: A, clients: 10 }\n    - { entry: B, rps: 7 }\nservices:\n  A: { calls: [C] }\n  B: { calls: [C] }\n  C: {}\n");
    assert_eq!(
        t.load.roots[0].closed,
        Some(Closed {
            clients: 10,
            think: Duration::from_secs(2)
        })
    );
    assert_eq!((t.load.roots[0].rps, t.load.roots[1].rps), (5.0, 7.0));
    assert_eq!(t.load.roots[1].closed, None);
    let check = render_check(&ok(
        "name: t\nload: { clients: 50, think: 250ms }\nservices:\n  A: {}\n",
    ));
    assert!(
        check.contains("entry      A with 50 closed-loop clients, each thinking 250ms")
            && check.contains("at most 200 rps"),
        "{check}"
    );
    // `load.clients` beside `entries` is refused: each root has its own.
    let e =
        err("name: t\nload:\n  clients: 3\n  entries:\n    - { entry: A }\nservices:\n  A: {}\n");
    assert!(
        e.to_string().contains("give each root its own `clients:`"),
        "{e}"
    );
}
