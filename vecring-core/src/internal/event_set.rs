//! [`EventSet`]: an epoll instance with a private eventfd (the kick) in
//! it: one descriptor an application sleeps on, made readable by whatever
//! is added to it or by a kick from this process. The building block of a
//! link endpoint's wait set, and of the DPDK driver's per-queue interrupt
//! descriptor (the words of waiting are defined in `ring::wait`).
//!
//! The kick never leaves this process, so the reasons that rule out an
//! eventfd for a doorbell shared with the peer (see `crate::doorbell`) do
//! not apply.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// An epoll set holding a kick eventfd; see the module documentation.
#[derive(Debug)]
pub struct EventSet {
    epoll: OwnedFd,
    kick: OwnedFd,
}

impl EventSet {
    /// A set holding only its kick.
    ///
    /// # Errors
    /// The descriptors cannot be made or joined (typically `EMFILE`).
    pub fn new() -> io::Result<Self> {
        // SAFETY: a plain system call; the result is checked.
        let epoll = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if epoll < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor we own.
        let epoll = unsafe { OwnedFd::from_raw_fd(epoll) };
        // SAFETY: a plain system call; the result is checked.
        let kick = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if kick < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor we own.
        let kick = unsafe { OwnedFd::from_raw_fd(kick) };
        let set = EventSet { epoll, kick };
        set.add(set.kick.as_raw_fd())?;
        Ok(set)
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: fd as u64,
        };
        // SAFETY: our epoll set and a descriptor the caller holds open;
        // `ev` is live for the call.
        if unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), op, fd, &mut ev) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Adds `fd` (level-triggered, readable): the set is readable while
    /// `fd` is. The caller keeps `fd` open until it [removes](Self::remove)
    /// it.
    ///
    /// # Errors
    /// The system error (`EEXIST` if it is in already).
    pub fn add(&self, fd: RawFd) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd)
    }

    /// Takes `fd` out of the set.
    ///
    /// # Errors
    /// The system error (`ENOENT` if it was not in).
    pub fn remove(&self, fd: RawFd) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_DEL, fd)
    }

    /// Makes the set readable until [`drain_kick`](Self::drain_kick).
    /// Never blocks (a saturated counter only means a kick is pending).
    pub fn kick(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: an 8-byte buffer live for the call, on our eventfd.
        unsafe { libc::write(self.kick.as_raw_fd(), one.as_ptr().cast(), 8) };
    }

    /// Empties the kick.
    pub fn drain_kick(&self) {
        let mut buf = [0u8; 8];
        // SAFETY: an 8-byte buffer live for the call, on our nonblocking
        // eventfd.
        unsafe { libc::read(self.kick.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
    }

    /// The kick's descriptor, as [`wait`](Self::wait) reports it.
    pub fn kick_fd(&self) -> RawFd {
        self.kick.as_raw_fd()
    }

    /// Sleeps until the set is readable or `timeout` passes (`None`: no
    /// limit; a timeout is rounded up to the millisecond), and writes the
    /// descriptors found readable into `ready`. Returns how many (0 on
    /// timeout).
    ///
    /// # Errors
    /// The system error (`EINTR` when a signal interrupted the sleep).
    pub fn wait(&self, timeout: Option<Duration>, ready: &mut [RawFd]) -> io::Result<usize> {
        const MAX: usize = 8;
        let ms = match timeout {
            None => -1,
            Some(t) => t.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32,
        };
        let mut ev = [libc::epoll_event { events: 0, u64: 0 }; MAX];
        let max = ready.len().clamp(1, MAX);
        // SAFETY: our epoll set and a live buffer of at least `max` events.
        let n =
            unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), ev.as_mut_ptr(), max as i32, ms) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = (n as usize).min(ready.len());
        for (r, e) in ready.iter_mut().zip(&ev[..n]) {
            *r = e.u64 as RawFd;
        }
        Ok(n)
    }
}

impl AsFd for EventSet {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.epoll.as_fd()
    }
}

impl AsRawFd for EventSet {
    fn as_raw_fd(&self) -> RawFd {
        self.epoll.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kick_wakes_the_set_until_drained_and_members_wake_it_too() {
        let set = EventSet::new().unwrap();
        let mut ready = [0; 4];
        assert_eq!(set.wait(Some(Duration::ZERO), &mut ready).unwrap(), 0);
        set.kick();
        set.kick();
        assert_eq!(set.wait(Some(Duration::ZERO), &mut ready).unwrap(), 1);
        assert_eq!(ready[0], set.kick_fd());
        set.drain_kick();
        assert_eq!(set.wait(Some(Duration::ZERO), &mut ready).unwrap(), 0);

        // A nested set: readable while its member is.
        let inner = EventSet::new().unwrap();
        set.add(inner.as_raw_fd()).unwrap();
        inner.kick();
        assert_eq!(set.wait(Some(Duration::ZERO), &mut ready).unwrap(), 1);
        assert_eq!(ready[0], inner.as_raw_fd());
        inner.drain_kick();
        assert_eq!(set.wait(Some(Duration::ZERO), &mut ready).unwrap(), 0);
        set.remove(inner.as_raw_fd()).unwrap();
        inner.kick();
        assert_eq!(set.wait(Some(Duration::ZERO), &mut ready).unwrap(), 0);
        assert!(set.remove(inner.as_raw_fd()).is_err(), "not in any more");
    }
}
