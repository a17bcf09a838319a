//! What a new user runs into first: a figure over no requests, numbers
//! past what the lab can send, and messages in a person's words (each
//! through the binary or the control API, the message or figure exact).

use std::time::Duration;

use chaoslab::session::{Session, Setup};
use chaoslab::topology::Topology;
use serde_json::Value;

use crate::common::{chaoslab, fleet_lock, http, root, text};
use crate::overload::topology_file;

#[test]
fn a_window_with_no_root_requests_has_no_availability() {
    let _fleet = fleet_lock();
    let report = std::env::temp_dir().join(format!("chaoslab-{}-1ms.json", std::process::id()));
    let out = chaoslab(&[
        "run",
        "topologies/uber-chain.yaml",
        "--headless",
        "--duration",
        "1ms",
        "--warmup",
        "0s",
        "--rps",
        "1",
        "--report",
        report.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let _ = std::fs::remove_file(&report);
    if r["root"]["requests"] == 0 {
        assert!(
            stdout.contains("0 answered, availability — (no root requests measured)"),
            "{stdout}"
        );
        assert!(r["root"]["availability"].is_null(), "{}", r["root"]);
        assert_eq!(
            r["unmeasured"][0],
            "no root requests in this window: root.availability and root.latency_ms are null"
        );
    } else {
        panic!(
            "a root request ended within a millisecond at 1 rps: {}",
            r["root"]
        );
    }
    // An expectation over a window in which no root request ended fails,
    // saying so (the load is paused from the start).
    let scenario = topology_file(
        "paused",
        "duration: 2s\nwarmup: 0s\nsteps:\n  - at: 0s\n    pause: true\nexpect:\n  - during: 0.5s..1.5s\n    root_availability: { min: 0 }\n",
    );
    let report = std::env::temp_dir().join(format!("chaoslab-{}-paused.json", std::process::id()));
    let out = chaoslab(&[
        "run",
        "topologies/uber-chain.yaml",
        "--headless",
        "--scenario",
        &scenario,
        "--report",
        report.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains("(no root requests in this window)"),
        "{stderr}"
    );
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let _ = std::fs::remove_file(&report);
    let e = &r["expectations"][0];
    assert_eq!(e["passed"], false);
    assert_eq!(e["note"], "no root requests in this window");
}

#[test]
fn negative_and_impossible_numbers_are_refused_in_the_loaders_words() {
    for (args, says) in [
        (
            &["--rps", "-5"][..],
            "rps must be a positive, finite number of requests per second, got -5",
        ),
        (
            &["--rps", "1e12"],
            "rps 1.0e12: the load generator schedules at most 1.0e6 root requests per second (one arrival a microsecond)",
        ),
        (&["--seed", "-5"], "a seed is a whole number from 0 to 18446744073709551615, got `-5`"),
        (&["--fps", "-5"], "fps must be a whole number of frames per second from 1 to 60, got `-5`"),
        (&["--duration", "-5s"], "-5s"),
    ] {
        let mut argv = vec!["run", "topologies/uber-chain.yaml", "--headless"];
        argv.extend_from_slice(args);
        let out = chaoslab(&argv);
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stdout}{stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("unexpected argument"), "{args:?}: {stderr}");
    }
    let out = chaoslab(&["tour", "-1"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "chapters are numbered from 1, as `3` (from the third on) or `2-5`, got `-1`"
        ),
        "{stderr}"
    );
    // The same bound in a topology file.
    let t = topology_file(
        "fast",
        "name: fast\nload: { rps: 1e300 }\nservices:\n  A: {}\n",
    );
    let out = chaoslab(&["check", &t]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("rps 1.0e300: the load generator schedules at most 1.0e6"),
        "{stderr}"
    );
    assert!(stderr.len() < 400, "compact: {stderr}");
}

#[test]
fn the_control_api_takes_the_command_lines_fail_and_says_what_it_wants() {
    let _fleet = fleet_lock();
    let t = Topology::load(&root().join("topologies/uber-chain.yaml")).unwrap();
    let mut setup = Setup::new(t);
    setup.until = Some(Duration::from_secs(10));
    let session = Session::start(setup).unwrap();
    let api = chaoslab::endpoints::control::serve(&session, "127.0.0.1:0".parse().unwrap(), vec![])
        .unwrap()
        .to_string();
    let post = |body: &str| {
        let (status, text) = http(&api, "POST", "/actions", body.as_bytes());
        (
            status,
            serde_json::from_str::<Value>(&text).unwrap_or(Value::Null),
        )
    };
    let (status, v) = post(r#"{"fail": "D"}"#);
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        v["applied"][0], "D fails 100% (after its calls, status 500)",
        "{v}"
    );
    let (status, v) = post(r#"{"fail": "D=0.3"}"#);
    assert_eq!(status, 200, "{v}");
    let (status, v) = post(r#"{"fail": 5}"#);
    assert_eq!(status, 400, "{v}");
    let e = v["error"].as_str().unwrap();
    assert!(
        e.ends_with(r#"fail: give a service name such as "D", "D=0.3", or {"service": "D", "error_rate": 0.3}, not the number 5"#),
        "{e}"
    );
    let (status, v) = post(r#"{"rps": 1e300}"#);
    assert_eq!(status, 400, "{v}");
    let e = v["error"].as_str().unwrap();
    assert!(
        e.contains("rps 1.0e300: the load generator schedules at most 1.0e6"),
        "{e}"
    );
    assert!(e.len() < 300, "compact: {e}");
    session.stop();
}
