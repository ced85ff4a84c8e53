//! Shared helpers for the integration tests.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Aborts the whole test process if the returned guard is not dropped
/// within `limit`: a hung test fails instead of blocking CI.
pub struct Watchdog(Arc<AtomicBool>);

impl Watchdog {
    pub fn new(name: &'static str, limit: Duration) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&done);
        std::thread::spawn(move || {
            let start = Instant::now();
            while start.elapsed() < limit {
                if flag.load(Ordering::Relaxed) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            eprintln!("watchdog: test '{name}' still running after {limit:?}; aborting");
            std::process::abort();
        });
        Watchdog(done)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

pub use vecring_core::pattern::{check as check_frame, fill as fill_frame, mixed_len as frame_len};
