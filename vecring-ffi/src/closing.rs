//! The handle's close bell: an eventfd that `vecring_close` makes readable,
//! so that the RX and TX waits blocked on other threads
//! (`vecring_rx_wait`, `vecring_recv_timeout`, `vecring_tx_wait`, ...)
//! wake at once and return `VECRING_E_CLOSED`, instead of sleeping on
//! until their next slice while the closer waits for them.
//!
//! The blocking waits sleep in `poll` on their endpoint's wait set and on
//! this descriptor. It never leaves the process and is never drained: once
//! rung it stays readable, as the handle stays closed.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct CloseBell(OwnedFd);

impl CloseBell {
    /// A bell not rung yet.
    pub(crate) fn new() -> io::Result<Self> {
        // SAFETY: a plain system call; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor that nothing else owns.
        Ok(CloseBell(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Makes the bell readable for good. Never blocks (a saturated counter
    /// only means it is rung already).
    pub(crate) fn ring(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: an 8-byte buffer live for the call, on our eventfd.
        unsafe { libc::write(self.0.as_raw_fd(), one.as_ptr().cast(), one.len()) };
    }
}

impl AsFd for CloseBell {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}
