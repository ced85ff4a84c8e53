//! Criterion suite: frames of 64, 256, 1514 and 9000 bytes in batches of 1
//! and 32 through vecring (copying and zero-copy API, in a memfd region),
//! through rtrb between the same two pinned threads, and a single-thread
//! memcpy of the same bytes as the bandwidth ceiling.
//!
//! One iteration is one batch of frames, so criterion's `thrpt` is frames
//! per second; `benches/criterion-table.py` turns the saved estimates (in
//! the workspace's `target/criterion`) into frames/s and GB/s. The ratios that decide a comparison come from the
//! `ring-compare` A/B runner, not from this suite (see docs/benchmarks/README.md).
//!
//! ```text
//! cargo bench -p vecring-benches --bench ring [-- FILTER]
//! ```

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::path::Path;
use std::time::Duration;
use vecring_benches::{
    build, core_to_core_latency, geometry, hugepages_available, pin_current_thread, Candidate,
    Placement, BATCHES, FRAME_SIZES, PRODUCER_CPU,
};

/// Frames per iteration of the memcpy ceiling (it has no batches).
const MEMCPY_FRAMES: usize = 32;

fn frames(c: &mut Criterion) {
    pin_current_thread(PRODUCER_CPU).expect("pin the producer to CPU 0");
    let g = geometry();
    eprintln!(
        "vecring geometry {} slots x {} B, hugepages: {}, core-to-core latency now: {} ns",
        g.slot_count(),
        g.slot_size(),
        if hugepages_available() { "yes" } else { "no" },
        core_to_core_latency().as_nanos(),
    );
    for len in FRAME_SIZES {
        // The VM's vCPU placement (and with it every cross-core figure)
        // can change during the run; say what it is for each group.
        eprintln!(
            "frames/{len}: core-to-core latency now: {} ns",
            core_to_core_latency().as_nanos()
        );
        let mut group = c.benchmark_group(format!("frames/{len}"));
        for batch in BATCHES {
            group.throughput(Throughput::Elements(batch as u64));
            for candidate in Candidate::ALL {
                if candidate == Candidate::Memcpy {
                    continue;
                }
                let mut link = build(candidate, len, batch, Placement::Pinned);
                let id = BenchmarkId::new(candidate.name(), format!("batch{batch}"));
                group.bench_function(id, |b| {
                    b.iter_custom(|iters| link.run(iters * batch as u64))
                });
                link.finish();
            }
        }
        group.throughput(Throughput::Elements(MEMCPY_FRAMES as u64));
        let mut link = build(Candidate::Memcpy, len, MEMCPY_FRAMES, Placement::Pinned);
        let id = BenchmarkId::new(Candidate::Memcpy.name(), "single-thread");
        group.bench_function(id, |b| {
            b.iter_custom(|iters| link.run(iters * MEMCPY_FRAMES as u64))
        });
        link.finish();
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(700))
        .measurement_time(Duration::from_secs(2))
        .output_directory(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/criterion"))
        .without_plots();
    targets = frames
}
criterion_main!(benches);
