//! The figures an expectation can check, by the names scenario files use.

macro_rules! figures {
    ($($(#[doc = $doc:literal])* $v:ident = $name:literal, $svc:literal;)*) => {
        /// A figure an expectation can check: a per-service figure of the
        /// report, or a fleet figure.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Figure {
            $($(#[doc = $doc])* $v,)*
        }

        impl Figure {
            /// Every figure, per-service ones first.
            pub const ALL: &'static [Figure] = &[$(Figure::$v,)*];

            /// The name used in scenario files.
            pub fn name(self) -> &'static str {
                match self {
                    $(Figure::$v => $name,)*
                }
            }

            /// Whether it is measured per service (needs `service:`).
            pub fn per_service(self) -> bool {
                match self {
                    $(Figure::$v => $svc,)*
                }
            }
        }
    };
}

figures! {
    /// Requests per second.
    Rps = "rps", true;
    /// Entry rate × baseline multiplicity.
    BaselineRps = "baseline_rps", true;
    /// `rps / baseline_rps`.
    Amplification = "amplification", true;
    /// The model's amplification for the faults and policy at the end.
    ModelAmplification = "model_amplification", true;
    /// Requests answered.
    Requests = "requests", true;
    /// Errors answered.
    Errors = "errors", true;
    /// `errors / requests`.
    ErrorRate = "error_rate", true;
    /// Claims written: `true`.
    ClaimsReturnedTrue = "claims_returned_true", true;
    /// Claims written: `false`.
    ClaimsReturnedFalse = "claims_returned_false", true;
    /// Error responses with no claim.
    ClaimsReturnedMissing = "claims_returned_missing", true;
    /// Claims read: `true`.
    ClaimsSeenTrue = "claims_seen_true", true;
    /// Claims read: `false`.
    ClaimsSeenFalse = "claims_seen_false", true;
    /// Failed attempts with no claim.
    ClaimsSeenMissing = "claims_seen_missing", true;
    /// Retries sent.
    RetriesSent = "retries_sent", true;
    /// Retries suppressed (unclaimed errors).
    RetriesSuppressed = "retries_suppressed", true;
    /// Retries the budget refused.
    BudgetDenied = "budget_denied", true;
    /// Errors its own fault caused.
    OwnErrors = "own_errors", true;
    /// Own errors it unclaimed.
    WronglyUnclaimed = "wrongly_unclaimed", true;
    /// Errors from below it claimed.
    WronglyClaimed = "wrongly_claimed", true;
    /// Claims made by rule 5.
    AtLeastOnceClaims = "at_least_once_claims", true;
    /// Fraction of root requests that succeeded.
    RootAvailability = "root_availability", false;
    /// Root requests per second.
    RootRps = "root_rps", false;
    /// Root requests completed.
    RootRequests = "root_requests", false;
    /// Root requests failed.
    RootErrors = "root_errors", false;
    /// Root requests not sent (in-flight bound).
    RootDropped = "root_dropped", false;
    /// Median root latency, ms.
    LatencyP50 = "latency_p50", false;
    /// 99th percentile root latency, ms.
    LatencyP99 = "latency_p99", false;
    /// Largest storm radius of any root request.
    StormRadius = "storm_radius", false;
    /// Mean storm radius over root requests that saw a retry.
    StormRadiusMean = "storm_radius_mean", false;
    /// Retries suppressed, fleet-wide.
    SpuriousAvoided = "spurious_avoided", false;
}

impl Figure {
    /// Parses a figure's name.
    pub fn parse(s: &str) -> Option<Figure> {
        Figure::ALL.iter().copied().find(|f| f.name() == s)
    }

    pub(super) fn list(per_service: bool) -> String {
        Figure::ALL
            .iter()
            .filter(|f| f.per_service() == per_service)
            .map(|f| f.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_figure_has_a_unique_name() {
        for f in Figure::ALL {
            assert_eq!(Figure::parse(f.name()), Some(*f));
        }
        let mut names: Vec<&str> = Figure::ALL.iter().map(|f| f.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Figure::ALL.len());
    }
}
