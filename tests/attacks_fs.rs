//! File-system attacks on a root master (the `vecring` tool): entries
//! planted in its run and domain directories by a peer that owned them or
//! by an earlier, compromised set-up. The master refuses each with one
//! error naming the path and the problem, follows no symlink, creates
//! nothing outside the run directory, and changes no mode or owner of
//! anything it did not create.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::Duration;
use vecring_tests::hostile::{
    as_nobody, attacker, diff, mkdir, scratch, set_mode, set_owner, snapshot, tool, wait_for_path,
    Proc, NOBODY,
};
use vecring_tests::Watchdog;

const LIMIT: Duration = Duration::from_secs(60);
/// Longest a refusing master may run: it refuses at start, long before
/// its `--up-timeout` (2 s) would end it anyway.
const REFUSAL: Duration = Duration::from_secs(20);

/// A scratch tree: `run/` (the run directory) and `outside/` holding a
/// victim file and directory that symlinks point at.
struct Tree {
    root: PathBuf,
    run: PathBuf,
    outside: PathBuf,
}

impl Tree {
    fn new(name: &str) -> Tree {
        let root = scratch(name);
        let run = root.join("run");
        let outside = root.join("outside");
        mkdir(&run, 0o755);
        mkdir(&outside, 0o755);
        std::fs::write(outside.join("victim"), "victim\n").unwrap();
        set_mode(&outside.join("victim"), 0o644);
        mkdir(&outside.join("victim-dir"), 0o755);
        Tree { root, run, outside }
    }

    fn dom(&self) -> PathBuf {
        self.run.join("dom")
    }

    /// The root master, receiving on link dom/l0, giving up after
    /// `up_timeout` seconds without a peer.
    fn master(&self, up_timeout: &str, extra: &[&str]) -> Proc {
        let mut cmd = tool();
        cmd.args([
            "rxonly", "--role", "master", "--domain", "dom", "--link", "l0",
        ])
        .arg("--run-dir")
        .arg(&self.run)
        .args(["--hugepages", "never", "--up-timeout", up_timeout])
        .args(extra);
        Proc::spawn("master", &mut cmd)
    }

    /// Starts a master, expects it to refuse: non-zero exit, an error
    /// naming `path` and one of `problems`, and nothing in the tree changed.
    fn expect_refusal(&self, path: &Path, problems: &[&str]) {
        let before = snapshot(&self.root);
        let mut master = self.master("2", &[]);
        let Some(status) = master.wait(REFUSAL) else {
            panic!(
                "master still running after {REFUSAL:?}: {}",
                master.output()
            );
        };
        let err = master.stderr();
        let mut failures = Vec::new();
        if status.success() {
            failures.push("the master exited successfully".to_string());
        }
        if !err.contains(path.to_str().unwrap()) {
            failures.push(format!("the error does not name {}", path.display()));
        }
        if !problems.iter().any(|p| err.contains(p)) {
            failures.push(format!("the error says none of {problems:?}"));
        }
        for change in diff(&before, &snapshot(&self.root), None) {
            failures.push(format!("the master changed the tree: {change}"));
        }
        assert!(
            failures.is_empty(),
            "{}\n{}",
            failures.join("\n"),
            master.output()
        );
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

#[test]
fn symlinked_domain_directory_is_refused() {
    let _w = Watchdog::new("symlinked domain dir", LIMIT);
    vecring_tests::require_root!();
    let t = Tree::new("dom-symlink");
    symlink(t.outside.join("victim-dir"), t.dom()).unwrap();
    t.expect_refusal(&t.dom(), &["is a symlink"]);
}

#[test]
fn symlinked_lock_is_refused_and_its_target_not_created() {
    let _w = Watchdog::new("symlinked lock", LIMIT);
    vecring_tests::require_root!();
    let t = Tree::new("lock-symlink");
    mkdir(&t.dom(), 0o711);
    let lock = t.dom().join("l0.lock");
    symlink(t.outside.join("planted-by-peer"), &lock).unwrap();
    t.expect_refusal(&lock, &["is a symlink"]);
    assert!(!t.outside.join("planted-by-peer").exists());
}

#[test]
fn symlinked_socket_is_refused() {
    let _w = Watchdog::new("symlinked socket", LIMIT);
    vecring_tests::require_root!();
    let t = Tree::new("sock-symlink");
    mkdir(&t.dom(), 0o711);
    let sock = t.dom().join("l0.sock");
    symlink(t.outside.join("victim"), &sock).unwrap();
    t.expect_refusal(&sock, &["is a symlink"]);
}

#[test]
fn domain_directory_owned_by_another_uid_is_refused() {
    let _w = Watchdog::new("foreign domain dir", LIMIT);
    vecring_tests::require_root!();
    let t = Tree::new("dom-foreign");
    mkdir(&t.dom(), 0o755);
    set_owner(&t.dom(), NOBODY, NOBODY);
    t.expect_refusal(&t.dom(), &["owned by uid 65534"]);
}

#[test]
fn domain_directory_writable_by_group_or_others_is_refused() {
    let _w = Watchdog::new("writable domain dir", LIMIT);
    vecring_tests::require_root!();
    for mode in [0o777, 0o770] {
        let t = Tree::new(&format!("dom-{mode:o}"));
        mkdir(&t.dom(), mode);
        t.expect_refusal(&t.dom(), &["writable by group or others"]);
    }
}

#[test]
fn lock_owned_by_another_uid_is_refused() {
    let _w = Watchdog::new("foreign lock", LIMIT);
    vecring_tests::require_root!();
    let t = Tree::new("lock-foreign");
    mkdir(&t.dom(), 0o711);
    let lock = t.dom().join("l0.lock");
    std::fs::write(&lock, "").unwrap();
    set_mode(&lock, 0o600);
    set_owner(&lock, NOBODY, NOBODY);
    t.expect_refusal(&lock, &["owned by uid 65534"]);
}

/// With `--owner`, the master keeps the domain directory (search
/// permission only for others) and gives the peer the socket alone; the
/// peer can attach; the master creates nothing else, and leaves nothing
/// but the directory when it exits.
#[test]
fn master_owns_its_directory_and_gives_the_peer_only_the_socket() {
    let _w = Watchdog::new("master layout", LIMIT);
    vecring_tests::require_root!();
    let t = Tree::new("layout");
    let before = snapshot(&t.root);
    let owner = format!("{NOBODY}:{NOBODY}");
    let mut master = t.master("30", &["--owner", &owner]);
    let (dom, sock, lock) = (t.dom(), t.dom().join("l0.sock"), t.dom().join("l0.lock"));
    assert!(
        wait_for_path(&sock, Duration::from_secs(10)),
        "no socket: {}",
        master.output()
    );
    let now = snapshot(&t.root);
    let mut failures = Vec::new();
    let d = &now[&dom];
    if d.kind != "dir" || d.uid != 0 || d.mode & 0o066 != 0 {
        failures.push(format!(
            "domain dir should be root's with at most search permission for others, is {d:?} (mode {:o})",
            d.mode
        ));
    }
    // The socket stays root's (its owner could chmod it open to every
    // local user); the owner's group reaches it.
    match now.get(&sock) {
        Some(s)
            if s.kind == "socket" && (s.uid, s.gid) == (0, NOBODY) && s.mode & 0o060 == 0o060 => {}
        s => failures.push(format!(
            "socket should be root's, group {NOBODY} with read and write: {s:?}"
        )),
    }
    // The owner uid cannot widen it.
    let chmod = as_nobody(&mut std::process::Command::new("chmod"))
        .arg("0777")
        .arg(&sock)
        .stderr(std::process::Stdio::null())
        .status();
    match chmod {
        Ok(st) if !st.success() => {}
        other => failures.push(format!("the owner uid could chmod the socket: {other:?}")),
    }
    if now.get(&sock).is_some_and(|s| s.mode & 0o007 != 0) {
        failures.push("the socket is open to others".into());
    }
    match now.get(&lock) {
        Some(l) if l.kind == "file" && l.uid == 0 && l.mode & 0o022 == 0 => {}
        l => failures.push(format!(
            "lock should be root's, not writable by others: {l:?}"
        )),
    }
    let inside: Vec<_> = now.keys().filter(|p| p.parent() == Some(&dom)).collect();
    if inside.len() != 2 {
        failures.push(format!(
            "domain dir should hold the socket and lock only: {inside:?}"
        ));
    }
    for change in diff(&before, &now, Some(&dom)) {
        failures.push(format!("outside the domain dir: {change}"));
    }
    // The peer reaches the socket through the directory's search bit.
    let mut peer = Proc::spawn(
        "peer",
        as_nobody(&mut attacker("slave"))
            .arg(format!("run-dir={}", t.run.display()))
            .args(["domain=dom", "link=l0", "timeout-ms=10000"]),
    );
    if let Err(e) = peer.line("up", Duration::from_secs(20)) {
        failures.push(format!("the owner uid cannot attach: {e}"));
    }
    master.close_stdin();
    match master.wait(Duration::from_secs(10)) {
        Some(s) if s.success() => {}
        _ => failures.push("the master did not exit cleanly".into()),
    }
    let after = snapshot(&t.root);
    for p in [&sock, &lock] {
        if after.contains_key(p) {
            failures.push(format!("{} left behind", p.display()));
        }
    }
    for change in diff(&before, &after, Some(&dom)) {
        failures.push(format!("after exit: {change}"));
    }
    assert!(
        failures.is_empty(),
        "{}\n{}",
        failures.join("\n"),
        master.output()
    );
}

/// A domain directory that exists already, root's and acceptable, keeps
/// its mode and owner, and so does another entry in it.
#[test]
fn existing_domain_directory_and_its_entries_are_left_as_found() {
    let _w = Watchdog::new("existing domain dir", LIMIT);
    vecring_tests::require_root!();
    let t = Tree::new("dom-existing");
    mkdir(&t.dom(), 0o700);
    let other = t.dom().join("other.sock");
    std::fs::write(&other, "").unwrap();
    set_mode(&other, 0o666);
    set_owner(&other, NOBODY, NOBODY);
    let before = snapshot(&t.root);
    let owner = format!("{NOBODY}:{NOBODY}");
    let mut master = t.master("1", &["--owner", &owner]);
    let sock = t.dom().join("l0.sock");
    let listening = wait_for_path(&sock, Duration::from_secs(10));
    let during = snapshot(&t.root);
    // No peer comes: the master gives up after --up-timeout.
    let exited = master.wait(Duration::from_secs(20));
    let mut failures = Vec::new();
    if !listening {
        failures.push("the master never listened".to_string());
    }
    for change in diff(&before, &during, None) {
        if !change.contains("l0.sock") && !change.contains("l0.lock") {
            failures.push(format!("while running: {change}"));
        }
    }
    if exited.is_none() {
        failures.push("the master did not exit".into());
    }
    for change in diff(&before, &snapshot(&t.root), None) {
        failures.push(format!("after exit: {change}"));
    }
    assert!(
        failures.is_empty(),
        "{}\n{}",
        failures.join("\n"),
        master.output()
    );
}
