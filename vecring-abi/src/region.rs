//! The shared region: one memfd per link generation, created by the
//! master, holding a header and the rings of `queue_count` queue pairs.
//!
//! **Do not change this layout** without bumping
//! [`VERSION_MAJOR`](crate::VERSION_MAJOR) (or, for an addition the other
//! side never meets, [`VERSION_MINOR`](crate::VERSION_MINOR) and a feature
//! bit; the crate documentation says what each promises). Every size and
//! offset below is asserted at compile time.
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
//!  |         master -> slave     |  (a ring area: crate::ring)
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

use crate::ring::ring_area_size;

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

/// The region header. Written once by the master, validated once by the
/// slave, never read again.
#[repr(C, align(64))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionHeader {
    /// [`MAGIC`](crate::MAGIC).
    pub magic: u64,
    /// [`VERSION_MAJOR`](crate::VERSION_MAJOR) of the creator.
    pub version_major: u16,
    /// [`VERSION_MINOR`](crate::VERSION_MINOR) of the creator.
    pub version_minor: u16,
    /// `size_of::<RegionHeader>()`, so a reader can tell a grown header.
    pub header_size: u32,
    /// Feature bits in use on this region, within
    /// [`FEATURES_KNOWN`](crate::FEATURES_KNOWN).
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

/// Offset of ring `ring` inside the region.
pub const fn ring_offset(ring: usize, slot_count: u32, slot_size: u32) -> u64 {
    HEADER_AREA + ring as u64 * ring_area_size(slot_count, slot_size)
}

/// Smallest region that holds the header and the rings of `queues` queue
/// pairs. For a valid geometry no `u16` count overflows: a ring area is
/// then at most [`MAX_RING_DATA`](crate::ring::MAX_RING_DATA) plus its
/// descriptors and control.
pub const fn min_region_size(slot_count: u32, slot_size: u32, queues: u16) -> u64 {
    HEADER_AREA + ring_count(queues) as u64 * ring_area_size(slot_count, slot_size)
}

// ---- compile-time layout assertions ----
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
    assert!(HEADER_AREA % 4096 == 0);
    // Default geometry, 32768 x 64 B per ring: ring 1 follows ring 0's
    // 260 KiB of control and descriptors and 2 MiB of data.
    assert!(ring_offset(1, 32768, 64) == 4096 + 266240 + 2 * 1024 * 1024);
    // One queue pair: 4,730,880 B; sixteen: 32 rings, 75,632,640 B.
    assert!(min_region_size(32768, 64, 1) == 4_730_880);
    assert!(min_region_size(32768, 64, MAX_QUEUES) == 4096 + 32 * 2_363_392);
    assert!(RING_MASTER_TO_SLAVE == 0 && RING_SLAVE_TO_MASTER == 1);
    assert!(ring_index(MAX_QUEUES - 1, Dir::SlaveToMaster) == ring_count(MAX_QUEUES) as usize - 1);
};

#[cfg(test)]
mod tests {
    use super::*;

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
        }
    }

    #[test]
    fn ring_indices_pair_each_queue() {
        let mut seen = [false; ring_count(MAX_QUEUES) as usize];
        for queue in 0..MAX_QUEUES {
            let m2s = ring_index(queue, Dir::MasterToSlave);
            let s2m = ring_index(queue, Dir::SlaveToMaster);
            assert_eq!(m2s ^ 1, s2m);
            assert_eq!(m2s / 2, queue as usize);
            for r in [m2s, s2m] {
                assert!(!seen[r], "ring {r} taken twice");
                seen[r] = true;
            }
        }
        assert!(seen.iter().all(|&s| s), "every ring belongs to a queue");
    }

    #[test]
    fn region_sizes_for_queue_counts() {
        // Default geometry: one pair, then two ring areas more per queue.
        assert_eq!(min_region_size(32768, 64, 1), 4_730_880);
        assert_eq!(min_region_size(32768, 64, 4), 4096 + 8 * 2_363_392);
        assert_eq!(min_region_size(32768, 64, 16), 75_632_640);
    }
}
