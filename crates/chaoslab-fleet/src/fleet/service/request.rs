//! A service's request path: what it does with each request, from the
//! layer's context to the answer, and its router.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tokio::time::Instant;

use crate::fleet::workers::QueueFull;
use crate::middleware::context::{Carried, RequestContext, Trace, TraceHeader as _};
use crate::middleware::Observer as _;
use crate::sidecar::retries::ProxiedAttempt;
use crate::topology::{Fault, Phase};
use error_ownership::retry_counter::RETRY_ATTEMPT_HEADER;
use error_ownership::signal::{
    Refusal, Signal, REFUSAL_STATUS, SRE_DONT_RETRY, SRE_OVERLOAD_HEADER,
};
use tower_error_ownership::record;

use super::{Admitted, CallsFailed, ServiceRuntime};

fn status(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// What a service's work ended in.
struct Answer {
    status: u16,
    /// Its own fault (not a dependency's) caused an error.
    own: bool,
    body: &'static str,
    /// Under the `sre` dialect, a dependency's overload failed it:
    /// "overloaded; don't retry", so only the layer right above the
    /// overloaded one retries.
    dont_retry: bool,
}

impl Answer {
    fn own(status: u16, body: &'static str) -> Answer {
        Answer {
            status,
            own: true,
            body,
            dont_retry: false,
        }
    }
}

/// Turns an answer into the response, marking an error the service caused
/// as its own in the request's record (ground truth for the counters).
fn respond(a: Answer) -> Response {
    if a.own {
        record::mark_own_fault();
    }
    let mut res = (status(a.status), a.body).into_response();
    if a.dont_retry {
        res.headers_mut().insert(
            HeaderName::from_static(SRE_OVERLOAD_HEADER),
            HeaderValue::from_static(SRE_DONT_RETRY),
        );
    }
    res
}

/// A request refused without being served, in the dialect the service's
/// callers read: Finagle's nack headers, `x-envoy-overloaded`, a gRPC
/// pushback, `Retry-After`; with ownership, the claim the middleware
/// writes on the service's own error is the whole signal.
fn refuse(rt: &ServiceRuntime, refusal: Refusal, body: &'static str) -> Response {
    let mut res = respond(Answer::own(REFUSAL_STATUS, body));
    let dialect = rt.dialect();
    let refusal = match dialect {
        Some(Signal::Sre) => rt.sre_refusal(),
        _ => refusal,
    };
    if let Some(signal) = dialect {
        let headers = res.headers_mut();
        for (name, value) in signal.refusal_headers(refusal, rt.drain_time()) {
            if let Ok(v) = HeaderValue::from_str(&value) {
                headers.insert(HeaderName::from_static(name), v);
            }
        }
    }
    res
}

async fn handle(State(rt): State<Arc<ServiceRuntime>>, mut req: Request) -> Response {
    // The layer's observer opened the request's context (none in the
    // plain baseline, which runs no layer): current while it is served.
    let ctx = match req.extensions_mut().remove::<RequestContext>() {
        None if rt.plain.as_ref().is_some_and(|p| p.traced) => Some(traced(req.headers())),
        ctx => ctx,
    };
    // Sent by a caller's sidecar: the proxy chose this replica (its
    // caller's client, which counts the replicas it sends to, did not).
    // Looked up only where there are replicas to count.
    if rt.replicated {
        if let Some(a) = req.extensions().get::<ProxiedAttempt>() {
            rt.metrics.sent_to_replica(rt.id, rt.replica, a.is_retry());
        }
    }
    if rt.counts_attempts.load(Ordering::Relaxed) {
        rt.saw_attempt(
            req.headers()
                .get(RETRY_ATTEMPT_HEADER)
                .map(HeaderValue::as_bytes),
        );
    }
    drop(req);
    serve_replica(rt, ctx).await
}

/// The traced baseline's context (no layer opens one): the trace its
/// caller sent, or a new root's.
fn traced(headers: &http::HeaderMap) -> RequestContext {
    static ROOTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    match Carried::of(headers).trace.and_then(Trace::from_value) {
        Some(t) => RequestContext::new(t, false),
        None => {
            let root = ROOTS.fetch_add(1, Ordering::Relaxed);
            RequestContext::new(Trace { root, depth: 0 }, true)
        }
    }
}

async fn serve_replica(rt: Arc<ServiceRuntime>, ctx: Option<RequestContext>) -> Response {
    if !rt.replicated {
        return serve_request(rt, ctx).await;
    }
    let (id, replica, metrics) = (rt.id, rt.replica, rt.metrics.clone());
    metrics.replica_request(id, replica);
    let res = serve_request(rt, ctx).await;
    if error_ownership::is_error_status(res.status().as_u16()) {
        metrics.replica_error(id, replica);
    }
    res
}

/// A request within the service's adaptive concurrency limit, if it has
/// one: over it, shed at once; under it, it holds its place until its
/// work ends (whether or not its caller still waits: a job queued for a
/// caller that left still takes a worker), and how long that took moves
/// the limit.
async fn serve_request(rt: Arc<ServiceRuntime>, ctx: Option<RequestContext>) -> Response {
    let admitted = match &rt.limit {
        None => None,
        Some(limit) => match limit.try_enter() {
            Some(a) => Some(a),
            None => {
                rt.metrics.limited(rt.id);
                return refuse(&rt, Refusal::Shed, "over the concurrency limit: shedding\n");
            }
        },
    };
    serve_admitted(rt, admitted, ctx).await
}

/// Whether an answer failed for want of capacity (a shed, a passed
/// deadline): a drop, to the concurrency controllers.
fn dropped(a: &Answer) -> bool {
    a.own && matches!(a.status, 503 | 504)
}

async fn serve_admitted(
    rt: Arc<ServiceRuntime>,
    admitted: Option<Admitted>,
    ctx: Option<RequestContext>,
) -> Response {
    if !rt.admit() {
        if let Some(a) = admitted {
            a.answered(true);
        }
        return refuse(&rt, Refusal::Overloaded, "over capacity: shedding\n");
    }
    let Some(pool) = rt.workers.clone() else {
        let (answer, _) = work(rt, ctx, Instant::now()).await;
        if let Some(a) = admitted {
            a.answered(dropped(&answer));
        }
        return respond(answer);
    };
    // The job runs on a task of its own, with this request's context and
    // inside its record (the crate's explicit helper: a bare spawn would
    // drop it), so it goes on when the caller leaves and this future is
    // dropped.
    let rec = record::current();
    let me = rt.clone();
    let job = move |start: Instant| async move {
        let fut = work(rt, ctx, start);
        let out = match rec {
            Some(r) => record::scope(r, fut).await,
            None => fut.await,
        };
        if let Some(a) = admitted {
            a.answered(dropped(&out.0));
        }
        out
    };
    // A deadline its caller propagated skips the job once passed.
    let deadline = ctx.and_then(|c| c.propagated_deadline());
    match pool.submit(deadline, job) {
        Err(QueueFull) => {
            if let Some(l) = &me.limit {
                l.dropped();
            }
            refuse(&me, Refusal::Shed, "queue full: shedding\n")
        }
        Ok(answer) => match answer.await {
            Ok(a) => respond(a),
            Err(_) if deadline.is_some_and(|d| Instant::now() >= d) => {
                respond(Answer::own(504, "deadline exceeded\n"))
            }
            Err(_) => respond(Answer::own(me.errors.own, "the job was lost\n")),
        },
    }
}

/// The service's work for one request (in its context `ctx`, when the
/// layer opened one) begun at `start`: its service time (until `start` +
/// work + injected latency), its fault, its calls. Also when it ideally
/// ended: at the end of its service time when it made no calls, else when
/// its calls came back.
async fn work(
    rt: Arc<ServiceRuntime>,
    ctx: Option<RequestContext>,
    start: Instant,
) -> (Answer, Instant) {
    let trace = ctx.map(|c| c.trace);
    let service_fault = rt.fault();
    // The service's fault when it is on this endpoint, else the endpoint's
    // own; a fault that names other replicas is none here.
    let none = Fault::default();
    let fault = service_fault.in_force(rt.endpoint.as_deref(), &rt.endpoint_fault);
    let fault = if fault.on_replica(rt.replica) {
        fault
    } else {
        &none
    };
    let time = fault.latency + rt.work();
    let done = start + time;
    if !time.is_zero() {
        tokio::time::sleep_until(done).await;
    }
    if fault.phase == Phase::Before && rt.roll(fault.error_rate) {
        return (Answer::own(fault.status, "injected fault\n"), done);
    }
    if rt.calls.is_empty() {
        return (finish(&rt, fault), done);
    }
    let calls = if let Some(plain) = &rt.plain {
        // The baseline: the same service, its calls made with bare reqwest.
        rt.run_calls_plain(plain, trace).await
    } else if rt.context_dropped() {
        // Lose the context the way real services do: do the outbound work
        // on a task that does not carry the request's record, without its
        // deadline, and without learning that a call failed on an
        // overloaded callee. The lab's trace still rides along
        // explicitly, as a mesh sidecar's would.
        let rt2 = rt.clone();
        let calls = tokio::spawn(async move { rt2.run_calls(trace, None).await }).await;
        calls
            .unwrap_or(Err(CallsFailed::default()))
            .map_err(|e| CallsFailed {
                overloaded: false,
                ..e
            })
    } else {
        rt.run_calls(trace, ctx.and_then(|c| c.deadline)).await
    };
    let answer = match calls {
        Ok(()) => finish(&rt, fault),
        // No attempt left: its own breaker, throttle or deadline failed the
        // call, an error it caused (the record says so already).
        Err(CallsFailed { last: None, .. }) => Answer {
            status: rt.errors.own,
            own: false,
            body: "dependency not called\n",
            dont_retry: false,
        },
        Err(CallsFailed {
            last: Some(last),
            overloaded,
        }) => {
            let overloaded = rt.dialect() == Some(Signal::Sre) && overloaded;
            Answer {
                status: rt.errors.passed.status(last),
                own: false,
                body: "dependency failed\n",
                dont_retry: overloaded,
            }
        }
    };
    (answer, Instant::now())
}

/// The answer of work whose calls (if any) succeeded: the fault after
/// them, or success.
fn finish(rt: &ServiceRuntime, fault: &Fault) -> Answer {
    if fault.phase == Phase::After && rt.roll(fault.error_rate) {
        return Answer::own(fault.status, "injected fault\n");
    }
    Answer {
        status: 200,
        own: false,
        body: "ok\n",
        dont_retry: false,
    }
}

/// The service's router: any method, any path.
pub fn router(rt: Arc<ServiceRuntime>) -> Router {
    Router::new().fallback(handle).with_state(rt)
}
