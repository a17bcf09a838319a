//! The server side: the lab's services run `tower-error-ownership`'s
//! layer, as any service adopting the crate would.
//!
//! [`layer`] builds it for one service of the fleet: the claim header the
//! topology names, the fleet's shared [`Settings`] (attribution and rule 5,
//! switched live from the dashboard), and a [`LabObserver`] that opens the
//! lab's own request context (the trace and the deadline, which the retry
//! client reads) and reports every answer to the fleet's counters.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderName, Request};
use tokio::time::Instant;
use tower_error_ownership::layer::Answer;
use tower_error_ownership::Settings;

use super::context::{self, RequestContext, Trace, TraceHeader as _};
use super::{Attempted, Observer, RetrySent, Served, ABANDONED};
use crate::observe::{Exchanged, Then, WireValue};
use crate::sidecar::retries::{ProxiedAttempt, ProxiedCalls};
use error_ownership::{Attribution, Claim, Classified};

/// The layer every service of the fleet runs.
pub type OwnershipLayer = tower_error_ownership::OwnershipLayer<LabObserver>;

/// A service's server-side state the lab reads: what it has learned,
/// whether it writes claims.
pub type ServerConfig = OwnershipLayer;

/// Settings a whole fleet shares and may change while it runs.
#[derive(Debug)]
pub struct OwnershipControl {
    settings: Arc<Settings>,
    /// How long the end user waits for a root request, µs; `u64::MAX`
    /// when it waits for every answer.
    root_timeout_us: AtomicU64,
    /// Whether the end user's deadline is propagated to the entry.
    root_deadline_propagated: AtomicBool,
}

impl OwnershipControl {
    /// New settings.
    pub fn new(attribution: Attribution, at_least_once: bool) -> OwnershipControl {
        OwnershipControl {
            settings: Arc::new(Settings::new(attribution, at_least_once)),
            root_timeout_us: AtomicU64::new(u64::MAX),
            root_deadline_propagated: AtomicBool::new(false),
        }
    }

    /// The claim settings every service's layer shares.
    pub fn settings(&self) -> &Arc<Settings> {
        &self.settings
    }

    /// The attribution mode in force.
    pub fn attribution(&self) -> Attribution {
        self.settings.attribution()
    }

    /// Changes the attribution mode.
    pub fn set_attribution(&self, a: Attribution) {
        self.settings.set_attribution(a);
    }

    /// Whether rule 5 is on.
    pub fn at_least_once(&self) -> bool {
        self.settings.at_least_once()
    }

    /// Turns rule 5 on or off.
    pub fn set_at_least_once(&self, on: bool) {
        self.settings.set_at_least_once(on);
    }

    /// How long the end user waits for a root request, if it gives up.
    pub fn root_timeout(&self) -> Option<Duration> {
        match self.root_timeout_us.load(Ordering::Relaxed) {
            u64::MAX => None,
            us => Some(Duration::from_micros(us)),
        }
    }

    /// Whether the end user's deadline is propagated to the entry.
    pub fn root_deadline_propagated(&self) -> bool {
        self.root_deadline_propagated.load(Ordering::Relaxed)
    }

    /// Sets the end user's patience (`load.timeout`): a request that opens
    /// a root request has that long before its caller gives up. The entry
    /// always knows it (late attempts are measured against it); with
    /// `propagated` it also acts on it, as on a deadline a caller
    /// propagated (`deadline: propagate`).
    pub fn set_root_deadline(&self, timeout: Option<Duration>, propagated: bool) {
        let us = timeout.map_or(u64::MAX, |t| {
            u64::try_from(t.as_micros()).unwrap_or(u64::MAX - 1)
        });
        self.root_timeout_us.store(us, Ordering::Relaxed);
        self.root_deadline_propagated
            .store(propagated, Ordering::Relaxed);
    }
}

impl Default for OwnershipControl {
    fn default() -> Self {
        OwnershipControl::new(Attribution::Declared, true)
    }
}

/// An invalid claim header name.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not a valid HTTP header name")]
pub struct BadHeaderName(pub String);

/// The layer for service number `service`, writing `header` (or, with
/// `enabled: false`, only observing, as for a service without the
/// middleware), sharing the fleet's `control` and root-id source, and
/// reporting to `observer`; counting the retries of its callers'
/// sidecars in `proxied` (see [`crate::sidecar::retries`]).
pub fn layer(
    service: usize,
    header: &str,
    enabled: bool,
    control: Arc<OwnershipControl>,
    observer: Arc<dyn Observer>,
    roots: Arc<AtomicU64>,
    proxied: Option<Arc<ProxiedCalls>>,
) -> Result<OwnershipLayer, BadHeaderName> {
    let name =
        HeaderName::from_bytes(header.as_bytes()).map_err(|_| BadHeaderName(header.into()))?;
    let layer = tower_error_ownership::OwnershipLayer::new()
        .header(name)
        .with_settings(control.settings.clone())
        .observer(LabObserver {
            service,
            control,
            observer,
            roots,
            proxied,
        });
    layer.set_enabled(enabled);
    Ok(layer)
}

/// The lab's side of the layer: it opens the lab's request context and
/// reports every answer to the fleet's counters.
pub struct LabObserver {
    service: usize,
    control: Arc<OwnershipControl>,
    observer: Arc<dyn Observer>,
    roots: Arc<AtomicU64>,
    /// The edges into it through a caller's sidecar, whose retries it
    /// counts as they arrive.
    proxied: Option<Arc<ProxiedCalls>>,
}

impl std::fmt::Debug for LabObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LabObserver")
            .field("service", &self.service)
            .finish_non_exhaustive()
    }
}

impl tower_error_ownership::Observer for LabObserver {
    type Tag = (RequestContext, Instant, Option<ProxiedAttempt>);

    /// Reads (or opens) the root trace and the deadline, and hands the
    /// context to the handler in the request's extensions.
    fn opened<B>(&self, req: &mut Request<B>) -> Self::Tag {
        let carried = context::Carried::of(req.headers());
        let sent = carried.deadline.and_then(context::deadline_from_value);
        let (trace, is_root) = match carried.trace.and_then(Trace::from_value) {
            Some(t) => (t, false),
            None => (
                Trace {
                    root: self.roots.fetch_add(1, Ordering::Relaxed),
                    depth: 0,
                },
                true,
            ),
        };
        let started = Instant::now();
        let (deadline, propagated) = deadline(&self.control, sent, is_root, started);
        let ctx = RequestContext::new(trace, is_root).with_deadline(deadline, propagated);
        req.extensions_mut().insert(ctx);
        let proxied = self.proxied_attempt(req.headers(), trace, is_root);
        if let Some(a) = proxied {
            // For the replica that serves it: which replica the proxy sent
            // a first attempt or a retry to.
            req.extensions_mut().insert(a);
        }
        (ctx, started, proxied)
    }

    /// Reports the answer; a request dropped before its answer (its
    /// caller's attempt timed out, or it disconnected) was received all
    /// the same, and is reported as abandoned, with no status and no claim.
    fn answered(&self, (ctx, started, proxied): Self::Tag, a: &Answer<'_>) {
        if let Some(p) = proxied {
            self.proxied_answered(p, started, a);
        }
        self.observer.served(&Served {
            service: self.service,
            trace: ctx.trace,
            is_root: ctx.is_root,
            status: a.status.unwrap_or(ABANDONED),
            claim: a.claim.map(|d| (d.claimed, d.reason)),
            own_fault: a.error && a.record.own_fault,
            dependency_failed: a.record.outbound.iter().any(|o| o.failed),
            elapsed: started.elapsed(),
        });
    }
}

impl LabObserver {
    /// An attempt through a caller's sidecar: a retry (the call seen
    /// before) is counted on its edge as the caller's client counts its
    /// own, by the caller's trace.
    fn proxied_attempt(
        &self,
        headers: &http::HeaderMap,
        trace: Trace,
        is_root: bool,
    ) -> Option<ProxiedAttempt> {
        let a = self.proxied.as_ref()?.arrived(self.service, headers)?;
        if a.is_retry() {
            self.observer.retry_sent(&RetrySent {
                service: a.caller,
                edge: a.edge,
                trace: (!is_root).then_some(Trace {
                    root: trace.root,
                    depth: trace.depth.saturating_sub(1),
                }),
            });
        }
        Some(a)
    }

    /// An attempt of a sidecar's answered: a retry is counted among its
    /// edge's attempts (the caller's client counted the call's first),
    /// and the wire tap is offered it as its callee answered it (the
    /// proxy's next move is its own).
    fn proxied_answered(&self, p: ProxiedAttempt, started: Instant, a: &Answer<'_>) {
        if p.is_retry() {
            let claim = match a.claim {
                Some(d) if d.claimed => Claim::Claimed,
                Some(_) => Claim::Unclaimed,
                None => Claim::Missing,
            };
            self.observer.attempted(&Attempted {
                service: p.caller,
                edge: p.edge,
                attempt: p.attempt,
                outcome: match a.status {
                    None => Classified::NoResponse,
                    Some(_) if a.error => Classified::Error { claim },
                    Some(_) => Classified::Success,
                },
                late: false,
                elapsed: started.elapsed(),
                timed_out: a.status.is_none(),
                cancelled: false,
            });
        }
        self.observer.exchanged(&Exchanged {
            service: p.caller,
            edge: p.edge,
            attempt: p.attempt,
            status: a.status,
            claim: a
                .claim
                .map(|d| WireValue::of(Claim::wire_value(d.claimed).as_bytes())),
            then: Then::Proxy,
            sent: started,
        });
    }
}

/// A request's deadline, arriving at `now`, and whether it was propagated:
/// the one its caller sent in the deadline header (`sent`: propagated), and for a
/// request that opens a root the end user's patience (propagated when the
/// fleet says so); the earlier of the two when both are known. A deadline
/// beyond the clock's range is no deadline.
fn deadline(
    control: &OwnershipControl,
    sent: Option<Duration>,
    is_root: bool,
    now: Instant,
) -> (Option<Instant>, bool) {
    let sent = sent.and_then(|d| now.checked_add(d));
    let user = if is_root {
        control.root_timeout().and_then(|t| now.checked_add(t))
    } else {
        None
    };
    match (sent, user) {
        (None, None) => (None, false),
        (Some(s), None) => (Some(s), true),
        (None, Some(u)) => (Some(u), control.root_deadline_propagated()),
        (Some(s), Some(u)) => (Some(s.min(u)), true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The deadline a request carrying `deadline` in its header was sent.
    fn headers(deadline: Option<&str>) -> Option<Duration> {
        let mut h = http::HeaderMap::new();
        if let Some(v) = deadline {
            h.insert(context::DEADLINE_HEADER, v.parse().unwrap());
        }
        context::Carried::of(&h)
            .deadline
            .and_then(context::deadline_from_value)
    }

    #[test]
    fn a_request_knows_its_deadline_from_its_caller_or_its_end_user() {
        let ms = Duration::from_millis;
        let now = Instant::now();
        let c = OwnershipControl::default();
        // Nothing known: no deadline, whether root or not.
        assert_eq!(deadline(&c, headers(None), true, now), (None, false));
        // A caller's header is a propagated deadline; garbage is none.
        assert_eq!(
            deadline(&c, headers(Some("80")), false, now),
            (Some(now + ms(80)), true)
        );
        assert_eq!(
            deadline(&c, headers(Some("-80")), false, now),
            (None, false)
        );
        // The farthest a header can say is still a deadline, far away.
        let far = u64::MAX.to_string();
        assert!(deadline(&c, headers(Some(&far)), false, now).0 > Some(now + ms(1 << 40)));
        // The end user's patience: known at a root, acted on when propagated.
        c.set_root_deadline(Some(ms(300)), false);
        assert_eq!(
            deadline(&c, headers(None), true, now),
            (Some(now + ms(300)), false)
        );
        assert_eq!(deadline(&c, headers(None), false, now), (None, false));
        c.set_root_deadline(Some(ms(300)), true);
        assert_eq!(
            deadline(&c, headers(None), true, now),
            (Some(now + ms(300)), true)
        );
        // Both: the earlier.
        assert_eq!(
            deadline(&c, headers(Some("120")), true, now),
            (Some(now + ms(120)), true)
        );
        c.set_root_deadline(None, true);
        assert_eq!(c.root_timeout(), None);
        assert_eq!(deadline(&c, headers(None), true, now), (None, false));
    }
}
