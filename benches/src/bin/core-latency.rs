//! Prints the one-way core-to-core latency between CPU 0 and CPU 1 in
//! nanoseconds (half the median round trip of a cache-line ping-pong), for
//! the DPDK comparison script to tag each run with the vCPU placement it
//! drew. About 20 ms.
//!
//! With `--signal-then-data`, also the floor of a hand-off that publishes
//! a counter after the data ([`signal_then_data_latency`]), with the data
//! in one line and in a 2 MiB array of lines (the default ring's data
//! area): what an index-after-data ring such as vecring's or rtrb's can
//! reach; and the latency of the vecring ring itself between two threads
//! ([`ring_latency`]).
//!
//! ```text
//! cargo run --release -p vecring-benches --bin core-latency [-- --signal-then-data]
//! ```

use vecring_benches::{
    core_to_core_latency, pin_current_thread, ring_latency, signal_then_data_latency, PRODUCER_CPU,
};

fn main() {
    if let Err(e) = pin_current_thread(PRODUCER_CPU) {
        eprintln!("core-latency: cannot pin to CPU {PRODUCER_CPU}: {e}");
        std::process::exit(1);
    }
    let line = core_to_core_latency().as_nanos();
    if std::env::args().any(|a| a == "--signal-then-data") {
        let one = signal_then_data_latency(1).as_nanos();
        let ring = signal_then_data_latency(32768).as_nanos();
        let vr = ring_latency().as_nanos();
        println!("cache-line ping-pong {line} ns; signal then data: one data line {one} ns, 2 MiB of data lines {ring} ns; vecring ring (threads) {vr} ns");
    } else {
        println!("{line}");
    }
}
