//! The support library of vecring's integration tests (crate
//! `vecring-tests`; the test binaries beside this folder use it): a
//! watchdog ([`watchdog`]), counts of what the process holds
//! ([`mod@resources`]), the hostile peers and hosts of the attack tests
//! ([`hostile`]), the testpmd driver ([`testpmd`]), the documents' command
//! runner ([`doc_runner`], [`markdown`], [`sandbox`]), the self-checking
//! frame pattern, what another thread of the test is doing ([`threads`]),
//! and the location of the built tools.

pub mod doc_runner;
pub mod hostile;
pub mod markdown;
pub mod resources;
pub mod sandbox;
pub mod secondary;
pub mod testpmd;
pub mod threads;
pub mod watchdog;

pub use resources::{
    assert_no_leak, datagram_sockets, open_fds, region_mappings, region_pages, resources,
};
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
/// directory: the workspace's built binaries; or, when some directory on
/// that path is closed to other users (a checkout under `/root`), a copy
/// where every uid can run it ([`shared_copy`]): the attack tests run the
/// attacker and the tool as `nobody` and other uids.
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
    if runnable_by_all(&path) {
        path
    } else {
        shared_copy(&path)
    }
}

/// Whether every directory above `path` lets others through, and `path`
/// lets them execute it.
fn runnable_by_all(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).map_or(0, |m| m.permissions().mode());
    mode(path) & 0o001 != 0 && path.ancestors().skip(1).all(|d| mode(d) & 0o001 != 0)
}

/// A copy of `path` in a directory of this uid's under `/tmp` that every
/// uid can enter, made once per process and binary and refreshed when the
/// build is newer. The directory is `vecring-tests-bin-<uid>-<hash of the
/// target directory>` if it is ours, a real directory, and writable by
/// nobody else (a local user may have made one in its place: then a fresh
/// one of this process). Copied by `cp` to a temporary name, then renamed:
/// no write descriptor of this process for a child forked meanwhile to
/// inherit (running the copy would fail with ETXTBSY), and other test
/// processes see the old copy or the new, never half of one.
pub fn shared_copy(path: &std::path::Path) -> std::path::PathBuf {
    use std::collections::HashMap;
    use std::hash::{Hash, Hasher};
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::path::{Path, PathBuf};
    use std::sync::{Mutex, OnceLock};
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    static COPIES: OnceLock<Mutex<HashMap<PathBuf, PathBuf>>> = OnceLock::new();
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let ours = |d: &Path| {
        std::fs::symlink_metadata(d)
            .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.mode() & 0o022 == 0)
    };
    let dir = DIR.get_or_init(|| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        path.parent().hash(&mut h);
        let named = PathBuf::from(format!("/tmp/vecring-tests-bin-{uid}-{:016x}", h.finish()));
        let made = std::fs::create_dir(&named).is_ok();
        let dir = if made || ours(&named) {
            named
        } else {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let fresh = PathBuf::from(format!(
                "/tmp/vecring-tests-bin-{uid}-{}-{nanos}",
                std::process::id()
            ));
            std::fs::create_dir(&fresh).expect("a fresh directory for the shared binaries");
            fresh
        };
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(ours(&dir), "{} is not ours alone", dir.display());
        dir
    });
    let mut copies = COPIES
        .get_or_init(|| Mutex::new(HashMap::new()))
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(c) = copies.get(path) {
        return c.clone();
    }
    let name = path.file_name().expect("a file name");
    let copy = dir.join(name);
    let src = std::fs::metadata(path).expect("the built binary");
    let current = std::fs::symlink_metadata(&copy)
        .is_ok_and(|m| m.is_file() && m.len() == src.len() && m.mtime() >= src.mtime());
    if !current {
        let tmp = dir.join(format!(
            ".{}.{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        let status = std::process::Command::new("cp")
            .arg(path)
            .arg(&tmp)
            .status()
            .expect("cp");
        assert!(
            status.success(),
            "cp {} {}: {status}",
            path.display(),
            tmp.display()
        );
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::rename(&tmp, &copy).expect("rename the shared copy into place");
    }
    copies.insert(path.to_path_buf(), copy.clone());
    copy
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

/// Whether this run may go without hugepages: `VECRING_TEST_NO_HUGE=1`,
/// set by whoever runs the suite on a machine that has none (the suite
/// sets it for nobody).
pub fn no_huge_allowed() -> bool {
    std::env::var("VECRING_TEST_NO_HUGE").is_ok_and(|v| v == "1")
}

/// For a test that covers hugepages and cannot have `pages` free ones
/// (`why`): returns after a loud `SKIPPED` line where a run without
/// hugepages was asked for ([`no_huge_allowed`]), and fails otherwise:
/// such a test must not pass without them.
///
/// # Panics
/// Unless [`no_huge_allowed`].
pub fn skip_without_hugepages(test: &str, why: &str) {
    if no_huge_allowed() {
        eprintln!("SKIPPED {test}: {why} (VECRING_TEST_NO_HUGE=1)");
        return;
    }
    panic!(
        "{test}: {why}. This test covers hugepage-backed regions and must not pass without \
         them: run scripts/setup.sh as root, free memory, or set VECRING_TEST_NO_HUGE=1 to \
         skip it on purpose"
    );
}

/// A fresh run directory for one test.
pub fn run_dir(test: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("vecring-test-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}
