//! Only the operator drives the lab (the control API's guard, on real
//! sockets): a cross-site request a web page may send unasked is refused
//! and changes nothing, a DNS-rebinding page's `Host` is refused, curl on
//! loopback still works, a token is asked for when one is set, the control
//! API is not served off loopback without one, and nodes started with a
//! token ask for it.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use chaoslab::session::{Access, Session, Setup, Token};
use chaoslab::topology::Topology;
use serde_json::Value;

use crate::common::{chaoslab, fleet_lock, root, status_and_body, text, wait_until, Killed};

/// One HTTP/1.1 request with exactly these headers (the `Host` too): its
/// status and body.
fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    let mut buf = String::new();
    let _ = s.read_to_string(&mut buf);
    status_and_body(&buf)
}

fn policy_now(addr: &str) -> String {
    let (status, body) = request(addr, "GET", "/state", &[("Host", addr)], "");
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    v["policy"]["name"].as_str().unwrap_or("?").to_string()
}

fn lab(access: Access) -> (Session, String, String) {
    let t = Topology::load(&root().join("topologies/uber-chain.yaml")).unwrap();
    let mut setup = Setup::new(t);
    setup.until = Some(Duration::from_secs(30));
    setup.access = access;
    let session = Session::start(setup).unwrap();
    let control =
        chaoslab::endpoints::control::serve(&session, "127.0.0.1:0".parse().unwrap(), vec![])
            .unwrap()
            .to_string();
    let metrics = chaoslab::endpoints::metrics::serve(&session, "127.0.0.1:0".parse().unwrap())
        .unwrap()
        .to_string();
    (session, control, metrics)
}

fn refused(metrics: &str, reason: &str) -> f64 {
    let (_, scrape) = request(metrics, "GET", "/metrics", &[("Host", metrics)], "");
    let want = format!("chaoslab_control_refused_total{{reason=\"{reason}\"}} ");
    scrape
        .lines()
        .find_map(|l| l.strip_prefix(want.as_str()))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {want} in\n{scrape}"))
}

#[test]
fn a_web_page_cannot_drive_the_lab_and_curl_on_loopback_still_can() {
    let _fleet = fleet_lock();
    let (session, control, metrics) = lab(Access::default());
    let before = policy_now(&control);
    assert_eq!(before, "ownership");
    // The request a page on any site may send without a preflight.
    let page = [
        ("Host", control.as_str()),
        ("Origin", "http://evil.example"),
        ("Content-Type", "text/plain"),
    ];
    let (status, body) = request(&control, "POST", "/actions", &page, r#"{"policy":"retry"}"#);
    assert!(status == 403 || status == 415, "{status} {body}");
    assert!(body.contains("evil.example"), "{body}");
    // The same without an Origin (a form from a page that hides it).
    let (status, body) = request(
        &control,
        "POST",
        "/actions",
        &[("Host", control.as_str()), ("Content-Type", "text/plain")],
        r#"{"policy":"retry"}"#,
    );
    assert_eq!(status, 415, "{body}");
    assert!(body.contains("Content-Type: application/json"), "{body}");
    // A DNS-rebinding page: its own name, on our port.
    let port = control.rsplit(':').next().unwrap();
    let foreign = format!("evil.example:{port}");
    let (status, body) = request(&control, "GET", "/state", &[("Host", foreign.as_str())], "");
    assert_eq!(status, 421, "{body}");
    let (status, _) = request(
        &metrics,
        "GET",
        "/metrics",
        &[("Host", foreign.as_str())],
        "",
    );
    assert_eq!(status, 421);
    // Nothing changed, for long enough that a change would show.
    std::thread::sleep(Duration::from_millis(600)); // two of the run loop's 250 ms ticks
    assert_eq!(policy_now(&control), before);
    // curl on loopback, as the index says.
    let out = Command::new("curl")
        .args([
            "-s",
            "-H",
            "Content-Type: application/json",
            "-d",
            r#"{"policy":"retry"}"#,
        ])
        .arg(format!("http://{control}/actions"))
        .output()
        .expect("curl runs");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("\"applied\""), "{said}");
    wait_until(Duration::from_secs(5), "the policy curl sent", || {
        (policy_now(&control) == "retry").then_some(())
    });
    // Each refusal counted by its reason, and in the log.
    assert_eq!(refused(&metrics, "origin"), 1.0);
    assert_eq!(refused(&metrics, "content-type"), 1.0);
    assert_eq!(refused(&metrics, "host"), 2.0);
    assert_eq!(refused(&metrics, "token"), 0.0);
    let snap = session.snapshots().borrow().clone();
    assert!(
        snap.refused
            .iter()
            .any(|(_, t)| t == "POST /actions from http://evil.example (refused: origin)"),
        "{:?}",
        snap.refused
    );
    session.stop();
}

#[test]
fn with_a_token_only_its_bearer_gets_in() {
    let _fleet = fleet_lock();
    let token = "a-token-of-thirty-two-bytes-0123";
    let (session, control, _) = lab(Access {
        token: Some(Token::new(token).unwrap()),
        ..Access::default()
    });
    let host = ("Host", control.as_str());
    let (status, body) = request(&control, "GET", "/state", &[host], "");
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("Authorization: Bearer"), "{body}");
    let (status, _) = request(
        &control,
        "GET",
        "/state",
        &[
            host,
            ("Authorization", "Bearer a-token-of-thirty-two-bytes-0124"),
        ],
        "",
    );
    assert_eq!(status, 401);
    let bearer = format!("Bearer {token}");
    let auth = ("Authorization", bearer.as_str());
    let (status, _) = request(&control, "GET", "/state", &[host, auth], "");
    assert_eq!(status, 200);
    let (status, body) = request(
        &control,
        "POST",
        "/actions",
        &[host, auth, ("Content-Type", "application/json")],
        r#"{"rps": 100}"#,
    );
    assert_eq!(status, 200, "{body}");
    // A readiness probe carries no token.
    assert_eq!(
        request(&control, "GET", "/healthz", &[host], ""),
        (200, "ok".into())
    );
    session.stop();
}

#[test]
fn the_control_api_is_not_served_off_loopback_without_a_token() {
    let out = chaoslab(&[
        "run",
        "topologies/uber-chain.yaml",
        "--headless",
        "--control",
        "0.0.0.0:0",
        "--duration",
        "1s",
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stderr.contains("--control-token-file"), "{stderr}");
    assert!(stderr.contains("--control-insecure"), "{stderr}");
    assert!(stdout.is_empty(), "nothing ran: {stdout}");
    // A token that is no token says why.
    let short = std::env::temp_dir().join(format!("chaoslab-{}-short.token", std::process::id()));
    std::fs::write(&short, "abc\n").unwrap();
    let out = chaoslab(&[
        "run",
        "topologies/uber-chain.yaml",
        "--headless",
        "--control",
        ":0",
        "--control-token-file",
        short.to_str().unwrap(),
        "--duration",
        "1s",
    ]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("at least 16"), "{stderr}");
    let _ = std::fs::remove_file(&short);
    // --control-insecure serves it, and says what it means.
    let _fleet = fleet_lock();
    let out = chaoslab(&[
        "run",
        "topologies/uber-chain.yaml",
        "--headless",
        "--control",
        "0.0.0.0:0",
        "--control-insecure",
        "--duration",
        "1s",
        "--warmup",
        "0s",
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stderr.contains("WARNING: --control 0.0.0.0:0 with --control-insecure"),
        "{stderr}"
    );
    assert!(stderr.contains("control: http://0.0.0.0:"), "{stderr}");
}

/// The uber-chain story over one node process per service, with a token:
/// every expectation holds, and a node's control port refuses a request
/// without the token while it runs.
#[test]
fn the_story_runs_over_nodes_that_ask_for_the_token() {
    let _fleet = fleet_lock();
    let token_file =
        std::env::temp_dir().join(format!("chaoslab-{}-story.token", std::process::id()));
    std::fs::write(&token_file, "story-token-0123456789abcdef\n").unwrap();
    let report =
        std::env::temp_dir().join(format!("chaoslab-{}-story-token.json", std::process::id()));
    let child = Command::new(env!("CARGO_BIN_EXE_chaoslab"))
        .args([
            "run",
            "topologies/uber-chain.yaml",
            "--processes",
            "--headless",
        ])
        .args(["--scenario", "scenarios/uber-chain-story.yaml", "--report"])
        .arg(&report)
        .arg("--control-token-file")
        .arg(&token_file)
        .env_remove(chaoslab::session::access::TOKEN_VAR)
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run chaoslab");
    let mut child = Killed(child);
    let stderr = BufReader::new(child.0.stderr.take().unwrap());
    let mut lines = stderr.lines();
    let control = loop {
        let line = lines
            .next()
            .expect("a node line before the run ends")
            .unwrap();
        if let Some(c) = line.split("(control ").nth(1) {
            break c
                .trim_end_matches(')')
                .trim_start_matches("http://")
                .trim_end_matches('/')
                .to_string();
        }
    };
    let (status, body) = request(
        &control,
        "GET",
        "/counts",
        &[("Host", control.as_str())],
        "",
    );
    assert_eq!(status, 401, "a node without the token: {body}");
    let (status, _) = request(
        &control,
        "GET",
        "/counts",
        &[
            ("Host", control.as_str()),
            ("Authorization", "Bearer story-token-0123456789abcdef"),
        ],
        "",
    );
    assert_eq!(status, 200);
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.0.wait().unwrap();
    let mut stdout = String::new();
    let _ = child.0.stdout.take().unwrap().read_to_string(&mut stdout);
    assert!(status.success(), "{stdout}\n{}", rest.join("\n"));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let es = r["expectations"].as_array().unwrap();
    assert!(es.len() >= 20, "{}", es.len());
    for e in es {
        assert_eq!(e["passed"], true, "{e}");
    }
    let _ = std::fs::remove_file(&report);
    let _ = std::fs::remove_file(&token_file);
}
