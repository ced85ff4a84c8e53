//! `vecring doctor --lxc` against a hostile container: its root file
//! system (owned by its root, uid 100000, as `docs/dpdk-container.md`
//! makes it) holds names with shell metacharacters where doctor looks,
//! links to a host directory, and directories the container swaps for
//! such links after doctor looked. Every `fix:` line doctor prints for the
//! container is then run as printed, as root, the way an operator pastes
//! it; nothing outside the container's root file system may be created,
//! given away or written through.
//!
//! The container's moves are made from a separate process in a user
//! namespace mapped as the container's (`unshare --map-users`): its root
//! there is uid 100000 on the host, with the powers the container's root
//! has over its own files and no others. The container is not running, so
//! a fix that acts in it (`lxc-attach`) does nothing there; a second test
//! runs those fixes in a running container and finds them made, inside.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

mod common;

use common::{host_driver_dir, Watchdog, TOOL};

/// The host uid the container's root maps to.
const MAPPED_ROOT: u32 = 100_000;

/// Held by each test while it runs: LXC's lock directories under
/// `/run/lxc/lock`, which each removes when done, are made and removed by
/// one test at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    // A test that failed while holding it poisons it; it guards no data.
    ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner)
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn show(what: &str, out: &Output) -> String {
    format!(
        "{what}: {}\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A scratch directory, removed when dropped, with the lock directory LXC
/// makes for a container path under it (`/run/lxc/lock/<path>`) and the
/// parents of that left empty.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("vecring-doctor-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
        let lock = Path::new("/run/lxc/lock").join(self.0.strip_prefix("/").unwrap_or(&self.0));
        let _ = std::fs::remove_dir_all(&lock);
        for p in lock.ancestors().skip(1) {
            if p == Path::new("/run") || std::fs::remove_dir(p).is_err() {
                break;
            }
        }
    }
}

/// Runs `script` with `sh` in `dir` as the container's root would: in a
/// user namespace mapped like the container's, from a separate process.
fn as_container(dir: &Path, script: &str) {
    let map = format!("{MAPPED_ROOT},0,65536");
    let out = Command::new("unshare")
        .args(["--user", "--map-users", &map, "--map-groups", &map])
        .args(["--setuid", "0", "--setgid", "0", "sh", "-c", script])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("unshare");
    assert!(out.status.success(), "{}", show(script, &out));
}

/// A container `name` under `lxc`, with a root file system that has DPDK
/// (`librte_eal`), all given to the container's root; returns its root.
fn container(lxc: &Path, run: &Path, name: &str) -> PathBuf {
    let root = lxc.join(name).join("rootfs");
    let libs = root.join("usr/lib/x86_64-linux-gnu");
    std::fs::create_dir_all(&libs).unwrap();
    std::fs::write(libs.join("librte_eal.so.23"), "").unwrap();
    let mount = format!(
        "lxc.mount.entry = {0}/{name} {1}/{name} none bind,create=dir 0 0",
        run.display(),
        run.display().to_string().trim_start_matches('/')
    );
    std::fs::write(
        lxc.join(name).join("config"),
        format!(
            "lxc.rootfs.path = dir:{}\n{mount}\nlxc.idmap = u 0 {MAPPED_ROOT} 65536\nlxc.idmap = g 0 {MAPPED_ROOT} 65536\n",
            root.display()
        ),
    )
    .unwrap();
    let chown = Command::new("chown")
        .args(["-R", &format!("{MAPPED_ROOT}:{MAPPED_ROOT}")])
        .arg(&root)
        .status()
        .unwrap();
    assert!(chown.success());
    root
}

/// The fix lines of doctor's text output for the container's checks
/// (`lxc`, `dpdk-lxc`), as printed.
fn container_fixes(text: &str) -> Vec<String> {
    let mut check = "";
    let mut fixes = Vec::new();
    for line in text.lines() {
        if let Some(fix) = line.trim_start().strip_prefix("fix: ") {
            if check == "lxc" || check == "dpdk-lxc" {
                fixes.push(fix.to_string());
            }
        } else if !line.starts_with(' ') {
            check = line.split_whitespace().nth(1).unwrap_or("");
        }
    }
    fixes
}

fn doctor(lxc: &Path, run: &Path, name: &str) -> String {
    let out = Command::new(TOOL)
        .arg("doctor")
        .arg("--run-dir")
        .arg(run)
        .arg("--lxc-path")
        .arg(lxc)
        .args(["--domain", name, "--lxc", name])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs one fix line as root with bash, in `cwd`.
fn run_fix(fix: &str, cwd: &Path) -> Output {
    Command::new("bash")
        .args(["-c", fix])
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// What is in `dir` (names), and its owner and mode.
fn state_of(dir: &Path) -> (Vec<String>, u32, u32, u32) {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let md = std::fs::symlink_metadata(dir).unwrap();
    (names, md.uid(), md.gid(), md.mode())
}

#[test]
fn fixes_for_a_hostile_container_touch_nothing_outside_it() {
    if !is_root() {
        eprintln!("skipped: needs root (a container's uids, fixes run as root)");
        return;
    }
    let _one = one_at_a_time();
    let _w = Watchdog::new("doctor hostile", Duration::from_secs(240));
    let Some(pmds) = host_driver_dir() else {
        panic!("no DPDK driver directory under /usr/lib/x86_64-linux-gnu/dpdk: install DPDK (scripts/setup.sh)");
    };
    let guard = Scratch::new("hostile");
    let scratch = guard.0.clone();
    let (lxc, run, host, cwd) = (
        scratch.join("lxc"),
        scratch.join("run"),
        scratch.join("host"),
        scratch.join("cwd"),
    );
    for d in [&lxc, &run, &host, &cwd] {
        std::fs::create_dir_all(d).unwrap();
    }
    // Where the fixes run (an operator's working directory) and a host
    // directory the container points at: both must stay as they are.
    let before = (state_of(&host), state_of(&cwd));
    let pmds_rel = pmds.strip_prefix("/").unwrap().display().to_string();
    let pmds_parent = pmds
        .parent()
        .unwrap()
        .strip_prefix("/")
        .unwrap()
        .display()
        .to_string();
    let host_s = host.display().to_string();

    // Names with shell metacharacters: /var/run leads to a directory of
    // another of the container's uids (so doctor prints a chown), named to
    // run commands; and a newline.
    let planted = container(&lxc, &run, "planted");
    as_container(
        &planted,
        &format!(
            "mkdir -p var '{pmds_rel}' && n=\"$(printf 'r $(touch pwned-a); touch pwned-b\\ntouch pwned-c')\" && \
             mkdir \"$n\" && chown 1:1 \"$n\" && ln -s \"../$n\" var/run && \
             touch '{pmds_rel}/librte_net_vecring.so.1;touch pwned-d'"
        ),
    );
    // Directories doctor sees as they should be, then swapped for links
    // to the host directory once it has printed its fixes.
    let swapped = container(&lxc, &run, "swapped");
    as_container(
        &swapped,
        &format!("mkdir -p var/run '{pmds_rel}' && chown 1:1 var/run"),
    );
    // Links to the host directory where doctor looks.
    let linked = container(&lxc, &run, "linked");
    as_container(
        &linked,
        &format!(
            "mkdir -p '{pmds_parent}' && ln -s '{host_s}' var && ln -s '{host_s}' '{pmds_rel}'"
        ),
    );

    let mut ran = 0;
    let mut printed = Vec::new();
    for (name, root) in [
        ("planted", &planted),
        ("swapped", &swapped),
        ("linked", &linked),
    ] {
        let text = doctor(&lxc, &run, name);
        let fixes = container_fixes(&text);
        // Each container has its runtime directory wrong, the first two
        // their drivers too (those of the third are behind its link).
        let wrong: &[&str] = match name {
            "linked" => &["/var/run"],
            _ => &["/var/run", "librte_mempool_ring", "librte_net_vecring"],
        };
        for what in wrong {
            assert!(
                text.lines().any(|l| l.contains("dpdk-lxc")
                    && l.contains(what)
                    && (l.starts_with("FAIL") || l.starts_with("warn"))),
                "{name}: nothing wrong with {what}?\n{text}"
            );
        }
        if name == "swapped" {
            as_container(
                root,
                &format!(
                    "mv var/run var/run.old && ln -s '{host_s}' var/run && \
                     mv '{pmds_rel}' '{pmds_rel}.old' && ln -s '{host_s}' '{pmds_rel}'"
                ),
            );
        }
        for fix in &fixes {
            let out = run_fix(fix, &cwd);
            eprintln!("{}", show(&format!("{name}: {fix}"), &out));
            ran += 1;
        }
        printed.extend(fixes);
    }
    let after = (state_of(&host), state_of(&cwd));
    assert_eq!(
        after, before,
        "the host directory or the working directory changed (names, uid, gid, mode)"
    );
    assert!(ran >= 9, "only {ran} fix lines ran");
    assert!(
        !printed.iter().any(|f| f.contains("pwned")),
        "a name the container chose is in a fix line: {printed:#?}"
    );
}

/// A container started with `lxc-start`, stopped when dropped.
struct Running<'a> {
    name: &'a str,
    lxc: &'a Path,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let _ = Command::new("lxc-stop")
            .args(["-k", "-n", self.name, "-P"])
            .arg(self.lxc)
            .stdin(Stdio::null())
            .output();
    }
}

/// The fixes doctor prints for a running container whose root file system
/// is its root's act in the container's own view: the missing runtime
/// directory and drivers are made there (the driver directory, a link
/// that from the host leads to a host directory, leads inside the
/// container's root as the container resolves it), doctor then finds
/// them, and the host directory stays empty.
#[test]
fn fixes_for_a_running_container_are_made_in_it() {
    if !is_root() {
        eprintln!("skipped: needs root (an LXC container)");
        return;
    }
    assert!(
        Path::new("/usr/bin/lxc-start").exists(),
        "lxc-start missing: run scripts/setup.sh"
    );
    let _one = one_at_a_time();
    let _w = Watchdog::new("doctor live", Duration::from_secs(240));
    let Some(pmds) = host_driver_dir() else {
        panic!("no DPDK driver directory under /usr/lib/x86_64-linux-gnu/dpdk: install DPDK (scripts/setup.sh)");
    };
    let guard = Scratch::new("live");
    let scratch = guard.0.clone();
    let (lxc, run, host) = (
        scratch.join("lxc"),
        scratch.join("run"),
        scratch.join("host"),
    );
    for d in [&lxc, &run, &host] {
        std::fs::create_dir_all(d).unwrap();
    }
    let name = format!("vrdoc{}", std::process::id());
    let root = container(&lxc, &run, &name);
    // What the fixes run in the container: a shell and the tools, with
    // their libraries; the container's init sleeps.
    let tools = "mkdir -p bin proc sys dev tmp && \
                 for b in sh mkdir ln chown cat sleep; do cp -L \"$(command -v $b)\" bin/; done && \
                 cp --parents -L $(ldd bin/* | awk '/=> \\// { print $3 } /^\\t\\// { print $1 }' | sort -u) . && \
                 chown -R 100000:100000 .";
    let out = Command::new("sh")
        .args(["-c", tools])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(tools, &out));
    let pmds_parent = pmds
        .parent()
        .unwrap()
        .strip_prefix("/")
        .unwrap()
        .display()
        .to_string();
    // DPDK's directory a link that leads, from the host, to the host
    // directory (up past the root), and in the container to its /host.
    let up = "../".repeat(pmds_parent.matches('/').count() + 3);
    as_container(
        &root,
        &format!("mkdir host && ln -s '{up}host' '{pmds_parent}'"),
    );
    assert_eq!(
        root.join(&pmds_parent).canonicalize().unwrap(),
        host.canonicalize().unwrap()
    );
    let config = lxc.join(&name).join("config");
    let base = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!(
            "lxc.include = /usr/share/lxc/config/common.conf\n\
             lxc.include = /usr/share/lxc/config/userns.conf\n\
             lxc.uts.name = {name}\n\
             lxc.init.cmd = /bin/sleep infinity\n\
             lxc.net.0.type = empty\n{base}"
        ),
    )
    .unwrap();
    std::fs::create_dir_all(run.join(&name)).unwrap();
    let started = Command::new("lxc-start")
        .args(["-n", &name, "-P"])
        .arg(&lxc)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let running = Running {
        name: &name,
        lxc: &lxc,
    };
    assert!(started.status.success(), "{}", show("lxc-start", &started));

    let fixes = container_fixes(&doctor(&lxc, &run, &name));
    let made: Vec<&String> = fixes
        .iter()
        .filter(|f| f.starts_with("lxc-attach"))
        .collect();
    assert_eq!(made.len(), 3, "{fixes:#?}");
    for fix in made {
        let out = run_fix(fix, &scratch);
        assert!(out.status.success(), "{}", show(fix, &out));
    }
    let text = doctor(&lxc, &run, &name);
    for what in [
        "EAL's runtime directory /var/run/dpdk can be made",
        "the mempool driver is in EAL's driver directory",
        "the vecring driver is in EAL's driver directory",
    ] {
        assert!(
            text.lines()
                .any(|l| l.starts_with("ok") && l.contains(what)),
            "not '{what}' after the fixes:\n{text}"
        );
    }
    let host_now = std::fs::read_dir(&host).unwrap().count();
    drop(running);
    assert_eq!(host_now, 0, "the fixes wrote into the host directory");
}
