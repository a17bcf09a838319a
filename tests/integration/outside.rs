//! Traffic from outside the lab, and services outside the fleet.
//!
//! `chaoslab serve` driven by `wrk`: the services count exactly the
//! requests wrk sent, times each one's baseline multiplicity. And a
//! topology whose service is a real separate process (a tiny Python HTTP
//! server) that answers 500 with no claim header, as an uncooperative
//! service does: its caller must treat the error as *missing*, retry it,
//! and pass it up unclaimed.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::common::{fleet_lock, root, text};
use crate::tables::{headless_report, node, num};

/// Requests that may be in flight at a window's edge.
const EDGE: f64 = 3.0;

/// Kills a child process when dropped, whatever the test's fate.
struct Reap(Child);

impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn temp(name: &str, text: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("chaoslab-{}-{name}", std::process::id()));
    std::fs::write(&p, text).unwrap();
    p
}

const HEALTHY_DAG: &str = r#"
name: outside-load
description: A healthy DAG with a repeated call and a parallel fan-out.
policy: { preset: ownership, attempts: 2, budget: 0.1 }
services:
  gateway: { calls: [api] }
  api:
    parallel: true
    calls: [users, { to: feed, count: 2 }, { to: ads, mode: fail-open }]
  users: { calls: [db] }
  feed: { calls: [db] }
  ads: {}
  db: {}
"#;

#[test]
fn serve_counts_what_wrk_sent_times_the_multiplicity() {
    let _fleet = fleet_lock();
    assert!(
        Command::new("wrk").arg("--version").output().is_ok(),
        "wrk is not installed: scripts/test installs it (apt-get install wrk)"
    );
    let topo = temp("outside-load.yaml", HEALTHY_DAG);
    let report = std::env::temp_dir().join(format!("chaoslab-{}-serve.json", std::process::id()));
    let mut serve = Reap(
        Command::new(env!("CARGO_BIN_EXE_chaoslab"))
            .args([
                "serve",
                topo.to_str().unwrap(),
                "--duration",
                "9s",
                "--headless",
            ])
            .arg("--report")
            .arg(&report)
            .current_dir(root())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(serve.0.stdout.take().unwrap()).lines();
    let first = lines.next().expect("serve prints the entry").unwrap();
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {first:?}"))
        .to_string();
    assert!(first.starts_with("entry gateway "), "{first}");
    let wrk = Command::new("wrk")
        .args(["-t1", "-c8", "-d5s", &url])
        .output()
        .unwrap();
    let (wrk_out, wrk_err) = text(&wrk);
    assert!(wrk.status.success(), "{wrk_out}{wrk_err}");
    assert!(!wrk_out.contains("Non-2xx"), "{wrk_out}");
    // "  12345 requests in 5.00s, ..."
    let sent: f64 = wrk_out
        .lines()
        .find(|l| l.contains(" requests in "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no request count in wrk's output:\n{wrk_out}"));
    assert!(sent > 1000.0, "{wrk_out}");
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(serve.0.wait().unwrap().success(), "{rest:?}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let _ = std::fs::remove_file(&report);
    for (name, mult) in [
        ("gateway", 1.0),
        ("api", 1.0),
        ("users", 1.0),
        ("feed", 2.0),
        ("ads", 1.0),
        ("db", 3.0),
    ] {
        let got = num(node(&r, name), "requests");
        let want = sent * mult;
        assert!(
            (got - want).abs() <= 0.01 * want,
            "{name}: served {got}, wrk sent {sent} × {mult}"
        );
    }
    // The table printed at the end names every service.
    let table = rest.join("\n");
    assert!(table.contains("db") && table.contains("gateway"), "{table}");
}

const OUTSIDE_SERVER: &str = r#"
import http.server, sys
count = 0
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        global count
        count += 1
        with open(sys.argv[1], "w") as f:
            f.write(str(count))
        self.send_response(500)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"oops\n")
    def log_message(self, *args):
        pass
# A backlog of 5 (socketserver's default) overflows when a burst of
# connections comes at once, and a dropped SYN comes back a second later:
# a 1 s stall the callers would time out on.
http.server.HTTPServer.request_queue_size = 1024
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

#[test]
fn an_uncooperative_outside_service_is_retried_then_unclaimed() {
    let _fleet = fleet_lock();
    let script = temp("outside.py", OUTSIDE_SERVER);
    let counter = std::env::temp_dir().join(format!("chaoslab-{}-count", std::process::id()));
    let mut py = Reap(
        Command::new("python3")
            .arg(&script)
            .arg(&counter)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the outside service"),
    );
    let port: u16 = BufReader::new(py.0.stdout.take().unwrap())
        .lines()
        .next()
        .unwrap()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let topo = temp(
        "outside.yaml",
        &format!(
            r#"
name: outside
description: B calls a real outside service that fails with no claim header.
policy: {{ preset: ownership, attempts: 2, budget: off }}
load: {{ rps: 50 }}
services:
  A: {{ calls: [B] }}
  B: {{ calls: [X] }}
  X: {{ url: "http://127.0.0.1:{port}/" }}
"#
        ),
    );
    let r = headless_report(
        topo.to_str().unwrap(),
        &["--duration", "4s", "--warmup", "0s"],
    );
    drop(py);
    let (a, b) = (node(&r, "A"), node(&r, "B"));
    let b_requests = num(b, "requests");
    assert!(b_requests >= 150.0, "{b}");
    // Every attempt came back with no header: missing, twice per request.
    // (Counters are read at one instant: a request in flight at the edge
    // of the window may have its attempts counted and not its answer.)
    let edge = |got: f64, want: f64| (got - want).abs() <= EDGE;
    assert!(
        edge(num(&b["claims_seen"], "missing"), 2.0 * b_requests),
        "{b}"
    );
    assert!(
        edge(num(b, "retries_sent"), b_requests),
        "B retries missing claims: {b}"
    );
    // B passes the error up unclaimed; A suppresses every one.
    assert_eq!(num(&b["claims_returned"], "false"), num(b, "errors"));
    assert_eq!(num(b, "errors"), b_requests);
    assert_eq!(num(a, "retries_sent"), 0.0);
    assert_eq!(num(a, "retries_suppressed"), num(a, "errors"));
    // The outside process saw both attempts of every request.
    let seen: f64 = std::fs::read_to_string(&counter)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let _ = std::fs::remove_file(&counter);
    // It may also have answered the few requests sent after the last
    // sample, before the load stopped.
    assert!(
        seen >= 2.0 * b_requests - EDGE && seen <= 2.0 * b_requests + 4.0 * EDGE,
        "the outside process's own count {seen}, B's requests {b_requests}"
    );
}
