//! Fix lines that act on a container's root file system, written so that
//! pasting them as root on the host is safe whatever the container did.
//!
//! The container's root may own its root file system (as
//! `docs/dpdk-container.md` makes it): it chooses the names in it, and can
//! turn any directory into a link to a host path, also after doctor
//! looked. So a fix never carries a name read from there, and acts there
//! from the host only where nothing on its way is the container's: each
//! directory it passes or writes into is a real directory (no link) that
//! none of the container's uids can write. Anywhere else it acts from
//! inside the container, through `lxc-attach`, as the container's root
//! and in the container's own view, where its links cannot lead out and
//! its root has no more power than the container gives it. Every word is
//! quoted for the shell ([`crate::escape::shell_quote`]).

use super::idmap::IdMap;
use crate::escape::shell_quote;
use std::path::{Component, Path, PathBuf};

/// A container whose root file system is `root` on the host.
pub(super) struct Container<'a> {
    pub name: &'a str,
    pub lxc_path: &'a Path,
    pub root: &'a Path,
    pub map: IdMap,
}

impl Container<'_> {
    /// Whether a host command may pass through and write into `dir` (a
    /// path relative to the root): the root and each directory on the way
    /// that exists is a real directory none of the container's uids can
    /// write, so none of them can become a link. What is missing the
    /// command makes, as root.
    pub(super) fn host_may_act(&self, dir: &Path) -> bool {
        let Ok(md) = std::fs::metadata(self.root) else {
            return false;
        };
        if !md.is_dir() || self.map.may_write(&md) {
            return false;
        }
        let mut at = self.root.to_path_buf();
        for c in dir.components() {
            let Component::Normal(n) = c else {
                return false;
            };
            at.push(n);
            match std::fs::symlink_metadata(&at) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return true,
                Err(_) => return false,
                Ok(md) if !md.file_type().is_dir() || self.map.may_write(&md) => return false,
                Ok(_) => {}
            }
        }
        true
    }

    /// `rel` (relative to the root) as the host reaches it, quoted.
    pub(super) fn host_path(&self, rel: &Path) -> String {
        shell_quote(&self.root.join(rel).display().to_string())
    }

    /// `argv` run in the container as its root (`lxc-attach`, with none of
    /// the host's environment), quoted.
    pub(super) fn attach(&self, argv: &[&str]) -> String {
        let mut line = format!("lxc-attach -n {}", shell_quote(self.name));
        if self.lxc_path != Path::new(DEFAULT_LXC_PATH) {
            line += &format!(" -P {}", shell_quote(&self.lxc_path.display().to_string()));
        }
        line += " --clear-env --";
        for a in argv {
            line.push(' ');
            line += &shell_quote(a);
        }
        line
    }
}

/// Where LXC keeps its containers unless told otherwise.
pub(super) const DEFAULT_LXC_PATH: &str = "/var/lib/lxc";

/// `path` relative to `root` (`root/a/b` → `a/b`).
pub(super) fn relative(root: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(root).unwrap_or(path).to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attach_lines_are_quoted() {
        let c = Container {
            name: "a b",
            lxc_path: Path::new("/srv/lxc"),
            root: Path::new("/srv/lxc/a b/rootfs"),
            map: IdMap::default(),
        };
        assert_eq!(
            c.attach(&["sh", "-c", "mkdir -p /run"]),
            "lxc-attach -n 'a b' -P /srv/lxc --clear-env -- sh -c 'mkdir -p /run'"
        );
        assert_eq!(c.host_path(Path::new("run")), "'/srv/lxc/a b/rootfs/run'");
    }
}
