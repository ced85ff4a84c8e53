//! The memory a ring lives in ([`RingStorage`]), the doorbell through
//! which one side wakes the other, and the hooks through which the ring
//! tells loom when it touches a slot's bytes.

use crate::abi::{RingControl, SlotDesc};
use crate::geometry::Geometry;

/// Memory that holds one ring: its control block, descriptors and slot data.
///
/// Implemented for the heap ([`HeapRing`]) and for a shared-memory region
/// ([`crate::memory::RegionRing`]); the ring code is the same for both.
///
/// # Safety
/// `control`, `descs` and `data` must stay valid for as long as the storage
/// (or any clone of it) lives: `descs()` has `geometry().slot_count()`
/// entries and `data()` points to `slot_count * slot_size` bytes, valid for
/// reads and writes and aligned to 64 bytes. The geometry must never change.
///
/// [`HeapRing`]: super::HeapRing
pub unsafe trait RingStorage: Send + Sync {
    /// The ring's control block.
    fn control(&self) -> &RingControl;
    /// The slot descriptors, `slot_count` of them.
    fn descs(&self) -> &[SlotDesc];
    /// The first byte of slot 0.
    fn data(&self) -> *mut u8;
    /// The ring's shape.
    fn geometry(&self) -> Geometry;
    /// The slot whose bytes hold `addr`, if `addr` points into this
    /// ring's slot data: for code that gets back only an address, such as
    /// the DPDK driver's callback when an mbuf attached to a slot is freed.
    #[inline]
    fn slot_at(&self, addr: *const u8) -> Option<usize> {
        let g = self.geometry();
        let offset = (addr as usize).wrapping_sub(self.data() as usize);
        let slot = offset >> g.slot_size().trailing_zeros();
        (slot < g.slot_count() as usize).then_some(slot)
    }
    /// Wakes the other side of the ring, which said it sleeps (see
    /// `ring::wait`): the consumer for [`Bell::Data`], the producer
    /// for [`Bell::Space`]. Must not block. Storage without a doorbell does
    /// nothing: its sleepers wake by their own timeouts.
    #[inline]
    fn ring_doorbell(&self, bell: Bell) {
        let _ = bell;
    }
    /// Under loom only: the ring reads (`write` false) or writes the bytes
    /// of the `slots` slots from free-running `index` now. [`HeapRing`]
    /// records it in a loom cell per slot, so that loom reports a slot
    /// written while the other side may still read it, or read before the
    /// write is visible. The ring calls it through `model_read` and
    /// `model_write`; storage that does not record does nothing.
    #[cfg(loom)]
    fn slot_access(&self, index: u64, slots: u64, write: bool) {
        let _ = (index, slots, write);
    }
}

/// Which side a doorbell wakes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bell {
    /// The producer published frames: wakes the consumer.
    Data,
    /// The consumer freed slots: wakes the producer.
    Space,
}

/// The consumer reads the `slots` slots from free-running `index` now:
/// after the Acquire load of the frame's descriptor whose stamp published
/// them (or the Acquire fence after its Relaxed load; `shape::put_desc`
/// lists the consumer's loads), before the Release store of `tail` that
/// frees them (`Consumer::publish_release`). Tells loom (see
/// `RingStorage::slot_access`, a method only under loom); compiles to
/// nothing otherwise.
#[inline(always)]
pub(super) fn model_read<S: RingStorage>(storage: &S, index: u64, slots: u64) {
    #[cfg(loom)]
    storage.slot_access(index, slots, false);
    #[cfg(not(loom))]
    let _ = (storage, index, slots);
}

/// The producer writes the `slots` slots from free-running `index` now:
/// after the Acquire load of `tail` that freed them
/// (`Producer::refresh_tail`), before the Release store of the frame's
/// first descriptor that publishes them (`shape::put_desc`). As
/// [`model_read`].
#[inline(always)]
pub(super) fn model_write<S: RingStorage>(storage: &S, index: u64, slots: u64) {
    #[cfg(loom)]
    storage.slot_access(index, slots, true);
    #[cfg(not(loom))]
    let _ = (storage, index, slots);
}
