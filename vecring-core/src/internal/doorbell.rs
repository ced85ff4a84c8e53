//! Doorbells: one `AF_UNIX` datagram socket pair per ring, through which a
//! side signals the other when it said it sleeps (the words of waiting
//! are defined in `ring::wait`).
//!
//! The master creates the pairs with each region and sends the slave's
//! ends with the memfd; each side keeps one end of each ring's pair. A side
//! rings by sending a one-byte datagram on its end; the other side's end
//! becomes readable. On a ring's pair only one kind of signal travels each
//! way: the producer's end receives "space" (from the consumer), the
//! consumer's end "data" (from the producer).
//!
//! Why a socket pair and not an eventfd: whoever holds an eventfd shares
//! its open file description, so a hostile peer could clear `O_NONBLOCK`
//! on it and fill its counter, and our next `write` would block forever.
//! A datagram socket takes `MSG_DONTWAIT` per call, which the peer cannot
//! undo: a peer that never reads makes our send fail with `EAGAIN` (a
//! wakeup is already pending), a peer that left makes it fail with
//! `ECONNREFUSED`; neither blocks nor raises a signal.
//!
//! A doorbell carries no descriptors. Our ends refuse them where the
//! kernel can (`SO_PASSRIGHTS`, see [`crate::closer`]); elsewhere a drain
//! takes whatever a peer passed with a control buffer and hands it to the
//! closers, marks the doorbell [`tainted`](Doorbell::tainted) (the link
//! then ends the peer's generation), and an end that may hold such a
//! message is closed by the closers too: never on the data path's thread.

use crate::closer;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// Datagrams read by one [`Doorbell::drain`] at most: a peer that rings
/// constantly cannot keep a drain going.
const DRAIN_MAX: usize = 64;

/// What one [`Doorbell::drain`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Drained {
    /// Datagrams read.
    pub count: usize,
    /// It stopped before the end because a datagram's descriptors might
    /// not fit ([`closer::room`]): what is queued stays unread.
    pub no_room: bool,
}

/// One side's end of a ring's doorbell pair.
#[derive(Debug)]
pub struct Doorbell {
    /// `None` only while dropping.
    fd: Option<OwnedFd>,
    /// The kernel refuses descriptors sent to this end (since before the
    /// peer could reach it).
    refused: bool,
    /// A drain found descriptors on it.
    tainted: AtomicBool,
}

impl Doorbell {
    /// `count` new pairs: ours and theirs, in ring order.
    ///
    /// # Errors
    /// The system error (typically `EMFILE`).
    pub fn pairs(count: usize) -> io::Result<(Vec<Doorbell>, Vec<OwnedFd>)> {
        let mut ours = Vec::with_capacity(count);
        let mut theirs = Vec::with_capacity(count);
        for _ in 0..count {
            let mut fds = [0; 2];
            // SAFETY: `fds` has room for the two descriptors.
            let rc = unsafe {
                libc::socketpair(
                    libc::AF_UNIX,
                    libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                    0,
                    fds.as_mut_ptr(),
                )
            };
            if rc < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: socketpair returned two new descriptors we own.
            let (mine, other) =
                unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
            // Before the peer has its end: nothing can be queued on ours
            // that the refusal did not see.
            let refused = closer::refuse_rights(mine.as_fd());
            ours.push(Doorbell::new(mine, refused));
            theirs.push(other);
        }
        Ok((ours, theirs))
    }

    /// Takes the doorbells a master sent, after checking that each is what
    /// a master makes: an `AF_UNIX` datagram socket created by the process
    /// whose credentials are `master` (a socket pair is stamped with its
    /// creator's), no two the same.
    ///
    /// # Errors
    /// Which descriptor is not a doorbell, and why.
    pub fn received(fds: Vec<OwnedFd>, master: &libc::ucred) -> Result<Vec<Doorbell>, String> {
        match Self::check_received(&fds, master) {
            // Ends that travelled may hold messages queued before we had
            // them: never refused, closed by the closers.
            Ok(()) => Ok(fds.into_iter().map(|fd| Doorbell::new(fd, false)).collect()),
            Err(e) => {
                fds.into_iter().for_each(closer::dispose);
                Err(e)
            }
        }
    }

    fn new(fd: OwnedFd, refused: bool) -> Self {
        Doorbell {
            fd: Some(fd),
            refused,
            tainted: AtomicBool::new(false),
        }
    }

    fn fd(&self) -> &OwnedFd {
        self.fd.as_ref().expect("present until drop")
    }

    /// Whether a drain found descriptors a peer passed on this end.
    pub fn tainted(&self) -> bool {
        // Relaxed: a flag the control thread polls; nothing else is
        // published with it.
        self.tainted.load(Ordering::Relaxed)
    }

    fn check_received(fds: &[OwnedFd], master: &libc::ucred) -> Result<(), String> {
        let mut inodes = Vec::with_capacity(fds.len());
        for (i, fd) in fds.iter().enumerate() {
            let bad = |why: String| {
                format!("doorbell {i} is not a socket pair made by the master ({why})")
            };
            // SAFETY: an all-zero stat is valid; fstat fills it.
            let mut st: libc::stat = unsafe { core::mem::zeroed() };
            // SAFETY: a valid descriptor and a writable stat.
            if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } < 0 {
                return Err(bad(io::Error::last_os_error().to_string()));
            }
            if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
                return Err(bad(format!("file mode {:o}", st.st_mode)));
            }
            let domain = sockopt_int(fd, libc::SO_DOMAIN).map_err(|e| bad(e.to_string()))?;
            let kind = sockopt_int(fd, libc::SO_TYPE).map_err(|e| bad(e.to_string()))?;
            if domain != libc::AF_UNIX || kind != libc::SOCK_DGRAM {
                return Err(bad(format!("socket domain {domain}, type {kind}")));
            }
            let cred = crate::handshake::peer_credentials(fd).map_err(|e| bad(e.to_string()))?;
            if cred.pid != master.pid || cred.uid != master.uid {
                return Err(bad(format!(
                    "made by pid {} uid {}, the master is pid {} uid {}",
                    cred.pid, cred.uid, master.pid, master.uid
                )));
            }
            if inodes.contains(&(st.st_dev, st.st_ino)) {
                return Err(bad("the same socket as another doorbell".into()));
            }
            inodes.push((st.st_dev, st.st_ino));
        }
        Ok(())
    }

    /// Rings: wakes the other side if it waits on its end. Never blocks;
    /// a full queue (a wakeup already pending) or a departed peer is
    /// ignored, as the peer's own timeouts cover a signal not delivered.
    #[inline]
    pub fn ring(&self) {
        // SAFETY: a one-byte buffer live for the call; MSG_DONTWAIT and
        // MSG_NOSIGNAL make the call neither block nor raise SIGPIPE.
        unsafe {
            libc::send(
                self.fd().as_raw_fd(),
                b"!".as_ptr().cast(),
                1,
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
    }

    /// Whether the other end is closed in every process: a ring is then
    /// refused (`ECONNREFUSED` the first time, `ENOTCONN` after). Rings
    /// it, if not: a ring is harmless to a live peer.
    pub fn peer_closed(&self) -> bool {
        // SAFETY: a one-byte buffer live for the call; MSG_DONTWAIT and
        // MSG_NOSIGNAL make the call neither block nor raise SIGPIPE.
        let rc = unsafe {
            libc::send(
                self.fd().as_raw_fd(),
                b"!".as_ptr().cast(),
                1,
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        rc < 0
            && matches!(
                io::Error::last_os_error().raw_os_error(),
                Some(libc::ECONNREFUSED) | Some(libc::ENOTCONN)
            )
    }

    /// Reads what is queued on our end, at most 64 datagrams, and says
    /// how many. Descriptors passed along (only possible where the kernel
    /// cannot refuse them) are taken and handed to the closers, and the
    /// doorbell is marked [`tainted`](Self::tainted); where they might not
    /// fit in our table ([`closer::room`]) the drain stops, reading
    /// nothing more ([`Drained::no_room`]).
    pub fn drain(&self) -> Drained {
        let mut n = 0;
        while n < DRAIN_MAX {
            let rc = if self.refused {
                let mut byte = [0u8; 1];
                // SAFETY: a one-byte buffer live for the call; longer
                // datagrams are truncated, which is what we want.
                unsafe {
                    libc::recv(
                        self.fd().as_raw_fd(),
                        byte.as_mut_ptr().cast(),
                        1,
                        libc::MSG_DONTWAIT,
                    )
                }
            } else {
                let Some(_room) = closer::room(closer::SCM_MAX_FD) else {
                    return Drained {
                        count: n,
                        no_room: true,
                    };
                };
                self.recv_taking_fds()
            };
            if rc < 0 {
                break;
            }
            n += 1;
            if self.tainted() {
                // The control thread ends this peer's generation; nothing
                // more is read from it here.
                break;
            }
        }
        Drained {
            count: n,
            no_room: false,
        }
    }

    /// One datagram, with a control buffer that holds as many descriptors
    /// as a message can carry, so that the kernel closes none on this
    /// thread; those it holds go to the closers.
    fn recv_taking_fds(&self) -> isize {
        const WORDS: usize = (closer::SCM_MAX_FD + 8) / 2 + 4;
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut cmsg = [0u64; WORDS];
        // SAFETY: an all-zero msghdr is valid.
        let mut hdr: libc::msghdr = unsafe { core::mem::zeroed() };
        hdr.msg_iov = &mut iov;
        hdr.msg_iovlen = 1;
        hdr.msg_control = cmsg.as_mut_ptr().cast();
        hdr.msg_controllen = core::mem::size_of_val(&cmsg);
        // SAFETY: buffers outlive the call; MSG_CMSG_CLOEXEC marks what
        // arrives.
        let rc = unsafe {
            libc::recvmsg(
                self.fd().as_raw_fd(),
                &mut hdr,
                libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
            )
        };
        if rc < 0 {
            return rc;
        }
        // Truncated: the kernel could not hand us every descriptor (our
        // table is full) and dropped the rest itself. Nothing more to do
        // for those, but the peer passed some: tainted.
        if hdr.msg_flags & libc::MSG_CTRUNC != 0 {
            closer::count_planted(1);
            // Relaxed: see `tainted`.
            self.tainted.store(true, Ordering::Relaxed);
        }
        if hdr.msg_controllen == 0 {
            return rc;
        }
        // SAFETY: recvmsg just filled `hdr`; its descriptors are new and
        // ours. Dropping them hands them to the closers.
        let planted = unsafe { closer::take_rights(&hdr) };
        if !planted.is_empty() {
            closer::count_planted(planted.len());
            // Relaxed: see `tainted`.
            self.tainted.store(true, Ordering::Relaxed);
        }
        rc
    }
}

impl Drop for Doorbell {
    fn drop(&mut self) {
        if let Some(fd) = self.fd.take() {
            if self.refused {
                drop(fd);
            } else {
                closer::dispose(fd);
            }
        }
    }
}

impl AsFd for Doorbell {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd().as_fd()
    }
}

/// An integer socket option of `fd`.
fn sockopt_int(fd: &OwnedFd, opt: libc::c_int) -> io::Result<libc::c_int> {
    let mut v: libc::c_int = 0;
    let mut len = core::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` and `len` are valid for the call and sized for an int.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> libc::ucred {
        // SAFETY: plain system calls without arguments.
        let (pid, uid, gid) = unsafe { (libc::getpid(), libc::getuid(), libc::getgid()) };
        libc::ucred { pid, uid, gid }
    }

    #[test]
    fn a_ring_wakes_the_other_end_and_drains() {
        let (ours, theirs) = Doorbell::pairs(2).unwrap();
        let theirs = Doorbell::received(theirs, &me()).unwrap();
        assert_eq!(theirs[0].drain().count, 0);
        ours[0].ring();
        ours[0].ring();
        assert_eq!(theirs[0].drain().count, 2);
        assert_eq!(theirs[1].drain().count, 0, "pairs are separate");
        theirs[1].ring();
        assert_eq!(ours[1].drain().count, 1, "both ways");
    }

    #[test]
    fn a_full_or_closed_pair_never_blocks() {
        let (ours, theirs) = Doorbell::pairs(1).unwrap();
        for _ in 0..100_000 {
            ours[0].ring();
        }
        drop(theirs);
        ours[0].ring();
    }

    #[test]
    fn other_descriptors_are_refused() {
        let file = OwnedFd::from(std::fs::File::open("/dev/null").unwrap());
        let e = Doorbell::received(vec![file], &me()).unwrap_err();
        assert!(e.contains("doorbell 0") && e.contains("file mode"), "{e}");

        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let e = Doorbell::received(vec![a.into()], &me()).unwrap_err();
        assert!(e.contains("type 1"), "{e}");

        let (_, theirs) = Doorbell::pairs(1).unwrap();
        let dup = theirs[0].try_clone().unwrap();
        let e =
            Doorbell::received(vec![theirs.into_iter().next().unwrap(), dup], &me()).unwrap_err();
        assert!(e.contains("doorbell 1") && e.contains("same socket"), "{e}");

        let (_, theirs) = Doorbell::pairs(1).unwrap();
        let mut other = me();
        other.pid += 1;
        let e = Doorbell::received(theirs, &other).unwrap_err();
        assert!(e.contains("made by pid"), "{e}");
    }
}
