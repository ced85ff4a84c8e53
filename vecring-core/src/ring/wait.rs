//! A ring end's wait: a consumer that found no frame, or a producer that
//! found no room, says so in its wait line, re-checks the other side's
//! index, and then sleeps until the ring's doorbell rings. The protocol,
//! and the words of waiting, are in `ring::wait_line`.
//!
//! The ring does not sleep itself: it has no file descriptor. The caller
//! waits on whatever its storage's doorbell wakes (the link's
//! `WaitSet`), and calls the matching `cancel_*` when it wakes, found work
//! or gave up.

use super::consumer::Consumer;
use super::error::Corruption;
use super::producer::Producer;
use super::storage::RingStorage;
use super::wait_line::{present, WaitDecision};

impl<S: RingStorage> Consumer<S> {
    /// Prepares to sleep until frames arrive.
    ///
    /// Returns [`WaitDecision::Ready`] when frames are ready after all (do not
    /// sleep; read them), [`WaitDecision::Sleep`] when the producer will ring the
    /// doorbell after its next publish, or [`WaitDecision::Nap`] when it may not
    /// yet (sleep on the doorbell with a short timeout). After a `Sleep` or
    /// `Nap`, call [`cancel_sleep`](Self::cancel_sleep) on waking, so that
    /// the producer stops checking for a sleeper (forgetting it costs
    /// nothing more: the producer rings once per sleep).
    ///
    /// Once a consumer of a ring has slept, the producer checks for
    /// sleepers behind a full fence after every publish, for the rest of
    /// the ring's life: the price of interrupt mode.
    ///
    /// # Errors
    /// [`Corruption`] if the peer corrupted the ring.
    pub fn prepare_sleep(&mut self) -> Result<WaitDecision, Corruption> {
        if let Some(c) = self.poisoned {
            return Err(c);
        }
        if self.cached_head != self.tail {
            return Ok(WaitDecision::Ready);
        }
        let ctl = self.storage.control();
        let acked = self.wait.prepare(&ctl.consumer_wait, &ctl.producer_wait);
        // The re-check after the fence in `prepare` (see `wait_line`): the
        // descriptor at our read position.
        self.find_ready(1)?;
        if self.cached_head != self.tail {
            self.cancel_sleep();
            return Ok(WaitDecision::Ready);
        }
        Ok(if acked {
            WaitDecision::Sleep
        } else {
            WaitDecision::Nap
        })
    }

    /// Says the consumer runs again: the producer stops ringing until the
    /// next [`prepare_sleep`](Self::prepare_sleep). Harmless when awake.
    pub fn cancel_sleep(&mut self) {
        if self.wait.sleeping() {
            self.wait.wake(&self.storage.control().consumer_wait);
        }
    }
}

impl<S: RingStorage> Producer<S> {
    /// Prepares to sleep until at least `slots` slots are free: as
    /// [`Consumer::prepare_sleep`], with [`WaitDecision::Ready`] meaning the room
    /// is there after all. Call [`cancel_space_sleep`](Self::cancel_space_sleep)
    /// on waking.
    ///
    /// # Errors
    /// [`Corruption`] if the peer corrupted the ring.
    pub fn prepare_space_sleep(&mut self, slots: u64) -> Result<WaitDecision, Corruption> {
        if let Some(c) = self.poisoned {
            return Err(c);
        }
        let slots = slots.clamp(1, u64::from(self.shape.slot_count));
        if self.free_slots(slots)? >= slots {
            return Ok(WaitDecision::Ready);
        }
        let ctl = self.storage.control();
        let acked = self.wait.prepare(&ctl.producer_wait, &ctl.consumer_wait);
        // The re-check after the fence in `prepare` (see `wait_line`).
        self.refresh_tail()?;
        if self.free_slots(slots)? >= slots {
            self.cancel_space_sleep();
            return Ok(WaitDecision::Ready);
        }
        Ok(if acked {
            WaitDecision::Sleep
        } else {
            WaitDecision::Nap
        })
    }

    /// Whether `slots` slots are free now (refreshing the consumer's index
    /// at most once, without a fence): no need to sleep.
    pub fn has_room(&mut self, slots: u64) -> bool {
        let slots = slots.clamp(1, u64::from(self.shape.slot_count));
        self.free_slots(slots).is_ok_and(|free| free >= slots)
    }

    /// Says the producer runs again (see
    /// [`Consumer::cancel_sleep`]).
    pub fn cancel_space_sleep(&mut self) {
        if self.wait.sleeping() {
            self.wait.wake(&self.storage.control().producer_wait);
        }
    }

    /// Whether a consumer is attached to the ring now, as the peer says:
    /// frames sent while none is may never be read. A hint for counting,
    /// not a guarantee.
    pub fn peer_present(&self) -> bool {
        present(&self.storage.control().consumer_wait)
    }
}
