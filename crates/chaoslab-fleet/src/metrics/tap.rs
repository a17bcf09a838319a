//! The wire tap: a sample of the exchanges on every edge, as they came
//! off the wire (status, claim header value) with what the caller did
//! next, so an audience sees the header and the decision it caused.
//!
//! Sampled: at most one exchange per edge every [`SAMPLE_EVERY`], into a
//! ring of the newest [`TAP_LINES`]. Taking a sample costs one clock read
//! and one compare-and-swap per attempt; the ring's lock is taken only
//! for a sample.
//!
//! A `chaoslab node` serves its samples (`GET /tap?after=N`, [`Page`]);
//! the session over a fleet of nodes adds each node's to its own ring
//! ([`Tap::add`]), so the panel shows every edge's exchanges.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::observe::Exchanged;
pub use chaoslab_model::metrics::tap::Tapped;

/// Exchanges kept.
pub const TAP_LINES: usize = 64;
/// At most one sample per edge this often.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// The sampled exchanges of a fleet.
#[derive(Debug)]
pub struct Tap {
    started: Instant,
    /// Per edge, µs since `started` of its last sample, plus one (0: none).
    last: Vec<AtomicU64>,
    ring: Mutex<VecDeque<Tapped>>,
    seq: AtomicU64,
}

impl Tap {
    /// A tap over `edges` edges.
    pub fn new(edges: usize) -> Tap {
        Tap {
            started: Instant::now(),
            last: (0..edges).map(|_| AtomicU64::new(0)).collect(),
            ring: Mutex::new(VecDeque::with_capacity(TAP_LINES)),
            seq: AtomicU64::new(0),
        }
    }

    /// Offers an exchange; kept if its edge has had no sample for
    /// [`SAMPLE_EVERY`] (on the attempts' send times).
    pub fn offer(&self, e: &Exchanged) {
        let Some(last) = self.last.get(e.edge) else {
            return;
        };
        // The attempt's own send time: no clock read on the request path.
        let t = e.sent.saturating_duration_since(self.started);
        let now = u64::try_from(t.as_micros()).unwrap_or(u64::MAX - 1) + 1;
        let before = last.load(Ordering::Relaxed);
        let every = SAMPLE_EVERY.as_micros() as u64;
        if before != 0 && now.saturating_sub(before) < every {
            return;
        }
        if last
            .compare_exchange(before, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        self.keep(Some(Tapped {
            seq: 0,
            t,
            edge: e.edge,
            attempt: e.attempt,
            status: e.status,
            claim: e.claim,
            then: e.then,
        }));
    }

    /// Adds samples another process took (a node's), numbered and timed
    /// as this tap's: when they arrived, within a read period of when
    /// they were taken.
    pub fn add(&self, xs: impl IntoIterator<Item = Tapped>) {
        let t = self.started.elapsed();
        self.keep(xs.into_iter().map(|x| Tapped { t, ..x }));
    }

    /// Numbers `xs` and puts them in the ring, under one lock.
    fn keep(&self, xs: impl IntoIterator<Item = Tapped>) {
        let mut ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        for x in xs {
            let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
            if ring.len() == TAP_LINES {
                ring.pop_front();
            }
            ring.push_back(Tapped { seq, ..x });
        }
    }

    /// The newest samples, oldest first.
    pub fn recent(&self) -> Vec<Tapped> {
        let ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        ring.iter().copied().collect()
    }

    /// The samples numbered after `after` still in the ring, and the
    /// number to ask after next. A reader ahead of this tap (it read a
    /// node that has since restarted) gets the whole ring.
    pub fn after(&self, after: u64) -> Page {
        let ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        let after = if after > self.seq.load(Ordering::Relaxed) {
            0
        } else {
            after
        };
        let tapped: Vec<Tapped> = ring.iter().filter(|x| x.seq > after).copied().collect();
        Page {
            next: tapped.last().map_or(after, |x| x.seq),
            tapped,
        }
    }
}

/// A node's samples since a reader's last read (`GET /tap?after=N`): at
/// most [`TAP_LINES`]; older ones are gone.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Page {
    /// Ask after this next time.
    pub next: u64,
    /// The samples, oldest first.
    pub tapped: Vec<Tapped>,
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::observe::{Then, WireValue};

    fn ex(edge: usize, status: u16) -> Exchanged {
        Exchanged {
            service: 0,
            edge,
            attempt: 0,
            status: Some(status),
            claim: Some(WireValue::of(b"true")),
            then: Then::Retried,
            sent: Instant::now(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn one_sample_per_edge_per_period_into_a_bounded_ring() {
        let tap = Tap::new(2);
        tap.offer(&ex(0, 500));
        tap.offer(&ex(0, 502)); // same edge, too soon
        tap.offer(&ex(1, 503)); // another edge
        let r = tap.recent();
        assert_eq!(
            r.iter().map(|x| x.status).collect::<Vec<_>>(),
            [Some(500), Some(503)]
        );
        assert_eq!(r[0].claim.unwrap().text(), "true");
        tokio::time::advance(SAMPLE_EVERY).await;
        tap.offer(&ex(0, 504));
        assert_eq!(tap.recent().last().unwrap().status, Some(504));
        for _ in 0..TAP_LINES * 2 {
            tokio::time::advance(SAMPLE_EVERY).await;
            tap.offer(&ex(0, 500));
        }
        let r = tap.recent();
        assert_eq!(r.len(), TAP_LINES);
        assert!(r.windows(2).all(|w| w[0].seq + 1 == w[1].seq));
        assert_eq!(r.last().unwrap().seq, 3 + 2 * TAP_LINES as u64);
    }

    #[tokio::test(start_paused = true)]
    async fn a_reader_gets_what_came_after_and_adds_it_renumbered() {
        let node = Tap::new(2);
        node.offer(&ex(0, 500));
        node.offer(&ex(1, 503));
        let p = node.after(0);
        assert_eq!((p.next, p.tapped.len()), (2, 2));
        assert!(node.after(2).tapped.is_empty());
        assert_eq!(node.after(2).next, 2);
        // Ahead of the node (it restarted): the whole ring again.
        assert_eq!(node.after(900).tapped.len(), 2);
        // Across the wire and into the session's tap, numbered there.
        let json = serde_json::to_string(&p).unwrap();
        let back: Page = serde_json::from_str(&json).unwrap();
        assert_eq!(back, p);
        let session = Tap::new(1);
        session.offer(&ex(0, 502));
        session.add(back.tapped);
        let r = session.recent();
        assert_eq!(r.iter().map(|x| x.seq).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(r[2].status, Some(503));
        assert_eq!(r[2].claim.unwrap().text(), "true");
        // A claim longer than the tap keeps is refused, not sliced.
        let long = json.replacen("[116,114,117,101]", &format!("{:?}", [b'x'; 30]), 1);
        assert!(serde_json::from_str::<Page>(&long).is_err(), "{long}");
    }
}
