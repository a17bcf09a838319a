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
//! use chaoslab_model::topology::spec::TopologySpec;
//! use chaoslab_model::yaml;
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

use super::{Arrival, Fault, Phase, PolicyFields, MAX_CLIENTS, MAX_QUEUE, MAX_WORKERS, MIN_THINK};
use crate::yaml;
use error_ownership::{Attribution, DependencyMode};

/// The `policy:` map lives beside, with its field checks.
pub use super::policy_spec::{parse_preset, BreakerSpec, Deadline, PolicySpec};

/// Re-exported from [`crate::yaml`], where it lives with the other scalars.
pub use crate::yaml::parse_duration;

/// The largest `attempts:` accepted: more is a typo, not a policy.
pub const MAX_ATTEMPTS: u32 = 100;
/// The largest `count:` accepted on a call.
pub const MAX_COUNT: u32 = 1000;
/// The largest `replicas:` accepted on a service.
pub const MAX_REPLICAS: u32 = 1000;

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
    /// `transport:` http1 | http2.
    #[serde(default)]
    pub transport: super::Transport,
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
    /// `entries:` many roots, each with its own rate and arrival (SPEC
    /// section 11); in place of `entry:` and `rps:`.
    #[serde(default)]
    pub entries: Option<Vec<EntrySpec>>,
    /// `clients:` a closed loop of this many clients in place of `rps:`
    /// (SPEC section 15).
    #[serde(default, deserialize_with = "clients")]
    pub clients: Option<u32>,
    /// `think:` each closed-loop client's pause between an answer and its
    /// next request (default 1s; the default of every entry's too).
    #[serde(default, deserialize_with = "think")]
    pub think: Option<Duration>,
}

/// One of `load.entries`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntrySpec {
    /// `entry:` the root service.
    pub entry: String,
    /// `rps:` its root requests per second (default 100).
    #[serde(default, deserialize_with = "yaml::rps")]
    pub rps: Option<f64>,
    /// `arrival:` constant | poisson (default: `load.arrival`).
    #[serde(default)]
    pub arrival: Option<Arrival>,
    /// `clients:` a closed loop in place of `rps:`.
    #[serde(default, deserialize_with = "clients")]
    pub clients: Option<u32>,
    /// `think:` its clients' think time (default: `load.think`).
    #[serde(default, deserialize_with = "think")]
    pub think: Option<Duration>,
}

/// `services:`: every service, in the order the file lists them.
///
/// A duplicate name is kept (not rejected here) so validation can report
/// it with the line of the second listing.
pub type ServiceMap = Listed<ServiceSpec>;

/// `endpoints:` of a service: every endpoint, in the order the file lists
/// them (SPEC section 11).
pub type EndpointMap = Listed<EndpointSpec>;

/// A YAML map kept in file order, duplicates and all: `name: {...}` or
/// `name:` alone (the defaults).
#[derive(Debug, Clone)]
pub struct Listed<T>(pub Vec<(String, T)>);

impl<T> Default for Listed<T> {
    fn default() -> Self {
        Listed(Vec::new())
    }
}

impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for Listed<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de> + Default> Visitor<'de> for V<T> {
            type Value = Listed<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map from names to their settings")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Listed<T>, E> {
                Ok(Listed::default())
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Listed<T>, A::Error> {
                let mut out = Vec::new();
                while let Some(name) = map.next_key::<String>()? {
                    // `G:` with nothing after it takes the defaults.
                    let spec: Option<T> = map.next_value()?;
                    out.push((name, spec.unwrap_or_default()));
                }
                Ok(Listed(out))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// One endpoint of a service: its own calls, parallelism, work and fault;
/// the service's capacity, middleware and replicas are shared.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointSpec {
    /// `calls:` bare names (`S` or `S/E`) or call maps, in order.
    #[serde(default)]
    pub calls: Vec<CallSpec>,
    /// `parallel:` start all calls at once.
    #[serde(default)]
    pub parallel: bool,
    /// `work:` its service time (default: the service's).
    #[serde(default, deserialize_with = "yaml::duration")]
    pub work: Option<Duration>,
    /// `fault:` its own fault.
    #[serde(default)]
    pub fault: FaultSpec,
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
    /// `concurrency:` adaptive concurrency (SPEC section 15).
    #[serde(default, deserialize_with = "super::concurrency::concurrency")]
    pub concurrency: Option<super::Concurrency>,
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
    /// `replicas:` listeners behind the service's name (1 or more); its
    /// workers, queue and capacity are per replica.
    #[serde(default, deserialize_with = "replicas")]
    pub replicas: Option<u32>,
    /// `endpoints:` (SPEC section 11); without it the service has one,
    /// `default`, made of its own `calls`, `parallel` and `work`.
    #[serde(default)]
    pub endpoints: Option<EndpointMap>,
    /// `errors:` the status of an error it causes and of one it passes up
    /// (SPEC section 17).
    #[serde(default)]
    pub errors: super::mesh::ErrorsSpec,
    /// `sidecar:` a real proxy carrying its calls (SPEC section 17).
    #[serde(default)]
    pub sidecar: Option<super::mesh::SidecarSpec>,
}

impl Default for ServiceSpec {
    fn default() -> Self {
        ServiceSpec {
            calls: Vec::new(),
            parallel: false,
            capacity: None,
            concurrency: None,
            context: None,
            ownership: true,
            url: None,
            fault: FaultSpec::default(),
            work: None,
            workers: None,
            queue: None,
            cancel: None,
            replicas: None,
            endpoints: None,
            errors: Default::default(),
            sidecar: None,
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
    /// `replicas:` the replicas the fault is on (0-based); all when unset.
    #[serde(default)]
    pub replicas: Option<Vec<u32>>,
    /// `endpoint:` the one endpoint the service's fault is on; all when
    /// unset.
    #[serde(default)]
    pub endpoint: Option<String>,
}

impl FaultSpec {
    /// The fault with defaults filled in.
    pub fn to_fault(&self) -> Fault {
        self.to_fault_of(Fault::default().status)
    }

    /// The fault with defaults filled in, for a service whose own errors
    /// answer `own` (`errors.own`): an injected error without a `status`
    /// answers that.
    pub fn to_fault_of(&self, own: u16) -> Fault {
        let d = Fault {
            status: own,
            ..Fault::default()
        };
        Fault {
            error_rate: self.error_rate.unwrap_or(d.error_rate),
            phase: self.phase.unwrap_or(d.phase),
            latency: self.latency.unwrap_or(d.latency),
            status: self.status.unwrap_or(d.status),
            down: self.down.unwrap_or(d.down),
            replicas: self.replicas.clone().map(|mut r| {
                r.sort_unstable();
                r.dedup();
                r
            }),
            endpoint: self.endpoint.clone(),
        }
    }
}

/// One entry of `calls:`: a bare name, or
/// `{ to, mode, count, p, policy }`.
#[derive(Debug, Clone, PartialEq)]
pub struct CallSpec {
    /// The callee.
    pub to: String,
    /// fail-close (default) or fail-open.
    pub mode: DependencyMode,
    /// Calls per request (default 1).
    pub count: u32,
    /// The share of requests that make the call, all its `count` (default
    /// 1: every request).
    pub p: f64,
    /// Per-edge policy overrides.
    pub policy: PolicyFields,
    /// `source:` where the call's policy was read, as `file:line` (what
    /// `chaoslab import` writes from a mesh's configuration; `lint` and
    /// its SARIF point there).
    pub source: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallMap {
    to: String,
    #[serde(default)]
    mode: DependencyMode,
    #[serde(default, deserialize_with = "count")]
    count: Option<u32>,
    #[serde(default, deserialize_with = "share")]
    p: Option<f64>,
    #[serde(default)]
    policy: PolicySpec,
    #[serde(default)]
    source: Option<String>,
}

impl<'de> Deserialize<'de> for CallSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CallSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a service name or a map { to, mode, count, p, policy }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<CallSpec, E> {
                Ok(CallSpec {
                    to: v.to_string(),
                    mode: DependencyMode::FailClose,
                    count: 1,
                    p: 1.0,
                    policy: PolicyFields::default(),
                    source: None,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<CallSpec, A::Error> {
                let m = CallMap::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(CallSpec {
                    to: m.to,
                    mode: m.mode,
                    count: m.count.unwrap_or(1),
                    p: m.p.unwrap_or(1.0),
                    policy: m.policy.to_fields(),
                    source: m.source,
                })
            }
        }
        d.deserialize_any(V)
    }
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

/// `clients:` closed-loop clients, 1 to [`MAX_CLIENTS`].
fn clients<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    yaml::number(
        d,
        "a number of closed-loop clients",
        "clients needs a whole number of closed-loop clients",
        |v| {
            yaml::whole(v, 1, MAX_CLIENTS, "clients").map_err(|e| {
                format!("{e}: each client sends its next request only after the answer to its last (leave clients out for open-loop load at `rps:`)")
            })
        },
    )
}

/// `think:` a closed-loop client's pause, [`MIN_THINK`] to an hour.
fn think<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    checked_duration(d, "a duration such as 100ms or 1s", |t, s| {
        if t < MIN_THINK || t > Duration::from_secs(3600) {
            return Err(format!(
                "think must be from 1ms to 1h, got `{s}`: it is each client's pause between an answer and its next request, and clients ÷ think is the rate they offer while answers are instant"
            ));
        }
        Ok(t)
    })
}

/// `load.timeout`: a duration of more than 0.
fn user_timeout<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    checked_duration(d, "a duration such as 5s or 2500ms", |t, s| {
        if t.is_zero() {
            return Err(format!(
                "load.timeout must be more than 0, got `{s}`: it is how long the end user waits before giving up (leave it out to wait for every answer)"
            ));
        }
        Ok(t)
    })
}

/// A duration, as written or as a bare number of seconds, then `check`ed
/// (given the duration and how it was written); `expecting` completes the
/// parser's "expected …".
fn checked_duration<'de, D: Deserializer<'de>>(
    d: D,
    expecting: &'static str,
    check: fn(Duration, &str) -> Result<Duration, String>,
) -> Result<Option<Duration>, D::Error> {
    struct V {
        expecting: &'static str,
        check: fn(Duration, &str) -> Result<Duration, String>,
    }
    impl V {
        fn read<E: de::Error>(&self, s: &str) -> Result<Duration, E> {
            let t = yaml::parse_duration(s).map_err(E::custom)?;
            (self.check)(t, s).map_err(E::custom)
        }
    }
    impl<'de> Visitor<'de> for V {
        type Value = Duration;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str(self.expecting)
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Duration, E> {
            self.read(v)
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Duration, E> {
            self.read(&v.to_string())
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
            self.read(&v.to_string())
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
            self.read(&v.to_string())
        }
    }
    d.deserialize_any(V { expecting, check }).map(Some)
}

fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    yaml::number(
        d,
        "a number of calls per request",
        "count needs a whole number of calls per request",
        |v| yaml::whole(v, 1, MAX_COUNT, "count"),
    )
}

/// `replicas:` listeners behind one service, 1 to [`MAX_REPLICAS`].
fn replicas<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    yaml::number(
        d,
        "a number of replicas",
        "replicas needs a whole number of listeners behind the service",
        |v| {
            if v == 0.0 {
                return Err("replicas must be at least 1: it counts the listeners behind the service's name (1 is a service without replicas)".into());
            }
            yaml::whole(v, 1, MAX_REPLICAS, "replicas")
        },
    )
}

/// A call's `p:` the share of requests that make it, 0 to 1.
fn share<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    yaml::number(
        d,
        "a share of requests between 0 and 1",
        "p needs the share of requests that make the call, between 0 and 1",
        |v| {
            if (0.0..=1.0).contains(&v) {
                Ok(v)
            } else {
                Err(format!(
                    "p must be the share of requests that make the call, between 0 and 1 (0.3: three requests in ten), got {v}"
                ))
            }
        },
    )
}

/// A string checked by `check` at the scalar.
pub(super) struct Text<T> {
    pub(super) expecting: &'static str,
    pub(super) check: fn(&str) -> Result<T, String>,
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

/// A URL the lab can call a service at: plain `http://HOST[:PORT][/PATH]`
/// (an outside service's `url:`, a node's `--peer`), trimmed.
pub fn check_http_url(v: &str) -> Result<String, String> {
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
}

/// `url:` an outside service, reached over plain `http://`.
fn http_url<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    d.deserialize_str(Text {
        expecting: "an http:// URL",
        check: check_http_url,
    })
    .map(Some)
}
