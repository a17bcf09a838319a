//! Numbers and durations as the YAML writes them, for every message and
//! table that shows a value a user wrote or could write back: `check`,
//! scenario errors, expectations and JUnit; and an error with its causes,
//! for messages. A leaf: it imports nothing from the crate.

use std::time::Duration;

/// A number without trailing zeros: `1`, `0.1`, `1.331`.
pub fn fmt_num(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
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
    }
}
