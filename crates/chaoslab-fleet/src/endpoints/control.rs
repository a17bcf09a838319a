//! `--control ADDR`: the lab driven over HTTP, with the actions of the
//! keys and of scenario steps.
//!
//! - `GET /` a short index with curl examples;
//! - `GET /state` the newest snapshot as JSON (the dashboard's figures,
//!   the catalogue's names);
//! - `POST /actions` one action in the scenario step syntax as JSON, or a
//!   list of them: `{"policy": "ownership"}`, `{"fail": {"service": "D",
//!   "error_rate": 0.5}}`. A bad one is refused whole with 400 and the
//!   scenario loader's message; the others are applied in order, logged
//!   as sent over the API, and recorded by `--record`;
//! - `GET /report` the report of the run so far, as the run would write
//!   it if it ended now (expectations whose windows have closed judged);
//! - `GET /healthz` 200 `ok` while the lab runs (a Kubernetes readiness
//!   probe on a `chaoslab node`'s control port);
//! - `GET /counts` every counter of this process, as the session that
//!   drives a fleet of nodes reads them ([`WireCounts`]);
//! - `GET /retries?after=N` on a node, the retries it sent and the roots
//!   it completed since record `N` ([`Page`]): what the distributed storm
//!   radius is measured from;
//! - `GET /tap?after=N` the wire tap's samples since sample `N`
//!   ([`crate::metrics::tap::Page`]): how the session over a fleet of
//!   nodes shows every node's exchanges.
//!
//! Every answer is built from what the session publishes or sends back;
//! the API holds no state of its own.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::watch;

use crate::error::RunError;
use crate::lab::{apply, Origin, Snapshot};
use crate::metrics::{Metrics, WireCounts};
use crate::report::{expect, Report, TimeSeries};
use crate::scenario::{actions_from_json, Expectation};
use crate::session::{Actions, Session};
use crate::topology::Topology;

use super::guard::{Checks, Guard};
use super::listen::bind;

/// The largest request body taken: a list of a few hundred actions.
const BODY_LIMIT: usize = 64 * 1024;

/// How long `GET /report` waits for the run loop before saying it is busy.
const REPORT_WAIT: Duration = Duration::from_secs(2);

/// What every handler reads.
#[derive(Debug)]
struct Api {
    topology: Topology,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    actions: Actions,
    expectations: Vec<Expectation>,
    bound: SocketAddr,
    metrics: Arc<Metrics>,
    /// Whether requests must carry a token (the index's examples say so).
    token: bool,
}

type Shared = State<Arc<Api>>;

fn json_response(status: StatusCode, v: &Value) -> Response {
    let mut body = serde_json::to_string_pretty(v).unwrap_or_default();
    body.push('\n');
    (
        status,
        [(http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

fn error(status: StatusCode, message: String) -> Response {
    json_response(status, &json!({ "error": message }))
}

async fn index(State(api): Shared) -> String {
    let a = api.bound;
    format!(
        "chaoslab control API for topology {name}\n\
         \n\
         GET  /state     the live snapshot as JSON (the dashboard's figures)\n\
         POST /actions   one action in the scenario step syntax as JSON, or a list\n\
         GET  /report    the report of the run so far\n\
         GET  /healthz   200 ok while the lab runs (a readiness probe)\n\
         GET  /counts    every counter of this process, as JSON\n\
         GET  /retries?after=N  a node's retry records after record N\n\
         GET  /tap?after=N      the wire tap's sampled exchanges after sample N\n\
         \n\
         A POST says Content-Type: application/json; a request from a web page\n\
         (Origin) or to another Host name is refused{token_note}.\n\
         \n\
         curl -s{auth} http://{a}/state\n\
         curl -s{auth} -X POST -H 'Content-Type: application/json' http://{a}/actions -d '{{\"policy\": \"ownership\"}}'\n\
         curl -s{auth} -X POST -H 'Content-Type: application/json' http://{a}/actions -d '{{\"fail\": {{\"service\": \"{svc}\", \"error_rate\": 0.5}}}}'\n\
         curl -s{auth} -X POST -H 'Content-Type: application/json' http://{a}/actions -d '[{{\"heal\": \"{svc}\"}}, {{\"rps\": 100}}]'\n\
         curl -s{auth} http://{a}/report\n",
        name = api.topology.name,
        svc = api.topology.services.last().map_or("D", |s| s.name.as_str()),
        auth = if api.token {
            " -H \"Authorization: Bearer $CHAOSLAB_CONTROL_TOKEN\""
        } else {
            ""
        },
        token_note = if api.token {
            ", and every request carries the token (Authorization: Bearer)"
        } else {
            ""
        },
    )
}

async fn state(State(api): Shared) -> Response {
    let snap = api.snapshots.borrow().clone();
    json_response(StatusCode::OK, &snap.to_json(&api.topology))
}

async fn actions(State(api): Shared, body: Bytes) -> Response {
    let snap = api.snapshots.borrow().clone();
    let actions = match actions_from_json(&body, "POST /actions", &api.topology, &snap.state.faults)
    {
        Ok(a) => a,
        Err(e) => return error(StatusCode::BAD_REQUEST, e.to_string()),
    };
    // Refused whole if any one would be refused by the lab as it stands.
    let mut s = snap.state.clone();
    for (i, a) in actions.iter().enumerate() {
        if let Err(e) = apply(&mut s, a) {
            return error(
                StatusCode::BAD_REQUEST,
                format!("POST /actions: actions[{i}]: {e}"),
            );
        }
    }
    let mut applied = vec![];
    for a in actions {
        let text = a.describe(&api.topology);
        if !api.actions.send(a) {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "the lab took {} of the actions and is busy or over: try the rest again",
                    applied.len()
                ),
            );
        }
        applied.push(text);
    }
    json_response(StatusCode::OK, &json!({ "applied": applied }))
}

async fn report(State(api): Shared) -> Response {
    let record = match tokio::time::timeout(REPORT_WAIT, api.actions.record_so_far()).await {
        Ok(Some(r)) => r,
        Ok(None) => return error(StatusCode::SERVICE_UNAVAILABLE, "the run is over".into()),
        Err(_) => {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                "the lab did not answer within 2 s: try again".into(),
            )
        }
    };
    let mut report = Report::measure(&record, record.warmup, Duration::MAX);
    let measured = record.uptime.saturating_sub(record.warmup);
    let closed: Vec<Expectation> = api
        .expectations
        .iter()
        .filter(|e| e.window.to <= measured)
        .cloned()
        .collect();
    report.expectations = expect::evaluate(&record, &closed);
    report.series = Some(TimeSeries::from_series(
        &record.series,
        &record.topology,
        record.warmup,
        Duration::MAX,
    ));
    json_ok(report)
}

/// Every counter of this process.
/// Every counter of this process; `?rows=own`: a node's or a shard's own
/// services and calls alone (what the session reading it takes), compact.
async fn counts(State(api): Shared, uri: http::Uri) -> Response {
    let own = match uri.query().unwrap_or("") {
        "" => false,
        "rows=own" => true,
        q => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("GET /counts: unknown parameter `{q}`: the one taken is rows=own"),
            )
        }
    };
    let counts: WireCounts = api.metrics.wire_counts(own);
    if own {
        json_compact(&counts)
    } else {
        json_ok(counts)
    }
}

/// `value` as a 200 JSON answer on one line: what the session reading a
/// node takes ten times a second, written straight from the value.
fn json_compact(value: &impl serde::Serialize) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => (
            StatusCode::OK,
            [(http::header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// The `N` of `?after=N` (0 when not given), or a 400 that says what is
/// wrong with the query.
fn after_param(uri: &http::Uri, what: &str) -> Result<u64, Box<Response>> {
    let mut after = 0;
    for pair in uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
    {
        match pair.split_once('=') {
            Some(("after", v)) => match v.parse::<u64>() {
                Ok(n) => after = n,
                Err(_) => {
                    return Err(Box::new(error(
                        StatusCode::BAD_REQUEST,
                        format!("GET {what}: after={v}: expected a record number such as after=0"),
                    )))
                }
            },
            _ => {
                return Err(Box::new(error(
                    StatusCode::BAD_REQUEST,
                    format!("GET {what}: unknown parameter `{pair}`: the one taken is after=N"),
                )))
            }
        }
    }
    Ok(after)
}

/// `value` as a 200 JSON answer.
fn json_ok(value: impl serde::Serialize) -> Response {
    match serde_json::to_value(&value) {
        Ok(v) => json_response(StatusCode::OK, &v),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// The node's retry records after `?after=N` (0 when not given).
async fn retries(State(api): Shared, uri: http::Uri) -> Response {
    let after = match after_param(&uri, "/retries") {
        Ok(n) => n,
        Err(r) => return *r,
    };
    let Some(journal) = api.metrics.journal() else {
        return error(
            StatusCode::NOT_FOUND,
            "GET /retries: this lab keeps no retry records; a `chaoslab node` does".into(),
        );
    };
    json_compact(&journal.after(after))
}

/// The wire tap's samples after `?after=N` (0 when not given).
async fn tap(State(api): Shared, uri: http::Uri) -> Response {
    match after_param(&uri, "/tap") {
        Ok(after) => json_compact(&api.metrics.tap().after(after)),
        Err(r) => *r,
    }
}

/// The control API answers, so the session it serves is up.
async fn healthz() -> &'static str {
    "ok"
}

async fn not_found() -> Response {
    error(
        StatusCode::NOT_FOUND,
        "no such endpoint: GET / lists them (GET /state, POST /actions, GET /report, GET /healthz, GET /counts, GET /retries, GET /tap)"
            .into(),
    )
}

/// Serves the control API for `session` on `addr`; `expectations` are the
/// run's scenario's, judged in `GET /report` once their windows close.
/// Returns the address bound.
pub fn serve(
    session: &Session,
    addr: SocketAddr,
    expectations: Vec<Expectation>,
) -> Result<SocketAddr, RunError> {
    let listener = bind(session.handle(), "--control", addr)?;
    let metrics = session.metrics().clone();
    let guard = Guard::new(
        listener.addr,
        session.access().clone(),
        Checks::Control,
        Arc::new(move |reason, what| metrics.refusals().refuse(reason, what)),
    );
    let token = session.access().token.is_some();
    let api = Arc::new(Api {
        topology: session.topology().clone(),
        snapshots: session.snapshots(),
        actions: session.actions_from(Origin::Api),
        expectations,
        bound: listener.addr,
        metrics: session.metrics().clone(),
        token,
    });
    let app = Router::new()
        .route("/", get(index))
        .route("/state", get(state))
        .route("/actions", axum::routing::post(actions))
        .route("/report", get(report))
        .route("/healthz", get(healthz))
        .route("/counts", get(counts))
        .route("/retries", get(retries))
        .route("/tap", get(tap))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(api);
    Ok(listener.serve(session.handle(), guard.wrap(app)))
}
