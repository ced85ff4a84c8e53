//! Sleeping instead of polling: the descriptors an application puts in its
//! own `epoll` or `poll` set, the prepare / cancel pair around each sleep,
//! and the blocking waits, on top of the endpoints' interrupt mode
//! (`Receiver::prepare_wait`, `Sender::prepare_wait`; see "Sleeping instead
//! of polling" in `docs/ARCHITECTURE.md`).
//!
//! The descriptors are the endpoints' wait sets: one each, the same for
//! the handle's life (across link down, up and new masters), so any thread
//! may ask for them. Prepare and cancel belong to the consumer (producer)
//! thread, as the RX (TX) calls do.
//!
//! The blocking waits (`vecring_rx_wait`, `vecring_tx_wait` and the
//! `*_timeout` forms in [`rx`](crate::rx) and [`tx`](crate::tx)) are the
//! same event loop run inside the library: prepare, `poll` the wait set and
//! the handle's close bell (`closing`), cancel, again. The close bell is
//! why they do not call the endpoints' own blocking waits: `vecring_close`
//! on another thread must end them at once, and only the handle knows it
//! is being closed.

use crate::error::{
    cstr, guard, recv_error, send_error, Error, VECRING_E_CLOSED, VECRING_E_TOOBIG, VECRING_OK,
};
use crate::handle::vecring_link;
use crate::table::{Lane, Ref};
use std::ffi::{c_int, CStr};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};
use vecring_core::MAX_FRAME_LEN;
use vecring_core::{Receiver, Sender};

/// The longest single sleep of a blocking wait: the ring is looked at
/// again at least this often, so a peer that acknowledges the wait
/// protocol and never rings delays a frame by at most this long, as the
/// endpoints' own blocking waits promise (`vecring_core`'s `link::blocking`).
const SLICE: Duration = Duration::from_secs(1);

const CLOSED_WHILE_WAITING: &CStr = cstr!("the link was closed (by vecring_close) while waiting");

/// A C timeout in milliseconds: -1 waits without limit (`None`), 0 does
/// not sleep, as for `poll(2)`.
pub(crate) fn timeout(ms: c_int) -> Result<Option<Duration>, Error> {
    match ms {
        -1 => Ok(None),
        0.. => Ok(Some(Duration::from_millis(ms.unsigned_abs().into()))),
        _ => Err(Error::inval(format!(
            "timeout_ms is {ms}: pass -1 (no limit), 0 (do not sleep) or a number of milliseconds"
        ))),
    }
}

/// The time left until `deadline` (`None`: no limit).
pub(crate) fn left(deadline: Option<Instant>) -> Option<Duration> {
    deadline.map(|d| d.saturating_duration_since(Instant::now()))
}

/// When a wait of `timeout` started now ends (`None`: never).
pub(crate) fn deadline(timeout: Option<Duration>) -> Option<Instant> {
    // A timeout past the clock's range is as good as none.
    timeout.and_then(|t| Instant::now().checked_add(t))
}

/// An endpoint that can sleep: the prepare / cancel pair of its interrupt
/// mode.
pub(crate) trait Waiter {
    /// True: sleep on the wait set now; false: there is work.
    fn prepare(&mut self) -> Result<bool, Error>;
    /// The endpoint runs again.
    fn cancel(&mut self);
}

/// A receiver waiting for a frame.
pub(crate) struct RxWaiter<'a>(pub(crate) &'a mut Receiver);

impl Waiter for RxWaiter<'_> {
    fn prepare(&mut self) -> Result<bool, Error> {
        self.0.prepare_wait().map_err(recv_error)
    }
    fn cancel(&mut self) {
        self.0.cancel_wait();
    }
}

/// A sender waiting for room for a frame of `len` bytes.
pub(crate) struct TxWaiter<'a> {
    pub(crate) sender: &'a mut Sender,
    pub(crate) len: usize,
}

impl Waiter for TxWaiter<'_> {
    fn prepare(&mut self) -> Result<bool, Error> {
        // A frame that can never fit would wait forever: refuse it, in
        // every generation (a new master may bring a smaller maximum).
        check_len(self.sender, self.len)?;
        self.sender.prepare_wait(self.len).map_err(send_error)
    }
    fn cancel(&mut self) {
        self.sender.cancel_wait();
    }
}

/// Refuses a frame length no ring of this link can take: 0, or longer than
/// the current generation's maximum (the protocol's while the link is
/// down).
fn check_len(sender: &mut Sender, len: usize) -> Result<(), Error> {
    if len == 0 {
        return Err(Error::inval("len is 0: frames carry at least 1 byte"));
    }
    let max = sender
        .geometry()
        .map_or(MAX_FRAME_LEN, |g| g.max_frame_len() as usize);
    if len > max {
        return Err(Error::new(
            VECRING_E_TOOBIG,
            format!("a frame of {len} bytes never fits: the link's maximum is {max}"),
        ));
    }
    Ok(())
}

/// Runs the event loop of `w` until there is work (true) or `timeout`
/// passes (false; `None`: no limit), sleeping in `poll` on the endpoint's
/// wait set `fd` and the handle's close bell.
///
/// # Errors
/// `VECRING_E_CLOSED` once the handle is being closed; the waiter's own.
pub(crate) fn block(
    h: &Ref,
    w: &mut impl Waiter,
    fd: RawFd,
    timeout: Option<Duration>,
) -> Result<bool, Error> {
    let deadline = deadline(timeout);
    loop {
        if h.closing() {
            return Err(Error::fixed(VECRING_E_CLOSED, CLOSED_WHILE_WAITING));
        }
        if !w.prepare()? {
            return Ok(true);
        }
        let left = left(deadline);
        if left == Some(Duration::ZERO) {
            w.cancel();
            return Ok(false);
        }
        sleep(
            fd,
            h.close_fd().as_raw_fd(),
            left.map_or(SLICE, |l| l.min(SLICE)),
        );
        w.cancel();
    }
}

/// Sleeps until `fd` or `close` is readable or `timeout` passes; an
/// interruption by a signal ends it early (the caller looks again).
fn sleep(fd: RawFd, close: RawFd, timeout: Duration) {
    let mut fds = [fd, close].map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    // Rounded up, so that a short timeout still sleeps.
    let ms = timeout.as_micros().div_ceil(1000).min(c_int::MAX as u128) as c_int;
    // SAFETY: two valid pollfds live for the call.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
}

/// The receiver's wait-set descriptor, for the application's own `epoll`
/// or `poll` set.
///
/// # Safety
/// None for `link` (any value is checked; see [`vecring_close`](crate::vecring_close)).
#[no_mangle]
pub unsafe extern "C" fn vecring_rx_fd(link: *const vecring_link) -> c_int {
    guard(|| Ok(Ref::new(link, Lane::Link)?.rx_fd()))
}

/// Prepares the receiver to sleep on its descriptor: 1 (sleep now) or 0
/// (frames are ready).
///
/// # Safety
/// None for `link` (any value is checked; see [`vecring_close`](crate::vecring_close)).
#[no_mangle]
pub unsafe extern "C" fn vecring_rx_prepare_wait(link: *mut vecring_link) -> c_int {
    guard(|| {
        let h = Ref::new(link, Lane::Rx)?;
        let mut rx = h.rx()?;
        RxWaiter(rx.receiver()?).prepare().map(c_int::from)
    })
}

/// Says the receiver runs again after a sleep.
///
/// # Safety
/// None for `link` (any value is checked; see [`vecring_close`](crate::vecring_close)).
#[no_mangle]
pub unsafe extern "C" fn vecring_rx_cancel_wait(link: *mut vecring_link) -> c_int {
    guard(|| {
        let h = Ref::new(link, Lane::Rx)?;
        let mut rx = h.rx()?;
        RxWaiter(rx.receiver()?).cancel();
        Ok(VECRING_OK)
    })
}

/// Sleeps until a frame is ready (1) or `timeout_ms` passes (0).
///
/// # Safety
/// None for `link` (any value is checked; see [`vecring_close`](crate::vecring_close)).
#[no_mangle]
pub unsafe extern "C" fn vecring_rx_wait(link: *mut vecring_link, timeout_ms: c_int) -> c_int {
    guard(|| {
        let h = Ref::new(link, Lane::Rx)?;
        let timeout = timeout(timeout_ms)?;
        let mut rx = h.rx()?;
        let ready = block(&h, &mut RxWaiter(rx.receiver()?), h.rx_fd(), timeout)?;
        Ok(c_int::from(ready))
    })
}

/// The sender's wait-set descriptor, for the application's own `epoll` or
/// `poll` set.
///
/// # Safety
/// None for `link` (any value is checked; see [`vecring_close`](crate::vecring_close)).
#[no_mangle]
pub unsafe extern "C" fn vecring_tx_fd(link: *const vecring_link) -> c_int {
    guard(|| Ok(Ref::new(link, Lane::Link)?.tx_fd()))
}

/// Prepares the sender to sleep on its descriptor until a frame of `len`
/// bytes fits: 1 (sleep now) or 0 (it fits now).
///
/// # Safety
/// None for `link` (any value is checked; see [`vecring_close`](crate::vecring_close)).
#[no_mangle]
pub unsafe extern "C" fn vecring_tx_prepare_wait(link: *mut vecring_link, len: usize) -> c_int {
    guard(|| {
        let h = Ref::new(link, Lane::Tx)?;
        let mut tx = h.tx()?;
        let sender = tx.sender()?;
        TxWaiter { sender, len }.prepare().map(c_int::from)
    })
}

/// Says the sender runs again after a sleep.
///
/// # Safety
/// None for `link` (any value is checked; see [`vecring_close`](crate::vecring_close)).
#[no_mangle]
pub unsafe extern "C" fn vecring_tx_cancel_wait(link: *mut vecring_link) -> c_int {
    guard(|| {
        let h = Ref::new(link, Lane::Tx)?;
        let mut tx = h.tx()?;
        tx.sender()?.cancel_wait();
        Ok(VECRING_OK)
    })
}

/// Sleeps until a frame of `len` bytes fits (1) or `timeout_ms` passes (0).
///
/// # Safety
/// None for `link` (any value is checked; see [`vecring_close`](crate::vecring_close)).
#[no_mangle]
pub unsafe extern "C" fn vecring_tx_wait(
    link: *mut vecring_link,
    len: usize,
    timeout_ms: c_int,
) -> c_int {
    guard(|| {
        let h = Ref::new(link, Lane::Tx)?;
        let timeout = timeout(timeout_ms)?;
        let mut tx = h.tx()?;
        let sender = tx.sender()?;
        let ready = block(&h, &mut TxWaiter { sender, len }, h.tx_fd(), timeout)?;
        Ok(c_int::from(ready))
    })
}
