//! A proxy's retries, counted where they land: at the callee.
//!
//! On an edge through a sidecar the caller's client makes one attempt per
//! call and never sees the proxy's retries. So the client numbers each
//! call in the `x-chaoslab-call` header (`EDGE-N`), which nginx and
//! HAProxy pass through untouched on every try, and the callee, on an
//! attempt whose call it has already seen, counts a retry on that edge:
//! the same counters the lab's own client feeds (retries per edge and per
//! service, the storm radius by the trace's root), so the figures read
//! alike whoever retried.
//!
//! Why a number of its own and not the trace: every call a request makes
//! carries the same child trace, and so does every attempt of each, so
//! the second call of a request that was itself retried would read as a
//! retry.
//!
//! Bounded: per edge a table of [`SLOTS`] recent calls, a call's number
//! picking its slot. Numbers follow each other, so a retry is missed only
//! when [`SLOTS`] later calls on its edge started before it arrived (four
//! seconds at a thousand calls a second; a proxy retries within one
//! try's timeout). Each edge's numbers start at a random point, so the
//! callers of one edge in other processes do not share them.

use std::sync::atomic::{AtomicU64, Ordering};

use http::{HeaderMap, HeaderName, HeaderValue};

/// The header that numbers a call on an edge through a sidecar.
pub const CALL_HEADER: &str = "x-chaoslab-call";

/// [`CALL_HEADER`] as a ready header name.
pub static CALL: HeaderName = HeaderName::from_static(CALL_HEADER);

/// Recent calls an edge's table remembers.
pub const SLOTS: usize = 4096;

/// The low bits of a slot: how many attempts of its call arrived (0: an
/// empty slot).
const COUNT: u64 = 0xff;

/// A caller's numbering of the calls on one edge through a sidecar.
#[derive(Debug)]
pub struct CallNumbers {
    next: AtomicU64,
}

impl CallNumbers {
    /// Numbers starting at a random point.
    pub fn new() -> CallNumbers {
        CallNumbers {
            next: AtomicU64::new(rand::random::<u64>() >> 8),
        }
    }

    /// The header value of the next call on edge `edge`.
    pub fn next(&self, edge: usize) -> HeaderValue {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let mut v = HeaderValue::from_str(&format!("{edge}-{n}"))
            .expect("digits and a dash are a valid header value");
        // A new value on every call: never worth HPACK's table.
        v.set_sensitive(true);
        v
    }
}

impl Default for CallNumbers {
    fn default() -> Self {
        CallNumbers::new()
    }
}

/// An attempt of a call on an edge through a sidecar, as its callee saw
/// it arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProxiedAttempt {
    /// The edge.
    pub edge: usize,
    /// Its caller.
    pub caller: usize,
    /// 0 for the call's first attempt to arrive, 1 for the proxy's first
    /// retry, and so on (up to 254).
    pub attempt: u32,
}

impl ProxiedAttempt {
    /// Whether it is a retry.
    pub fn is_retry(&self) -> bool {
        self.attempt > 0
    }
}

/// One edge's table.
#[derive(Debug)]
struct Table {
    caller: usize,
    callee: usize,
    slots: Box<[AtomicU64]>,
}

impl Table {
    /// Call `n` arrived: which of its attempts this is.
    fn saw(&self, n: u64) -> u32 {
        let slot = &self.slots[(n % SLOTS as u64) as usize];
        let key = (n << 8) & !COUNT;
        let mut cur = slot.load(Ordering::Relaxed);
        loop {
            let seen = cur & COUNT;
            let (next, attempt) = if seen != 0 && cur & !COUNT == key {
                (cur + u64::from(seen < COUNT), seen)
            } else {
                (key | 1, 0)
            };
            match slot.compare_exchange_weak(cur, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return attempt as u32,
                Err(now) => cur = now,
            }
        }
    }
}

/// Every edge through a sidecar, as its callees count the attempts on it.
#[derive(Debug, Default)]
pub struct ProxiedCalls {
    /// Per edge id: its table, when it goes through a sidecar.
    edges: Vec<Option<Table>>,
}

impl ProxiedCalls {
    /// Tables for the edges `proxied` gives: (edge id, caller, callee).
    pub fn new(edges: usize, proxied: impl IntoIterator<Item = (usize, usize, usize)>) -> Self {
        let mut t: Vec<Option<Table>> = (0..edges).map(|_| None).collect();
        for (edge, caller, callee) in proxied {
            if let Some(slot) = t.get_mut(edge) {
                *slot = Some(Table {
                    caller,
                    callee,
                    slots: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
                });
            }
        }
        ProxiedCalls { edges: t }
    }

    /// Whether any edge goes through a sidecar.
    pub fn is_empty(&self) -> bool {
        self.edges.iter().all(Option::is_none)
    }

    /// What an attempt arriving at service `callee` with `headers` is: an
    /// attempt of a numbered call on an edge into it through a sidecar,
    /// or `None` (no number, a malformed one, an edge that is not into
    /// it or not through a sidecar).
    pub fn arrived(&self, callee: usize, headers: &HeaderMap) -> Option<ProxiedAttempt> {
        let v = headers.get(&CALL)?.to_str().ok()?;
        let (edge, n) = v.trim().split_once('-')?;
        let edge: usize = edge.parse().ok()?;
        let n: u64 = n.parse().ok()?;
        let t = self.edges.get(edge)?.as_ref()?;
        if t.callee != callee {
            return None;
        }
        Some(ProxiedAttempt {
            edge,
            caller: t.caller,
            attempt: t.saw(n),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(v: &HeaderValue) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(&CALL, v.clone());
        h
    }

    #[test]
    fn a_calls_second_attempt_is_a_retry_and_the_next_call_is_not() {
        let calls = ProxiedCalls::new(3, [(2, 0, 1)]);
        let numbers = CallNumbers::new();
        let first = headers(&numbers.next(2));
        let second = headers(&numbers.next(2));
        let at = |h: &HeaderMap| calls.arrived(1, h).map(|a| a.attempt);
        assert_eq!(at(&first), Some(0));
        assert_eq!(at(&first), Some(1));
        assert_eq!(at(&first), Some(2));
        assert_eq!(at(&second), Some(0), "another call is no retry");
        assert!(calls.arrived(1, &first).unwrap().is_retry());
        let a = calls.arrived(1, &second).unwrap();
        assert_eq!((a.edge, a.caller, a.attempt), (2, 0, 1));
        // Not into this service, not through a sidecar, not numbered.
        assert_eq!(calls.arrived(0, &first), None);
        assert_eq!(calls.arrived(1, &headers(&numbers.next(1))), None);
        assert_eq!(calls.arrived(1, &HeaderMap::new()), None);
        assert_eq!(
            calls.arrived(1, &headers(&HeaderValue::from_static("2-x"))),
            None
        );
        assert_eq!(
            calls.arrived(1, &headers(&HeaderValue::from_static("9-1"))),
            None
        );
    }

    #[test]
    fn a_retry_is_seen_until_the_table_has_turned_over() {
        let calls = ProxiedCalls::new(1, [(0, 0, 1)]);
        let numbers = CallNumbers::new();
        let first = headers(&numbers.next(0));
        assert_eq!(calls.arrived(1, &first).unwrap().attempt, 0);
        for _ in 0..SLOTS - 1 {
            let h = headers(&numbers.next(0));
            assert_eq!(calls.arrived(1, &h).unwrap().attempt, 0);
        }
        assert_eq!(calls.arrived(1, &first).unwrap().attempt, 1);
        let h = headers(&numbers.next(0));
        calls.arrived(1, &h);
        assert_eq!(
            calls.arrived(1, &first).unwrap().attempt,
            0,
            "its slot went to a later call"
        );
    }
}
