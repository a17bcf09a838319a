use super::fixtures::{at, chain, err, ok};
use super::*;
use crate::topology::{Fault, Phase, PolicyFields, Preset};

const SPEC_EXAMPLE: &str = "duration: 30s
steps:                                   # applied at their time, in order
  - at: 5s
    fail: { service: D, error_rate: 1.0 }      # any fault keys
  - at: 10s
    policy: budget                       # a preset, or a map of policy fields
  - at: 15s
    drop_context: C                      # restore_context: C undoes it
  - at: 20s
    heal: D                              # clears D's fault
  - at: 22s
    rps: 400
expect:                                  # checked over a window of the run
  - during: 8s..10s
    service: D
    amplification: { max: 1.15 }         # any per-service figure of the report
  - during: 3s..5s
    service: D
    amplification: { approx: 8, tolerance: 0.05 }   # relative tolerance
  - during: 12s..15s
    storm_radius: { max: 1 }
  - during: 25s..30s
    root_availability: { min: 0.99 }
";

#[test]
fn the_spec_example_parses_to_absolute_actions() {
    let s = ok(SPEC_EXAMPLE);
    assert_eq!(s.duration, Some(Duration::from_secs(30)));
    let d = 3;
    let failing = Fault {
        error_rate: 1.0,
        phase: Phase::Before,
        status: 503,
        ..Fault::default()
    };
    let steps: Vec<(u64, Action)> = s
        .steps
        .iter()
        .map(|s| (s.at.as_secs(), s.action.clone()))
        .collect();
    assert_eq!(
        steps,
        vec![
            (
                5,
                Action::SetFault {
                    service: d,
                    fault: failing.clone()
                }
            ),
            (
                10,
                Action::Policy(PolicyFields {
                    preset: Some(Preset::Budget),
                    ..Default::default()
                })
            ),
            (
                15,
                Action::SetContextDropped {
                    service: 2,
                    dropped: true
                }
            ),
            (
                20,
                Action::SetFault {
                    service: d,
                    // Phase and status stay for a later `fail`.
                    fault: Fault {
                        error_rate: 0.0,
                        ..failing
                    }
                }
            ),
            (22, Action::SetRps(400.0)),
        ]
    );
    assert_eq!(s.steps[0].source.line, Some(3));
    let e: Vec<String> = s.expectations.iter().map(Expectation::what).collect();
    assert_eq!(
        e,
        vec![
            "D amplification <= 1.15",
            "D amplification ≈ 8 ± 5%",
            "storm_radius <= 1",
            "root_availability >= 0.99"
        ]
    );
    assert_eq!(s.expectations[1].service, Some(d));
    assert_eq!(s.expectations[1].bound.approx, Some((8.0, 0.05)));
    assert_eq!(s.expectations[1].source.line, Some(19));
    assert_eq!(
        s.expectations[3].window,
        Window {
            from: Duration::from_secs(25),
            to: Duration::from_secs(30)
        }
    );
}

#[test]
fn steps_at_zero_start_the_run_and_the_rest_wait_for_the_warmup() {
    let s = ok("steps:\n  - at: 0s\n    heal: D\n  - at: 3s\n    rps: 50\n");
    assert_eq!(s.initial_actions().len(), 1);
    let plan = s.plan_steps(Duration::from_secs(2));
    assert_eq!(plan[0].0, Duration::ZERO);
    assert_eq!(plan[1].0, Duration::from_secs(5));
}

#[test]
fn captions_ride_on_steps_or_alone_and_are_checked() {
    let s = ok("steps:\n  - at: 0s\n    heal: D\n    say: Healthy.\n  - at: 3s\n    say: |\n      Two lines\n      become one.\n");
    assert_eq!(s.steps.len(), 1, "a caption alone changes nothing");
    assert_eq!(
        s.plan_captions(Duration::from_secs(2)),
        [
            (Duration::ZERO, "Healthy.".to_string()),
            (Duration::from_secs(5), "Two lines become one.".to_string())
        ]
    );
    assert!(err("steps:\n  - at: 3s\n    say: \"  \"\n").contains("`say:` is empty"));
    let long = "x".repeat(401);
    assert!(err(&format!("steps:\n  - at: 3s\n    say: {long}\n")).contains("a sentence or two"));
    assert!(err("steps:\n  - at: 3s\n").contains("or a caption (say:)"));
    let t = crate::topology::Topology::from_yaml("name: t\nservices:\n  A:\n", "t.yaml").unwrap();
    let e = actions_from_json(br#"{"rps": 5, "say": "hi"}"#, "POST /actions", &t, &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("an action sent to the API has none"), "{e}");
}

#[test]
fn fail_takes_the_command_lines_shorthand_and_says_what_it_takes() {
    let t = crate::topology::Topology::from_yaml(
        "name: t\nservices:\n  A: { calls: [D] }\n  D: {}\n",
        "t.yaml",
    )
    .unwrap();
    let faults = vec![Fault::default(); 2];
    let one = |body: &str| actions_from_json(body.as_bytes(), "POST /actions", &t, &faults);
    let rate_of = |a: &[Action]| match &a[0] {
        Action::SetFault { service, fault } => (*service, fault.error_rate, fault.down),
        other => panic!("{other:?}"),
    };
    assert_eq!(rate_of(&one(r#"{"fail": "D"}"#).unwrap()), (1, 1.0, false));
    assert_eq!(
        rate_of(&one(r#"{"fail": "D=0.3"}"#).unwrap()),
        (1, 0.3, false)
    );
    assert_eq!(
        rate_of(&one(r#"{"fail": {"service": "D", "error_rate": 0.3}}"#).unwrap()),
        (1, 0.3, false)
    );
    let e = one(r#"{"fail": 5}"#).unwrap_err().to_string();
    assert!(
            e.contains(r#"fail: give a service name such as "D", "D=0.3", or {"service": "D", "error_rate": 0.3}, not the number 5"#),
            "{e}"
        );
    assert!(!e.contains("FailSpec"), "{e}");
    let e = one(r#"{"fail": "D=2"}"#).unwrap_err().to_string();
    assert!(
        e.contains("error_rate must be a rate between 0 and 1"),
        "{e}"
    );
    let e = one(r#"{"fail": "X"}"#).unwrap_err().to_string();
    assert!(e.contains("no service \"X\""), "{e}");
    // A scenario file takes the same shorthand.
    let s = Scenario::from_yaml("steps:\n  - at: 1s\n    fail: D=0.5\n", "s.yaml", &t).unwrap();
    assert_eq!(s.steps.len(), 1);
}

#[test]
fn a_step_after_the_end_is_refused() {
    let m = err("duration: 10s\nsteps:\n  - at: 2s\n    heal: D\n  - at: 12s\n    heal: D\n");
    at(
        &m,
        5,
        "steps[1]: the step at 12s is after the end of the run: the duration is 10s",
    );
    // The command line's duration is checked too, and named.
    let s = ok("steps:\n  - at: 12s\n    heal: D\n");
    let m = s
        .check_duration(Duration::from_secs(10), true)
        .unwrap_err()
        .to_string();
    at(&m, 2, "the duration is 10s (set by --duration)");
    assert!(s.check_duration(Duration::from_secs(12), false).is_ok());
}

#[test]
fn a_window_after_the_end_is_refused() {
    let m = err("duration: 10s\nexpect:\n  - during: 1s..2s\n    root_rps: { min: 1 }\n  - during: 8s..11s\n    root_rps: { min: 1 }\n");
    at(
        &m,
        5,
        "expect[1]: the window 8s..11s is after the end of the run: the duration is 10s",
    );
}

#[test]
fn empty_and_unreadable_scenarios_are_refused() {
    assert!(err("# nothing\n").contains("s.yaml: the scenario is empty"));
    assert!(err("steps: []\n").contains("the scenario is empty"));
    let m = match Scenario::load(Path::new("/nonexistent/s.yaml"), &chain()) {
        Err(e) => e.to_string(),
        Ok(_) => panic!(),
    };
    assert!(
        m.starts_with("/nonexistent/s.yaml: cannot read the scenario"),
        "{m}"
    );
    let m = err("[1, 2]\n");
    at(&m, 1, "invalid type");
}

#[test]
fn a_topology_scenario_key_is_parsed_with_file_lines() {
    let text = "name: chain
services:
  A: { calls: [B] }
  B:
scenario:
  duration: 10s
  steps:
    - at: 1s
      fail: { service: B, error_rate: 1 }
  expect:
    - during: 2s..4s
      service: B
      amplification: { max: 1.2 }
    - during: 5s..12s
      root_rps: { min: 1 }
";
    let t = Topology::from_yaml(text, "t.yaml").unwrap();
    assert!(t.scenario.is_some());
    let m = Scenario::from_topology_yaml(text, "t.yaml", &t)
        .unwrap_err()
        .to_string();
    assert!(
        m.starts_with("t.yaml:14:7:") && m.contains("expect[1]: the window 5s..12s"),
        "{m}"
    );
    let fixed = text.replace("5s..12s", "5s..10s");
    let s = Scenario::from_topology_yaml(&fixed, "t.yaml", &t)
        .unwrap()
        .unwrap();
    assert_eq!(s.steps.len(), 1);
    assert_eq!(s.steps[0].source.line, Some(8));
    assert_eq!(s.expectations[0].source.line, Some(13));
    let m = Scenario::from_topology_yaml(
        &fixed.replace("service: B, error_rate", "service: B, error_rat"),
        "t.yaml",
        &t,
    )
    .unwrap_err()
    .to_string();
    assert!(
        m.starts_with("t.yaml:9:")
            && m.contains("scenario.steps[0].fail: unknown field `error_rat`"),
        "{m}"
    );
    let none = Topology::from_yaml("name: x\nservices:\n  A:\n", "x.yaml").unwrap();
    assert_eq!(
        Scenario::from_topology_yaml("name: x\nservices:\n  A:\n", "x.yaml", &none).unwrap(),
        None
    );
}
