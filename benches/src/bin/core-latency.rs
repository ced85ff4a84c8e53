//! Prints the one-way core-to-core latency between CPU 0 and CPU 1 in
//! nanoseconds (half the median round trip of a cache-line ping-pong), for
//! the DPDK comparison script to tag each run with the vCPU placement it
//! drew. About 20 ms.
//!
//! ```text
//! cargo run --release -p vecring-benches --bin core-latency
//! ```

use vecring_benches::{core_to_core_latency, pin_current_thread, PRODUCER_CPU};

fn main() {
    if let Err(e) = pin_current_thread(PRODUCER_CPU) {
        eprintln!("core-latency: cannot pin to CPU {PRODUCER_CPU}: {e}");
        std::process::exit(1);
    }
    println!("{}", core_to_core_latency().as_nanos());
}
