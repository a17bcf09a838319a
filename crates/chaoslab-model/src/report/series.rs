//! The per-second series a report carries: figures sampled every second
//! (or every few seconds on a long run or a large fleet, so the JSON
//! stays bounded) from the end of the warm-up.

use std::time::Duration;

use serde::Serialize;

use crate::metrics::{Sample, Series};
use crate::topology::Topology;

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
    /// Fraction of root requests that succeeded (null in JSON when none
    /// completed that second).
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
            let entry_roots = c.services.get(entry).map_or(0, |e| e.baseline_roots()) as f64;
            out.t_s
                .push(round(w[1].t.saturating_sub(from).as_secs_f64()));
            out.entry_rps.push(round(roots as f64 / dt));
            out.availability.push(round(c.root.availability()));
            for (i, s) in topology.services.iter().enumerate() {
                let n = c.services.get(i).map_or(0, |x| x.requests) as f64;
                let base = if topology.load.many_roots() {
                    topology.baseline(i, |r| {
                        let at = |x: &crate::metrics::Counts| {
                            x.services.get(r).map_or(0, |e| e.baseline_roots())
                        };
                        at(&w[1].counts).saturating_sub(at(&w[0].counts)) as f64
                    })
                } else {
                    entry_roots * s.multiplicity
                };
                out.services[i].rps.push(round(n / dt));
                out.services[i]
                    .amplification
                    .push(if base > 0.0 { round(n / base) } else { 0.0 });
            }
        }
        out
    }
}
