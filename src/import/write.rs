//! The topology written from a [`Graph`] (SPEC sections 11 and 12): roots
//! at their observed rate or share of the rate, each edge's expected calls
//! per request as `count` and `p`, a service's endpoint nodes grouped
//! under `endpoints:`, observed error ratios as faults (commented out
//! unless asked for), cut cycles named, each mapping stated in a comment
//! so that a reader can tell what was observed from what was assumed.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::graph::{Cut, Graph, Link};

/// Calls a request makes on one edge are written as at most this many.
const MAX_COUNT: f64 = 1000.0;
/// Root requests per second over every root when neither `--rps` nor the
/// source gives a rate.
pub const DEFAULT_RPS: f64 = 100.0;
/// The most a root may be written at: what the load generator schedules.
const MAX_RPS: f64 = 1_000_000.0;
/// Observed rates are written to this many significant figures: the
/// window they were measured over does not say more.
const RATE_FIGURES: i32 = 3;

/// How the topology is written.
#[derive(Debug, Clone)]
pub struct Written<'a> {
    /// `name:`.
    pub name: &'a str,
    /// Where the graph came from, for the header.
    pub source: &'a str,
    /// Root requests per second over every root; `None`: the observed
    /// rates where the source gives rates, else [`DEFAULT_RPS`].
    pub rps: Option<f64>,
    /// Observed error ratios as live faults (else commented out).
    pub with_faults: bool,
}

/// The topology YAML of `g` (cycles already cut, `cuts` saying where).
/// `None` when the graph has no root.
pub fn topology(g: &Graph, cuts: &[Cut], w: &Written<'_>) -> Option<String> {
    let roots = g.roots();
    let total: f64 = roots.iter().map(|r| r.1).sum();
    if roots.is_empty() || total <= 0.0 {
        return None;
    }
    let observed = w.rps.is_none() && g.per_second;
    let rps = w.rps.unwrap_or(DEFAULT_RPS);
    let requests = g.requests();
    let out = g.out_links();
    // Attempts into each node and of them failed: a node's fault is the
    // share of what it served that failed, the source's retries included.
    let mut into = vec![(0.0, 0.0); g.nodes.len()];
    for l in &g.links {
        into[l.to].0 += l.calls + l.retries;
        into[l.to].1 += l.errors;
    }
    let mut y = String::new();
    header(&mut y, g, cuts, w, observed);
    let _ = writeln!(y, "name: {}", quote(w.name));
    let _ = writeln!(
        y,
        "description: >\n  The call graph of {} as imported: {} services, {} edges, {} root{}.",
        w.source.replace(['\n', '\r'], " "),
        g.service_count(),
        g.links.len(),
        roots.len(),
        if roots.len() == 1 { "" } else { "s" }
    );
    let unit = if g.per_second { " a second" } else { "" };
    y.push_str("load:\n  entries:\n");
    for &(i, r) in &roots {
        let at = if observed {
            significant(r, RATE_FIGURES)
        } else {
            round(rps * r / total, 4)
        };
        let _ = writeln!(
            y,
            "    - {{ entry: {}, rps: {} }}   # {} requests{unit} observed",
            quote(&g.nodes[i].name()),
            fmt(at.clamp(0.0001, MAX_RPS)),
            shown(r)
        );
    }
    y.push_str("services:\n");
    let node = |y: &mut String, i: usize, indent: &str| {
        let n = &g.nodes[i];
        if n.parallel {
            let _ = writeln!(y, "{indent}parallel: true   # its calls overlapped in time");
        }
        calls(y, g, &out[i], requests[i], indent, unit);
        let (calls_in, failed) = into[i];
        if calls_in > 0.0 && failed > 0.0 {
            let _ = writeln!(
                y,
                "{indent}{}fault: {{ error_rate: {} }}   # {} of {} calls into it failed",
                if w.with_faults { "" } else { "# " },
                fmt(round((failed / calls_in).min(1.0), 4)),
                shown(failed),
                shown(calls_in)
            );
        }
    };
    for (service, members) in services(g) {
        let plain = members.len() == 1 && g.nodes[members[0]].endpoint.is_none();
        let _ = writeln!(
            y,
            "  {}:{}",
            quote(service),
            if plain && g.nodes[members[0]].uninstrumented {
                "   # uninstrumented: seen only as its callers' peer.service, a leaf here"
            } else {
                ""
            }
        );
        if plain {
            node(&mut y, members[0], "    ");
            continue;
        }
        y.push_str("    endpoints:\n");
        for &i in &members {
            let n = &g.nodes[i];
            // A bare service name means its `default` endpoint.
            let e = n.endpoint.as_deref().unwrap_or("default");
            let mut body = String::new();
            node(&mut body, i, "        ");
            let _ = write!(y, "      {}:", quote(e));
            if body.is_empty() {
                y.push_str(" {}");
            }
            if let Some(op) = &n.operation {
                let _ = write!(y, "   # operation {}", quote_always(op));
            }
            y.push('\n');
            y.push_str(&body);
        }
    }
    Some(y)
}

/// The file's opening comments: where it came from and how it maps.
fn header(y: &mut String, g: &Graph, cuts: &[Cut], w: &Written<'_>, observed: bool) {
    let _ = writeln!(y, "# Imported by `chaoslab import` from {}.", w.source);
    if observed {
        let _ = writeln!(
            y,
            "# Mapping: a root is a node requests enter from outside (or that nothing\n\
             # calls), at the rate per second the source observed (to {RATE_FIGURES} significant\n\
             # figures; --rps scales them to a total)."
        );
    } else {
        let _ = writeln!(
            y,
            "# Mapping: a root is a node requests enter from outside (or that nothing\n\
             # calls), at its observed share of load.rps ({}).",
            match w.rps {
                Some(_) => "--rps".to_string(),
                None => format!("{DEFAULT_RPS} by default"),
            }
        );
    }
    y.push_str(
        "# An edge's calls per request are its calls over the requests into its\n\
         # caller, written as `count` (rounded up) and `p` (so that count × p is\n\
         # the observed ratio); a node's error ratio (failed calls into it over\n\
         # calls into it) is a fault",
    );
    y.push_str(if w.with_faults {
        " (live: --with-faults).\n"
    } else {
        ", commented out\n# (`--with-faults` writes them live).\n"
    });
    if g.nodes.iter().any(|n| n.endpoint.is_some()) {
        y.push_str(
            "# Endpoints: a service whose spans show two or more inbound operations\n\
             # has one endpoint per operation; a call goes from the operation that\n\
             # made it to the one that served it.\n",
        );
    }
    for note in &g.notes {
        let _ = writeln!(y, "# {}", note.replace(['\n', '\r'], " "));
    }
    for warning in &g.warnings {
        let _ = writeln!(y, "# Warning: {}", warning.replace(['\n', '\r'], " "));
    }
    for c in cuts {
        let _ = writeln!(
            y,
            "# Cycle {} cut at its weakest edge {} -> {} ({} calls).",
            c.cycle,
            c.edge.0,
            c.edge.1,
            shown(c.edge.2)
        );
    }
}

/// Each service with its nodes, in the order first seen.
fn services(g: &Graph) -> Vec<(&str, Vec<usize>)> {
    let mut at: HashMap<&str, usize> = HashMap::new();
    let mut out: Vec<(&str, Vec<usize>)> = vec![];
    for (i, n) in g.nodes.iter().enumerate() {
        let k = *at.entry(n.service.as_str()).or_insert_with(|| {
            out.push((n.service.as_str(), vec![]));
            out.len() - 1
        });
        out[k].1.push(i);
    }
    out
}

/// `calls:` of a node that served `requests`.
fn calls(y: &mut String, g: &Graph, links: &[usize], requests: f64, indent: &str, unit: &str) {
    if links.is_empty() {
        return;
    }
    let _ = writeln!(y, "{indent}calls:");
    for &k in links {
        let l: &Link = &g.links[k];
        let x = if requests > 0.0 {
            l.calls / requests
        } else {
            0.0
        };
        let count = x.ceil().clamp(1.0, MAX_COUNT);
        let p = round((x / count).min(1.0), 4);
        let mut entry = format!("{{ to: {}", quote(&g.nodes[l.to].name()));
        if count > 1.0 {
            let _ = write!(entry, ", count: {}", fmt(count));
        }
        if p < 1.0 {
            let _ = write!(entry, ", p: {}", fmt(p));
        }
        let retried = if l.retries > 0.0 {
            format!(
                "; the source's own retries added {} attempt{}, not counted as calls",
                shown(l.retries),
                if l.retries == 1.0 { "" } else { "s" }
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            y,
            "{indent}  - {entry} }}   # {} calls{unit} over {} requests{unit}{retried}",
            shown(l.calls),
            shown(requests)
        );
    }
}

fn round(x: f64, places: i32) -> f64 {
    let k = 10f64.powi(places);
    (x * k).round() / k
}

/// `x` to `figures` significant figures.
fn significant(x: f64, figures: i32) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return x;
    }
    let places = figures - 1 - x.log10().floor() as i32;
    round(x, places.clamp(-15, 300))
}

/// An observed number in a comment: a count as it is, a rate to 4
/// significant figures (not the float noise of a subtraction).
fn shown(x: f64) -> String {
    if x.fract() == 0.0 {
        fmt(x)
    } else {
        fmt(significant(x, 4))
    }
}

/// A number as YAML writes it: no trailing `.0` on a whole one.
fn fmt(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// A name as a YAML scalar: bare when it is plainly a name, else in
/// double quotes.
pub fn quote(name: &str) -> String {
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
        && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && !matches!(
            name.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "y" | "n"
        );
    if plain {
        return name.to_string();
    }
    quote_always(name)
}

/// `name` in double quotes, escaped (a comment may hold anything but a
/// line break).
fn quote_always(name: &str) -> String {
    let mut q = String::from("\"");
    for c in name.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(q, "\\u{:04x}", c as u32);
            }
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Topology;

    fn written<'a>() -> Written<'a> {
        Written {
            name: "g",
            source: "test",
            rps: Some(100.0),
            with_faults: false,
        }
    }

    #[test]
    fn counts_and_shares_come_from_the_calls_over_the_requests() {
        let mut g = Graph::default();
        g.link("web", "api", 1000.0, 0.0);
        g.link("api", "db", 2500.0, 50.0);
        g.link("api", "cache", 300.0, 0.0);
        let y = topology(&g, &[], &written()).unwrap();
        let t = Topology::from_yaml(&y, "g.yaml").unwrap_or_else(|e| panic!("{e}\n{y}"));
        assert_eq!(t.load.roots.len(), 1);
        assert_eq!(t.entry().name, "web");
        let api = t.service_id("api").unwrap();
        let edge = |to: &str| {
            let to = t.service_id(to).unwrap();
            t.edges
                .iter()
                .find(|e| e.from == api && e.to == to)
                .unwrap()
        };
        assert_eq!((edge("db").count, edge("db").p), (3, 0.8333));
        assert_eq!((edge("cache").count, edge("cache").p), (1, 0.3));
        assert!(y.contains("# fault: { error_rate: 0.02 }"), "{y}");
        assert!(!t.services[t.service_id("db").unwrap()].fault.is_active());
        let live = topology(
            &g,
            &[],
            &Written {
                with_faults: true,
                ..written()
            },
        )
        .unwrap();
        let t = Topology::from_yaml(&live, "g.yaml").unwrap();
        assert_eq!(
            t.services[t.service_id("db").unwrap()].fault.error_rate,
            0.02
        );
    }

    #[test]
    fn a_cycle_is_cut_at_its_weakest_edge_and_named() {
        let mut g = Graph::default();
        g.enter("travel", 100.0);
        g.link("travel", "seat", 300.0, 0.0);
        g.link("seat", "travel", 40.0, 0.0);
        let cuts = g.cut_cycles();
        assert_eq!(cuts.len(), 1);
        assert_eq!(cuts[0].edge, ("seat".into(), "travel".into(), 40.0));
        let y = topology(&g, &cuts, &written()).unwrap();
        assert!(y.contains("# Cycle travel -> seat -> travel cut at its weakest edge seat -> travel (40 calls)."), "{y}");
        Topology::from_yaml(&y, "g.yaml").unwrap_or_else(|e| panic!("{e}\n{y}"));
    }

    /// Endpoint nodes are grouped under their service, calls name
    /// `S/E`, the fault and `parallel` go on the endpoint.
    #[test]
    fn endpoints_are_written_under_their_service() {
        let mut g = Graph::default();
        let trip = g.node("travel", Some("trip"));
        let reserve = g.node("seat", Some("reserve"));
        let detail = g.node("travel", Some("detail"));
        let left = g.node("seat", Some("left"));
        let db = g.service("db");
        g.nodes[detail].operation = Some("GET /detail".into());
        g.nodes[trip].parallel = true;
        g.entered[trip] = 10.0;
        g.entered[left] = 5.0;
        g.link_nodes(trip, reserve, 10.0, 1.0);
        g.link_nodes(trip, db, 20.0, 0.0);
        g.link_nodes(reserve, detail, 5.0, 0.0);
        let y = topology(&g, &[], &written()).unwrap();
        let t = Topology::from_yaml(&y, "g.yaml").unwrap_or_else(|e| panic!("{e}\n{y}"));
        assert!(
            y.contains("      detail: {}   # operation \"GET /detail\""),
            "{y}"
        );
        assert!(y.contains("# fault: { error_rate: 0.1 }"), "{y}");
        let id = |n: &str| t.service_id(n).unwrap();
        assert!(t.services[id("travel/trip")].parallel);
        let e = |a: &str, b: &str| {
            t.edges
                .iter()
                .find(|e| e.from == id(a) && e.to == id(b))
                .map(|e| e.expected_calls())
        };
        assert_eq!(e("travel/trip", "db"), Some(2.0));
        assert_eq!(e("seat/reserve", "travel/detail"), Some(0.5));
        assert_eq!(t.load.roots.len(), 2);
    }

    #[test]
    fn per_second_rates_are_written_as_observed_unless_scaled() {
        let mut g = Graph::default();
        g.per_second = true;
        g.enter("web", 12.3456);
        g.enter("admin", 0.5);
        g.link("web", "api", 20.0, 0.0);
        g.link("admin", "api", 0.5, 0.0);
        let y = topology(
            &g,
            &[],
            &Written {
                rps: None,
                ..written()
            },
        )
        .unwrap();
        let t = Topology::from_yaml(&y, "g.yaml").unwrap_or_else(|e| panic!("{e}\n{y}"));
        let rps: Vec<f64> = t.load.roots.iter().map(|r| r.rps).collect();
        assert_eq!(rps, [12.3, 0.5], "{y}");
        let y = topology(&g, &[], &written()).unwrap();
        let t = Topology::from_yaml(&y, "g.yaml").unwrap();
        assert!((t.load.rps - 100.0).abs() < 1e-3, "{y}");
    }

    #[test]
    fn awkward_names_are_quoted() {
        assert_eq!(quote("ts-travel-service"), "ts-travel-service");
        assert_eq!(quote("yes"), "\"yes\"");
        assert_eq!(quote("a b\"c"), "\"a b\\\"c\"");
        assert_eq!(quote("9lives"), "\"9lives\"");
        assert_eq!(significant(1234.5, 3), 1230.0);
        assert_eq!(significant(0.012345, 3), 0.0123);
    }
}
