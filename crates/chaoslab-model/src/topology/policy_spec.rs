//! `policy:` as the topology file writes it: the fleet's or one call's
//! policy fields, each checked at its scalar (a did-you-mean for a name, the
//! range for a number), and turned into [`PolicyFields`]. A scenario's
//! `policy:` step reads the same map.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use super::spec::{Text, MAX_ATTEMPTS};
use super::{
    BreakerSetting, BudgetKind, BudgetSetting, HedgeSetting, PolicyFields, Preset, SignalSetting,
    ThrottleSetting,
};
use crate::yaml;
use error_ownership::breaker::BreakerConfig;
use error_ownership::hedge::HedgeConfig;
use error_ownership::policy::Lb;
use error_ownership::signal::Signal;
use error_ownership::throttle::ThrottleConfig;
use error_ownership::tokens::MAX_TOKENS_LIMIT;

/// `policy:`, fleet-wide or on one call.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    /// `preset:` none | retry | budget | ownership | finagle | envoy |
    /// grpc | aws | aws-2026 | sre.
    #[serde(default, deserialize_with = "preset")]
    pub preset: Option<Preset>,
    /// `attempts:` (first attempt included; at least 1).
    #[serde(default, deserialize_with = "attempts")]
    pub attempts: Option<u32>,
    /// `budget:` a ratio, or `off`.
    #[serde(default, deserialize_with = "budget")]
    pub budget: Option<BudgetSetting>,
    /// `min_per_sec:` retries per second always allowed.
    #[serde(default, deserialize_with = "yaml::non_negative")]
    pub min_per_sec: Option<f64>,
    /// `ttl:` how long a budget deposit lives.
    #[serde(default, deserialize_with = "yaml::duration")]
    pub ttl: Option<Duration>,
    /// `backoff:` base delay.
    #[serde(default, deserialize_with = "yaml::duration")]
    pub backoff: Option<Duration>,
    /// `timeout:` per attempt.
    #[serde(default, deserialize_with = "yaml::duration")]
    pub timeout: Option<Duration>,
    /// `deadline:` propagate | off.
    #[serde(default)]
    pub deadline: Option<Deadline>,
    /// `budget_model:` window | concurrency | tokens | quota.
    #[serde(default, deserialize_with = "budget_model")]
    pub budget_model: Option<BudgetKind>,
    /// `signal:` ownership | nack | overloaded | pushback | retry-after |
    /// sre | none.
    #[serde(default, deserialize_with = "signal")]
    pub signal: Option<SignalSetting>,
    /// `budget_percent:` (concurrency) 0 to 100.
    #[serde(default, deserialize_with = "percent")]
    pub budget_percent: Option<f64>,
    /// `min_retry_concurrency:` (concurrency) retries always allowed in flight.
    #[serde(default, deserialize_with = "min_retry_concurrency")]
    pub min_retry_concurrency: Option<u32>,
    /// `max_tokens:` (tokens) 1 to 1000.
    #[serde(default, deserialize_with = "max_tokens")]
    pub max_tokens: Option<u32>,
    /// `token_ratio:` (tokens) 0 to 1.
    #[serde(default, deserialize_with = "token_ratio")]
    pub token_ratio: Option<f64>,
    /// `quota:` (quota) tokens at the start.
    #[serde(default, deserialize_with = "quota")]
    pub quota: Option<u32>,
    /// `retry_cost:` (quota) tokens a retry costs.
    #[serde(default, deserialize_with = "retry_cost")]
    pub retry_cost: Option<u32>,
    /// `timeout_cost:` (quota) tokens a retry after a timeout costs.
    #[serde(default, deserialize_with = "timeout_cost")]
    pub timeout_cost: Option<u32>,
    /// `breaker:` on | off | a map of its numbers.
    #[serde(default, deserialize_with = "breaker")]
    pub breaker: Option<BreakerSetting>,
    /// `throttle:` on | off | a map of `k` and `window`.
    #[serde(default, deserialize_with = "throttle")]
    pub throttle: Option<ThrottleSetting>,
    /// `hedge:` off | a map of `delay`, `max_attempts` and `non_fatal`.
    #[serde(default, deserialize_with = "hedge")]
    pub hedge: Option<HedgeSetting>,
    /// `outlier:` on | off | a map of Envoy's outlier detection numbers.
    #[serde(default, deserialize_with = "super::outlier_spec::outlier")]
    pub outlier: Option<super::OutlierSetting>,
    /// `lb:` round-robin | random | p2c.
    #[serde(default)]
    pub lb: Option<Lb>,
    /// `retry_other_host:` a retry avoids the replicas its call tried.
    #[serde(default)]
    pub retry_other_host: Option<bool>,
    /// `retry_on:` which failures are retried, in Envoy's words.
    #[serde(default, deserialize_with = "super::conditions_spec::retry_on")]
    pub retry_on: Option<error_ownership::conditions::RetryOn>,
}

/// `breaker:` as a map: each number optional, the defaults fill the rest.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BreakerSpec {
    /// Failures in a row that open it (0: never on this rule).
    #[serde(default, deserialize_with = "breaker_consecutive")]
    pub consecutive: Option<u32>,
    /// The failed share of the window that opens it.
    #[serde(default, deserialize_with = "breaker_ratio")]
    pub failure_ratio: Option<f64>,
    /// Attempts the window holds.
    #[serde(default, deserialize_with = "breaker_window")]
    pub window: Option<u32>,
    /// Outcomes needed before the ratio is judged.
    #[serde(default, deserialize_with = "breaker_min_calls")]
    pub min_calls: Option<u32>,
    /// How long it stays open.
    #[serde(default, deserialize_with = "yaml::duration")]
    pub open_for: Option<Duration>,
    /// Attempts let through half-open.
    #[serde(default, deserialize_with = "breaker_probes")]
    pub probes: Option<u32>,
}

impl BreakerSpec {
    fn config(&self) -> BreakerConfig {
        let d = BreakerConfig::DEFAULT;
        BreakerConfig {
            consecutive: self.consecutive.unwrap_or(d.consecutive),
            failure_ratio: self.failure_ratio.unwrap_or(d.failure_ratio),
            window: self.window.unwrap_or(d.window),
            min_calls: self.min_calls.unwrap_or(d.min_calls),
            open_for: self.open_for.unwrap_or(d.open_for),
            probes: self.probes.unwrap_or(d.probes),
        }
    }
}

/// `breaker:` `on`/`true`, `off`/`false`, or a map.
fn breaker<'de, D: Deserializer<'de>>(d: D) -> Result<Option<BreakerSetting>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = BreakerSetting;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("`on`, `off` or a map of breaker numbers")
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<BreakerSetting, E> {
            Ok(if v {
                BreakerSetting::On(BreakerConfig::DEFAULT)
            } else {
                BreakerSetting::Off
            })
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<BreakerSetting, E> {
            match v.trim() {
                "on" => self.visit_bool(true),
                "off" => self.visit_bool(false),
                _ => Err(E::custom(format!(
                    "breaker must be `on`, `off` or a map (consecutive, failure_ratio, window, min_calls, open_for, probes), got `{v}`"
                ))),
            }
        }
        fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<BreakerSetting, A::Error> {
            let spec = BreakerSpec::deserialize(de::value::MapAccessDeserializer::new(map))?;
            Ok(BreakerSetting::On(spec.config()))
        }
    }
    d.deserialize_any(V).map(Some)
}

/// `throttle:` as a map: each number optional, the SRE book's fill the rest.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThrottleSpec {
    /// K: requests sent per accepted one before rejecting starts.
    #[serde(default, deserialize_with = "throttle_k")]
    pub k: Option<f64>,
    /// How far back requests and accepts are counted.
    #[serde(default, deserialize_with = "throttle_window")]
    pub window: Option<Duration>,
}

/// The largest K accepted: past it the throttle never rejects anything a
/// lab run can send.
pub const MAX_THROTTLE_K: f64 = 100.0;
/// The shortest throttle window: the lab's one-second sampling tick.
pub const MIN_THROTTLE_WINDOW: Duration = Duration::from_secs(1);
/// The longest throttle window.
pub const MAX_THROTTLE_WINDOW: Duration = Duration::from_secs(3600);

/// `throttle:` `on`/`true`, `off`/`false`, or a map.
fn throttle<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ThrottleSetting>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = ThrottleSetting;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("`on`, `off` or a map of `k` and `window`")
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<ThrottleSetting, E> {
            Ok(if v {
                ThrottleSetting::On(ThrottleConfig::SRE)
            } else {
                ThrottleSetting::Off
            })
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<ThrottleSetting, E> {
            match v.trim() {
                "on" => self.visit_bool(true),
                "off" => self.visit_bool(false),
                _ => Err(E::custom(format!(
                    "throttle must be `on`, `off` or a map (k, window), got `{v}`"
                ))),
            }
        }
        fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<ThrottleSetting, A::Error> {
            let spec = ThrottleSpec::deserialize(de::value::MapAccessDeserializer::new(map))?;
            let d = ThrottleConfig::SRE;
            Ok(ThrottleSetting::On(ThrottleConfig {
                k: spec.k.unwrap_or(d.k),
                window: spec.window.unwrap_or(d.window),
            }))
        }
    }
    d.deserialize_any(V).map(Some)
}

/// `k:` above 0, at most [`MAX_THROTTLE_K`].
fn throttle_k<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    yaml::number(
        d,
        "K, a number above 0 (the SRE book's is 2)",
        "k needs a number above 0 (the SRE book's is 2)",
        |v| {
            if v.is_finite() && v > 0.0 && v <= MAX_THROTTLE_K {
                Ok(v)
            } else {
                Err(format!(
                    "k must be above 0 and at most {MAX_THROTTLE_K} (the SRE book's is 2), got {v}"
                ))
            }
        },
    )
}

/// `window:` from [`MIN_THROTTLE_WINDOW`] to [`MAX_THROTTLE_WINDOW`].
fn throttle_window<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    let w = yaml::duration(d)?;
    match w {
        Some(w) if w < MIN_THROTTLE_WINDOW => Err(de::Error::custom(format!(
            "window must be at least 1s, the lab's sampling tick, got {w:?}"
        ))),
        Some(w) if w > MAX_THROTTLE_WINDOW => Err(de::Error::custom(format!(
            "window must be at most 1h, got {w:?}"
        ))),
        w => Ok(w),
    }
}

/// `hedge:` as a map: gRPC A6's `hedgingPolicy`, each number optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HedgeSpec {
    /// How long to wait for an answer before the next hedge.
    #[serde(default, deserialize_with = "yaml::duration")]
    pub delay: Option<Duration>,
    /// Attempts sent at most, the first included (1 to 5).
    #[serde(default, deserialize_with = "hedge_attempts")]
    pub max_attempts: Option<u32>,
    /// Whether a failure sends the next hedge at once instead of failing
    /// the call.
    #[serde(default)]
    pub non_fatal: Option<bool>,
}

/// `hedge:` `on`/`off`, or a map.
fn hedge<'de, D: Deserializer<'de>>(d: D) -> Result<Option<HedgeSetting>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = HedgeSetting;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("`on`, `off` or a map of `delay`, `max_attempts` and `non_fatal`")
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<HedgeSetting, E> {
            Ok(if v {
                HedgeSetting::On(HedgeConfig::DEFAULT)
            } else {
                HedgeSetting::Off
            })
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<HedgeSetting, E> {
            match v.trim() {
                "on" => self.visit_bool(true),
                "off" => self.visit_bool(false),
                _ => Err(E::custom(format!(
                    "hedge must be `on`, `off` or a map (delay, max_attempts, non_fatal), got `{v}`"
                ))),
            }
        }
        fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<HedgeSetting, A::Error> {
            let spec = HedgeSpec::deserialize(de::value::MapAccessDeserializer::new(map))?;
            let d = HedgeConfig::DEFAULT;
            let cfg = HedgeConfig {
                delay: spec.delay.unwrap_or(d.delay),
                max_attempts: spec.max_attempts.unwrap_or(d.max_attempts),
                non_fatal: spec.non_fatal.unwrap_or(d.non_fatal),
            };
            if cfg.delay.is_zero() && cfg.max_attempts > 1 {
                return Err(de::Error::custom(format!(
                    "hedge: a delay of 0 with max_attempts {} sends every hedge at once; give a delay above 0 (or max_attempts: 1)",
                    cfg.max_attempts
                )));
            }
            Ok(HedgeSetting::On(cfg))
        }
    }
    d.deserialize_any(V).map(Some)
}

/// `deadline:`: whether each call carries the time its caller has left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Deadline {
    /// Each call carries its caller's remaining time; a callee's attempts
    /// never outlive it and a job whose deadline has passed is skipped.
    Propagate,
    /// No deadline travels with a call (the default).
    Off,
}

impl PolicySpec {
    /// The fields as [`PolicyFields`], unset ones left unset.
    pub fn to_fields(&self) -> PolicyFields {
        PolicyFields {
            preset: self.preset,
            attempts: self.attempts,
            budget: self.budget,
            min_per_sec: self.min_per_sec,
            ttl: self.ttl,
            backoff: self.backoff,
            timeout: self.timeout,
            deadline: self.deadline.map(|d| d == Deadline::Propagate),
            budget_model: self.budget_model,
            signal: self.signal,
            budget_percent: self.budget_percent,
            min_retry_concurrency: self.min_retry_concurrency,
            max_tokens: self.max_tokens,
            token_ratio: self.token_ratio,
            quota: self.quota,
            retry_cost: self.retry_cost,
            timeout_cost: self.timeout_cost,
            breaker: self.breaker,
            throttle: self.throttle,
            hedge: self.hedge,
            outlier: self.outlier.map(Box::new),
            lb: self.lb,
            retry_other_host: self.retry_other_host,
            retry_on: self.retry_on.map(Box::new),
        }
    }
}

fn attempts<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    yaml::number(
        d,
        "a number of attempts (1 means no retries)",
        "attempts needs a whole number of attempts (1 means no retries)",
        |v| {
            if v == 0.0 {
                return Err(
                    "attempts must be at least 1: it counts the first attempt (1 means no retries)"
                        .into(),
                );
            }
            yaml::whole(v, 1, MAX_ATTEMPTS, "attempts")
        },
    )
}

/// `budget:`: a ratio of 0 or more, or `off`.
fn budget<'de, D: Deserializer<'de>>(d: D) -> Result<Option<BudgetSetting>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = BudgetSetting;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a budget ratio (e.g. 0.1) or `off`")
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<BudgetSetting, E> {
            if v.is_finite() && v >= 0.0 {
                Ok(BudgetSetting::Ratio(v))
            } else {
                Err(E::custom(format!(
                    "budget must be a ratio of 0 or more (e.g. 0.1) or `off`, got {v}"
                )))
            }
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<BudgetSetting, E> {
            self.visit_f64(v as f64)
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<BudgetSetting, E> {
            self.visit_f64(v as f64)
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<BudgetSetting, E> {
            if v {
                Err(E::custom(
                    "budget must be a ratio (e.g. 0.1) or `off`, not `true`",
                ))
            } else {
                Ok(BudgetSetting::Off)
            }
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<BudgetSetting, E> {
            if v.trim().eq_ignore_ascii_case("off") {
                Ok(BudgetSetting::Off)
            } else {
                Err(E::custom(format!(
                    "budget must be a ratio (e.g. 0.1) or `off`, got `{v}`"
                )))
            }
        }
    }
    d.deserialize_any(V).map(Some)
}

/// A word among `names`, with a did-you-mean for a near miss.
fn word(v: &str, what: &str, names: &[&str]) -> Result<(), String> {
    if names.contains(&v) {
        return Ok(());
    }
    let hint = yaml::did_you_mean(v, names.iter().copied())
        .map(|n| format!(" (did you mean `{n}`?)"))
        .unwrap_or_default();
    Err(format!(
        "unknown {what} `{v}`{hint}; expected one of {}",
        names.join(", ")
    ))
}

/// `preset:` a preset's name.
pub fn preset<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Preset>, D::Error> {
    d.deserialize_str(Text {
        expecting: "a preset name",
        check: parse_preset,
    })
    .map(Some)
}

/// A preset's name, or what is wrong with it (did-you-mean included).
pub fn parse_preset(v: &str) -> Result<Preset, String> {
    let names: Vec<&str> = Preset::every().map(|p| p.name()).collect();
    word(v, "preset", &names)?;
    Ok(Preset::parse(v).expect("a listed name parses"))
}

/// `budget_model:` a model's name.
fn budget_model<'de, D: Deserializer<'de>>(d: D) -> Result<Option<BudgetKind>, D::Error> {
    d.deserialize_str(Text {
        expecting: "a budget model (window, concurrency, tokens, quota)",
        check: |v| {
            let names: Vec<&str> = BudgetKind::WRITTEN.iter().map(|(w, _)| *w).collect();
            word(v, "budget_model", &names)?;
            Ok(BudgetKind::parse(v).expect("a listed name parses"))
        },
    })
    .map(Some)
}

/// `signal:` a dialect's name, or `none`.
fn signal<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SignalSetting>, D::Error> {
    d.deserialize_str(Text {
        expecting: "a signal (ownership, nack, overloaded, pushback, retry-after, sre, none)",
        check: |v| {
            let mut names: Vec<&str> = Signal::ALL.iter().map(|s| s.name()).collect();
            names.push("none");
            word(v, "signal", &names)?;
            Ok(Signal::parse(v).map_or(SignalSetting::None, SignalSetting::On))
        },
    })
    .map(Some)
}

/// A real number from `lo` to `hi`.
fn within(v: f64, lo: f64, hi: f64, what: &str) -> Result<f64, String> {
    if v.is_finite() && (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(format!(
            "{what} must be a number from {lo} to {hi}, got {v}"
        ))
    }
}

/// The largest quota or cost accepted.
const MAX_TOKENS_WRITTEN: u32 = 1_000_000;

/// A policy field holding a whole number from `lo` to `hi` of `unit`.
macro_rules! whole_field {
    ($($name:ident: $key:literal, $unit:literal, $lo:expr, $hi:expr;)*) => {$(
        fn $name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
            yaml::number(
                d,
                concat!("a whole number of ", $unit),
                concat!($key, " needs a whole number of ", $unit),
                |v| yaml::whole(v, $lo, $hi, $key),
            )
        }
    )*};
}

/// A policy field holding a real number from `lo` to `hi`.
macro_rules! real_field {
    ($($name:ident: $key:literal, $what:literal, $lo:literal, $hi:literal;)*) => {$(
        fn $name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
            yaml::number(
                d,
                $what,
                concat!($key, " needs ", $what),
                |v| within(v, $lo, $hi, $key),
            )
        }
    )*};
}

whole_field! {
    hedge_attempts: "max_attempts", "attempts", 1, HedgeConfig::MAX_ATTEMPTS_CAP;
    breaker_consecutive: "consecutive", "failures", 0, MAX_TOKENS_WRITTEN;
    breaker_window: "window", "attempts", 1, BreakerConfig::MAX_WINDOW;
    breaker_min_calls: "min_calls", "attempts", 0, BreakerConfig::MAX_WINDOW;
    breaker_probes: "probes", "probes", 1, BreakerConfig::MAX_WINDOW;
    min_retry_concurrency: "min_retry_concurrency", "retries", 0, MAX_TOKENS_WRITTEN;
    max_tokens: "max_tokens", "tokens", 1, MAX_TOKENS_LIMIT;
    quota: "quota", "tokens", 0, MAX_TOKENS_WRITTEN;
    retry_cost: "retry_cost", "tokens", 1, MAX_TOKENS_WRITTEN;
    timeout_cost: "timeout_cost", "tokens", 1, MAX_TOKENS_WRITTEN;
}

real_field! {
    breaker_ratio: "failure_ratio", "a ratio from 0 to 1", 0.0, 1.0;
    percent: "budget_percent", "a percentage from 0 to 100", 0.0, 100.0;
    token_ratio: "token_ratio", "a ratio from 0 to 1", 0.0, 1.0;
}
