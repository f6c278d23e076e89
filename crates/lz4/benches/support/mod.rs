//! What the krec-lz4 benches share.

use std::time::Instant;

/// Median over rounds of (time of `a`) / (time of `b`), the two run alternately in short
/// batches so that load from other processes hits both alike: on a shared, noisy machine this
/// ratio is steadier than two criterion medians taken minutes apart.
pub fn paired_ratio(mut a: impl FnMut(), mut b: impl FnMut()) -> f64 {
    let once = Instant::now();
    a();
    b();
    let per_pair = once.elapsed().as_nanos().max(1);
    let batch = (100_000 / per_pair).clamp(1, 10_000) as usize;
    let mut ratios: Vec<f64> = (0..301)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..batch {
                a();
            }
            let a_time = start.elapsed().as_nanos();
            let start = Instant::now();
            for _ in 0..batch {
                b();
            }
            a_time as f64 / start.elapsed().as_nanos().max(1) as f64
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    ratios[ratios.len() / 2]
}
