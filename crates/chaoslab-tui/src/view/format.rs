//! Numbers as the dashboard writes them: fixed widths, never cut, the
//! same figure written the same way in every panel.

use std::time::Duration;

/// Amplification: `8.00×`, `12.3×`, `123×`, `12k×`; `–` without traffic.
/// At most five columns.
pub fn amp(a: Option<f64>) -> String {
    match a {
        None => "–".into(),
        Some(a) if !a.is_finite() => "–".into(),
        Some(a) if a < 9.995 => format!("{a:.2}×"),
        Some(a) if a < 99.95 => format!("{a:.1}×"),
        Some(a) if a < 9999.5 => format!("{a:.0}×"),
        Some(a) if a < 99_500.0 => format!("{:.0}k×", a / 1000.0),
        Some(a) => format!("{:.0}M×", a / 1_000_000.0),
    }
}

/// A rate per second in a table cell: one decimal below 10 000.
pub fn rps(r: f64) -> String {
    if r < 9999.95 {
        format!("{r:.1}")
    } else {
        format!("{r:.0}")
    }
}

/// A rate in at most four columns: `0.5`, `20`, `1600`, `12k`, `123k`.
pub fn rate_short(r: f64) -> String {
    if r < 9.95 {
        let s = format!("{r:.1}");
        s.strip_suffix(".0").map_or(s.clone(), str::to_string)
    } else if r < 9999.5 {
        format!("{r:.0}")
    } else if r < 999_500.0 {
        format!("{:.0}k", r / 1000.0)
    } else {
        format!("{:.0}M", r / 1_000_000.0)
    }
}

/// A counter in at most five columns: exact below 100 000, then `123k`,
/// `1.2M`, `12M`.
pub fn count(n: u64) -> String {
    if n < 100_000 {
        n.to_string()
    } else if n < 999_500 {
        format!("{:.0}k", n as f64 / 1000.0)
    } else if n < 9_950_000 {
        format!("{:.1}M", n as f64 / 1_000_000.0)
    } else {
        format!("{:.0}M", n as f64 / 1_000_000.0)
    }
}

/// Claim counts `true/false/missing`.
pub fn claims(c: [u64; 3]) -> String {
    format!("{}/{}/{}", count(c[0]), count(c[1]), count(c[2]))
}

/// A fraction as a percentage with one decimal: `100.0%`, `14.2%`.
pub fn pct1(f: f64) -> String {
    format!("{:.1}%", f * 100.0)
}

/// Availability: two decimals, and more when it is close to 100% but not
/// there (99.99% and 100% must not look alike).
pub fn availability(f: f64) -> String {
    if f.is_nan() {
        // No root request ended: there is nothing to measure.
        return "–".into();
    }
    let p = f * 100.0;
    if !(99.0..100.0).contains(&p) {
        format!("{p:.2}%")
    } else {
        format!("{p:.3}%")
    }
}

/// Milliseconds: `3.1 ms`, `1.50 s`.
pub fn ms(x: f64) -> String {
    if x < 999.95 {
        format!("{x:.1} ms")
    } else {
        format!("{:.2} s", x / 1000.0)
    }
}

/// Uptime: `0:42`, `12:05`, `1:02:03`.
pub fn uptime(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// A short description of a fault: `off`, `100%`, `50% before`, `+1.5s`,
/// `down`, `10% +200ms`.
pub fn fault(f: &crate::topology::Fault) -> String {
    if f.down {
        return "down".into();
    }
    let mut parts = vec![];
    if f.error_rate > 0.0 {
        let mut p = format!("{:.0}%", f.error_rate * 100.0);
        if f.phase == crate::topology::Phase::Before {
            p.push_str(" before");
        }
        parts.push(p);
    }
    if !f.latency.is_zero() {
        let ms = f.latency.as_millis();
        parts.push(if ms >= 1000 && ms % 100 == 0 {
            format!("+{}s", f.latency.as_secs_f64())
        } else {
            format!("+{ms}ms")
        });
    }
    if parts.is_empty() {
        "–".into()
    } else {
        parts.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{Fault, Phase};

    #[test]
    fn amplification_fits_five_columns_and_rounds_honestly() {
        assert_eq!(amp(Some(8.0)), "8.00×");
        assert_eq!(amp(Some(7.995)), "8.00×");
        assert_eq!(amp(Some(1.1)), "1.10×");
        assert_eq!(amp(Some(9.996)), "10.0×");
        assert_eq!(amp(Some(128.0)), "128×");
        assert_eq!(amp(Some(16384.0)), "16k×");
        assert_eq!(amp(None), "–");
        for a in [0.0, 1.0, 9.99, 10.0, 99.9, 100.0, 9999.0, 1e7] {
            assert!(amp(Some(a)).chars().count() <= 5, "{a}");
        }
    }

    #[test]
    fn counters_and_short_rates_fit_their_columns() {
        assert_eq!(count(99_999), "99999");
        assert_eq!(count(100_000), "100k");
        assert_eq!(count(1_250_000), "1.2M");
        assert_eq!(count(12_500_000), "12M");
        assert_eq!(rate_short(0.5), "0.5");
        assert_eq!(rate_short(2.0), "2");
        assert_eq!(rate_short(1600.4), "1600");
        assert_eq!(rate_short(12_345.0), "12k");
        for n in [
            0u64, 5, 99_999, 100_000, 999_499, 999_500, 9_949_999, 99_000_000,
        ] {
            assert!(count(n).len() <= 5, "{n}");
        }
    }

    #[test]
    fn availability_never_rounds_a_failure_to_100() {
        assert_eq!(availability(1.0), "100.00%");
        assert_eq!(availability(0.9999), "99.990%");
        assert_eq!(availability(0.99999), "99.999%");
        assert_eq!(availability(0.0), "0.00%");
        assert_eq!(availability(0.858), "85.80%");
        assert_eq!(availability(f64::NAN), "–");
    }

    #[test]
    fn faults_read_as_a_presenter_would_say_them() {
        let mut f = Fault::default();
        assert_eq!(fault(&f), "–");
        f.error_rate = 1.0;
        assert_eq!(fault(&f), "100%");
        f.phase = Phase::Before;
        assert_eq!(fault(&f), "100% before");
        let f = Fault {
            latency: Duration::from_millis(1500),
            ..Fault::default()
        };
        assert_eq!(fault(&f), "+1.5s");
        let f = Fault {
            down: true,
            ..Fault::default()
        };
        assert_eq!(fault(&f), "down");
        assert_eq!(uptime(Duration::from_secs(3723)), "1:02:03");
        assert_eq!(uptime(Duration::from_secs(42)), "0:42");
        assert_eq!(ms(20.24), "20.2 ms");
        assert_eq!(ms(1500.0), "1.50 s");
    }
}
