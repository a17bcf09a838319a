//! Topologies far larger than a person would start: the model and the
//! validator must answer for them (their speed is measured in
//! `benches/model_scale.rs`, not here).

use chaoslab::topology::generate;

use crate::common::{chaoslab, text};

#[test]
fn model_answers_for_ten_thousand_services() {
    let path = std::env::temp_dir().join(format!("chaoslab-{}-10k.yaml", std::process::id()));
    std::fs::write(&path, generate::dag(10_000, 0x2545_F491_4F6C_DD1D)).unwrap();
    let p = path.to_str().unwrap();

    // No fault: every service carries exactly its baseline.
    let out = chaoslab(&["model", p]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with('S')).collect();
    assert_eq!(rows.len(), 10_000);
    assert!(
        rows.iter().all(|r| r.contains(" 1.000x ")),
        "{:?}",
        rows.iter().find(|r| !r.contains(" 1.000x "))
    );

    // The entry failing: nobody below it is called more than its baseline,
    // and the entry's availability is zero.
    let out = chaoslab(&["model", p, "--fail", "S0", "--policy", "retry"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("entry availability 0.0000%"), "{stdout}");

    let out = chaoslab(&["check", p]);
    assert!(out.status.success(), "{}", text(&out).1);
    let _ = std::fs::remove_file(&path);
}
