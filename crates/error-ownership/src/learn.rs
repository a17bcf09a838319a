//! Learned attribution: a service's memory of its own failure patterns.
//!
//! In `learned` attribution a service does not trust the YAML to say which
//! dependencies are fail-close. It remembers, per dependency, how often a
//! failure of that dependency coincided with its own inbound request
//! failing. A fail-close dependency's failure always fails the request
//! (coincidence near 1); a fail-open one's only coincides with the
//! service's own, unrelated failures (coincidence near its own error rate).
//! Above [`CLOSE_THRESHOLD`] a dependency is classified fail-close.
//!
//! The memory is bounded: at most [`MAX_DEPENDENCIES`] dependencies, and
//! counts are halved every [`HALF_LIFE`] observations of a dependency, so it
//! follows a system whose behaviour changes and never grows.

use std::sync::Mutex;

use super::claim::Outbound;
use super::DependencyMode;

/// Coincidence ratio at or above which a dependency is fail-close.
pub const CLOSE_THRESHOLD: f64 = 0.5;
/// Dependency failures needed before the classification is trusted.
pub const WARM_SAMPLES: f64 = 20.0;
/// Observations of one dependency after which its counts are halved.
pub const HALF_LIFE: f64 = 1000.0;
/// The most dependencies remembered per service.
pub const MAX_DEPENDENCIES: usize = 64;

/// What the memory says about one dependency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Learned {
    /// The dependency (as the caller indexes it).
    pub dependency: usize,
    /// Its failures seen (decayed).
    pub failures: f64,
    /// Of those, how many coincided with the service's own request failing.
    pub coincided: f64,
    /// The classification.
    pub mode: DependencyMode,
    /// 0 (no evidence) to 1 (well warmed and far from the threshold).
    pub confidence: f64,
}

/// A service's failure-pattern memory. Cheap to share: one lock per update.
#[derive(Debug, Default)]
pub struct Learner {
    deps: Mutex<Vec<(usize, f64, f64)>>,
}

impl Learner {
    /// Records one inbound request's outcome against the dependencies that
    /// failed during it.
    pub fn observe(&self, outbound: &[Outbound], inbound_failed: bool) {
        if !outbound.iter().any(|o| o.failed) {
            return;
        }
        let mut deps = self.deps.lock().unwrap_or_else(|e| e.into_inner());
        for o in outbound.iter().filter(|o| o.failed) {
            let slot = match deps.iter().position(|d| d.0 == o.dependency) {
                Some(i) => i,
                None if deps.len() < MAX_DEPENDENCIES => {
                    deps.push((o.dependency, 0.0, 0.0));
                    deps.len() - 1
                }
                None => continue,
            };
            let d = &mut deps[slot];
            d.1 += 1.0;
            if inbound_failed {
                d.2 += 1.0;
            }
            if d.1 >= HALF_LIFE {
                d.1 /= 2.0;
                d.2 /= 2.0;
            }
        }
    }

    /// The learned mode of a dependency. Until it is warm, a dependency is
    /// taken as fail-close: an unknown failure is passed up unclaimed, the
    /// cautious choice that never adds retries.
    pub fn mode(&self, dependency: usize) -> DependencyMode {
        self.get(dependency)
            .map_or(DependencyMode::FailClose, |l| l.mode)
    }

    /// What is remembered about one dependency.
    pub fn get(&self, dependency: usize) -> Option<Learned> {
        let deps = self.deps.lock().unwrap_or_else(|e| e.into_inner());
        deps.iter()
            .find(|d| d.0 == dependency)
            .map(|&(dep, f, c)| classify(dep, f, c))
    }

    /// Everything remembered, for reports.
    pub fn all(&self) -> Vec<Learned> {
        let deps = self.deps.lock().unwrap_or_else(|e| e.into_inner());
        deps.iter().map(|&(d, f, c)| classify(d, f, c)).collect()
    }

    /// Forgets everything.
    pub fn reset(&self) {
        self.deps.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

fn classify(dependency: usize, failures: f64, coincided: f64) -> Learned {
    let ratio = if failures > 0.0 {
        coincided / failures
    } else {
        1.0
    };
    let warm = (failures / WARM_SAMPLES).min(1.0);
    let mode = if failures < WARM_SAMPLES || ratio >= CLOSE_THRESHOLD {
        DependencyMode::FailClose
    } else {
        DependencyMode::FailOpen
    };
    Learned {
        dependency,
        failures,
        coincided,
        mode,
        confidence: warm * ((ratio - CLOSE_THRESHOLD).abs() / CLOSE_THRESHOLD).min(1.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn failed(dep: usize) -> Outbound {
        Outbound {
            dependency: dep,
            mode: DependencyMode::FailClose,
            failed: true,
            claim_seen: Some(super::super::Claim::Claimed),
            criteria_satisfied: true,
        }
    }

    #[test]
    fn learns_open_and_close() {
        let l = Learner::default();
        assert_eq!(l.mode(1), DependencyMode::FailClose, "cold: cautious");
        for i in 0..200 {
            // dep 1 failing always fails us; dep 2 failing coincides 10%.
            l.observe(&[failed(1)], true);
            l.observe(&[failed(2)], i % 10 == 0);
        }
        assert_eq!(l.mode(1), DependencyMode::FailClose);
        assert_eq!(l.mode(2), DependencyMode::FailOpen);
        assert!(l.get(2).unwrap().confidence > 0.7);
    }

    proptest! {
        /// Memory stays bounded whatever it is fed.
        #[test]
        fn bounded(deps in proptest::collection::vec(0usize..500, 0..3000)) {
            let l = Learner::default();
            for d in deps {
                l.observe(&[failed(d)], d % 2 == 0);
            }
            let all = l.all();
            prop_assert!(all.len() <= MAX_DEPENDENCIES);
            prop_assert!(all.iter().all(|d| d.failures < HALF_LIFE));
        }
    }
}
