//! One ring: a single-producer/single-consumer queue of frames in a ring
//! area of the region (where each lies: [`crate::region`]).
//!
//! **Do not change this layout** without bumping
//! [`VERSION_MAJOR`](crate::VERSION_MAJOR) (the crate documentation says
//! what each version promises). Every size and offset below is asserted at
//! compile time.
//!
//! ```text
//!  ring area (ring_area_size bytes, at ring_offset in the region)
//!  +-----------------------+
//!  | RingControl   256 B   |  +0    producer line: head (64 B line)
//!  |                       |  +64   consumer line: tail (64 B line)
//!  |                       |  +128  consumer's wait line
//!  |                       |  +192  producer's wait line
//!  +-----------------------+
//!  | SlotDesc[slot_count]  |  +256 (DESC_OFFSET), 8 B each (see below):
//!  |                       |  len, flags and the lap stamp of a frame's
//!  |                       |  first slot; the other slots' are not used
//!  +-----------------------+  data_offset: rounded up to 4096
//!  | slot data             |  slot_count * slot_size bytes,
//!  | [slot_count][slot_sz] |  each slot 64-byte aligned
//!  +-----------------------+  rounded up to 4096
//! ```
//!
//! Indices are free-running `u64`s; a slot is `index & (slot_count - 1)`.
//! The producer owns `head`, the consumer owns `tail`; each keeps a private
//! copy of its own index and never trusts the shared one after start-up.
//!
//! # Descriptors
//!
//! **Readiness is in the descriptor** (since ABI 5). A descriptor is one
//! `u64`:
//!
//! ```text
//!  63                                  24 23      16 15             0
//! +--------------------------------------+----------+----------------+
//! | stamp: (lap + 1) mod 2^40            | flags    | len            |
//! +--------------------------------------+----------+----------------+
//!  lap = index / slot_count of the frame's first slot (free-running)
//! ```
//!
//! A frame of `len` bytes occupies `ceil(len / slot_size)` consecutive
//! slots, its bytes back to back from the start of its first slot, so that
//! it is one contiguous run of memory unless it wraps around the end of the
//! data area (then it continues at slot 0). The descriptor of its first
//! slot holds the whole length, and [`SLOT_FLAG_MORE`] exactly when the
//! frame continues into the following slots; the descriptors of those
//! slots are not used. Small slots therefore pack small frames densely (a
//! 64-byte frame in 64-byte slots is one data line and 1/8 of a
//! descriptor line), and a large frame costs one descriptor, not one per
//! slot.
//!
//! A descriptor from an earlier lap holds an earlier stamp, and zeroed
//! memory holds stamp 0, which lap 0 does not expect. Only a frame's first
//! descriptor is written, so a slot inside a long frame keeps the stamp of
//! the last frame that started there. With 40 bits of stamp, such a
//! descriptor can hold the stamp its slot expects again only after 2^40
//! laps without a frame starting there (at least 2^41 slots of traffic in
//! the smallest ring, 2^55 in the default one); even then it is checked as
//! any other peer value.
//!
//! # Orderings
//!
//! Each rule names the two operations that pair; an implementation in
//! another language uses the same orderings (C11 `memory_order_*`).
//!
//! - **Frames.** The producer writes a frame's bytes, then stores its
//!   first descriptor with the stamp of that slot's lap: a Release store,
//!   which *publishes* the frame. The consumer loads the descriptor at its
//!   read position with Acquire (or loads a group of descriptors Relaxed,
//!   then issues an Acquire fence before reading any of their frames), and
//!   takes the frame when it finds the stamp its own index expects; it
//!   never loads `head` to learn of frames. A producer that publishes
//!   several frames at once stores the first frame's descriptor last, so
//!   that a consumer waiting on it finds them all when it sees it (the
//!   format allows any order: the consumer reads in order and stops at
//!   the first descriptor without its stamp).
//! - **Slots given back.** The consumer stores `tail` with Release after
//!   it has read the frames before it; the producer loads `tail` with
//!   Acquire before it writes into the slots it frees, and only when its
//!   cached view of the free slots runs out, so that the two sides never
//!   write the same line on the data path.
//! - **`head`** is stored by the producer after each call or batch,
//!   Relaxed: a hint for the wait protocol and for a producer that attaches
//!   again, which publishes nothing.
//! - **Waits.** A side about to sleep stores an odd sequence in its wait
//!   line, issues a SeqCst fence and checks the ring once more. The other
//!   side loads that line after each store that hands over frames or
//!   slots; once it has seen [`WAIT_ARMED`] there it sets its own line's
//!   `ack` and from then on issues a SeqCst fence between that store and
//!   the load, and signals the ring's doorbell for each odd sequence it has
//!   not signalled yet. The two fences pair: either the sleeper's check
//!   sees the store, or the other side's load sees the sleep. Until a
//!   sleeper sees the other side's `ack` it cannot count on a signal and
//!   sleeps only with a short timeout. [`WaitLine`] has the bits.

use crate::CACHE_LINE;
use core::sync::atomic::{AtomicU32, AtomicU64};

/// Smallest frame the link carries.
pub const MIN_FRAME_LEN: usize = 1;
/// Largest frame the link carries (jumbo).
pub const MAX_FRAME_LEN: usize = 9216;
/// Slot sizes are powers of two in this range.
pub const MIN_SLOT_SIZE: u32 = 64;
/// See [`MIN_SLOT_SIZE`].
pub const MAX_SLOT_SIZE: u32 = 32768;
/// Slot counts are powers of two in this range.
pub const MIN_SLOT_COUNT: u32 = 2;
/// See [`MIN_SLOT_COUNT`].
pub const MAX_SLOT_COUNT: u32 = 1 << 20;
/// Upper bound on one ring's data area, so geometry cannot ask for absurd
/// mappings.
pub const MAX_RING_DATA: u64 = 1 << 30;

/// Offset of the descriptor array inside a ring area.
pub const DESC_OFFSET: u64 = 4 * CACHE_LINE as u64;

/// Set in a frame's first descriptor when the frame is larger than one slot
/// and continues into the following slots.
pub const SLOT_FLAG_MORE: u16 = 1 << 0;
/// All flag bits this version defines; any other bit set is corruption.
pub const SLOT_FLAGS_KNOWN: u16 = SLOT_FLAG_MORE;

/// One 64-byte line holding one index, so producer and consumer never
/// write the same line.
#[repr(C, align(64))]
pub struct IndexLine {
    /// The free-running index.
    pub index: AtomicU64,
    _pad: [u8; CACHE_LINE - 8],
}

/// Control block of one ring.
#[repr(C, align(64))]
pub struct RingControl {
    /// Written only by the producer: the index one past its last published
    /// slot, a hint (see the module documentation's orderings).
    pub head: IndexLine,
    /// Written only by the consumer: the index of the next slot to release.
    pub tail: IndexLine,
    /// Written only by the consumer: whether it is attached and wants to be
    /// woken for frames ([`WaitLine`]); `ack` says the consumer checks the
    /// producer's wait line after every release.
    pub consumer_wait: WaitLine,
    /// Written only by the producer: whether it wants to be woken for free
    /// space; `ack` says the producer checks the consumer's wait line after
    /// every publish.
    pub producer_wait: WaitLine,
}

/// Set in [`WaitLine::state`] while the line's owner is attached to the
/// ring (a consumer: frames sent now will be read).
pub const WAIT_PRESENT: u64 = 1 << 63;
/// Set in [`WaitLine::state`] once the line's owner may sleep until the
/// other side signals the ring's doorbell; it stays set for the rest of the
/// owner's attachment.
pub const WAIT_ARMED: u64 = 1 << 62;
/// The sleep sequence in [`WaitLine::state`]: odd while the owner is about
/// to sleep or asleep, even while it runs. Each sleep takes a new odd value.
pub const WAIT_SEQ_MASK: u64 = 0xffff_ffff;

/// One side's wait state, in a line of its own that its owner writes only
/// when it attaches, arms, goes to sleep or wakes. The other side reads it
/// after each publish (or release); any value is harmless to the reader,
/// which at worst signals once for nothing or not at all (bounded by the
/// sleeper's own timeouts).
#[repr(C, align(64))]
pub struct WaitLine {
    /// [`WAIT_PRESENT`], [`WAIT_ARMED`] and the sleep sequence
    /// ([`WAIT_SEQ_MASK`]); other bits are zero and ignored.
    pub state: AtomicU64,
    /// Non-zero once the owner checks the *other* side's wait line, behind a
    /// full fence, after each of its index stores.
    pub ack: AtomicU32,
    _pad: [u8; CACHE_LINE - 12],
}

/// Bit of a descriptor word where the stamp starts.
pub const DESC_STAMP_SHIFT: u32 = 24;
/// The stamp bits of a descriptor word.
pub const DESC_STAMP_MASK: u64 = !0 << DESC_STAMP_SHIFT;
/// One lap's step of the stamp: the stamp of the next lap is the word plus
/// this (wrapping in its 40 bits).
pub const DESC_STAMP_ONE: u64 = 1 << DESC_STAMP_SHIFT;

/// A frame's metadata word, in the descriptor of its first slot: the
/// frame's length in bits 0..16, flags in bits 16..24, and the stamp of
/// the slot's lap in bits 24..64 (see the module documentation). The
/// descriptors of the frame's other slots are not used.
#[repr(transparent)]
pub struct SlotDesc(pub AtomicU64);

impl SlotDesc {
    /// Packs a length and flags into a descriptor word without a stamp
    /// (stamp bits zero; add [`SlotDesc::stamp`]).
    #[inline]
    pub const fn pack(len: u16, flags: u16) -> u64 {
        (len as u64) | (((flags & 0xff) as u64) << 16)
    }

    /// Splits a descriptor word into (length, flags), ignoring its stamp.
    #[inline]
    pub const fn unpack(word: u64) -> (u16, u16) {
        (word as u16, ((word >> 16) & 0xff) as u16)
    }

    /// The stamp bits (in place) that publish a frame whose first slot is
    /// at free-running `index` in a ring of `1 << count_shift` slots: its
    /// lap plus one, in 40 bits. 64-bit arithmetic throughout; wraps only
    /// after 2^40 laps.
    #[inline]
    pub const fn stamp(index: u64, count_shift: u32) -> u64 {
        ((index >> count_shift).wrapping_add(1)) << DESC_STAMP_SHIFT
    }
}

impl IndexLine {
    /// A line holding `index`.
    pub const fn new(index: u64) -> Self {
        Self {
            index: AtomicU64::new(index),
            _pad: [0; CACHE_LINE - 8],
        }
    }
}

impl WaitLine {
    /// A line with nothing set: absent, unarmed, awake.
    pub const fn new() -> Self {
        Self {
            state: AtomicU64::new(0),
            ack: AtomicU32::new(0),
            _pad: [0; CACHE_LINE - 12],
        }
    }
}

impl Default for WaitLine {
    fn default() -> Self {
        Self::new()
    }
}

impl RingControl {
    /// A control block with both indices at zero and nobody waiting.
    pub const fn new() -> Self {
        Self {
            head: IndexLine::new(0),
            tail: IndexLine::new(0),
            consumer_wait: WaitLine::new(),
            producer_wait: WaitLine::new(),
        }
    }
}

impl Default for RingControl {
    fn default() -> Self {
        Self::new()
    }
}

/// Slots a frame of `len` bytes occupies in slots of `1 << slot_shift`
/// bytes: a frame takes whole slots, one after another (a shift, not a
/// division: slot sizes are powers of two). A length within a slot of
/// `usize::MAX` wraps to a wrong count, never a panic; a reader refuses
/// such a length whatever the count.
#[inline(always)]
pub const fn slots_for(len: usize, slot_shift: u32) -> u64 {
    (len.wrapping_add((1usize << slot_shift) - 1) >> slot_shift) as u64
}

/// Bytes of one ring's descriptor array.
pub const fn desc_bytes(slot_count: u32) -> u64 {
    slot_count as u64 * 8
}

/// Offset of the slot data inside a ring area.
pub const fn data_offset(slot_count: u32) -> u64 {
    crate::align_up(DESC_OFFSET + desc_bytes(slot_count), 4096)
}

/// Bytes of one ring area (control, descriptors, data), page aligned.
pub const fn ring_area_size(slot_count: u32, slot_size: u32) -> u64 {
    crate::align_up(
        data_offset(slot_count) + slot_count as u64 * slot_size as u64,
        4096,
    )
}

// ---- compile-time layout assertions ----
const _: () = {
    use core::mem::{align_of, offset_of, size_of};
    assert!(size_of::<IndexLine>() == CACHE_LINE);
    assert!(align_of::<IndexLine>() == CACHE_LINE);
    assert!(offset_of!(IndexLine, index) == 0);
    assert!(size_of::<WaitLine>() == CACHE_LINE);
    assert!(align_of::<WaitLine>() == CACHE_LINE);
    assert!(offset_of!(WaitLine, state) == 0);
    assert!(offset_of!(WaitLine, ack) == 8);
    assert!(size_of::<RingControl>() == 4 * CACHE_LINE);
    assert!(offset_of!(RingControl, head) == 0);
    assert!(offset_of!(RingControl, tail) == CACHE_LINE);
    assert!(offset_of!(RingControl, consumer_wait) == 2 * CACHE_LINE);
    assert!(offset_of!(RingControl, producer_wait) == 3 * CACHE_LINE);
    assert!(DESC_OFFSET == 256);
    assert!(size_of::<SlotDesc>() == 8);
    assert!(align_of::<SlotDesc>() == 8);
    assert!(DESC_OFFSET % 8 == 0);
    // Length and flags fit below the stamp; the stamp has 40 bits.
    assert!(MAX_FRAME_LEN < 1 << 16);
    assert!((SLOT_FLAGS_KNOWN as u64) < 1 << 8);
    assert!(DESC_STAMP_MASK.count_ones() == 40);
    assert!(SlotDesc::stamp(0, 1) == DESC_STAMP_ONE);
    assert!(SlotDesc::stamp(u64::MAX, 1) & DESC_STAMP_MASK == SlotDesc::stamp(u64::MAX, 1));
    assert!(MIN_SLOT_SIZE as usize % CACHE_LINE == 0);
    // Default geometry: 32768 x 64 B per direction (descriptors 256 KiB +
    // 256 B of control, rounded up to 260 KiB).
    assert!(data_offset(32768) == 266240);
    assert!(ring_area_size(32768, 64) == 266240 + 2 * 1024 * 1024);
    // The largest ring area times the most rings stays far from overflow.
    assert!(ring_area_size(MAX_SLOT_COUNT, MAX_SLOT_SIZE) < u64::MAX / 64);
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_word_round_trips() {
        for (len, flags) in [
            (0u16, 0u16),
            (1, 0),
            (2048, SLOT_FLAG_MORE),
            (u16::MAX, 0xff),
        ] {
            let word = SlotDesc::pack(len, flags);
            assert_eq!(SlotDesc::unpack(word), (len, flags));
            assert_eq!(word & DESC_STAMP_MASK, 0);
            for index in [0u64, 5, 1 << 20, u64::MAX] {
                let stamped = word | SlotDesc::stamp(index, 10);
                assert_eq!(SlotDesc::unpack(stamped), (len, flags));
            }
        }
    }

    #[test]
    fn stamps_differ_lap_to_lap_and_from_zeroed_memory() {
        for shift in [1u32, 10, 15, 20] {
            let count = 1u64 << shift;
            for lap in [0u64, 1, 2, 1000, (1 << 40) - 2] {
                let here = SlotDesc::stamp(lap * count, shift);
                assert_eq!(here, SlotDesc::stamp(lap * count + count - 1, shift));
                assert_ne!(here, SlotDesc::stamp((lap + 1) * count, shift));
                assert_eq!(
                    here.wrapping_add(DESC_STAMP_ONE),
                    SlotDesc::stamp((lap + 1) * count, shift)
                );
                assert_ne!(here, 0, "zeroed memory is never ready");
            }
        }
    }

    #[test]
    fn slot_data_follows_the_descriptors_page_aligned() {
        for count in [2u32, 8, 1024, 4096, 32768, MAX_SLOT_COUNT] {
            assert_eq!(data_offset(count) % 4096, 0);
            assert!(data_offset(count) >= DESC_OFFSET + desc_bytes(count));
        }
    }
}
