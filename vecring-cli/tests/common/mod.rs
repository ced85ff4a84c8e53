//! What the tool's test files share: a watchdog, a tool process killed
//! when dropped, and where this host keeps DPDK's drivers.
// Each test file uses what it needs of this module.
#![allow(dead_code, unused_imports)]

pub mod containers;
pub mod doctoring;

use std::path::PathBuf;
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

/// EAL's driver directory on this host (`.../dpdk/pmds-<ABI>`), where the
/// doctor expects a container's plugins.
pub fn host_driver_dir() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/x86_64-linux-gnu/dpdk")
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("pmds-")
        })
        .collect();
    dirs.sort();
    dirs.pop()
}
