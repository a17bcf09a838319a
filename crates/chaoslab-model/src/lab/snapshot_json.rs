//! A snapshot as JSON: what `GET /state` answers. The figures are the
//! catalogue's, nested by path as in the report, so a script reads the
//! same names in both; the rest is what the dashboard shows around them.

use serde_json::{json, Map, Value};

use super::snapshot::{ServiceState, Snapshot};
use crate::topology::{Phase, Topology};
use error_ownership::breaker::BreakerState;

fn number(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

fn state_name(s: ServiceState) -> &'static str {
    match s {
        ServiceState::Healthy => "healthy",
        ServiceState::Owner => "owner",
        ServiceState::Propagating => "propagating",
        ServiceState::ContextDropped => "context-dropped",
        ServiceState::Down => "down",
        ServiceState::Shedding => "shedding",
        ServiceState::Idle => "idle",
    }
}

impl Snapshot {
    /// The snapshot as JSON; `t` names the edges' ends.
    pub fn to_json(&self, t: &Topology) -> Value {
        let st = &self.state;
        let services: Vec<Value> = self
            .services
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let f = &st.faults[i];
                let r = &st.resources[i];
                json!({
                    "name": s.name,
                    "depth": s.depth,
                    "state": state_name(s.state),
                    "ownership": s.ownership,
                    "fault": {
                        "error_rate": number(f.error_rate),
                        "phase": match f.phase { Phase::Before => "before", Phase::After => "after" },
                        "latency_ms": number(f.latency.as_secs_f64() * 1000.0),
                        "status": f.status,
                        "down": f.down,
                    },
                    "context_dropped": st.context_dropped[i],
                    "workers": r.workers,
                    "work_ms": number(r.work.as_secs_f64() * 1000.0),
                    "queue": r.queue,
                    "live": Value::Object(s.live.to_value()),
                    "total": Value::Object(s.total.to_value()),
                })
            })
            .collect();
        let edges: Vec<Value> = self
            .edges
            .iter()
            .enumerate()
            .map(|(k, e)| {
                let mut v = json!({
                    "caller": t.services[e.from].name,
                    "callee": t.services[e.to].name,
                    "attempt_rps": number(e.attempt_rps),
                    "retry_rps": number(e.retry_rps),
                    "budget": e.budget.map(|(level, limit)| json!({"level": number(level), "limit": number(limit)})),
                    "breaker": BreakerState::from_level(e.breaker).name(),
                });
                // Per replica of its callee, under outlier detection.
                let detects = t
                    .edges
                    .get(k)
                    .is_some_and(|d| st.policy.for_edge(&d.policy).outlier.is_some());
                if detects && !e.outliers.is_empty() {
                    v["outliers"] = json!(e.outliers);
                }
                v
            })
            .collect();
        let mut out = Map::new();
        out.insert("t_s".into(), number(self.t.as_secs_f64()));
        out.insert("topology".into(), json!(self.topology));
        out.insert("window_s".into(), number(self.window.as_secs_f64()));
        out.insert(
            "policy".into(),
            json!({
                "name": st.policy.name(),
                "attempts": st.policy.attempts,
                "budget": st.policy.budget,
            }),
        );
        out.insert("attribution".into(), json!(st.attribution.name()));
        out.insert("at_least_once".into(), json!(st.at_least_once));
        out.insert("rps".into(), number(st.rps));
        out.insert("paused".into(), json!(st.paused));
        let r = &self.root;
        out.insert(
            "root".into(),
            json!({
                "rps": number(r.rps),
                "goodput_rps": number(r.goodput_rps),
                "availability": number(r.availability),
                "latency_ms": {"p50": number(r.p50_ms), "p99": number(r.p99_ms)},
                "sent": r.sent,
                "errors": r.errors,
                "dropped": r.dropped,
            }),
        );
        out.insert(
            "storm_radius".into(),
            json!({
                "max": self.radius_max,
                "mean": number(self.radius_mean),
                "model": self.radius_model,
                "static": self.radius_static,
            }),
        );
        out.insert("spurious_avoided".into(), json!(self.spurious_avoided));
        out.insert(
            "recovery_threshold".into(),
            self.recovery_threshold.map_or(Value::Null, number),
        );
        if let Some(think) = self.think {
            // A closed loop's clients in force, and each one's think time.
            out.insert(
                "clients".into(),
                json!(crate::topology::clients_at(self.state.rps, think)),
            );
            out.insert("think_s".into(), json!(think.as_secs_f64()));
        }
        out.insert("saturated".into(), json!(!self.saturation.is_empty()));
        out.insert("saturation".into(), json!(self.saturation));
        out.insert("services".into(), Value::Array(services));
        out.insert("edges".into(), Value::Array(edges));
        out.insert(
            "events".into(),
            Value::Array(
                self.events
                    .iter()
                    .map(|e| {
                        json!({
                            "t_s": number((e.t.as_secs_f64() * 1000.0).round() / 1000.0),
                            "event": e.text,
                            "origin": e.origin.name(),
                        })
                    })
                    .collect(),
            ),
        );
        Value::Object(out)
    }
}
