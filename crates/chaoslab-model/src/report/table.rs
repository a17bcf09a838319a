//! The per-service table a headless run prints: a row per service, a
//! column per catalogue figure that has one, then the entry's line, the
//! storm radius and each expectation's verdict. A run cut into more than
//! one phase (a policy or a fault changed) prints that table once per
//! phase, under a line saying when and what was in force, so no figure
//! mixes two policies. `chaoslab node` prints the rows of its own
//! service, `chaoslab load` the entry's line.

use std::fmt::Write as _;

use crate::format::fmt_rate;

use super::{NodeReport, PhaseReport, Report};
use crate::lab::figures::{Figure, Figures, Scope, Style, MIN_EXPECTED_REQUESTS};

/// The most rows a table lists unless asked for all (`--all`): a fleet of
/// more services shows its roots and the services with the highest
/// amplification, and says how many it left out.
pub const TOP_ROWS: usize = 20;

/// Which rows a table lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    /// Every service.
    All,
    /// At most [`TOP_ROWS`]: the roots, then the highest amplification;
    /// on a mesh of many roots, the most load above baseline.
    Top,
}

/// The table (a table per phase when the run has more than one), then the
/// expectations' verdicts.
pub fn render(r: &Report, rows: Rows) -> String {
    let mut out = String::new();
    if r.phases.len() > 1 {
        for (k, p) in r.phases.iter().enumerate() {
            out.push_str(&phase_line(p, k, r.phases.len()));
            out.push_str(&body(&p.report, rows));
        }
    } else {
        out.push_str(&body(r, rows));
    }
    for e in &r.expectations {
        let _ = writeln!(
            out,
            "{} {} (observed {:.4})",
            if e.passed { "PASS" } else { "FAIL" },
            e.what,
            e.observed
        );
    }
    out
}

/// The rows, the entry's line and the storm radius of one window.
fn body(r: &Report, which: Rows) -> String {
    let shown = shown(r, which);
    let mut out = match &shown {
        None => rows(r, &|_| true),
        Some(s) => ranked_rows(r, s),
    };
    if let Some(s) = &shown {
        let left: Vec<&NodeReport> = r
            .nodes
            .iter()
            .filter(|n| !s.contains(&n.name.as_str()))
            .collect();
        let most = left
            .iter()
            .map(|n| n.figures[Figure::Amplification])
            .fold(0.0, f64::max);
        let _ = writeln!(
            out,
            "… and {} more services, none above {most:.2}x (--all lists every service)",
            left.len()
        );
        out.push_str(&evidence_line(r));
    }
    out.push_str(&entry(r));
    let root = &r.fleet;
    let _ = writeln!(
        out,
        "storm radius: max {}, mean {:.2} (model {}, static {}) · spurious requests avoided: {}",
        root.count(Figure::StormRadius),
        root[Figure::StormRadiusMean],
        root.count(Figure::StormRadiusModel),
        root.count(Figure::StormRadiusStatic),
        root.count(Figure::SpuriousAvoided)
    );
    if let Some(top) = r.stops.first() {
        let _ = writeln!(
            out,
            "stopped through {} immediate callers: {} in all; the most through {} (calling {}): {}",
            r.stops.len(),
            root.count(Figure::SpuriousAvoidedByCallers),
            top.caller,
            top.owner,
            top.stopped
        );
    }
    out
}

/// On a table cut to its top rows: how many services read a ratio, how
/// many differ from the model beyond chance, and how many chance alone
/// would flag.
fn evidence_line(r: &Report) -> String {
    let with_ratio = r
        .nodes
        .iter()
        .filter(|n| !n.figures[Figure::Amplification].is_nan())
        .count();
    let flagged = r
        .nodes
        .iter()
        .filter(|n| n.figures[Figure::ModelDiffers] > 0.0)
        .count();
    let chance = with_ratio as f64 * (1.0 - 0.999);
    format!(
        "{with_ratio} of {} services read a ratio (the others expected fewer than {} requests: n=…); {flagged} differ from the model beyond chance (99.9%), where chance alone would flag about {chance:.1}\n",
        r.nodes.len(),
        crate::lab::figures::MIN_EXPECTED_REQUESTS
    )
}

/// The line above a phase's table: which phase, when, what opened it,
/// and the faults and dropped contexts in force.
pub fn phase_line(p: &PhaseReport, k: usize, n: usize) -> String {
    let mut parts = vec![format!(
        "phase {} of {n} · {:.1}s..{:.1}s",
        k + 1,
        p.from_s,
        p.to_s
    )];
    if !p.after.is_empty() {
        parts.push(format!("after {}", listed(&p.after)));
    }
    parts.push(if p.faults.is_empty() {
        "no faults".into()
    } else {
        listed(&p.faults)
    });
    if !p.context_dropped.is_empty() {
        parts.push(format!("context dropped: {}", listed(&p.context_dropped)));
    }
    format!("{}\n", parts.join(" · "))
}

/// The first few of `items`, joined, with a count of the rest: a mesh's
/// dropped contexts would fill a screen (the JSON report lists them all).
fn listed(items: &[String]) -> String {
    const SHOWN: usize = 6;
    let mut s = items[..items.len().min(SHOWN)].join(", ");
    if items.len() > SHOWN {
        s.push_str(&format!(" and {} more", items.len() - SHOWN));
    }
    s
}

/// The names of the rows a cut table lists (`None`: every row): the
/// roots, then the services with the highest amplification, up to
/// [`TOP_ROWS`].
fn shown(r: &Report, which: Rows) -> Option<Vec<&str>> {
    if which == Rows::All || r.nodes.len() <= TOP_ROWS {
        return None;
    }
    let mut by_amp: Vec<&NodeReport> = r.nodes.iter().collect();
    // Roots first (a few of them), then by amplification, highest first
    // (stable: ties keep the topology's order). A mesh of many roots
    // lists the storm instead: the load above baseline, in requests per
    // second (a service called once a minute that got two calls reads
    // 2x, not a storm), then the errors.
    use crate::lab::roots::{beyond_chance, MESH_ROOTS};
    let few_roots = r.roots.len() <= MESH_ROOTS;
    let excess = |n: &NodeReport| beyond_chance(&n.figures);
    by_amp.sort_by(|a, b| {
        let roots_first = if few_roots {
            (b.depth == 0).cmp(&(a.depth == 0))
        } else {
            std::cmp::Ordering::Equal
        };
        roots_first
            .then(excess(b).total_cmp(&excess(a)))
            .then(b.figures[Figure::Errors].total_cmp(&a.figures[Figure::Errors]))
    });
    Some(
        by_amp
            .iter()
            .take(TOP_ROWS)
            .map(|n| n.name.as_str())
            .collect(),
    )
}

/// The title line, the column headers and a row per service named in
/// `names`, in that order (the ranking of a table cut to its top rows:
/// the storm first).
fn ranked_rows(r: &Report, names: &[&str]) -> String {
    let order: Vec<usize> = names
        .iter()
        .filter_map(|n| r.nodes.iter().position(|x| x.name == *n))
        .collect();
    rows_ordered(r, &|n| names.contains(&n), Some(&order))
}

/// The title line, the column headers and a row per service `keep`
/// accepts (by name).
pub fn rows(r: &Report, keep: &dyn Fn(&str) -> bool) -> String {
    rows_ordered(r, keep, None)
}

/// [`rows`], its rows in `order` (indices into the report's nodes) when
/// given, else in the topology's.
fn rows_ordered(r: &Report, keep: &dyn Fn(&str) -> bool, order: Option<&[usize]>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} · policy {} (R={}, B={}) · {:.1}s measured",
        r.topology,
        r.policy,
        r.attempts,
        r.budget.map_or_else(|| "off".into(), |b| format!("{b}")),
        r.duration_s
    );
    let columns: Vec<Figure> = Figure::of(Scope::Service)
        .filter(|f| f.column().is_some())
        .collect();
    // Endpoints (`S/E`) and long names widen the name column, to a point.
    let w = r
        .nodes
        .iter()
        .filter(|n| keep(&n.name))
        .map(|n| n.name.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(10, 24);
    let _ = write!(out, "{:<w$} {:>5}", "service", "depth");
    for f in &columns {
        let c = f.column().expect("filtered");
        let _ = write!(out, " {:>w$}", c.header, w = c.width);
    }
    out.push('\n');
    let listed: Vec<&NodeReport> = match order {
        Some(o) => o.iter().map(|&i| &r.nodes[i]).collect(),
        None => r.nodes.iter().filter(|n| keep(&n.name)).collect(),
    };
    for n in listed {
        let _ = write!(out, "{:<w$} {:>5}", truncate(&n.name, w), n.depth);
        for f in &columns {
            let _ = write!(out, " {}", cell(&n.figures, *f));
        }
        out.push('\n');
        out.push_str(&replica_rows(n));
    }
    // A service's endpoints share its workers: its figures over them.
    for sv in r.services.iter().filter(|sv| {
        keep(&sv.name)
            || sv
                .endpoints
                .iter()
                .any(|e| keep(&format!("{}/{e}", sv.name)))
    }) {
        let shares: Vec<String> = sv
            .endpoints
            .iter()
            .zip(&sv.shares)
            .map(|(e, s)| format!("{e} {:.0}%", s * 100.0))
            .collect();
        let _ = writeln!(
            out,
            "service {}: {:.1} rps (baseline {:.1}, {}) · err {:.1}% · endpoints {}",
            sv.name,
            sv.rps,
            sv.baseline_rps,
            match sv.amplification {
                // Too few requests for a ratio: the count behind it.
                Some(_) if sv.baseline_rps * r.duration_s < MIN_EXPECTED_REQUESTS => {
                    format!("n={}", sv.requests)
                }
                Some(a) => format!("{a:.2}x"),
                None => "no baseline".into(),
            },
            if sv.requests > 0 {
                sv.errors as f64 / sv.requests as f64 * 100.0
            } else {
                0.0
            },
            shares.join(", ")
        );
    }
    out
}

/// The most replicas listed under a service; the rest are summed up.
const REPLICA_ROWS: usize = 12;

/// A line per replica under a service of more than one: what it
/// received, its errors, its share of the first attempts and the retries
/// sent to it, and what its callers' outlier detection did to it, if
/// anything.
fn replica_rows(n: &NodeReport) -> String {
    let mut out = String::new();
    for r in n.replicas.iter().take(REPLICA_ROWS) {
        let _ = write!(
            out,
            "  #{:<3} {:>15.1} rps · err {:>5.1}% · first attempts {:>5.1}% · retries {}",
            r.replica,
            r.rps,
            r.error_rate * 100.0,
            r.first_attempt_share * 100.0,
            r.retries
        );
        if r.ejections > 0 || r.ejected_now > 0 {
            let _ = write!(
                out,
                " · ejected {}×{}",
                r.ejections,
                if r.ejected_now > 0 { ", out now" } else { "" }
            );
        }
        out.push('\n');
    }
    if n.replicas.len() > REPLICA_ROWS {
        let left = &n.replicas[REPLICA_ROWS..];
        let worst = left.iter().map(|r| r.error_rate).fold(0.0, f64::max);
        let _ = writeln!(
            out,
            "  … and {} more replicas, none above {:.1}% errors",
            left.len(),
            worst * 100.0
        );
    }
    out
}

/// The most roots the table gives a line each.
pub const MAX_ROOT_LINES: usize = 10;

/// The entry's line (offered against sent, answered, availability,
/// latency), a line per root (on a mesh, the storm's first), then a line
/// per reason the machine was saturated.
pub fn entry(r: &Report) -> String {
    let mut out = String::new();
    let root = &r.fleet;
    let dropped = root.count(Figure::RootDropped);
    let skipped = root.count(Figure::RootSkipped);
    let mut unsent = vec![];
    if dropped > 0 {
        unsent.push(format!("{dropped} dropped (in-flight bound)"));
    }
    if skipped > 0 {
        unsent.push(format!("{skipped} skipped (load generator behind)"));
    }
    let _ = writeln!(
        out,
        "entry: offered {} rps, sent {} rps ({} in {:.1} s){}; {} answered, {} (model {:.2}%), p50 {:.1} ms, p99 {:.1} ms",
        fmt_rate(root[Figure::OfferedRps]),
        match root[Figure::RootRps] {
            r if r >= 1e5 => fmt_rate(r),
            r => format!("{r:.1}"),
        },
        root.count(Figure::RootSent),
        r.duration_s,
        if unsent.is_empty() {
            String::new()
        } else {
            format!(", {}", unsent.join(", "))
        },
        root.count(Figure::RootRequests),
        match root[Figure::RootAvailability] {
            a if a.is_nan() => "availability — (no root requests measured)".to_string(),
            a => format!("availability {:.2}%", a * 100.0),
        },
        root[Figure::ModelAvailability] * 100.0,
        root[Figure::LatencyP50],
        root[Figure::LatencyP99],
    );
    // A mesh of hundreds of roots: those in the storm first (the largest
    // radius, then the most errors, then the busiest), the rest counted.
    let mut roots: Vec<&crate::lab::roots::RootReport> = r.roots.iter().collect();
    if roots.len() > MAX_ROOT_LINES {
        roots.sort_by(|a, b| {
            (b.storm_radius.max, b.errors)
                .cmp(&(a.storm_radius.max, a.errors))
                .then(b.offered_rps.total_cmp(&a.offered_rps))
        });
    }
    let left = roots.split_off(roots.len().min(MAX_ROOT_LINES));
    for root in roots {
        let ms = |v: Option<f64>| v.map_or_else(|| "—".into(), |v| format!("{v:.1} ms"));
        let _ = writeln!(
            out,
            "root {}: offered {} rps, {} answered, {} (model {:.2}%), p50 {}, p99 {} · storm radius max {}, mean {:.2} (static {})",
            root.entry,
            fmt_rate(root.offered_rps),
            root.requests,
            root.availability.map_or_else(
                || "availability —".into(),
                |a| format!("availability {:.2}%", a * 100.0)
            ),
            root.model_availability * 100.0,
            ms(root.latency_ms.p50),
            ms(root.latency_ms.p99),
            root.storm_radius.max,
            root.storm_radius.mean,
            root.static_radius
        );
    }
    if !left.is_empty() {
        let _ = writeln!(
            out,
            "… and {} more roots, none with a storm radius above {} (the JSON report lists every root)",
            left.len(),
            left.iter().map(|r| r.storm_radius.max).max().unwrap_or(0)
        );
    }
    for reason in &r.saturation {
        let _ = writeln!(
            out,
            "SATURATED: the measured figures are lower bounds: {reason}"
        );
    }
    for l in &r.shards_lost {
        let _ = writeln!(
            out,
            "SHARD LOST: shard {} at {:.1}s ({}): its {} services down from then (connection refused)",
            l.shard, l.t_s, l.why, l.services
        );
    }
    out
}

/// One figure's cell, padded to its column.
fn cell(v: &Figures, f: Figure) -> String {
    let c = f.column().expect("a figure with a column");
    let w = c.width;
    let x = v[f];
    if f == Figure::Amplification && x.is_nan() {
        // Too few requests for a ratio: the count behind it.
        let n = format!("n={}", v.count(Figure::Requests));
        return format!("{n:>w$}");
    }
    match c.style {
        Style::Fixed(p) => format!("{x:>w$.p$}"),
        Style::Times(p) => format!("{x:>w$.p$}x", w = w - 1),
        Style::Percent(p) => format!("{:>w$.p$}%", x * 100.0, w = w - 1),
        Style::Int => format!("{:>w$}", v.count(f)),
        Style::Triple => {
            let next = |k: usize| Figure::ALL[f as usize + k];
            let t = format!("{}/{}/{}", v.count(f), v.count(next(1)), v.count(next(2)));
            format!("{t:>w$}")
        }
    }
}

/// `s` cut to `n` characters, the last one an ellipsis when cut.
pub fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}
