//! The presets: each stack's retrying as a preset sets it (the table in
//! the module above), and the mesh presets' documented defaults.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use error_ownership::conditions::{Condition, RetryOn};
use error_ownership::signal::Signal;

use super::BudgetKind;

/// The SRE book's per-request retry budget: at most three attempts.
pub const SRE_MAX_ATTEMPTS: u32 = 3;

/// A policy preset: the *mode* of retrying.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preset {
    /// No retries at all.
    None,
    /// Naive retries: `attempts`, no budget, no ownership.
    Retry,
    /// Retries within a budget.
    Budget,
    /// Retries within a budget, only of claimed or unmarked errors.
    Ownership,
    /// Finagle: a 20% window budget with 10 retries a second, nacks.
    Finagle,
    /// Envoy: a retry concurrency budget, `x-envoy-overloaded`.
    Envoy,
    /// gRPC: A6 retry throttling, `grpc-retry-pushback-ms`.
    Grpc,
    /// AWS SDK standard mode: a retry quota, `Retry-After`.
    Aws,
    /// AWS SDK defaults since November 2026: a dearer quota, `Retry-After`.
    #[serde(rename = "aws-2026")]
    Aws2026,
    /// Google SRE: client-side adaptive throttling, a 10% per-client retry
    /// budget, at most 3 attempts, the retry counter in the request.
    Sre,
    /// Istio's implicit retries (no VirtualService `retries`): 3 attempts
    /// on a refused connection or a 503, 25 ms backoff, no budget.
    Istio,
    /// Linkerd 2.16+: `retry.linkerd.io/http: 5xx`, `limit: 1`.
    Linkerd,
    /// Gateway API HTTPRoute `retry` (GEP-1731): 500, 502, 503, 504.
    #[serde(rename = "gateway-api")]
    GatewayApi,
}

/// Istio's implicit retry conditions (pilot's default `RetryPolicy`:
/// `connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes`
/// with 503 retriable).
pub const ISTIO_RETRY_ON: RetryOn = RetryOn::EMPTY
    .with(Condition::ConnectFailure)
    .with(Condition::RefusedStream)
    .with(Condition::Unavailable)
    .with(Condition::Cancelled)
    .with_status(503);

/// Istio's implicit attempts: 2 retries, 3 attempts in all.
pub const ISTIO_ATTEMPTS: u32 = 3;

/// Envoy's default backoff base, which Istio's implicit retries keep.
pub const ENVOY_BACKOFF: Duration = Duration::from_millis(25);

/// Linkerd's `retry.linkerd.io/http: 5xx`: the statuses 500 to 599 (no
/// connection errors: the balancer handles those before a response).
pub const LINKERD_RETRY_ON: RetryOn = {
    let mut r = RetryOn::EMPTY;
    let mut c = 500;
    while c < 600 {
        r = r.with_status(c);
        c += 1;
    }
    r
};

/// The Gateway API's retriable codes every implementation must support.
pub const GATEWAY_API_RETRY_ON: RetryOn = RetryOn::EMPTY
    .with_status(500)
    .with_status(502)
    .with_status(503)
    .with_status(504);

impl Preset {
    /// The presets of the mesh retriers (SPEC section 17), which run
    /// under their own names and are not in [`Preset::ALL`] (the set
    /// `compare --policies all`, `check` and the dashboard's cycle run).
    pub const MESH: [Preset; 3] = [Preset::Istio, Preset::Linkerd, Preset::GatewayApi];

    /// Every preset: [`Preset::ALL`], then [`Preset::MESH`].
    pub fn every() -> impl Iterator<Item = Preset> {
        Preset::ALL.into_iter().chain(Preset::MESH)
    }

    /// All presets: the lab's four first (keys `1`-`4`), then the
    /// industry's, in SPEC section 8's order.
    pub const ALL: [Preset; 10] = [
        Preset::None,
        Preset::Retry,
        Preset::Budget,
        Preset::Ownership,
        Preset::Finagle,
        Preset::Envoy,
        Preset::Grpc,
        Preset::Aws,
        Preset::Aws2026,
        Preset::Sre,
    ];

    /// The name used in YAML, on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Preset::None => "none",
            Preset::Retry => "retry",
            Preset::Budget => "budget",
            Preset::Ownership => "ownership",
            Preset::Finagle => "finagle",
            Preset::Envoy => "envoy",
            Preset::Grpc => "grpc",
            Preset::Aws => "aws",
            Preset::Aws2026 => "aws-2026",
            Preset::Sre => "sre",
            Preset::Istio => "istio",
            Preset::Linkerd => "linkerd",
            Preset::GatewayApi => "gateway-api",
        }
    }

    /// Parses a preset name.
    pub fn parse(s: &str) -> Option<Preset> {
        Preset::every().find(|p| p.name() == s)
    }

    /// The parts of a policy this preset sets.
    pub fn mode(self) -> Mode {
        let lab = |retries, budget_on, ownership| Mode {
            retries,
            budget_on,
            ownership,
            model: BudgetKind::Window,
            signal: None,
            throttle: false,
            retry_on: RetryOn::ANY,
            attempts: None,
            backoff: None,
        };
        let industry = |model, signal| Mode {
            retries: true,
            budget_on: true,
            ownership: false,
            model,
            signal: Some(signal),
            throttle: false,
            retry_on: RetryOn::ANY,
            attempts: None,
            backoff: None,
        };
        let mesh = |retry_on, attempts, backoff| Mode {
            retry_on,
            attempts,
            backoff,
            ..lab(true, false, false)
        };
        match self {
            Preset::None => lab(false, false, false),
            Preset::Retry => lab(true, false, false),
            Preset::Budget => lab(true, true, false),
            Preset::Ownership => lab(true, true, true),
            Preset::Finagle => industry(BudgetKind::Finagle, Signal::Nack),
            Preset::Envoy => industry(BudgetKind::Concurrency, Signal::Overloaded),
            Preset::Grpc => industry(BudgetKind::Tokens, Signal::Pushback),
            Preset::Aws => industry(BudgetKind::Quota, Signal::RetryAfter),
            Preset::Aws2026 => industry(BudgetKind::Aws2026, Signal::RetryAfter),
            Preset::Sre => Mode {
                throttle: true,
                ..industry(BudgetKind::Sre, Signal::Sre)
            },
            Preset::Istio => mesh(ISTIO_RETRY_ON, Some(ISTIO_ATTEMPTS), Some(ENVOY_BACKOFF)),
            Preset::Linkerd => mesh(LINKERD_RETRY_ON, Some(2), None),
            Preset::GatewayApi => mesh(GATEWAY_API_RETRY_ON, None, None),
        }
    }
}

/// The parts of a policy a preset sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mode {
    /// Retries on.
    pub retries: bool,
    /// A budget caps them.
    pub budget_on: bool,
    /// Unclaimed errors are not retried.
    pub ownership: bool,
    /// Which budget.
    pub model: BudgetKind,
    /// Another stack's don't-retry dialect.
    pub signal: Option<Signal>,
    /// Client-side adaptive throttling on every edge.
    pub throttle: bool,
    /// Which failures are retried at all.
    pub retry_on: RetryOn,
    /// R as the preset's retrier sets it, over the topology's (an explicit
    /// `attempts:` after the preset wins).
    pub attempts: Option<u32>,
    /// The backoff base the preset's retrier sets, likewise.
    pub backoff: Option<Duration>,
}
