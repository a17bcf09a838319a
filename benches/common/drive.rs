//! What the throughput benchmarks share: closed-loop load from `wrk` when
//! it is installed (a separate process), else from an in-process driver,
//! and the median of a few rounds. Included by each bench with `#[path]`.

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Connections the load keeps open.
pub const CONNECTIONS: usize = 64;

/// Whether `wrk` is installed.
pub fn wrk_available() -> bool {
    Command::new("wrk")
        .arg("--version")
        .output()
        .is_ok_and(|o| !o.stdout.is_empty() || !o.stderr.is_empty())
}

/// Root requests per second wrk achieved.
pub fn wrk(url: &str, secs: u64) -> f64 {
    let out = Command::new("wrk")
        .args([
            "-t1",
            &format!("-c{CONNECTIONS}"),
            &format!("-d{secs}s"),
            url,
        ])
        .output()
        .expect("run wrk");
    let text = String::from_utf8_lossy(&out.stdout);
    let non2xx = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Non-2xx or 3xx responses:"))
        .map(|v| v.trim().parse::<u64>().unwrap_or(0))
        .unwrap_or(0);
    assert_eq!(non2xx, 0, "the healthy chain answered errors:\n{text}");
    text.lines()
        .find_map(|l| l.strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no Requests/sec in wrk's output:\n{text}"))
}

/// Root requests per second an in-process closed loop achieved.
pub async fn driver(url: String, secs: u64) -> f64 {
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = vec![];
    for _ in 0..CONNECTIONS {
        let (http, url, done, stop) = (http.clone(), url.clone(), done.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                if let Ok(r) = http.get(&url).send().await {
                    assert!(r.status().is_success());
                    let _ = r.bytes().await;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    done.load(Ordering::Relaxed) as f64 / secs as f64
}

/// The median of a few figures.
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}
