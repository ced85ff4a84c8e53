//! `vecring prepare`: makes a domain directory before either side starts,
//! so that a container that bind-mounts it can start first, and prints
//! what the container's runtime needs for it: LXC's configuration lines,
//! or Docker's and Podman's `run` options and the `--owner` to give the
//! master ([`crate::userns`]).
//!
//! The directory gets what the master gives it when it creates it: this
//! user's ownership (the master's; run it as the user the master runs as)
//! and the mode of [`vecring_core::internal::dirs::domain_mode`] (0711 with an owner,
//! 0710 otherwise), so that the master accepts it. With `--persist` it is
//! also declared to systemd-tmpfiles, to be made again at every boot
//! ([`crate::persist`]); `--forget` withdraws that.

use crate::escape::shell_quote;
use crate::userns::{host_id, user_named, user_with_uid, SubIds, User, Userns};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use vecring_core::internal::dirs::{domain_mode, prepare_domain};
use vecring_core::link::DEFAULT_SOCKET_MODE;

/// Options of `vecring prepare`.
#[derive(Args)]
pub struct PrepareArgs {
    /// Domain (typically the container's name).
    #[arg(long)]
    domain: String,
    /// Parent of the domain directories (an absolute path).
    #[arg(long, default_value = vecring_core::link::DEFAULT_RUN_DIR)]
    run_dir: PathBuf,
    /// The UID:GID the master will open the socket to (the container's root
    /// as the host sees it, for an unprivileged container); also prints
    /// the matching lxc.idmap lines.
    #[arg(long, value_parser = crate::parse_owner)]
    owner: Option<(u32, u32)>,
    /// The container runtime: lxc (configuration lines), docker or podman
    /// (`run` options, and the --owner to give the master).
    #[arg(long, value_enum, default_value_t = Runtime::Lxc)]
    runtime: Runtime,
    /// docker/podman: the UID:GID the slave runs as in the container
    /// (`--user`; default 1000:1000, with --keep-id the user's own).
    #[arg(long, value_parser = crate::parse_owner)]
    user: Option<(u32, u32)>,
    /// docker/podman: the runtime runs rootless, as USER (default: the user
    /// running prepare): the container's root is USER, its other ids
    /// USER's subordinate ids (/etc/subuid, /etc/subgid).
    #[arg(long, value_name = "USER", num_args = 0..=1, default_missing_value = "")]
    rootless: Option<String>,
    /// podman with --rootless: the container runs with --userns=keep-id
    /// (the user's own ids are the same inside).
    #[arg(long, requires = "rootless")]
    keep_id: bool,
    /// docker: dockerd runs with userns-remap for USER (default dockremap,
    /// the user of userns-remap=default).
    #[arg(long, value_name = "USER", num_args = 0..=1, default_missing_value = "dockremap")]
    userns_remap: Option<String>,
    /// Also write a systemd-tmpfiles entry (TMPFILES_DIR/vecring-DOMAIN.conf)
    /// that makes the run and domain directories again at every boot
    /// (/run is a tmpfs), with the owner and mode they have now.
    #[arg(long)]
    persist: bool,
    /// Remove the entry --persist wrote for DOMAIN, and nothing else (the
    /// directory stays until the next boot).
    #[arg(long, conflicts_with_all = ["persist", "owner", "runtime", "user", "rootless", "keep_id", "userns_remap"])]
    forget: bool,
    /// Where --persist writes, and --forget removes, the entry.
    #[arg(long, value_name = "TMPFILES_DIR", default_value = crate::persist::DEFAULT_TMPFILES_DIR)]
    tmpfiles_dir: PathBuf,
}

/// The runtimes `prepare` knows.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Runtime {
    /// LXC: configuration lines.
    Lxc,
    /// Docker: `docker run` options.
    Docker,
    /// Podman: `podman run` options.
    Podman,
}

impl Runtime {
    fn word(self) -> &'static str {
        match self {
            Runtime::Lxc => "lxc",
            Runtime::Docker => "docker",
            Runtime::Podman => "podman",
        }
    }
}

/// Creates (or checks) the domain directory and prints the LXC lines.
///
/// # Errors
/// A bad name or path, or a directory the master would refuse.
pub fn run(args: &PrepareArgs) -> Result<(), String> {
    vecring_core::name::validate("domain", &args.domain).map_err(|e| e.to_string())?;
    if args.forget {
        return crate::persist::forget(&args.tmpfiles_dir, &args.domain);
    }
    if !args.run_dir.is_absolute() {
        return Err(format!(
            "--run-dir {}: must be an absolute path",
            args.run_dir.display()
        ));
    }
    // Before anything is created: a run directory the entry cannot name.
    let persist_at = if args.persist {
        Some(crate::persist::tmpfiles_path(&args.run_dir)?)
    } else {
        None
    };
    let dir = args.run_dir.join(&args.domain);
    let container = match args.runtime {
        Runtime::Lxc => {
            let docker_only = [
                ("--user", args.user.is_some()),
                ("--rootless", args.rootless.is_some()),
                ("--userns-remap", args.userns_remap.is_some()),
            ];
            if let Some((opt, _)) = docker_only.iter().find(|(_, given)| *given) {
                return Err(format!(
                    "{opt} is for --runtime docker or podman (LXC's ids are its lxc.idmap: --owner)"
                ));
            }
            None
        }
        _ => Some(ContainerPlan::new(args, &dir)?),
    };
    let owner = container.as_ref().map_or(args.owner, |c| Some(c.owner));
    let mode = domain_mode(DEFAULT_SOCKET_MODE, owner);
    // Through descriptors (vecring_core::internal::dirs): a racing rename or symlink
    // in a writable run directory cannot make this chmod another path.
    if prepare_domain(&args.run_dir, &args.domain, mode).map_err(|e| e.to_string())? {
        log::info!(target: crate::LOG_TARGET, "created {}", dir.display());
    }
    let persisted = match &persist_at {
        Some(run_dir) => {
            let text = crate::persist::entry(&args.domain, run_dir)?;
            Some(crate::persist::write(
                &args.tmpfiles_dir,
                &args.domain,
                &text,
            )?)
        }
        None => None,
    };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if let Some(c) = container {
        c.print(&dir, mode, me);
    } else {
        print_lxc(args, &dir, mode, me);
    }
    if let Some(path) = persisted {
        println!(
            "# {} makes it again at every boot (systemd-tmpfiles); undo: vecring prepare --domain {} --forget{}",
            path.display(),
            args.domain,
            if args.tmpfiles_dir == Path::new(crate::persist::DEFAULT_TMPFILES_DIR) {
                String::new()
            } else {
                format!(" --tmpfiles-dir {}", shell_quote(&args.tmpfiles_dir.display().to_string()))
            }
        );
    }
    Ok(())
}

/// LXC's configuration lines for the domain directory `dir`.
fn print_lxc(args: &PrepareArgs, dir: &Path, mode: u32, me: u32) {
    println!(
        "# {} ready (mode {mode:04o}, uid {me}); LXC configuration:",
        dir.display()
    );
    let rel = dir.strip_prefix("/").unwrap_or(dir);
    println!(
        "lxc.mount.entry = {} {} none bind,create=dir 0 0",
        dir.display(),
        rel.display()
    );
    if let Some((uid, gid)) = args.owner {
        println!("lxc.idmap = u 0 {uid} 65536");
        println!("lxc.idmap = g 0 {gid} 65536");
    }
}

/// What a Docker or Podman container needs for a domain.
struct ContainerPlan {
    runtime: Runtime,
    /// How the runtime maps ids, in words.
    mode: String,
    /// The container's user (inside).
    user: (u32, u32),
    /// That user as the host sees it: the master's `--owner`.
    owner: (u32, u32),
    /// Options besides the mount and the user (`--userns=keep-id`).
    extra: &'static str,
    /// The bind mount's options.
    volume_opts: &'static str,
}

impl ContainerPlan {
    fn new(args: &PrepareArgs, dir: &Path) -> Result<ContainerPlan, String> {
        let runtime = args.runtime;
        if args.owner.is_some() {
            return Err(format!(
                "--owner is what prepare works out for --runtime {}: give --user (and --rootless or --userns-remap) instead",
                runtime.word()
            ));
        }
        if args.keep_id && runtime != Runtime::Podman {
            return Err(
                "--keep-id is podman's --userns=keep-id: use it with --runtime podman".into(),
            );
        }
        if args.userns_remap.is_some() && runtime != Runtime::Docker {
            return Err("--userns-remap is a dockerd setting: use it with --runtime docker (podman: --rootless)".into());
        }
        if args.userns_remap.is_some() && args.rootless.is_some() {
            return Err("--userns-remap and --rootless: a dockerd runs either rootless or with userns-remap, not both".into());
        }
        let text = dir.display().to_string();
        if text.contains([':', ',']) {
            return Err(format!(
                "{}: a path with ':' or ',' cannot be given to --volume; choose another --run-dir",
                crate::escape::printable(&text)
            ));
        }
        let (map_uid, map_gid, mode) = userns(args)?;
        let user = match (args.user, &map_uid) {
            (Some(u), _) => u,
            (None, Userns::KeepId { own, .. }) => (*own, own_gid(&map_gid)),
            (None, _) => (1000, 1000),
        };
        let owner = (
            host_id(&map_uid, user.0)
                .map_err(|e| format!("--user {}:{}: uid: {e}", user.0, user.1))?,
            host_id(&map_gid, user.1)
                .map_err(|e| format!("--user {}:{}: gid: {e}", user.0, user.1))?,
        );
        Ok(ContainerPlan {
            runtime,
            mode,
            user,
            owner,
            extra: if args.keep_id {
                " --userns=keep-id"
            } else {
                ""
            },
            // Read-only: the slave connects to the socket through it all
            // the same, and even a container's root with every capability
            // cannot change the directory. An enforcing SELinux labels it
            // for the container (shared: the master on the host and other
            // containers of the domain reach it too); elsewhere the files
            // stay as they are.
            volume_opts: if selinux_enforcing() { "ro,z" } else { "ro" },
        })
    }

    fn print(&self, dir: &Path, mode: u32, me: u32) {
        let ContainerPlan {
            user: (u, g),
            owner: (ou, og),
            ..
        } = *self;
        let d = dir.display();
        println!(
            "# {d} ready (mode {mode:04o}, uid {me}); {} run options ({}):",
            self.runtime.word(),
            self.mode
        );
        println!(
            "--volume {} --user {u}:{g}{}",
            shell_quote(&format!("{d}:{d}:{}", self.volume_opts)),
            self.extra
        );
        println!(
            "# the container's {u}:{g} is {ou}:{og} on the host; the master: --owner {ou}:{og} (driver: owner={ou}:{og})"
        );
    }
}

/// The maps of uids and gids the runtime uses, and their description.
fn userns(args: &PrepareArgs) -> Result<(Userns, Userns, String), String> {
    if let Some(name) = &args.userns_remap {
        let user = user_named(name).map_err(|e| {
            format!("--userns-remap {name}: {e} (dockerd makes dockremap when it first starts with userns-remap=default)")
        })?;
        let (su, sg) = subids(&user);
        if su.total() == 0 || sg.total() == 0 {
            return Err(format!(
                "--userns-remap {}: no subordinate ids for it in /etc/subuid and /etc/subgid, which dockerd needs: add a range (usermod --add-subuids 100000-165535 --add-subgids 100000-165535 {})",
                user.name, user.name
            ));
        }
        return Ok((
            Userns::Remap {
                user: user.name.clone(),
                sub: su,
            },
            Userns::Remap {
                user: user.name.clone(),
                sub: sg,
            },
            format!("dockerd with userns-remap={}", user.name),
        ));
    }
    let Some(name) = &args.rootless else {
        return Ok((Userns::Host, Userns::Host, "rootful".into()));
    };
    let user = if name.is_empty() {
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        if me == 0 {
            return Err(
                "--rootless as root: name the user who runs the containers (--rootless=USER)"
                    .into(),
            );
        }
        user_with_uid(me)?
    } else {
        user_named(name).map_err(|e| format!("--rootless {name}: {e}"))?
    };
    if user.uid == 0 {
        return Err("--rootless root: root's containers are rootful (leave out --rootless)".into());
    }
    let (su, sg) = subids(&user);
    let describe = format!(
        "rootless as {}{}",
        user.name,
        if args.keep_id {
            ", --userns=keep-id"
        } else {
            ""
        }
    );
    let (mu, mg) = if args.keep_id {
        (
            Userns::KeepId {
                user: user.name.clone(),
                own: user.uid,
                sub: su,
            },
            Userns::KeepId {
                user: user.name.clone(),
                own: user.gid,
                sub: sg,
            },
        )
    } else {
        (
            Userns::Rootless {
                user: user.name.clone(),
                own: user.uid,
                sub: su,
            },
            Userns::Rootless {
                user: user.name.clone(),
                own: user.gid,
                sub: sg,
            },
        )
    };
    Ok((mu, mg, describe))
}

fn subids(user: &User) -> (SubIds, SubIds) {
    (
        SubIds::read("/etc/subuid", &user.name, user.uid),
        SubIds::read("/etc/subgid", &user.name, user.uid),
    )
}

fn own_gid(map: &Userns) -> u32 {
    match map {
        Userns::KeepId { own, .. } | Userns::Rootless { own, .. } => *own,
        _ => 0,
    }
}

/// Whether SELinux is enforcing on this host (bind mounts then need a
/// label for the container).
fn selinux_enforcing() -> bool {
    std::fs::read_to_string("/sys/fs/selinux/enforce").is_ok_and(|s| s.trim() == "1")
}
