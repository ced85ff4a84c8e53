//! What a DPDK application inside a running Docker or Podman container
//! needs besides the link, checked in its root file system (through its
//! init process, `/proc/<pid>/root`, looked up as the container would,
//! never out of it) and its mounts (`/proc/<pid>/mountinfo`): EAL's
//! runtime directory, the mempool driver and the vecring driver where EAL
//! loads plugins, and hugepages or `--no-huge`.
//!
//! EAL's runtime directory is `/var/run/dpdk` for root and
//! `$XDG_RUNTIME_DIR/dpdk` (else `/tmp/dpdk`) for any other user; the
//! checks apply to an image with DPDK in it (`librte_eal`). The fixes are
//! options to recreate the container with: a tmpfs for the runtime
//! directory, the host's driver files bound in read-only.

use super::idmap::{allows, Identity};
use super::inspect::Inspected;
use super::rootfs::{abi, driver_dir, has_eal, resolve, DRIVERS, NO_HUGE};
use super::{Level, Report};
use crate::escape::shell_quote;
use std::path::{Path, PathBuf};

const CHECK: &str = "dpdk-container";

pub(super) fn check(r: &mut Report, c: &Inspected, id: &Identity) {
    let root = c.root();
    if !has_eal(&root) {
        r.add(
            Level::Note,
            CHECK,
            format!(
                "{}: no DPDK (librte_eal) in its image: the checks for a DPDK application do not apply",
                c.name
            ),
            None,
        );
        return;
    }
    let mounts = Mounts::read(c.pid);
    runtime_dir(r, c, id, &root, &mounts);
    drivers(r, c, &root);
    hugepages(r, c, &mounts);
}

/// The container's mounts: (mount point inside, file system type,
/// read-only) from `/proc/<pid>/mountinfo`.
struct Mounts(Vec<(PathBuf, String, bool)>);

impl Mounts {
    fn read(pid: i32) -> Mounts {
        let text = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap_or_default();
        Mounts(
            text.lines()
                .filter_map(|l| {
                    let (left, right) = l.split_once(" - ")?;
                    let f: Vec<&str> = left.split(' ').collect();
                    let point = unescape(f.get(4)?);
                    let ro = f.get(5)?.split(',').any(|o| o == "ro");
                    let fstype = right.split(' ').next()?.to_string();
                    Some((PathBuf::from(point), fstype, ro))
                })
                .collect(),
        )
    }

    /// Whether the mount holding `path` (inside) is read-only.
    fn read_only(&self, path: &Path) -> bool {
        self.0
            .iter()
            .filter(|(p, _, _)| path.starts_with(p))
            .max_by_key(|(p, _, _)| p.components().count())
            .is_some_and(|(_, _, ro)| *ro)
    }
}

/// A mountinfo field with its octal escapes (`\040`) decoded.
fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let code = rest
            .get(i + 1..i + 4)
            .and_then(|o| u8::from_str_radix(o, 8).ok());
        match code {
            Some(b) => {
                out.push(char::from(b));
                rest = &rest[i + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[i + 1..];
            }
        }
    }
    out + rest
}

/// EAL makes `<base>/dpdk/<file-prefix>`: `<base>/dpdk`, or else `<base>`,
/// must be a directory the container's user may write, on a writable
/// mount.
fn runtime_dir(r: &mut Report, c: &Inspected, id: &Identity, root: &Path, mounts: &Mounts) {
    let name = &c.name;
    let xdg = c
        .env
        .iter()
        .find_map(|e| e.strip_prefix("XDG_RUNTIME_DIR="))
        .filter(|d| d.starts_with('/'));
    let (base, mode) = match (id.inside.0, xdg) {
        (0, _) => ("/var/run", "0755"),
        (_, Some(d)) => (d, "1777"),
        (_, None) => ("/tmp", "1777"),
    };
    let writable = |inside: &Path| {
        let p = resolve(root, inside)?;
        let md = std::fs::symlink_metadata(&p).ok()?;
        let seen = Path::new("/").join(p.strip_prefix(root).unwrap_or(&p));
        Some(md.is_dir() && allows(&md, id.host, 3) && !mounts.read_only(&seen))
    };
    let base_dir = Path::new(base);
    let made = base_dir.join("dpdk");
    let ok = match writable(&made) {
        Some(ok) => ok,
        None => writable(base_dir).unwrap_or(false),
    };
    let who = format!("uid {} inside, {} on the host", id.inside.0, id.host.0);
    if ok {
        r.add(
            Level::Ok,
            CHECK,
            format!(
                "{name}: EAL's runtime directory {} can be made ({who})",
                made.display()
            ),
            None,
        );
    } else {
        r.add(
            Level::Fail,
            CHECK,
            format!(
                "{name}: its user ({who}) cannot make {}: EAL fails with \"Cannot create runtime directory\"",
                made.display()
            ),
            Some(c.recreate(&format!("--tmpfs {}", shell_quote(&format!("{base}:mode={mode}"))))),
        );
    }
}

/// The mempool driver and the vecring driver in EAL's driver directory,
/// under a name its scan loads (`*.so`, `*.so.<ABI>`).
fn drivers(r: &mut Report, c: &Inspected, root: &Path) {
    let name = &c.name;
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
    for &(what, lib, effect) in DRIVERS {
        let scanned = [format!("{lib}.so"), format!("{lib}.so.{abi}")];
        if let Some(n) = scanned
            .iter()
            .find(|n| resolve(root, &dir.join(n)).is_some_and(|p| p.is_file()))
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
        // The host's file, bound in under the same name.
        let source = if dir.join(&scanned[1]).exists() {
            dir.join(&scanned[1])
        } else {
            dir.join(&scanned[0])
        };
        let volume = shell_quote(&format!("{0}:{0}:ro", source.display()));
        r.add(
            Level::Fail,
            CHECK,
            format!(
                "{name}: no {lib} in {} in its image: {effect}; it is a plugin, so ldd does not list it",
                dir.display()
            ),
            Some(c.recreate(&format!("--volume {volume}"))),
        );
    }
}

/// A hugetlbfs in the container, or `--no-huge`: the link needs none (the
/// master makes its memory), EAL's mbufs do unless told so.
fn hugepages(r: &mut Report, c: &Inspected, mounts: &Mounts) {
    let name = &c.name;
    match mounts.0.iter().find(|(_, t, _)| t == "hugetlbfs") {
        Some((p, _, _)) => r.add(
            Level::Ok,
            CHECK,
            format!(
                "{name} has a hugetlbfs at {}: its DPDK applications may use hugepages (as its hugetlb cgroup limit allows); the link itself needs none",
                p.display()
            ),
            None,
        ),
        None => r.add(
            Level::Note,
            CHECK,
            format!("{name} has no hugetlbfs: run its DPDK applications without hugepages (the link needs none: its memory is the master's)"),
            Some(NO_HUGE.to_string()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes_are_decoded() {
        assert_eq!(unescape(r"/run/a\040b"), "/run/a b");
        assert_eq!(unescape(r"/x\\y"), r"/x\\y");
        assert_eq!(unescape("/plain"), "/plain");
    }
}
