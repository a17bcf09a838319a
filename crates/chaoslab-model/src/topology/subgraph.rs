//! The part of a topology one root's requests can reach, as a topology of
//! its own: what the per-root figures of a mesh of many roots are
//! computed on. A root of a few thousand services reaches a few hundred,
//! and the static radius per root is a search over them, so the
//! per-root search no longer costs every root the whole mesh.

use super::{Root, ServiceId, Topology};

impl Topology {
    /// Root `k`'s view ([`Topology::root_view`]) restricted to the
    /// services its requests can reach (and the first node of each such
    /// service's group, which holds what the group shares), in their
    /// order; and, per service of the view, its id here.
    pub fn root_subgraph(&self, k: usize) -> (Topology, Vec<ServiceId>) {
        let Some(&root) = self.load.roots.get(k) else {
            return (self.clone(), (0..self.services.len()).collect());
        };
        let n = self.services.len();
        let mut keep = vec![false; n];
        let mut reached = vec![false; n];
        let mut stack = vec![root.entry];
        while let Some(v) = stack.pop() {
            if std::mem::replace(&mut reached[v], true) {
                continue;
            }
            keep[v] = true;
            let s = &self.services[v];
            stack.extend(s.calls.iter().map(|&e| self.edges[e].to));
            // The group's first node holds what the group shares; kept,
            // but what it calls is not this root's unless reached.
            keep[s.group] = true;
        }
        let old: Vec<ServiceId> = (0..n).filter(|&v| keep[v]).collect();
        let mut new = vec![usize::MAX; n];
        for (i, &v) in old.iter().enumerate() {
            new[v] = i;
        }
        // The kept services' calls, in the edges' order.
        let mut kept: Vec<usize> = old
            .iter()
            .flat_map(|&v| self.services[v].calls.iter().copied())
            .filter(|&e| keep[self.edges[e].to])
            .collect();
        kept.sort_unstable();
        let new_edge = |e: usize| kept.binary_search(&e).unwrap_or(usize::MAX);
        let edges = kept
            .iter()
            .map(|&e| {
                let mut edge = self.edges[e].clone();
                edge.from = new[edge.from];
                edge.to = new[edge.to];
                edge
            })
            .collect();
        let services = old
            .iter()
            .map(|&v| {
                let s = &self.services[v];
                let m = s.root_multiplicity.get(k).unwrap_or(s.multiplicity);
                let mut s = s.clone();
                s.calls = s
                    .calls
                    .iter()
                    .filter(|&&e| keep[self.edges[e].to])
                    .map(|&e| new_edge(e))
                    .collect();
                s.group = new[s.group];
                s.multiplicity = m;
                s.root_multiplicity = super::PerRoot::one(m);
                s
            })
            .collect();
        let mut load = self.load.clone();
        load.entry = new[root.entry];
        load.rps = root.rps;
        load.arrival = root.arrival;
        load.roots = vec![Root {
            entry: load.entry,
            ..root
        }];
        let t = Topology {
            name: self.name.clone(),
            description: self.description.clone(),
            ownership: self.ownership.clone(),
            policy: self.policy.clone(),
            load,
            services,
            edges,
            scenario: None,
            transport: self.transport,
        };
        (t, old)
    }
}

#[cfg(test)]
mod tests {
    use crate::topology::{model, Topology};

    #[test]
    fn a_roots_subgraph_gives_the_radius_its_whole_view_gives() {
        let y = "name: two
load:
  entries: [{ entry: web, rps: 10 }, { entry: batch, rps: 5 }]
services:
  web: { calls: [api] }
  api: { calls: [shop/cart, db] }
  shop:
    endpoints:
      cart: { calls: [db] }
      list: { calls: [search] }
  batch: { calls: [shop/list] }
  search: {}
  db: {}
";
        let t = Topology::from_yaml(y, "two.yaml").unwrap();
        let mut retry = t.policy.clone();
        retry.apply_preset(crate::topology::Preset::Retry);
        for k in 0..2 {
            let (sub, ids) = t.root_subgraph(k);
            let whole = model::worst_failure(&t.root_view(k), &retry);
            let part = model::worst_failure(&sub, &retry).map(|(x, r)| (ids[x], r));
            assert_eq!(whole, part, "root {k}");
            assert!(sub.services.len() < t.services.len());
        }
        // web reaches web, api, shop/cart (and its group), db; not batch.
        let (sub, _) = t.root_subgraph(0);
        let names: Vec<&str> = sub.services.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["web", "api", "shop/cart", "db"]);
    }
}
