//! How long to measure: the window a service needs for its amplification
//! to read within ±10% at 95% at the topology's rate, from the spread
//! chance gives its count ([`super::spread`]), and what a given window
//! leaves unread.
//!
//! A service of multiplicity `m` (calls per root request) with count
//! variance `v` per root request, over `n` root requests, reads a ratio
//! whose 95% half-width is `1.96 · √(n·v + 1) / (n·m)` (the `+ 1`: one
//! request a window's edge may cut), and has a ratio at all once `n·m`
//! reaches [`MIN_EXPECTED_REQUESTS`].
//!
//! ```
//! use chaoslab_model::topology::Topology;
//! use chaoslab_model::topology::model::window::needed_s;
//!
//! let t = Topology::from_yaml(
//!     "name: t\nload: { rps: 10 }\nservices:\n  A: { calls: [{ to: B, p: 0.01 }] }\n  B:\n",
//!     "t.yaml",
//! ).unwrap();
//! let s = needed_s(&t);
//! // A: 10 requests a second, nothing varies: 2 s give the 20 a ratio needs.
//! assert!((s[0] - 2.0).abs() < 1e-9);
//! // B: one request in a hundred roots, a Bernoulli count: ±10% needs
//! // about 384 × 0.99 / 0.01 root requests, 38,000, over an hour at 10/s.
//! assert!(s[1] > 3600.0 && s[1] < 4000.0, "{}", s[1]);
//! ```

use super::{predict, Prediction};
use crate::lab::figures::{MIN_EXPECTED_REQUESTS, Z_INTERVAL};
use crate::topology::Topology;

/// The relative half-width asked of a ratio.
pub const WITHIN: f64 = 0.10;

/// Per service (in [`Topology::services`] order), the seconds of
/// measuring at the topology's rate its amplification needs to read
/// within ±10% at 95%, with no fault (infinite for a service no root
/// reaches).
pub fn needed_s(t: &Topology) -> Vec<f64> {
    let healthy = {
        let mut h = t.clone();
        for s in &mut h.services {
            s.fault = Default::default();
            s.endpoint_fault = Default::default();
        }
        h
    };
    let p = predict(&healthy, &healthy.policy);
    needed_with(t, &p)
}

fn needed_with(t: &Topology, p: &Prediction) -> Vec<f64> {
    let rate = t.load.rps;
    (0..t.services.len())
        .map(|i| {
            let (m, v) = (p.spread.mean[i], p.spread.var[i]);
            if m <= 0.0 || rate <= 0.0 {
                return f64::INFINITY;
            }
            // Root requests for a ratio at all, and for ±10%: the
            // smallest n with z·√(n·v + 1) ≤ 0.1·n·m (a quadratic in √n
            // solved for its root).
            let for_ratio = MIN_EXPECTED_REQUESTS / m;
            let (a, z) = (WITHIN * m, Z_INTERVAL);
            // (a·n)² = z²(n·v + 1): a²n² − z²v·n − z² = 0.
            let disc = (z * z * v).powi(2) + 4.0 * a * a * z * z;
            let for_width = (z * z * v + disc.sqrt()) / (2.0 * a * a);
            for_ratio.max(for_width) / rate
        })
        .collect()
}

/// What `check` says of measuring windows: the window that reads the
/// median service, 90% of them and every one within ±10% at 95%.
pub fn describe(t: &Topology) -> String {
    let mut s: Vec<f64> = needed_s(t).into_iter().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return String::new();
    }
    s.sort_by(f64::total_cmp);
    let at = |q: f64| s[((s.len() - 1) as f64 * q).round() as usize];
    format!(
        "measuring: at {} root requests a second, a service's amplification reads within ±10% at 95% after {} for the median service, {} for 90% of them, {} for all {} (a smaller one shows its count, n=…, instead of a ratio)\n",
        crate::format::fmt_rate(t.load.rps),
        span(at(0.5)),
        span(at(0.9)),
        span(at(1.0)),
        s.len()
    )
}

/// How many of `t`'s services read within ±10% at 95% over `window_s`
/// seconds, and how many there are.
pub fn read_within(t: &Topology, window_s: f64) -> (usize, usize) {
    let s = needed_s(t);
    let reached: Vec<&f64> = s.iter().filter(|x| x.is_finite()).collect();
    (
        reached.iter().filter(|&&&x| x <= window_s).count(),
        reached.len(),
    )
}

/// A duration for a person: seconds, minutes or hours.
fn span(s: f64) -> String {
    if s < 90.0 {
        format!("{}s", s.ceil())
    } else if s < 5400.0 {
        format!("{}min", (s / 60.0).ceil())
    } else {
        format!("{:.1}h", s / 3600.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_reads_the_services_it_is_long_enough_for() {
        let t = Topology::from_yaml(
            "name: t\nload: { rps: 100 }\nservices:\n  A: { calls: [{ to: B, p: 0.1 }, C] }\n  B:\n  C:\n",
            "t.yaml",
        )
        .unwrap();
        let s = needed_s(&t);
        // A and C: 0.2 s for 20 requests. B: 384 × 0.9 / 0.1 ≈ 3,460
        // roots, 35 s at 100 a second.
        assert!(
            (s[0] - 0.2).abs() < 1e-9 && (s[2] - 0.2).abs() < 1e-9,
            "{s:?}"
        );
        assert!((s[1] - 34.6).abs() < 0.5, "{s:?}");
        assert_eq!(read_within(&t, 10.0), (2, 3));
        assert_eq!(read_within(&t, 40.0), (3, 3));
        let text = describe(&t);
        assert!(text.contains("after 1s for the median service"), "{text}");
        assert!(text.contains("35s for all 3"), "{text}");
    }
}
