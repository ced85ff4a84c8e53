//! The watchdog the workspace's tests arm: a hung test aborts its binary
//! instead of blocking the suite. The one implementation: vecring-cli's
//! tests take it from this crate, and vecring-ffi's unit tests, which this
//! crate depends on, compile this file into their module.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

/// Aborts the whole test process if the returned guard is not dropped
/// within `limit`: a hung test fails instead of blocking CI.
///
/// The guard also takes the binary's resource lock: shared for an ordinary
/// test ([`Watchdog::new`]), exclusive for one that counts the process's
/// descriptors and mappings ([`Watchdog::alone`]), so that a leak check
/// never counts what a concurrent test of the same binary holds.
pub struct Watchdog {
    done: Arc<AtomicBool>,
    _resources: ResourceGuard,
}

/// Held by every watched test; written only by a test that runs alone.
static RESOURCES: RwLock<()> = RwLock::new(());

/// Kept only to be released when the test ends.
enum ResourceGuard {
    Shared {
        _read: RwLockReadGuard<'static, ()>,
    },
    Alone {
        _write: RwLockWriteGuard<'static, ()>,
    },
}

impl Watchdog {
    /// Arms a watchdog for `limit`; other watched tests may run meanwhile.
    pub fn new(name: &'static str, limit: Duration) -> Self {
        // A test that failed while holding the lock poisons it; the lock
        // guards no data, so the next test goes on.
        let guard = RESOURCES.read().unwrap_or_else(PoisonError::into_inner);
        Self::arm(name, limit, ResourceGuard::Shared { _read: guard })
    }

    /// Arms a watchdog for `limit` once no other watched test of this
    /// binary runs, and keeps them out until dropped: for tests that check
    /// for leaks (the support library's `resources` and `assert_no_leak`).
    /// The limit counts from when the test has the process to itself.
    pub fn alone(name: &'static str, limit: Duration) -> Self {
        let guard = RESOURCES.write().unwrap_or_else(PoisonError::into_inner);
        Self::arm(name, limit, ResourceGuard::Alone { _write: guard })
    }

    fn arm(name: &'static str, limit: Duration, resources: ResourceGuard) -> Self {
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
        Watchdog {
            done,
            _resources: resources,
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
    }
}
