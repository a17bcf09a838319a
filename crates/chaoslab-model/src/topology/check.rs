//! What `chaoslab check FILE` prints for a valid topology: its settings,
//! one line per service (by depth), and the static storm radius of the
//! worst single failure, with a simulation of the rules to confirm it;
//! for a fleet with `workers`, also each such service's capacity and
//! utilisation and the recovery threshold per preset
//! ([`render_capacity`], which `chaoslab model` prints too).

use std::fmt::Write as _;

/// The most roots `check` names; a mesh's busiest first, the rest counted.
const MAX_ROOTS_NAMED: usize = 10;

use super::{model, BudgetSetting, Policy, PolicyFields, Preset, Service, Topology};
use crate::format::{fmt_duration, fmt_num, table, Align};
use error_ownership::{is_error_status, DependencyMode};

/// The largest services × (services + calls) for which `check` also
/// simulates the rules to confirm the static radius (about 0.1 s).
pub const SIMULATE_WORK: usize = 1_000_000;

/// What `chaoslab check FILE` prints for a valid topology: its settings,
/// one line per service (by depth), and the static storm radius.
pub fn render_check(t: &Topology) -> String {
    render_check_simulated(t, false)
}

/// [`render_check`], and with `simulate` each root's static radius on a
/// topology of many roots also by a simulation of the rules (seconds on a
/// mesh of thousands; `check --simulate`).
pub fn render_check_simulated(t: &Topology, simulate: bool) -> String {
    let mut out = String::new();
    write_settings(&mut out, t);
    out.push('\n');
    write_services(&mut out, t);
    out.push('\n');
    write_radius(&mut out, t, simulate);
    if let Some(line) = model::throttle::describe(t, &t.policy) {
        let _ = writeln!(out, "\n{line}");
    }
    if let Some(lines) = model::limit::describe_all(t) {
        let _ = write!(out, "\n{lines}");
    }
    let capacity = render_capacity(t);
    if !capacity.is_empty() {
        out.push('\n');
        out.push_str(&capacity);
    }
    out
}

/// For a topology with `workers` somewhere: each such service's capacity
/// and utilisation under every preset, and the recovery threshold per
/// preset beside the offered rate, saying plainly where a trigger would
/// leave the fleet down. Empty when no service has workers.
///
/// ```
/// use chaoslab_model::topology::{check::render_capacity, Topology};
///
/// let t = Topology::from_yaml(
///     "name: m\nload: { rps: 120 }\npolicy: { attempts: 3 }\nservices:\n  A: { calls: [DB] }\n  DB: { workers: 4, work: 25ms }\n",
///     "m.yaml",
/// )
/// .unwrap();
/// let text = render_capacity(&t);
/// assert!(text.contains("retry      53.3 rps"), "{text}");
/// assert!(text.contains("leaves the fleet down under retry"), "{text}");
/// let plain = Topology::from_yaml("name: t\nservices:\n  A: {}\n", "t.yaml").unwrap();
/// assert_eq!(render_capacity(&plain), "");
/// ```
pub fn render_capacity(t: &Topology) -> String {
    let mut out = String::new();
    let mut policies: Vec<(String, Policy)> = Preset::ALL
        .into_iter()
        .map(|p| {
            let mut policy = t.policy.clone();
            policy.apply_preset(p);
            (p.name().to_string(), policy)
        })
        .collect();
    if t.policy.preset().is_none() {
        policies.push((t.policy.mode_name(), t.policy.clone()));
    }
    let caps: Vec<(String, model::capacity::Capacity)> = policies
        .iter()
        .map(|(name, p)| (name.clone(), model::capacity::capacity(t, p)))
        .collect();
    let Some((_, first)) = caps.first() else {
        return out;
    };
    if first.is_empty() {
        return out;
    }
    let offered = t.load.rps;
    let _ = writeln!(
        out,
        "capacity at {} rps offered (utilisation: busy workers / workers, by policy):",
        fmt_num(offered)
    );
    let mut header: Vec<String> = ["service", "workers", "queue", "holds", "capacity"]
        .map(String::from)
        .to_vec();
    header.extend(caps.iter().map(|(name, _)| name.clone()));
    let mut rows = vec![header];
    for (k, sc) in first.services.iter().enumerate() {
        let s = &t.services[sc.service];
        let mut row = vec![
            s.name.clone(),
            sc.workers.to_string(),
            s.queue.to_string(),
            fmt_duration(sc.service_time),
            if sc.capacity_rps.is_finite() {
                format!("{} rps", fmt_rate(sc.capacity_rps))
            } else {
                "unbounded".into()
            },
        ];
        row.extend(
            caps.iter()
                .map(|(_, c)| format!("{:.0}%", c.services[k].utilisation * 100.0)),
        );
        rows.push(row);
    }
    let mut align = vec![Align::Left];
    align.resize(rows[0].len(), Align::Right);
    for line in table(&rows, &align, "  ", "  ") {
        let _ = writeln!(out, "{line}");
    }
    if first.services.iter().any(|sc| sc.utilisation > 1.0)
        || caps
            .iter()
            .any(|(_, c)| c.services.iter().any(|sc| sc.utilisation > 1.0))
    {
        let _ = writeln!(
            out,
            "  above 100% a service is overloaded: its queue grows until it sheds"
        );
    }
    let _ = writeln!(
        out,
        "recovery threshold (the highest entry rate that still drains once every attempt times out):"
    );
    let width = caps.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    for (name, c) in &caps {
        let line = match (c.recovery_threshold, c.bottleneck) {
            (Some(th), Some(b)) => {
                let at = format!("{} rps at {}", fmt_rate(th), t.services[b].name);
                if offered > th {
                    format!(
                        "{at}: the {} rps offered is above it: a trigger that fills the queue leaves the fleet down under {name}",
                        fmt_num(offered)
                    )
                } else {
                    format!(
                        "{at}: the {} rps offered is below it: the fleet recovers after a trigger",
                        fmt_num(offered)
                    )
                }
            }
            // Workers, but no load reaches them once every attempt times
            // out: client-side throttles shut.
            _ if !c.services.is_empty() => "none: once every attempt times out the throttles shut and nothing reaches a service with workers: the fleet recovers after a trigger, as soon as they open again".to_string(),
            _ => "none: no service with workers takes any time".to_string(),
        };
        let _ = writeln!(out, "  {name:<width$}  {line}");
    }
    let skips = t.services.iter().any(|s| s.workers.is_some() && s.cancel)
        || t.policy.deadline
        || t.edges.iter().any(|e| e.policy.deadline == Some(true));
    if skips {
        let _ = writeln!(
            out,
            "  (cancel or deadline propagation skips work nobody waits for: the fleet drains faster, so these are lower bounds)"
        );
    }
    out
}

/// Requests per second: one decimal below 1000, whole above.
fn fmt_rate(v: f64) -> String {
    if v >= 1000.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.1}");
        s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
    }
}

/// The name, description, entry, policy and ownership settings.
fn write_settings(out: &mut String, t: &Topology) {
    let _ = writeln!(out, "topology   {}", t.name);
    if let Some(d) = &t.description {
        for (i, line) in wrap(d, 66).iter().enumerate() {
            let label = if i == 0 { "about" } else { "" };
            let _ = writeln!(out, "{label:<10} {line}");
        }
    }
    let arrival = |a: super::Arrival| match a {
        super::Arrival::Constant => "constant",
        super::Arrival::Poisson => "poisson",
    };
    if t.load.many_roots() {
        // A mesh of hundreds of roots names its busiest and counts the rest.
        let mut busiest: Vec<&super::Root> = t.load.roots.iter().collect();
        if busiest.len() > MAX_ROOTS_NAMED {
            busiest.sort_by(|a, b| b.rps.total_cmp(&a.rps));
        }
        let left = busiest.len().saturating_sub(MAX_ROOTS_NAMED);
        let mut roots: Vec<String> = busiest
            .iter()
            .take(MAX_ROOTS_NAMED)
            .map(|r| match r.closed {
                Some(c) => format!(
                    "{} with {} clients thinking {} ({} rps at most)",
                    t.services[r.entry].name,
                    c.clients,
                    fmt_duration(c.think),
                    fmt_num(r.rps),
                ),
                None => format!(
                    "{} at {} rps ({})",
                    t.services[r.entry].name,
                    fmt_num(r.rps),
                    arrival(r.arrival)
                ),
            })
            .collect();
        if left > 0 {
            roots.push(format!(
                "and {left} more ({} roots, {} rps in all)",
                t.load.roots.len(),
                fmt_num(t.load.rps)
            ));
        }
        let _ = writeln!(out, "roots      {}", roots.join(", "));
    } else if let Some(c) = t.load.roots[0].closed {
        let _ = writeln!(out, "entry      {}", c.describe(&t.entry().name));
    } else {
        let _ = writeln!(
            out,
            "entry      {} at {} rps ({} arrivals)",
            t.entry().name,
            fmt_num(t.load.rps),
            arrival(t.load.arrival)
        );
    }
    if let Some(u) = t.load.timeout {
        let _ = writeln!(
            out,
            "           the end user gives up after {}",
            fmt_duration(u)
        );
    }
    let _ = writeln!(out, "policy     {}", describe_policy(&t.policy));
    let _ = writeln!(
        out,
        "ownership  header {}, attribution {}, at-least-once {}",
        t.ownership.header,
        t.ownership.attribution.name(),
        if t.ownership.at_least_once {
            "on"
        } else {
            "off"
        }
    );
}

/// The service table, by depth, columns aligned.
fn write_services(out: &mut String, t: &Topology) {
    let mut rows: Vec<Vec<String>> =
        vec![["depth", "service", "calls", "baseline", "faults", "flags"]
            .map(String::from)
            .to_vec()];
    let mut order: Vec<usize> = (0..t.services.len()).collect();
    order.sort_by_key(|&i| t.services[i].depth);
    rows.extend(order.into_iter().map(|i| service_row(t, &t.services[i])));
    use Align::{Left, Right};
    for line in table(&rows, &[Right, Left, Left, Right, Left, Left], "", "  ") {
        let _ = writeln!(out, "{line}");
    }
}

/// One service's row: depth, name, calls, baseline, faults, flags.
fn service_row(t: &Topology, s: &Service) -> Vec<String> {
    let calls: Vec<String> = s.calls.iter().map(|&e| describe_call(t, e)).collect();
    let mut flags = Vec::new();
    if s.multiplicity == 0.0 {
        flags.push(if t.load.many_roots() {
            "not reached from any root".to_string()
        } else {
            "not reached from the entry".to_string()
        });
    }
    if s.parallel {
        flags.push("parallel".into());
    }
    if s.context_dropped {
        flags.push("context dropped".into());
    }
    if !s.ownership {
        flags.push("ownership off".into());
    }
    if let Some(u) = &s.url {
        flags.push(format!("outside: {u}"));
    }
    if s.replicas > 1 {
        flags.push(format!("{} replicas", s.replicas));
    }
    if let Some(c) = s.capacity {
        flags.push(format!("capacity {}/s", fmt_num(c)));
    }
    if !s.work.is_zero() {
        flags.push(format!("work {}", fmt_duration(s.work)));
    }
    if let Some(w) = s.workers {
        flags.push(format!("workers {w}, queue {}", s.queue));
        if s.cancel {
            flags.push("cancel".into());
        }
    }
    vec![
        s.depth.to_string(),
        s.name.clone(),
        if calls.is_empty() {
            "-".into()
        } else {
            calls.join(", ")
        },
        format!("{}x", fmt_num(s.multiplicity)),
        describe_fault(s.fault_in_force()),
        flags.join(", "),
    ]
}

/// The static storm radius under the topology's policy, and under plain
/// retries when that is not already the policy.
fn write_radius(out: &mut String, t: &Topology, simulate_roots: bool) {
    let mut retry = t.policy.clone();
    retry.apply_preset(Preset::Retry);
    // The simulation plays every single failure over the whole graph:
    // quadratic, so only for fleets a person would start.
    let simulate = t.services.len() * (t.services.len() + t.edges.len()) <= SIMULATE_WORK;
    let radius = |p: &Policy| {
        let (m, text) = match model::worst_failure(t, p) {
            Some((who, r)) => (r, format!("{r} (when {} fails)", t.services[who].name)),
            None => (0, "0".to_string()),
        };
        if !simulate {
            return text;
        }
        match super::sim::static_radius(t, p) {
            s if s == m => format!("{text}; a simulation of the rules agrees"),
            s => format!("{text}; a simulation of the rules says {s}"),
        }
    };
    let _ = writeln!(
        out,
        "static storm radius (worst single service failing every request):"
    );
    if t.load.many_roots() {
        write_root_radii(out, t, &retry, simulate_roots);
        return;
    }
    let _ = writeln!(out, "  {:<10} {}", t.policy.mode_name(), radius(&t.policy));
    if t.policy.mode_name() != "retry" {
        let _ = writeln!(out, "  {:<10} {}", "retry", radius(&retry));
    }
}

/// Many roots: each root's static radius (its own worst failure's), and
/// their maximum and mean over the roots, the two figures Uber gives for
/// its user-facing APIs (25 → 3, 20 → 2), under the topology's policy,
/// under `retry` and under `ownership`. A mesh of more than
/// [`MAX_ROOTS_NAMED`] roots names the largest; under ownership, every
/// root whose radius is larger than 1 is named with what makes it so:
/// the services on its paths to the failure that run no middleware or
/// drop their request context.
fn write_root_radii(out: &mut String, t: &Topology, retry: &Policy, simulate: bool) {
    let mut policies = vec![(t.policy.mode_name(), t.policy.clone())];
    let mut ownership = t.policy.clone();
    ownership.apply_preset(Preset::Ownership);
    for (name, p) in [("retry", retry), ("ownership", &ownership)] {
        if policies.iter().all(|(n, _)| n != name) {
            policies.push((name.into(), p.clone()));
        }
    }
    for (name, p) in policies {
        let radii = model::static_radius_per_root(t, &p);
        let values: Vec<usize> = radii.iter().map(|r| r.map_or(0, |(_, r)| r)).collect();
        let max = values.iter().copied().max().unwrap_or(0);
        let mean = values.iter().sum::<usize>() as f64 / values.len().max(1) as f64;
        let simulated = if simulate && (name == "retry" || name == "ownership") {
            simulate_roots(t, &p)
        } else {
            None
        };
        let _ = writeln!(
            out,
            "  {name:<10} max {max}, mean {mean:.2} over {} roots{}",
            values.len(),
            match simulated {
                Some((smax, smean)) if smax == max && format!("{smean:.2}") == format!("{mean:.2}") =>
                    "; a simulation of the rules agrees".to_string(),
                Some((smax, smean)) => format!(
                    " by the model's search; a simulation of the rules, root by root: max {smax}, mean {smean:.2}"
                ),
                None => String::new(),
            }
        );
        let mut order: Vec<usize> = (0..radii.len()).collect();
        let cut = radii.len() > MAX_ROOTS_NAMED;
        if cut {
            order.sort_by_key(|&k| std::cmp::Reverse(values[k]));
        }
        let explain = name == "ownership";
        let mut named = 0;
        for &k in &order {
            let wider = explain && values[k] > 1;
            if cut && named >= MAX_ROOTS_NAMED && !wider {
                continue;
            }
            named += 1;
            let root = t.load.roots[k].entry;
            let text = match radii[k] {
                Some((who, r)) => {
                    let mut text = format!("{r} (when {} fails)", t.services[who].name);
                    if wider {
                        let why = culprits(t, root, who);
                        if why.is_empty() {
                            text.push_str(
                                "; no service on its paths runs without middleware or drops its context",
                            );
                        } else {
                            let _ = write!(text, "; larger than 1 through {}", why.join(", "));
                        }
                    }
                    text
                }
                None => "0".into(),
            };
            let _ = writeln!(out, "    {:<12} {text}", t.services[root].name);
        }
        if named < order.len() {
            let _ = writeln!(
                out,
                "    and {} more roots, none larger than {}",
                order.len() - named,
                order.get(named).map_or(0, |&k| values[k])
            );
        }
    }
}

/// Each root's static radius by a simulation of the rules on the
/// subgraph it reaches (every single failure played), shared over the
/// cores: the maximum and the mean over the roots. `None` when the
/// simulations would take more than [`SIMULATE_ROOTS_WORK`].
fn simulate_roots(t: &Topology, p: &Policy) -> Option<(usize, f64)> {
    let roots = t.load.roots.len();
    let subs: Vec<Topology> = (0..roots).map(|k| t.root_subgraph(k).0).collect();
    let work: usize = subs
        .iter()
        .map(|s| s.services.len() * (s.services.len() + s.edges.len()))
        .sum();
    if work > SIMULATE_ROOTS_WORK {
        return None;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut radii = vec![0usize; roots];
    let found: Vec<Vec<(usize, usize)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..cores)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = vec![];
                    loop {
                        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(sub) = subs.get(k) else { break };
                        mine.push((k, super::sim::static_radius(sub, p)));
                    }
                    mine
                })
            })
            .collect();
        workers.into_iter().filter_map(|w| w.join().ok()).collect()
    });
    for (k, r) in found.into_iter().flatten() {
        radii[k] = r;
    }
    let max = radii.iter().copied().max().unwrap_or(0);
    Some((
        max,
        radii.iter().sum::<usize>() as f64 / roots.max(1) as f64,
    ))
}

/// The most work [`simulate_roots`] takes on: each root's subgraph's
/// services times its services and calls, summed (a 2,500-service mesh
/// of 324 roots takes some 11 s of a core per policy).
pub const SIMULATE_ROOTS_WORK: usize = 40_000_000_000;

/// The services on `root`'s paths to `failing` (both included) that run
/// no ownership middleware or drop their request context: what lets a
/// storm under ownership climb past the failure's immediate callers.
pub fn culprits(t: &Topology, root: usize, failing: usize) -> Vec<String> {
    let n = t.services.len();
    let mut below = vec![false; n];
    let mut stack = vec![root];
    below[root] = true;
    while let Some(v) = stack.pop() {
        for &e in &t.services[v].calls {
            let w = t.edges[e].to;
            if !below[w] {
                below[w] = true;
                stack.push(w);
            }
        }
    }
    let mut callers: Vec<Vec<usize>> = vec![vec![]; n];
    for e in &t.edges {
        callers[e.to].push(e.from);
    }
    let mut above = vec![false; n];
    above[failing] = true;
    let mut stack = vec![failing];
    while let Some(v) = stack.pop() {
        for &u in &callers[v] {
            if below[u] && !above[u] {
                above[u] = true;
                stack.push(u);
            }
        }
    }
    (0..n)
        .filter(|&i| below[i] && above[i])
        .filter_map(|i| {
            let s = &t.services[i];
            match (s.ownership, s.context_dropped) {
                (false, true) => Some(format!("{} (no middleware, context dropped)", s.name)),
                (false, false) => Some(format!("{} (no middleware)", s.name)),
                (true, true) => Some(format!("{} (context dropped)", s.name)),
                (true, false) => None,
            }
        })
        .collect()
}

/// Words joined into lines of at most `width` characters (a longer word
/// gets a line of its own); blank lines in the text are kept.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for para in text.trim().split("\n\n") {
        if !lines.is_empty() {
            lines.push(String::new());
        }
        let mut line = String::new();
        for word in para.split_whitespace() {
            if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        if !line.is_empty() {
            lines.push(line);
        }
    }
    lines
}

fn describe_policy(p: &Policy) -> String {
    let mut s = p.mode_name();
    let _ = write!(s, ": attempts {}", p.attempts);
    match p.budget {
        Some(b) => {
            let _ = write!(s, ", budget {}", fmt_num(b));
        }
        None => s.push_str(", budget off"),
    }
    let _ = write!(
        s,
        ", min_per_sec {}, ttl {}, backoff {}, timeout {}",
        fmt_num(p.min_per_sec),
        fmt_duration(p.ttl),
        fmt_duration(p.backoff),
        fmt_duration(p.timeout)
    );
    if p.deadline {
        s.push_str(", deadline propagate");
    }
    s
}

fn describe_call(t: &Topology, e: usize) -> String {
    let edge = &t.edges[e];
    let mut s = t.services[edge.to].name.clone();
    if edge.count > 1 {
        let _ = write!(s, " x{}", edge.count);
    }
    if edge.p < 1.0 {
        let _ = write!(s, " for {} of requests", fmt_share(edge.p));
    }
    if edge.mode == DependencyMode::FailOpen {
        s.push_str(" (fail-open)");
    }
    if !edge.policy.is_empty() {
        let _ = write!(s, " [{}]", describe_fields(&edge.policy));
    }
    s
}

/// `0.3` as `30%`, `0.125` as `12.5%`.
fn fmt_share(p: f64) -> String {
    let pct = format!("{:.1}", p * 100.0);
    format!("{}%", pct.strip_suffix(".0").unwrap_or(&pct))
}

fn describe_fields(f: &PolicyFields) -> String {
    let mut parts = Vec::new();
    if let Some(p) = f.preset {
        parts.push(p.name().to_string());
    }
    if let Some(a) = f.attempts {
        parts.push(format!("attempts {a}"));
    }
    match f.budget {
        Some(BudgetSetting::Ratio(b)) => parts.push(format!("budget {}", fmt_num(b))),
        Some(BudgetSetting::Off) => parts.push("budget off".into()),
        None => {}
    }
    if let Some(m) = f.min_per_sec {
        parts.push(format!("min_per_sec {}", fmt_num(m)));
    }
    if let Some(d) = f.ttl {
        parts.push(format!("ttl {}", fmt_duration(d)));
    }
    if let Some(d) = f.backoff {
        parts.push(format!("backoff {}", fmt_duration(d)));
    }
    if let Some(d) = f.timeout {
        parts.push(format!("timeout {}", fmt_duration(d)));
    }
    if let Some(d) = f.deadline {
        parts.push(format!("deadline {}", if d { "propagate" } else { "off" }));
    }
    parts.join(", ")
}

fn describe_fault(f: &super::Fault) -> String {
    let mut parts = Vec::new();
    if f.down {
        parts.push("down".to_string());
    }
    if f.error_rate > 0.0 {
        let phase = match f.phase {
            super::Phase::Before => "before",
            super::Phase::After => "after",
        };
        let mut s = format!("error_rate {} ({phase})", fmt_num(f.error_rate));
        if f.status != 500 {
            let _ = write!(s, " status {}", f.status);
            if !is_error_status(f.status) {
                s.push_str(" (not an error)");
            }
        }
        parts.push(s);
    }
    if !f.latency.is_zero() {
        parts.push(format!("latency {}", fmt_duration(f.latency)));
    }
    if let (Some(e), false) = (&f.endpoint, parts.is_empty()) {
        parts.push(format!("on endpoint {e}"));
    }
    if let (Some(r), false) = (&f.replicas, parts.is_empty()) {
        let list: Vec<String> = r.iter().map(u32::to_string).collect();
        let word = if r.len() == 1 { "replica" } else { "replicas" };
        parts.push(format!("on {word} {}", list.join(", ")));
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests;
