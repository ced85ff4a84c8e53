//! A process posing as the master at a link's socket path, serving each
//! slave that connects one kind of bad answer (`mode=`):
//!
//! - `never-accept`: listens, fills its own backlog, never accepts;
//! - `silent`: accepts and says nothing;
//! - `garbage`: a 256-byte datagram that is no handshake message;
//! - `pipe`: a Hello carrying a pipe instead of a memfd;
//! - `unsealed`: a Hello with a memfd of the right size and header, unsealed;
//! - `small`: a Hello announcing a full region with a sealed 4 KiB memfd;
//! - `truncated`: like `unsealed`, truncated to 0 right after sending;
//! - `queue-lie`: a real one-queue region, the Hello announcing four;
//! - `queue-header`: a sealed memfd of one queue's size whose header
//!   claims four queues (and eight rings), the Hello saying the same;
//! - `bell-pipe`, `bell-eventfd`, `bell-stream`, `bell-dup`, `bell-few`: a
//!   real region whose second doorbell is a pipe, an eventfd, a stream
//!   socket, the first doorbell again, or missing;
//! - `valid`: a real region, then `Ready` after the slave's Ack;
//! - `status-fds`: to whatever asks (`vecring list`), an answer carrying
//!   a loopback TCP socket whose last close sleeps for an hour (see
//!   `plant.rs`), our copy dropped right after the send.
//!
//! Reports `listening`, then `sent mode=M` per slave served and `acked`
//! whenever a slave accepts what it was given. When its standard input
//! closes it reads every message still waiting on its connections and
//! reports `done acks=N`, the Acks it received in all: a test that has seen
//! its slave exit learns for certain whether it acknowledged.

use crate::sock;
use crate::{report, until_stdin_closes, Args};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use vecring_core::internal::doorbell::Doorbell;
use vecring_core::internal::handshake::{self, Kind, Msg};
use vecring_core::memory::{HugepagePolicy, Region, RegionOptions};
use vecring_core::{internal::abi, Geometry};

/// How long to wait for the slave's opening request before answering.
const REQUEST_WAIT: Duration = Duration::from_millis(300);
const GENERATION: u64 = 7_000_000;

pub fn run(args: &Args) -> bool {
    let path = Path::new(args.get("socket"));
    let mode = args.get("mode").to_string();
    if mode == "never-accept" {
        return never_accept(path);
    }
    let listener = match sock::listen(path, 16) {
        Ok(l) => vecring_core::internal::closer::PeerSocket::new(l, false),
        Err(e) => {
            report(&format!("error listening on {}: {e}", path.display()));
            return false;
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            until_stdin_closes();
            stop.store(true, Ordering::Relaxed);
        });
    }
    report("listening");
    // Everything handed out stays alive until the end.
    let mut conns: Vec<vecring_core::internal::closer::PeerSocket> = Vec::new();
    let mut kept: Vec<Kept> = Vec::new();
    let mut acks = 0u64;
    loop {
        // The last pass after the stop reads what is still waiting.
        let last = stop.load(Ordering::Relaxed);
        if !last && handshake::wait_readable(&listener, Duration::from_millis(50)).unwrap_or(false)
        {
            if let Ok(conn) = handshake::accept(&listener) {
                sock::drain_one(&conn, REQUEST_WAIT);
                match answer(&conn, &mode) {
                    Ok(k) => kept.push(k),
                    Err(e) => report(&format!("error answering: {e}")),
                }
                report(&format!("sent mode={mode}"));
                conns.push(conn);
            }
        }
        // Once per pass; on the last, until nothing is left to read.
        let mut read = true;
        while read {
            read = false;
            conns.retain(|c| match handshake::recv(c, Duration::ZERO) {
                Ok((m, _)) if m.kind == Kind::Ack => {
                    read = true;
                    acks += 1;
                    report("acked");
                    // As a real master does: seal the region the slave mapped
                    // before saying Ready.
                    for k in &kept {
                        if let Kept::Region(r, _) = k {
                            let _ = r.seal_shared();
                        }
                    }
                    let _ = sock::send_raw(c, &sock::ready(m.generation));
                    true
                }
                Ok((m, _)) => {
                    read = true;
                    report(&format!("received {:?} {}", m.kind, m.text));
                    true
                }
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => true,
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => false,
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    read = true;
                    report(&format!("received bad message: {e}"));
                    true
                }
                Err(_) => false,
            });
            if !last {
                break;
            }
        }
        if last {
            break;
        }
    }
    report(&format!("done acks={acks}"));
    drop(kept);
    true
}

/// Listens with a backlog of one and fills it with its own connections,
/// so that another process's connect finds no room; never accepts.
fn never_accept(path: &Path) -> bool {
    let listener = match sock::listen(path, 0) {
        Ok(l) => l,
        Err(e) => {
            report(&format!("error listening on {}: {e}", path.display()));
            return false;
        }
    };
    let mut fillers = Vec::new();
    while let Ok(c) = sock::connect_nonblocking(path) {
        fillers.push(c);
        if fillers.len() > 64 {
            break;
        }
    }
    report(&format!("listening filled={}", fillers.len()));
    until_stdin_closes();
    report("done acks=0");
    drop((listener, fillers));
    true
}

/// What an answer handed out, kept open.
#[allow(dead_code)] // held only to stay open
enum Kept {
    Nothing,
    Fd(OwnedFd, Vec<Doorbell>),
    Region(Box<Region>, Vec<Doorbell>),
    Tcp(std::net::TcpStream),
}

/// Sends a Hello of `queues` queues with `fd` as the region and real
/// doorbells; returns our ends of them.
fn hello(conn: &OwnedFd, size: u64, fd: &impl AsFd) -> std::io::Result<Vec<Doorbell>> {
    hello_queues(conn, 1, size, fd)
}

fn hello_queues(
    conn: &OwnedFd,
    queues: u16,
    size: u64,
    fd: &impl AsFd,
) -> std::io::Result<Vec<Doorbell>> {
    let (ours, theirs) = Doorbell::pairs(2 * usize::from(queues))?;
    let bells: Vec<BorrowedFd<'_>> = theirs.iter().map(|b| b.as_fd()).collect();
    hello_with(conn, queues, size, fd, &bells)?;
    Ok(ours)
}

/// Sends a Hello with `fd` and `bells` as they are.
fn hello_with(
    conn: &OwnedFd,
    queues: u16,
    size: u64,
    fd: &impl AsFd,
    bells: &[BorrowedFd<'_>],
) -> std::io::Result<()> {
    let msg = Msg::hello(Geometry::DEFAULT, queues, size, GENERATION);
    let fds: Vec<BorrowedFd<'_>> = std::iter::once(fd.as_fd())
        .chain(bells.iter().copied())
        .collect();
    handshake::send(conn, &msg, &fds)
}

/// A real one-queue region whose doorbells are a good one and `second`
/// (none when `None`).
fn bad_bell(conn: &OwnedFd, second: Option<BorrowedFd<'_>>) -> std::io::Result<Kept> {
    let region = real_region()?;
    let (ours, theirs) = Doorbell::pairs(1)?;
    let mut bells = vec![theirs[0].as_fd()];
    bells.extend(second);
    hello_with(conn, 1, region.size() as u64, &region.fd(), &bells)?;
    Ok(Kept::Region(Box::new(region), ours))
}

fn answer(conn: &OwnedFd, mode: &str) -> std::io::Result<Kept> {
    match mode {
        "silent" => Ok(Kept::Nothing),
        "status-fds" => {
            let (client, server) = crate::plant::lingering()?;
            let answer = Msg::refusal(Kind::Reject, 0, "a status with a file in it").encode();
            crate::plant::send_with_fd(conn.as_fd(), &answer, client.as_fd())?;
            // At once, before the asker can have read and closed its copy:
            // then its copy is the last reference.
            drop(client);
            Ok(Kept::Tcp(server))
        }
        "garbage" => {
            let junk: Vec<u8> = (0..256u32).map(|i| (i * 37 + 11) as u8).collect();
            sock::send_raw(conn, &junk)?;
            Ok(Kept::Nothing)
        }
        "pipe" => {
            let mut fds = [0; 2];
            // SAFETY: pipe2 fills two descriptors on success.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: both descriptors are fresh and ours.
            let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
            let bells = hello(conn, real_region()?.size() as u64, &r)?;
            drop(r);
            Ok(Kept::Fd(w, bells))
        }
        "unsealed" | "truncated" => {
            let region = real_region()?;
            let fd = copy_of(&region, region.size() as u64, 0)?;
            let bells = hello(conn, region.size() as u64, &fd)?;
            if mode == "truncated" {
                // SAFETY: ftruncate on our own memfd.
                if unsafe { libc::ftruncate(fd.as_raw_fd(), 0) } != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(Kept::Fd(fd, bells))
        }
        "small" => {
            let region = real_region()?;
            let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
            let fd = copy_of(&region, abi::HEADER_AREA, seals)?;
            let bells = hello(conn, region.size() as u64, &fd)?;
            Ok(Kept::Fd(fd, bells))
        }
        "queue-lie" => {
            let region = real_region()?;
            let bells = hello_queues(conn, 4, region.size() as u64, &region.fd())?;
            Ok(Kept::Region(Box::new(region), bells))
        }
        "queue-header" => {
            let region = real_region()?;
            let size = region.size() as u64;
            let fd = copy_of(&region, size, 0)?;
            let at = |field: usize| field as libc::off_t;
            let (rings, queues) = (8u32.to_le_bytes(), 4u32.to_le_bytes());
            let ring_count = core::mem::offset_of!(abi::RegionHeader, ring_count);
            let queue_count = core::mem::offset_of!(abi::RegionHeader, queue_count);
            let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW;
            // SAFETY: pwrite of 4-byte buffers into our own memfd, inside
            // its header area; fcntl on it.
            let ok = unsafe {
                libc::pwrite(fd.as_raw_fd(), rings.as_ptr().cast(), 4, at(ring_count)) == 4
                    && libc::pwrite(fd.as_raw_fd(), queues.as_ptr().cast(), 4, at(queue_count)) == 4
                    && libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) == 0
            };
            if !ok {
                return Err(std::io::Error::last_os_error());
            }
            let bells = hello_queues(conn, 4, size, &fd)?;
            Ok(Kept::Fd(fd, bells))
        }
        "valid" => {
            let region = real_region()?;
            let bells = hello(conn, region.size() as u64, &region.fd())?;
            Ok(Kept::Region(Box::new(region), bells))
        }
        "bell-pipe" => {
            let mut fds = [0; 2];
            // SAFETY: pipe2 fills two descriptors on success.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: both descriptors are fresh and ours.
            let (r, _w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
            bad_bell(conn, Some(r.as_fd()))
        }
        "bell-eventfd" => {
            // SAFETY: a plain system call; the result is checked.
            let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
            if raw < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: a fresh descriptor we own.
            let efd = unsafe { OwnedFd::from_raw_fd(raw) };
            bad_bell(conn, Some(efd.as_fd()))
        }
        "bell-stream" => {
            let (a, _b) = std::os::unix::net::UnixStream::pair()?;
            bad_bell(conn, Some(a.as_fd()))
        }
        "bell-dup" => {
            let region = real_region()?;
            let (ours, theirs) = Doorbell::pairs(1)?;
            let bells = [theirs[0].as_fd(), theirs[0].as_fd()];
            hello_with(conn, 1, region.size() as u64, &region.fd(), &bells)?;
            Ok(Kept::Region(Box::new(region), ours))
        }
        "bell-few" => bad_bell(conn, None),
        other => Err(std::io::Error::other(format!("unknown mode {other}"))),
    }
}

fn real_region() -> std::io::Result<Region> {
    let opts = RegionOptions {
        hugepages: HugepagePolicy::Never,
        numa_node: None,
    };
    Region::create(Geometry::DEFAULT, 1, GENERATION, &opts).map_err(std::io::Error::other)
}

/// A new memfd of `size` bytes holding `region`'s header area, with
/// `seals` added.
fn copy_of(region: &Region, size: u64, seals: libc::c_int) -> std::io::Result<OwnedFd> {
    // SAFETY: a literal C string; the result is checked.
    let raw = unsafe {
        libc::memfd_create(
            c"vecring".as_ptr(),
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
        )
    };
    if raw < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `raw` is a fresh descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let header = abi::HEADER_AREA as usize;
    // SAFETY: ftruncate on our memfd; pwrite reads `header` bytes from the
    // start of the region's mapping, which is at least that long.
    let ok = unsafe {
        libc::ftruncate(raw, size as libc::off_t) == 0
            && libc::pwrite(raw, region.as_ptr().cast(), header, 0) == header as isize
            && (seals == 0 || libc::fcntl(raw, libc::F_ADD_SEALS, seals) == 0)
    };
    if !ok {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fd)
}
