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

use crate::common::{edge, fleet_lock, free_port, get, http, root, wait_until, Killed};
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

/// How many series an instant query returns.
pub fn query_all(prom: &str, q: &str) -> usize {
    let (status, body) = get(prom, &format!("/api/v1/query?query={}", encode(q)));
    assert_eq!(status, 200, "{q}: {body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    v["data"]["result"].as_array().map_or(0, Vec::len)
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
    wait_until(Duration::from_secs(20), "prometheus to be ready", || {
        (get(&prom, "/-/ready").0 == 200).then_some(())
    });
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

    // Under retry: Prometheus's rates against the report so far, once
    // Prometheus holds the rates' 5 s of scrapes of each series (by 13 s
    // into the run, to leave the switch below its 5 s and more).
    wait_until(
        Duration::from_secs(13).saturating_sub(started.elapsed()),
        "prometheus to hold 5 s of scrapes",
        || {
            [
                "count_over_time(chaoslab_requests_total{service=\"D\"}[5s])",
                "count_over_time(chaoslab_retries_total{caller=\"C\",callee=\"D\"}[5s])",
            ]
            .iter()
            .all(|q| query(&prom, q).is_some_and(|n| n >= 5.0))
            .then_some(())
        },
    );
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
    // Every panel of the Grafana dashboard has data (the budget panel's
    // first query only under a budget with a level).
    for q in grafana_queries() {
        let series = crate::telemetry::query_all(&prom, &q);
        assert!(
            series > 0 || q.starts_with("chaoslab_budget_level"),
            "the Grafana query {q} returns nothing"
        );
    }

    // The servicegraph connector's names, as Prometheus holds them,
    // imported back (SPEC section 12): the chain A→…→G, A at its 200 rps,
    // and each edge's attempts per request of its caller as retries make
    // them with D failing every request: 2 on A→B, B→C and C→D (each
    // failed attempt retried once), 1 below D (D fails after its call).
    import_the_chain_back(&prom, &dir, entry);

    // Switch to ownership over the API: D falls to 1.1× A's rate, read as
    // one ratio from the same scrapes (their timing cancels out).
    let (status, body) = http(&control, "POST", "/actions", br#"{"policy": "ownership"}"#);
    assert_eq!(status, 200, "{body}");
    let switched = Instant::now();
    let want = 1.1;
    // Read until D is there, or 5 s have passed (the assertion below then
    // says where D was).
    let (seen, within) = wait_until(
        Duration::from_secs(6),
        "Prometheus's ratio of D to A",
        || {
            let seen = query(
                &prom,
                "sum(rate(chaoslab_requests_total{service=\"D\"}[2s])) / sum(rate(chaoslab_requests_total{service=\"A\"}[2s]))",
            )
            .unwrap_or(f64::NAN);
            let within = switched.elapsed();
            ((seen - want).abs() <= 0.05 * want || within >= Duration::from_secs(5))
                .then_some((seen, within))
        },
    );
    assert!(
        (seen - want).abs() <= 0.05 * want,
        "5 s after the switch Prometheus still sees D at {seen:.2}× A, not {want}×"
    );
    eprintln!("ownership: Prometheus sees D at {seen:.2}× A ({want}× expected) after {within:.1?}");

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

fn import_the_chain_back(prom: &str, dir: &Path, entry: f64) {
    use chaoslab::topology::Topology;
    let out = dir.join("imported.yaml");
    let run = crate::common::chaoslab(&[
        "import",
        "servicegraph",
        &format!("http://{prom}"),
        "-o",
        out.to_str().unwrap(),
    ]);
    let (stdout, stderr) = crate::common::text(&run);
    assert_eq!(run.status.code(), Some(0), "{stdout}\n{stderr}");
    let t = Topology::load(&out).unwrap_or_else(|e| panic!("{e}"));
    let mut names: Vec<&str> = t.services.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["A", "B", "C", "D", "E", "F", "G"]);
    assert_eq!(t.load.roots.len(), 1);
    assert_eq!(t.entry().name, "A");
    let rps = t.load.rps;
    eprintln!("imported from Prometheus: A at {rps:.1} rps (the report: {entry:.1})");
    assert!(
        (rps - 200.0).abs() <= 0.05 * 200.0,
        "A at {rps} rps, not 200"
    );
    let want = [2.0, 2.0, 2.0, 1.0, 1.0, 1.0];
    assert_eq!(t.edges.len(), want.len());
    for (k, w) in want.iter().enumerate() {
        let id = |i: usize| t.service_id(names[i]).unwrap();
        let e = t
            .edges
            .iter()
            .find(|e| e.from == id(k) && e.to == id(k + 1))
            .unwrap_or_else(|| panic!("no edge {} -> {}", names[k], names[k + 1]));
        let got = e.expected_calls();
        assert!(
            (got - w).abs() <= 0.05 * w,
            "{} -> {}: {got:.3} attempts per request, not {w}",
            names[k],
            names[k + 1]
        );
    }
}

/// Every PromQL expression of the Grafana dashboard in `assets/`, with
/// Grafana's `$__rate_interval` as 5 s.
pub fn grafana_queries() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("assets/grafana-chaoslab.json")).unwrap();
    let d: Value = serde_json::from_str(&text).expect("the Grafana dashboard is valid JSON");
    let panels = d["panels"].as_array().expect("the dashboard has panels");
    let exprs: Vec<String> = panels
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .map(|t| {
            t["expr"]
                .as_str()
                .expect("every target has a query")
                .replace("$__rate_interval", "5s")
        })
        .collect();
    assert!(exprs.len() >= 10, "{exprs:?}");
    exprs
}

/// The metric names a PromQL expression reads.
fn metric_names(expr: &str) -> Vec<String> {
    let mut names = vec![];
    let mut rest = expr;
    while let Some(i) = rest.find("chaoslab_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        names.push(tail[..end].to_string());
        rest = &tail[end..];
    }
    names
}

/// The series names a scrape serves.
fn served_series(body: &str) -> std::collections::HashSet<&str> {
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split(['{', ' ']).next())
        .collect()
}

/// The series name that shows a catalogue family is served.
fn sample_of(m: &chaoslab::endpoints::metrics::MetricDoc) -> String {
    use chaoslab::endpoints::metrics::Kind;
    match m.kind {
        Kind::Counter => format!("{}_total", m.name),
        Kind::Gauge => m.name.to_string(),
        Kind::Histogram => format!("{}_bucket", m.name),
    }
}

#[test]
fn every_metric_of_the_catalogue_is_served_and_the_grafana_dashboard_reads_only_those() {
    let _fleet = fleet_lock();
    use chaoslab::endpoints::metrics::catalogue;
    use chaoslab::session::{Session, Setup};
    use chaoslab::topology::{PolicyFields, Preset, Topology};
    let t = Topology::load(&root().join("topologies/uber-chain.yaml")).unwrap();
    let mut setup = Setup::new(t);
    // A budget with a level (gRPC's tokens), so every family has a series.
    setup.initial = vec![chaoslab::lab::Action::Policy(PolicyFields {
        preset: Some(Preset::Grpc),
        ..Default::default()
    })];
    setup.until = Some(Duration::from_secs(4));
    let session = Session::start(setup).unwrap();
    let addr = chaoslab::endpoints::metrics::serve(&session, "127.0.0.1:0".parse().unwrap())
        .unwrap()
        .to_string();
    // Every family's series is there once the run has carried traffic:
    // read until each is, or 2 s have passed (the assertions below then
    // name what is missing).
    let docs = catalogue();
    let dashboard: Vec<String> = grafana_queries()
        .iter()
        .flat_map(|q| metric_names(q))
        .collect();
    let start = Instant::now();
    let (status, body) = wait_until(
        Duration::from_secs(3),
        "a scrape of the metrics endpoint",
        || {
            let (status, body) = get(&addr, "/metrics");
            let served = served_series(&body);
            let complete = docs.iter().all(|m| served.contains(sample_of(m).as_str()))
                && dashboard.iter().all(|n| served.contains(n.as_str()));
            ((status == 200 && complete) || start.elapsed() >= Duration::from_secs(2))
                .then_some((status, body))
        },
    );
    session.finish().unwrap();
    assert_eq!(status, 200);
    // Families as declared, and the series names on the wire.
    let families: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let series = served_series(&body);
    assert_eq!(
        families,
        docs.iter().map(|m| m.name).collect::<Vec<_>>(),
        "the endpoint serves the catalogue, in its order"
    );
    for m in &docs {
        assert!(
            body.contains(&format!("# HELP {} {}", m.name, m.help)),
            "{}: no HELP line from the catalogue",
            m.name
        );
        let sample = sample_of(m);
        assert!(series.contains(sample.as_str()), "{sample} not served");
    }
    for q in grafana_queries() {
        for name in metric_names(&q) {
            assert!(
                series.contains(name.as_str()),
                "the Grafana dashboard reads {name} ({q}), which the endpoint does not serve"
            );
        }
    }
}

#[test]
fn the_endpoints_answer_within_a_second_while_the_fleet_is_saturated() {
    let _fleet = fleet_lock();
    let report = std::env::temp_dir().join(format!("chaoslab-sat-{}.json", std::process::id()));
    // Naive retries at 4,000 rps: D..G are asked for 32,000 requests a
    // second each, far past what two cores serve.
    let (mut lab, metrics, control) = lab_with_endpoints(&[
        "run",
        "topologies/uber-chain.yaml",
        "--headless",
        "--policy",
        "retry",
        "--rps",
        "4000",
        "--duration",
        "8s",
        "--warmup",
        "1s",
        "--report",
        report.to_str().unwrap(),
    ]);
    wait_until(
        Duration::from_secs(5),
        "the lab to say it is saturated",
        || {
            let (_, body) = get(&metrics, "/metrics");
            body.lines()
                .filter(|l| l.starts_with("chaoslab_saturated{"))
                .filter_map(|l| l.split_whitespace().last()?.parse::<f64>().ok())
                .any(|v| v == 1.0)
                .then_some(())
        },
    );
    let mut slowest = Duration::ZERO;
    for _ in 0..5 {
        for (addr, path) in [(&metrics, "/metrics"), (&control, "/state")] {
            let t = Instant::now();
            let (status, _) = get(addr, path);
            let took = t.elapsed();
            assert_eq!(status, 200, "{path}");
            assert!(took < Duration::from_secs(1), "{path} took {took:?}");
            slowest = slowest.max(took);
        }
        // The probes are spread over 2.5 s of saturation: the pace is the
        // experiment.
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(lab.0.wait().unwrap().success());
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let _ = std::fs::remove_file(&report);
    let (sent, offered) = (num(&r["root"], "rps"), num(&r["root"], "offered_rps"));
    eprintln!(
        "saturated: entry {sent:.0} of {offered:.0} rps, {} dropped; slowest answer {slowest:?}",
        r["root"]["dropped"]
    );
    assert!(
        sent < 0.9 * offered,
        "the fleet kept up ({sent:.0} of {offered:.0} rps): this test needs it saturated"
    );
}

#[test]
fn compare_serves_the_run_of_the_moment_labelled_with_its_policy() {
    let _fleet = fleet_lock();
    let mut lab = Killed(
        Command::new(env!("CARGO_BIN_EXE_chaoslab"))
            .args([
                "compare",
                "topologies/uber-chain.yaml",
                "--policies",
                "retry,ownership",
                "--duration",
                "3s",
                "--warmup",
                "1s",
                "--metrics",
                ":0",
            ])
            .current_dir(root())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start chaoslab compare"),
    );
    let mut lines = BufReader::new(lab.0.stderr.take().unwrap()).lines();
    let target = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            l.strip_prefix("metrics: http://")
                .map(|a| a.split('/').next().unwrap().to_string())
        })
        .expect("compare announces its metrics address");
    std::thread::spawn(move || lines.for_each(drop));
    // Read until both runs have been scraped, or 15 s have passed (the
    // assertion below then says which was).
    let mut seen = std::collections::BTreeSet::new();
    let start = Instant::now();
    wait_until(
        Duration::from_secs(16),
        "the runs' labels on the metrics endpoint",
        || {
            let (_, body) = get(&target, "/metrics");
            for policy in ["retry", "ownership"] {
                if body.contains(&format!(
                    "chaoslab_requests_total{{service=\"D\",policy=\"{policy}\"}}"
                )) {
                    seen.insert(policy);
                }
            }
            (seen.len() == 2 || start.elapsed() >= Duration::from_secs(15)).then_some(())
        },
    );
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        ["ownership", "retry"],
        "each policy's run is scraped under its own label"
    );
    assert!(lab.0.wait().unwrap().success());
}
