//! A queue's end of a link, the data path's entry into the core: the
//! [`Endpoint`] beneath the [`Sender`](super::Sender) and the
//! [`Receiver`](super::Receiver) an application (or the DPDK driver)
//! calls, which follows the current session (one atomic load per call
//! when nothing changed), attaches to its queue's ring in it (and puts its
//! doorbell in the wait set), carries the totals across generations
//! ([`Totals`]), and gives the queue back when dropped. The two sides are
//! in [`super::sender`] and [`super::receiver`], their blocking calls in
//! [`super::blocking`].

use super::frame_error::Gone;
use super::shared::{LinkShared, Session, Taken};
use super::types::Role;
use super::wait_set::WaitSet;
use crate::abi::{self, Dir};
use crate::memory::RegionRing;
use crate::ring::{Consumer, Corruption, EndpointStats, Producer};
use crate::Geometry;
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
    /// The ring's geometry.
    fn geometry(&self) -> Geometry;
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
    fn geometry(&self) -> Geometry {
        Producer::geometry(self)
    }
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
    fn geometry(&self) -> Geometry {
        Consumer::geometry(self)
    }
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

    /// The rings' geometry, if the link is up.
    pub(super) fn geometry(&mut self) -> Option<Geometry> {
        Some(self.ring()?.geometry())
    }

    /// The generation of the ring attached to, if the link is up.
    pub(super) fn generation_if_up(&mut self) -> Option<u64> {
        self.ring()?;
        Some(self.generation)
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
