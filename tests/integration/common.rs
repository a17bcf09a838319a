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
