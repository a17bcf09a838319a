//! A fixed amount of work for one fleet, for a profile by instruction
//! counts (callgrind), which do not depend on what else the machine runs.
//! Included by the middleware bench with `#[path]`, after `drive.rs`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use chaoslab::fleet::Fleet;
use chaoslab::topology::Topology;

use super::drive::{Side, CHAIN};

/// Connections of a fixed-count run.
pub const FIXED_CONNECTIONS: usize = 16;

/// [`CHAIN`] with attempts that may take 30 s (and an end user who waits
/// 60 s, as validation asks): under callgrind, some 50 times slower, no
/// attempt may time out. The same code runs as with 1 s, but for the
/// entry's late-attempt check against the end user's patience (one clock
/// read per root request).
fn profile_chain() -> Topology {
    let policy = "policy: { preset: ownership, attempts: 2, budget: 0.1 }";
    assert!(CHAIN.contains(policy));
    let slow = CHAIN.replace(
        policy,
        "policy: { preset: ownership, attempts: 2, budget: 0.1, timeout: 30s }\nload: { timeout: 60s }",
    );
    Topology::from_yaml(&slow, "profile-chain").expect("valid chain")
}

/// Sends exactly `n` root requests over `FIXED_CONNECTIONS` concurrent
/// tasks (a fixed amount of work, for an instruction-count profile); with
/// `strict`, every one must succeed.
pub async fn fixed(url: String, n: u64, strict: bool) {
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let left = Arc::new(AtomicU64::new(n));
    let mut tasks = vec![];
    for _ in 0..FIXED_CONNECTIONS {
        let (http, url, left) = (http.clone(), url.clone(), left.clone());
        tasks.push(tokio::spawn(async move {
            while left
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |l| l.checked_sub(1))
                .is_ok()
            {
                match http.get(&url).send().await {
                    Ok(r) => {
                        assert!(!strict || r.status().is_success());
                        let _ = r.bytes().await;
                    }
                    Err(e) => assert!(!strict, "{e}"),
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

/// With `--fixed SIDE N` (after `--`): starts only the side named SIDE,
/// warms its pools with 2,000 root requests and sends exactly N more, then
/// stops. For a profile by instruction counts, which do not depend on
/// what else the machine runs:
/// `valgrind --tool=callgrind target/release/deps/middleware_overhead-* --fixed ownership 20000`.
/// Returns whether it ran.
pub fn fixed_from_args(sides: &[Side]) -> bool {
    let args: Vec<String> = std::env::args().collect();
    let Some(i) = args.iter().position(|a| a == "--fixed") else {
        return false;
    };
    let name = args.get(i + 1).expect("--fixed SIDE N");
    let n: u64 = args
        .get(i + 2)
        .and_then(|n| n.parse().ok())
        .expect("--fixed SIDE N");
    let side = sides
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no side named {name}"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let fleet = rt
        .block_on(Fleet::spawn(Arc::new(profile_chain()), side.opts.clone()))
        .unwrap();
    let url = fleet.entry_url();
    // Warm up (under callgrind the first requests, translating the code,
    // may time out).
    rt.block_on(fixed(url.clone(), 2_000, false));
    let before = fleet.metrics().counts();
    rt.block_on(fixed(url, n, true));
    let counts = fleet.metrics().counts().since(&before);
    let retries: u64 = counts.edges.iter().map(|e| e.retries).sum();
    rt.block_on(fleet.shutdown());
    println!("{name}: {n} root requests after 2,000 to warm up; {retries} retries");
    true
}
