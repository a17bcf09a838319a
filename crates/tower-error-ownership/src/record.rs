//! The per-request record of outbound outcomes: the *dependency analysis*.
//!
//! # Why a record
//!
//! A service that answers with an error must say whether the error is its
//! own. It can only know from what its own outbound calls did *for this
//! request*: if a fail-close dependency failed, the error came from below
//! and it unclaims it; if none failed, it claims it. The
//! [`OwnershipLayer`](crate::OwnershipLayer) opens a record for every
//! inbound request, kept in its own future, and makes it the task's
//! current record while the handler runs; the retry client
//! (`reqwest-error-ownership`, or [`OwnershipPolicy`](crate::OwnershipPolicy))
//! [`record`]s each call into it. [`current`] hands out the record as a
//! shared [`RequestRecord`], for a call made on another task (it is only
//! then that the record is allocated and locked).
//!
//! # Spawned tasks: the context drop
//!
//! The current record is the task's own: the future that holds it makes
//! it the thread's current one only while it polls (or drops) what it
//! runs, as a tokio task-local does. A task spawned with `tokio::spawn`
//! does **not** see it. Calls made there are made outside
//! the record: the analysis sees no failed dependency and the service
//! claims an error that was not its own (rule 4 of the mechanism). Its
//! caller then retries, the one retry the hop below already made is made
//! again, and the storm grows by one level. This is exactly the *dropped
//! context* of Uber's post, and the reason it is the first thing to check
//! when a storm's radius is larger than one. Keep the record across a
//! spawn with [`spawn`] or [`InRequest::in_current_request`]:
//!
//! ```
//! use tower_error_ownership::record::{self, InRequest as _, RequestRecord};
//! use tower_error_ownership::{Claim, DependencyMode, Outbound};
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let rec = std::sync::Arc::new(RequestRecord::new());
//! record::scope(rec.clone(), async {
//!     let failed = Outbound {
//!         dependency: 0,
//!         mode: DependencyMode::FailClose,
//!         failed: true,
//!         claim_seen: Some(Claim::Claimed),
//!         criteria_satisfied: true,
//!     };
//!     // Kept: the spawned call is recorded for this request.
//!     record::spawn(async move { record::record(failed) }).await.unwrap();
//!     // Lost: a bare spawn runs outside the record (the context drop).
//!     tokio::spawn(async move { record::record(failed) }).await.unwrap();
//!     // The same as `record::spawn`, for futures run any other way.
//!     let kept = async move { record::record(failed) }.in_current_request();
//!     tokio::spawn(kept).await.unwrap();
//! })
//! .await;
//! assert_eq!(rec.calls().len(), 2);
//! # }
//! ```

use std::cell::{OnceCell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use error_ownership::claim::Outbound;
use smallvec::SmallVec;

/// Outbound calls a record holds without a heap allocation: one, the
/// most common request's (the record lies in the layer's future, so
/// every word in it is made, moved and dropped with every request).
const INLINE_CALLS: usize = 1;

/// The calls a record makes room for when a request's second call
/// comes: a fan-out allocates once up to this many.
const SPILLED_CALLS: usize = 8;

/// The most outbound calls one request records: a pathological fan-out
/// beyond this keeps its first calls only, so memory stays bounded. An
/// error after that many calls is almost surely not the service's own, and
/// a failed call among the first ones already unclaims it.
pub const MAX_RECORDED_CALLS: usize = 1024;

/// What a record holds when the answer goes out.
#[derive(Debug, Default, Clone)]
pub struct Record {
    /// Every outbound call made for this request, as it ended.
    pub outbound: SmallVec<[Outbound; INLINE_CALLS]>,
    /// The service said the error is its own ([`RequestRecord::mark_own_fault`]).
    pub own_fault: bool,
}

impl Record {
    fn push(&mut self, o: Outbound) {
        let n = self.outbound.len();
        if n == INLINE_CALLS {
            self.outbound.reserve_exact(SPILLED_CALLS - n);
        }
        if n < MAX_RECORDED_CALLS {
            self.outbound.push(o);
        }
    }
}

/// The record of one inbound request, shared by its handler and every
/// outbound call made for it.
///
/// ```
/// use tower_error_ownership::record::RequestRecord;
/// use tower_error_ownership::{DependencyMode, Outbound};
///
/// let rec = RequestRecord::new();
/// rec.record(Outbound {
///     dependency: 3,
///     mode: DependencyMode::FailOpen,
///     failed: true,
///     claim_seen: None,
///     criteria_satisfied: true,
/// });
/// assert_eq!(rec.calls()[0].dependency, 3);
/// assert_eq!(rec.take().outbound.len(), 1);
/// assert!(rec.calls().is_empty());
/// ```
#[derive(Debug, Default)]
pub struct RequestRecord {
    inner: Mutex<Record>,
}

impl RequestRecord {
    /// An empty record.
    pub fn new() -> RequestRecord {
        RequestRecord::default()
    }

    /// Records one outbound call's outcome (all its attempts).
    pub fn record(&self, o: Outbound) {
        self.lock().push(o);
    }

    /// Marks the answer's error as the service's own, whatever its calls
    /// did. The claim rules do not read it; it is ground truth for an
    /// [`Observer`](crate::Observer) that checks them.
    pub fn mark_own_fault(&self) {
        self.lock().own_fault = true;
    }

    /// The calls recorded so far.
    pub fn calls(&self) -> Vec<Outbound> {
        self.lock().outbound.to_vec()
    }

    /// Takes everything out, leaving the record empty.
    pub fn take(&self) -> Record {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> MutexGuard<'_, Record> {
        // A panic elsewhere while holding the lock leaves a valid record.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The record a request runs inside, made current by [`Scoped`].
///
/// A request's calls are made on the task that polls its handler, so the
/// record lives in place, inside the layer's future: no allocation, no
/// lock. Only when a call leaves the task ([`current`], for a spawn) is a
/// shared [`RequestRecord`] made, and from then on every call of the
/// request goes there.
#[derive(Debug, Default)]
pub struct Slot {
    local: RefCell<Record>,
    shared: OnceCell<Arc<RequestRecord>>,
}

impl Slot {
    fn of(rec: Arc<RequestRecord>) -> Slot {
        Slot {
            local: RefCell::default(),
            shared: OnceCell::from(rec),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut Record) -> R) -> R {
        match self.shared.get() {
            Some(shared) => f(&mut shared.lock()),
            None => f(&mut self.local.borrow_mut()),
        }
    }

    /// The shared record, made on first use with what was recorded here.
    fn share(&self) -> Arc<RequestRecord> {
        self.shared
            .get_or_init(|| {
                let rec = RequestRecord::new();
                *rec.lock() = self.local.take();
                Arc::new(rec)
            })
            .clone()
    }

    /// Reads what the request's calls recorded: in place, or the shared
    /// record when a call left the task (then read when the answer is
    /// written, so a spawned call that ended by then is in it). The
    /// record is lent, not moved out: it is ten words, and this runs on
    /// every answer.
    pub(crate) fn read<R>(&mut self, f: impl FnOnce(&Record) -> R) -> R {
        match self.shared.get() {
            Some(shared) => f(&shared.take()),
            None => f(self.local.get_mut()),
        }
    }

    /// Whether the record is still kept in place (no call left the task).
    #[cfg(test)]
    fn is_local(&self) -> bool {
        self.shared.get().is_none()
    }
}

scoped_tls::scoped_thread_local! {
    /// The slot of the future being polled on this thread, if it runs
    /// inside one: a pointer set and reset around each poll, where a
    /// tokio task-local swaps its whole value in and out.
    static CURRENT: Slot
}

/// `f` of the current slot, if the thread runs inside one.
fn with_current<R>(f: impl FnOnce(&Slot) -> R) -> Option<R> {
    CURRENT.is_set().then(|| CURRENT.with(f))
}

/// The current task's request record, if it runs inside one: a handle to
/// give a call made elsewhere (another task, another runtime).
pub fn current() -> Option<Arc<RequestRecord>> {
    with_current(Slot::share)
}

/// Records an outbound call into the current task's request record.
/// Returns whether there was one.
pub fn record(o: Outbound) -> bool {
    with_current(|s| s.with(|r| r.push(o))).is_some()
}

/// Marks the current request's error as the service's own; see
/// [`RequestRecord::mark_own_fault`]. Returns whether there was a record.
pub fn mark_own_fault() -> bool {
    with_current(|s| s.with(|r| r.own_fault = true)).is_some()
}

/// Runs `fut` with `rec` as the current request record.
pub fn scope<F: Future>(rec: Arc<RequestRecord>, fut: F) -> Scoped<F> {
    Scoped::new(Slot::of(rec), fut)
}

/// Runs `fut` inside a new record kept in place (the layer's).
#[inline(always)]
pub(crate) fn scope_in_place<F: Future>(fut: F) -> Scoped<F> {
    Scoped::new(Slot::default(), fut)
}

pin_project_lite::pin_project! {
    /// A future run inside a request record ([`scope`]): the record lies
    /// in it, and is the thread's current one while the future is polled
    /// and when it is dropped (a call's own drop may record), as a tokio
    /// task-local's scope is.
    pub struct Scoped<F> {
        slot: Slot,
        // `None` only once dropped.
        #[pin]
        fut: Option<F>,
    }

    impl<F> PinnedDrop for Scoped<F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            let mut fut = this.fut;
            CURRENT.set(this.slot, || fut.set(None));
        }
    }
}

impl<F> Scoped<F> {
    fn new(slot: Slot, fut: F) -> Scoped<F> {
        Scoped {
            slot,
            fut: Some(fut),
        }
    }

    /// The record, to read once the future has answered (or is dropped).
    pub(crate) fn slot(self: Pin<&mut Self>) -> &mut Slot {
        self.project().slot
    }
}

impl<F: Future> Future for Scoped<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        match this.fut.as_pin_mut() {
            Some(fut) => CURRENT.set(this.slot, || fut.poll(cx)),
            None => Poll::Pending,
        }
    }
}

/// Keeps a future inside the current request's record wherever it runs.
pub trait InRequest: Future + Sized {
    /// This future, bound to the request record current now. Poll it
    /// anywhere (a spawned task, a `JoinSet`, another runtime's thread):
    /// its calls are recorded for the request that made it.
    fn in_current_request(self) -> Carried<Self>;
}

impl<F: Future> InRequest for F {
    fn in_current_request(self) -> Carried<F> {
        Carried::new(current(), self)
    }
}

pin_project_lite::pin_project! {
    /// A future bound to a request record: see [`InRequest`].
    pub struct Carried<F> {
        #[pin]
        inner: Inner<F>,
    }
}

pin_project_lite::pin_project! {
    #[project = InnerProj]
    enum Inner<F> {
        Kept { #[pin] fut: Scoped<F> },
        Bare { #[pin] fut: F },
    }
}

impl<F: Future> Carried<F> {
    fn new(rec: Option<Arc<RequestRecord>>, fut: F) -> Carried<F> {
        let inner = match rec {
            Some(rec) => Inner::Kept {
                fut: scope(rec, fut),
            },
            None => Inner::Bare { fut },
        };
        Carried { inner }
    }
}

impl<F: Future> Future for Carried<F> {
    type Output = F::Output;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        match self.project().inner.project() {
            InnerProj::Kept { fut } => fut.poll(cx),
            InnerProj::Bare { fut } => fut.poll(cx),
        }
    }
}

/// `tokio::spawn`, keeping the current request's record: the helper to
/// use for outbound calls made from a spawned task. A bare `tokio::spawn`
/// drops the record, and the service then claims errors its dependencies
/// caused (see the [module docs](self)).
pub fn spawn<F>(fut: F) -> tokio::task::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(fut.in_current_request())
}

#[cfg(test)]
mod tests {
    use super::*;
    use error_ownership::{Claim, DependencyMode};

    fn call(failed: bool) -> Outbound {
        Outbound {
            dependency: 1,
            mode: DependencyMode::FailClose,
            failed,
            claim_seen: failed.then_some(Claim::Claimed),
            criteria_satisfied: true,
        }
    }

    #[tokio::test]
    async fn a_record_is_found_in_scope_and_lost_across_a_bare_spawn() {
        assert!(current().is_none());
        assert!(!record(call(true)));
        let rec = Arc::new(RequestRecord::new());
        scope(rec.clone(), async {
            assert!(record(call(false)));
            let lost = tokio::spawn(async { current().is_none() }).await.unwrap();
            assert!(lost, "a bare spawn must not see the record");
            let kept = spawn(async { record(call(true)) }).await.unwrap();
            assert!(kept);
            assert!(mark_own_fault());
        })
        .await;
        let r = rec.take();
        assert_eq!(r.outbound.as_slice(), &[call(false), call(true)]);
        assert!(r.own_fault);
    }

    #[tokio::test]
    async fn a_future_made_outside_a_request_runs_as_it_would() {
        let fut = async { current().is_none() }.in_current_request();
        assert!(tokio::spawn(fut).await.unwrap());
    }

    #[tokio::test]
    async fn a_record_kept_in_place_moves_to_a_shared_one_when_a_call_leaves_the_task() {
        let mut fut = std::pin::pin!(scope_in_place(async {
            assert!(record(call(false)));
            // A spawn takes the record with it: from then on, every call
            // of the request lands in the shared record, the first too.
            let kept = spawn(async { record(call(true)) }).await.unwrap();
            assert!(kept);
            assert!(record(call(false)));
        }));
        fut.as_mut().await;
        let r = fut.as_mut().slot().read(Record::clone);
        assert_eq!(
            r.outbound.as_slice(),
            &[call(false), call(true), call(false)]
        );
    }

    #[tokio::test]
    async fn a_record_kept_in_place_is_read_without_a_shared_one() {
        let mut fut = std::pin::pin!(scope_in_place(async {
            assert!(record(call(true)));
            assert!(mark_own_fault());
        }));
        fut.as_mut().await;
        let slot = fut.as_mut().slot();
        assert!(slot.is_local(), "no call left the task");
        let r = slot.read(Record::clone);
        assert_eq!(r.outbound.as_slice(), &[call(true)]);
        assert!(r.own_fault);
    }

    #[tokio::test]
    async fn a_future_dropped_unfinished_is_dropped_inside_its_record() {
        /// Records a failed call when dropped, as a call cut short may.
        struct RecordsOnDrop;
        impl Drop for RecordsOnDrop {
            fn drop(&mut self) {
                assert!(record(call(true)), "dropped inside the record");
            }
        }
        let rec = Arc::new(RequestRecord::new());
        let outer = Arc::new(RequestRecord::new());
        let mut fut = Box::pin(scope(rec.clone(), async {
            let _guard = RecordsOnDrop;
            std::future::pending::<()>().await;
        }));
        // Polled once inside another record: the inner one is current
        // while it runs, the outer one again after.
        scope(outer.clone(), async {
            let polled = std::future::poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await;
            assert!(polled.is_pending());
            assert!(record(call(false)));
        })
        .await;
        assert!(current().is_none(), "no record outside a scope");
        drop(fut);
        assert_eq!(rec.calls(), [call(true)]);
        assert_eq!(outer.calls(), [call(false)]);
    }

    #[test]
    fn a_records_second_call_makes_room_for_a_fan_out_at_once() {
        let mut r = Record::default();
        r.push(call(false));
        assert!(!r.outbound.spilled(), "one call is kept in place");
        r.push(call(true));
        assert!(r.outbound.spilled());
        assert_eq!(r.outbound.capacity(), SPILLED_CALLS);
        for _ in 2..SPILLED_CALLS {
            r.push(call(false));
        }
        assert_eq!(r.outbound.capacity(), SPILLED_CALLS, "no second allocation");
        assert_eq!(r.outbound[1], call(true));
    }

    #[test]
    fn a_record_holds_a_bounded_number_of_calls() {
        let rec = RequestRecord::new();
        let mut local = Record::default();
        for _ in 0..MAX_RECORDED_CALLS + 10 {
            rec.record(call(true));
            local.push(call(true));
        }
        assert_eq!(rec.calls().len(), MAX_RECORDED_CALLS);
        assert_eq!(local.outbound.len(), MAX_RECORDED_CALLS);
    }
}
