//! What one OS process per service costs in throughput.
//!
//! The 7-service chain with no faults, alternating two fleets in one run:
//! the in-process fleet (seven services on one runtime) and seven
//! `chaoslab node` processes on loopback wired by `--peer`, both with the
//! ownership middleware, driven by the same closed loop (`wrk` when it is
//! installed). Prints each round and the median ratio.
//!
//! `cargo bench --bench processes` runs 5 rounds of 5 s each; under
//! `cargo test` it runs one short round as a smoke test.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

#[path = "common/drive.rs"]
#[allow(dead_code)]
mod drive;
use drive::{driver, median, wrk, wrk_available, CHAIN, CONNECTIONS};

use chaoslab::fleet::{Fleet, FleetOptions};
use chaoslab::topology::Topology;

/// The same allocator as the `chaoslab` binary.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Seven `chaoslab node` processes, killed when dropped.
struct Nodes(Vec<Child>);

impl Drop for Nodes {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Starts the chain's nodes from the leaf up; returns them and A's URL.
fn nodes(file: &std::path::Path, t: &Topology) -> (Nodes, String) {
    let mut nodes = Nodes(vec![]);
    let mut below: Option<(String, String)> = None;
    for s in t.services.iter().rev() {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_chaoslab"));
        cmd.args(["node"]).arg(file).args(["--service", &s.name]);
        if let Some((n, u)) = &below {
            cmd.args(["--peer", &format!("{n}={u}")]);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chaoslab node");
        let out = child.stdout.take().expect("piped");
        nodes.0.push(child);
        let url = BufReader::new(out)
            .lines()
            .map_while(Result::ok)
            .find_map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                (w.len() == 3 && w[0] == "service" && w[1] == s.name).then(|| w[2].to_string())
            })
            .expect("the node prints its URL");
        below = Some((s.name.clone(), url));
    }
    (nodes, below.expect("a chain").1)
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (rounds, secs) = if bench { (5, 5) } else { (1, 1) };
    let file =
        std::env::temp_dir().join(format!("chaoslab-bench-chain-{}.yaml", std::process::id()));
    std::fs::write(&file, CHAIN).expect("write the chain");
    let topology = Arc::new(Topology::from_yaml(CHAIN, "bench-chain").expect("valid chain"));
    let use_wrk = wrk_available();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let drive = |url: String| {
        rt.block_on(driver(url.clone(), 1)); // warm the pools
        if use_wrk {
            wrk(&url, secs)
        } else {
            rt.block_on(driver(url, secs))
        }
    };
    println!(
        "one process per service: 7-service chain, no faults, {} for {secs} s per run, {rounds} round(s)",
        if use_wrk {
            format!("wrk -t1 -c{CONNECTIONS}")
        } else {
            format!("in-process closed loop, {CONNECTIONS} connections (wrk not found)")
        }
    );
    let (mut inproc, mut procs, mut ratios) = (vec![], vec![], vec![]);
    for round in 1..=rounds {
        let fleet = rt
            .block_on(Fleet::spawn(
                topology.clone(),
                FleetOptions {
                    seed: 1,
                    ..FleetOptions::default()
                },
            ))
            .unwrap();
        let a = drive(fleet.entry_url());
        rt.block_on(fleet.shutdown());
        let (n, url) = nodes(&file, &topology);
        let b = drive(url);
        drop(n);
        println!(
            "round {round}: in-process {a:>8.0} root req/s   per-process {b:>8.0} root req/s   ratio {:.3}",
            b / a
        );
        inproc.push(a);
        procs.push(b);
        ratios.push(b / a);
    }
    let r = median(&mut ratios);
    println!(
        "median: in-process {:.0}, per-process {:.0} root req/s; per-process/in-process = {r:.3}",
        median(&mut inproc),
        median(&mut procs)
    );
    let _ = std::fs::remove_file(&file);
}
