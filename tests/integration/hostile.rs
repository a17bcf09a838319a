//! Hostile peers: outside services (`url:`) that answer badly, and a slow
//! client against `serve`. Each peer is written by hand on a raw TCP
//! socket; the fleet is the real `chaoslab` binary, and each case is
//! checked by how the JSON report counted it.
//!
//! One fleet serves every outside case at once: the entry calls one
//! caller per peer (`B_<case>` calls `X_<case>`), so each caller's figures
//! are its peer's alone. It runs once, the first time a test asks for its
//! report.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::time::Instant;

use serde_json::Value;

use crate::common::{edge, fleet_lock, root, wait_until, Killed};
use crate::tables::{headless_report, node, num};

/// Requests that may be in flight at a window's edge: counters are read at
/// one instant, so an attempt may be counted and not yet its answer.
const EDGE: f64 = 6.0;

/// The per-attempt timeout the callers of the outside peers use.
const TIMEOUT_MS: u64 = 150;

/// Root requests per second into the fleet.
const RPS: f64 = 40.0;

/// What a peer does with each request it reads.
#[derive(Clone, Copy, Debug)]
enum Peer {
    /// A 500 carrying these claim header lines (keep-alive, with a length).
    Claim(&'static [&'static str]),
    /// Reads the request and never answers.
    Silent,
    /// A 200 promising 100 bytes of body, 3 sent, then the socket closed.
    ClosesMidBody,
    /// `HTTP/1.0` with this status line and headers, no length: the body
    /// ends when the socket closes.
    Http10(&'static str),
}

/// The 8 KB claim header: "true" 2048 times, no word the rule knows.
fn big_claim() -> &'static str {
    static V: OnceLock<String> = OnceLock::new();
    V.get_or_init(|| format!("x-error-claim: {}", "true".repeat(2048)))
}

/// Every outside case: its name (services `B_<name>` and `X_<name>`) and
/// its peer.
fn cases() -> Vec<(&'static str, Peer)> {
    vec![
        ("true", Peer::Claim(&["x-error-claim: true"])),
        ("unknown", Peer::Claim(&["x-error-claim: maybe"])),
        (
            "repeated",
            Peer::Claim(&["x-error-claim: true", "x-error-claim: false"]),
        ),
        ("empty", Peer::Claim(&["x-error-claim: "])),
        ("big", Peer::Claim(&[])),
        ("nonascii", Peer::Claim(&["x-error-claim: tru\u{e9}"])),
        ("silent", Peer::Silent),
        ("cut", Peer::ClosesMidBody),
        (
            "http10",
            Peer::Http10("HTTP/1.0 200 OK\r\nContent-Type: text/plain"),
        ),
        (
            "http10err",
            Peer::Http10("HTTP/1.0 500 Internal Server Error\r\nx-error-claim: true"),
        ),
    ]
}

/// Reads one request head; `false` when the caller closed first.
fn read_head(r: &mut BufReader<TcpStream>) -> bool {
    let mut line = String::new();
    loop {
        line.clear();
        match r.read_line(&mut line) {
            Ok(0) | Err(_) => return false,
            Ok(_) if line == "\r\n" || line == "\n" => return true,
            Ok(_) => {}
        }
    }
}

/// Serves one connection as `peer` does, until the caller closes it.
fn serve_conn(s: TcpStream, name: &'static str, peer: Peer) {
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    while read_head(&mut r) {
        match peer {
            Peer::Claim(lines) => {
                let mut head = String::from("HTTP/1.1 500 Internal Server Error\r\n");
                if name == "big" {
                    head.push_str(big_claim());
                    head.push_str("\r\n");
                }
                for l in lines {
                    head.push_str(l);
                    head.push_str("\r\n");
                }
                head.push_str("Content-Length: 5\r\n\r\noops\n");
                if w.write_all(head.as_bytes()).is_err() {
                    return;
                }
            }
            Peer::Silent => {
                // Hold the socket, answer nothing, until the caller gives
                // up and closes it.
                let mut b = [0u8; 256];
                while matches!(r.get_mut().read(&mut b), Ok(n) if n > 0) {}
                return;
            }
            Peer::ClosesMidBody => {
                let _ = w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc");
                let _ = w.shutdown(std::net::Shutdown::Both);
                return;
            }
            Peer::Http10(head) => {
                let _ = write!(w, "{head}\r\n\r\nhello, no length\n");
                let _ = w.shutdown(std::net::Shutdown::Both);
                return;
            }
        }
    }
}

/// A peer listening on loopback; it stops when dropped.
struct Running {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn start(name: &'static str, peer: Peer) -> Running {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            if st.load(Ordering::Relaxed) {
                return;
            }
            let Ok(s) = s else { continue };
            std::thread::spawn(move || serve_conn(s, name, peer));
        }
    });
    Running { port, stop }
}

fn temp(name: &str, text: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("chaoslab-{}-{name}", std::process::id()));
    std::fs::write(&p, text).unwrap();
    p
}

/// The report of one run of the fleet against every outside peer.
fn report() -> &'static Value {
    static R: OnceLock<Value> = OnceLock::new();
    R.get_or_init(|| {
        let _fleet = fleet_lock();
        let peers: Vec<_> = cases()
            .into_iter()
            .map(|(name, peer)| (name, start(name, peer)))
            .collect();
        let mut yaml = format!(
            "name: hostile\n\
             description: One caller per hostile outside peer.\n\
             policy: {{ preset: ownership, attempts: 2, budget: off, timeout: {TIMEOUT_MS}ms }}\n\
             load: {{ rps: {RPS} }}\n\
             services:\n  A:\n    parallel: true\n    calls: [{}]\n",
            peers
                .iter()
                .map(|(n, _)| format!(
                    "{{ to: B_{n}, mode: fail-open, policy: {{ attempts: 1, timeout: 5s }} }}"
                ))
                .collect::<Vec<_>>()
                .join(", ")
        );
        for (n, p) in &peers {
            yaml.push_str(&format!(
                "  B_{n}: {{ calls: [X_{n}] }}\n  X_{n}: {{ url: \"http://127.0.0.1:{}/\" }}\n",
                p.port
            ));
        }
        let topo = temp("hostile.yaml", &yaml);
        let r = headless_report(
            topo.to_str().unwrap(),
            &["--duration", "5s", "--warmup", "0s"],
        );
        drop(peers);
        let _ = std::fs::remove_file(&topo);
        r
    })
}

/// `B_<case>`'s claims seen (true, false, missing) and its requests.
fn seen(case: &str) -> ([f64; 3], f64) {
    let b = node(report(), &format!("B_{case}"));
    let c = &b["claims_seen"];
    (
        [num(c, "true"), num(c, "false"), num(c, "missing")],
        num(b, "requests"),
    )
}

fn near(got: f64, want: f64) -> bool {
    (got - want).abs() <= EDGE
}

/// A hostile claim header: every attempt's claim is missing, so the
/// caller retries it (missing is retried, as SPEC section 1 says) and
/// passes the error up unclaimed; the peer's row shows every attempt as an
/// error it returned with no claim.
fn assert_missing(case: &str) {
    let ([t, f, missing], requests) = seen(case);
    assert!(requests >= 100.0, "B_{case} served {requests}");
    assert_eq!((t, f), (0.0, 0.0), "B_{case} read a claim");
    assert!(
        near(missing, 2.0 * requests),
        "{case}: missing {missing} of {requests} requests"
    );
    let b = node(report(), &format!("B_{case}"));
    assert!(near(num(b, "retries_sent"), requests), "{b}");
    assert_eq!(num(&b["claims_returned"], "false"), num(b, "errors"), "{b}");
    let x = node(report(), &format!("X_{case}"));
    let attempts = num(
        edge(report(), &format!("B_{case}"), &format!("X_{case}")),
        "attempts",
    );
    assert!(near(num(x, "requests"), attempts), "{x}");
    assert!(near(num(x, "errors"), num(x, "requests")), "{x}");
    assert!(
        near(num(&x["claims_returned"], "missing"), num(x, "errors")),
        "{x}"
    );
    assert_eq!(num(&x["claims_returned"], "true"), 0.0, "{x}");
}

#[test]
fn a_claimed_error_from_an_outside_peer_is_read_as_claimed() {
    let ([t, f, missing], requests) = seen("true");
    assert!(requests >= 100.0);
    assert!(
        near(t, 2.0 * requests) && f == 0.0 && missing == 0.0,
        "{t} {f} {missing}"
    );
    let x = node(report(), "X_true");
    assert!(
        near(num(&x["claims_returned"], "true"), num(x, "errors")),
        "{x}"
    );
}

#[test]
fn an_unknown_claim_value_is_missing() {
    assert_missing("unknown");
}

#[test]
fn a_repeated_claim_header_is_missing() {
    assert_missing("repeated");
}

#[test]
fn an_empty_claim_header_is_missing() {
    assert_missing("empty");
}

#[test]
fn an_8_kb_claim_header_is_missing() {
    assert_missing("big");
}

#[test]
fn a_non_ascii_claim_header_is_missing() {
    assert_missing("nonascii");
}

/// A peer that never answers: each attempt times out, its claim is
/// missing, and the peer's row counts every attempt as a timeout, no
/// error.
#[test]
fn a_peer_that_never_answers_counts_timeouts() {
    let ([t, f, missing], requests) = seen("silent");
    // Each request takes two timeouts: 4 s hold about 13 a second.
    assert!(requests >= 25.0, "B_silent served {requests}");
    assert_eq!((t, f), (0.0, 0.0));
    // A request is counted when answered, its attempts as each times
    // out: at the window's end the requests between their two attempts
    // (the rate times one timeout, 6 here) have one attempt counted and
    // no answer. Twice that, for timers that fire late.
    let edge = 2.0 * RPS * TIMEOUT_MS as f64 / 1000.0;
    let near = |got: f64, want: f64| (got - want).abs() <= edge;
    assert!(
        near(missing, 2.0 * requests),
        "missing {missing} of {requests}"
    );
    let x = node(report(), "X_silent");
    assert_eq!(num(x, "errors"), 0.0, "{x}");
    assert!(near(num(x, "timeouts"), 2.0 * requests), "{x}");
    assert_eq!(num(x, "requests"), num(x, "timeouts"), "{x}");
    // Its latency is the caller's patience, to the histogram's bucket (a
    // quarter of a power of two) either side.
    let p50 = num(&x["latency_ms"], "p50");
    assert!(
        (p50 - TIMEOUT_MS as f64).abs() <= 0.25 * TIMEOUT_MS as f64,
        "{x}"
    );
}

/// A peer that closes the socket in the middle of the body: a 200 status
/// whose body never arrives is no success. No answer, claim missing, and
/// the peer's row counts an error (no timeout: it did not keep anyone
/// waiting).
#[test]
fn a_peer_that_closes_mid_body_counts_errors() {
    let ([t, f, missing], requests) = seen("cut");
    assert!(requests >= 100.0);
    assert_eq!((t, f), (0.0, 0.0));
    assert!(
        near(missing, 2.0 * requests),
        "missing {missing} of {requests}"
    );
    let b = node(report(), "B_cut");
    assert!(near(num(b, "errors"), requests), "{b}");
    let x = node(report(), "X_cut");
    assert_eq!(num(x, "timeouts"), 0.0, "{x}");
    assert!(near(num(x, "errors"), 2.0 * requests), "{x}");
}

/// HTTP/1.0 with no length: the body runs to the close, and the answer
/// counts by its status, a success as a success and an error with its
/// claim.
#[test]
fn an_http_1_0_answer_without_a_length_counts_by_its_status() {
    let ([t, f, missing], requests) = seen("http10");
    assert!(requests >= 100.0);
    assert_eq!([t, f, missing], [0.0; 3], "no failed attempt");
    let b = node(report(), "B_http10");
    assert_eq!(num(b, "errors"), 0.0, "{b}");
    let x = node(report(), "X_http10");
    assert!(near(num(x, "requests"), requests), "{x}");
    assert_eq!(num(x, "errors") + num(x, "timeouts"), 0.0, "{x}");

    let ([t, f, missing], requests) = seen("http10err");
    assert!(requests >= 100.0);
    assert!(
        near(t, 2.0 * requests) && f == 0.0 && missing == 0.0,
        "{t} {f} {missing}"
    );
}

/// An outside service's row shows what was measured of it: its callers'
/// attempts, against its baseline, and how long it took, not 0.00×. (The
/// model knows nothing of how a peer answers unless the topology gives it
/// a fault, so the figure is checked against the attempts sent. The entry
/// answers when its slowest call does, the silent peer's, so every row of
/// this fleet reads a little high against the roots answered; the peer's
/// row against its caller's is exact.)
#[test]
fn an_outside_service_row_shows_what_was_measured_of_it() {
    let r = report();
    for (case, per_request) in [("http10", 1.0), ("unknown", 2.0), ("cut", 2.0)] {
        let x = node(r, &format!("X_{case}"));
        let b = node(r, &format!("B_{case}"));
        // Its baseline is one call per root request; it was sent one
        // attempt per request, or two where its errors were retried.
        let amp = num(x, "amplification");
        assert!(
            (amp - per_request).abs() <= 0.2 * per_request,
            "X_{case}: {amp}×, want {per_request}×: {x}"
        );
        let ratio = amp / num(b, "amplification");
        assert!(
            (ratio - per_request).abs() <= 0.05 * per_request,
            "X_{case}/B_{case}: {ratio}"
        );
        assert!(num(x, "rps") > 0.0, "{x}");
        assert!(num(&x["latency_ms"], "p99") > 0.0, "{x}");
    }
}

/// A client that sends its headers one byte a second against `serve`: the
/// fleet keeps serving everyone else at full speed, the slow request is
/// answered and counted once its head is complete, one that never
/// completes is never counted, and it does not hold `serve` past its
/// duration.
#[test]
fn a_slow_client_does_not_stop_serve_serving_others() {
    let _fleet = fleet_lock();
    let topo = temp(
        "slow.yaml",
        "name: slow\ndescription: Two healthy services.\nservices:\n  A: { calls: [B] }\n  B: {}\n",
    );
    let report = std::env::temp_dir().join(format!("chaoslab-{}-slow.json", std::process::id()));
    let duration = Duration::from_secs(14);
    let started = Instant::now();
    let mut serve = Killed(
        Command::new(env!("CARGO_BIN_EXE_chaoslab"))
            .args([
                "serve",
                topo.to_str().unwrap(),
                "--duration",
                "14s",
                "--headless",
            ])
            .arg("--report")
            .arg(&report)
            .current_dir(root())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Kept open to the end: `serve` prints its table there when it stops.
    let mut lines = BufReader::new(serve.0.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let addr = first
        .split_whitespace()
        .find_map(|w| w.strip_prefix("http://"))
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    // The slow clients: the request line at once, then the headers one
    // byte a second. One finishes (after 11 s); one never does.
    let dribbling = Arc::new(AtomicUsize::new(0));
    let slow = |head: &'static [u8]| {
        let (addr, dribbling) = (addr.clone(), dribbling.clone());
        std::thread::spawn(move || {
            let mut s = TcpStream::connect(&addr).unwrap();
            s.write_all(b"GET / HTTP/1.0\r\n").unwrap();
            dribbling.fetch_add(1, Ordering::SeqCst);
            for b in head {
                // The pace is the experiment: one byte a second.
                std::thread::sleep(Duration::from_secs(1));
                if s.write_all(&[*b]).is_err() {
                    return String::from("closed");
                }
            }
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let mut answer = String::new();
            let _ = s.read_to_string(&mut answer);
            answer
        })
    };
    let finishing = slow(b"Host: a\r\n\r\n");
    let endless = slow(b"Host: a\r\nX-Slow: zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz\r\n");
    // Everyone else, one request after another, while both dribble.
    wait_until(
        Duration::from_secs(5),
        "both slow clients to have sent their request line",
        || (dribbling.load(Ordering::SeqCst) == 2).then_some(()),
    );
    let (mut fast, mut slowest) = (0u32, Duration::ZERO);
    let until = Instant::now() + Duration::from_secs(8);
    while Instant::now() < until {
        let t = Instant::now();
        let (status, _) = crate::common::get(&addr, "/");
        assert_eq!(status, 200, "request {fast} while a slow client dribbles");
        slowest = slowest.max(t.elapsed());
        fast += 1;
    }
    assert!(fast >= 200, "only {fast} requests in 8 s");
    assert!(slowest < Duration::from_millis(500), "one took {slowest:?}");
    let answer = finishing.join().unwrap();
    assert!(answer.starts_with("HTTP/1.0 200"), "{answer:?}");
    // `serve` stops at its duration, the endless head still open.
    let status = serve.0.wait().unwrap();
    let took = started.elapsed();
    let table: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(status.success(), "{table:?}");
    assert!(
        took < duration + Duration::from_secs(4),
        "serve took {took:?} for a {duration:?} run"
    );
    let endless = endless.join().unwrap();
    assert!(!endless.starts_with("HTTP"), "{endless:?}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let _ = std::fs::remove_file(&report);
    let _ = std::fs::remove_file(&topo);
    // Every fast request and the slow one that finished; never the other.
    let want = f64::from(fast + 1);
    assert_eq!(num(node(&r, "A"), "requests"), want, "{}", node(&r, "A"));
    assert_eq!(num(node(&r, "B"), "requests"), want);
    assert_eq!(num(node(&r, "A"), "errors"), 0.0);
}
