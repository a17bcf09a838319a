//! `chaoslab tour --headless`: every chapter of the post, live, printed
//! as a lesson with its captions and measured figures; exit 0 only when
//! every chapter's expectations hold. And the tour's other doors:
//! `--list`, `--export`, a chapter that does not exist.

use std::time::Duration;

use tokio::time::Instant;

use crate::common::{chaoslab, fleet_lock, text};

#[test]
fn the_tour_headless_is_a_printed_lesson_whose_figures_hold() {
    let _fleet = fleet_lock();
    let started = Instant::now();
    // The first seven: the eighth plays scenarios/uber-incident.yaml,
    // which `incident::the_posts_production_figures_measured_on_a_mesh_of_thousands`
    // runs and reads, and `incident::the_dashboard_opens_*` shows.
    let out = chaoslab(&["tour", "--headless", "1-7"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(180),
        "{:?}",
        started.elapsed()
    );
    for n in 1..=7 {
        assert!(
            stdout.contains(&format!("=== Chapter {n} of 8: ")),
            "{stdout}"
        );
    }
    // Captions as they pass, and each chapter's figures beside them.
    assert!(
        stdout.contains("» D fails every request. Under naive retries"),
        "{stdout}"
    );
    assert!(stdout.contains("PASS D amplification ≈ 8 ± 5%"), "{stdout}");
    assert!(stdout.contains("PASS S wrongly_unclaimed >= 3"), "{stdout}");
    assert!(stdout.contains("PASS root_availability <= 0.1"), "{stdout}");
    assert!(!stdout.contains("Chapter 8 of 8"), "{stdout}");
    assert!(!stdout.contains("FAIL"), "{stdout}");
    assert!(stdout.contains("Every chapter's expectations held."));
}

#[test]
fn the_tour_lists_exports_and_refuses_a_missing_chapter() {
    let out = chaoslab(&["tour", "--list"]);
    let (stdout, _) = text(&out);
    assert_eq!(stdout.lines().count(), 8, "{stdout}");
    assert!(stdout.contains(" 8. 18 November 2025: "), "{stdout}");
    let dir = std::env::temp_dir().join(format!("chaoslab-tour-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = chaoslab(&["tour", "--export", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    // What is exported runs as it is: checked against its topology.
    let topo = dir.join("1-storm.topology.yaml");
    let scen = dir.join("1-storm.scenario.yaml");
    let out = chaoslab(&["check", topo.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    let text_of = std::fs::read_to_string(&scen).unwrap();
    assert!(text_of.contains("say:"), "{text_of}");
    // The eighth chapter is the shipped incident, as it is in the repository.
    let incident = std::fs::read_to_string(dir.join("8-incident.scenario.yaml")).unwrap();
    assert_eq!(
        incident,
        std::fs::read_to_string(crate::common::root().join("scenarios/uber-incident.yaml"))
            .unwrap()
    );
    let _ = std::fs::remove_dir_all(&dir);
    let out = chaoslab(&["tour", "--headless", "--cast", "t.cast"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--cast"), "{stderr}");
    let out = chaoslab(&["tour", "9"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("there are chapters 1 to 8"), "{stderr}");
    // A range: its end must exist, and come after its start.
    let out = chaoslab(&["tour", "--headless", "2-9"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("tour 9: there are chapters 1 to 8"),
        "{stderr}"
    );
    let out = chaoslab(&["tour", "--headless", "5-3"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("or `2-5`, got `5-3`"), "{stderr}");
}
