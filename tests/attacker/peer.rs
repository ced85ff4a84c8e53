//! Attacks on a real master: clients that take regions and leave, sit
//! silent, flood, or crowd the waiting requests; and a legitimate slave
//! that reports how long it took.

use crate::sock;
use crate::{report, until_stdin_closes, Args};
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vecring_core::internal::handshake::{self, Kind};
use vecring_core::{Link, Role};

/// How long one round waits for the master's answer before hanging up.
const ANSWER: Duration = Duration::from_millis(100);

/// Connects, asks, takes whatever region the master hands over, hangs up;
/// `rounds` times, stopping early once it holds more than `stop-above`
/// distinct regions. Reports the regions held, then holds them until
/// stdin closes.
pub fn take_fd(args: &Args) -> bool {
    let path = Path::new(args.get("socket"));
    let rounds = args.num("rounds");
    let stop_above = args.num("stop-above") as usize;
    // Distinct regions by inode: (size, on hugetlbfs, the descriptor).
    let mut held: HashMap<u64, (u64, bool, OwnedFd)> = HashMap::new();
    let (mut done, mut hellos, mut refused, mut silent, mut failed) = (0, 0, 0, 0, 0);
    for _ in 0..rounds {
        done += 1;
        let conn = match sock::connect(path, Duration::from_secs(1)) {
            Ok(c) => c,
            Err(_) => {
                failed += 1;
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
        };
        if sock::send_raw(&conn, &sock::request()).is_err() {
            failed += 1;
            continue;
        }
        match handshake::recv(&conn, ANSWER) {
            Ok((m, mut fds)) if m.kind == Kind::Hello && !fds.is_empty() => {
                hellos += 1;
                let fd = fds.take().expect("not empty");
                if let Ok((size, ino, huge)) = sock::describe_fd(&fd) {
                    held.entry(ino).or_insert((size, huge, fd));
                }
            }
            Ok(_) => refused += 1,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => silent += 1,
            // A message this build cannot decode (a new refusal kind) is a
            // refusal too.
            Err(_) => refused += 1,
        }
        drop(conn);
        if held.len() > stop_above {
            break;
        }
    }
    let bytes: u64 = held.values().map(|(s, _, _)| s).sum();
    let huge = held.values().filter(|(_, h, _)| *h).count();
    report(&format!(
        "result rounds={done} hellos={hellos} refused={refused} unanswered={silent} failed={failed} held={} held_bytes={bytes} hugetlb={huge}",
        held.len()
    ));
    until_stdin_closes();
    drop(held);
    true
}

/// Opens `count` connections that never say anything and holds them.
pub fn silent(args: &Args) -> bool {
    let path = Path::new(args.get("socket")).to_path_buf();
    let count = args.num("count");
    let threads: Vec<_> = (0..count)
        .map(|_| {
            let path = path.clone();
            std::thread::spawn(move || sock::connect(&path, Duration::from_secs(3)).ok())
        })
        .collect();
    let conns: Vec<OwnedFd> = threads
        .into_iter()
        .filter_map(|t| t.join().ok().flatten())
        .collect();
    report(&format!("ready connected={}", conns.len()));
    until_stdin_closes();
    drop(conns);
    true
}

/// Connects and hangs up as fast as it can (every other connection sends
/// a 10-byte datagram first) until stdin closes.
pub fn flood(args: &Args) -> bool {
    let path = Path::new(args.get("socket")).to_path_buf();
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let worker = {
        let (stop, count) = (Arc::clone(&stop), Arc::clone(&count));
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                if let Ok(c) = sock::connect(&path, Duration::from_millis(200)) {
                    if n % 2 == 1 {
                        let _ = sock::send_raw(&c, &[0xa5; 10]);
                    }
                    n += 1;
                    if n == 1 {
                        report("flooding");
                    }
                    count.store(n, Ordering::Relaxed);
                }
            }
        })
    };
    until_stdin_closes();
    stop.store(true, Ordering::Relaxed);
    let _ = worker.join();
    report(&format!(
        "flooded connects={}",
        count.load(Ordering::Relaxed)
    ));
    true
}

/// Connects and asks as fast as it can, keeping the newest `hold`
/// connections open and never reading them (a region offered to one is
/// never answered), until stdin closes: an admitted uid crowding out the
/// master's waiting requests.
pub fn crowd(args: &Args) -> bool {
    let path = Path::new(args.get("socket")).to_path_buf();
    let hold = args.num("hold") as usize;
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let worker = {
        let (stop, count) = (Arc::clone(&stop), Arc::clone(&count));
        std::thread::spawn(move || {
            let mut held = std::collections::VecDeque::new();
            let mut n = 0u64;
            let mut failed = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let c = match sock::connect(&path, Duration::from_millis(200)) {
                    Ok(c) => c,
                    Err(e) => {
                        // Said once, so that a test waiting for
                        // `crowding` shows why it never came.
                        failed += 1;
                        if n == 0 && failed == 100 {
                            report(&format!("error connect {}: {e}", path.display()));
                        }
                        continue;
                    }
                };
                if sock::send_raw(&c, &sock::request()).is_err() {
                    continue;
                }
                held.push_back(c);
                if held.len() > hold {
                    held.pop_front();
                }
                n += 1;
                if n == 1 {
                    report("crowding");
                }
                count.store(n, Ordering::Relaxed);
            }
        })
    };
    until_stdin_closes();
    stop.store(true, Ordering::Relaxed);
    let _ = worker.join();
    report(&format!(
        "crowded requests={}",
        count.load(Ordering::Relaxed)
    ));
    true
}

pub(crate) fn slave_link(args: &Args) -> Result<Link, String> {
    Link::builder(args.get("domain"), args.get("link"))
        .role(Role::Slave)
        .run_dir(args.get("run-dir"))
        .retry_interval(Duration::from_millis(10))
        .open()
        .map_err(|e| e.to_string())
}

/// A slave's link ([`slave_link`]) once up within `timeout`; `None` after
/// reporting `error ...`.
pub(crate) fn slave_up(args: &Args, timeout: Duration) -> Option<Link> {
    let link =
        slave_link(args).and_then(|l| l.wait_up(timeout).map(|_| l).map_err(|e| e.to_string()));
    match link {
        Ok(l) => Some(l),
        Err(e) => {
            report(&format!("error {e}"));
            None
        }
    }
}

/// A legitimate slave: reports how long it took from opening the link to
/// the link being up, and how long closing it took.
pub fn slave(args: &Args) -> bool {
    let timeout = Duration::from_millis(args.num("timeout-ms"));
    let start = Instant::now();
    let link = match slave_link(args) {
        Ok(l) => l,
        Err(e) => {
            report(&format!("error {e}"));
            return false;
        }
    };
    let up = link.wait_up(timeout);
    let up_ms = start.elapsed().as_millis();
    let closing = Instant::now();
    drop(link);
    let drop_ms = closing.elapsed().as_millis();
    match up {
        Ok(_) => {
            report(&format!("up ms={up_ms} drop_ms={drop_ms}"));
            true
        }
        Err(e) => {
            report(&format!("error after {up_ms} ms: {e} (drop_ms={drop_ms})"));
            false
        }
    }
}

/// A slave that gives up after `up-ms` and reports how long dropping the
/// link took, and why the link did not come up.
pub fn slave_drop(args: &Args) -> bool {
    let link = match slave_link(args) {
        Ok(l) => l,
        Err(e) => {
            report(&format!("error {e}"));
            return false;
        }
    };
    let up = link.wait_up(Duration::from_millis(args.num("up-ms")));
    let closing = Instant::now();
    drop(link);
    let drop_ms = closing.elapsed().as_millis();
    match up {
        Ok(g) => report(&format!("up generation={g} drop_ms={drop_ms}")),
        Err(e) => report(&format!("gave-up drop_ms={drop_ms} error={e}")),
    }
    true
}

/// Attaches and leaves again as fast as the master lets it, for `secs`
/// seconds; reports `churned generations=N ms=T`.
pub fn churn(args: &Args) -> bool {
    let end = Instant::now() + Duration::from_secs(args.num("secs"));
    let t0 = Instant::now();
    let mut generations = 0u64;
    while Instant::now() < end {
        let Ok(link) = slave_link(args) else {
            continue;
        };
        let left = end.saturating_duration_since(Instant::now());
        if link.wait_up(left).is_ok() {
            generations += 1;
        }
        drop(link);
    }
    report(&format!(
        "churned generations={generations} ms={}",
        t0.elapsed().as_millis()
    ));
    true
}
