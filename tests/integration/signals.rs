//! Signals and output paths, as a CI job meets them: SIGINT or SIGTERM
//! during a run keeps what ran (the table, reports marked interrupted)
//! and exits 130 or 143; a second signal exits at once; a bad output
//! path is refused before any fleet starts.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use crate::common::{chaoslab, fleet_lock, root, text, wait_until, Killed};

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("chaoslab-sig-{}-{name}", std::process::id()))
}

pub fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill -{sig} {pid}");
}

/// Starts `chaoslab args` with its stdout and stderr piped, and returns
/// the process and its lines as they come (`true` for stdout).
pub fn start(args: &[&str]) -> (Killed, mpsc::Receiver<(bool, String)>) {
    let mut child = Killed(
        Command::new(env!("CARGO_BIN_EXE_chaoslab"))
            .args(args)
            .current_dir(root())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start chaoslab"),
    );
    let (tx, rx) = mpsc::channel();
    let out = child.0.stdout.take().unwrap();
    let err = child.0.stderr.take().unwrap();
    for (is_out, pipe) in [
        (true, Box::new(out) as Box<dyn Read + Send>),
        (false, Box::new(err)),
    ] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if tx.send((is_out, line)).is_err() {
                    break;
                }
            }
        });
    }
    (child, rx)
}

/// Waits until a line from `lines` (stdout or stderr) satisfies `ok`,
/// keeping the stdout lines read meanwhile in `out`.
pub fn wait_for_line(
    lines: &mpsc::Receiver<(bool, String)>,
    out: &mut Vec<String>,
    what: &str,
    ok: impl Fn(&str) -> bool,
) {
    wait_until(Duration::from_secs(20), what, || {
        while let Ok((is_out, line)) = lines.try_recv() {
            let found = ok(&line);
            if is_out {
                out.push(line);
            }
            if found {
                return Some(());
            }
        }
        None
    });
}

/// Starts `chaoslab args`, waits for a line that satisfies `ready`, lets
/// it run `then` more, sends `sig`, and returns the exit code, stdout and
/// how long it took to exit after the signal.
fn interrupt(
    args: &[&str],
    ready: (&str, fn(&str) -> bool),
    then: Duration,
    sig: &str,
) -> (Option<i32>, String, Duration) {
    let (mut child, lines) = start(args);
    let mut out = vec![];
    wait_for_line(&lines, &mut out, ready.0, ready.1);
    // How long it runs before the signal is the experiment, not a guess.
    std::thread::sleep(then);
    signal(child.0.id(), sig);
    let sent = Instant::now();
    // Both pipes end when the process does.
    for (is_out, line) in lines.iter() {
        if is_out {
            out.push(line);
        }
    }
    let status = child.0.wait().unwrap();
    let took = sent.elapsed();
    let mut out = out.join("\n");
    out.push('\n');
    (status.code(), out, took)
}

/// A headless run's first progress line past its warm-up.
fn measuring(line: &str) -> bool {
    line.starts_with('[') && !line.contains("warm-up")
}

#[test]
fn sigint_and_sigterm_keep_the_results_of_a_headless_run() {
    let _fleet = fleet_lock();
    for (sig, code) in [("INT", 130), ("TERM", 143)] {
        let (report, junit) = (temp(&format!("{sig}.json")), temp(&format!("{sig}.xml")));
        let (status, out, took) = interrupt(
            &[
                "run",
                "topologies/uber-chain.yaml",
                "--headless",
                "--duration",
                "30s",
                "--warmup",
                "1s",
                "--report",
                report.to_str().unwrap(),
                "--junit",
                junit.to_str().unwrap(),
            ],
            ("the run to be past its warm-up", measuring),
            // The run the report covers: 3 s of its measured window.
            Duration::from_secs(3),
            sig,
        );
        assert_eq!(status, Some(code), "SIG{sig}: {out}");
        assert!(
            took < Duration::from_secs(4),
            "SIG{sig}: exited {took:?} after"
        );
        assert!(
            out.contains("entry:"),
            "SIG{sig}: the table is printed\n{out}"
        );
        let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        assert_eq!(r["interrupted"], true);
        let ran = r["duration_s"].as_f64().unwrap();
        assert!(
            (1.5..4.5).contains(&ran),
            "SIG{sig}: the report covers {ran} s"
        );
        assert!(r["root"]["requests"].as_u64().unwrap() > 100);
        let x = std::fs::read_to_string(&junit).unwrap();
        assert!(x.contains(r#"<error type="interrupted""#), "{x}");
        let _ = std::fs::remove_file(&report);
        let _ = std::fs::remove_file(&junit);
    }
}

#[test]
fn sigterm_keeps_the_results_of_serve() {
    let _fleet = fleet_lock();
    let report = temp("serve.json");
    let (status, out, _) = interrupt(
        &[
            "serve",
            "topologies/uber-chain.yaml",
            "--report",
            report.to_str().unwrap(),
        ],
        ("serve to be serving", |l| l.starts_with("serving ")),
        Duration::ZERO,
        "TERM",
    );
    assert_eq!(status, Some(143), "{out}");
    assert!(out.contains("entry:"), "the table is printed\n{out}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(r["interrupted"], true);
    let _ = std::fs::remove_file(&report);
}

#[test]
fn a_second_sigint_exits_at_once() {
    let _fleet = fleet_lock();
    // Every request hangs in B for 10 s, so the first signal's wind-down
    // waits for requests in flight (up to its 2 s grace).
    let topology = temp("slow.yaml");
    std::fs::write(
        &topology,
        "name: slow\nload: { rps: 50 }\nservices:\n  A: { calls: [B] }\n  B: { fault: { latency: 10s } }\n",
    )
    .unwrap();
    let report = temp("slow.json");
    let topology_arg = topology.to_str().unwrap();
    let (mut child, lines) = start(&[
        "run",
        topology_arg,
        "--headless",
        "--duration",
        "30s",
        "--report",
        report.to_str().unwrap(),
    ]);
    let mut out = vec![];
    wait_for_line(&lines, &mut out, "requests in flight", |l| {
        // `[  1.0s] 50 of 50 rps, ...`: sent, and hanging in B.
        l.starts_with('[')
            && l.split_once("] ")
                .and_then(|(_, r)| r.split_whitespace().next())
                .and_then(|n| n.parse::<f64>().ok())
                .is_some_and(|n| n > 0.0)
    });
    signal(child.0.id(), "INT");
    wait_for_line(&lines, &mut out, "the first SIGINT to be taken", |l| {
        l.starts_with("SIGINT: stopping")
    });
    signal(child.0.id(), "INT");
    let sent = Instant::now();
    let status = child.0.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(
        // Below the 2 s grace the first signal gives requests in flight,
        // with room for a loaded machine.
        sent.elapsed() < Duration::from_millis(1500),
        "the second signal took {:?}",
        sent.elapsed()
    );
    assert!(!report.exists(), "it left without finishing the report");
    let _ = std::fs::remove_file(&topology);
}

#[test]
fn bad_output_paths_are_refused_before_any_fleet_starts() {
    let dir = temp("outs");
    std::fs::create_dir_all(&dir).unwrap();
    let in_dir = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let base = [
        "run",
        "topologies/uber-chain.yaml",
        "--headless",
        "--duration",
        "20s",
    ];
    for (extra, says) in [
        (
            vec!["--report".to_string(), "/nonexistent/r.json".into()],
            "does not exist",
        ),
        (
            vec!["--report".into(), dir.to_str().unwrap().into()],
            "is a folder",
        ),
        (
            vec!["--junit".into(), "topologies/uber-chain.yaml".into()],
            "is the input file",
        ),
        (
            vec![
                "--report".into(),
                in_dir("r.json"),
                "--junit".into(),
                in_dir("r.json"),
            ],
            "is also given to --report",
        ),
        (
            vec!["--record".into(), "/nonexistent/s.yaml".into()],
            "does not exist",
        ),
        (
            vec!["--cast".into(), in_dir("s.cast")],
            "a headless run draws none",
        ),
        (
            vec![
                "--processes".into(),
                "--remote".into(),
                "A=http://a/".into(),
            ],
            "give one of them",
        ),
        (vec!["--peer".into(), "A=http://a/".into()], "give --remote"),
    ] {
        let mut args: Vec<&str> = base.to_vec();
        args.extend(extra.iter().map(String::as_str));
        let t = Instant::now();
        let o = chaoslab(&args);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(says), "{extra:?}: {err}");
        assert!(
            // At once, not after a run: a start on a loaded machine has
            // taken just over a second.
            t.elapsed() < Duration::from_secs(5),
            "{extra:?} took {:?}",
            t.elapsed()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
