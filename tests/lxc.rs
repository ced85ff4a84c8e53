//! The slave runs inside a real LXC container that sees the link only
//! through the bind-mounted domain directory, attaches to a master on the
//! host, and moves 10 million self-checking frames each way. Run as a
//! privileged and as an unprivileged (id-mapped) container.
//!
//! Needs root and Debian's `lxc` (installed by `scripts/setup.sh`).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use vecring_tests::{built_binary, Watchdog};

const FRAMES: u64 = 10_000_000;

/// Held by each ten-million-frame test while it runs: each pair of peers
/// busy-polls two CPUs, and two pairs at once on the same CPUs would slow
/// each other down to their watchdogs.
static TEN_MILLION: Mutex<()> = Mutex::new(());

/// Waits until no other ten-million-frame test of this binary runs.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    // A test that failed while holding it poisons it; it guards no data.
    TEN_MILLION.lock().unwrap_or_else(PoisonError::into_inner)
}
/// Where the unprivileged container's root lands on the host.
const MAPPED_ROOT: u32 = 100_000;

/// The application container's configuration (the host's root file
/// system shared), as the last section of docs/lxc.md describes it.
fn lxc_config(domain_dir: &Path, unprivileged: bool) -> String {
    let inside = domain_dir.strip_prefix("/").unwrap().display();
    let mut c = format!(
        "lxc.uts.name = vecring-test\n\
         lxc.rootfs.path =\n\
         lxc.net.0.type = empty\n\
         lxc.console.path = none\n\
         lxc.mount.auto = proc:rw sys:rw\n\
         lxc.autodev = 0\n\
         lxc.mount.entry = {} {inside} none bind,create=dir 0 0\n",
        domain_dir.display()
    );
    if unprivileged {
        c += &format!("lxc.idmap = u 0 {MAPPED_ROOT} 65536\nlxc.idmap = g 0 {MAPPED_ROOT} 65536\n");
    }
    c
}

/// A copy of the `vecring` tool where any uid can run it.
///
/// Copied by `cp`, not `std::fs::copy`: a write descriptor open in this
/// process would be inherited by a child another test thread forks at that
/// moment, and running the copy while that child holds it fails with
/// "Text file busy" (ETXTBSY).
fn shared_tool(scratch: &Path) -> PathBuf {
    let bin = scratch.join("vecring");
    let copied = Command::new("cp")
        .arg(built_binary("vecring"))
        .arg(&bin)
        .status()
        .unwrap();
    assert!(copied.success(), "cp of the vecring tool failed: {copied}");
    std::fs::set_permissions(scratch, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

fn require_lxc() {
    assert!(
        Path::new("/usr/bin/lxc-execute").exists(),
        "lxc-execute missing: run scripts/setup.sh"
    );
}

fn show(what: &str, out: &Output) -> String {
    format!(
        "{what}: {}\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs a host master and a containerised slave doing `stress` both ways;
/// also returns what `vecring list --json` said once it showed the link up.
fn run_pair(
    name: &str,
    unprivileged: bool,
    master_extra: &[&str],
    frames: u64,
) -> (Output, Output, Option<String>) {
    let scratch = PathBuf::from(format!(
        "/var/tmp/vecring-lxc-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap();
    let tool = shared_tool(&scratch);
    let run = scratch.join("run");
    let domain_dir = run.join("lxcdom");
    std::fs::create_dir_all(&domain_dir).unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
    let conf = scratch.join("lxc.conf");
    std::fs::write(&conf, lxc_config(&domain_dir, unprivileged)).unwrap();
    let run_s = run.to_str().unwrap();
    let common = [
        "--domain=lxcdom",
        "--link=eth0",
        "--run-dir",
        run_s,
        "--up-timeout=60",
        &format!("--frames={frames}"),
    ];

    let master = Command::new(&tool)
        .arg("stress")
        .arg("--role=master")
        .args(common)
        .args(master_extra)
        .arg("--cpu=0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let container = Command::new("lxc-execute")
        .args([
            "-n",
            &format!("vecring-{name}-{}", std::process::id()),
            "-f",
            conf.to_str().unwrap(),
            "--",
        ])
        .arg(&tool)
        .arg("stress")
        .arg("--role=slave")
        .args(common)
        .arg("--cpu=1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // While the pair runs, an operator on the host lists the links from a
    // third process: the first answer that shows the link up is kept.
    let seen_up = {
        let (tool, run) = (tool.clone(), run.clone());
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&stop);
        let t = std::thread::spawn(move || {
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok(out) = Command::new(&tool)
                    .args(["list", "--json", "--run-dir"])
                    .arg(&run)
                    .output()
                {
                    let text = String::from_utf8_lossy(&out.stdout).into_owned();
                    if text.contains("\"state\":\"up\"") {
                        return Some(text);
                    }
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            None
        });
        (stop, t)
    };
    let slave_out = container.wait_with_output().unwrap();
    seen_up.0.store(true, std::sync::atomic::Ordering::Relaxed);
    let listed = seen_up.1.join().unwrap();
    let master_out = if slave_out.status.success() {
        master.wait_with_output().unwrap()
    } else {
        // The master would wait for a slave forever: stop it.
        // SAFETY: signalling our own child.
        unsafe { libc::kill(master.id() as i32, libc::SIGKILL) };
        master.wait_with_output().unwrap()
    };
    let _ = std::fs::remove_dir_all(&scratch);
    (master_out, slave_out, listed)
}

fn assert_ten_million_each_way(master: &Output, slave: &Output) {
    assert_each_way(
        master,
        slave,
        &format!("sent {FRAMES} frames, received {FRAMES} frames, all intact and in order"),
    );
}

/// Both sides succeeded and printed `expect`.
fn assert_each_way(master: &Output, slave: &Output, expect: &str) {
    assert!(slave.status.success(), "{}", show("container slave", slave));
    assert!(master.status.success(), "{}", show("host master", master));
    assert!(
        String::from_utf8_lossy(&slave.stdout).contains(expect),
        "{}",
        show("container slave", slave)
    );
    assert!(
        String::from_utf8_lossy(&master.stdout).contains(expect),
        "{}",
        show("host master", master)
    );
}

/// The host master receives with the hold-back on (`--hold-back`): its
/// ten million checked frames show that holding back loses, duplicates
/// and reorders nothing.
#[test]
fn privileged_container_moves_ten_million_frames_each_way() {
    vecring_tests::require_root!();
    require_lxc();
    let _alone = one_at_a_time();
    let _w = Watchdog::new("lxc privileged", Duration::from_secs(600));
    let (master, slave, _) = run_pair("priv", false, &["--hold-back"], FRAMES);
    assert_ten_million_each_way(&master, &slave);
}

#[test]
fn unprivileged_container_gets_the_link_through_ownership_options() {
    vecring_tests::require_root!();
    require_lxc();
    let _alone = one_at_a_time();
    let _w = Watchdog::new("lxc unprivileged", Duration::from_secs(600));
    let owner = format!("--owner={MAPPED_ROOT}:{MAPPED_ROOT}");
    let allow = format!("--allow-uid={MAPPED_ROOT}");
    let (master, slave, listed) = run_pair("unpriv", true, &[&owner, &allow], FRAMES);
    assert_ten_million_each_way(&master, &slave);
    // `vecring list` from the host saw the link up with the container's
    // slave attached, as the host sees its uid.
    let listed = listed.expect("vecring list never showed the link up");
    assert!(
        listed.contains(&format!("\"uid\":{MAPPED_ROOT}}}"))
            && listed.contains("\"domain\":\"lxcdom\""),
        "{listed}"
    );
}

/// Four queue pairs, the container's slave taking the master's count:
/// every queue's frames arrive intact and in order on the same queue, both
/// ways (a frame on the wrong queue fails the stress check).
#[test]
fn unprivileged_container_moves_frames_on_four_queues_each_way() {
    vecring_tests::require_root!();
    require_lxc();
    let _alone = one_at_a_time();
    let _w = Watchdog::new("lxc queues", Duration::from_secs(600));
    let owner = format!("--owner={MAPPED_ROOT}:{MAPPED_ROOT}");
    let allow = format!("--allow-uid={MAPPED_ROOT}");
    const PER_QUEUE: u64 = 1_000_000;
    let (master, slave, _) = run_pair("queues", true, &[&owner, &allow, "--queues=4"], PER_QUEUE);
    for q in 0..4 {
        assert_each_way(
            &master,
            &slave,
            &format!("queue {q}: sent {PER_QUEUE} frames, received {PER_QUEUE} frames, all intact and in order"),
        );
    }
    assert_each_way(
        &master,
        &slave,
        &format!(
            "sent {} frames, received {} frames, all intact and in order",
            4 * PER_QUEUE,
            4 * PER_QUEUE
        ),
    );
}

#[test]
fn container_with_a_refused_uid_gets_a_clear_error() {
    vecring_tests::require_root!();
    require_lxc();
    let _w = Watchdog::new("lxc refused", Duration::from_secs(120));
    // Privileged container (uid 0), but the master only admits uid 4242.
    let (_master, slave, _) = run_pair("refused", false, &["--allow-uid=4242"], FRAMES);
    assert!(!slave.status.success());
    let err = String::from_utf8_lossy(&slave.stderr);
    assert!(
        err.contains("master refused this slave: uid 0 is not allowed to attach"),
        "{}",
        show("slave", &slave)
    );
}
