//! The closed-loop load generator: `clients` end users, each sending its
//! next root request only after the answer to its last and a think time
//! (`load.clients`, `load.think`; SPEC section 15).
//!
//! Unlike the open loop, a closed loop slows down with the fleet: when
//! answers take longer, each client sends less often. That is why backoff
//! sheds load here and not in an open loop (Marc Brooker, "What is Backoff
//! For?"): a failed call's backoff keeps its client from its next request.
//! What the clients would have offered had every answer been instant
//! (clients ÷ think a second) is counted as the root's nominal requests,
//! the baseline its amplification is measured against, so the load a
//! slow fleet sheds shows as amplification falling.
//!
//! Bounded by construction: each client has at most one request in
//! flight, and there are at most [`crate::topology::MAX_CLIENTS`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::{count_sent, http_client, send_root, LoadControl, LoadError, Target};
use crate::metrics::Metrics;
pub use crate::topology::clients_at;
use crate::topology::{Arrival, Closed};

/// How often the clients in force and the nominal count are brought up
/// to date.
const TICK: Duration = Duration::from_millis(50);
/// How often an idle client (over the number in force) looks again.
const IDLE: Duration = Duration::from_millis(20);

/// Starts the closed loop for `target` (the root service `entry`): its
/// clients send until `stop` turns true; a client waiting on an answer
/// then leaves it unanswered. The end user's `timeout` as in
/// [`super::spawn`].
#[allow(clippy::too_many_arguments)]
pub fn spawn(
    target: Target,
    entry: usize,
    closed: Closed,
    control: Arc<LoadControl>,
    arrival: Arrival,
    timeout: Option<Duration>,
    seed: u64,
    metrics: Arc<Metrics>,
    stop: watch::Receiver<bool>,
) -> Result<JoinHandle<()>, LoadError> {
    let http = http_client(&target, closed.clients as usize, timeout)?;
    let Target { urls, share, root } = target;
    let urls: Arc<[Arc<str>]> = urls.into_iter().map(Into::into).collect();
    let think = closed.think;
    let in_force = Arc::new(AtomicUsize::new(0));
    Ok(tokio::spawn(async move {
        let mut clients: Vec<JoinHandle<()>> = vec![];
        let mut owed = 0.0f64;
        let mut last = Instant::now();
        let mut ticker = tokio::time::interval(TICK);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut stop_rx = stop.clone();
        loop {
            if *stop_rx.borrow() {
                break;
            }
            let n = if control.paused() {
                0
            } else {
                clients_at(control.rps() * share, think)
            };
            in_force.store(n, Ordering::Relaxed);
            while clients.len() < n {
                let client =
                    Client {
                        index: clients.len(),
                        in_force: in_force.clone(),
                        http: http.clone(),
                        urls: urls.clone(),
                        metrics: metrics.clone(),
                        root,
                        think,
                        arrival,
                        rng: SmallRng::seed_from_u64(seed.wrapping_add(
                            (clients.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                        )),
                    };
                clients.push(tokio::spawn(client.run(stop.clone())));
            }
            // The nominal requests: what the clients in force offer while
            // answers are instant, over the time since the last tick.
            let now = Instant::now();
            owed += n as f64 * (now - last).as_secs_f64() / think.as_secs_f64();
            last = now;
            if owed >= 1.0 {
                metrics.nominal_roots(entry, owed as u64);
                owed = owed.fract();
            }
            tokio::select! {
                _ = ticker.tick() => {}
                r = stop_rx.changed() => if r.is_err() { break },
            }
        }
        for c in clients {
            let _ = c.await;
        }
    }))
}

/// One end user of a closed loop.
struct Client {
    /// Its place: it sends while fewer than `in_force` are below it.
    index: usize,
    in_force: Arc<AtomicUsize>,
    http: reqwest::Client,
    urls: Arc<[Arc<str>]>,
    metrics: Arc<Metrics>,
    root: Option<usize>,
    think: Duration,
    arrival: Arrival,
    rng: SmallRng,
}

impl Client {
    /// Sends, waits for the answer, thinks; again, until `stop`.
    async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let mut turn = self.index;
        let mut idle = true;
        loop {
            if *stop.borrow() {
                return;
            }
            if self.index >= self.in_force.load(Ordering::Relaxed) {
                idle = true;
                tokio::select! {
                    _ = tokio::time::sleep(IDLE) => {}
                    r = stop.changed() => if r.is_err() { return },
                }
                continue;
            }
            if idle {
                // Starting (or starting again): at a random point of a
                // think time, so the clients do not move in step.
                idle = false;
                let wait = self.think.mul_f64(self.rng.random_range(0.0..1.0));
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = stop.changed() => return,
                }
                continue;
            }
            let url = self.urls[turn % self.urls.len().max(1)].clone();
            turn = turn.wrapping_add(1);
            count_sent(&self.metrics, self.root);
            tokio::select! {
                _ = send_root(&self.http, &url, &self.metrics, self.root) => {}
                _ = stop.changed() => return,
            }
            let pause = match self.arrival {
                Arrival::Constant => self.think,
                Arrival::Poisson => {
                    let u: f64 = self.rng.random_range(f64::EPSILON..1.0);
                    self.think.mul_f64(-u.ln()).min(self.think * 20)
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = stop.changed() => return,
            }
        }
    }
}
