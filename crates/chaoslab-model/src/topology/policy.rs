//! Retry policies as the topology file writes them: presets (SPEC sections
//! 1 and 8), the fields a `policy:` map may set, and the fleet-wide policy
//! in force, which [`Policy::for_edge`] resolves into the plain
//! [`EdgePolicy`] the mechanism reads.
//!
//! A policy is made of orthogonal parts: whether retries happen at all
//! (R attempts), which **budget model** caps them and with what numbers,
//! and which **signal** forbids retrying an answer (ownership's claim
//! header, or another stack's dialect). A preset sets the parts that make
//! a stack's behaviour and keeps the rest: R, the backoff, the timeouts and
//! the deadline rule are the experiment's, so every preset is compared at
//! the same R.
//!
//! | preset      | budget model                                  | signal        |
//! |-------------|-----------------------------------------------|---------------|
//! | `none`      | (no retries)                                  |               |
//! | `retry`     | none                                          |               |
//! | `budget`    | `window` with the topology's B, `min_per_sec`, `ttl` |        |
//! | `ownership` | `window` as `budget`                          | `ownership`   |
//! | `finagle`   | `window` 20%, 10/s, 10 s (Finagle's defaults) | `nack`        |
//! | `envoy`     | `concurrency` 20%, at least 3                 | `overloaded`  |
//! | `grpc`      | `tokens` 10, 0.1 per success; R capped at 5   | `pushback`    |
//! | `aws`       | `quota` 500, retry 5, timeout 10              | `retry-after` |
//! | `aws-2026`  | `quota` 500, transient 14, throttling 5       | `retry-after` |
//! | `sre`       | `window` 10%, 10 s; R capped at 3; adaptive throttling | `sre` |
//!
//! Each of these retries every error (`retry_on` [`RetryOn::ANY`]). The
//! mesh presets (SPEC section 17) retry only what their retrier's
//! documented default retries, and set R where that default sets it:
//!
//! | preset        | R | retry_on | budget | source |
//! |---------------|---|----------|--------|--------|
//! | `istio`       | 3 | `connect-failure, refused-stream, unavailable, cancelled, retriable-status-codes [503]`; 25 ms backoff | none | Istio's implicit retry policy (no VirtualService `retries`) |
//! | `linkerd`     | 2 | statuses 500-599 | none | Linkerd 2.16 `retry.linkerd.io/http: 5xx`, `retry.linkerd.io/limit: 1` |
//! | `gateway-api` | the topology's | 500, 502, 503, 504 | none | HTTPRoute `retry` (GEP-1731): the codes every implementation must support |
//!
//! ```
//! use chaoslab_model::topology::{Policy, Preset};
//!
//! let mut p = Policy::default();
//! p.apply_preset(Preset::Grpc);
//! p.attempts = 8;
//! let e = p.for_edge(&Default::default());
//! assert_eq!(e.attempts, 5); // gRPC clamps maxAttempts to 5
//! assert_eq!(e.budget.unwrap().name(), "tokens");
//! assert_eq!(p.mode_name(), "grpc");
//! ```

use std::time::Duration;

use error_ownership::breaker::BreakerConfig;
use error_ownership::conditions::RetryOn;
use error_ownership::edge_budget::BudgetModel;
use error_ownership::hedge::HedgeConfig;
use error_ownership::outlier::OutlierConfig;
use error_ownership::policy::EdgePolicy;
use error_ownership::policy::Lb;
use error_ownership::quota::QuotaCosts;
use error_ownership::signal::Signal;
use error_ownership::throttle::ThrottleConfig;
use error_ownership::tokens::MAX_ATTEMPTS_CAP;

/// Which budget model caps retries, and whose numbers it runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BudgetKind {
    /// `window` with the policy's B, `min_per_sec` and `ttl`.
    Window,
    /// `window` with Finagle's defaults (the `finagle` preset).
    Finagle,
    /// `concurrency` with the policy's `budget_percent` and
    /// `min_retry_concurrency`.
    Concurrency,
    /// `tokens` with the policy's `max_tokens` and `token_ratio`.
    Tokens,
    /// `quota` with the policy's `quota`, `retry_cost` and `timeout_cost`.
    Quota,
    /// `quota` with the November 2026 costs (the `aws-2026` preset).
    Aws2026,
    /// `window` with the SRE book's 10% (the `sre` preset).
    Sre,
}

impl BudgetKind {
    /// The kinds `budget_model:` may name, with their words.
    pub const WRITTEN: [(&'static str, BudgetKind); 4] = [
        ("window", BudgetKind::Window),
        ("concurrency", BudgetKind::Concurrency),
        ("tokens", BudgetKind::Tokens),
        ("quota", BudgetKind::Quota),
    ];

    /// Parses a `budget_model:` word.
    pub fn parse(word: &str) -> Option<BudgetKind> {
        BudgetKind::WRITTEN
            .into_iter()
            .find(|(w, _)| *w == word)
            .map(|(_, k)| k)
    }
}

/// `budget:` is a ratio or `off`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BudgetSetting {
    /// Retries may be this fraction of first attempts.
    Ratio(f64),
    /// No budget.
    Off,
}

/// `breaker:` `on` (the defaults), `off`, or a map of its numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BreakerSetting {
    /// A breaker with these numbers.
    On(BreakerConfig),
    /// No breaker.
    Off,
}

/// `throttle:` `on` (the SRE book's numbers), `off`, or a map of them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ThrottleSetting {
    /// Adaptive throttling with these numbers.
    On(ThrottleConfig),
    /// No throttling.
    Off,
}

/// `hedge:` a map of gRPC A6's hedging numbers, or `off`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HedgeSetting {
    /// Hedge with these numbers.
    On(HedgeConfig),
    /// No hedging.
    Off,
}

/// `outlier:` `on` (Envoy's defaults), `off`, or a map of its numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OutlierSetting {
    /// Outlier detection with these numbers.
    On(OutlierConfig),
    /// None.
    Off,
}

/// `signal:` one of [`Signal`]'s words, or `none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignalSetting {
    /// Read this dialect (`ownership` turns ownership on).
    On(Signal),
    /// Read no dialect: every error is retried.
    None,
}

/// Policy fields as written: the fleet `policy:` or an edge's `policy:`
/// override. Every field is optional; unset fields fall back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PolicyFields {
    /// `preset:`.
    pub preset: Option<Preset>,
    /// `attempts:` (first attempt included; 1 means no retries).
    pub attempts: Option<u32>,
    /// `budget:`.
    pub budget: Option<BudgetSetting>,
    /// `min_per_sec:`.
    pub min_per_sec: Option<f64>,
    /// `ttl:`.
    pub ttl: Option<Duration>,
    /// `backoff:`.
    pub backoff: Option<Duration>,
    /// `timeout:`.
    pub timeout: Option<Duration>,
    /// `deadline:` `Some(true)` for `propagate`, `Some(false)` for `off`.
    pub deadline: Option<bool>,
    /// `budget_model:`.
    pub budget_model: Option<BudgetKind>,
    /// `signal:`.
    pub signal: Option<SignalSetting>,
    /// `budget_percent:` (concurrency), 0..=100.
    pub budget_percent: Option<f64>,
    /// `min_retry_concurrency:` (concurrency).
    pub min_retry_concurrency: Option<u32>,
    /// `max_tokens:` (tokens), 1..=1000.
    pub max_tokens: Option<u32>,
    /// `token_ratio:` (tokens), 0..=1.
    pub token_ratio: Option<f64>,
    /// `quota:` (quota): tokens at the start.
    pub quota: Option<u32>,
    /// `retry_cost:` (quota): a retry after an error.
    pub retry_cost: Option<u32>,
    /// `timeout_cost:` (quota): a retry after a timeout.
    pub timeout_cost: Option<u32>,
    /// `breaker:`.
    pub breaker: Option<BreakerSetting>,
    /// `throttle:`.
    pub throttle: Option<ThrottleSetting>,
    /// `hedge:`.
    pub hedge: Option<HedgeSetting>,
    /// `outlier:` (boxed, as `retry_on`: a scenario action stays small).
    pub outlier: Option<Box<OutlierSetting>>,
    /// `lb:` how an edge spreads its attempts over the callee's replicas.
    pub lb: Option<Lb>,
    /// `retry_other_host:` a retry goes to a replica this call has not
    /// tried while one is left.
    pub retry_other_host: Option<bool>,
    /// `retry_on:` which failures are retried (Envoy's tokens).
    pub retry_on: Option<Box<RetryOn>>,
}

impl PolicyFields {
    /// Whether no field is set.
    pub fn is_empty(&self) -> bool {
        *self == PolicyFields::default()
    }
}

/// The fleet-wide policy in force: the mode (which a preset sets) and the
/// numbers the modes use (which a preset keeps).
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// What a preset sets: retries, a budget and its model, ownership,
    /// another stack's dialect, throttling. Switching the preset switches
    /// this and keeps every number below.
    pub mode: Mode,
    /// The throttle's K and window, kept when the preset changes.
    pub throttle_config: ThrottleConfig,
    /// R: attempts per call, first included.
    pub attempts: u32,
    /// B: the budget ratio, `None` for `budget: off`.
    pub budget: Option<f64>,
    /// Retries per second always allowed.
    pub min_per_sec: f64,
    /// How long a budget deposit lives.
    pub ttl: Duration,
    /// The concurrency budget's percent of open requests.
    pub budget_percent: f64,
    /// The concurrency budget's floor.
    pub min_retry_concurrency: u32,
    /// The token bucket's size.
    pub max_tokens: u32,
    /// What a success earns the token bucket.
    pub token_ratio: f64,
    /// The quota's numbers (`quota` model).
    pub quota: QuotaCosts,
    /// Backoff base (full jitter when > 0).
    pub backoff: Duration,
    /// Per-attempt timeout.
    pub timeout: Duration,
    /// `deadline: propagate` (true) or `off` (false, the default): whether
    /// each call carries the time its caller has left (SPEC section 7).
    /// Independent of the preset: switching the mode keeps it.
    pub deadline: bool,
    /// A circuit breaker on every edge, if any. Independent of the
    /// preset: switching the mode keeps it.
    pub breaker: Option<BreakerConfig>,
    /// gRPC A6 hedging on every edge, if any (SPEC section 15);
    /// independent of the preset like the breaker.
    pub hedge: Option<HedgeConfig>,
    /// Outlier detection on every edge, if any (SPEC section 17);
    /// independent of the preset like the breaker.
    pub outlier: Option<OutlierConfig>,
    /// How edges spread attempts over a callee's replicas.
    pub lb: Lb,
    /// Whether a retry avoids the replicas its call already tried (Envoy's
    /// `previous_hosts`); on by default.
    pub retry_other_host: bool,
}

impl Default for Policy {
    fn default() -> Self {
        let mut p = Policy {
            mode: Preset::Ownership.mode(),
            throttle_config: ThrottleConfig::SRE,
            attempts: 2,
            budget: Some(0.1),
            min_per_sec: 0.0,
            ttl: Duration::from_secs(10),
            budget_percent: 20.0,
            min_retry_concurrency: 3,
            max_tokens: 10,
            token_ratio: 0.1,
            quota: QuotaCosts::STANDARD,
            backoff: Duration::ZERO,
            timeout: Duration::from_secs(1),
            deadline: false,
            breaker: None,
            hedge: None,
            outlier: None,
            lb: Lb::RoundRobin,
            retry_other_host: true,
        };
        p.apply_preset(Preset::Ownership);
        p
    }
}

impl Policy {
    /// Switches the mode to a preset's, keeping R, B and the rest.
    pub fn apply_preset(&mut self, preset: Preset) {
        self.mode = preset.mode();
    }

    /// The preset whose mode is in force, or `None` for a mix that no
    /// preset names (e.g. ownership without a budget).
    pub fn preset(&self) -> Option<Preset> {
        let now = self.mode;
        Preset::every().find(|p| {
            let m = p.mode();
            // Without retries, or without a budget, the model and the
            // signal do not matter to the lab's own presets.
            m == now
                || (!m.retries && !now.retries)
                || (m.retries
                    && !m.budget_on
                    && now.retries
                    && !now.budget_on
                    && !now.ownership
                    && now.signal.is_none()
                    && !now.throttle
                    && (now.retry_on, now.attempts, now.backoff)
                        == (m.retry_on, m.attempts, m.backoff))
        })
    }

    /// R as an edge without overrides runs it: the topology's, or the one
    /// the preset's retrier sets (Istio's 3).
    pub fn effective_attempts(&self) -> u32 {
        self.mode.attempts.unwrap_or(self.attempts)
    }

    /// A short name for the mode: the preset's, or the parts spelled out
    /// (`retry+ownership`, `retry+tokens+nack`).
    pub fn mode_name(&self) -> String {
        if let Some(p) = self.preset() {
            return p.name().to_string();
        }
        let mut parts = vec![];
        if self.mode.retries {
            parts.push("retry");
        }
        if self.mode.budget_on {
            parts.push(match self.mode.model {
                BudgetKind::Window => "budget",
                _ => self.budget_model().map_or("budget", |m| m.name()),
            });
        }
        if self.mode.ownership {
            parts.push("ownership");
        }
        if let Some(s) = self.mode.signal {
            parts.push(s.name());
        }
        if self.mode.throttle {
            parts.push("throttle");
        }
        if !self.mode.retry_on.is_any() {
            parts.push("conditions");
        }
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join("+")
        }
    }

    /// [`mode_name`](Self::mode_name), with `+breaker` when edges run a
    /// circuit breaker and `+outlier` when they run outlier detection: the
    /// name reports and tables print.
    pub fn name(&self) -> String {
        let mut name = self.mode_name();
        if self.breaker.is_some() {
            name.push_str("+breaker");
        }
        if self.outlier.is_some() {
            name.push_str("+outlier");
        }
        name
    }

    /// The budget model with its numbers, if a budget is on (a window with
    /// `budget: off` is none).
    pub fn budget_model(&self) -> Option<BudgetModel> {
        if !self.mode.budget_on {
            return None;
        }
        Some(match self.mode.model {
            BudgetKind::Window => BudgetModel::Window {
                ratio: self.budget?,
                min_per_sec: self.min_per_sec,
                ttl: self.ttl,
            },
            BudgetKind::Finagle => BudgetModel::FINAGLE,
            BudgetKind::Concurrency => BudgetModel::Concurrency {
                percent: self.budget_percent,
                min: self.min_retry_concurrency,
            },
            BudgetKind::Tokens => BudgetModel::Tokens {
                max: self.max_tokens,
                ratio: self.token_ratio,
            },
            BudgetKind::Quota => BudgetModel::Quota(self.quota),
            BudgetKind::Aws2026 => BudgetModel::AWS_2026,
            BudgetKind::Sre => BudgetModel::SRE,
        })
    }

    /// Applies explicit fields (a `policy:` map, a scenario step): the
    /// preset first, then each field over it.
    pub fn apply_fields(&mut self, f: &PolicyFields) {
        if let Some(p) = f.preset {
            self.apply_preset(p);
        }
        if let Some(a) = f.attempts {
            self.attempts = a;
            self.mode.attempts = None;
        }
        if let Some(b) = f.budget {
            self.budget = match b {
                BudgetSetting::Ratio(r) => Some(r),
                BudgetSetting::Off => None,
            };
        }
        if let Some(m) = f.min_per_sec {
            self.min_per_sec = m;
        }
        if let Some(t) = f.ttl {
            self.ttl = t;
        }
        if let Some(b) = f.backoff {
            self.backoff = b;
            self.mode.backoff = None;
        }
        if let Some(r) = &f.retry_on {
            self.mode.retry_on = **r;
        }
        if let Some(t) = f.timeout {
            self.timeout = t;
        }
        if let Some(d) = f.deadline {
            self.deadline = d;
        }
        if let Some(k) = f.budget_model {
            self.mode.model = k;
            self.mode.budget_on = true;
        }
        match f.signal {
            Some(SignalSetting::On(Signal::Ownership)) => {
                self.mode.ownership = true;
                self.mode.signal = None;
            }
            Some(SignalSetting::On(s)) => {
                self.mode.ownership = false;
                self.mode.signal = Some(s);
            }
            Some(SignalSetting::None) => {
                self.mode.ownership = false;
                self.mode.signal = None;
            }
            None => {}
        }
        self.budget_percent = f.budget_percent.unwrap_or(self.budget_percent);
        self.min_retry_concurrency = f
            .min_retry_concurrency
            .unwrap_or(self.min_retry_concurrency);
        self.max_tokens = f.max_tokens.unwrap_or(self.max_tokens);
        self.token_ratio = f.token_ratio.unwrap_or(self.token_ratio);
        if let Some(q) = f.quota {
            self.quota.initial = q;
        }
        if let Some(c) = f.retry_cost {
            self.quota.transient = c;
            self.quota.throttling = c;
        }
        if let Some(c) = f.timeout_cost {
            self.quota.timeout = c;
        }
        if let Some(b) = f.breaker {
            self.breaker = match b {
                BreakerSetting::On(cfg) => Some(cfg),
                BreakerSetting::Off => None,
            };
        }
        match f.throttle {
            Some(ThrottleSetting::On(cfg)) => {
                self.mode.throttle = true;
                self.throttle_config = cfg;
            }
            Some(ThrottleSetting::Off) => self.mode.throttle = false,
            None => {}
        }
        if let Some(h) = f.hedge {
            self.hedge = match h {
                HedgeSetting::On(cfg) => Some(cfg),
                HedgeSetting::Off => None,
            };
        }
        if let Some(o) = &f.outlier {
            self.outlier = match **o {
                OutlierSetting::On(cfg) => Some(cfg),
                OutlierSetting::Off => None,
            };
        }
        self.lb = f.lb.unwrap_or(self.lb);
        self.retry_other_host = f.retry_other_host.unwrap_or(self.retry_other_host);
    }

    /// How one edge balances over its callee's replicas: this policy with
    /// the edge's overrides.
    pub fn balancing(&self, overrides: &PolicyFields) -> (Lb, bool) {
        (
            overrides.lb.unwrap_or(self.lb),
            overrides.retry_other_host.unwrap_or(self.retry_other_host),
        )
    }

    /// The policy one edge runs: this policy with the edge's overrides.
    pub fn for_edge(&self, overrides: &PolicyFields) -> EdgePolicy {
        let mut p = self.clone();
        p.apply_fields(overrides);
        let budget = if p.mode.retries {
            p.budget_model()
        } else {
            None
        };
        let r = p.mode.attempts.unwrap_or(p.attempts);
        let mut attempts = if p.mode.retries { r.max(1) } else { 1 };
        if matches!(budget, Some(BudgetModel::Tokens { .. })) {
            attempts = attempts.min(MAX_ATTEMPTS_CAP);
        }
        if p.mode.model == BudgetKind::Sre && p.mode.budget_on {
            attempts = attempts.min(SRE_MAX_ATTEMPTS);
        }
        EdgePolicy {
            attempts,
            budget,
            ownership: p.mode.ownership,
            signal: p.mode.signal,
            backoff: p.mode.backoff.unwrap_or(p.backoff),
            timeout: p.timeout,
            deadline_propagate: p.deadline,
            retry_on: p.mode.retry_on,
            breaker: p.breaker,
            throttle: p.mode.throttle.then_some(p.throttle_config),
            hedge: p.hedge,
            outlier: p.outlier,
        }
    }
}

mod preset;
pub use preset::{
    Mode, Preset, ENVOY_BACKOFF, GATEWAY_API_RETRY_ON, ISTIO_ATTEMPTS, ISTIO_RETRY_ON,
    LINKERD_RETRY_ON, SRE_MAX_ATTEMPTS,
};

#[cfg(test)]
mod tests;
