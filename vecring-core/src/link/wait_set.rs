//! [`WaitSet`] (see the vocabulary in `ring::wait`): what a sleeping
//! endpoint waits on, behind one file
//! descriptor that stays the same for the endpoint's life (across link
//! down, up and new masters), so that an application registers it once
//! with epoll, mio, tokio or DPDK.
//!
//! It is an [`EventSet`] (an epoll instance and its kick) holding:
//! - the current generation's doorbell end of the endpoint's ring (none
//!   while the link is down), swapped by the endpoint when it follows a new
//!   session;
//! - its kick, which the control thread writes after every session change
//!   and at close, so that a sleeper notices link up/down (the "poke");
//! - a timerfd for naps (the other side has not acknowledged the wait
//!   protocol yet) and for the back-off against a peer that rings for
//!   nothing.
//!
//! The poke eventfd never leaves this process, so the reasons that rule
//! out an eventfd for the doorbell (see `crate::doorbell`) do not apply.

use crate::doorbell::Doorbell;
use crate::event_set::EventSet;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

/// Shortest nap; each nap in a row doubles it up to [`NAP_MAX`].
const NAP_FIRST: Duration = Duration::from_millis(1);
/// Longest nap: an idle side whose peer never acknowledges the protocol
/// wakes about 16 times a second.
const NAP_MAX: Duration = Duration::from_millis(64);
/// Wakeups in a row by the doorbell that found nothing, after which the
/// doorbell is left out of the set and the ring is checked by timer only
/// (1 ms doubling to 64 ms) until work is found: a peer ringing constantly
/// costs at most about a thousand checks a second, never a spin. An honest
/// peer rings once per sleep.
const SPURIOUS_MAX: u32 = 8;

/// What one endpoint sleeps on; see the module documentation.
#[derive(Debug)]
pub(crate) struct WaitSet {
    /// The epoll set; its kick is the poke, shared with the link's control
    /// thread.
    set: Arc<EventSet>,
    timer: OwnedFd,
    /// The doorbell end in the set, if any.
    bell: Option<Arc<Doorbell>>,
    /// The doorbell is left out of the set (see [`SPURIOUS_MAX`]).
    muted: bool,
    /// Wakeups in a row that found nothing.
    spurious: u32,
    /// The next nap's length.
    nap: Duration,
    /// Whether the last sleep was only a nap or a back-off (timer armed).
    timed: bool,
    /// Wakeups that found nothing, in all.
    pub(crate) spurious_total: u64,
    /// Sleeps the timer ended (naps and back-off), in all.
    pub(crate) timer_total: u64,
    /// The endpoint's frame total when it last went to sleep: a wakeup
    /// after which it moved frames found work.
    pub(crate) progress: u64,
    /// Which of poke, timer and doorbell ([`POKE`], [`TIMER`], [`BELL`])
    /// may hold something to drain: after our own `epoll_wait`, those it
    /// reported; otherwise all.
    pending: u8,
}

const POKE: u8 = 1;
const TIMER: u8 = 2;
const BELL: u8 = 4;

impl WaitSet {
    pub(crate) fn new() -> io::Result<Self> {
        let set = Arc::new(EventSet::new()?);
        // SAFETY: a plain system call; the result is checked.
        let timer = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if timer < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor we own.
        let timer = unsafe { OwnedFd::from_raw_fd(timer) };
        set.add(timer.as_raw_fd())?;
        Ok(WaitSet {
            set,
            timer,
            bell: None,
            muted: false,
            spurious: 0,
            nap: NAP_FIRST,
            timed: false,
            spurious_total: 0,
            timer_total: 0,
            progress: 0,
            pending: POKE | TIMER | BELL,
        })
    }

    /// The set, whose kick the control thread writes on link changes.
    pub(crate) fn poke(&self) -> &Arc<EventSet> {
        &self.set
    }

    /// Puts `bell` (the new generation's doorbell end, or none while down)
    /// in the set in place of the old one.
    pub(crate) fn set_bell(&mut self, bell: Option<Arc<Doorbell>>) {
        if let Some(old) = self.bell.take() {
            if !self.muted {
                // Errors here only mean the fd was not in the set.
                let _ = self.set.remove(old.as_fd().as_raw_fd());
            }
        }
        self.muted = false;
        self.spurious = 0;
        if let Some(b) = &bell {
            if let Err(e) = self.set.add(b.as_fd().as_raw_fd()) {
                // Without the doorbell a sleeper still wakes by its nap
                // timer; say why it is slow.
                log::warn!("vecring: cannot wait on a doorbell: {e}; waits fall back to timers");
                self.muted = true;
            }
        }
        self.bell = bell;
    }

    /// Someone else waited on the set (an event loop): anything may be
    /// readable.
    pub(crate) fn woken_elsewhere(&mut self) {
        self.pending = POKE | TIMER | BELL;
    }

    /// Empties what may be readable of the poke, the timer and the
    /// doorbell before a new sleep (so that each wakes the set again).
    /// Returns whether the doorbell had rung.
    pub(crate) fn drain(&mut self) -> bool {
        let pending = std::mem::take(&mut self.pending);
        if pending & POKE != 0 {
            self.set.drain_kick();
        }
        if pending & TIMER != 0 {
            let mut buf = [0u8; 8];
            // SAFETY: an 8-byte buffer live for the call, on our timerfd.
            unsafe { libc::read(self.timer.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
        }
        if pending & BELL == 0 {
            return false;
        }
        let Some(b) = &self.bell else {
            return false;
        };
        let drained = b.drain();
        if drained.no_room && !self.muted {
            // What is queued may carry descriptors that would not fit
            // (see `crate::closer`): left unread, and the doorbell out of
            // the set, so that it does not wake us again at once. Sleeps
            // become naps; the first wakeup that finds work puts it back.
            let _ = self.set.remove(b.as_fd().as_raw_fd());
            self.muted = true;
            log::debug!("vecring: the closers are full; checking the ring by timer for a while");
        }
        drained.count > 0
    }

    /// After a wakeup: `rang` (the doorbell had rung when drained) and
    /// whether work was found. Counts wakeups for nothing and mutes the
    /// doorbell after [`SPURIOUS_MAX`] in a row; work resets it all.
    pub(crate) fn after_wake(&mut self, rang: bool, found: bool) {
        if found {
            self.spurious = 0;
            self.nap = NAP_FIRST;
            if self.muted {
                if let Some(b) = &self.bell {
                    self.muted = self.set.add(b.as_fd().as_raw_fd()).is_err();
                }
            }
            return;
        }
        if rang {
            self.spurious_total += 1;
            self.spurious += 1;
            if self.spurious >= SPURIOUS_MAX && !self.muted {
                if let Some(b) = &self.bell {
                    let _ = self.set.remove(b.as_fd().as_raw_fd());
                    self.muted = true;
                    log::debug!(
                        "vecring: the peer rings for nothing; checking by timer for a while"
                    );
                }
            }
        }
    }

    /// Sets up the next sleep: a full sleep on the doorbell (`nap` false)
    /// or a nap. A muted doorbell turns a sleep into a nap too.
    pub(crate) fn prepare(&mut self, nap: bool) {
        if nap || self.muted {
            self.arm_timer(self.nap);
            self.nap = (self.nap * 2).min(NAP_MAX);
            self.timed = true;
        } else if self.timed {
            self.arm_timer(Duration::ZERO);
            self.nap = NAP_FIRST;
            self.timed = false;
        }
    }

    fn arm_timer(&self, after: Duration) {
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: after.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: our timerfd; `spec` is live for the call. A zero value
        // disarms it.
        unsafe { libc::timerfd_settime(self.timer.as_raw_fd(), 0, &spec, core::ptr::null_mut()) };
    }

    /// Sleeps until the set is readable or `timeout` passes (`None`:
    /// no limit), and notes what woke it (the next [`drain`](Self::drain)
    /// reads only that).
    pub(crate) fn sleep(&mut self, timeout: Option<Duration>) {
        let mut ready = [0; 4];
        let Ok(n) = self.set.wait(timeout, &mut ready) else {
            // Interrupted: look at everything next time.
            self.woken_elsewhere();
            return;
        };
        let (poke, timer) = (self.set.kick_fd(), self.timer.as_raw_fd());
        for &fd in &ready[..n] {
            self.pending |= if fd == poke {
                POKE
            } else if fd == timer {
                self.timer_total += 1;
                TIMER
            } else {
                BELL
            };
        }
    }
}

impl AsFd for WaitSet {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.set.as_fd()
    }
}
