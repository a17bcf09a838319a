//! Generated topologies, for scale tests and benchmarks.

use std::fmt::Write as _;

/// A DAG of `n` services as YAML: each service after the first is called
/// by one earlier service (so `S0` is the only entry), and every third
/// service also calls a later one twice, fail-open. Deterministic in
/// `seed`.
pub fn dag(n: usize, seed: u64) -> String {
    let n = n.max(1);
    let mut calls: Vec<Vec<String>> = vec![vec![]; n];
    let mut x: u64 = seed | 1;
    let mut next = |m: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % m.max(1) as u64) as usize
    };
    for i in 1..n {
        let parent = next(i);
        calls[parent].push(format!("S{i}"));
    }
    for i in (0..n.saturating_sub(1)).step_by(3) {
        let j = i + 1 + next(n - i - 1);
        let plain = format!("S{j}");
        if !calls[i].contains(&plain) {
            calls[i].push(format!("{{ to: S{j}, count: 2, mode: fail-open }}"));
        }
    }
    let mut y = String::from("name: generated\npolicy: { preset: ownership }\nservices:\n");
    for (i, c) in calls.iter().enumerate() {
        let _ = writeln!(y, "  S{i}: {{ calls: [{}] }}", c.join(", "));
    }
    y
}

/// `layers` layers of `width` services as YAML, each service calling two
/// in the next layer (the one below it and its neighbour, wrapping), and
/// one entry, `root`, calling the whole first layer: deep and wide at
/// once, every service reached by many paths.
pub fn layered(layers: usize, width: usize, policy: &str) -> String {
    let (layers, width) = (layers.max(1), width.max(1));
    let mut y = format!("name: layered\npolicy: {policy}\nservices:\n  root: {{ calls: [");
    for w in 0..width {
        let sep = if w == 0 { "" } else { ", " };
        let _ = write!(y, "{sep}L0_{w}");
    }
    y.push_str("] }\n");
    for l in 0..layers {
        for w in 0..width {
            if l + 1 < layers {
                let next = (w + 1) % width;
                let _ = writeln!(
                    y,
                    "  L{l}_{w}: {{ calls: [L{n}_{w}, L{n}_{next}] }}",
                    n = l + 1
                );
            } else {
                let _ = writeln!(y, "  L{l}_{w}: {{}}");
            }
        }
    }
    y
}

/// A mesh of many roots as YAML (SPEC section 11): `roots` user-facing
/// chains of `depth` services (`R{r}_0` calls `R{r}_1`, …), the last of
/// each calling one of `shared` backends `DB{k}`, every service with
/// `replicas` replicas, the roots sharing `rps` evenly. A root request
/// makes `depth` calls, so the rate stays one a machine can carry however
/// many services there are: `roots × depth + shared` services in all.
pub fn mesh(roots: usize, depth: usize, shared: usize, replicas: u32, rps: f64) -> String {
    let (roots, depth, shared) = (roots.max(1), depth.max(1), shared.max(1));
    let mut y = String::from("name: mesh\npolicy: { preset: ownership }\nload:\n  entries:\n");
    for r in 0..roots {
        let _ = writeln!(y, "    - {{ entry: R{r}_0, rps: {} }}", rps / roots as f64);
    }
    y.push_str("services:\n");
    for r in 0..roots {
        for d in 0..depth {
            let next = if d + 1 < depth {
                format!("R{r}_{}", d + 1)
            } else {
                format!("DB{}", r % shared)
            };
            let _ = writeln!(y, "  R{r}_{d}: {{ replicas: {replicas}, calls: [{next}] }}");
        }
    }
    for k in 0..shared {
        let _ = writeln!(y, "  DB{k}: {{ replicas: {replicas} }}");
    }
    y
}

/// A chain of `n` services as YAML: `S0` calls `S1`, which calls `S2`, …
pub fn chain(n: usize, policy: &str) -> String {
    let n = n.max(1);
    let mut y = format!("name: chain\npolicy: {policy}\nservices:\n");
    for i in 0..n - 1 {
        let _ = writeln!(y, "  S{i}: {{ calls: [S{}] }}", i + 1);
    }
    let _ = writeln!(y, "  S{}: {{}}", n - 1);
    y
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Topology;

    #[test]
    fn a_generated_mesh_has_its_roots_and_replicas() {
        let t = Topology::from_yaml(&mesh(3, 4, 2, 3, 60.0), "g").unwrap();
        assert_eq!(t.services.len(), 3 * 4 + 2);
        assert_eq!(t.load.roots.len(), 3);
        assert!((t.load.rps - 60.0).abs() < 1e-9);
        assert!(t.services.iter().all(|s| s.replicas == 3));
        let db0 = &t.services[t.service_id("DB0").unwrap()];
        // Roots 0 and 2 reach DB0, each with a third of the requests.
        assert!(
            (db0.multiplicity - 2.0 / 3.0).abs() < 1e-9,
            "{}",
            db0.multiplicity
        );
    }

    #[test]
    fn generated_dags_validate() {
        for n in [1, 2, 10, 500] {
            let t = Topology::from_yaml(&dag(n, 7), "generated").unwrap();
            assert_eq!(t.services.len(), n);
            assert_eq!(t.load.entry, 0);
        }
        let t = Topology::from_yaml(&layered(3, 4, "{ preset: retry }"), "g").unwrap();
        assert_eq!((t.services.len(), t.edges.len()), (13, 4 + 2 * 8));
        assert_eq!(t.max_depth(), 3);
        let t = Topology::from_yaml(&chain(5, "{}"), "g").unwrap();
        assert_eq!((t.services.len(), t.max_depth()), (5, 4));
    }
}
