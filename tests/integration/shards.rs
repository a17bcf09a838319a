//! `check --shards N` (SPEC section 19): where each service would run over
//! N shards, and what crosses them; nothing started.

use crate::common::{chaoslab, succeed, text};

#[test]
fn check_prints_the_placement_and_refuses_more_shards_than_services() {
    // Train Ticket: services with endpoints, which move with their service.
    let path = "topologies/trainticket.yaml";
    let (stdout, _) = succeed(&["check", path, "--shards", "3"]);
    let shards: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("  shard "))
        .collect();
    assert_eq!(shards.len(), 3, "{stdout}");
    let services: usize = shards
        .iter()
        .map(|l| {
            l.split_whitespace()
                .nth(2)
                .unwrap()
                .parse::<usize>()
                .unwrap()
        })
        .sum();
    let t = chaoslab::topology::Topology::load(&crate::common::root().join(path)).unwrap();
    assert_eq!(
        services,
        t.services.len(),
        "every service placed once: {stdout}"
    );
    // Callers beside their callees: far less crosses than round-robin.
    let line = stdout
        .lines()
        .find(|l| l.contains("calls crossing shards"))
        .unwrap();
    let pct = |s: &str| s.trim_end_matches(['%', ',']).parse::<f64>().unwrap();
    let words: Vec<&str> = line.split_whitespace().collect();
    let placed = pct(words[3]);
    let round_robin = pct(words.last().unwrap());
    assert!(placed < round_robin, "{line}");

    let out = chaoslab(&["check", "topologies/bookinfo.yaml", "--shards", "5"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--shards 5: the topology has 4 services to place"),
        "{stderr}"
    );
    let out = chaoslab(&["check", "topologies/bookinfo.yaml", "--shards", "0"]);
    assert_eq!(out.status.code(), Some(2));
}

/// `run --shards 3` of the chain with D failing under plain retries: each
/// service's load beside the model as in one process, and the shard
/// holding the chain's tail killed with SIGKILL mid-run: the run goes on
/// to its end, reports which shard died and when, its services down from
/// then, exits 4, and leaves no shard process behind.
#[test]
fn a_chain_over_three_shards_amplifies_as_the_model_says_and_a_killed_shard_is_reported() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::time::Duration;
    use tokio::time::Instant;

    use crate::common::{fleet_lock, root, Killed};
    use crate::processes::{assert_no_node_left, nodes_alive};

    let _fleet = fleet_lock();
    assert_no_node_left(Duration::ZERO, "before the test");
    let chain = "topologies/uber-chain.yaml";
    let t = chaoslab::topology::Topology::load(&root().join(chain)).unwrap();
    let placed = chaoslab::topology::shards::place(&t, 3).unwrap();
    let tail = placed.shard_of[t.service_id("G").unwrap()];
    let on_tail: Vec<&str> = (0..t.services.len())
        .filter(|&i| placed.shard_of[i] == tail)
        .map(|i| t.services[i].name.as_str())
        .collect();
    let report = std::env::temp_dir().join(format!("chaoslab-shards-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&report);
    let mut child = Command::new(env!("CARGO_BIN_EXE_chaoslab"))
        .args(["run", chain, "--shards", "3", "--headless", "--fail", "D"])
        .args(["--policy", "retry", "--warmup", "1s", "--duration", "9s"])
        .arg("--report")
        .arg(&report)
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chaoslab");
    let stderr = child.stderr.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut child = Killed(child);
    let started = Instant::now();
    // The shards' lines, then the progress: the tail's shard killed once
    // the run has measured 5 s.
    let mut lines = BufReader::new(stderr).lines().map_while(Result::ok);
    let mut shards = vec![];
    let mut seen = String::new();
    for line in lines.by_ref() {
        seen.push_str(&line);
        seen.push('\n');
        let w: Vec<&str> = line.split_whitespace().collect();
        if let ["node", "shard", k, ..] = w.as_slice() {
            let pid: u32 = w[w.iter().position(|&x| x == "pid").unwrap() + 1]
                .parse()
                .unwrap();
            shards.push((k.split('/').next().unwrap().parse::<usize>().unwrap(), pid));
        }
        if line.starts_with("[  6.") || line.starts_with("[  7.") {
            break;
        }
    }
    assert_eq!(shards.len(), 3, "{seen}");
    assert_eq!(nodes_alive().len(), 3, "{seen}");
    let pid = shards.iter().find(|&&(k, _)| k == tail).unwrap().1;
    let killed_at = started.elapsed().as_secs_f64();
    let ok = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let rest: Vec<String> = lines.collect();
    let status = child.0.wait().unwrap();
    let mut out = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut out).unwrap();
    let rest = rest.join("\n");
    assert_eq!(status.code(), Some(4), "{out}\n{seen}{rest}");
    assert!(rest.contains(&format!("shard {tail} died at")), "{rest}");
    assert!(
        out.contains(&format!("SHARD LOST: shard {tail} at")),
        "{out}"
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let _ = std::fs::remove_file(&report);
    // Which shard, when (seen within the watch's tenth of a second and the
    // start's own seconds), how many services, why.
    let lost = r["shards_lost"].as_array().unwrap();
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert_eq!(lost[0]["shard"], tail);
    assert_eq!(lost[0]["services"], on_tail.len());
    assert!(
        lost[0]["why"]
            .as_str()
            .unwrap()
            .ends_with("killed by signal 9"),
        "{lost:?}"
    );
    let at = lost[0]["t_s"].as_f64().unwrap();
    assert!(at > 5.0 && at < killed_at + 0.5, "{at} against {killed_at}");
    assert_eq!(r["events"][0]["origin"], "lab");
    // Not hidden as a machine falling behind: the dead shard's failed
    // reads are its death's.
    assert_eq!(r["saturated"], false, "{}", r["saturation"]);
    // Before the loss: every service's load beside the model, as in one
    // process (5% here: the window before the kill is some 4 s at 200
    // rps).
    let before = &r["phases"][0];
    for n in before["nodes"].as_array().unwrap() {
        let (amp, model) = (
            n["amplification"].as_f64().unwrap(),
            n["model_amplification"].as_f64().unwrap(),
        );
        assert!(
            (amp / model - 1.0).abs() < 0.05,
            "{}: {amp} against {model}",
            n["name"]
        );
    }
    let g = before["nodes"][6]["model_amplification"].as_f64().unwrap();
    assert!(g > 5.0, "a storm below D: G at {g}x");
    // After: the lost shard's services take nothing and are down.
    let after = &r["phases"][1];
    for name in &on_tail {
        let n = after["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == *name)
            .unwrap();
        assert_eq!(n["requests"], 0, "{name}: {n}");
    }
    let faults = after["faults"].to_string();
    assert!(faults.contains("down"), "{faults}");
    assert_no_node_left(Duration::from_secs(3), "after the run");
}
