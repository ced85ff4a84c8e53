//! What the data-path endpoints share: following the current session
//! (one atomic load per call when nothing changed) and carrying totals
//! across generations.

use super::shared::LinkShared;
use super::types::Role;
use crate::abi;
use crate::memory::{Region, RegionRing};
use crate::ring::{Consumer, Corruption, EndpointStats, Producer};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Per-endpoint attachment to the current session.
pub(super) struct Endpoint<E> {
    pub(super) shared: Arc<LinkShared>,
    pub(super) epoch: u64,
    pub(super) generation: u64,
    pub(super) ring: Option<E>,
    pub(super) reported: bool,
    /// Totals of earlier generations' rings.
    pub(super) carried: EndpointStats,
}

/// What an endpoint attaches to a ring.
pub(super) trait Attach: Sized {
    fn attach(region: &Arc<Region>, role: Role) -> Result<Self, Corruption>;
    fn corruption(&self) -> Option<Corruption>;
    fn stats(&self) -> EndpointStats;
    fn detach(self, shared: &LinkShared);
}

fn tx_ring(role: Role) -> usize {
    match role {
        Role::Master => abi::RING_MASTER_TO_SLAVE,
        Role::Slave => abi::RING_SLAVE_TO_MASTER,
    }
}

fn rx_ring(role: Role) -> usize {
    tx_ring(role) ^ 1
}

impl Attach for Producer<RegionRing> {
    fn attach(region: &Arc<Region>, role: Role) -> Result<Self, Corruption> {
        // SAFETY: `Link::sender` hands out one Sender per link, and each
        // Sender holds at most one Producer at a time.
        unsafe { Producer::attach(region.ring(tx_ring(role))) }
    }
    fn corruption(&self) -> Option<Corruption> {
        Producer::corruption(self)
    }
    fn stats(&self) -> EndpointStats {
        Producer::stats(self)
    }
    fn detach(self, shared: &LinkShared) {
        let lost = self.unread_frames();
        if lost > 0 {
            shared.tx.lost.fetch_add(lost, Ordering::Relaxed);
            log::warn!(
                "vecring: {}: {lost} frames sent but unread when the generation ended",
                shared.label
            );
        }
    }
}

impl Attach for Consumer<RegionRing> {
    fn attach(region: &Arc<Region>, role: Role) -> Result<Self, Corruption> {
        // SAFETY: as for the producer, via `Link::receiver`.
        unsafe { Consumer::attach(region.ring(rx_ring(role))) }
    }
    fn corruption(&self) -> Option<Corruption> {
        Consumer::corruption(self)
    }
    fn stats(&self) -> EndpointStats {
        Consumer::stats(self)
    }
    fn detach(self, _: &LinkShared) {}
}

impl<E: Attach> Endpoint<E> {
    pub(super) fn new(shared: Arc<LinkShared>) -> Self {
        Endpoint {
            shared,
            epoch: u64::MAX,
            generation: 0,
            ring: None,
            reported: false,
            carried: EndpointStats::default(),
        }
    }

    /// Frames and bytes over all generations.
    pub(super) fn totals(&self) -> (u64, u64) {
        let now = self.ring.as_ref().map(|r| r.stats()).unwrap_or_default();
        (
            self.carried.frames + now.frames,
            self.carried.bytes + now.bytes,
        )
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
            old.detach(&self.shared);
        }
        self.reported = false;
        let session = self.shared.lock().session.clone();
        if let Some(s) = session {
            self.generation = s.generation;
            match E::attach(&s.region, self.shared.role) {
                Ok(ring) => self.ring = Some(ring),
                Err(c) => self.report(&c),
            }
        }
    }

    #[cold]
    fn report(&mut self, c: &Corruption) {
        if !self.reported {
            self.reported = true;
            self.shared.report_corruption(self.generation, c);
        }
    }

    /// The ring to use now, or why there is none.
    #[inline]
    pub(super) fn ring(&mut self) -> Option<&mut E> {
        self.sync();
        if let Some(c) = self.ring.as_ref().and_then(|r| r.corruption()) {
            self.report(&c);
        }
        self.ring.as_mut()
    }
}
