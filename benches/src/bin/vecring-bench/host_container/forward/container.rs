//! Where the far side of the forwarding benchmark runs: a real LXC
//! container (`lxc-execute`) that shares the host's root file system and
//! reaches the link only through its bind-mounted directory, as
//! `docs/lxc.md` describes; unprivileged (its root is uid 100000 on the
//! host) when the host maps that range, else privileged; and, only when
//! LXC is missing, new namespaces made with `unshare`. Or, asked for
//! (`--container docker`), a Docker container of an image holding the far
//! side's programs ([`super::image`]), run as `docs/containers.md` runs
//! one: no network, no capability, no new privileges, the link's
//! directory bound in.

use super::image::{docker, DOCKER};
use clap::ValueEnum;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the host's uid for an unprivileged container's root starts.
pub const MAPPED_ROOT: u32 = 100_000;

/// The kind of container asked for.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
pub enum Isolation {
    /// LXC, unprivileged when /etc/subuid and /etc/subgid map root to
    /// 100000..165535, else privileged; namespaces when LXC is missing.
    Auto,
    /// An unprivileged LXC container.
    Unprivileged,
    /// A privileged LXC container.
    Privileged,
    /// New mount, UTS, IPC, network and PID namespaces (no LXC).
    Namespaces,
    /// A Docker container (/usr/bin/docker, the daemon DOCKER_HOST names):
    /// --network none, --cap-drop ALL, no-new-privileges; DPDK far sides
    /// without hugepages (--no-huge).
    Docker,
}

/// A container set-up: its configuration file and what it is.
pub struct Container {
    pub kind: Isolation,
    conf: PathBuf,
    name: String,
    /// The bind-mounted directory (Docker's -v).
    shared: PathBuf,
    /// Docker's image.
    image: String,
}

/// Whether `file` (/etc/subuid or /etc/subgid) gives root the range an
/// unprivileged container's configuration maps.
fn maps_root(file: &str) -> bool {
    std::fs::read_to_string(file).is_ok_and(|t| {
        t.lines().any(|l| {
            let f: Vec<&str> = l.trim().split(':').collect();
            matches!(f.as_slice(), [u, start, count]
                if (*u == "root" || *u == "0")
                    && start.parse::<u32>() == Ok(MAPPED_ROOT)
                    && count.parse::<u32>().is_ok_and(|c| c >= 65536))
        })
    })
}

fn lxc_present() -> bool {
    Path::new("/usr/bin/lxc-execute").exists()
}

/// The kind `asked` resolves to here: `dpdk` far sides need hugepages,
/// which an unprivileged container cannot map, so Auto gives them a
/// privileged one.
///
/// # Errors
/// LXC asked for but missing; unprivileged asked for but not mapped.
pub fn resolve(asked: Isolation, dpdk: bool) -> Result<Isolation, String> {
    let mapped = maps_root("/etc/subuid") && maps_root("/etc/subgid");
    match asked {
        Isolation::Auto if !lxc_present() => Ok(Isolation::Namespaces),
        Isolation::Auto if mapped && !dpdk => Ok(Isolation::Unprivileged),
        Isolation::Auto => Ok(Isolation::Privileged),
        Isolation::Unprivileged | Isolation::Privileged if !lxc_present() => {
            Err("lxc-execute not found: install Debian's lxc (scripts/setup.sh does)".into())
        }
        Isolation::Docker if !Path::new(DOCKER).exists() => Err(format!(
            "{DOCKER} not found: install Debian's docker.io (scripts/setup.sh does)"
        )),
        Isolation::Unprivileged if !mapped => Err(format!(
            "an unprivileged container needs root:{MAPPED_ROOT}:65536 in /etc/subuid and /etc/subgid"
        )),
        k => Ok(k),
    }
}

impl Isolation {
    /// How the report names it.
    pub fn describe(self) -> &'static str {
        match self {
            Isolation::Auto => "auto",
            Isolation::Unprivileged => "an unprivileged LXC container (root = uid 100000)",
            Isolation::Privileged => "a privileged LXC container",
            Isolation::Namespaces => "new namespaces (LXC not installed)",
            Isolation::Docker => {
                "a Docker container (--network none, --cap-drop ALL, no-new-privileges)"
            }
        }
    }
}

impl Container {
    /// Writes the configuration of a container of `kind` named `name`
    /// into `scratch`, bind-mounting `shared` (a directory holding the
    /// link's socket) at the same path inside; a Docker container's is
    /// `image`.
    ///
    /// # Errors
    /// The file could not be written.
    pub fn new(
        kind: Isolation,
        name: &str,
        scratch: &Path,
        shared: &Path,
        image: &str,
    ) -> Result<Self, String> {
        let conf = scratch.join(format!("{name}.conf"));
        let inside = shared.strip_prefix("/").unwrap_or(shared).display();
        // The host's root file system (lxc.rootfs.path empty), no network
        // device, the host's /dev (lxc.autodev = 0: /dev/hugepages for a
        // DPDK far side).
        let mut c = format!(
            "lxc.uts.name = {name}\n\
             lxc.rootfs.path =\n\
             lxc.net.0.type = empty\n\
             lxc.console.path = none\n\
             lxc.mount.auto = proc:rw sys:rw\n\
             lxc.autodev = 0\n\
             lxc.mount.entry = {} {inside} none bind,create=dir 0 0\n",
            shared.display()
        );
        if kind == Isolation::Unprivileged {
            c += &format!(
                "lxc.idmap = u 0 {MAPPED_ROOT} 65536\nlxc.idmap = g 0 {MAPPED_ROOT} 65536\n"
            );
        }
        if !matches!(kind, Isolation::Namespaces | Isolation::Docker) {
            std::fs::write(&conf, c).map_err(|e| format!("{}: {e}", conf.display()))?;
        }
        Ok(Self {
            kind,
            conf,
            name: name.to_string(),
            shared: shared.to_path_buf(),
            image: image.to_string(),
        })
    }

    /// The path the container runs `program` (a path or a name in PATH)
    /// by: the host's, but for Docker, whose image has each program in
    /// /bin.
    pub fn inside(&self, program: &str) -> String {
        match self.kind {
            Isolation::Docker => {
                let name = Path::new(program)
                    .file_name()
                    .map_or(program.into(), |n| n.to_string_lossy());
                format!("/bin/{name}")
            }
            _ => program.to_string(),
        }
    }

    /// A command running `program args` inside the container.
    pub fn command(&self, program: &Path) -> Command {
        match self.kind {
            Isolation::Docker => {
                let shared = self.shared.display();
                let mut c = Command::new(DOCKER);
                c.args(["run", "--rm", "-i", "--name", &self.name])
                    .args(["--network", "none", "--cap-drop", "ALL"])
                    .args(["--security-opt", "no-new-privileges"])
                    // The client passes the output on; the daemon keeps
                    // no log of it.
                    .args(["--log-driver", "none"])
                    .arg("-v")
                    .arg(format!("{shared}:{shared}"))
                    .arg(&self.image)
                    .arg(self.inside(&program.to_string_lossy()));
                c
            }
            Isolation::Namespaces => {
                let mut c = Command::new("unshare");
                c.args([
                    "--mount", "--uts", "--ipc", "--net", "--pid", "--fork", "--",
                ])
                .arg(program);
                c
            }
            _ => {
                let mut c = Command::new("lxc-execute");
                c.args(["-n", &self.name, "-f"])
                    .arg(&self.conf)
                    .arg("--")
                    .arg(program);
                c
            }
        }
    }
}

impl Drop for Container {
    /// A Docker far side whose client was killed leaves its container
    /// running: it goes with the set-up.
    fn drop(&mut self) {
        if self.kind == Isolation::Docker {
            let _ = docker(&["rm", "-f", &self.name]);
        }
    }
}

/// A scratch directory the container's root can reach (mode 0755), with a
/// copy of the running harness, `vecring-bench`, in it (an unprivileged
/// container's root may not reach the build tree). Copied by `cp`, so
/// that no write descriptor of it is open in this process when a child
/// runs it.
///
/// # Errors
/// The directory or the copy could not be made.
pub fn scratch_with_tool(dir: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let tool = dir.join("vecring-bench");
    let ok = Command::new("cp")
        .arg(&exe)
        .arg(&tool)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return Err(format!(
            "cannot copy {} to {}",
            exe.display(),
            tool.display()
        ));
    }
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("{}: {e}", tool.display()))?;
    Ok(tool)
}
