//! Every metric the endpoint serves, named once with its help: the
//! encoder, the HELP lines and the table in `docs/telemetry.md` all read
//! [`catalogue`].

use crate::lab::figures::Figure;

/// What a metric is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A total since the fleet started (`_total` on the wire).
    Counter,
    /// A value now.
    Gauge,
    /// A histogram (`_bucket`, `_sum`, `_count` on the wire).
    Histogram,
}

/// One metric the endpoint serves.
#[derive(Debug, Clone, Copy)]
pub struct MetricDoc {
    /// Its family name (without `_total` for a counter).
    pub name: &'static str,
    /// Counter, gauge or histogram.
    pub kind: Kind,
    /// Its labels (`policy` is added under `compare`).
    pub labels: &'static str,
    /// Its HELP line.
    pub help: &'static str,
}

impl MetricDoc {
    /// The name a query uses: `_total` on counters, `_bucket` etc. on
    /// histograms are added by Prometheus's conventions.
    pub fn wire_name(&self) -> String {
        match self.kind {
            Kind::Counter => format!("{}_total", self.name),
            _ => self.name.to_string(),
        }
    }
}

macro_rules! catalogue {
    ($($name:literal $kind:ident [$labels:literal] $help:expr;)*) => {
        /// Every metric the endpoint serves, in the order it serves them.
        pub fn catalogue() -> Vec<MetricDoc> {
            vec![$(MetricDoc { name: $name, kind: Kind::$kind, labels: $labels, help: $help },)*]
        }
        /// Every metric's family name, in the order served.
        pub const CATALOGUE: &[&str] = &[$($name,)*];
    };
}

catalogue! {
    "chaoslab_requests" Counter ["service"] Figure::Requests.help();
    "chaoslab_errors" Counter ["service"] Figure::Errors.help();
    "chaoslab_error_responses" Counter ["service, status"]
        "Error responses it returned, by status: 500, 502, 503, 504, or other (429, another 5xx).";
    "chaoslab_claims_returned" Counter ["service, claim"]
        "Error responses it returned, by the claim header it wrote: true (it owns them), false (passed up from below), missing.";
    "chaoslab_claims_seen" Counter ["service, claim"]
        "Failed outbound attempts it saw, by the claim they came back with: true, false, missing (no header, no response, a timeout).";
    "chaoslab_timeouts" Counter ["service"] Figure::Timeouts.help();
    "chaoslab_shed" Counter ["service"] Figure::Shed.help();
    "chaoslab_work_wasted" Counter ["service"] Figure::WorkWasted.help();
    "chaoslab_own_errors" Counter ["service"] Figure::OwnErrors.help();
    "chaoslab_attempts" Counter ["caller, callee"]
        "Attempts sent on the call, first tries and retries.";
    "chaoslab_retries" Counter ["caller, callee"] "Retries sent on the call.";
    "chaoslab_retries_suppressed" Counter ["caller, callee"]
        "Retries not sent on the call: the callee's error came back unclaimed, or its don't-retry header forbade one.";
    "chaoslab_retries_refused" Counter ["caller, callee"]
        "Retries the callee's don't-retry header forbade (counted among the suppressed too).";
    "chaoslab_budget_denied" Counter ["caller, callee"] "Retries the call's retry budget refused.";
    "chaoslab_short_circuited" Counter ["caller, callee"]
        "Calls its open circuit breaker failed fast, without reaching the callee.";
    "chaoslab_hedges_cancelled" Counter ["caller, callee"]
        "Attempts of hedged calls cancelled because another attempt of the same call answered first (gRPC A6 hedging).";
    "chaoslab_throttled" Counter ["caller, callee"]
        "Attempts its adaptive throttle rejected locally, without reaching the callee (the SRE book's client-side throttling).";
    "chaoslab_replica_requests" Counter ["service, replica"]
        "Requests one replica of the service received (a service without replicas is its replica 0).";
    "chaoslab_replica_errors" Counter ["service, replica"]
        "Error answers one replica of the service gave.";
    "chaoslab_replica_attempts" Counter ["service, replica, attempt"]
        "Attempts its callers' load balancers sent to one replica of the service, by attempt: first or retry.";
    "chaoslab_outlier_ejections" Counter ["caller, callee, replica"]
        "Times the call's outlier detection ejected one replica of the callee (Envoy's consecutive_5xx / consecutive_gateway_failure ejections); a callee of one replica is its replica 0, never ejected.";
    "chaoslab_entry_requests" Counter ["root"]
        "Root requests the end users sent into one root (a topology of one root has one, the entry).";
    "chaoslab_entry_errors" Counter ["root"]
        "Root requests of one root answered with an error, or not answered.";
    "chaoslab_root_requests" Counter [""] "Root requests the end users sent into the entry.";
    "chaoslab_root_errors" Counter [""] "Root requests answered with an error, or not answered.";
    "chaoslab_root_dropped" Counter [""] Figure::RootDropped.help();
    "chaoslab_root_skipped" Counter [""] Figure::RootSkipped.help();
    "chaoslab_fd_errors" Counter [""] Figure::LabFdErrors.help();
    "chaoslab_node_misses" Counter [""] Figure::LabNodeMisses.help();
    "chaoslab_control_refused" Counter ["reason"]
        "Requests the control API and this endpoint refused, by why: host (a Host that does not name them: 421), origin (from a web page of another origin: 403), token (no token or the wrong one: 401), content-type (a POST not declared JSON: 415).";
    "chaoslab_latency_seconds" Histogram ["service"]
        "Time from a request's arrival at the service to its answer (buckets at powers of two of a microsecond).";
    "chaoslab_amplification" Gauge ["service"]
        "Requests per second ÷ baseline over the dashboard's window: how much the storm multiplied its load.";
    "chaoslab_model_amplification" Gauge ["service"] Figure::ModelAmplification.help();
    "chaoslab_queue_depth" Gauge ["service"] "Jobs waiting for a worker at the scrape.";
    "chaoslab_in_service" Gauge ["service"] "Jobs on a worker at the scrape.";
    "chaoslab_limited" Counter ["service"] Figure::Limited.help();
    "chaoslab_concurrency_limit" Gauge ["service"]
        "Its adaptive concurrency limit at the scrape (its first replica's; 0 without `concurrency:`).";
    "chaoslab_no_load_latency_seconds" Gauge ["service"]
        "The latency with no queue its concurrency controller estimates (Envoy's minRTT, Vegas's no-load RTT; 0 before the first estimate).";
    "chaoslab_budget_level" Gauge ["caller, callee"]
        "What the call's retry budget holds now, as a fraction of its limit (tokens or quota left, retry slots free); absent without a budget that has a level.";
    "chaoslab_breaker_state" Gauge ["caller, callee"]
        "The call's circuit breaker now: 0 closed (or none), 1 half-open, 2 open.";
    "chaoslab_outlier_ejected" Gauge ["caller, callee, replica"]
        "1 while the call's outlier detection has one replica of the callee ejected (it gets no attempt), else 0; a callee of one replica is its replica 0, never ejected.";
    "chaoslab_offered_rps" Gauge [""] Figure::OfferedRps.help();
    "chaoslab_saturated" Gauge [""]
        "1 when the machine cannot carry the load over the dashboard's window (root requests due but not sent, the lab's clock late): the measured figures are lower bounds.";
    "chaoslab_storm_radius" Gauge ["stat"]
        "The storm radius over the dashboard's window: the most consecutive hops that retried for one root request (max), and its mean over roots with retries (mean).";
    "traces_service_graph_request" Counter ["client, server"]
        "Requests from one service to another as the OpenTelemetry Collector's servicegraph connector counts them: every attempt on the wire, retries included, summed over the two services' endpoints; the client `user` is the end users sending root requests (so `chaoslab import servicegraph` reads a lab run back).";
    "traces_service_graph_request_failed" Counter ["client, server"]
        "Of those requests, the ones that failed (an error answer or none), as the servicegraph connector counts them.";
}

pub(super) fn help(name: &str) -> &'static str {
    catalogue()
        .into_iter()
        .find(|m| m.name == name)
        .map_or("", |m| m.help)
}

/// The catalogue as the Markdown table of `docs/telemetry.md` (written
/// once here; a test keeps the chapter's copy the same).
pub fn markdown_table() -> String {
    let mut s = String::from("| metric | type | labels | meaning |\n|---|---|---|---|\n");
    for m in catalogue() {
        let kind = match m.kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        };
        let labels = if m.labels.is_empty() { "" } else { m.labels };
        s.push_str(&format!(
            "| `{}` | {kind} | {labels} | {} |\n",
            m.wire_name(),
            m.help.replace('|', "\\|")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_list_every_metric_as_the_catalogue_says() {
        crate::docs::check_block("docs/telemetry.md", "metrics", &markdown_table());
    }

    #[test]
    fn every_metric_has_a_sentence_of_help_and_a_unique_name() {
        let mut names = std::collections::HashSet::new();
        for m in catalogue() {
            assert!(names.insert(m.name), "{} twice", m.name);
            // The lab's own names, or the servicegraph connector's.
            assert!(
                m.name.starts_with("chaoslab_") || m.name.starts_with("traces_service_graph_"),
                "{}",
                m.name
            );
            assert!(m.help.ends_with('.'), "{}: {:?}", m.name, m.help);
        }
        assert_eq!(CATALOGUE.len(), names.len());
    }
}
