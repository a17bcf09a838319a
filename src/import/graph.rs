//! The call graph every format reads into (SPEC section 12): nodes that
//! are services, or endpoints of a service where traces tell a service's
//! inbound operations apart, and the calls between them. Cycles are cut
//! here, on nodes, so that a service-level cycle whose endpoints are
//! acyclic stays whole and only a real recursion loses an edge.
//!
//! Lookups go through maps and the cycle search keeps what it has already
//! proved acyclic: a mesh of thousands of services and tens of thousands
//! of edges imports in milliseconds, not in the minutes a linear scan per
//! edge would take.

use std::collections::HashMap;

/// A call graph as a tracing system or a mesh reports it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Graph {
    /// Nodes, in the order first seen.
    pub nodes: Vec<Node>,
    /// Calls between nodes over the window, summed per pair.
    pub links: Vec<Link>,
    /// Requests from outside (a `user` client, an ingress, a trace's
    /// root span) per node.
    pub entered: Vec<f64>,
    /// The numbers are rates per second (Kiali, a Prometheus range),
    /// not counts over a window: the roots can be written at them.
    pub per_second: bool,
    /// What the reader took on trust, for the header (one line each).
    pub notes: Vec<String>,
    /// What a reader should check by hand, for the header and standard
    /// error (one line each).
    pub warnings: Vec<String>,
    /// Node by (service, endpoint).
    index: HashMap<(String, Option<String>), usize>,
    /// Link by (from, to).
    link_index: HashMap<(usize, usize), usize>,
}

/// A service, or one endpoint of a service.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Node {
    /// Its service.
    pub service: String,
    /// Its endpoint, when its service is written with `endpoints:`.
    pub endpoint: Option<String>,
    /// The operation the endpoint is named after, when its name had to
    /// change to be a path on the wire.
    pub operation: Option<String>,
    /// Its calls overlapped in time in the traces: `parallel: true`.
    pub parallel: bool,
    /// The traces saw it only as the `peer.service` of its callers'
    /// client spans (a database, a cache, a provider outside the mesh):
    /// a leaf the mesh calls, often the one that fails.
    pub uninstrumented: bool,
}

impl Node {
    /// How a call or a root names it: `S` or `S/E`.
    pub fn name(&self) -> String {
        match &self.endpoint {
            Some(e) => format!("{}/{e}", self.service),
            None => self.service.clone(),
        }
    }
}

/// The calls from one node to another over the window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    /// Caller.
    pub from: usize,
    /// Callee.
    pub to: usize,
    /// Calls made.
    pub calls: f64,
    /// Of those, failed; with `retries`, the attempts that failed.
    pub errors: f64,
    /// Attempts the source's own retries added to those calls: a call
    /// that one client span made again after its first attempt failed
    /// counts once in `calls` and its later attempts here.
    pub retries: f64,
}

/// An edge cut to break a cycle.
#[derive(Debug, Clone, PartialEq)]
pub struct Cut {
    /// The cycle, spelled `A -> B -> A`.
    pub cycle: String,
    /// The edge cut, `B -> A`, and its calls.
    pub edge: (String, String, f64),
}

impl Graph {
    /// The service called `name` (a node without endpoint), added when
    /// new.
    pub fn service(&mut self, name: &str) -> usize {
        self.node(name, None)
    }

    /// The node of `service` and `endpoint`, added when new.
    pub fn node(&mut self, service: &str, endpoint: Option<&str>) -> usize {
        let key = (service.to_string(), endpoint.map(str::to_string));
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        self.nodes.push(Node {
            service: key.0.clone(),
            endpoint: key.1.clone(),
            ..Node::default()
        });
        self.entered.push(0.0);
        let i = self.nodes.len() - 1;
        self.index.insert(key, i);
        i
    }

    /// Adds calls from service `from` to service `to` (summed with
    /// earlier ones).
    pub fn link(&mut self, from: &str, to: &str, calls: f64, errors: f64) {
        let (from, to) = (self.service(from), self.service(to));
        self.link_nodes(from, to, calls, errors);
    }

    /// Adds `retries` attempts of the source's own retries to the calls
    /// from node `from` to node `to` (made already by [`Graph::link_nodes`]).
    pub fn retried(&mut self, from: usize, to: usize, retries: f64) {
        if let Some(&k) = self.link_index.get(&(from, to)) {
            self.links[k].retries += retries;
        }
    }

    /// Adds calls from node `from` to node `to`.
    pub fn link_nodes(&mut self, from: usize, to: usize, calls: f64, errors: f64) {
        if from == to {
            return; // a node calling itself is not a call the lab makes
        }
        match self.link_index.get(&(from, to)) {
            Some(&k) => {
                self.links[k].calls += calls;
                self.links[k].errors += errors;
            }
            None => {
                self.link_index.insert((from, to), self.links.len());
                self.links.push(Link {
                    from,
                    to,
                    calls,
                    errors,
                    retries: 0.0,
                });
            }
        }
    }

    /// Adds requests into service `to` from outside the graph.
    pub fn enter(&mut self, to: &str, requests: f64) {
        let i = self.service(to);
        self.entered[i] += requests;
    }

    /// The requests node `i` served: what entered it and every call into
    /// it.
    pub fn served(&self, i: usize) -> f64 {
        self.entered[i]
            + self
                .links
                .iter()
                .filter(|l| l.to == i)
                .map(|l| l.calls)
                .sum::<f64>()
    }

    /// The number of distinct services.
    pub fn service_count(&self) -> usize {
        let mut seen = std::collections::HashSet::new();
        self.nodes
            .iter()
            .filter(|n| seen.insert(n.service.as_str()))
            .count()
    }

    /// Each node's outgoing links, in the order they were added.
    pub fn out_links(&self) -> Vec<Vec<usize>> {
        let mut out = vec![vec![]; self.nodes.len()];
        for (k, l) in self.links.iter().enumerate() {
            out[l.from].push(k);
        }
        out
    }

    /// Cuts every cycle of nodes at its weakest edge (fewest calls; the
    /// first on the cycle on a tie), until none is left.
    pub fn cut_cycles(&mut self) -> Vec<Cut> {
        let out = self.out_links();
        let mut removed = vec![false; self.links.len()];
        // A node finished without a cycle is on none, and cutting edges
        // makes none: it is never searched again.
        let mut done = vec![false; self.nodes.len()];
        let mut cuts = vec![];
        while let Some(cycle) = self.a_cycle(&out, &removed, &mut done) {
            let Some(&weakest) = cycle
                .iter()
                .min_by(|&&a, &&b| self.links[a].calls.total_cmp(&self.links[b].calls))
            else {
                break;
            };
            removed[weakest] = true;
            let name = |i: usize| self.nodes[i].name();
            let mut spelled: Vec<String> =
                cycle.iter().map(|&k| name(self.links[k].from)).collect();
            spelled.push(name(self.links[cycle[0]].from));
            let l = self.links[weakest];
            cuts.push(Cut {
                cycle: spelled.join(" -> "),
                edge: (name(l.from), name(l.to), l.calls),
            });
        }
        if !cuts.is_empty() {
            let mut k = 0;
            self.links.retain(|_| {
                k += 1;
                !removed[k - 1]
            });
            self.link_index = self
                .links
                .iter()
                .enumerate()
                .map(|(k, l)| ((l.from, l.to), k))
                .collect();
        }
        cuts
    }

    /// One cycle, as the links from its first node back to it, if any.
    fn a_cycle(
        &self,
        out: &[Vec<usize>],
        removed: &[bool],
        done: &mut [bool],
    ) -> Option<Vec<usize>> {
        let n = self.nodes.len();
        let mut on_stack = vec![false; n];
        // (node, next out-link to look at, the link that led here)
        let mut stack: Vec<(usize, usize, usize)> = vec![];
        for start in 0..n {
            if done[start] {
                continue;
            }
            stack.push((start, 0, usize::MAX));
            on_stack[start] = true;
            while let Some(&mut (v, ref mut next, _)) = stack.last_mut() {
                if let Some(&k) = out[v].get(*next) {
                    *next += 1;
                    if removed[k] {
                        continue;
                    }
                    let w = self.links[k].to;
                    if on_stack[w] {
                        let at = stack.iter().position(|&(u, _, _)| u == w).unwrap_or(0);
                        let mut cycle: Vec<usize> = stack[at + 1..].iter().map(|s| s.2).collect();
                        cycle.push(k);
                        return Some(cycle);
                    }
                    if !done[w] {
                        on_stack[w] = true;
                        stack.push((w, 0, k));
                    }
                } else {
                    done[v] = true;
                    on_stack[v] = false;
                    stack.pop();
                }
            }
        }
        None
    }

    /// Requests into each node: the calls into it and what entered from
    /// outside; a node nothing calls and nothing entered is a root whose
    /// requests are its busiest edge's calls (each of its requests made
    /// that call at least once, as far as the graph says).
    pub fn requests(&self) -> Vec<f64> {
        let mut into = self.entered.clone();
        let mut busiest = vec![0.0f64; self.nodes.len()];
        for l in &self.links {
            into[l.to] += l.calls;
            busiest[l.from] = busiest[l.from].max(l.calls);
        }
        for (r, b) in into.iter_mut().zip(busiest) {
            if *r <= 0.0 {
                *r = b;
            }
        }
        into
    }

    /// The roots: nodes requests enter from outside, or that nothing
    /// calls, with their requests over the window.
    pub fn roots(&self) -> Vec<(usize, f64)> {
        let requests = self.requests();
        let mut called = vec![false; self.nodes.len()];
        for l in &self.links {
            called[l.to] = true;
        }
        let explicit = self.entered.iter().any(|&e| e > 0.0);
        (0..self.nodes.len())
            .filter_map(|i| {
                if explicit {
                    (self.entered[i] > 0.0).then(|| (i, self.entered[i]))
                } else {
                    (!called[i] && requests[i] > 0.0).then(|| (i, requests[i]))
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cycle_is_cut_at_its_weakest_edge() {
        let mut g = Graph::default();
        g.enter("travel", 100.0);
        g.link("travel", "seat", 300.0, 0.0);
        g.link("seat", "travel", 40.0, 0.0);
        g.link("seat", "db", 10.0, 0.0);
        let cuts = g.cut_cycles();
        assert_eq!(cuts.len(), 1);
        assert_eq!(cuts[0].cycle, "travel -> seat -> travel");
        assert_eq!(cuts[0].edge, ("seat".into(), "travel".into(), 40.0));
        assert_eq!(g.links.len(), 2);
        // The index follows the links that are left.
        g.link("seat", "db", 5.0, 0.0);
        assert_eq!(g.links[1].calls, 15.0);
    }

    #[test]
    fn endpoints_of_a_service_cycle_are_no_cycle() {
        let mut g = Graph::default();
        let trip = g.node("travel", Some("trip"));
        let reserve = g.node("seat", Some("reserve"));
        let detail = g.node("travel", Some("detail"));
        g.link_nodes(trip, reserve, 10.0, 0.0);
        g.link_nodes(reserve, detail, 10.0, 0.0);
        assert!(g.cut_cycles().is_empty());
        // A recursion is: cut where it is weakest, spelled with endpoints.
        g.link_nodes(reserve, trip, 2.0, 0.0);
        let cuts = g.cut_cycles();
        assert_eq!(cuts.len(), 1);
        assert_eq!(cuts[0].cycle, "travel/trip -> seat/reserve -> travel/trip");
        assert_eq!(cuts[0].edge.0, "seat/reserve");
    }

    #[test]
    fn many_cycles_are_all_cut() {
        // A ring of rings: every pair i <-> i+1 is a cycle, and so is
        // the whole ring.
        let mut g = Graph::default();
        let n = 200;
        for i in 0..n {
            let (a, b) = (format!("s{i}"), format!("s{}", (i + 1) % n));
            g.link(&a, &b, 10.0, 0.0);
            g.link(&b, &a, 1.0 + i as f64, 0.0);
        }
        let cuts = g.cut_cycles();
        assert!(cuts.len() >= n - 1, "{}", cuts.len());
        assert!(g.clone().cut_cycles().is_empty());
    }
}
