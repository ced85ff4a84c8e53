//! The [`Sender`]: the transmit side of one queue of a link, on the
//! [`Endpoint`] that follows the link's sessions (`super::endpoint`). Its
//! blocking calls are in [`super::blocking`].

use super::endpoint::{Endpoint, Totals};
use super::frame_error::LinkSendError;
use crate::memory::RegionRing;
use crate::ring::{Producer, PushError, SendError, WriteChunk};
use std::sync::atomic::Ordering;

/// The transmit side of one queue of a [`Link`](super::Link)
/// ([`Link::sender_on`](super::Link::sender_on)). Use it from one thread at
/// a time.
pub struct Sender {
    ep: Endpoint<Producer<RegionRing>>,
    /// Calls that found the ring full (see [`LinkCounters::tx_ring_full`](super::LinkCounters::tx_ring_full)).
    full: u64,
}

impl Sender {
    pub(super) fn new(ep: Endpoint<Producer<RegionRing>>) -> Self {
        // Continues the queue's total, as the endpoint does (an earlier
        // Sender of this queue may have counted some).
        let full = ep.shared.tx[usize::from(ep.queue)]
            .full
            .load(Ordering::Relaxed);
        Sender { ep, full }
    }

    pub(super) fn endpoint(&mut self) -> &mut Endpoint<Producer<RegionRing>> {
        &mut self.ep
    }

    pub(super) fn endpoint_ref(&self) -> &Endpoint<Producer<RegionRing>> {
        &self.ep
    }

    /// Slots a frame of `len` bytes takes in the current generation's ring
    /// (1 while down).
    pub(super) fn slots_for(&mut self, len: usize) -> u64 {
        self.geometry().map_or(1, |g| g.slots_for(len) as u64)
    }

    /// Whether the peer has a receiver on this queue now, as it says in
    /// shared memory: frames sent while it has none may never be read
    /// (the DPDK driver counts them as drops). False while down.
    pub fn peer_present(&mut self) -> bool {
        self.ep.ring().is_some_and(|p| p.peer_present())
    }

    /// The queue this sender sends on.
    pub fn queue(&self) -> u16 {
        self.ep.queue
    }

    /// Counts a call that found the ring full.
    #[cold]
    fn found_full(&mut self) {
        self.full += 1;
        // Relaxed: a running total from its only writer.
        self.ep.shared.tx[usize::from(self.ep.queue)]
            .full
            .store(self.full, Ordering::Relaxed);
    }

    fn store_totals(&mut self) {
        self.ep.store_totals();
    }

    /// Whether the link is up, as this endpoint last saw it.
    pub fn is_up(&mut self) -> bool {
        self.ep.ring().is_some()
    }

    /// The geometry of the rings, if the link is up (it may change when a
    /// new master arrives).
    pub fn geometry(&mut self) -> Option<crate::Geometry> {
        self.ep.geometry()
    }

    /// The generation this endpoint sends into, if the link is up.
    pub fn generation(&mut self) -> Option<u64> {
        self.ep.generation_if_up()
    }

    /// Reserves up to `max_slots` slots for writing frames in place; commit
    /// the chunk to send them.
    ///
    /// # Errors
    /// [`LinkSendError::NoPeer`] without a peer, [`LinkSendError::Closed`]
    /// once the link is closed, [`LinkSendError::Corrupt`] if the peer
    /// corrupted this generation (the link then reconnects).
    #[inline]
    pub fn write_chunk(
        &mut self,
        max_slots: usize,
    ) -> Result<WriteChunk<'_, RegionRing>, LinkSendError> {
        // The totals as of the previous chunk, so that the link's counters
        // (`vecring stats`) follow chunk users too: two stores to a line
        // only this thread writes.
        self.store_totals();
        let ring = self.ep.ring_or_gone()?;
        Ok(ring.write_chunk(max_slots)?)
    }

    /// Reserves exactly the slots that frames of the lengths `frame_lens`
    /// need in the current ring (sized by [`Geometry::slots_for`](crate::Geometry::slots_for)),
    /// at least one: a caller that knows its burst asks for no more than
    /// it uses, so the ring re-reads the consumer's index only when its
    /// cached view holds less. Unlike [`write_chunk`](Self::write_chunk),
    /// it leaves the link's counters to the caller's
    /// [`flush_counters`](Self::flush_counters) after the commit (a DPDK
    /// burst calls it, then counts what it sent from [`totals`](Self::totals)).
    ///
    /// # Errors
    /// As [`write_chunk`](Self::write_chunk).
    #[inline]
    pub fn write_chunk_for(
        &mut self,
        frame_lens: impl IntoIterator<Item = usize>,
    ) -> Result<WriteChunk<'_, RegionRing>, LinkSendError> {
        let ring = self.ep.ring_or_gone()?;
        let need: usize = frame_lens
            .into_iter()
            .map(|len| ring.slots_for(len) as usize)
            .sum();
        Ok(ring.write_chunk(need.max(1))?)
    }

    /// Copies one frame into the link.
    ///
    /// # Errors
    /// As [`Producer::send`], plus [`LinkSendError::NoPeer`] and
    /// [`LinkSendError::Closed`].
    pub fn send(&mut self, frame: &[u8]) -> Result<(), LinkSendError> {
        let r = self.ep.ring_or_gone()?.send(frame);
        match r {
            Ok(()) => self.store_totals(),
            Err(SendError::Push(PushError::Full)) => self.found_full(),
            Err(_) => {}
        }
        Ok(r?)
    }

    /// Copies as many frames as fit, with one index update; returns how
    /// many were sent.
    ///
    /// # Errors
    /// As [`Producer::send_batch`], plus [`LinkSendError::NoPeer`] and
    /// [`LinkSendError::Closed`].
    pub fn send_batch<'f, I>(&mut self, frames: I) -> Result<usize, LinkSendError>
    where
        I: IntoIterator<Item = &'f [u8]>,
    {
        let r = self.ep.ring_or_gone()?.send_batch(frames);
        // Only when the totals moved: a sender finding the ring full calls
        // again at once.
        match r {
            Ok(n) if n > 0 => self.store_totals(),
            Ok(_) | Err(SendError::Push(PushError::Full)) => self.found_full(),
            Err(_) => {}
        }
        Ok(r?)
    }

    /// Frames sent in the current generation that the peer has not read
    /// yet (0 when the link is down).
    pub fn unread(&mut self) -> u64 {
        self.ep.ring().map_or(0, |p| p.unread_frames())
    }

    /// Updates the link's shared TX counters from this endpoint's totals
    /// (done by `send`/`send_batch`; call after committing chunks).
    pub fn flush_counters(&mut self) {
        self.store_totals();
    }

    /// Starts taking the next `slots` free slots (at most 64) for writing,
    /// for a sender whose next batch comes after other work of its own
    /// ([`Producer::prefetch_next`](crate::ring::Producer::prefetch_next));
    /// nothing when the link is down.
    #[inline]
    pub fn prefetch_next(&mut self, slots: usize) {
        if let Some(p) = self.ep.ring() {
            p.prefetch_next(slots);
        }
    }

    /// What this queue has sent since the link opened, over every
    /// generation, as the ring counted it (committed chunks included,
    /// flushed or not).
    pub fn totals(&self) -> Totals {
        self.ep.totals()
    }
}
