//! The receiving side of the handshake past `Msg::decode` (which
//! `handshake_decode` fuzzes): what `handshake::recv` makes of a datagram's
//! size, its flags and the descriptors that came with it.
//!
//! Each input is used three ways:
//! - as a control buffer for `closer::rights_in`, the walk of `SCM_RIGHTS`
//!   messages that `recv` takes ownership through: it never reads outside
//!   the buffer (AddressSanitizer) and finds at most one descriptor per
//!   four bytes;
//! - through `handshake::check_received` with the flags (`input[0] % 4`:
//!   none, `MSG_TRUNC`, `MSG_CTRUNC`, `MSG_EOR`) and descriptor count
//!   (`input[1]`) the first two bytes choose and the rest as the datagram: a
//!   message is accepted only at `MSG_LEN` bytes, without truncation, with
//!   at most `MAX_FDS` descriptors, and as `Msg::decode` reads it;
//! - over a real `SOCK_SEQPACKET` pair: the same datagram is sent with
//!   `input[1] % 40` descriptors attached
//!   (duplicates of one open file; more than `MAX_FDS` is possible) and
//!   received by `handshake::recv` (once the closers have room for it),
//!   whose answer must agree with the rules
//!   above and carry exactly the descriptors sent.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;
use std::time::Duration;
use vecring_core::internal::closer::{has_room, is_no_room, rights_in, Received};
use vecring_core::internal::handshake::{check_received, recv, Msg, MAX_FDS, MSG_LEN};

/// The file whose duplicates are attached.
fn file() -> RawFd {
    static FILE: OnceLock<std::fs::File> = OnceLock::new();
    FILE.get_or_init(|| std::fs::File::open("/dev/null").expect("/dev/null"))
        .as_raw_fd()
}

fn pair() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors; the result is checked.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    assert_eq!(rc, 0, "socketpair: {}", std::io::Error::last_os_error());
    // SAFETY: two fresh descriptors, ours alone.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

/// Sends `bytes` with `count` duplicates of [`file`] attached; false if
/// the kernel refused (too large a datagram for the socket buffer).
fn send_with_fds(sock: &OwnedFd, bytes: &[u8], count: usize) -> bool {
    let fds: Vec<RawFd> = (0..count).map(|_| file()).collect();
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    let mut cmsg = vec![0u64; 64];
    // SAFETY: an all-zero msghdr is valid.
    let mut hdr: libc::msghdr = unsafe { core::mem::zeroed() };
    hdr.msg_iov = &mut iov;
    hdr.msg_iovlen = 1;
    if count > 0 {
        let data = (count * core::mem::size_of::<RawFd>()) as u32;
        // SAFETY: CMSG_SPACE is a pure size computation.
        let space = unsafe { libc::CMSG_SPACE(data) } as usize;
        assert!(space <= cmsg.len() * 8);
        hdr.msg_control = cmsg.as_mut_ptr().cast();
        hdr.msg_controllen = space;
        // SAFETY: the control buffer holds `space` aligned bytes: one header
        // and `count` descriptors.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&hdr);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(data) as usize;
            let out = libc::CMSG_DATA(c).cast::<RawFd>();
            for (i, fd) in fds.iter().enumerate() {
                core::ptr::write_unaligned(out.add(i), *fd);
            }
        }
    }
    // SAFETY: `hdr` points to live buffers.
    let n = unsafe {
        libc::sendmsg(
            sock.as_raw_fd(),
            &hdr,
            libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
        )
    };
    n >= 0
}

/// [`recv`], waiting first for room when the closers are behind: the
/// descriptors of earlier inputs are closed on other threads, and at tens
/// of thousands of inputs a second they can hold the most the reader
/// allows, when `recv` refuses to read (`closer::NoRoom`: nothing was
/// read, the datagram is still queued). That refusal is the designed
/// answer to a flood, not this input's verdict, so it is waited out (at
/// most 10 s, then the input fails).
fn recv_with_room(conn: &OwnedFd) -> std::io::Result<(Msg, Received)> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match recv(conn, Duration::ZERO) {
            Err(e) if is_no_room(&e) && std::time::Instant::now() < deadline => {
                while !has_room() && std::time::Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            other => return other,
        }
    }
}

/// Whether `check_received` may accept this datagram.
fn acceptable(datagram: &[u8], flags: libc::c_int, fds: usize) -> bool {
    datagram.len() == MSG_LEN
        && flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) == 0
        && fds <= MAX_FDS
        && Msg::decode(datagram).is_ok()
}

fuzz_target!(|data: &[u8]| {
    // The walk of a control buffer, aligned as `recvmsg`'s is.
    let mut aligned = vec![0u64; data.len().div_ceil(8)];
    // SAFETY: `aligned` holds at least `data.len()` bytes.
    let control = unsafe {
        let p = aligned.as_mut_ptr().cast::<u8>();
        core::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len());
        core::slice::from_raw_parts(p, data.len())
    };
    assert!(rights_in(control).len() <= data.len() / 4);
    // Unaligned too: the walk reads headers unaligned.
    let _ = rights_in(data);

    let [flags, count, ref datagram @ ..] = *data else {
        return;
    };
    // The pure checks, with the flags and descriptor count the input names.
    let flags = match flags & 3 {
        0 => 0,
        1 => libc::MSG_TRUNC,
        2 => libc::MSG_CTRUNC,
        _ => libc::MSG_EOR,
    };
    let got = check_received(datagram, flags, usize::from(count));
    assert_eq!(
        got.is_ok(),
        acceptable(datagram, flags, usize::from(count)),
        "{got:?}"
    );
    if let Ok(m) = got {
        assert_eq!(Ok(m), Msg::decode(datagram));
    }

    // The whole receive, over a socket.
    let count = usize::from(count % 40);
    let rest = datagram;
    let (master, slave) = pair();
    if !send_with_fds(&slave, rest, count) {
        return;
    }
    match recv_with_room(&master) {
        Ok((m, fds)) => {
            assert!(
                acceptable(rest, 0, count),
                "accepted {} bytes, {count} descriptors",
                rest.len()
            );
            assert_eq!(Ok(m), Msg::decode(rest));
            assert_eq!(fds.len(), count);
        }
        Err(e) => {
            // An empty datagram reads as the peer's end of file; anything
            // else refused is one the rules refuse.
            assert!(
                rest.is_empty() || !acceptable(rest, 0, count),
                "refused {} bytes, {count} descriptors: {e}",
                rest.len()
            );
        }
    }
});
