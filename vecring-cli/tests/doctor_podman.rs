//! `vecring prepare --runtime podman` and `vecring doctor --container`
//! against rootful Podman containers, on a store and configuration of the
//! test's own (removed after, also on failure).
//!
//! The image is `podman import` of the `vecring` tool's `ldd` closure (and
//! `sleep`). A container run with the options `prepare` prints passes the
//! container checks and moves frames to a master started with the
//! `--owner` `prepare` printed; one without the mount and one with the
//! wrong user fail, and the fixes doctor prints (the options added to
//! `podman run`, the master's `--owner`) make them pass.

use std::time::Duration;

mod common;

use common::containers::{rootfs, Podman};
use common::doctoring::{added, doctor, fails, has, master, prepare, received, the_failure};
use common::{Watchdog, TOOL};

const IMAGE: &str = "localhost/vecring-doctor:1";
/// Options of every container: nothing but the link.
const BASE: &str = "--network none --cap-drop ALL --security-opt no-new-privileges";

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn doctor_checks_rootful_podman_containers_and_their_fixes_hold() {
    if !is_root() {
        eprintln!("skipped: doctor_checks_rootful_podman_containers_and_their_fixes_hold needs root (rootful podman)");
        return;
    }
    let _w = Watchdog::new("podman doctor", Duration::from_secs(300));
    let Some(p) = Podman::new("doctor-podman") else {
        eprintln!("skipped: podman is not installed");
        return;
    };
    let root = p.dir.join("rootfs");
    rootfs(&root, TOOL, false);
    p.sh(&format!(
        "tar -C {} -c . | podman import - {IMAGE} >/dev/null",
        root.display()
    ));
    let run = p.dir.join("run");
    let envs: Vec<(&str, &str)> = p
        .envs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let start = |name: &str, opts: &str| {
        p.sh(&format!(
            "podman rm -f -t 0 {name} >/dev/null 2>&1; podman run -d --name {name} {BASE} {opts} {IMAGE} /bin/sleep 600 >/dev/null"
        ));
    };

    let (opts, owner) = prepare(&run, "podman", &[]);
    let dir = run.join("web");
    assert_eq!(
        opts,
        format!("--volume {0}:{0}:rw --user 1000:1000", dir.display())
    );
    assert_eq!(owner, "1000:1000");
    let m = master(&run, "l0", &owner);
    start("good", &opts);
    let f = doctor(&run, "good", &envs);
    assert!(fails(&f).is_empty(), "{f:#?}");
    assert!(has(&f, "ok", "a running podman container"), "{f:#?}");
    assert!(
        has(
            &f,
            "ok",
            &format!("mounts {} at the same path", dir.display())
        ),
        "{f:#?}"
    );
    assert!(
        has(
            &f,
            "ok",
            "l0.sock (uid 0, gid 1000, mode 0660) is open to good's user (1000:1000 on the host)"
        ),
        "{f:#?}"
    );
    let out = p.sh(&format!(
        "podman exec good /bin/vecring txonly --domain web --link l0 --run-dir {} --seconds 0.3 -q",
        run.display()
    ));
    assert!(out.contains("still in the ring 0"), "{out}");
    assert!(received(m) > 0);
    let m = master(&run, "l0", &owner);

    // Without the mount: the fix's options make it.
    let broken = opts.replace(&format!("--volume {0}:{0}:rw ", dir.display()), "");
    start("nomount", &broken);
    let f = doctor(&run, "nomount", &envs);
    let fix = added(the_failure(&f, "does not mount"));
    assert!(the_failure(&f, "does not mount")["fix"]
        .as_str()
        .unwrap()
        .contains("podman rm -f nomount"));
    start("nomount", &format!("{broken} {fix}"));
    let f = doctor(&run, "nomount", &envs);
    assert!(fails(&f).is_empty(), "{fix}: {f:#?}");

    // The wrong user: the master the fix names admits it.
    start("wrong", &opts.replace("1000:1000", "2000:2000"));
    let f = doctor(&run, "wrong", &envs);
    let bad = the_failure(&f, "is not open to wrong's user (2000:2000 on the host)");
    assert_eq!(
        bad["fix"],
        "restart the master of web/l0 with --owner 2000:2000 (driver: owner=2000:2000)"
    );
    drop(m);
    let m = master(&run, "l0", "2000:2000");
    assert!(fails(&doctor(&run, "wrong", &envs)).is_empty());
    let out = p.sh(&format!(
        "podman exec wrong /bin/vecring txonly --domain web --link l0 --run-dir {} --seconds 0.3 -q",
        run.display()
    ));
    assert!(out.contains("still in the ring 0"), "{out}");
    assert!(received(m) > 0);
}
