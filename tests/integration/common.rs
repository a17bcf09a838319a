//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

static FLEET: Mutex<()> = Mutex::new(());

/// Serialises tests that start a fleet.
pub fn fleet_lock() -> MutexGuard<'static, ()> {
    FLEET.lock().unwrap_or_else(|e| e.into_inner())
}

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs the real `chaoslab` binary with `args`, from the repository root.
pub fn chaoslab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chaoslab"))
        .args(args)
        .current_dir(root())
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("run chaoslab")
}

/// Runs `chaoslab` with `args` (as [`chaoslab`]) and fails the test,
/// showing both streams, unless it exits 0; returns stdout and stderr.
pub fn succeed(args: &[&str]) -> (String, String) {
    let out = chaoslab(args);
    let (stdout, stderr) = text(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "chaoslab {args:?} failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    (stdout, stderr)
}

/// stdout and stderr of an output as text.
pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Sends one HTTP/1.1 GET by hand and returns the raw response head,
/// lower-cased.
pub fn raw_get(url: &str) -> String {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    write!(
        s,
        "GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut buf = String::new();
    s.read_to_string(&mut buf).unwrap();
    buf.split("\r\n\r\n").next().unwrap().to_ascii_lowercase()
}

/// The report's edge `from` → `to`.
pub fn edge<'a>(r: &'a serde_json::Value, from: &str, to: &str) -> &'a serde_json::Value {
    r["edges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["from"] == from && e["to"] == to)
        .unwrap_or_else(|| panic!("no edge {from}->{to}"))
}

/// One plain HTTP/1.0 request by hand to `addr` (`HOST:PORT`): the status
/// (0 when nothing answered) and the body.
pub fn http(addr: &str, method: &str, path: &str, body: &[u8]) -> (u16, String) {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return (0, String::new());
    };
    let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(10)));
    let _ = write!(
        s,
        "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let _ = s.write_all(body);
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    status_and_body(&String::from_utf8_lossy(&buf))
}

/// A raw HTTP response's status (0 when there is none) and body.
pub fn status_and_body(response: &str) -> (u16, String) {
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

/// A `GET` by [`http`].
pub fn get(addr: &str, path: &str) -> (u16, String) {
    http(addr, "GET", path, b"")
}

/// A child process killed when dropped.
pub struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A port free on loopback now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs `f` on each of `args` at once, one thread each, and returns the
/// results in order: independent fleets measured side by side instead of
/// one after another. Each caller says why its runs are light enough to
/// share the machine (their rates, and the cores they were measured to
/// take together). A panic in one run is the test's panic.
pub fn side_by_side<A: Send, T: Send>(args: Vec<A>, f: impl Fn(A) -> T + Sync) -> Vec<T> {
    let f = &f;
    std::thread::scope(|s| {
        let runs: Vec<_> = args.into_iter().map(|a| s.spawn(move || f(a))).collect();
        runs.into_iter()
            .map(|r| r.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// Polls `what` every 50 ms until it returns `Some`, for at most
/// `within`; panics naming `waiting_for` if it never does. What a test
/// waits for instead of sleeping a guessed time.
pub fn wait_until<T>(
    within: std::time::Duration,
    waiting_for: &str,
    mut what: impl FnMut() -> Option<T>,
) -> T {
    let start = tokio::time::Instant::now();
    loop {
        if let Some(v) = what() {
            return v;
        }
        assert!(
            start.elapsed() < within,
            "waited {within:?} for {waiting_for}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
