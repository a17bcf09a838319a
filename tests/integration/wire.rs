//! The claim header is on the wire: a raw TCP client reads it from a
//! running fleet.

use std::sync::Arc;

use chaoslab::fleet::{Fleet, FleetOptions};
use chaoslab::topology::Topology;

use crate::common::{fleet_lock, raw_get, root};

#[test]
fn claim_headers_travel_on_real_sockets() {
    let _fleet = fleet_lock();
    let t = Topology::load(&root().join("topologies/three-node.yaml")).unwrap();
    let header = t.ownership.header.clone();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fleet = rt
        .block_on(Fleet::spawn(Arc::new(t), FleetOptions::default()))
        .unwrap();
    let (a, b, c) = (fleet.url(0), fleet.url(1), fleet.url(2));
    // Blocking sockets off the runtime's threads.
    let heads = std::thread::spawn(move || (raw_get(&a), raw_get(&b), raw_get(&c)))
        .join()
        .unwrap();
    rt.block_on(fleet.shutdown());
    let (a, b, c) = heads;
    assert!(c.starts_with("http/1.1 500"), "{c}");
    assert!(
        c.contains(&format!("\r\n{header}: true")),
        "C owns its error:\n{c}"
    );
    assert!(b.starts_with("http/1.1 500"), "{b}");
    assert!(
        b.contains(&format!("\r\n{header}: false")),
        "B passes it up:\n{b}"
    );
    assert!(
        a.contains(&format!("\r\n{header}: false")),
        "A passes it up:\n{a}"
    );
}

#[test]
fn successes_carry_no_claim_header() {
    let _fleet = fleet_lock();
    let mut t = Topology::load(&root().join("topologies/three-node.yaml")).unwrap();
    for s in &mut t.services {
        s.fault = Default::default();
    }
    let header = t.ownership.header.clone();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fleet = rt
        .block_on(Fleet::spawn(Arc::new(t), FleetOptions::default()))
        .unwrap();
    let a = fleet.url(0);
    let head = std::thread::spawn(move || raw_get(&a)).join().unwrap();
    rt.block_on(fleet.shutdown());
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(!head.contains(&header), "{head}");
}

/// `chaoslab tap`: the lines it prints are the headers on the wire. A
/// plain HTTP client calling C in the same fleet reads the status and the
/// claim header line that the tap shows for B → C.
#[test]
fn the_wire_tap_shows_what_a_plain_client_reads() {
    tap_against_a_plain_client(&[]);
}

/// The same with each service a node process of its own: the lines come
/// from C's and B's nodes, read by the session, and the plain client
/// calls C's node.
#[test]
fn the_wire_tap_reads_every_node_under_processes() {
    crate::processes::assert_no_node_left(std::time::Duration::ZERO, "before the test");
    tap_against_a_plain_client(&["--processes"]);
    crate::processes::assert_no_node_left(std::time::Duration::from_secs(1), "after the tap");
}

fn tap_against_a_plain_client(extra: &[&str]) {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let _fleet = fleet_lock();
    let mut child = crate::common::Killed(
        Command::new(env!("CARGO_BIN_EXE_chaoslab"))
            .args(["tap", "topologies/uber-chain.yaml", "--service", "C"])
            .args(["--fail", "D", "--policy", "ownership", "--duration", "3s"])
            .args(extra)
            .current_dir(root())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chaoslab tap"),
    );
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    let first = lines.next().expect("a first line").unwrap();
    let url = first
        .strip_prefix("service C ")
        .unwrap_or_else(|| panic!("{first}"))
        .to_string();
    // The plain client, while the tap runs.
    let head = raw_get(&url);
    let lines: Vec<String> = lines.map_while(Result::ok).collect();
    assert_eq!(child.0.wait().unwrap().code(), Some(0), "{lines:?}");
    let status = head
        .split_whitespace()
        .nth(1)
        .expect("a status")
        .to_string();
    let claim = head
        .lines()
        .find(|l| l.starts_with("x-error-claim:"))
        .unwrap_or_else(|| panic!("no claim header:\n{head}"))
        .trim()
        .to_string();
    assert_eq!(
        (status.as_str(), claim.as_str()),
        ("500", "x-error-claim: false")
    );
    let shown = format!("B → C  {status}  {claim}  (not retried: unclaimed)");
    assert!(
        lines.iter().any(|l| l.ends_with(&shown)),
        "no `{shown}` in the tap:\n{}",
        lines.join("\n")
    );
    // And C's own call: D claims, and C retried it or its budget said no.
    assert!(
        lines
            .iter()
            .any(|l| l.contains("C → D  500  x-error-claim: true  (")),
        "{}",
        lines.join("\n")
    );
    // Sampled, but about 10 a second per edge over 3 s: both edges seen.
    assert!(lines.len() >= 20, "{} lines", lines.len());
    assert!(lines.iter().all(|l| l.contains("C")), "only C's exchanges");
}

/// The bench's traced baseline (`FleetOptions::plain_traced`) carries the
/// lab's trace on the wire, its child at each hop, as the middleware's
/// calls do; the bare baseline sends none. A listener of the test's own
/// stands in for the chain's last service (an outside URL) and reads the
/// request heads that reach it.
#[test]
fn the_traced_baseline_carries_the_trace_and_the_bare_one_none() {
    use std::io::{BufRead, BufReader, Write};
    let _fleet = fleet_lock();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let yaml = format!(
        "name: t\nservices:\n  A: {{ calls: [B] }}\n  B: {{ calls: [C] }}\n  C: {{ url: \"http://127.0.0.1:{port}/\" }}\n"
    );
    let t = Arc::new(Topology::from_yaml(&yaml, "t.yaml").unwrap());
    // Each request the listener reads: its head's lines, lowercased.
    let heads = std::thread::spawn(move || {
        let mut heads = vec![];
        for stream in listener.incoming().take(2) {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = vec![];
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line.trim().is_empty() {
                    break;
                }
                head.push(line.trim().to_ascii_lowercase());
            }
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\nconnection: close\r\n\r\nok\n")
                .unwrap();
            heads.push(head);
        }
        heads
    });
    let rt = tokio::runtime::Runtime::new().unwrap();
    for traced in [true, false] {
        let opts = FleetOptions {
            plain: true,
            plain_traced: traced,
            ..FleetOptions::default()
        };
        let fleet = rt.block_on(Fleet::spawn(t.clone(), opts)).unwrap();
        let url = fleet.entry_url();
        let a = std::thread::spawn(move || raw_get(&url)).join().unwrap();
        rt.block_on(fleet.shutdown());
        assert!(a.starts_with("http/1.1 200"), "{a}");
    }
    let heads = heads.join().unwrap();
    let trace = |head: &[String]| {
        head.iter()
            .find_map(|l| l.strip_prefix("x-chaoslab-trace: ").map(str::to_owned))
    };
    // A opened a root at depth 0; B, its child at depth 1, called C with
    // depth 2.
    let sent = trace(&heads[0]).unwrap_or_else(|| panic!("no trace: {:?}", heads[0]));
    let (root, depth) = sent.split_once('-').unwrap();
    assert!(root.parse::<u64>().is_ok() && depth == "2", "{sent}");
    assert_eq!(trace(&heads[1]), None, "{:?}", heads[1]);
}
