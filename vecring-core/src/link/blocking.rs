//! Blocking calls: a [`Receiver`] that waits for frames and a [`Sender`]
//! that waits for room, through the ring's wait protocol and the
//! endpoint's [`WaitSet`](super::wait_set::WaitSet). The words of waiting
//! are defined once, in `ring::wait`.
//!
//! Two ways to use it:
//! - blocking: [`Receiver::wait`], [`Receiver::recv_timeout`],
//!   [`Receiver::recv_batch_timeout`], [`Sender::wait_space`],
//!   [`Sender::send_timeout`];
//! - from an event loop: register the endpoint's file descriptor
//!   ([`AsFd`]) once, and before each sleep call `prepare_wait`; sleep only
//!   if it returns true, and call `cancel_wait` on waking. The descriptor
//!   stays the same across link down, up and new masters.
//!
//! Waits follow the link through down and up: a receiver waits for the
//! next frame whichever generation brings it. They end early only when
//! the [`Link`](super::Link) is closed ([`LinkRecvError::Closed`]); a
//! wait with a deadline that passes ends with
//! [`LinkRecvError::Timeout`] or [`LinkSendError::Timeout`].

use super::endpoint::{Attach, Endpoint};
use super::frame_error::{LinkRecvError, LinkSendError};
use super::receiver::Receiver;
use super::sender::Sender;
use crate::memory::RegionRing;
use crate::ring::{Consumer, Corruption, Producer, PushError, WaitDecision};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The longest single sleep of a blocking wait: every second the ring is
/// looked at again, so a peer that acknowledges the protocol and never
/// rings delays a frame by at most this long (and an idle wait costs one
/// wakeup a second).
const SLICE: Duration = Duration::from_secs(1);

/// A ring end that can sleep until the other side moves.
pub(super) trait RingWaiter {
    /// Whether there is work now (frames; room for `slots` slots), with at
    /// most one load of the other side's index and no fence.
    fn ready(&mut self, slots: u64) -> bool;
    /// `slots`: how much room a producer waits for (a consumer ignores it).
    fn prepare(&mut self, slots: u64) -> Result<WaitDecision, Corruption>;
    fn cancel(&mut self);
}

impl RingWaiter for Consumer<RegionRing> {
    fn ready(&mut self, _slots: u64) -> bool {
        self.ready_slots().is_ok_and(|n| n > 0)
    }
    fn prepare(&mut self, _slots: u64) -> Result<WaitDecision, Corruption> {
        self.prepare_wait()
    }
    fn cancel(&mut self) {
        self.cancel_wait();
    }
}

impl RingWaiter for Producer<RegionRing> {
    fn ready(&mut self, slots: u64) -> bool {
        self.has_room(slots)
    }
    fn prepare(&mut self, slots: u64) -> Result<WaitDecision, Corruption> {
        self.prepare_wait(slots)
    }
    fn cancel(&mut self) {
        self.cancel_wait();
    }
}

/// Why a wait ended without work.
pub(super) enum WaitAbort {
    /// Its time passed.
    TimedOut,
    /// The link was closed.
    Closed,
    /// The peer corrupted the ring.
    Corrupt(Corruption),
}

impl<E: Attach + RingWaiter> Endpoint<E> {
    /// Drains the wait set, follows the link, and says whether to sleep
    /// (true) or look at the ring again (false).
    pub(super) fn prepare_wait(&mut self, slots: u64) -> Result<bool, WaitAbort> {
        // Work already there: no need to empty the set (what is pending
        // stays for the next sleep, which drains it first).
        if self.ring.as_mut().is_some_and(|r| r.ready(slots)) {
            return Ok(false);
        }
        let rang = self.wait.drain();
        // Frames moved since the last sleep: that wakeup found work.
        let moved = self.totals().frames != self.wait.progress;
        // Acquire: pairs with the Release store in `Link::drop`.
        if self.shared.shutdown.load(Ordering::Acquire) {
            return Err(WaitAbort::Closed);
        }
        self.sync();
        let Some(ring) = self.ring.as_mut() else {
            // Down, or a queue this generation lacks: the poke of the next
            // session change wakes us.
            self.wait.prepare(false);
            return Ok(true);
        };
        match ring.prepare(slots) {
            Ok(WaitDecision::Ready) => {
                self.wait.after_wake(rang, true);
                Ok(false)
            }
            Ok(sleep) => {
                self.wait.after_wake(rang, moved);
                self.wait.progress = self.totals().frames;
                self.wait.prepare(sleep == WaitDecision::Nap);
                Ok(true)
            }
            Err(c) => {
                self.report(&c);
                Err(WaitAbort::Corrupt(c))
            }
        }
    }

    /// Says the endpoint runs again.
    pub(super) fn cancel_wait(&mut self) {
        if let Some(r) = self.ring.as_mut() {
            r.cancel();
        }
    }

    /// Sleeps until the ring has work, or `timeout` passes
    /// ([`WaitAbort::TimedOut`]).
    pub(super) fn wait(&mut self, slots: u64, timeout: Option<Duration>) -> Result<(), WaitAbort> {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        loop {
            if !self.prepare_wait(slots)? {
                return Ok(());
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) {
                self.cancel_wait();
                return Err(WaitAbort::TimedOut);
            }
            self.wait.sleep(Some(left.map_or(SLICE, |l| l.min(SLICE))));
            self.cancel_wait();
        }
    }
}

impl Receiver {
    /// Prepares to sleep on [`as_fd`](AsFd::as_fd) until frames arrive (or
    /// the link changes). Returns true: sleep now (the descriptor becomes
    /// readable when there is a reason to look); false: frames are ready,
    /// read them. On waking, call [`cancel_wait`](Self::cancel_wait), read,
    /// and call this again before the next sleep; a wakeup may find
    /// nothing.
    ///
    /// Once a receiver has waited, the peer's sender checks for sleepers
    /// behind a full fence after each publish, for the rest of the
    /// generation.
    ///
    /// # Errors
    /// [`LinkRecvError::Closed`] once the link is closed,
    /// [`LinkRecvError::Corrupt`] if the peer corrupted the ring.
    pub fn prepare_wait(&mut self) -> Result<bool, LinkRecvError> {
        let ep = self.endpoint();
        ep.wait.woken_elsewhere();
        ep.prepare_wait(1).map_err(recv_abort)
    }

    /// Says the receiver runs again after a sleep (see
    /// [`prepare_wait`](Self::prepare_wait)).
    pub fn cancel_wait(&mut self) {
        self.endpoint().cancel_wait();
    }

    /// Sleeps until a frame is ready, through link down and up; `timeout`
    /// bounds the wait (`None`: no limit).
    ///
    /// # Errors
    /// [`LinkRecvError::Timeout`] when no frame came in time; otherwise as
    /// [`prepare_wait`](Self::prepare_wait).
    pub fn wait(&mut self, timeout: Option<Duration>) -> Result<(), LinkRecvError> {
        self.endpoint().wait(1, timeout).map_err(recv_abort)
    }

    /// [`recv`](Self::recv), waiting up to `timeout` for a frame.
    ///
    /// # Errors
    /// [`LinkRecvError::Timeout`] when no frame came in time; otherwise as
    /// [`recv`](Self::recv), except that a link down is waited through.
    pub fn recv_timeout(
        &mut self,
        buf: &mut [u8],
        timeout: Duration,
    ) -> Result<usize, LinkRecvError> {
        let deadline = Instant::now().checked_add(timeout);
        loop {
            match self.recv(buf) {
                Err(LinkRecvError::Empty | LinkRecvError::NoPeer) => {}
                r => return r,
            }
            let left = deadline.map_or(timeout, |d| d.saturating_duration_since(Instant::now()));
            self.wait(Some(left))?;
        }
    }

    /// [`recv_batch`](Self::recv_batch), waiting up to `timeout` for the
    /// first frame; returns as soon as at least one was read.
    ///
    /// # Errors
    /// As [`recv_timeout`](Self::recv_timeout).
    pub fn recv_batch_timeout<B: AsMut<[u8]>>(
        &mut self,
        bufs: &mut [B],
        lens: &mut [usize],
        timeout: Duration,
    ) -> Result<usize, LinkRecvError> {
        let deadline = Instant::now().checked_add(timeout);
        loop {
            match self.recv_batch(bufs, lens) {
                Ok(0) | Err(LinkRecvError::NoPeer) => {}
                r => return r,
            }
            if bufs.is_empty() || lens.is_empty() {
                return Ok(0);
            }
            let left = deadline.map_or(timeout, |d| d.saturating_duration_since(Instant::now()));
            self.wait(Some(left))?;
        }
    }

    /// Wakeups of this receiver that found nothing (a peer ringing for
    /// nothing shows here).
    pub fn spurious_wakeups(&self) -> u64 {
        self.endpoint_ref().wait.spurious_total
    }

    /// Wakeups of this receiver's blocking waits by its timer: naps (the
    /// peer had not acknowledged the wait protocol yet) and the back-off
    /// from a peer ringing for nothing. An idle receiver whose peer has
    /// acknowledged sleeps on the doorbell and adds none.
    pub fn timer_wakeups(&self) -> u64 {
        self.endpoint_ref().wait.timer_total
    }
}

impl Sender {
    /// Prepares to sleep on [`as_fd`](AsFd::as_fd) until `len` bytes fit
    /// (a frame of that length); as [`Receiver::prepare_wait`].
    ///
    /// # Errors
    /// [`LinkSendError::Closed`] once the link is closed,
    /// [`LinkSendError::Corrupt`] if the peer corrupted the ring.
    pub fn prepare_wait(&mut self, len: usize) -> Result<bool, LinkSendError> {
        let slots = self.slots_for(len);
        let ep = self.endpoint();
        ep.wait.woken_elsewhere();
        ep.prepare_wait(slots).map_err(send_abort)
    }

    /// Says the sender runs again after a sleep.
    pub fn cancel_wait(&mut self) {
        self.endpoint().cancel_wait();
    }

    /// Sleeps until a frame of `len` bytes fits, through link down and
    /// up; `timeout` bounds the wait (`None`: no limit).
    ///
    /// # Errors
    /// [`LinkSendError::Timeout`] when no room came in time; otherwise as
    /// [`prepare_wait`](Self::prepare_wait).
    pub fn wait_space(
        &mut self,
        len: usize,
        timeout: Option<Duration>,
    ) -> Result<(), LinkSendError> {
        let slots = self.slots_for(len);
        self.endpoint().wait(slots, timeout).map_err(send_abort)
    }

    /// [`send`](Self::send), waiting up to `timeout` for room.
    ///
    /// # Errors
    /// [`LinkSendError::Timeout`] when no room came in time; otherwise as
    /// [`send`](Self::send), except that a link down is waited through.
    pub fn send_timeout(&mut self, frame: &[u8], timeout: Duration) -> Result<(), LinkSendError> {
        let deadline = Instant::now().checked_add(timeout);
        loop {
            match self.send(frame) {
                Err(LinkSendError::Push(PushError::Full) | LinkSendError::NoPeer) => {}
                r => return r,
            }
            let left = deadline.map_or(timeout, |d| d.saturating_duration_since(Instant::now()));
            self.wait_space(frame.len(), Some(left))?;
        }
    }
}

fn recv_abort(s: WaitAbort) -> LinkRecvError {
    match s {
        WaitAbort::TimedOut => LinkRecvError::Timeout,
        WaitAbort::Closed => LinkRecvError::Closed,
        WaitAbort::Corrupt(c) => LinkRecvError::Corrupt(c),
    }
}

fn send_abort(s: WaitAbort) -> LinkSendError {
    match s {
        WaitAbort::TimedOut => LinkSendError::Timeout,
        WaitAbort::Closed => LinkSendError::Closed,
        WaitAbort::Corrupt(c) => LinkSendError::Corrupt(c),
    }
}

/// The receiver's wait set: readable when frames may have arrived or the
/// link changed (see [`Receiver::prepare_wait`]). The same descriptor for
/// the receiver's whole life.
impl AsFd for Receiver {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.endpoint_ref().wait.as_fd()
    }
}

impl AsRawFd for Receiver {
    fn as_raw_fd(&self) -> RawFd {
        self.as_fd().as_raw_fd()
    }
}

/// The sender's wait set: readable when room may have come or the link
/// changed (see [`Sender::prepare_wait`]).
impl AsFd for Sender {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.endpoint_ref().wait.as_fd()
    }
}

impl AsRawFd for Sender {
    fn as_raw_fd(&self) -> RawFd {
        self.as_fd().as_raw_fd()
    }
}
