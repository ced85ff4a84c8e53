//! What a DPDK application inside an LXC container needs besides the
//! link (`docs/dpdk-container.md`), checked in the container's root file
//! system and configuration: EAL's runtime directory (`/var/run`), the
//! mempool driver and the vecring driver where EAL loads plugins, and
//! memory for its mbufs (a hugetlbfs in the container, or `--no-huge`).
//!
//! The checks apply to a container whose root file system has DPDK in it
//! (`librte_eal`); a container that shares the host's root file system sees
//! the host's runtime directory and drivers, and only its hugepages are
//! checked.

use super::fix::{relative, Container};
use super::idmap::IdMap;
use super::rootfs::{abi, driver_dir, has_eal, resolve, DRIVERS, LIB_DIRS, NO_HUGE};
use super::{DoctorArgs, Level, Report};
use crate::escape::shell_quote;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

const CHECK: &str = "dpdk-lxc";

/// The value of the last `key = value` line of an LXC configuration.
fn config_value<'a>(config: &'a str, key: &str) -> Option<&'a str> {
    config
        .lines()
        .rev()
        .filter_map(|l| l.split_once('='))
        .find(|(k, _)| k.trim() == key)
        .map(|(_, v)| v.trim())
}

/// The container's root file system on the host: `Ok(None)` when it
/// shares the host's, `Err` with the reason when it cannot be looked at.
fn rootfs(args: &DoctorArgs, name: &str, config: &str) -> Result<Option<PathBuf>, String> {
    let value = match config_value(config, "lxc.rootfs.path") {
        None => return Ok(Some(args.lxc_path.join(name).join("rootfs"))),
        Some("") => return Ok(None),
        Some(v) => v,
    };
    let path = value.strip_prefix("dir:").unwrap_or(value);
    if path.starts_with('/') {
        Ok(Some(PathBuf::from(path)))
    } else {
        Err(format!(
            "its root file system '{value}' is not a directory this check can read"
        ))
    }
}

/// The checks of this module, for container `name`, whose ids on the host
/// are `map`'s (its root the host's root when unmapped).
pub(super) fn check(r: &mut Report, args: &DoctorArgs, name: &str, config: &str, map: IdMap) {
    let root_uid = map.root().unwrap_or(0);
    match rootfs(args, name, config) {
        Err(why) => r.add(Level::Note, CHECK, format!("{name}: {why}; its DPDK applications are not checked"), None),
        Ok(None) => r.add(
            Level::Note,
            CHECK,
            format!("{name} shares the host's root file system: its DPDK applications use the host's runtime directory and drivers"),
            None,
        ),
        Ok(Some(root)) if !has_eal(&root) => {
            r.add(
                Level::Note,
                CHECK,
                format!("{name}: no DPDK (librte_eal) in {}: the checks for a DPDK application in it do not apply", root.display()),
                None,
            );
            return;
        }
        Ok(Some(root)) => {
            let c = Container {
                name,
                lxc_path: &args.lxc_path,
                root: &root,
                map,
            };
            runtime_dir(r, &c, root_uid);
            drivers(r, &c);
        }
    }
    hugepages(r, name, config, root_uid != 0);
}

/// EAL (as root) makes `/var/run/dpdk/<file-prefix>`: `/var/run` must be
/// a directory the container's root may write. The fixes act from the
/// host only where the container cannot redirect them, in the container
/// otherwise ([`super::fix`]).
fn runtime_dir(r: &mut Report, c: &Container, root_uid: u32) {
    let (name, root) = (c.name, c.root);
    match resolve(root, Path::new("/var/run")).and_then(|p| Some((std::fs::metadata(&p).ok()?, p))) {
        Some((md, _)) if md.is_dir() && (md.uid() == root_uid || md.mode() & 0o002 != 0) => r.add(
            Level::Ok,
            CHECK,
            format!("{name}: EAL's runtime directory /var/run/dpdk can be made (/var/run in the root file system)"),
            None,
        ),
        Some((md, p)) if md.is_dir() => {
            let rel = relative(root, &p);
            let fix = if c.host_may_act(rel.parent().unwrap_or(Path::new(""))) {
                format!("chown -h {root_uid}:{root_uid} {}", c.host_path(&rel))
            } else {
                c.attach(&["chown", "0:0", "/var/run"])
            };
            r.add(
                Level::Fail,
                CHECK,
                format!(
                    "{name}: /var/run ({}) belongs to uid {}, not the container's root (uid {root_uid} here): EAL cannot make /var/run/dpdk",
                    p.display(),
                    md.uid()
                ),
                Some(fix),
            )
        }
        _ => {
            let fix = if c.host_may_act(Path::new("var")) {
                format!(
                    "mkdir -p {run} {var} && ln -s ../run {link} && chown -h {root_uid}:{root_uid} {run} {link}",
                    run = c.host_path(Path::new("run")),
                    var = c.host_path(Path::new("var")),
                    link = c.host_path(Path::new("var/run")),
                )
            } else {
                c.attach(&["sh", "-c", "mkdir -p /run /var && ln -s ../run /var/run"])
            };
            r.add(
                Level::Fail,
                CHECK,
                format!("{name}: no /var/run in its root file system: EAL fails with \"Error creating '/var/run/dpdk'\""),
                Some(fix),
            )
        }
    }
}

/// The mempool driver and the vecring driver: in EAL's driver directory
/// under a name its scan loads (`*.so`, `*.so.<ABI>`), or at least
/// somewhere in the root file system for `-d`.
fn drivers(r: &mut Report, c: &Container) {
    let (name, root) = (c.name, c.root);
    let Some(dir) = driver_dir() else {
        r.add(
            Level::Note,
            CHECK,
            format!(
                "{name}: the host has no DPDK driver directory (.../dpdk/pmds-*) to compare with"
            ),
            None,
        );
        return;
    };
    let abi = abi(&dir).unwrap_or_default();
    // The driver directory as the container sees it: looked at through
    // its links as it would follow them, never out of its root.
    let dir_rel = dir.strip_prefix("/").unwrap_or(&dir).to_path_buf();
    let inside = resolve(root, &dir);
    for &(what, lib, effect) in DRIVERS {
        let scanned = [format!("{lib}.so"), format!("{lib}.so.{abi}")];
        if let Some(n) = scanned
            .iter()
            .find(|n| resolve(root, &dir.join(n)).is_some_and(|p| p.exists()))
        {
            r.add(
                Level::Ok,
                CHECK,
                format!(
                    "{name}: {what} is in EAL's driver directory ({})",
                    dir.join(n).display()
                ),
                None,
            );
            continue;
        }
        // Not where the scan loads it: any other copy can only be given
        // with -d.
        let elsewhere = inside
            .iter()
            .cloned()
            .chain(
                LIB_DIRS
                    .iter()
                    .chain(std::iter::once(&"usr/local/lib/vecring"))
                    .filter_map(|d| resolve(root, &Path::new("/").join(d))),
            )
            .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(&format!("{lib}.so")))
            });
        // The host's file under a name the scan loads.
        let source = if dir.join(&scanned[1]).exists() {
            dir.join(&scanned[1])
        } else {
            dir.join(&scanned[0])
        };
        let copy = copy_fix(c, &source, &dir_rel);
        match elsewhere {
            Some(p) => {
                let seen = Path::new("/").join(p.strip_prefix(root).unwrap_or(&p));
                r.add(
                    Level::Warn,
                    CHECK,
                    format!(
                        "{name}: {what} is {} in its root file system, a name EAL's scan of {} skips (it loads *.so and *.so.{abi}): unless the application is given -d {}, {effect}",
                        seen.display(),
                        dir.display(),
                        seen.display()
                    ),
                    Some(copy),
                );
            }
            None => r.add(
                Level::Fail,
                CHECK,
                format!("{name}: no {lib} in its root file system: {effect}; it is a plugin, so ldd does not list it"),
                Some(copy),
            ),
        }
    }
}

/// The fix that puts the host's driver `source` into the container's
/// driver directory `dir` (relative to its root) under the same name: a
/// copy by the host where nothing on the way is the container's, else the
/// host's file fed to a writer in the container.
fn copy_fix(c: &Container, source: &Path, dir: &Path) -> String {
    let file = source.file_name().map(Path::new).unwrap_or(source);
    if c.host_may_act(dir) {
        let to = c.host_path(dir);
        return format!(
            "mkdir -p {to} && cp {} {to}/",
            shell_quote(&source.display().to_string())
        );
    }
    let inner = Path::new("/").join(dir);
    let script = format!(
        "mkdir -p {0} && cat > {1}",
        shell_quote(&inner.display().to_string()),
        shell_quote(&inner.join(file).display().to_string())
    );
    format!(
        "{} < {}",
        c.attach(&["sh", "-c", &script]),
        shell_quote(&source.display().to_string())
    )
}

/// A hugetlbfs in the container: mounted by an `lxc.mount.entry` of type
/// hugetlbfs (a privileged container only), bound from the host's, or none
/// (`--no-huge`).
fn hugepages(r: &mut Report, name: &str, config: &str, unprivileged: bool) {
    let entries: Vec<Vec<&str>> = config
        .lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| k.trim() == "lxc.mount.entry")
        .map(|(_, v)| v.split_whitespace().collect())
        .collect();
    let own = entries.iter().any(|f| f.get(2) == Some(&"hugetlbfs"));
    let bound = entries.iter().any(|f| {
        f.first().is_some_and(|s| s.starts_with("/dev/hugepages"))
            && f.get(3).is_some_and(|o| o.contains("bind"))
    });
    let host_dev = config_value(config, "lxc.autodev") == Some("0");
    let remove = "remove that lxc.mount.entry line";
    match (own, bound || host_dev, unprivileged) {
        (true, _, true) => r.add(
            Level::Fail,
            CHECK,
            format!("{name} is unprivileged and mounts a hugetlbfs: the kernel allows that only to the host, so the container does not start"),
            Some(format!("{remove}, and run its DPDK applications without hugepages: {NO_HUGE}")),
        ),
        (true, _, false) => r.add(
            Level::Ok,
            CHECK,
            format!("{name} mounts a hugetlbfs of its own: its DPDK applications use hugepages"),
            None,
        ),
        (false, true, true) => r.add(
            Level::Warn,
            CHECK,
            format!("{name} sees the host's /dev/hugepages, which its root (an unprivileged uid on the host) cannot write: EAL fails with \"Permission denied\""),
            Some(format!("run its DPDK applications without hugepages: {NO_HUGE}")),
        ),
        (false, true, false) => r.add(
            Level::Note,
            CHECK,
            format!("{name} shares the host's /dev/hugepages: give its DPDK applications a --file-prefix no host application uses (EAL's files there are named by it)"),
            Some("or a hugetlbfs of its own: lxc.mount.entry = hugetlbfs dev/hugepages hugetlbfs rw,pagesize=2M,create=dir 0 0".into()),
        ),
        (false, false, unprivileged) => r.add(
            Level::Note,
            CHECK,
            format!("{name}: no hugetlbfs mounted in the container: run DPDK applications there without hugepages"),
            Some(if unprivileged {
                format!("{NO_HUGE} (an unprivileged container cannot mount one)")
            } else {
                format!("{NO_HUGE}, or mount one: lxc.mount.entry = hugetlbfs dev/hugepages hugetlbfs rw,pagesize=2M,create=dir 0 0")
            }),
        ),
    }
}
