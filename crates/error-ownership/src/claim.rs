//! The server-side claim rule (SPEC section 1, "Claim decision").
//!
//! A service whose response is an error looks at what its own outbound
//! calls did for this request (the *dependency analysis*) and decides
//! whether the error is its own:
//!
//! 1. no outbound call failed → **claim**;
//! 2. a fail-close dependency failed → **unclaim** (except rule 5);
//! 3. only fail-open dependencies failed → **claim** (`declared`); in
//!    `simple` attribution any failure unclaims;
//! 4. a dropped request context means the analysis sees no outbound
//!    failure → rule 1 → **claim** (this falls out of the record being
//!    empty, not out of this function);
//! 5. at-least-once: if every failed fail-close call was retry-eligible but
//!    its edge has no retries configured, **claim**, so the caller above
//!    makes the one retry the chain is owed.
//!
//! ```
//! use error_ownership::claim::{decide, Outbound, ClaimReason};
//! use error_ownership::{Attribution, Claim, DependencyMode};
//!
//! let d_failed = Outbound {
//!     dependency: 0,
//!     mode: DependencyMode::FailClose,
//!     failed: true,
//!     claim_seen: Some(Claim::Claimed),
//!     criteria_satisfied: true,
//! };
//! let c = decide(&[d_failed], Attribution::Declared, true, |o| o.mode);
//! assert!(!c.claimed);
//! assert_eq!(c.reason, ClaimReason::FailCloseDependency);
//! ```

use super::{Attribution, Claim, DependencyMode};

/// What one outbound call (all its attempts) did, as the dependency
/// analysis records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outbound {
    /// The dependency, as an index the caller understands.
    pub dependency: usize,
    /// The mode the topology declares for this call.
    pub mode: DependencyMode,
    /// Whether the call failed after all its attempts.
    pub failed: bool,
    /// The claim on the last failed attempt (`None` on success).
    pub claim_seen: Option<Claim>,
    /// Rule 5: whether the retry criteria were satisfied on this edge.
    pub criteria_satisfied: bool,
}

/// Why a service claimed or unclaimed an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClaimReason {
    /// Rule 1 (and 4): none of its outbound calls failed.
    NoDependencyFailed,
    /// Rule 3: only fail-open dependencies failed.
    OnlyFailOpen,
    /// Rule 2: a fail-close dependency failed.
    FailCloseDependency,
    /// Rule 5: the failing edge had no retries configured.
    AtLeastOnce,
}

/// A claim decision and the rule that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimDecision {
    /// Whether the service claims the error.
    pub claimed: bool,
    /// The rule that decided.
    pub reason: ClaimReason,
}

/// Decides the claim for an error response. `learned_mode` gives the mode
/// the service has learned for a call; it is only asked in `learned`
/// attribution.
pub fn decide(
    outcomes: &[Outbound],
    attribution: Attribution,
    at_least_once: bool,
    learned_mode: impl Fn(&Outbound) -> DependencyMode,
) -> ClaimDecision {
    let mut any_failed = false;
    let mut close_failed = false;
    let mut close_satisfied = false;
    for o in outcomes.iter().filter(|o| o.failed) {
        any_failed = true;
        let mode = match attribution {
            Attribution::Simple => DependencyMode::FailClose,
            Attribution::Declared => o.mode,
            Attribution::Learned => learned_mode(o),
        };
        if mode == DependencyMode::FailClose {
            close_failed = true;
            let eligible = matches!(o.claim_seen, Some(Claim::Claimed | Claim::Missing) | None);
            if o.criteria_satisfied || !eligible {
                close_satisfied = true;
            }
        }
    }
    let (claimed, reason) = if !any_failed {
        (true, ClaimReason::NoDependencyFailed)
    } else if !close_failed {
        (true, ClaimReason::OnlyFailOpen)
    } else if at_least_once && !close_satisfied {
        (true, ClaimReason::AtLeastOnce)
    } else {
        (false, ClaimReason::FailCloseDependency)
    };
    ClaimDecision { claimed, reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use DependencyMode::*;

    fn call(mode: DependencyMode, failed: bool, claim: Option<Claim>, sat: bool) -> Outbound {
        Outbound {
            dependency: 0,
            mode,
            failed,
            claim_seen: claim,
            criteria_satisfied: sat,
        }
    }

    fn declared(o: &[Outbound]) -> ClaimDecision {
        decide(o, Attribution::Declared, true, |o| o.mode)
    }

    #[test]
    fn rule1_no_failure_claims() {
        assert_eq!(declared(&[]).reason, ClaimReason::NoDependencyFailed);
        let ok = call(FailClose, false, None, true);
        assert!(declared(&[ok, ok]).claimed);
    }

    #[test]
    fn rule2_fail_close_unclaims() {
        let d = declared(&[call(FailClose, true, Some(Claim::Claimed), true)]);
        assert_eq!(
            d,
            ClaimDecision {
                claimed: false,
                reason: ClaimReason::FailCloseDependency
            }
        );
        let d = declared(&[call(FailClose, true, Some(Claim::Unclaimed), true)]);
        assert!(!d.claimed);
    }

    #[test]
    fn rule3_fail_open_claims_unless_simple() {
        let o = [call(FailOpen, true, Some(Claim::Claimed), true)];
        assert_eq!(declared(&o).reason, ClaimReason::OnlyFailOpen);
        assert!(declared(&o).claimed);
        let s = decide(&o, Attribution::Simple, true, |o| o.mode);
        assert!(!s.claimed);
    }

    #[test]
    fn learned_asks_the_memory() {
        let o = [call(FailClose, true, Some(Claim::Claimed), true)];
        let d = decide(&o, Attribution::Learned, true, |_| FailOpen);
        assert!(d.claimed);
        let d = decide(&o, Attribution::Learned, true, |_| FailClose);
        assert!(!d.claimed);
    }

    #[test]
    fn rule5_at_least_once() {
        // Eligible error, edge without retries: claim so the caller retries.
        let o = [call(FailClose, true, Some(Claim::Claimed), false)];
        assert_eq!(declared(&o).reason, ClaimReason::AtLeastOnce);
        let o = [call(FailClose, true, Some(Claim::Missing), false)];
        assert!(declared(&o).claimed);
        // Turned off: unclaim.
        let o = [call(FailClose, true, Some(Claim::Claimed), false)];
        assert!(!decide(&o, Attribution::Declared, false, |o| o.mode).claimed);
        // An unclaimed error was not eligible: unclaim.
        let o = [call(FailClose, true, Some(Claim::Unclaimed), false)];
        assert!(!declared(&o).claimed);
        // One failure already retried: unclaim, whatever the other did.
        let o = [
            call(FailClose, true, Some(Claim::Claimed), false),
            call(FailClose, true, Some(Claim::Claimed), true),
        ];
        assert!(!declared(&o).claimed);
    }

    fn outbound() -> impl Strategy<Value = Outbound> {
        (
            any::<bool>(),
            any::<bool>(),
            prop_oneof![
                Just(None),
                Just(Some(Claim::Claimed)),
                Just(Some(Claim::Unclaimed)),
                Just(Some(Claim::Missing))
            ],
            any::<bool>(),
        )
            .prop_map(|(open, failed, claim, sat)| {
                call(if open { FailOpen } else { FailClose }, failed, claim, sat)
            })
    }

    proptest! {
        /// Successful calls never change a decision.
        #[test]
        fn successes_are_neutral(mut o in proptest::collection::vec(outbound(), 0..6)) {
            let before = declared(&o);
            o.push(call(FailClose, false, None, true));
            prop_assert_eq!(declared(&o), before);
        }

        /// `simple` never claims where `declared` unclaims, and turning
        /// at-least-once off never claims where it unclaimed.
        #[test]
        fn monotone(o in proptest::collection::vec(outbound(), 0..6)) {
            let d = declared(&o);
            if !d.claimed {
                prop_assert!(!decide(&o, Attribution::Simple, true, |o| o.mode).claimed);
                prop_assert!(!decide(&o, Attribution::Declared, false, |o| o.mode).claimed);
            }
        }
    }
}
