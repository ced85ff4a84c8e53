//! Wakeup latency of a link in interrupt mode: a ping-pong between two
//! processes on CPU 0 and CPU 1 in which each side, finding its ring
//! empty, sleeps in `Receiver::wait` until the other's `send` rings the
//! doorbell; one way = half a round trip, from `send` to the sleeping
//! receiver's return from `wait` and `recv`. Against the floor of a
//! wake-up: a bare eventfd ping-pong between two processes on the same
//! CPUs (each side blocked in `read`). The two alternate round by round
//! (`docs/benchmarks/method.md`: only ratios from one run mean anything);
//! p50 and p99 of each round, and the ratio's spread across rounds.
//!
//! ```text
//! cargo run --release -p vecring-benches --bin link-wakeup [-- ROUNDS]
//! ```

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};
use vecring_benches::{pin_current_thread, CONSUMER_CPU, PRODUCER_CPU};
use vecring_core::{HugepagePolicy, Link, LinkRecvError, Role};

/// Round trips timed per round and mechanism, after [`WARMUP`] untimed.
const TRIPS: usize = 10_000;
const WARMUP: usize = 500;
/// The ping-pong frame: a minimal Ethernet frame.
const FRAME: [u8; 64] = [0x5a; 64];

fn check(rc: libc::c_int, what: &str) -> io::Result<libc::c_int> {
    if rc < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(rc)
}

fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: plain system call.
    let fd = check(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) }, "eventfd")?;
    // SAFETY: a fresh descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn efd_ring(fd: &OwnedFd) {
    let one = 1u64.to_ne_bytes();
    // SAFETY: 8 bytes from a live buffer.
    let n = unsafe { libc::write(fd.as_raw_fd(), one.as_ptr().cast(), 8) };
    assert_eq!(n, 8, "eventfd write: {}", io::Error::last_os_error());
}

fn efd_wait(fd: &OwnedFd) {
    let mut buf = [0u8; 8];
    // SAFETY: 8 bytes into a live buffer.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
    assert_eq!(n, 8, "eventfd read: {}", io::Error::last_os_error());
}

/// Forks a child pinned to CPU 1 that runs `child`; returns its pid.
fn fork_child(child: impl FnOnce() -> bool) -> io::Result<libc::pid_t> {
    // SAFETY: called while this process has one thread, so the child may
    // run any code.
    let pid = check(unsafe { libc::fork() }, "fork")?;
    if pid == 0 {
        let ok = pin_current_thread(CONSUMER_CPU).is_ok() && child();
        // SAFETY: ends the child without the parent's exit handlers.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    Ok(pid)
}

fn reap(pid: libc::pid_t) -> io::Result<()> {
    let mut status = 0;
    // SAFETY: `pid` is our child; `status` is a valid out-parameter.
    check(unsafe { libc::waitpid(pid, &mut status, 0) }, "waitpid")?;
    if status != 0 {
        return Err(io::Error::other(format!(
            "child exited with status {status}"
        )));
    }
    Ok(())
}

/// p50 and p99 of one way (half the round trips), in nanoseconds.
fn percentiles(mut trips: Vec<u64>) -> (f64, f64) {
    trips.sort_unstable();
    let at = |q: f64| trips[((trips.len() - 1) as f64 * q) as usize] as f64 / 2.0;
    (at(0.50), at(0.99))
}

/// The eventfd floor: one eventfd per direction, each side blocked in
/// `read`.
fn eventfd_round() -> io::Result<(f64, f64)> {
    let (ab, ba) = (eventfd()?, eventfd()?);
    let pid = fork_child(|| {
        for _ in 0..WARMUP + TRIPS {
            efd_wait(&ab);
            efd_ring(&ba);
        }
        true
    })?;
    let mut trips = Vec::with_capacity(TRIPS);
    for i in 0..WARMUP + TRIPS {
        let t = Instant::now();
        efd_ring(&ab);
        efd_wait(&ba);
        if i >= WARMUP {
            trips.push(t.elapsed().as_nanos() as u64);
        }
    }
    reap(pid)?;
    Ok(percentiles(trips))
}

/// Receives one frame, sleeping in `Receiver::wait` whenever the ring is
/// empty.
fn recv_sleeping(rx: &mut vecring_core::Receiver, buf: &mut [u8]) -> bool {
    loop {
        match rx.recv(buf) {
            Ok(_) => return true,
            Err(LinkRecvError::Empty | LinkRecvError::NoPeer) => {
                if rx.wait(Some(Duration::from_secs(10))).is_err() {
                    return false;
                }
            }
            Err(_) => return false,
        }
    }
}

fn open(dir: &std::path::Path, role: Role) -> Option<Link> {
    let link = Link::builder("bench", "wake")
        .role(role)
        .run_dir(dir)
        .hugepages(HugepagePolicy::Never)
        .retry_interval(Duration::from_millis(5))
        .open()
        .ok()?;
    link.wait_up(Duration::from_secs(10)).ok()?;
    Some(link)
}

/// The link: both sides sleeping in `wait` between frames.
fn link_round(dir: &std::path::Path) -> io::Result<(f64, f64)> {
    let _ = std::fs::remove_dir_all(dir);
    let child_dir = dir.to_path_buf();
    // The child opens its link only after the fork (a Link has a thread).
    let pid = fork_child(move || {
        let Some(link) = open(&child_dir, Role::Slave) else {
            return false;
        };
        let (Ok(mut rx), Ok(mut tx)) = (link.receiver(), link.sender()) else {
            return false;
        };
        let mut buf = [0u8; 64];
        for _ in 0..WARMUP + TRIPS {
            if !recv_sleeping(&mut rx, &mut buf) || tx.send(&FRAME).is_err() {
                return false;
            }
        }
        // Stays until the master has read the last reply.
        std::thread::sleep(Duration::from_millis(200));
        true
    })?;
    let link = open(dir, Role::Master).ok_or_else(|| io::Error::other("link did not come up"))?;
    let (mut rx, mut tx) = (
        link.receiver().map_err(io::Error::other)?,
        link.sender().map_err(io::Error::other)?,
    );
    let mut buf = [0u8; 64];
    let mut trips = Vec::with_capacity(TRIPS);
    for i in 0..WARMUP + TRIPS {
        let t = Instant::now();
        tx.send(&FRAME).map_err(io::Error::other)?;
        if !recv_sleeping(&mut rx, &mut buf) {
            return Err(io::Error::other("no reply"));
        }
        if i >= WARMUP {
            trips.push(t.elapsed().as_nanos() as u64);
        }
    }
    let spurious = rx.spurious_wakeups();
    drop((rx, tx, link));
    reap(pid)?;
    if spurious > 0 {
        eprintln!("link-wakeup: {spurious} wakeups for nothing in a round");
    }
    Ok(percentiles(trips))
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn spread(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::MAX, 0f64), |(lo, hi), &r| (lo.min(r), hi.max(r)))
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let dir = std::env::temp_dir().join(format!("vecring-link-wakeup-{}", std::process::id()));
    let mut rows: Vec<[f64; 4]> = Vec::new();
    for round in 0..rounds {
        // Each round forks from a single-threaded parent; the parent pins
        // itself to CPU 0 for its side.
        if let Err(e) = pin_current_thread(PRODUCER_CPU) {
            eprintln!("link-wakeup: cannot pin to CPU {PRODUCER_CPU}: {e}");
            std::process::exit(1);
        }
        let run = |link_first: bool| -> io::Result<[f64; 4]> {
            let (e, l) = if link_first {
                let l = link_round(&dir)?;
                (eventfd_round()?, l)
            } else {
                let e = eventfd_round()?;
                (e, link_round(&dir)?)
            };
            Ok([e.0, e.1, l.0, l.1])
        };
        match run(round % 2 == 1) {
            Ok(r) => rows.push(r),
            Err(e) => {
                eprintln!("link-wakeup: round {round}: {e}");
                std::process::exit(1);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "link-wakeup: {rounds} rounds of {TRIPS} round trips, CPU {PRODUCER_CPU} <-> CPU {CONSUMER_CPU}, both sides asleep between frames; one way = half a round trip"
    );
    println!();
    println!("| round | eventfd p50 ns | eventfd p99 ns | link p50 ns | link p99 ns | link/eventfd p50 | link/eventfd p99 |");
    println!("|---|---|---|---|---|---|---|");
    let (mut r50, mut r99) = (Vec::new(), Vec::new());
    for (i, r) in rows.iter().enumerate() {
        r50.push(r[2] / r[0]);
        r99.push(r[3] / r[1]);
        println!(
            "| {i} | {:.0} | {:.0} | {:.0} | {:.0} | {:.2} | {:.2} |",
            r[0],
            r[1],
            r[2],
            r[3],
            r[2] / r[0],
            r[3] / r[1]
        );
    }
    let ((l50, h50), (l99, h99)) = (spread(&r50), spread(&r99));
    println!(
        "| median | | | | | {:.2} ({l50:.2}..{h50:.2}) | {:.2} ({l99:.2}..{h99:.2}) |",
        median(&mut r50),
        median(&mut r99)
    );
}
