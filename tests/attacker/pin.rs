//! `pin`: a slave that keeps a region's pages without keeping the region.
//! Each round it attaches, `vmsplice`s one byte of every page of its
//! mapping into a pipe it keeps, unmaps, closes the region and leaves.
//! The pipe's buffers hold references to the pages, so the host cannot
//! reuse them, while no descriptor or mapping of the region is left for
//! the master to see.

use crate::sock;
use crate::{report, until_stdin_closes, Args};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant};
use vecring_core::internal::handshake::{self, Kind, Msg};
use vecring_core::memory::HUGEPAGE_SIZE;

/// How long one round waits for each of the master's answers.
const ANSWER: Duration = Duration::from_secs(3);

/// A pipe (its read end; the write end is closed once filled) holding one
/// byte of each page of a region.
fn pin_pages(memfd: &OwnedFd) -> io::Result<(OwnedFd, usize)> {
    let (size, _, huge) = sock::describe_fd(memfd)?;
    let size = size as usize;
    let page = if huge { HUGEPAGE_SIZE as usize } else { 4096 };
    let pages = size / page;
    // SAFETY: a fresh shared read-only mapping of the whole memfd; checked.
    let base = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            size,
            libc::PROT_READ,
            libc::MAP_SHARED,
            memfd.as_raw_fd(),
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into `fds`.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        let e = io::Error::last_os_error();
        // SAFETY: unmapping the mapping made above.
        unsafe { libc::munmap(base, size) };
        return Err(e);
    }
    // SAFETY: pipe2 succeeded; both descriptors are ours.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // One buffer slot per page (best effort: the default is 16).
    let want = (pages.max(16) * 4096).next_power_of_two() as libc::c_int;
    // SAFETY: F_SETPIPE_SZ on our own pipe.
    unsafe { libc::fcntl(wr.as_raw_fd(), libc::F_SETPIPE_SZ, want) };
    let mut spliced = 0;
    for i in 0..pages {
        let iov = libc::iovec {
            // SAFETY: within the mapping (i < pages, pages * page <= size).
            iov_base: unsafe { base.cast::<u8>().add(i * page) }.cast(),
            iov_len: 1,
        };
        // SAFETY: `iov` describes one mapped byte; the kernel takes a
        // reference to its page for the pipe buffer.
        let n = unsafe { libc::vmsplice(wr.as_raw_fd(), &iov, 1, libc::SPLICE_F_NONBLOCK) };
        if n == 1 {
            spliced += 1;
        }
    }
    // SAFETY: unmapping the mapping made above; the pipe keeps the pages.
    unsafe { libc::munmap(base, size) };
    Ok((rd, spliced))
}

/// Rounds of attach, pin, leave for `secs` seconds or until more than
/// `stop-above` regions were pinned; reports `result rounds=N regions=R
/// pages=P refused=F`, then keeps the pipes until stdin closes.
pub fn run(args: &Args) -> bool {
    let path = Path::new(args.get("socket"));
    let end = Instant::now() + Duration::from_secs(args.num("secs"));
    let stop_above = args.num("stop-above") as usize;
    let mut pipes: Vec<OwnedFd> = Vec::new();
    let (mut rounds, mut pages, mut refused) = (0u64, 0usize, 0u64);
    while Instant::now() < end && pipes.len() <= stop_above {
        rounds += 1;
        let Ok(conn) = sock::connect(path, Duration::from_secs(1)) else {
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        if sock::send_raw(&conn, &sock::request()).is_err() {
            continue;
        }
        let (generation, memfd) = match handshake::recv(&conn, ANSWER) {
            Ok((m, mut fds)) if m.kind == Kind::Hello && !fds.is_empty() => {
                (m.generation, fds.take().expect("not empty"))
            }
            _ => {
                refused += 1;
                continue;
            }
        };
        match pin_pages(&memfd) {
            Ok((pipe, n)) => {
                pipes.push(pipe);
                pages += n;
            }
            Err(e) => eprintln!("pin: {e}"),
        }
        drop(memfd);
        // Attach for real, then leave at once.
        let _ = sock::send_raw(&conn, &Msg::new(Kind::Ack, generation).encode());
        let _ = handshake::recv(&conn, ANSWER);
        drop(conn);
    }
    report(&format!(
        "result rounds={rounds} regions={} pages={pages} refused={refused}",
        pipes.len()
    ));
    until_stdin_closes();
    drop(pipes);
    true
}
