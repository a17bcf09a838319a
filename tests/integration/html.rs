//! `run --series` and `run --html`: the figures per sample agree with the
//! JSON report's own per-second series, and the page renders in a real
//! browser (headless Chromium) without fetching anything.

use std::path::{Path, PathBuf};
use std::process::Command;

use chaoslab::lab::figures::{Figure, Scope};
use serde_json::Value;

use crate::common::{chaoslab, fleet_lock, succeed, text};

/// A fresh folder under the system's temporary one.
fn folder(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chaoslab-html-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs uber-chain headless for a few light seconds with `extra`.
fn run(extra: &[&str]) {
    let mut args = vec![
        "run",
        "topologies/uber-chain.yaml",
        "--headless",
        "--duration",
        "4s",
        "--warmup",
        "1s",
        "--rps",
        "60",
        "--policy",
        "retry",
    ];
    args.extend_from_slice(extra);
    succeed(&args);
}

/// The columns the catalogue makes for uber-chain's seven services.
fn catalogue_columns() -> Vec<String> {
    let mut cols = vec!["t_s".to_string()];
    cols.extend(Figure::of(Scope::Fleet).map(|f| f.path().to_string()));
    for s in ["A", "B", "C", "D", "E", "F", "G"] {
        cols.extend(Figure::of(Scope::Service).map(|f| format!("{s}.{}", f.path())));
    }
    cols
}

/// Each row's value of `column`, NaN where it is empty or null.
fn column(names: &[String], rows: &[Vec<Option<f64>>], column: &str) -> Vec<f64> {
    let k = names
        .iter()
        .position(|n| n == column)
        .unwrap_or_else(|| panic!("no column {column}"));
    rows.iter().map(|r| r[k].unwrap_or(f64::NAN)).collect()
}

/// The series' rows agree with the report's per-second series: the same
/// times, and each service's rps and amplification within rounding.
fn agrees_with_the_report(names: &[String], rows: &[Vec<Option<f64>>], report: &Value) {
    let series = &report["series"];
    let times: Vec<f64> = series["t_s"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert!(times.len() >= 3, "a point a second: {series}");
    assert_eq!(rows.len(), times.len(), "one row per sample");
    let t = column(names, rows, "t_s");
    for (a, b) in t.iter().zip(&times) {
        assert!((a - b).abs() < 1e-3, "t_s {a} against the report's {b}");
    }
    for s in series["services"].as_array().unwrap() {
        let name = s["name"].as_str().unwrap();
        for figure in ["amplification", "rps"] {
            let want: Vec<f64> = s[figure]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap_or(f64::NAN))
                .collect();
            let got = column(names, rows, &format!("{name}.{figure}"));
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g - w).abs() <= 1e-3 * w.abs().max(1.0),
                    "{name}.{figure} at row {i}: {g} in the series, {w} in the report"
                );
            }
        }
    }
    // Something happened: D's load was amplified at some second.
    let d = column(names, rows, "D.amplification");
    assert!(d.iter().any(|&a| a > 1.5), "D under retry: {d:?}");
}

#[test]
fn series_csv_and_json_hold_every_figure_per_sample_as_the_report_does() {
    let _fleet = fleet_lock();
    let dir = folder("series");
    let (report, csv) = (dir.join("r.json"), dir.join("s.csv"));
    run(&[
        "--fail",
        "D",
        "--report",
        report.to_str().unwrap(),
        "--series",
        csv.to_str().unwrap(),
    ]);
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let names: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    assert_eq!(
        names,
        catalogue_columns(),
        "the header is the catalogue's columns"
    );
    let rows: Vec<Vec<Option<f64>>> = lines
        .map(|l| {
            let cells: Vec<Option<f64>> = l.split(',').map(|c| c.parse().ok()).collect();
            assert_eq!(cells.len(), names.len(), "a cell per column: {l}");
            cells
        })
        .collect();
    agrees_with_the_report(&names, &rows, &r);

    // The same as JSON.
    let json = dir.join("s.json");
    let report2 = dir.join("r2.json");
    run(&[
        "--fail",
        "D",
        "--report",
        report2.to_str().unwrap(),
        "--series",
        json.to_str().unwrap(),
    ]);
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report2).unwrap()).unwrap();
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let names: Vec<String> = s["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, catalogue_columns());
    assert_eq!(s["period_s"], 1.0);
    let rows: Vec<Vec<Option<f64>>> = s["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let row = row.as_array().unwrap();
            assert_eq!(row.len(), names.len());
            row.iter().map(Value::as_f64).collect()
        })
        .collect();
    agrees_with_the_report(&names, &rows, &r);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_series_file_named_neither_csv_nor_json_is_refused_before_the_fleet_starts() {
    let out = chaoslab(&[
        "run",
        "topologies/uber-chain.yaml",
        "--headless",
        "--series",
        "/tmp/s.txt",
    ]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(".csv or .json"), "{stderr}");
    let out = chaoslab(&["compare", "topologies/uber-chain.yaml", "--series", "s.csv"]);
    assert_eq!(out.status.code(), Some(2), "compare has no --series");
}

/// What a page must not hold: anything that makes a browser fetch.
fn fetches(html: &str) -> Vec<String> {
    let lower = html.to_ascii_lowercase();
    let mut found = vec![];
    for needle in [
        "src=", "srcset", "href=", "<script", "<link", "<img", "<iframe", "<object", "<embed",
        "<video", "<audio", "<source", "poster=", "url(", "@import",
    ] {
        if lower.contains(needle) {
            found.push(needle.to_string());
        }
    }
    // The SVG namespace is a name, not a request.
    let rest = lower.replace("http://www.w3.org/2000/svg", "");
    for needle in ["http://", "https://", "file://", "//"] {
        if let Some(at) = rest.find(needle) {
            found.push(rest[at.saturating_sub(40)..(at + 40).min(rest.len())].to_string());
        }
    }
    found
}

/// Decodes a PNG to RGBA rows and counts the pixels that differ from its
/// top-left pixel (the page's background).
fn ink(png_path: &Path) -> (usize, usize) {
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(png_path).unwrap(),
    ));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = info.color_type.samples();
    let data = &buf[..info.buffer_size()];
    let bg = &data[..px];
    let differ = data.chunks(px).filter(|p| p != &bg).count();
    (differ, (info.width * info.height) as usize)
}

/// Opens `page` in headless Chromium, writes a screenshot to `shot`,
/// and returns the URLs the page itself asked for, as Chromium's network
/// log has them: every request whose initiator is the page (a `file://`
/// page's origin is `null`), not the browser's own (`not an origin`:
/// its time and account look-ups, which the flags cannot all silence).
fn open_in_chromium(page: &Path, shot: &Path, profile: &Path) -> Vec<String> {
    let chromium = "/usr/bin/chromium";
    assert!(
        Path::new(chromium).exists(),
        "{chromium} is missing: scripts/test installs it (apt-get install chromium)"
    );
    let netlog = shot.with_extension("netlog.json");
    let url = format!("file://{}", page.display())
        .replace(' ', "%20")
        .replace('<', "%3C")
        .replace('>', "%3E")
        .replace('&', "%26");
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            &format!("--user-data-dir={}", profile.display()),
            &format!("--log-net-log={}", netlog.display()),
            &format!("--screenshot={}", shot.display()),
            "--window-size=1200,3000",
            &url,
        ])
        .output()
        .expect("start chromium");
    assert!(
        shot.exists() && netlog.exists(),
        "chromium wrote no screenshot or network log: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log: Value = serde_json::from_str(&std::fs::read_to_string(&netlog).unwrap())
        .expect("chromium's network log is JSON");
    let start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"].clone();
    assert!(start.is_number(), "the log names its request events");
    log["events"]
        .as_array()
        .expect("the log has events")
        .iter()
        .filter(|e| e["type"] == start)
        .filter(|e| e["params"]["url"].is_string())
        .filter(|e| e["params"]["initiator"] != "not an origin")
        .map(|e| e["params"]["url"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_html_page_renders_in_headless_chromium_and_fetches_nothing() {
    let _fleet = fleet_lock();
    let dir = folder("page");
    let scenario = dir.join("story.yaml");
    std::fs::write(
        &scenario,
        "steps:\n  - at: 1s\n    fail: { service: D, error_rate: 1.0 }\n  - at: 2.5s\n    policy: ownership\n",
    )
    .unwrap();
    let page = dir.join("run <&> page.html");
    run(&[
        "--scenario",
        scenario.to_str().unwrap(),
        "--html",
        page.to_str().unwrap(),
    ]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(fetches(&html), Vec::<String>::new(), "the page fetches");
    let charts = html.matches("<section class=\"chart\">").count();
    assert_eq!(
        charts, 4,
        "four charts: amplification, goodput, latency, radius"
    );
    assert_eq!(
        html.matches("<svg").count(),
        charts,
        "one <svg> per chart section"
    );
    // Each event on each of the four charts, and in the list under the first.
    for event in ["D fails 100%", "policy ownership"] {
        assert!(
            html.matches(event).count() >= 5,
            "{event} is marked on every chart"
        );
    }
    assert!(html.contains("<table>"), "the headline table");

    let shot = dir.join("shot.png");
    let requested = open_in_chromium(&page, &shot, &dir.join("profile"));
    assert_eq!(
        requested,
        Vec::<String>::new(),
        "the page made the browser fetch"
    );
    // The network log can fail: a page that loads an image from loopback
    // shows in it.
    let bad = dir.join("bad.html");
    std::fs::write(
        &bad,
        "<!doctype html><p>x<img src=\"http://127.0.0.1:9/x.png\">",
    )
    .unwrap();
    let seen = open_in_chromium(&bad, &dir.join("bad.png"), &dir.join("profile-bad"));
    assert_eq!(
        seen,
        ["http://127.0.0.1:9/x.png"],
        "the network log sees a page's fetch"
    );
    let (differ, all) = ink(&shot);
    eprintln!(
        "{differ} of {all} pixels differ from the background; the page is {} bytes",
        html.len()
    );
    // Four charts, two tables and the text: a blank page has none.
    assert!(
        differ * 100 > all * 5,
        "the screenshot is nearly blank: {differ} of {all} pixels differ from the background"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_dashboard_writes_its_page_and_series_when_it_quits() {
    use std::time::Duration;
    let _fleet = fleet_lock();
    let dir = folder("dashboard");
    let (page, series) = (dir.join("page.html"), dir.join("s.csv"));
    let t = crate::tui::Tmux::start();
    let cmd = format!(
        "{} topologies/uber-chain.yaml --policy retry --rps 60 --warmup 1s --html {} --series {}",
        env!("CARGO_BIN_EXE_chaoslab"),
        page.display(),
        series.display()
    );
    t.keys(&[
        &format!("cd {} && {cmd}", crate::common::root().display()),
        "Enter",
    ]);
    t.wait_for("the dashboard", Duration::from_secs(30), |s| {
        s.contains("RETRY")
    });
    std::thread::sleep(Duration::from_secs(3));
    // Ownership: an event the page marks.
    t.keys(&["4"]);
    t.wait_for("ownership", Duration::from_secs(10), |s| {
        s.contains("OWNERSHIP")
    });
    std::thread::sleep(Duration::from_secs(2));
    t.keys(&["q"]);
    t.wait_for("the summary", Duration::from_secs(20), |s| {
        s.contains("series written to")
    });
    let s = t.scrollback();
    assert!(s.contains("HTML report written to"), "{s}");
    let html = std::fs::read_to_string(&page).expect("the page is written on quit");
    assert_eq!(html.matches("<svg").count(), 4);
    assert!(html.matches("policy ownership").count() >= 5, "marked");
    let csv = std::fs::read_to_string(&series).expect("the series is written on quit");
    assert!(csv.lines().count() >= 4, "a row a second:\n{csv}");
    drop(t);
    let _ = std::fs::remove_dir_all(&dir);
}
