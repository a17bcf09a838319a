//! The figure catalogue: every figure the lab reports, once.
//!
//! Each entry gives a figure's name (as the report's JSON path, and as a
//! scenario's `figure:` key), its unit, what it means in one line, whether
//! it is measured per service or fleet-wide, and how it is computed from a
//! [`Window`] of counters. The report's JSON, the expectations (names and
//! did-you-mean), JUnit, the headless table, the dashboard's figures and
//! its help glossary all read this table, so adding a figure is one entry
//! here plus the place where it is counted.
//!
//! ```
//! use chaoslab_model::lab::figures::{Figure, Scope};
//!
//! let f = Figure::parse("amplification").unwrap();
//! assert_eq!(f.scope(), Scope::Service);
//! assert_eq!(f.path(), "amplification");
//! assert_eq!(Figure::parse("claims_returned_true").unwrap().path(), "claims_returned.true");
//! assert_eq!(Figure::parse("root_availability").unwrap().scope(), Scope::Fleet);
//! ```

use std::ops::Index;

use serde::ser::{Serialize, Serializer};
use serde_json::{Map, Value};

/// Where a figure is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// One value per service (an expectation names the service).
    Service,
    /// One value for the whole fleet.
    Fleet,
}

/// How a figure's value is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A whole number of events.
    Count,
    /// A real number.
    Real,
}

/// How the headless table prints a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// `{:>w.p}`.
    Fixed(usize),
    /// `{:>w.p}x` (the `x` inside the width).
    Times(usize),
    /// The value × 100, `{:>w.p}%` (the `%` inside the width).
    Percent(usize),
    /// A whole number.
    Int,
    /// This figure and the next two as `a/b/c` (claim counts).
    Triple,
}

/// A column of the headless table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// Its heading.
    pub header: &'static str,
    /// Its width.
    pub width: usize,
    /// How a value is printed.
    pub style: Style,
}

macro_rules! catalogue {
    ($(
        $(#[doc = $doc:literal])*
        $v:ident = $name:literal at $path:literal, $scope:ident $kind:ident $unit:literal,
            $column:expr, |$w:ident, $i:ident| $read:expr;
    )*) => {
        /// A figure of the catalogue.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Figure {
            $($(#[doc = $doc])* $v,)*
        }

        impl Figure {
            /// Every figure, in the catalogue's order.
            pub const ALL: &'static [Figure] = &[$(Figure::$v,)*];

            /// Its name in scenario files.
            pub fn name(self) -> &'static str {
                match self { $(Figure::$v => $name,)* }
            }

            /// Its path in the report's JSON (dots nest).
            pub fn path(self) -> &'static str {
                match self { $(Figure::$v => $path,)* }
            }

            /// Per service or fleet-wide.
            pub fn scope(self) -> Scope {
                match self { $(Figure::$v => Scope::$scope,)* }
            }

            /// A count or a real number.
            pub fn kind(self) -> Kind {
                match self { $(Figure::$v => Kind::$kind,)* }
            }

            /// Its unit.
            pub fn unit(self) -> &'static str {
                match self { $(Figure::$v => $unit,)* }
            }

            /// What it means, in one line.
            pub fn help(self) -> &'static str {
                match self { $(Figure::$v => concat!($($doc),*).trim_ascii(),)* }
            }

            /// Its column in the headless table, if it has one.
            pub fn column(self) -> Option<Column> {
                match self { $(Figure::$v => $column,)* }
            }

            /// Its value over a window (for service `i` when per service).
            #[allow(unused_variables)]
            pub fn read(self, w: &Window<'_>, i: usize) -> f64 {
                match self {
                    $(Figure::$v => {
                        let $w = w;
                        let $i = i;
                        $read
                    })*
                }
            }
        }
    };
}

const fn col(header: &'static str, width: usize, style: Style) -> Option<Column> {
    Some(Column {
        header,
        width,
        style,
    })
}

catalogue! {
    /// Requests per second the service answered.
    Rps = "rps" at "rps", Service Real "req/s",
        col("rps", 9, Style::Fixed(1)), |w, i| w.rate(w.svc(i).requests);
    /// Entry rate × the service's calls per root request with no faults or retries.
    BaselineRps = "baseline_rps" at "baseline_rps", Service Real "req/s",
        col("baseline", 9, Style::Fixed(1)), |w, i| w.baseline(i);
    /// Requests per second ÷ baseline: how much the storm multiplied its load (null below 20 expected requests in the window: too few for a ratio).
    Amplification = "amplification" at "amplification", Service Real "×",
        col("amp", 7, Style::Times(2)), |w, i| w.amplification(i);
    /// Requests the window's root requests were expected to bring it with no faults and no retries (the baseline's count).
    ExpectedRequests = "expected_requests" at "expected_requests", Service Real "requests",
        None, |w, i| w.baseline(i) * w.dt;
    /// The low end of amplification's 95% interval (the sampling model's chance: sampled calls, attempts, arrivals).
    AmplificationLow = "amplification_low" at "amplification_interval.low", Service Real "×",
        None, |w, i| w.amplification_interval(i).0;
    /// The high end of amplification's 95% interval.
    AmplificationHigh = "amplification_high" at "amplification_interval.high", Service Real "×",
        None, |w, i| w.amplification_interval(i).1;
    /// 1 when the requests measured differ from the model's beyond chance (outside its 99.9% interval) and by over 5%; 0 otherwise.
    ModelDiffers = "model_differs" at "model_differs", Service Count "flag",
        None, |w, i| f64::from(u8::from(w.differs_from_model(i)));
    /// Load above baseline over its chance spread: how unlikely the excess is by chance alone (what mesh views rank by).
    ExcessSigma = "excess_sigma" at "excess_sigma", Service Real "σ",
        None, |w, i| w.excess_sigma(i);
    /// The analytical model's amplification for the faults and policy in force.
    ModelAmplification = "model_amplification" at "model_amplification", Service Real "×",
        col("model", 7, Style::Times(2)), |w, i| w.prediction.services[i].amplification;
    /// Requests the service answered.
    Requests = "requests" at "requests", Service Count "requests",
        None, |w, i| w.svc(i).requests as f64;
    /// Error responses it answered.
    Errors = "errors" at "errors", Service Count "requests",
        None, |w, i| w.svc(i).errors as f64;
    /// Error responses it answered with status 500.
    Errors500 = "errors_500" at "errors_by_status.500", Service Count "requests",
        None, |w, i| w.svc(i).errors_500 as f64;
    /// Error responses it answered with status 502.
    Errors502 = "errors_502" at "errors_by_status.502", Service Count "requests",
        None, |w, i| w.svc(i).errors_502 as f64;
    /// Error responses it answered with status 503.
    Errors503 = "errors_503" at "errors_by_status.503", Service Count "requests",
        None, |w, i| w.svc(i).errors_503 as f64;
    /// Error responses it answered with status 504.
    Errors504 = "errors_504" at "errors_by_status.504", Service Count "requests",
        None, |w, i| w.svc(i).errors_504 as f64;
    /// Error responses with another status (429, or a 5xx other than 500, 502, 503 and 504).
    ErrorsOther = "errors_other" at "errors_by_status.other", Service Count "requests",
        None, |w, i| other_errors(w.svc(i)) as f64;
    /// The status most of its error responses carried (0: none).
    ErrorStatus = "error_status" at "error_status", Service Count "status",
        col("code", 5, Style::Int), |w, i| main_status(w.svc(i));
    /// Errors ÷ requests.
    ErrorRate = "error_rate" at "error_rate", Service Real "fraction",
        col("err%", 6, Style::Percent(1)), |w, i| ratio(w.svc(i).errors as f64, w.svc(i).requests as f64);
    /// The low end of the error rate's 95% interval (Wilson's, over the requests it answered).
    ErrorRateLow = "error_rate_low" at "error_rate_interval.low", Service Real "fraction",
        None, |w, i| wilson(w.svc(i).errors, w.svc(i).requests).0;
    /// The high end of the error rate's 95% interval.
    ErrorRateHigh = "error_rate_high" at "error_rate_interval.high", Service Real "fraction",
        None, |w, i| wilson(w.svc(i).errors, w.svc(i).requests).1;
    /// Error responses it returned claimed (`x-error-claim: true`): it owns them.
    ClaimsReturnedTrue = "claims_returned_true" at "claims_returned.true", Service Count "responses",
        col("returned true/false/-", 23, Style::Triple), |w, i| w.svc(i).claims_returned[0] as f64;
    /// Error responses it returned unclaimed (`x-error-claim: false`): passed up from below.
    ClaimsReturnedFalse = "claims_returned_false" at "claims_returned.false", Service Count "responses",
        None, |w, i| w.svc(i).claims_returned[1] as f64;
    /// Error responses it returned with no claim header.
    ClaimsReturnedMissing = "claims_returned_missing" at "claims_returned.missing", Service Count "responses",
        None, |w, i| w.svc(i).claims_returned[2] as f64;
    /// Failed attempts it saw come back claimed (`true`).
    ClaimsSeenTrue = "claims_seen_true" at "claims_seen.true", Service Count "attempts",
        None, |w, i| w.svc(i).claims_seen[0] as f64;
    /// Failed attempts it saw come back unclaimed (`false`).
    ClaimsSeenFalse = "claims_seen_false" at "claims_seen.false", Service Count "attempts",
        None, |w, i| w.svc(i).claims_seen[1] as f64;
    /// Failed attempts it saw with no claim (no header, no response, a timeout).
    ClaimsSeenMissing = "claims_seen_missing" at "claims_seen.missing", Service Count "attempts",
        None, |w, i| w.svc(i).claims_seen[2] as f64;
    /// Retries it sent.
    RetriesSent = "retries_sent" at "retries_sent", Service Count "retries",
        col("retries", 9, Style::Int), |w, i| w.svc(i).retries_sent as f64;
    /// Retries it did not send because the callee's error came back unclaimed.
    RetriesSuppressed = "retries_suppressed" at "retries_suppressed", Service Count "retries",
        col("suppress", 9, Style::Int), |w, i| w.svc(i).retries_suppressed as f64;
    /// Retries its retry budget refused.
    BudgetDenied = "budget_denied" at "budget_denied", Service Count "retries",
        col("denied", 7, Style::Int), |w, i| w.svc(i).budget_denied as f64;
    /// Retries the callee's don't-retry header forbade (a non-retryable nack, `x-envoy-overloaded`, a negative pushback); counted among the suppressed.
    RetriesRefused = "retries_refused" at "retries_refused", Service Count "retries",
        None, |w, i| w.out_edges(i).map(|e| w.counts.edges[e].refused).sum::<u64>() as f64;
    /// Calls its open circuit breakers failed fast, without reaching the callee.
    ShortCircuited = "short_circuited" at "short_circuited", Service Count "calls",
        None, |w, i| w.out_edges(i).map(|e| w.counts.edges[e].short_circuited).sum::<u64>() as f64;
    /// Attempts its calls' adaptive throttles rejected locally (the SRE book's client-side throttling), each the caller's own error.
    Throttled = "throttled" at "throttled", Service Count "attempts",
        None, |w, i| w.out_edges(i).map(|e| w.counts.edges[e].throttled).sum::<u64>() as f64;
    /// Attempts of its hedged calls cancelled because another attempt of the same call answered first (gRPC A6 hedging, `hedge:`).
    HedgesCancelled = "hedges_cancelled" at "hedges_cancelled", Service Count "attempts",
        None, |w, i| w.out_edges(i).map(|e| w.counts.edges[e].hedges_cancelled).sum::<u64>() as f64;
    /// Its calls' circuit breakers open at the window's end (half-open ones count a half).
    BreakersOpen = "breakers_open" at "breakers_open", Service Real "breakers",
        None, |w, i| w.out_edges(i).map(|e| w.counts.edges[e].breaker as f64 / 2.0).fold(0.0, |a, b| a + b);
    /// What its calls' retry budget holds at the window's end, as a fraction of its limit: tokens or quota left, or the retry slots free in flight (lowest over its edges; null without a budget or with a `window` budget).
    BudgetLevel = "budget_level" at "budget_level", Service Real "fraction",
        None, |w, i| w.budget_level(i);
    /// Errors its own injected fault caused (ground truth).
    OwnErrors = "own_errors" at "attribution.own_errors", Service Count "responses",
        None, |w, i| w.svc(i).own_errors as f64;
    /// Own errors it nevertheless returned unclaimed.
    WronglyUnclaimed = "wrongly_unclaimed" at "attribution.wrongly_unclaimed", Service Count "responses",
        None, |w, i| w.svc(i).wrongly_unclaimed as f64;
    /// Errors caused below it that it claimed (rule 5 claims excluded).
    WronglyClaimed = "wrongly_claimed" at "attribution.wrongly_claimed", Service Count "responses",
        None, |w, i| w.svc(i).wrongly_claimed as f64;
    /// Claims made by the at-least-once rule (rule 5).
    AtLeastOnceClaims = "at_least_once_claims" at "at_least_once_claims", Service Count "responses",
        None, |w, i| w.svc(i).at_least_once_claims as f64;
    /// Requests whose caller went away before the answer (its attempt timed out).
    Timeouts = "timeouts" at "timeouts", Service Count "requests",
        None, |w, i| w.svc(i).timeouts as f64;
    /// Jobs waiting for a worker at the window's end.
    QueueDepth = "queue_depth" at "queue_depth.now", Service Count "jobs",
        None, |w, i| w.svc(i).queue_depth as f64;
    /// The deepest its queue got over the window.
    QueueDepthMax = "queue_depth_max" at "queue_depth.max", Service Count "jobs",
        None, |w, i| w.queue_peaks.get(i).copied().unwrap_or(0) as f64;
    /// Requests refused at once over its adaptive concurrency limit (`concurrency:`), with a claimed 503.
    Limited = "limited" at "limited", Service Count "requests",
        None, |w, i| w.svc(i).limited as f64;
    /// Its adaptive concurrency limit at the window's end (its first replica's; 0 without `concurrency:`).
    ConcurrencyLimit = "concurrency_limit" at "concurrency_limit", Service Count "requests",
        None, |w, i| w.svc(i).concurrency_limit as f64;
    /// The latency with no queue its concurrency controller estimates at the window's end, ms (Envoy's minRTT, Vegas's no-load RTT; 0 before the first estimate or without one).
    NoLoadLatency = "no_load_latency_ms" at "no_load_latency_ms", Service Real "ms",
        None, |w, i| w.svc(i).no_load_us as f64 / 1000.0;
    /// Jobs on a worker at the window's end.
    InService = "in_service" at "in_service", Service Count "jobs",
        None, |w, i| w.svc(i).in_service as f64;
    /// Busy worker time ÷ worker time available over the window (0 without workers).
    Utilisation = "utilisation" at "utilisation", Service Real "fraction",
        None, |w, i| w.utilisation(i);
    /// Requests refused at once with a claimed 503 because its queue was full.
    Shed = "shed" at "shed", Service Count "requests",
        None, |w, i| w.svc(i).shed as f64;
    /// Jobs that held a worker to the end after their caller had gone; their answers were thrown away.
    WorkWasted = "work_wasted" at "work_wasted", Service Count "jobs",
        None, |w, i| w.svc(i).work_wasted as f64;
    /// Jobs skipped as they reached a worker: their caller had gone (`cancel: true`) or their deadline had passed (`deadline: propagate`).
    Skipped = "skipped" at "skipped", Service Count "jobs",
        None, |w, i| w.svc(i).skipped as f64;
    /// Attempts it still had in flight after their call's deadline, when one was known (0 under `deadline: propagate`).
    LateAttempts = "late_attempts" at "late_attempts", Service Count "attempts",
        None, |w, i| w.svc(i).late_attempts as f64;
    /// Workers ÷ (work + injected latency): the most it can serve (null without workers).
    CapacityRps = "capacity_rps" at "capacity_rps", Service Real "req/s",
        None, |w, i| w.capacity(i);
    /// Median time from a request's arrival at the service to its answer (to within 12.5%).
    LatencyMsP50 = "latency_ms_p50" at "latency_ms.p50", Service Real "ms",
        None, |w, i| w.svc(i).latency.quantile_ms(0.5).unwrap_or(0.0);
    /// 99th percentile time from a request's arrival at the service to its answer (to within 12.5%).
    LatencyMsP99 = "latency_ms_p99" at "latency_ms.p99", Service Real "ms",
        None, |w, i| w.svc(i).latency.quantile_ms(0.99).unwrap_or(0.0);
    /// Root requests per second into the entry.
    RootRps = "root_rps" at "root.rps", Fleet Real "req/s",
        None, |w, i| if w.counts.root.sent > 0 { w.rate(w.counts.root.sent) } else { w.root_rate() };
    /// The entry rate offered: what the end users asked for.
    OfferedRps = "offered_rps" at "root.offered_rps", Fleet Real "req/s",
        None, |w, i| w.topology.load.rps;
    /// Root requests per second that succeeded.
    GoodputRps = "goodput_rps" at "root.goodput_rps", Fleet Real "req/s",
        None, |w, i| w.goodput();
    /// Root requests that ended.
    RootRequests = "root_requests" at "root.requests", Fleet Count "requests",
        None, |w, i| w.root_outcomes().0 as f64;
    /// Root requests that failed.
    RootErrors = "root_errors" at "root.errors", Fleet Count "requests",
        None, |w, i| w.root_outcomes().1 as f64;
    /// Fraction of root requests that succeeded (none when no root request ended).
    RootAvailability = "root_availability" at "root.availability", Fleet Real "fraction",
        None, |w, i| {
            let (n, e) = w.root_outcomes();
            if n > 0 { 1.0 - e as f64 / n as f64 } else { f64::NAN }
        };
    /// The low end of the availability's 95% interval (Wilson's, over the root requests that ended).
    RootAvailabilityLow = "root_availability_low" at "root.availability_interval.low", Fleet Real "fraction",
        None, |w, i| {
            let (n, e) = w.root_outcomes();
            wilson(n.saturating_sub(e), n).0
        };
    /// The high end of the availability's 95% interval.
    RootAvailabilityHigh = "root_availability_high" at "root.availability_interval.high", Fleet Real "fraction",
        None, |w, i| {
            let (n, e) = w.root_outcomes();
            wilson(n.saturating_sub(e), n).1
        };
    /// The model's availability at the entry for the faults and policy in force.
    ModelAvailability = "model_availability" at "root.model_availability", Fleet Real "fraction",
        None, |w, i| w.prediction.root_availability;
    /// Median root latency.
    LatencyP50 = "latency_p50" at "root.latency_ms.p50", Fleet Real "ms",
        None, |w, i| w.root_latency_ms.0;
    /// 99th percentile root latency.
    LatencyP99 = "latency_p99" at "root.latency_ms.p99", Fleet Real "ms",
        None, |w, i| w.root_latency_ms.1;
    /// Root requests not sent: the load generator's in-flight bound was full.
    RootDropped = "root_dropped" at "root.dropped", Fleet Count "requests",
        None, |w, i| w.counts.root.dropped as f64;
    /// Root requests sent into the entry.
    RootSent = "root_sent" at "root.sent", Fleet Count "requests",
        None, |w, i| w.counts.root.sent as f64;
    /// Root requests not sent: the load generator fell behind its schedule (the machine did not give it the time).
    RootSkipped = "root_skipped" at "root.skipped", Fleet Count "requests",
        None, |w, i| w.counts.root.skipped as f64;
    /// How late a timer on the fleet's event loop fired, on average over the window: the fleet's tasks waiting for the machine.
    LabLagMs = "lab_lag_ms" at "lab.lag_ms", Fleet Real "ms",
        None, |w, i| if w.counts.root.ticks > 0 { w.counts.root.lag_us as f64 / w.counts.root.ticks as f64 / 1000.0 } else { 0.0 };
    /// Connections the lab could not open or accept for want of file descriptors (EMFILE): the machine's limit, not the callee's failure.
    LabFdErrors = "lab_fd_errors" at "lab.fd_errors", Fleet Count "errors",
        None, |w, i| w.counts.root.fd_errors as f64;
    /// Requests abandoned by their caller (an attempt timed out) in a fleet driven by the lab's load where nothing takes time and nothing fails (no work, latency, fault, worker pool, capacity or outside service in force): the machine did not answer in time.
    LabTimeouts = "lab_timeouts" at "lab.timeouts", Fleet Count "requests",
        None, |w, i| w.machine_timeouts() as f64;
    /// Reads of a node's counters that failed, in a session over one process per service: the figures miss that node's newest traffic.
    LabNodeMisses = "lab_node_misses" at "lab.node_misses", Fleet Count "reads",
        None, |w, i| w.counts.root.node_misses as f64;
    /// The most consecutive hops that retried for one root request.
    StormRadius = "storm_radius" at "storm_radius.max", Fleet Count "hops",
        None, |w, i| w.radius.max as f64;
    /// Mean storm radius over the root requests that saw a retry.
    StormRadiusMean = "storm_radius_mean" at "storm_radius.mean", Fleet Real "hops",
        None, |w, i| w.radius.mean();
    /// The worst radius over every single service failing, under the policy in force (model).
    StormRadiusStatic = "storm_radius_static" at "storm_radius.static", Fleet Count "hops",
        None, |w, i| w.static_radius as f64;
    /// The model's radius for the faults and policy in force.
    StormRadiusModel = "storm_radius_model" at "storm_radius.model", Fleet Count "hops",
        None, |w, i| w.prediction.storm_radius as f64;
    /// Retries suppressed fleet-wide: the spurious requests ownership avoided.
    SpuriousAvoided = "spurious_avoided" at "spurious_avoided", Fleet Count "retries",
        None, |w, i| w.counts.spurious_avoided() as f64;
    /// The retries ownership stopped on the paths through the immediate caller of a failing service that had the most: Uber's 200,000 at a single immediate caller.
    SpuriousAvoidedTopCaller = "spurious_avoided_top_caller" at "spurious_avoided_by_caller.top", Fleet Count "retries",
        None, |w, i| w.stops_by_caller().first().map_or(0, |c| c.stopped) as f64;
    /// The retries ownership stopped, summed over the immediate callers of the failing services and their ancestors: Uber's 9.5 million, aggregated at the roots.
    SpuriousAvoidedByCallers = "spurious_avoided_by_callers" at "spurious_avoided_by_caller.sum", Fleet Count "retries",
        None, |w, i| w.stops_by_caller().iter().map(|c| c.stopped).sum::<u64>() as f64;
}

/// Root requests not sent (dropped or skipped), as a share of those due,
/// above which a window's figures are lower bounds.
pub const SATURATED_UNSENT: f64 = 0.01;
/// The lab's mean tick lateness above which a window's figures are lower
/// bounds: the machine was not giving the lab its time.
pub const SATURATED_LAG_MS: f64 = 100.0;
/// Requests abandoned for lateness where nothing is slow, as a share of
/// the root requests, above which a window's figures are lower bounds.
pub const SATURATED_TIMEOUTS: f64 = 0.001;

/// Why a window's measured figures are lower bounds rather than what the
/// mechanism does: the machine could not carry the load (root requests
/// due but not sent, the fleet's event loop running late). Empty when the lab
/// kept up. Reads a window's fleet figures.
pub fn saturation(fleet: &Figures) -> Vec<String> {
    let mut reasons = vec![];
    let (sent, dropped, skipped) = (
        fleet.count(Figure::RootSent),
        fleet.count(Figure::RootDropped),
        fleet.count(Figure::RootSkipped),
    );
    let due = sent + dropped + skipped;
    let unsent = dropped + skipped;
    if due >= 20 && unsent > 2 && unsent as f64 > SATURATED_UNSENT * due as f64 {
        reasons.push(format!(
            "{unsent} of {due} root requests due were not sent ({:.1}%): {dropped} at the load generator's in-flight bound, {skipped} because it fell behind its schedule",
            unsent as f64 * 100.0 / due as f64
        ));
    }
    let lag = fleet[Figure::LabLagMs];
    if lag > SATURATED_LAG_MS {
        reasons.push(format!(
            "the fleet's event loop ran {lag:.0} ms late on average: the machine did not give it its time"
        ));
    }
    let late = fleet.count(Figure::LabTimeouts);
    let answered = fleet.count(Figure::RootRequests);
    if late > 2 && late as f64 > SATURATED_TIMEOUTS * answered.max(1) as f64 {
        reasons.push(format!(
            "{late} requests timed out in a fleet where nothing is slow or failing ({:.1}% of {answered} root requests): the machine did not answer in time",
            late as f64 * 100.0 / answered.max(1) as f64
        ));
    }
    let fd = fleet.count(Figure::LabFdErrors);
    if fd > 0 {
        reasons.push(format!(
            "{fd} times a connection could not be opened or accepted for want of file descriptors (EMFILE): raise `ulimit -n`"
        ));
    }
    let missed = fleet.count(Figure::LabNodeMisses);
    if missed > 0 {
        reasons.push(format!(
            "{missed} reads of a node's counters failed: its rows miss its newest traffic"
        ));
    }
    reasons
}

impl Figure {
    /// Whether the figure is measured from traffic (and so a lower bound
    /// when the lab is saturated), rather than the model's, a setting, or
    /// the lab's own health.
    pub fn is_measured(self) -> bool {
        !matches!(
            self,
            Figure::ModelAmplification
                | Figure::ModelAvailability
                | Figure::StormRadiusStatic
                | Figure::StormRadiusModel
                | Figure::CapacityRps
                | Figure::OfferedRps
                | Figure::RootDropped
                | Figure::RootSkipped
                | Figure::RootSent
                | Figure::LabLagMs
                | Figure::LabFdErrors
                | Figure::LabTimeouts
        )
    }

    /// The figure a scenario names.
    pub fn parse(s: &str) -> Option<Figure> {
        Figure::ALL.iter().copied().find(|f| f.name() == s)
    }

    /// Every figure of one scope.
    pub fn of(scope: Scope) -> impl Iterator<Item = Figure> {
        Figure::ALL
            .iter()
            .copied()
            .filter(move |f| f.scope() == scope)
    }

    /// The names of one scope's figures, comma-separated.
    pub fn list(scope: Scope) -> String {
        Figure::of(scope)
            .map(|f| f.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// One scope's figures over one window: a value per catalogue entry of
/// that scope. Serialises as the report's JSON, nesting by path.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    scope: Scope,
    values: Vec<f64>,
}

impl Figures {
    /// Every figure of `scope` over window `w` (for service `i`).
    pub fn measure(w: &Window<'_>, scope: Scope, i: usize) -> Figures {
        Figures {
            scope,
            values: Figure::ALL
                .iter()
                .map(|f| {
                    if f.scope() == scope {
                        f.read(w, i)
                    } else {
                        f64::NAN
                    }
                })
                .collect(),
        }
    }

    /// Figures of `scope` with every value `v` (for tests and fixtures).
    pub fn filled(scope: Scope, v: f64) -> Figures {
        Figures {
            scope,
            values: vec![v; Figure::ALL.len()],
        }
    }

    /// Sets one figure (for the model's figures of a window, and tests).
    pub fn set(&mut self, f: Figure, v: f64) {
        self.values[f as usize] = v;
    }

    /// A figure as a whole number (counts).
    pub fn count(&self, f: Figure) -> u64 {
        let v = self[f];
        if v.is_finite() && v > 0.0 {
            v.round() as u64
        } else {
            0
        }
    }

    /// The JSON object, nested by path, in catalogue order.
    pub fn to_value(&self) -> Map<String, Value> {
        let mut out = Map::new();
        for f in Figure::of(self.scope) {
            let v = self[f];
            let value = match f.kind() {
                Kind::Count => Value::from(self.count(f)),
                Kind::Real => serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number),
            };
            let mut parts = f.path().split('.').peekable();
            let mut at = &mut out;
            while let Some(p) = parts.next() {
                if parts.peek().is_none() {
                    at.insert(p.to_string(), value);
                    break;
                }
                at = at
                    .entry(p.to_string())
                    .or_insert_with(|| Value::Object(Map::new()))
                    .as_object_mut()
                    .expect("a figure's path never runs through a value");
            }
        }
        out
    }
}

impl Index<Figure> for Figures {
    type Output = f64;
    fn index(&self, f: Figure) -> &f64 {
        &self.values[f as usize]
    }
}

impl Serialize for Figures {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

mod evidence;
mod window;
pub use evidence::{wilson, MIN_EXPECTED_REQUESTS, MODEL_TOLERANCE, Z_DIFFERS, Z_INTERVAL};
use window::{main_status, other_errors, ratio};
pub use window::{Window, WindowCache};

#[cfg(test)]
mod tests;
