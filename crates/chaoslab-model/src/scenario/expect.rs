//! Expectations: a figure, over a window of the run, within a bound; and
//! how their entries are read, with bounds checked where they are written.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use crate::format::fmt_num;
use crate::lab::figures::{Figure, Scope};
use crate::yaml;

pub use crate::lab::expect::{Bound, Expectation, Window, DEFAULT_TOLERANCE};

/// An expectation entry as written; figure names are checked when the
/// entry is resolved, so the error can point at the key.
pub(super) struct ExpectSpec {
    pub(super) window: Window,
    pub(super) service: Option<String>,
    /// `root:` a fleet figure over one root's requests.
    pub(super) root: Option<String>,
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
                let mut root: Option<String> = None;
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
                        "root" => {
                            if root.is_some() {
                                return Err(de::Error::duplicate_field("root"));
                            }
                            root = Some(map.next_value()?);
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
                if service.is_some() && root.is_some() {
                    return Err(de::Error::custom(
                        "an expectation takes `service:` (a per-service figure) or `root:` (a root's availability, latency or storm radius), not both",
                    ));
                }
                Ok(ExpectSpec {
                    window,
                    service,
                    root,
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
