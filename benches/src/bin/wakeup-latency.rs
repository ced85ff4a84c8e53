//! One-way wake-up latency between two processes on CPU 0 and CPU 1: a
//! ping-pong in which each side sleeps in a blocking read until the other
//! rings a doorbell, for each kernel doorbell a link's interrupt mode could
//! use (an eventfd per direction, a pipe per direction, one `SOCK_DGRAM`
//! socketpair), against the cache-line ping-pong floor of the same two
//! CPUs measured in the same rounds. The mechanisms alternate round by
//! round (`docs/benchmarks/method.md`: only ratios from one run mean anything).
//!
//! ```text
//! cargo run --release -p vecring-benches --bin wakeup-latency [-- ROUNDS]
//! ```

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Instant;
use vecring_benches::{core_to_core_latency, pin_current_thread, CONSUMER_CPU, PRODUCER_CPU};

/// Round trips timed per mechanism and round, after [`WARMUP`] untimed ones.
const TRIPS: usize = 20_000;
const WARMUP: usize = 1_000;

/// A doorbell: the two ends' descriptors for each direction.
#[derive(Clone, Copy)]
enum Kind {
    EventFd,
    Pipe,
    DgramPair,
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::EventFd, Kind::Pipe, Kind::DgramPair];

    fn name(self) -> &'static str {
        match self {
            Kind::EventFd => "eventfd (one per direction)",
            Kind::Pipe => "pipe (one per direction)",
            Kind::DgramPair => "socketpair(AF_UNIX, SOCK_DGRAM)",
        }
    }
}

/// What one side rings and what it waits on.
struct Ends {
    ring: OwnedFd,
    wait: OwnedFd,
}

fn check(rc: libc::c_int, what: &str) -> io::Result<libc::c_int> {
    if rc < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(rc)
}

fn owned(fd: libc::c_int) -> OwnedFd {
    // SAFETY: `fd` was just returned by the kernel and is owned by nobody else.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: plain system call.
    check(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) }, "eventfd").map(owned)
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    check(rc, "pipe2")?;
    Ok((owned(fds[0]), owned(fds[1])))
}

/// The parent's and the child's ends of `kind`.
fn doorbells(kind: Kind) -> io::Result<(Ends, Ends)> {
    Ok(match kind {
        Kind::EventFd => {
            let (ab, ba) = (eventfd()?, eventfd()?);
            let (ab2, ba2) = (ab.try_clone()?, ba.try_clone()?);
            (
                Ends { ring: ab, wait: ba },
                Ends {
                    ring: ba2,
                    wait: ab2,
                },
            )
        }
        Kind::Pipe => {
            let (ab_r, ab_w) = pipe()?;
            let (ba_r, ba_w) = pipe()?;
            (
                Ends {
                    ring: ab_w,
                    wait: ba_r,
                },
                Ends {
                    ring: ba_w,
                    wait: ab_r,
                },
            )
        }
        Kind::DgramPair => {
            let mut fds = [0; 2];
            let ty = libc::SOCK_DGRAM | libc::SOCK_CLOEXEC;
            // SAFETY: `fds` has room for the two descriptors.
            let rc = unsafe { libc::socketpair(libc::AF_UNIX, ty, 0, fds.as_mut_ptr()) };
            check(rc, "socketpair")?;
            let (a, b) = (owned(fds[0]), owned(fds[1]));
            let (a2, b2) = (a.try_clone()?, b.try_clone()?);
            (Ends { ring: a, wait: a2 }, Ends { ring: b, wait: b2 })
        }
    })
}

/// Rings `fd` the way `kind` is rung.
fn ring(kind: Kind, fd: &OwnedFd) {
    let one = 1u64.to_ne_bytes();
    // SAFETY: `one` is valid for the lengths written.
    let n = unsafe {
        match kind {
            Kind::EventFd => libc::write(fd.as_raw_fd(), one.as_ptr().cast(), 8),
            Kind::Pipe => libc::write(fd.as_raw_fd(), one.as_ptr().cast(), 1),
            Kind::DgramPair => {
                libc::send(fd.as_raw_fd(), one.as_ptr().cast(), 1, libc::MSG_NOSIGNAL)
            }
        }
    };
    assert!(n > 0, "ring: {}", io::Error::last_os_error());
}

/// Sleeps until `fd` was rung, and consumes the ring.
fn wait(kind: Kind, fd: &OwnedFd) {
    let mut buf = [0u8; 8];
    let len = if matches!(kind, Kind::EventFd) { 8 } else { 1 };
    // SAFETY: `buf` has room for `len` bytes.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), len) };
    assert!(n > 0, "wait: {}", io::Error::last_os_error());
}

/// Half the median round trip of `kind` between this process (CPU 0) and
/// a child (CPU 1), in nanoseconds.
fn one_way(kind: Kind) -> io::Result<f64> {
    let (mine, theirs) = doorbells(kind)?;
    // SAFETY: the process has one thread (the main one), so the child may
    // run any code.
    let pid = check(unsafe { libc::fork() }, "fork")?;
    if pid == 0 {
        drop(mine);
        let code = match pin_current_thread(CONSUMER_CPU) {
            Ok(()) => {
                for _ in 0..WARMUP + TRIPS {
                    wait(kind, &theirs.wait);
                    ring(kind, &theirs.ring);
                }
                0
            }
            Err(_) => 1,
        };
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(code) };
    }
    drop(theirs);
    let mut trips = Vec::with_capacity(TRIPS);
    for i in 0..WARMUP + TRIPS {
        let t = Instant::now();
        ring(kind, &mine.ring);
        wait(kind, &mine.wait);
        if i >= WARMUP {
            trips.push(t.elapsed().as_nanos() as u64);
        }
    }
    let mut status = 0;
    // SAFETY: `pid` is our child; `status` is a valid out-parameter.
    check(unsafe { libc::waitpid(pid, &mut status, 0) }, "waitpid")?;
    trips.sort_unstable();
    Ok(trips[trips.len() / 2] as f64 / 2.0)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    if let Err(e) = pin_current_thread(PRODUCER_CPU) {
        eprintln!("wakeup-latency: cannot pin to CPU {PRODUCER_CPU}: {e}");
        std::process::exit(1);
    }
    let mut floor = Vec::new();
    let mut lat: Vec<Vec<f64>> = vec![Vec::new(); Kind::ALL.len()];
    let mut ratio: Vec<Vec<f64>> = vec![Vec::new(); Kind::ALL.len()];
    for round in 0..rounds {
        let line = core_to_core_latency().as_nanos() as f64;
        floor.push(line);
        // Rotate the order so that no mechanism always runs first.
        for k in 0..Kind::ALL.len() {
            let i = (k + round) % Kind::ALL.len();
            match one_way(Kind::ALL[i]) {
                Ok(ns) => {
                    lat[i].push(ns);
                    ratio[i].push(ns / line);
                }
                Err(e) => {
                    eprintln!("wakeup-latency: {}: {e}", Kind::ALL[i].name());
                    std::process::exit(1);
                }
            }
        }
    }
    println!(
        "wakeup-latency: {rounds} rounds of {TRIPS} round trips each, CPU {PRODUCER_CPU} <-> CPU {CONSUMER_CPU}, both sides sleeping in read()"
    );
    println!();
    println!("| doorbell | one way, ns (median) | × cache-line ping-pong: median | min..max |");
    println!("|---|---|---|---|");
    for (i, kind) in Kind::ALL.iter().enumerate() {
        let (lo, hi) = ratio[i]
            .iter()
            .fold((f64::MAX, 0f64), |(lo, hi), &r| (lo.min(r), hi.max(r)));
        println!(
            "| {} | {:.0} | {:.1} | {:.1}..{:.1} |",
            kind.name(),
            median(&mut lat[i]),
            median(&mut ratio[i]),
            lo,
            hi
        );
    }
    println!(
        "| cache-line ping-pong (spinning, the floor) | {:.0} | 1 | |",
        median(&mut floor)
    );
}
