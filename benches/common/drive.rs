//! What the throughput benchmarks share: closed-loop load from `wrk` when
//! it is installed (a separate process), else from an in-process driver,
//! and the median of a few rounds. Included by each bench with `#[path]`.

use std::process::Command;

use chaoslab::fleet::{Fleet, FleetOptions};
use chaoslab::topology::Topology;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The chain every throughput bench drives: seven services, no faults.
pub const CHAIN: &str = r#"
name: bench-chain
description: seven services, no faults
policy: { preset: ownership, attempts: 2, budget: 0.1 }
services:
  A: { calls: [B] }
  B: { calls: [C] }
  C: { calls: [D] }
  D: { calls: [E] }
  E: { calls: [F] }
  F: { calls: [G] }
  G: {}
"#;

/// Connections the load keeps open.
pub const CONNECTIONS: usize = 64;

/// Whether `wrk` is installed.
pub fn wrk_available() -> bool {
    Command::new("wrk")
        .arg("--version")
        .output()
        .is_ok_and(|o| !o.stdout.is_empty() || !o.stderr.is_empty())
}

/// Root requests per second wrk achieved.
pub fn wrk(url: &str, secs: u64) -> f64 {
    let out = Command::new("wrk")
        .args([
            "-t1",
            &format!("-c{CONNECTIONS}"),
            &format!("-d{secs}s"),
            url,
        ])
        .output()
        .expect("run wrk");
    let text = String::from_utf8_lossy(&out.stdout);
    let non2xx = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Non-2xx or 3xx responses:"))
        .map(|v| v.trim().parse::<u64>().unwrap_or(0))
        .unwrap_or(0);
    assert_eq!(non2xx, 0, "the healthy chain answered errors:\n{text}");
    text.lines()
        .find_map(|l| l.strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no Requests/sec in wrk's output:\n{text}"))
}

/// Root requests per second an in-process closed loop achieved.
pub async fn driver(url: String, secs: u64) -> f64 {
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = vec![];
    for _ in 0..CONNECTIONS {
        let (http, url, done, stop) = (http.clone(), url.clone(), done.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                if let Ok(r) = http.get(&url).send().await {
                    assert!(r.status().is_success());
                    let _ = r.bytes().await;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    done.load(Ordering::Relaxed) as f64 / secs as f64
}

/// The median of a few figures.
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// One side of a comparison: its name and the fleet it starts.
#[derive(Clone)]
pub struct Side {
    /// Its name in the printed rounds.
    pub name: &'static str,
    /// The topology.
    pub topology: Arc<Topology>,
    /// How the fleet starts.
    pub opts: FleetOptions,
}

/// Runs `title`'s two fleets alternately, a fresh fleet each run, for 5
/// rounds of 5 s under `cargo bench` (one short round under `cargo test`),
/// printing each round and the median ratio of the second to the first.
pub fn alternate(title: &str, sides: [Side; 2]) {
    let bench = std::env::args().any(|a| a == "--bench");
    let (rounds, secs) = if bench { (5, 5) } else { (1, 1) };
    let use_wrk = wrk_available();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!(
        "{title}: 7-service chain, no faults, {} for {secs} s per run, {rounds} round(s)",
        if use_wrk {
            format!("wrk -t1 -c{CONNECTIONS}")
        } else {
            format!("in-process closed loop, {CONNECTIONS} connections (wrk not found)")
        }
    );
    let (mut first, mut second, mut ratios) = (vec![], vec![], vec![]);
    for round in 1..=rounds {
        let mut pair = [0.0; 2];
        for (i, side) in sides.iter().enumerate() {
            let fleet = rt
                .block_on(Fleet::spawn(side.topology.clone(), side.opts.clone()))
                .unwrap();
            let url = fleet.entry_url();
            // Warm the connection pools.
            rt.block_on(driver(url.clone(), 1));
            pair[i] = if use_wrk {
                wrk(&url, secs)
            } else {
                rt.block_on(driver(url, secs))
            };
            rt.block_on(fleet.shutdown());
        }
        let ratio = pair[1] / pair[0];
        println!(
            "round {round}: {} {:>8.0} root req/s   {} {:>8.0} root req/s   ratio {:.3}",
            sides[0].name, pair[0], sides[1].name, pair[1], ratio
        );
        first.push(pair[0]);
        second.push(pair[1]);
        ratios.push(ratio);
    }
    let r = median(&mut ratios);
    println!(
        "median: {} {:.0}, {} {:.0} root req/s; {}/{} = {:.3} (cost {:.1}%)",
        sides[0].name,
        median(&mut first),
        sides[1].name,
        median(&mut second),
        sides[1].name,
        sides[0].name,
        r,
        (1.0 - r) * 100.0
    );
}
