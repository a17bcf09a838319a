//! `--metrics` and `--control` from outside, as a user runs them: a real
//! Prometheus server scrapes the lab and its `rate()` agrees with the
//! lab's own report; a policy switched over the control API shows in
//! Prometheus within 5 s and in the report's events.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use tokio::time::Instant;

use serde_json::Value;

use crate::common::{edge, fleet_lock, free_port, get, http, root, Killed};
use crate::tables::{node, num};

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
pub fn query(prom: &str, q: &str) -> Option<f64> {
    let (status, body) = get(prom, &format!("/api/v1/query?query={}", encode(q)));
    if status != 200 {
        return None;
    }
    let v: Value = serde_json::from_str(&body).ok()?;
    v["data"]["result"][0]["value"][1].as_str()?.parse().ok()
}

/// A real Prometheus scraping `target` every second, its data in `dir`;
/// returns once it is ready, with its address.
pub fn prometheus(target: &str, dir: &Path) -> (Killed, String) {
    std::fs::create_dir_all(dir).unwrap();
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
    let server = Killed(
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
    (server, prom)
}

/// Starts `chaoslab` with `args` and reads the endpoints it announces on
/// stderr: (process, metrics `HOST:PORT`, control `HOST:PORT`).
pub fn lab_with_endpoints(args: &[&str]) -> (Killed, String, String) {
    let mut lab = Killed(
        Command::new(env!("CARGO_BIN_EXE_chaoslab"))
            .args(args)
            .args(["--metrics", ":0", "--control", ":0"])
            .current_dir(root())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start chaoslab"),
    );
    let mut lines = BufReader::new(lab.0.stderr.take().unwrap()).lines();
    let (mut metrics, mut control) = (None, None);
    for l in lines.by_ref().map_while(Result::ok) {
        if let Some(a) = l.strip_prefix("metrics: http://") {
            metrics = Some(a.trim_end_matches("/metrics").to_string());
        }
        if let Some(a) = l.strip_prefix("control: http://") {
            control = Some(a.split('/').next().unwrap().to_string());
        }
        if metrics.is_some() && control.is_some() {
            break;
        }
    }
    // Keep draining its progress lines so it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (
        lab,
        metrics.expect("chaoslab announces its metrics address"),
        control.expect("chaoslab announces its control address"),
    )
}

#[test]
fn prometheus_agrees_with_the_report_and_sees_a_policy_switched_over_the_api() {
    let _fleet = fleet_lock();
    let id = std::process::id();
    let report = std::env::temp_dir().join(format!("chaoslab-prom-{id}.json"));
    let (mut lab, target, control) = lab_with_endpoints(&[
        "run",
        "topologies/uber-chain.yaml",
        "--headless",
        "--policy",
        "retry",
        "--duration",
        "20s",
        "--warmup",
        "2s",
        "--report",
        report.to_str().unwrap(),
    ]);
    let started = Instant::now();
    let (status, body) = get(&target, "/metrics");
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("chaoslab_requests_total{service=\"D\"}"),
        "{body}"
    );
    let dir = std::env::temp_dir().join(format!("chaoslab-prom-{id}"));
    let (_prometheus, prom) = prometheus(&target, &dir);

    // Under retry: Prometheus's rates against the report so far.
    while started.elapsed() < Duration::from_secs(11) {
        std::thread::sleep(Duration::from_millis(200));
    }
    let d_rate = query(&prom, "rate(chaoslab_requests_total{service=\"D\"}[5s])")
        .expect("prometheus has D's requests");
    let cd_rate = query(
        &prom,
        "rate(chaoslab_retries_total{caller=\"C\",callee=\"D\"}[5s])",
    )
    .expect("prometheus has C→D's retries");
    let (status, so_far) = get(&control, "/report");
    assert_eq!(status, 200, "{so_far}");
    let r: Value = serde_json::from_str(&so_far).unwrap();
    let d = num(node(&r, "D"), "rps");
    let cd = num(edge(&r, "C", "D"), "retries") / num(&r, "duration_s");
    let entry = num(&r["root"], "rps");
    eprintln!("prometheus: D {d_rate:.1} rps, C→D {cd_rate:.1} retries/s; report: {d:.1}, {cd:.1}");
    assert!(
        (d_rate - d).abs() <= 0.05 * d,
        "D: prometheus {d_rate:.1}, report {d:.1}"
    );
    assert!(
        (cd_rate - cd).abs() <= 0.05 * cd,
        "C→D: prometheus {cd_rate:.1}, report {cd:.1}"
    );
    assert!(d > 3.0 * entry, "a storm under retry: D {d:.0} rps");

    // Switch to ownership over the API: D falls to 1.1× the entry rate.
    let (status, body) = http(&control, "POST", "/actions", br#"{"policy": "ownership"}"#);
    assert_eq!(status, 200, "{body}");
    let switched = Instant::now();
    let want = 1.1 * entry;
    let mut seen = f64::NAN;
    let mut within = None;
    while switched.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(250));
        seen = query(&prom, "rate(chaoslab_requests_total{service=\"D\"}[2s])").unwrap_or(f64::NAN);
        if (seen - want).abs() <= 0.05 * want {
            within = Some(switched.elapsed());
            break;
        }
    }
    let within = within.unwrap_or_else(|| {
        panic!("5 s after the switch Prometheus still sees D at {seen:.1} rps, not {want:.1}")
    });
    eprintln!(
        "ownership: Prometheus sees D at {seen:.1} rps ({want:.1} expected) after {within:.1?}"
    );

    let status = lab.0.wait().unwrap();
    assert!(status.success(), "chaoslab failed: {status}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let _ = std::fs::remove_file(&report);
    let _ = std::fs::remove_dir_all(&dir);
    let events = r["events"].as_array().expect("the report lists its events");
    assert!(
        events
            .iter()
            .any(|e| e["origin"] == "api" && e["event"] == "policy ownership (api)"),
        "{events:?}"
    );
}
