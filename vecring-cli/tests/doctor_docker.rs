//! `vecring prepare --runtime docker` and `vecring doctor --container`
//! against Docker containers of a private `dockerd` (Debian's 20.10, its
//! own data root and socket, started once for the file and removed after,
//! also on failure).
//!
//! The image is `docker import` of the `vecring` tool's `ldd` closure (and
//! `sleep`), with an empty `librte_eal` that makes it a DPDK image to
//! doctor. A container run with the options `prepare` prints, and with
//! what a DPDK application needs, passes every container check and moves
//! frames to a master started with the `--owner` `prepare` printed.
//! Then each thing is broken in a container of its own (no mount, no
//! runtime directory, root without `/var/run`, a driver missing, the wrong
//! user, not running), doctor must fail it, and the fix it prints is
//! applied as printed (the options added to `docker run`, the master's
//! `--owner`, the command run by `bash`) and doctor must then pass it.
//! Last, a `dockerd` with `userns-remap`: `prepare --userns-remap` gives
//! the remapped uid, and doctor and a link agree.

use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

mod common;

use common::containers::{rootfs, show, Dockerd, TempUser, DOCKER};
use common::doctoring::{added, doctor, fails, has, master, prepare, received, the_failure};
use common::{host_driver_dir, Watchdog, TOOL};

const IMAGE: &str = "vecring-doctor:1";
/// Options of every container: nothing but the link.
const BASE: &str = "--network none --cap-drop ALL --security-opt no-new-privileges";

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

struct Env<'a> {
    d: &'a Dockerd,
    run: PathBuf,
}

impl Env<'_> {
    /// Runs container `name` with `opts` (recreated if it exists).
    fn run(&self, name: &str, opts: &str) {
        let _ = self.d.docker(&["rm", "-f", name]);
        self.d.sh(&format!(
            "{DOCKER} run -d --name {name} {BASE} {opts} {IMAGE} /bin/sleep 600 >/dev/null"
        ));
    }

    /// doctor --container NAME --json: its findings for the container (the
    /// `container` and `dpdk-container` checks).
    fn doctor(&self, name: &str) -> Vec<Value> {
        doctor(&self.run, name, &[("DOCKER_HOST", &self.d.host)])
    }
}

#[test]
fn doctor_checks_docker_containers_and_each_fix_holds() {
    if !is_root() {
        eprintln!(
            "skipped: doctor_checks_docker_containers_and_each_fix_holds needs root (dockerd)"
        );
        return;
    }
    let Some(pmds) = host_driver_dir() else {
        eprintln!("skipped: no DPDK driver directory on this host");
        return;
    };
    let _w = Watchdog::new("docker doctor", Duration::from_secs(600));
    let Some(d) = Dockerd::start("doctor-docker", &[]) else {
        eprintln!("skipped: dockerd is not installed");
        return;
    };
    let root = d.dir.join("rootfs");
    rootfs(&root, TOOL, true);
    d.sh(&format!(
        "tar -C {} -c . | {DOCKER} import - {IMAGE} >/dev/null",
        root.display()
    ));
    let e = Env {
        d: &d,
        run: d.dir.join("run"),
    };
    let run = &e.run;

    // prepare's options and owner, for a rootful daemon.
    let (opts, owner) = prepare(run, "docker", &[]);
    let dir = run.join("web");
    assert_eq!(
        opts,
        format!("--volume {0}:{0}:ro --user 1000:1000", dir.display())
    );
    assert_eq!(owner, "1000:1000");
    let mut m = master(run, "l0", &owner);

    // What a DPDK application needs: a runtime directory, the drivers.
    let volume = |lib: &str| format!("--volume {0}:{0}:ro", pmds.join(lib).display());
    let (tmpfs, mempool, vecring) = (
        "--tmpfs /tmp:mode=1777".to_string(),
        volume("librte_mempool_ring.so.23.0"),
        volume("librte_net_vecring.so"),
    );
    let good = format!("{opts} {tmpfs} {mempool} {vecring}");
    e.run("good", &good);
    let f = e.doctor("good");
    assert!(fails(&f).is_empty(), "{f:#?}");
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
            "runs as 1000:1000 (--user), 1000:1000 on the host"
        ),
        "{f:#?}"
    );
    assert!(
        has(
            &f,
            "ok",
            "l0.sock (uid 0, gid 1000, mode 0660) is open to good's user"
        ),
        "{f:#?}"
    );
    assert!(
        has(&f, "ok", "EAL's runtime directory /tmp/dpdk can be made"),
        "{f:#?}"
    );
    assert!(
        has(&f, "ok", "the mempool driver is in EAL's driver directory"),
        "{f:#?}"
    );
    assert!(
        has(&f, "ok", "the vecring driver is in EAL's driver directory"),
        "{f:#?}"
    );
    assert!(has(&f, "note", "has no hugetlbfs"), "{f:#?}");
    // And the link works: the slave in the container, the master on the
    // host with prepare's --owner.
    let out = e.d.docker(&[
        "exec",
        "good",
        "/bin/vecring",
        "txonly",
        "--domain",
        "web",
        "--link",
        "l0",
        "--run-dir",
        run.to_str().unwrap(),
        "--seconds",
        "0.3",
        "-q",
    ]);
    assert!(out.status.success(), "{}", show(&out));
    let sent = String::from_utf8_lossy(&out.stdout);
    assert!(sent.contains("still in the ring 0"), "{sent}");
    assert!(received(m) > 0);
    m = master(run, "l0", &owner);

    // Each one broken, failed, and fixed by the options its fix adds.
    let without = |flag: &str| good.replace(flag, "");
    let cases = [
        (
            "nomount",
            without(&opts.replace(" --user 1000:1000", "")),
            "does not mount",
        ),
        ("noruntime", without(&tmpfs), "cannot make /tmp/dpdk"),
        (
            "rootnorun",
            good.replace("--user 1000:1000", "--user 0:0"),
            "cannot make /var/run/dpdk",
        ),
        ("nomempool", without(&mempool), "no librte_mempool_ring"),
        ("novecring", without(&vecring), "no librte_net_vecring"),
    ];
    for (name, broken, what) in &cases {
        e.run(name, broken);
        let f = e.doctor(name);
        let fix = added(the_failure(&f, what));
        e.run(name, &format!("{broken} {fix}"));
        let f = e.doctor(name);
        assert!(fails(&f).is_empty(), "{name} with {fix}: {f:#?}");
        let _ = e.d.docker(&["rm", "-f", name]);
    }
    assert_eq!(
        added(the_failure(
            &{
                e.run("rootrun", &without(&tmpfs).replace("1000:1000", "0:0"));
                e.doctor("rootrun")
            },
            "/var/run/dpdk"
        )),
        "--tmpfs /var/run:mode=0755"
    );
    let _ = e.d.docker(&["rm", "-f", "rootrun"]);

    // The wrong user: the socket is closed to it; the master restarted
    // with the --owner the fix names admits it.
    e.run(
        "wrong",
        &good.replace("--user 1000:1000", "--user 2000:2000"),
    );
    let f = e.doctor("wrong");
    let fix = the_failure(
        &f,
        "l0.sock (uid 0, gid 1000, mode 0660) is not open to wrong's user (2000:2000 on the host)",
    )["fix"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        fix,
        "restart the master of web/l0 with --owner 2000:2000 (driver: owner=2000:2000)"
    );
    drop(m);
    let m2 = master(run, "l0", "2000:2000");
    assert!(fails(&e.doctor("wrong")).is_empty());
    let out = e.d.docker(&[
        "exec",
        "wrong",
        "/bin/vecring",
        "txonly",
        "--domain",
        "web",
        "--link",
        "l0",
        "--run-dir",
        run.to_str().unwrap(),
        "--seconds",
        "0.3",
        "-q",
    ]);
    assert!(out.status.success(), "{}", show(&out));
    drop(m2);

    // Not running: the fix starts it.
    e.d.sh(&format!(
        "{DOCKER} create --name stopped {BASE} {good} {IMAGE} /bin/sleep 600 >/dev/null"
    ));
    let f = e.doctor("stopped");
    let fix = the_failure(&f, "is not running")["fix"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(fix, "docker start stopped");
    e.d.sh(&format!("PATH=/usr/bin:$PATH; {fix} >/dev/null"));
    assert!(has(
        &e.doctor("stopped"),
        "ok",
        "a running docker container"
    ));

    // Mounted elsewhere: the slave needs another --run-dir.
    e.run(
        "elsewhere",
        &good.replace(
            &format!("{0}:{0}", dir.display()),
            &format!("{}:/run/other/web", dir.display()),
        ),
    );
    let f = e.doctor("elsewhere");
    assert!(has(&f, "warn", "at /run/other/web"), "{f:#?}");
    assert!(
        f.iter().any(|x| x["fix"]
            .as_str()
            .is_some_and(|s| s.starts_with("give the slave --run-dir /run/other"))),
        "{f:#?}"
    );

    // Hugepages: the host's hugetlbfs bound in is found.
    if std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .contains(" /dev/hugepages hugetlbfs ")
    {
        e.run(
            "huge",
            &format!("{good} --mount type=bind,source=/dev/hugepages,target=/dev/hugepages"),
        );
        assert!(has(
            &e.doctor("huge"),
            "ok",
            "has a hugetlbfs at /dev/hugepages"
        ));
    }

    // No such container: said so, by both runtimes.
    let f = e.doctor("no-such-container");
    let bad = the_failure(&f, "no container 'no-such-container' found");
    assert!(
        bad["finding"].as_str().unwrap().contains("docker: "),
        "{bad}"
    );

    // An image whose library directory is a link to an absolute path:
    // followed from the host through /proc/<pid>/root it would reach the
    // host's libraries (with DPDK's); doctor follows it as the container
    // does, to the image's own, which have none.
    let linked = d.dir.join("linked");
    rootfs(&linked, TOOL, false);
    std::fs::create_dir_all(linked.join("usr/lib")).unwrap();
    std::os::unix::fs::symlink(
        "/lib/x86_64-linux-gnu",
        linked.join("usr/lib/x86_64-linux-gnu"),
    )
    .unwrap();
    d.sh(&format!(
        "tar -C {} -c . | {DOCKER} import - vecring-linked:1 >/dev/null",
        linked.display()
    ));
    d.sh(&format!(
        "{DOCKER} run -d --name linked {BASE} {opts} vecring-linked:1 /bin/sleep 600 >/dev/null"
    ));
    let f = e.doctor("linked");
    assert!(
        has(&f, "note", "no DPDK (librte_eal) in its image"),
        "{f:#?}"
    );
    drop(e);
    drop(d);

    remapped();
}

/// The first subordinate id of the remap user the test makes.
const REMAP_FIRST: u32 = 400_000;

/// A dockerd with userns-remap for a user the test makes (dockerd will
/// not remap to root): prepare's --owner is the remapped uid, doctor sees
/// the container's user there, and a master with that --owner takes the
/// container's slave.
fn remapped() {
    let user = TempUser::new("vecring-remap", REMAP_FIRST);
    let Some(d) = Dockerd::start("doctor-remap", &["--userns-remap", &user.name]) else {
        return;
    };
    let root = d.dir.join("rootfs");
    rootfs(&root, TOOL, false);
    d.sh(&format!(
        "tar -C {} -c . | {DOCKER} import - {IMAGE} >/dev/null",
        root.display()
    ));
    let e = Env {
        d: &d,
        run: d.dir.join("run"),
    };
    let (opts, owner) = prepare(
        &e.run,
        "docker",
        &[&format!("--userns-remap={}", user.name)],
    );
    let first = REMAP_FIRST;
    assert_eq!(owner, format!("{0}:{0}", first + 1000));
    let m = master(&e.run, "l0", &owner);
    e.run("remapped", &opts);
    let f = e.doctor("remapped");
    assert!(fails(&f).is_empty(), "{f:#?}");
    assert!(has(&f, "ok", &format!("runs as 1000:1000 (--user), {owner} on the host (a user namespace, its root uid {first} on the host)")), "{f:#?}");
    let out = e.d.docker(&[
        "exec",
        "remapped",
        "/bin/vecring",
        "txonly",
        "--domain",
        "web",
        "--link",
        "l0",
        "--run-dir",
        e.run.to_str().unwrap(),
        "--seconds",
        "0.3",
        "-q",
    ]);
    assert!(out.status.success(), "{}", show(&out));
    assert!(received(m) > 0);
}
