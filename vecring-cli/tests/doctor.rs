//! `vecring doctor`: a host without hugepages (seen through a mount
//! namespace where the hugepage directory is empty) fails with the fix; a
//! run directory others can write fails; a container configuration is
//! checked for the mount entry and the id map.

use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

mod common;

use common::{host_driver_dir, TOOL};

/// Runs a command, killing it if it outlives 60 s.
fn run(cmd: &mut Command) -> Output {
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("still running after 60 s: killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vecring-doctor-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

fn findings(out: &Output) -> Vec<Value> {
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(v["schema"], "vecring-doctor");
    assert_eq!(v["ok"], out.status.success(), "exit status follows 'ok'");
    v["findings"].as_array().unwrap().clone()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn a_host_without_hugepages_fails_and_says_how_to_fix_it() {
    if !is_root() {
        eprintln!("skipped: needs root for a mount namespace");
        return;
    }
    // In a private mount namespace, an empty tmpfs over the hugepage
    // directory: the host as a machine with none reserved sees it.
    let out = run(Command::new("unshare").args([
        "-m",
        "sh",
        "-c",
        "mount -t tmpfs none /sys/kernel/mm/hugepages && exec \"$0\" doctor",
        TOOL,
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("FAIL hugepages") && text.contains("no 2 MiB hugepages reserved"),
        "{text}"
    );
    assert!(
        text.contains("fix: echo 1024 > /sys/kernel/mm/hugepages"),
        "{text}"
    );
    assert!(
        text.contains("something above (FAIL) stops a link"),
        "{text}"
    );
}

#[test]
fn a_run_directory_others_can_write_fails() {
    let run_dir = scratch("open");
    std::fs::set_permissions(&run_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out =
        run(Command::new(TOOL).args(["doctor", "--json", "--run-dir", run_dir.to_str().unwrap()]));
    let f = findings(&out);
    let bad = f
        .iter()
        .find(|f| f["check"] == "run-dir" && f["level"] == "fail")
        .unwrap_or_else(|| panic!("no run-dir failure: {f:?}"));
    assert!(
        bad["finding"]
            .as_str()
            .unwrap()
            .contains("writable by group or others"),
        "{bad}"
    );
    assert_eq!(bad["fix"], format!("chmod 0755 {}", run_dir.display()));
    assert!(!out.status.success());
    std::fs::remove_dir_all(&run_dir).unwrap();
}

#[test]
fn a_container_configuration_is_checked_for_the_domain() {
    let lxc_path = scratch("lxc");
    let run_dir = scratch("lxc-run");
    let doctor = |name: &str| {
        run(Command::new(TOOL).args([
            "doctor",
            "--json",
            "--run-dir",
            run_dir.to_str().unwrap(),
            "--lxc-path",
            lxc_path.to_str().unwrap(),
            "--domain",
            "web",
            "--lxc",
            name,
        ]))
    };
    let lxc =
        |f: &[Value]| -> Vec<Value> { f.iter().filter(|f| f["check"] == "lxc").cloned().collect() };

    // A container whose configuration lacks the mount.
    std::fs::create_dir(lxc_path.join("bare")).unwrap();
    std::fs::write(lxc_path.join("bare/config"), "lxc.uts.name = bare\n").unwrap();
    let out = doctor("bare");
    let f = lxc(&findings(&out));
    let mount = format!(
        "lxc.mount.entry = {0}/web {1}/web none bind,create=dir 0 0",
        run_dir.display(),
        run_dir.display().to_string().trim_start_matches('/')
    );
    assert!(
        f.iter()
            .any(|f| f["level"] == "fail" && f["fix"].as_str().unwrap_or("").contains(&mount)),
        "{f:?}"
    );
    assert!(!out.status.success());

    // One that has it, unprivileged: the uid to give the socket to.
    std::fs::create_dir(lxc_path.join("good")).unwrap();
    std::fs::write(
        lxc_path.join("good/config"),
        format!("{mount}\nlxc.idmap = u 0 100000 65536\nlxc.idmap = g 0 100000 65536\n"),
    )
    .unwrap();
    let f = lxc(&findings(&doctor("good")));
    assert!(f.iter().all(|f| f["level"] != "fail"), "{f:?}");
    assert!(
        f.iter().any(|f| f["finding"]
            .as_str()
            .unwrap()
            .contains("--owner 100000:100000")),
        "{f:?}"
    );
    // The domain directory does not exist yet: said, with how to make it.
    assert!(
        f.iter().any(|f| f["level"] == "warn"
            && f["fix"].as_str().unwrap_or("").starts_with(&format!(
                "vecring prepare --domain web --owner 100000:100000 --run-dir {}",
                run_dir.display()
            ))),
        "{f:?}"
    );

    // No such container.
    let f = lxc(&findings(&doctor("absent")));
    assert!(
        f.iter()
            .any(|f| f["level"] == "fail" && f["finding"].as_str().unwrap().contains("absent")),
        "{f:?}"
    );
    std::fs::remove_dir_all(&lxc_path).unwrap();
    std::fs::remove_dir_all(&run_dir).unwrap();
}

/// A container with DPDK in its root file system but none of what
/// docs/dpdk-container.md adds: no /var/run, the mempool driver under its
/// soname (which EAL's scan skips), no vecring driver, no hugetlbfs. Each
/// is named with its fix; the fixes, run, make the checks pass.
#[test]
fn a_dpdk_container_is_checked_for_what_eal_needs() {
    let Some(pmds) = host_driver_dir() else {
        panic!("no DPDK driver directory under /usr/lib/x86_64-linux-gnu/dpdk: install DPDK (scripts/setup.sh)");
    };
    let lxc_path = scratch("dpdk-lxc");
    let run_dir = scratch("dpdk-lxc-run");
    let root = lxc_path.join("dp/rootfs");
    let inside = root.join(pmds.strip_prefix("/").unwrap());
    std::fs::create_dir_all(&inside).unwrap();
    std::fs::create_dir_all(root.join("usr/lib/x86_64-linux-gnu")).unwrap();
    std::fs::write(root.join("usr/lib/x86_64-linux-gnu/librte_eal.so.23"), "").unwrap();
    std::fs::write(inside.join("librte_mempool_ring.so.23"), "").unwrap();
    let mount = format!(
        "lxc.mount.entry = {0}/dp {1}/dp none bind,create=dir 0 0",
        run_dir.display(),
        run_dir.display().to_string().trim_start_matches('/')
    );
    std::fs::write(
        lxc_path.join("dp/config"),
        format!(
            "lxc.rootfs.path = dir:{}\n{mount}\nlxc.idmap = u 0 100000 65536\nlxc.idmap = g 0 100000 65536\n",
            root.display()
        ),
    )
    .unwrap();
    let doctor = || {
        let out = run(Command::new(TOOL).args([
            "doctor",
            "--json",
            "--run-dir",
            run_dir.to_str().unwrap(),
            "--lxc-path",
            lxc_path.to_str().unwrap(),
            "--domain",
            "dp",
            "--lxc",
            "dp",
        ]));
        findings(&out)
            .into_iter()
            .filter(|f| f["check"] == "dpdk-lxc")
            .collect::<Vec<Value>>()
    };
    let about = |f: &[Value], what: &str| -> Value {
        f.iter()
            .find(|f| f["finding"].as_str().unwrap().contains(what))
            .unwrap_or_else(|| panic!("nothing about '{what}': {f:#?}"))
            .clone()
    };
    let f = doctor();
    let runtime = about(&f, "/var/run");
    assert_eq!(runtime["level"], "fail", "{runtime}");
    let mempool = about(&f, "the mempool driver");
    assert_eq!(mempool["level"], "warn", "{mempool}");
    assert!(
        mempool["finding"]
            .as_str()
            .unwrap()
            .contains("librte_mempool_ring.so.23 in its root file system"),
        "{mempool}"
    );
    let vecring = about(&f, "librte_net_vecring");
    assert_eq!(vecring["level"], "fail", "{vecring}");
    let huge = about(&f, "no hugetlbfs");
    assert_eq!(huge["level"], "note", "{huge}");
    assert!(
        huge["fix"].as_str().unwrap().contains("--no-huge -m 512"),
        "{huge}"
    );
    // The fixes are commands: the driver copies need the host's drivers,
    // which this host has.
    for fix in [&runtime, &mempool, &vecring] {
        let fix = fix["fix"].as_str().unwrap();
        let out = run(Command::new("sh").args(["-c", fix]));
        assert!(
            out.status.success(),
            "{fix}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let f = doctor();
    for what in ["/var/run", "the mempool driver", "the vecring driver"] {
        assert_eq!(about(&f, what)["level"], "ok", "{what}: {f:#?}");
    }
    std::fs::remove_dir_all(&lxc_path).unwrap();
    std::fs::remove_dir_all(&run_dir).unwrap();
}

/// A lock a dead master left is a note (harmless), as `vecring list`
/// calls it; a file vecring did not make is a warning.
#[test]
fn a_leftover_lock_is_a_note_and_a_stranger_a_warning() {
    let run_dir = scratch("lock");
    let dom = run_dir.join("dom");
    std::fs::create_dir(&dom).unwrap();
    std::fs::set_permissions(&dom, std::fs::Permissions::from_mode(0o710)).unwrap();
    std::fs::write(dom.join("l0.lock"), "").unwrap();
    std::fs::write(dom.join("stranger"), "").unwrap();
    let out =
        run(Command::new(TOOL).args(["doctor", "--json", "--run-dir", run_dir.to_str().unwrap()]));
    let f = findings(&out);
    let level = |what: &str| {
        f.iter()
            .find(|f| f["check"] == "run-dir" && f["finding"].as_str().unwrap().contains(what))
            .unwrap_or_else(|| panic!("nothing about {what}: {f:#?}"))["level"]
            .clone()
    };
    assert_eq!(level("l0.lock"), "note");
    assert_eq!(level("stranger"), "warn");
    std::fs::remove_dir_all(&run_dir).unwrap();
}
