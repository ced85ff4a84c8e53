//! Writing descriptors: the producer's plan of a frame length
//! ([`LenPlan`], and [`Shape::plan`]), how far behind its lap a stamp is
//! written ([`Lag`]), and the Release stores that publish frames
//! ([`put_desc`], [`put_descs`]).

use super::descriptor::Shape;
use super::error::PushError;
use crate::abi::{SlotDesc, SLOT_FLAG_MORE};
use crate::sync::Ordering;

/// A valid frame length with its slot count, descriptor word and stride
/// (bytes its slots span): the producer's twin of
/// [`SeenDesc`](super::descriptor::SeenDesc).
#[derive(Clone, Copy)]
pub(super) struct LenPlan {
    pub(super) len: usize,
    pub(super) slots: u64,
    /// Length and flags; the stamp bits are those of the lap the plan is
    /// used in, or zero (see [`Shape::plan`]).
    pub(super) word: u64,
    pub(super) stride: usize,
}

impl LenPlan {
    /// Plans no length: its `slots` fits no room, and length 0 is never
    /// valid.
    pub(super) const NONE: LenPlan = LenPlan {
        len: 0,
        slots: u64::MAX,
        word: 0,
        stride: 0,
    };
}

impl Shape {
    /// The plan of a frame of `len` bytes, its word without a stamp; for
    /// an invalid length, one whose `slots` fits no room. Cold: a stream
    /// of one size needs it once.
    #[cold]
    #[inline]
    pub(super) fn plan(&self, len: usize) -> LenPlan {
        if len.wrapping_sub(1) >= self.max_frame {
            return LenPlan {
                len,
                ..LenPlan::NONE
            };
        }
        let slots = self.slots_for(len);
        LenPlan {
            len,
            slots,
            word: SlotDesc::pack(len as u16, self.flags_for(len)),
            stride: (slots as usize) << self.slot_shift,
        }
    }

    /// Stores the descriptor of a frame of `len` bytes in `desc` with the
    /// stamp bits `stamp`.
    #[inline(always)]
    pub(super) fn store_desc(&self, desc: &SlotDesc, len: usize, stamp: u64) {
        put_desc(
            desc,
            SlotDesc::pack(len as u16, self.flags_for(len)) | stamp,
        );
    }

    /// Writes the descriptor of a frame of `len` (valid) bytes starting at
    /// free-running `index`, with its lap's stamp less `lag` (see
    /// [`Lag`]).
    #[inline(always)]
    pub(super) fn write_desc(&self, index: u64, len: usize, lag: Lag) {
        self.store_desc(self.desc(index), len, self.stamp(index).wrapping_sub(lag.0));
    }

    /// Why a frame of `len` bytes can never be sent, if it cannot.
    #[cold]
    pub(super) fn bad_length(&self, len: usize) -> Option<PushError> {
        let max = self.max_frame;
        if len == 0 {
            Some(PushError::Empty)
        } else if len > max {
            Some(PushError::TooLarge { len, max })
        } else {
            None
        }
    }

    /// The head-descriptor flags of a frame of `len` bytes.
    #[inline]
    pub(super) fn flags_for(&self, len: usize) -> u16 {
        if len > self.slot_size {
            SLOT_FLAG_MORE
        } else {
            0
        }
    }
}

/// How far behind its lap a descriptor's stamp is written: [`Lag::NONE`]
/// publishes the frame at once, [`Lag::PENDING`] (the lap before's stamp)
/// leaves it unpublished until [`WriteChunk::commit`] adds one lap.
///
/// [`WriteChunk::commit`]: super::WriteChunk::commit
#[derive(Clone, Copy)]
pub(super) struct Lag(pub(super) u64);

impl Lag {
    pub(super) const NONE: Lag = Lag(0);
    pub(super) const PENDING: Lag = Lag(crate::abi::DESC_STAMP_ONE);
}

/// Stores `word` in `desc`: with its lap's stamp, this publishes the frame.
#[inline(always)]
pub(super) fn put_desc(desc: &SlotDesc, word: u64) {
    // Release: pairs with the consumer's Acquire load of this descriptor
    // (`Consumer::recv`, `Shape::scan`, `Shape::copy_like_seen`,
    // `ReadChunk::start_run`), or its Relaxed load followed by an Acquire
    // fence (`Shape::copy_groups`, `Shape::count_like`'s callers): the
    // frame's bytes, written
    // before, are visible to a consumer that sees the stamp.
    desc.0.store(word, Ordering::Release);
}

/// [`put_desc`] for `count` frames whose first descriptors lie `step`
/// entries apart from `descs`, the last first: a consumer that waits on
/// the first (at its read position) finds the others published when it
/// sees it, and reads no line the stores are still landing on.
///
/// # Safety
/// The `count` descriptors are within the descriptor array.
#[inline(always)]
pub(super) unsafe fn put_descs(descs: *const SlotDesc, count: usize, step: usize, word: u64) {
    // Four stores a step of the loop.
    let mut j = count;
    while j >= 4 {
        for i in (j - 4..j).rev() {
            // SAFETY: `i < count`: one of the caller's descriptors.
            put_desc(unsafe { &*descs.add(i * step) }, word);
        }
        j -= 4;
    }
    while j > 0 {
        j -= 1;
        // SAFETY: `j < count`: one of the caller's descriptors.
        put_desc(unsafe { &*descs.add(j * step) }, word);
    }
}
