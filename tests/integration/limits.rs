//! The machine's limits said plainly: a fleet that cannot fit the
//! open-file limit, or the memory the process may take, is refused before
//! anything is bound, naming the limit and what it needs.

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

/// `chaoslab ARGS` (a shell's words) under an open-file limit of `files`.
fn run_limited(files: u32, args: &str) -> std::process::Output {
    run_under(&format!("-n {files}"), args)
}

/// `chaoslab ARGS` (a shell's words) under `ulimit LIMIT`.
fn run_under(limit: &str, args: &str) -> std::process::Output {
    Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit {limit} && exec {} {args}",
            env!("CARGO_BIN_EXE_chaoslab")
        ))
        .current_dir(root())
        .output()
        .unwrap()
}

#[test]
fn a_fleet_that_cannot_fit_the_open_file_limit_is_refused_before_binding() {
    let file = std::env::temp_dir().join(format!("chaoslab-tree-{}.yaml", std::process::id()));
    std::fs::write(&file, tree(1000)).unwrap();
    let t = Instant::now();
    let o = run_limited(
        1024,
        &format!("run {} --headless --duration 2s", file.display()),
    );
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

/// The mesh of Uber's incident (2,500 services, 4,112 endpoints) needs
/// some 600 MiB once started; under a data limit of 400 MB (every private
/// mapping counts) it would fail an allocation part-way through its
/// start and abort. It is refused first, with the numbers; `check` says
/// the same need before anything runs.
#[test]
fn a_fleet_that_cannot_fit_the_memory_it_may_take_is_refused_before_binding() {
    let t = Instant::now();
    let o = run_under(
        "-d 409600",
        "run topologies/uber-incident.yaml --headless --duration 2s",
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("The topology needs about"), "{err}");
    assert!(
        err.contains("2500 listeners × 36 KiB") && err.contains("MiB of samples"),
        "{err}"
    );
    assert!(
        err.contains("its data limit (`ulimit -d`) leaves this process"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t.elapsed()
    );
    // `check` states the same need, and what this machine allows.
    let o = crate::common::chaoslab(&["check", "topologies/uber-incident.yaml"]);
    let out = String::from_utf8_lossy(&o.stdout);
    let needs = out
        .lines()
        .find(|l| l.starts_with("needs "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(needs.contains("(2500 listeners,"), "{needs}");
    assert!(
        needs.contains("MiB of memory (2500 listeners × 36 KiB"),
        "{needs}"
    );
    assert!(needs.contains("this process may open"), "{needs}");
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
    let o = run_limited(
        256,
        &format!(
            "run {} --headless --duration 3s --report {}",
            file.display(),
            report.display()
        ),
    );
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

/// Twenty services that each call the same twenty leaves, one after
/// another: 400 calls between 41 services.
fn bipartite(transport: &str) -> String {
    let mut y = format!("name: bipartite\n{transport}load: {{ rps: 20 }}\nservices:\n");
    let mids: Vec<String> = (0..20).map(|m| format!("m{m}")).collect();
    let leaves: Vec<String> = (0..20).map(|l| format!("l{l}")).collect();
    let _ = writeln!(y, "  entry: {{ calls: [{}] }}", mids.join(", "));
    for m in &mids {
        let _ = writeln!(y, "  {m}: {{ calls: [{}] }}", leaves.join(", "));
    }
    for l in &leaves {
        let _ = writeln!(y, "  {l}: {{}}");
    }
    y
}

/// Over HTTP/2 every caller in the process shares one connection per
/// callee, so a mesh of many calls to few callees fits where HTTP/1.1,
/// a connection per call at the least, is refused, and the refusal says
/// so with both figures. The run then carries its load as the model says
/// (each leaf called by every middle service: 20 × the entry's rate).
#[test]
fn over_http2_a_mesh_fits_where_http1_is_refused() {
    let _fleet = crate::common::fleet_lock();
    let dir = std::env::temp_dir();
    let run = |name: &str, yaml: String, report: Option<&std::path::Path>| {
        let file = dir.join(format!("chaoslab-{name}-{}.yaml", std::process::id()));
        std::fs::write(&file, yaml).unwrap();
        let report = report.map_or(String::new(), |r| format!(" --report {}", r.display()));
        let o = run_limited(
            512,
            &format!(
                "run {} --headless --duration 3s --warmup 1s --policy none{report}",
                file.display()
            ),
        );
        let _ = std::fs::remove_file(&file);
        o
    };
    let o = run("bipartite-1", bipartite(""), None);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    // 41 listeners + 2 × 420 calls + 128; over HTTP/2, 41 + 2 × 40 + 128.
    assert!(
        err.contains("needs at least 1009 open files") && err.contains("may open 512"),
        "{err}"
    );
    assert!(
        err.contains("Over HTTP/2 it needs 249, which fits: add `transport: http2`"),
        "{err}"
    );

    let report = dir.join(format!("chaoslab-bipartite-{}.json", std::process::id()));
    let o = run(
        "bipartite-2",
        bipartite("transport: http2\n"),
        Some(&report),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let _ = std::fs::remove_file(&report);
    assert_eq!(v["saturated"], false, "{}", v["saturation"]);
    assert_eq!(v["root"]["availability"], 1.0, "{}", v["root"]);
    let entry = v["root"]["requests"].as_f64().unwrap();
    assert!(entry >= 50.0, "{}", v["root"]);
    for n in v["nodes"].as_array().unwrap() {
        let (name, requests) = (n["name"].as_str().unwrap(), n["requests"].as_f64().unwrap());
        let want = match name.as_bytes()[0] {
            b'e' | b'm' => entry,
            _ => 20.0 * entry,
        };
        // Every hop answered: a window's edges see the same requests,
        // give or take those in flight at its ends.
        assert!(
            (requests - want).abs() <= 0.03 * want + 2.0,
            "{name}: {requests} of {want}"
        );
    }
}
