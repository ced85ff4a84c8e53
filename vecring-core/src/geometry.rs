//! Ring geometry: how many slots, how large, and the largest frame; and
//! how many queue pairs of such rings a region may hold.

use crate::abi;

// The limits a geometry is checked against: slot counts and slot sizes
// are powers of two in these ranges. They are the ABI's
// (`vecring_abi::ring`), named here for this crate's users.

/// Smallest slot count; slot counts are powers of two up to
/// [`MAX_SLOT_COUNT`].
pub const MIN_SLOT_COUNT: u32 = abi::MIN_SLOT_COUNT;
/// Largest slot count.
pub const MAX_SLOT_COUNT: u32 = abi::MAX_SLOT_COUNT;
/// Smallest slot size in bytes; slot sizes are powers of two up to
/// [`MAX_SLOT_SIZE`].
pub const MIN_SLOT_SIZE: u32 = abi::MIN_SLOT_SIZE;
/// Largest slot size in bytes.
pub const MAX_SLOT_SIZE: u32 = abi::MAX_SLOT_SIZE;

/// The shape of both rings of a link.
///
/// Slot count and slot size are powers of two; a frame larger than one slot
/// spans consecutive slots, so any slot size carries frames up to
/// [`max_frame_len`](Geometry::max_frame_len).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Geometry {
    slot_count: u32,
    slot_size: u32,
    max_frame_len: u32,
}

/// Why a geometry was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GeometryError {
    /// The slot count is not a power of two in range.
    #[error("slot count {0} is not a power of two between {min} and {max}", min = abi::MIN_SLOT_COUNT, max = abi::MAX_SLOT_COUNT)]
    SlotCount(u64),
    /// The slot size is not a power of two in range.
    #[error("slot size {0} is not a power of two between {min} and {max} bytes", min = abi::MIN_SLOT_SIZE, max = abi::MAX_SLOT_SIZE)]
    SlotSize(u64),
    /// The maximum frame length is out of range.
    #[error("maximum frame length {0} is not between {min} and {max} bytes", min = abi::MIN_FRAME_LEN, max = abi::MAX_FRAME_LEN)]
    MaxFrameLen(u64),
    /// The ring cannot hold even two maximum-size frames, or is too large.
    #[error("{slot_count} slots of {slot_size} bytes cannot carry frames of {max_frame_len} bytes (need at least two per ring, at most 1 GiB per ring)")]
    Capacity {
        /// Slots per ring.
        slot_count: u32,
        /// Bytes per slot.
        slot_size: u32,
        /// Largest frame.
        max_frame_len: u32,
    },
    /// The queue count is out of range.
    #[error("queue count {0} is not between 1 and {max}", max = abi::MAX_QUEUES)]
    Queues(u64),
    /// The rings of all queues together make a region larger than a slave
    /// accepts.
    #[error("{queues} queue pairs of {slot_count} slots of {slot_size} bytes need a region of {size} bytes, more than the {max} bytes a slave accepts; use fewer queues or smaller rings", max = abi::MAX_REGION_SIZE)]
    RegionTooLarge {
        /// Slots per ring.
        slot_count: u32,
        /// Bytes per slot.
        slot_size: u32,
        /// Queue pairs asked for.
        queues: u16,
        /// Bytes the region would need.
        size: u64,
    },
}

/// Checks a queue count: `1..=`[`MAX_QUEUES`](crate::MAX_QUEUES). The one place that
/// knows the range (the builder, the header checks and the driver's
/// devargs ask here).
///
/// # Errors
/// [`GeometryError::Queues`] with the value.
pub fn check_queues(queues: u64) -> Result<u16, GeometryError> {
    match u16::try_from(queues) {
        Ok(q) if (1..=abi::MAX_QUEUES).contains(&q) => Ok(q),
        _ => Err(GeometryError::Queues(queues)),
    }
}

impl Geometry {
    /// Default: 32768 slots of 64 bytes (one 2 MiB hugepage of data per
    /// direction), jumbo frames up to 9216 bytes. One-line slots pack
    /// frames back to back: a 64-byte frame is one data line, the next
    /// frame the next line, as in a ring of fixed 64-byte elements, while a
    /// 1514-byte frame takes 24 consecutive slots and still one descriptor
    /// (`docs/benchmarks/design-notes.md`, "Ring layout", compares it with
    /// other geometries).
    pub const DEFAULT: Geometry = Geometry {
        slot_count: 32768,
        slot_size: 64,
        max_frame_len: abi::MAX_FRAME_LEN as u32,
    };

    /// A geometry of `slot_count` slots of `slot_size` bytes carrying frames
    /// up to 9216 bytes.
    ///
    /// # Errors
    /// [`GeometryError`] names the value out of range.
    pub fn new(slot_count: u32, slot_size: u32) -> Result<Self, GeometryError> {
        Self::with_max_frame_len(slot_count, slot_size, abi::MAX_FRAME_LEN as u32)
    }

    /// Like [`new`](Self::new) with a smaller largest frame.
    ///
    /// # Errors
    /// [`GeometryError`] names the value out of range.
    pub fn with_max_frame_len(
        slot_count: u32,
        slot_size: u32,
        max_frame_len: u32,
    ) -> Result<Self, GeometryError> {
        if !slot_count.is_power_of_two()
            || !(abi::MIN_SLOT_COUNT..=abi::MAX_SLOT_COUNT).contains(&slot_count)
        {
            return Err(GeometryError::SlotCount(slot_count.into()));
        }
        if !slot_size.is_power_of_two()
            || !(abi::MIN_SLOT_SIZE..=abi::MAX_SLOT_SIZE).contains(&slot_size)
        {
            return Err(GeometryError::SlotSize(slot_size.into()));
        }
        if !(abi::MIN_FRAME_LEN as u32..=abi::MAX_FRAME_LEN as u32).contains(&max_frame_len) {
            return Err(GeometryError::MaxFrameLen(max_frame_len.into()));
        }
        let geometry = Geometry {
            slot_count,
            slot_size,
            max_frame_len,
        };
        if slot_count < 2 * geometry.max_slots_per_frame()
            || u64::from(slot_count) * u64::from(slot_size) > abi::MAX_RING_DATA
        {
            return Err(GeometryError::Capacity {
                slot_count,
                slot_size,
                max_frame_len,
            });
        }
        Ok(geometry)
    }

    /// Slots per ring.
    pub const fn slot_count(&self) -> u32 {
        self.slot_count
    }

    /// Bytes per slot.
    pub const fn slot_size(&self) -> u32 {
        self.slot_size
    }

    /// Largest frame the link carries.
    pub const fn max_frame_len(&self) -> u32 {
        self.max_frame_len
    }

    /// Slots a frame of `len` bytes occupies: the one place that sizes a
    /// frame in slots (the ring, the driver's reservations and the
    /// handshake's checks all ask here). A shift, not a division: slot
    /// sizes are powers of two.
    #[inline]
    pub const fn slots_for(&self, len: usize) -> u32 {
        slots_for_shift(len, self.slot_size.trailing_zeros()) as u32
    }

    /// The slot a free-running ring index falls on (indices grow without
    /// bound; the slot count is a power of two).
    #[inline]
    pub const fn slot_of(&self, index: u64) -> usize {
        (index & (self.slot_count as u64 - 1)) as usize
    }

    /// Slots the largest frame occupies.
    pub const fn max_slots_per_frame(&self) -> u32 {
        self.slots_for(self.max_frame_len as usize)
    }

    /// Bytes of a region holding the rings of `queues` queue pairs (before
    /// page rounding).
    pub const fn min_region_size(&self, queues: u16) -> u64 {
        abi::min_region_size(self.slot_count, self.slot_size, queues)
    }

    /// Checks that `queues` queue pairs of this geometry fit a region a
    /// slave accepts ([`MAX_REGION_SIZE`](crate::MAX_REGION_SIZE)); returns the bytes they need
    /// (before page rounding, which stays within the cap: it is a multiple
    /// of every page size).
    ///
    /// # Errors
    /// [`GeometryError::Queues`] for a count out of range,
    /// [`GeometryError::RegionTooLarge`] naming the geometry and the count.
    pub fn region_size_for(&self, queues: u16) -> Result<u64, GeometryError> {
        let queues = check_queues(queues.into())?;
        let size = self.min_region_size(queues);
        if size > abi::MAX_REGION_SIZE {
            return Err(GeometryError::RegionTooLarge {
                slot_count: self.slot_count,
                slot_size: self.slot_size,
                queues,
                size,
            });
        }
        Ok(size)
    }
}

impl Default for Geometry {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Slots a frame of `len` bytes occupies in slots of `1 << slot_shift`
/// bytes: the ABI's formula (`vecring_abi::ring::slots_for`), behind
/// [`Geometry::slots_for`]; the ring's hot paths call it there, keeping
/// the shift rather than a [`Geometry`].
#[inline(always)]
pub const fn slots_for_shift(len: usize, slot_shift: u32) -> u64 {
    vecring_abi::ring::slots_for(len, slot_shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid() {
        let g = Geometry::default();
        assert_eq!(Geometry::new(g.slot_count(), g.slot_size()), Ok(g));
        assert_eq!(g.max_slots_per_frame(), 144);
    }

    #[test]
    fn rejects_out_of_range_values() {
        assert_eq!(
            Geometry::new(1000, 2048),
            Err(GeometryError::SlotCount(1000))
        );
        assert_eq!(Geometry::new(0, 2048), Err(GeometryError::SlotCount(0)));
        assert_eq!(Geometry::new(1024, 100), Err(GeometryError::SlotSize(100)));
        assert_eq!(Geometry::new(1024, 32), Err(GeometryError::SlotSize(32)));
        assert_eq!(
            Geometry::new(1024, 65536),
            Err(GeometryError::SlotSize(65536))
        );
        assert!(matches!(
            Geometry::new(4, 64),
            Err(GeometryError::Capacity { .. })
        ));
        assert_eq!(
            Geometry::with_max_frame_len(1024, 2048, 0),
            Err(GeometryError::MaxFrameLen(0))
        );
        assert_eq!(
            Geometry::with_max_frame_len(1024, 2048, 9217),
            Err(GeometryError::MaxFrameLen(9217))
        );
    }

    #[test]
    fn queue_counts_and_region_cap() {
        assert_eq!(check_queues(0), Err(GeometryError::Queues(0)));
        assert_eq!(check_queues(17), Err(GeometryError::Queues(17)));
        assert_eq!(check_queues(1 << 16), Err(GeometryError::Queues(1 << 16)));
        assert_eq!(check_queues(1), Ok(1));
        assert_eq!(check_queues(16), Ok(16));
        let g = Geometry::DEFAULT;
        assert_eq!(g.region_size_for(16), Ok(75_632_640));
        assert_eq!(g.region_size_for(0), Err(GeometryError::Queues(0)));
        // 1 GiB of data per ring: one pair fits 4 GiB, two do not.
        let big = Geometry::new(1 << 20, 1024).unwrap();
        assert!(big.region_size_for(1).is_ok());
        let err = big.region_size_for(2).unwrap_err();
        assert!(matches!(
            err,
            GeometryError::RegionTooLarge {
                slot_count: 1048576,
                slot_size: 1024,
                queues: 2,
                ..
            }
        ));
        let text = err.to_string();
        assert!(
            text.contains("2 queue pairs of 1048576 slots of 1024 bytes"),
            "{text}"
        );
    }

    #[test]
    fn slot_arithmetic() {
        let g = Geometry::new(1024, 2048).unwrap();
        assert_eq!(g.slots_for(1), 1);
        assert_eq!(g.slots_for(2048), 1);
        assert_eq!(g.slots_for(2049), 2);
        assert_eq!(g.slots_for(9216), 5);
        assert_eq!(g.slots_for(0), 0);
        assert_eq!(g.slot_of(0), 0);
        assert_eq!(g.slot_of(1023), 1023);
        assert_eq!(g.slot_of(1024), 0);
        assert_eq!(g.slot_of(u64::MAX), 1023);
        for shift in 6..=15 {
            for len in [0, 1, 63, 64, 65, 1514, 9216, 1 << 40] {
                assert_eq!(
                    slots_for_shift(len, shift),
                    len.div_ceil(1 << shift) as u64,
                    "{len} in slots of 2^{shift}"
                );
            }
        }
    }
}
