//! `vecring list` and `vecring stats`: what links exist under a run
//! directory, whether they are up, who is attached, and their counters,
//! asked of each link's master over its socket (see
//! `vecring_core::status`) from a separate process, without disturbing
//! the link.
//!
//! The run directory may hold entries planted by others: nothing is
//! followed, every entry is looked at with `lstat`, and a socket is
//! queried only through the descriptor of the directory that holds it.
//! All sockets are asked at once and their answers awaited until one
//! deadline, so listeners that never answer cost a scan one wait in all.

use crate::escape::printable;
use clap::Args;
use serde_json::{json, Value};
use std::ffi::CString;
use std::io::{IsTerminal, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use vecring_core::status::{self, LinkStatus, QueryError};

/// Version of the JSON documents `list` and `stats` print.
pub const JSON_VERSION: u32 = 1;

/// How long the masters of one scan may take to answer, all together:
/// they are asked at once, so a listener that never answers (anyone who
/// can write a domain directory can plant one) costs a scan at most this.
const ANSWER_WITHIN: Duration = Duration::from_secs(1);

/// Questions waiting for their answers at once, a descriptor each; the
/// rest are asked as answers come.
const IN_FLIGHT: usize = 128;

/// Options of `vecring list`.
#[derive(Args)]
pub struct ListArgs {
    /// Parent of the domain directories.
    #[arg(long, default_value = vecring_core::link::DEFAULT_RUN_DIR)]
    run_dir: PathBuf,
    /// Print one JSON document (schema "vecring-list", version 1) instead
    /// of the table.
    #[arg(long)]
    json: bool,
}

/// Options of `vecring stats`: each link's counters (all its queues
/// together, as its master's status answer carries them) and its queue
/// count.
#[derive(Args)]
pub struct StatsArgs {
    /// Only this domain.
    domain: Option<String>,
    /// Only this link of the domain.
    link: Option<String>,
    /// Parent of the domain directories.
    #[arg(long, default_value = vecring_core::link::DEFAULT_RUN_DIR)]
    run_dir: PathBuf,
    /// Refresh every SECS seconds (in place on a terminal), with rates over
    /// the last interval; Ctrl-C ends it.
    #[arg(long, value_name = "SECS")]
    watch: Option<f64>,
    /// With --watch: stop after this many refreshes.
    #[arg(long)]
    count: Option<u64>,
    /// Print JSON (schema "vecring-stats", version 1; one document per
    /// refresh, one per line) instead of the table.
    #[arg(long)]
    json: bool,
}

/// What one socket under the run directory turned out to be.
enum Found {
    /// A live master answered.
    Live(Box<LinkStatus>),
    /// Nobody listens: the master died without removing its socket.
    Stale,
    /// A master listens but did not answer usefully.
    NoAnswer(String),
}

/// One link (socket) found.
struct Entry {
    domain: String,
    link: String,
    found: Found,
}

/// Everything found under a run directory.
#[derive(Default)]
struct Scan {
    links: Vec<Entry>,
    /// Entries that are not what vecring creates: (path, what is wrong).
    problems: Vec<(PathBuf, String)>,
}

fn open_path_dir(path: &Path) -> std::io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: valid C string; the result is checked.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn kind_of(ft: std::fs::FileType) -> &'static str {
    if ft.is_symlink() {
        "a symlink"
    } else if ft.is_dir() {
        "a directory"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_file() {
        "a regular file"
    } else {
        "a special file"
    }
}

fn sorted_entries(dir: &Path) -> std::io::Result<Vec<(String, std::fs::Metadata)>> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        // symlink_metadata: the entry itself, never what it points to.
        if let Ok(md) = std::fs::symlink_metadata(e.path()) {
            v.push((name, md));
        }
    }
    v.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(v)
}

/// Looks at every domain directory and link socket under `run_dir`.
fn scan(run_dir: &Path, only: Option<(&str, Option<&str>)>) -> Result<Scan, String> {
    let mut out = Scan::default();
    // The sockets to ask: (index in `out.links`, path through the
    // directory's descriptor, place among its domain's sockets), and the
    // directories' descriptors, open until all are asked.
    let mut asks: Vec<(usize, PathBuf, usize)> = Vec::new();
    let mut dir_fds: Vec<OwnedFd> = Vec::new();
    let domains = match sorted_entries(run_dir) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(format!("cannot read {}: {e}", run_dir.display())),
    };
    for (domain, md) in domains {
        if only.is_some_and(|(d, _)| d != domain) {
            continue;
        }
        let dpath = run_dir.join(&domain);
        if !md.file_type().is_dir() {
            out.problems.push((
                dpath,
                format!(
                    "{} where a domain directory belongs; ignored",
                    kind_of(md.file_type())
                ),
            ));
            continue;
        }
        if md.mode() & 0o022 != 0 {
            out.problems.push((
                dpath.clone(),
                format!(
                    "writable by group or others (mode {:04o}): masters refuse it",
                    md.mode() & 0o7777
                ),
            ));
        }
        let dir_fd = match open_path_dir(&dpath) {
            Ok(fd) => fd,
            Err(e) => {
                out.problems.push((dpath, format!("cannot open: {e}")));
                continue;
            }
        };
        let entries = match sorted_entries(&dpath) {
            Ok(e) => e,
            Err(e) => {
                out.problems.push((dpath, format!("cannot read: {e}")));
                continue;
            }
        };
        let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
        let mut in_domain = 0;
        for (name, md) in &entries {
            let path = dpath.join(name);
            if let Some(link) = name.strip_suffix(".lock") {
                if !names.contains(&format!("{link}.sock").as_str()) {
                    out.problems.push((
                        path,
                        "lock without a socket: left by a master that died; harmless".into(),
                    ));
                }
                continue;
            }
            let Some(link) = name.strip_suffix(".sock") else {
                out.problems.push((
                    path,
                    format!(
                        "{} vecring did not create; ignored",
                        kind_of(md.file_type())
                    ),
                ));
                continue;
            };
            if only.is_some_and(|(_, l)| l.is_some_and(|l| l != link)) {
                continue;
            }
            if !md.file_type().is_socket() {
                out.problems.push((
                    path,
                    format!(
                        "{} named like a link's socket; ignored",
                        kind_of(md.file_type())
                    ),
                ));
                continue;
            }
            let via = PathBuf::from(format!("/proc/self/fd/{}/{name}", dir_fd.as_raw_fd()));
            asks.push((out.links.len(), via, in_domain));
            in_domain += 1;
            out.links.push(Entry {
                domain: domain.clone(),
                link: link.to_string(),
                found: Found::Stale,
            });
        }
        dir_fds.push(dir_fd);
    }
    // Each domain's first socket, then each one's second, and so on: a
    // domain full of planted listeners cannot keep the others' turn
    // beyond the deadline.
    asks.sort_by_key(|&(i, _, place)| (place, i));
    let vias: Vec<&Path> = asks.iter().map(|(_, v, _)| v.as_path()).collect();
    for ((i, _, _), found) in asks.iter().zip(ask_all(&vias)) {
        out.links[*i].found = found;
    }
    drop(dir_fds);
    Ok(out)
}

fn found_of(answer: Result<LinkStatus, QueryError>) -> Found {
    match answer {
        Ok(s) => Found::Live(Box::new(s)),
        Err(QueryError::NoMaster { .. }) => Found::Stale,
        Err(e) => Found::NoAnswer(e.to_string()),
    }
}

/// Asks the listener at each socket for its link's status, all at once
/// (at most [`IN_FLIGHT`] waiting), and waits for the answers until one
/// deadline, [`ANSWER_WITHIN`] from now; in the order given.
fn ask_all(sockets: &[&Path]) -> Vec<Found> {
    let deadline = Instant::now() + ANSWER_WITHIN;
    let mut found: Vec<Option<Found>> = sockets.iter().map(|_| None).collect();
    let mut next = 0;
    let mut waiting: Vec<(usize, status::Asked)> = Vec::new();
    loop {
        while waiting.len() < IN_FLIGHT && next < sockets.len() {
            match status::ask(sockets[next]) {
                Ok(a) => waiting.push((next, a)),
                Err(e) => found[next] = Some(found_of(Err(e))),
            }
            next += 1;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if waiting.is_empty() || left.is_zero() {
            break;
        }
        let mut fds: Vec<libc::pollfd> = waiting
            .iter()
            .map(|(_, a)| libc::pollfd {
                fd: a.as_fd().as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // Rounded up: a wait of 0 ms would spin until the deadline.
        let ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
        // SAFETY: `fds` is an array of `fds.len()` valid pollfds.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if rc < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            break;
        }
        let mut still = Vec::with_capacity(waiting.len());
        for ((i, a), p) in waiting.into_iter().zip(&fds) {
            if p.revents != 0 {
                found[i] = Some(found_of(a.answer()));
            } else {
                still.push((i, a));
            }
        }
        waiting = still;
    }
    for (i, _) in waiting {
        found[i] = Some(Found::NoAnswer("the master did not answer in time".into()));
    }
    found
        .into_iter()
        .map(|f| {
            f.unwrap_or_else(|| {
                Found::NoAnswer(format!(
                    "not asked: the {} s the answers may take had passed",
                    ANSWER_WITHIN.as_secs()
                ))
            })
        })
        .collect()
}

fn state_of(found: &Found) -> &'static str {
    match found {
        Found::Live(s) if s.is_up() => "up",
        Found::Live(_) => "waiting for slave",
        Found::Stale => "down (stale socket: no master)",
        Found::NoAnswer(_) => "unknown (no answer)",
    }
}

fn uptime(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

fn mib(bytes: u64) -> String {
    format!("{} MiB", bytes >> 20)
}

fn link_json(e: &Entry) -> Value {
    let mut v = json!({
        "domain": e.domain,
        "link": e.link,
        "state": match &e.found {
            Found::Live(s) if s.is_up() => "up",
            Found::Live(_) => "waiting",
            Found::Stale => "stale",
            Found::NoAnswer(_) => "unknown",
        },
    });
    match &e.found {
        Found::Live(s) => {
            v["role"] = json!("master");
            v["master"] = json!({"pid": s.master_pid, "uid": s.master_uid});
            v["generation"] = json!(s.counters.generation);
            v["queues"] = json!(s.queues);
            v["uptime_secs"] = json!(s.uptime_secs);
            v["numa_node"] = json!(s.numa_node);
            v["peer"] = match s.peer {
                Some(p) => json!({"pid": p.pid, "uid": p.uid, "gid": p.gid}),
                None => Value::Null,
            };
            v["region"] = match s.region {
                Some(r) => json!({
                    "size": r.size,
                    "hugepages": r.hugepages,
                    "slot_count": r.slot_count,
                    "slot_size": r.slot_size,
                    "max_frame_len": r.max_frame_len,
                }),
                None => Value::Null,
            };
        }
        Found::NoAnswer(why) => v["error"] = json!(why),
        Found::Stale => {}
    }
    v
}

fn problems_json(p: &[(PathBuf, String)]) -> Value {
    Value::Array(
        p.iter()
            .map(|(path, what)| json!({"path": path.display().to_string(), "problem": what}))
            .collect(),
    )
}

/// `vecring list`.
pub fn list(args: &ListArgs) -> Result<(), String> {
    let found = scan(&args.run_dir, None)?;
    if args.json {
        let doc = json!({
            "schema": "vecring-list",
            "version": JSON_VERSION,
            "run_dir": args.run_dir.display().to_string(),
            "links": found.links.iter().map(link_json).collect::<Vec<_>>(),
            "problems": problems_json(&found.problems),
        });
        println!("{doc}");
        return Ok(());
    }
    if found.links.is_empty() {
        println!(
            "no links under {}",
            printable(&args.run_dir.display().to_string())
        );
    } else {
        println!(
            "{:<16} {:<16} {:<7} {:<30} {:>17} {:<16} {:>6} {:<16} {:<22} {:>8}",
            "DOMAIN",
            "LINK",
            "ROLE",
            "STATE",
            "GEN",
            "PEER PID/UID",
            "QUEUES",
            "GEOMETRY",
            "MEMORY",
            "UPTIME"
        );
    }
    for e in &found.links {
        let (role, generation, peer, queues, geometry, memory, up) = match &e.found {
            Found::Live(s) => (
                "master",
                s.counters.generation.to_string(),
                s.peer
                    .map_or("-".into(), |p| format!("{}/{}", p.pid, p.uid)),
                s.queues.to_string(),
                s.region.map_or("-".into(), |r| {
                    format!("{}x{} B", r.slot_count, r.slot_size)
                }),
                s.region.map_or("-".into(), |r| {
                    format!(
                        "{} {}{}",
                        mib(r.size),
                        if r.hugepages { "hugepages" } else { "4K pages" },
                        s.numa_node.map_or(String::new(), |n| format!(" node{n}"))
                    )
                }),
                uptime(s.uptime_secs),
            ),
            _ => (
                "-",
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ),
        };
        println!(
            "{:<16} {:<16} {:<7} {:<30} {:>17} {:<16} {:>6} {:<16} {:<22} {:>8}",
            printable(&e.domain),
            printable(&e.link),
            role,
            state_of(&e.found),
            generation,
            peer,
            queues,
            geometry,
            memory,
            up
        );
        if let Found::NoAnswer(why) = &e.found {
            println!("    {}", printable(why));
        }
    }
    for (path, what) in &found.problems {
        println!(
            "note: {}: {}",
            printable(&path.display().to_string()),
            printable(what)
        );
    }
    Ok(())
}

/// Counters of one link at one instant.
struct Sample {
    at: Instant,
    status: LinkStatus,
}

fn rate(now: u64, before: Option<u64>, secs: f64) -> Option<f64> {
    before.map(|b| now.saturating_sub(b) as f64 / secs)
}

fn stats_json(e: &Entry, s: &LinkStatus, prev: Option<&Sample>) -> Value {
    let c = &s.counters;
    let secs = prev.map(|p| p.at.elapsed().as_secs_f64()).unwrap_or(0.0);
    let pc = prev.filter(|_| secs > 0.0).map(|p| p.status.counters);
    json!({
        "domain": e.domain,
        "link": e.link,
        "state": if s.is_up() { "up" } else { "waiting" },
        "generation": c.generation,
        "queues": s.queues,
        "tx": {
            "frames": c.tx_frames,
            "bytes": c.tx_bytes,
            "lost_on_link_down": c.tx_lost_on_link_down,
            "ring_full": c.tx_ring_full,
            "pps": rate(c.tx_frames, pc.map(|p| p.tx_frames), secs),
            "bps": rate(c.tx_bytes, pc.map(|p| p.tx_bytes), secs).map(|b| b * 8.0),
        },
        "rx": {
            "frames": c.rx_frames,
            "bytes": c.rx_bytes,
            "pps": rate(c.rx_frames, pc.map(|p| p.rx_frames), secs),
            "bps": rate(c.rx_bytes, pc.map(|p| p.rx_bytes), secs).map(|b| b * 8.0),
        },
        "link_ups": c.link_ups,
        "link_downs": c.link_downs,
        "peer_corruptions": c.peer_corruptions,
        "rejected_peers": c.rejected_peers,
        "pinned_regions": c.pinned_regions,
    })
}

fn fmt_rate(r: Option<f64>) -> String {
    r.map_or("-".into(), |r| format!("{r:.0}"))
}

/// `vecring stats`.
pub fn stats(args: &StatsArgs) -> Result<(), String> {
    if args.link.is_some() && args.domain.is_none() {
        return Err("a link name needs its domain".into());
    }
    let interval = match args.watch {
        Some(s) if !(0.05..=86_400.0).contains(&s) => {
            return Err(format!("--watch {s}: give 0.05 to 86400 seconds"))
        }
        Some(s) => Some(Duration::from_secs_f64(s)),
        None => None,
    };
    let only = args.domain.as_deref().map(|d| (d, args.link.as_deref()));
    let tty = std::io::stdout().is_terminal();
    let mut prev: std::collections::HashMap<(String, String), Sample> = Default::default();
    let mut refreshes = 0u64;
    loop {
        let found = scan(&args.run_dir, only)?;
        let mut out = String::new();
        let mut docs = Vec::new();
        if interval.is_some() && tty && !args.json {
            out.push_str("\x1b[H\x1b[2J");
        }
        let live: Vec<&Entry> = found
            .links
            .iter()
            .filter(|e| matches!(e.found, Found::Live(_)))
            .collect();
        if live.is_empty() && !args.json {
            out.push_str(&format!("no live links under {}\n", args.run_dir.display()));
        }
        for e in &live {
            let Found::Live(s) = &e.found else { continue };
            let key = (e.domain.clone(), e.link.clone());
            let p = prev.get(&key);
            let doc = stats_json(e, s, p);
            if args.json {
                docs.push(doc);
            } else {
                let c = &s.counters;
                out.push_str(&format!(
                    "{}/{}: {} (generation {}); queues {}; link ups {}, downs {}; peer corruptions {}; rejected peers {}; pinned regions {}\n",
                    e.domain,
                    e.link,
                    if s.is_up() { "up" } else { "waiting for slave" },
                    c.generation,
                    s.queues,
                    c.link_ups,
                    c.link_downs,
                    c.peer_corruptions,
                    c.rejected_peers,
                    c.pinned_regions
                ));
                out.push_str(&format!(
                    "    tx {:>14} frames {:>16} bytes {:>12} pps {:>12} bit/s  ring full {}  lost on link down {}\n",
                    c.tx_frames,
                    c.tx_bytes,
                    fmt_rate(doc["tx"]["pps"].as_f64()),
                    fmt_rate(doc["tx"]["bps"].as_f64()),
                    c.tx_ring_full,
                    c.tx_lost_on_link_down
                ));
                out.push_str(&format!(
                    "    rx {:>14} frames {:>16} bytes {:>12} pps {:>12} bit/s\n",
                    c.rx_frames,
                    c.rx_bytes,
                    fmt_rate(doc["rx"]["pps"].as_f64()),
                    fmt_rate(doc["rx"]["bps"].as_f64()),
                ));
            }
            prev.insert(
                key,
                Sample {
                    at: Instant::now(),
                    status: (**s).clone(),
                },
            );
        }
        if args.json {
            let doc = json!({
                "schema": "vecring-stats",
                "version": JSON_VERSION,
                "run_dir": args.run_dir.display().to_string(),
                "links": docs,
            });
            out.push_str(&format!("{doc}\n"));
        }
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(out.as_bytes())
            .and_then(|()| stdout.flush())
            .map_err(|e| format!("stdout: {e}"))?;
        drop(stdout);
        refreshes += 1;
        match interval {
            Some(i) if args.count.is_none_or(|n| refreshes < n) => std::thread::sleep(i),
            _ => return Ok(()),
        }
    }
}
