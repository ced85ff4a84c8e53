//! What the tool's test files share: a watchdog and a tool process killed
//! when dropped.
// Each test file uses what it needs of this module.
#![allow(dead_code)]

use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The `vecring` binary under test.
pub const TOOL: &str = env!("CARGO_BIN_EXE_vecring");

/// Aborts the test binary if the test outlives `limit`.
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
            eprintln!("watchdog: '{name}' still running after {limit:?}; aborting");
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

/// A tool process running beside the test, killed when dropped.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
