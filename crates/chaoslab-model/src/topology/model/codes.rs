//! How a service's errors fail (SPEC section 17): the statuses its error
//! answers carry, and its attempts that got no answer (a timeout, a
//! refused connection), as shares of its errors. A caller's retry
//! conditions read them, and a caller that passes an error up as `same`
//! answers with them.
//!
//! The model takes the status of an error to be independent of its claim:
//! exact whenever either the conditions retry every error (the lab's own
//! presets) or the claims play no part (no ownership), and an
//! approximation only where both act at once.

use error_ownership::conditions::{Failure, RetryOn};

/// Kinds of failure one service's errors are kept as at most; past it the
/// rarest two merge into the commoner.
const KINDS: usize = 6;

/// The shares of a service's errors by how they failed (summing to 1 over
/// its errors, or empty when it has none).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Codes {
    kinds: [(Failure, f64); KINDS],
    len: usize,
}

impl Codes {
    /// No errors.
    pub(super) const NONE: Codes = Codes {
        kinds: [(Failure::Timeout, 0.0); KINDS],
        len: 0,
    };

    /// Every error fails as `f`.
    pub(super) const fn of(f: Failure) -> Codes {
        let mut c = Codes::NONE;
        c.kinds[0] = (f, 1.0);
        c.len = 1;
        c
    }

    /// The kinds with their shares.
    pub(super) fn kinds(&self) -> &[(Failure, f64)] {
        &self.kinds[..self.len]
    }

    /// The errors of several services (or causes) together, each weighed
    /// by its mass of errors.
    pub(super) fn blend(parts: &[(Codes, f64)]) -> Codes {
        let total: f64 = parts.iter().map(|(_, w)| w.max(0.0)).sum();
        if total <= 0.0 {
            return Codes::NONE;
        }
        let mut out: Vec<(Failure, f64)> = Vec::with_capacity(KINDS);
        for (c, w) in parts {
            let w = w.max(0.0) / total;
            for &(f, s) in c.kinds() {
                match out.iter_mut().find(|(g, _)| *g == f) {
                    Some((_, x)) => *x += s * w,
                    None => out.push((f, s * w)),
                }
            }
        }
        out.retain(|(_, s)| *s > 0.0);
        out.sort_by(|a, b| b.1.total_cmp(&a.1));
        while out.len() > KINDS {
            let (_, s) = out.pop().expect("longer than KINDS");
            out[0].1 += s;
        }
        let mut c = Codes::NONE;
        for (i, k) in out.into_iter().enumerate() {
            c.kinds[i] = k;
        }
        c.len = c.kinds.iter().take_while(|(_, s)| *s > 0.0).count();
        c
    }

    /// The share of these errors that `on` retries.
    pub(super) fn retried_share(&self, on: &RetryOn) -> f64 {
        if self.len == 0 {
            return 1.0;
        }
        self.kinds()
            .iter()
            .filter(|(f, _)| on.allows(*f, |_| None))
            .map(|(_, s)| s)
            .sum()
    }

    /// What a caller answers when it passes these errors up as `same`: the
    /// status of each, 504 for a timeout, 502 for a refused connection.
    pub(super) fn passed_same(&self) -> Codes {
        let parts: Vec<(Codes, f64)> = self
            .kinds()
            .iter()
            .map(|&(f, s)| (Codes::of(Failure::Status(f.passed_status())), s))
            .collect();
        Codes::blend(&parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use error_ownership::conditions::Condition;

    #[test]
    fn blends_weigh_by_errors_and_conditions_read_the_shares() {
        let c = Codes::blend(&[
            (Codes::of(Failure::Status(503)), 3.0),
            (Codes::of(Failure::Timeout), 1.0),
        ]);
        let on = RetryOn::EMPTY.with_status(503);
        assert!((c.retried_share(&on) - 0.75).abs() < 1e-12);
        let gw = RetryOn::EMPTY.with(Condition::GatewayError);
        assert!((c.retried_share(&gw) - 1.0).abs() < 1e-12);
        let same = c.passed_same();
        assert_eq!(same.kinds()[0], (Failure::Status(503), 0.75));
        assert_eq!(same.kinds()[1], (Failure::Status(504), 0.25));
        assert_eq!(Codes::NONE.retried_share(&on), 1.0);
    }

    #[test]
    fn many_kinds_stay_bounded() {
        let parts: Vec<(Codes, f64)> = (0..10)
            .map(|i| (Codes::of(Failure::Status(500 + i)), 1.0 + f64::from(i)))
            .collect();
        let c = Codes::blend(&parts);
        assert_eq!(c.kinds().len(), KINDS);
        let sum: f64 = c.kinds().iter().map(|(_, s)| s).sum();
        assert!((sum - 1.0).abs() < 1e-9);
    }
}
