//! The heap backend: a ring in this process's memory.

use super::consumer::Consumer;
use super::producer::Producer;
#[cfg(loom)]
use super::storage::Bell;
use super::storage::RingStorage;
use crate::abi::{self, RingControl, SlotDesc};
use crate::geometry::Geometry;

/// A ring on the heap, for rings inside one process, tests, loom and Miri.
#[derive(Clone)]
pub struct HeapRing(std::sync::Arc<HeapRingInner>);

/// The allocation behind a [`HeapRing`].
struct HeapRingInner {
    control: RingControl,
    descs: Box<[SlotDesc]>,
    data: *mut u8,
    layout: std::alloc::Layout,
    geometry: Geometry,
    /// Under loom, one cell per slot standing for its bytes (see
    /// [`RingStorage::slot_access`]).
    #[cfg(loom)]
    cells: Box<[crate::sync::UnsafeCell<()>]>,
    /// Under loom, the doorbells ([`Bell::Data`], [`Bell::Space`]) as
    /// loom's park/unpark pair, which may also wake spuriously.
    #[cfg(loom)]
    bells: [loom::sync::Notify; 2],
}

// SAFETY: `data` is a private heap allocation only reached through the ring
// protocol (one producer, one consumer); the other fields are atomics or
// immutable.
unsafe impl Send for HeapRingInner {}
// SAFETY: as above.
unsafe impl Sync for HeapRingInner {}

impl Drop for HeapRingInner {
    fn drop(&mut self) {
        // SAFETY: allocated in `HeapRing::new` with this layout.
        unsafe { std::alloc::dealloc(self.data, self.layout) }
    }
}

impl HeapRing {
    /// A zeroed ring of the given geometry.
    pub fn new(geometry: Geometry) -> Self {
        let bytes = geometry.slot_count() as usize * geometry.slot_size() as usize;
        let layout = std::alloc::Layout::from_size_align(bytes, abi::CACHE_LINE)
            .expect("geometry bounds the ring below 1 GiB");
        // SAFETY: `bytes > 0` (at least 2 slots of 64 bytes).
        let data = unsafe { std::alloc::alloc_zeroed(layout) };
        if data.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        let descs = (0..geometry.slot_count())
            .map(|_| SlotDesc(crate::sync::AtomicU64::new(0)))
            .collect();
        HeapRing(std::sync::Arc::new(HeapRingInner {
            control: RingControl::new(),
            descs,
            data,
            layout,
            geometry,
            #[cfg(loom)]
            cells: (0..geometry.slot_count())
                .map(|_| crate::sync::UnsafeCell::new(()))
                .collect(),
            #[cfg(loom)]
            bells: Default::default(),
        }))
    }

    /// Under loom only: sleeps until `bell` rang (or spuriously).
    #[cfg(loom)]
    pub fn sleep(&self, bell: Bell) {
        self.0.bells[bell as usize].wait();
    }
}

// SAFETY: the allocation lives as long as the last clone; sizes follow the
// geometry, and the layout is 64-byte aligned.
unsafe impl RingStorage for HeapRing {
    fn control(&self) -> &RingControl {
        &self.0.control
    }
    fn descs(&self) -> &[SlotDesc] {
        &self.0.descs
    }
    fn data(&self) -> *mut u8 {
        self.0.data
    }
    fn geometry(&self) -> Geometry {
        self.0.geometry
    }
    #[cfg(loom)]
    fn ring_doorbell(&self, bell: Bell) {
        self.0.bells[bell as usize].notify();
    }
    #[cfg(loom)]
    fn slot_access(&self, index: u64, slots: u64, write: bool) {
        let cells = &self.0.cells;
        for i in 0..slots {
            let cell = &cells[(index.wrapping_add(i) % cells.len() as u64) as usize];
            if write {
                cell.with_mut(|_| ());
            } else {
                cell.with(|_| ());
            }
        }
    }
}

/// A producer and consumer over a fresh heap ring.
pub fn heap_channel(geometry: Geometry) -> (Producer<HeapRing>, Consumer<HeapRing>) {
    let ring = HeapRing::new(geometry);
    // SAFETY: the ring is new; these are its only producer and consumer.
    // A fresh ring has both indices at zero, which always validates.
    unsafe {
        (
            Producer::attach(ring.clone()).expect("fresh ring"),
            Consumer::attach(ring).expect("fresh ring"),
        )
    }
}
