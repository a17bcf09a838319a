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

#[test]
fn running_out_of_files_mid_run_marks_the_run_saturated() {
    let _fleet = crate::common::fleet_lock();
    let dir = std::env::temp_dir();
    let file = dir.join(format!("chaoslab-emfile-{}.yaml", std::process::id()));
    let report = dir.join(format!("chaoslab-emfile-{}.json", std::process::id()));
    // Two services fit in 256 files (2 listeners + 2 × 1 call + 128), but
    // 1,000 rps into a 300 ms service keeps some 300 roots in flight,
    // each holding a socket at each end of both hops.
    std::fs::write(
        &file,
        "name: emfile\npolicy: { preset: none }\nload: { rps: 1000 }\nservices:\n  A: { calls: [B] }\n  B: { work: 300ms }\n",
    )
    .unwrap();
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit -n 256 && exec {} run {} --headless --duration 3s --report {}",
            env!("CARGO_BIN_EXE_chaoslab"),
            file.display(),
            report.display()
        ))
        .current_dir(root())
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&file);
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    let written = std::fs::read_to_string(&report)
        .unwrap_or_else(|e| panic!("no report ({e}), exit {:?}:\n{out}\n{err}", o.status));
    let r: serde_json::Value = serde_json::from_str(&written).unwrap();
    let _ = std::fs::remove_file(&report);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert_eq!(r["saturated"], true, "{}", r["saturation"]);
    let fd = r["lab"]["fd_errors"].as_u64().unwrap();
    assert!(fd > 0, "{}", r["lab"]);
    assert!(
        r["saturation"].as_array().unwrap().iter().any(|s| s
            .as_str()
            .unwrap()
            .contains("for want of file descriptors (EMFILE)")),
        "{}",
        r["saturation"]
    );
    assert!(
        out.contains("SATURATED: the measured figures are lower bounds"),
        "{out}"
    );
}
