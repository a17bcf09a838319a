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

/// A fleet of 40 services, one of them failing under naive retries: the
/// progress line names the six services with the highest amplification
/// and how many it left out; the table lists the root and the 19 highest
/// and says how many more there are and how high they go; `--all` lists
/// every service. (A low rate: 20 root requests a second for 2 s.)
#[test]
fn a_wide_fleets_table_and_progress_line_show_the_storm_first() {
    let _fleet = crate::common::fleet_lock();
    let leaves: Vec<String> = (0..39).map(|i| format!("B{i:02}")).collect();
    let mut yaml = format!(
        "name: wide\npolicy: {{ preset: retry, attempts: 2 }}\nload: {{ rps: 40 }}\nservices:\n  A: {{ parallel: true, calls: [{}] }}\n",
        leaves.join(", ")
    );
    for l in &leaves {
        yaml.push_str(&format!("  {l}: {{}}\n"));
    }
    let yaml = yaml.replace("  B07: {}\n", "  B07: { fault: { error_rate: 1.0 } }\n");
    let path = std::env::temp_dir().join(format!("chaoslab-{}-wide.yaml", std::process::id()));
    std::fs::write(&path, yaml).unwrap();
    let p = path.to_str().unwrap();
    let run = |all: bool| {
        let mut args = vec!["run", p, "--headless", "--duration", "2s", "--warmup", "1s"];
        if all {
            args.push("--all");
        }
        let out = chaoslab(&args);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{stdout}\n{stderr}");
        (stdout, stderr)
    };
    let (table, progress) = run(false);
    let line = progress
        .lines()
        .find(|l| l.starts_with('[') && !l.contains("warm-up"))
        .unwrap_or_else(|| panic!("no progress line after the warm-up:\n{progress}"));
    let first: f64 = line
        .split_once("· B07 ")
        .and_then(|(_, rest)| rest.split_once("x "))
        .unwrap_or_else(|| panic!("the failing service first: {line}"))
        .0
        .parse()
        .unwrap();
    assert!((1.9..=2.1).contains(&first), "B07 near 2x: {line}");
    assert!(
        line.ends_with("(+34 more)"),
        "six shown, 34 left out: {line}"
    );
    let rows = |t: &str| {
        t.lines()
            .filter(|l| l.starts_with('A') || l.starts_with('B'))
            .count()
    };
    assert_eq!(rows(&table), 20, "{table}");
    assert!(table.lines().any(|l| l.starts_with("B07 ")), "{table}");
    // A leaf's count can lead its parent's by a request that reached A
    // just before the window opened and its calls just after (40 beside
    // 39 in 2 s: 1.03x), so the healthy leaves' ceiling is checked to be
    // near 1, not exactly 1.00x.
    let ceiling: f64 = table
        .lines()
        .find_map(|l| l.strip_prefix("… and 20 more services, none above "))
        .and_then(|rest| rest.strip_suffix("x (--all lists every service)"))
        .unwrap_or_else(|| panic!("no summary of the 20 left out:\n{table}"))
        .parse()
        .unwrap();
    assert!((1.0..=1.1).contains(&ceiling), "{table}");
    let (all, progress) = run(true);
    assert_eq!(rows(&all), 40, "{all}");
    assert!(!all.contains("more services"), "{all}");
    assert!(progress.lines().any(|l| l.contains(" B38 ")), "{progress}");
    let _ = std::fs::remove_file(&path);
}
