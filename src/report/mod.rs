//! Reports: the JSON of SPEC section 6 and the terminal table, both
//! computed from measured counters over a window of the run; the JUnit
//! XML of a scenario's expectations lives in [`junit`].

pub mod expect;
pub mod junit;

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use crate::metrics::{Counts, RadiusStats, Sample, Series, ServiceCounts};
use crate::ownership::learn::Learned;
use crate::ownership::DependencyMode;
use crate::scenario::Lab;
use crate::topology::model::Prediction;
use crate::topology::{ServiceId, Topology};

/// Claim counts by value.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct ClaimCounts {
    /// `true`.
    #[serde(rename = "true")]
    pub claimed: u64,
    /// `false`.
    #[serde(rename = "false")]
    pub unclaimed: u64,
    /// No header or an unknown value.
    pub missing: u64,
}

impl From<[u64; 3]> for ClaimCounts {
    fn from(a: [u64; 3]) -> Self {
        ClaimCounts {
            claimed: a[0],
            unclaimed: a[1],
            missing: a[2],
        }
    }
}

/// Ground-truth attribution figures.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct AttributionCounts {
    /// Errors its own fault caused.
    pub own_errors: u64,
    /// Own errors it unclaimed.
    pub wrongly_unclaimed: u64,
    /// Errors from below it claimed (rule 5 claims excluded).
    pub wrongly_claimed: u64,
}

/// What a service learned about one dependency.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LearnedReport {
    /// The dependency.
    pub dependency: String,
    /// What the topology declares.
    pub declared: String,
    /// What the service learned.
    pub learned: String,
    /// 0..1.
    pub confidence: f64,
    /// Dependency failures remembered (decayed).
    pub samples: f64,
}

/// One service's figures.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NodeReport {
    /// Name.
    pub name: String,
    /// Depth.
    pub depth: usize,
    /// Requests per second.
    pub rps: f64,
    /// Entry rate × baseline multiplicity.
    pub baseline_rps: f64,
    /// `rps / baseline_rps`.
    pub amplification: f64,
    /// The model's prediction.
    pub model_amplification: f64,
    /// Requests answered.
    pub requests: u64,
    /// Errors answered.
    pub errors: u64,
    /// Claims written.
    pub claims_returned: ClaimCounts,
    /// Claims read.
    pub claims_seen: ClaimCounts,
    /// Retries sent.
    pub retries_sent: u64,
    /// Retries suppressed.
    pub retries_suppressed: u64,
    /// Retries the budget refused.
    pub budget_denied: u64,
    /// Ground truth.
    pub attribution: AttributionCounts,
    /// Claims made by the at-least-once rule.
    pub at_least_once_claims: u64,
    /// Learned classification of its dependencies.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub learned: Vec<LearnedReport>,
}

/// One edge's figures.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EdgeReport {
    /// Caller.
    pub from: String,
    /// Callee.
    pub to: String,
    /// Attempts sent.
    pub attempts: u64,
    /// Retries sent.
    pub retries: u64,
    /// Retries suppressed.
    pub suppressed: u64,
    /// Retries the budget refused.
    pub budget_denied: u64,
    /// The model's retries per root request.
    pub model_retries_per_root: f64,
}

/// Latency percentiles in ms.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// The end user's figures.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RootReport {
    /// Root requests per second.
    pub rps: f64,
    /// Root requests.
    pub requests: u64,
    /// Failed root requests.
    pub errors: u64,
    /// Success fraction.
    pub availability: f64,
    /// What the model predicts for availability.
    pub model_availability: f64,
    /// Latency.
    pub latency_ms: Latency,
    /// Not sent: too many in flight.
    pub dropped: u64,
}

/// Storm radius figures.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RadiusReport {
    /// Largest radius of any root request in the window.
    pub max: u64,
    /// Mean over root requests that saw a retry.
    pub mean: f64,
    /// Worst over every service failing, under this policy (model).
    #[serde(rename = "static")]
    pub static_radius: usize,
    /// What the model predicts for the faults in force.
    pub model: usize,
}

/// One expectation's outcome.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ExpectationReport {
    /// What was expected, in words.
    pub what: String,
    /// Whether it held.
    pub passed: bool,
    /// What was measured.
    pub observed: f64,
    /// The window it was measured over, seconds.
    pub window_s: (f64, f64),
    /// The figure's name (`amplification`, `root_availability`).
    pub figure: String,
    /// The service, for a per-service figure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    /// The bound, in words: `<= 1.15`, `≈ 8 ± 5%`.
    pub expected: String,
    /// Where the expectation is written: `story.yaml:42:5`.
    pub source: String,
    /// Its line in that file, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Why it could not be judged (no samples in the window), if so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The window's figures the observation was read from.
    pub figures: WindowFigures,
}

/// The figures of one window of the run: what an expectation read.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WindowFigures {
    /// The samples actually used, seconds from the end of the warm-up (a
    /// sample is taken every tick, so this is the asked-for window to
    /// within half a tick).
    pub measured_s: (f64, f64),
    /// The end user's view over the window (latency too).
    pub root: RootReport,
    /// Storm radius over the window.
    pub storm_radius: RadiusReport,
    /// Retries suppressed over the window, fleet-wide.
    pub spurious_avoided: u64,
    /// The named service's figures over the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<NodeReport>,
}

/// Figures sampled every second (or every few seconds on a long run or a
/// large fleet, so the JSON stays bounded), from the end of the warm-up.
/// Each point covers the interval that ends at its time.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TimeSeries {
    /// Seconds between points.
    pub period_s: f64,
    /// Each point's time, seconds from the end of the warm-up.
    pub t_s: Vec<f64>,
    /// Root requests per second sent into the entry.
    pub entry_rps: Vec<f64>,
    /// Fraction of root requests that succeeded (1 when none completed).
    pub availability: Vec<f64>,
    /// Per service, in topology order.
    pub services: Vec<ServiceSeries>,
}

/// One service's line in a [`TimeSeries`].
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ServiceSeries {
    /// The service.
    pub name: String,
    /// Requests per second.
    pub rps: Vec<f64>,
    /// `rps` over the baseline (0 when no root request arrived).
    pub amplification: Vec<f64>,
}

impl TimeSeries {
    /// At most this many numbers in a series: points × (2 per service + 3).
    pub const MAX_VALUES: usize = 200_000;

    /// Samples `series` every second (a whole number of seconds, so the
    /// series stays under [`TimeSeries::MAX_VALUES`]) from `from` to `to`
    /// (the lab's clock); times are reported relative to `from`.
    pub fn from_series(
        series: &Series,
        topology: &Topology,
        from: Duration,
        to: Duration,
    ) -> TimeSeries {
        let samples: Vec<&Sample> = series.iter().filter(|s| s.t >= from && s.t <= to).collect();
        let span = to
            .min(samples.last().map_or(from, |s| s.t))
            .saturating_sub(from);
        let per_point = 2 * topology.services.len() + 3;
        let mut period = 1u64;
        while period < span.as_secs().max(1)
            && (span.as_secs() / period + 1) as usize * per_point > Self::MAX_VALUES
        {
            period *= 2;
        }
        let step = Duration::from_secs(period);
        // The first sample at or after each boundary.
        let mut picked: Vec<&Sample> = Vec::new();
        let mut next = from;
        for s in samples {
            if s.t >= next {
                picked.push(s);
                while next <= s.t {
                    next += step;
                }
            }
        }
        let entry = topology.load.entry;
        let round = |v: f64| (v * 1e4).round() / 1e4;
        let mut out = TimeSeries {
            period_s: period as f64,
            t_s: Vec::with_capacity(picked.len()),
            entry_rps: Vec::with_capacity(picked.len()),
            availability: Vec::with_capacity(picked.len()),
            services: topology
                .services
                .iter()
                .map(|s| ServiceSeries {
                    name: s.name.clone(),
                    rps: Vec::with_capacity(picked.len()),
                    amplification: Vec::with_capacity(picked.len()),
                })
                .collect(),
        };
        for w in picked.windows(2) {
            let dt = w[1].t.saturating_sub(w[0].t).as_secs_f64();
            if dt <= 0.0 {
                continue;
            }
            let c = w[1].counts.since(&w[0].counts);
            let roots = if c.root.sent > 0 {
                c.root.sent
            } else {
                c.services.get(entry).map_or(0, |e| e.roots)
            };
            let entry_roots = c.services.get(entry).map_or(0, |e| e.roots) as f64;
            out.t_s
                .push(round(w[1].t.saturating_sub(from).as_secs_f64()));
            out.entry_rps.push(round(roots as f64 / dt));
            out.availability.push(round(c.root.availability()));
            for (i, s) in topology.services.iter().enumerate() {
                let n = c.services.get(i).map_or(0, |x| x.requests) as f64;
                let base = entry_roots * s.multiplicity;
                out.services[i].rps.push(round(n / dt));
                out.services[i]
                    .amplification
                    .push(if base > 0.0 { round(n / base) } else { 0.0 });
            }
        }
        out
    }
}

/// The whole report (SPEC section 6, extended).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Report {
    /// Topology name.
    pub topology: String,
    /// Policy mode at the end.
    pub policy: String,
    /// Attempts (R).
    pub attempts: u32,
    /// Budget ratio (B), `null` when off.
    pub budget: Option<f64>,
    /// Attribution mode at the end.
    pub attribution: String,
    /// Rule 5 at the end.
    pub at_least_once: bool,
    /// Measured seconds (after warm-up).
    pub duration_s: f64,
    /// The end user's view.
    pub root: RootReport,
    /// Storm radius.
    pub storm_radius: RadiusReport,
    /// Retries suppressed, fleet-wide.
    pub spurious_avoided: u64,
    /// Per service.
    pub nodes: Vec<NodeReport>,
    /// Per edge.
    pub edges: Vec<EdgeReport>,
    /// Expectations checked.
    pub expectations: Vec<ExpectationReport>,
    /// Figures sampled each second after the warm-up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series: Option<TimeSeries>,
}

fn mode_name(m: DependencyMode) -> String {
    match m {
        DependencyMode::FailClose => "fail-close".into(),
        DependencyMode::FailOpen => "fail-open".into(),
    }
}

impl Report {
    /// Measures the window `from..to` of a lab's run.
    pub fn measure(lab: &Lab, from: Duration, to: Duration) -> Report {
        let series = lab.series();
        let first = series
            .at_or_after(from)
            .or_else(|| series.latest())
            .expect("the series is never empty");
        let last = series
            .at_or_before(to)
            .filter(|s| s.t >= first.t)
            .unwrap_or(first);
        let dt = last.t.saturating_sub(first.t).as_secs_f64();
        let c = last.counts.since(&first.counts);
        let rate = |n: u64| if dt > 0.0 { n as f64 / dt } else { 0.0 };
        let t = lab.topology();
        let entry = t.load.entry;
        let root_rate = rate(c.services[entry].roots);
        let mut radius = RadiusStats::default();
        for s in series.between(first.t, last.t) {
            radius.merge(&s.radius);
        }
        let pred = lab.prediction();
        let (requests, errors) = if c.root.sent > 0 {
            (c.root.completed(), c.root.errors)
        } else {
            // No internal load (serve): the entry's own view of its roots.
            (c.services[entry].roots, c.services[entry].errors)
        };
        let nodes = t
            .services
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let n = &c.services[i];
                node_report(lab, i, n, rate(n.requests), root_rate * s.multiplicity)
            })
            .collect();
        let edges = edge_reports(t, &c, pred);
        Report {
            topology: t.name.clone(),
            policy: t.policy.mode_name(),
            attempts: t.policy.attempts,
            budget: t.policy.budget,
            attribution: t.ownership.attribution.name().into(),
            at_least_once: t.ownership.at_least_once,
            duration_s: dt,
            root: RootReport {
                rps: if c.root.sent > 0 {
                    rate(c.root.sent)
                } else {
                    root_rate
                },
                requests,
                errors,
                availability: if requests > 0 {
                    1.0 - errors as f64 / requests as f64
                } else {
                    1.0
                },
                model_availability: pred.root_availability,
                latency_ms: Latency {
                    p50: lab.latency_ms(0.5),
                    p99: lab.latency_ms(0.99),
                },
                dropped: c.root.dropped,
            },
            storm_radius: RadiusReport {
                max: radius.max,
                mean: radius.mean(),
                static_radius: lab.static_radius(),
                model: pred.storm_radius,
            },
            spurious_avoided: c.spurious_avoided(),
            nodes,
            edges,
            expectations: vec![],
            series: None,
        }
    }

    /// The JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serialises")
    }

    /// The per-service table a headless run prints.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} · policy {} (R={}, B={}) · {:.1}s measured",
            self.topology,
            self.policy,
            self.attempts,
            self.budget.map_or_else(|| "off".into(), |b| format!("{b}")),
            self.duration_s
        );
        let _ = writeln!(
            out,
            "{:<10} {:>5} {:>9} {:>9} {:>7} {:>7} {:>6} {:>23} {:>9} {:>9} {:>7}",
            "service",
            "depth",
            "rps",
            "baseline",
            "amp",
            "model",
            "err%",
            "returned true/false/-",
            "retries",
            "suppress",
            "denied"
        );
        for n in &self.nodes {
            let r = n.claims_returned;
            let _ = writeln!(
                out,
                "{:<10} {:>5} {:>9.1} {:>9.1} {:>6.2}x {:>6.2}x {:>5.1}% {:>23} {:>9} {:>9} {:>7}",
                truncate(&n.name, 10),
                n.depth,
                n.rps,
                n.baseline_rps,
                n.amplification,
                n.model_amplification,
                if n.requests > 0 {
                    n.errors as f64 * 100.0 / n.requests as f64
                } else {
                    0.0
                },
                format!("{}/{}/{}", r.claimed, r.unclaimed, r.missing),
                n.retries_sent,
                n.retries_suppressed,
                n.budget_denied
            );
        }
        let _ = writeln!(
            out,
            "entry: {:.1} rps, {} requests, availability {:.2}% (model {:.2}%), p50 {:.1} ms, p99 {:.1} ms{}",
            self.root.rps,
            self.root.requests,
            self.root.availability * 100.0,
            self.root.model_availability * 100.0,
            self.root.latency_ms.p50,
            self.root.latency_ms.p99,
            if self.root.dropped > 0 {
                format!(", {} dropped (in-flight bound)", self.root.dropped)
            } else {
                String::new()
            }
        );
        let _ = writeln!(
            out,
            "storm radius: max {}, mean {:.2} (model {}, static {}) · spurious requests avoided: {}",
            self.storm_radius.max,
            self.storm_radius.mean,
            self.storm_radius.model,
            self.storm_radius.static_radius,
            self.spurious_avoided
        );
        for e in &self.expectations {
            let _ = writeln!(
                out,
                "{} {} (observed {:.4})",
                if e.passed { "PASS" } else { "FAIL" },
                e.what,
                e.observed
            );
        }
        out
    }
}

/// One service's row: what it measured over the window (`n`, `rps`
/// against `baseline`), the model's amplification, what it learned.
fn node_report(lab: &Lab, i: ServiceId, n: &ServiceCounts, rps: f64, baseline: f64) -> NodeReport {
    let t = lab.topology();
    let s = &t.services[i];
    let pred = lab.prediction();
    let learned = lab
        .fleet()
        .server_config(i)
        .learner()
        .all()
        .into_iter()
        .map(|l: Learned| LearnedReport {
            dependency: t
                .services
                .get(l.dependency)
                .map_or_else(|| format!("#{}", l.dependency), |d| d.name.clone()),
            declared: s
                .calls
                .iter()
                .map(|&e| &t.edges[e])
                .find(|e| e.to == l.dependency)
                .map_or_else(|| "?".into(), |e| mode_name(e.mode)),
            learned: mode_name(l.mode),
            confidence: l.confidence,
            samples: l.failures,
        })
        .collect();
    NodeReport {
        name: s.name.clone(),
        depth: s.depth,
        rps,
        baseline_rps: baseline,
        amplification: if baseline > 0.0 { rps / baseline } else { 0.0 },
        model_amplification: pred.services[i].amplification,
        requests: n.requests,
        errors: n.errors,
        claims_returned: n.claims_returned.into(),
        claims_seen: n.claims_seen.into(),
        retries_sent: n.retries_sent,
        retries_suppressed: n.retries_suppressed,
        budget_denied: n.budget_denied,
        attribution: AttributionCounts {
            own_errors: n.own_errors,
            wrongly_unclaimed: n.wrongly_unclaimed,
            wrongly_claimed: n.wrongly_claimed,
        },
        at_least_once_claims: n.at_least_once_claims,
        learned,
    }
}

/// Every edge's row: its counts over the window, the model's retries.
fn edge_reports(t: &Topology, c: &Counts, pred: &Prediction) -> Vec<EdgeReport> {
    t.edges
        .iter()
        .enumerate()
        .map(|(i, e)| EdgeReport {
            from: t.services[e.from].name.clone(),
            to: t.services[e.to].name.clone(),
            attempts: c.edges[i].attempts,
            retries: c.edges[i].retries,
            suppressed: c.edges[i].suppressed,
            budget_denied: c.edges[i].budget_denied,
            model_retries_per_root: pred.edges[i].retries,
        })
        .collect()
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}
