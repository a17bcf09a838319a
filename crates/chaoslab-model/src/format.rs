//! Numbers and durations as the YAML writes them, for every message and
//! table that shows a value a user wrote or could write back: `check`,
//! scenario errors, expectations and JUnit; and an error with its causes,
//! for messages; and text tables whose columns line up. A leaf: it
//! imports nothing from the crate.

use std::time::Duration;

/// A number without trailing zeros: `1`, `0.1`, `1.331`; from a million
/// on in exact scientific notation (`1e12`, `1.5e6`), so no message holds
/// a 300-digit number.
pub fn fmt_num(v: f64) -> String {
    if v.is_finite() && v.abs() >= 1e6 {
        return format!("{v:e}");
    }
    if v.is_finite() && v.fract() == 0.0 {
        return format!("{v:.0}");
    }
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "0" || s == "-0" {
        format!("{v:.2e}")
    } else {
        s.to_string()
    }
}

/// A duration as the YAML writes it: `0ms`, `250ms`, `10s`, `1.5s`.
pub fn fmt_duration(d: Duration) -> String {
    if d.is_zero() {
        "0ms".into()
    } else if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d.as_nanos() % 1_000_000 == 0 && d < Duration::from_secs(10) {
        format!("{}ms", d.as_millis())
    } else if d >= Duration::from_secs(1) {
        format!("{}s", fmt_num(d.as_secs_f64()))
    } else if d.as_nanos() % 1000 == 0 {
        format!("{}us", d.as_micros())
    } else {
        format!("{}ns", d.as_nanos())
    }
}

/// The widest a table column is padded to. A longer cell overflows its
/// column instead of widening every row: a 70,000-character service name
/// would otherwise pad each of 10,000 lines to it (and `format!`'s own
/// padding refuses widths past 65,535 with a panic).
pub const MAX_COLUMN: usize = 160;

/// How a column's cells line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Padded on the right.
    Left,
    /// Padded on the left.
    Right,
}

/// `rows` as lines: each line starts with `indent`, cells are separated by
/// `gap` and padded to their column's widest cell (at most
/// [`MAX_COLUMN`]), aligned as `align` says (missing entries: left);
/// trailing spaces trimmed. Linear in the text.
pub fn table(rows: &[Vec<String>], align: &[Align], indent: &str, gap: &str) -> Vec<String> {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0usize; columns];
    for r in rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count().min(MAX_COLUMN));
        }
    }
    rows.iter()
        .map(|r| {
            let mut line = String::from(indent);
            for (i, cell) in r.iter().enumerate() {
                if i > 0 {
                    line.push_str(gap);
                }
                let pad = widths[i].saturating_sub(cell.chars().count());
                let right = align.get(i) == Some(&Align::Right);
                if right {
                    line.extend(std::iter::repeat_n(' ', pad));
                }
                line.push_str(cell);
                if !right {
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
            line.truncate(line.trim_end().len());
            line
        })
        .collect()
}

/// An error's message followed by its causes': reqwest's own message for
/// a client that cannot be built is only "builder error", the reason is
/// in its source.
pub fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// A rate (or any large count) compactly: as written below 100,000
/// (`120`, `12.5`), then in scientific notation with two digits
/// (`1.2e6`), so a huge number never fills a line.
pub fn fmt_rate(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    if v.abs() >= 100_000.0 {
        format!("{v:.1e}")
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A duration in the largest unit that keeps it exact.
pub fn exact(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        "0ms".into()
    } else if ns % 1_000_000_000 == 0 {
        format!("{}s", ns / 1_000_000_000)
    } else if ns % 1_000_000 == 0 {
        format!("{}ms", ns / 1_000_000)
    } else if ns % 1000 == 0 {
        format!("{}us", ns / 1000)
    } else {
        format!("{ns}ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting_helpers() {
        assert_eq!(fmt_num(1.0), "1");
        assert_eq!(fmt_num(0.1), "0.1");
        assert_eq!(fmt_num(1.331), "1.331");
        assert_eq!(fmt_duration(Duration::ZERO), "0ms");
        assert_eq!(fmt_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(fmt_duration(Duration::from_secs(10)), "10s");
        assert_eq!(fmt_duration(Duration::from_millis(1500)), "1500ms");
        assert_eq!(fmt_num(1e12), "1e12");
        assert_eq!(fmt_num(1e300), "1e300");
        assert_eq!(fmt_num(1_500_000.0), "1.5e6");
        assert_eq!(fmt_num(999_999.0), "999999");
    }

    #[test]
    fn rates_print_compactly() {
        assert_eq!(fmt_rate(120.0), "120");
        assert_eq!(fmt_rate(12.5), "12.5");
        assert_eq!(fmt_rate(99_999.0), "99999");
        assert_eq!(fmt_rate(1.2e6), "1.2e6");
        assert_eq!(fmt_rate(1e300), "1.0e300");
        assert_eq!(fmt_rate(f64::NAN), "NaN");
    }

    #[test]
    fn a_cell_wider_than_a_column_overflows_without_widening_the_others() {
        let rows = vec![
            vec!["a".to_string(), "1".into()],
            vec!["bcd".into(), "22".into()],
        ];
        let lines = table(&rows, &[Align::Left, Align::Right], " ", "  ");
        assert_eq!(lines, [" a     1", " bcd  22"]);
        let long = "x".repeat(70_000);
        let rows = vec![
            vec!["1".to_string(), long.clone(), "a".into()],
            vec!["22".to_string(), "b".into(), "c".into()],
        ];
        let lines = table(&rows, &[Align::Right, Align::Left], "", "  ");
        assert_eq!(lines[0], format!(" 1  {long}  a"));
        assert_eq!(lines[1], format!("22  b{}  c", " ".repeat(MAX_COLUMN - 1)));
    }
}
