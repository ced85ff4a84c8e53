//! How long this machine holds a busy-polling thread up: one thread per
//! CPU (0 and 1) reads the clock in a tight loop for the given seconds and
//! counts the gaps between consecutive reads longer than 10 µs, 100 µs and
//! 1 ms, and the longest. A poller held up for longer than its ring takes
//! to fill loses frames, so the longest gap divides a ring's depth into
//! the highest rate with no loss (the forwarding benchmark's zero-loss
//! rates; `docs/benchmarks/README.md`).
//!
//! ```text
//! cargo run --release -p vecring-benches --bin stall-probe [-- SECONDS]
//! ```

use std::time::{Duration, Instant};
use vecring_benches::{pin_current_thread, CONSUMER_CPU, PRODUCER_CPU};

/// Gaps of one CPU's thread.
#[derive(Debug, Default)]
struct Gaps {
    over_10us: u64,
    over_100us: u64,
    over_1ms: u64,
    longest: Duration,
}

fn probe(cpu: usize, secs: f64) -> Gaps {
    if let Err(e) = pin_current_thread(cpu) {
        eprintln!("stall-probe: cannot pin to CPU {cpu}: {e}");
        std::process::exit(1);
    }
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut g = Gaps::default();
    let mut last = Instant::now();
    while last < end {
        let now = Instant::now();
        let gap = now - last;
        last = now;
        if gap > Duration::from_micros(10) {
            g.over_10us += 1;
            g.over_100us += u64::from(gap > Duration::from_micros(100));
            g.over_1ms += u64::from(gap > Duration::from_millis(1));
            g.longest = g.longest.max(gap);
        }
    }
    g
}

fn main() {
    let secs: f64 = match std::env::args().nth(1).map(|a| a.parse()) {
        None => 10.0,
        Some(Ok(s)) if s > 0.0 && s <= 3600.0 => s,
        Some(_) => {
            eprintln!("usage: stall-probe [SECONDS (0..=3600, default 10)]");
            std::process::exit(2);
        }
    };
    let gaps: Vec<(usize, Gaps)> = std::thread::scope(|s| {
        let threads: Vec<_> = [PRODUCER_CPU, CONSUMER_CPU]
            .into_iter()
            .map(|cpu| s.spawn(move || (cpu, probe(cpu, secs))))
            .collect();
        threads.into_iter().filter_map(|t| t.join().ok()).collect()
    });
    for (cpu, g) in gaps {
        println!(
            "CPU {cpu}: {secs} s, gaps over 10 us {}, over 100 us {}, over 1 ms {}, longest {:.2} ms",
            g.over_10us,
            g.over_100us,
            g.over_1ms,
            g.longest.as_secs_f64() * 1e3
        );
    }
}
