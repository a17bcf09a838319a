//! Timing a closure in a bench: the median of some runs, milliseconds.

use tokio::time::Instant;

/// The median of `v`.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The median time of `runs` calls of `f`, milliseconds.
pub fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> f64 {
    median(
        (0..runs)
            .map(|_| {
                let t0 = Instant::now();
                std::hint::black_box(f());
                t0.elapsed().as_secs_f64() * 1000.0
            })
            .collect(),
    )
}
