//! What scraping `--metrics` costs the fleet's throughput.
//!
//! Serves the 7-service chain with no faults as `chaoslab serve` does (a
//! session without internal load, with the metrics endpoint on), drives it
//! at the highest rate the machine sustains (wrk when installed, else an
//! in-process closed loop), and compares, in the same run, three ways of
//! watching it: nobody scraping, a scrape every second (Prometheus at a
//! 1 s interval, the tests' setting) and ten scrapes a second (a stress
//! case). Each run gets a fresh session; the order rotates each round.
//! Prints each round and the median ratio to the unscraped fleet.
//!
//! `cargo bench --bench scrape_cost` runs 5 rounds of 5 s each; under
//! `cargo test` it runs one short round as a smoke test.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[path = "common/drive.rs"]
#[allow(dead_code)]
mod drive;
use drive::{driver, median, wrk, wrk_available, CHAIN, CONNECTIONS};

use chaoslab::session::{Session, Setup};
use chaoslab::topology::Topology;

/// The same allocator as the `chaoslab` binary.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Scrapes `addr` every `every` until `stop`; counts scrapes and bytes.
fn scraper(addr: String, every: Duration, stop: Arc<AtomicBool>, bytes: Arc<AtomicU64>) {
    use std::io::{Read, Write};
    while !stop.load(Ordering::Relaxed) {
        if let Ok(mut s) = std::net::TcpStream::connect(&addr) {
            let _ = write!(s, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n");
            let mut buf = Vec::new();
            let _ = s.read_to_end(&mut buf);
            bytes.fetch_add(buf.len() as u64, Ordering::Relaxed);
        }
        std::thread::sleep(every);
    }
}

/// Root requests per second a fresh session served while scraped every
/// `every` (`None`: not scraped); and the mean scrape size.
fn run(topology: &Topology, every: Option<Duration>, secs: u64, use_wrk: bool) -> (f64, u64) {
    let setup = Setup {
        load: false,
        ..Setup::new(topology.clone())
    };
    let session = Session::start(setup).expect("the session starts");
    let addr = chaoslab::endpoints::metrics::serve(&session, "127.0.0.1:0".parse().unwrap())
        .expect("the endpoint listens")
        .to_string();
    let url = session.entry_url().to_string();
    session.block_on(driver(url.clone(), 1));
    let stop = Arc::new(AtomicBool::new(false));
    let bytes = Arc::new(AtomicU64::new(0));
    let scraping = every.map(|e| {
        let (stop, bytes, addr) = (stop.clone(), bytes.clone(), addr.clone());
        std::thread::spawn(move || scraper(addr, e, stop, bytes))
    });
    let rps = if use_wrk {
        wrk(&url, secs)
    } else {
        session.block_on(driver(url, secs))
    };
    stop.store(true, Ordering::Relaxed);
    let scrapes = every.map_or(0, |e| {
        (Duration::from_secs(secs).as_millis() / e.as_millis().max(1)) as u64
    });
    if let Some(t) = scraping {
        let _ = t.join();
    }
    session.finish().expect("the session ends");
    (rps, bytes.load(Ordering::Relaxed) / scrapes.max(1))
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (rounds, secs) = if bench { (5, 5) } else { (1, 1) };
    let use_wrk = wrk_available();
    let topology = Topology::from_yaml(CHAIN, "bench-chain").expect("valid chain");
    let sides: [(&str, Option<Duration>); 3] = [
        ("unscraped", None),
        ("1 scrape/s", Some(Duration::from_secs(1))),
        ("10 scrapes/s", Some(Duration::from_millis(100))),
    ];
    println!(
        "scrape cost: 7-service chain, no faults, {} for {secs} s per run, {rounds} round(s)",
        if use_wrk {
            format!("wrk -t1 -c{CONNECTIONS}")
        } else {
            format!("in-process closed loop, {CONNECTIONS} connections (wrk not found)")
        }
    );
    let mut ratios: [Vec<f64>; 3] = Default::default();
    let mut rates: [Vec<f64>; 3] = Default::default();
    let mut size = 0;
    for round in 0..rounds {
        let mut got = [0.0; 3];
        // Rotate the order so no side always runs on a warmer machine.
        for k in 0..3 {
            let i = (k + round) % 3;
            let (rps, bytes) = run(&topology, sides[i].1, secs, use_wrk);
            got[i] = rps;
            size = size.max(bytes);
        }
        let line: Vec<String> = sides
            .iter()
            .zip(got)
            .map(|((name, _), r)| format!("{name} {r:>8.0}"))
            .collect();
        println!("round {}: {} root req/s", round + 1, line.join("   "));
        for i in 0..3 {
            rates[i].push(got[i]);
            ratios[i].push(got[i] / got[0]);
        }
    }
    for i in 1..3 {
        let r = median(&mut ratios[i]);
        println!(
            "median: {} {:.0} root req/s, {} {:.0}; ratio {:.3} (cost {:.1}%)",
            sides[0].0,
            median(&mut rates[0]),
            sides[i].0,
            median(&mut rates[i]),
            r,
            (1.0 - r) * 100.0
        );
    }
    println!("a scrape of this fleet is {size} bytes");
}
