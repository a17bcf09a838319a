//! `--control`: the lab driven over HTTP with a plain client, as a user
//! would; bad bodies get 400 with the scenario loader's message, never a
//! 500, and the lab goes on.

use std::time::Duration;

use serde_json::Value;

use chaoslab::lab::figures::{Figure, Kind, Scope};
use chaoslab::session::{Session, Setup};
use chaoslab::topology::Topology;

use crate::common::{fleet_lock, get, http, root, wait_until};
use crate::telemetry::lab_with_endpoints;

fn post(addr: &str, body: &str) -> (u16, Value) {
    let (status, text) = http(addr, "POST", "/actions", body.as_bytes());
    let v = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{body} → {status}: not JSON ({e}): {text}"));
    (status, v)
}

/// The value at a figure's path (`claims_returned.true`) in `v`.
fn at_path<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(v, |v, p| &v[p])
}

#[test]
fn state_is_the_dashboards_snapshot_figure_for_figure() {
    let _fleet = fleet_lock();
    let t = Topology::load(&root().join("topologies/uber-chain.yaml")).unwrap();
    let mut setup = Setup::new(t);
    setup.until = Some(Duration::from_secs(8));
    let session = Session::start(setup).unwrap();
    let addr =
        chaoslab::endpoints::control::serve(&session, "127.0.0.1:0".parse().unwrap(), vec![])
            .unwrap()
            .to_string();
    let snaps = session.snapshots();
    // Three reads of /state, each at a tick of its own with traffic in
    // it, and taken at the same tick as the snapshot read beside it (a
    // tick can come between the two reads).
    let mut compared: Vec<f64> = vec![];
    wait_until(
        Duration::from_secs(7),
        "GET /state to match three snapshots' times",
        || {
            let (status, body) = get(&addr, "/state");
            assert_eq!(status, 200, "{body}");
            let state: Value = serde_json::from_str(&body).unwrap();
            let snap = snaps.borrow().clone();
            let t = snap.t.as_secs_f64();
            let fresh = compared.last().is_none_or(|&last| t > last);
            if state["t_s"].as_f64() != Some(t) || !fresh || snap.root.sent == 0 {
                return None;
            }
            for (i, s) in snap.services.iter().enumerate() {
                let j = &state["services"][i];
                assert_eq!(j["name"], s.name.as_str());
                for f in Figure::of(Scope::Service) {
                    for (figures, json) in [(&s.live, &j["live"]), (&s.total, &j["total"])] {
                        let v = at_path(json, f.path());
                        match f.kind() {
                            Kind::Count => assert_eq!(
                                v.as_u64(),
                                Some(figures.count(f)),
                                "{} {}",
                                s.name,
                                f.name()
                            ),
                            Kind::Real if figures[f].is_finite() => {
                                assert_eq!(v.as_f64(), Some(figures[f]), "{} {}", s.name, f.name())
                            }
                            Kind::Real => assert!(v.is_null(), "{} {}: {v}", s.name, f.name()),
                        }
                    }
                }
            }
            assert_eq!(state["root"]["sent"].as_u64(), Some(snap.root.sent));
            assert_eq!(state["storm_radius"]["max"].as_u64(), Some(snap.radius_max));
            assert_eq!(state["edges"].as_array().unwrap().len(), snap.edges.len());
            compared.push(t);
            (compared.len() == 3).then_some(())
        },
    );
    session.finish().unwrap();
}

#[test]
fn actions_over_http_apply_and_bad_ones_get_400_with_the_loaders_message() {
    let _fleet = fleet_lock();
    let (mut lab, _metrics, api) = lab_with_endpoints(&[
        "run",
        "topologies/uber-chain.yaml",
        "--headless",
        "--duration",
        "8s",
        "--warmup",
        "1s",
    ]);
    let (status, index) = get(&api, "/");
    assert_eq!(status, 200);
    assert!(
        index.contains("curl -s -X POST -H 'Content-Type: application/json' http://"),
        "{index}"
    );

    // Refused, each with where and what; none a 500.
    for (body, says) in [
        (
            r#"{"heal": "d"}"#,
            r#"actions[0].heal: there is no service "d" in topology uber-chain (services: A, B, C, D, E, F, G); did you mean "D"?"#,
        ),
        (r#"{"policy": "ownersip"}"#, "did you mean `ownership`"),
        (
            r#"{"fail": {"service": "D", "error_rate": 2}}"#,
            "actions[0].fail.error_rate",
        ),
        (
            r#"[{"rps": 100}, {"rps": -1}]"#,
            "actions[1].rps: rps must be a positive",
        ),
        (
            r#"{"rps": 10, "pause": true}"#,
            "has rps and pause: one action per object",
        ),
        (
            r#"{"at": "1s", "rps": 10}"#,
            "`at` has no place in an action sent to the API",
        ),
        (r#"{"fial": {"service": "D"}}"#, "unknown field `fial`"),
        (
            r#"{"policy": {"retry_on": ["gateway-eror"]}}"#,
            "did you mean `gateway-error`",
        ),
        (
            r#"{"fail": {"service": "D", "status": 600}}"#,
            "from 100 to 599, got 600",
        ),
        (
            r#"{"policy": {"outlier": {"consecutive_5xx": -1}}}"#,
            "consecutive_5xx must be a whole number from 0 to 1000000, got -1",
        ),
        (
            r#"{"set": {"service": "B", "workers": 2}}"#,
            "has no `workers` in the topology",
        ),
        (r#"{"policy": "retry""#, "POST /actions:1:18: not JSON"),
        ("", "not JSON"),
        ("[]", "an empty list does nothing"),
        ("5", "expected an action"),
    ] {
        let (status, v) = post(&api, body);
        assert_eq!(status, 400, "{body}: {v}");
        let message = v["error"].as_str().unwrap();
        assert!(message.contains(says), "{body}: {message}");
    }
    let huge = format!("[{}]", vec![r#"{"rps": 100}"#; 10_000].join(","));
    assert_eq!(http(&api, "POST", "/actions", huge.as_bytes()).0, 413);
    assert_eq!(get(&api, "/nothing").0, 404);
    assert_eq!(get(&api, "/actions").0, 405);

    // Applied in order, logged as the API's.
    let (status, v) = post(
        &api,
        r#"[{"rps": 100}, {"fail": {"service": "E", "error_rate": 0.5}}]"#,
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["applied"].as_array().unwrap().len(), 2, "{v}");
    let state = wait_until(Duration::from_secs(2), "GET /state to show rps 100", || {
        let (_, body) = get(&api, "/state");
        let s: Value = serde_json::from_str(&body).unwrap();
        (s["rps"] == 100.0).then_some(s)
    });
    assert_eq!(state["rps"], 100.0, "{state}");
    assert_eq!(state["services"][4]["fault"]["error_rate"], 0.5);
    let events = state["events"].as_array().unwrap();
    assert!(
        events.iter().any(|e| e["origin"] == "api"
            && e["event"].as_str().unwrap().starts_with("E fails 50%")
            && e["event"].as_str().unwrap().ends_with("(api)")),
        "{events:?}"
    );
    let (status, body) = get(&api, "/report");
    assert_eq!(status, 200, "{body}");
    let r: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(r["nodes"].as_array().unwrap().len(), 7);
    assert!(
        r["events"].as_array().unwrap().len() >= 2,
        "{}",
        r["events"]
    );
    assert!(lab.0.wait().unwrap().success());
}
