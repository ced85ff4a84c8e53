//! The ring's shape and its descriptor words: [`Shape`], the geometry in
//! the form the hot paths use (slot math, once per endpoint); reading the
//! words a peer wrote (length, flags and the lap stamp that says a frame is
//! ready), decoded and checked; and writing them, the producer's plan of a
//! frame length ([`LenPlan`]), how far behind its lap a stamp is written
//! ([`Lag`]), and the Release stores that publish frames ([`put_desc`],
//! [`put_descs`]). `Shape`'s copy loops are in [`super::copy`].

use super::bytes::{all_hold, four_hold, prefetch, DESC_GROUP, PREFETCH_SLOTS};
use super::error::{Corruption, PushError};
use super::storage::RingStorage;
use crate::abi::{SlotDesc, DESC_STAMP_MASK, SLOT_FLAGS_KNOWN, SLOT_FLAG_MORE};
use crate::sync::{fence, Ordering};
use vecring_abi::ring::slots_for as slots_for_shift;

/// The last descriptor word the consumer validated, decoded: a stream of
/// one frame size then costs one comparison per frame, of the word loaded
/// against `bits` with the stamp the slot's lap expects (see
/// [`Shape::frame_of`]).
#[derive(Clone, Copy)]
pub(super) struct SeenDesc {
    /// Its length and flags, without the stamp.
    pub(super) bits: u64,
    pub(super) len: usize,
    pub(super) slots: u64,
}

impl SeenDesc {
    /// Matches no valid frame: length 0 is never valid, and `slots` fails
    /// every published-slots check, so a descriptor of length 0 and
    /// flags 0 still goes to [`Shape::diagnose`].
    pub(super) const NONE: SeenDesc = SeenDesc {
        bits: 0,
        len: 0,
        slots: u64::MAX,
    };
}

/// The slots from free-running `start` to the end of the data area: a
/// frame that lies within them is at `base` plus its offset, with no wrap
/// to handle (all frames of a batch but at most one per lap).
#[derive(Clone, Copy)]
pub(super) struct Run {
    pub(super) start: u64,
    /// The first byte of slot `start`.
    pub(super) base: *mut u8,
    /// The descriptor of slot `start`.
    pub(super) descs: *const SlotDesc,
    /// Slots from `start` to the end of the data area.
    pub(super) to_end: u64,
    /// The stamp of the lap of `start`, which every slot of the run shares.
    pub(super) stamp: u64,
}

impl Run {
    /// Slots from descriptor `from` to descriptor `to` (`to` may lie past
    /// the end of the array, as a wrapping cursor does).
    #[inline(always)]
    pub(super) fn slots_between(from: *const SlotDesc, to: *const SlotDesc) -> u64 {
        ((to as usize).wrapping_sub(from as usize) / size_of::<SlotDesc>()) as u64
    }
}

/// Geometry in the form the hot path wants, copied out of the storage once.
#[derive(Clone, Copy)]
pub(super) struct Shape {
    pub(super) mask: u64,
    pub(super) slot_size: usize,
    pub(super) slot_shift: u32,
    pub(super) max_frame: usize,
    pub(super) slot_count: u32,
    /// `slot_count.trailing_zeros()`: a free-running index shifted right
    /// by this is its lap.
    pub(super) count_shift: u32,
    /// `storage.data()`, cached: valid while the storage lives (the
    /// `RingStorage` contract), which every holder of a `Shape` outlives.
    pub(super) data: *mut u8,
    /// `storage.descs()`, cached likewise (`slot_count` entries).
    pub(super) descs: *const SlotDesc,
}

/// The out-of-line half of [`Shape::frame_of`]: `word` decoded, if it is
/// valid, for a ring of `1 << slot_shift`-byte slots carrying
/// frames of at most `max_frame` bytes, at a slot whose lap has the stamp
/// `stamp`.
#[inline(never)]
fn decode_desc(word: u64, max_frame: usize, slot_shift: u32, stamp: u64) -> Option<SeenDesc> {
    let (len, flags) = SlotDesc::unpack(word);
    let len = len as usize;
    let more = len > 1 << slot_shift;
    let valid = word & DESC_STAMP_MASK == stamp
        && len.wrapping_sub(1) < max_frame
        && flags == if more { SLOT_FLAG_MORE } else { 0 };
    valid.then(|| SeenDesc {
        bits: word & !DESC_STAMP_MASK,
        len,
        slots: slots_for_shift(len, slot_shift),
    })
}

impl Shape {
    pub(super) fn of<S: RingStorage>(storage: &S) -> Self {
        let g = storage.geometry();
        let descs = storage.descs();
        debug_assert_eq!(descs.len(), g.slot_count() as usize);
        Shape {
            mask: u64::from(g.slot_count()) - 1,
            slot_size: g.slot_size() as usize,
            slot_shift: g.slot_size().trailing_zeros(),
            max_frame: g.max_frame_len() as usize,
            slot_count: g.slot_count(),
            count_shift: g.slot_count().trailing_zeros(),
            data: storage.data(),
            descs: descs.as_ptr(),
        }
    }

    /// The descriptor of the slot of free-running `index`.
    #[inline]
    pub(super) fn desc(&self, index: u64) -> &SlotDesc {
        // SAFETY: the masked slot is below `slot_count`, the length of the
        // descriptor array, which lives as long as the storage.
        unsafe { &*self.descs.add(self.slot(index)) }
    }

    /// The first byte of the slot of free-running `index`.
    #[inline]
    pub(super) fn slot_ptr(&self, index: u64) -> *mut u8 {
        // SAFETY: the masked slot is below `slot_count`, so the offset stays
        // inside the data area of `slot_count * slot_size` bytes.
        unsafe { self.data.add(self.slot(index) << self.slot_shift) }
    }

    #[inline]
    pub(super) fn slot(&self, index: u64) -> usize {
        (index & self.mask) as usize
    }

    /// The stamp bits that publish a frame starting at free-running
    /// `index` (see [`SlotDesc::stamp`]).
    #[inline(always)]
    pub(super) fn stamp(&self, index: u64) -> u64 {
        SlotDesc::stamp(index, self.count_shift)
    }

    #[inline]
    pub(super) fn slots_for(&self, len: usize) -> u64 {
        slots_for_shift(len, self.slot_shift)
    }

    /// Where a frame of `len` bytes starting at free-running `index` lies:
    /// its first byte and how many of its bytes come before the end of the
    /// data area. The rest, if any, continues at the start of the data area.
    #[inline]
    pub(super) fn span(&self, index: u64, len: usize) -> (*mut u8, usize) {
        let slot = self.slot(index);
        let room = (self.slot_count as usize - slot) << self.slot_shift;
        (self.slot_ptr(index), len.min(room))
    }

    /// The length and slot count of the frame whose first descriptor
    /// holds `word`, at a slot whose lap has the stamp `stamp`, if the
    /// descriptor is valid (that stamp exactly, a valid length and its
    /// flags) and the frame lies within the `ready` slots it may take from
    /// there: the hot-path check. When `word` is the descriptor validated
    /// last (`seen`) with `stamp`, the answer comes from `seen` with one
    /// comparison; otherwise `word` is decoded out of line and, if valid,
    /// becomes `seen`.
    #[inline(always)]
    pub(super) fn frame_of(
        &self,
        word: u64,
        stamp: u64,
        ready: u64,
        seen: &mut SeenDesc,
    ) -> Option<(usize, u64)> {
        if word != seen.bits | stamp {
            *seen = decode_desc(word, self.max_frame, self.slot_shift, stamp)?;
        }
        (seen.slots <= ready).then_some((seen.len, seen.slots))
    }

    /// How many of the `limit` frames of `slots` slots each, back to back
    /// from free-running `index`, have the descriptor word `word`, counted
    /// until the first that differs, and that first word, if it was
    /// reached before `limit`. The descriptors are compared a group at a
    /// time (one-slot frames) and one at a time after a group that differs
    /// (Relaxed loads: a caller that learns from the count that frames are
    /// published follows it with an Acquire fence, and one that uses the
    /// word that differed checks it in full first).
    ///
    /// # Safety
    /// The `limit * slots` slots from `index` lie before the end of the
    /// data area.
    #[inline(always)]
    pub(super) unsafe fn count_like(
        &self,
        index: u64,
        word: u64,
        slots: u64,
        limit: u64,
    ) -> (u64, Option<u64>) {
        // From the array's pointer (see `run_from`).
        // SAFETY: the masked slot is below `slot_count`.
        let descs = unsafe { self.descs.add(self.slot(index)) };
        // Frame `i`'s descriptor. Relaxed: see above; a word equal to the
        // validated one, stamp included, is that frame's.
        let word_of = |i: u64| {
            // SAFETY: called for `i < limit` only: a descriptor of the
            // caller's slots.
            unsafe { &*descs.add((i * slots) as usize) }
                .0
                .load(Ordering::Relaxed)
        };
        let mut n = 0;
        if slots == 1 {
            // One-slot frames: descriptors `n..n + DESC_GROUP` are theirs.
            // SAFETY: `n + DESC_GROUP <= limit`: the caller's descriptors.
            while n + DESC_GROUP as u64 <= limit && unsafe { all_hold(descs.add(n as usize), word) }
            {
                n += DESC_GROUP as u64;
            }
            // Then half a group.
            // SAFETY: `n + 4 <= limit`: the caller's descriptors.
            if n + 4 <= limit && unsafe { four_hold(descs.add(n as usize), word) } {
                n += 4;
            }
        }
        while n < limit {
            let other = word_of(n);
            if other != word {
                return (n, Some(other));
            }
            n += 1;
        }
        (n, None)
    }

    /// Looks for published frames from free-running `from`, at most
    /// `frames` of them, none reaching `limit` (the end of the ring's
    /// capacity from the consumer's last release): each descriptor is
    /// loaded once; one without the stamp its slot's lap expects ends the
    /// search (not published yet), and one with it is checked (length,
    /// flags, and its slots before `limit`). Returns the end of the frames
    /// found, and what is wrong with the descriptor there if it has the
    /// stamp but is corrupt. `seen` is the last descriptor validated,
    /// updated. A stamp is never checked against the peer's view of the
    /// lap, only against ours, derived from our own index: the peer cannot
    /// make us expect an earlier lap.
    pub(super) fn scan(
        &self,
        from: u64,
        limit: u64,
        frames: u64,
        seen: &mut SeenDesc,
    ) -> (u64, Option<Corruption>) {
        let mut at = from;
        let mut found = 0;
        while found < frames && at != limit {
            // Acquire: pairs with the producer's Release store of this
            // descriptor (`put_desc`, from `Producer::send`,
            // `Producer::send_batch` or `WriteChunk::commit`): the frame's
            // bytes are visible once its stamp is.
            let word = self.desc(at).0.load(Ordering::Acquire);
            let stamp = self.stamp(at);
            if word & DESC_STAMP_MASK != stamp {
                break;
            }
            let room = limit.wrapping_sub(at);
            let slots = match self.frame_of(word, stamp, room, seen) {
                Some((_, slots)) => slots,
                None => match self.diagnose(at, word, room) {
                    Ok((_, slots)) => slots,
                    Err(c) => return (at, Some(c)),
                },
            };
            // The frames after it with the same word, before the end of
            // the data area (past it the lap, and so the stamp, changes:
            // a descriptor there left from this lap must not match),
            // counted a group at a time (`count_like`).
            let before_end = u64::from(self.slot_count) - (at & self.mask);
            at = at.wrapping_add(slots);
            found += 1;
            if slots < before_end && found < frames {
                let space = (before_end - slots).min(limit.wrapping_sub(at));
                let fit = if slots == 1 { space } else { space / slots };
                let limit_frames = fit.min(frames - found);
                // SAFETY: the `limit_frames * slots` slots from `at` lie
                // before the end of the data area (`before_end`).
                let (same, _) = unsafe { self.count_like(at, word, slots, limit_frames) };
                // Acquire: the Relaxed loads of `count_like` read the
                // producer's Release stores of these descriptors
                // (`put_desc`); this fence makes the frames' bytes visible,
                // as the Acquire load above does for the first.
                fence(Ordering::Acquire);
                at = at.wrapping_add(same * slots);
                found += same;
            }
        }
        (at, None)
    }

    /// What is wrong with the frame descriptor `word` at free-running
    /// `index`, with `ready` published slots from there; `Ok` (length and
    /// slots) if nothing is.
    ///
    /// A stamp other than `index`'s lap's is [`Corruption::Truncated`]:
    /// the callers ask only about slots found published, so the frame is
    /// no longer where it was published.
    #[cold]
    pub(super) fn diagnose(
        &self,
        index: u64,
        word: u64,
        ready: u64,
    ) -> Result<(usize, u64), Corruption> {
        let slot = self.slot(index) as u32;
        let (len16, _) = SlotDesc::unpack(word);
        // All eight flag bits, so that an unknown one is reported.
        let flags = ((word >> 16) & 0xff) as u16;
        let len = len16 as usize;
        Err(if word & DESC_STAMP_MASK != self.stamp(index) {
            Corruption::Truncated { slot }
        } else if flags & !SLOT_FLAGS_KNOWN != 0 {
            Corruption::Flags { slot, flags }
        } else if len == 0 || flags != self.flags_for(len) {
            Corruption::Length {
                slot,
                len: len16,
                flags,
            }
        } else if len > self.max_frame {
            Corruption::FrameTooLong {
                slot,
                max: self.max_frame as u32,
            }
        } else if self.slots_for(len) > ready {
            Corruption::Truncated { slot }
        } else {
            return Ok((len, self.slots_for(len)));
        })
    }

    /// Prefetches the slot `PREFETCH_SLOTS` after `index` if it is one of
    /// the `published` slots from `index` (validated already): a line the
    /// producer may still be writing would be pulled away from it, and
    /// taken back by its store.
    #[inline(always)]
    pub(super) fn prefetch_ahead(&self, index: u64, published: u64) {
        if PREFETCH_SLOTS < published {
            prefetch(self.slot_ptr(index.wrapping_add(PREFETCH_SLOTS)));
        }
    }

    /// The run of slots from free-running `start` (see [`Run`]).
    #[inline(always)]
    pub(super) fn run_from(&self, start: u64) -> Run {
        Run {
            start,
            base: self.slot_ptr(start),
            // From the array's pointer, not from `desc(start)`: a pointer
            // taken from a reference to one descriptor may not reach the
            // next ones.
            // SAFETY: the masked slot is below `slot_count`, the length of
            // the descriptor array.
            descs: unsafe { self.descs.add(self.slot(start)) },
            to_end: u64::from(self.slot_count) - (start & self.mask),
            stamp: self.stamp(start),
        }
    }

    /// The data and descriptor cursors `used` slots into `run`: the first
    /// byte of that slot and its descriptor. Wrapping: a cursor one past
    /// the end (after the last frame before it) is never dereferenced.
    #[inline(always)]
    pub(super) fn cursors(&self, run: &Run, used: u64) -> (*mut u8, *const SlotDesc) {
        (
            run.base.wrapping_add((used as usize) << self.slot_shift),
            run.descs.wrapping_add(used as usize),
        )
    }

    /// The descriptor `used` slots into `run`.
    ///
    /// # Safety
    /// `used < run.to_end` (before the end of the descriptor array).
    #[inline(always)]
    pub(super) unsafe fn desc_in_run(run: &Run, used: u64) -> &SlotDesc {
        // SAFETY: slot `start + used` is `used` entries after `run.descs`
        // in the array, before its end per the caller.
        unsafe { &*run.descs.add(used as usize) }
    }
}

/// A valid frame length with its slot count, descriptor word and stride
/// (bytes its slots span): the producer's twin of
/// [`SeenDesc`].
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
