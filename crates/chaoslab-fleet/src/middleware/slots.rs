//! A bound on the attempts one edge keeps in flight.
//!
//! Taking and giving back a slot is one atomic operation on the counter
//! when the edge is not full, which it almost never is; only a full edge
//! makes callers wait, on a [`Notify`]. (A tokio `Semaphore` locks its wait
//! list on every release, a cost every attempt would pay.)

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use tokio::sync::Notify;

/// Up to `max` slots; see the module docs.
#[derive(Debug)]
pub(crate) struct Slots {
    max: usize,
    used: AtomicUsize,
    waiters: AtomicUsize,
    freed: Notify,
}

/// One slot, given back on drop.
#[derive(Debug)]
pub(crate) struct Slot<'a>(&'a Slots);

impl Slots {
    pub(crate) fn new(max: usize) -> Slots {
        Slots {
            max,
            used: AtomicUsize::new(0),
            waiters: AtomicUsize::new(0),
            freed: Notify::new(),
        }
    }

    /// A slot if one is free now.
    pub(crate) fn try_take(&self) -> Option<Slot<'_>> {
        let mut n = self.used.load(SeqCst);
        loop {
            if n >= self.max {
                return None;
            }
            match self.used.compare_exchange_weak(n, n + 1, SeqCst, SeqCst) {
                Ok(_) => return Some(Slot(self)),
                Err(now) => n = now,
            }
        }
    }

    /// Waits for a slot (callers bound the wait with a timeout).
    pub(crate) async fn take(&self) -> Slot<'_> {
        loop {
            if let Some(s) = self.try_take() {
                return s;
            }
            let notified = self.freed.notified();
            tokio::pin!(notified);
            // Registered before the count is looked at again, so a slot
            // given back after this point wakes us.
            notified.as_mut().enable();
            self.waiters.fetch_add(1, SeqCst);
            let _waiting = Waiting(&self.waiters);
            if let Some(s) = self.try_take() {
                return s;
            }
            notified.await;
        }
    }

    /// Slots taken now.
    #[cfg(test)]
    fn used(&self) -> usize {
        self.used.load(SeqCst)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.used.fetch_sub(1, SeqCst);
        if self.0.waiters.load(SeqCst) > 0 {
            self.0.freed.notify_one();
        }
    }
}

/// Counts a waiter for as long as it waits, cancelled or not.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn never_more_than_max_taken() {
        let s = Slots::new(2);
        let a = s.try_take();
        let b = s.try_take();
        assert!(a.is_some() && b.is_some());
        assert!(s.try_take().is_none());
        drop(a);
        assert!(s.try_take().is_some());
        drop(b);
        assert_eq!(s.used(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiter_gets_the_slot_given_back() {
        let s = Arc::new(Slots::new(1));
        let held = s.try_take().unwrap();
        let s2 = s.clone();
        let waiter = tokio::spawn(async move {
            let _slot = s2.take().await;
            s2.used()
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!waiter.is_finished(), "the edge is full: the waiter waits");
        drop(held);
        assert_eq!(waiter.await.unwrap(), 1);
        assert_eq!(s.used(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_waiter_leaves_nothing_behind() {
        let s = Slots::new(1);
        let held = s.try_take().unwrap();
        let timed_out = tokio::time::timeout(Duration::from_millis(5), s.take()).await;
        assert!(timed_out.is_err());
        assert_eq!(s.waiters.load(SeqCst), 0);
        drop(held);
        assert!(s.try_take().is_some());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_tasks_through_few_slots_all_finish_within_the_bound() {
        let s = Arc::new(Slots::new(3));
        let peak = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..64)
            .map(|_| {
                let (s, peak) = (s.clone(), peak.clone());
                tokio::spawn(async move {
                    for _ in 0..50 {
                        let _slot = s.take().await;
                        peak.fetch_max(s.used(), SeqCst);
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        assert!(peak.load(SeqCst) <= 3);
        assert_eq!(s.used(), 0);
    }
}
