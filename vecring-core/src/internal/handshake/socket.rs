//! The handshake's socket calls: a listening master, a connecting slave,
//! peer credentials, and one [`Msg`] with its descriptors each way.

use super::wire::{Msg, MSG_LEN};
use crate::closer::{self, PeerSocket, Received};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

fn cvt(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn sockaddr(path: &Path) -> io::Result<(libc::sockaddr_un, libc::socklen_t)> {
    // SAFETY: an all-zero sockaddr_un is valid.
    let mut addr: libc::sockaddr_un = unsafe { core::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_os_str().as_bytes();
    if bytes.len() >= addr.sun_path.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "socket path {} is {} bytes; Unix sockets allow {}",
                path.display(),
                bytes.len(),
                addr.sun_path.len() - 1
            ),
        ));
    }
    for (dst, &src) in addr.sun_path.iter_mut().zip(bytes) {
        *dst = src as libc::c_char;
    }
    let len = core::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1;
    Ok((addr, len as libc::socklen_t))
}

/// The address of an abstract name: a leading NUL, then the name, no
/// terminating NUL (the length says where it ends).
fn abstract_sockaddr(name: &str) -> io::Result<(libc::sockaddr_un, libc::socklen_t)> {
    // SAFETY: an all-zero sockaddr_un is valid.
    let mut addr: libc::sockaddr_un = unsafe { core::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() >= addr.sun_path.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "abstract socket name @{name} is {} bytes; Unix sockets allow 1 to {}",
                bytes.len(),
                addr.sun_path.len() - 1
            ),
        ));
    }
    for (dst, &src) in addr.sun_path[1..].iter_mut().zip(bytes) {
        *dst = src as libc::c_char;
    }
    let len = core::mem::size_of::<libc::sa_family_t>() + 1 + bytes.len();
    Ok((addr, len as libc::socklen_t))
}

fn seqpacket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket creation; the result is checked.
    let fd =
        cvt(unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: `fd` is a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Binds and listens on `path`. Where the kernel can, the listener and
/// every connection it accepts refuse descriptors: nothing a slave sends
/// carries any ([`crate::closer`]).
///
/// # Errors
/// The system error.
pub fn listen(path: &Path) -> io::Result<PeerSocket> {
    let (addr, len) = sockaddr(path)?;
    listen_on(&addr, len)
}

/// Binds and listens on the abstract name `name` (without its leading NUL)
/// in the calling thread's network namespace, as [`listen`] does on a path.
/// An abstract name has no file and no mode: whoever is in the namespace
/// can connect, and the name goes when the socket closes.
///
/// # Errors
/// The system error (`EADDRINUSE` when the name is taken).
pub fn listen_abstract(name: &str) -> io::Result<PeerSocket> {
    let (addr, len) = abstract_sockaddr(name)?;
    listen_on(&addr, len)
}

fn listen_on(addr: &libc::sockaddr_un, len: libc::socklen_t) -> io::Result<PeerSocket> {
    // Before bind: no connection can exist yet that did not inherit it.
    let fd = PeerSocket::new(seqpacket()?, true);
    // The file bind makes gets the socket's own mode less the umask: owner
    // only from the start, so nobody else can connect before the master
    // has set the mode it wants (a umask of 0 would otherwise leave it
    // open to all until then). An abstract name has no file; no effect.
    // SAFETY: fchmod on our own socket descriptor.
    cvt(unsafe { libc::fchmod(fd.as_raw_fd(), 0o600) })?;
    // SAFETY: `addr` is a valid sockaddr_un of `len` bytes.
    cvt(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (addr as *const libc::sockaddr_un).cast(),
            len,
        )
    })?;
    // A backlog deep enough that a burst of connections does not turn a
    // legitimate slave away; the master drains it at each wake-up.
    // SAFETY: listen on our bound socket.
    cvt(unsafe { libc::listen(fd.as_raw_fd(), 64) })?;
    // Accepting never blocks: the master's loop accepts until EAGAIN.
    set_nonblocking(&fd)?;
    Ok(fd)
}

fn set_nonblocking(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: fcntl on our own descriptor.
    let flags = cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) })?;
    // SAFETY: as above.
    cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) })?;
    Ok(())
}

/// Connects to `path` without ever blocking: a listener whose backlog is
/// full gives `EAGAIN` at once instead of holding the caller.
///
/// # Errors
/// The system error (`ENOENT`/`ECONNREFUSED` when no master listens,
/// `EAGAIN` when its backlog is full).
pub fn connect(path: &Path) -> io::Result<PeerSocket> {
    let (addr, len) = sockaddr(path)?;
    connect_to(&addr, len)
}

/// Connects to the abstract name `name` (without its leading NUL) in the
/// network namespace the calling thread is in, as [`connect`] does.
///
/// # Errors
/// As [`connect`].
pub fn connect_abstract(name: &str) -> io::Result<PeerSocket> {
    let (addr, len) = abstract_sockaddr(name)?;
    connect_to(&addr, len)
}

fn connect_to(addr: &libc::sockaddr_un, len: libc::socklen_t) -> io::Result<PeerSocket> {
    // The slave's end receives the region and its doorbells: it cannot
    // refuse descriptors, so it is closed by the closers.
    let fd = PeerSocket::new(seqpacket()?, false);
    set_nonblocking(&fd)?;
    // SAFETY: `addr` is a valid sockaddr_un of `len` bytes.
    cvt(unsafe {
        libc::connect(
            fd.as_raw_fd(),
            (addr as *const libc::sockaddr_un).cast(),
            len,
        )
    })?;
    Ok(fd)
}

/// Accepts one connection, non-blocking like the listener: sending to a
/// peer that never reads cannot hold the caller.
///
/// # Errors
/// The system error (`WouldBlock` when none is queued).
pub fn accept(listener: &PeerSocket) -> io::Result<PeerSocket> {
    // SAFETY: accept4 with null address arguments; the result is checked.
    let fd = cvt(unsafe {
        libc::accept4(
            listener.as_raw_fd(),
            core::ptr::null_mut(),
            core::ptr::null_mut(),
            libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
        )
    })?;
    // SAFETY: `fd` is a fresh descriptor we own. It inherited the
    // listener's refusal of descriptors.
    Ok(PeerSocket::inherited(
        unsafe { OwnedFd::from_raw_fd(fd) },
        listener.refuses(),
    ))
}

/// The peer's credentials (pid, uid, gid) as seen in our namespaces.
///
/// # Errors
/// The system error.
pub fn peer_credentials(conn: &OwnedFd) -> io::Result<libc::ucred> {
    // SAFETY: zeroed ucred is a valid out-parameter.
    let mut cred: libc::ucred = unsafe { core::mem::zeroed() };
    let mut len = core::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`.
    cvt(unsafe {
        libc::getsockopt(
            conn.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    })?;
    Ok(cred)
}

/// Descriptors one message carries at most (the ABI's: a Hello's region
/// and a doorbell per ring of the most queues).
pub use vecring_abi::wire::MAX_FDS;

/// Bytes of a control buffer for what we send, in `u64`s for alignment.
const CMSG_WORDS: usize = (MAX_FDS + 1 + 8) / 2 + 4;

/// The receiving control buffer holds as many descriptors as one message
/// can carry (`SCM_MAX_FD`), so that the kernel never closes the excess of
/// a truncated one on our thread (see [`crate::closer`]), in `u64`s.
const RECV_CMSG_WORDS: usize = (closer::SCM_MAX_FD + 8) / 2 + 4;

/// Sends `msg`, with `fds` attached (at most [`MAX_FDS`]).
///
/// # Errors
/// The system error (`EPIPE` if the peer is gone; never a signal).
pub fn send(conn: &OwnedFd, msg: &Msg, fds: &[BorrowedFd<'_>]) -> io::Result<()> {
    if fds.len() > MAX_FDS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} descriptors, at most {MAX_FDS}", fds.len()),
        ));
    }
    let bytes = msg.encode();
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    let mut cmsg_buf = [0u64; CMSG_WORDS];
    // SAFETY: an all-zero msghdr is valid.
    let mut hdr: libc::msghdr = unsafe { core::mem::zeroed() };
    hdr.msg_iov = &mut iov;
    hdr.msg_iovlen = 1;
    if !fds.is_empty() {
        let data = core::mem::size_of_val(fds) as u32;
        // SAFETY: CMSG_SPACE is a pure size computation.
        let space = unsafe { libc::CMSG_SPACE(data) } as usize;
        debug_assert!(space <= core::mem::size_of_val(&cmsg_buf));
        hdr.msg_control = cmsg_buf.as_mut_ptr().cast();
        hdr.msg_controllen = space;
        // SAFETY: msg_control points to `space` writable, aligned bytes, so
        // the first header and its `fds.len()` descriptors fit.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&hdr);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(data) as usize;
            let out = libc::CMSG_DATA(c).cast::<RawFd>();
            for (i, fd) in fds.iter().enumerate() {
                core::ptr::write_unaligned(out.add(i), fd.as_raw_fd());
            }
        }
    }
    // SAFETY: `hdr` points to live buffers; MSG_NOSIGNAL avoids SIGPIPE.
    let n = unsafe { libc::sendmsg(conn.as_raw_fd(), &hdr, libc::MSG_NOSIGNAL) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    if n as usize != MSG_LEN {
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            "short handshake send",
        ));
    }
    Ok(())
}

/// Sends `bytes` as one datagram, without waiting.
///
/// # Errors
/// The system error (`EPIPE` if the peer is gone; never a signal).
pub fn send_bytes(conn: &OwnedFd, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: `bytes` is live for the call; MSG_NOSIGNAL avoids SIGPIPE.
    let n = unsafe {
        libc::send(
            conn.as_raw_fd(),
            bytes.as_ptr().cast(),
            bytes.len(),
            libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Waits until `fd` is readable (or hung up) for at most `timeout`.
/// Returns false on timeout.
///
/// # Errors
/// The system error.
pub fn wait_readable(fd: &OwnedFd, timeout: Duration) -> io::Result<bool> {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    loop {
        // SAFETY: one valid pollfd.
        let rc = unsafe { libc::poll(&mut p, 1, ms) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        return Ok(rc > 0);
    }
}

/// Receives one message, and the descriptors attached to it, within
/// `timeout`. More than [`MAX_FDS`] descriptors, or a truncated or
/// malformed datagram, is an error. Descriptors the caller does not take
/// from the [`Received`] are closed by the closers, never on the calling
/// thread (a peer may pass a file whose close blocks: [`crate::closer`]).
///
/// # Errors
/// `TimedOut`, `UnexpectedEof` when the peer closed, `InvalidData` for a
/// malformed message, `WouldBlock` carrying [`closer::NoRoom`] when the
/// closers hold too many descriptors to make room for a message's
/// ([`closer::room`]; nothing was read), or the system error.
pub fn recv(conn: &OwnedFd, timeout: Duration) -> io::Result<(Msg, Received)> {
    if !wait_readable(conn, timeout)? {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "peer did not answer the handshake in time",
        ));
    }
    let mut bytes = [0u8; MSG_LEN + 1];
    let (n, flags, fds) = recv_bytes(conn, &mut bytes)?;
    let msg = check_received(&bytes[..n], flags, fds.len())?;
    Ok((msg, fds))
}

/// Reads one datagram into `buf` without waiting, with a control buffer
/// for as many descriptors as a message can carry (which the kernel
/// therefore never closes on this thread) and after reserving room for
/// them ([`closer::room`]). Returns its length, its `msg_flags` and the
/// descriptors that came with it (disposed of by the closers unless
/// taken).
///
/// # Errors
/// `WouldBlock` (nothing queued, or [`closer::NoRoom`]: nothing was
/// read), or the system error.
pub fn recv_bytes(conn: &OwnedFd, buf: &mut [u8]) -> io::Result<(usize, libc::c_int, Received)> {
    // Room in our descriptor table for whatever the message carries, or
    // the message stays unread (see `closer::room`).
    let _room = closer::room(closer::SCM_MAX_FD).ok_or_else(closer::no_room)?;
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut cmsg_buf = [0u64; RECV_CMSG_WORDS];
    // SAFETY: an all-zero msghdr is valid.
    let mut hdr: libc::msghdr = unsafe { core::mem::zeroed() };
    hdr.msg_iov = &mut iov;
    hdr.msg_iovlen = 1;
    hdr.msg_control = cmsg_buf.as_mut_ptr().cast();
    hdr.msg_controllen = core::mem::size_of_val(&cmsg_buf);
    // SAFETY: buffers outlive the call; MSG_CMSG_CLOEXEC marks received fds.
    let n = unsafe {
        libc::recvmsg(
            conn.as_raw_fd(),
            &mut hdr,
            libc::MSG_CMSG_CLOEXEC | libc::MSG_DONTWAIT,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // Take ownership of every received descriptor first, so none leaks
    // whatever happens next.
    // SAFETY: recvmsg just filled `hdr`; its descriptors are new and ours.
    let fds: Received = unsafe { closer::take_rights(&hdr) };
    Ok((n as usize, hdr.msg_flags, fds))
}

/// The error of a message that came with more descriptors than any
/// message carries ([`MAX_FDS`]); the count. [`passed_fds`] finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooManyFds(pub usize);

impl std::fmt::Display for TooManyFds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} descriptors attached, at most {MAX_FDS}", self.0)
    }
}

impl std::error::Error for TooManyFds {}

/// How many descriptors came with the message `e` refused for carrying
/// too many (the closers have them), if that is why.
pub fn passed_fds(e: &io::Error) -> Option<usize> {
    e.get_ref()
        .and_then(|r| r.downcast_ref::<TooManyFds>())
        .map(|t| t.0)
}

/// What [`recv`] makes of one datagram once the socket is out of the way:
/// `bytes` as `recvmsg` returned them (at most [`MSG_LEN`]` + 1`, so that
/// an oversized datagram shows), `flags` its `msg_flags`, and `fds` how
/// many descriptors came with it. Pure, so that it can be fuzzed
/// (`fuzz/fuzz_targets/handshake_recv.rs`).
///
/// # Errors
/// `UnexpectedEof` for an empty read (the peer closed), `InvalidData` for
/// a truncated datagram or control buffer, a malformed message, or more
/// than [`MAX_FDS`] descriptors.
pub fn check_received(bytes: &[u8], flags: libc::c_int, fds: usize) -> io::Result<Msg> {
    if bytes.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "peer closed the connection",
        ));
    }
    if flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "oversized handshake message",
        ));
    }
    let msg = Msg::decode(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    if fds > MAX_FDS {
        return Err(io::Error::new(io::ErrorKind::InvalidData, TooManyFds(fds)));
    }
    Ok(msg)
}
