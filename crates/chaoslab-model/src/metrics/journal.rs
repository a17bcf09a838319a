//! A node's recent retry records, for the storm radius of a fleet whose
//! services run in processes of their own.
//!
//! One process's [`StormTracker`](super::storm::StormTracker) sees only the
//! retries its own service sent. A node therefore also writes each retry it
//! sends (root id, edge) and, at the entry, each root it completes, into
//! a fixed ring; the session that drives the nodes reads every node's
//! ring (`GET /retries?after=N` on the control API) and replays the
//! records into one tracker of its own. A record is 16 bytes and the ring
//! holds [`JOURNAL_LEN`] of them, so a node's journal is 1 MiB whatever
//! the run's length; a reader that falls more than that far behind is told
//! how many records it lost.

use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// Records a journal holds: at 200 root requests a second under naive
/// retries (≈ 1,000 retries a second at A), about a minute of them; the
/// session reads every node several times a second.
pub const JOURNAL_LEN: usize = 65_536;
/// The edge written for a root completed at service `s`: `DONE - s`
/// (edges are numbered below [`DONE_BELOW`]).
const DONE: u32 = u32::MAX;
/// Edge numbers at or above this are completions.
const DONE_BELOW: u32 = DONE - (1 << 20);

/// A fixed ring of retry and root-completion records.
#[derive(Debug)]
pub struct Journal {
    ring: Mutex<Ring>,
}

#[derive(Debug)]
struct Ring {
    buf: Vec<(u64, u32)>,
    /// Records written so far; the next one's sequence number.
    written: u64,
}

/// The records after a sequence number, as `GET /retries` answers.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Page {
    /// The sequence number to ask after next time.
    pub next: u64,
    /// Records written after the one asked for but overwritten before
    /// this read: their roots' radius cannot be measured.
    pub lost: u64,
    /// Retries sent, as (root id, edge id), in the order sent.
    pub retries: Vec<(u64, u32)>,
    /// Roots completed at this node (it is the entry), in order.
    pub done: Vec<u64>,
    /// For each of `done`, the service (its root's entry) it completed at.
    #[serde(default)]
    pub done_at: Vec<usize>,
}

impl Default for Journal {
    fn default() -> Self {
        Journal::new()
    }
}

impl Journal {
    /// An empty journal of [`JOURNAL_LEN`] records.
    pub fn new() -> Journal {
        Journal::with_len(JOURNAL_LEN)
    }

    fn with_len(len: usize) -> Journal {
        Journal {
            ring: Mutex::new(Ring {
                buf: Vec::with_capacity(len),
                written: 0,
            }),
        }
    }

    fn push(&self, record: (u64, u32)) {
        let mut r = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        let cap = r.buf.capacity();
        if r.buf.len() < cap {
            r.buf.push(record);
        } else {
            let at = (r.written % cap as u64) as usize;
            r.buf[at] = record;
        }
        r.written += 1;
    }

    /// A retry was sent on `edge` for `root`.
    pub fn retry(&self, root: u64, edge: usize) {
        self.push((
            root,
            u32::try_from(edge)
                .unwrap_or(DONE_BELOW - 1)
                .min(DONE_BELOW - 1),
        ));
    }

    /// Root request `root` completed here, at `service` (its entry).
    pub fn done(&self, root: u64, service: usize) {
        let s = u32::try_from(service).unwrap_or(0).min(DONE - DONE_BELOW);
        self.push((root, DONE - s));
    }

    /// Every record still held after the first `after` written. An `after`
    /// beyond what was written (a node that restarted) reads from the
    /// oldest record held.
    pub fn after(&self, after: u64) -> Page {
        let r = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        let cap = r.buf.capacity() as u64;
        let oldest = r.written.saturating_sub(cap);
        let from = if after > r.written {
            oldest
        } else {
            after.max(oldest)
        };
        let mut page = Page {
            next: r.written,
            lost: from - after.min(from),
            ..Page::default()
        };
        for seq in from..r.written {
            let (root, edge) = r.buf[(seq % cap) as usize];
            if edge >= DONE_BELOW {
                page.done.push(root);
                page.done_at.push((DONE - edge) as usize);
            } else {
                page.retries.push((root, edge));
            }
        }
        page
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_gets_what_it_has_not_read() {
        let j = Journal::with_len(8);
        j.retry(1, 2);
        j.retry(1, 1);
        j.done(1, 3);
        let p = j.after(0);
        assert_eq!(p.next, 3);
        assert_eq!(p.lost, 0);
        assert_eq!(p.retries, vec![(1, 2), (1, 1)]);
        assert_eq!((p.done, p.done_at), (vec![1], vec![3]));
        j.retry(2, 0);
        let p = j.after(p.next);
        assert_eq!((p.next, p.retries, p.done), (4, vec![(2, 0)], vec![]));
        assert_eq!(
            j.after(4),
            Page {
                next: 4,
                ..Page::default()
            }
        );
    }

    #[test]
    fn a_reader_too_far_behind_is_told_what_it_lost() {
        let j = Journal::with_len(4);
        for root in 0..10 {
            j.retry(root, 0);
        }
        let p = j.after(3);
        assert_eq!(p.next, 10);
        assert_eq!(p.lost, 3); // 3, 4, 5 overwritten
        assert_eq!(p.retries, vec![(6, 0), (7, 0), (8, 0), (9, 0)]);
        // The memory stays the ring's.
        assert_eq!(j.ring.lock().unwrap().buf.len(), 4);
        // After a restart the reader starts over at the oldest held.
        let p = j.after(50);
        assert_eq!((p.next, p.lost, p.retries.len()), (10, 0, 4));
    }
}
