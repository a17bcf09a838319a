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
