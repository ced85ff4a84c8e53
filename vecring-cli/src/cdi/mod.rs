//! `vecring cdi`: devices of the Container Device Interface (CDI) that give
//! a container a vecring domain without a `-v` flag: `podman run --device
//! vecring.dev/link=pd-eth0 IMAGE` (and any runtime that reads CDI specs).
//!
//! A device's container edits are the bind mount of the domain directory
//! (read-only, at the path it has on the host, as `vecring prepare` makes
//! it) and the environment the application reads: `VECRING_DOMAIN`,
//! `VECRING_RUN_DIR` and, for a device of one link, `VECRING_LINK`; the
//! tool's link options default to them, so the image needs no
//! per-container command line. In network-namespace mode (`--netns`)
//! nothing is mounted and `VECRING_NETNS=self` replaces the run
//! directory: the host's master listens in the container's namespace. A device per link (`--link`, named
//! `<domain>-<link>`) suits a container of one link; a device per domain
//! (no `--link`, named `<domain>`) one that names its own links.
//!
//! The spec ([`spec`]) is one JSON file of kind `vecring.dev/link`,
//! `/var/run/cdi/vecring.json` by default: the dynamic directory, on the
//! same tmpfs as `/run/vecring`, so that spec and domain directory are gone
//! together at a reboot (a static spec in `/etc/cdi` names a directory that
//! `vecring prepare --persist` makes again). `write` merges into it and
//! `remove` takes out ([`file`]: under a lock, replaced at once).

use clap::{Args, Subcommand};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

mod file;
mod spec;

use spec::{Device, Mode, KIND};

/// Where `write` and `remove` work by default.
pub const DEFAULT_SPEC: &str = "/var/run/cdi/vecring.json";
/// The directories CDI runtimes read (Podman 4: these two, not
/// configurable), in the order they read them: a device in the later one
/// wins.
pub const SPEC_DIRS: [&str; 2] = ["/etc/cdi", "/var/run/cdi"];
/// Version of the JSON document `list --json` prints.
pub const JSON_VERSION: u32 = 1;

/// Options of `vecring cdi`.
#[derive(Args)]
pub struct CdiArgs {
    #[command(subcommand)]
    command: CdiCommand,
}

#[derive(Subcommand)]
enum CdiCommand {
    /// Write the devices of a domain or of its links into a spec file
    ///
    /// Write the device of DOMAIN (named DOMAIN), or with --link one device
    /// per link (named DOMAIN-LINK), into the spec file: each gives a
    /// container the domain directory (bound read-only at the same path)
    /// and VECRING_DOMAIN, VECRING_RUN_DIR and, per link, VECRING_LINK;
    /// with --netns no directory and VECRING_NETNS=self instead.
    /// Devices of other names in the file stay; one of the same name is
    /// replaced. Then `podman run --device vecring.dev/link=NAME`.
    Write(WriteArgs),
    /// Remove a domain's devices (or those of some of its links)
    ///
    /// Remove every device of DOMAIN from the spec file, or with --link
    /// those of these links; the file goes when no device is left.
    Remove(RemoveArgs),
    /// List the vecring devices of the CDI spec directories
    ///
    /// List the vecring devices that the spec directories (/etc/cdi and
    /// /var/run/cdi) define: name, domain, link, the domain directory
    /// (and whether it exists: a container with the device does not start
    /// without it), and the spec file.
    List(ListArgs),
}

/// Options of `vecring cdi write`.
#[derive(Args)]
struct WriteArgs {
    /// The domain.
    #[arg(long)]
    domain: String,
    /// A device for this link of the domain (repeatable; none: one device
    /// for the whole domain).
    #[arg(long)]
    link: Vec<String>,
    /// Parent of the domain directories (an absolute path).
    #[arg(long, default_value = vecring_core::link::DEFAULT_RUN_DIR)]
    run_dir: PathBuf,
    /// Network-namespace mode: no directory mounted; the device sets
    /// VECRING_NETNS=self, and the link meets in the container's network
    /// namespace, where the host's master listens (--netns
    /// /proc/PID/ns/net).
    #[arg(long, conflicts_with = "run_dir")]
    netns: bool,
    /// The spec file (its name ending in .json; /etc/cdi/NAME.json for a
    /// spec that outlives a reboot).
    #[arg(long, value_name = "PATH", default_value = DEFAULT_SPEC)]
    out: PathBuf,
}

/// Options of `vecring cdi remove`.
#[derive(Args)]
struct RemoveArgs {
    /// The domain.
    #[arg(long)]
    domain: String,
    /// Only the device of this link (repeatable; none: every device of the
    /// domain).
    #[arg(long)]
    link: Vec<String>,
    /// The spec file.
    #[arg(long, value_name = "PATH", default_value = DEFAULT_SPEC)]
    out: PathBuf,
}

/// Options of `vecring cdi list`.
#[derive(Args)]
struct ListArgs {
    /// A spec directory to read (repeatable; default /etc/cdi and
    /// /var/run/cdi).
    #[arg(long, value_name = "DIR")]
    spec_dir: Vec<PathBuf>,
    /// Print one JSON document (schema "vecring-cdi-list", version 1)
    /// instead of the table.
    #[arg(long)]
    json: bool,
}

/// Runs `vecring cdi ...`.
///
/// # Errors
/// A bad name or path, a spec file that is not vecring's kind, or the call
/// that failed.
pub fn run(args: &CdiArgs) -> Result<(), String> {
    match &args.command {
        CdiCommand::Write(a) => write(a),
        CdiCommand::Remove(a) => remove(a),
        CdiCommand::List(a) => list(a),
    }
}

/// Checks the domain's and the links' names.
fn check_names(domain: &str, links: &[String]) -> Result<(), String> {
    vecring_core::name::validate("domain", domain).map_err(|e| e.to_string())?;
    for l in links {
        vecring_core::name::validate("link", l).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn write(args: &WriteArgs) -> Result<(), String> {
    check_names(&args.domain, &args.link)?;
    let shown = crate::escape::printable(&args.run_dir.to_string_lossy());
    if !args.run_dir.is_absolute() {
        return Err(format!("--run-dir {shown}: must be an absolute path"));
    }
    if args
        .run_dir
        .components()
        .any(|c| matches!(c, Component::CurDir | Component::ParentDir))
    {
        return Err(format!(
            "--run-dir {shown}: give it without . or .. components (it is the mount's path in the container too)"
        ));
    }
    let mode = if args.netns {
        Mode::Netns
    } else {
        Mode::Directory(args.run_dir.clone())
    };
    let devices: Vec<Device> = if args.link.is_empty() {
        vec![Device {
            domain: args.domain.clone(),
            link: None,
            mode,
        }]
    } else {
        args.link
            .iter()
            .map(|l| Device {
                domain: args.domain.clone(),
                link: Some(l.clone()),
                mode: mode.clone(),
            })
            .collect()
    };
    // Before anything is made.
    for d in &devices {
        d.check_name()?;
    }
    let locked = file::Locked::open(&args.out, true)?
        .ok_or_else(|| format!("{}: no directory", args.out.display()))?;
    let doc = match locked.read()? {
        Some(mut doc) => {
            spec::merge(&mut doc, &devices)
                .map_err(|e| format!("{}: {e}; left as it is", args.out.display()))?;
            doc
        }
        None => spec::new_spec(&devices)?,
    };
    locked.write(&doc)?;
    let dir = args.run_dir.join(&args.domain);
    if !args.netns && !dir.is_dir() {
        log::warn!(
            target: crate::LOG_TARGET,
            "{} does not exist yet: a container with the device does not start until it does (vecring prepare --domain {}{})",
            dir.display(),
            args.domain,
            if args.run_dir == Path::new(vecring_core::link::DEFAULT_RUN_DIR) {
                String::new()
            } else {
                format!(" --run-dir {shown}")
            }
        );
    }
    println!(
        "# {}: {} device{} of kind {KIND} written; a container takes one with:",
        args.out.display(),
        devices.len(),
        if devices.len() == 1 { "" } else { "s" }
    );
    for d in &devices {
        println!("--device {}", d.qualified());
    }
    Ok(())
}

fn remove(args: &RemoveArgs) -> Result<(), String> {
    check_names(&args.domain, &args.link)?;
    let what = if args.link.is_empty() {
        format!("domain {}", args.domain)
    } else {
        format!("link {}/{}", args.domain, args.link.join(","))
    };
    let absent = || {
        println!(
            "# {} does not exist: no device of {what} to remove",
            args.out.display()
        );
        Ok(())
    };
    let Some(locked) = file::Locked::open(&args.out, false)? else {
        return absent();
    };
    let Some(mut doc) = locked.read()? else {
        return absent();
    };
    let gone = spec::remove(&mut doc, &args.domain, &args.link)
        .map_err(|e| format!("{}: {e}; left as it is", args.out.display()))?;
    if gone.is_empty() {
        println!("# {}: no device of {what}", args.out.display());
        return Ok(());
    }
    let left = spec::devices_of(&mut doc)?.len();
    if left == 0 {
        locked.delete()?;
    } else {
        locked.write(&doc)?;
    }
    for name in &gone {
        println!("# removed {KIND}={name}");
    }
    if left == 0 {
        println!("# {} removed: no device was left in it", args.out.display());
    }
    Ok(())
}

/// A vecring device found in a spec directory.
struct Found {
    name: String,
    device: Device,
    spec: PathBuf,
}

/// Every vecring device of the spec files in `dirs` (`*.json`, in name
/// order), and what could not be read.
fn scan(dirs: &[PathBuf]) -> (Vec<Found>, Vec<(PathBuf, String)>) {
    let mut found = Vec::new();
    let mut problems = Vec::new();
    for dir in dirs {
        let mut paths: Vec<PathBuf> = match std::fs::read_dir(dir) {
            Ok(rd) => rd
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                problems.push((dir.clone(), e.to_string()));
                continue;
            }
        };
        paths.sort();
        for path in paths {
            let doc: Value = match std::fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|b| serde_json::from_slice(&b).map_err(|e| format!("not JSON: {e}")))
            {
                Ok(d) => d,
                Err(e) => {
                    problems.push((path, e));
                    continue;
                }
            };
            if doc.get("kind").and_then(Value::as_str) != Some(KIND) {
                continue;
            }
            for entry in doc["devices"].as_array().into_iter().flatten() {
                let name = entry["name"].as_str().unwrap_or_default().to_string();
                match Device::from_json(entry) {
                    Some(device) => found.push(Found {
                        name,
                        device,
                        spec: path.clone(),
                    }),
                    None => problems.push((
                        path.clone(),
                        format!("device '{name}' is not vecring's (no VECRING_DOMAIN, and VECRING_RUN_DIR or VECRING_NETNS, in its env)"),
                    )),
                }
            }
        }
    }
    let mut first: HashMap<&str, &Path> = HashMap::new();
    for f in &found {
        if let Some(other) = first.insert(&f.name, &f.spec) {
            problems.push((
                f.spec.clone(),
                format!(
                    "{KIND}={} is defined in {} too: a runtime takes the one of the later directory (/var/run/cdi over /etc/cdi) and refuses both when they share one",
                    f.name,
                    other.display()
                ),
            ));
        }
    }
    (found, problems)
}

fn list(args: &ListArgs) -> Result<(), String> {
    let dirs: Vec<PathBuf> = if args.spec_dir.is_empty() {
        SPEC_DIRS.iter().map(PathBuf::from).collect()
    } else {
        args.spec_dir.clone()
    };
    let (found, problems) = scan(&dirs);
    let exists = |d: &Device| d.domain_dir().is_some_and(|p| p.is_dir());
    if args.json {
        let devices: Vec<Value> = found
            .iter()
            .map(|f| {
                let (mode, run) = match &f.device.mode {
                    Mode::Directory(run) => ("directory", Some(run.display().to_string())),
                    Mode::Netns => ("netns", None),
                };
                json!({
                    "device": format!("{KIND}={}", f.name),
                    "name": f.name,
                    "domain": f.device.domain,
                    "link": f.device.link,
                    "mode": mode,
                    "run_dir": run,
                    "domain_dir": f.device.domain_dir().map(|p| p.display().to_string()),
                    "domain_dir_exists": exists(&f.device),
                    "spec": f.spec.display().to_string(),
                })
            })
            .collect();
        let doc = json!({
            "schema": "vecring-cdi-list",
            "version": JSON_VERSION,
            "spec_dirs": dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>(),
            "devices": devices,
            "problems": problems.iter().map(|(p, what)| json!({"path": p.display().to_string(), "problem": what})).collect::<Vec<_>>(),
        });
        println!("{doc}");
        return Ok(());
    }
    if found.is_empty() {
        println!(
            "no vecring devices in {}",
            dirs.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    } else {
        println!(
            "{:<32} {:<16} {:<16} {:<40} SPEC",
            "DEVICE", "DOMAIN", "LINK", "DOMAIN DIRECTORY"
        );
        for f in &found {
            let dir = f.device.domain_dir().map_or_else(
                || "(netns: none)".into(),
                |p| {
                    format!(
                        "{}{}",
                        p.display(),
                        if exists(&f.device) { "" } else { " (missing)" }
                    )
                },
            );
            println!(
                "{:<32} {:<16} {:<16} {:<40} {}",
                format!("{KIND}={}", f.name),
                f.device.domain,
                f.device.link.as_deref().unwrap_or("(any)"),
                dir,
                f.spec.display()
            );
        }
    }
    for (path, what) in &problems {
        println!("note: {}: {what}", path.display());
    }
    Ok(())
}
