//! Zero-copy receive (`zero_copy=true`): frames of at least
//! [`ZC_MIN_LEN`] bytes whose slots are contiguous in memory (all but the
//! rare frame that wraps around the end of the ring) are handed to the
//! application as mbufs attached to the slots themselves (DPDK external
//! buffers) instead of being copied. The slots go back to the producer when
//! the mbuf is freed.
//!
//! The ring releases slots in order, but the application frees mbufs in any
//! order, on any lcore. So each frame's first slot has a *done* flag and a
//! *span* (how many slots the frame holds): the mbuf's free callback sets
//! the flag, and every receive burst first walks the frames from the last
//! released slot and releases the run of done ones with one index store
//! ([`reclaim`]). Frames the burst copies (small, wrapped) or drops
//! (filtered) are marked done at once when an attached frame still held
//! lies before them; when none does, the burst gives them back itself, as
//! copy mode does, and marks nothing (a burst of small frames then costs
//! what it costs in copy mode).
//!
//! Each link generation gets its own [`ZcSlots`], reference-counted by the
//! queue and by every outstanding mbuf, so that the shared mapping outlives
//! the last mbuf pointing into it, even after the peer left or the port
//! closed.
//!
//! Trade-offs, documented for users: a hostile peer can change a frame's
//! bytes while the application reads them (never their length or location);
//! mbufs held by the application hold ring slots (back-pressure on the
//! peer); the memory has no IOVA, so these mbufs cannot be handed to a
//! NIC's DMA without a copy.

use crate::sys::compat::mbuf;
use crate::sys::ffi::{self, rte_mbuf, rte_mbuf_ext_shared_info};
use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU16, AtomicU8, Ordering};
use std::sync::Arc;
use vecring_core::memory::RegionRing;
use vecring_core::{Frame, Geometry, Receiver, RingStorage};

/// Smaller frames are copied even in zero-copy mode: copying them costs
/// less than attaching and freeing an external buffer.
pub const ZC_MIN_LEN: usize = 512;

/// One generation's receive ring as seen by zero-copy mbufs.
pub struct ZcSlots {
    /// Keeps the region mapped while any mbuf points into it.
    ring: RegionRing,
    /// The ring's geometry, which maps ring indices to slots.
    geometry: Geometry,
    /// Per frame's first slot: 1 once the frame is no longer needed.
    done: Box<[AtomicU8]>,
    /// Per frame's first slot: the slots the frame holds. Written and read
    /// only by the RX lcore.
    span: Box<[AtomicU16]>,
    /// Per frame's first slot: the external-buffer descriptor of the mbuf
    /// attached to the frame.
    shinfo: Box<[UnsafeCell<rte_mbuf_ext_shared_info>]>,
}

// SAFETY: `shinfo[i]` is written only by the RX lcore while no mbuf is
// attached at slot `i` (the frame attached there before was freed and its
// slots released, or none ever was), and read by DPDK through the attached
// mbuf; `done` and `span` are atomic; the rest is immutable.
unsafe impl Send for ZcSlots {}
// SAFETY: as above.
unsafe impl Sync for ZcSlots {}

impl ZcSlots {
    fn new(ring: &RegionRing) -> Arc<Self> {
        let g = ring.geometry();
        let n = g.slot_count() as usize;
        Arc::new(ZcSlots {
            ring: ring.clone(),
            geometry: g,
            done: (0..n).map(|_| AtomicU8::new(0)).collect(),
            span: (0..n).map(|_| AtomicU16::new(1)).collect(),
            shinfo: (0..n)
                .map(|_| UnsafeCell::new(rte_mbuf_ext_shared_info::default()))
                .collect(),
        })
    }

    /// Records that the frame whose first slot is `slot` holds `slots` slots.
    #[inline]
    fn set_span(&self, slot: usize, slots: u64) {
        // Relaxed: written and read by the RX lcore only. A frame holds at
        // most `max_frame_len / 64 < u16::MAX` slots.
        self.span[slot].store(slots as u16, Ordering::Relaxed);
    }

    /// Marks the frame of `slots` slots at `index` done (its bytes were
    /// copied or dropped).
    #[inline]
    pub fn mark_done(&self, index: u64, slots: u64) {
        let slot = self.geometry.slot_of(index);
        self.set_span(slot, slots);
        // Relaxed: only this lcore reads the flag of a frame it marked
        // itself, after its own copy.
        self.done[slot].store(1, Ordering::Relaxed);
    }

    /// Attaches `frame`, whose bytes are contiguous, to the fresh mbuf `m`.
    ///
    /// # Safety
    /// `m` must be a freshly allocated direct mbuf owned by the caller, and
    /// `frame` a frame of this generation's ring with
    /// [`Frame::contiguous`] bytes.
    #[inline]
    pub unsafe fn attach(self: &Arc<Self>, m: *mut rte_mbuf, frame: &Frame<'_>) {
        let slot = self.geometry.slot_of(frame.index());
        let len = frame.len();
        debug_assert!(frame.contiguous().is_some());
        let buf = frame.first_segment().as_ptr().cast_mut();
        self.set_span(slot, frame.slots());
        let shinfo = self.shinfo[slot].get();
        // One reference per outstanding mbuf, given back in `free_slot`.
        let opaque = Arc::into_raw(Arc::clone(self));
        // SAFETY: no other mbuf is attached at slot `slot` (the frame was
        // read just now and its slots are released only after its done flag
        // is set), so writing its shinfo races with nobody; `m` is ours;
        // `buf..buf+len` is the frame's contiguous run of slots.
        unsafe {
            (*shinfo).free_cb = Some(free_slot);
            (*shinfo).fcb_opaque = opaque.cast_mut().cast::<c_void>();
            ffi::vecring_pktmbuf_attach_extbuf(m, buf.cast::<c_void>(), len as u16, shinfo);
            mbuf::set_data_len(m, len as u16);
            mbuf::set_pkt_len(m, len as u32);
        }
    }
}

/// DPDK's callback when the last mbuf attached to a slot is freed, on
/// whatever lcore freed it.
///
/// # Safety
/// DPDK calls it once, when the last mbuf attached in [`ZcSlots::attach`] is
/// freed, with that call's `opaque` (a counted `Arc<ZcSlots>`) and an
/// address inside that ring's slots.
unsafe extern "C" fn free_slot(addr: *mut c_void, opaque: *mut c_void) {
    let zc = opaque.cast_const().cast::<ZcSlots>();
    // SAFETY: `opaque` is the `Arc::into_raw` made in `attach`, still
    // counted, so the slots are alive.
    let slots = unsafe { &*zc };
    // `addr` is the buffer `attach` gave the mbuf, the first byte of a
    // frame in this ring's slots.
    let slot = slots.ring.slot_at(addr.cast_const().cast());
    debug_assert!(slot.is_some(), "freed buffer outside the ring");
    if let Some(slot) = slot {
        // Release: pairs with the Acquire load in `reclaim`, so the
        // application's reads of the slot happen before the slot is
        // released to the producer.
        slots.done[slot].store(1, Ordering::Release);
    }
    // SAFETY: gives back the reference taken in `attach`.
    unsafe { Arc::decrement_strong_count(zc) };
}

/// The queue's slots for the ring `ring` (a new set when the generation
/// changed).
#[inline]
pub fn slots_for<'a>(current: &'a mut Option<Arc<ZcSlots>>, ring: &RegionRing) -> &'a Arc<ZcSlots> {
    let stale = current
        .as_ref()
        .is_none_or(|z| !Arc::ptr_eq(z.ring.region(), ring.region()));
    if stale {
        *current = Some(ZcSlots::new(ring));
    }
    current.as_ref().expect("set above")
}

/// Releases the run of done frames after the last release, with one index
/// store. `slots` must belong to the ring `receiver` read last.
#[inline]
pub fn reclaim(receiver: &mut Receiver, slots: Option<&Arc<ZcSlots>>) {
    let (Some(zc), Some((released, read))) = (slots, receiver.positions()) else {
        return;
    };
    let mut at = released;
    while at != read {
        let slot = zc.geometry.slot_of(at);
        let flag = &zc.done[slot];
        // Acquire: pairs with the Release store in `free_slot`.
        if flag.load(Ordering::Acquire) == 0 {
            break;
        }
        flag.store(0, Ordering::Relaxed);
        // Relaxed: set by this lcore when it read the frame. Clamped so
        // that the walk cannot pass the read position whatever it holds.
        let span = u64::from(zc.span[slot].load(Ordering::Relaxed).max(1));
        at = at.wrapping_add(span.min(read.wrapping_sub(at)));
    }
    if at != released {
        receiver.release_to(at);
    }
}
