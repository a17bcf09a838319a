//! `chaoslab lint TOPOLOGY` (SPEC section 18): the storm map. For every
//! service failing, the load it then receives over its baseline under the
//! topology's policies, its storm radius, and the path whose hops
//! multiply most, each hop with the configuration line that set its
//! retries; exit 1 when a threshold is exceeded, so the answer can gate
//! the pull request that changes a retry.

mod render;
mod sarif;

use std::path::{Path, PathBuf};

use crate::error::RunError;
use crate::topology::model::{storm_map, StormRow};
use crate::topology::Topology;

/// How `lint` writes its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// A table for people.
    #[default]
    Text,
    /// One JSON document.
    Json,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
    /// JUnit XML, one test case per service.
    Junit,
}

/// What `chaoslab lint` is asked.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The topology file.
    pub topology: PathBuf,
    /// Fail when a failing service receives more than this over its
    /// baseline.
    pub max_amplification: Option<f64>,
    /// Fail when more than this many hops retry above a failing service.
    pub max_radius: Option<usize>,
    /// The share of requests each service fails in turn (1: every one).
    pub rate: f64,
    /// How to write the answer.
    pub format: Format,
    /// Where (`None`: standard output).
    pub output: Option<PathBuf>,
}

/// One hop of a path, as `lint` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Hop {
    /// The caller.
    pub from: String,
    /// The callee.
    pub to: String,
    /// Attempts per call while the service below fails.
    pub attempts: f64,
    /// The line that set its retries: a configuration's `file:line` (the
    /// call's `source:`), or the topology's line of the call.
    pub file: String,
    /// Its line.
    pub line: usize,
    /// Whether the line is a configuration's (not the topology's).
    pub configured: bool,
}

/// One failing service's row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The service.
    pub service: String,
    /// Its load while it fails, over its baseline.
    pub amplification: f64,
    /// Retrying hops on the path.
    pub radius: usize,
    /// The path that multiplies most, root first.
    pub path: Vec<Hop>,
    /// A hop's figure is the model's steady state (a budget, throttle,
    /// breaker or hedge), not a closed form.
    pub steady_state: bool,
    /// The thresholds it exceeds, as sentences.
    pub exceeds: Vec<String>,
}

/// The storm map of a topology.
#[derive(Debug, Clone, PartialEq)]
pub struct Map {
    /// The topology's file.
    pub file: String,
    /// Its name.
    pub name: String,
    /// The failing share.
    pub rate: f64,
    /// Every service, the largest load first.
    pub rows: Vec<Row>,
}

impl Map {
    /// The rows that exceed a threshold.
    pub fn violations(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| !r.exceeds.is_empty())
    }
}

/// Runs `chaoslab lint`.
pub fn run(o: &Options) -> Result<(), RunError> {
    let file = o.topology.display().to_string();
    let text = std::fs::read_to_string(&o.topology)
        .map_err(|e| RunError::Usage(format!("{file}: cannot read it: {e}")))?;
    let t = Topology::from_yaml(&text, &file)?;
    let map = lint(&t, &text, &file, o);
    let out = match o.format {
        Format::Text => render::text(&map, o),
        Format::Json => render::json(&map, o),
        Format::Sarif => sarif::sarif(&map, o),
        Format::Junit => render::junit(&map),
    };
    crate::error::write_or_print(o.output.as_deref(), &out, "storm map")?;
    let n = map.violations().count();
    if n > 0 {
        let first = map
            .violations()
            .next()
            .map(|r| r.exceeds[0].clone())
            .unwrap_or_default();
        return Err(RunError::ExpectationFailed(format!(
            "lint: {n} service{} over a threshold; the first: {first}",
            if n == 1 { "" } else { "s" }
        )));
    }
    Ok(())
}

/// The storm map of `t` (the text of `file`) with `o`'s thresholds.
pub fn lint(t: &Topology, text: &str, file: &str, o: &Options) -> Map {
    let lines = Locator::new(text, file);
    let mut rows: Vec<Row> = storm_map(t, &t.policy, o.rate)
        .into_iter()
        .map(|r| row(t, &lines, r, o))
        .collect();
    rows.sort_by(|a, b| {
        b.amplification
            .total_cmp(&a.amplification)
            .then(b.radius.cmp(&a.radius))
            .then(a.service.cmp(&b.service))
    });
    Map {
        file: file.to_string(),
        name: t.name.clone(),
        rate: o.rate,
        rows,
    }
}

fn row(t: &Topology, lines: &Locator<'_>, r: StormRow, o: &Options) -> Row {
    let name = |v: usize| t.services[v].name.clone();
    let path: Vec<Hop> = r
        .path
        .iter()
        .map(|&(e, attempts)| {
            let edge = &t.edges[e];
            let (file, line, configured) = match edge.source.as_deref().and_then(file_line) {
                Some((f, l)) => (f.to_string(), l, true),
                None => {
                    let (f, l) = lines.call(&name(edge.from), &name(edge.to));
                    (f, l, false)
                }
            };
            Hop {
                from: name(edge.from),
                to: name(edge.to),
                attempts,
                file,
                line,
                configured,
            }
        })
        .collect();
    let route = render::route(&path, &name(r.service));
    let mut exceeds = vec![];
    if let Some(x) = o.max_amplification {
        if r.amplification > x + 1e-9 {
            exceeds.push(format!(
                "{} receives {:.2}× its load when it fails (over --max-amplification {x}), through {route}, retries set by {}",
                name(r.service),
                r.amplification,
                render::lines_of(&path)
            ));
        }
    }
    if let Some(n) = o.max_radius {
        if r.radius > n {
            exceeds.push(format!(
                "{} failing sets {} hops retrying (over --max-radius {n}), through {route}, retries set by {}",
                name(r.service),
                r.radius,
                render::lines_of(&path)
            ));
        }
    }
    Row {
        service: name(r.service),
        amplification: r.amplification,
        radius: r.radius,
        path,
        steady_state: r.steady_state,
        exceeds,
    }
}

/// `file:line` from a call's `source:` (the line a number at the end).
fn file_line(source: &str) -> Option<(&str, usize)> {
    let (file, line) = source.rsplit_once(':')?;
    let line: usize = line.trim().parse().ok()?;
    (!file.is_empty() && line > 0).then_some((file, line))
}

/// Finds a call's line in the topology's text: each key's first line,
/// indexed once.
struct Locator<'a> {
    file: &'a str,
    lines: Vec<&'a str>,
    keys: std::collections::HashMap<&'a str, usize>,
}

impl<'a> Locator<'a> {
    fn new(text: &'a str, file: &'a str) -> Locator<'a> {
        let lines: Vec<&str> = text.lines().collect();
        let mut keys = std::collections::HashMap::new();
        let services = lines
            .iter()
            .position(|l| l.starts_with("services:"))
            .unwrap_or(0);
        for (i, l) in lines.iter().enumerate().skip(services + 1) {
            if let Some(k) = crate::yaml::key_of(l) {
                keys.entry(k.trim_matches('"')).or_insert(i);
            }
        }
        Locator { file, lines, keys }
    }

    /// The topology's line of the call from `from` to `to`: the first line
    /// naming `to` in `from`'s block, else the line of `from`'s key.
    fn call(&self, from: &str, to: &str) -> (String, usize) {
        let Some(&start) = self.keys.get(from) else {
            return (self.file.to_string(), 1);
        };
        let indent = |l: &str| l.len() - l.trim_start().len();
        let top = indent(self.lines[start]);
        let mut at = start;
        for (i, l) in self.lines.iter().enumerate().skip(start) {
            if i > start && !l.trim().is_empty() && indent(l) <= top {
                break;
            }
            if l.contains(to) && (i > start || l.contains("calls")) {
                at = i;
                break;
            }
        }
        (self.file.to_string(), at + 1)
    }
}

/// Reads `--rate`'s value: a share from 0 (exclusive) to 1.
pub fn parse_rate(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("a share of requests from 0 to 1 (e.g. 0.5), got {s:?}"))?;
    let v = if s.trim().ends_with('%') {
        v / 100.0
    } else {
        v
    };
    if !(v > 0.0 && v <= 1.0) {
        return Err(format!(
            "a share of requests above 0 and at most 1, got {s}"
        ));
    }
    Ok(v)
}

/// The path of a topology file, for messages.
pub fn shown(p: &Path) -> String {
    p.display().to_string()
}

#[cfg(test)]
mod tests;
