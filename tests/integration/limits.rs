//! The machine's limits said plainly: a fleet that cannot fit the
//! open-file limit is refused before anything is bound, naming the limit
//! and what it needs.

use std::fmt::Write as _;
use std::process::Command;
use std::time::Duration;

use tokio::time::Instant;

use crate::common::root;

/// A binary tree of `n` services: each calls the next two.
fn tree(n: usize) -> String {
    let mut y = String::from("name: tree\nload: { rps: 10 }\nservices:\n");
    for i in 0..n {
        let calls: Vec<String> = [2 * i + 1, 2 * i + 2]
            .into_iter()
            .filter(|&c| c < n)
            .map(|c| format!("s{c}"))
            .collect();
        let _ = writeln!(y, "  s{i}: {{ calls: [{}] }}", calls.join(", "));
    }
    y
}

#[test]
fn a_fleet_that_cannot_fit_the_open_file_limit_is_refused_before_binding() {
    let file = std::env::temp_dir().join(format!("chaoslab-tree-{}.yaml", std::process::id()));
    std::fs::write(&file, tree(1000)).unwrap();
    let t = Instant::now();
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit -n 1024 && exec {} run {} --headless --duration 2s",
            env!("CARGO_BIN_EXE_chaoslab"),
            file.display()
        ))
        .current_dir(root())
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&file);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    // 1,000 listeners + 2 × 999 calls + 128.
    assert!(
        err.contains("needs at least 3126 open files") && err.contains("may open 1024"),
        "{err}"
    );
    assert!(err.contains("ulimit -n 3126"), "{err}");
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
}
