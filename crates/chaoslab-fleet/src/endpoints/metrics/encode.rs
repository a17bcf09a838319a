//! The OpenMetrics text of one scrape: every metric of the catalogue,
//! written from a copy of the fleet's counters and the newest snapshot.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

use crate::lab::figures::Figure;
use crate::lab::Snapshot;
use crate::metrics::latency::{latency_bucket_upper_us, LATENCY_BUCKETS};
use crate::metrics::refusals::Reason;
use crate::metrics::Counts;

use super::catalogue::help;
use super::{Current, Source};

#[derive(Debug)]
pub(super) struct Exporter(pub(super) Current);

pub(super) type Labels = Vec<(&'static str, String)>;

/// A service's latency histogram as Prometheus buckets: the counts
/// between powers of two of a microsecond.
#[derive(Debug)]
struct LatencyHistogram {
    sum_s: f64,
    count: u64,
    buckets: Vec<(f64, u64)>,
}

impl LatencyHistogram {
    fn of(c: &crate::metrics::ServiceCounts) -> LatencyHistogram {
        let mut buckets = vec![];
        let mut acc = 0u64;
        for b in 0..LATENCY_BUCKETS {
            acc += u64::from(c.latency.0[b]);
            let last = b == LATENCY_BUCKETS - 1;
            // Every fourth bucket ends on a power of two.
            if last || b % 4 == 3 {
                let upper = if last {
                    f64::MAX
                } else {
                    latency_bucket_upper_us(b) as f64 / 1e6
                };
                buckets.push((upper, acc));
                acc = 0;
            }
        }
        LatencyHistogram {
            sum_s: c.latency_us as f64 / 1e6,
            count: buckets.iter().map(|b| b.1).sum(),
            buckets,
        }
    }
}

impl EncodeMetric for LatencyHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        encoder.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
            self.sum_s,
            self.count,
            &self.buckets,
            None,
        )
    }
    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

/// Writes one family: its name, the catalogue's help, a value per label
/// set (nothing when there is no value).
pub(super) fn family<M: EncodeMetric>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    values: Vec<(Labels, M)>,
) -> Result<(), std::fmt::Error> {
    let Some((_, first)) = values.first() else {
        return Ok(());
    };
    let mut metric = encoder.encode_descriptor(name, help(name), None, first.metric_type())?;
    for (labels, value) in &values {
        value.encode(metric.encode_family(labels)?)?;
    }
    Ok(())
}

pub(super) fn counter(v: u64) -> ConstCounter<u64> {
    ConstCounter::new(v)
}

pub(super) fn gauge(v: f64) -> ConstGauge<f64> {
    ConstGauge::new(if v.is_finite() { v } else { 0.0 })
}

impl Source {
    pub(super) fn labels(&self, more: Labels) -> Labels {
        let mut l = more;
        if let Some(p) = &self.policy {
            l.push(("policy", p.clone()));
        }
        l
    }
    fn svc(&self, i: usize) -> Labels {
        self.labels(vec![("service", self.services[i].clone())])
    }
    fn edge(&self, i: usize) -> Labels {
        let (from, to) = &self.edges[i];
        self.labels(vec![("caller", from.clone()), ("callee", to.clone())])
    }
    fn per_service<M>(&self, f: impl Fn(usize) -> M) -> Vec<(Labels, M)> {
        (0..self.services.len())
            .map(|i| (self.svc(i), f(i)))
            .collect()
    }
    fn per_edge<M>(&self, f: impl Fn(usize) -> M) -> Vec<(Labels, M)> {
        (0..self.edges.len())
            .map(|i| (self.edge(i), f(i)))
            .collect()
    }

    /// Each edge's callee replica's labels: the edge's, and the replica.
    fn edge_replica(&self, edge: usize, replica: u32) -> Labels {
        let mut l = self.edge(edge);
        let at = l
            .iter()
            .position(|(k, _)| *k == "callee")
            .map_or(l.len(), |i| i + 1);
        l.insert(at, ("replica", replica.to_string()));
        l
    }

    /// Each edge's outlier rows as `(labels, ejections, ejected)`: one per
    /// replica of its callee; a callee of one replica is its replica 0,
    /// never ejected.
    fn outlier_rows(&self, c: &Counts) -> Vec<(Labels, u64, u64)> {
        (0..self.edges.len())
            .flat_map(|i| {
                let mine = c.outliers_of(i);
                if mine.is_empty() {
                    vec![(self.edge_replica(i, 0), 0, 0)]
                } else {
                    mine.iter()
                        .map(|o| (self.edge_replica(i, o.replica), o.ejections, o.ejected))
                        .collect()
                }
            })
            .collect()
    }

    /// Each replica's requests, errors and attempts; a service without
    /// replicas is its own replica 0. Then each edge's outlier ejections
    /// per replica of its callee.
    fn encode_replicas(
        &self,
        e: &mut DescriptorEncoder,
        c: &Counts,
    ) -> Result<(), std::fmt::Error> {
        // (service, replica, requests, errors, first attempts, retries)
        let mut rows: Vec<(usize, u32, u64, u64, u64, u64)> = vec![];
        for (i, s) in c.services.iter().enumerate() {
            let mine: Vec<_> = c.replicas.iter().filter(|r| r.service == i).collect();
            if mine.is_empty() {
                let into = self.edges_into(i);
                let attempts: u64 = into.iter().map(|&k| c.edges[k].attempts).sum();
                let retries: u64 = into.iter().map(|&k| c.edges[k].retries).sum();
                rows.push((
                    i,
                    0,
                    s.requests,
                    s.errors,
                    attempts.saturating_sub(retries),
                    retries,
                ));
            } else {
                rows.extend(mine.iter().map(|r| {
                    (
                        i,
                        r.replica,
                        r.requests,
                        r.errors,
                        r.first_attempts,
                        r.retries,
                    )
                }));
            }
        }
        let labels = |i: usize, r: u32| {
            let mut l = self.svc(i);
            l.insert(1, ("replica", r.to_string()));
            l
        };
        family(
            e,
            "chaoslab_replica_requests",
            rows.iter()
                .map(|x| (labels(x.0, x.1), counter(x.2)))
                .collect(),
        )?;
        family(
            e,
            "chaoslab_replica_errors",
            rows.iter()
                .map(|x| (labels(x.0, x.1), counter(x.3)))
                .collect(),
        )?;
        family(
            e,
            "chaoslab_replica_attempts",
            rows.iter()
                .flat_map(|x| {
                    [("first", x.4), ("retry", x.5)].map(|(a, v)| {
                        let mut l = labels(x.0, x.1);
                        l.insert(2, ("attempt", a.to_string()));
                        (l, counter(v))
                    })
                })
                .collect(),
        )?;
        family(
            e,
            "chaoslab_outlier_ejections",
            self.outlier_rows(c)
                .into_iter()
                .map(|(l, n, _)| (l, counter(n)))
                .collect(),
        )
    }

    /// Each root's requests and errors: the per-root counts of a topology
    /// of many, the root counts of one.
    fn encode_entries(&self, e: &mut DescriptorEncoder, c: &Counts) -> Result<(), std::fmt::Error> {
        let rows = self.root_rows(&self.roots, c);
        let labels = |n: &str| self.labels(vec![("root", n.to_string())]);
        family(
            e,
            "chaoslab_entry_requests",
            rows.iter().map(|r| (labels(&r.0), counter(r.1))).collect(),
        )?;
        family(
            e,
            "chaoslab_entry_errors",
            rows.iter().map(|r| (labels(&r.0), counter(r.2))).collect(),
        )
    }

    /// Each root's name in `names` with its requests and errors.
    pub(super) fn root_rows(&self, names: &[String], c: &Counts) -> Vec<(String, u64, u64)> {
        if c.roots.len() == names.len() && names.len() > 1 {
            names
                .iter()
                .zip(&c.roots)
                .map(|(n, r)| (n.clone(), r.sent, r.errors))
                .collect()
        } else {
            names
                .first()
                .map(|n| (n.clone(), c.root.sent, c.root.errors))
                .into_iter()
                .collect()
        }
    }

    /// The edges into service `i`.
    fn edges_into(&self, i: usize) -> Vec<usize> {
        let name = &self.services[i];
        (0..self.edges.len())
            .filter(|&k| &self.edges[k].1 == name)
            .collect()
    }

    /// Every family, in the order a scrape has always listed them: by
    /// what each counts over (services, edges, replicas, roots, the fleet),
    /// counters before the gauges of the moment.
    fn encode(&self, e: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let c: Counts = self.metrics.counts();
        let snap = self.snapshot.borrow().clone();
        self.encode_service_counters(e, &c)?;
        self.encode_edge_counters(e, &c)?;
        self.encode_replicas(e, &c)?;
        self.encode_entries(e, &c)?;
        self.encode_fleet_counters(e, &c)?;
        self.encode_service_gauges(e, &c, &snap)?;
        self.encode_edge_gauges(e, &c)?;
        self.encode_fleet_gauges(e, &snap)?;
        self.encode_servicegraph(e, &c)
    }

    /// Each service's requests, errors, claims, and the requests it lost
    /// (timed out, shed, wasted) or failed itself.
    fn encode_service_counters(
        &self,
        e: &mut DescriptorEncoder,
        c: &Counts,
    ) -> Result<(), std::fmt::Error> {
        let sc = |i: usize| &c.services[i];
        family(
            e,
            "chaoslab_requests",
            self.per_service(|i| counter(sc(i).requests)),
        )?;
        family(
            e,
            "chaoslab_errors",
            self.per_service(|i| counter(sc(i).errors)),
        )?;
        self.encode_statuses(e, c)?;
        self.encode_claims(e, c)?;
        family(
            e,
            "chaoslab_timeouts",
            self.per_service(|i| counter(sc(i).timeouts)),
        )?;
        family(
            e,
            "chaoslab_shed",
            self.per_service(|i| counter(sc(i).shed)),
        )?;
        family(
            e,
            "chaoslab_work_wasted",
            self.per_service(|i| counter(sc(i).work_wasted)),
        )?;
        family(
            e,
            "chaoslab_own_errors",
            self.per_service(|i| counter(sc(i).own_errors)),
        )
    }

    /// Each service's error responses by status.
    fn encode_statuses(
        &self,
        e: &mut DescriptorEncoder,
        c: &Counts,
    ) -> Result<(), std::fmt::Error> {
        let values = (0..self.services.len())
            .flat_map(|i| {
                let s = &c.services[i];
                let other = s
                    .errors
                    .saturating_sub(s.errors_500 + s.errors_502 + s.errors_503 + s.errors_504);
                [
                    ("500", s.errors_500),
                    ("502", s.errors_502),
                    ("503", s.errors_503),
                    ("504", s.errors_504),
                    ("other", other),
                ]
                .into_iter()
                .map(move |(status, v)| {
                    let mut l = self.svc(i);
                    l.insert(1, ("status", status.to_string()));
                    (l, counter(v))
                })
            })
            .collect();
        family(e, "chaoslab_error_responses", values)
    }

    /// Each service's claims returned and seen, by claim (true, false,
    /// missing).
    fn encode_claims(&self, e: &mut DescriptorEncoder, c: &Counts) -> Result<(), std::fmt::Error> {
        for (name, pick) in [("chaoslab_claims_returned", 0), ("chaoslab_claims_seen", 1)] {
            let values = (0..self.services.len())
                .flat_map(|i| {
                    let triple = if pick == 0 {
                        c.services[i].claims_returned
                    } else {
                        c.services[i].claims_seen
                    };
                    ["true", "false", "missing"]
                        .into_iter()
                        .zip(triple)
                        .map(move |(claim, v)| {
                            let mut l = self.svc(i);
                            l.insert(1, ("claim", claim.to_string()));
                            (l, counter(v))
                        })
                })
                .collect();
            family(e, name, values)?;
        }
        Ok(())
    }

    /// Each edge's attempts and retries, and the retries its policy held
    /// back (suppressed, refused, denied, short-circuited, cancelled,
    /// throttled).
    fn encode_edge_counters(
        &self,
        e: &mut DescriptorEncoder,
        c: &Counts,
    ) -> Result<(), std::fmt::Error> {
        let ec = |i: usize| &c.edges[i];
        family(
            e,
            "chaoslab_attempts",
            self.per_edge(|i| counter(ec(i).attempts)),
        )?;
        family(
            e,
            "chaoslab_retries",
            self.per_edge(|i| counter(ec(i).retries)),
        )?;
        family(
            e,
            "chaoslab_retries_suppressed",
            self.per_edge(|i| counter(ec(i).suppressed)),
        )?;
        family(
            e,
            "chaoslab_retries_refused",
            self.per_edge(|i| counter(ec(i).refused)),
        )?;
        family(
            e,
            "chaoslab_budget_denied",
            self.per_edge(|i| counter(ec(i).budget_denied)),
        )?;
        family(
            e,
            "chaoslab_short_circuited",
            self.per_edge(|i| counter(ec(i).short_circuited)),
        )?;
        family(
            e,
            "chaoslab_hedges_cancelled",
            self.per_edge(|i| counter(ec(i).hedges_cancelled)),
        )?;
        family(
            e,
            "chaoslab_throttled",
            self.per_edge(|i| counter(ec(i).throttled)),
        )
    }

    /// The fleet's root requests and what became of them, and the requests
    /// its endpoints refused, by reason.
    fn encode_fleet_counters(
        &self,
        e: &mut DescriptorEncoder,
        c: &Counts,
    ) -> Result<(), std::fmt::Error> {
        let fleet = |v| vec![(self.labels(vec![]), v)];
        family(e, "chaoslab_root_requests", fleet(counter(c.root.sent)))?;
        family(e, "chaoslab_root_errors", fleet(counter(c.root.errors)))?;
        family(e, "chaoslab_root_dropped", fleet(counter(c.root.dropped)))?;
        family(e, "chaoslab_root_skipped", fleet(counter(c.root.skipped)))?;
        family(e, "chaoslab_fd_errors", fleet(counter(c.root.fd_errors)))?;
        family(
            e,
            "chaoslab_node_misses",
            fleet(counter(c.root.node_misses)),
        )?;
        let refused = self.metrics.refusals().counts();
        family(
            e,
            "chaoslab_control_refused",
            Reason::ALL
                .iter()
                .map(|r| {
                    (
                        self.labels(vec![("reason", r.label().to_string())]),
                        counter(refused[*r as usize]),
                    )
                })
                .collect(),
        )
    }

    /// Each service's latency, amplification (measured and modelled), and
    /// its queue and concurrency limit at the scrape.
    fn encode_service_gauges(
        &self,
        e: &mut DescriptorEncoder,
        c: &Counts,
        snap: &Snapshot,
    ) -> Result<(), std::fmt::Error> {
        let sc = |i: usize| &c.services[i];
        family(
            e,
            "chaoslab_latency_seconds",
            self.per_service(|i| LatencyHistogram::of(sc(i))),
        )?;
        let live = |i: usize, f: Figure| snap.services.get(i).map_or(0.0, |s| s.live[f]);
        family(
            e,
            "chaoslab_amplification",
            self.per_service(|i| gauge(live(i, Figure::Amplification))),
        )?;
        family(
            e,
            "chaoslab_model_amplification",
            self.per_service(|i| gauge(live(i, Figure::ModelAmplification))),
        )?;
        family(
            e,
            "chaoslab_queue_depth",
            self.per_service(|i| gauge(sc(i).queue_depth as f64)),
        )?;
        family(
            e,
            "chaoslab_in_service",
            self.per_service(|i| gauge(sc(i).in_service as f64)),
        )?;
        family(
            e,
            "chaoslab_limited",
            self.per_service(|i| counter(sc(i).limited)),
        )?;
        family(
            e,
            "chaoslab_concurrency_limit",
            self.per_service(|i| gauge(sc(i).concurrency_limit as f64)),
        )?;
        family(
            e,
            "chaoslab_no_load_latency_seconds",
            self.per_service(|i| gauge(sc(i).no_load_us as f64 / 1e6)),
        )
    }

    /// Each edge's budget level (where it has one) and breaker state.
    fn encode_edge_gauges(
        &self,
        e: &mut DescriptorEncoder,
        c: &Counts,
    ) -> Result<(), std::fmt::Error> {
        let ec = |i: usize| &c.edges[i];
        let levels: Vec<(Labels, ConstGauge<f64>)> = (0..self.edges.len())
            .filter_map(|i| {
                let (level, limit) = ec(i).budget_level()?;
                (limit > 0.0).then(|| (self.edge(i), gauge(level / limit)))
            })
            .collect();
        family(e, "chaoslab_budget_level", levels)?;
        family(
            e,
            "chaoslab_breaker_state",
            self.per_edge(|i| gauge(ec(i).breaker as f64)),
        )?;
        family(
            e,
            "chaoslab_outlier_ejected",
            self.outlier_rows(c)
                .into_iter()
                .map(|(l, _, out)| (l, gauge(out as f64)))
                .collect(),
        )
    }

    /// The fleet's offered rate, saturation and storm radius, as the
    /// newest snapshot has them.
    fn encode_fleet_gauges(
        &self,
        e: &mut DescriptorEncoder,
        snap: &Snapshot,
    ) -> Result<(), std::fmt::Error> {
        let fleet = |v| vec![(self.labels(vec![]), v)];
        family(e, "chaoslab_offered_rps", fleet(gauge(snap.state.rps)))?;
        family(
            e,
            "chaoslab_saturated",
            fleet(gauge(f64::from(u8::from(!snap.saturation.is_empty())))),
        )?;
        family(
            e,
            "chaoslab_storm_radius",
            vec![
                (
                    self.labels(vec![("stat", "max".into())]),
                    gauge(snap.radius_max as f64),
                ),
                (
                    self.labels(vec![("stat", "mean".into())]),
                    gauge(snap.radius_mean),
                ),
            ],
        )
    }
}

impl Collector for Exporter {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        match self.0.load_full() {
            Some(source) => source.encode(&mut e),
            None => Ok(()),
        }
    }
}
