//! `vecring list` and `vecring stats`: what links exist under a run
//! directory, whether they are up, who is attached, and their counters,
//! asked of each link's master over its socket (see
//! `vecring_core::status`) from a separate process, without disturbing
//! the link.
//! ([`scan`] finds the links and asks their masters).

use crate::escape::printable;
use clap::Args;
use serde_json::{json, Value};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use vecring_core::status::LinkStatus;

mod scan;

use scan::{scan, Entry, Found};

/// Version of the JSON documents `list` and `stats` print.
pub const JSON_VERSION: u32 = 1;

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
                    printable(&e.domain),
                    printable(&e.link),
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
