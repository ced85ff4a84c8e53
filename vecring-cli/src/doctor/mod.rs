//! `vecring doctor`: checks the host for what vecring links need and says,
//! one line per finding, what is wrong and what to do. Exits non-zero when
//! something would stop a link from working.

use crate::escape::{printable, shell_quote};
use clap::{ArgGroup, Args};
use serde_json::json;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

mod container;
mod dpdk_container;
mod dpdk_lxc;
mod fix;
mod idmap;
mod inspect;
mod lxc;
mod rootfs;

/// Options of `vecring doctor`.
#[derive(Args)]
#[command(group(ArgGroup::new("target").args(["lxc", "container"])))]
pub struct DoctorArgs {
    /// Parent of the domain directories.
    #[arg(long, default_value = vecring_core::link::DEFAULT_RUN_DIR)]
    run_dir: PathBuf,
    /// With --lxc or --container: the domain the container's links live in.
    #[arg(long, requires = "target")]
    domain: Option<String>,
    /// Check the LXC container NAME's configuration for what the domain
    /// needs (mount entry, id map) and print the lines it lacks.
    #[arg(long, requires = "domain", value_name = "NAME")]
    lxc: Option<String>,
    /// Check the running Docker or Podman container NAME (found by asking
    /// docker, then podman) for what the domain needs: the mount, its
    /// user against the link sockets, its LSM profile, and for a DPDK
    /// image the runtime directory, drivers and hugepages.
    #[arg(long, requires = "domain", value_name = "NAME")]
    container: Option<String>,
    /// With --container: the links to compare with its user (repeatable;
    /// default: every socket in the domain directory, which a user other
    /// than its owner cannot list).
    #[arg(long, requires = "container", value_name = "NAME")]
    link: Vec<String>,
    /// Where LXC keeps its containers (as lxc-* -P).
    #[arg(long, default_value = fix::DEFAULT_LXC_PATH)]
    lxc_path: PathBuf,
    /// Print one JSON document (schema "vecring-doctor", version 1).
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    Ok,
    Note,
    Warn,
    /// Something that stops a link from working.
    Fail,
}

impl Level {
    fn word(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Note => "note",
            Level::Warn => "warn",
            Level::Fail => "FAIL",
        }
    }
}

struct Finding {
    level: Level,
    check: &'static str,
    what: String,
    fix: Option<String>,
}

#[derive(Default)]
struct Report(Vec<Finding>);

impl Report {
    fn add(&mut self, level: Level, check: &'static str, what: String, fix: Option<String>) {
        self.0.push(Finding {
            level,
            check,
            what,
            fix,
        });
    }
}

/// A path as one word for the shell, for a fix line.
fn quoted(path: &Path) -> String {
    shell_quote(&path.display().to_string())
}

fn read_num(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn hugepages(r: &mut Report) {
    let base = Path::new("/sys/kernel/mm/hugepages");
    let mounted = std::fs::read_to_string("/proc/mounts")
        .map(|m| {
            m.lines()
                .any(|l| l.split_whitespace().nth(2) == Some("hugetlbfs"))
        })
        .unwrap_or(false);
    let two = base.join("hugepages-2048kB");
    match (read_num(&two.join("nr_hugepages")), read_num(&two.join("free_hugepages"))) {
        (Some(0), _) | (None, _) => r.add(
            Level::Fail,
            "hugepages",
            "no 2 MiB hugepages reserved: vecring falls back to 4 KiB pages (slower; hugepages=require fails) and DPDK applications cannot start".into(),
            Some("echo 1024 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages (or vm.nr_hugepages in sysctl.conf)".into()),
        ),
        (Some(total), Some(free)) if free < 3 => r.add(
            Level::Warn,
            "hugepages",
            format!("2 MiB hugepages: {free} free of {total}; a link with the default geometry needs 3"),
            Some("reserve more: echo N > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages".into()),
        ),
        (Some(total), free) => r.add(
            Level::Ok,
            "hugepages",
            format!("2 MiB hugepages: {} free of {total}", free.unwrap_or(0)),
            None,
        ),
    }
    let one = base.join("hugepages-1048576kB");
    if let (Some(total), Some(free)) = (
        read_num(&one.join("nr_hugepages")),
        read_num(&one.join("free_hugepages")),
    ) {
        r.add(
            Level::Note,
            "hugepages",
            format!("1 GiB hugepages: {free} free of {total} (vecring uses 2 MiB pages; DPDK may use these)"),
            None,
        );
    }
    if mounted {
        r.add(Level::Ok, "hugepages", "hugetlbfs is mounted".into(), None);
    } else {
        r.add(
            Level::Warn,
            "hugepages",
            "no hugetlbfs mounted: vecring does not need one (it uses memfds), but DPDK's EAL does"
                .into(),
            Some("mount -t hugetlbfs nodev /dev/hugepages".into()),
        );
    }
}

fn numa(r: &mut Report) {
    let mut nodes: Vec<(u32, Option<u64>)> = std::fs::read_dir("/sys/devices/system/node")
        .map(|d| {
            d.filter_map(|e| {
                let name = e.ok()?.file_name().to_string_lossy().into_owned();
                let n: u32 = name.strip_prefix("node")?.parse().ok()?;
                let free = read_num(Path::new(&format!(
                    "/sys/devices/system/node/node{n}/hugepages/hugepages-2048kB/free_hugepages"
                )));
                Some((n, free))
            })
            .collect()
        })
        .unwrap_or_default();
    nodes.sort_unstable();
    let list = nodes
        .iter()
        .map(|(n, f)| format!("node {n} ({} free 2 MiB pages)", f.unwrap_or(0)))
        .collect::<Vec<_>>()
        .join(", ");
    r.add(
        Level::Ok,
        "numa",
        format!(
            "{} NUMA node(s): {list}; a master's link memory goes to node N with socket=N (--socket N), otherwise where the master runs",
            nodes.len().max(1)
        ),
        None,
    );
}

fn run_dir(r: &mut Report, dir: &Path) {
    let md = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            r.add(
                Level::Ok,
                "run-dir",
                format!(
                    "{} does not exist yet; the first master creates it (0755)",
                    dir.display()
                ),
                None,
            );
            return;
        }
        Err(e) => {
            r.add(
                Level::Fail,
                "run-dir",
                format!("cannot inspect {}: {e}", dir.display()),
                None,
            );
            return;
        }
    };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if md.file_type().is_symlink() || !md.is_dir() {
        r.add(
            Level::Fail,
            "run-dir",
            format!(
                "{} is not a directory (or is a symlink): masters refuse it",
                dir.display()
            ),
            Some(format!("rm {}; the first master recreates it", quoted(dir))),
        );
    } else if md.uid() != me && md.uid() != 0 {
        r.add(
            Level::Fail,
            "run-dir",
            format!(
                "{} is owned by uid {}: masters (uid {me}) refuse it",
                dir.display(),
                md.uid()
            ),
            Some(format!("chown -h root: {}", quoted(dir))),
        );
    } else if md.mode() & 0o022 != 0 {
        r.add(
            Level::Fail,
            "run-dir",
            format!(
                "{} is writable by group or others (mode {:04o}): masters and slaves refuse it",
                dir.display(),
                md.mode() & 0o7777
            ),
            Some(format!("chmod 0755 {}", quoted(dir))),
        );
    } else {
        r.add(
            Level::Ok,
            "run-dir",
            format!(
                "{} (uid {}, mode {:04o})",
                dir.display(),
                md.uid(),
                md.mode() & 0o7777
            ),
            None,
        );
    }
    // Leftovers of masters that died, and entries others planted.
    let out =
        std::process::Command::new(std::env::current_exe().unwrap_or_else(|_| "vecring".into()))
            .args(["list", "--json", "--run-dir"])
            .arg(dir)
            .output();
    let Ok(out) = out else { return };
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&out.stdout) else {
        return;
    };
    for l in v["links"].as_array().into_iter().flatten() {
        if l["state"] == "stale" {
            let sock = dir
                .join(l["domain"].as_str().unwrap_or("?"))
                .join(format!("{}.sock", l["link"].as_str().unwrap_or("?")));
            r.add(
                Level::Warn,
                "stale",
                format!(
                    "{}: no master listens (it died); the next master replaces it",
                    sock.display()
                ),
                Some(format!("rm {}", quoted(&sock))),
            );
        }
    }
    for p in v["problems"].as_array().into_iter().flatten() {
        // A lock or a half-made socket a dead master left is harmless (the
        // next master takes or removes it): a note, as `list` calls it;
        // anything else is not vecring's.
        let harmless = p["problem"].as_str().is_some_and(|s| {
            s.starts_with("lock without a socket")
                || s.starts_with("socket a master was setting up")
        });
        r.add(
            if harmless { Level::Note } else { Level::Warn },
            "run-dir",
            format!(
                "{}: {}",
                p["path"].as_str().unwrap_or("?"),
                p["problem"].as_str().unwrap_or("?")
            ),
            None,
        );
    }
}

fn command_output(cmd: &str, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new(cmd).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A world-writable directory on the way to `path`, which makes EAL refuse
/// to load a plugin from it.
fn world_writable_ancestor(path: &Path) -> Option<PathBuf> {
    path.ancestors().skip(1).find_map(|a| {
        let md = std::fs::metadata(a).ok()?;
        (md.mode() & 0o002 != 0).then(|| a.to_path_buf())
    })
}

/// DPDK's driver directories (`LIBDIR/dpdk/pmds-ABI`, e.g.
/// /usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0): EAL loads every driver in
/// them by itself at start. Their DPDK's runtime is installed; its
/// development files (libdpdk.pc) may not be.
fn driver_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for pattern_dir in ["/usr/lib", "/usr/local/lib", "/usr/lib64"] {
        let Ok(entries) = std::fs::read_dir(pattern_dir) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(pmds) = std::fs::read_dir(e.path().join("dpdk")) else {
                continue;
            };
            dirs.extend(pmds.flatten().map(|p| p.path()).filter(|p| {
                p.is_dir()
                    && p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("pmds-"))
            }));
        }
    }
    dirs.sort();
    dirs
}

fn dpdk(r: &mut Report) {
    let dirs = driver_dirs();
    match command_output("pkg-config", &["--modversion", "libdpdk"]) {
        Some(v) => r.add(
            Level::Ok,
            "dpdk",
            format!("DPDK {v} (pkg-config libdpdk)"),
            None,
        ),
        // A host with DPDK's runtime and applications only, as a package
        // of the driver needs.
        None if !dirs.is_empty() => r.add(
            Level::Ok,
            "dpdk",
            format!(
                "DPDK's runtime, driver directory {} (no libdpdk.pc: its development files are only needed to build the driver)",
                dirs.iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None,
        ),
        None => {
            r.add(
                Level::Note,
                "dpdk",
                "DPDK not found (pkg-config libdpdk, LIBDIR/dpdk/pmds-*): only needed for the DPDK driver".into(),
                Some("apt-get install dpdk (and dpdk-dev libdpdk-dev to build the driver)".into()),
            );
            return;
        }
    }
    let mut found: Vec<(PathBuf, bool)> = dirs
        .iter()
        .map(|d| d.join("librte_net_vecring.so"))
        .filter(|so| so.exists())
        .map(|so| (so, true))
        .collect();
    let local = PathBuf::from("/usr/local/lib/vecring/librte_net_vecring.so");
    if local.exists() {
        found.push((local, false));
    }
    if found.is_empty() {
        r.add(
            Level::Note,
            "driver",
            "librte_net_vecring.so is not installed where EAL loads drivers by itself".into(),
            Some("install the package librte-net-vecring23 (scripts/deb.sh builds it), or run scripts/build-pmd.sh /usr (from a vecring checkout): it builds the driver and installs it into DPDK's driver directory, and as /usr/local/lib/vecring/librte_net_vecring.so for -d".into()),
        );
    }
    // A copy in DPDK's driver directory is loaded at every EAL start; a
    // different file given with -d would be a second copy of the driver in
    // the same process.
    let same_file = |a: &PathBuf, b: &PathBuf| {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
            _ => false,
        }
    };
    for (local, _) in found.iter().filter(|(_, auto)| !auto) {
        for (pmd, _) in found.iter().filter(|(_, auto)| *auto) {
            if !same_file(local, pmd) {
                r.add(
                    Level::Warn,
                    "driver",
                    format!(
                        "{} and {} are two different files: an application given -d {} loads the driver twice",
                        local.display(),
                        pmd.display(),
                        local.display()
                    ),
                    Some("scripts/build-pmd.sh /usr (it makes the first a link to the second)".into()),
                );
            }
        }
    }
    for (so, auto) in found {
        match world_writable_ancestor(&so) {
            Some(bad) => r.add(
                Level::Fail,
                "driver",
                format!(
                    "{}: EAL refuses it, {} is world-writable",
                    so.display(),
                    bad.display()
                ),
                Some(format!(
                    "install it under a directory nobody else can write, or chmod o-w {}",
                    quoted(&bad)
                )),
            ),
            None => r.add(
                Level::Ok,
                "driver",
                format!(
                    "{}{}",
                    so.display(),
                    if auto {
                        " (loaded by EAL automatically)"
                    } else {
                        " (load it with -d)"
                    }
                ),
                None,
            ),
        }
    }
}

/// `vecring doctor`.
pub fn doctor(args: &DoctorArgs) -> Result<bool, String> {
    let mut r = Report::default();
    hugepages(&mut r);
    numa(&mut r);
    run_dir(&mut r, &args.run_dir);
    dpdk(&mut r);
    if let (Some(domain), Some(name)) = (&args.domain, &args.lxc) {
        lxc::lxc(&mut r, args, domain, name);
    }
    if let (Some(domain), Some(name)) = (&args.domain, &args.container) {
        container::container(&mut r, args, domain, name);
    }
    let healthy = r.0.iter().all(|f| f.level != Level::Fail);
    if args.json {
        let doc = json!({
            "schema": "vecring-doctor",
            "version": crate::ops::JSON_VERSION,
            "ok": healthy,
            "findings": r.0.iter().map(|f| json!({
                "level": f.level.word().to_lowercase(),
                "check": f.check,
                "finding": f.what,
                "fix": f.fix,
            })).collect::<Vec<_>>(),
        });
        println!("{doc}");
    } else {
        for f in &r.0 {
            // Paths and names in these lines may be planted: escaped.
            println!(
                "{:<4} {:<9} {}",
                f.level.word(),
                f.check,
                printable(&f.what)
            );
            if let Some(fix) = &f.fix {
                println!("{:<14} fix: {}", "", printable(fix));
            }
        }
        println!(
            "{}",
            if healthy {
                "vecring doctor: nothing stops a link here"
            } else {
                "vecring doctor: something above (FAIL) stops a link from working"
            }
        );
    }
    Ok(healthy)
}
