//! Several hosts on one machine: the uber chain's seven nodes, each in a
//! network namespace of its own with its own address on a bridge, driven
//! from the root namespace. The ownership table must hold across hosts;
//! a host cut off (its link down) must show up at its caller as failed
//! attempts without a claim, counted as missing claims.
//!
//! Needs root and iproute2's `ip` (scripts/test installs it); where the
//! kernel refuses namespaces the test says so and stops.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use tokio::time::Instant;

use crate::common::{fleet_lock, free_port, get, http, root, wait_until, Killed};

const CHAIN: &str = "topologies/uber-chain.yaml";
const NAMES: [&str; 7] = ["A", "B", "C", "D", "E", "F", "G"];

fn ip(args: &[&str]) -> Result<(), String> {
    let o = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}

/// A bridge in the root namespace and one namespace per host, each with
/// a veth on the bridge; all removed when dropped.
struct Hosts {
    tag: String,
    net: String,
    n: usize,
}

impl Hosts {
    fn bridge(&self) -> String {
        format!("clb{}", self.tag)
    }
    fn ns(&self, i: usize) -> String {
        format!("cl{}-{i}", self.tag)
    }
    /// The root namespace's end of host `i`'s link.
    fn link(&self, i: usize) -> String {
        format!("clv{}{i}", self.tag)
    }
    fn addr(&self, i: usize) -> String {
        format!("{}.{}", self.net, 10 + i)
    }

    fn make(n: usize) -> Result<Hosts, String> {
        let pid = std::process::id();
        let mut h = Hosts {
            tag: format!("{}", pid % 100_000),
            net: format!("10.77.{}", pid % 250),
            n: 0,
        };
        ip(&["link", "add", &h.bridge(), "type", "bridge"])?;
        ip(&[
            "addr",
            "add",
            &format!("{}.1/24", h.net),
            "dev",
            &h.bridge(),
        ])?;
        ip(&["link", "set", &h.bridge(), "up"])?;
        for i in 0..n {
            let (ns, link) = (h.ns(i), h.link(i));
            ip(&["netns", "add", &ns])?;
            h.n = i + 1;
            ip(&[
                "link", "add", &link, "type", "veth", "peer", "name", "eth0", "netns", &ns,
            ])?;
            ip(&["link", "set", &link, "master", &h.bridge(), "up"])?;
            let a = format!("{}/24", h.addr(i));
            ip(&["-n", &ns, "addr", "add", &a, "dev", "eth0"])?;
            ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        }
        Ok(h)
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for i in 0..self.n {
            let _ = ip(&["link", "del", &self.link(i)]);
            let _ = ip(&["netns", "del", &self.ns(i)]);
        }
        let _ = ip(&["link", "del", &self.bridge()]);
    }
}

/// `chaoslab node` in host `i`'s namespace, serving on its address; the
/// child is killed when dropped. Waits for its `serving` line.
fn node(h: &Hosts, i: usize, args: &[String]) -> Killed {
    let listen = format!("{}:8080", h.addr(i));
    let metrics = format!("{}:9100", h.addr(i));
    let mut child: Child = Command::new("ip")
        .args(["netns", "exec", &h.ns(i), env!("CARGO_BIN_EXE_chaoslab")])
        .args(["node", CHAIN, "--service", NAMES[i], "--listen", &listen])
        .args(["--metrics", &metrics, "--policy", "ownership"])
        .args(args)
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chaoslab node in its namespace");
    let out = child.stdout.take().expect("piped");
    let guard = Killed(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = rx
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("node {} did not start: {e}", NAMES[i]));
        if line.starts_with("serving") {
            return guard;
        }
    }
}

/// A counter's value in a node's scrape (0 when absent).
fn scrape(h: &Hosts, i: usize, series: &str) -> f64 {
    let (status, body) = get(&format!("{}:9100", h.addr(i)), "/metrics");
    assert_eq!(status, 200, "{body}");
    body.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|v| v.trim().parse().ok()))
        .unwrap_or(0.0)
}

fn requests(h: &Hosts, i: usize) -> f64 {
    scrape(
        h,
        i,
        &format!("chaoslab_requests_total{{service=\"{}\"}} ", NAMES[i]),
    )
}

#[test]
fn the_ownership_table_holds_across_hosts_and_a_cut_off_host_is_a_missing_claim() {
    let _fleet = fleet_lock();
    let hosts = match Hosts::make(NAMES.len()) {
        Ok(h) => h,
        Err(e) => {
            // Not silent: the reason is printed, and only a kernel that
            // refuses namespaces (or no root) gets here.
            eprintln!("SKIPPED: network namespaces are refused here: {e}");
            assert!(
                e.contains("Operation not permitted") || e.contains("Permission denied"),
                "namespaces failed for another reason: {e}"
            );
            return;
        }
    };
    // Each host's node, its callee at the next host's address.
    let mut nodes = vec![];
    for i in (0..NAMES.len()).rev() {
        let peer = if i + 1 < NAMES.len() {
            let next = format!("{}=http://{}:8080/", NAMES[i + 1], hosts.addr(i + 1));
            vec!["--peer".to_string(), next]
        } else {
            vec![]
        };
        nodes.push(node(&hosts, i, &peer));
    }
    let control = format!("127.0.0.1:{}", free_port());
    let load = Command::new(env!("CARGO_BIN_EXE_chaoslab"))
        .args([
            "load",
            CHAIN,
            "--peer",
            &format!("A=http://{}:8080/", hosts.addr(0)),
        ])
        .args(["--rps", "200", "--duration", "12s", "--policy", "ownership"])
        .args(["--control", &control])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chaoslab load");
    let mut load = Killed(load);

    // The ownership table across hosts: 1, 1, 1, 1.1, 1.1, 1.1, 1.1,
    // over the requests sent in a 4 s window between two pauses of the
    // load. Each count is read once the fleet is quiet, so requests in
    // flight (counted at A, not yet at B) do not skew the ratios.
    wait_until(Duration::from_secs(10), "the load's control API", || {
        (get(&control, "/state").0 == 200).then_some(())
    });
    wait_until(
        Duration::from_secs(10),
        "the load to reach every host",
        || {
            (0..NAMES.len())
                .all(|i| requests(&hosts, i) > 0.0)
                .then_some(())
        },
    );
    let pause = |paused: bool| {
        let body = format!("{{\"pause\": {paused}}}");
        let (status, answer) = http(&control, "POST", "/actions", body.as_bytes());
        assert_eq!(status, 200, "pause {paused}: {answer}");
    };
    let quiet = |what: &str| -> Vec<f64> {
        let mut last: Vec<f64> = vec![];
        wait_until(Duration::from_secs(10), what, || {
            let now: Vec<f64> = (0..NAMES.len()).map(|i| requests(&hosts, i)).collect();
            let same = now == last;
            last = now.clone();
            same.then_some(now)
        })
    };
    pause(true);
    let before = quiet("the fleet to finish what was in flight before the window");
    pause(false);
    // The window the table is measured over: 4 s of load.
    std::thread::sleep(Duration::from_millis(4000));
    pause(true);
    let after = quiet("the fleet to finish what was in flight in the window");
    pause(false);
    let a = after[0] - before[0];
    assert!(a >= 600.0, "4 s at 200 rps reached A over the bridge: {a}");
    let model = [1.0, 1.0, 1.0, 1.1, 1.1, 1.1, 1.1];
    let measured: Vec<f64> = (0..NAMES.len())
        .map(|i| (after[i] - before[i]) / a)
        .collect();
    eprintln!("across hosts, relative to A: {measured:?}");
    for (i, (m, want)) in measured.iter().zip(model).enumerate() {
        assert!(
            (m - want).abs() <= 0.03 * want,
            "{}: {m:.3} against the model's {want} ({measured:?})",
            NAMES[i]
        );
    }

    // Cut D's host off: C's attempts find nobody, and no claim comes back.
    let missing = "chaoslab_claims_seen_total{service=\"C\",claim=\"missing\"} ";
    let before = scrape(&hosts, 2, missing);
    ip(&["link", "set", &hosts.link(3), "down"]).expect("cut D's host off");
    // Read until the count is there, or 3 s have passed (the assertion
    // below then says how many came).
    let cut = Instant::now();
    let after = wait_until(
        Duration::from_secs(4),
        "C's count of missing claims",
        || {
            let after = scrape(&hosts, 2, missing);
            (after - before >= 200.0 || cut.elapsed() >= Duration::from_secs(3)).then_some(after)
        },
    );
    let status = load.0.wait().expect("load ends");
    let mut out = String::new();
    let _ = load.0.stdout.take().map(|mut o| o.read_to_string(&mut out));
    eprintln!("missing claims at C: {before} → {after}\n{out}");
    assert_eq!(status.code(), Some(0), "{out}");
    // Within 3 s at 200 rps, every attempt on C → D failing without a
    // claim (each call's attempts time out after 1 s, so at least the
    // first second's worth is counted by then).
    assert!(
        after - before >= 200.0,
        "C saw {} failed attempts without a claim after D's host was cut off",
        after - before
    );
    drop(nodes);
}
