//! Finite capacity: a service's workers and the FIFO queue in front of
//! them (SPEC section 7).
//!
//! A request to a service with `workers` becomes a job. A job that finds
//! the queue full is refused at once (the handler sheds it with 503,
//! claimed). Otherwise it waits its turn on a task of its own, takes a
//! worker, holds it for its whole service time and its calls, and sends
//! its answer back to the handler. The job lives outside the handler's
//! future on purpose: hyper drops that future when the caller goes away,
//! and in a real server the work goes on regardless. A job whose caller
//! has gone runs to the end all the same and its answer is thrown away
//! (`work_wasted`), unless the service has `cancel: true`, when it is
//! skipped as it reaches a worker. A job whose caller propagated a deadline
//! (`deadline: propagate`) is skipped as it reaches a worker once that
//! deadline has passed, whatever `cancel` says: nobody waits for it.
//!
//! The queue is bounded and so is the number of tasks: at most `queue`
//! jobs wait and at most `workers` run.
//!
//! Each worker keeps the time it would be free as an ideal server: a job
//! starts at the later of its arrival and that time, so the timer's
//! millisecond rounding and the hand-over between tasks do not add up
//! into lost capacity (four workers with 25 ms of work serve 160 requests
//! a second, not 152).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{oneshot, Semaphore};
use tokio::time::Instant;

use crate::metrics::Metrics;

/// A service's workers and queue.
#[derive(Debug)]
pub struct Workers {
    service: usize,
    permits: Arc<Semaphore>,
    /// Workers configured now (the permits may lag a shrink while busy
    /// workers finish).
    workers: AtomicUsize,
    queue: AtomicUsize,
    queued: AtomicUsize,
    cancel: AtomicBool,
    /// When each idle worker became free, ideally.
    free_at: Mutex<BinaryHeap<Reverse<Instant>>>,
    metrics: Arc<Metrics>,
}

/// Why a job was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueFull;

impl Workers {
    /// `workers` workers behind a queue of `queue` places.
    pub fn new(
        service: usize,
        workers: usize,
        queue: usize,
        cancel: bool,
        metrics: Arc<Metrics>,
    ) -> Arc<Workers> {
        Arc::new(Workers {
            service,
            permits: Arc::new(Semaphore::new(workers)),
            workers: AtomicUsize::new(workers),
            queue: AtomicUsize::new(queue),
            queued: AtomicUsize::new(0),
            cancel: AtomicBool::new(cancel),
            free_at: Mutex::new(BinaryHeap::new()),
            metrics,
        })
    }

    /// Workers configured now.
    pub fn workers(&self) -> usize {
        self.workers.load(Ordering::Relaxed)
    }

    /// Places in the queue now.
    pub fn queue(&self) -> usize {
        self.queue.load(Ordering::Relaxed)
    }

    /// Changes the number of workers: more start at once; fewer take
    /// effect as busy workers finish.
    pub fn set_workers(self: &Arc<Self>, n: usize) {
        let old = self.workers.swap(n, Ordering::Relaxed);
        if n > old {
            self.permits.add_permits(n - old);
        } else if n < old {
            let permits = self.permits.clone();
            let fewer = u32::try_from(old - n).unwrap_or(u32::MAX);
            tokio::spawn(async move {
                if let Ok(p) = permits.acquire_many_owned(fewer).await {
                    p.forget();
                }
            });
        }
    }

    fn lock_free_at(&self) -> std::sync::MutexGuard<'_, BinaryHeap<Reverse<Instant>>> {
        self.free_at.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes the queue's length; jobs already waiting stay.
    pub fn set_queue(&self, n: usize) {
        self.queue.store(n, Ordering::Relaxed);
    }

    /// Submits a job: `run` is started on a worker when one is free, in
    /// arrival order, with the instant its service ideally began; it
    /// returns its output and the instant it ideally ended, and the output
    /// comes back on the receiver. A full queue refuses the job. A job
    /// that reaches a worker after its `deadline` is skipped (its receiver
    /// then sees the sender dropped).
    pub fn submit<J, F, T>(
        self: &Arc<Self>,
        deadline: Option<Instant>,
        run: J,
    ) -> Result<oneshot::Receiver<T>, QueueFull>
    where
        J: FnOnce(Instant) -> F + Send + 'static,
        F: Future<Output = (T, Instant)> + Send + 'static,
        T: Send + 'static,
    {
        let arrived = Instant::now();
        // A free worker takes the job at once; it never waits in (nor
        // counts against) the queue. The semaphore is fair, so a free
        // permit means nobody is queued ahead.
        let free = self.permits.clone().try_acquire_owned().ok();
        if free.is_none() {
            let depth = self.queued.fetch_add(1, Ordering::Relaxed) + 1;
            if depth > self.queue.load(Ordering::Relaxed) {
                self.queued.fetch_sub(1, Ordering::Relaxed);
                self.metrics.shed(self.service);
                return Err(QueueFull);
            }
            self.metrics.queued(self.service);
        }
        let (tx, rx) = oneshot::channel();
        let me = self.clone();
        tokio::spawn(async move {
            let permit = match free {
                Some(p) => p,
                None => {
                    // A closed semaphore never happens: the fleet keeps it open.
                    let Ok(permit) = me.permits.clone().acquire_owned().await else {
                        return;
                    };
                    me.queued.fetch_sub(1, Ordering::Relaxed);
                    me.metrics.dequeued(me.service);
                    permit
                }
            };
            let gone = tx.is_closed() && me.cancel.load(Ordering::Relaxed);
            if gone || deadline.is_some_and(|d| Instant::now() >= d) {
                me.metrics.job_skipped(me.service);
                return;
            }
            me.metrics.job_started(me.service);
            let free = me.lock_free_at().pop().map(|Reverse(t)| t);
            let start = free.map_or(arrived, |f| f.max(arrived));
            let (out, end) = run(start).await;
            me.metrics
                .job_done(me.service, end.saturating_duration_since(start));
            me.lock_free_at().push(Reverse(end));
            drop(permit);
            if tx.send(out).is_err() {
                me.metrics.work_wasted(me.service);
            }
        });
        Ok(rx)
    }
}
