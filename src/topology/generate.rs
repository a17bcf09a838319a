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
    }
}
