//! `vecring doctor --domain D --container NAME`: a running Docker or
//! Podman container against the domain: the domain directory mounted (and
//! where), its user as the host sees it against the link sockets the
//! master made (their owner, group and mode: what `--owner` gave), and
//! its LSM profile; then what a DPDK application in it needs
//! ([`super::dpdk_container`]).
//!
//! The container is found by asking the runtimes ([`super::inspect`]).
//! Its ids are read from its
//! init process (`/proc/<pid>/uid_map`, `gid_map`), files in it through
//! `/proc/<pid>/root` without following its links out
//! ([`super::rootfs::resolve`]). A container cannot be changed while it
//! runs, so the fixes are options to recreate it with (`docker rm -f`,
//! then `docker run` with them) or options of the master; every word is
//! quoted for the shell, and no name read from inside the container is in
//! them.

use super::idmap::{allows, IdMap, Identity};
use super::inspect::{find, Inspected};
use super::{dpdk_container, DoctorArgs, Level, Report};
use crate::escape::shell_quote;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

const CHECK: &str = "container";

pub(super) fn container(r: &mut Report, args: &DoctorArgs, domain: &str, name: &str) {
    if let Err(e) = vecring_core::name::validate("domain", domain) {
        r.add(Level::Fail, CHECK, e.to_string(), None);
        return;
    }
    let c = match find(name) {
        Ok(c) => c,
        Err(why) => {
            r.add(
                Level::Fail,
                CHECK,
                format!("no container '{name}' found ({why})"),
                Some("start it, or name a running container (docker ps, podman ps); for another daemon set DOCKER_HOST".into()),
            );
            return;
        }
    };
    let dir = args.run_dir.join(domain);
    if !c.running || c.pid <= 0 {
        r.add(
            Level::Fail,
            CHECK,
            format!(
                "{name} ({}) is not running: only a running container is checked",
                c.runtime
            ),
            Some(format!("{} start {}", c.runtime, shell_quote(name))),
        );
        mount(r, &c, &dir);
        return;
    }
    r.add(
        Level::Ok,
        CHECK,
        format!(
            "{name}: a running {} container (init pid {})",
            c.runtime, c.pid
        ),
        None,
    );
    mount(r, &c, &dir);
    let Some(id) = identity(r, &c) else {
        return;
    };
    access(r, args, &c, &id, domain, &dir);
    lsm(r, &c, &dir);
    dpdk_container::check(r, &c, &id);
}

/// The mount that makes the domain directory visible in the container,
/// and where.
fn mount(r: &mut Report, c: &Inspected, dir: &Path) {
    let name = &c.name;
    let volume = shell_quote(&format!("{0}:{0}:ro", dir.display()));
    let found = c
        .mounts
        .iter()
        .filter(|m| m.kind == "bind" && dir.starts_with(&m.source))
        .max_by_key(|m| m.source.components().count());
    let Some(m) = found else {
        r.add(
            Level::Fail,
            CHECK,
            format!(
                "{name} does not mount {}: its slave cannot reach the link (\"no master on ...\")",
                dir.display()
            ),
            Some(c.recreate(&format!("--volume {volume}"))),
        );
        return;
    };
    let seen = m
        .dest
        .join(dir.strip_prefix(&m.source).unwrap_or(Path::new("")));
    if seen != dir {
        let parent = seen.parent().unwrap_or(Path::new("/"));
        r.add(
            Level::Warn,
            CHECK,
            format!(
                "{name} mounts {} at {} (from {}): its slave finds the link only with --run-dir {} (driver: run_dir=)",
                dir.display(),
                seen.display(),
                m.source.display(),
                parent.display()
            ),
            Some(format!(
                "give the slave --run-dir {}, or {}",
                shell_quote(&parent.display().to_string()),
                c.recreate(&format!("--volume {volume}"))
            )),
        );
    } else {
        r.add(
            Level::Ok,
            CHECK,
            format!(
                "{name} mounts {} at the same path ({}{})",
                dir.display(),
                if m.rw { "read-write" } else { "read-only" },
                if m.options.is_empty() {
                    String::new()
                } else {
                    format!(", {}", m.options)
                }
            ),
            None,
        );
    }
}

/// The container's user inside and on the host: its `Config.User` through
/// the init process's id maps when numeric, else the init process's own
/// ids (which the host sees as host ids).
fn identity(r: &mut Report, c: &Inspected) -> Option<Identity> {
    let name = &c.name;
    let proc = PathBuf::from(format!("/proc/{}", c.pid));
    let read = |f: &str| std::fs::read_to_string(proc.join(f));
    let (Ok(um), Ok(gm), Ok(status)) = (read("uid_map"), read("gid_map"), read("status")) else {
        r.add(
            Level::Fail,
            CHECK,
            format!(
                "{name}: cannot read its init process {} (it ended?)",
                proc.display()
            ),
            None,
        );
        return None;
    };
    let map = IdMap::from_proc(&um, &gm);
    // The effective id of a /proc/<pid>/status line, as the host sees it.
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u32>().ok())
    };
    let (u, g) = match c.user.split_once(':') {
        Some((u, g)) => (u, Some(g)),
        None => (c.user.as_str(), None),
    };
    let numeric = |s: &str| {
        if s.is_empty() {
            Some(0)
        } else {
            s.parse::<u32>().ok()
        }
    };
    let host = match (numeric(u), g.map_or(Some(None), |g| numeric(g).map(Some))) {
        (Some(u), Some(g)) => map.host_uid(u).zip(match g {
            Some(g) => map.host_gid(g),
            // No group named: the user's primary group, as init has it.
            None => field("Gid:"),
        }),
        _ => field("Uid:").zip(field("Gid:")),
    };
    let Some(host) = host else {
        r.add(
            Level::Fail,
            CHECK,
            format!("{name}: its user '{}' is not mapped to a host id (uid_map: {})", c.user, um.split_whitespace().collect::<Vec<_>>().join(" ")),
            Some(c.recreate("--user UID:GID with ids its user namespace maps (vecring prepare --runtime ... prints them)")),
        );
        return None;
    };
    let inside = (
        map.inside_uid(host.0).unwrap_or(host.0),
        map.inside_gid(host.1).unwrap_or(host.1),
    );
    let ns = if um.split_whitespace().collect::<Vec<_>>() == ["0", "0", "4294967295"] {
        "no user namespace: its ids are the host's".to_string()
    } else {
        format!(
            "a user namespace, its root uid {} on the host",
            map.host_uid(0)
                .map_or("(unmapped)".into(), |u| u.to_string())
        )
    };
    r.add(
        Level::Ok,
        CHECK,
        format!(
            "{name} runs as {}:{} ({}), {}:{} on the host ({ns}); the master admits it with --owner {}:{} (driver: owner={}:{})",
            inside.0,
            inside.1,
            if c.user.is_empty() { "the image's default" } else { "--user" },
            host.0,
            host.1,
            host.0,
            host.1,
            host.0,
            host.1
        ),
        None,
    );
    Some(Identity { inside, host })
}

/// The domain directory and the link sockets in it against the
/// container's user on the host: what the master's `--owner` gave.
fn access(
    r: &mut Report,
    args: &DoctorArgs,
    c: &Inspected,
    id: &Identity,
    domain: &str,
    dir: &Path,
) {
    let name = &c.name;
    let (hu, hg) = id.host;
    let owner = format!("--owner {hu}:{hg} (driver: owner={hu}:{hg})");
    let md = match std::fs::symlink_metadata(dir) {
        Ok(md) if md.is_dir() => md,
        _ => {
            let run_dir = if args.run_dir == Path::new(vecring_core::link::DEFAULT_RUN_DIR) {
                String::new()
            } else {
                format!(" --run-dir {}", super::quoted(&args.run_dir))
            };
            r.add(
                Level::Warn,
                CHECK,
                format!("{} does not exist yet: no master has made it", dir.display()),
                Some(format!(
                    "vecring prepare --domain {domain} --owner {hu}:{hg}{run_dir}, and start the master with {owner}"
                )),
            );
            return;
        }
    };
    if !allows(&md, id.host, 1) {
        r.add(
            Level::Fail,
            CHECK,
            format!(
                "{} (uid {}, gid {}, mode {:04o}) is closed to {name}'s user ({hu}:{hg} on the host): its slave cannot reach the sockets",
                dir.display(),
                md.uid(),
                md.gid(),
                md.mode() & 0o7777
            ),
            Some(format!("start the domain's masters with {owner}: the directory becomes searchable (0711)")),
        );
        return;
    }
    // The links named (--link), else every socket in the directory;
    // a directory this user may only search (0711, not its own) cannot be
    // listed.
    let named = |link: &String| {
        vecring_core::name::validate("link", link).ok()?;
        let md = std::fs::symlink_metadata(dir.join(format!("{link}.sock"))).ok()?;
        md.file_type().is_socket().then(|| (link.clone(), md))
    };
    let listed = if args.link.is_empty() {
        std::fs::read_dir(dir).map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let link = e.file_name().to_str()?.strip_suffix(".sock")?.to_string();
                    vecring_core::name::validate("link", &link).ok()?;
                    named(&link)
                })
                .collect::<Vec<_>>()
        })
    } else {
        Ok(args.link.iter().filter_map(named).collect())
    };
    let mut sockets = match listed {
        Ok(s) => s,
        Err(e) => {
            r.add(
                Level::Note,
                CHECK,
                format!(
                    "cannot list {} ({e}): its link sockets are not compared with {name}'s user",
                    dir.display()
                ),
                Some(
                    "name them: --link NAME (repeatable), or run doctor as the directory's owner"
                        .into(),
                ),
            );
            return;
        }
    };
    sockets.sort_by(|a, b| a.0.cmp(&b.0));
    for link in &args.link {
        if !sockets.iter().any(|(l, _)| l == link) {
            r.add(
                Level::Fail,
                CHECK,
                format!(
                    "no socket {}/{link}.sock: its master is not running",
                    dir.display()
                ),
                Some(format!(
                    "start the master of {domain}/{} with {owner}",
                    shell_quote(link)
                )),
            );
        }
    }
    if sockets.is_empty() && args.link.is_empty() {
        r.add(
            Level::Note,
            CHECK,
            format!("no link in {} yet", dir.display()),
            Some(format!("start each master with {owner}")),
        );
    }
    for (link, md) in sockets {
        let path = dir.join(format!("{link}.sock"));
        let how = format!(
            "uid {}, gid {}, mode {:04o}",
            md.uid(),
            md.gid(),
            md.mode() & 0o777
        );
        if allows(&md, id.host, 2) {
            r.add(
                Level::Ok,
                CHECK,
                format!(
                    "{} ({how}) is open to {name}'s user ({hu}:{hg} on the host); its master admits it if its --owner or --allow-uid is uid {hu}",
                    path.display()
                ),
                None,
            );
        } else {
            r.add(
                Level::Fail,
                CHECK,
                format!(
                    "{} ({how}) is not open to {name}'s user ({hu}:{hg} on the host): its slave's connect fails (\"Permission denied\")",
                    path.display()
                ),
                Some(format!("restart the master of {domain}/{link} with {owner}")),
            );
        }
    }
}

/// The container's LSM profile: what confines it besides namespaces,
/// capabilities and seccomp, and whether the domain's mount is labelled
/// for it under SELinux.
fn lsm(r: &mut Report, c: &Inspected, dir: &Path) {
    let name = &c.name;
    let apparmor = std::fs::read_to_string("/sys/module/apparmor/parameters/enabled")
        .is_ok_and(|s| s.starts_with('Y'));
    let selinux = std::fs::read_to_string("/sys/fs/selinux/enforce").is_ok_and(|s| s.trim() == "1");
    let unconfined = c.recreate("nothing; remove --privileged and --security-opt apparmor=unconfined (or label=disable) from its options");
    if apparmor {
        if c.apparmor.is_empty() || c.apparmor == "unconfined" {
            r.add(
                Level::Warn,
                CHECK,
                format!("{name} runs without an AppArmor profile (unconfined): the link needs no exception from the runtime's default profile"),
                Some(unconfined.clone()),
            );
        } else {
            r.add(
                Level::Ok,
                CHECK,
                format!("{name}: AppArmor profile {} (the runtime's default allows what the slave does: connect to the socket, map the memory it is given)", c.apparmor),
                None,
            );
        }
    }
    if selinux {
        let labelled = c.mounts.iter().any(|m| {
            m.kind == "bind"
                && dir.starts_with(&m.source)
                && m.options.split(',').any(|o| o == "z" || o == "Z")
        });
        if c.selinux_label.is_empty() || c.selinux_label.contains("spc_t") {
            r.add(
                Level::Warn,
                CHECK,
                format!("{name} runs without an SELinux label of its own ({}): the link needs none removed", if c.selinux_label.is_empty() { "none" } else { &c.selinux_label }),
                Some(unconfined),
            );
        } else if !labelled {
            r.add(
                Level::Fail,
                CHECK,
                format!("{name} ({}) mounts {} without relabelling it (z): SELinux denies its slave the socket", c.selinux_label, dir.display()),
                Some(c.recreate(&format!("--volume {}", shell_quote(&format!("{0}:{0}:ro,z", dir.display()))))),
            );
        } else {
            r.add(
                Level::Ok,
                CHECK,
                format!(
                    "{name}: SELinux label {}, the domain's mount relabelled for it",
                    c.selinux_label
                ),
                None,
            );
        }
    }
    if !apparmor && !selinux {
        r.add(
            Level::Note,
            CHECK,
            format!("{name}: this host runs neither AppArmor nor SELinux, so no LSM profile confines the container (its profile: {}); the link needs none", if c.apparmor.is_empty() { "none" } else { &c.apparmor }),
            None,
        );
    }
}
