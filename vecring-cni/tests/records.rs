//! The plugin's records against a user who can write where they are
//! kept: the plugin (root) runs as the runtime runs it, a separate
//! process, and `nobody` plants files in its state directory from another
//! process. DEL and CHECK must refuse a directory `nobody` owns, and never
//! follow or wait on what is planted in one of root's.

use std::io::Write;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use vecring_tests::{require_root, Watchdog};

const PLUGIN: &str = env!("CARGO_BIN_EXE_vecring-cni");

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vecring-cni-rec-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o711)).unwrap();
    d
}

/// Runs the plugin as the runtime does: `command` for container `ctr`,
/// interface `net1`; returns its success and its stdout (the CNI error).
fn plugin(command: &str, state_dir: &Path) -> (bool, String) {
    let config = format!(
        r#"{{"cniVersion":"1.0.0","name":"t","type":"vecring-cni","mode":"tap","bridge":"br-none","stateDir":"{}","ovsVsctl":"/bin/false"}}"#,
        state_dir.display()
    );
    let mut child = Command::new(PLUGIN)
        .env("CNI_COMMAND", command)
        .env("CNI_CONTAINERID", "ctr")
        .env("CNI_IFNAME", "net1")
        .env("CNI_NETNS", "/proc/self/ns/net")
        .env("CNI_PATH", "/nonexistent")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start vecring-cni");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(config.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into(),
    )
}

/// Runs `sh -c script` as `nobody`, from a process of its own.
fn as_nobody(script: &str) {
    let ok = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["sh", "-c", script])
        .status()
        .expect("setpriv")
        .success();
    assert!(ok, "nobody could not run: {script}");
}

#[test]
fn a_state_directory_of_another_user_is_refused() {
    require_root!();
    let _w = Watchdog::new("records-owner", Duration::from_secs(60));
    let top = scratch("owner");
    let state = top.join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
    let c = std::ffi::CString::new(state.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; the result is checked.
    assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0);
    let victim = top.join("victim");
    std::fs::write(&victim, b"untouched").unwrap();
    // nobody's record: DEL would signal the process and remove the port
    // it names; here the record also leads to a file of root's.
    as_nobody(&format!(
        "ln -s {} {}/ctr-net1.json.tmp; echo '{{\"port\":\"x\",\"bridge\":\"y\",\"tapPid\":1,\"tapStart\":0}}' > {}/ctr-net1.json",
        victim.display(),
        state.display(),
        state.display()
    ));
    for cmd in ["DEL", "CHECK"] {
        let (ok, out) = plugin(cmd, &state);
        assert!(!ok, "{cmd} used nobody's directory: {out}");
        assert!(
            out.contains("owned by uid 65534"),
            "{cmd} did not say why: {out}"
        );
    }
    assert_eq!(std::fs::read(&victim).unwrap(), b"untouched");
    std::fs::remove_dir_all(&top).unwrap();
}

#[test]
fn planted_records_are_neither_followed_nor_waited_on() {
    require_root!();
    let _w = Watchdog::new("records-planted", Duration::from_secs(60));
    let top = scratch("planted");
    let state = top.join("state");
    // Root's own directory: nobody else can plant here, but a symlink or a
    // FIFO in a record's place (an operator's, a restore's) is still
    // refused rather than followed or waited on.
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    let victim = top.join("victim");
    std::fs::write(&victim, b"untouched").unwrap();
    symlink(&victim, state.join("ctr-net1.json")).unwrap();
    let (ok, out) = plugin("CHECK", &state);
    assert!(!ok, "CHECK read through a symlink: {out}");
    assert!(out.contains("ctr-net1.json"), "{out}");
    std::fs::remove_file(state.join("ctr-net1.json")).unwrap();
    // A FIFO: without O_NONBLOCK the plugin would wait for a writer
    // forever (the watchdog would fire).
    let c = std::ffi::CString::new(state.join("ctr-net1.json").to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; the result is checked.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let (ok, out) = plugin("DEL", &state);
    assert!(!ok, "DEL took a FIFO for a record: {out}");
    assert!(out.contains("not a record"), "{out}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"untouched");
    std::fs::remove_dir_all(&top).unwrap();
}
