//! `--html FILE`: a run or a comparison as one self-contained page.
//!
//! A table of numbers says *how much*; the storm's story is *when*: the
//! amplification climbing a second after a fault, goodput falling away
//! from the offered rate, the queue draining after the policy changed.
//! This module draws those figures over time from a finished run's
//! [`RunRecord`](crate::lab::RunRecord) (through [`Samples`](super::samples::Samples),
//! so every value comes from the figure catalogue) as inline SVG made with
//! `plotters`' SVG backend, and writes them into one HTML file with its CSS
//! inline: no script, no font, no image, nothing the page fetches, so it
//! opens from a mail attachment or a CI artefact as it is.
//!
//! [`page`] assembles [`Section`]s (a heading, a paragraph, one chart,
//! trusted HTML such as a [`table`]); [`run::page`] and [`compare::page`]
//! are the pages of `run` and `compare`; [`heatmap_svg`] draws a grid of
//! cells for a front end that sweeps a value.

pub mod chart;
pub mod compare;
pub mod heatmap;
pub mod run;

pub use heatmap::{heatmap_svg, Marks};

use std::fmt::Write as _;

/// One part of a page: a heading, a paragraph of plain text (escaped
/// here), at most one chart, then any HTML this module built (a
/// [`table`], a list), in that order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Section {
    /// The heading (plain text).
    pub title: String,
    /// What the section shows and what its figures mean (plain text).
    pub text: String,
    /// One chart: an `<svg>` element, as [`chart`] and [`heatmap_svg`]
    /// draw them (trusted: written into the page as it is).
    pub svg: Option<String>,
    /// HTML after the chart (trusted: build it with [`table`] and
    /// [`escape`]).
    pub html: String,
}

impl Section {
    /// A section with a heading, a paragraph and a chart.
    pub fn chart(title: impl Into<String>, text: impl Into<String>, svg: String) -> Section {
        Section {
            title: title.into(),
            text: text.into(),
            svg: Some(svg),
            html: String::new(),
        }
    }
}

/// The page's CSS, inline.
const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;\
margin:2em auto;max-width:1040px;padding:0 1em;color:#1d1d1f;background:#fff;line-height:1.45}\
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #ddd}\
p{max-width:60em}svg{max-width:100%;height:auto;display:block;margin:.5em 0}\
table{border-collapse:collapse;margin:.5em 1.5em .5em 0;display:inline-table;vertical-align:top;font-variant-numeric:tabular-nums}\
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}\
th:first-child,td:first-child{text-align:left}th{background:#f3f3f3}\
.warn{color:#a30000}footer{margin-top:3em;color:#666;font-size:.85em}\
details{margin:.5em 0}li{font-variant-numeric:tabular-nums}";

/// A whole page: `title` as its `<title>` and first heading, then each
/// section as a `<section>` (class `chart` when it carries a chart).
/// Everything a user wrote (titles, texts) is escaped; the SVG and HTML
/// of a section are written as they are.
pub fn page(title: &str, sections: &[Section]) -> String {
    let mut out = String::new();
    let title = escape(title);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{title}</h1>\n"
    );
    for s in sections {
        let class = if s.svg.is_some() {
            " class=\"chart\""
        } else {
            ""
        };
        let _ = writeln!(out, "<section{class}>\n<h2>{}</h2>", escape(&s.title));
        if !s.text.is_empty() {
            let _ = writeln!(out, "<p>{}</p>", escape(&s.text));
        }
        if let Some(svg) = &s.svg {
            out.push_str(svg);
            out.push('\n');
        }
        out.push_str(&s.html);
        out.push_str("</section>\n");
    }
    out.push_str(
        "<footer>Written by chaoslab: every figure measured from the run's own samples.</footer>\n\
         </body>\n</html>\n",
    );
    out
}

/// `s` with `&`, `<`, `>`, `"` and `'` escaped, for text and attributes
/// (the same escape as JUnit's XML: control characters HTML cannot show
/// become U+FFFD).
pub use super::junit::escape;

/// An HTML table: a heading row and rows of plain-text cells (escaped).
pub fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = String::from("<table>\n<tr>");
    for h in head {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr>\n");
    for row in rows {
        out.push_str("<tr>");
        for c in row {
            let _ = write!(out, "<td>{}</td>", escape(c));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

/// A number for a table cell: `–` when unmeasured.
pub fn cell(v: f64, decimals: usize) -> String {
    if v.is_finite() {
        format!("{v:.decimals$}")
    } else {
        "–".into()
    }
}

/// A fraction as a percentage for a table cell: `–` when unmeasured.
pub fn percent(v: f64) -> String {
    if v.is_finite() {
        format!("{:.2}%", v * 100.0)
    } else {
        "–".into()
    }
}

/// Whether an SVG has a `<text>` saying exactly `t`: what plotters
/// writes for a label (the charts' tests).
#[cfg(test)]
fn has_text(svg: &str, t: &str) -> bool {
    svg.contains(&format!(">\n{t}\n</text>"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_escapes_what_users_wrote_and_keeps_its_charts() {
        let p = page(
            "<b>chain & co</b>",
            &[
                Section::chart("amp <1>", "it's \"big\"", "<svg></svg>".into()),
                Section {
                    title: "table".into(),
                    html: table(&["policy"], &[vec!["<script>".into()]]),
                    ..Section::default()
                },
            ],
        );
        assert!(p.contains("<title>&lt;b&gt;chain &amp; co&lt;/b&gt;</title>"));
        assert!(p.contains("<h2>amp &lt;1&gt;</h2>"));
        assert!(p.contains("<p>it&apos;s &quot;big&quot;</p>"));
        assert!(p.contains("<td>&lt;script&gt;</td>"));
        assert!(!p.contains("<script"));
        assert_eq!(p.matches("<svg").count(), 1);
        assert_eq!(p.matches("class=\"chart\"").count(), 1);
        assert!(!p.contains("http"));
    }
}
