//! JUnit XML for a scenario's expectations, so a CI system shows each one
//! as a test: one `<testcase>` per expectation in one
//! `<testsuite name="chaoslab: TOPOLOGY">`, failures with what was seen
//! against what was expected, and the expectation's file and line.
//!
//! The format is small enough to write by hand; every attribute and text
//! goes through [`escape`], which also drops characters XML 1.0 cannot
//! carry at all.
//!
//! ```
//! use chaoslab_model::report::junit::escape;
//! assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
//! ```

use std::fmt::Write as _;

use super::{ExpectationReport, Report};
use crate::format::fmt_num;
use crate::lab::figures::Figure;

/// Escapes text for an XML attribute or element: `& < > " '`, and control
/// characters XML 1.0 forbids (replaced by U+FFFD).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

fn num(v: f64) -> String {
    if v.is_finite() {
        fmt_num(v)
    } else {
        "nothing".into()
    }
}

/// The test case's name: what, and when.
fn case_name(e: &ExpectationReport) -> String {
    format!(
        "{} during {}s..{}s",
        e.what,
        fmt_num(e.window_s.0),
        fmt_num(e.window_s.1)
    )
}

/// The JUnit XML of a report's expectations. `file` is the scenario's
/// file, for the test cases' `file` attribute.
pub fn to_junit(report: &Report, file: Option<&str>) -> String {
    let failures = report.expectations.iter().filter(|e| !e.passed).count();
    let errors = usize::from(report.interrupted);
    let tests = report.expectations.len() + errors;
    let suite = format!("chaoslab: {}", report.topology);
    let classname = format!("chaoslab.{}", report.topology);
    let mut x = String::new();
    let _ = writeln!(x, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        x,
        r#"<testsuites name="chaoslab" tests="{tests}" failures="{failures}" errors="{errors}" time="{:.3}">"#,
        report.duration_s
    );
    let _ = writeln!(
        x,
        r#"  <testsuite name="{}" tests="{tests}" failures="{failures}" errors="{errors}" skipped="0" time="{:.3}">"#,
        escape(&suite),
        report.duration_s
    );
    let _ = writeln!(x, "    <properties>");
    for (k, v) in [
        ("topology", report.topology.clone()),
        ("policy", report.policy.clone()),
        ("attempts", report.attempts.to_string()),
        (
            "budget",
            report.budget.map_or_else(|| "off".into(), fmt_num),
        ),
        ("attribution", report.attribution.clone()),
        ("scenario", file.unwrap_or("").to_string()),
    ] {
        let _ = writeln!(
            x,
            r#"      <property name="{}" value="{}"/>"#,
            escape(k),
            escape(&v)
        );
    }
    let _ = writeln!(x, "    </properties>");
    if report.interrupted {
        let message = format!(
            "the run was interrupted by a signal after {:.1}s of measurement: the figures cover that part only",
            report.duration_s
        );
        let _ = writeln!(
            x,
            r#"    <testcase name="the run ended on its own" classname="{}" time="{:.3}">"#,
            escape(&classname),
            report.duration_s
        );
        let _ = writeln!(
            x,
            r#"      <error type="interrupted" message="{}"/>"#,
            escape(&message)
        );
        let _ = writeln!(x, "    </testcase>");
    }
    for e in &report.expectations {
        let line = e.line;
        let mut attrs = format!(
            r#"name="{}" classname="{}" time="{:.3}""#,
            escape(&case_name(e)),
            escape(&classname),
            (e.figures.measured_s.1 - e.figures.measured_s.0).max(0.0)
        );
        if let Some(f) = file {
            let _ = write!(attrs, r#" file="{}""#, escape(f));
        }
        if let Some(l) = line {
            let _ = write!(attrs, r#" line="{l}""#);
        }
        if e.passed {
            let _ = writeln!(x, "    <testcase {attrs}/>");
            continue;
        }
        let message = format!(
            "{}: observed {}, expected {}",
            e.what,
            num(e.observed),
            e.expected
        );
        let mut body = format!(
            "{}: {}\nobserved: {}\nexpected: {} {}\nwindow: {}s..{}s (samples {:.2}s..{:.2}s)\n",
            e.source,
            e.what,
            num(e.observed),
            e.figure,
            e.expected,
            fmt_num(e.window_s.0),
            fmt_num(e.window_s.1),
            e.figures.measured_s.0,
            e.figures.measured_s.1
        );
        if let Some(n) = &e.note {
            let _ = writeln!(body, "note: {n}");
        }
        if let Some(f) = Figure::parse(&e.figure) {
            let _ = writeln!(body, "{}: {} (unit: {})", f.name(), f.help(), f.unit());
        }
        let r = &e.figures.fleet;
        let _ = writeln!(
            body,
            "{} over the window: {:.1} rps, availability {}, storm radius max {} mean {:.2}",
            e.root
                .as_ref()
                .map_or_else(|| "entry".to_string(), |n| format!("root {n}")),
            r[Figure::RootRps],
            match r[Figure::RootAvailability] {
                a if a.is_nan() => "— (no root requests)".to_string(),
                a => format!("{:.2}%", a * 100.0),
            },
            r.count(Figure::StormRadius),
            r[Figure::StormRadiusMean]
        );
        if let Some(n) = &e.figures.service {
            let f = &n.figures;
            let _ = writeln!(
                body,
                "{} over the window: {:.1} rps, amplification {:.3} (model {:.3}), retries {}, suppressed {}, budget denied {}",
                n.name,
                f[Figure::Rps],
                f[Figure::Amplification],
                f[Figure::ModelAmplification],
                f.count(Figure::RetriesSent),
                f.count(Figure::RetriesSuppressed),
                f.count(Figure::BudgetDenied)
            );
        }
        let _ = writeln!(x, "    <testcase {attrs}>");
        let _ = writeln!(
            x,
            r#"      <failure message="{}" type="expectation">{}</failure>"#,
            escape(&message),
            escape(&body)
        );
        let _ = writeln!(x, "    </testcase>");
    }
    let _ = writeln!(x, "  </testsuite>");
    let _ = writeln!(x, "</testsuites>");
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::figures::{Figures, Scope};
    use crate::report::WindowFigures;

    fn expectation(what: &str, passed: bool, observed: f64) -> ExpectationReport {
        ExpectationReport {
            what: what.into(),
            passed,
            observed,
            window_s: (8.0, 10.0),
            figure: "amplification".into(),
            service: Some("D".into()),
            root: None,
            expected: "≈ 8 ± 5%".into(),
            source: "story & co.yaml:42:5".into(),
            line: Some(42),
            note: None,
            figures: WindowFigures {
                measured_s: (8.0, 10.0),
                fleet: Figures::filled(Scope::Fleet, 1.0),
                service: None,
            },
        }
    }

    fn report(expectations: Vec<ExpectationReport>) -> Report {
        Report {
            topology: "uber<chain>".into(),
            policy: "ownership".into(),
            attempts: 2,
            budget: Some(0.1),
            attribution: "declared".into(),
            at_least_once: true,
            duration_s: 20.0,
            interrupted: false,
            saturated: false,
            saturation: vec![],
            unmeasured: vec![],
            fleet: Figures::filled(Scope::Fleet, 0.0),
            roots: vec![],
            nodes: vec![],
            services: vec![],
            edges: vec![],
            expectations,
            events: vec![],
            shards_lost: vec![],
            phases: vec![],
            stops: vec![],
            series: None,
        }
    }

    #[test]
    fn one_case_per_expectation_failures_say_why() {
        let x = to_junit(
            &report(vec![
                expectation("D amplification <= 1.15", true, 1.1),
                expectation("D amplification ≈ 8 ± 5%", false, 1.1),
            ]),
            Some("story & co.yaml"),
        );
        assert!(x.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites"));
        assert!(
            x.contains(r#"<testsuite name="chaoslab: uber&lt;chain&gt;" tests="2" failures="1""#)
        );
        assert_eq!(x.matches("<testcase ").count(), 2);
        assert_eq!(x.matches("<failure ").count(), 1);
        assert!(x.contains(
            r#"<testcase name="D amplification &lt;= 1.15 during 8s..10s" classname="chaoslab.uber&lt;chain&gt;" time="2.000" file="story &amp; co.yaml" line="42"/>"#
        ));
        assert!(x.contains(
            r#"<failure message="D amplification ≈ 8 ± 5%: observed 1.1, expected ≈ 8 ± 5%" type="expectation">story &amp; co.yaml:42:5"#
        ));
        // The figure's meaning and unit come from the catalogue.
        assert!(x.contains(&format!(
            "amplification: {} (unit: ×)",
            escape(Figure::Amplification.help())
        )));
        // Balanced.
        assert_eq!(x.matches("<testcase").count(), 2);
        assert_eq!(x.matches("</testcase>").count(), 1);
        assert!(x.trim_end().ends_with("</testsuites>"));
    }

    #[test]
    fn an_interrupted_run_is_an_error_case_and_its_open_windows_fail() {
        let mut r = report(vec![
            expectation("D amplification <= 1.15", true, 1.1),
            ExpectationReport {
                window_s: (15.0, 25.0),
                ..expectation("D amplification <= 1.15", true, 1.1)
            },
        ]);
        r.mark_interrupted();
        assert!(
            r.expectations[0].passed,
            "its window closed before the signal"
        );
        assert!(!r.expectations[1].passed);
        assert!(
            r.expectations[1]
                .note
                .as_deref()
                .unwrap()
                .contains("interrupted at 20.0s, before this window closed"),
            "{:?}",
            r.expectations[1].note
        );
        let x = to_junit(&r, None);
        assert!(x.contains(r#"tests="3" failures="1" errors="1""#), "{x}");
        assert!(x.contains(r#"<error type="interrupted" message="the run was interrupted by a signal after 20.0s"#), "{x}");
        assert_eq!(x.matches("<testcase").count(), 3);
    }

    #[test]
    fn escaping_covers_markup_and_control_characters() {
        assert_eq!(
            escape("<a href='x'>&</a>"),
            "&lt;a href=&apos;x&apos;&gt;&amp;&lt;/a&gt;"
        );
        assert_eq!(escape("bell\u{7}tab\t"), "bell\u{FFFD}tab\t");
        assert_eq!(num(f64::NAN), "nothing");
    }
}
