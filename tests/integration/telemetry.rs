//! `--metrics`: a real Prometheus server scrapes the lab, and its `rate()`
//! agrees with the lab's own report.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::time::Instant;

use serde_json::Value;

use crate::common::{edge, fleet_lock, root};
use crate::tables::{node, num};

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A plain HTTP/1.0 GET: (status, body).
fn get(addr: &str, path: &str) -> (u16, String) {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return (0, String::new());
    };
    let _ = write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    let mut buf = String::new();
    let _ = s.read_to_string(&mut buf);
    let status = buf
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = buf
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

/// `%`-encodes a PromQL query for a URL.
fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The value of an instant query's single result.
fn query(prom: &str, q: &str) -> Option<f64> {
    let (status, body) = get(prom, &format!("/api/v1/query?query={}", encode(q)));
    if status != 200 {
        return None;
    }
    let v: Value = serde_json::from_str(&body).ok()?;
    v["data"]["result"][0]["value"][1].as_str()?.parse().ok()
}

#[test]
fn a_real_prometheus_scrape_agrees_with_the_report() {
    let _fleet = fleet_lock();
    let report = std::env::temp_dir().join(format!("chaoslab-prom-{}.json", std::process::id()));
    let mut lab = Killed(
        Command::new(env!("CARGO_BIN_EXE_chaoslab"))
            .args([
                "run",
                "topologies/uber-chain.yaml",
                "--headless",
                "--policy",
                "retry",
                "--duration",
                "14s",
                "--warmup",
                "2s",
                "--metrics",
                ":0",
                "--report",
                report.to_str().unwrap(),
            ])
            .current_dir(root())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start chaoslab"),
    );
    // The address in use is announced on stderr.
    let mut lines = BufReader::new(lab.0.stderr.take().unwrap()).lines();
    let target = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            l.strip_prefix("metrics: http://")
                .map(|a| a.trim_end_matches("/metrics").to_string())
        })
        .expect("chaoslab announces its metrics address");
    let started = Instant::now();
    // Keep draining its progress lines so it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    let (status, body) = get(&target, "/metrics");
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("chaoslab_requests_total{service=\"D\"}"),
        "{body}"
    );

    let dir = std::env::temp_dir().join(format!("chaoslab-prom-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global: {{ scrape_interval: 1s, evaluation_interval: 1s }}\n\
             scrape_configs:\n  - job_name: chaoslab\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let prom = format!("127.0.0.1:{}", free_port());
    let _prometheus = Killed(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={prom}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus runs (scripts/test installs it)"),
    );
    let ready = Instant::now();
    while get(&prom, "/-/ready").0 != 200 {
        assert!(
            ready.elapsed() < Duration::from_secs(20),
            "prometheus never got ready"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // Wait until Prometheus holds 5 s of scrapes from the measured part.
    while started.elapsed() < Duration::from_secs(13) {
        std::thread::sleep(Duration::from_millis(200));
    }
    let d_rate = query(&prom, "rate(chaoslab_requests_total{service=\"D\"}[5s])")
        .expect("prometheus has D's requests");
    let cd_rate = query(
        &prom,
        "rate(chaoslab_retries_total{caller=\"C\",callee=\"D\"}[5s])",
    )
    .expect("prometheus has C→D's retries");
    let status = lab.0.wait().unwrap();
    assert!(status.success(), "chaoslab failed: {status}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let _ = std::fs::remove_file(&report);
    let _ = std::fs::remove_dir_all(&dir);
    let d = num(node(&r, "D"), "rps");
    let cd = num(edge(&r, "C", "D"), "retries") / num(&r, "duration_s");
    eprintln!("prometheus: D {d_rate:.1} rps, C→D {cd_rate:.1} retries/s; report: {d:.1}, {cd:.1}");
    assert!(
        (d_rate - d).abs() <= 0.05 * d,
        "D: prometheus {d_rate:.1}, report {d:.1}"
    );
    assert!(
        (cd_rate - cd).abs() <= 0.05 * cd,
        "C→D: prometheus {cd_rate:.1}, report {cd:.1}"
    );
}
