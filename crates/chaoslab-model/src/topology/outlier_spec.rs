//! `outlier:` as the topology file writes it (SPEC section 17): `on`
//! (Envoy's defaults, which Istio keeps), `off`, or a map of Envoy's
//! `outlier_detection` numbers, each checked at its scalar, so a mistake
//! is named with its file, line and column and the range it must be in.
//!
//! | key | Envoy / Istio | default | range |
//! |---|---|---|---|
//! | `consecutive_5xx` | `consecutive_5xx` / `consecutive5xxErrors` | 5 | 0 (off) to 1,000,000 |
//! | `consecutive_gateway` | `consecutive_gateway_failure` / `consecutiveGatewayErrors` | 0 (off) | 0 to 1,000,000 |
//! | `interval` | `interval` | 10s | 1ms to 1h |
//! | `base_ejection` | `base_ejection_time` / `baseEjectionTime` | 30s | 1ms to 1h |
//! | `max_ejection` | `max_ejection_time` | 300s (at least `base_ejection`) | 1ms to 1h |
//! | `max_ejection_percent` | `max_ejection_percent` / `maxEjectionPercent` | 10 | 0 to 100 |
//! | `always_eject_one_host` | `always_eject_one_host` (Envoy 1.31) | false | |
//! | `count` | (the lab's) | `all` | `all`, `claimed` |
//!
//! ```
//! use chaoslab_model::topology::spec::TopologySpec;
//! use chaoslab_model::topology::OutlierSetting;
//! use chaoslab_model::yaml;
//!
//! let ok = "name: t\npolicy:\n  outlier: { consecutive_5xx: 3, count: claimed }\nservices:\n  A:\n";
//! let spec: TopologySpec = yaml::from_str(ok, "t.yaml").unwrap();
//! let Some(OutlierSetting::On(cfg)) = spec.policy.to_fields().outlier.map(|o| *o) else { panic!() };
//! assert_eq!((cfg.consecutive_5xx, cfg.count.name()), (3, "claimed"));
//! let bad = "name: t\npolicy:\n  outlier: { max_ejection_percent: 150 }\nservices:\n  A:\n";
//! let err = yaml::from_str::<TopologySpec>(bad, "t.yaml").unwrap_err().to_string();
//! assert!(err.starts_with("t.yaml:3:"), "{err}");
//! assert!(err.contains("from 0 to 100, got 150"), "{err}");
//! ```

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use super::spec::Text;
use super::OutlierSetting;
use crate::yaml;
use error_ownership::outlier::{Count, OutlierConfig};

/// The largest `consecutive_5xx` or `consecutive_gateway` accepted.
pub const MAX_CONSECUTIVE: u32 = 1_000_000;
/// The shortest `interval`, `base_ejection` or `max_ejection`.
pub const MIN_OUTLIER_TIME: Duration = Duration::from_millis(1);
/// The longest `interval`, `base_ejection` or `max_ejection`.
pub const MAX_OUTLIER_TIME: Duration = Duration::from_secs(3600);

/// `outlier:` as a map: each number optional, Envoy's fill the rest.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutlierSpec {
    /// 5xx in a row that eject a host (0: off).
    #[serde(default, deserialize_with = "consecutive_5xx")]
    pub consecutive_5xx: Option<u32>,
    /// Gateway errors (502, 503, 504, no answer) in a row that eject a
    /// host (0: off).
    #[serde(default, deserialize_with = "consecutive_gateway")]
    pub consecutive_gateway: Option<u32>,
    /// Time between the sweeps that bring hosts back.
    #[serde(default, deserialize_with = "interval")]
    pub interval: Option<Duration>,
    /// A first ejection's length (the k-th lasts k times as long).
    #[serde(default, deserialize_with = "base_ejection")]
    pub base_ejection: Option<Duration>,
    /// The longest an ejection lasts.
    #[serde(default, deserialize_with = "max_ejection")]
    pub max_ejection: Option<Duration>,
    /// The largest share of the hosts ejected at once, percent.
    #[serde(default, deserialize_with = "max_ejection_percent")]
    pub max_ejection_percent: Option<f64>,
    /// One host may be ejected whatever the share.
    #[serde(default)]
    pub always_eject_one_host: Option<bool>,
    /// `all` (every 5xx) or `claimed` (only claimed or unmarked errors).
    #[serde(default, deserialize_with = "count")]
    pub count: Option<Count>,
}

impl OutlierSpec {
    /// The numbers, Envoy's defaults where none is written.
    pub fn config(&self) -> OutlierConfig {
        let d = OutlierConfig::DEFAULT;
        let base = self.base_ejection.unwrap_or(d.base_ejection);
        OutlierConfig {
            consecutive_5xx: self.consecutive_5xx.unwrap_or(d.consecutive_5xx),
            consecutive_gateway: self.consecutive_gateway.unwrap_or(d.consecutive_gateway),
            interval: self.interval.unwrap_or(d.interval),
            base_ejection: base,
            // Envoy: "if max_ejection_time was not specified, the default
            // or base_ejection_time, whichever is larger".
            max_ejection: self.max_ejection.unwrap_or(d.max_ejection.max(base)),
            max_ejection_percent: self.max_ejection_percent.unwrap_or(d.max_ejection_percent),
            always_eject_one: self.always_eject_one_host.unwrap_or(d.always_eject_one),
            count: self.count.unwrap_or(d.count),
        }
    }
}

/// `outlier:` `on`/`true`, `off`/`false`, or a map.
pub fn outlier<'de, D: Deserializer<'de>>(d: D) -> Result<Option<OutlierSetting>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = OutlierSetting;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("`on`, `off` or a map of outlier detection numbers")
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<OutlierSetting, E> {
            Ok(if v {
                OutlierSetting::On(OutlierConfig::DEFAULT)
            } else {
                OutlierSetting::Off
            })
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<OutlierSetting, E> {
            match v.trim() {
                "on" => self.visit_bool(true),
                "off" => self.visit_bool(false),
                _ => Err(E::custom(format!(
                    "outlier must be `on`, `off` or a map (consecutive_5xx, consecutive_gateway, interval, base_ejection, max_ejection, max_ejection_percent, always_eject_one_host, count), got `{v}`"
                ))),
            }
        }
        fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<OutlierSetting, A::Error> {
            let spec = OutlierSpec::deserialize(de::value::MapAccessDeserializer::new(map))?;
            let cfg = spec.config();
            if cfg.max_ejection < cfg.base_ejection {
                return Err(de::Error::custom(format!(
                    "outlier: max_ejection {} is below base_ejection {}: an ejection lasts base_ejection × ejections, at most max_ejection (Envoy refuses this too)",
                    crate::format::exact(cfg.max_ejection),
                    crate::format::exact(cfg.base_ejection)
                )));
            }
            Ok(OutlierSetting::On(cfg))
        }
    }
    d.deserialize_any(V).map(Some)
}

/// The `outlier:` setting as a scenario or a recording writes it back:
/// what [`outlier`] reads to the same setting.
pub fn written(s: &OutlierSetting) -> String {
    let exact = crate::format::exact;
    match s {
        OutlierSetting::Off => "off".into(),
        OutlierSetting::On(c) => format!(
            "{{ consecutive_5xx: {}, consecutive_gateway: {}, interval: {}, base_ejection: {}, max_ejection: {}, max_ejection_percent: {}, always_eject_one_host: {}, count: {} }}",
            c.consecutive_5xx,
            c.consecutive_gateway,
            exact(c.interval),
            exact(c.base_ejection),
            exact(c.max_ejection),
            c.max_ejection_percent,
            c.always_eject_one,
            c.count.name()
        ),
    }
}

/// A streak's length: a whole number from 0 (off) to [`MAX_CONSECUTIVE`].
fn streak(v: f64, what: &str) -> Result<u32, String> {
    yaml::whole(v, 0, MAX_CONSECUTIVE, what).map_err(|e| format!("{e} (0 turns the rule off)"))
}

fn consecutive_5xx<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    yaml::number(
        d,
        "a whole number of 5xx in a row",
        "consecutive_5xx needs a whole number of 5xx in a row (0 turns it off)",
        |v| streak(v, "consecutive_5xx"),
    )
}

fn consecutive_gateway<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    yaml::number(
        d,
        "a whole number of gateway errors in a row",
        "consecutive_gateway needs a whole number of gateway errors in a row (0 turns it off)",
        |v| streak(v, "consecutive_gateway"),
    )
}

fn max_ejection_percent<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    yaml::number(
        d,
        "a percentage from 0 to 100",
        "max_ejection_percent needs a percentage from 0 to 100",
        |v| {
            if v.is_finite() && (0.0..=100.0).contains(&v) {
                Ok(v)
            } else {
                Err(format!(
                    "max_ejection_percent must be a number from 0 to 100, got {v}"
                ))
            }
        },
    )
}

/// A time from [`MIN_OUTLIER_TIME`] to [`MAX_OUTLIER_TIME`].
fn time<'de, D: Deserializer<'de>>(d: D, what: &str) -> Result<Option<Duration>, D::Error> {
    match yaml::duration(d)? {
        Some(t) if !(MIN_OUTLIER_TIME..=MAX_OUTLIER_TIME).contains(&t) => {
            Err(de::Error::custom(format!(
                "{what} must be from 1ms to 1h, got {}",
                crate::format::exact(t)
            )))
        }
        t => Ok(t),
    }
}

fn interval<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    time(d, "interval")
}

fn base_ejection<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    time(d, "base_ejection")
}

fn max_ejection<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    time(d, "max_ejection")
}

/// `count:` `all` or `claimed`.
fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Count>, D::Error> {
    d.deserialize_str(Text {
        expecting: "`all` or `claimed`",
        check: |v| {
            Count::parse(v.trim()).ok_or_else(|| {
                let hint = yaml::did_you_mean(v, ["all", "claimed"])
                    .map(|n| format!(" (did you mean `{n}`?)"))
                    .unwrap_or_default();
                format!(
                    "count must be `all` (every 5xx) or `claimed` (only errors the host claims or leaves unmarked), got `{v}`{hint}"
                )
            })
        },
    })
    .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::spec::TopologySpec;
    use std::time::Duration;

    fn parse(v: &str) -> Result<Option<OutlierSetting>, String> {
        let y = format!("name: t\npolicy:\n  outlier: {v}\nservices:\n  A:\n");
        yaml::from_str::<TopologySpec>(&y, "t.yaml")
            .map(|s| s.policy.to_fields().outlier.map(|o| *o))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn on_off_and_a_map() {
        assert_eq!(
            parse("on").unwrap(),
            Some(OutlierSetting::On(OutlierConfig::DEFAULT))
        );
        assert_eq!(parse("true").unwrap(), parse("on").unwrap());
        assert_eq!(parse("off").unwrap(), Some(OutlierSetting::Off));
        assert_eq!(parse("false").unwrap(), Some(OutlierSetting::Off));
        let Some(OutlierSetting::On(c)) = parse(
            "{ consecutive_5xx: 0, consecutive_gateway: 3, interval: 1s, base_ejection: 2s, max_ejection_percent: 50, count: claimed }",
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(
            c,
            OutlierConfig {
                consecutive_5xx: 0,
                consecutive_gateway: 3,
                interval: Duration::from_secs(1),
                base_ejection: Duration::from_secs(2),
                max_ejection_percent: 50.0,
                count: Count::Claimed,
                ..OutlierConfig::DEFAULT
            }
        );
        // A base past Envoy's 300 s maximum raises the maximum with it.
        let Some(OutlierSetting::On(c)) = parse("{ base_ejection: 10m }").unwrap() else {
            panic!()
        };
        assert_eq!(c.max_ejection, Duration::from_secs(600));
    }

    #[test]
    fn what_is_written_reads_back() {
        let settings = [
            OutlierSetting::Off,
            OutlierSetting::On(OutlierConfig::DEFAULT),
            OutlierSetting::On(OutlierConfig {
                consecutive_5xx: 7,
                consecutive_gateway: 2,
                interval: Duration::from_millis(1500),
                base_ejection: Duration::from_micros(2500),
                max_ejection: Duration::from_secs(3),
                max_ejection_percent: 33.5,
                always_eject_one: true,
                count: Count::Claimed,
            }),
        ];
        for s in settings {
            let w = written(&s);
            assert_eq!(parse(&w).unwrap(), Some(s), "{w}");
        }
    }

    #[test]
    fn mistakes_are_named_where_they_are_with_their_range() {
        for (v, says) in [
            (
                "{ max_ejection_percent: 150 }",
                "max_ejection_percent must be a number from 0 to 100, got 150",
            ),
            (
                "{ consecutive_5xx: -1 }",
                "consecutive_5xx must be a whole number from 0 to 1000000, got -1",
            ),
            ("{ consecutive_gateway: 2.5 }", "from 0 to 1000000, got 2.5"),
            (
                "{ interval: 0s }",
                "interval must be from 1ms to 1h, got 0ms",
            ),
            (
                "{ base_ejection: 2h }",
                "base_ejection must be from 1ms to 1h",
            ),
            ("{ count: claimd }", "did you mean `claimed`"),
            ("{ consecutive: 5 }", "unknown field `consecutive`"),
            ("sometimes", "outlier must be `on`, `off` or a map"),
            (
                "{ consecutive_5xx: many }",
                "consecutive_5xx needs a whole number",
            ),
        ] {
            let e = parse(v).unwrap_err();
            assert!(e.starts_with("t.yaml:3:"), "{v}: {e}");
            assert!(e.contains(says), "{v}: {e}");
        }
        let e = parse("{ base_ejection: 30s, max_ejection: 10s }").unwrap_err();
        assert!(
            e.contains("max_ejection 10s is below base_ejection 30s"),
            "{e}"
        );
    }
}
