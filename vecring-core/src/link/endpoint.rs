//! A queue's end of a link, the data path's entry into the core: the
//! [`Sender`] and the [`Receiver`] an application (or the DPDK driver)
//! calls, and the [`Endpoint`] beneath both, which follows the current
//! session (one atomic load per call when nothing changed), attaches to its
//! queue's ring in it (and puts its doorbell in the wait set), carries the
//! totals across generations ([`Totals`]), and gives the queue back when
//! dropped. Their blocking calls are in [`super::blocking`].

use super::frame_error::{Gone, LinkRecvError, LinkSendError};
use super::shared::{LinkShared, Session, Taken};
use super::types::Role;
use super::wait_set::WaitSet;
use crate::abi::{self, Dir};
use crate::memory::{Region, RegionRing};
use crate::ring::{
    Consumer, Corruption, EndpointStats, HoldBack, Producer, PushError, ReadChunk, ReadyWord,
    SendError, WriteChunk,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Per-endpoint attachment to the current session.
pub(super) struct Endpoint<E: Attach> {
    pub(super) shared: Arc<LinkShared>,
    /// The queue pair this endpoint uses; claimed in `E::taken` until drop.
    pub(super) queue: u16,
    pub(super) epoch: u64,
    pub(super) generation: u64,
    pub(super) ring: Option<E>,
    pub(super) reported: bool,
    /// Totals of earlier generations' rings.
    pub(super) carried: EndpointStats,
    /// What this endpoint sleeps on (see `link::wait_set`).
    pub(super) wait: WaitSet,
}

/// What an endpoint attaches to a ring.
pub(super) trait Attach: Sized {
    /// The direction of this kind of endpoint's ring for `role`.
    fn dir(role: Role) -> Dir;
    /// # Safety
    /// The caller holds `queue`'s claim in [`Attach::taken`] (so no other
    /// endpoint of this ring exists in this process), and `ring` is a ring
    /// of the queue, in the session's region.
    unsafe fn attach(ring: RegionRing) -> Result<Self, Corruption>;
    /// The claims of this kind of endpoint.
    fn taken(shared: &LinkShared) -> &Taken;
    fn corruption(&self) -> Option<Corruption>;
    fn stats(&self) -> EndpointStats;
    fn detach(self, shared: &LinkShared, queue: u16);
    /// Called once attached to `generation`'s ring.
    fn attached(&mut self, _shared: &LinkShared, _queue: u16, _generation: u64) {}
    /// Called when the endpoint is dropped while attached to
    /// `generation`'s ring (the generation goes on).
    fn leaving(&self, _shared: &LinkShared, _queue: u16, _generation: u64) {}
    /// The link's (frames, bytes) totals of this kind of endpoint on
    /// `queue`, written only by the queue's one endpoint of this kind.
    fn totals(shared: &LinkShared, queue: u16) -> (&AtomicU64, &AtomicU64);
}

fn tx_dir(role: Role) -> Dir {
    match role {
        Role::Master => Dir::MasterToSlave,
        Role::Slave => Dir::SlaveToMaster,
    }
}

fn rx_dir(role: Role) -> Dir {
    match role {
        Role::Master => Dir::SlaveToMaster,
        Role::Slave => Dir::MasterToSlave,
    }
}

impl Attach for Producer<RegionRing> {
    fn dir(role: Role) -> Dir {
        tx_dir(role)
    }
    unsafe fn attach(ring: RegionRing) -> Result<Self, Corruption> {
        // SAFETY: the caller holds the queue's sender claim, and each
        // Sender holds at most one Producer at a time.
        unsafe { Producer::attach(ring) }
    }
    fn taken(shared: &LinkShared) -> &Taken {
        &shared.senders
    }
    fn corruption(&self) -> Option<Corruption> {
        Producer::corruption(self)
    }
    fn stats(&self) -> EndpointStats {
        Producer::stats(self)
    }
    fn attached(&mut self, shared: &LinkShared, queue: u16, generation: u64) {
        let c = &shared.tx[usize::from(queue)];
        let (g, frames) = *c.left_behind.lock().unwrap_or_else(|e| e.into_inner());
        if g == generation {
            self.inherit(frames);
        }
    }
    fn leaving(&self, shared: &LinkShared, queue: u16, generation: u64) {
        let c = &shared.tx[usize::from(queue)];
        *c.left_behind.lock().unwrap_or_else(|e| e.into_inner()) =
            (generation, self.published_frames());
    }
    fn detach(self, shared: &LinkShared, queue: u16) {
        // Bounded by what this side sent in the generation: the walk reads
        // descriptors the peer can rewrite (`Producer::unread_frames`).
        let lost = self.unread_frames();
        if lost > 0 {
            shared.tx[usize::from(queue)]
                .lost
                .fetch_add(lost, Ordering::Relaxed);
            log::warn!(
                "vecring: {}: {lost} frames sent on queue {queue} but unread when the generation ended",
                shared.label
            );
        }
    }
    fn totals(shared: &LinkShared, queue: u16) -> (&AtomicU64, &AtomicU64) {
        let c = &shared.tx[usize::from(queue)];
        (&c.frames, &c.bytes)
    }
}

impl Attach for Consumer<RegionRing> {
    fn dir(role: Role) -> Dir {
        rx_dir(role)
    }
    unsafe fn attach(ring: RegionRing) -> Result<Self, Corruption> {
        // SAFETY: as for the producer, with the queue's receiver claim.
        unsafe { Consumer::attach(ring) }
    }
    fn taken(shared: &LinkShared) -> &Taken {
        &shared.receivers
    }
    fn corruption(&self) -> Option<Corruption> {
        Consumer::corruption(self)
    }
    fn stats(&self) -> EndpointStats {
        Consumer::stats(self)
    }
    fn detach(self, _: &LinkShared, _: u16) {}
    fn totals(shared: &LinkShared, queue: u16) -> (&AtomicU64, &AtomicU64) {
        let c = &shared.rx[usize::from(queue)];
        (&c.frames, &c.bytes)
    }
}

impl<E: Attach> Endpoint<E> {
    /// The endpoint of queue `queue`, whose claim the caller took
    /// ([`Taken::claim`]); the endpoint gives it back when dropped.
    pub(super) fn new(shared: Arc<LinkShared>, queue: u16, wait: WaitSet) -> Self {
        shared.add_poke(wait.poke());
        // Continues the queue's totals: an earlier endpoint of the queue
        // may have counted some (its last `store_totals` ran in its drop).
        let (frames, bytes) = E::totals(&shared, queue);
        let carried = EndpointStats {
            frames: frames.load(Ordering::Relaxed),
            bytes: bytes.load(Ordering::Relaxed),
            corruptions: 0,
            held_back: 0,
        };
        Endpoint {
            shared,
            queue,
            epoch: u64::MAX,
            generation: 0,
            ring: None,
            reported: false,
            carried,
            wait,
        }
    }

    /// Frames and bytes over all generations.
    pub(super) fn totals(&self) -> Totals {
        let now = self.ring.as_ref().map(|r| r.stats()).unwrap_or_default();
        Totals {
            frames: self.carried.frames + now.frames,
            bytes: self.carried.bytes + now.bytes,
        }
    }

    /// Batch reads held back over all generations (see
    /// [`EndpointStats::held_back`]).
    pub(super) fn held_back(&self) -> u64 {
        let now = self.ring.as_ref().map_or(0, |r| r.stats().held_back);
        self.carried.held_back + now
    }

    /// Stores this endpoint's totals in the link's counters of its queue.
    pub(super) fn store_totals(&self) {
        let t = self.totals();
        let (f, b) = E::totals(&self.shared, self.queue);
        // Relaxed stores of running totals (this endpoint is the only
        // writer); readers want a recent value, not an ordering.
        f.store(t.frames, Ordering::Relaxed);
        b.store(t.bytes, Ordering::Relaxed);
    }

    /// Follows session changes: one atomic load when nothing changed.
    #[inline]
    pub(super) fn sync(&mut self) {
        // Acquire: pairs with the Release bump in `LinkShared::set_session`.
        let epoch = self.shared.epoch.load(Ordering::Acquire);
        if epoch != self.epoch {
            self.resync(epoch);
        }
    }

    #[cold]
    fn resync(&mut self, epoch: u64) {
        self.epoch = epoch;
        if let Some(old) = self.ring.take() {
            let st = old.stats();
            self.carried.frames += st.frames;
            self.carried.bytes += st.bytes;
            self.carried.held_back += st.held_back;
            old.detach(&self.shared, self.queue);
        }
        self.reported = false;
        let session = self.shared.lock().session.clone();
        self.wait.set_bell(None);
        if let Some(s) = session {
            self.generation = s.generation;
            let queues = s.region.queues();
            if self.queue >= queues {
                // A master that offers fewer queues than this endpoint's:
                // nothing flows on it in this generation.
                log::warn!(
                    "vecring: {}: queue {} is not in generation {} ({queues} queues); it carries nothing",
                    self.shared.label,
                    self.queue,
                    s.generation
                );
                return;
            }
            match self.attach(&s) {
                Ok(mut ring) => {
                    ring.attached(&self.shared, self.queue, s.generation);
                    self.ring = Some(ring);
                }
                Err(c) => self.report(&c),
            }
        }
    }

    /// Attaches to our ring in `s` (whose queues include ours) and puts
    /// its doorbell in the wait set.
    fn attach(&mut self, s: &Session) -> Result<E, Corruption> {
        let index = abi::ring_index(self.queue, E::dir(self.shared.role));
        let mut ring = s.region.ring(index);
        if let Some(bell) = s.doorbells.get(index) {
            ring = ring.with_doorbell(Arc::clone(bell));
            self.wait.set_bell(Some(Arc::clone(bell)));
        }
        // SAFETY: this endpoint holds the queue's claim (taken before
        // `new`, given back in `drop`), and `ring` is the queue's ring of
        // our kind in the session's region.
        unsafe { E::attach(ring) }
    }

    #[cold]
    pub(super) fn report(&mut self, c: &Corruption) {
        if !self.reported {
            self.reported = true;
            self.shared.report_corruption(self.generation, c);
        }
    }

    /// The ring to use now, if any.
    #[inline]
    pub(super) fn ring(&mut self) -> Option<&mut E> {
        self.sync();
        if let Some(c) = self.ring.as_ref().and_then(|r| r.corruption()) {
            self.report(&c);
        }
        self.ring.as_mut()
    }

    /// The ring to use now, or why there is none.
    #[inline]
    pub(super) fn ring_or_gone(&mut self) -> Result<&mut E, Gone> {
        self.sync();
        if let Some(c) = self.ring.as_ref().and_then(|r| r.corruption()) {
            self.report(&c);
        }
        match self.ring {
            Some(ref mut ring) => Ok(ring),
            None => Err(self.gone()),
        }
    }

    /// Why there is no ring: the link closed, or no peer now.
    #[cold]
    pub(super) fn gone(&self) -> Gone {
        // Acquire: pairs with the Release store in `Link::drop`.
        if self.shared.shutdown.load(Ordering::Acquire) {
            Gone::Closed
        } else {
            Gone::NoPeer
        }
    }
}

/// The frames and bytes one end of a queue has moved since its link
/// opened, over every generation: what
/// [`Sender::totals`](crate::Sender::totals) and
/// [`Receiver::totals`](crate::Receiver::totals) return.
/// The ring counts each frame once, as it publishes or releases it; a
/// caller keeping counters of its own (a DPDK port's, which the
/// application resets) adds the growth between two calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Frames.
    pub frames: u64,
    /// Bytes.
    pub bytes: u64,
}

impl Totals {
    /// What was added since `earlier` (wrapping, as counters do).
    #[must_use]
    pub fn since(&self, earlier: Totals) -> Totals {
        Totals {
            frames: self.frames.wrapping_sub(earlier.frames),
            bytes: self.bytes.wrapping_sub(earlier.bytes),
        }
    }
}

impl<E: Attach> Drop for Endpoint<E> {
    fn drop(&mut self) {
        // The totals (chunk users may not have flushed them), then the
        // ring, then the claim: a new endpoint of this queue continues the
        // totals and attaches only once this one let go.
        self.store_totals();
        if let Some(ring) = self.ring.take() {
            ring.leaving(&self.shared, self.queue, self.generation);
        }
        E::taken(&self.shared).release(self.queue);
    }
}

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
        Some(self.ep.ring()?.geometry())
    }

    /// The generation this endpoint sends into, if the link is up.
    pub fn generation(&mut self) -> Option<u64> {
        self.ep.ring()?;
        Some(self.ep.generation)
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
        Some(self.ep.ring()?.geometry())
    }

    /// The generation this endpoint receives from, if the link is up.
    pub fn generation(&mut self) -> Option<u64> {
        self.ep.ring()?;
        Some(self.ep.generation)
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
