//! The support library of vecring's integration tests (crate
//! `vecring-tests`; the test binaries beside this folder use it): a
//! watchdog ([`watchdog`]), counts of what the process holds
//! ([`mod@resources`]), the hostile peers and hosts of the attack tests
//! ([`hostile`]), the testpmd driver ([`testpmd`]), the documents' command
//! runner ([`doc_runner`], [`markdown`], [`sandbox`]), the self-checking
//! frame pattern, and the location of the built tools.

pub mod doc_runner;
pub mod hostile;
pub mod markdown;
pub mod resources;
pub mod sandbox;
pub mod testpmd;
pub mod watchdog;

pub use resources::{assert_no_leak, datagram_sockets, open_fds, region_mappings, resources};
pub use watchdog::Watchdog;

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
