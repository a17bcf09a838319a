//! Expectations: a figure, over a window of the run, within a bound; and
//! how their entries are read, with bounds checked where they are written.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use crate::format::{fmt_duration, fmt_num};
use crate::session::figures::{Figure, Scope};
use crate::topology::ServiceId;
use crate::yaml::{self, parse_duration, Location};

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
        let subject = match &self.service_name {
            Some(s) => format!("{s} {}", self.figure.name()),
            None => self.figure.name().to_string(),
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

/// An expectation entry as written; figure names are checked when the
/// entry is resolved, so the error can point at the key.
pub(super) struct ExpectSpec {
    pub(super) window: Window,
    pub(super) service: Option<String>,
    pub(super) figures: Vec<(String, Bound)>,
}

/// `during: 8s..10s`.
struct WindowSpec(Window);

impl<'de> Deserialize<'de> for WindowSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = WindowSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a window FROM..TO such as 8s..10s")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<WindowSpec, E> {
                Window::parse(v).map(WindowSpec).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> Deserialize<'de> for ExpectSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ExpectSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "an expectation: `during:`, optionally `service:`, and figures with bounds",
                )
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ExpectSpec, A::Error> {
                let mut window = None;
                let mut service: Option<String> = None;
                let mut figures: Vec<(String, Bound)> = Vec::new();
                while let Some(k) = map.next_key::<String>()? {
                    match k.as_str() {
                        "during" => {
                            if window.is_some() {
                                return Err(de::Error::duplicate_field("during"));
                            }
                            window = Some(map.next_value::<WindowSpec>()?.0);
                        }
                        "service" => {
                            if service.is_some() {
                                return Err(de::Error::duplicate_field("service"));
                            }
                            service = Some(map.next_value()?);
                        }
                        _ => {
                            if figures.iter().any(|(g, _)| *g == k) {
                                return Err(de::Error::custom(format!(
                                    "figure `{k}` is given twice in one expectation"
                                )));
                            }
                            let b: BoundSpec = map.next_value()?;
                            figures.push((k, b.0));
                        }
                    }
                }
                let window = window.ok_or_else(|| {
                    de::Error::custom("an expectation needs `during: FROM..TO` (e.g. 8s..10s)")
                })?;
                if figures.is_empty() {
                    return Err(de::Error::custom(format!(
                        "an expectation needs a figure with a bound, e.g. `amplification: {{ max: 1.15 }}` (per-service figures: {}; fleet figures: {})",
                        Figure::list(Scope::Service),
                        Figure::list(Scope::Fleet)
                    )));
                }
                Ok(ExpectSpec {
                    window,
                    service,
                    figures,
                })
            }
        }
        d.deserialize_map(V)
    }
}

/// `{ min }`, `{ max }`, `{ min, max }` or `{ approx, tolerance }`.
struct BoundSpec(Bound);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBound {
    #[serde(default, deserialize_with = "bound_number")]
    min: Option<f64>,
    #[serde(default, deserialize_with = "bound_number")]
    max: Option<f64>,
    #[serde(default, deserialize_with = "approx_number")]
    approx: Option<f64>,
    #[serde(default, deserialize_with = "tolerance")]
    tolerance: Option<f64>,
}

impl<'de> Deserialize<'de> for BoundSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = BoundSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a bound such as { max: 1.15 }, { min: 0.99 } or { approx: 8, tolerance: 0.05 }")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<BoundSpec, A::Error> {
                let r = RawBound::deserialize(de::value::MapAccessDeserializer::new(map))?;
                bound(r).map(BoundSpec).map_err(de::Error::custom)
            }
        }
        d.deserialize_map(V)
    }
}

fn bound(r: RawBound) -> Result<Bound, String> {
    if r.approx.is_some() && (r.min.is_some() || r.max.is_some()) {
        return Err("give either `approx` (with `tolerance`) or `min`/`max`, not both".into());
    }
    if r.tolerance.is_some() && r.approx.is_none() {
        return Err(
            "`tolerance` goes with `approx`, which is missing: write { approx: 8, tolerance: 0.05 }"
                .into(),
        );
    }
    if let (Some(lo), Some(hi)) = (r.min, r.max) {
        if lo > hi {
            return Err(format!(
                "min {} is above max {}: nothing can pass",
                fmt_num(lo),
                fmt_num(hi)
            ));
        }
    }
    if r.min.is_none() && r.max.is_none() && r.approx.is_none() {
        return Err(
            "a bound needs `min`, `max` or `approx`, e.g. { max: 1.15 } or { approx: 8, tolerance: 0.05 }"
                .into(),
        );
    }
    Ok(Bound {
        min: r.min,
        max: r.max,
        approx: r
            .approx
            .map(|v| (v, r.tolerance.unwrap_or(DEFAULT_TOLERANCE))),
    })
}

// ---------------------------------------------------------------------------
// Values checked where they are written.

fn finite(v: f64) -> Result<f64, String> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(format!("the bound must be a finite number, got {v}"))
    }
}

fn bound_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    yaml::number(d, "a number", "min and max need a number", finite)
}

fn approx_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    yaml::number(
        d,
        "a number",
        "approx needs a number (e.g. { approx: 8, tolerance: 0.05 })",
        finite,
    )
}

fn tolerance<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    yaml::number(
        d,
        "a relative tolerance such as 0.05",
        "tolerance needs a number (0.05 is 5%)",
        |v| {
            if v.is_finite() && v >= 0.0 {
                Ok(v)
            } else {
                Err(format!("tolerance must be 0 or more (0.05 is 5%), got {v}"))
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{at, err};

    #[test]
    fn an_inverted_or_malformed_window_is_refused_where_written() {
        let m = err("expect:\n  - during: 10s..8s\n    root_rps: { min: 1 }\n");
        at(&m, 2, "window `10s..8s` is inverted or empty");
        let m = err("expect:\n  - root_rps: { min: 1 }\n    during: 5s..5s\n");
        at(&m, 3, "inverted or empty");
        let m = err("expect:\n  - during: 8s-10s\n    root_rps: { min: 1 }\n");
        at(&m, 2, "is not a window: write FROM..TO");
        let m = err("expect:\n  - during: 8s..10parsecs\n    root_rps: { min: 1 }\n");
        at(&m, 2, "unknown unit");
    }

    #[test]
    fn approx_needs_a_number() {
        let m = err(
            "expect:\n  - during: 1s..2s\n    service: D\n    amplification: { approx: eight }\n",
        );
        at(&m, 4, "approx needs a number");
        let m =
            err("expect:\n  - during: 1s..2s\n    service: D\n    amplification: { approx: }\n");
        at(&m, 4, "approx needs a number");
        let m = err(
            "expect:\n  - during: 1s..2s\n    service: D\n    amplification: { tolerance: 0.1 }\n",
        );
        at(&m, 4, "`tolerance` goes with `approx`");
        let m = err("expect:\n  - during: 1s..2s\n    service: D\n    amplification: { approx: 8, max: 9 }\n");
        at(&m, 4, "not both");
        let m = err("expect:\n  - during: 1s..2s\n    service: D\n    amplification: { }\n");
        at(&m, 4, "a bound needs `min`, `max` or `approx`");
        let m = err("expect:\n  - during: 1s..2s\n    service: D\n    amplification: 8\n");
        at(&m, 4, "a bound such as");
        let m = err(
            "expect:\n  - during: 1s..2s\n    service: D\n    amplification: { min: 3, max: 2 }\n",
        );
        at(&m, 4, "min 3 is above max 2");
        let m = err("expect:\n  - during: 1s..2s\n    service: D\n    amplification: { approx: 8, tolerance: -1 }\n");
        at(&m, 4, "tolerance must be 0 or more");
        let m =
            err("expect:\n  - during: 1s..2s\n    service: D\n    amplification: { maximum: 8 }\n");
        at(&m, 4, "unknown field `maximum`");
    }
}
