//! The [`Receiver`]: the receive side of one queue of a link, on the
//! [`Endpoint`] that follows the link's sessions (`super::endpoint`). Its
//! blocking calls are in [`super::blocking`].

use super::endpoint::{Endpoint, Totals};
use super::frame_error::{Gone, LinkRecvError};
use crate::memory::{Region, RegionRing};
use crate::ring::{Consumer, HoldBack, ReadChunk, ReadyWord};
use std::sync::Arc;

/// The receive side of one queue of a [`Link`](super::Link)
/// ([`Link::receiver_on`](super::Link::receiver_on)). Use it from one
/// thread at a time.
pub struct Receiver {
    ep: Endpoint<Consumer<RegionRing>>,
    /// See [`Receiver::set_hold_back`].
    hold: Option<HoldBack>,
    /// The session whose consumer has `hold` applied.
    hold_epoch: u64,
}

impl Receiver {
    pub(super) fn new(ep: Endpoint<Consumer<RegionRing>>) -> Self {
        Receiver {
            ep,
            hold: None,
            hold_epoch: u64::MAX,
        }
    }

    pub(super) fn endpoint(&mut self) -> &mut Endpoint<Consumer<RegionRing>> {
        &mut self.ep
    }

    pub(super) fn endpoint_ref(&self) -> &Endpoint<Consumer<RegionRing>> {
        &self.ep
    }

    /// The queue this receiver receives from.
    pub fn queue(&self) -> u16 {
        self.ep.queue
    }

    fn store_totals(&mut self) {
        self.ep.store_totals();
    }

    /// Whether the link is up, as this endpoint last saw it.
    pub fn is_up(&mut self) -> bool {
        self.ep.ring().is_some()
    }

    /// Sets (or turns off) the hold-back of the batch reads, for this and
    /// every later generation; see [`HoldBack`]. Off by default.
    pub fn set_hold_back(&mut self, hold: Option<HoldBack>) {
        self.hold = hold;
        // Applied by `consumer` on the next read.
        self.hold_epoch = u64::MAX;
    }

    /// The hold-back of the batch reads ([`set_hold_back`](Self::set_hold_back)),
    /// if on.
    pub fn hold_back(&self) -> Option<HoldBack> {
        self.hold
    }

    /// Batch reads that found nothing because the hold-back held ready
    /// frames back, over every generation of this receiver: how often the
    /// hold-back held, to tell it from a link with nothing to read.
    pub fn held_back(&self) -> u64 {
        self.ep.held_back()
    }

    /// The current generation's consumer, with the hold-back applied.
    #[inline]
    fn consumer(&mut self) -> Result<&mut Consumer<RegionRing>, Gone> {
        self.ep.ring_or_gone()?;
        let epoch = self.ep.epoch;
        let ring = self.ep.ring.as_mut().ok_or(Gone::NoPeer)?;
        if self.hold_epoch != epoch {
            ring.set_hold_back(self.hold);
            self.hold_epoch = epoch;
        }
        Ok(ring)
    }

    /// The word that changes when this receiver has something new, for a
    /// wait that watches memory (see [`ReadyWord`]): with the link up, its
    /// ring's (a frame is ready); while it is down, the link's session
    /// counter (the link came up, or closed). Ask again after every read:
    /// the expected value moves on. The word stays valid while this
    /// receiver lives and makes no other call.
    pub fn ready_word(&mut self) -> ReadyWord {
        if let Some(c) = self.ep.ring() {
            return c.ready_word();
        }
        ReadyWord {
            addr: self.ep.shared.epoch.as_ptr().cast_const(),
            mask: u64::MAX,
            value: self.ep.epoch,
            ready_if_equal: false,
        }
    }

    /// The geometry of the rings, if the link is up.
    pub fn geometry(&mut self) -> Option<crate::Geometry> {
        self.ep.geometry()
    }

    /// The generation this endpoint receives from, if the link is up.
    pub fn generation(&mut self) -> Option<u64> {
        self.ep.generation_if_up()
    }

    /// Ready frames, read in place and released when the chunk drops.
    ///
    /// # Errors
    /// [`LinkRecvError::NoPeer`] without a peer, [`LinkRecvError::Closed`]
    /// once the link is closed, [`LinkRecvError::Corrupt`] if the peer
    /// corrupted this generation (the link then reconnects).
    #[inline]
    pub fn read_chunk(
        &mut self,
        max_frames: usize,
    ) -> Result<ReadChunk<'_, RegionRing>, LinkRecvError> {
        // The totals as of the previous chunk (see `Sender::write_chunk`).
        self.store_totals();
        let ring = self.consumer()?;
        Ok(ring.read_chunk(max_frames)?)
    }

    /// Releases the slots of frames [kept](ReadChunk::keep) in the current
    /// generation up to slot `index`; see [`Consumer::release_to`]. Returns
    /// false if `index` is out of range or the generation changed.
    pub fn release_to(&mut self, index: u64) -> bool {
        self.ep.ring.as_mut().is_some_and(|c| c.release_to(index))
    }

    /// `(released, read)` positions of the ring this endpoint holds now,
    /// without following a generation change (so they belong to the same
    /// ring as the last chunk read); see [`Consumer::released_position`].
    pub fn positions(&self) -> Option<(u64, u64)> {
        self.ep
            .ring
            .as_ref()
            .map(|c| (c.released_position(), c.read_position()))
    }

    /// The region the current generation's frames live in, if up (to keep
    /// it mapped while frames kept in place are in use).
    pub fn region(&mut self) -> Option<Arc<Region>> {
        Some(Arc::clone(self.ep.ring()?.storage().region()))
    }

    /// Copies the next frame into `buf`.
    ///
    /// # Errors
    /// As [`Consumer::recv`], plus [`LinkRecvError::NoPeer`] and
    /// [`LinkRecvError::Closed`].
    pub fn recv(&mut self, buf: &mut [u8]) -> Result<usize, LinkRecvError> {
        let r = self.ep.ring_or_gone()?.recv(buf);
        if r.is_ok() {
            self.store_totals();
        }
        Ok(r?)
    }

    /// Copies up to `bufs.len()` frames; see [`Consumer::recv_batch`].
    ///
    /// # Errors
    /// As [`Consumer::recv_batch`], plus [`LinkRecvError::NoPeer`] and
    /// [`LinkRecvError::Closed`].
    pub fn recv_batch<B: AsMut<[u8]>>(
        &mut self,
        bufs: &mut [B],
        lens: &mut [usize],
    ) -> Result<usize, LinkRecvError> {
        let r = self.consumer()?.recv_batch(bufs, lens);
        // Only when the totals moved: a receiver polling an empty ring
        // calls again at once.
        if matches!(r, Ok(n) if n > 0) {
            self.store_totals();
        }
        Ok(r?)
    }

    /// Updates the link's shared RX counters (done by `recv`/`recv_batch`;
    /// call after releasing chunks).
    pub fn flush_counters(&mut self) {
        self.store_totals();
    }

    /// What this queue has received since the link opened, over every
    /// generation, as the ring counted it (every frame a chunk handed out,
    /// whether the caller kept it or not).
    pub fn totals(&self) -> Totals {
        self.ep.totals()
    }
}
