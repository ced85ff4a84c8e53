//! The vCPU placement a row drew: on a VM the two CPUs' physical placement
//! changes between runs, and with it every figure, so each row
//! is tagged with the one-way core-to-core latency between the host's and
//! the container's CPU, measured just before and just after it: half the
//! median round trip of a cache line passed back and forth by two pinned
//! threads (the median over batches of 100 round trips; about 20 ms).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use vecring_cli::cpus;

/// A cache line of its own.
#[repr(align(128))]
struct Line(AtomicU64);

/// Batches, and round trips per batch.
const BATCHES: u64 = 200;
const BATCH: u64 = 100;
const TRIPS: u64 = BATCHES * BATCH;

/// One-way core-to-core latency between `a` and `b`, in nanoseconds.
pub fn core_to_core_ns(a: usize, b: usize) -> u64 {
    let line = Line(AtomicU64::new(0));
    let line = &line;
    let mut trips: Vec<u64> = std::thread::scope(|s| {
        s.spawn(move || {
            cpus::pin(Some(b));
            for i in 0..TRIPS {
                // Acquire pairs with the Release store of the odd value
                // below; each side waits for the other's turn.
                while line.0.load(Ordering::Acquire) != 2 * i + 1 {
                    std::hint::spin_loop();
                }
                line.0.store(2 * i + 2, Ordering::Release);
            }
        });
        let main = s.spawn(move || {
            cpus::pin(Some(a));
            let mut trips = Vec::with_capacity(BATCHES as usize);
            for batch in 0..BATCHES {
                let t = Instant::now();
                for i in batch * BATCH..(batch + 1) * BATCH {
                    // Release pairs with the Acquire load of the other
                    // thread.
                    line.0.store(2 * i + 1, Ordering::Release);
                    while line.0.load(Ordering::Acquire) != 2 * i + 2 {
                        std::hint::spin_loop();
                    }
                }
                trips.push(t.elapsed().as_nanos() as u64 / BATCH);
            }
            trips
        });
        main.join().unwrap_or_default()
    });
    if trips.is_empty() {
        return 0;
    }
    trips.sort_unstable();
    trips[trips.len() / 2] / 2
}
