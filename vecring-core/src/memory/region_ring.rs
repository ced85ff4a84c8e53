//! [`RegionRing`]: one ring of a [`Region`], the storage the ring code
//! runs on in shared memory.

use super::Region;
use crate::abi::{self, RingControl, SlotDesc};
use crate::doorbell::Doorbell;
use crate::geometry::Geometry;
use crate::ring::{Bell, RingStorage};
use std::sync::Arc;

/// One ring inside a [`Region`]; keeps the region mapped.
#[derive(Clone)]
pub struct RegionRing {
    region: Arc<Region>,
    /// Our end of the ring's doorbell (none: sleepers wake by timeouts).
    doorbell: Option<Arc<Doorbell>>,
    control: *const RingControl,
    descs: *const SlotDesc,
    data: *mut u8,
}

impl Region {
    /// Ring `ring` of the region: `2 * queue + dir` (the ABI's
    /// `ring_index`), with `dir` 0 for master → slave and 1 for
    /// slave → master.
    ///
    /// # Panics
    /// If `ring >= 2 * queues()` (a programming error, never peer input:
    /// the link checks a queue against the region before asking).
    pub fn ring(self: &Arc<Self>, ring: usize) -> RegionRing {
        assert!(
            ring < abi::ring_count(self.queues) as usize,
            "ring index {ring} out of range for {} queues",
            self.queues
        );
        let g = self.geometry;
        let base = abi::ring_offset(ring, g.slot_count(), g.slot_size()) as usize;
        // SAFETY: `validate_header`/`create` ensured the mapping holds
        // `min_region_size(queues)`, which covers every ring area below
        // `ring_count(queues)`; all offsets are 64-byte aligned.
        let area = unsafe { self.map.as_mut_ptr().add(base) };
        RegionRing {
            region: Arc::clone(self),
            doorbell: None,
            control: area as *const RingControl,
            // SAFETY: DESC_OFFSET and data_offset lie inside the ring area.
            descs: unsafe { area.add(abi::DESC_OFFSET as usize) } as *const SlotDesc,
            // SAFETY: as above.
            data: unsafe { area.add(abi::data_offset(g.slot_count()) as usize) },
        }
    }
}

impl RegionRing {
    /// The region this ring lives in.
    pub fn region(&self) -> &Arc<Region> {
        &self.region
    }

    /// The ring with `doorbell` as our end of its doorbell pair.
    pub(crate) fn with_doorbell(mut self, doorbell: Arc<Doorbell>) -> Self {
        self.doorbell = Some(doorbell);
        self
    }
}

// SAFETY: the pointers target the shared mapping, which `region` keeps
// alive; all access through them is atomic or follows the ring protocol.
unsafe impl Send for RegionRing {}
// SAFETY: as above.
unsafe impl Sync for RegionRing {}

// SAFETY: `Region::ring` derives the pointers from a validated layout inside
// the mapping that `self.region` keeps alive; geometry is fixed.
unsafe impl RingStorage for RegionRing {
    fn control(&self) -> &RingControl {
        // SAFETY: see the impl's contract; RingControl is all atomics, so
        // concurrent peer writes are fine.
        unsafe { &*self.control }
    }
    fn descs(&self) -> &[SlotDesc] {
        // SAFETY: `slot_count` atomic descriptors at a 4-aligned offset.
        unsafe {
            core::slice::from_raw_parts(self.descs, self.region.geometry.slot_count() as usize)
        }
    }
    fn data(&self) -> *mut u8 {
        self.data
    }
    fn geometry(&self) -> Geometry {
        self.region.geometry
    }
    #[inline]
    fn ring_doorbell(&self, _bell: Bell) {
        // On a ring's pair each end carries one kind of signal (see
        // `crate::doorbell`), so the kind needs no saying.
        if let Some(d) = &self.doorbell {
            d.ring();
        }
    }
}
