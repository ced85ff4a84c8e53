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
//!
//! Rootless: as a user the test makes (with subordinate ids, removed
//! after), with and without `--userns=keep-id`, `prepare --rootless` run
//! as root gives the host uid the container's user is, doctor run as that
//! user finds the same through the container's id map, and a root master
//! with that `--owner` takes the container's slave.

use serde_json::Value;
use std::path::Path;
use std::time::Duration;

mod common;

use common::containers::{rootfs, sh, show, Podman, RootlessPodman};
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
        format!("--volume {0}:{0}:ro --user 1000:1000", dir.display())
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
    let broken = opts.replace(&format!("--volume {0}:{0}:ro ", dir.display()), "");
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

/// The first subordinate id of the rootless user the test makes.
const ROOTLESS_FIRST: u32 = 500_000;

#[test]
fn prepare_and_doctor_agree_on_rootless_podman_containers() {
    if !is_root() {
        eprintln!("skipped: prepare_and_doctor_agree_on_rootless_podman_containers needs root (it makes a user)");
        return;
    }
    let _w = Watchdog::new("rootless podman doctor", Duration::from_secs(300));
    let Some(rp) = RootlessPodman::new("doctor-rootless", "vecring-rootless", ROOTLESS_FIRST)
    else {
        eprintln!("skipped: podman is not installed");
        return;
    };
    let root = rp.dir.join("rootfs");
    rootfs(&root, TOOL, false);
    let tar = rp.dir.join("image.tar");
    sh(
        &format!(
            "tar -C {} -cf {1} . && chmod 0644 {1}",
            root.display(),
            tar.display()
        ),
        &[],
    );
    rp.sh(&format!(
        "podman import {} {IMAGE} >/dev/null",
        tar.display()
    ));
    let run = rp.dir.join("run");
    // The tool where the user can run it.
    let tool = vecring_tests::shared_copy(Path::new(TOOL));
    let (uid, gid) = rp.user.ids();
    let sub = ROOTLESS_FIRST + 999;
    let cases = [
        ("l0", "", format!("{sub}:{sub}"), uid),
        ("l1", "--keep-id", format!("{uid}:{gid}"), ROOTLESS_FIRST),
    ];
    for (link, keep_id, want, root_uid) in cases {
        let rootless = format!("--rootless={}", rp.user.name);
        let mut args = vec![rootless.as_str()];
        if !keep_id.is_empty() {
            args.push(keep_id);
        }
        let (opts, owner) = prepare(&run, "podman", &args);
        assert_eq!(owner, want, "{keep_id}");
        let m = master(&run, link, &owner);
        let name = format!("rootless-{link}");
        rp.sh(&format!(
            "podman run -d --name {name} {BASE} {opts} {IMAGE} /bin/sleep 600 >/dev/null"
        ));
        let out = rp.output(&format!(
            "{} doctor --json --domain web --container {name} --link {link} --run-dir {}",
            tool.display(),
            run.display()
        ));
        let v: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&out)));
        let f: Vec<Value> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["check"] == "container")
            .cloned()
            .collect();
        assert!(fails(&f).is_empty(), "{keep_id}: {f:#?}");
        let inside = if keep_id.is_empty() {
            "1000:1000".to_string()
        } else {
            format!("{uid}:{gid}")
        };
        assert!(
            has(&f, "ok", &format!("runs as {inside} (--user), {owner} on the host (a user namespace, its root uid {root_uid} on the host)")),
            "{keep_id}: {f:#?}"
        );
        assert!(
            has(
                &f,
                "ok",
                &format!(
                    "{link}.sock (uid 0, gid {}, mode 0660) is open",
                    owner.split(':').nth(1).unwrap()
                )
            ),
            "{f:#?}"
        );
        // Without --link: the user cannot list the root-owned directory.
        let out = rp.output(&format!(
            "{} doctor --domain web --container {name} --run-dir {}",
            tool.display(),
            run.display()
        ));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("Permission denied") && text.contains("fix: name them: --link NAME"),
            "{text}"
        );
        let out = rp.sh(&format!(
            "podman exec {name} /bin/vecring txonly --domain web --link {link} --run-dir {} --seconds 0.3 -q",
            run.display()
        ));
        assert!(out.contains("still in the ring 0"), "{out}");
        assert!(received(m) > 0);
    }
}
