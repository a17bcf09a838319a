//! What a bench reads of a process (`/proc`) and of a run's report.

/// A `/proc/PID/status` field in kB (`VmRSS:`, `VmHWM:`), as MiB; `pid`
/// is a process id or `self`. `None` once the process is gone.
pub fn status_mib(pid: &str, field: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

/// What a run's report says of its roots and of the hops they made.
#[allow(dead_code)]
pub struct Served {
    pub sent: f64,
    pub dropped: f64,
    pub skipped: f64,
    /// The share of the roots offered that were not sent (dropped or
    /// skipped).
    pub unsent: f64,
    /// Every endpoint's requests over the measured window.
    pub hops: f64,
    /// The measured window, seconds.
    pub measured: f64,
}

/// Reads [`Served`] from a report (`chaoslab run --report`'s JSON); a
/// figure the report lacks reads NaN.
#[allow(dead_code)]
pub fn served(report: &serde_json::Value) -> Served {
    let num = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
    let root = &report["root"];
    let (sent, dropped, skipped) = (
        num(&root["sent"]),
        num(&root["dropped"]),
        num(&root["skipped"]),
    );
    Served {
        sent,
        dropped,
        skipped,
        unsent: (dropped + skipped) / (sent + dropped + skipped).max(1.0),
        hops: report["nodes"]
            .as_array()
            .map_or(f64::NAN, |n| n.iter().map(|n| num(&n["requests"])).sum()),
        measured: num(&report["duration_s"]),
    }
}
