//! What a run is expected to show: a figure of the catalogue, over a
//! window of the run, within a bound. Scenario files are read into these
//! ([`crate::scenario`]); reports judge them ([`crate::report::expect`]).

use std::fmt;
use std::time::Duration;

use super::figures::Figure;
use crate::format::{fmt_duration, fmt_num};
use crate::topology::ServiceId;
use crate::yaml::{parse_duration, Location};

/// The relative tolerance of `approx` when none is given.
pub const DEFAULT_TOLERANCE: f64 = 0.05;

/// One expectation: a figure, over a window, within a bound.
#[derive(Debug, Clone, PartialEq)]
pub struct Expectation {
    /// The window, from the end of the warm-up.
    pub window: Window,
    /// The service, for per-service figures.
    pub service: Option<ServiceId>,
    /// The service's name, for per-service figures.
    pub service_name: Option<String>,
    /// The root (its index in `load.roots` and its name), for a fleet
    /// figure read over that root's requests alone (SPEC section 11).
    pub root: Option<(usize, String)>,
    /// What is measured.
    pub figure: Figure,
    /// What it must be.
    pub bound: Bound,
    /// Its entry in the file: `expect[1]`.
    pub entry: String,
    /// Where its figure is written.
    pub source: Location,
    /// Where its window is written.
    pub window_source: Location,
}

impl Expectation {
    /// `D amplification <= 1.15`, `root_availability >= 0.99`.
    pub fn what(&self) -> String {
        let subject = match (&self.service_name, &self.root) {
            (Some(s), _) => format!("{s} {}", self.figure.name()),
            (None, Some((_, r))) => format!("root {r} {}", self.figure.name()),
            (None, None) => self.figure.name().to_string(),
        };
        format!("{subject} {}", self.bound)
    }
}

/// A window of the run, `from..to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Start.
    pub from: Duration,
    /// End (after `from`).
    pub to: Duration,
}

impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}..{}", fmt_duration(self.from), fmt_duration(self.to))
    }
}

impl Window {
    /// Parses `8s..10s`.
    pub fn parse(s: &str) -> Result<Window, String> {
        let Some((a, b)) = s.split_once("..") else {
            return Err(format!(
                "`{s}` is not a window: write FROM..TO, e.g. during: 8s..10s"
            ));
        };
        let from = parse_duration(a).map_err(|e| format!("window `{s}`: {e}"))?;
        let to = parse_duration(b).map_err(|e| format!("window `{s}`: {e}"))?;
        if to <= from {
            return Err(format!(
                "window `{s}` is inverted or empty: it must end after it starts (e.g. {}..{})",
                fmt_duration(to),
                fmt_duration(from.max(to + Duration::from_secs(1)))
            ));
        }
        Ok(Window { from, to })
    }

    /// Its length.
    pub fn len(&self) -> Duration {
        self.to.saturating_sub(self.from)
    }

    /// Whether it is empty (never, once parsed).
    pub fn is_empty(&self) -> bool {
        self.to <= self.from
    }
}

/// What a figure must be.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Bound {
    /// At least this.
    pub min: Option<f64>,
    /// At most this.
    pub max: Option<f64>,
    /// About this: `(value, relative tolerance)`.
    pub approx: Option<(f64, f64)>,
}

impl Bound {
    /// Whether `observed` is within the bound (never for NaN).
    pub fn check(&self, observed: f64) -> bool {
        if !observed.is_finite() {
            return false;
        }
        // A hair of slack for float noise: `max: 1.1` holds at 1.1000000001.
        let eps = |v: f64| 1e-9 * v.abs().max(1.0);
        self.min.is_none_or(|m| observed >= m - eps(m))
            && self.max.is_none_or(|m| observed <= m + eps(m))
            && self.approx.is_none_or(|(v, tol)| {
                let allowed = if v == 0.0 { tol } else { tol * v.abs() };
                (observed - v).abs() <= allowed + eps(v)
            })
    }

    /// The bound's interval `(lo, hi)`.
    pub fn interval(&self) -> (f64, f64) {
        match self.approx {
            Some((v, tol)) => {
                let d = if v == 0.0 { tol } else { tol * v.abs() };
                (v - d, v + d)
            }
            None => (
                self.min.unwrap_or(f64::NEG_INFINITY),
                self.max.unwrap_or(f64::INFINITY),
            ),
        }
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if let Some((v, tol)) = self.approx {
            return if v == 0.0 {
                write!(f, "≈ 0 ± {}", fmt_num(tol))
            } else {
                write!(f, "≈ {} ± {}%", fmt_num(v), fmt_num(tol * 100.0))
            };
        }
        match (self.min, self.max) {
            (Some(lo), Some(hi)) => write!(f, "in [{}, {}]", fmt_num(lo), fmt_num(hi)),
            (Some(lo), None) => write!(f, ">= {}", fmt_num(lo)),
            (None, Some(hi)) => write!(f, "<= {}", fmt_num(hi)),
            (None, None) => f.write_str("(any value)"),
        }
    }
}
