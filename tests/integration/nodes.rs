//! One service per process: the uber chain as seven `chaoslab node`
//! processes on loopback, wired by `--peer`, driven by `chaoslab load`.
//! Every service must see the load the model predicts relative to the
//! entry, as in the in-process fleet: the trace, the deadline and the
//! claim cross each process boundary in the headers. And the claim
//! header read on the wire: the owner claims, the service above passes
//! it up unclaimed.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use tokio::time::Instant;

use chaoslab::lab::{fold, LabState};
use chaoslab::options::Start;
use chaoslab::topology::{model, Topology};

use crate::common::{chaoslab, fleet_lock, get, raw_get, root, text, wait_until, Killed};

const CHAIN: &str = "topologies/uber-chain.yaml";

/// A root's p99 above this says other work starved the nodes of CPU.
const STARVED_P99_MS: f64 = 400.0;

/// A running `chaoslab node` and what it printed on start.
struct Node {
    name: String,
    child: Child,
    /// The service's URL (`http://127.0.0.1:PORT/`).
    url: String,
    /// `HOST:PORT` of its metrics endpoint.
    metrics: String,
    /// `HOST:PORT` of its control API, when asked for.
    control: String,
    /// What it prints after its start lines.
    lines: mpsc::Receiver<String>,
}

/// Every node started, killed when dropped whatever the test's fate.
#[derive(Default)]
struct Nodes(Vec<Node>);

impl Drop for Nodes {
    fn drop(&mut self) {
        for n in &mut self.0 {
            let _ = n.child.kill();
            let _ = n.child.wait();
        }
    }
}

impl Nodes {
    /// Starts `chaoslab node CHAIN --service NAME --metrics :0 ARGS...`
    /// and reads its `service` and `metrics:` lines (10 s at most).
    fn start(&mut self, name: &str, args: &[&str]) -> &Node {
        let mut child = Command::new(env!("CARGO_BIN_EXE_chaoslab"))
            .args(["node", CHAIN, "--service", name, "--metrics", ":0"])
            .args(args)
            .current_dir(root())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chaoslab node");
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // Held by the guard before anything can fail.
        self.0.push(Node {
            name: name.into(),
            child,
            url: String::new(),
            metrics: String::new(),
            control: String::new(),
            lines: rx,
        });
        let node = self.0.last_mut().expect("just pushed");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = node
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("node {name} {args:?} did not start: {e}"));
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["service", n, url] if *n == name => node.url = url.to_string(),
                ["metrics:", url] => {
                    node.metrics = url
                        .trim_start_matches("http://")
                        .trim_end_matches("/metrics")
                        .to_string()
                }
                ["control:", url, ..] => {
                    node.control = url
                        .trim_start_matches("http://")
                        .trim_end_matches('/')
                        .to_string()
                }
                ["serving", ..] => break,
                _ => {}
            }
        }
        assert!(node.url.starts_with("http://127.0.0.1:"), "{}", node.url);
        assert!(
            !node.metrics.is_empty(),
            "node {name} printed no metrics line"
        );
        node
    }

    /// The uber chain's seven services as seven nodes, each pointed at
    /// the next by `--peer`: started from the leaf up, so each callee's
    /// URL is known when its caller starts.
    fn chain(policy: &str) -> Nodes {
        let t = Topology::load(&root().join(CHAIN)).unwrap();
        let mut nodes = Nodes::default();
        let mut below: Option<(String, String)> = None;
        for s in t.services.iter().rev() {
            let peer = below.as_ref().map(|(n, u)| format!("{n}={u}"));
            let mut args = vec!["--policy", policy, "--control", ":0"];
            if let Some(p) = &peer {
                args.extend(["--peer", p.as_str()]);
            }
            let url = nodes.start(&s.name, &args).url.clone();
            below = Some((s.name.clone(), url));
        }
        nodes.0.reverse();
        nodes
    }

    fn node(&self, name: &str) -> &Node {
        self.0.iter().find(|n| n.name == name).expect("started")
    }
}

/// `chaoslab_requests_total{service="NAME"}` from a node's `/metrics`.
fn requests(metrics: &str, service: &str) -> f64 {
    let (status, body) = get(metrics, "/metrics");
    assert_eq!(status, 200, "{body}");
    let key = format!("chaoslab_requests_total{{service=\"{service}\"}} ");
    body.lines()
        .find_map(|l| l.strip_prefix(&key))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key} in the scrape of {metrics}"))
}

/// The model's amplification per service under a preset, from the
/// library, as `chaoslab model CHAIN --policy P` prints it.
fn model_amplification(policy: &str) -> Vec<(String, f64)> {
    let mut t = Topology::load(&root().join(CHAIN)).unwrap();
    let start = Start {
        policy: Some(policy.into()),
        fail: vec![],
    };
    let actions = start.actions(&t).unwrap();
    fold(LabState::of(&t), &actions).unwrap().write_to(&mut t);
    let p = model::predict(&t, &t.policy);
    t.services
        .iter()
        .zip(&p.services)
        .map(|(s, sp)| (s.name.clone(), sp.amplification))
        .collect()
}

/// Each node's count of its own requests, all scraped at once (one after
/// the other, the last would be read tens of milliseconds after the
/// first: hundreds of requests at the chain's foot under retries).
fn counts(nodes: &Nodes) -> Vec<f64> {
    std::thread::scope(|s| {
        let scrapes: Vec<_> = nodes
            .0
            .iter()
            .map(|n| {
                let (metrics, name) = (n.metrics.as_str(), n.name.as_str());
                s.spawn(move || requests(metrics, name))
            })
            .collect();
        scrapes
            .into_iter()
            .map(|h| h.join().expect("a scrape"))
            .collect()
    })
}

/// Runs the chain as seven processes under `policy`, drives 200 rps into
/// A for 7 s, and returns each service's requests relative to A's over
/// 4.5 s inside the run, from when the load has reached every node (the
/// roots in flight when the load stops are cut short, so a window inside
/// the run is the measure), as each node counted them.
fn measure(policy: &str) -> Result<Vec<(String, f64)>, String> {
    let nodes = Nodes::chain(policy);
    let pids: Vec<u32> = nodes.0.iter().map(|n| n.child.id()).collect();
    let mut distinct = pids.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 7, "seven processes: {pids:?}");
    assert!(!pids.contains(&std::process::id()));

    let entry = format!("A={}", nodes.node("A").url);
    let load = Command::new(env!("CARGO_BIN_EXE_chaoslab"))
        .args(["load", CHAIN, "--peer", &entry, "--rps", "200"])
        .args(["--duration", "7s", "--policy", policy])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chaoslab load");
    let mut load = Killed(load);
    let before = wait_until(
        Duration::from_secs(10),
        "the load to reach every node",
        || {
            let seen = counts(&nodes);
            seen.iter().all(|&n| n > 0.0).then_some(seen)
        },
    );
    // The window the table is measured over: 4.5 s of the 7 s run.
    std::thread::sleep(Duration::from_millis(4500));
    let after = counts(&nodes);
    let status = load.0.wait().expect("load ends");
    let mut stdout = String::new();
    let _ = load
        .0
        .stdout
        .take()
        .map(|mut o| o.read_to_string(&mut stdout));
    assert_eq!(status.code(), Some(0), "{stdout}");
    eprintln!("{policy}: {stdout}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("entry: offered 200 rps"))
        .unwrap_or_else(|| panic!("no entry line: {stdout}"));
    // On an idle machine the chain answers in milliseconds; when other
    // work starves it, answers take up to a second and the roots in
    // flight at either end of the window outweigh the tolerance.
    let p99: f64 = line
        .rsplit_once("p99 ")
        .and_then(|(_, r)| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no p99 in {line}"));
    if stdout.contains("SATURATED") || p99 > STARVED_P99_MS {
        return Err(format!("the machine was starved (p99 {p99} ms): {stdout}"));
    }
    // `(N in 7.0 s)`: the root requests sent.
    let sent: f64 = line
        .split_once('(')
        .and_then(|(_, r)| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {line}"));
    assert!(sent >= 1300.0, "7 s at 200 rps: {line}");
    // The load's count stops at its last sample; A's goes on while the
    // stop travels to the load task: 1% (70 ms at 200 rps) covers that
    // hand-off and still catches a lost or doubled request stream.
    let served = requests(&nodes.node("A").metrics, "A");
    assert!(
        (served - sent).abs() <= 0.01 * sent,
        "A served {served}, the load sent {sent}"
    );

    let t = Topology::load(&root().join(CHAIN)).unwrap();
    let calls = |from: &str, to: &str| {
        t.service_id(from).is_some_and(|f| {
            t.services[f]
                .calls
                .iter()
                .any(|&e| t.services[t.edges[e].to].name == to)
        })
    };
    for n in &nodes.0 {
        // Each service ran in its own process only: a node saw no
        // request for a service it neither serves nor calls.
        for other in &nodes.0 {
            if other.name != n.name && !calls(&n.name, &other.name) {
                let seen = requests(&n.metrics, &other.name);
                assert_eq!(seen, 0.0, "{} on {}'s node", other.name, n.name);
            }
        }
    }
    let a = after[0] - before[0];
    assert!(a >= 800.0, "4.5 s at 200 rps reached A: {a}");
    Ok(nodes
        .0
        .iter()
        .zip(before.iter().zip(&after))
        .map(|(n, (b, f))| (n.name.clone(), (f - b) / a))
        .collect())
}

/// [`measure`], run again (three runs at most) while the machine was
/// starved; the figures of a run that was not are judged.
fn measure_unstarved(policy: &str) -> Vec<(String, f64)> {
    let mut why = vec![];
    for _ in 0..3 {
        match measure(policy) {
            Ok(m) => return m,
            Err(e) => {
                eprintln!("{policy}: {e}; running again");
                why.push(e);
            }
        }
    }
    panic!("{policy}: three runs starved:\n{}", why.join("\n"));
}

fn assert_like_the_model(policy: &str, measured: &[(String, f64)], model: &[(String, f64)]) {
    let table: Vec<String> = measured
        .iter()
        .zip(model)
        .map(|((n, m), (_, want))| format!("{n} {m:.3}x (model {want:.3}x)"))
        .collect();
    eprintln!("{policy}: {}", table.join(", "));
    for ((name, m), (model_name, want)) in measured.iter().zip(model) {
        assert_eq!(name, model_name);
        assert!(
            (m - want).abs() <= 0.03 * want,
            "{policy}: {name} saw {m:.3}x A's requests, the model says {want:.3}x ({})",
            table.join(", ")
        );
    }
}

#[test]
fn seven_nodes_amplify_as_the_model_says() {
    let _fleet = fleet_lock();
    let retry = model_amplification("retry");
    let want: Vec<f64> = retry.iter().map(|(_, a)| *a).collect();
    assert_eq!(
        want,
        [1.0, 2.0, 4.0, 8.0, 8.0, 8.0, 8.0],
        "the seed's table"
    );
    // The hardest table for the wire (8x at the foot); the three tables
    // through one session over the nodes are `processes.rs`'s.
    assert_like_the_model("retry", &measure_unstarved("retry"), &retry);
}

#[test]
fn run_remote_reads_and_drives_nodes_already_running() {
    let _fleet = fleet_lock();
    // Started under `retry`; the run's own flags bring them to ownership.
    let nodes = Nodes::chain("retry");
    let mut args: Vec<String> = [
        "run",
        CHAIN,
        "--headless",
        "--policy",
        "ownership",
        "--fail",
        "D",
        "--duration",
        "3s",
        "--warmup",
        "1s",
        "--peer",
    ]
    .map(String::from)
    .to_vec();
    args.push(format!("A={}", nodes.node("A").url));
    for n in &nodes.0 {
        args.push("--remote".into());
        args.push(format!("{}=http://{}/", n.name, n.control));
    }
    let dir = std::env::temp_dir().join(format!("chaoslab-remote-{}.json", std::process::id()));
    args.push("--report".into());
    args.push(dir.to_string_lossy().into_owned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = chaoslab(&args);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    eprintln!("{stdout}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&dir).unwrap()).unwrap();
    let _ = std::fs::remove_file(&dir);
    if r["saturated"] == false {
        for s in r["nodes"].as_array().unwrap() {
            let (m, model) = (
                s["amplification"].as_f64().unwrap(),
                s["model_amplification"].as_f64().unwrap(),
            );
            assert!(
                (m - model).abs() <= 0.03 * model,
                "{}: {m} vs {model}",
                s["name"]
            );
        }
        assert_eq!(r["storm_radius"]["max"], 1, "{}", r["storm_radius"]);
    }
    assert_eq!(r["nodes"][3]["model_amplification"], 1.1);
    // Each node folded the run's starting state: D's own API says so.
    let (status, body) = get(&nodes.node("D").control, "/state");
    assert_eq!(status, 200, "{body}");
    let state: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(state["policy"]["name"], "ownership", "{body}");
    // What the lab reads from a node: its counters and its journal.
    let (status, body) = get(&nodes.node("C").control, "/retries?after=0");
    assert_eq!(status, 200, "{body}");
    let page: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(
        page["retries"].as_array().unwrap().len() > 30,
        "C retried D (20 a second under the budget): {body}"
    );
    let (status, body) = get(&nodes.node("C").control, "/retries?after=x");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("after=x"), "{body}");
    let (status, body) = get(&nodes.node("C").control, "/counts");
    assert_eq!(status, 200, "{body}");
    // Its wire tap: C's calls to D, D claiming; numbered, so a reader
    // asks for what came after.
    let (status, body) = get(&nodes.node("C").control, "/tap?after=0");
    assert_eq!(status, 200, "{body}");
    let page: serde_json::Value = serde_json::from_str(&body).unwrap();
    let tapped = page["tapped"].as_array().unwrap();
    assert!(!tapped.is_empty(), "{body}");
    assert!(tapped.iter().all(|x| x["status"] == 500), "{body}");
    let next = page["next"].as_u64().unwrap();
    assert_eq!(tapped.last().unwrap()["seq"].as_u64(), Some(next));
    let (status, body) = get(&nodes.node("C").control, &format!("/tap?after={next}"));
    assert_eq!(status, 200, "{body}");
    let later: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(
        later["tapped"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["seq"].as_u64() > Some(next)),
        "{body}"
    );
    let (status, body) = get(&nodes.node("C").control, "/tap?since=3");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("since=3"), "{body}");
}

#[test]
fn the_claim_header_crosses_the_process_boundary() {
    let _fleet = fleet_lock();
    let mut nodes = Nodes::default();
    let mut below = String::new();
    for name in ["G", "F", "E", "D", "C"] {
        let mut args = vec!["--policy", "ownership"];
        if !below.is_empty() {
            args.extend(["--peer", below.as_str()]);
        }
        below = format!("{name}={}", nodes.start(name, &args).url);
    }
    // D fails on its own: it owns its error.
    let d = raw_get(&nodes.node("D").url);
    assert!(d.starts_with("http/1.1 500"), "{d}");
    assert!(d.contains("\r\nx-error-claim: true"), "D claims: {d}");
    // C's error came from D, claimed there: C passes it up unclaimed.
    let c = raw_get(&nodes.node("C").url);
    assert!(c.starts_with("http/1.1 500"), "{c}");
    assert!(c.contains("\r\nx-error-claim: false"), "C disowns: {c}");
    // And C read D's claim off the wire.
    let (_, scrape) = get(&nodes.node("C").metrics, "/metrics");
    let seen = scrape
        .lines()
        .find_map(|l| l.strip_prefix("chaoslab_claims_seen_total{service=\"C\",claim=\"true\"} "))
        .and_then(|v| v.trim().parse::<f64>().ok());
    assert!(seen.is_some_and(|n| n >= 1.0), "{scrape}");
}

#[test]
fn a_node_answers_its_probe_and_ends_on_sigterm_as_serve_does() {
    let _fleet = fleet_lock();
    let mut nodes = Nodes::default();
    let g = nodes.start("G", &["--control", ":0"]);
    assert_eq!(get(&g.control, "/healthz"), (200, "ok".to_string()));
    for _ in 0..3 {
        let head = raw_get(&g.url);
        assert!(head.starts_with("http/1.1 200"), "{head}");
    }
    let pid = g.child.id().to_string();
    let sent = Command::new("kill").args(["-TERM", &pid]).status();
    assert!(sent.is_ok_and(|s| s.success()), "kill -TERM {pid}");
    let node = &mut nodes.0[0];
    let status = node.child.wait().expect("the node ends");
    assert_eq!(status.code(), Some(143), "exit 143 after SIGTERM, as serve");
    // Its rows: the service it served, and what it measured of it.
    // (The reader ends at the end of its output.)
    let rows: Vec<String> = node.lines.iter().collect();
    assert!(
        rows.iter().any(|l| l.starts_with("G ")),
        "G's row is printed: {rows:?}"
    );
}

/// Runs `chaoslab ARGS`, expects exit 2 within a second and a message
/// holding each of `says`.
fn refused(args: &[&str], says: &[&str]) {
    let t0 = Instant::now();
    let out = chaoslab(args);
    let took = t0.elapsed();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stdout}\n{stderr}");
    assert!(took < Duration::from_secs(1), "{args:?} took {took:?}");
    for s in says {
        assert!(stderr.contains(s), "{args:?}: no `{s}` in: {stderr}");
    }
}

/// A closed loop of clients runs in one process: over nodes, the nominal
/// requests its amplification is measured against would not be counted.
/// Refused before any node starts, as is `--clients 0`.
#[test]
fn a_closed_loop_over_nodes_is_refused() {
    let says = ["root `A` is a closed loop", "drop --processes/--remote"];
    refused(
        &[
            "compare",
            CHAIN,
            "--policies",
            "retry+closed",
            "--processes",
        ],
        &says,
    );
    let closed = std::env::temp_dir().join(format!("chaoslab-closed-{}.yaml", std::process::id()));
    std::fs::write(
        &closed,
        std::fs::read_to_string(CHAIN)
            .unwrap()
            .replace("  rps: 200", "  clients: 50"),
    )
    .unwrap();
    let path = closed.to_str().unwrap();
    refused(&["run", path, "--headless", "--processes"], &says);
    let _ = std::fs::remove_file(&closed);
    refused(
        &["compare", CHAIN, "--clients", "0"],
        &["--clients", "0 is not in 1..=10000"],
    );
}

#[test]
fn bad_node_and_load_flags_exit_2_saying_what_and_where() {
    // A dependency nothing places.
    refused(
        &["node", CHAIN, "--service", "C"],
        &["`C` calls `D`", "--peer D=http://", "--peers"],
    );
    refused(
        &["load", CHAIN, "--rps", "10"],
        &["entry `A`", "--peer A=http://"],
    );
    // Bad --peer syntax, a URL the lab cannot call, a name not in it.
    refused(
        &["node", CHAIN, "--service", "C", "--peer", "D"],
        &["--peer D:", "NAME=URL"],
    );
    refused(
        &["node", CHAIN, "--service", "C", "--peer", "D=ftp://x/"],
        &["--peer D=ftp://x/", "http://"],
    );
    // A replica list with a bad URL in it; a replica the service lacks.
    refused(
        &[
            "node",
            CHAIN,
            "--service",
            "C",
            "--peer",
            "D=http://a/,ftp://b/",
        ],
        &["--peer D=http://a/,ftp://b/", "ftp://b/", "http://"],
    );
    refused(
        &[
            "node",
            CHAIN,
            "--service",
            "C",
            "--replica",
            "1",
            "--peers",
            "http://{name}:80/",
        ],
        &["--replica 1", "`C` has 1 replica (numbered 0 to 0)"],
    );
    refused(
        &["node", CHAIN, "--service", "C", "--peer", "Q=http://x/"],
        &[
            "--peer Q=http://x/",
            "no service `Q`",
            "A, B, C, D, E, F, G",
        ],
    );
    refused(
        &[
            "node",
            CHAIN,
            "--service",
            "C",
            "--peers",
            "http://svc:8080/",
        ],
        &["--peers http://svc:8080/", "{name}"],
    );
    // An unknown service, and a fault for another node's service.
    refused(
        &["node", CHAIN, "--service", "Q"],
        &["--service Q", "no service `Q`", "uber-chain"],
    );
    refused(
        &["node", CHAIN, "--service", "G", "--fail", "D"],
        &["--fail D", "serves `G`"],
    );
    refused(
        &["node", CHAIN, "--service", "G", "--listen", "nowhere"],
        &["--listen nowhere"],
    );
}
