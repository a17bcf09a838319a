//! One mesh over shard processes at Meta's size (SPEC section 19): Meta's
//! 18,571 services (ATC '23), drawn by `chaoslab generate --services 18571
//! --like meta --seed 1` (29,789 endpoints, 110,812 calls), run over 6
//! shards at 50 root requests a second for 30 s, as a user runs it:
//!
//! ```text
//! chaoslab run meta.yaml --shards 6 --rps 50 --headless --duration 30s --report r.json
//! ```
//!
//! It times the start (the command to its first second of load, read off
//! the first progress line, which says how long the load has run), samples
//! the resident memory of the session and of every shard it names (their
//! peaks, `VmHWM`, added up: an upper bound of their sum's peak), and
//! reads the report: the roots sent against those dropped or skipped, the
//! saturation verdict, the reads of the shards missed, descriptors refused
//! (EMFILE), and the hops a second the mesh served (every endpoint's
//! requests over the measured window). It then checks the bounds SPEC
//! section 19 sets for this machine (2 cores): a start under 60 s, the
//! shards under 8 GiB in all, no EMFILE, under 1% of the roots not sent,
//! not SATURATED; and exits 1, naming each bound missed, when one is.
//!
//! `cargo bench --bench shard_scale` (some 100 s; `-- --services N
//! --shards K --rps R --seconds S` for another mesh); under `cargo test`
//! 300 services over 2 shards for 2 s, whose bounds are the same.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

#[path = "common/proc.rs"]
mod proc;
use proc::{served, status_mib};

/// What a run is asked for.
struct Ask {
    services: u32,
    shards: usize,
    rps: f64,
    seconds: u64,
}

/// The bounds of SPEC section 19 on a 2-core machine.
const START_WITHIN: Duration = Duration::from_secs(60);
const SHARDS_MEMORY_GIB: f64 = 8.0;
const UNSENT_AT_MOST: f64 = 0.01;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bench = args.iter().any(|a| a == "--bench");
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .map(|v| {
                v.parse::<f64>()
                    .unwrap_or_else(|_| panic!("{name} takes a number, not {v:?}"))
            })
    };
    let (services, shards, rps, seconds) = if bench {
        (18_571, 6, 50.0, 30)
    } else {
        (300, 2, 20.0, 2)
    };
    let ask = Ask {
        services: arg("--services").map_or(services, |v| v as u32),
        shards: arg("--shards").map_or(shards, |v| v as usize),
        rps: arg("--rps").unwrap_or(rps),
        seconds: arg("--seconds").map_or(seconds, |v| v as u64),
    };
    let missed = run(&ask);
    if !missed.is_empty() {
        eprintln!("shard_scale: bounds missed: {}", missed.join("; "));
        std::process::exit(1);
    }
}

/// The run's files and its session process: the session is killed if
/// the bench ends first (its shards stop when its pipes close), and the
/// files removed, on every way out.
struct Run {
    topology: PathBuf,
    report: PathBuf,
    session: Option<Child>,
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Some(mut c) = self.session.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_file(&self.topology);
        let _ = std::fs::remove_file(&self.report);
    }
}

/// What the session's standard error told, as it came.
#[derive(Default)]
struct Told {
    /// The shards' process ids (`node shard K/N … pid P`).
    shards: Vec<u32>,
    /// When the load began, after the command: the first progress line's
    /// time less the load time it states.
    load_from: Option<Duration>,
    /// Lines that name a refused descriptor.
    emfile: Vec<String>,
}

/// Runs `ask`; returns the bounds it missed.
fn run(ask: &Ask) -> Vec<String> {
    let yaml = chaoslab::generate::generate(&chaoslab::generate::Options {
        services: ask.services,
        like: chaoslab::generate::Like::Meta,
        seed: 1,
        rps: ask.rps,
        output: None,
    })
    .expect("the mesh is drawn");
    let t = chaoslab::topology::Topology::from_yaml(&yaml, "meta").expect("the mesh validates");
    println!(
        "shard_scale: {} services drawn like Meta's ({} endpoints, {} calls, {} roots) over {} shards at {} rps for {} s",
        ask.services,
        t.services.len(),
        t.edges.len(),
        t.load.roots.len(),
        ask.shards,
        ask.rps,
        ask.seconds
    );
    let dir = std::env::temp_dir();
    let tag = format!("chaoslab-shard-scale-{}", std::process::id());
    let mut run = Run {
        topology: dir.join(format!("{tag}.yaml")),
        report: dir.join(format!("{tag}.json")),
        session: None,
    };
    std::fs::write(&run.topology, &yaml).expect("the mesh is written");
    let t0 = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_chaoslab"))
        .arg("run")
        .arg(&run.topology)
        .args(["--shards", &ask.shards.to_string()])
        .args(["--rps", &ask.rps.to_string()])
        .args(["--duration", &format!("{}s", ask.seconds)])
        .arg("--headless")
        .arg("--report")
        .arg(&run.report)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chaoslab starts");
    let session_pid = child.id();
    let err = child.stderr.take().expect("piped");
    run.session = Some(child);
    let told = Arc::new(Mutex::new(Told::default()));
    let reader = {
        let told = told.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let mut told = told.lock().unwrap();
                if line.starts_with("node shard ") {
                    if let Some(pid) = word_after(&line, "pid ") {
                        told.shards.push(pid as u32);
                    }
                }
                if told.load_from.is_none() {
                    if let Some(ran) = progress(&line) {
                        told.load_from = t0.elapsed().checked_sub(ran);
                    }
                }
                if line.contains("EMFILE") || line.contains("Too many open files") {
                    told.emfile.push(line);
                }
            }
        })
    };
    // Peaks: each process's own high-water mark, read until it ends.
    let mut session_peak = 0.0f64;
    let mut shard_peaks: Vec<(u32, f64)> = vec![];
    let status = loop {
        if let Some(s) = run
            .session
            .as_mut()
            .unwrap()
            .try_wait()
            .expect("the session is waited for")
        {
            break s;
        }
        session_peak = session_peak.max(hwm_mib(session_pid).unwrap_or(0.0));
        let pids = told.lock().unwrap().shards.clone();
        for pid in pids {
            let Some(mib) = hwm_mib(pid) else { continue };
            match shard_peaks.iter_mut().find(|(p, _)| *p == pid) {
                Some((_, peak)) => *peak = peak.max(mib),
                None => shard_peaks.push((pid, mib)),
            }
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    let wall = t0.elapsed();
    run.session = None;
    reader.join().expect("the reader ends");
    let told = told.lock().unwrap();
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&run.report).expect("the run wrote its report"))
            .expect("the report is JSON");
    let num = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
    let root = &report["root"];
    let served = served(&report);
    let (sent, dropped, skipped, unsent) =
        (served.sent, served.dropped, served.skipped, served.unsent);
    let (measured, hops) = (served.measured, served.hops);
    let saturated = report["saturated"].as_bool().unwrap_or(true);
    let fd_errors = num(&report["lab"]["fd_errors"]);
    let misses = num(&report["lab"]["node_misses"]);
    let shards_gib = shard_peaks.iter().map(|(_, m)| m).sum::<f64>() / 1024.0;
    let start = told.load_from;
    println!(
        "  start: {} (the command to its first second of load); {:.0} s from the command to its exit, status {}",
        start.map_or("not seen".into(), |s| format!("{:.1} s", s.as_secs_f64())),
        wall.as_secs_f64(),
        status.code().map_or("a signal".into(), |c| c.to_string()),
    );
    println!(
        "  resident at the most: the {} shards {:.2} GiB in all ({}), the session {:.2} GiB",
        shard_peaks.len(),
        shards_gib,
        shard_peaks
            .iter()
            .map(|(_, m)| format!("{m:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
            + " MiB",
        session_peak / 1024.0,
    );
    println!(
        "  roots: {sent:.0} sent in {measured:.1} s ({:.1} of {} a second), {dropped:.0} dropped, {skipped:.0} skipped ({:.2}% not sent); availability {:.4}",
        sent / measured,
        ask.rps,
        unsent * 100.0,
        num(&root["availability"]),
    );
    println!(
        "  {:.0} hops a second ({:.1} a root request); saturated {saturated}{}; reads of the shards missed {misses:.0}; descriptors refused {fd_errors:.0}",
        hops / measured,
        hops / num(&root["requests"]).max(1.0),
        if saturated {
            format!(
                " ({})",
                report["saturation"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|s| s.as_str()).collect::<Vec<_>>().join("; "))
                    .unwrap_or_default()
            )
        } else {
            String::new()
        },
    );
    let mut missed = vec![];
    if !status.success() {
        missed.push(format!("the run exited with {status}"));
    }
    match start {
        Some(s) if s < START_WITHIN => {}
        Some(s) => missed.push(format!(
            "started in {:.1} s (under {START_WITHIN:?})",
            s.as_secs_f64()
        )),
        None => missed.push("no progress line: the load's start was not seen".into()),
    }
    if shard_peaks.len() != ask.shards {
        missed.push(format!(
            "{} shards named, {} asked",
            shard_peaks.len(),
            ask.shards
        ));
    }
    if shards_gib >= SHARDS_MEMORY_GIB {
        missed.push(format!(
            "the shards held {shards_gib:.2} GiB (under {SHARDS_MEMORY_GIB} GiB)"
        ));
    }
    if fd_errors > 0.0 || !told.emfile.is_empty() {
        missed.push(format!("EMFILE: {fd_errors} refused, {:?}", told.emfile));
    }
    // A report without its counts (NaN) misses the bound too.
    if unsent.is_nan() || unsent >= UNSENT_AT_MOST {
        missed.push(format!(
            "{:.2}% of the roots not sent (under 1%)",
            unsent * 100.0
        ));
    }
    if saturated {
        missed.push("SATURATED".into());
    }
    if missed.is_empty() {
        println!("  within SPEC section 19's bounds: start under 60 s, shards under 8 GiB, no EMFILE, under 1% of roots not sent, not SATURATED");
    }
    missed
}

/// The number after `key` in `line`, if one follows it.
fn word_after(line: &str, key: &str) -> Option<u64> {
    let rest = &line[line.find(key)? + key.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The load time a progress line states: `[  3.4s] …` or
/// `[  1.2s warm-up] …`.
fn progress(line: &str) -> Option<Duration> {
    let inner = line.strip_prefix('[')?;
    let secs = inner.trim_start().split('s').next()?;
    secs.parse::<f64>().ok().map(Duration::from_secs_f64)
}

/// A process's resident high-water mark, in MiB, while it runs.
fn hwm_mib(pid: u32) -> Option<f64> {
    status_mib(&pid.to_string(), "VmHWM:")
}
