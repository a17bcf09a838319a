//! What the lab's endpoints refused, and why: each refusal is counted by
//! its reason (`chaoslab_control_refused_total{reason}`), and the newest
//! are kept, bounded, for the dashboard's event log.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use tokio::time::Instant;

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Its `Host` names neither the address bound, `localhost`, nor a
    /// name given with `--control-host` (a DNS-rebinding page): 421.
    Host,
    /// It came from a web page of another origin: 403.
    Origin,
    /// It carries no token, or the wrong one: 401.
    Token,
    /// A `POST` whose body is not declared `application/json` (a form or
    /// `text/plain`, which a page can send without asking): 415.
    ContentType,
}

impl Reason {
    /// Every reason, in the order of [`Reason::label`]s on the wire.
    pub const ALL: [Reason; 4] = [
        Reason::Host,
        Reason::Origin,
        Reason::Token,
        Reason::ContentType,
    ];

    /// Its `reason` label and its word in the log.
    pub fn label(self) -> &'static str {
        match self {
            Reason::Host => "host",
            Reason::Origin => "origin",
            Reason::Token => "token",
            Reason::ContentType => "content-type",
        }
    }
}

/// The newest refusals kept for the log.
const KEPT: usize = 32;

/// The refusals of one process's endpoints.
#[derive(Debug, Default)]
pub struct Refusals {
    counts: [AtomicU64; 4],
    recent: Mutex<VecDeque<(Instant, String)>>,
}

impl Refusals {
    /// Counts a refusal for `reason`, described by `what`
    /// (`POST /actions from http://evil.example`).
    pub fn refuse(&self, reason: Reason, what: String) {
        self.counts[reason as usize].fetch_add(1, Ordering::Relaxed);
        let mut r = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if r.len() == KEPT {
            r.pop_front();
        }
        r.push_back((
            Instant::now(),
            format!("{what} (refused: {})", reason.label()),
        ));
    }

    /// How many were refused for each reason, in [`Reason::ALL`]'s order.
    pub fn counts(&self) -> [u64; 4] {
        std::array::from_fn(|i| self.counts[i].load(Ordering::Relaxed))
    }

    /// The newest refusals, oldest first, with when they came.
    pub fn recent(&self) -> Vec<(Instant, String)> {
        let r = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        r.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_counted_by_reason_and_the_newest_kept() {
        let r = Refusals::default();
        for i in 0..40 {
            r.refuse(Reason::Origin, format!("POST /actions #{i}"));
        }
        r.refuse(Reason::Host, "GET /state".into());
        assert_eq!(r.counts(), [1, 40, 0, 0]);
        let recent = r.recent();
        assert_eq!(recent.len(), KEPT);
        assert_eq!(recent.last().unwrap().1, "GET /state (refused: host)");
        assert_eq!(recent[0].1, "POST /actions #9 (refused: origin)");
    }
}
