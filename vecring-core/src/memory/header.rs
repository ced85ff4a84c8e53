//! What a slave checks in a received region's header before it trusts
//! the layout: every field against the ABI, the fd's real size and what
//! the slave was configured with or told in the handshake.

use super::AttachError;
use crate::abi::{self, RegionHeader, MAX_REGION_SIZE};
use crate::geometry::Geometry;

/// What a slave requires of a received region.
#[derive(Debug, Clone, Copy, Default)]
pub struct Expectation {
    /// The geometry the slave was configured with, if any; otherwise the
    /// master's is accepted.
    pub geometry: Option<Geometry>,
    /// The queue count the slave was configured with, if any; otherwise
    /// the master's is accepted.
    pub queues: Option<u16>,
    /// The generation announced in the handshake.
    pub generation: Option<u64>,
    /// The queue count announced in the handshake, which the header must
    /// repeat.
    pub announced_queues: Option<u16>,
}

fn mismatch(field: &'static str, ours: u64, theirs: u64) -> Result<(), AttachError> {
    if ours == theirs {
        Ok(())
    } else {
        Err(AttachError::Mismatch {
            field,
            ours,
            theirs,
        })
    }
}

/// Checks a header copy against the fd's real size and our expectations;
/// returns its geometry and queue count.
pub(crate) fn validate_header(
    h: &RegionHeader,
    fd_size: u64,
    expect: &Expectation,
) -> Result<(Geometry, u16), AttachError> {
    mismatch("magic", abi::MAGIC, h.magic)?;
    mismatch(
        "major version",
        abi::VERSION_MAJOR.into(),
        h.version_major.into(),
    )?;
    mismatch(
        "header size",
        size_of::<RegionHeader>() as u64,
        h.header_size.into(),
    )?;
    if h.features & !abi::FEATURES_KNOWN != 0 {
        mismatch("features", abi::FEATURES_KNOWN, h.features)?;
    }
    let queues = crate::geometry::check_queues(h.queue_count.into())?;
    mismatch(
        "ring count (2 per queue)",
        abi::ring_count(queues).into(),
        h.ring_count.into(),
    )?;
    if let Some(ours) = expect.queues {
        mismatch("queue count", ours.into(), queues.into())?;
    }
    if let Some(announced) = expect.announced_queues {
        mismatch(
            "queue count (handshake vs header)",
            announced.into(),
            queues.into(),
        )?;
    }
    let geometry = Geometry::with_max_frame_len(h.slot_count, h.slot_size, h.max_frame_len)?;
    if let Some(ours) = expect.geometry {
        mismatch("slot count", ours.slot_count().into(), h.slot_count.into())?;
        mismatch("slot size", ours.slot_size().into(), h.slot_size.into())?;
        mismatch(
            "max frame length",
            ours.max_frame_len().into(),
            h.max_frame_len.into(),
        )?;
    }
    if let Some(generation) = expect.generation {
        mismatch("generation", generation, h.generation)?;
    }
    mismatch("region size (fd size vs header)", fd_size, h.region_size)?;
    let min = geometry.min_region_size(queues);
    if fd_size < min {
        return Err(AttachError::Size {
            size: fd_size,
            min,
            max: MAX_REGION_SIZE,
        });
    }
    Ok((geometry, queues))
}
