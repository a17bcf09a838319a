//! Copies of the fleet's counters at one moment, and their differences:
//! what every window, figure and report is computed from.

use serde::{Deserialize, Serialize};

use super::latency::LatencyCounts;

/// Hands the one list of a service's counters to the macro `$then`: the
/// copy here ([`ServiceCounts`]) and the live atomics of
/// the fleet's counters (`chaoslab_fleet::metrics::counters`) are both
/// made from it, so a counter is added in one line.
#[doc(hidden)]
#[macro_export]
macro_rules! with_service_counters {
    ($then:ident) => {
        $then! {
            counts {
                /// Requests answered.
                requests,
                /// Error responses.
                errors,
                /// Error responses with status 500.
                errors_500,
                /// Error responses with status 502.
                errors_502,
                /// Error responses with status 503.
                errors_503,
                /// Error responses with status 504.
                errors_504,
                /// Root requests it opened (the entry's count of end-user requests).
                roots,
                /// Root requests its closed-loop clients offer while answers are
                /// instant (clients ÷ think a second), counted as time passes; 0
                /// for an open-loop root.
                nominal_roots,
                /// Retries it sent.
                retries_sent,
                /// Retries it did not send because the callee disowned the error.
                retries_suppressed,
                /// Retries its budget refused.
                budget_denied,
                /// Errors its own fault caused (ground truth).
                own_errors,
                /// Own errors it nevertheless unclaimed.
                wrongly_unclaimed,
                /// Errors caused below that it claimed (rule 5 claims excluded).
                wrongly_claimed,
                /// Claims made by the at-least-once rule.
                at_least_once_claims,
                /// Requests whose caller went away before the answer.
                timeouts,
                /// Requests refused at once because the queue was full.
                shed,
                /// Requests refused at once over its adaptive concurrency limit.
                limited,
                /// Jobs that ran to the end after their caller had gone.
                work_wasted,
                /// Jobs skipped on reaching a worker because their caller had gone
                /// (`cancel: true`) or their deadline had passed.
                skipped,
                /// Microseconds its workers spent on jobs (counted as each ends).
                busy_us,
                /// Microseconds from arrival to answer, summed over the requests
                /// answered (the sum of the latency histogram).
                latency_us,
                /// Outbound attempts still in flight after their call's deadline.
                late_attempts,
            }
            triples {
                /// Claims written on its error responses: true, false, missing.
                claims_returned,
                /// Claims read on failed outbound attempts: true, false, missing.
                claims_seen,
            }
            gauges {
                /// Jobs waiting for a worker now.
                queue_depth,
                /// The deepest the queue got since the previous copy.
                queue_peak,
                /// Jobs on a worker now.
                in_service,
                /// Its adaptive concurrency limit now (its first replica's; 0 without one).
                concurrency_limit,
                /// The latency with no queue its concurrency controller estimates, µs (0: none yet).
                no_load_us,
            }
        }
    };
}
pub use with_service_counters;

/// A service's counters copied ([`ServiceCounts`]) and their difference.
macro_rules! service_counts {
    (
        counts { $($(#[doc = $d:literal])* $c:ident,)* }
        triples { $($(#[doc = $td:literal])* $t:ident,)* }
        gauges { $($(#[doc = $gd:literal])* $g:ident,)* }
    ) => {
        /// A copy of one service's counters.
        #[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
        pub struct ServiceCounts {
            $($(#[doc = $d])* pub $c: u64,)*
            $($(#[doc = $td])* pub $t: [u64; 3],)*
            $($(#[doc = $gd])* pub $g: u64,)*
            /// Time from each request's arrival to its answer.
            #[serde(skip)]
            pub latency: LatencyCounts,
        }

        impl ServiceCounts {
            /// `self - earlier`, field by field (saturating); a gauge
            /// keeps its later value.
            pub fn since(&self, earlier: &ServiceCounts) -> ServiceCounts {
                let d3 = |a: [u64; 3], b: [u64; 3]| std::array::from_fn(|k| a[k].saturating_sub(b[k]));
                ServiceCounts {
                    $($c: self.$c.saturating_sub(earlier.$c),)*
                    $($t: d3(self.$t, earlier.$t),)*
                    $($g: self.$g,)*
                    latency: self.latency.since(&earlier.latency),
                }
            }

            /// `self + other`, field by field, gauges too: the replicas of
            /// a service, each a process of its own, as one service.
            pub fn plus(&self, other: &ServiceCounts) -> ServiceCounts {
                let a3 = |a: [u64; 3], b: [u64; 3]| std::array::from_fn(|k| a[k].wrapping_add(b[k]));
                ServiceCounts {
                    $($c: self.$c.wrapping_add(other.$c),)*
                    $($t: a3(self.$t, other.$t),)*
                    $($g: self.$g.wrapping_add(other.$g),)*
                    latency: self.latency.plus(&other.latency),
                }
            }
        }
    };
}

with_service_counters!(service_counts);

impl ServiceCounts {
    /// The root requests its descendants' baselines are measured
    /// against: those it opened, or for a closed-loop root those its
    /// clients offer while answers are instant, since what it opens falls
    /// as its clients wait on a slow fleet, and that fall is the load a
    /// closed loop sheds (SPEC section 15).
    pub fn baseline_roots(&self) -> u64 {
        if self.nominal_roots > 0 {
            self.nominal_roots
        } else {
            self.roots
        }
    }
}

/// A copy of one edge's counters.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EdgeCounts {
    /// Attempts sent, retries included.
    pub attempts: u64,
    /// Attempts that failed: an error answer or none (what a tracer's
    /// servicegraph counts as failed requests).
    #[serde(default)]
    pub failed_attempts: u64,
    /// Retries sent.
    pub retries: u64,
    /// Retries suppressed.
    pub suppressed: u64,
    /// Retries the budget refused.
    pub budget_denied: u64,
    /// Retries the callee's don't-retry signal forbade (counted in
    /// `suppressed` too).
    pub refused: u64,
    /// Logical calls that failed after all attempts.
    pub failed_calls: u64,
    /// Time its attempts took, all together, µs.
    pub attempt_us: u64,
    /// Calls its open circuit breaker failed fast.
    pub short_circuited: u64,
    /// Attempts its adaptive throttle rejected locally, each ending its
    /// call (the SRE book's client-side throttling).
    #[serde(default)]
    pub throttled: u64,
    /// Attempts of hedged calls cancelled when another answered first.
    #[serde(default)]
    pub hedges_cancelled: u64,
    /// Gauge: its circuit breaker's state (0 closed or none, 1 half-open,
    /// 2 open).
    pub breaker: u64,
    /// Gauge: what the edge's budget holds, in thousandths (tokens, quota
    /// left, or retries in flight); 0 on an edge without a budget.
    pub budget_level_milli: u64,
    /// Gauge: the budget's limit, in thousandths (a full bucket or quota,
    /// or the retries allowed in flight); 0 on an edge without a budget.
    pub budget_limit_milli: u64,
}

impl EdgeCounts {
    /// How long one attempt took on average, seconds (0 with none).
    pub fn attempt_latency_s(&self) -> f64 {
        if self.attempts == 0 {
            0.0
        } else {
            self.attempt_us as f64 / self.attempts as f64 / 1e6
        }
    }

    /// The budget's level and limit, if the edge has a budget.
    pub fn budget_level(&self) -> Option<(f64, f64)> {
        (self.budget_limit_milli > 0 || self.budget_level_milli > 0).then(|| {
            (
                self.budget_level_milli as f64 / 1000.0,
                self.budget_limit_milli as f64 / 1000.0,
            )
        })
    }

    /// `self + other`: an edge called from several replicas of its
    /// caller, each a process of its own, as one edge (its gauges too:
    /// the budgets and breakers are per caller replica).
    pub fn plus(&self, o: &EdgeCounts) -> EdgeCounts {
        EdgeCounts {
            attempts: self.attempts + o.attempts,
            failed_attempts: self.failed_attempts + o.failed_attempts,
            retries: self.retries + o.retries,
            suppressed: self.suppressed + o.suppressed,
            budget_denied: self.budget_denied + o.budget_denied,
            refused: self.refused + o.refused,
            failed_calls: self.failed_calls + o.failed_calls,
            attempt_us: self.attempt_us + o.attempt_us,
            short_circuited: self.short_circuited + o.short_circuited,
            throttled: self.throttled + o.throttled,
            hedges_cancelled: self.hedges_cancelled + o.hedges_cancelled,
            breaker: self.breaker.max(o.breaker),
            budget_level_milli: self.budget_level_milli + o.budget_level_milli,
            budget_limit_milli: self.budget_limit_milli + o.budget_limit_milli,
        }
    }

    /// `self - earlier`.
    pub fn since(&self, e: &EdgeCounts) -> EdgeCounts {
        EdgeCounts {
            attempts: self.attempts.saturating_sub(e.attempts),
            failed_attempts: self.failed_attempts.saturating_sub(e.failed_attempts),
            retries: self.retries.saturating_sub(e.retries),
            suppressed: self.suppressed.saturating_sub(e.suppressed),
            budget_denied: self.budget_denied.saturating_sub(e.budget_denied),
            refused: self.refused.saturating_sub(e.refused),
            failed_calls: self.failed_calls.saturating_sub(e.failed_calls),
            attempt_us: self.attempt_us.saturating_sub(e.attempt_us),
            short_circuited: self.short_circuited.saturating_sub(e.short_circuited),
            throttled: self.throttled.saturating_sub(e.throttled),
            hedges_cancelled: self.hedges_cancelled.saturating_sub(e.hedges_cancelled),
            // Gauges: the later value.
            breaker: self.breaker,
            budget_level_milli: self.budget_level_milli,
            budget_limit_milli: self.budget_limit_milli,
        }
    }
}

/// One replica's traffic, for a service of more than one replica (SPEC
/// section 11): what it received and answered, and what its callers sent
/// it, first attempts apart from retries.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicaCounts {
    /// The service.
    pub service: usize,
    /// Its replica (0-based).
    pub replica: u32,
    /// Requests it received.
    pub requests: u64,
    /// Error answers it gave.
    pub errors: u64,
    /// First attempts its callers sent it.
    pub first_attempts: u64,
    /// Retries its callers sent it.
    pub retries: u64,
}

impl ReplicaCounts {
    /// `self - earlier`.
    pub fn since(&self, e: &ReplicaCounts) -> ReplicaCounts {
        ReplicaCounts {
            requests: self.requests.saturating_sub(e.requests),
            errors: self.errors.saturating_sub(e.errors),
            first_attempts: self.first_attempts.saturating_sub(e.first_attempts),
            retries: self.retries.saturating_sub(e.retries),
            ..*self
        }
    }
}

/// One replica of an edge's callee as the edge's outlier detection sees
/// it (SPEC section 17), for an edge whose callee has more than one.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutlierCounts {
    /// The edge.
    pub edge: usize,
    /// The callee's replica (0-based).
    pub replica: u32,
    /// Times the edge's outlier detection ejected it.
    pub ejections: u64,
    /// Gauge: whether it is ejected now (1 or 0; a count of the callers'
    /// processes ejecting it, summed over the nodes of a session).
    pub ejected: u64,
}

impl OutlierCounts {
    /// `self - earlier` (the gauge: the later value).
    pub fn since(&self, e: &OutlierCounts) -> OutlierCounts {
        OutlierCounts {
            ejections: self.ejections.saturating_sub(e.ejections),
            ..*self
        }
    }
}

/// Storm radii a root's counts tell apart; a larger one counts as the
/// last.
pub const RADIUS_BUCKETS: usize = 32;

/// One root's view (SPEC section 11), for a topology of many: what its end
/// users sent and saw, and the storm radius of its requests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PerRootCounts {
    /// Root requests sent.
    pub sent: u64,
    /// Answered with success.
    pub ok: u64,
    /// Answered with an error, or not answered.
    pub errors: u64,
    /// The end user's latency, bucketed as a service's.
    #[serde(skip)]
    pub latency: LatencyCounts,
    /// Its root requests that sent a retry, by storm radius (index 0 is
    /// radius 1).
    pub radius: Vec<u64>,
}

impl Default for PerRootCounts {
    fn default() -> Self {
        PerRootCounts {
            sent: 0,
            ok: 0,
            errors: 0,
            latency: LatencyCounts::default(),
            radius: vec![0; RADIUS_BUCKETS],
        }
    }
}

impl PerRootCounts {
    /// `self - earlier`.
    pub fn since(&self, e: &PerRootCounts) -> PerRootCounts {
        PerRootCounts {
            sent: self.sent.saturating_sub(e.sent),
            ok: self.ok.saturating_sub(e.ok),
            errors: self.errors.saturating_sub(e.errors),
            latency: self.latency.since(&e.latency),
            radius: self
                .radius
                .iter()
                .zip(e.radius.iter().chain(std::iter::repeat(&0)))
                .map(|(a, b)| a.saturating_sub(*b))
                .collect(),
        }
    }

    /// Its root requests that completed.
    pub fn completed(&self) -> u64 {
        self.ok + self.errors
    }

    /// `ok / completed`, NaN with none.
    pub fn availability(&self) -> f64 {
        match self.completed() {
            0 => f64::NAN,
            n => self.ok as f64 / n as f64,
        }
    }

    /// The storm radius of its requests: the largest, and the mean over
    /// those with a retry.
    pub fn radius(&self) -> (u64, f64) {
        let count: u64 = self.radius.iter().sum();
        let sum: u64 = self
            .radius
            .iter()
            .enumerate()
            .map(|(i, n)| (i as u64 + 1) * n)
            .sum();
        let max = self
            .radius
            .iter()
            .rposition(|&n| n > 0)
            .map_or(0, |i| i as u64 + 1);
        (
            max,
            if count == 0 {
                0.0
            } else {
                sum as f64 / count as f64
            },
        )
    }
}

/// A copy of all counters at one moment.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Per service, in topology order.
    pub services: Vec<ServiceCounts>,
    /// Per edge, in topology order.
    pub edges: Vec<EdgeCounts>,
    /// The end user's view.
    pub root: RootCounts,
    /// Per replica of each service with more than one, in topology order.
    pub replicas: Vec<ReplicaCounts>,
    /// Per edge whose callee has more than one replica, per replica, in
    /// topology order: what its outlier detection did.
    pub outliers: Vec<OutlierCounts>,
    /// Per root of a topology of many, in `load.roots` order (empty for
    /// one root, and in a session over nodes).
    pub roots: Vec<PerRootCounts>,
}

impl Counts {
    /// `self - earlier`.
    pub fn since(&self, e: &Counts) -> Counts {
        Counts {
            services: self
                .services
                .iter()
                .zip(&e.services)
                .map(|(a, b)| a.since(b))
                .collect(),
            edges: self
                .edges
                .iter()
                .zip(&e.edges)
                .map(|(a, b)| a.since(b))
                .collect(),
            root: self.root.since(&e.root),
            replicas: self
                .replicas
                .iter()
                .zip(&e.replicas)
                .map(|(a, b)| a.since(b))
                .collect(),
            outliers: self
                .outliers
                .iter()
                .zip(e.outliers.iter().map(Some).chain(std::iter::repeat(None)))
                .map(|(a, b)| b.map_or(*a, |b| a.since(b)))
                .collect(),
            roots: self
                .roots
                .iter()
                .zip(&e.roots)
                .map(|(a, b)| a.since(b))
                .collect(),
        }
    }

    /// Edge `edge`'s outlier rows (they are in edge order).
    pub fn outliers_of(&self, edge: usize) -> &[OutlierCounts] {
        let from = self.outliers.partition_point(|o| o.edge < edge);
        let to = from + self.outliers[from..].partition_point(|o| o.edge == edge);
        &self.outliers[from..to]
    }

    /// Retries suppressed across the fleet: spurious requests avoided.
    pub fn spurious_avoided(&self) -> u64 {
        self.services.iter().map(|s| s.retries_suppressed).sum()
    }
}

/// What the end user (the load generator) saw, and how well the lab kept
/// its own schedule: what tells a measured figure from one the machine
/// could not carry.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootCounts {
    /// Root requests sent.
    pub sent: u64,
    /// Answered with success.
    pub ok: u64,
    /// Answered with an error, or not answered.
    pub errors: u64,
    /// Not sent: too many already in flight (open-loop overload).
    pub dropped: u64,
    /// Not sent: the load generator fell behind its schedule (the machine
    /// did not give it the time to send them).
    pub skipped: u64,
    /// Ticks of the probe timer on the fleet's event loop so far.
    pub ticks: u64,
    /// How late the ticks came, summed, in µs: the fleet's event loop
    /// waiting for the machine.
    pub lag_us: u64,
    /// The latest tick's lateness, in µs (kept, not summed).
    pub lag_max_us: u64,
    /// Connections the lab could not open or accept for want of file
    /// descriptors (`EMFILE`, `ENFILE`).
    pub fd_errors: u64,
    /// Reads of a node's counters that failed (a distributed session):
    /// that node's rows are as last read, missing its newest traffic.
    pub node_misses: u64,
}

impl RootCounts {
    /// `self - earlier`.
    pub fn since(&self, e: &RootCounts) -> RootCounts {
        RootCounts {
            sent: self.sent.saturating_sub(e.sent),
            ok: self.ok.saturating_sub(e.ok),
            errors: self.errors.saturating_sub(e.errors),
            dropped: self.dropped.saturating_sub(e.dropped),
            skipped: self.skipped.saturating_sub(e.skipped),
            ticks: self.ticks.saturating_sub(e.ticks),
            lag_us: self.lag_us.saturating_sub(e.lag_us),
            lag_max_us: self.lag_max_us,
            fd_errors: self.fd_errors.saturating_sub(e.fd_errors),
            node_misses: self.node_misses.saturating_sub(e.node_misses),
        }
    }

    /// Root requests due by the schedule: sent, dropped or skipped.
    pub fn offered(&self) -> u64 {
        self.sent + self.dropped + self.skipped
    }

    /// Completed requests.
    pub fn completed(&self) -> u64 {
        self.ok + self.errors
    }

    /// Fraction of completed requests that succeeded; NaN when none
    /// completed (there is nothing to measure).
    pub fn availability(&self) -> f64 {
        if self.completed() == 0 {
            f64::NAN
        } else {
            self.ok as f64 / self.completed() as f64
        }
    }
}

mod wire;
pub use wire::{NodeRows, Rows, WireCounts, MAX_ROWS};
