//! A container's root file system seen from the host: its paths looked
//! up as the container would look them up, never out of it, and where
//! DPDK keeps what an application there needs (its libraries, EAL's
//! driver directory). The LXC and the Docker/Podman checks share these.

use std::path::{Component, Path, PathBuf};

/// Where the libraries of a root file system live, relative to it.
pub(super) const LIB_DIRS: &[&str] = &[
    "lib",
    "lib64",
    "usr/lib",
    "usr/lib64",
    "usr/local/lib",
    "lib/x86_64-linux-gnu",
    "usr/lib/x86_64-linux-gnu",
    "lib/aarch64-linux-gnu",
    "usr/lib/aarch64-linux-gnu",
];

/// The fix for a container whose DPDK applications have no hugepages.
pub(super) const NO_HUGE: &str =
    "dpdk-testpmd --no-huge -m 512 ... -- --total-num-mbufs=32768 --no-mlockall";

/// EAL's driver directory on the host (`.../dpdk/pmds-<ABI>`): the path
/// built into Debian's and DPDK's own `librte_eal`, the same inside a root
/// file system made from the host's files. The newest ABI when several.
pub(super) fn driver_dir() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    for top in ["/usr/lib", "/usr/lib64", "/usr/local/lib"] {
        let arch = std::fs::read_dir(top)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join("dpdk"));
        for dpdk in std::iter::once(Path::new(top).join("dpdk")).chain(arch) {
            let pmds = std::fs::read_dir(&dpdk).into_iter().flatten().flatten();
            found.extend(pmds.map(|e| e.path()).filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("pmds-"))
            }));
        }
    }
    found.sort_by_key(|p| {
        abi(p).map(|a| {
            a.split('.')
                .map(|n| n.parse::<u32>().unwrap_or(0))
                .collect::<Vec<_>>()
        })
    });
    found.pop()
}

/// The ABI version of a driver directory (`pmds-23.0` → `23.0`).
pub(super) fn abi(dir: &Path) -> Option<String> {
    dir.file_name()?
        .to_str()?
        .strip_prefix("pmds-")
        .map(str::to_string)
}

/// `path` (absolute, as the container sees it) resolved inside `root`:
/// symbolic links are followed as the container would follow them, never
/// out of `root`. None when a component is missing.
pub(super) fn resolve(root: &Path, path: &Path) -> Option<PathBuf> {
    let mut at = PathBuf::from("/");
    let mut todo: Vec<PathBuf> = vec![path.to_path_buf()];
    let mut links = 0;
    while let Some(p) = todo.pop() {
        let mut comps: Vec<Component> = p.components().collect();
        comps.reverse();
        while let Some(c) = comps.pop() {
            match c {
                Component::RootDir => at = PathBuf::from("/"),
                Component::CurDir | Component::Prefix(_) => {}
                Component::ParentDir => {
                    at.pop();
                }
                Component::Normal(n) => {
                    let next = at.join(n);
                    let host = root.join(next.strip_prefix("/").ok()?);
                    let md = std::fs::symlink_metadata(&host).ok()?;
                    if md.file_type().is_symlink() {
                        links += 1;
                        if links > 40 {
                            return None;
                        }
                        let target = std::fs::read_link(&host).ok()?;
                        let rest: PathBuf = comps.iter().rev().collect();
                        todo.push(rest);
                        comps.clear();
                        todo.push(target);
                    } else {
                        at = next;
                    }
                }
            }
        }
    }
    Some(root.join(at.strip_prefix("/").ok()?))
}

/// Whether the root file system has DPDK's EAL library (its library
/// directories looked up inside it, never through a link out of it).
pub(super) fn has_eal(root: &Path) -> bool {
    LIB_DIRS.iter().any(|d| {
        resolve(root, &Path::new("/").join(d))
            .and_then(|p| std::fs::read_dir(p).ok())
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("librte_eal.so"))
    })
}

/// The plugins a DPDK application on a vecring link needs in EAL's driver
/// directory: (what it is, its library's name, what fails without it).
pub(super) const DRIVERS: &[(&str, &str, &str)] = &[
    (
        "the mempool driver",
        "librte_mempool_ring",
        "mbuf pools fail (\"Creation of mbuf pool for socket 0 failed: Invalid argument\")",
    ),
    (
        "the vecring driver",
        "librte_net_vecring",
        "--vdev=eth_vecring0,... finds no driver",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_resolve_inside_the_root() {
        let root = std::env::temp_dir().join(format!("vecring-resolve-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("run")).unwrap();
        std::fs::create_dir_all(root.join("var")).unwrap();
        std::os::unix::fs::symlink("../run", root.join("var/run")).unwrap();
        std::os::unix::fs::symlink("/run", root.join("abs")).unwrap();
        assert_eq!(
            resolve(&root, Path::new("/var/run")),
            Some(root.join("run"))
        );
        assert_eq!(resolve(&root, Path::new("/abs")), Some(root.join("run")));
        assert_eq!(resolve(&root, Path::new("/missing/x")), None);
        std::os::unix::fs::symlink("../../../../..", root.join("up")).unwrap();
        assert_eq!(resolve(&root, Path::new("/up/run")), Some(root.join("run")));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
