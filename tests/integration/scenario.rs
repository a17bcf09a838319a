//! Scenarios through the real binary: the uber-chain story holds (exit 0),
//! a wrong expectation fails (exit 1) and says so in JUnit, a bad scenario
//! is refused (exit 2) with its file and line.

use std::path::PathBuf;

use serde_json::Value;

use crate::common::{chaoslab, fleet_lock, text};

/// A temporary path for this test process.
fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("chaoslab-scenario-{}-{name}", std::process::id()))
}

fn read_json(p: &PathBuf) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).expect("the report was written"))
        .expect("the report is JSON")
}

#[test]
fn the_uber_chain_story_holds() {
    let _fleet = fleet_lock();
    let (report, junit) = (temp("story.json"), temp("story.xml"));
    let out = chaoslab(&[
        "run",
        "topologies/uber-chain.yaml",
        "--headless",
        "--scenario",
        "scenarios/uber-chain-story.yaml",
        "--report",
        report.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&out);
    eprintln!("{stdout}");
    assert_eq!(
        out.status.code(),
        Some(0),
        "the story failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    // The captions, each once, as they pass.
    let said: Vec<&str> = stderr.lines().filter(|l| l.contains("] » ")).collect();
    assert_eq!(said.len(), 7, "{stderr}");
    assert!(said[1].contains("D fails every request"), "{said:?}");
    let r = read_json(&report);
    let es = r["expectations"].as_array().unwrap();
    assert!(es.len() >= 20, "{}", es.len());
    for e in es {
        assert_eq!(e["passed"], true, "{e}");
        assert!(e["observed"].is_number(), "{e}");
        assert!(e["source"]
            .as_str()
            .unwrap()
            .starts_with("scenarios/uber-chain-story.yaml:"));
        // The figures it read are in the report, over about its window.
        let w = &e["window_s"];
        let m = &e["figures"]["measured_s"];
        for k in 0..2 {
            let (asked, got) = (w[k].as_f64().unwrap(), m[k].as_f64().unwrap());
            // Samples come every 250 ms: a window's edge falls within
            // half a tick of one, and a late tick adds up to one more.
            assert!((asked - got).abs() <= 0.375, "{e}");
        }
    }
    // Under retry D sees 8×, and the figures say so next to the verdict.
    let d8 = es
        .iter()
        .find(|e| e["what"] == "D amplification ≈ 8 ± 5%")
        .unwrap();
    assert_eq!(d8["figures"]["service"]["name"], "D");
    assert_eq!(d8["figures"]["service"]["model_amplification"], 8.0);
    // The time series: one point a second over the measured run.
    let s = &r["series"];
    assert_eq!(s["period_s"], 1.0);
    let t = s["t_s"].as_array().unwrap();
    assert!((23..=25).contains(&t.len()), "{}", t.len());
    let d = s["services"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "D")
        .unwrap();
    let amp: Vec<f64> = d["amplification"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    // Second 7 (retry) is a storm, second 15 (ownership) is not.
    assert!((amp[6] - 8.0).abs() < 0.5, "{amp:?}");
    assert!((amp[14] - 1.1).abs() < 0.1, "{amp:?}");
    let x = std::fs::read_to_string(&junit).unwrap();
    assert!(
        x.contains(r#"<testsuite name="chaoslab: uber-chain""#),
        "{x}"
    );
    assert_eq!(x.matches("<testcase ").count(), es.len());
    assert!(!x.contains("<failure"), "{x}");
    let _ = std::fs::remove_file(&report);
    let _ = std::fs::remove_file(&junit);
}

#[test]
fn a_wrong_expectation_exits_1_and_junit_names_it() {
    let _fleet = fleet_lock();
    let (scenario, junit) = (temp("wrong.yaml"), temp("wrong.xml"));
    // uber-chain runs ownership with D failing: D sees 1.1×, not 8×.
    std::fs::write(
        &scenario,
        "duration: 4s\nwarmup: 1s\nexpect:\n  - during: 1s..4s\n    service: D\n    amplification: { approx: 1.1, tolerance: 0.05 }\n  - during: 1s..4s\n    service: D\n    amplification: { approx: 8, tolerance: 0.05 }\n",
    )
    .unwrap();
    let out = chaoslab(&[
        "run",
        "topologies/uber-chain.yaml",
        "--headless",
        "--scenario",
        scenario.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stdout.contains("PASS D amplification ≈ 1.1 ± 5%"),
        "{stdout}"
    );
    assert!(stdout.contains("FAIL D amplification ≈ 8 ± 5%"), "{stdout}");
    let file = scenario.to_str().unwrap();
    assert!(
        stderr.contains(&format!(
            "1 of 2 expectations failed:\n  {file}:9:5: D amplification ≈ 8 ± 5% during 1s..4s: observed "
        )),
        "{stderr}"
    );
    let x = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(x.matches("<testcase ").count(), 2, "{x}");
    assert_eq!(x.matches("<failure ").count(), 1, "{x}");
    assert!(
        x.contains(r#"<failure message="D amplification ≈ 8 ± 5%: observed 1."#),
        "{x}"
    );
    assert!(x.contains(r#"line="9""#), "{x}");
    assert!(x.contains(&format!("{file}:9:5: D amplification")), "{x}");
    let _ = std::fs::remove_file(&scenario);
    let _ = std::fs::remove_file(&junit);
}

#[test]
fn a_bad_scenario_exits_2_with_file_and_line() {
    // Refused before any fleet starts: no lock needed.
    let cases: [(&str, &[&str], &str); 8] = [
        (
            "duration: 10s\nsteps:\n  - at: 1s\n    fail: { service: X, error_rate: 1 }\n",
            &[],
            ":4:22: steps[0].fail: there is no service \"X\" in topology uber-chain",
        ),
        (
            "steps:\n  - at: 12s\n    heal: D\n",
            &["--duration", "10s"],
            ":2:5: steps[0]: the step at 12s is after the end of the run: the duration is 10s (set by --duration)",
        ),
        (
            "expect:\n  - during: 8s..4s\n    root_rps: { min: 1 }\n",
            &[],
            ":2:13: expect[0].during: window `8s..4s` is inverted or empty",
        ),
        (
            "expect:\n  - during: 1s..2s\n    service: D\n    amplification: { approx: lots }\n",
            &[],
            ":4:",
        ),
        (
            "expect:\n  - during: 1s..2s\n    root: C\n    root_availability: { min: 0.9 }\n",
            &[],
            ":3:11: expect[0].root: \"C\" is not a root of topology uber-chain (roots: A)",
        ),
        (
            "expect:\n  - during: 1s..2s\n    root: A\n    root_rps: { min: 1 }\n",
            &[],
            ":4:5: expect[0]: `root_rps` is not read per root: with `root:` give one of root_availability",
        ),
        (
            "steps:\n  - at: 1s\n    fail: { service: D, replicas: [1] }\n",
            &[],
            ":3:",
        ),
        (
            "steps:\n  - at: 1s\n    policy: { outlier: { max_ejection_percent: 150 } }\n",
            &[],
            ":3:48: steps[0].policy.outlier.max_ejection_percent: max_ejection_percent must be a number from 0 to 100, got 150",
        ),
    ];
    for (i, (yaml, extra, want)) in cases.iter().enumerate() {
        let path = temp(&format!("bad-{i}.yaml"));
        std::fs::write(&path, yaml).unwrap();
        let mut args = vec![
            "run",
            "topologies/uber-chain.yaml",
            "--headless",
            "--scenario",
            path.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = chaoslab(&args);
        let (stdout, stderr) = text(&out);
        assert_eq!(
            out.status.code(),
            Some(2),
            "case {i}\nstdout:\n{stdout}\nstderr:\n{stderr}"
        );
        let expected = format!("chaoslab: {}{want}", path.display());
        assert!(stderr.starts_with(&expected), "case {i}: {stderr}");
        if i == 3 {
            assert!(stderr.contains("approx needs a number"), "{stderr}");
        }
        if i == 6 {
            assert!(
                stderr
                    .contains("has 1 replica (numbered 0 to 0), so a fault cannot be on replica 1"),
                "{stderr}"
            );
        }
        assert!(stdout.is_empty(), "no run happened: {stdout}");
        let _ = std::fs::remove_file(&path);
    }
}

#[test]
fn a_topologys_scenario_key_runs_without_the_flag() {
    let _fleet = fleet_lock();
    let topology = temp("embedded.yaml");
    let report = temp("embedded.json");
    std::fs::write(
        &topology,
        "name: pair\npolicy: { preset: retry }\nload: { rps: 100 }\nservices:\n  A: { calls: [B] }\n  B:\nscenario:\n  duration: 3s\n  warmup: 1s\n  steps:\n    - at: 1s\n      fail: { service: B, error_rate: 1.0 }\n  expect:\n    - during: 0s..1s\n      root_availability: { min: 0.99 }\n    - during: 1.5s..3s\n      service: B\n      amplification: { approx: 2, tolerance: 0.05 }\n",
    )
    .unwrap();
    let out = chaoslab(&[
        "run",
        topology.to_str().unwrap(),
        "--headless",
        "--report",
        report.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let r = read_json(&report);
    let es = r["expectations"].as_array().unwrap();
    assert_eq!(es.len(), 2, "{r}");
    assert_eq!(es[1]["line"], 18);
    assert!((r["duration_s"].as_f64().unwrap() - 3.0).abs() < 0.3, "{r}");
    let _ = std::fs::remove_file(&topology);
    let _ = std::fs::remove_file(&report);
}

/// A policy switch mid-run gives two phases, each measured on its own
/// against the model of its own policy: naive retries (D 8×), then
/// ownership (D 1.1×), never a figure of one next to the other's model.
///
/// Two seconds of warm-up: the storm runs from the start, and on a busy
/// machine the fleet's first second is a backlog (connections opening
/// under 8× load) that drained into a one-second warm-up's first phase:
/// A answered 11% more root requests than were sent, and D read 7.52×.
#[test]
fn a_policy_switch_is_reported_as_two_phases() {
    let _fleet = fleet_lock();
    let (scenario, report) = (temp("switch.yaml"), temp("switch.json"));
    std::fs::write(
        &scenario,
        "duration: 6s\nwarmup: 2s\nsteps:\n  - at: 3s\n    policy: ownership\n",
    )
    .unwrap();
    let out = chaoslab(&[
        "run",
        "topologies/uber-chain.yaml",
        "--headless",
        "--fail",
        "D",
        "--policy",
        "retry",
        "--scenario",
        scenario.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&out);
    eprintln!("{stdout}");
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let r = read_json(&report);
    let _ = std::fs::remove_file(&scenario);
    let _ = std::fs::remove_file(&report);
    let phases = r["phases"].as_array().expect("a phases array");
    assert_eq!(phases.len(), 2, "{:#}", r["phases"]);
    let d = |p: &Value| {
        p["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == "D")
            .cloned()
            .unwrap()
    };
    for (p, policy, model) in [(&phases[0], "retry", 8.0), (&phases[1], "ownership", 1.1)] {
        assert_eq!(p["policy"], policy, "{p:#}");
        let d = d(p);
        let (measured, predicted) = (
            d["amplification"].as_f64().unwrap(),
            d["model_amplification"].as_f64().unwrap(),
        );
        eprintln!(
            "{policy} {}s..{}s: D measured {measured:.3}x, model {predicted}x",
            p["from_s"], p["to_s"]
        );
        assert!(
            (predicted - model).abs() < 1e-9,
            "{policy}: model {predicted}"
        );
        if p["saturated"] == true {
            eprintln!(
                "{policy}: saturated, measured figure not checked: {}",
                p["saturation"]
            );
            continue;
        }
        assert!(
            (measured / predicted - 1.0).abs() <= 0.05,
            "{policy}: D measured {measured} against its model {predicted}"
        );
    }
    // The switch opened the second phase, about 3 s into the measured run.
    assert_eq!(phases[1]["after"][0], "policy ownership");
    let at = phases[1]["from_s"].as_f64().unwrap();
    assert!((2.9..=3.6).contains(&at), "{at}");
    // The table: one per phase, each under the line that says which.
    assert!(stdout.starts_with("phase 1 of 2 · 0.0s..3."), "{stdout}");
    assert!(stdout.contains("phase 2 of 2 · 3."), "{stdout}");
    assert!(
        stdout.contains("· after policy ownership · D fails 100%"),
        "{stdout}"
    );
    assert_eq!(stdout.matches("storm radius:").count(), 2, "{stdout}");
}

/// A root of a tiny rate waits long between arrivals, but follows a new
/// rate within a second: at 0.01 rps its next arrival is 100 s away, and
/// a step to 50 rps at 1 s has it sending 50 a second from about 2 s on.
/// (Its wait once stopped at a minute and ignored the new rate until
/// then: nothing was sent in this run.)
#[test]
fn a_root_at_a_tiny_rate_follows_a_new_rate_within_a_second() {
    let _fleet = fleet_lock();
    let (topology, scenario, report) = (
        temp("tiny.yaml"),
        temp("tiny-steps.yaml"),
        temp("tiny.json"),
    );
    std::fs::write(
        &topology,
        "name: tiny\nload: { rps: 0.01 }\nservices:\n  A: { calls: [B] }\n  B: {}\n",
    )
    .unwrap();
    std::fs::write(
        &scenario,
        "duration: 5s\nwarmup: 0s\nsteps:\n  - at: 1s\n    rps: 50\n",
    )
    .unwrap();
    let out = chaoslab(&[
        "run",
        topology.to_str().unwrap(),
        "--headless",
        "--scenario",
        scenario.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let r = read_json(&report);
    for p in [&topology, &scenario, &report] {
        let _ = std::fs::remove_file(p);
    }
    let root = &r["root"];
    let sent = root["sent"].as_f64().unwrap();
    // 50 a second from between 1 s and 2 s to 5 s: 150 to 200.
    assert!((140.0..=205.0).contains(&sent), "{sent} sent: {root:#}");
    assert_eq!(root["skipped"].as_f64(), Some(0.0), "{root:#}");
}
