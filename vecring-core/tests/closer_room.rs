//! Reads that may carry descriptors wait for room in the descriptor table
//! (`closer::room`): with the closers' bound taken, a doorbell's drain and
//! a handshake read leave the message queued, unread, and say why; once
//! room is back they read it and hand its descriptors to the closers.
//!
//! A test binary of its own: the bound is the process's, and taking all
//! of it would starve any other test running beside it.
#![cfg(not(loom))]

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::Duration;
use vecring_core::internal::closer;
use vecring_core::internal::doorbell::Doorbell;
use vecring_core::internal::handshake::{self, Kind, Msg};

fn me() -> libc::ucred {
    // SAFETY: getpid, getuid and getgid have no preconditions.
    unsafe {
        libc::ucred {
            pid: libc::getpid(),
            uid: libc::getuid(),
            gid: libc::getgid(),
        }
    }
}

/// Sends `bytes` on `sock` with `fd`, `n` times over, in `SCM_RIGHTS`.
fn send_fds(sock: BorrowedFd<'_>, bytes: &[u8], fd: BorrowedFd<'_>, n: usize) {
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    let mut cmsg = [0u64; 64];
    let data = (n * 4) as u32;
    // SAFETY: an all-zero msghdr is valid.
    let mut hdr: libc::msghdr = unsafe { core::mem::zeroed() };
    hdr.msg_iov = &mut iov;
    hdr.msg_iovlen = 1;
    hdr.msg_control = cmsg.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE is a size computation.
    hdr.msg_controllen = unsafe { libc::CMSG_SPACE(data) } as usize;
    assert!(hdr.msg_controllen <= core::mem::size_of_val(&cmsg));
    // SAFETY: the control buffer holds one header with `n` descriptors.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&hdr);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(data) as usize;
        let out = libc::CMSG_DATA(c).cast::<i32>();
        for i in 0..n {
            core::ptr::write_unaligned(out.add(i), fd.as_raw_fd());
        }
    }
    // SAFETY: `hdr` points to live buffers.
    let rc = unsafe { libc::sendmsg(sock.as_raw_fd(), &hdr, libc::MSG_NOSIGNAL) };
    assert!(rc >= 0, "sendmsg: {}", std::io::Error::last_os_error());
}

fn seqpacket_pair() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for two descriptors.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    assert_eq!(rc, 0);
    // SAFETY: two fresh descriptors we own.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

#[test]
fn without_room_a_drain_and_a_handshake_read_leave_the_message_unread() {
    let devnull = std::fs::File::open("/dev/null").unwrap();

    // A doorbell end that travelled (never refuses descriptors), with a
    // ring that carries eight descriptors.
    let (ours, theirs) = Doorbell::pairs(1).unwrap();
    let theirs = Doorbell::received(theirs, &me()).unwrap();
    send_fds(ours[0].as_fd(), b"!", devnull.as_fd(), 8);
    // And a connection with a Request that carries eight.
    let (a, b) = seqpacket_pair();
    send_fds(
        a.as_fd(),
        &Msg::new(Kind::Request, 0).encode(),
        devnull.as_fd(),
        8,
    );

    let all = closer::room(closer::limit()).expect("nothing else holds room here");
    assert!(!closer::has_room());
    let drained = theirs[0].drain();
    assert_eq!(drained.count, 0);
    assert!(drained.no_room, "{drained:?}");
    assert!(!theirs[0].tainted(), "nothing was read");
    let err = handshake::recv(&b, Duration::ZERO).unwrap_err();
    assert!(closer::is_no_room(&err), "{err}");
    assert_eq!(err.kind(), std::io::ErrorKind::WouldBlock);
    assert_eq!(closer::stats().planted, 0);

    drop(all);
    assert!(closer::has_room());
    let drained = theirs[0].drain();
    assert_eq!(drained.count, 1, "{drained:?}");
    assert!(!drained.no_room);
    assert!(theirs[0].tainted(), "the ring's descriptors were found");
    let (m, fds) = handshake::recv(&b, Duration::ZERO).unwrap();
    assert_eq!(m.kind, Kind::Request);
    assert_eq!(fds.len(), 8);
    drop(fds);
    // Every descriptor read went to the closers, and they close them.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while closer::stats().open > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            closer::stats()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let s = closer::stats();
    assert_eq!(s.deferred, 16, "{s:?}");
    assert_eq!(s.held, 0, "{s:?}");
}
