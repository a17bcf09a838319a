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
