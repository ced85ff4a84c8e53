//! Raw socket and descriptor helpers: what an attacker does by hand
//! rather than through `vecring_core::internal::handshake`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;
use vecring_core::internal::handshake::{Kind, Msg, MSG_LEN};

/// The slave's first message, `Kind::Request`.
pub fn request() -> [u8; MSG_LEN] {
    Msg::new(Kind::Request, 0).encode()
}

/// The master's last message, `Kind::Ready`, for `generation`.
pub fn ready(generation: u64) -> [u8; MSG_LEN] {
    Msg::new(Kind::Ready, generation).encode()
}

fn cvt(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// The address of `path`, or of the abstract name after a leading `@`
/// (`@vecring/1/d/l`: a NUL, then the name, no terminating NUL).
pub fn sockaddr(path: &Path) -> (libc::sockaddr_un, libc::socklen_t) {
    // SAFETY: an all-zero sockaddr_un is valid.
    let mut addr: libc::sockaddr_un = unsafe { core::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_os_str().as_bytes();
    assert!(bytes.len() < addr.sun_path.len(), "socket path too long");
    let (bytes, skip, nul) = match bytes.strip_prefix(b"@") {
        Some(name) => (name, 1, 0),
        None => (bytes, 0, 1),
    };
    for (dst, &src) in addr.sun_path[skip..].iter_mut().zip(bytes) {
        *dst = src as libc::c_char;
    }
    let len = core::mem::size_of::<libc::sa_family_t>() + skip + bytes.len() + nul;
    (addr, len as libc::socklen_t)
}

/// A fresh `SOCK_SEQPACKET` Unix socket.
pub fn seqpacket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket creation; the result is checked.
    let fd =
        cvt(unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: `fd` is a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Connects to `path`, waiting at most `timeout` for room in the
/// listener's backlog (a Unix socket's connect waits for `SO_SNDTIMEO`).
pub fn connect(path: &Path, timeout: Duration) -> io::Result<OwnedFd> {
    let fd = seqpacket()?;
    let tv = libc::timeval {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_usec: timeout.subsec_micros() as libc::suseconds_t,
    };
    // SAFETY: setsockopt reads a timeval that outlives the call.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDTIMEO,
            (&tv as *const libc::timeval).cast(),
            core::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    })?;
    let (addr, len) = sockaddr(path);
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

/// Connects without waiting; `EAGAIN` when the backlog is full.
pub fn connect_nonblocking(path: &Path) -> io::Result<OwnedFd> {
    let fd = seqpacket()?;
    // SAFETY: fcntl on our own descriptor.
    cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) })?;
    let (addr, len) = sockaddr(path);
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

/// Binds `path` (replacing a file there) and listens with `backlog`.
pub fn listen(path: &Path, backlog: i32) -> io::Result<OwnedFd> {
    let _ = std::fs::remove_file(path);
    let fd = seqpacket()?;
    let (addr, len) = sockaddr(path);
    // SAFETY: `addr` is a valid sockaddr_un of `len` bytes.
    cvt(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_un).cast(),
            len,
        )
    })?;
    // SAFETY: listen on our bound socket.
    cvt(unsafe { libc::listen(fd.as_raw_fd(), backlog) })?;
    Ok(fd)
}

/// Sends one datagram of raw bytes, no descriptor.
pub fn send_raw(conn: &OwnedFd, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: `bytes` is live for the call; MSG_NOSIGNAL avoids SIGPIPE.
    let n = unsafe {
        libc::send(
            conn.as_raw_fd(),
            bytes.as_ptr().cast(),
            bytes.len(),
            libc::MSG_NOSIGNAL,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Reads and discards one datagram if one arrives within `timeout`;
/// returns its length, 0 at EOF, None on timeout.
pub fn drain_one(conn: &OwnedFd, timeout: Duration) -> Option<usize> {
    if !vecring_core::internal::handshake::wait_readable(conn, timeout).unwrap_or(false) {
        return None;
    }
    let mut buf = [0u8; 1024];
    // SAFETY: reads into a live buffer of its stated length.
    let n = unsafe {
        libc::recv(
            conn.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT,
        )
    };
    Some(n.max(0) as usize)
}

/// `"ok"` for success, else the errno's name.
pub fn outcome(rc: libc::c_int) -> String {
    if rc == 0 {
        return "ok".into();
    }
    errno_name(io::Error::last_os_error().raw_os_error().unwrap_or(0))
}

/// A short name for the errnos the attacks expect, else `errno-N`.
pub fn errno_name(errno: i32) -> String {
    match errno {
        libc::EPERM => "EPERM".into(),
        libc::EACCES => "EACCES".into(),
        libc::EINVAL => "EINVAL".into(),
        libc::ENOSPC => "ENOSPC".into(),
        libc::ENOMEM => "ENOMEM".into(),
        libc::EAGAIN => "EAGAIN".into(),
        e => format!("errno-{e}"),
    }
}

/// Size, inode and whether `fd` is on hugetlbfs.
pub fn describe_fd(fd: &OwnedFd) -> io::Result<(u64, u64, bool)> {
    // SAFETY: zeroed stat is a valid out-parameter.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: fstat writes into `st`, which outlives the call.
    cvt(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    // SAFETY: zeroed statfs is a valid out-parameter.
    let mut fs: libc::statfs = unsafe { core::mem::zeroed() };
    // SAFETY: fstatfs writes into `fs`, which outlives the call.
    let huge = unsafe { libc::fstatfs(fd.as_raw_fd(), &mut fs) } == 0
        && fs.f_type == libc::HUGETLBFS_MAGIC;
    Ok((st.st_size as u64, st.st_ino, huge))
}
