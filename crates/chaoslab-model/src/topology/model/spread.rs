//! How much a service's request count varies by chance: the mean and the
//! variance of the requests it receives per root request, from the
//! sampling the topology does (a call made by a share `p` of requests),
//! the attempts each call makes (as the model predicts them), and the
//! arrivals (a Poisson root adds the variance of its own count).
//!
//! Over a window of `n` root requests a service's count has mean
//! `n · mean` and variance `n · var`, so a ratio read over that window
//! (amplification, an error rate) carries an interval whose half-width
//! shrinks as `1/√n`, and a service whose expected count is small reads
//! a ratio that chance alone moves a long way.
//!
//! Counts below one service add up over its callers. On a tree they are
//! independent and the variance is exact; where paths that split above
//! meet again (one root request's fan-out reaching a service through
//! several callers) their counts move together, and the spread takes the
//! largest variance their correlation allows, `(Σ σ)²`: an upper bound,
//! so an interval is never narrower than chance makes it, and nothing is
//! flagged that correlated chance could explain.
//!
//! ```
//! use chaoslab_model::topology::Topology;
//! use chaoslab_model::topology::model::{predict, spread::spread};
//!
//! let t = Topology::from_yaml(
//!     "name: t\nservices:\n  A: { calls: [{ to: B, p: 0.5 }] }\n  B:\n",
//!     "t.yaml",
//! ).unwrap();
//! let s = spread(&t, &predict(&t, &t.policy));
//! // B gets one call from half the root requests: a Bernoulli count.
//! assert!((s.mean[1] - 0.5).abs() < 1e-12);
//! assert!((s.var[1] - 0.25).abs() < 1e-12);
//! ```

use super::Prediction;
use crate::topology::{Arrival, Topology};

/// Per service (in [`Topology::services`] order), the mean and variance
/// of the requests it receives per root request, over every root by its
/// share of the root requests.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Spread {
    /// Mean requests per root request (the prediction's load).
    pub mean: Vec<f64>,
    /// Their variance per root request, at most (see the module's
    /// bound; for a Poisson root, the second moment: its count of roots
    /// varies too).
    pub var: Vec<f64>,
}

impl Spread {
    /// Service `i`'s count over `roots` root requests: its mean and its
    /// standard deviation.
    pub fn count(&self, i: usize, roots: f64) -> (f64, f64) {
        let n = roots.max(0.0);
        (n * self.mean[i], (n * self.var[i]).max(0.0).sqrt())
    }
}

/// The spread of every service's count under the state `p` predicts.
pub fn spread(t: &Topology, p: &Prediction) -> Spread {
    let n = t.services.len();
    let order = crate::topology::topological_order(&t.services, &t.edges)
        .unwrap_or_else(|_| (0..n).collect());
    // Per edge: the attempts one invocation of its caller sends on it, on
    // average (k1), and their second moment (k2): a made call sends its
    // `count` calls' attempts together, `attempts` per call on average.
    let moments: Vec<(f64, f64)> = t
        .edges
        .iter()
        .zip(&p.edges)
        .map(|(e, pe)| {
            let load = p.services[e.from].load;
            let sent = pe.first_attempts + pe.retries;
            if load <= 0.0 || sent <= 0.0 {
                return (0.0, 0.0);
            }
            let k1 = sent / load;
            let a = sent / pe.first_attempts.max(f64::MIN_POSITIVE);
            let c = f64::from(e.count);
            // A call's attempts taken as two-valued, between the whole
            // numbers either side of their mean: the least variance that
            // mean allows (none when every call makes the same attempts).
            let var_a = (a - a.floor()) * (a.ceil() - a);
            // Made (a share p of the time), the c calls send Σ A: its
            // second moment c·Var[A] + (c·a)²; so E[K²] = p·that.
            let p_made = k1 / (c * a);
            (k1, p_made * (c * var_a + c * c * a * a))
        })
        .collect();
    let mut mean = vec![0.0; n];
    let mut var = vec![0.0; n];
    // Per root: each service's mean count, and the sum of the standard
    // deviations its callers send it (its variance is that squared).
    let (mut m1, mut sd) = (vec![0.0; n], vec![0.0; n]);
    for (root, share) in t.load.shares() {
        m1.iter_mut().for_each(|x| *x = 0.0);
        sd.iter_mut().for_each(|x| *x = 0.0);
        m1[root] = 1.0;
        for &u in &order {
            if m1[u] == 0.0 {
                continue;
            }
            let var_u = sd[u] * sd[u];
            for &e in &t.services[u].calls {
                let v = t.edges[e].to;
                let (k1, k2) = moments[e];
                if k1 == 0.0 {
                    continue;
                }
                // S = the sum of X_u draws of K: E[S] = E[X]E[K],
                // Var[S] = E[X]Var[K] + Var[X]E[K]².
                let var_s = m1[u] * (k2 - k1 * k1).max(0.0) + var_u * k1 * k1;
                sd[v] += var_s.sqrt();
                m1[v] += m1[u] * k1;
            }
        }
        let poisson = t
            .load
            .roots
            .iter()
            .find(|r| r.entry == root)
            .is_some_and(|r| r.arrival == Arrival::Poisson);
        for i in 0..n {
            if m1[i] == 0.0 {
                continue;
            }
            mean[i] += share * m1[i];
            let v = sd[i] * sd[i];
            // A Poisson count of roots: the second moment.
            var[i] += share * if poisson { v + m1[i] * m1[i] } else { v };
        }
    }
    Spread { mean, var }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::model::predict;

    /// A small generator for the brute-force draw (xorshift64*).
    struct Draw(u64);

    impl Draw {
        fn uniform(&mut self) -> f64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    fn topo(y: &str) -> Topology {
        Topology::from_yaml(y, "t.yaml").unwrap()
    }

    /// A brute-force count of the requests each service gets per root
    /// request, drawn many times: its mean and variance.
    fn simulated(t: &Topology, draws: u32) -> (Vec<f64>, Vec<f64>) {
        let n = t.services.len();
        let mut rng = Draw(0x9E37_79B9_7F4A_7C15);
        let (mut s1, mut s2) = (vec![0.0; n], vec![0.0; n]);
        for _ in 0..draws {
            let mut count = vec![0u32; n];
            let mut stack = vec![t.load.entry];
            while let Some(u) = stack.pop() {
                count[u] += 1;
                for &e in &t.services[u].calls {
                    let edge = &t.edges[e];
                    if rng.uniform() < edge.p {
                        for _ in 0..edge.count {
                            stack.push(edge.to);
                        }
                    }
                }
            }
            for i in 0..n {
                let c = f64::from(count[i]);
                s1[i] += c;
                s2[i] += c * c;
            }
        }
        let d = f64::from(draws);
        let mean: Vec<f64> = s1.iter().map(|x| x / d).collect();
        let var = s2.iter().zip(&mean).map(|(x, m)| x / d - m * m).collect();
        (mean, var)
    }

    #[test]
    fn a_tree_of_sampled_calls_matches_a_brute_force_draw() {
        let t = topo(
            "name: t
services:
  A: { calls: [{ to: B, p: 0.3 }, { to: C, count: 2 }] }
  B: { calls: [{ to: D, p: 0.5, count: 3 }] }
  C: { calls: [{ to: E, p: 0.1 }] }
  D:
  E:
",
        );
        let s = spread(&t, &predict(&t, &t.policy));
        let (mean, var) = simulated(&t, 200_000);
        for i in 0..t.services.len() {
            assert!((s.mean[i] - mean[i]).abs() < 0.01, "{i}: {s:?} vs {mean:?}");
            assert!(
                (s.var[i] - var[i]).abs() < 0.03 * var[i].max(0.1),
                "{i}: {:?} vs {var:?}",
                s.var
            );
        }
        // A node every request reaches by fixed calls does not vary.
        assert_eq!(s.var[0], 0.0);
        assert!(s.var[2].abs() < 1e-12);
    }

    #[test]
    fn paths_that_meet_again_are_bounded_from_above() {
        // E gets B's fan-out twice, through C and D: perfectly correlated,
        // the bound is exact; F through two independent draws: above.
        let t = topo(
            "name: t
services:
  A: { calls: [{ to: B, p: 0.5 }, { to: X, p: 0.5 }, { to: Y, p: 0.5 }] }
  B: { calls: [C, D] }
  C: { calls: [E] }
  D: { calls: [E] }
  E:
  X: { calls: [F] }
  Y: { calls: [F] }
  F:
",
        );
        let s = spread(&t, &predict(&t, &t.policy));
        let (mean, var) = simulated(&t, 200_000);
        let e = t.service_id("E").unwrap();
        let f = t.service_id("F").unwrap();
        assert!((s.mean[e] - mean[e]).abs() < 0.01);
        assert!(
            (s.var[e] - var[e]).abs() < 0.03,
            "{} vs {}",
            s.var[e],
            var[e]
        );
        assert!(s.var[f] >= var[f] * 0.97, "{} vs {}", s.var[f], var[f]);
        assert!((s.var[f] - 1.0).abs() < 1e-12 && (var[f] - 0.5).abs() < 0.01);
    }

    #[test]
    fn retries_scale_the_count_and_poisson_roots_add_their_own() {
        let t = topo(
            "name: t
policy: { preset: retry, attempts: 2 }
load: { arrival: poisson }
services:
  A: { calls: [B] }
  B: { fault: { error_rate: 1.0 } }
",
        );
        let s = spread(&t, &predict(&t, &t.policy));
        // Two attempts every time: mean 2; a Poisson count of roots makes
        // the variance per root the second moment, 4.
        assert!((s.mean[1] - 2.0).abs() < 1e-12);
        assert!((s.var[1] - 4.0).abs() < 1e-12);
        let (m, sd) = s.count(1, 100.0);
        // Half the attempts fail: a call makes 1 or 2, variance 1/4.
        let half = topo(
            "name: t
policy: { preset: retry, attempts: 2 }
services:
  A: { calls: [B] }
  B: { fault: { error_rate: 0.5 } }
",
        );
        let h = spread(&half, &predict(&half, &half.policy));
        assert!(
            (h.mean[1] - 1.5).abs() < 1e-12 && (h.var[1] - 0.25).abs() < 1e-12,
            "{h:?}"
        );
        assert!((m - 200.0).abs() < 1e-9 && (sd - 20.0).abs() < 1e-9);
    }
}
