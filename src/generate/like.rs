//! The published statistics a generated mesh is drawn from, each with its
//! source, and the assumptions the lab adds where the sources are silent.
//! Every one of them is printed in the generated file's header.

/// Whose published call-graph statistics a generated mesh follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Like {
    /// Meta's 2023 topology study: per-service fan-out median 4, p90 13,
    /// p99 about 100; call paths up to 19 services deep.
    #[default]
    Meta,
    /// Alibaba's 2021 traces: children sets of 1 to 10, call graphs 2 to 6
    /// deep, 16.2% of calls repeated.
    Alibaba,
    /// Uber's incident of 18 November 2025: a mesh like Meta's with a
    /// Core Entity service more than five levels deep, reached through
    /// paths on which four to nine hops retry (SPEC section 14).
    UberIncident,
}

impl Like {
    /// Every one, in the command line's order.
    pub const ALL: [Like; 3] = [Like::Meta, Like::Alibaba, Like::UberIncident];

    /// Its name on the command line (`--like`).
    pub fn name(self) -> &'static str {
        match self {
            Like::Meta => "meta",
            Like::Alibaba => "alibaba",
            Like::UberIncident => "uber-incident",
        }
    }
}

/// What a mesh is drawn from.
#[derive(Debug, Clone, Copy)]
pub struct Params {
    /// Shares of entry, middle and leaf services.
    pub roles: [f64; 3],
    /// Distinct services a calling service calls, as points of its
    /// inverse distribution function (quantile, fan-out), from quantile 0
    /// to 1; read between the points on a log scale.
    pub fan_out: &'static [(f64, f64)],
    /// Services on the longest call path (entry and leaf included).
    pub depth: usize,
    /// Each level of middle services holds this share of the level above
    /// it: most middle services sit near the entries.
    pub level_decay: f64,
    /// The share of calls made more than once per request (2 or 3 times).
    pub repeated: f64,
    /// The mean number of services one root request touches, which the
    /// sampled calls' probabilities are tuned to.
    pub touched: f64,
    /// How each of the above is sourced, one line each.
    pub sources: &'static [&'static str],
}

/// The shares of entry, middle and leaf services in Alibaba's 2021
/// traces (8,591, 30,959 and 25,201 of 67,760 services with calls).
const ALIBABA_ROLES: [f64; 3] = [0.13, 0.48, 0.39];

/// The parameters `like` stands for.
pub fn params(like: Like) -> Params {
    match like {
        // Uber's incident is grafted onto a mesh drawn like Meta's.
        Like::Meta | Like::UberIncident => Params {
            roles: ALIBABA_ROLES,
            fan_out: &[(0.0, 1.0), (0.5, 4.0), (0.9, 13.0), (0.99, 100.0), (1.0, 300.0)],
            depth: 19,
            level_decay: 0.7,
            repeated: 0.0,
            touched: 30.0,
            sources: &[
                "fan-out (distinct services a calling service calls): median 4, p90 13, p99 100 -",
                "  Huye, Shkuro, Sambasivan, \"Lifting the veil on Meta's microservice architecture\",",
                "  USENIX ATC 2023; the largest is 300 (an assumption: the study's tail goes further)",
                "call depth: up to 19 services on a path - the same study",
                "roles: 13% entry, 48% middle, 39% leaf - Meta's study gives no such split; taken from",
                "  Alibaba's 2021 traces (Luo et al., SoCC 2021; Winchester et al., 2025, table 1)",
                "assumed by the lab: each level of middle services holds 0.7 of the one above it;",
                "  callees drawn with Zipf weights (s = 0.9), so a few services have a large fan-in;",
                "  services other than entries have 1-4 endpoints; calls sampled (`p`) so a root",
                "  request touches 30 services on average (\"tens\", SPEC section 12)",
            ],
        },
        Like::Alibaba => Params {
            roles: ALIBABA_ROLES,
            fan_out: &[(0.0, 1.0), (1.0, 10.0)],
            depth: 6,
            level_decay: 0.6,
            repeated: 0.162,
            touched: 20.0,
            sources: &[
                "roles: 13% entry, 48% middle, 39% leaf - Alibaba's 2021 traces (Luo et al.,",
                "  \"Characterizing microservice dependency and performance\", SoCC 2021;",
                "  Winchester et al., \"Complexity at scale\", 2025, table 1)",
                "fan-out: children sets of 1 to 10 - Luo et al., IEEE TPDS 2022 (drawn uniformly:",
                "  an assumption)",
                "call depth: 2 to 6 for the top services - the same paper (up to 6 here)",
                "repeated calls: 16.2% of calls made more than once per request - the same paper",
                "assumed by the lab: each level of middle services holds 0.6 of the one above it;",
                "  callees drawn with Zipf weights (s = 0.9), Alibaba's hot spots; services other",
                "  than entries have 1-4 endpoints; calls sampled (`p`) so a root request touches",
                "  20 services on average",
            ],
        },
    }
}

impl Params {
    /// The fan-out at quantile `u` (0 to 1), read between the points on a
    /// log scale and rounded to a whole number of services.
    pub fn fan_out_at(&self, u: f64) -> usize {
        let pts = self.fan_out;
        let u = u.clamp(0.0, 1.0);
        let k = pts
            .windows(2)
            .position(|w| u <= w[1].0)
            .unwrap_or(pts.len().saturating_sub(2));
        let ((u0, f0), (u1, f1)) = (pts[k], pts[k + 1]);
        let t = if u1 > u0 { (u - u0) / (u1 - u0) } else { 1.0 };
        let f = if self.fan_out.len() == 2 {
            // Two points: uniform between them.
            f0 + t * (f1 - f0 + 1.0) - 0.5
        } else {
            (f0.ln() + t * (f1.ln() - f0.ln())).exp()
        };
        let last = pts[pts.len() - 1].1;
        (f.round().clamp(pts[0].1, last) as usize).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fan_out_law_passes_through_its_published_points() {
        let p = params(Like::Meta);
        assert_eq!(p.fan_out_at(0.5), 4);
        assert_eq!(p.fan_out_at(0.9), 13);
        assert_eq!(p.fan_out_at(0.99), 100);
        assert_eq!(p.fan_out_at(1.0), 300);
        assert_eq!(p.fan_out_at(0.0), 1);
        let a = params(Like::Alibaba);
        let drawn: Vec<usize> = (0..1000)
            .map(|i| a.fan_out_at((i as f64 + 0.5) / 1000.0))
            .collect();
        assert_eq!(drawn.iter().min(), Some(&1));
        assert_eq!(drawn.iter().max(), Some(&10));
        // Uniform: each of 1..=10 a tenth of the draws.
        assert_eq!(drawn.iter().filter(|&&f| f == 5).count(), 100);
    }
}
