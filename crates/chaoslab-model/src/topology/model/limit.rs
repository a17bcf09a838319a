//! Adaptive concurrency at equilibrium (SPEC section 15): where each
//! controller's limit settles while its service is overloaded, by Little's
//! law.
//!
//! A service of `W` workers, each request `w` of work, with `L` requests
//! admitted at once and more offered than it serves: `L` are in it, the
//! workers are all busy, and an admitted request waits for the `L − W`
//! before it, so its latency is `L·w/W` against a no-load latency of `w`.
//!
//! * **Envoy's gradient**: gradient = (minRTT + B)/sampleRTT =
//!   (1 + b)·W/L, so gradient × limit = (1 + b)·W whatever the limit, and
//!   the next limit, c + √c with c = (1 + b)·W, is also the fixed point:
//!   7.2 for 4 workers at the default b = 25% (the limit is a whole number:
//!   7).
//! * **Netflix's Vegas**: the queue it reads, L·(1 − w/(L·w/W)) = L − W,
//!   stays once it is from 3·log to 6·log (log = max(1, ⌊log10 L⌋)): the
//!   limit settles anywhere in W + 3·log ..= W + 6·log, between probes.
//!   Each probe takes one sample's latency as the no-load one, and under
//!   overload that sample has queued: the queue reads near 0 and the limit
//!   climbs until the next probe. Measured on 4 workers: 10, 11 and 22 at
//!   the end of three runs, against 7 to 10; how far it climbs only
//!   measurement answers.
//! * **AIMD** has no equilibrium: it grows by one a sample in use and
//!   falls by `backoff` at a drop, a sawtooth whose height depends on how
//!   often a request is dropped; only measurement answers.

use crate::topology::{Concurrency, Service};

/// Where a controller's limit settles on an overloaded service.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Settles {
    /// At this limit.
    At(f64),
    /// Anywhere in this range.
    Within(f64, f64),
}

/// Where `s`'s adaptive concurrency limit settles while it is overloaded,
/// for a service with workers and a controller; `None` for AIMD (no
/// equilibrium) or without them.
pub fn overloaded(s: &Service) -> Option<Settles> {
    // Each replica has its own workers and its own limit.
    let workers = f64::from(s.workers?);
    match s.concurrency? {
        Concurrency::Gradient(g) => {
            let c = (1.0 + g.buffer) * workers;
            let limit = (c + c.sqrt()).floor();
            Some(Settles::At(
                limit.clamp(f64::from(g.min_concurrency), f64::from(g.max_limit)),
            ))
        }
        Concurrency::Vegas { max, .. } => {
            // log10 of the limit is 1 below a hundred: solve with it, then
            // once more with the log the answer has.
            let band = |log: f64| (workers + 3.0 * log, workers + 6.0 * log);
            let (lo, hi) = band(1.0);
            let log = hi.log10().floor().max(1.0);
            let (lo, hi) = if log > 1.0 { band(log) } else { (lo, hi) };
            let max = f64::from(max);
            Some(Settles::Within(lo.min(max), hi.min(max)))
        }
        Concurrency::Aimd { .. } => None,
    }
}

/// `check`'s line for `s`, when its limit has an equilibrium.
pub fn describe(s: &Service) -> Option<String> {
    let workers = s.workers?;
    Some(match overloaded(s)? {
        Settles::At(l) => format!(
            "{}: overloaded, Envoy's gradient limit settles at {l:.0} (c + √c, c = (1 + buffer) × {workers} workers, by Little's law)",
            s.name
        ),
        Settles::Within(lo, hi) => format!(
            "{}: overloaded, Vegas' limit settles from {lo:.0} to {hi:.0} between probes ({workers} workers + a queue of 3 to 6 × log10 of the limit, by Little's law; a probe under overload reads a queued latency as the no-load one and it climbs)",
            s.name
        ),
    })
}

/// `check`'s lines for every service whose limit has an equilibrium,
/// each ending in a newline; `None` when there is none.
pub fn describe_all(t: &crate::topology::Topology) -> Option<String> {
    let lines: String = t
        .services
        .iter()
        .filter_map(describe)
        .map(|l| l + "\n")
        .collect();
    (!lines.is_empty()).then_some(lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Topology;

    fn service(concurrency: &str) -> Service {
        let t = Topology::from_yaml(
            &format!(
                "name: t\nservices:\n  A: {{ calls: [DB] }}\n  DB: {{ workers: 4, work: 25ms, concurrency: {concurrency} }}\n"
            ),
            "t.yaml",
        )
        .unwrap();
        t.services[1].clone()
    }

    #[test]
    fn the_gradient_settles_where_its_next_limit_is_itself() {
        assert_eq!(overloaded(&service("gradient")), Some(Settles::At(7.0)));
        // The fixed point: at L in flight on 4 workers the sampled latency
        // is L/4 of the no-load one, and the controller's own step from
        // there gives L back (truncated as it truncates).
        let g = error_ownership::gradient::GradientConfig::ENVOY;
        let l = 7.24f64;
        let gradient = (1.0 + g.buffer) * 4.0 / l;
        let next = gradient * l + (gradient * l).sqrt();
        assert!((next - l).abs() < 0.01, "{next}");
    }

    #[test]
    fn vegas_settles_in_its_queue_band_and_aimd_nowhere() {
        assert_eq!(
            overloaded(&service("vegas")),
            Some(Settles::Within(7.0, 10.0))
        );
        assert_eq!(overloaded(&service("aimd")), None);
        assert!(describe(&service("gradient"))
            .unwrap()
            .contains("settles at 7"));
    }
}
