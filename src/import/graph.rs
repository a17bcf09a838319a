//! The call graph every format reads into, and the topology written from
//! it (SPEC section 12): roots with their observed share of the rate,
//! each edge's expected calls per request as `count` and `p`, observed
//! error ratios as faults (commented out unless asked for), service-level
//! cycles cut at their weakest edge, each mapping stated in a comment.

use std::fmt::Write as _;

/// Calls a request makes on one edge are written as at most this many.
const MAX_COUNT: f64 = 1000.0;

/// A call graph as a tracing system or a mesh reports it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Graph {
    /// Service names, in the order first seen.
    pub services: Vec<String>,
    /// Calls between services over the window, summed per pair.
    pub links: Vec<Link>,
    /// Requests from outside (a `user` client, an ingress) per service.
    pub entered: Vec<f64>,
}

/// The calls from one service to another over the window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    /// Caller.
    pub from: usize,
    /// Callee.
    pub to: usize,
    /// Calls made.
    pub calls: f64,
    /// Of those, failed.
    pub errors: f64,
}

/// An edge cut to break a service-level cycle.
#[derive(Debug, Clone, PartialEq)]
pub struct Cut {
    /// The cycle, spelled `A -> B -> A`.
    pub cycle: String,
    /// The edge cut, `B -> A`, and its calls.
    pub edge: (String, String, f64),
}

impl Graph {
    /// The service called `name`, added when new.
    pub fn service(&mut self, name: &str) -> usize {
        if let Some(i) = self.services.iter().position(|s| s == name) {
            return i;
        }
        self.services.push(name.to_string());
        self.entered.push(0.0);
        self.services.len() - 1
    }

    /// Adds calls from `from` to `to` (summed with earlier ones).
    pub fn link(&mut self, from: &str, to: &str, calls: f64, errors: f64) {
        let (from, to) = (self.service(from), self.service(to));
        if from == to {
            return; // a service calling itself is not a call the lab makes
        }
        match self.links.iter_mut().find(|l| l.from == from && l.to == to) {
            Some(l) => {
                l.calls += calls;
                l.errors += errors;
            }
            None => self.links.push(Link {
                from,
                to,
                calls,
                errors,
            }),
        }
    }

    /// Adds requests into `to` from outside the graph.
    pub fn enter(&mut self, to: &str, requests: f64) {
        let i = self.service(to);
        self.entered[i] += requests;
    }

    /// Cuts every service-level cycle at its weakest edge (fewest calls;
    /// the first listed on a tie), until none is left.
    pub fn cut_cycles(&mut self) -> Vec<Cut> {
        let mut cuts = vec![];
        while let Some(cycle) = self.a_cycle() {
            let edges: Vec<usize> = cycle
                .windows(2)
                .filter_map(|w| {
                    self.links
                        .iter()
                        .position(|l| l.from == w[0] && l.to == w[1])
                })
                .collect();
            let Some(&weakest) = edges
                .iter()
                .min_by(|&&a, &&b| self.links[a].calls.total_cmp(&self.links[b].calls))
            else {
                break;
            };
            let l = self.links.remove(weakest);
            let name = |i: usize| self.services[i].clone();
            cuts.push(Cut {
                cycle: cycle
                    .iter()
                    .map(|&i| name(i))
                    .collect::<Vec<_>>()
                    .join(" -> "),
                edge: (name(l.from), name(l.to), l.calls),
            });
        }
        cuts
    }

    /// One cycle, as services from its first back to it, if any.
    fn a_cycle(&self) -> Option<Vec<usize>> {
        let n = self.services.len();
        // 0 unvisited, 1 on the stack, 2 done.
        let mut state = vec![0u8; n];
        let mut stack: Vec<(usize, usize)> = vec![];
        let out: Vec<Vec<usize>> = (0..n)
            .map(|v| {
                self.links
                    .iter()
                    .filter(|l| l.from == v)
                    .map(|l| l.to)
                    .collect()
            })
            .collect();
        for start in 0..n {
            if state[start] != 0 {
                continue;
            }
            stack.push((start, 0));
            state[start] = 1;
            while let Some(&mut (v, ref mut next)) = stack.last_mut() {
                if let Some(&w) = out[v].get(*next) {
                    *next += 1;
                    match state[w] {
                        0 => {
                            state[w] = 1;
                            stack.push((w, 0));
                        }
                        1 => {
                            let at = stack.iter().position(|&(u, _)| u == w).unwrap_or(0);
                            let mut cycle: Vec<usize> =
                                stack[at..].iter().map(|&(u, _)| u).collect();
                            cycle.push(w);
                            return Some(cycle);
                        }
                        _ => {}
                    }
                } else {
                    state[v] = 2;
                    stack.pop();
                }
            }
        }
        None
    }

    /// Requests into each service: the calls into it and what entered
    /// from outside; a service nothing calls and nothing entered is a
    /// root whose requests are its busiest edge's calls (each of its
    /// requests made that call at least once, as far as the graph says).
    fn requests(&self) -> Vec<f64> {
        let mut into = self.entered.clone();
        for l in &self.links {
            into[l.to] += l.calls;
        }
        for (i, r) in into.iter_mut().enumerate() {
            if *r <= 0.0 {
                *r = self
                    .links
                    .iter()
                    .filter(|l| l.from == i)
                    .map(|l| l.calls)
                    .fold(0.0, f64::max);
            }
        }
        into
    }

    /// The roots: services requests enter from outside, or that nothing
    /// calls, with their requests over the window.
    pub fn roots(&self) -> Vec<(usize, f64)> {
        let requests = self.requests();
        let called: Vec<bool> = (0..self.services.len())
            .map(|i| self.links.iter().any(|l| l.to == i))
            .collect();
        let explicit = self.entered.iter().any(|&e| e > 0.0);
        (0..self.services.len())
            .filter(|&i| {
                if explicit {
                    self.entered[i] > 0.0
                } else {
                    !called[i] && requests[i] > 0.0
                }
            })
            .map(|i| {
                let r = if explicit {
                    self.entered[i]
                } else {
                    requests[i]
                };
                (i, r)
            })
            .collect()
    }
}

/// How the topology is written.
#[derive(Debug, Clone)]
pub struct Written<'a> {
    /// `name:`.
    pub name: &'a str,
    /// Where the graph came from, for the header.
    pub source: &'a str,
    /// Root requests per second over every root.
    pub rps: f64,
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
    let requests = g.requests();
    let mut y = String::new();
    let _ = writeln!(y, "# Imported by `chaoslab import` from {}.", w.source);
    y.push_str(
        "# Mapping: a root is a service requests enter from outside (or that nothing\n\
         # calls), at its observed share of load.rps; an edge's calls per request are\n\
         # its calls over the requests into its caller, written as `count` (rounded\n\
         # up) and `p` (so that count × p is the observed ratio); a service's error\n\
         # ratio (failed calls into it over calls into it) is a fault",
    );
    y.push_str(if w.with_faults {
        " (live: --with-faults).\n"
    } else {
        ", commented out\n# (`--with-faults` writes them live).\n"
    });
    for c in cuts {
        let _ = writeln!(
            y,
            "# Cycle {} cut at its weakest edge {} -> {} ({} calls).",
            c.cycle,
            c.edge.0,
            c.edge.1,
            fmt(c.edge.2)
        );
    }
    let _ = writeln!(y, "name: {}", quote(w.name));
    let _ = writeln!(
        y,
        "description: >\n  The call graph of {} as imported: {} services, {} edges, {} root{}.",
        w.source.replace(['\n', '\r'], " "),
        g.services.len(),
        g.links.len(),
        roots.len(),
        if roots.len() == 1 { "" } else { "s" }
    );
    y.push_str("load:\n  entries:\n");
    for &(i, r) in &roots {
        let _ = writeln!(
            y,
            "    - {{ entry: {}, rps: {} }}   # {} requests observed",
            quote(&g.services[i]),
            fmt(round(w.rps * r / total, 4).max(0.0001)),
            fmt(r)
        );
    }
    y.push_str("services:\n");
    for (i, name) in g.services.iter().enumerate() {
        let _ = writeln!(y, "  {}:", quote(name));
        let calls: Vec<&Link> = g.links.iter().filter(|l| l.from == i).collect();
        if !calls.is_empty() {
            y.push_str("    calls:\n");
            for l in calls {
                let x = if requests[i] > 0.0 {
                    l.calls / requests[i]
                } else {
                    0.0
                };
                let count = x.ceil().clamp(1.0, MAX_COUNT);
                let p = round((x / count).min(1.0), 4);
                let mut entry = format!("{{ to: {}", quote(&g.services[l.to]));
                if count > 1.0 {
                    let _ = write!(entry, ", count: {}", fmt(count));
                }
                if p < 1.0 {
                    let _ = write!(entry, ", p: {}", fmt(p));
                }
                let _ = writeln!(
                    y,
                    "      - {entry} }}   # {} calls over {} requests",
                    fmt(l.calls),
                    fmt(requests[i])
                );
            }
        }
        let (into, failed) = g
            .links
            .iter()
            .filter(|l| l.to == i)
            .fold((0.0, 0.0), |(c, e), l| (c + l.calls, e + l.errors));
        if into > 0.0 && failed > 0.0 {
            let rate = round((failed / into).min(1.0), 4);
            let _ = writeln!(
                y,
                "    {}fault: {{ error_rate: {} }}   # {} of {} calls into it failed",
                if w.with_faults { "" } else { "# " },
                fmt(rate),
                fmt(failed),
                fmt(into)
            );
        }
    }
    Some(y)
}

fn round(x: f64, places: i32) -> f64 {
    let k = 10f64.powi(places);
    (x * k).round() / k
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
            rps: 100.0,
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

    #[test]
    fn awkward_names_are_quoted() {
        assert_eq!(quote("ts-travel-service"), "ts-travel-service");
        assert_eq!(quote("yes"), "\"yes\"");
        assert_eq!(quote("a b\"c"), "\"a b\\\"c\"");
        assert_eq!(quote("9lives"), "\"9lives\"");
    }
}
