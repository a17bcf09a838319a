//! The open-loop load generator at the entry.
//!
//! Root requests leave on a schedule (constant or Poisson arrivals at the
//! set rate) whether or not earlier ones have come back: a slow or failing
//! fleet does not slow the offered load down, as real users do not wait
//! for each other. What is in flight is bounded: over the bound a request
//! is counted as *dropped* instead of queued, so memory stays fixed under
//! any overload.
//!
//! A root may instead be a closed loop of clients ([`closed`]), each
//! waiting for its answer and a think time before its next request.
//!
//! It starts with the fleet, so its one failure (its HTTP client cannot be
//! built) is a [`LoadError`].

pub mod closed;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::metrics::Metrics;
use crate::topology::Arrival;

/// The load generator's HTTP client could not be built.
#[derive(Debug, thiserror::Error)]
#[error(
    "Could not build the load generator's HTTP client for the entry service at {url}: {}.",
    crate::format::with_causes(source)
)]
pub struct LoadError {
    /// The entry service's URL the load was aimed at.
    pub url: String,
    /// The client builder's error.
    #[source]
    pub source: reqwest::Error,
}

/// Root requests in flight at most, by default.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 4096;
/// The in-flight bound for a rate: two seconds of arrivals, at least 1024
/// and at most [`DEFAULT_MAX_IN_FLIGHT`]. Each root in flight can hold a
/// connection on every hop, so this bound is what caps a starved or
/// overloaded fleet's memory.
pub fn in_flight_for(rps: f64) -> usize {
    ((2.0 * rps.max(0.0)) as usize).clamp(1024, DEFAULT_MAX_IN_FLIGHT)
}

/// How long the end user waits for one root request when the topology
/// sets no `load.timeout`.
pub const ROOT_TIMEOUT: Duration = Duration::from_secs(30);
/// After a stall (a paused machine, a suspended process) the schedule
/// catches up at most this far back instead of sending a burst.
const MAX_CATCH_UP: Duration = Duration::from_millis(200);
/// The longest gap between two arrivals of one root, in seconds: a day.
/// (The gap once stopped at a minute, which sent every root of less than
/// one request a minute at one a minute: on a mesh of hundreds of roots at
/// half its rate, a burst at the 60th second, 171 root requests a second
/// sent against 130 offered.)
const MAX_GAP_S: f64 = 86_400.0;

/// The generator's knobs, changeable while it runs.
#[derive(Debug)]
pub struct LoadControl {
    rps_bits: AtomicU64,
    paused: AtomicBool,
}

impl LoadControl {
    /// Knobs set to `rps`, running.
    pub fn new(rps: f64) -> LoadControl {
        LoadControl {
            rps_bits: AtomicU64::new(rps.max(0.0).to_bits()),
            paused: AtomicBool::new(false),
        }
    }

    /// The rate in force.
    pub fn rps(&self) -> f64 {
        f64::from_bits(self.rps_bits.load(Ordering::Relaxed))
    }

    /// Changes the rate.
    pub fn set_rps(&self, rps: f64) {
        let rps = if rps.is_finite() { rps.max(0.0) } else { 0.0 };
        self.rps_bits.store(rps.to_bits(), Ordering::Relaxed);
    }

    /// Whether the load is paused.
    pub fn paused(&self) -> bool {
        self.paused.load(Ordering::Relaxed)
    }

    /// Pauses or resumes.
    pub fn set_paused(&self, p: bool) {
        self.paused.store(p, Ordering::Relaxed);
    }
}

/// Where one generator sends its root requests: a root's replicas (taken
/// in turn), its share of the rate in force, and its index among the
/// roots of a topology of many (`None` for one root).
#[derive(Debug, Clone)]
pub struct Target {
    /// The root's URLs, one per replica.
    pub urls: Vec<String>,
    /// Its share of [`LoadControl::rps`].
    pub share: f64,
    /// Its index in `load.roots`, when there are many.
    pub root: Option<usize>,
}

/// The generator's HTTP client: at most `idle` idle connections kept,
/// the end user's `timeout` on every request.
pub(crate) fn http_client(
    target: &Target,
    idle: usize,
    timeout: Option<Duration>,
) -> Result<reqwest::Client, LoadError> {
    reqwest::Client::builder()
        .no_proxy()
        .retry(crate::middleware::client::no_hidden_retries())
        .tcp_nodelay(true)
        .pool_max_idle_per_host(idle)
        .timeout(timeout.unwrap_or(ROOT_TIMEOUT))
        .build()
        .map_err(|source| LoadError {
            url: target.urls.join(" "),
            source,
        })
}

/// Sends one root request to `url` and counts its outcome when it ends
/// (the caller counted it sent).
pub(crate) async fn send_root(
    http: &reqwest::Client,
    url: &str,
    metrics: &Metrics,
    root: Option<usize>,
) {
    let t0 = Instant::now();
    let ok = match http.get(url).send().await {
        Ok(r) => {
            let ok = !error_ownership::is_error_status(r.status().as_u16());
            r.bytes().await.is_ok() && ok
        }
        Err(e) => {
            if crate::observe::is_out_of_files(&e) {
                metrics.fd_error();
            }
            false
        }
    };
    let took = t0.elapsed();
    metrics.root_done(ok, took);
    if let Some(k) = root {
        metrics.root_done_at(k, ok, took);
    }
}

/// Counts a root request sent.
pub(crate) fn count_sent(metrics: &Metrics, root: Option<usize>) {
    metrics.root_sent();
    if let Some(k) = root {
        metrics.root_sent_at(k);
    }
}

/// Starts the generator: root requests to `target` until `stop` turns
/// true.
/// The end user gives a root request up after `timeout` (`load.timeout`;
/// [`ROOT_TIMEOUT`] when `None`): it counts as a root error, and the
/// request is dropped, which the entry counts as abandoned.
///
/// Fails with [`LoadError`] when its HTTP client cannot be
/// built.
#[allow(clippy::too_many_arguments)]
pub fn spawn(
    target: Target,
    control: Arc<LoadControl>,
    arrival: Arrival,
    timeout: Option<Duration>,
    max_in_flight: usize,
    seed: u64,
    metrics: Arc<Metrics>,
    mut stop: watch::Receiver<bool>,
) -> Result<JoinHandle<()>, LoadError> {
    let http = http_client(&target, max_in_flight, timeout)?;
    let Target { urls, share, root } = target;
    let urls: Vec<Arc<str>> = urls.into_iter().map(Into::into).collect();
    let mut turn = 0usize;
    let slots = Arc::new(Semaphore::new(max_in_flight.max(1)));
    Ok(tokio::spawn(async move {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut next = Instant::now();
        // Whether the schedule starts (or starts again after a pause).
        let mut fresh = true;
        loop {
            if *stop.borrow() {
                break;
            }
            let rps = control.rps() * share;
            if control.paused() || rps <= 0.0 {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(20)) => {}
                    _ = stop.changed() => {}
                }
                next = Instant::now();
                fresh = true;
                continue;
            }
            let gap = match arrival {
                // Evenly spaced from a random point of the first gap, as
                // the closed-loop clients start: t seconds then hold
                // rate × t arrivals on average, and roots of one rate do
                // not move in step. (A whole first gap sent only
                // ⌊rate × t⌋, none from a root whose gap outlasts the
                // run: Meta's 18,571-service mesh at 50 rps sent 42 a
                // second.)
                Arrival::Constant if fresh => rng.random_range(0.0..1.0) / rps,
                Arrival::Constant => 1.0 / rps,
                Arrival::Poisson => {
                    let u: f64 = rng.random_range(f64::EPSILON..1.0);
                    -u.ln() / rps
                }
            };
            fresh = false;
            next += Duration::from_secs_f64(gap.min(MAX_GAP_S));
            let now = Instant::now();
            if next + MAX_CATCH_UP < now {
                // Behind by more than the catch-up allowance: the
                // arrivals due in between are not sent, and counted so.
                let behind = (now - next).as_secs_f64() * rps;
                metrics.root_skipped(behind as u64);
                next = now;
            }
            // A root of a tiny share waits minutes between arrivals: it
            // wakes every second, and a rate changed meanwhile stretches
            // or shrinks what is left of the wait, from now.
            let mut drawn = rps;
            let mut stopped = false;
            while next > Instant::now() {
                let wake = next.min(Instant::now() + Duration::from_secs(1));
                tokio::select! {
                    _ = tokio::time::sleep_until(wake) => {}
                    _ = stop.changed() => { stopped = true; break; }
                }
                let now_rps = control.rps() * share;
                if control.paused() || now_rps <= 0.0 {
                    stopped = true;
                    break;
                }
                if now_rps != drawn {
                    let now = Instant::now();
                    let left = next.saturating_duration_since(now).as_secs_f64() * drawn / now_rps;
                    next = now + Duration::from_secs_f64(left.min(MAX_GAP_S));
                    drawn = now_rps;
                }
            }
            if stopped {
                continue;
            }
            match slots.clone().try_acquire_owned() {
                Ok(permit) => {
                    count_sent(&metrics, root);
                    let url = urls[turn % urls.len().max(1)].clone();
                    turn = turn.wrapping_add(1);
                    let (http, metrics) = (http.clone(), metrics.clone());
                    tokio::spawn(async move {
                        send_root(&http, &url, &metrics, root).await;
                        drop(permit);
                    });
                }
                Err(_) => metrics.root_dropped(),
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Roots of evenly spaced arrivals whose gap is longer than the run
    /// send their share of it: 300 roots at 0.01 a second (a gap of
    /// 100 s) over 30 s send about 90 (a binomial count, 300 × 0.3, sd
    /// 7.9), as many as Poisson arrivals at the same rates would. Each
    /// schedule once started one whole gap after its generator did, so
    /// none of them sent anything: Meta's 18,571-service mesh at 50 rps
    /// sent 42 root requests a second, and counted none skipped.
    #[tokio::test(start_paused = true)]
    async fn evenly_spaced_roots_of_a_tiny_rate_send_their_share_of_a_short_run() {
        let roots = 300;
        let metrics = Arc::new(Metrics::new(1, vec![]));
        let control = Arc::new(LoadControl::new(0.01 * roots as f64));
        let (stop, stop_rx) = watch::channel(false);
        let tasks: Vec<_> = (0..roots)
            .map(|k| {
                let target = Target {
                    // Nothing listens: a send fails at once, and was
                    // counted sent before it left.
                    urls: vec!["http://127.0.0.1:9/".into()],
                    share: 1.0 / roots as f64,
                    root: None,
                };
                spawn(
                    target,
                    control.clone(),
                    Arrival::Constant,
                    None,
                    4,
                    k,
                    metrics.clone(),
                    stop_rx.clone(),
                )
                .unwrap()
            })
            .collect();
        tokio::time::sleep(Duration::from_secs(30)).await;
        stop.send(true).unwrap();
        for t in tasks {
            t.await.unwrap();
        }
        let c = metrics.counts().root;
        assert!((60..=120).contains(&c.sent), "{} sent of 90", c.sent);
        assert_eq!((c.skipped, c.dropped), (0, 0));
    }
}
