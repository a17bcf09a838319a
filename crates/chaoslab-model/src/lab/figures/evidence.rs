//! The evidence behind a window's ratios (issue 48): how many requests a
//! ratio needs, the intervals around amplification, error rate and
//! availability, and when a count differs from the model beyond chance.

use super::{ratio, Window};

/// Below this many requests expected in a window (from its baseline) a
/// service's ratios are withheld: at 20 a Poisson count's relative spread
/// is 22%, and below it chance moves a ratio further than any storm the
/// tests read.
pub const MIN_EXPECTED_REQUESTS: f64 = 20.0;
/// The interval around a ratio: 95%, two-sided.
pub const Z_INTERVAL: f64 = 1.96;
/// "Differs from the model": outside its 99.9% interval, two-sided (a
/// healthy mesh of 4,000 services flags about 4 by chance alone).
pub const Z_DIFFERS: f64 = 3.29;
/// "Differs from the model" also needs a gap over this share of the
/// expected count (the model's own approximations, at large counts).
pub const MODEL_TOLERANCE: f64 = 0.05;

/// Wilson's 95% interval for a proportion of `k` in `n` (NaN for none):
/// sound at 0 and at `n`, where the normal one collapses to a point.
pub fn wilson(k: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let (n, p, z) = (n as f64, k as f64 / n as f64, Z_INTERVAL);
    let d = 1.0 + z * z / n;
    let mid = (p + z * z / (2.0 * n)) / d;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / d;
    ((mid - half).max(0.0), (mid + half).min(1.0))
}

impl Window<'_> {
    /// Root requests the window's roots opened.
    pub(super) fn roots_seen(&self) -> f64 {
        self.root_rate() * self.dt
    }

    /// Whether service `i`'s baseline brings it too few requests in the
    /// window for a ratio ([`MIN_EXPECTED_REQUESTS`]).
    pub fn too_few(&self, i: usize) -> bool {
        self.baseline(i) * self.dt < MIN_EXPECTED_REQUESTS
    }

    /// The requests service `i`'s baseline brings it over the window.
    pub fn expected_requests(&self, i: usize) -> f64 {
        self.baseline(i) * self.dt
    }

    /// Requests over baseline, or NaN (null) over too few requests.
    pub(super) fn amplification(&self, i: usize) -> f64 {
        if self.too_few(i) {
            return f64::NAN;
        }
        ratio(self.rate(self.svc(i).requests), self.baseline(i))
    }

    /// The chance spread of service `i`'s count over the window: the
    /// model's variance over the roots seen, and one request more or less
    /// (a root request the window's edge cut through).
    pub(super) fn chance(&self, i: usize) -> f64 {
        let var = self.prediction.spread.var.get(i).copied().unwrap_or(0.0);
        (self.roots_seen() * var + 1.0).sqrt()
    }

    /// Amplification's 95% interval; NaN over too few requests.
    pub(super) fn amplification_interval(&self, i: usize) -> (f64, f64) {
        let base = self.baseline(i) * self.dt;
        if self.too_few(i) || base <= 0.0 {
            return (f64::NAN, f64::NAN);
        }
        let n = self.svc(i).requests as f64;
        let half = Z_INTERVAL * self.chance(i);
        (((n - half) / base).max(0.0), (n + half) / base)
    }

    /// Whether service `i`'s count differs from the model's beyond chance
    /// (outside its [`Z_DIFFERS`] interval) and by over 5%.
    pub fn differs_from_model(&self, i: usize) -> bool {
        if self.too_few(i) {
            return false;
        }
        let expected = self.baseline(i) * self.dt * self.prediction.services[i].amplification;
        let n = self.svc(i).requests as f64;
        let gap = (n - expected).abs();
        gap > Z_DIFFERS * self.chance(i) && gap > MODEL_TOLERANCE * expected
    }

    /// Service `i`'s load above its baseline in units of its chance
    /// spread: a storm's services stand far out, a healthy service that
    /// happened to get a request more does not.
    pub fn excess_sigma(&self, i: usize) -> f64 {
        let base = self.baseline(i) * self.dt;
        let n = self.svc(i).requests as f64;
        (n - base) / self.chance(i)
    }
}
