//! What the tool's test files share: a watchdog and a tool process killed
//! when dropped.
// Each test file uses what it needs of this module.
#![allow(dead_code)]

use std::process::Child;

/// The `vecring` binary under test.
pub const TOOL: &str = env!("CARGO_BIN_EXE_vecring");

/// The workspace's one watchdog (tests/support/watchdog.rs).
pub use vecring_tests::Watchdog;

/// A tool process running beside the test, killed when dropped.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
