//! A small epoll set: the descriptors one bridge thread sleeps on (its
//! TAP queue, its link endpoints' wait sets, the stop event), each with a
//! token, whose interest can be switched off and on.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// An epoll instance.
pub struct Epoll {
    fd: OwnedFd,
}

impl Epoll {
    /// A new, empty set.
    ///
    /// # Errors
    /// epoll_create1's error.
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: a plain system call; the result is checked.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Epoll { fd })
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, token: u64, readable: bool) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: if readable { libc::EPOLLIN as u32 } else { 0 },
            u64: token,
        };
        // SAFETY: our epoll descriptor and an event live for the call; the
        // caller keeps `fd` open while it is in the set.
        if unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, &mut ev) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Adds `fd` with `token`, watched for reading when `readable`.
    ///
    /// # Errors
    /// epoll_ctl's error.
    pub fn add(&self, fd: RawFd, token: u64, readable: bool) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, token, readable)
    }

    /// Watches `fd` (added with `token`) for reading, or not.
    ///
    /// # Errors
    /// epoll_ctl's error.
    pub fn watch(&self, fd: RawFd, token: u64, readable: bool) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, token, readable)
    }

    /// Sleeps until a watched descriptor is ready or `timeout` passes
    /// (`None`: no limit); returns the tokens of those ready (none on
    /// timeout or a signal).
    ///
    /// # Errors
    /// epoll_wait's error other than EINTR.
    pub fn wait(&self, timeout: Option<Duration>, tokens: &mut Vec<u64>) -> io::Result<()> {
        tokens.clear();
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 8];
        let ms = timeout.map_or(-1, |t| t.as_millis().min(i32::MAX as u128) as libc::c_int);
        // SAFETY: our epoll descriptor and a live array of its length.
        let n = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as libc::c_int,
                ms,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.raw_os_error() == Some(libc::EINTR) {
                Ok(())
            } else {
                Err(e)
            };
        }
        tokens.extend(events[..n as usize].iter().map(|e| e.u64));
        Ok(())
    }
}

/// An eventfd: a wakeup one thread gives others' epoll sets.
pub struct Event {
    fd: OwnedFd,
}

impl Event {
    /// A new event, not signalled.
    ///
    /// # Errors
    /// eventfd's error.
    pub fn new() -> io::Result<Event> {
        // SAFETY: a plain system call; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Event { fd })
    }

    /// Signals it: it stays readable until [`drain`](Self::drain)ed.
    pub fn signal(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our eventfd; it can
        // only fail when the counter would overflow, which still leaves
        // it readable.
        unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// Empties it.
    pub fn drain(&self) {
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into a live u64 from our non-blocking
        // eventfd.
        unsafe { libc::read(self.fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    }

    /// Its descriptor, for an epoll set.
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
