//! `chaoslab sweep` (SPEC section 16): bad input refused before any
//! fleet starts, a SIGINT that keeps the cells done, and the metastable
//! region measured against the model's boundary.

use std::path::PathBuf;
use std::time::Duration;

use tokio::time::Instant;

use serde_json::Value;

use crate::common::{chaoslab, fleet_lock, text};
use crate::signals::{signal, start, wait_for_line};

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("chaoslab-sweep-{}-{name}", std::process::id()))
}

#[test]
fn bad_sweeps_exit_2_before_any_fleet_starts() {
    let scenario = "scenarios/metastable-sweep.yaml";
    let topology = "topologies/metastable.yaml";
    let both = ["--vary", "LOAD=40..80:20", "--vary", "TRIGGER=1..3:2"];
    for (extra, says) in [
        (
            vec!["--vary", "LOAD=40..80:20"],
            "`${TRIGGER + 2}` uses `TRIGGER`, which is not swept",
        ),
        (
            [&both[..], &["--vary", "RATIO=1..2:1"]].concat(),
            "a sweep varies one or two names",
        ),
        (
            vec!["--vary", "LOAD=40..80:20", "--vary", "OTHER=1..2:1"],
            "neither scenarios/metastable-sweep.yaml nor topologies/metastable.yaml uses `${OTHER}`",
        ),
        (
            vec!["--vary", "LOAD=80..40:20", "--vary", "TRIGGER=1..3:2"],
            "the range is inverted",
        ),
        (
            vec!["--vary", "LOAD=40..80:0", "--vary", "TRIGGER=1..3:2"],
            "the step must be above 0",
        ),
        (
            vec!["--vary", "LOAD=1..200:1", "--vary", "TRIGGER=1..3:1"],
            "= 1800 cells, each a fleet of its own: more than 400 asks for --yes",
        ),
        (
            vec!["--vary", "LOAD=40..80:20", "--vary", "TRIGGER=1..30:10"],
            "at LOAD=40 TRIGGER=21: scenarios/metastable-sweep.yaml:",
        ),
        (
            vec!["--vary", "LOAD=-40..80:40", "--vary", "TRIGGER=1..3:2"],
            "at LOAD=-40 TRIGGER=1: scenarios/metastable-sweep.yaml:",
        ),
        (
            [&both[..], &["--policies", "retry,sideways"]].concat(),
            "sideways",
        ),
        (
            [&both[..], &["--policies", "retry,budget,retry"]].concat(),
            "`retry` is named twice",
        ),
        (
            [&both[..], &["--warmup", "200000h"]].concat(),
            "longer than a week",
        ),
    ] {
        let mut args = vec!["sweep", topology, "--scenario", scenario];
        args.extend(extra.iter().copied());
        let started = Instant::now();
        let o = chaoslab(&args);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}\n{out}{err}");
        assert!(err.contains(says), "{args:?}: wanted `{says}` in\n{err}");
        assert!(!err.contains("cell 1 of"), "a fleet started: {err}");
        assert!(started.elapsed() < Duration::from_secs(5), "{args:?}");
    }
    // A name only a policy step uses: every cell would run the same.
    let policy_step = temp("policy-step.yaml");
    std::fs::write(
        &policy_step,
        "duration: 5s\nsteps:\n  - at: 1s\n    rps: 300\n  - at: 2s\n    rps: 120\n  - at: 3s\n    policy: { budget: ${B} }\n",
    )
    .unwrap();
    let o = chaoslab(&[
        "sweep",
        topology,
        "--scenario",
        policy_step.to_str().unwrap(),
        "--vary",
        "B=0.1..0.3:0.1",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o)
            .1
            .contains("--vary B: its values change nothing a cell runs"),
        "{}",
        text(&o).1
    );
    let _ = std::fs::remove_file(policy_step);
    // A name only the topology's rate uses, while --rps sets the rate of
    // every cell; and a name only escaped in a comment (`$${Q}`), which is
    // not a use.
    let rate = temp("rate.yaml");
    let t = std::fs::read_to_string(topology)
        .unwrap()
        .replace("load:\n  rps: 120", "load:\n  rps: ${R} # not $${Q}");
    std::fs::write(&rate, t).unwrap();
    let plain = temp("plain.yaml");
    std::fs::write(&plain, "duration: 5s\nsteps:\n  - at: 1s\n    rps: 300\n").unwrap();
    for (vary, rps, says) in [
        (
            "R=100..120:20",
            Some("50"),
            "--vary R: its values change nothing a cell runs",
        ),
        (
            "Q=1..2:1",
            None,
            "uses `${Q}`, so every cell would be the same",
        ),
    ] {
        let mut args = vec![
            "sweep",
            rate.to_str().unwrap(),
            "--scenario",
            plain.to_str().unwrap(),
            "--vary",
            vary,
        ];
        args.extend(rps.map(|r| ["--rps", r]).iter().flatten());
        let o = chaoslab(&args);
        let err = text(&o).1;
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: wanted `{says}` in\n{err}");
    }
    let _ = std::fs::remove_file(rate);
    let _ = std::fs::remove_file(plain);
    // No scenario at all.
    let o = chaoslab(&["sweep", topology, "--vary", "LOAD=1..2:1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("no --scenario"), "{}", text(&o).1);
}

#[test]
fn a_sweep_stopped_by_sigint_writes_the_cells_done_and_exits_130() {
    let _fleet = fleet_lock();
    let scenario = temp("short.yaml");
    std::fs::write(
        &scenario,
        "duration: 1s\nwarmup: 200ms\nsteps:\n  - at: 500ms\n    rps: ${LOAD}\n",
    )
    .unwrap();
    let (csv, json, html) = (temp("cells.csv"), temp("cells.json"), temp("cells.html"));
    let (mut child, lines) = start(&[
        "sweep",
        "topologies/metastable.yaml",
        "--scenario",
        scenario.to_str().unwrap(),
        "--vary",
        "LOAD=50..240:10",
        "--policies",
        "none",
        "--csv",
        csv.to_str().unwrap(),
        "--report",
        json.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    let mut out = vec![];
    // The sixth cell has started: five are done.
    wait_for_line(&lines, &mut out, "the sixth cell", |l| {
        l.starts_with("sweep: cell 6 of 20")
    });
    signal(child.0.id(), "INT");
    let status = child.0.wait().unwrap();
    while let Ok((is_out, line)) = lines.recv_timeout(Duration::from_secs(1)) {
        if is_out {
            out.push(line);
        }
    }
    assert_eq!(status.code(), Some(130), "{out:#?}");
    let rows = std::fs::read_to_string(&csv).unwrap();
    let loads: Vec<&str> = rows
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap())
        .collect();
    assert_eq!(loads, ["50", "60", "70", "80", "90"], "{rows}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["interrupted"], true);
    assert_eq!(r["planned"], 20);
    assert_eq!(r["cells"].as_array().unwrap().len(), 5);
    let shown = out.join("\n");
    assert!(shown.contains("5 of 20 cells (interrupted)"), "{shown}");
    // The page: one heatmap of the time to recover and one of the
    // availability (`none` has no model of a trigger that is not a spike),
    // and the five cells in its table.
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(page.matches("<svg").count(), 2, "{page}");
    assert!(page.contains("5 of 20 cells"), "{page}");
    assert_eq!(page.matches("<tr><td>none</td>").count(), 5, "{page}");
    for p in [scenario, csv, json, html] {
        let _ = std::fs::remove_file(p);
    }
}

/// The metastable scenario over load under naive retries and a budget:
/// where the fleet comes back agrees with the model's fluid queue, but in
/// the cells next to its boundary.
#[test]
fn the_metastable_sweep_agrees_with_the_models_boundary_but_next_to_it() {
    let _fleet = fleet_lock();
    let json = temp("meta.json");
    let o = chaoslab(&[
        "sweep",
        "topologies/metastable.yaml",
        "--scenario",
        "scenarios/metastable-sweep.yaml",
        "--vary",
        "LOAD=40..140:50",
        "--vary",
        "TRIGGER=3..3:1",
        "--policies",
        "retry,budget",
        "--duration",
        "16s",
        "--report",
        json.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cells = r["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 6, "{out}");
    let verdicts: Vec<(String, f64, bool, Option<bool>)> = cells
        .iter()
        .map(|c| {
            (
                c["policy"].as_str().unwrap().to_string(),
                c["at"][0].as_f64().unwrap(),
                c["recovered"].as_bool().unwrap(),
                c["model_recovers"].as_bool(),
            )
        })
        .collect();
    // The model knows both policies and a spike: every cell has a verdict,
    // and both verdicts occur, so a wrong measurement shows.
    assert!(verdicts.iter().all(|v| v.3.is_some()), "{verdicts:?}");
    assert!(
        verdicts.iter().any(|v| v.3 == Some(true)) && verdicts.iter().any(|v| v.3 == Some(false)),
        "{verdicts:?}"
    );
    for c in cells {
        if c["saturated"] == true {
            panic!("the machine could not carry a cell: {c}\n{out}");
        }
        if c["near_boundary"] == false {
            assert_eq!(
                c["agrees"], true,
                "a cell away from the model's boundary disagrees with it: {c}\n{out}"
            );
        }
    }
    // Naive retries (3 attempts a root request in the storm) stay down at
    // 90 and 140 rps, above the 53 rps threshold; a 10% budget brings
    // 40 rps back.
    let at = |p: &str, load: f64| {
        verdicts
            .iter()
            .find(|v| v.0 == p && v.1 == load)
            .unwrap()
            .clone()
    };
    assert!(!at("retry", 90.0).2 && !at("retry", 140.0).2, "{out}");
    assert!(at("budget", 40.0).2, "{out}");
    assert!(out.contains("┃"), "the boundary is drawn\n{out}");
    let _ = std::fs::remove_file(json);
}
