//! `vecring doctor --domain D --lxc NAME`: a container's configuration
//! against the domain (the mount entry, the id map, the domain directory),
//! then what a DPDK application in it needs ([`super::dpdk_lxc`]).

use super::idmap::IdMap;
use super::{dpdk_lxc, DoctorArgs, Level, Report};

pub(super) fn lxc(r: &mut Report, args: &DoctorArgs, domain: &str, name: &str) {
    if let Err(e) = vecring_core::name::validate("domain", domain) {
        r.add(Level::Fail, "lxc", e.to_string(), None);
        return;
    }
    let path = args.lxc_path.join(name).join("config");
    let dir = args.run_dir.join(domain);
    let target = dir.strip_prefix("/").unwrap_or(&dir).display().to_string();
    let mount = format!(
        "lxc.mount.entry = {} {target} none bind,create=dir 0 0",
        dir.display()
    );
    let config = match std::fs::read_to_string(&path) {
        Ok(c) => c,
        Err(e) => {
            r.add(
                Level::Fail,
                "lxc",
                format!(
                    "cannot read {}: {e} (is '{name}' a container here?)",
                    path.display()
                ),
                Some(format!("add to its config: {mount}")),
            );
            return;
        }
    };
    let has_mount = config.lines().any(|l| {
        let l = l.trim();
        l.starts_with("lxc.mount.entry")
            && l.split_once('=').is_some_and(|(_, v)| {
                v.split_whitespace().next() == Some(&dir.display().to_string())
            })
    });
    if has_mount {
        r.add(
            Level::Ok,
            "lxc",
            format!("{name}: mounts {}", dir.display()),
            None,
        );
    } else {
        r.add(
            Level::Fail,
            "lxc",
            format!(
                "{name}: its config does not mount {}: the container cannot reach the link",
                dir.display()
            ),
            Some(format!("add to {}: {mount}", path.display())),
        );
    }
    let map = IdMap::parse(&config);
    let root = map.root();
    match root {
        Some(uid) => r.add(
            Level::Ok,
            "lxc",
            format!(
                "{name} is unprivileged: its root is uid {uid} on the host; give the master --owner {uid}:{uid} (driver: owner={uid}:{uid}) so only it may attach"
            ),
            None,
        ),
        None => r.add(
            Level::Note,
            "lxc",
            format!("{name} has no lxc.idmap: a privileged container (its root is the host's root)"),
            Some("for an unprivileged one add: lxc.idmap = u 0 100000 65536 and lxc.idmap = g 0 100000 65536 (and root:100000:65536 in /etc/subuid and /etc/subgid)".into()),
        ),
    }
    let md = std::fs::symlink_metadata(&dir);
    if !matches!(&md, Ok(m) if m.is_dir()) {
        let owner = root.map_or_else(String::new, |uid| format!(" --owner {uid}:{uid}"));
        let run_dir = if args.run_dir == std::path::Path::new(vecring_core::link::DEFAULT_RUN_DIR) {
            String::new()
        } else {
            format!(" --run-dir {}", super::quoted(&args.run_dir))
        };
        r.add(
            Level::Warn,
            "lxc",
            format!(
                "{} does not exist yet: a container started before its master cannot mount it",
                dir.display()
            ),
            Some(format!(
                "vecring prepare --domain {domain}{owner}{run_dir} (or start the master first)"
            )),
        );
    }
    dpdk_lxc::check(r, args, name, &config, map);
}
