//! `concurrency:` on a service (SPEC section 15): server-side adaptive
//! concurrency, the limit on the requests a replica serves at once moved
//! by the latency they take. Over the limit a request is shed at once with
//! a claimed 503 (the shedding service owns that error), in its callers'
//! don't-retry dialect.
//!
//! ```yaml
//! DB: { workers: 4, concurrency: gradient }   # Envoy's defaults
//! DB: { concurrency: { controller: aimd, min: 4, max: 64 } }
//! DB: { concurrency: { controller: gradient, interval: 100ms, min_rtt_interval: 10s } }
//! ```
//!
//! | controller | numbers (default) | source |
//! |---|---|---|
//! | `gradient` | `interval` (100ms), `percentile` (0.5), `buffer` (0.25), `min_rtt_interval` (60s), `min_rtt_requests` (50), `min_concurrency` (3), `max_limit` (1000) | Envoy adaptive concurrency filter |
//! | `vegas` | `max` (1000), `smoothing` (1), `probe` (30) | Netflix concurrency-limits `VegasLimit` |
//! | `aimd` | `min` (20), `max` (200), `backoff` (0.9), `timeout` (5s) | Netflix concurrency-limits `AIMDLimit` |

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use crate::yaml;
use error_ownership::gradient::GradientConfig;
use error_ownership::limiter::{Aimd, Vegas};

/// A service's adaptive concurrency controller, with its numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Concurrency {
    /// Envoy's gradient controller.
    Gradient(GradientConfig),
    /// Netflix's Vegas limit.
    Vegas {
        /// The ceiling.
        max: u32,
        /// How far a new limit moves the old one (0..=1).
        smoothing: f64,
        /// The no-load latency is sampled afresh every `probe × limit`
        /// samples.
        probe: u32,
    },
    /// Netflix's AIMD limit.
    Aimd {
        /// The floor (and the start).
        min: u32,
        /// The ceiling.
        max: u32,
        /// What a drop multiplies the limit by.
        backoff: f64,
        /// A request slower than this counts as a drop.
        timeout: Duration,
    },
}

impl Concurrency {
    /// The controllers' words.
    pub const WORDS: [&'static str; 3] = ["gradient", "vegas", "aimd"];

    /// A controller with its source's defaults.
    pub fn parse(word: &str) -> Option<Concurrency> {
        Some(match word {
            "gradient" => Concurrency::Gradient(GradientConfig::ENVOY),
            "vegas" => {
                let v = Vegas::default();
                Concurrency::Vegas {
                    max: v.max,
                    smoothing: v.smoothing,
                    probe: v.probe,
                }
            }
            "aimd" => {
                let a = Aimd::default();
                Concurrency::Aimd {
                    min: a.min,
                    max: a.max,
                    backoff: a.backoff,
                    timeout: a.timeout,
                }
            }
            _ => return None,
        })
    }

    /// Its word.
    pub fn name(&self) -> &'static str {
        match self {
            Concurrency::Gradient(_) => "gradient",
            Concurrency::Vegas { .. } => "vegas",
            Concurrency::Aimd { .. } => "aimd",
        }
    }
}

/// `concurrency:` as a map: the controller, then any of its numbers.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConcurrencySpec {
    controller: Option<String>,
    #[serde(default, deserialize_with = "yaml::duration")]
    interval: Option<Duration>,
    #[serde(default, deserialize_with = "ratio")]
    percentile: Option<f64>,
    #[serde(default, deserialize_with = "yaml::non_negative")]
    buffer: Option<f64>,
    #[serde(default, deserialize_with = "yaml::duration")]
    min_rtt_interval: Option<Duration>,
    #[serde(default, deserialize_with = "count")]
    min_rtt_requests: Option<u32>,
    #[serde(default, deserialize_with = "count")]
    min_concurrency: Option<u32>,
    #[serde(default, deserialize_with = "count")]
    max_limit: Option<u32>,
    #[serde(default, deserialize_with = "count")]
    min: Option<u32>,
    #[serde(default, deserialize_with = "count")]
    max: Option<u32>,
    #[serde(default, deserialize_with = "ratio")]
    smoothing: Option<f64>,
    #[serde(default, deserialize_with = "count")]
    probe: Option<u32>,
    #[serde(default, deserialize_with = "ratio")]
    backoff: Option<f64>,
    #[serde(default, deserialize_with = "yaml::duration")]
    timeout: Option<Duration>,
}

/// The largest limit a controller may be given.
pub const MAX_LIMIT: u32 = 100_000;

fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    yaml::number(
        d,
        "a whole number of requests",
        "needs a whole number of 1 or more",
        |v| yaml::whole(v, 1, MAX_LIMIT, "a concurrency number"),
    )
}

fn ratio<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    yaml::number(
        d,
        "a number from 0 to 1",
        "needs a number from 0 to 1",
        |v| {
            if v.is_finite() && (0.0..=1.0).contains(&v) {
                Ok(v)
            } else {
                Err(format!("must be a number from 0 to 1, got {v}"))
            }
        },
    )
}

impl ConcurrencySpec {
    /// The controller with the numbers set, or what does not belong.
    fn build(self) -> Result<Concurrency, String> {
        let Some(word) = self.controller.as_deref() else {
            return Err(format!(
                "concurrency needs `controller:` ({})",
                Concurrency::WORDS.join(", ")
            ));
        };
        let Some(mut c) = Concurrency::parse(word.trim()) else {
            return Err(unknown(word));
        };
        let set = |name: &'static str, is: bool| is.then_some(name);
        let gradient = [
            set("interval", self.interval.is_some()),
            set("percentile", self.percentile.is_some()),
            set("buffer", self.buffer.is_some()),
            set("min_rtt_interval", self.min_rtt_interval.is_some()),
            set("min_rtt_requests", self.min_rtt_requests.is_some()),
            set("min_concurrency", self.min_concurrency.is_some()),
            set("max_limit", self.max_limit.is_some()),
        ];
        let vegas = [
            set("smoothing", self.smoothing.is_some()),
            set("probe", self.probe.is_some()),
        ];
        let aimd = [
            set("min", self.min.is_some()),
            set("backoff", self.backoff.is_some()),
            set("timeout", self.timeout.is_some()),
        ];
        let max = [set("max", self.max.is_some())];
        let stray: Vec<&str> = match c {
            Concurrency::Gradient(_) => vegas
                .iter()
                .chain(&aimd)
                .chain(&max)
                .flatten()
                .copied()
                .collect(),
            Concurrency::Vegas { .. } => gradient.iter().chain(&aimd).flatten().copied().collect(),
            Concurrency::Aimd { .. } => gradient.iter().chain(&vegas).flatten().copied().collect(),
        };
        if let Some(first) = stray.first() {
            return Err(format!(
                "`{first}` is not a number of the `{}` controller",
                c.name()
            ));
        }
        match &mut c {
            Concurrency::Gradient(g) => {
                g.interval = self.interval.unwrap_or(g.interval);
                g.percentile = self.percentile.unwrap_or(g.percentile);
                g.buffer = self.buffer.unwrap_or(g.buffer);
                g.min_rtt_interval = self.min_rtt_interval.unwrap_or(g.min_rtt_interval);
                g.min_rtt_requests = self.min_rtt_requests.unwrap_or(g.min_rtt_requests);
                g.min_concurrency = self.min_concurrency.unwrap_or(g.min_concurrency);
                g.max_limit = self.max_limit.unwrap_or(g.max_limit);
                if g.interval < Duration::from_millis(10) {
                    return Err(format!(
                        "interval must be at least 10ms, got {:?}",
                        g.interval
                    ));
                }
                if g.max_limit < g.min_concurrency {
                    return Err(format!(
                        "max_limit ({}) is below min_concurrency ({})",
                        g.max_limit, g.min_concurrency
                    ));
                }
            }
            Concurrency::Vegas {
                max,
                smoothing,
                probe,
            } => {
                *max = self.max.unwrap_or(*max);
                *smoothing = self.smoothing.unwrap_or(*smoothing);
                *probe = self.probe.unwrap_or(*probe);
            }
            Concurrency::Aimd {
                min,
                max,
                backoff,
                timeout,
            } => {
                *min = self.min.unwrap_or(*min);
                *max = self.max.unwrap_or(*max);
                *backoff = self.backoff.unwrap_or(*backoff);
                *timeout = self.timeout.unwrap_or(*timeout);
                if *max < *min {
                    return Err(format!("max ({max}) is below min ({min})"));
                }
                if !(0.5..1.0).contains(backoff) {
                    return Err(format!(
                        "backoff must be from 0.5 to below 1 (what a drop multiplies the limit by), got {backoff}"
                    ));
                }
            }
        }
        Ok(c)
    }
}

fn unknown(word: &str) -> String {
    let hint = yaml::did_you_mean(word, Concurrency::WORDS.iter().copied())
        .map(|n| format!(" (did you mean `{n}`?)"))
        .unwrap_or_default();
    format!(
        "unknown concurrency controller `{word}`{hint}; expected one of {}",
        Concurrency::WORDS.join(", ")
    )
}

/// `concurrency:` a controller's word, or a map of it and its numbers.
pub(crate) fn concurrency<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Concurrency>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Concurrency;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str(
                "a controller (gradient, vegas, aimd) or a map of `controller:` and its numbers",
            )
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Concurrency, E> {
            Concurrency::parse(v.trim()).ok_or_else(|| E::custom(unknown(v)))
        }
        fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Concurrency, A::Error> {
            let spec = ConcurrencySpec::deserialize(de::value::MapAccessDeserializer::new(map))?;
            spec.build().map_err(de::Error::custom)
        }
    }
    d.deserialize_any(V).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(yaml: &str) -> Result<Concurrency, String> {
        #[derive(Deserialize)]
        struct W {
            #[serde(deserialize_with = "concurrency")]
            c: Option<Concurrency>,
        }
        serde_yaml::from_str::<W>(&format!("c: {yaml}"))
            .map(|w| w.c.expect("set"))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_word_brings_its_sources_defaults() {
        assert_eq!(
            read("gradient"),
            Ok(Concurrency::Gradient(GradientConfig::ENVOY))
        );
        assert!(matches!(
            read("vegas"),
            Ok(Concurrency::Vegas { max: 1000, .. })
        ));
        assert!(matches!(
            read("aimd"),
            Ok(Concurrency::Aimd {
                min: 20,
                max: 200,
                ..
            })
        ));
    }

    #[test]
    fn a_map_sets_the_controllers_own_numbers() {
        let Ok(Concurrency::Gradient(g)) =
            read("{ controller: gradient, interval: 50ms, min_rtt_interval: 10s, max_limit: 64 }")
        else {
            panic!()
        };
        assert_eq!(
            (g.interval, g.min_rtt_interval, g.max_limit, g.buffer),
            (Duration::from_millis(50), Duration::from_secs(10), 64, 0.25)
        );
        assert_eq!(
            read("{ controller: aimd, min: 4, max: 64 }"),
            Ok(Concurrency::Aimd {
                min: 4,
                max: 64,
                backoff: 0.9,
                timeout: Duration::from_secs(5)
            })
        );
    }

    #[test]
    fn bad_input_says_what_and_where() {
        let e = read("gradiant").unwrap_err();
        assert!(e.contains("did you mean `gradient`?"), "{e}");
        let e = read("{ controller: vegas, buffer: 0.5 }").unwrap_err();
        assert!(
            e.contains("`buffer` is not a number of the `vegas` controller"),
            "{e}"
        );
        let e = read("{ controller: aimd, min: 50, max: 10 }").unwrap_err();
        assert!(e.contains("max (10) is below min (50)"), "{e}");
        let e = read("{ min: 5 }").unwrap_err();
        assert!(e.contains("concurrency needs `controller:`"), "{e}");
        let e = read("{ controller: gradient, min_concurrency: 0 }").unwrap_err();
        assert!(e.contains("from 1 to"), "{e}");
        let e = read("{ controller: aimd, backoff: 0.2 }").unwrap_err();
        assert!(e.contains("backoff must be from 0.5"), "{e}");
        // Each error carries its place in the file.
        assert!(e.contains("line 1"), "{e}");
    }
}
