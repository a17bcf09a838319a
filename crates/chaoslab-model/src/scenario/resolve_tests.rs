//! Tests of `scenario/resolve.rs`.
use super::super::fixtures::{at, err, ok};
use crate::lab::Action;
use crate::topology::{Fault, Phase};
use std::time::Duration;

#[test]
fn fail_merges_into_the_fault_as_it_stands_then() {
    // Written out of order: the timeline is sorted before merging.
    let s = ok("steps:
  - at: 4s
    fail: { service: C, latency: 20ms }
  - at: 2s
    fail: { service: C, error_rate: 0.5, phase: before }
  - at: 6s
    down: C
  - at: 7s
    up: C
  - at: 8s
    heal: C
");
    let faults: Vec<Fault> = s
        .steps
        .iter()
        .map(|s| match &s.action {
            Action::SetFault { service: 2, fault } => fault.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    let half = Fault {
        error_rate: 0.5,
        phase: Phase::Before,
        ..Fault::default()
    };
    let slow = Fault {
        latency: Duration::from_millis(20),
        ..half.clone()
    };
    assert_eq!(
        faults,
        vec![
            half.clone(),
            slow.clone(),
            Fault {
                down: true,
                ..slow.clone()
            },
            slow,
            Fault {
                phase: Phase::Before,
                ..Fault::default()
            }
        ]
    );
    assert_eq!(s.steps[0].entry, "steps[1]");
    assert_eq!(s.steps[0].source.line, Some(4));
}

#[test]
fn unknown_service_names_the_line_and_the_services() {
    let m = err("duration: 10s\nsteps:\n  - at: 1s\n    heal: D\n  - at: 2s\n    fail: { service: X, error_rate: 1 }\n");
    at(
        &m,
        6,
        "steps[1].fail: there is no service \"X\" in topology chain (services: A, B, C, D)",
    );
    assert!(m.starts_with("s.yaml:6:22:"), "{m}");
    let m = err("expect:\n  - during: 1s..2s\n    service: Q\n    rps: { min: 1 }\n");
    at(&m, 3, "expect[0].service: there is no service \"Q\"");
    let m = err("steps:\n  - at: 1s\n    drop_context: Z\n");
    at(&m, 3, "steps[0].drop_context");
}

fn capacity() -> crate::topology::Topology {
    crate::topology::Topology::from_yaml(
            "name: cap\nservices:\n  A: { calls: [DB, Ext] }\n  DB: { workers: 4, work: 25ms }\n  Ext: { url: \"http://127.0.0.1:9\" }\n",
            "cap.yaml",
        )
        .unwrap()
}

fn on_capacity(yaml: &str) -> Result<super::super::Scenario, String> {
    super::super::Scenario::from_yaml(yaml, "s.yaml", &capacity()).map_err(|e| e.to_string())
}

#[test]
fn set_changes_the_resources_given() {
    let s = on_capacity(
            "steps:\n  - { at: 1s, set: { service: DB, workers: 1 } }\n  - { at: 2s, set: { service: DB, work: 50ms, queue: 10 } }\n  - { at: 3s, set: { service: A, work: 5ms } }\n",
        )
        .unwrap();
    let actions: Vec<Action> = s.steps.into_iter().map(|s| s.action).collect();
    assert_eq!(
        actions,
        vec![
            Action::Set {
                service: 1,
                workers: Some(1),
                work: None,
                queue: None
            },
            Action::Set {
                service: 1,
                workers: None,
                work: Some(Duration::from_millis(50)),
                queue: Some(10)
            },
            Action::Set {
                service: 0,
                workers: None,
                work: Some(Duration::from_millis(5)),
                queue: None
            },
        ]
    );
}

#[test]
fn set_is_refused_where_written_naming_the_service() {
    let bad = |yaml: &str, line: u32, text: &str| {
        let m = on_capacity(yaml).expect_err("refused");
        at(&m, line, text);
    };
    bad(
        "steps:\n  - at: 1s\n    set: { service: DX, workers: 2 }\n",
        3,
        "steps[0].set: there is no service \"DX\" in topology cap (services: A, DB, Ext)",
    );
    bad(
        "steps:\n  - at: 1s\n    set: { service: DB, workers: 0 }\n",
        3,
        "workers must be at least 1",
    );
    bad(
        "steps:\n  - at: 1s\n    set: { service: DB, workers: 5000000 }\n",
        3,
        "workers",
    );
    bad(
        "steps:\n  - at: 1s\n    set: { service: DB, queue: -1 }\n",
        3,
        "queue",
    );
    bad(
        "steps:\n  - at: 1s\n    set: { service: DB, queue: 2000000 }\n",
        3,
        "queue",
    );
    bad(
        "steps:\n  - at: 1s\n    set: { service: DB, work: -5ms }\n",
        3,
        "negative",
    );
    bad(
            "steps:\n  - at: 1s\n    set: { service: DB }\n",
            3,
            "steps[0].set: service \"DB\" is given nothing to change: give `set:` workers, work or queue",
        );
    bad(
        "steps:\n  - at: 1s\n    set: { service: DB, worker: 2 }\n",
        3,
        "unknown field `worker`",
    );
    bad(
            "steps:\n  - at: 1s\n    set:\n      service: A\n      work: 1ms\n      workers: 2\n",
            6,
            "steps[0].set: service \"A\" has no `workers` in the topology, so it has no workers to change",
        );
    bad(
        "steps:\n  - at: 1s\n    set: { service: A, queue: 2 }\n",
        3,
        "so it has no queue to change",
    );
    bad(
        "steps:\n  - at: 1s\n    set: { service: Ext, work: 5ms }\n",
        3,
        "steps[0].set: service \"Ext\" has a url, so it runs outside the fleet",
    );
    let m = on_capacity("steps:\n  - at: 1s\n    set: { service: Ext, work: 5ms }\n").unwrap_err();
    assert!(m.starts_with("s.yaml:3:21:"), "{m}");
}

#[test]
fn unknown_figure_is_refused_with_the_list() {
    let m = err("expect:\n  - during: 1s..2s\n    service: D\n    amplificaton: { max: 1 }\n");
    at(
            &m,
            4,
            "expect[0]: unknown figure `amplificaton` (did you mean `amplification`?); per-service figures",
        );
    assert!(m.starts_with("s.yaml:4:5:"), "{m}");
    assert!(m.contains("fleet figures are root_rps, offered_rps"), "{m}");
    let m = err("expect:\n  - during: 1s..2s\n    happiness: { max: 1 }\n");
    at(&m, 3, "unknown figure `happiness`; per-service");
}

#[test]
fn figures_and_services_must_agree() {
    let m = err("expect:\n  - during: 1s..2s\n    amplification: { max: 1 }\n");
    at(
        &m,
        3,
        "expect[0]: `amplification` is a per-service figure: say which service",
    );
    let m = err("expect:\n  - during: 1s..2s\n    service: D\n    storm_radius: { max: 1 }\n");
    at(
        &m,
        4,
        "`storm_radius` is a fleet figure: it takes no `service:` (here `D`)",
    );
    let m = err("expect:\n  - during: 1s..2s\n    service: D\n");
    at(&m, 2, "an expectation needs a figure");
    let m = err("expect:\n  - service: D\n    rps: { min: 1 }\n");
    at(&m, 2, "needs `during: FROM..TO`");
}

/// A service with endpoints: `fail` on the service is on every
/// endpoint, on `S/E` on that one; `down` and an expectation need the
/// service and an endpoint respectively.
#[test]
fn steps_name_a_service_or_one_of_its_endpoints() {
    let t = crate::topology::Topology::from_yaml(
            "name: ep\nload: { entry: A/x }\nservices:\n  A:\n    endpoints:\n      x: { calls: [A/y] }\n      y: {}\n",
            "t.yaml",
        )
        .unwrap();
    let run = |yaml: &str| super::super::Scenario::from_yaml(yaml, "s.yaml", &t);
    let s = run("steps:\n  - { at: 1s, fail: { service: A/y, error_rate: 0.5 } }\n  - { at: 2s, fail: A }\n").unwrap();
    let faults: Vec<(usize, Option<String>)> = s
        .steps
        .iter()
        .map(|s| match &s.action {
            Action::SetFault { service, fault } => (*service, fault.endpoint.clone()),
            a => panic!("{a:?}"),
        })
        .collect();
    assert_eq!(faults, [(1, Some("y".into())), (0, None)]);
    let m = run("steps:\n  - { at: 1s, down: A/y }\n")
        .unwrap_err()
        .to_string();
    assert!(m.contains("is an endpoint, and `down` opens or closes the listener all of \"A\"'s endpoints share"), "{m}");
    let m = run("expect:\n  - { during: 1s..2s, service: A, amplification: { max: 2 } }\n")
        .unwrap_err()
        .to_string();
    assert!(
        m.contains("declares endpoints, each with figures of its own: name one (A/x, A/y)"),
        "{m}"
    );
    assert!(
        run("expect:\n  - { during: 1s..2s, service: A/y, amplification: { max: 2 } }\n").is_ok()
    );
}
