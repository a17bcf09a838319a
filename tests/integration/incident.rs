//! Uber's incident at Uber's scale (SPEC section 14), measured on the
//! shipped mesh: `topologies/uber-incident.yaml` (2,500 services drawn
//! like Meta's, the incident's paths grafted on) under
//! `scenarios/uber-incident.yaml`.

use chaoslab::topology::{sim, Preset, Topology};
use serde_json::Value;

use std::time::Duration;

use tokio::time::Instant;

use crate::common::{chaoslab, root, text};
use crate::tui::Tmux;

const TOPOLOGY: &str = "topologies/uber-incident.yaml";
const SCENARIO: &str = "scenarios/uber-incident.yaml";

/// The phase of `report` whose policy is `policy` and in which a fault
/// is in force.
fn storm<'a>(report: &'a Value, policy: &str) -> &'a Value {
    report["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["policy"] == policy && !p["faults"].as_array().unwrap().is_empty())
        .unwrap_or_else(|| panic!("no {policy} phase with a fault"))
}

fn node<'a>(phase: &'a Value, name: &str) -> &'a Value {
    phase["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == name)
        .unwrap_or_else(|| panic!("no node {name}"))
}

/// The scenario's expectations hold (each retrying depth's endpoint at
/// 1.1^d within 5% under budgets alone, 1.1 within 0.05 under
/// ownership), and the report's own figures agree: each depth beside the
/// model over the budget phase, and the retries ownership stopped, per
/// immediate caller, adding up to the fleet's count.
#[test]
fn the_posts_production_figures_measured_on_a_mesh_of_thousands() {
    let _fleet = crate::common::fleet_lock();
    let report =
        std::env::temp_dir().join(format!("chaoslab-incident-{}.json", std::process::id()));
    let out = chaoslab(&[
        "run",
        TOPOLOGY,
        "--headless",
        "--scenario",
        SCENARIO,
        "--report",
        report.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}\n{stdout}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let _ = std::fs::remove_file(&report);
    assert_eq!(r["expectations"].as_array().unwrap().len(), 12);
    assert_eq!(r["saturated"], false, "{}", r["saturation"]);
    // A step is played right after its tick's sample and dated at it, so
    // the phase it opens starts at that sample and holds all it caused
    // (a budget spends what it saved in a fault's first milliseconds).
    let warmup = 2.0;
    for (p, e) in r["phases"].as_array().unwrap()[1..]
        .iter()
        .zip(r["events"].as_array().unwrap())
    {
        let (opened, dated) = (
            p["measured_s"][0].as_f64().unwrap(),
            e["t_s"].as_f64().unwrap(),
        );
        assert!(
            (opened + warmup - dated).abs() < 0.001,
            "{p:?} against {e:?}"
        );
    }

    // Under budgets alone, the whole storm: each depth's endpoint beside
    // the model, and the model at the post's 1.1^d.
    let budget = storm(&r, "budget");
    for d in 4..=9 {
        let n = node(budget, &format!("core-entity/d{d}"));
        let (amp, model) = (
            n["amplification"].as_f64().unwrap(),
            n["model_amplification"].as_f64().unwrap(),
        );
        assert!((model - 1.1f64.powi(d)).abs() < 1e-9, "d{d}: model {model}");
        assert!(
            (amp / model - 1.0).abs() < 0.05,
            "d{d}: {amp} against {model}"
        );
    }

    // Under ownership: the retries stopped through each of the twelve
    // immediate callers (their paths share no service) add up to every
    // retry suppressed on a call, and each caller's paths stopped the
    // same share whatever its depth: a retry at every hop above it.
    let own = storm(&r, "ownership");
    let stops = own["stops"].as_array().unwrap();
    assert_eq!(stops.len(), 12, "{stops:?}");
    let sum: u64 = stops.iter().map(|s| s["stopped"].as_u64().unwrap()).sum();
    let on_edges: u64 = own["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["suppressed"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, on_edges);
    assert_eq!(own["spurious_avoided_by_caller"]["sum"].as_u64(), Some(sum));
    assert_eq!(
        own["spurious_avoided_by_caller"]["top"].as_u64(),
        stops[0]["stopped"].as_u64()
    );
    // The fleet's count is the callers' (a service's counter and its
    // call's are bumped one after the other, so a window's edge may split
    // the two: one apart at most for each service that suppressed).
    let spurious = own["spurious_avoided"].as_u64().unwrap();
    let suppressing = own["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["retries_suppressed"].as_u64().unwrap() > 0)
        .count() as u64;
    assert!(
        spurious.abs_diff(sum) <= suppressing,
        "{spurious} against {sum}"
    );
    ranked_by_what_chance_cannot_explain(&r, &stdout, &stderr);
    for s in stops {
        let caller = s["caller"].as_str().unwrap();
        let d: u64 = caller[5..6].parse().unwrap();
        // d + 1 services above the caller each suppress every request
        // (the front's and the API's calls are not retried, but still
        // suppressed): d + 1 per root request of the path.
        let api = node(own, &format!("api-d{d}-c{}", &caller[8..9]));
        let requests = api["requests"].as_u64().unwrap();
        let want = (d + 1) * requests;
        let got = s["stopped"].as_u64().unwrap();
        assert!(
            got.abs_diff(want) <= d + 1,
            "{caller}: {got} against {want}"
        );
    }
}

/// The names of the rows phase `k` (1-based) of the headless output's
/// tables lists, in order.
fn phase_rows(stdout: &str, k: usize) -> Vec<&str> {
    let mut lines = stdout
        .lines()
        .skip_while(|l| !l.starts_with(&format!("phase {k} of ")));
    lines.find(|l| l.starts_with("service ") && l.contains(" depth "));
    lines
        .take_while(|l| !l.starts_with("service ") && !l.starts_with('…'))
        .filter_map(|l| l.split_whitespace().next())
        .collect()
}

/// Issue 48's figures on the incident's mesh. Healthy (the first phase):
/// no service whose expected count is under the threshold reads a ratio,
/// the services flagged as differing from the model are no more than
/// chance gives at 99.9%, and every row the table lists reads 1.00x
/// within its interval. While core-entity fails (the second phase): the
/// table's first rows are its endpoints and their immediate callers, and
/// the progress line names its endpoints first.
fn ranked_by_what_chance_cannot_explain(r: &Value, stdout: &str, stderr: &str) {
    let healthy = &r["phases"][0];
    let nodes = healthy["nodes"].as_array().unwrap();
    let with_ratio: Vec<&Value> = nodes
        .iter()
        .filter(|n| !n["amplification"].is_null())
        .collect();
    for n in nodes {
        if n["expected_requests"].as_f64().unwrap() < 20.0 {
            assert!(n["amplification"].is_null(), "a ratio over too few: {n}");
        }
    }
    // Chance alone flags 0.1% of the services that read a ratio; the
    // bound is the 99.9th percentile of that Poisson count, plus one.
    let flagged = nodes.iter().filter(|n| n["model_differs"] == 1).count();
    let chance = with_ratio.len() as f64 * 0.001;
    assert!(
        flagged as f64 <= chance + 3.0 * chance.sqrt() + 1.0,
        "{flagged} flagged, chance gives {chance:.2}"
    );
    let listed = phase_rows(stdout, 1);
    assert!(listed.len() >= 10, "{stdout}");
    for name in &listed {
        let n = node(healthy, name);
        let (lo, hi) = (
            n["amplification_interval"]["low"].as_f64().unwrap(),
            n["amplification_interval"]["high"].as_f64().unwrap(),
        );
        assert!(
            lo <= 1.0 && 1.0 <= hi,
            "{name}: [{lo}, {hi}] in a healthy mesh"
        );
    }
    // The storm: core-entity's endpoints, then their immediate callers.
    let storm = phase_rows(stdout, 2);
    let immediate = |n: &str| {
        n.strip_prefix("hop-d").is_some_and(|rest| {
            let d = &rest[..1];
            rest.ends_with(&format!("-{d}"))
        })
    };
    for (k, name) in storm.iter().take(8).enumerate() {
        let ok = if k < 6 {
            name.starts_with("core-entity/d")
        } else {
            immediate(name)
        };
        assert!(ok, "row {k} of the storm's table is {name}: {storm:?}");
    }
    let failing: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with('[') && !l.contains("radius 0 ") && !l.contains('»'))
        .filter_map(|l| l.split(" · ").nth(1))
        .collect();
    assert!(!failing.is_empty(), "{stderr}");
    for names in failing {
        assert!(
            names.starts_with("core-entity/d") || names.starts_with("hop-d"),
            "the progress line leads with {names}"
        );
    }
}

/// The static radius `check` prints over every root, max and mean, under
/// `retry` and under ownership, is what a simulation of the rules finds
/// root by root on the subgraph each root reaches; under ownership it is
/// larger than 1 only where a service without the middleware or with a
/// dropped context lies on the way, and `check` names them.
#[test]
fn checks_radius_over_every_root_is_a_simulation_of_the_rules() {
    let out = chaoslab(&["check", "--simulate", TOPOLOGY]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let t = Topology::load(&root().join(TOPOLOGY)).unwrap();
    for preset in [Preset::Retry, Preset::Ownership] {
        let mut p = t.policy.clone();
        p.apply_preset(preset);
        // Every root's subgraph played by the rules, over the cores.
        let roots: Vec<usize> = (0..t.load.roots.len()).collect();
        let halves: Vec<Vec<usize>> = std::thread::scope(|scope| {
            let workers: Vec<_> = roots
                .chunks(roots.len().div_ceil(2))
                .map(|ks| {
                    let (t, p) = (&t, &p);
                    scope.spawn(move || {
                        ks.iter()
                            .map(|&k| sim::static_radius(&t.root_subgraph(k).0, p))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        let radii: Vec<usize> = halves.concat();
        let max = radii.iter().copied().max().unwrap();
        let mean = radii.iter().sum::<usize>() as f64 / radii.len() as f64;
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("  {:<10} max ", preset.name())))
            .unwrap_or_else(|| panic!("no {} line:\n{stdout}", preset.name()));
        let simulated = format!("max {max}, mean {mean:.2}");
        assert!(
            line.ends_with(&format!(
                "a simulation of the rules, root by root: {simulated}"
            )) || (line.contains(&format!("  {simulated} over {} roots", radii.len()))
                && line.ends_with("; a simulation of the rules agrees")),
            "{line}\nwanted {simulated}"
        );
        if preset == Preset::Ownership {
            assert!(max > 1 && max < 6, "{max}");
            assert!(stdout.contains("larger than 1 through"), "{stdout}");
        } else {
            assert!(
                max >= 9,
                "the incident's paths alone retry nine hops: {max}"
            );
        }
    }
}

/// The first row of the dashboard's service table: its service's name.
fn first_row(screen: &str) -> Option<&str> {
    first_line(screen)?.split_whitespace().nth(1)
}

/// The first row of the dashboard's service table, after the selection
/// mark.
fn first_line(screen: &str) -> Option<&str> {
    let mut lines = screen.lines().skip_while(|l| !l.starts_with("╭ services "));
    lines.next()?; // the title
    lines.next()?; // the header
    let row = lines.next()?.trim_start_matches('│');
    Some(row.trim_start_matches(['▶', ' ']))
}

/// A core-entity endpoint leads the table, failing: the storm, not the
/// noise of a healthy mesh (where its 40 rps wobble the most above
/// their baseline).
fn storm_first(screen: &str) -> bool {
    first_line(screen).is_some_and(|l| {
        l.split_whitespace()
            .nth(1)
            .is_some_and(|n| n.starts_with("core-entity/d"))
            && l.contains("100.0%")
    })
}

/// The dashboard on the 2,500-service mesh, under the incident's
/// scenario: it opens on the storm's services (once core-entity fails,
/// one of its endpoints leads the table and the callers above it fill
/// the view in the topology's place), `/` filters by name, `A` lists a
/// service's callers and their ancestors, and it keeps drawing: at least
/// 20 different screens in 5 s while keys move the selection.
#[test]
fn the_dashboard_opens_a_mesh_of_thousands_on_its_storm_and_keeps_up() {
    let _fleet = crate::common::fleet_lock();
    let t = Tmux::start();
    let cmd = format!(
        "{} {} --scenario {}",
        env!("CARGO_BIN_EXE_chaoslab"),
        root().join(TOPOLOGY).display(),
        root().join(SCENARIO).display()
    );
    t.keys(&[&cmd, "Enter"]);
    // The fault comes 5 s after a 2 s warm-up; the storm's services then
    // carry the most load above their baseline.
    let s = t.wait_for(
        "core-entity first, failing",
        Duration::from_secs(40),
        storm_first,
    );
    assert!(s.contains(" callers of core-entity/d"), "{s}");
    let up1 = s.lines().find(|l| l.contains(" ↑1 ")).unwrap_or_default();
    assert!(up1.contains(": hop-d"), "its immediate callers: {s}");
    assert!(!s.contains(" topology "), "{s}");

    // A filter by name: only the incident's d4 chains are listed.
    t.keys(&["/", "hop-d4"]);
    let s = t.wait_for("the filter", Duration::from_secs(5), |s| {
        s.contains("/hop-d4") && first_row(s).is_some_and(|n| n.starts_with("hop-d4"))
    });
    let nodes = Topology::load(&root().join(TOPOLOGY))
        .unwrap()
        .services
        .len();
    assert!(
        s.contains(&format!(" of {nodes} ")),
        "a count of what it lists: {s}"
    );
    t.keys(&["Enter", "Escape"]);
    // `A` on core-entity/dN: it and the services above it, nearest
    // first. Budgets retry in a burst once per TTL (10 s): between two,
    // core-entity's load falls back to its baseline and a healthy leaf's
    // noise can lead the table (in CI, for the 5 s this wait once had),
    // so it waits for the next burst.
    t.wait_for("every service again", Duration::from_secs(12), |s| {
        !s.contains("/hop-d4") && storm_first(s)
    });
    t.keys(&["A"]);
    t.wait_for("the ancestry", Duration::from_secs(5), |s| {
        s.contains("services above it, nearest first")
    });
    t.keys(&["A"]);

    // Responsive: snapshots come 4 a second and every key redraws at
    // once; read the screen every 50 ms for 5 s, moving the selection
    // every other read, and count the different screens.
    let (mut screens, mut last) = (0, String::new());
    let start = Instant::now();
    let mut k = 0;
    while start.elapsed() < Duration::from_secs(5) {
        if k % 2 == 0 {
            t.keys(&[if (k / 2) % 2 == 0 { "j" } else { "k" }]);
        }
        k += 1;
        let s = t.screen();
        if s != last {
            screens += 1;
            last = s;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("a mesh of 2,500 services: {screens} different screens in 5 s");
    assert!(screens >= 20, "{screens} screens in 5 s:\n{last}");
    t.keys(&["q"]);
    t.wait_for("the shell", Duration::from_secs(20), |s| {
        s.trim_end().ends_with("test$")
    });
    let all = t.scrollback();
    assert!(all.contains("chaoslab dashboard closed"), "{all}");
}

/// The shipped scenario two seconds earlier and without its heal: the
/// fault at 3 s, budgets 3 s..22 s, ownership from 22 s and read over
/// 33 s..53 s (two whole TTLs once the budgets' storm has expired), the
/// end at 53 s: every window as long as the shipped one's, seven seconds
/// less to run.
fn shifted_scenario() -> String {
    let shipped = std::fs::read_to_string(root().join(SCENARIO)).unwrap();
    let (steps, rest) = shipped.split_at(shipped.find("  - at: 55s\n").unwrap());
    let expect = &rest[rest.find("expect:").unwrap()..];
    let text = format!("{steps}{expect}")
        .replace("duration: 60s", "duration: 53s")
        .replace("at: 5s", "at: 3s")
        .replace("at: 24s", "at: 22s")
        .replace("at: 35s", "at: 33s")
        .replace("1s..5s", "1s..3s")
        .replace("5s..24s", "3s..22s")
        .replace("35s..55s", "33s..53s")
        .replace(
            "  - during: 57s..60s\n    root_availability: { min: 0.99 }\n",
            "",
        );
    for gone in ["55s", "57s", "heal", "5s..24s"] {
        assert!(!text.contains(gone), "{gone} left in:\n{text}");
    }
    text
}

/// The same scenario on the same mesh spread over four shard processes
/// (SPEC section 19), each placed where `check --shards 4` says, calls
/// crossing shards over HTTP/2: every expectation of the one-process run
/// holds within its tolerance (core-entity's load per retrying depth at
/// 1.1^d within 5% under budgets alone, 1.1 within 4.5% under
/// ownership), each depth reads beside the model, and no shard is left.
/// The scenario is the shipped one shifted ([`shifted_scenario`]).
///
/// Left out of `scripts/test` for time (a minute on five slots took the
/// run past 12 minutes): `cargo nextest run --cargo-profile ci
/// --run-ignored only -E 'test(=incident::the_incidents_figures_hold_over_four_shards)'`.
#[test]
#[ignore = "a minute of the whole suite's 12: run it by name (docs/testing.md)"]
fn the_incidents_figures_hold_over_four_shards() {
    let _fleet = crate::common::fleet_lock();
    let id = std::process::id();
    let report = std::env::temp_dir().join(format!("chaoslab-incident-shards-{id}.json"));
    let scenario = std::env::temp_dir().join(format!("chaoslab-incident-shards-{id}.yaml"));
    std::fs::write(&scenario, shifted_scenario()).unwrap();
    let out = chaoslab(&[
        "run",
        TOPOLOGY,
        "--shards",
        "4",
        "--headless",
        "--scenario",
        scenario.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    let _ = std::fs::remove_file(&scenario);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}\n{stdout}");
    let shards = stderr
        .lines()
        .filter(|l| l.starts_with("node shard "))
        .count();
    assert_eq!(shards, 4, "{stderr}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let _ = std::fs::remove_file(&report);
    assert_eq!(r["saturated"], false, "{}", r["saturation"]);
    let expectations = r["expectations"].as_array().unwrap();
    assert_eq!(expectations.len(), 11);
    for e in expectations {
        assert_eq!(e["passed"], true, "{e}");
    }
    let budget = storm(&r, "budget");
    for d in 4..=9 {
        let n = node(budget, &format!("core-entity/d{d}"));
        let (amp, model) = (
            n["amplification"].as_f64().unwrap(),
            n["model_amplification"].as_f64().unwrap(),
        );
        assert!(
            (amp / model - 1.0).abs() < 0.05,
            "d{d}: {amp} against {model}"
        );
    }
    let own = storm(&r, "ownership");
    for d in [4, 9] {
        let amp = node(own, &format!("core-entity/d{d}"))["amplification"]
            .as_f64()
            .unwrap();
        assert!((amp / 1.1 - 1.0).abs() < 0.045, "d{d}: {amp}");
    }
    crate::processes::assert_no_node_left(Duration::from_secs(3), "after the sharded incident");
}
