//! The master/slave handshake over a Unix `SOCK_SEQPACKET` socket at
//! `<run-dir>/<domain>/<link>.sock`.
//!
//! ```text
//!  slave                                   master
//!    | connect ----------------------------> | accept, SO_PEERCRED check
//!    | REQUEST ----------------------------> | (REJECT if not allowed)
//!    | SO_PEERCRED check of the master       | one-slave check, bound on
//!    | (nothing it sends is read before)     | regions, back-off; new region
//!    | <------------- HELLO + memfd (SCM_RIGHTS), or REJECT / BUSY(reason)
//!    | check message, seals, size, header    |
//!    | ACK(generation) or NACK(reason) ----> |
//!    |                                       | seal F_SEAL_FUTURE_WRITE,
//!    | <-------------------- READY(generation) populate its mapping
//!    | check the seal, populate its mapping  |
//!    |          ... link up ...              |
//!    | EOF either way = link down            |
//! ```
//!
//! The slave speaks first, so that a process that merely connects gets
//! nothing, and no memory exists for it, until its credentials passed and
//! it asked. The master seals the region only after the slave has mapped
//! it (a sealed memfd can no longer be mapped writable), and the link is
//! up only once both have checked the seal.
//!
//! Every message is one [`MSG_LEN`]-byte datagram of little-endian fields;
//! a message of another size, magic or kind is a protocol error. The socket
//! stays open while the link is up: the kernel closes it when a peer dies,
//! however it dies, and the survivor sees EOF.

use crate::abi;
use crate::closer::{self, PeerSocket, Received};
use crate::geometry::Geometry;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

/// Bytes in every handshake message.
pub const MSG_LEN: usize = 256;
const MSG_MAGIC: u32 = u32::from_le_bytes(*b"VRHS");
const TEXT_AT: usize = 64;
const TEXT_LEN: usize = MSG_LEN - TEXT_AT;

/// What a message says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Kind {
    /// Master → slave, with the region's fd.
    Hello = 1,
    /// Master → slave: refused, with a reason.
    Reject = 2,
    /// Slave → master: region accepted.
    Ack = 3,
    /// Slave → master: region refused, with a reason.
    Nack = 4,
    /// Slave → master, first message: asks for a region.
    Request = 5,
    /// Master → slave: the region is sealed; the link is up.
    Ready = 6,
    /// Master → slave: not now (too many regions still held by departed
    /// peers, or another slave is being served); try again later.
    Busy = 7,
    /// Anyone → master, first message instead of `Request`: asks for the
    /// link's status (see [`crate::status`]); answered with one datagram of
    /// text, then the connection is closed.
    Status = 8,
}

/// A decoded handshake message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Msg {
    /// Message kind.
    pub kind: Kind,
    /// Sender's major ABI version.
    pub version_major: u16,
    /// Sender's minor ABI version.
    pub version_minor: u16,
    /// Feature bits.
    pub features: u64,
    /// Link generation the message is about.
    pub generation: u64,
    /// Slots per ring (Hello).
    pub slot_count: u32,
    /// Bytes per slot (Hello).
    pub slot_size: u32,
    /// Largest frame (Hello).
    pub max_frame_len: u32,
    /// Queue pairs in the region (Hello); the header must say the same.
    pub queue_count: u16,
    /// Region size in bytes (Hello).
    pub region_size: u64,
    /// Reason (Reject, Nack), at most 192 bytes of UTF-8.
    pub text: String,
}

impl Msg {
    /// A message of `kind` about `generation` with no geometry.
    pub fn new(kind: Kind, generation: u64) -> Self {
        Msg {
            kind,
            version_major: abi::VERSION_MAJOR,
            version_minor: abi::VERSION_MINOR,
            features: 0,
            generation,
            slot_count: 0,
            slot_size: 0,
            max_frame_len: 0,
            queue_count: 0,
            region_size: 0,
            text: String::new(),
        }
    }

    /// A Hello announcing a region of `queues` queue pairs.
    pub fn hello(geometry: Geometry, queues: u16, region_size: u64, generation: u64) -> Self {
        Msg {
            slot_count: geometry.slot_count(),
            slot_size: geometry.slot_size(),
            max_frame_len: geometry.max_frame_len(),
            queue_count: queues,
            region_size,
            ..Msg::new(Kind::Hello, generation)
        }
    }

    /// A Reject or Nack with a reason.
    pub fn refusal(kind: Kind, generation: u64, reason: &str) -> Self {
        Msg {
            text: reason.to_string(),
            ..Msg::new(kind, generation)
        }
    }

    /// Encodes the message.
    pub fn encode(&self) -> [u8; MSG_LEN] {
        let mut b = [0u8; MSG_LEN];
        b[0..4].copy_from_slice(&MSG_MAGIC.to_le_bytes());
        b[4..8].copy_from_slice(&(self.kind as u32).to_le_bytes());
        b[8..10].copy_from_slice(&self.version_major.to_le_bytes());
        b[10..12].copy_from_slice(&self.version_minor.to_le_bytes());
        b[16..24].copy_from_slice(&self.features.to_le_bytes());
        b[24..32].copy_from_slice(&self.generation.to_le_bytes());
        b[32..36].copy_from_slice(&self.slot_count.to_le_bytes());
        b[36..40].copy_from_slice(&self.slot_size.to_le_bytes());
        b[40..44].copy_from_slice(&self.max_frame_len.to_le_bytes());
        b[44..46].copy_from_slice(&self.queue_count.to_le_bytes());
        b[48..56].copy_from_slice(&self.region_size.to_le_bytes());
        let mut text = self.text.as_bytes();
        if text.len() > TEXT_LEN {
            let mut end = TEXT_LEN;
            while !self.text.is_char_boundary(end) {
                end -= 1;
            }
            text = &text[..end];
        }
        b[TEXT_AT..TEXT_AT + text.len()].copy_from_slice(text);
        b
    }

    /// Decodes a received datagram.
    ///
    /// # Errors
    /// A description of what is malformed.
    pub fn decode(b: &[u8]) -> Result<Self, String> {
        if b.len() != MSG_LEN {
            return Err(format!(
                "handshake message of {} bytes, expected {MSG_LEN}",
                b.len()
            ));
        }
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or_default());
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or_default());
        if u32_at(0) != MSG_MAGIC {
            return Err(format!(
                "handshake magic {:#x}, expected {MSG_MAGIC:#x}",
                u32_at(0)
            ));
        }
        let kind = match u32_at(4) {
            1 => Kind::Hello,
            2 => Kind::Reject,
            3 => Kind::Ack,
            4 => Kind::Nack,
            5 => Kind::Request,
            6 => Kind::Ready,
            7 => Kind::Busy,
            8 => Kind::Status,
            k => return Err(format!("unknown handshake message kind {k}")),
        };
        let text = &b[TEXT_AT..];
        let end = text.iter().position(|&c| c == 0).unwrap_or(TEXT_LEN);
        Ok(Msg {
            kind,
            version_major: u16_at(8),
            version_minor: u16_at(10),
            features: u64_at(16),
            generation: u64_at(24),
            slot_count: u32_at(32),
            slot_size: u32_at(36),
            max_frame_len: u32_at(40),
            queue_count: u16_at(44),
            region_size: u64_at(48),
            text: String::from_utf8_lossy(&text[..end])
                .escape_debug()
                .to_string(),
        })
    }
}

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
    // Before bind: no connection can exist yet that did not inherit it.
    let fd = PeerSocket::new(seqpacket()?, true);
    // SAFETY: `addr` is a valid sockaddr_un of `len` bytes.
    cvt(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_un).cast(),
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
    // The slave's end receives the region and its doorbells: it cannot
    // refuse descriptors, so it is closed by the closers.
    let fd = PeerSocket::new(seqpacket()?, false);
    set_nonblocking(&fd)?;
    // SAFETY: `addr` is a valid sockaddr_un of `len` bytes.
    cvt(unsafe {
        libc::connect(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_un).cast(),
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

/// Descriptors one message carries at most: a region and a doorbell per
/// ring of the most queues.
pub const MAX_FDS: usize = 1 + 2 * crate::abi::MAX_QUEUES as usize;

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
/// malformed message, or the system error.
pub fn recv(conn: &OwnedFd, timeout: Duration) -> io::Result<(Msg, Received)> {
    if !wait_readable(conn, timeout)? {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "peer did not answer the handshake in time",
        ));
    }
    let mut bytes = [0u8; MSG_LEN + 1];
    let mut iov = libc::iovec {
        iov_base: bytes.as_mut_ptr().cast(),
        iov_len: bytes.len(),
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
    if n == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "peer closed the connection",
        ));
    }
    if hdr.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "oversized handshake message",
        ));
    }
    let msg = Msg::decode(&bytes[..n as usize])
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    if fds.len() > MAX_FDS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} descriptors attached, at most {MAX_FDS}", fds.len()),
        ));
    }
    Ok((msg, fds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        let g = Geometry::new(512, 4096).unwrap();
        let hello = Msg::hello(g, 4, 6 << 20, 42);
        // A Hello carries the geometry and the region's size, each at its
        // place in the datagram.
        assert_eq!(
            (
                hello.slot_count,
                hello.slot_size,
                hello.max_frame_len,
                hello.region_size
            ),
            (512, 4096, g.max_frame_len(), 6 << 20)
        );
        let b = hello.encode();
        assert_eq!(u32::from_le_bytes(b[32..36].try_into().unwrap()), 512);
        assert_eq!(u64::from_le_bytes(b[24..32].try_into().unwrap()), 42);
        assert_eq!(u64::from_le_bytes(b[48..56].try_into().unwrap()), 6 << 20);
        assert_eq!(u16::from_le_bytes(b[44..46].try_into().unwrap()), 4);
        let back = Msg::decode(&b).unwrap();
        assert_eq!(back.queue_count, 4);
        assert_eq!(back, hello);
        assert_eq!(
            (back.kind, back.generation, back.region_size),
            (Kind::Hello, 42, 6 << 20)
        );
        assert_eq!(back.version_major, abi::VERSION_MAJOR);
        // Every byte of a two-byte field is its own (versions of any value).
        let odd = Msg {
            version_major: 0x0102,
            version_minor: 0x0304,
            ..Msg::new(Kind::Request, 7)
        };
        assert_eq!(Msg::decode(&odd.encode()).unwrap(), odd);
        let nack = Msg::refusal(
            Kind::Nack,
            3,
            "region slot count mismatch: ours 1024, theirs 512",
        );
        assert_eq!(Msg::decode(&nack.encode()).unwrap(), nack);
    }

    #[test]
    fn long_reasons_are_cut_at_a_char_boundary() {
        let reason = "é".repeat(200);
        let msg = Msg::decode(&Msg::refusal(Kind::Reject, 0, &reason).encode()).unwrap();
        // Whole characters only: no half of a two-byte one at the cut.
        assert_eq!(msg.text, "é".repeat(TEXT_LEN / 2));
        // A cut that lands inside a character backs off to its start.
        let odd = format!("a{}", "é".repeat(200));
        let msg = Msg::decode(&Msg::refusal(Kind::Reject, 0, &odd).encode()).unwrap();
        assert_eq!(msg.text, format!("a{}", "é".repeat((TEXT_LEN - 1) / 2)));
        // A reason that fits exactly is kept whole.
        let exact = "x".repeat(TEXT_LEN);
        let msg = Msg::decode(&Msg::refusal(Kind::Reject, 0, &exact).encode()).unwrap();
        assert_eq!(msg.text, exact);
    }

    #[test]
    fn malformed_messages_are_refused() {
        assert!(Msg::decode(&[0u8; 10]).unwrap_err().contains("10 bytes"));
        let mut b = Msg::new(Kind::Ack, 1).encode();
        b[0] = b'X';
        assert!(Msg::decode(&b).unwrap_err().contains("magic"));
        let mut b = Msg::new(Kind::Ack, 1).encode();
        b[4] = 99;
        assert!(Msg::decode(&b).unwrap_err().contains("kind 99"));
    }

    #[test]
    fn fd_passing_over_a_socket_pair() {
        use std::os::fd::AsFd;
        let dir = std::env::temp_dir().join(format!("vecring-hs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("l.sock");
        let _ = std::fs::remove_file(&path);
        let listener = listen(&path).unwrap();
        let client = connect(&path).unwrap();
        let server = accept(&listener).unwrap();
        let cred = peer_credentials(&server).unwrap();
        assert_eq!(cred.pid as u32, std::process::id());
        let msg = Msg::new(Kind::Ack, 9);
        send(&server, &msg, &[client.as_fd()]).unwrap();
        let (got, fds) = recv(&client, Duration::from_secs(1)).unwrap();
        assert_eq!(got, msg);
        assert_eq!(fds.len(), 1);
        let many: Vec<_> = (0..MAX_FDS).map(|_| client.as_fd()).collect();
        send(&server, &msg, &many).unwrap();
        let (_, fds) = recv(&client, Duration::from_secs(1)).unwrap();
        assert_eq!(
            fds.len(),
            MAX_FDS,
            "a region and the doorbells of 16 queues"
        );
        let too_many: Vec<_> = (0..=MAX_FDS).map(|_| client.as_fd()).collect();
        assert!(send(&server, &msg, &too_many).is_err());
        drop(server);
        let err = recv(&client, Duration::from_secs(1)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
