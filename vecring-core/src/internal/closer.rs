//! Descriptors a peer may have planted, and where they are closed.
//!
//! Linux frees a file in the thread that drops the last reference to it,
//! and some files take long to free: a TCP socket with `SO_LINGER` set and
//! data queued against a zero window sleeps in its final close for up to
//! the linger time (an hour, if the peer likes). A peer can pass such a
//! file in `SCM_RIGHTS` to any of our sockets it can write to. Then reading
//! the message without a control buffer (which discards the descriptor),
//! reading it with one too small (the kernel closes the rest), or closing
//! our socket while the message is queued (the kernel purges it) runs that
//! final close on our thread: the master's control loop, or a DPDK lcore.
//!
//! Two defences, in this order:
//! - **refuse**: [`refuse_rights`] turns `SO_PASSRIGHTS` off (Linux 6.16+)
//!   on every socket of ours a peer can write to and that has no business
//!   receiving descriptors: the master's listener (accepted connections
//!   inherit it) and our doorbell ends. A peer's `sendmsg` with
//!   `SCM_RIGHTS` then fails with `EPERM`, and nothing can be queued.
//! - **defer**: where the kernel cannot refuse (an older kernel such as
//!   Debian 12's 6.1, or the slave's connection, which must receive the
//!   region), descriptors we receive are taken with a control buffer large
//!   enough for any message (`SCM_MAX_FD`) and handed to [`dispose`], and
//!   such sockets are closed through it too ([`PeerSocket`]). [`dispose`]
//!   gives them to closer threads that nobody waits for: a blocking close
//!   holds a closer, never a thread that matters. Closers are few
//!   ([`MAX_CLOSERS`]); past them, what waits stays open in the queue,
//!   counted ([`stats`]), until a closer is free.
//!
//! What the closers hold, and what a read may yet bring, is bounded
//! ([`room`]): a peer whose files never finish closing ties up the closers,
//! and everything passed after them waits open in the queue, a slot of our
//! descriptor table each. Once the table is full the kernel closes what a
//! message carries beyond it on the reading thread, the very close the
//! closers exist to keep away. So every read that may carry descriptors
//! first reserves room for a whole message ([`SCM_MAX_FD`]) within
//! [`limit`], half of the soft `RLIMIT_NOFILE`; without room the reader
//! leaves the socket unread (the master stops accepting and reading
//! peers, a receiver checks its ring by timer) until closes complete.
//!
//! `VECRING_NO_PASSRIGHTS=1` in the environment makes [`refuse_rights`]
//! report the kernel as unable, so that the deferring path, the only one on
//! older kernels, can be tested on a new one.

use std::collections::VecDeque;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};

/// `SO_PASSRIGHTS` (`asm-generic/socket.h`, Linux 6.16); the libc crate
/// does not name it yet.
const SO_PASSRIGHTS: libc::c_int = 83;

/// Descriptors one `SCM_RIGHTS` message carries at most (`SCM_MAX_FD`).
pub const SCM_MAX_FD: usize = 253;

/// Closer threads at most: each can be held by one final close.
pub const MAX_CLOSERS: usize = 4;

/// Whether the kernel refuses descriptors on a socket once asked, and we
/// may ask (not disabled by `VECRING_NO_PASSRIGHTS=1`).
pub fn rights_refusable() -> bool {
    static ABLE: OnceLock<bool> = OnceLock::new();
    *ABLE.get_or_init(|| {
        if std::env::var_os("VECRING_NO_PASSRIGHTS").is_some_and(|v| v == "1") {
            return false;
        }
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors.
        let rc = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        };
        if rc < 0 {
            return false;
        }
        // Asked, then tried: a descriptor sent to the refusing end must fail
        // with EPERM (on an architecture whose option numbers differ, 83
        // may name another option that the kernel accepts).
        let ok = set_passrights_off(fds[0]) && sending_refused(fds[1], fds[0]);
        // SAFETY: both descriptors are ours and closed once; what was sent
        // on them, if anything, is one of them.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
        ok
    })
}

/// Whether sending `what` in `SCM_RIGHTS` on `from` fails with `EPERM`.
fn sending_refused(from: libc::c_int, what: libc::c_int) -> bool {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut cmsg = [0u64; 4];
    // SAFETY: an all-zero msghdr is valid.
    let mut hdr: libc::msghdr = unsafe { core::mem::zeroed() };
    hdr.msg_iov = &mut iov;
    hdr.msg_iovlen = 1;
    hdr.msg_control = cmsg.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE is a size computation.
    hdr.msg_controllen = unsafe { libc::CMSG_SPACE(4) } as usize;
    // SAFETY: the control buffer (32 bytes) holds one header with one
    // descriptor.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&hdr);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(4) as usize;
        core::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>(), what);
    }
    // SAFETY: `hdr` points to live buffers; non-blocking, no signal.
    let rc = unsafe { libc::sendmsg(from, &hdr, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
    rc < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

fn set_passrights_off(fd: libc::c_int) -> bool {
    let off: libc::c_int = 0;
    // SAFETY: an int option of our own socket, `off` live for the call.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            SO_PASSRIGHTS,
            (&off as *const libc::c_int).cast(),
            core::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    rc == 0
}

/// Turns descriptor passing off on `fd`, a socket of ours; true if the
/// kernel now refuses `SCM_RIGHTS` sent to it (false on kernels before
/// 6.16, or when disabled for a test).
pub fn refuse_rights(fd: BorrowedFd<'_>) -> bool {
    rights_refusable() && set_passrights_off(fd.as_raw_fd())
}

/// Descriptors held for peers: open in the closers (queued or closing),
/// plus room reserved by reads in progress ([`room`]).
static HELD: AtomicUsize = AtomicUsize::new(0);

/// Descriptors the closers may hold, with the room reserved by reads:
/// half of the soft `RLIMIT_NOFILE` (read once), at least two messages'
/// worth, at most 4096.
pub fn limit() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        // SAFETY: an all-zero rlimit is valid; getrlimit fills it.
        let mut r: libc::rlimit = unsafe { core::mem::zeroed() };
        // SAFETY: `r` is live for the call.
        let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0 {
            r.rlim_cur
        } else {
            1024
        };
        let soft = usize::try_from(soft).unwrap_or(usize::MAX);
        (soft / 2).clamp(2 * SCM_MAX_FD, 4096)
    })
}

/// Room reserved in our descriptor table for what one read may bring; it
/// is given back when this drops (what the read brought is counted by
/// [`dispose`] on its own).
#[derive(Debug)]
#[must_use = "the room is given back when this drops"]
pub struct Room(usize);

impl Drop for Room {
    fn drop(&mut self) {
        // Relaxed: a count; nothing is published with it.
        HELD.fetch_sub(self.0, Ordering::Relaxed);
    }
}

/// Reserves room for `n` descriptors a read may bring, if the closers
/// and the reads in progress leave it within [`limit`].
pub fn room(n: usize) -> Option<Room> {
    reserve_in(&HELD, limit(), n).then(|| Room(n))
}

/// Adds `n` to `held` if the sum stays within `limit`.
fn reserve_in(held: &AtomicUsize, limit: usize, n: usize) -> bool {
    // Relaxed: a count; nothing is published with it. The update is one
    // atomic step, so two readers cannot both take the last room.
    held.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |h| {
        h.checked_add(n).filter(|&t| t <= limit)
    })
    .is_ok()
}

/// Whether a read that may carry a whole message of descriptors, and the
/// socket it comes on, would find room now (a check, reserving nothing).
pub fn has_room() -> bool {
    // Relaxed: see `room`.
    HELD.load(Ordering::Relaxed) + SCM_MAX_FD < limit()
}

/// Why a read found no [`room`]: the descriptors still closing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoRoom(pub u64);

impl std::fmt::Display for NoRoom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} descriptors passed by peers are still closing: nothing more is read from peers until some close",
            self.0
        )
    }
}

impl std::error::Error for NoRoom {}

/// The error of a read that found no [`room`] (nothing was read):
/// `WouldBlock`, carrying [`NoRoom`] ([`is_no_room`]).
pub fn no_room() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::WouldBlock, NoRoom(stats().open))
}

/// Whether `e` is [`no_room`]'s.
pub fn is_no_room(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|r| r.is::<NoRoom>())
}

/// What the closers have seen, for counters and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CloserStats {
    /// Descriptors a peer passed to us (received on a socket that should
    /// carry none, or beyond what a message may carry).
    pub planted: u64,
    /// Descriptors handed to the closers so far.
    pub deferred: u64,
    /// Of those, still open: queued, or in a close that has not returned.
    pub open: u64,
    /// Those, plus the room reads in progress reserved ([`room`]).
    pub held: u64,
}

static PLANTED: AtomicU64 = AtomicU64::new(0);

/// Counts `n` descriptors a peer passed where none belong.
pub fn count_planted(n: usize) {
    PLANTED.fetch_add(n as u64, Ordering::Relaxed);
}

/// The closers' counters.
pub fn stats() -> CloserStats {
    let q = queue();
    let s = q.state.lock().unwrap_or_else(|e| e.into_inner());
    CloserStats {
        planted: PLANTED.load(Ordering::Relaxed),
        deferred: s.deferred,
        open: s.fds.len() as u64 + s.busy as u64,
        // Relaxed: see `room`.
        held: HELD.load(Ordering::Relaxed) as u64,
    }
}

struct State {
    fds: VecDeque<OwnedFd>,
    /// Closer threads that exist.
    threads: usize,
    /// Of those, inside a close.
    busy: usize,
    deferred: u64,
}

struct Queue {
    state: Mutex<State>,
    ready: Condvar,
}

fn queue() -> &'static Queue {
    static Q: OnceLock<Queue> = OnceLock::new();
    Q.get_or_init(|| Queue {
        state: Mutex::new(State {
            fds: VecDeque::new(),
            threads: 0,
            busy: 0,
            deferred: 0,
        }),
        ready: Condvar::new(),
    })
}

/// Closes `fd` on a closer thread: never blocks the caller (beyond a
/// short lock), whatever the file is.
pub fn dispose(fd: OwnedFd) {
    let q = queue();
    // Relaxed: see `room`. Given back by the closer once the close returns.
    HELD.fetch_add(1, Ordering::Relaxed);
    let spawn = {
        let mut s = q.state.lock().unwrap_or_else(|e| e.into_inner());
        s.fds.push_back(fd);
        s.deferred += 1;
        // Every existing closer is inside a close (or none exists): one
        // more, up to the bound.
        let idle = s.threads - s.busy;
        let spawn = idle < s.fds.len() && s.threads < MAX_CLOSERS;
        if spawn {
            s.threads += 1;
        }
        spawn
    };
    q.ready.notify_one();
    if spawn {
        let started = std::thread::Builder::new()
            .name("vecring-closer".into())
            .spawn(move || closer(q));
        if started.is_err() {
            // No thread (EAGAIN): the queue keeps the descriptor open for
            // an existing closer, or until one can start.
            let mut s = q.state.lock().unwrap_or_else(|e| e.into_inner());
            s.threads -= 1;
        }
    }
}

fn closer(q: &'static Queue) {
    let mut s = q.state.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        match s.fds.pop_front() {
            Some(fd) => {
                s.busy += 1;
                drop(s);
                drop(fd);
                // Relaxed: see `room`.
                HELD.fetch_sub(1, Ordering::Relaxed);
                s = q.state.lock().unwrap_or_else(|e| e.into_inner());
                s.busy -= 1;
            }
            None => s = q.ready.wait(s).unwrap_or_else(|e| e.into_inner()),
        }
    }
}

/// A socket a peer can write to, closed where that cannot block us: at
/// once if the kernel refuses descriptors on it ([`refuse_rights`]), else
/// by the closers ([`dispose`]), since its queue may hold a planted file.
#[derive(Debug)]
pub struct PeerSocket {
    fd: Option<OwnedFd>,
    refused: bool,
}

impl PeerSocket {
    /// `fd`, with descriptor passing turned off if `refuse` (and if the
    /// kernel can).
    pub fn new(fd: OwnedFd, refuse: bool) -> Self {
        let refused = refuse && refuse_rights(fd.as_fd());
        PeerSocket {
            fd: Some(fd),
            refused,
        }
    }

    /// `fd`, a socket that inherited refusal from its listener (`refused`:
    /// what the listener's [`PeerSocket::refuses`] said).
    pub fn inherited(fd: OwnedFd, refused: bool) -> Self {
        PeerSocket {
            fd: Some(fd),
            refused,
        }
    }

    /// Whether the kernel refuses descriptors sent to this socket.
    pub fn refuses(&self) -> bool {
        self.refused
    }
}

impl core::ops::Deref for PeerSocket {
    type Target = OwnedFd;
    fn deref(&self) -> &OwnedFd {
        self.fd.as_ref().expect("present until drop")
    }
}

impl AsFd for PeerSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_ref().expect("present until drop").as_fd()
    }
}

impl Drop for PeerSocket {
    fn drop(&mut self) {
        if let Some(fd) = self.fd.take() {
            if self.refused {
                drop(fd);
            } else {
                // The close itself waits for a closer, but the peer must
                // see the hang-up now: a slave that closes its link and
                // opens it again at once finds its master already told.
                // Shutting down never blocks and leaves the queue (and
                // what it may hold) to the close. Fails only on a socket
                // never connected, which has no peer to tell.
                // SAFETY: a plain system call on a descriptor we own.
                unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_RDWR) };
                dispose(fd);
            }
        }
    }
}

/// Takes ownership of every descriptor in `hdr`'s `SCM_RIGHTS` control
/// messages, in order (as [`rights_in`] finds them).
///
/// # Safety
/// `hdr` is a msghdr that `recvmsg` just filled (its control buffer live,
/// `msg_controllen` as the kernel set it), and its descriptors are owned by
/// nobody else: each is taken once.
pub(crate) unsafe fn take_rights(hdr: &libc::msghdr) -> Received {
    let mut got = Received::default();
    if hdr.msg_control.is_null() || hdr.msg_controllen == 0 {
        return got;
    }
    // SAFETY: per the caller, the control buffer is live and the kernel
    // filled its first `msg_controllen` bytes.
    let control =
        unsafe { core::slice::from_raw_parts(hdr.msg_control.cast::<u8>(), hdr.msg_controllen) };
    for fd in rights_in(control) {
        // SAFETY: per the caller, each descriptor is ours to own once.
        got.push(unsafe { OwnedFd::from_raw_fd(fd) });
    }
    got
}

/// The descriptor numbers carried by the `SCM_RIGHTS` messages of a
/// control buffer as `recvmsg` fills it, in order. Every header, and the
/// data its length claims, must lie inside `control`: the walk stops at
/// the first that does not (the kernel never writes one, but the walk is
/// fuzzed on arbitrary bytes: `fuzz/fuzz_targets/handshake_recv.rs`).
/// Takes ownership of nothing.
pub fn rights_in(control: &[u8]) -> Vec<libc::c_int> {
    const HDR: usize = core::mem::size_of::<libc::cmsghdr>();
    // CMSG_ALIGN: headers and their data are aligned to `size_t`.
    let align = |n: usize| n.next_multiple_of(core::mem::size_of::<usize>());
    let data_at = align(HDR);
    let mut fds = Vec::new();
    let mut off = 0;
    while control.len().saturating_sub(off) >= HDR {
        // SAFETY: `HDR` bytes from `off` lie inside `control`; a cmsghdr is
        // plain integers, valid for any bytes, read unaligned.
        let c: libc::cmsghdr = unsafe { core::ptr::read_unaligned(control[off..].as_ptr().cast()) };
        let len = c.cmsg_len as usize;
        if len < data_at || len > control.len() - off {
            break;
        }
        if c.cmsg_level == libc::SOL_SOCKET && c.cmsg_type == libc::SCM_RIGHTS {
            fds.extend(
                control[off + data_at..off + len]
                    .chunks_exact(core::mem::size_of::<libc::c_int>())
                    .map(|b| libc::c_int::from_ne_bytes(b.try_into().expect("4 bytes"))),
            );
        }
        off = off.saturating_add(align(len));
    }
    fds
}

/// Descriptors received in one message: whatever the receiver does not
/// [`take`](Self::take) is disposed of by the closers when this drops.
#[derive(Debug, Default)]
pub struct Received(VecDeque<OwnedFd>);

impl Received {
    pub(crate) fn push(&mut self, fd: OwnedFd) {
        self.0.push_back(fd);
    }

    /// How many there are (still).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether none came.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The next one, in the order they came.
    pub fn take(&mut self) -> Option<OwnedFd> {
        self.0.pop_front()
    }

    /// All that remain, in order.
    pub fn take_all(&mut self) -> Vec<OwnedFd> {
        self.0.drain(..).collect()
    }
}

impl Drop for Received {
    fn drop(&mut self) {
        for fd in self.0.drain(..) {
            dispose(fd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn pipe() -> (OwnedFd, OwnedFd) {
        let mut p = [0; 2];
        // SAFETY: `p` has room for two descriptors.
        assert_eq!(unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: fresh descriptors we own.
        unsafe { (OwnedFd::from_raw_fd(p[0]), OwnedFd::from_raw_fd(p[1])) }
    }

    #[test]
    fn a_disposed_descriptor_is_closed_on_another_thread() {
        let (r, w) = pipe();
        let before = stats().deferred;
        dispose(w);
        assert!(stats().deferred > before);
        // The write end closes: the read end sees EOF.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let mut b = [0u8; 1];
            // SAFETY: one byte into a live buffer.
            let n = unsafe { libc::read(r.as_raw_fd(), b.as_mut_ptr().cast(), 1) };
            if n == 0 {
                break;
            }
            assert!(Instant::now() < deadline, "the closer never closed it");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn room_is_reserved_within_the_limit_and_never_past_it() {
        let held = AtomicUsize::new(0);
        assert!(reserve_in(&held, 600, SCM_MAX_FD));
        assert!(reserve_in(&held, 600, SCM_MAX_FD));
        assert!(!reserve_in(&held, 600, SCM_MAX_FD), "506 + 253 > 600");
        assert_eq!(held.load(Ordering::Relaxed), 2 * SCM_MAX_FD);
        assert!(reserve_in(&held, 600, 600 - 2 * SCM_MAX_FD));
        assert!(!reserve_in(&held, 600, 1));
        assert!(!reserve_in(&held, usize::MAX, usize::MAX), "no overflow");
    }

    #[test]
    fn the_limit_leaves_room_for_two_messages() {
        assert!(limit() >= 2 * SCM_MAX_FD);
        assert!(limit() <= 4096);
        // A room taken and dropped leaves the count where it was (other
        // tests dispose concurrently: compare after settling is not
        // possible, so take a room of 0, which always fits).
        let r = room(0).expect("an empty room always fits");
        drop(r);
    }

    #[test]
    fn received_descriptors_not_taken_are_disposed_of() {
        let (r, w) = pipe();
        let mut got = Received::default();
        got.push(w);
        assert_eq!(got.len(), 1);
        drop(got);
        let mut p = libc::pollfd {
            fd: r.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; HUP comes once the write end closed.
        let rc = unsafe { libc::poll(&mut p, 1, 5000) };
        assert_eq!(rc, 1);
        assert_ne!(p.revents & libc::POLLHUP, 0);
    }
}
