//! The shared-memory ABI: the bytes both processes see. Nothing else lives
//! here.
//!
//! **Do not change this layout** without bumping [`VERSION_MAJOR`] (or, for
//! an addition the other side may ignore, [`VERSION_MINOR`] and a feature
//! bit). Every size and offset below is asserted at compile time.
//!
//! ```text
//!  offset 0                        region (one memfd per link generation)
//!  +-----------------------------+
//!  | RegionHeader        256 B   |  written by the master before the fd is
//!  |   magic, version, features, |  handed out; never re-read by the master
//!  |   geometry, region size,    |
//!  |   generation, queue count,  |
//!  |   reserved                  |
//!  +-----------------------------+  HEADER_AREA = 4096
//!  | ring 0: queue 0,            |  ring_offset(ring_index(0, MasterToSlave))
//!  |         master -> slave     |
//!  |  +-----------------------+  |
//!  |  | RingControl   256 B   |  |  +0    producer line: head (64 B line)
//!  |  |                       |  |  +64   consumer line: tail (64 B line)
//!  |  |                       |  |  +128  consumer's wait line
//!  |  |                       |  |  +192  producer's wait line
//!  |  +-----------------------+  |
//!  |  | SlotDesc[slot_count]  |  |  +256  8 B each (see below): len,
//!  |  |                       |  |        flags and the lap stamp of a
//!  |  |                       |  |        frame's first slot; the other
//!  |  |                       |  |        slots' are not used
//!  |  +-----------------------+  |  rounded up to 4096
//!  |  | slot data             |  |  slot_count * slot_size bytes,
//!  |  | [slot_count][slot_sz] |  |  each slot 64-byte aligned
//!  |  +-----------------------+  |
//!  +-----------------------------+  HEADER_AREA + ring_area_size
//!  | ring 1: queue 0,            |  same layout
//!  |         slave -> master     |
//!  +-----------------------------+
//!  | ring 2: queue 1, m -> s     |  ring r = 2 * queue + direction,
//!  | ...                         |  queue_count pairs in all (1..=16)
//!  | ring 2N-1: queue N-1, s -> m|
//!  +-----------------------------+  min_region_size, rounded up to the
//!                                   page size
//! ```
//!
//! A link carries `queue_count` independent queue pairs, each an SPSC ring
//! per direction. Ring offsets are computed from the geometry and the ring
//! index ([`ring_offset`]), never stored in shared memory, so a peer has no
//! offset to lie about; the header states only the counts, which the slave
//! checks against each other and against the fd's size.
//!
//! Indices are free-running `u64`s; a slot is `index & (slot_count - 1)`.
//! The producer owns `head`, the consumer owns `tail`; each keeps a private
//! copy of its own index and never trusts the shared one after start-up.
//!
//! **Readiness is in the descriptor** (since ABI 5). A descriptor is one
//! little-endian `u64`:
//!
//! ```text
//!  63                                  24 23      16 15             0
//! +--------------------------------------+----------+----------------+
//! | stamp: (lap + 1) mod 2^40            | flags    | len            |
//! +--------------------------------------+----------+----------------+
//!  lap = index / slot_count of the frame's first slot (free-running)
//! ```
//!
//! The producer writes a frame's bytes, then its first descriptor with the
//! stamp of that slot's lap (a Release store): that store publishes the
//! frame. The consumer learns that the frame at its read position is ready
//! from that descriptor alone, by finding the stamp its own index expects
//! (an Acquire load); it never loads `head` on its data path. A descriptor
//! from an earlier lap holds an earlier stamp, and zeroed memory holds
//! stamp 0, which lap 0 does not expect. `head` is still stored by the
//! producer after each batch, for the wakeup protocol's hints and for a
//! producer that attaches again; the consumer reads it for nothing else.
//! A producer that publishes several frames at once stores the first
//! frame's descriptor last, so that a consumer waiting on it finds them
//! all when it sees it (the format allows any order: the consumer reads in
//! order and stops at the first descriptor without its stamp).
//!
//! The consumer gives slots back through `tail`, a line only it writes and
//! the producer reads only when its cached view of free slots runs out, so
//! that the two sides never write the same line on the data path.
//!
//! Only a frame's first descriptor is written, so a slot inside a long
//! frame keeps the stamp of the last frame that started there. With 40
//! bits of stamp, such a descriptor can hold the stamp its slot expects
//! again only after 2^40 laps without a frame starting there (at least
//! 2^41 slots of traffic in the smallest ring, 2^55 in the default one);
//! even then it is checked as any other peer value.
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

use crate::sync::{AtomicU32, AtomicU64};

/// `b"VECRING\0"` read as a little-endian `u64`.
pub const MAGIC: u64 = u64::from_le_bytes(*b"VECRING\0");
/// Incompatible changes of the region layout or of the handshake bump
/// this; peers with different majors refuse each other with a message
/// naming both. 3: the slave asks first (`Request`) and the link is up only
/// once the master has sealed the region against new writable mappings
/// (`Ready`). 4: a region holds `queue_count` queue pairs (the header's
/// `queue_count`, the Hello's queue count). 5: a descriptor is 8 bytes and
/// carries its lap's stamp, which alone publishes the frame (see the module
/// documentation).
pub const VERSION_MAJOR: u16 = 5;

/// Bytes in every handshake message (the layout: `handshake::wire`).
pub const HANDSHAKE_MSG_LEN: usize = 256;
/// A handshake message's first four bytes, `b"VRHS"`, read as a
/// little-endian `u32`.
pub const HANDSHAKE_MAGIC: u32 = u32::from_le_bytes(*b"VRHS");
/// Compatible additions bump this; informational.
pub const VERSION_MINOR: u16 = 0;
/// Feature bits this build understands. None are defined yet.
pub const FEATURES_KNOWN: u64 = 0;

/// Bytes reserved at the start of the region for [`RegionHeader`].
pub const HEADER_AREA: u64 = 4096;
/// Most queue pairs a link carries. Equals DPDK's
/// `RTE_ETHDEV_QUEUE_STAT_CNTRS`, so that a driver's per-queue statistics
/// cover every queue.
pub const MAX_QUEUES: u16 = 16;
/// Largest region a slave accepts, and so the most a master may ask for:
/// geometry and queue count together must fit.
pub const MAX_REGION_SIZE: u64 = 4 << 30;
/// Index of queue 0's master→slave ring.
pub const RING_MASTER_TO_SLAVE: usize = ring_index(0, Dir::MasterToSlave);
/// Index of queue 0's slave→master ring.
pub const RING_SLAVE_TO_MASTER: usize = ring_index(0, Dir::SlaveToMaster);

/// The direction of a ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Dir {
    /// The master produces, the slave consumes.
    MasterToSlave = 0,
    /// The slave produces, the master consumes.
    SlaveToMaster = 1,
}

/// Rings in a region of `queues` queue pairs: one per queue and direction.
pub const fn ring_count(queues: u16) -> u32 {
    2 * queues as u32
}

/// Index of the ring of queue `queue` in direction `dir`: `2 * queue + dir`,
/// so the two rings of a queue are neighbours and queue 0 keeps rings 0
/// and 1.
pub const fn ring_index(queue: u16, dir: Dir) -> usize {
    2 * queue as usize + dir as usize
}

/// Alignment of every ABI structure and of each slot.
pub const CACHE_LINE: usize = 64;
/// Offset of the descriptor array inside a ring area.
pub const DESC_OFFSET: u64 = 4 * CACHE_LINE as u64;

/// Set in a frame's first descriptor when the frame is larger than one slot
/// and continues into the following slots.
pub const SLOT_FLAG_MORE: u16 = 1 << 0;
/// All flag bits this version defines; any other bit set is corruption.
pub const SLOT_FLAGS_KNOWN: u16 = SLOT_FLAG_MORE;

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

/// The region header. Written once by the master, validated once by the
/// slave, never read again.
#[repr(C, align(64))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionHeader {
    /// [`MAGIC`].
    pub magic: u64,
    /// [`VERSION_MAJOR`] of the creator.
    pub version_major: u16,
    /// [`VERSION_MINOR`] of the creator.
    pub version_minor: u16,
    /// `size_of::<RegionHeader>()`, so a reader can tell a grown header.
    pub header_size: u32,
    /// Feature bits in use on this region.
    pub features: u64,
    /// Slots per ring, a power of two.
    pub slot_count: u32,
    /// Bytes per slot, a power of two.
    pub slot_size: u32,
    /// Largest frame carried on this link.
    pub max_frame_len: u32,
    /// Rings in the region: [`ring_count`]`(queue_count)`.
    pub ring_count: u32,
    /// Total bytes of the region (the memfd size).
    pub region_size: u64,
    /// Link generation this region belongs to; a new region is made for
    /// every connection.
    pub generation: u64,
    /// Queue pairs in the region, `1..=`[`MAX_QUEUES`].
    pub queue_count: u32,
    /// Zero; pads `queue_count` to 8 bytes.
    pub reserved32: u32,
    /// Zero; room to grow.
    pub reserved: [u64; 24],
}

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
    /// Written only by the producer: the index one past the last published slot.
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
    pub fn new(index: u64) -> Self {
        Self {
            index: AtomicU64::new(index),
            _pad: [0; CACHE_LINE - 8],
        }
    }
}

impl WaitLine {
    /// A line with nothing set: absent, unarmed, awake.
    pub fn new() -> Self {
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
    pub fn new() -> Self {
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

/// Rounds `value` up to a multiple of `align` (a power of two).
pub const fn align_up(value: u64, align: u64) -> u64 {
    (value + align - 1) & !(align - 1)
}

/// Bytes of one ring's descriptor array.
pub const fn desc_bytes(slot_count: u32) -> u64 {
    slot_count as u64 * 8
}

/// Offset of the slot data inside a ring area.
pub const fn data_offset(slot_count: u32) -> u64 {
    align_up(DESC_OFFSET + desc_bytes(slot_count), 4096)
}

/// Bytes of one ring area (control, descriptors, data), page aligned.
pub const fn ring_area_size(slot_count: u32, slot_size: u32) -> u64 {
    align_up(
        data_offset(slot_count) + slot_count as u64 * slot_size as u64,
        4096,
    )
}

/// Offset of ring `ring` inside the region.
pub const fn ring_offset(ring: usize, slot_count: u32, slot_size: u32) -> u64 {
    HEADER_AREA + ring as u64 * ring_area_size(slot_count, slot_size)
}

/// Smallest region that holds the header and the rings of `queues` queue
/// pairs. For a valid geometry no `u16` count overflows: a ring area is
/// then at most [`MAX_RING_DATA`] plus its descriptors and control.
pub const fn min_region_size(slot_count: u32, slot_size: u32, queues: u16) -> u64 {
    HEADER_AREA + ring_count(queues) as u64 * ring_area_size(slot_count, slot_size)
}

// ---- compile-time layout assertions (std atomics only; loom's differ) ----
#[cfg(not(loom))]
const _: () = {
    use core::mem::{align_of, offset_of, size_of};
    assert!(size_of::<RegionHeader>() == 256);
    assert!(align_of::<RegionHeader>() == 64);
    assert!(offset_of!(RegionHeader, magic) == 0);
    assert!(offset_of!(RegionHeader, version_major) == 8);
    assert!(offset_of!(RegionHeader, version_minor) == 10);
    assert!(offset_of!(RegionHeader, header_size) == 12);
    assert!(offset_of!(RegionHeader, features) == 16);
    assert!(offset_of!(RegionHeader, slot_count) == 24);
    assert!(offset_of!(RegionHeader, slot_size) == 28);
    assert!(offset_of!(RegionHeader, max_frame_len) == 32);
    assert!(offset_of!(RegionHeader, ring_count) == 36);
    assert!(offset_of!(RegionHeader, region_size) == 40);
    assert!(offset_of!(RegionHeader, generation) == 48);
    assert!(offset_of!(RegionHeader, queue_count) == 56);
    assert!(offset_of!(RegionHeader, reserved32) == 60);
    assert!(offset_of!(RegionHeader, reserved) == 64);
    assert!(size_of::<RegionHeader>() as u64 <= HEADER_AREA);

    assert!(size_of::<IndexLine>() == CACHE_LINE);
    assert!(align_of::<IndexLine>() == CACHE_LINE);
    assert!(offset_of!(IndexLine, index) == 0);
    assert!(size_of::<WaitLine>() == CACHE_LINE);
    assert!(offset_of!(WaitLine, state) == 0);
    assert!(offset_of!(WaitLine, ack) == 8);
    assert!(size_of::<RingControl>() == 4 * CACHE_LINE);
    assert!(offset_of!(RingControl, head) == 0);
    assert!(offset_of!(RingControl, tail) == CACHE_LINE);
    assert!(offset_of!(RingControl, consumer_wait) == 2 * CACHE_LINE);
    assert!(offset_of!(RingControl, producer_wait) == 3 * CACHE_LINE);
    assert!(DESC_OFFSET == 256);
    assert!(data_offset(32768) == 266240);
    assert!(size_of::<SlotDesc>() == 8);
    assert!(align_of::<SlotDesc>() == 8);
    assert!(DESC_OFFSET % 8 == 0);
    // Length and flags fit below the stamp; the stamp has 40 bits.
    assert!(MAX_FRAME_LEN < 1 << 16);
    assert!((SLOT_FLAGS_KNOWN as u64) < 1 << 8);
    assert!(DESC_STAMP_MASK.count_ones() == 40);
    assert!(SlotDesc::stamp(0, 1) == DESC_STAMP_ONE);
    assert!(SlotDesc::stamp(u64::MAX, 1) & DESC_STAMP_MASK == SlotDesc::stamp(u64::MAX, 1));

    assert!(MAX_FRAME_LEN <= u16::MAX as usize);
    assert!(MIN_SLOT_SIZE as usize % CACHE_LINE == 0);
    assert!(HEADER_AREA % 4096 == 0);
    // Default geometry: 32768 x 64 B per direction (descriptors 256 KiB +
    // 256 B of control, rounded up to 260 KiB).
    assert!(data_offset(32768) == 266240);
    assert!(ring_area_size(32768, 64) == 266240 + 2 * 1024 * 1024);
    assert!(ring_offset(1, 32768, 64) == 4096 + 266240 + 2 * 1024 * 1024);
    // One queue pair: 4,730,880 B; sixteen: 32 rings, 75,632,640 B.
    assert!(min_region_size(32768, 64, 1) == 4_730_880);
    assert!(min_region_size(32768, 64, MAX_QUEUES) == 4096 + 32 * 2_363_392);
    assert!(RING_MASTER_TO_SLAVE == 0 && RING_SLAVE_TO_MASTER == 1);
    assert!(ring_index(MAX_QUEUES - 1, Dir::SlaveToMaster) == ring_count(MAX_QUEUES) as usize - 1);
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
    fn magic_spells_vecring() {
        assert_eq!(&MAGIC.to_le_bytes(), b"VECRING\0");
    }

    #[test]
    fn rings_do_not_overlap_and_are_aligned() {
        for (count, size) in [(2u32, 64u32), (1024, 2048), (4096, 256), (8, 32768)] {
            for queues in [1, 2, 4, MAX_QUEUES] {
                let area = ring_area_size(count, size);
                let end = min_region_size(count, size, queues);
                let mut next = HEADER_AREA;
                for ring in 0..ring_count(queues) as usize {
                    let at = ring_offset(ring, count, size);
                    assert_eq!(at, next, "ring {ring} of {queues} queues");
                    assert_eq!(at % 4096, 0);
                    assert!(at + area <= end);
                    next = at + area;
                }
                assert_eq!(next, end);
            }
            assert_eq!(data_offset(count) % 4096, 0);
            assert!(data_offset(count) >= DESC_OFFSET + desc_bytes(count));
        }
    }

    #[test]
    fn ring_indices_pair_each_queue() {
        let mut seen = Vec::new();
        for queue in 0..MAX_QUEUES {
            let m2s = ring_index(queue, Dir::MasterToSlave);
            let s2m = ring_index(queue, Dir::SlaveToMaster);
            assert_eq!(m2s ^ 1, s2m);
            assert_eq!(m2s / 2, queue as usize);
            seen.extend([m2s, s2m]);
        }
        seen.sort_unstable();
        assert_eq!(
            seen,
            (0..ring_count(MAX_QUEUES) as usize).collect::<Vec<_>>()
        );
    }

    #[test]
    fn region_sizes_for_queue_counts() {
        // Default geometry: one pair, then two ring areas more per queue.
        assert_eq!(min_region_size(32768, 64, 1), 4_730_880);
        assert_eq!(min_region_size(32768, 64, 4), 4096 + 8 * 2_363_392);
        assert_eq!(min_region_size(32768, 64, 16), 75_632_640);
    }
}
