//! Shared helpers for vecring's integration tests: a watchdog, the
//! self-checking frame pattern, and the location of the built tools.

pub mod testpmd;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

/// Whether a test that needs root runs here. Root always does (the suite,
/// `scripts/test.sh`, runs as root); anyone else gets one line saying what
/// was skipped and why, so that `cargo test` works in a developer's loop
/// without root. Use [`require_root!`] at the top of such a test.
pub fn root_or_skip() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    let thread = std::thread::current();
    eprintln!(
        "skipped: {} needs root (scripts/test.sh runs it as root)",
        thread.name().unwrap_or("this test")
    );
    false
}

/// Returns from the calling test, after one line saying so, unless it runs
/// as root (see [`root_or_skip`]).
#[macro_export]
macro_rules! require_root {
    () => {
        if !$crate::root_or_skip() {
            return;
        }
    };
}

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
    /// for leaks with [`resources`] and [`assert_no_leak`]. The limit counts
    /// from when the test has the process to itself.
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

pub mod doc_runner;
pub mod hostile;
pub mod markdown;
pub mod sandbox;

pub use vecring_core::test_support::pattern::{
    check as check_frame, fill as fill_frame, mixed_len as frame_len,
};

/// `target/<profile>/<name>`, next to the test executable's `deps/`
/// directory: the workspace's built binaries.
pub fn built_binary(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>/deps");
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} is missing: build the workspace first (cargo build --release --workspace)",
        path.display()
    );
    path
}

/// Number of open descriptors of this process.
///
/// # Panics
/// If `/proc/self/fd` cannot be read: a leak check that cannot count
/// fails instead of comparing zero with zero.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap_or_else(|e| panic!("cannot count descriptors in /proc/self/fd: {e}"))
        .count()
}

/// What [`assert_no_leak`] compares against: open descriptors and region
/// mappings now. Both are the whole process's: take them in a test armed
/// with [`Watchdog::alone`].
pub fn resources() -> (usize, usize) {
    (open_fds(), region_mappings())
}

/// Asserts that the process holds at most `fd_slack` more descriptors than
/// in `before` (from [`resources`]) and no more region mappings.
pub fn assert_no_leak(before: (usize, usize), fd_slack: usize) {
    let (fds, maps) = before;
    let (fds_now, maps_now) = resources();
    assert!(fds_now <= fds + fd_slack, "fd leak: {fds} -> {fds_now}");
    assert!(maps_now <= maps, "mapping leak: {maps} -> {maps_now}");
}

/// Number of mappings of vecring regions in this process.
///
/// # Panics
/// If `/proc/self/maps` cannot be read, as [`open_fds`].
pub fn region_mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap_or_else(|e| panic!("cannot count mappings in /proc/self/maps: {e}"))
        .lines()
        .filter(|l| l.contains("memfd:vecring"))
        .count()
}

/// The policy for a test that claims to run on hugepages: `Require`, after
/// making sure `pages` free 2 MiB pages exist (reserving them as root, as
/// CI runs). A test that covers hugepages must not pass on 4 KiB pages.
///
/// # Panics
/// If the pages cannot be had (not root and none free): run
/// `scripts/setup.sh`, which reserves them.
pub fn hugepages_required(pages: u64) -> vecring_core::HugepagePolicy {
    if let Err(why) = hostile::ensure_free_hugepages(pages) {
        panic!("{why}: this test covers hugepage-backed regions (run scripts/setup.sh as root)");
    }
    vecring_core::HugepagePolicy::Require
}

/// A fresh run directory for one test.
pub fn run_dir(test: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("vecring-test-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Every `AF_UNIX` datagram socket this process holds: the doorbell ends
/// of its links (what a hostile peer rings at will).
pub fn datagram_sockets() -> Vec<std::os::fd::RawFd> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        e.ok()?
            .file_name()
            .to_str()?
            .parse::<std::os::fd::RawFd>()
            .ok()
    })
    .filter(|&fd| {
        let mut v: libc::c_int = 0;
        let mut len = core::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `v` and `len` are valid for an int option; a closed
        // or non-socket fd just fails.
        let rc = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_TYPE,
                (&mut v as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        rc == 0 && v == libc::SOCK_DGRAM
    })
    .collect()
}
