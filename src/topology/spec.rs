//! Serde types of the YAML topology, exactly as SPEC section 3 writes it.
//!
//! These types are the file format and nothing more: every struct denies
//! unknown fields so a typo (`eror_rate:`) is an error with a line and a
//! column, not a silently ignored key. Checks that concern one value alone
//! (a rate within 0..1, a positive rps, a non-negative duration, a valid
//! header name) run *inside* deserialization, so the parser reports them at
//! the offending scalar; the scalars shared with scenarios, and the parser
//! itself, are in [`crate::yaml`]. Checks that need the whole graph
//! (unknown dependencies, cycles, the entry) live in [`super::validate`].
//!
//! ```
//! use chaoslab::topology::spec::TopologySpec;
//! use chaoslab::yaml;
//!
//! let spec: TopologySpec = yaml::from_str(
//!     "name: tiny\nservices:\n  A: { calls: [B] }\n  B:\n",
//!     "tiny.yaml",
//! ).unwrap();
//! assert_eq!(spec.services.0.len(), 2);
//! let err = yaml::from_str::<TopologySpec>("name: x\nservics: {}\n", "x.yaml").unwrap_err();
//! assert!(err.to_string().starts_with("x.yaml:2:1: unknown field `servics`"), "{err}");
//! ```

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use super::{
    Arrival, BreakerSetting, BudgetKind, BudgetSetting, Fault, Phase, PolicyFields, Preset,
    SignalSetting, MAX_QUEUE, MAX_WORKERS,
};
use crate::ownership::breaker::BreakerConfig;
use crate::ownership::signal::Signal;
use crate::ownership::tokens::MAX_TOKENS_LIMIT;
use crate::ownership::{Attribution, DependencyMode};
use crate::yaml;

/// Re-exported from [`crate::yaml`], where it lives with the other scalars.
pub use crate::yaml::parse_duration;

/// The largest `attempts:` accepted: more is a typo, not a policy.
pub const MAX_ATTEMPTS: u32 = 100;
/// The largest `count:` accepted on a call.
pub const MAX_COUNT: u32 = 1000;

/// The whole topology file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologySpec {
    /// `name:` (required).
    pub name: String,
    /// `description:`: what the topology shows and what to expect.
    #[serde(default)]
    pub description: Option<String>,
    /// `ownership:`.
    #[serde(default)]
    pub ownership: OwnershipSpec,
    /// `policy:`: the fleet-wide default for every edge.
    #[serde(default)]
    pub policy: PolicySpec,
    /// `load:`.
    #[serde(default)]
    pub load: LoadSpec,
    /// `services:`, in file order.
    #[serde(default)]
    pub services: ServiceMap,
    /// `scenario:`, kept raw for the scenario module.
    #[serde(default)]
    pub scenario: Option<yaml::Value>,
}

/// `ownership:`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnershipSpec {
    /// `header:`, lower-cased and checked as an HTTP header name.
    #[serde(default, deserialize_with = "header_name")]
    pub header: Option<String>,
    /// `attribution:` simple | declared | learned.
    #[serde(default)]
    pub attribution: Option<Attribution>,
    /// `at_least_once:` (rule 5).
    #[serde(default)]
    pub at_least_once: Option<bool>,
}

/// `policy:`, fleet-wide or on one call.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    /// `preset:` none | retry | budget | ownership | finagle | envoy |
    /// grpc | aws | aws-2026.
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
    /// `signal:` ownership | nack | overloaded | pushback | retry-after | none.
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

fn breaker_consecutive<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    yaml::number(
        d,
        "a whole number of failures",
        "consecutive needs a whole number of failures",
        |v| yaml::whole(v, 0, MAX_TOKENS_WRITTEN, "consecutive"),
    )
}

fn breaker_ratio<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    yaml::number(
        d,
        "a ratio from 0 to 1",
        "failure_ratio needs a ratio from 0 to 1",
        |v| within(v, 0.0, 1.0, "failure_ratio"),
    )
}

fn breaker_window<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    yaml::number(
        d,
        "a whole number of attempts",
        "window needs a whole number of attempts",
        |v| yaml::whole(v, 1, BreakerConfig::MAX_WINDOW, "window"),
    )
}

fn breaker_min_calls<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    yaml::number(
        d,
        "a whole number of attempts",
        "min_calls needs a whole number of attempts",
        |v| yaml::whole(v, 0, BreakerConfig::MAX_WINDOW, "min_calls"),
    )
}

fn breaker_probes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    yaml::number(
        d,
        "a whole number of probes",
        "probes needs a whole number of probes",
        |v| yaml::whole(v, 1, BreakerConfig::MAX_WINDOW, "probes"),
    )
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
        }
    }
}

/// `load:`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSpec {
    /// `entry:` (default: the only service nobody calls).
    #[serde(default)]
    pub entry: Option<String>,
    /// `rps:` root requests per second (default 100).
    #[serde(default, deserialize_with = "yaml::rps")]
    pub rps: Option<f64>,
    /// `arrival:` constant | poisson.
    #[serde(default)]
    pub arrival: Option<Arrival>,
    /// `timeout:` the end user gives up after this (more than 0).
    #[serde(default, deserialize_with = "user_timeout")]
    pub timeout: Option<Duration>,
}

/// `services:`: every service, in the order the file lists them.
///
/// A duplicate name is kept (not rejected here) so validation can report
/// it with the line of the second listing.
#[derive(Debug, Clone, Default)]
pub struct ServiceMap(pub Vec<(String, ServiceSpec)>);

impl<'de> Deserialize<'de> for ServiceMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ServiceMap;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map from service names to services")
            }
            fn visit_unit<E: de::Error>(self) -> Result<ServiceMap, E> {
                Ok(ServiceMap::default())
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ServiceMap, A::Error> {
                let mut out = Vec::new();
                while let Some(name) = map.next_key::<String>()? {
                    // `G:` with nothing after it is a leaf with defaults.
                    let spec: Option<ServiceSpec> = map.next_value()?;
                    out.push((name, spec.unwrap_or_default()));
                }
                Ok(ServiceMap(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// One service.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceSpec {
    /// `calls:` bare names or call maps, in order.
    #[serde(default)]
    pub calls: Vec<CallSpec>,
    /// `parallel:` start all calls at once.
    #[serde(default)]
    pub parallel: bool,
    /// `capacity:` requests per second before it sheds with 503.
    #[serde(default, deserialize_with = "yaml::capacity")]
    pub capacity: Option<f64>,
    /// `context: dropped`.
    #[serde(default)]
    pub context: Option<ContextSpec>,
    /// `ownership: false` turns the middleware off for this service.
    #[serde(default = "yes")]
    pub ownership: bool,
    /// `url:` an outside service, called over plain HTTP.
    #[serde(default, deserialize_with = "http_url")]
    pub url: Option<String>,
    /// `fault:`.
    #[serde(default)]
    pub fault: FaultSpec,
    /// `work:` simulated service time.
    #[serde(default, deserialize_with = "yaml::duration")]
    pub work: Option<Duration>,
    /// `workers:` requests in service at once (1 or more).
    #[serde(default, deserialize_with = "workers")]
    pub workers: Option<u32>,
    /// `queue:` requests waiting for a worker (0..=1,000,000); only with
    /// `workers`.
    #[serde(default, deserialize_with = "queue")]
    pub queue: Option<u32>,
    /// `cancel:` skip queued work whose caller has gone; only with
    /// `workers`.
    #[serde(default)]
    pub cancel: Option<bool>,
}

impl Default for ServiceSpec {
    fn default() -> Self {
        ServiceSpec {
            calls: Vec::new(),
            parallel: false,
            capacity: None,
            context: None,
            ownership: true,
            url: None,
            fault: FaultSpec::default(),
            work: None,
            workers: None,
            queue: None,
            cancel: None,
        }
    }
}

fn yes() -> bool {
    true
}

/// `context:`: the only value is `dropped`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContextSpec {
    /// The service loses the link between its inbound request and its
    /// outbound calls (rule 4).
    Dropped,
}

/// `fault:`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// `error_rate:` 0..=1.
    #[serde(default, deserialize_with = "yaml::rate")]
    pub error_rate: Option<f64>,
    /// `phase:` before | after.
    #[serde(default)]
    pub phase: Option<Phase>,
    /// `latency:` added to every request.
    #[serde(default, deserialize_with = "yaml::duration")]
    pub latency: Option<Duration>,
    /// `status:` of an injected error, 100..=599 (default 500).
    #[serde(default, deserialize_with = "yaml::status")]
    pub status: Option<u16>,
    /// `down:` listener closed.
    #[serde(default)]
    pub down: Option<bool>,
}

impl FaultSpec {
    /// The fault with defaults filled in.
    pub fn to_fault(&self) -> Fault {
        let d = Fault::default();
        Fault {
            error_rate: self.error_rate.unwrap_or(d.error_rate),
            phase: self.phase.unwrap_or(d.phase),
            latency: self.latency.unwrap_or(d.latency),
            status: self.status.unwrap_or(d.status),
            down: self.down.unwrap_or(d.down),
        }
    }
}

/// One entry of `calls:`: a bare name, or
/// `{ to, mode, count, policy }`.
#[derive(Debug, Clone, PartialEq)]
pub struct CallSpec {
    /// The callee.
    pub to: String,
    /// fail-close (default) or fail-open.
    pub mode: DependencyMode,
    /// Calls per request (default 1).
    pub count: u32,
    /// Per-edge policy overrides.
    pub policy: PolicyFields,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallMap {
    to: String,
    #[serde(default)]
    mode: DependencyMode,
    #[serde(default, deserialize_with = "count")]
    count: Option<u32>,
    #[serde(default)]
    policy: PolicySpec,
}

impl<'de> Deserialize<'de> for CallSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CallSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a service name or a map { to, mode, count, policy }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<CallSpec, E> {
                Ok(CallSpec {
                    to: v.to_string(),
                    mode: DependencyMode::FailClose,
                    count: 1,
                    policy: PolicyFields::default(),
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<CallSpec, A::Error> {
                let m = CallMap::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(CallSpec {
                    to: m.to,
                    mode: m.mode,
                    count: m.count.unwrap_or(1),
                    policy: m.policy.to_fields(),
                })
            }
        }
        d.deserialize_any(V)
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

/// `workers:` a whole number from 1 to [`MAX_WORKERS`] (also a scenario's
/// `set:` step).
pub(crate) fn workers<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    yaml::number(
        d,
        "a number of workers (requests in service at once)",
        "workers needs a whole number of requests in service at once",
        |v| {
            if v < 1.0 {
                return Err(format!(
                    "workers must be at least 1, got {v}: a service with no workers never serves a request (leave workers out for no limit)"
                ));
            }
            yaml::whole(v, 1, MAX_WORKERS, "workers")
        },
    )
}

/// `queue:` a whole number from 0 to [`MAX_QUEUE`] (also a scenario's
/// `set:` step).
pub(crate) fn queue<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    yaml::number(
        d,
        "a number of requests waiting for a worker",
        "queue needs a whole number of requests waiting for a worker",
        |v| {
            yaml::whole(v, 0, MAX_QUEUE, "queue").map_err(|e| {
                format!("{e}: it counts requests waiting for a worker (0: none wait, a request that finds every worker busy is shed)")
            })
        },
    )
}

/// `load.timeout`: a duration of more than 0.
fn user_timeout<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    struct V;
    impl V {
        fn check<E: de::Error>(s: &str) -> Result<Duration, E> {
            let t = yaml::parse_duration(s).map_err(E::custom)?;
            if t.is_zero() {
                return Err(E::custom(format!(
                    "load.timeout must be more than 0, got `{s}`: it is how long the end user waits before giving up (leave it out to wait for every answer)"
                )));
            }
            Ok(t)
        }
    }
    impl<'de> Visitor<'de> for V {
        type Value = Duration;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a duration such as 5s or 2500ms")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Duration, E> {
            V::check(v)
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Duration, E> {
            V::check(&v.to_string())
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
            V::check(&v.to_string())
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
            V::check(&v.to_string())
        }
    }
    d.deserialize_any(V).map(Some)
}

fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    yaml::number(
        d,
        "a number of calls per request",
        "count needs a whole number of calls per request",
        |v| yaml::whole(v, 1, MAX_COUNT, "count"),
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
    let names: Vec<&str> = Preset::ALL.iter().map(|p| p.name()).collect();
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
        expecting: "a signal (ownership, nack, overloaded, pushback, retry-after, none)",
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

fn percent<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    yaml::number(
        d,
        "a percentage from 0 to 100",
        "budget_percent needs a percentage from 0 to 100",
        |v| within(v, 0.0, 100.0, "budget_percent"),
    )
}

fn token_ratio<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    yaml::number(
        d,
        "a ratio from 0 to 1",
        "token_ratio needs a ratio from 0 to 1",
        |v| within(v, 0.0, 1.0, "token_ratio"),
    )
}

/// The largest quota or cost accepted.
const MAX_TOKENS_WRITTEN: u32 = 1_000_000;

fn min_retry_concurrency<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    yaml::number(
        d,
        "a whole number of retries",
        "min_retry_concurrency needs a whole number of retries",
        |v| yaml::whole(v, 0, MAX_TOKENS_WRITTEN, "min_retry_concurrency"),
    )
}

fn max_tokens<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    yaml::number(
        d,
        "a whole number of tokens",
        "max_tokens needs a whole number of tokens",
        |v| yaml::whole(v, 1, MAX_TOKENS_LIMIT, "max_tokens"),
    )
}

fn quota<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    yaml::number(
        d,
        "a whole number of tokens",
        "quota needs a whole number of tokens",
        |v| yaml::whole(v, 0, MAX_TOKENS_WRITTEN, "quota"),
    )
}

fn retry_cost<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    yaml::number(
        d,
        "a whole number of tokens",
        "retry_cost needs a whole number of tokens",
        |v| yaml::whole(v, 1, MAX_TOKENS_WRITTEN, "retry_cost"),
    )
}

fn timeout_cost<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    yaml::number(
        d,
        "a whole number of tokens",
        "timeout_cost needs a whole number of tokens",
        |v| yaml::whole(v, 1, MAX_TOKENS_WRITTEN, "timeout_cost"),
    )
}

/// A string checked by `check` at the scalar.
struct Text<T> {
    expecting: &'static str,
    check: fn(&str) -> Result<T, String>,
}

impl<'de, T> Visitor<'de> for Text<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expecting)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.check)(v).map_err(E::custom)
    }
}

/// `ownership.header`: lower-cased, and a valid HTTP header name.
fn header_name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    d.deserialize_str(Text {
        expecting: "an HTTP header name such as x-error-claim",
        check: |v| {
            let lower = v.trim().to_ascii_lowercase();
            match http::HeaderName::from_bytes(lower.as_bytes()) {
                Ok(_) => Ok(lower),
                Err(_) => Err(format!(
                    "`{v}` is not a valid HTTP header name (letters, digits and - only, e.g. x-error-claim)"
                )),
            }
        },
    })
    .map(Some)
}

/// `url:` an outside service, reached over plain `http://`.
fn http_url<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    d.deserialize_str(Text {
        expecting: "an http:// URL",
        check: |v| {
            let v = v.trim();
            let rest = v.strip_prefix("http://").ok_or_else(|| {
                format!("url `{v}` must start with http:// (only plain HTTP is supported)")
            })?;
            let host = rest.split(['/', '?', '#']).next().unwrap_or("");
            if host.is_empty() || v.chars().any(char::is_whitespace) {
                return Err(format!(
                    "url `{v}` must be http://HOST[:PORT][/PATH] with no spaces"
                ));
            }
            Ok(v.to_string())
        },
    })
    .map(Some)
}
