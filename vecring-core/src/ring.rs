//! The single-producer/single-consumer frame ring.
//!
//! A Lamport ring with free-running indices (as in rtrb and DPDK's
//! `rte_ring`), each side caching the other's index so that the shared index
//! lines are read only when the cached view runs out, and written once per
//! batch:
//!
//! - the producer fills slots and each frame's descriptor, then publishes `head`
//!   with one `Release` store per [`WriteChunk::commit`];
//! - the consumer loads `head` with `Acquire` only when it has consumed
//!   everything it knew of, reads the frames, then publishes `tail` with one
//!   `Release` store per [`ReadChunk::release`].
//!
//! The copying calls sit on the chunks: `send_batch` and `recv_batch` are a
//! chunk's loop flattened, and [`Producer::send`] and [`Consumer::recv`]
//! handle the common single frame in straight-line code (a ping-pong's
//! latency is mostly these two calls), taking a chunk for everything else.
//!
//! The other side may be a hostile process. Every value read from shared
//! memory (the peer's index, every descriptor) is loaded once into a local,
//! checked, and only then used. A bad value *poisons* the endpoint: it
//! returns [`Corruption`] from then on, counts it, and never touches memory
//! outside the ring. The endpoint's own index is private and never re-read.

use crate::abi::{self, RingControl, SlotDesc, SLOT_FLAGS_KNOWN, SLOT_FLAG_MORE};
use crate::geometry::Geometry;
use crate::sync::Ordering;
use core::marker::PhantomData;
use core::ptr;
use std::time::{Duration, Instant};

/// Memory that holds one ring: its control block, descriptors and slot data.
///
/// Implemented for the heap ([`HeapRing`]) and for a shared-memory region
/// ([`crate::memory::RegionRing`]); the ring code is the same for both.
///
/// # Safety
/// `control`, `descs` and `data` must stay valid for as long as the storage
/// (or any clone of it) lives: `descs()` has `geometry().slot_count()`
/// entries and `data()` points to `slot_count * slot_size` bytes, valid for
/// reads and writes and aligned to 64 bytes. The geometry must never change.
pub unsafe trait RingStorage: Send + Sync {
    /// The ring's control block.
    fn control(&self) -> &RingControl;
    /// The slot descriptors, `slot_count` of them.
    fn descs(&self) -> &[SlotDesc];
    /// The first byte of slot 0.
    fn data(&self) -> *mut u8;
    /// The ring's shape.
    fn geometry(&self) -> Geometry;
    /// Under loom only: the ring reads (`write` false) or writes the bytes
    /// of the `slots` slots from free-running `index` now. [`HeapRing`]
    /// records it in a loom cell per slot, so that loom reports a slot
    /// written while the other side may still read it, or read before the
    /// write is visible. The ring calls it through `model_read` and
    /// `model_write`; storage that does not record does nothing.
    #[cfg(loom)]
    fn slot_access(&self, index: u64, slots: u64, write: bool) {
        let _ = (index, slots, write);
    }
}

/// The consumer reads the `slots` slots from free-running `index` now:
/// after the Acquire load of `head` that published them, before the Release
/// store of `tail` that frees them. Tells loom (see
/// `RingStorage::slot_access`, a method only under loom); compiles to
/// nothing otherwise.
#[inline(always)]
fn model_read<S: RingStorage>(storage: &S, index: u64, slots: u64) {
    #[cfg(loom)]
    storage.slot_access(index, slots, false);
    #[cfg(not(loom))]
    let _ = (storage, index, slots);
}

/// The producer writes the `slots` slots from free-running `index` now:
/// after the Acquire load of `tail` that freed them, before the Release
/// store of `head` that publishes them. As [`model_read`].
#[inline(always)]
fn model_write<S: RingStorage>(storage: &S, index: u64, slots: u64) {
    #[cfg(loom)]
    storage.slot_access(index, slots, true);
    #[cfg(not(loom))]
    let _ = (storage, index, slots);
}

/// Which shared index a corrupt value was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexKind {
    /// The producer's index, as seen by the consumer.
    Head,
    /// The consumer's index, as seen by the producer.
    Tail,
}

/// A value the peer wrote that breaks the ring protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Corruption {
    /// The peer's index moved backwards or past what the ring can hold.
    #[error("peer moved the {kind:?} index from {old} to {new}, impossible for a ring of {slot_count} slots")]
    Index {
        /// Which index.
        kind: IndexKind,
        /// The last valid value seen.
        old: u64,
        /// The value read.
        new: u64,
        /// Ring capacity.
        slot_count: u32,
    },
    /// A frame's descriptor holds a length of zero, or a continuation flag
    /// that disagrees with its length.
    #[error("slot {slot} holds an invalid length {len} (flags {flags:#x})")]
    Length {
        /// Slot index.
        slot: u32,
        /// Length read.
        len: u16,
        /// Flags read.
        flags: u16,
    },
    /// A descriptor holds flag bits this version does not define.
    #[error("slot {slot} holds unknown flags {flags:#x}")]
    Flags {
        /// Slot index.
        slot: u32,
        /// Flags read.
        flags: u16,
    },
    /// A frame's length exceeds the largest frame.
    #[error("frame starting at slot {slot} exceeds the maximum frame length {max}")]
    FrameTooLong {
        /// First slot of the frame.
        slot: u32,
        /// The maximum frame length.
        max: u32,
    },
    /// A frame's slots extend past the last published slot.
    #[error("frame starting at slot {slot} continues past the published head")]
    Truncated {
        /// First slot of the frame.
        slot: u32,
    },
}

/// Why a frame could not be queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PushError {
    /// Not enough free slots; nothing was written.
    #[error("ring is full")]
    Full,
    /// The frame is longer than the link's maximum frame length.
    #[error("frame of {len} bytes exceeds the maximum of {max}")]
    TooLarge {
        /// Frame length.
        len: usize,
        /// The maximum frame length.
        max: usize,
    },
    /// Frames carry at least one byte.
    #[error("empty frame")]
    Empty,
}

/// Why a frame could not be sent with [`Producer::send`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The frame cannot be queued.
    #[error(transparent)]
    Push(#[from] PushError),
    /// The peer corrupted the ring.
    #[error("ring corrupted by peer: {0}")]
    Corrupt(#[from] Corruption),
    /// The link has no peer (only from [`crate::Sender`]).
    #[error("link is down")]
    LinkDown,
}

/// Why a frame could not be received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RecvError {
    /// No frame is waiting.
    #[error("no frame waiting")]
    Empty,
    /// The next frame needs a larger buffer; it stays in the ring.
    #[error("frame of {needed} bytes does not fit the buffer")]
    BufferTooSmall {
        /// The frame's length.
        needed: usize,
    },
    /// The peer corrupted the ring.
    #[error("ring corrupted by peer: {0}")]
    Corrupt(#[from] Corruption),
    /// The link has no peer (only from [`crate::Receiver`]).
    #[error("link is down")]
    LinkDown,
}

/// Counters kept by one endpoint (local, not shared).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EndpointStats {
    /// Frames sent or received.
    pub frames: u64,
    /// Payload bytes sent or received.
    pub bytes: u64,
    /// Times the peer's corruption was detected (0 or 1 per endpoint: the
    /// endpoint stays poisoned).
    pub corruptions: u64,
}

/// Frames per group in [`Consumer::recv_batch`]'s fast path for streams of
/// one small frame size.
const RUN: usize = 4;

/// The last descriptor word the consumer validated, decoded: a stream of
/// one frame size then costs one comparison per frame (see
/// [`Shape::frame_of`]).
#[derive(Clone, Copy)]
struct SeenDesc {
    word: u32,
    len: usize,
    slots: u64,
}

impl SeenDesc {
    /// Matches no valid frame: word 0 is never valid, and `slots` fails
    /// every published-slots check, so a 0 descriptor still goes to
    /// [`Shape::diagnose`].
    const NONE: SeenDesc = SeenDesc {
        word: 0,
        len: 0,
        slots: u64::MAX,
    };
}

/// A valid frame length with its slot count, descriptor word and stride
/// (bytes its slots span): the producer's twin of [`SeenDesc`].
#[derive(Clone, Copy)]
struct LenPlan {
    len: usize,
    slots: u64,
    word: u32,
    stride: usize,
}

impl LenPlan {
    /// Plans no length: its `slots` fits no room, and length 0 is never
    /// valid.
    const NONE: LenPlan = LenPlan {
        len: 0,
        slots: u64::MAX,
        word: 0,
        stride: 0,
    };
}

/// The slots from free-running `start` to the end of the data area: a
/// frame that lies within them is at `base` plus its offset, with no wrap
/// to handle (all frames of a batch but at most one per lap).
#[derive(Clone, Copy)]
struct Run {
    start: u64,
    /// The first byte of slot `start`.
    base: *mut u8,
    /// The descriptor of slot `start`.
    descs: *const SlotDesc,
    /// Slots from `start` to the end of the data area.
    to_end: u64,
}

impl Run {
    /// Slots from descriptor `from` to descriptor `to` (`to` may lie past
    /// the end of the array, as a wrapping cursor does).
    #[inline(always)]
    fn slots_between(from: *const SlotDesc, to: *const SlotDesc) -> u64 {
        ((to as usize).wrapping_sub(from as usize) / size_of::<SlotDesc>()) as u64
    }
}

/// Geometry in the form the hot path wants, copied out of the storage once.
#[derive(Clone, Copy)]
struct Shape {
    mask: u64,
    slot_size: usize,
    slot_shift: u32,
    max_frame: usize,
    slot_count: u32,
    /// `storage.data()`, cached: valid while the storage lives (the
    /// `RingStorage` contract), which every holder of a `Shape` outlives.
    data: *mut u8,
    /// `storage.descs()`, cached likewise (`slot_count` entries).
    descs: *const SlotDesc,
}

/// [`Shape::decode`], for a ring of `1 << slot_shift`-byte slots carrying
/// frames of at most `max_frame` bytes.
#[inline(never)]
fn decode_desc(word: u32, max_frame: usize, slot_shift: u32) -> Option<SeenDesc> {
    let (len, flags) = SlotDesc::unpack(word);
    let len = len as usize;
    let more = len > 1 << slot_shift;
    let valid = len.wrapping_sub(1) < max_frame && flags == if more { SLOT_FLAG_MORE } else { 0 };
    valid.then(|| SeenDesc {
        word,
        len,
        slots: len.div_ceil(1 << slot_shift) as u64,
    })
}

impl Shape {
    fn of<S: RingStorage>(storage: &S) -> Self {
        let g = storage.geometry();
        let descs = storage.descs();
        debug_assert_eq!(descs.len(), g.slot_count() as usize);
        Shape {
            mask: u64::from(g.slot_count()) - 1,
            slot_size: g.slot_size() as usize,
            slot_shift: g.slot_size().trailing_zeros(),
            max_frame: g.max_frame_len() as usize,
            slot_count: g.slot_count(),
            data: storage.data(),
            descs: descs.as_ptr(),
        }
    }

    /// The descriptor of the slot of free-running `index`.
    #[inline]
    fn desc(&self, index: u64) -> &SlotDesc {
        // SAFETY: the masked slot is below `slot_count`, the length of the
        // descriptor array, which lives as long as the storage.
        unsafe { &*self.descs.add(self.slot(index)) }
    }

    /// The first byte of the slot of free-running `index`.
    #[inline]
    fn slot_ptr(&self, index: u64) -> *mut u8 {
        // SAFETY: the masked slot is below `slot_count`, so the offset stays
        // inside the data area of `slot_count * slot_size` bytes.
        unsafe { self.data.add(self.slot(index) << self.slot_shift) }
    }

    #[inline]
    fn slot(&self, index: u64) -> usize {
        (index & self.mask) as usize
    }

    #[inline]
    fn slots_for(&self, len: usize) -> u64 {
        // Wrapping: for an absurd length (within `slot_size` of
        // `usize::MAX`) the count is wrong, never a panic, and every caller
        // refuses such a length whatever the count.
        (len.wrapping_add(self.slot_size - 1) >> self.slot_shift) as u64
    }

    /// Where a frame of `len` bytes starting at free-running `index` lies:
    /// its first byte and how many of its bytes come before the end of the
    /// data area. The rest, if any, continues at the start of the data area.
    #[inline]
    fn span(&self, index: u64, len: usize) -> (*mut u8, usize) {
        let slot = self.slot(index);
        let room = (self.slot_count as usize - slot) << self.slot_shift;
        (self.slot_ptr(index), len.min(room))
    }

    /// The length and slot count of the frame whose first descriptor holds
    /// `word`, if the descriptor is valid and the frame lies within the
    /// `ready` published slots: the hot-path check. When `word` is the
    /// descriptor validated last (`seen`), the answer comes from `seen`
    /// with one comparison; otherwise `word` is decoded out of line and, if
    /// valid, becomes `seen`.
    #[inline(always)]
    fn frame_of(&self, word: u32, ready: u64, seen: &mut SeenDesc) -> Option<(usize, u64)> {
        if word != seen.word {
            *seen = self.decode(word)?;
        }
        (seen.slots <= ready).then_some((seen.len, seen.slots))
    }

    /// Copies groups of [`RUN`] one-slot frames like `seen` from `off`
    /// slots into `run` to `bufs` (lengths to `lens`), one group per `RUN`
    /// buffers, while each group's descriptors all hold `seen.word` and
    /// each buffer has room; returns how many frames it copied.
    ///
    /// # Safety
    /// `seen` is a validated one-slot frame of 32 to 64 bytes (the copy is
    /// four 16-byte moves), and the `bufs.len()` slots from `off` are
    /// published and lie before the end of the data area.
    #[inline(always)]
    unsafe fn copy_groups<B: AsMut<[u8]>>(
        &self,
        run: &Run,
        off: u64,
        seen: &SeenDesc,
        bufs: &mut [B],
        lens: &mut [usize],
    ) -> usize {
        let (len, stride) = (seen.len, self.slot_size);
        let (mut src, mut desc) = self.cursors(run, off);
        let mut copied = 0;
        for (group, group_lens) in bufs.chunks_exact_mut(RUN).zip(lens.chunks_exact_mut(RUN)) {
            // SAFETY: the group's `RUN` descriptors are among the caller's.
            if !unsafe { four_hold(desc, seen.word) } {
                break;
            }
            // Each buffer is asked for its slice once: the slices checked
            // are the slices written.
            let mut dsts = group.iter_mut().map(|b| b.as_mut());
            let dsts: [&mut [u8]; RUN] = core::array::from_fn(|_| dsts.next().unwrap_or_default());
            if dsts.iter().any(|d| d.len() < len) {
                break;
            }
            for (i, dst) in dsts.into_iter().enumerate() {
                // SAFETY: one of `RUN` validated one-slot frames, `i` slots
                // past `src`; `dst` has room for `len` bytes.
                unsafe { copy_32_to_64(dst.as_mut_ptr(), src.add(i * stride), len) }
            }
            group_lens.fill(len);
            copied += RUN;
            // SAFETY: at most one past the caller's slots.
            unsafe {
                src = src.add(RUN * stride);
                desc = desc.add(RUN);
            }
        }
        copied
    }

    /// Copies frames like `seen` (same descriptor word) from `off` slots
    /// into `run` to `bufs[i]` (lengths to `lens[i]`), one per buffer,
    /// while each lies wholly before `clear` slots into `run` and its
    /// buffer has room; returns how many it copied. A stream of one frame
    /// size costs one descriptor comparison and one copy per frame.
    ///
    /// # Safety
    /// `seen` is [`SeenDesc::NONE`] or validated, and the slots from `off`
    /// to `clear` are published and lie before the end of the data area
    /// (`clear <= run.to_end`).
    #[inline(always)]
    unsafe fn copy_like_seen<B: AsMut<[u8]>>(
        &self,
        run: &Run,
        off: u64,
        clear: u64,
        seen: &SeenDesc,
        bufs: &mut [B],
        lens: &mut [usize],
    ) -> usize {
        // How many such frames fit before `clear`, counted once, so that
        // the loop below checks only descriptor and buffer (`NONE`'s
        // `slots` fits none).
        let room = clear.saturating_sub(off);
        let fit = if seen.slots == 1 {
            room
        } else {
            room / seen.slots
        };
        let count = bufs.len().min(lens.len()).min(fit as usize);
        let (bufs, lens) = (&mut bufs[..count], &mut lens[..count]);
        // Two loops, so that the choice of copy is made once, not per
        // frame.
        // SAFETY: the caller's contract; `count` frames of `seen.slots`
        // slots from `off` end at or before `clear`.
        unsafe {
            if seen.len > 64 {
                self.copy_counted_long(run, off, seen, bufs, lens)
            } else {
                self.copy_counted::<B, COPY_ANY>(run, off, seen, bufs, lens)
            }
        }
    }

    /// [`copy_counted`](Self::copy_counted) for frames longer than 64
    /// bytes, out of line: its loop calls `memcpy`, and on its own it keeps
    /// its values in the registers a call preserves, whatever the code
    /// around it (a call per batch, against ~10 register moves a frame).
    ///
    /// # Safety
    /// As for `copy_counted`, and `seen.len > 64`.
    #[inline(never)]
    unsafe fn copy_counted_long<B: AsMut<[u8]>>(
        &self,
        run: &Run,
        off: u64,
        seen: &SeenDesc,
        bufs: &mut [B],
        lens: &mut [usize],
    ) -> usize {
        // SAFETY: the caller's contract.
        unsafe { self.copy_counted::<B, COPY_MEMCPY>(run, off, seen, bufs, lens) }
    }

    /// [`copy_like_seen`](Self::copy_like_seen)'s loop, over frames known
    /// to lie before its `clear`, each copied as `HOW` says.
    ///
    /// # Safety
    /// As for `copy_like_seen`, and the `bufs.len()` frames of
    /// `seen.slots` slots from `off` lie before its `clear`; `HOW` suits
    /// `seen.len` (see [`copy_as`]).
    #[inline(always)]
    unsafe fn copy_counted<B: AsMut<[u8]>, const HOW: u8>(
        &self,
        run: &Run,
        off: u64,
        seen: &SeenDesc,
        bufs: &mut [B],
        lens: &mut [usize],
    ) -> usize {
        let (len, word) = (seen.len, seen.word);
        let stride = (seen.slots as usize) << self.slot_shift;
        let (mut src, mut desc) = self.cursors(run, off);
        let mut copied = 0;
        for buf in bufs.iter_mut() {
            // Relaxed: ordered after the Acquire load of `head` that
            // published the slot; read once.
            // SAFETY: the descriptor of a frame before `clear`, within the
            // array (the caller's contract).
            let seen_again = unsafe { &*desc }.0.load(Ordering::Relaxed);
            let dst = buf.as_mut();
            if seen_again != word || dst.len() < len {
                break;
            }
            // SAFETY: a validated frame of `len` bytes at `src`, in
            // published slots before the end of the data area; `dst` is
            // local memory with room for it.
            unsafe { copy_as::<HOW>(dst.as_mut_ptr(), src, len) };
            src = src.wrapping_add(stride);
            desc = desc.wrapping_add(seen.slots as usize);
            copied += 1;
        }
        // Out of the loop, which then keeps fewer values across the copy.
        lens[..copied].fill(len);
        copied
    }

    /// How many of the `limit` frames of `slots` slots each, back to back
    /// from free-running `index`, have the descriptor word `word`, counted
    /// until the first that differs. Each descriptor is loaded once.
    ///
    /// # Safety
    /// The `limit * slots` slots from `index` are published and lie before
    /// the end of the data area.
    #[inline(always)]
    unsafe fn count_like(&self, index: u64, word: u32, slots: u64, limit: u64) -> u64 {
        // From the array's pointer (see `run_from`).
        // SAFETY: the masked slot is below `slot_count`.
        let descs = unsafe { self.descs.add(self.slot(index)) };
        // Frame `i`'s descriptor. Relaxed: ordered after the Acquire load of
        // `head` that published these slots.
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
        }
        while n < limit && word_of(n) == word {
            n += 1;
        }
        n
    }

    /// `word` decoded and validated, but for the published-slots check.
    /// Out of line, and handed two numbers rather than the shape: a shape
    /// passed by address would pin its holder (a chunk, a loop's locals) in
    /// memory for the whole loop.
    #[inline(always)]
    fn decode(&self, word: u32) -> Option<SeenDesc> {
        decode_desc(word, self.max_frame, self.slot_shift)
    }

    /// What is wrong with the frame descriptor `word` at free-running
    /// `index`, with `ready` published slots from there; `Ok` (length and
    /// slots) if nothing is.
    #[cold]
    fn diagnose(&self, index: u64, word: u32, ready: u64) -> Result<(usize, u64), Corruption> {
        let slot = self.slot(index) as u32;
        let (len16, flags) = SlotDesc::unpack(word);
        let len = len16 as usize;
        Err(if flags & !SLOT_FLAGS_KNOWN != 0 {
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

    /// Prefetches the slot `PREFETCH_SLOTS` after `index` and the
    /// descriptor twice as far, each only if published (`ready` slots from
    /// `index` are): a line the producer is still writing would be pulled
    /// away from it.
    #[inline(always)]
    fn prefetch_ahead(&self, index: u64, ready: u64) {
        if PREFETCH_SLOTS < ready {
            prefetch(self.slot_ptr(index.wrapping_add(PREFETCH_SLOTS)));
            if 2 * PREFETCH_SLOTS < ready {
                let desc = self.desc(index.wrapping_add(2 * PREFETCH_SLOTS));
                prefetch((desc as *const SlotDesc).cast());
            }
        }
    }

    /// Copies `frame` into the slots from free-running `index` and writes
    /// its descriptor (Relaxed: published by the producer's next Release
    /// store of `head`).
    ///
    /// # Safety
    /// `frame` must be 1 to `max_frame` bytes, must not overlap the slots
    /// written (it may lie in shared memory elsewhere, e.g. a received
    /// frame held in place), and the `slots_for(frame.len())` slots from
    /// `index` must be reserved for the caller, the producer.
    #[inline(always)]
    unsafe fn write_frame(&self, index: u64, frame: &[u8]) {
        let len = frame.len();
        let (dst, head_len) = self.span(index, len);
        // SAFETY: `span` keeps the first `head_len` bytes inside the data
        // area, and the rest (`len - head_len`, less than the frame's slots
        // hold) continues at its start; the slots are the caller's (see
        // above) and `frame` does not overlap them.
        unsafe {
            copy_bytes(dst, frame.as_ptr(), head_len);
            if head_len < len {
                ptr::copy_nonoverlapping(frame.as_ptr().add(head_len), self.data, len - head_len);
            }
        }
        self.write_desc(index, len);
    }

    /// The run of slots from free-running `start` (see [`Run`]).
    #[inline(always)]
    fn run_from(&self, start: u64) -> Run {
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
        }
    }

    /// The data and descriptor cursors `used` slots into `run`: the first
    /// byte of that slot and its descriptor. Wrapping: a cursor one past
    /// the end (after the last frame before it) is never dereferenced.
    #[inline(always)]
    fn cursors(&self, run: &Run, used: u64) -> (*mut u8, *const SlotDesc) {
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
    unsafe fn desc_in_run(run: &Run, used: u64) -> &SlotDesc {
        // SAFETY: slot `start + used` is `used` entries after `run.descs`
        // in the array, before its end per the caller.
        unsafe { &*run.descs.add(used as usize) }
    }

    /// The plan of a frame of `len` bytes; for an invalid length, one
    /// whose `slots` fits no room. Cold: a stream of one size needs it
    /// once.
    #[cold]
    #[inline]
    fn plan(&self, len: usize) -> LenPlan {
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

    /// Stores the descriptor of a frame of `len` bytes in `desc`.
    #[inline(always)]
    fn store_desc(&self, desc: &SlotDesc, len: usize) {
        put_desc(desc, SlotDesc::pack(len as u16, self.flags_for(len)));
    }

    /// [`write_frame`](Self::write_frame) for a frame of `slots` slots
    /// `used` slots into `run`: at a fixed offset from `run.base` unless it
    /// wraps.
    ///
    /// # Safety
    /// As for `write_frame`, at free-running index `run.start + used`, and
    /// `slots` must be `slots_for(frame.len())`.
    #[inline(always)]
    unsafe fn write_in_run(&self, run: &Run, used: u64, slots: u64, frame: &[u8]) {
        if used + slots <= run.to_end {
            // SAFETY: as `write_before_end`, whose condition was just tested.
            unsafe { self.write_before_end(run, used, frame) };
        } else {
            // SAFETY: the caller's contract, at `run.start + used`.
            unsafe { self.write_frame(run.start.wrapping_add(used), frame) };
        }
    }

    /// [`write_in_run`](Self::write_in_run) for a frame known not to wrap:
    /// at a fixed offset from `run.base`, its descriptor `used` entries
    /// from `run.descs`.
    ///
    /// # Safety
    /// As for `write_in_run`, and the frame's slots end at or before
    /// `run.to_end`.
    #[inline(always)]
    unsafe fn write_before_end(&self, run: &Run, used: u64, frame: &[u8]) {
        // SAFETY: the frame's slots lie before the end of the data area,
        // `used` slots from `run.base`, and are the caller's; `frame` does
        // not overlap them (the caller's contract); `used < run.to_end`.
        unsafe {
            copy_bytes(
                run.base.add((used as usize) << self.slot_shift),
                frame.as_ptr(),
                frame.len(),
            );
            self.store_desc(Self::desc_in_run(run, used), frame.len());
        }
    }

    /// Copies the frame of `len` bytes in the `slots` slots `used` slots
    /// into `run` to `dst`: from a fixed offset from `run.base` unless it
    /// wraps. The reading twin of [`write_in_run`](Self::write_in_run).
    ///
    /// # Safety
    /// The frame must be published and validated (`slots` is
    /// `slots_for(len)`), and `dst` must hold at least `len` bytes.
    #[inline(always)]
    unsafe fn read_in_run(&self, run: &Run, used: u64, slots: u64, len: usize, dst: &mut [u8]) {
        if used + slots <= run.to_end {
            // SAFETY: the frame lies before the end of the data area, `used`
            // slots from `run.base`; `dst` is local memory with room for it.
            unsafe {
                copy_bytes(
                    dst.as_mut_ptr(),
                    run.base.add((used as usize) << self.slot_shift),
                    len,
                );
            }
        } else {
            Frame::new(self, run.start.wrapping_add(used), len, slots).copy_to(dst);
        }
    }

    /// Writes the descriptor of a frame of `len` (valid) bytes starting at
    /// free-running `index`.
    #[inline(always)]
    fn write_desc(&self, index: u64, len: usize) {
        self.store_desc(self.desc(index), len);
    }

    /// Why a frame of `len` bytes can never be sent, if it cannot.
    #[cold]
    fn bad_length(&self, len: usize) -> Option<PushError> {
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
    fn flags_for(&self, len: usize) -> u16 {
        if len > self.slot_size {
            SLOT_FLAG_MORE
        } else {
            0
        }
    }
}

/// Copies `len` bytes; frames of up to 64 bytes with a few overlapping
/// unaligned loads and stores instead of a `memcpy` call, which dominates
/// the cost of a small frame.
///
/// # Safety
/// `src..src+len` must be readable, `dst..dst+len` writable, and the two
/// must not overlap.
#[inline(always)]
unsafe fn copy_bytes(dst: *mut u8, src: *const u8, len: usize) {
    use core::ptr::{read_unaligned as rd, write_unaligned as wr};
    // SAFETY: every access below lies within the first or the last
    // `k <= len` bytes of the two ranges the caller guarantees.
    unsafe {
        if len > 64 {
            ptr::copy_nonoverlapping(src, dst, len);
        } else if len >= 32 {
            copy_32_to_64(dst, src, len);
        } else if len >= 16 {
            let (a, b) = (rd(src.cast::<u128>()), rd(src.add(len - 16).cast::<u128>()));
            wr(dst.cast::<u128>(), a);
            wr(dst.add(len - 16).cast::<u128>(), b);
        } else if len >= 8 {
            let (a, b) = (rd(src.cast::<u64>()), rd(src.add(len - 8).cast::<u64>()));
            wr(dst.cast::<u64>(), a);
            wr(dst.add(len - 8).cast::<u64>(), b);
        } else {
            for i in 0..len {
                *dst.add(i) = *src.add(i);
            }
        }
    }
}

/// How a loop over frames of one length copies each: chosen once for the
/// length, not per frame.
const COPY_32_TO_64: u8 = 0;
/// Longer than 64 bytes: `memcpy`, without [`copy_bytes`]'s dispatch.
const COPY_MEMCPY: u8 = 1;
/// Any length: [`copy_bytes`].
const COPY_ANY: u8 = 2;

/// Copies `len` bytes from `src` to `dst` the way `HOW` names.
///
/// # Safety
/// As for [`copy_bytes`], and `len` is 32 to 64 for [`COPY_32_TO_64`].
#[inline(always)]
unsafe fn copy_as<const HOW: u8>(dst: *mut u8, src: *const u8, len: usize) {
    // SAFETY: the caller's contract.
    unsafe {
        match HOW {
            COPY_32_TO_64 => copy_32_to_64(dst, src, len),
            COPY_MEMCPY => ptr::copy_nonoverlapping(src, dst, len),
            _ => copy_bytes(dst, src, len),
        }
    }
}

/// [`copy_bytes`] for 32 to 64 bytes: four 16-byte moves (not two
/// `[u8; 32]`s: those go through the stack).
///
/// # Safety
/// As for `copy_bytes`, and `32 <= len <= 64`.
#[inline(always)]
unsafe fn copy_32_to_64(dst: *mut u8, src: *const u8, len: usize) {
    use core::ptr::{read_unaligned as rd, write_unaligned as wr};
    let tail = len - 32;
    // SAFETY: every access lies within the first or the last 32 of the
    // `len >= 32` bytes of the two ranges the caller guarantees.
    unsafe {
        let (a, b) = (rd(src.cast::<u128>()), rd(src.add(16).cast::<u128>()));
        let (c, d) = (
            rd(src.add(tail).cast::<u128>()),
            rd(src.add(tail + 16).cast::<u128>()),
        );
        wr(dst.cast::<u128>(), a);
        wr(dst.add(16).cast::<u128>(), b);
        wr(dst.add(tail).cast::<u128>(), c);
        wr(dst.add(tail + 16).cast::<u128>(), d);
    }
}

/// Hints the CPU to fetch the cache line at `p` (no effect on other
/// architectures). Prefetching never faults, whatever the address.
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch instructions do not access memory architecturally
    // and cannot fault; SSE is part of the x86_64 baseline.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Hints the CPU to fetch the cache line at `p` for writing (`PREFETCHW`;
/// no effect on other architectures). Never faults, whatever the address.
#[inline(always)]
fn prefetch_for_write(p: *const u8) {
    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    // SAFETY: PREFETCHW does not access memory architecturally and cannot
    // fault; processors without it execute the encoding as a NOP.
    unsafe {
        core::arch::asm!("prefetchw [{}]", in(reg) p, options(nostack, preserves_flags, readonly));
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
    let _ = p;
}

/// How far ahead, in slots, the consumer prefetches published slots (and
/// twice as far, their descriptors): enough small frames to cover a
/// cross-core transfer. (The producer does not prefetch ahead of a batch:
/// a `PREFETCHW` of slots ahead measured no better, of the next frame's
/// lines at 1514 bytes much worse, and outside its reservation it would
/// take lines the consumer may still be reading. It only primes one free
/// slot after publishing a single frame: `Producer::prime_next_slot`.)
const PREFETCH_SLOTS: u64 = 8;

/// The writing end of a ring.
pub struct Producer<S: RingStorage> {
    storage: S,
    shape: Shape,
    /// Private copy of our index: the next slot to fill. Never re-read from
    /// shared memory, so a peer scribbling on it cannot mislead us.
    head: u64,
    /// Last validated value of the consumer's `tail`; `head - cached_tail`
    /// is in `0..=slot_count`.
    cached_tail: u64,
    poisoned: Option<Corruption>,
    stats: EndpointStats,
}

/// The reading end of a ring.
pub struct Consumer<S: RingStorage> {
    storage: S,
    shape: Shape,
    /// Private read position: the next slot to read.
    tail: u64,
    /// Private copy of the index we last published: slots before it belong
    /// to the producer again. Equal to `tail` unless frames were
    /// [kept](ReadChunk::keep); `released <= tail <= cached_head`.
    released: u64,
    /// Last validated value of the producer's `head`; `cached_head -
    /// released` is in `0..=slot_count`.
    cached_head: u64,
    poisoned: Option<Corruption>,
    stats: EndpointStats,
    /// The descriptor validated last (see [`Shape::frame_of`]).
    seen: SeenDesc,
    /// See [`Consumer::set_hold_back`]: fewer ready slots than this (0:
    /// never) may be held back...
    hold_below: u64,
    /// ...for at most this long.
    hold_wait: Duration,
    /// When the frames held back now were first held back.
    held_since: Option<Instant>,
}

/// A consumer's hold-back: a few ready frames left unread for a moment, so
/// as not to read right behind a producer that is still streaming (off
/// unless set with [`Consumer::set_hold_back`] or
/// [`crate::Receiver::set_hold_back`]).
///
/// A consumer that keeps up with its producer reads each line just after
/// the producer wrote it, and the producer then writes its next lines
/// against the consumer's reads and prefetches: on this project's machine
/// that made zero-copy 64-byte frames two to four times slower than when the
/// consumer lags behind (see `docs/benchmarks/README.md`, "The 64-byte
/// modes and the hold-back"). Holding back puts the consumer behind once;
/// it then stays behind by itself, so a steady stream is rarely held back
/// at all.
///
/// A batch read ([`Consumer::read_chunk`], [`Consumer::recv_batch`]) of a
/// stream of one-slot frames (as the last frame read was; 64 bytes or
/// less in the default geometry) finds nothing while more than one but
/// fewer than [`below_slots`] slots are ready, until [`wait`] has passed
/// since it first held them back (it reads the producer's index once when
/// it starts holding back, not meanwhile). One frame alone is never held
/// back, so a request/response exchange of single frames keeps its
/// latency; longer frames are never held back; [`Consumer::recv`] never
/// holds back.
///
/// [`below_slots`]: HoldBack::below_slots
/// [`wait`]: HoldBack::wait
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HoldBack {
    /// Fewer ready slots than this (and more than one) are held back.
    pub below_slots: u32,
    /// For at most this long from when they were first held back.
    pub wait: Duration,
}

impl HoldBack {
    /// Two batches of 32 one-slot frames (64 slots) for at most 250 ns: the
    /// setting measured in `docs/benchmarks/README.md` (100 ns was too
    /// short; 500 and 1000 ns gained no more).
    pub const STREAMING: HoldBack = HoldBack {
        below_slots: 64,
        wait: Duration::from_nanos(250),
    };
}

impl<S: RingStorage> Producer<S> {
    /// The producer of the ring in `storage`, starting at the shared head.
    ///
    /// # Safety
    /// At most one `Producer` may exist for a ring in this process at a
    /// time (a second one in the *peer* process is tolerated: it can only
    /// garble frame contents).
    pub unsafe fn attach(storage: S) -> Result<Self, Corruption> {
        let shape = Shape::of(&storage);
        let ctl = storage.control();
        // Relaxed: start-up read, validated below; the peer publishes
        // nothing before it has seen our first head.
        let head = ctl.head.index.load(Ordering::Relaxed);
        // Acquire: pairs with the consumer's Release store of `tail` in
        // `Consumer::publish_release`, as in `refresh_tail`.
        let tail = ctl.tail.index.load(Ordering::Acquire);
        let used = head.wrapping_sub(tail);
        if used > u64::from(shape.slot_count) {
            return Err(Corruption::Index {
                kind: IndexKind::Tail,
                old: head,
                new: tail,
                slot_count: shape.slot_count,
            });
        }
        Ok(Producer {
            storage,
            shape,
            head,
            cached_tail: tail,
            poisoned: None,
            stats: EndpointStats::default(),
        })
    }

    /// The ring's geometry.
    pub fn geometry(&self) -> Geometry {
        self.storage.geometry()
    }

    /// Counters of this endpoint.
    pub fn stats(&self) -> EndpointStats {
        self.stats
    }

    /// The corruption that poisoned this endpoint, if any.
    pub fn corruption(&self) -> Option<Corruption> {
        self.poisoned
    }

    fn poison(&mut self, c: Corruption) -> Corruption {
        if self.poisoned.is_none() {
            log::error!("vecring: producer stops: {c}");
            self.stats.corruptions += 1;
            self.poisoned = Some(c);
        }
        c
    }

    /// Reads the consumer's index once and checks it moved forward, by no
    /// more than the slots we have published.
    fn refresh_tail(&mut self) -> Result<(), Corruption> {
        // Acquire: pairs with the consumer's Release store of `tail` in
        // `Consumer::publish_release`, so the consumer's reads of those
        // slots happen before we overwrite them.
        let tail = self.storage.control().tail.index.load(Ordering::Acquire);
        let advanced = tail.wrapping_sub(self.cached_tail);
        let outstanding = self.head.wrapping_sub(self.cached_tail);
        if advanced > outstanding {
            return Err(self.poison(Corruption::Index {
                kind: IndexKind::Tail,
                old: self.cached_tail,
                new: tail,
                slot_count: self.shape.slot_count,
            }));
        }
        self.cached_tail = tail;
        Ok(())
    }

    /// Slots free for writing, refreshing the consumer's index if fewer than
    /// `wanted` are known to be free.
    #[inline]
    fn free_slots(&mut self, wanted: u64) -> Result<u64, Corruption> {
        if let Some(c) = self.poisoned {
            return Err(c);
        }
        let cap = u64::from(self.shape.slot_count);
        let mut free = cap - self.head.wrapping_sub(self.cached_tail);
        if free < wanted {
            self.refresh_tail()?;
            free = cap - self.head.wrapping_sub(self.cached_tail);
        }
        Ok(free)
    }

    /// After publishing a single frame, starts taking the line of the next
    /// slot for writing, if that slot is known to be free.
    ///
    /// A producer publishing one frame at a time is paced by something
    /// else (a reply, a timer): the next frame comes after a pause, and its
    /// first store would wait for a line last held by the consumer a lap
    /// ago. Taking it now moves that wait off the next frame's latency
    /// (measured: link ping-pong between vCPUs ~220 ns apart, one way 551
    /// and 559 ns against 672 and 733 ns; no change between near vCPUs).
    /// Batches are left alone: the next batch's stores follow at once.
    #[inline(always)]
    fn prime_next_slot(&self, frames: usize) {
        let cap = u64::from(self.shape.slot_count);
        if frames == 1 && self.head.wrapping_sub(self.cached_tail) < cap {
            prefetch_for_write(self.shape.slot_ptr(self.head));
        }
    }

    /// Frames published and not yet released by the consumer, counted from
    /// our own descriptors with a walk bounded by the ring size (used to
    /// account for frames lost when a link generation ends).
    pub fn unread_frames(&self) -> u64 {
        // Acquire: pairs with the consumer's Release store of `tail` in
        // `Consumer::publish_release`.
        let tail = self.storage.control().tail.index.load(Ordering::Acquire);
        let outstanding = self.head.wrapping_sub(tail);
        let since_cached = tail.wrapping_sub(self.cached_tail);
        let tail = if outstanding <= u64::from(self.shape.slot_count)
            && since_cached <= self.head.wrapping_sub(self.cached_tail)
        {
            tail
        } else {
            self.cached_tail
        };
        // The descriptors are ours, but lie in shared memory: a scribbled
        // length still advances by at least one slot, so the walk ends.
        let mut at = tail;
        let mut frames = 0;
        while at != self.head {
            // Relaxed: our own earlier stores; the value is only counted.
            let (len, _) = SlotDesc::unpack(self.shape.desc(at).0.load(Ordering::Relaxed));
            let slots = self.shape.slots_for(len as usize).max(1);
            at = at.wrapping_add(slots.min(self.head.wrapping_sub(at)));
            frames += 1;
        }
        frames
    }

    /// Reserves up to `max_slots` free slots for writing frames in place.
    ///
    /// # Errors
    /// [`Corruption`] if the peer corrupted the ring (now or before).
    #[inline(always)]
    pub fn write_chunk(&mut self, max_slots: usize) -> Result<WriteChunk<'_, S>, Corruption> {
        let max = max_slots.min(self.shape.slot_count as usize) as u64;
        let free = self.free_slots(max)?;
        let reserved = free.min(max);
        Ok(WriteChunk {
            shape: self.shape,
            run: self.shape.run_from(self.head),
            reserved,
            used: 0,
            frames: 0,
            bytes: 0,
            producer: self,
        })
    }

    /// Copies one frame into the ring and publishes it.
    ///
    /// # Errors
    /// [`PushError::Full`] when there is no room (nothing is written),
    /// [`PushError::TooLarge`]/[`PushError::Empty`] for a bad length,
    /// [`SendError::Corrupt`] if the peer corrupted the ring.
    pub fn send(&mut self, frame: &[u8]) -> Result<(), SendError> {
        // The common case without a chunk (whose set-up and spills doubled
        // a ping-pong's instructions): a valid length whose slots are known
        // to be free and end before the end of the data area.
        let (shape, len) = (self.shape, frame.len());
        let slots = shape.slots_for(len);
        let free = u64::from(shape.slot_count) - self.head.wrapping_sub(self.cached_tail);
        if self.poisoned.is_none()
            && len.wrapping_sub(1) < shape.max_frame
            && slots <= free
            && shape.slot(self.head) as u64 + slots <= u64::from(shape.slot_count)
        {
            model_write(&self.storage, self.head, slots);
            // SAFETY: `len` is valid, `frame` is the caller's memory, and the
            // `slots` slots at `head` are free and end before the end of the
            // data area.
            unsafe { copy_bytes(shape.slot_ptr(self.head), frame.as_ptr(), len) };
            shape.store_desc(shape.desc(self.head), len);
            self.publish(self.head.wrapping_add(slots), 1, len as u64);
            return Ok(());
        }
        self.send_slow(frame)
    }

    /// [`send`](Self::send) through a chunk: full, wrapping, a bad length,
    /// a poisoned ring, or free slots not yet seen.
    #[inline(never)]
    fn send_slow(&mut self, frame: &[u8]) -> Result<(), SendError> {
        let slots = self.shape.slots_for(frame.len()) as usize;
        let mut chunk = self.write_chunk(slots.max(1))?;
        chunk.push(frame)?;
        chunk.commit();
        Ok(())
    }

    /// Publishes `head` (the slots before it hold `frames` new frames of
    /// `bytes` bytes in all) with one index store.
    #[inline(always)]
    fn publish(&mut self, head: u64, frames: usize, bytes: u64) {
        self.head = head;
        // Release: pairs with the consumer's Acquire load of `head` in
        // `Consumer::refresh_head` (and `Consumer::attach`), publishing the
        // slots and descriptors.
        self.storage
            .control()
            .head
            .index
            .store(head, Ordering::Release);
        self.stats.frames += frames as u64;
        self.stats.bytes += bytes;
        self.prime_next_slot(frames);
    }

    /// Copies as many of `frames` as fit, in order, and publishes them with
    /// one index update. Returns how many were sent; stops at the first
    /// frame that does not fit.
    ///
    /// # Errors
    /// [`SendError::Push`] if the *first* frame has a bad length,
    /// [`SendError::Corrupt`] if the peer corrupted the ring.
    pub fn send_batch<'f, I>(&mut self, frames: I) -> Result<usize, SendError>
    where
        I: IntoIterator<Item = &'f [u8]>,
    {
        // Start from the cached view of the consumer's index and read the
        // shared one (a line the other core writes) only when a frame does
        // not fit, once per batch: not on every call, as
        // `write_chunk(usize::MAX)` would. The loop is `write_chunk` + `push`
        // flattened. Its common case, a frame that fits in free slots before
        // the end of the data area, advances two cursors (data and
        // descriptor) and one count of such slots left (`room`): few enough
        // values to stay in registers, with everything else on the rare path.
        let shape = self.shape;
        let mut free = self.free_slots(1)?;
        let start = self.head;
        let run = shape.run_from(start);
        let (mut n, mut bytes) = (0usize, 0u64);
        let mut refreshed = false;
        let mut clear = free.min(run.to_end);
        let mut room = clear;
        // Slots used so far are `desc - run.descs`; `dst` is as many slots
        // past `run.base`. Both stay inside the areas while `room > 0`; after
        // a frame that wraps they are not dereferenced again (`room` is 0).
        let (mut dst, mut desc) = (run.base, run.descs);
        // What follows from the last length seen: a stream of one frame
        // size works out its slots, descriptor and stride once.
        let mut plan = LenPlan::NONE;
        let mut frames = frames.into_iter();
        // A frame taken from `frames` by the stream loop below but not
        // written by it.
        let mut pending: Option<&[u8]> = None;
        loop {
            let frame = match pending.take() {
                Some(frame) => frame,
                None => match frames.next() {
                    Some(frame) => frame,
                    None => break,
                },
            };
            let len = frame.len();
            if len != plan.len {
                plan = shape.plan(len);
            }
            if plan.slots <= room {
                // SAFETY: `len` is valid (an invalid one's plan fits no
                // room), `frame` is the caller's memory, and the
                // `plan.slots` slots at `dst`/`desc` are free and end
                // before the end of the data area (`room`); the advanced
                // cursors are at most one past it.
                unsafe {
                    copy_bytes(dst, frame.as_ptr(), len);
                    put_desc(&*desc, plan.word);
                    dst = dst.add(plan.stride);
                    desc = desc.add(plan.slots as usize);
                }
                room -= plan.slots;
                n += 1;
                bytes += len as u64;
                // The frames that follow with the same length: a loop of
                // its own, with one length comparison, one copy of a kind
                // chosen once, and few values live (the general loop's
                // length dispatch and spills cost 4 of the 35 instructions
                // a 64-byte frame took when lengths are known only at run
                // time).
                // SAFETY: `dst`/`desc` are the cursors of the `room` free
                // slots before the end of the data area, and `plan` is the
                // plan of a valid length, `len`.
                let (k, end) = unsafe {
                    if plan.slots == 1 && (32..=64).contains(&len) {
                        stream_like::<_, COPY_32_TO_64>(
                            &mut frames,
                            &mut dst,
                            &mut desc,
                            &plan,
                            room,
                        )
                    } else if len > 64 {
                        stream_like::<_, COPY_MEMCPY>(&mut frames, &mut dst, &mut desc, &plan, room)
                    } else {
                        stream_like::<_, COPY_ANY>(&mut frames, &mut dst, &mut desc, &plan, room)
                    }
                };
                room -= k * plan.slots;
                n += k as usize;
                bytes += k * len as u64;
                // The frame written above and the `k` after it.
                let written = (k + 1) * plan.slots;
                let used = Run::slots_between(run.descs, desc);
                model_write(&self.storage, start.wrapping_add(used - written), written);
                match end {
                    StreamEnd::Room => {}
                    StreamEnd::Other(next) => pending = Some(next),
                    StreamEnd::Done => break,
                }
                continue;
            }
            if len.wrapping_sub(1) >= shape.max_frame {
                if let (0, Some(e)) = (n, shape.bad_length(len)) {
                    return Err(e.into());
                }
                break;
            }
            // A valid length: `plan` is its plan.
            let slots = plan.slots;
            let used = Run::slots_between(run.descs, desc);
            if slots > free - used {
                if refreshed {
                    break;
                }
                refreshed = true;
                // `head` moves only below, so this counts from `start`.
                free = self.free_slots(u64::MAX)?;
                clear = free.min(run.to_end);
                if slots > free - used {
                    break;
                }
            }
            model_write(&self.storage, start.wrapping_add(used), slots);
            // SAFETY: `len` is valid (checked above), `frame` is the
            // caller's memory, and the slots are among the `free` ones.
            unsafe { shape.write_in_run(&run, used, slots, frame) };
            let used = used + slots;
            room = clear.saturating_sub(used);
            (dst, desc) = shape.cursors(&run, used);
            n += 1;
            bytes += len as u64;
        }
        let used = Run::slots_between(run.descs, desc);
        if n > 0 {
            self.publish(start.wrapping_add(used), n, bytes);
        }
        Ok(n)
    }
}

/// Why [`stream_like`] stopped.
enum StreamEnd<'f> {
    /// The next frame would not fit in the room it was given.
    Room,
    /// The next frame has another length: taken from the iterator, not
    /// written.
    Other(&'f [u8]),
    /// The frames ran out.
    Done,
}

/// Writes the frames `frames` yields next, while they have `plan`'s length
/// and fit in `room` slots, at the cursors `dst` (data) and `desc`
/// (descriptors), which it advances; returns how many it wrote and why it
/// stopped. A frame is taken from `frames` only when there is room for it.
///
/// # Safety
/// The `room` slots from `dst`/`desc` are free, the producer's, and end
/// before the end of the data area; `plan` is the plan of a valid length,
/// and `HOW` suits it (see [`copy_as`]); no frame overlaps the slots.
#[inline(always)]
unsafe fn stream_like<'f, I: Iterator<Item = &'f [u8]>, const HOW: u8>(
    frames: &mut I,
    dst: &mut *mut u8,
    desc: &mut *const SlotDesc,
    plan: &LenPlan,
    room: u64,
) -> (u64, StreamEnd<'f>) {
    let (mut at, mut at_desc) = (*dst, *desc);
    let (mut k, mut left) = (0, room);
    let end = loop {
        if plan.slots > left {
            break StreamEnd::Room;
        }
        match frames.next() {
            Some(next) if next.len() == plan.len => {
                // SAFETY: the next `plan.slots` of the caller's free slots
                // before the end of the data area; `next` is the caller's
                // memory, of the planned length.
                unsafe {
                    copy_as::<HOW>(at, next.as_ptr(), plan.len);
                    put_desc(&*at_desc, plan.word);
                }
                // Wrapping: past the last free slot the cursors are not
                // dereferenced.
                at = at.wrapping_add(plan.stride);
                at_desc = at_desc.wrapping_add(plan.slots as usize);
                left -= plan.slots;
                k += 1;
            }
            Some(next) => break StreamEnd::Other(next),
            None => break StreamEnd::Done,
        }
    };
    (*dst, *desc) = (at, at_desc);
    (k, end)
}

/// Stores `word` in `desc` unless it holds that word already.
///
/// A stream of one frame size finds every descriptor holding its word from
/// the lap before, so the descriptor lines stay shared between the two
/// cores instead of moving to the producer and back every lap: a store
/// would first take the line from the consumer's cache. (Measured: 64-byte
/// frames between vCPUs ~215 ns apart, 31 against 40 Mfps, the latter as
/// fast as rtrb.) The value read is only compared: whatever the peer wrote
/// there, the descriptor ends up holding `word`.
#[inline(always)]
fn put_desc(desc: &SlotDesc, word: u32) {
    // Relaxed, both: published by the producer's next Release store of
    // `head`.
    if desc.0.load(Ordering::Relaxed) != word {
        desc.0.store(word, Ordering::Relaxed);
    }
}

/// One-slot frames' descriptors checked together, by [`all_hold`].
const DESC_GROUP: usize = 8;

/// Whether the [`DESC_GROUP`] descriptors from `descs` all hold `word`:
/// one load of each and one test for the group.
///
/// # Safety
/// The `DESC_GROUP` descriptors from `descs` are within the descriptor
/// array.
#[inline(always)]
unsafe fn all_hold(descs: *const SlotDesc, word: u32) -> bool {
    const { assert!(DESC_GROUP == 8) };
    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    // SAFETY: the two fours of descriptors are the caller's eight; the rest
    // is SSE2 (x86_64 baseline) on registers.
    unsafe {
        use core::arch::x86_64::{
            _mm_and_si128, _mm_cmpeq_epi32, _mm_movemask_epi8, _mm_set1_epi32,
        };
        let want = _mm_set1_epi32(word as i32);
        let same = _mm_and_si128(
            _mm_cmpeq_epi32(load_four(descs), want),
            _mm_cmpeq_epi32(load_four(descs.add(4)), want),
        );
        _mm_movemask_epi8(same) == 0xffff
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
    // SAFETY: the caller's.
    unsafe {
        each_holds(descs, DESC_GROUP, word)
    }
}

/// Whether the four descriptors from `descs` all hold `word`, as
/// [`all_hold`] for eight.
///
/// # Safety
/// The four descriptors from `descs` are within the descriptor array.
#[inline(always)]
unsafe fn four_hold(descs: *const SlotDesc, word: u32) -> bool {
    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    // SAFETY: the four descriptors are the caller's; the rest is SSE2
    // (x86_64 baseline) on registers.
    unsafe {
        use core::arch::x86_64::{_mm_cmpeq_epi32, _mm_movemask_epi8, _mm_set1_epi32};
        _mm_movemask_epi8(_mm_cmpeq_epi32(
            load_four(descs),
            _mm_set1_epi32(word as i32),
        )) == 0xffff
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
    // SAFETY: the caller's.
    unsafe {
        each_holds(descs, 4, word)
    }
}

/// [`all_hold`] and [`four_hold`] with one atomic load of each of the
/// `count` descriptors from `descs` (under loom and Miri, and on other
/// targets).
///
/// # Safety
/// The `count` descriptors from `descs` are within the descriptor array.
#[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
#[inline(always)]
unsafe fn each_holds(descs: *const SlotDesc, count: usize, word: u32) -> bool {
    // Relaxed: the values are only compared. The consumer's loads are
    // ordered after its Acquire load of `head`; the producer compares its
    // own earlier stores.
    let differs = (0..count).fold(0, |acc, i| {
        // SAFETY: `i < count`: one of the caller's descriptors.
        let desc = unsafe { &*descs.add(i) };
        acc | (desc.0.load(Ordering::Relaxed) ^ word)
    });
    differs == 0
}

/// Four descriptors from `descs` in one 16-byte load: for eight, 7
/// instructions to load and compare them instead of 24.
///
/// In `asm!`, because the peer may store to these words at any time: the
/// compiler must not assume them unchanged, as it may for a plain load.
/// Whatever the peer did (a torn or changing value included), a word that
/// differs from the one compared only fails the group's test, and one that
/// equals it is that word: a word already validated. Ordered as the
/// Relaxed loads it stands for: after the consumer's Acquire load of
/// `head`, or after the producer's own earlier stores.
///
/// # Safety
/// The four descriptors from `descs` are within the descriptor array.
#[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
#[inline(always)]
unsafe fn load_four(descs: *const SlotDesc) -> core::arch::x86_64::__m128i {
    let four;
    // SAFETY: 16 readable bytes at `descs` (the caller's); the load writes
    // only `four`.
    unsafe {
        core::arch::asm!(
            "movdqu {four}, [{p}]",
            p = in(reg) descs,
            four = out(xmm_reg) four,
            options(nostack, preserves_flags, readonly),
        );
    }
    four
}

/// [`put_desc`] for `count` frames whose first descriptors lie `step`
/// entries apart from `descs`. One-slot frames go a group at a time: a
/// group whose descriptors all hold `word` already (a stream of one size,
/// from the lap before) costs its loads and one test.
///
/// # Safety
/// The `count` descriptors are within the descriptor array.
#[inline(always)]
unsafe fn put_descs(descs: *const SlotDesc, count: usize, step: usize, word: u32) {
    // SAFETY: called for `j < count` only: one of the caller's descriptors.
    let desc = |j: usize| unsafe { &*descs.add(j * step) };
    let mut j = 0;
    if step == 1 {
        while j + DESC_GROUP <= count {
            // SAFETY: `j + DESC_GROUP <= count`: the caller's descriptors.
            if !unsafe { all_hold(descs.add(j), word) } {
                (0..DESC_GROUP).for_each(|i| put_desc(desc(j + i), word));
            }
            j += DESC_GROUP;
        }
    }
    for j in j..count {
        put_desc(desc(j), word);
    }
}

/// Slots reserved for writing by [`Producer::write_chunk`]. Frames pushed
/// become visible to the consumer at [`commit`](WriteChunk::commit);
/// dropping the chunk discards them.
pub struct WriteChunk<'p, S: RingStorage> {
    producer: &'p mut Producer<S>,
    /// The producer's shape, copied once per chunk: a local copy stays in
    /// registers across pushes, where the producer's, behind a pointer,
    /// would be reloaded after every store into the ring.
    shape: Shape,
    /// From the producer's head: where the chunk's frames go.
    run: Run,
    reserved: u64,
    used: u64,
    frames: usize,
    bytes: u64,
}

impl<S: RingStorage> WriteChunk<'_, S> {
    /// Slots still free in this chunk.
    pub fn free_slots(&self) -> usize {
        (self.reserved - self.used) as usize
    }

    /// Frames pushed so far.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// Whether a frame of `len` bytes can be pushed now: a valid length
    /// (1 to the maximum frame length) that fits in what is left.
    #[inline]
    pub fn fits(&self, len: usize) -> bool {
        self.check_len(len).is_ok()
    }

    /// The slots a frame of `len` bytes needs, if it can be pushed now.
    #[inline]
    fn check_len(&self, len: usize) -> Result<u64, PushError> {
        let shape = &self.shape;
        let slots = shape.slots_for(len);
        if len.wrapping_sub(1) < shape.max_frame && slots <= self.reserved - self.used {
            Ok(slots)
        } else {
            Err(self.refusal(len))
        }
    }

    /// Why a frame of `len` bytes cannot be pushed now.
    #[cold]
    fn refusal(&self, len: usize) -> PushError {
        self.shape.bad_length(len).unwrap_or(PushError::Full)
    }

    /// Copies `frame` into the next slot(s).
    ///
    /// # Errors
    /// [`PushError`] says why; nothing was written.
    #[inline(always)]
    pub fn push(&mut self, frame: &[u8]) -> Result<(), PushError> {
        let len = frame.len();
        let shape = &self.shape;
        let slots = shape.slots_for(len);
        // Fast path: a valid frame that fits is one copy (two when it wraps
        // around the end of the ring) and one descriptor store.
        if len.wrapping_sub(1) < shape.max_frame && slots <= self.reserved - self.used {
            model_write(
                &self.producer.storage,
                self.run.start.wrapping_add(self.used),
                slots,
            );
            // SAFETY: a valid length, the caller's memory, and slots of our
            // reservation.
            unsafe { shape.write_in_run(&self.run, self.used, slots, frame) };
            self.used += slots;
            self.frames += 1;
            self.bytes += len as u64;
            return Ok(());
        }
        Err(self.refusal(len))
    }

    /// Reserves the next slot(s) for a frame of `len` bytes and lets `fill`
    /// write it in place through a [`FrameWriter`]. Bytes `fill` leaves
    /// unwritten keep whatever the slot held before.
    ///
    /// # Errors
    /// [`PushError`] says why; `fill` is not called.
    #[inline]
    pub fn push_with<F>(&mut self, len: usize, fill: F) -> Result<(), PushError>
    where
        F: FnOnce(&mut FrameWriter<'_>),
    {
        let slots = self.check_len(len)?;
        let (shape, run, used) = (&self.shape, &self.run, self.used);
        // As `Shape::write_in_run`: at a fixed offset from the run's base
        // unless the frame wraps.
        let (head, head_len, desc) = if used + slots <= run.to_end {
            // SAFETY: the frame's slots lie before the end of the data area,
            // `used` slots into the run.
            unsafe {
                (
                    run.base.add((used as usize) << shape.slot_shift),
                    len,
                    Shape::desc_in_run(run, used),
                )
            }
        } else {
            let index = run.start.wrapping_add(used);
            let (head, head_len) = shape.span(index, len);
            (head, head_len, shape.desc(index))
        };
        model_write(&self.producer.storage, run.start.wrapping_add(used), slots);
        let mut writer = FrameWriter::new(head, head_len, shape.data, len);
        fill(&mut writer);
        shape.store_desc(desc, len);
        self.used += slots;
        self.frames += 1;
        self.bytes += len as u64;
        Ok(())
    }

    /// Pushes up to `count` frames of `len` bytes each, as many as the
    /// chunk has room for, letting `fill` write each in place: `fill(i, w)`
    /// for the run's `i`th frame. Returns how many were pushed. For a batch
    /// of one frame size this costs a few instructions a frame on top of
    /// `fill`: the length is checked once, the descriptors are written
    /// together, and the frames are laid out at a fixed stride. Bytes
    /// `fill` leaves unwritten keep whatever the slot held before.
    ///
    /// ```
    /// use vecring_core::{heap_channel, Geometry};
    ///
    /// let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(64, 128, 1024).unwrap());
    /// let mut chunk = tx.write_chunk(64).unwrap();
    /// let pushed = chunk
    ///     .push_run(200, 40, |i, w| {
    ///         for seg in w.segments_mut() {
    ///             seg.fill(i as u8);
    ///         }
    ///     })
    ///     .unwrap();
    /// assert_eq!(pushed, 32); // 200 bytes take two slots; 64 slots reserved
    /// assert_eq!(chunk.commit(), 32);
    /// assert_eq!(rx.ready_slots(), Ok(64));
    /// ```
    ///
    /// # Errors
    /// [`PushError`] if `len` is not a valid length, or no frame of it
    /// fits ([`PushError::Full`]); `fill` is not called.
    pub fn push_run<F>(&mut self, len: usize, count: usize, mut fill: F) -> Result<usize, PushError>
    where
        F: FnMut(usize, &mut FrameWriter<'_>),
    {
        let slots = self.check_len(len)?;
        let shape = self.shape;
        // Frames of one slot, the common small-frame case, skip the
        // divisions (two per call, ~20 cycles, for 32 frames of ~60
        // instructions each).
        let per_frame = |n: u64| if slots == 1 { n } else { n / slots };
        let n = per_frame(self.reserved - self.used).min(count as u64) as usize;
        let word = SlotDesc::pack(len as u16, shape.flags_for(len));
        let stride = (slots as usize) << shape.slot_shift;
        let mut done = 0;
        while done < n {
            let index = self.run.start.wrapping_add(self.used);
            let slot = shape.slot(index);
            let to_end = u64::from(shape.slot_count) - slot as u64;
            // The frames left that lie wholly before the end of the data
            // area.
            let k = (per_frame(to_end) as usize).min(n - done);
            // From the array's pointer (see `Shape::run_from`).
            // SAFETY: the masked slot is below `slot_count`; the `k`
            // frames' slots lie before the end of the data area, and are
            // ours (`n` frames fit the reservation).
            let (descs, base) = unsafe { (shape.descs.add(slot), shape.slot_ptr(index)) };
            model_write(&self.producer.storage, index, k as u64 * slots);
            // SAFETY: as above: the `k` frames' first descriptors.
            unsafe { put_descs(descs, k, slots as usize, word) };
            for j in 0..k {
                // Inside the data area: frame `j` lies before its end.
                let head = base.wrapping_add(j * stride);
                let mut writer = FrameWriter::new(head, len, shape.data, len);
                fill(done + j, &mut writer);
            }
            self.used += k as u64 * slots;
            done += k;
            if done < n && to_end != k as u64 * slots {
                // Frames remain, so the `k` filled the slots before the end
                // but for a part of a frame: the next frame wraps around.
                let index = self.run.start.wrapping_add(self.used);
                let (head, head_len) = shape.span(index, len);
                model_write(&self.producer.storage, index, slots);
                put_desc(shape.desc(index), word);
                let mut writer = FrameWriter::new(head, head_len, shape.data, len);
                fill(done, &mut writer);
                self.used += slots;
                done += 1;
            }
        }
        self.frames += n;
        self.bytes += (n * len) as u64;
        Ok(n)
    }

    /// Publishes every frame pushed, with one index store. Returns how many.
    pub fn commit(self) -> usize {
        if self.used > 0 {
            let head = self.run.start.wrapping_add(self.used);
            self.producer.publish(head, self.frames, self.bytes);
        }
        self.frames
    }
}

/// Writes one frame into its reserved slot(s); see [`WriteChunk::push_with`].
///
/// The frame's bytes are contiguous, unless its slots wrap around the end of
/// the ring: then they come in two [segments](FrameWriter::segments_mut).
pub struct FrameWriter<'c> {
    /// The frame's first byte.
    head: *mut u8,
    /// Bytes before the end of the data area.
    head_len: usize,
    /// The start of the data area, where a wrapped frame continues.
    wrap: *mut u8,
    len: usize,
    written: usize,
    _ring: PhantomData<&'c mut [u8]>,
}

impl FrameWriter<'_> {
    /// The writer of a frame of `len` bytes: `head_len` of them at `head`,
    /// the rest at `wrap` (the start of the data area).
    #[inline(always)]
    fn new(head: *mut u8, head_len: usize, wrap: *mut u8, len: usize) -> Self {
        FrameWriter {
            head,
            head_len,
            wrap,
            len,
            written: 0,
            _ring: PhantomData,
        }
    }

    /// The frame's length.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: frames carry at least one byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `bytes` after what was appended before; returns how many fit.
    pub fn append(&mut self, bytes: &[u8]) -> usize {
        let n = bytes.len().min(self.len - self.written);
        let at = self.written;
        // Bytes `at..at + n` of the frame: some in the head part, the rest
        // in the wrapped part.
        let in_head = self.head_len.saturating_sub(at).min(n);
        // SAFETY: the head part holds `head_len` bytes and the wrapped part
        // `len - head_len`, both inside the data area and reserved for this
        // producer (see `push_with`); `at + n <= len`, and `head + at` is
        // formed only while `at < head_len`. `bytes` cannot overlap slots
        // reserved for writing.
        unsafe {
            if in_head > 0 {
                ptr::copy_nonoverlapping(bytes.as_ptr(), self.head.add(at), in_head);
            }
            if in_head < n {
                let wrapped_at = at + in_head - self.head_len;
                ptr::copy_nonoverlapping(
                    bytes.as_ptr().add(in_head),
                    self.wrap.add(wrapped_at),
                    n - in_head,
                );
            }
        }
        self.written += n;
        n
    }

    /// The frame's bytes as one mutable slice, to be written in place,
    /// unless the frame wraps around the end of the ring (then use
    /// [`segments_mut`](Self::segments_mut)).
    #[inline]
    pub fn contiguous_mut(&mut self) -> Option<&mut [u8]> {
        (self.head_len == self.len).then(|| {
            self.written = self.len;
            // SAFETY: the frame's `len` bytes from `head` lie inside the data
            // area and are reserved for this producer until commit.
            unsafe { core::slice::from_raw_parts_mut(self.head, self.len) }
        })
    }

    /// The frame's bytes as mutable slices, to be written in place: one,
    /// or two when the frame wraps around the end of the ring.
    pub fn segments_mut(&mut self) -> impl Iterator<Item = &mut [u8]> + '_ {
        self.written = self.len;
        let (head_len, tail_len) = (self.head_len, self.len - self.head_len);
        // SAFETY: the two parts lie inside the data area, are reserved for
        // this producer until commit, and do not overlap (the frame is
        // shorter than the ring).
        let parts = unsafe {
            [
                core::slice::from_raw_parts_mut(self.head, head_len),
                core::slice::from_raw_parts_mut(self.wrap, tail_len),
            ]
        };
        parts.into_iter().filter(|p| !p.is_empty())
    }
}

impl<S: RingStorage> Consumer<S> {
    /// The consumer of the ring in `storage`, starting at the shared tail.
    ///
    /// # Safety
    /// At most one `Consumer` may exist for a ring in this process at a time.
    pub unsafe fn attach(storage: S) -> Result<Self, Corruption> {
        let shape = Shape::of(&storage);
        let ctl = storage.control();
        let tail = ctl.tail.index.load(Ordering::Relaxed);
        // Acquire: pairs with the producer's Release store of `head` in
        // `Producer::publish`, as in `refresh_head`.
        let head = ctl.head.index.load(Ordering::Acquire);
        if head.wrapping_sub(tail) > u64::from(shape.slot_count) {
            return Err(Corruption::Index {
                kind: IndexKind::Head,
                old: tail,
                new: head,
                slot_count: shape.slot_count,
            });
        }
        Ok(Consumer {
            storage,
            shape,
            tail,
            released: tail,
            cached_head: head,
            poisoned: None,
            seen: SeenDesc::NONE,
            stats: EndpointStats::default(),
            hold_below: 0,
            hold_wait: Duration::ZERO,
            held_since: None,
        })
    }

    /// Sets (or, with `None`, turns off) the hold-back of the batch reads;
    /// see [`HoldBack`]. Off by default.
    ///
    /// ```
    /// use vecring_core::{heap_channel, Geometry, HoldBack};
    ///
    /// let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(256, 64, 1514).unwrap());
    /// rx.set_hold_back(Some(HoldBack::STREAMING));
    /// let (mut bufs, mut lens) = (vec![[0u8; 64]; 32], [0usize; 32]);
    ///
    /// // One frame alone is read at once.
    /// tx.send(&[7; 64]).unwrap();
    /// assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(1));
    ///
    /// // A few frames may be held back for up to 250 ns: poll again.
    /// for _ in 0..5 {
    ///     tx.send(&[8; 64]).unwrap();
    /// }
    /// let mut got = 0;
    /// while got == 0 {
    ///     got = rx.recv_batch(&mut bufs, &mut lens).unwrap();
    /// }
    /// assert_eq!(got, 5);
    /// ```
    pub fn set_hold_back(&mut self, hold: Option<HoldBack>) {
        (self.hold_below, self.hold_wait) = match hold {
            Some(h) => (u64::from(h.below_slots), h.wait),
            None => (0, Duration::ZERO),
        };
        self.held_since = None;
    }

    /// The hold-back in force, if any.
    pub fn hold_back(&self) -> Option<HoldBack> {
        (self.hold_below > 0).then_some(HoldBack {
            below_slots: self.hold_below as u32,
            wait: self.hold_wait,
        })
    }

    /// Whether a batch read now should find nothing (see [`HoldBack`]).
    #[inline(always)]
    fn holding(&mut self) -> bool {
        self.hold_below > 0 && self.holding_slow()
    }

    #[inline(never)]
    fn holding_slow(&mut self) -> bool {
        let ready = self.cached_head.wrapping_sub(self.tail);
        // Frames of more than one slot (as far as the last one seen tells;
        // `NONE` before the first), one frame alone, or plenty: read now.
        // (Holding back 1514-byte frames cost the `vecring` tool's copying
        // receiver a tenth of its rate.)
        if self.seen.slots != 1 || ready <= 1 || ready >= self.hold_below {
            self.held_since = None;
            return false;
        }
        if self.held_since.is_none() {
            // The rest of an earlier look at the producer's index: look
            // again, once, before holding back (a consumer far behind must
            // not wait on its leftovers). Not while holding back: reading
            // the index the producer is about to write again took half
            // the gain.
            if self.refresh_head().is_err() {
                // Poisoned: the next call reports it.
                return false;
            }
            if self.cached_head.wrapping_sub(self.tail) >= self.hold_below {
                return false;
            }
        }
        let now = Instant::now();
        let since = *self.held_since.get_or_insert(now);
        if now.duration_since(since) >= self.hold_wait {
            self.held_since = None;
            return false;
        }
        true
    }

    /// The ring's geometry.
    pub fn geometry(&self) -> Geometry {
        self.storage.geometry()
    }

    /// Counters of this endpoint.
    pub fn stats(&self) -> EndpointStats {
        self.stats
    }

    /// The corruption that poisoned this endpoint, if any.
    pub fn corruption(&self) -> Option<Corruption> {
        self.poisoned
    }

    fn poison(&mut self, c: Corruption) -> Corruption {
        if self.poisoned.is_none() {
            log::error!("vecring: consumer stops: {c}");
            self.stats.corruptions += 1;
            self.poisoned = Some(c);
        }
        c
    }

    /// Reads the producer's index once and checks it moved forward, to at
    /// most a full ring ahead of us.
    fn refresh_head(&mut self) -> Result<(), Corruption> {
        // Nothing is prefetched here: the next frame's lines are the ones
        // the producer is writing while we poll, and fetching them on every
        // poll pulls them away from it mid-write. (It did hide one miss of
        // a ping-pong's latency, but cost the link a fifth of its 64-byte
        // throughput whenever the consumer kept up with the producer.)
        // Acquire: pairs with the producer's Release store of `head` in
        // `Producer::publish`, making the slots and descriptors visible.
        let head = self.storage.control().head.index.load(Ordering::Acquire);
        let ready = head.wrapping_sub(self.released);
        let known = self.cached_head.wrapping_sub(self.released);
        if ready > u64::from(self.shape.slot_count) || ready < known {
            return Err(self.head_corrupt(head));
        }
        self.cached_head = head;
        Ok(())
    }

    /// Poisons the consumer for the invalid producer index `head`: out of
    /// line, so that the refresh stays small enough to inline.
    #[cold]
    #[inline(never)]
    fn head_corrupt(&mut self, head: u64) -> Corruption {
        self.poison(Corruption::Index {
            kind: IndexKind::Head,
            old: self.cached_head,
            new: head,
            slot_count: self.shape.slot_count,
        })
    }

    /// Slots published and not yet read, refreshing the producer's index if
    /// none are known.
    #[inline]
    pub fn ready_slots(&mut self) -> Result<usize, Corruption> {
        if let Some(c) = self.poisoned {
            return Err(c);
        }
        if self.cached_head == self.tail {
            self.refresh_head()?;
        }
        Ok(self.cached_head.wrapping_sub(self.tail) as usize)
    }

    /// Publishes `index` as our tail: slots before it go back to the
    /// producer.
    fn publish_release(&mut self, index: u64) {
        self.released = index;
        // Release: pairs with the producer's Acquire load of `tail` in
        // `Producer::refresh_tail` (and `Producer::attach`,
        // `Producer::unread_frames`); our reads of the slots happen before
        // the producer may reuse them.
        self.storage
            .control()
            .tail
            .index
            .store(index, Ordering::Release);
    }

    /// Releases the slots of kept frames up to (not including) slot
    /// `index`, which must lie between the last release and the read
    /// position; returns false (and does nothing) otherwise.
    pub fn release_to(&mut self, index: u64) -> bool {
        let ahead = index.wrapping_sub(self.released);
        if ahead == 0 || ahead > self.tail.wrapping_sub(self.released) {
            return false;
        }
        self.publish_release(index);
        true
    }

    /// The index of the next slot to read.
    pub fn read_position(&self) -> u64 {
        self.tail
    }

    /// The index up to which slots have been released to the producer.
    pub fn released_position(&self) -> u64 {
        self.released
    }

    /// The ring's storage (e.g. to keep a shared region mapped).
    pub fn storage(&self) -> &S {
        &self.storage
    }

    /// Up to `max_frames` ready frames, to be read in place. Frames returned
    /// by [`ReadChunk::next_frame`] are released when the chunk is dropped
    /// (or [`released`](ReadChunk::release)). Empty while frames are held
    /// back ([`set_hold_back`](Self::set_hold_back)).
    ///
    /// # Errors
    /// [`Corruption`] if the peer corrupted the ring (now or before).
    #[inline]
    pub fn read_chunk(&mut self, max_frames: usize) -> Result<ReadChunk<'_, S>, Corruption> {
        self.ready_slots()?;
        // Held back: an empty chunk.
        let end = if self.holding() {
            self.tail
        } else {
            self.cached_head
        };
        Ok(ReadChunk {
            shape: self.shape,
            pos: self.tail,
            end,
            max_frames,
            frames_left: max_frames,
            bytes: 0,
            keep: false,
            seen: self.seen,
            run_left: 0,
            run_head: ptr::null(),
            run_head_len: 0,
            run_stride: 0,
            consumer: self,
        })
    }

    /// Copies the next frame into `buf` and returns its length.
    ///
    /// # Errors
    /// [`RecvError::Empty`] when no frame waits,
    /// [`RecvError::BufferTooSmall`] when it does not fit (it stays queued),
    /// [`RecvError::Corrupt`] if the peer corrupted the ring.
    pub fn recv(&mut self, buf: &mut [u8]) -> Result<usize, RecvError> {
        // The common case without a chunk (whose set-up and spills doubled
        // a ping-pong's instructions): the next frame's descriptor holds
        // the word validated last, and the frame lies in published slots
        // before the end of the data area and fits `buf`. Otherwise the
        // chunk path reads the descriptor again and checks it in full.
        if self.poisoned.is_none() {
            if self.cached_head == self.tail {
                self.refresh_head()?;
                if self.cached_head == self.tail {
                    return Err(RecvError::Empty);
                }
            }
            let shape = self.shape;
            let ready = self.cached_head.wrapping_sub(self.tail);
            // Relaxed: the Acquire load of `head` that covered this slot
            // made the descriptor visible.
            let word = shape.desc(self.tail).0.load(Ordering::Relaxed);
            let seen = self.seen;
            if word == seen.word
                && seen.slots <= ready
                && seen.len <= buf.len()
                && shape.slot(self.tail) as u64 + seen.slots <= u64::from(shape.slot_count)
            {
                model_read(&self.storage, self.tail, seen.slots);
                // SAFETY: the frame's `seen.len` bytes lie in published
                // slots from `tail` on, before the end of the data area, and
                // `buf` has room for them.
                unsafe { copy_bytes(buf.as_mut_ptr(), shape.slot_ptr(self.tail), seen.len) };
                self.tail = self.tail.wrapping_add(seen.slots);
                self.stats.frames += 1;
                self.stats.bytes += seen.len as u64;
                self.publish_release(self.tail);
                return Ok(seen.len);
            }
        }
        self.recv_slow(buf)
    }

    /// [`recv`](Self::recv) through a chunk: a new descriptor (checked in
    /// full), a wrapping frame, a small buffer or a poisoned ring.
    #[inline(never)]
    fn recv_slow(&mut self, buf: &mut [u8]) -> Result<usize, RecvError> {
        let mut chunk = self.read_chunk(1)?;
        let (frame, next) = match chunk.peek()? {
            Some(found) => found,
            None => return Err(RecvError::Empty),
        };
        if frame.len() > buf.len() {
            return Err(RecvError::BufferTooSmall {
                needed: frame.len(),
            });
        }
        let n = frame.copy_to(buf);
        chunk.advance(next);
        Ok(n)
    }

    /// Copies up to `bufs.len()` frames, frame `i` into `bufs[i]` with its
    /// length in `lens[i]`, releasing them with one index store. Stops early
    /// at a frame that does not fit its buffer (it stays queued).
    ///
    /// # Errors
    /// [`RecvError::BufferTooSmall`] if the first frame does not fit,
    /// [`RecvError::Corrupt`] if the ring is corrupt before the first frame.
    /// Returns `Ok(0)` when no frame waits or frames are held back
    /// ([`set_hold_back`](Self::set_hold_back)).
    pub fn recv_batch<B: AsMut<[u8]>>(
        &mut self,
        bufs: &mut [B],
        lens: &mut [usize],
    ) -> Result<usize, RecvError> {
        // The loop of `read_chunk` + `next_frame` + `copy_to`, flattened:
        // offsets, totals and the last descriptor seen stay in registers,
        // and frames before the end of the data area (all but at most one
        // per lap) are copied from a fixed base.
        let max = bufs.len().min(lens.len());
        self.ready_slots()?;
        if self.holding() {
            return Ok(0);
        }
        let shape = self.shape;
        let start = self.tail;
        let avail = self.cached_head.wrapping_sub(start);
        let run = shape.run_from(start);
        let mut seen = self.seen;
        let (mut off, mut n, mut bytes) = (0u64, 0usize, 0u64);
        // Up to here from `start`, a group of four single-slot frames needs
        // no wrap or published-slots check of its own.
        let group_end = avail.min(run.to_end).saturating_sub(RUN as u64 - 1);
        while n < max && off < avail {
            if seen.slots == 1 && (32..=64).contains(&seen.len) && off < group_end {
                // As many groups as fit before `group_end` and in `bufs`.
                let groups = (group_end - off)
                    .div_ceil(RUN as u64)
                    .min(((max - n) / RUN) as u64) as usize;
                let end = n + groups * RUN;
                // SAFETY: `seen` is a one-slot frame of 32 to 64 bytes
                // (tested above); the groups end before `group_end + RUN -
                // 1`, i.e. before both the published head and the end of
                // the data area.
                let copied = unsafe {
                    shape.copy_groups(&run, off, &seen, &mut bufs[n..end], &mut lens[n..end])
                };
                model_read(&self.storage, start.wrapping_add(off), copied as u64);
                n += copied;
                off += copied as u64;
                bytes += (copied * seen.len) as u64;
                if n == max || off == avail {
                    break;
                }
                // Otherwise the paths below take the next frame: not like
                // `seen`, or a buffer too small for it.
            }
            // SAFETY: `off < avail`, and `avail` slots from `start` are
            // published.
            let copied = unsafe {
                shape.copy_like_seen(
                    &run,
                    off,
                    avail.min(run.to_end),
                    &seen,
                    &mut bufs[n..max],
                    &mut lens[n..max],
                )
            };
            if copied > 0 {
                model_read(
                    &self.storage,
                    start.wrapping_add(off),
                    copied as u64 * seen.slots,
                );
                n += copied;
                off += copied as u64 * seen.slots;
                bytes += (copied * seen.len) as u64;
                if n == max || off == avail {
                    break;
                }
            }
            let pos = start.wrapping_add(off);
            let ready = avail - off;
            // Relaxed: ordered after the Acquire load of `head` that
            // produced `avail`; read once, checked, then used.
            let word = shape.desc(pos).0.load(Ordering::Relaxed);
            let checked = match shape.frame_of(word, ready, &mut seen) {
                Some(frame) => Ok(frame),
                None => shape.diagnose(pos, word, ready),
            };
            let (len, slots) = match checked {
                Ok(frame) => frame,
                Err(c) => {
                    let c = self.poison(c);
                    if n == 0 {
                        return Err(c.into());
                    }
                    break;
                }
            };
            let buf = bufs[n].as_mut();
            if len > buf.len() {
                if n == 0 {
                    return Err(RecvError::BufferTooSmall { needed: len });
                }
                break;
            }
            model_read(&self.storage, start.wrapping_add(off), slots);
            // SAFETY: a validated frame of `len` bytes in `slots` slots;
            // `buf` has room for them (checked above).
            unsafe { shape.read_in_run(&run, off, slots, len, buf) };
            lens[n] = len;
            n += 1;
            bytes += len as u64;
            off += slots;
        }
        self.seen = seen;
        if n > 0 {
            let pos = start.wrapping_add(off);
            self.tail = pos;
            self.stats.frames += n as u64;
            self.stats.bytes += bytes;
            self.publish_release(pos);
        }
        Ok(n)
    }
}

/// Ready frames obtained with [`Consumer::read_chunk`], read in place.
/// Frames handed out are released when the chunk is dropped.
pub struct ReadChunk<'c, S: RingStorage> {
    consumer: &'c mut Consumer<S>,
    /// The consumer's shape, copied once per chunk (see
    /// [`WriteChunk`]'s).
    shape: Shape,
    /// Next slot to examine.
    pos: u64,
    /// The producer's head as validated when the chunk was made.
    end: u64,
    /// The chunk's frame budget.
    max_frames: usize,
    /// Frames of the budget not yet validated (not yet in a run).
    frames_left: usize,
    /// Bytes of the frames validated so far (handed out, or in the run).
    bytes: u64,
    /// Set by [`ReadChunk::keep`]: do not release on drop.
    keep: bool,
    /// The consumer's last validated descriptor, kept here for the chunk's
    /// life (in a register, not behind the consumer pointer) and handed
    /// back on drop. The frames of the current run are frames like it.
    seen: SeenDesc,
    /// Frames from `pos` validated already: a run of frames with the same
    /// descriptor, one after another in the data area (see
    /// [`ReadChunk::start_run`]). Handing one out costs no descriptor load.
    run_left: u64,
    /// The first byte of the frame at `pos`, while `run_left > 0`.
    run_head: *const u8,
    /// Its bytes before the end of the data area (its length, unless it
    /// wraps; a frame that wraps is a run of its own).
    run_head_len: usize,
    /// Bytes from one frame of the run to the next.
    run_stride: usize,
}

impl<S: RingStorage> ReadChunk<'_, S> {
    /// The storage the chunk's frames live in (e.g. to tell which shared
    /// region, and so which link generation, they belong to).
    pub fn storage(&self) -> &S {
        &self.consumer.storage
    }

    /// Slots in this chunk not yet handed out.
    pub fn ready_slots(&self) -> usize {
        self.end.wrapping_sub(self.pos) as usize
    }

    /// The frame at `pos`, validated, without consuming it. Inside a run
    /// (see [`start_run`](Self::start_run)) that costs no load and no
    /// check: a chunk's frames are checked a run at a time.
    #[inline(always)]
    fn peek(&mut self) -> Result<Option<(Frame<'_>, u64)>, Corruption> {
        if self.run_left == 0 && !self.start_run()? {
            return Ok(None);
        }
        // The lines of the frames after this one, published already.
        // (This frame's own line is not prefetched: its address is known
        // as early as the prefetch's would be.)
        self.shape
            .prefetch_ahead(self.pos, self.end.wrapping_sub(self.pos));
        let (pos, len, slots) = (self.pos, self.seen.len, self.seen.slots);
        model_read(&self.consumer.storage, pos, slots);
        let frame = Frame {
            head: self.run_head,
            head_len: self.run_head_len,
            wrap: self.shape.data,
            len,
            first: pos,
            slots,
            _chunk: PhantomData,
        };
        Ok(Some((frame, pos.wrapping_add(slots))))
    }

    /// Validates the frame at `pos` and counts the frames after it that
    /// have the same descriptor word, up to the chunk's frame budget, the
    /// published slots and the end of the data area: one comparison each
    /// (a group of eight one-slot frames' descriptors at once), and the
    /// run is handed out without looking at a descriptor again. `Ok(false)`
    /// at the end of the chunk.
    ///
    /// Only the first frame is decoded (when its word is not `seen`'s);
    /// the end of the chunk and every kind of corruption go to
    /// [`peek_slow`], which is handed values, not the chunk: a chunk
    /// whose address never escapes keeps its fields in registers.
    /// Corruption is reported at the frame it is in, never earlier: a
    /// differing descriptor only ends a run.
    #[inline(always)]
    fn start_run(&mut self) -> Result<bool, Corruption> {
        // A copy: its fields stay in registers.
        let (shape, pos) = (self.shape, self.pos);
        // No poisoned test on this path: a chunk is made only for a
        // healthy consumer, and `peek_slow`, the one place that poisons
        // it during the chunk, also ends the chunk.
        let ready = if self.frames_left == 0 {
            0
        } else {
            self.end.wrapping_sub(pos)
        };
        if ready != 0 {
            // Relaxed: ordered after the Acquire load of `head` that
            // produced `end`. The value is used only if it passes the
            // check; otherwise `peek_slow` loads and checks it afresh.
            let word = shape.desc(pos).0.load(Ordering::Relaxed);
            if let Some((len, slots)) = shape.frame_of(word, ready, &mut self.seen) {
                let (head, head_len) = shape.span(pos, len);
                let mut count = 1;
                if head_len == len {
                    // Slots from `pos` both published and before the end
                    // of the data area: at least this frame's.
                    let room = ready.min(u64::from(shape.slot_count) - (pos & shape.mask));
                    let fit = if slots == 1 { room } else { room / slots };
                    let limit = fit.min(self.frames_left as u64);
                    // Counted from this frame, whose descriptor is loaded
                    // again, so that a batch of one-slot frames goes in
                    // whole groups of eight. At least this frame, whatever
                    // the second load saw: the first validated it.
                    // SAFETY: frame `j` of the `limit` from this one starts
                    // `j * slots` slots from `pos`, all published and before
                    // the end of the descriptor array (`limit * slots <=
                    // room`).
                    count = unsafe { shape.count_like(pos, word, slots, limit) }.max(1);
                }
                // The run's frames and bytes are counted now (and what is
                // left of the run uncounted on drop): nothing per frame.
                self.frames_left -= count as usize;
                self.bytes += count * len as u64;
                self.run_left = count;
                self.run_head = head;
                self.run_head_len = head_len;
                self.run_stride = (slots as usize) << shape.slot_shift;
                return Ok(true);
            }
        }
        if ready == 0 && self.consumer.poisoned.is_none() {
            // The end of a healthy chunk.
            return Ok(false);
        }
        match peek_slow(self.consumer, shape, pos, ready) {
            Ok(Some(seen)) => {
                // Valid after all (the peer rewrote the descriptor between
                // the two loads): a run of one.
                let (head, head_len) = shape.span(pos, seen.len);
                self.seen = seen;
                self.frames_left -= 1;
                self.bytes += seen.len as u64;
                self.run_left = 1;
                self.run_head = head;
                self.run_head_len = head_len;
                self.run_stride = (seen.slots as usize) << shape.slot_shift;
                Ok(true)
            }
            Ok(None) => Ok(false),
            Err(c) => {
                // End the chunk: this path is the only one that tests for
                // poison.
                self.end = pos;
                Err(c)
            }
        }
    }

    /// Consumes the frame [`peek`](Self::peek) returned; `next` is the
    /// slot after it.
    #[inline(always)]
    fn advance(&mut self, next: u64) {
        self.pos = next;
        self.run_left -= 1;
        // Wrapping: past the run's last frame the pointer is not used.
        self.run_head = self.run_head.wrapping_add(self.run_stride);
    }

    /// The next ready frame, validated, or `None` when the chunk is used up.
    ///
    /// # Errors
    /// [`Corruption`] if its descriptor is invalid; the endpoint is then
    /// poisoned, and frames handed out before stay valid and are released.
    #[inline(always)]
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>, Corruption> {
        let (frame, next) = match self.peek()? {
            Some((frame, next)) => (frame.detach(), next),
            None => return Ok(None),
        };
        self.advance(next);
        Ok(Some(frame))
    }

    /// The next ready frames that share one length, handed out together:
    /// frames that follow one another in the ring with the same
    /// descriptor, validated as a group (one comparison each). Iterating
    /// the [`FrameRun`] costs a few instructions per frame, without
    /// returning to the chunk; the chunk moves past the whole run at once,
    /// so its frames count as read (and are released with the chunk)
    /// whether or not they are iterated. `None` when the chunk is used up.
    ///
    /// A run never spans the end of the data area; a frame that wraps
    /// around it is a run of its own (its bytes in two
    /// [segments](Frame::segments)).
    ///
    /// ```
    /// use vecring_core::{heap_channel, Geometry};
    ///
    /// let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(64, 128, 1024).unwrap());
    /// let big = [7u8; 100];
    /// let small = [1u8; 60];
    /// let frames = [&big[..], &big[..], &small[..], &big[..]];
    /// assert_eq!(tx.send_batch(frames), Ok(4));
    ///
    /// let mut chunk = rx.read_chunk(32).unwrap();
    /// let mut runs = Vec::new();
    /// while let Some(run) = chunk.next_run().unwrap() {
    ///     runs.push((run.frame_len(), run.len()));
    ///     for frame in run {
    ///         assert!(frame.contiguous().is_some());
    ///     }
    /// }
    /// assert_eq!(runs, [(100, 2), (60, 1), (100, 1)]);
    /// ```
    ///
    /// # Errors
    /// [`Corruption`] if the first frame's descriptor is invalid (as for
    /// [`next_frame`](Self::next_frame)); a descriptor that differs only
    /// ends the run, and is checked when it comes first.
    #[inline(always)]
    pub fn next_run(&mut self) -> Result<Option<FrameRun<'_>>, Corruption> {
        if self.run_left == 0 && !self.start_run()? {
            return Ok(None);
        }
        let (count, slots) = (self.run_left, self.seen.slots);
        model_read(&self.consumer.storage, self.pos, count * slots);
        let run = FrameRun {
            head: self.run_head,
            head_len: self.run_head_len,
            wrap: self.shape.data,
            len: self.seen.len,
            stride: self.run_stride,
            first: self.pos,
            slots,
            count,
            _chunk: PhantomData,
        };
        self.pos = self.pos.wrapping_add(count * slots);
        self.run_left = 0;
        Ok(Some(run))
    }

    /// Releases the frames handed out so far to the producer (also done on
    /// drop), and any frames kept before them.
    pub fn release(self) {}

    /// Ends the chunk *without* releasing its frames: the consumer moves
    /// past them, but their slots stay unavailable to the producer (and
    /// their bytes in place) until [`Consumer::release_to`] passes them,
    /// or a later normal release (a chunk dropped without `keep`,
    /// [`Consumer::recv`], [`Consumer::recv_batch`]) releases everything
    /// read so far. For handing slots to code that frees them later, such
    /// as DPDK mbufs attached to the slots.
    pub fn keep(mut self) {
        self.keep = true;
    }
}

impl<S: RingStorage> Drop for ReadChunk<'_, S> {
    fn drop(&mut self) {
        let c = &mut *self.consumer;
        c.seen = self.seen;
        if self.pos != c.tail {
            // Frames and bytes validated, less the rest of the run, which
            // was not handed out.
            let frames = self.max_frames - self.frames_left - self.run_left as usize;
            c.tail = self.pos;
            c.stats.frames += frames as u64;
            c.stats.bytes += self.bytes - self.run_left * self.seen.len as u64;
            if !self.keep {
                c.publish_release(self.pos);
            }
        }
    }
}

/// [`ReadChunk::start_run`] for the end of the chunk (`ready` is 0) and
/// every kind of corruption: the frame at `pos`, if valid after all, or
/// `None`. The descriptor is loaded once.
#[inline(never)]
fn peek_slow<S: RingStorage>(
    consumer: &mut Consumer<S>,
    shape: Shape,
    pos: u64,
    ready: u64,
) -> Result<Option<SeenDesc>, Corruption> {
    if let Some(c) = consumer.poisoned {
        return Err(c);
    }
    if ready == 0 {
        return Ok(None);
    }
    // Relaxed: ordered after the Acquire load of `head` that produced the
    // chunk's end; read exactly once.
    let word = shape.desc(pos).0.load(Ordering::Relaxed);
    match shape.diagnose(pos, word, ready) {
        Ok((len, slots)) => Ok(Some(SeenDesc { word, len, slots })),
        Err(c) => Err(consumer.poison(c)),
    }
}

/// Frames of one length that follow one another in the ring, from
/// [`ReadChunk::next_run`]: an iterator of [`Frame`]s, each of them
/// validated already.
pub struct FrameRun<'c> {
    /// The first frame's first byte.
    head: *const u8,
    /// The first frame's bytes before the end of the data area (`len`,
    /// unless the run is one frame that wraps).
    head_len: usize,
    /// The start of the data area.
    wrap: *const u8,
    /// Every frame's length.
    len: usize,
    /// Bytes from one frame to the next.
    stride: usize,
    /// Free-running index of the next frame's first slot.
    first: u64,
    /// Every frame's slots.
    slots: u64,
    /// Frames not yet iterated.
    count: u64,
    _chunk: PhantomData<&'c [u8]>,
}

impl<'c> FrameRun<'c> {
    /// Frames left in the run.
    #[inline]
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether every frame of the run was iterated.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The length in bytes of every frame in the run.
    #[inline]
    pub fn frame_len(&self) -> usize {
        self.len
    }

    /// The frames left in the run as `N`-byte arrays, when they are `N`
    /// bytes long and contiguous; otherwise the run back, untouched.
    ///
    /// For a stream of one frame size known at compile time this is the
    /// cheapest way to read in place: no per-frame length or wrap check
    /// (the run was checked once), and code that sees a fixed length. The
    /// run comes back (`Err`) when its frames have another length, or
    /// when it is the one frame of a lap that wraps around the end of the
    /// ring; read that one with [`Frame::segments`].
    ///
    /// ```
    /// use vecring_core::{heap_channel, Geometry};
    ///
    /// let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(64, 64, 1514).unwrap());
    /// for i in 0..5u8 {
    ///     tx.send(&[i; 60]).unwrap();
    /// }
    /// let mut chunk = rx.read_chunk(32).unwrap();
    /// let mut sum = 0u64;
    /// while let Some(run) = chunk.next_run().unwrap() {
    ///     match run.into_arrays::<60>() {
    ///         Ok(frames) => frames.for_each(|f| sum += u64::from(f[0])),
    ///         // Another length, or a frame that wraps: frame by frame.
    ///         Err(run) => run.for_each(|f| sum += u64::from(f.first_segment()[0])),
    ///     }
    /// }
    /// assert_eq!(sum, 0 + 1 + 2 + 3 + 4);
    /// ```
    #[inline]
    pub fn into_arrays<const N: usize>(self) -> Result<FrameArrays<'c, N>, Self> {
        // Only a run of one frame can wrap (`ReadChunk::start_run`), and
        // then `head_len < len`: a run of `len == head_len` lies wholly
        // before the end of the data area.
        if self.len != N || self.head_len != N {
            return Err(self);
        }
        Ok(FrameArrays {
            head: self.head,
            stride: self.stride,
            count: self.count as usize,
            _chunk: PhantomData,
        })
    }
}

/// The frames of a [`FrameRun`] as `&[u8; N]`, from
/// [`FrameRun::into_arrays`]: each frame's bytes in place, in order. As
/// with [`Frame`], a hostile peer may change the bytes while they are
/// read, never their length or location.
pub struct FrameArrays<'c, const N: usize> {
    /// The next frame's first byte.
    head: *const u8,
    /// Bytes from one frame to the next.
    stride: usize,
    /// Frames not yet iterated.
    count: usize,
    _chunk: PhantomData<&'c [u8]>,
}

impl<'c, const N: usize> Iterator for FrameArrays<'c, N> {
    type Item = &'c [u8; N];

    #[inline(always)]
    fn next(&mut self) -> Option<&'c [u8; N]> {
        if self.count == 0 {
            return None;
        }
        self.count -= 1;
        let head = self.head;
        // Wrapping: past the last frame the pointer is not used.
        self.head = self.head.wrapping_add(self.stride);
        // SAFETY: one of the run's validated frames, all `N` bytes long and
        // before the end of the data area (`into_arrays`); the slots are
        // the consumer's until the chunk, which `'c` borrows, releases
        // them. `[u8; N]` needs no alignment.
        Some(unsafe { &*head.cast::<[u8; N]>() })
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.count, Some(self.count))
    }
}

impl<const N: usize> ExactSizeIterator for FrameArrays<'_, N> {}

impl<'c> Iterator for FrameRun<'c> {
    type Item = Frame<'c>;

    #[inline(always)]
    fn next(&mut self) -> Option<Frame<'c>> {
        if self.count == 0 {
            return None;
        }
        let frame = Frame {
            head: self.head,
            head_len: self.head_len,
            wrap: self.wrap,
            len: self.len,
            first: self.first,
            slots: self.slots,
            _chunk: PhantomData,
        };
        self.count -= 1;
        // Wrapping: past the last frame the pointer is not used.
        self.head = self.head.wrapping_add(self.stride);
        self.first = self.first.wrapping_add(self.slots);
        Some(frame)
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.len(), Some(self.len()))
    }
}

impl ExactSizeIterator for FrameRun<'_> {}

/// One received frame, in place in the ring. Its bytes live in shared
/// memory: a hostile peer may change them while they are read, but never
/// their length or location.
///
/// The bytes are contiguous, unless the frame's slots wrap around the end of
/// the ring: then they come in two [segments](Frame::segments).
pub struct Frame<'c> {
    /// The frame's first byte.
    head: *const u8,
    /// Bytes before the end of the data area (`len` unless wrapped).
    head_len: usize,
    /// The start of the data area, where a wrapped frame continues.
    wrap: *const u8,
    len: usize,
    first: u64,
    slots: u64,
    _chunk: PhantomData<&'c [u8]>,
}

impl<'c> Frame<'c> {
    /// A frame of `len` bytes in the `slots` slots from free-running
    /// `first`, all published and validated by the caller.
    #[inline(always)]
    fn new(shape: &Shape, first: u64, len: usize, slots: u64) -> Self {
        let (head, head_len) = shape.span(first, len);
        Frame {
            head,
            head_len,
            wrap: shape.data,
            len,
            first,
            slots,
            _chunk: PhantomData,
        }
    }

    /// The same frame with another lifetime (to return it from a borrow of
    /// the chunk that `peek` made).
    #[inline(always)]
    fn detach<'d>(self) -> Frame<'d> {
        Frame {
            head: self.head,
            head_len: self.head_len,
            wrap: self.wrap,
            len: self.len,
            first: self.first,
            slots: self.slots,
            _chunk: PhantomData,
        }
    }

    /// The frame's length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: frames carry at least one byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The frame's bytes: one slice, or two when the frame wraps around
    /// the end of the ring.
    pub fn segments(&self) -> impl Iterator<Item = &'c [u8]> + 'c {
        let parts = [self.first_segment(), self.wrapped_part()];
        parts.into_iter().filter(|p| !p.is_empty())
    }

    /// The whole frame as one slice, unless it wraps around the end of the
    /// ring.
    #[inline]
    pub fn contiguous(&self) -> Option<&'c [u8]> {
        (self.head_len == self.len).then(|| self.first_segment())
    }

    /// Index of the frame's first slot (free-running; the slot is
    /// `index % slot_count`).
    #[inline]
    pub fn index(&self) -> u64 {
        self.first
    }

    /// Slots the frame occupies.
    #[inline]
    pub fn slots(&self) -> u64 {
        self.slots
    }

    /// The first segment: the whole frame unless it wraps around the end of
    /// the ring.
    #[inline]
    pub fn first_segment(&self) -> &'c [u8] {
        // SAFETY: `head..head + head_len` lies inside the data area (see
        // `Shape::span`); the slots belong to the consumer until the chunk
        // (which `'c` borrows) releases them.
        unsafe { core::slice::from_raw_parts(self.head, self.head_len) }
    }

    /// The part of a wrapped frame at the start of the ring (empty unless
    /// the frame wraps).
    #[inline]
    fn wrapped_part(&self) -> &'c [u8] {
        // SAFETY: as in `first_segment`: the frame continues for
        // `len - head_len` bytes at the start of the data area.
        unsafe { core::slice::from_raw_parts(self.wrap, self.len - self.head_len) }
    }

    /// Copies the frame into `dst`; returns the bytes copied, which is
    /// `min(len, dst.len())`.
    #[inline]
    pub fn copy_to(&self, dst: &mut [u8]) -> usize {
        let n = self.len.min(dst.len());
        let in_head = n.min(self.head_len);
        // SAFETY: the first `in_head <= head_len` bytes of the frame, then
        // `n - in_head <= len - head_len` bytes of its wrapped part, into
        // `dst`, local memory with room for `n` bytes.
        unsafe {
            copy_bytes(dst.as_mut_ptr(), self.head, in_head);
            if in_head < n {
                ptr::copy_nonoverlapping(self.wrap, dst.as_mut_ptr().add(in_head), n - in_head);
            }
        }
        n
    }

    /// The frame's bytes in a new vector.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = vec![0; self.len];
        self.copy_to(&mut v);
        v
    }
}

/// A ring on the heap, for rings inside one process, tests, loom and Miri.
#[derive(Clone)]
pub struct HeapRing(std::sync::Arc<HeapRingInner>);

/// The allocation behind a [`HeapRing`].
pub struct HeapRingInner {
    control: RingControl,
    descs: Box<[SlotDesc]>,
    data: *mut u8,
    layout: std::alloc::Layout,
    geometry: Geometry,
    /// Under loom, one cell per slot standing for its bytes (see
    /// [`RingStorage::slot_access`]).
    #[cfg(loom)]
    cells: Box<[crate::sync::UnsafeCell<()>]>,
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
            .map(|_| SlotDesc(crate::sync::AtomicU32::new(0)))
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
        }))
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn geometry(slot_count: u32, slot_size: u32) -> Geometry {
        Geometry::new(slot_count, slot_size).unwrap()
    }

    fn frame(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    /// Frames the batch reads return now: `read_chunk`'s and then (for
    /// what is left) `recv_batch`'s.
    fn batch_reads(rx: &mut Consumer<HeapRing>) -> (usize, usize) {
        let mut chunk = rx.read_chunk(usize::MAX).unwrap();
        let mut in_chunk = 0;
        while chunk.next_frame().unwrap().is_some() {
            in_chunk += 1;
        }
        drop(chunk);
        let mut bufs = vec![[0u8; 64]; 128];
        let mut lens = vec![0; 128];
        (in_chunk, rx.recv_batch(&mut bufs, &mut lens).unwrap())
    }

    /// Sends `n` 64-byte frames, seeded from `seed` on.
    fn send_64(tx: &mut Producer<HeapRing>, n: u8, seed: u8) {
        for i in 0..n {
            tx.send(&frame(64, seed.wrapping_add(i))).unwrap();
        }
    }

    #[test]
    fn hold_back_is_off_by_default() {
        let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(256, 64, 1514).unwrap());
        assert_eq!(rx.hold_back(), None);
        send_64(&mut tx, 5, 0);
        assert_eq!(batch_reads(&mut rx), (5, 0));
    }

    #[test]
    fn hold_back_holds_a_few_frames_until_the_wait_is_over() {
        let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(256, 64, 1514).unwrap());
        // The wait is long enough that the checks made while holding back
        // all run within it even on a loaded machine (the test lasts as
        // long as the wait).
        let hold = HoldBack {
            below_slots: 64,
            wait: Duration::from_secs(3),
        };
        rx.set_hold_back(Some(hold));
        assert_eq!(rx.hold_back(), Some(hold));
        // Before any frame was seen, a few frames are read at once (the
        // consumer cannot tell one frame from several yet).
        send_64(&mut tx, 3, 0);
        assert_eq!(batch_reads(&mut rx), (3, 0));
        // One frame alone is never held back.
        tx.send(&frame(64, 3)).unwrap();
        assert_eq!(batch_reads(&mut rx), (1, 0));
        // Several, fewer than 64 slots: held back, by both batch reads,
        // while `recv` still takes one.
        send_64(&mut tx, 5, 10);
        let started = Instant::now();
        assert_eq!(batch_reads(&mut rx), (0, 0));
        let mut buf = [0u8; 64];
        assert_eq!(rx.recv(&mut buf), Ok(64));
        assert_eq!(buf[..], frame(64, 10)[..]);
        // The producer's index is not read again while holding back.
        send_64(&mut tx, 64, 20);
        assert_eq!(batch_reads(&mut rx), (0, 0));
        // ... until the wait is over, and then only the frames it knew of.
        let (mut bufs, mut lens) = (vec![[0u8; 64]; 128], vec![0; 128]);
        let mut got = 0;
        while got == 0 {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "held back for ever"
            );
            got = rx.recv_batch(&mut bufs, &mut lens).unwrap();
        }
        assert!(started.elapsed() >= hold.wait);
        assert_eq!(got, 4);
        // 64 slots or more are read at once.
        assert_eq!(batch_reads(&mut rx), (64, 0));
        // What is left of an earlier look at the producer's index is not
        // held back when the producer has gone on since.
        send_64(&mut tx, 70, 0);
        let mut chunk = rx.read_chunk(66).unwrap();
        while chunk.next_frame().unwrap().is_some() {}
        drop(chunk);
        send_64(&mut tx, 64, 0);
        assert_eq!(batch_reads(&mut rx), (68, 0));
        // Turned off: nothing is held back.
        rx.set_hold_back(None);
        send_64(&mut tx, 5, 0);
        assert_eq!(batch_reads(&mut rx), (5, 0));
    }

    #[test]
    fn hold_back_leaves_frames_of_several_slots_alone() {
        let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(256, 64, 1514).unwrap());
        rx.set_hold_back(Some(HoldBack {
            below_slots: 64,
            wait: Duration::from_secs(60),
        }));
        let mut buf = vec![[0u8; 1514]; 4];
        let mut lens = [0; 4];
        for round in 0..3u8 {
            // Two 65-byte frames (four slots), then two of 1514 bytes (48
            // slots): read at once.
            tx.send(&frame(65, round)).unwrap();
            tx.send(&frame(65, round + 1)).unwrap();
            assert_eq!(rx.recv_batch(&mut buf, &mut lens), Ok(2));
            tx.send(&frame(1514, round)).unwrap();
            tx.send(&frame(1514, round + 1)).unwrap();
            assert_eq!(rx.recv_batch(&mut buf, &mut lens), Ok(2));
            assert_eq!(buf[1][..], frame(1514, round + 1)[..]);
        }
    }

    #[test]
    fn empty_ring_reports_empty() {
        let (_tx, mut rx) = heap_channel(geometry(16, 2048));
        let mut buf = [0u8; 64];
        assert_eq!(rx.recv(&mut buf), Err(RecvError::Empty));
        assert_eq!(rx.ready_slots(), Ok(0));
        let mut chunk = rx.read_chunk(8).unwrap();
        assert!(chunk.next_frame().unwrap().is_none());
    }

    #[test]
    fn full_ring_refuses_then_recovers() {
        let (mut tx, mut rx) = heap_channel(geometry(16, 2048));
        for i in 0..16 {
            tx.send(&frame(100, i)).unwrap();
        }
        assert_eq!(
            tx.send(&frame(100, 99)),
            Err(SendError::Push(PushError::Full))
        );
        let mut buf = [0u8; 2048];
        assert_eq!(rx.recv(&mut buf), Ok(100));
        assert_eq!(&buf[..100], &frame(100, 0)[..]);
        tx.send(&frame(100, 16)).unwrap();
        for i in 1..=16 {
            assert_eq!(rx.recv(&mut buf), Ok(100));
            assert_eq!(&buf[..100], &frame(100, i)[..]);
        }
        assert_eq!(rx.recv(&mut buf), Err(RecvError::Empty));
    }

    #[test]
    fn wraps_around_many_times() {
        let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(8, 64, 256).unwrap());
        let mut buf = [0u8; 256];
        for i in 0..10_000u32 {
            let len = 1 + (i as usize * 7) % 200;
            let f = frame(len, i as u8);
            tx.send(&f).unwrap();
            assert_eq!(rx.recv(&mut buf), Ok(len));
            assert_eq!(&buf[..len], &f[..]);
        }
        assert_eq!(tx.stats().frames, 10_000);
        assert_eq!(rx.stats().frames, 10_000);
    }

    #[test]
    fn every_size_class_up_to_jumbo() {
        for slot_size in [64u32, 256, 2048, 16384] {
            let g = Geometry::new(
                1024.max(2 * 9216 / slot_size).next_power_of_two(),
                slot_size,
            )
            .unwrap();
            let (mut tx, mut rx) = heap_channel(g);
            let mut buf = vec![0u8; 9216];
            let lens = [
                1usize, 2, 63, 64, 65, 127, 128, 1500, 1514, 2047, 2048, 2049, 4096, 8999, 9000,
                9215, 9216,
            ];
            for (i, &len) in lens.iter().enumerate() {
                let f = frame(len, i as u8);
                tx.send(&f).unwrap();
                assert_eq!(rx.recv(&mut buf), Ok(len), "slot {slot_size} len {len}");
                assert_eq!(&buf[..len], &f[..], "slot {slot_size} len {len}");
            }
        }
    }

    #[test]
    fn absurd_lengths_are_refused_without_overflow() {
        let (mut tx, _rx) = heap_channel(geometry(16, 2048));
        let mut chunk = tx.write_chunk(16).unwrap();
        assert!(!chunk.fits(usize::MAX));
        assert!(!chunk.fits(0), "an empty frame is never pushed");
        assert!(chunk.fits(9216) && !chunk.fits(9217));
        assert_eq!(
            chunk.push_with(usize::MAX, |_| panic!("not called")),
            Err(PushError::TooLarge {
                len: usize::MAX,
                max: 9216
            })
        );
        assert_eq!(chunk.commit(), 0);
    }

    #[test]
    fn bad_lengths_are_refused() {
        let (mut tx, _rx) = heap_channel(geometry(16, 2048));
        assert_eq!(tx.send(&[]), Err(SendError::Push(PushError::Empty)));
        assert_eq!(
            tx.send(&[0; 9217]),
            Err(SendError::Push(PushError::TooLarge {
                len: 9217,
                max: 9216
            }))
        );
    }

    #[test]
    fn small_buffer_leaves_frame_queued() {
        let (mut tx, mut rx) = heap_channel(geometry(16, 2048));
        tx.send(&frame(300, 1)).unwrap();
        let mut small = [0u8; 100];
        assert_eq!(
            rx.recv(&mut small),
            Err(RecvError::BufferTooSmall { needed: 300 })
        );
        let mut big = [0u8; 300];
        assert_eq!(rx.recv(&mut big), Ok(300));
    }

    #[test]
    fn batch_larger_than_free_space_sends_what_fits() {
        let (mut tx, mut rx) = heap_channel(geometry(16, 2048));
        let frames: Vec<Vec<u8>> = (0..40).map(|i| frame(64, i)).collect();
        let sent = tx.send_batch(frames.iter().map(|f| f.as_slice())).unwrap();
        assert_eq!(sent, 16);
        // Jumbo frames take 5 slots each: after draining, 3 fit in 16.
        let mut bufs = vec![vec![0u8; 64]; 32];
        let mut lens = vec![0; 32];
        assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(16));
        for i in 0..16 {
            assert_eq!(bufs[i], frames[i]);
        }
        let jumbo: Vec<Vec<u8>> = (0..5).map(|i| frame(9000, i)).collect();
        assert_eq!(tx.send_batch(jumbo.iter().map(|f| f.as_slice())), Ok(3));
        let mut chunk = tx.write_chunk(100).unwrap();
        assert_eq!(chunk.free_slots(), 1);
        assert_eq!(chunk.push(&frame(4000, 0)), Err(PushError::Full));
        chunk.push(&frame(2000, 0)).unwrap();
        assert_eq!(chunk.commit(), 1);
    }

    #[test]
    fn send_batch_refreshes_a_stale_view_before_reporting_full() {
        // 64 slots of 2048 bytes; a jumbo frame takes 5.
        let (mut tx, mut rx) = heap_channel(geometry(64, 2048));
        let small = frame(100, 0);
        // Leave 3 slots free in the producer's cached view ...
        assert_eq!(tx.send_batch((0..61).map(|_| &small[..])), Ok(61));
        // ... then free everything behind its back.
        let mut bufs = vec![vec![0u8; 100]; 64];
        let mut lens = vec![0; 64];
        assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(61));
        let jumbo = frame(9000, 1);
        assert_eq!(
            tx.send_batch([&jumbo[..]]),
            Ok(1),
            "stale view reported full"
        );
        assert_eq!(tx.send_batch((0..20).map(|_| &jumbo[..])), Ok(11));
    }

    #[test]
    fn recv_batch_stops_at_a_frame_that_does_not_fit() {
        let (mut tx, mut rx) = heap_channel(geometry(16, 2048));
        tx.send(&frame(10, 0)).unwrap();
        tx.send(&frame(500, 1)).unwrap();
        let mut bufs = vec![vec![0u8; 100]; 4];
        let mut lens = [0usize; 4];
        assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(1));
        assert_eq!(
            rx.recv_batch(&mut bufs, &mut lens),
            Err(RecvError::BufferTooSmall { needed: 500 })
        );
    }

    #[test]
    fn multi_slot_frames_are_contiguous_unless_they_wrap() {
        let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(64, 256, 4096).unwrap());
        let write = |tx: &mut Producer<HeapRing>| {
            let mut chunk = tx.write_chunk(64).unwrap();
            chunk
                .push_with(2500, |w| {
                    assert_eq!(w.append(&[1u8; 1000]), 1000);
                    assert_eq!(w.append(&[2u8; 1000]), 1000);
                    assert_eq!(w.append(&[3u8; 1000]), 500);
                })
                .unwrap();
            assert_eq!(chunk.commit(), 1);
        };
        let check = |rx: &mut Consumer<HeapRing>, segments: &[usize]| {
            let mut chunk = rx.read_chunk(4).unwrap();
            let frame = chunk.next_frame().unwrap().unwrap();
            assert_eq!(frame.slots(), 10);
            let lens: Vec<usize> = frame.segments().map(|s| s.len()).collect();
            assert_eq!(lens, segments);
            assert_eq!(frame.contiguous().is_some(), segments.len() == 1);
            let bytes = frame.to_vec();
            assert!(bytes[..1000].iter().all(|&b| b == 1));
            assert!(bytes[1000..2000].iter().all(|&b| b == 2));
            assert!(bytes[2000..].iter().all(|&b| b == 3));
        };
        // Slots 0..10, 10..20, ..., 50..60: contiguous.
        for _ in 0..6 {
            write(&mut tx);
            check(&mut rx, &[2500]);
        }
        // Slots 60..64 then 0..6: 1024 bytes at the end, 1476 at the start.
        write(&mut tx);
        check(&mut rx, &[1024, 1476]);
        // The zero-copy writer sees the same two parts.
        let mut chunk = tx.write_chunk(64).unwrap();
        chunk
            .push_with(300, |w| {
                let lens: Vec<usize> = w.segments_mut().map(|s| s.len()).collect();
                assert_eq!(lens, [300]);
                assert_eq!(w.contiguous_mut().map(|s| s.len()), Some(300));
            })
            .unwrap();
        // Slots 6..8, then six frames of 8 slots up to slot 56.
        for _ in 0..6 {
            chunk.push(&[7u8; 2000]).unwrap();
        }
        chunk
            .push_with(3000, |w| {
                let lens: Vec<usize> = w.segments_mut().map(|s| s.len()).collect();
                assert_eq!(lens, [2048, 952], "slots 56..64, then 0..4");
                assert!(w.contiguous_mut().is_none());
            })
            .unwrap();
        assert_eq!(chunk.commit(), 8);
        assert_eq!(tx.unread_frames(), 8);
    }

    #[test]
    fn uncommitted_chunk_publishes_nothing() {
        let (mut tx, mut rx) = heap_channel(geometry(16, 2048));
        {
            let mut chunk = tx.write_chunk(4).unwrap();
            chunk.push(b"lost").unwrap();
        }
        assert_eq!(rx.ready_slots(), Ok(0));
        tx.send(b"kept").unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(rx.recv(&mut buf), Ok(4));
        assert_eq!(&buf[..4], b"kept");
    }

    fn poisoned_consumer(corrupt: impl FnOnce(&HeapRing)) -> Corruption {
        let (ring, mut tx, mut rx) = corruptible_channel(geometry(16, 2048));
        tx.send(&frame(100, 0)).unwrap();
        tx.send(&frame(3000, 1)).unwrap();
        corrupt(&ring);
        let mut buf = [0u8; 9216];
        let mut first = None;
        for _ in 0..3 {
            match rx.recv(&mut buf) {
                Err(RecvError::Corrupt(c)) => {
                    first.get_or_insert(c);
                    assert_eq!(Some(c), first, "the error is sticky");
                }
                Ok(_) => {}
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(rx.stats().corruptions, 1);
        first.expect("corruption detected")
    }

    /// A channel whose ring the test keeps, to corrupt it as a hostile peer
    /// would.
    fn corruptible_channel(
        geometry: Geometry,
    ) -> (HeapRing, Producer<HeapRing>, Consumer<HeapRing>) {
        let ring = HeapRing::new(geometry);
        // SAFETY: the ring is new; these are its only producer and consumer
        // (the test only corrupts it, as a peer would).
        let (tx, rx) = unsafe {
            (
                Producer::attach(ring.clone()).unwrap(),
                Consumer::attach(ring.clone()).unwrap(),
            )
        };
        (ring, tx, rx)
    }

    fn set_desc(ring: &HeapRing, slot: usize, len: u16, flags: u16) {
        ring.descs()[slot]
            .0
            .store(SlotDesc::pack(len, flags), Ordering::Relaxed);
    }

    /// The producer leaves a descriptor that already holds the right word
    /// alone, and rewrites one that does not, whoever changed it.
    #[test]
    fn descriptors_scribbled_on_while_free_are_rewritten() {
        let (ring, mut tx, mut rx) = corruptible_channel(geometry(16, 2048));
        let mut buf = [0u8; 200];
        for lap in 0..4u8 {
            // Every path that writes a descriptor: send, send_batch, and
            // the zero-copy pushes.
            for i in 0..16u8 {
                let f = frame(100, lap * 16 + i);
                match i % 4 {
                    0 => tx.send(&f).unwrap(),
                    1 => assert_eq!(tx.send_batch([&f[..]]), Ok(1)),
                    2 => {
                        let mut chunk = tx.write_chunk(1).unwrap();
                        chunk
                            .push_with(100, |w| assert_eq!(w.append(&f), 100))
                            .unwrap();
                        chunk.commit();
                    }
                    _ => {
                        let mut chunk = tx.write_chunk(1).unwrap();
                        let run = chunk.push_run(100, 1, |_, w| assert_eq!(w.append(&f), 100));
                        assert_eq!(run, Ok(1));
                        chunk.commit();
                    }
                }
                let n = rx.recv(&mut buf).unwrap();
                assert_eq!(&buf[..n], &f[..], "lap {lap} frame {i}");
            }
            // Free slots, scribbled on as a peer could: another valid
            // length, garbage, the right word.
            for slot in 0..16 {
                match lap {
                    0 => set_desc(&ring, slot, 50, 0),
                    1 => set_desc(&ring, slot, 0xffff, 0xffff),
                    2 => set_desc(&ring, slot, 100, 0),
                    _ => {}
                }
            }
        }
        assert_eq!(rx.stats().corruptions, 0);
    }

    #[test]
    fn consumer_detects_each_kind_of_corruption() {
        let c = poisoned_consumer(|r| r.control().head.index.store(1000, Ordering::Release));
        assert!(matches!(
            c,
            Corruption::Index {
                kind: IndexKind::Head,
                ..
            }
        ));
        let c = poisoned_consumer(|r| set_desc(r, 0, 0, 0));
        assert!(matches!(
            c,
            Corruption::Length {
                slot: 0,
                len: 0,
                ..
            }
        ));
        let c = poisoned_consumer(|r| set_desc(r, 0, 4000, 0));
        assert!(matches!(c, Corruption::Length { len: 4000, .. }));
        let c = poisoned_consumer(|r| set_desc(r, 0, 100, 0x80));
        assert!(matches!(c, Corruption::Flags { flags: 0x80, .. }));
        let c = poisoned_consumer(|r| set_desc(r, 1, 100, SLOT_FLAG_MORE));
        assert!(matches!(c, Corruption::Length { slot: 1, .. }));
        // A frame that is longer than a slot but not flagged, and one that
        // is flagged but fits a slot.
        let c = poisoned_consumer(|r| set_desc(r, 1, 3000, 0));
        assert!(matches!(
            c,
            Corruption::Length {
                slot: 1,
                len: 3000,
                flags: 0
            }
        ));
        // A frame whose slots extend past the published head.
        let c = poisoned_consumer(|r| set_desc(r, 1, 9000, SLOT_FLAG_MORE));
        assert!(matches!(c, Corruption::Truncated { slot: 1 }));
        // A frame longer than a jumbo frame.
        let c = poisoned_consumer(|r| {
            set_desc(r, 1, 20_000, SLOT_FLAG_MORE);
            r.control().head.index.store(16, Ordering::Release);
        });
        assert!(matches!(c, Corruption::FrameTooLong { slot: 1, max: 9216 }));
    }

    #[test]
    fn recv_reports_a_frame_like_the_last_one_cut_short_by_head() {
        // `recv` matches a descriptor against the one validated last; it
        // must still find the frame's slots all published.
        let (ring, mut tx, mut rx) = corruptible_channel(geometry(128, 256));
        let frames = [frame(600, 0), frame(600, 1)];
        let mut buf = [0u8; 9216];
        tx.send(&frames[0]).unwrap();
        assert_eq!(rx.recv(&mut buf), Ok(600));
        tx.send(&frames[1]).unwrap();
        // `head` one slot into the second frame (slots 3..6).
        ring.control().head.index.store(4, Ordering::Release);
        assert_eq!(
            rx.recv(&mut buf),
            Err(RecvError::Corrupt(Corruption::Truncated { slot: 3 }))
        );
    }

    #[test]
    fn recv_batch_delivers_the_frames_before_a_corrupt_one_then_stops() {
        let (ring, mut tx, mut rx) = corruptible_channel(geometry(128, 256));
        let frames = [frame(100, 0), frame(600, 1), frame(50, 2)];
        assert_eq!(tx.send_batch(frames.iter().map(|f| &f[..])), Ok(3));
        // The second frame (slots 1..4) now claims 4000 bytes (16 slots).
        set_desc(&ring, 1, 4000, SLOT_FLAG_MORE);
        let mut bufs = vec![vec![0u8; 9216]; 8];
        let mut lens = [0usize; 8];
        assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(1));
        assert_eq!(&bufs[0][..lens[0]], &frames[0][..]);
        let err = rx.recv_batch(&mut bufs, &mut lens).unwrap_err();
        assert!(matches!(
            err,
            RecvError::Corrupt(Corruption::Truncated { slot: 1 })
        ));
        assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Err(err), "sticky");
        assert_eq!(rx.stats().corruptions, 1);
        assert_eq!(rx.stats().frames, 1);
    }

    /// A ring of 16 slots holding `count` 100-byte frames (`frame(100,
    /// i)`), the descriptor of frame `corrupt` zeroed as a peer could.
    fn frames_with_a_zeroed_descriptor(
        count: u8,
        corrupt: usize,
    ) -> (HeapRing, Consumer<HeapRing>) {
        let (ring, mut tx, rx) = corruptible_channel(geometry(16, 2048));
        for i in 0..count {
            tx.send(&frame(100, i)).unwrap();
        }
        set_desc(&ring, corrupt, 0, 0);
        (ring, rx)
    }

    #[test]
    fn a_corrupt_frame_ends_the_chunk_and_stays_reported() {
        let (ring, mut rx) = frames_with_a_zeroed_descriptor(3, 1);
        let mut chunk = rx.read_chunk(8).unwrap();
        assert!(matches!(chunk.next_frame(), Ok(Some(f)) if f.to_vec() == frame(100, 0)));
        let first = match chunk.next_frame() {
            Err(c) => c,
            _ => panic!("frame 1 is corrupt"),
        };
        assert!(matches!(first, Corruption::Length { slot: 1, .. }));
        // Even if the peer puts a valid descriptor back.
        set_desc(&ring, 1, 100, 0);
        for _ in 0..2 {
            assert!(
                matches!(chunk.next_frame(), Err(c) if c == first),
                "sticky in the chunk"
            );
        }
        drop(chunk);
        assert_eq!(rx.read_chunk(8).err(), Some(first), "and after it");
        assert_eq!((rx.stats().frames, rx.stats().corruptions), (1, 1));
    }

    /// `send_batch`'s loop for streams of one-slot frames of 32 to 64
    /// bytes: it must stop exactly where the general loop would (a frame
    /// of another length, no room before the end of the data area, no
    /// free slot, the end of the frames) and lose nothing.
    #[test]
    fn send_batch_streams_small_frames_and_stops_where_it_must() {
        let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(32, 64, 1024).unwrap());
        let lens = [48usize, 48, 32, 64, 64, 20, 65, 130, 40];
        let mut expect = std::collections::VecDeque::new();
        let (mut sent, mut got) = (0u32, 0u32);
        for round in 0..500usize {
            // Runs of 1 to 9 frames of one length, two or three runs a
            // batch, 1 to 40 frames in all.
            let mut frames = Vec::new();
            for r in 0..(2 + round % 2) {
                let len = lens[(round + r * 4) % lens.len()];
                for _ in 0..1 + (round * 3 + r) % 9 {
                    frames.push(frame(len, (sent as usize + frames.len()) as u8));
                }
            }
            frames.truncate(1 + round % 40);
            let n = tx.send_batch(frames.iter().map(|f| &f[..])).unwrap();
            if n < frames.len() {
                // Stopped: the next frame really does not fit.
                let free = tx.write_chunk(usize::MAX).unwrap().free_slots();
                assert!(
                    free < frames[n].len().div_ceil(64),
                    "round {round}: stopped with {free} free"
                );
            }
            expect.extend(frames.drain(..n));
            sent += n as u32;
            // Read a part of what is there.
            got += recv_expected(&mut rx, &mut expect, (round * 7) % 23);
        }
        got += recv_expected(&mut rx, &mut expect, usize::MAX);
        assert_eq!((got, expect.len()), (sent, 0));
        assert!(sent > 2000, "{sent} frames");
    }

    /// `push_run` against a model: runs of every length class and of up to
    /// 13 frames meet the wrap at every offset (a frame straddling it is
    /// written in two segments), stop at the reservation, and every frame
    /// arrives intact.
    #[test]
    fn push_run_writes_every_frame_across_the_wrap_and_stops_at_the_reservation() {
        let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(32, 64, 1024).unwrap());
        let lens = [1usize, 40, 64, 65, 150, 300];
        let (mut sent, mut got) = (0u32, 0u32);
        let mut expect = std::collections::VecDeque::new();
        for round in 0..400usize {
            let len = lens[round % lens.len()];
            // Up to 13 frames: one-slot frames' descriptors then go in a
            // group of eight, over descriptors of another length.
            let count = 1 + round % 13;
            let reserve = 1 + (round * 7) % 20;
            let mut chunk = tx.write_chunk(reserve).unwrap();
            let room = chunk.free_slots() as u64 / tx_slots(len);
            let mut calls = Vec::new();
            let pushed = chunk.push_run(len, count, |i, w| {
                calls.push(i);
                assert_eq!(w.len(), len);
                let f = frame(len, (sent as usize + i) as u8);
                assert_eq!(w.append(&f), len);
            });
            match pushed {
                Ok(n) => {
                    assert_eq!(n as u64, room.min(count as u64), "round {round}");
                    assert_eq!(calls, (0..n).collect::<Vec<_>>());
                    for i in 0..n {
                        expect.push_back(frame(len, (sent as usize + i) as u8));
                    }
                    sent += n as u32;
                    assert_eq!(chunk.commit(), n);
                }
                Err(e) => {
                    assert_eq!((e, room), (PushError::Full, 0), "round {round}");
                    assert!(calls.is_empty());
                }
            }
            // Drain most of the time, so the ring fills up now and then.
            if round % 5 != 4 {
                got += recv_expected(&mut rx, &mut expect, usize::MAX);
            }
        }
        got += recv_expected(&mut rx, &mut expect, usize::MAX);
        assert_eq!((got, expect.len()), (sent, 0));
        assert!(sent > 500, "{sent} frames");
        assert_eq!(rx.stats().frames, u64::from(sent));
        assert_eq!(tx.stats().frames, u64::from(sent));
    }

    /// Sends frames `numbers` (frame `i` is `frame(len_of(i), i)`) with
    /// one `send_batch`; returns how many went.
    fn send_numbered(
        tx: &mut Producer<HeapRing>,
        numbers: std::ops::Range<u32>,
        len_of: impl Fn(u32) -> usize,
    ) -> u32 {
        let frames: Vec<Vec<u8>> = numbers.map(|i| frame(len_of(i), i as u8)).collect();
        tx.send_batch(frames.iter().map(|f| &f[..])).unwrap() as u32
    }

    /// Receives up to `max` frames, each of which must be the next of
    /// `expect`; returns how many.
    fn recv_expected(
        rx: &mut Consumer<HeapRing>,
        expect: &mut std::collections::VecDeque<Vec<u8>>,
        max: usize,
    ) -> u32 {
        let mut buf = [0u8; 1024];
        let mut got = 0;
        while got < max {
            let Ok(len) = rx.recv(&mut buf) else { break };
            let want = expect.pop_front().expect("a frame was sent");
            assert_eq!(&buf[..len], &want[..], "frame {got} of this call");
            got += 1;
        }
        got as u32
    }

    /// Slots of a frame of `len` bytes in 64-byte slots.
    fn tx_slots(len: usize) -> u64 {
        len.div_ceil(64) as u64
    }

    #[test]
    fn push_run_refuses_bad_lengths_without_calling_fill() {
        let (mut tx, _rx) = heap_channel(Geometry::with_max_frame_len(32, 64, 1024).unwrap());
        let mut chunk = tx.write_chunk(32).unwrap();
        let never = |_: usize, _: &mut FrameWriter<'_>| panic!("fill called");
        assert_eq!(chunk.push_run(0, 4, never), Err(PushError::Empty));
        assert_eq!(
            chunk.push_run(1025, 4, never),
            Err(PushError::TooLarge {
                len: 1025,
                max: 1024
            })
        );
        assert_eq!(chunk.push_run(64, 0, never), Ok(0));
        assert_eq!(chunk.commit(), 0);
    }

    /// Runs are frames of one descriptor: a corrupt descriptor ends the
    /// run before it and is reported when it comes first, never earlier.
    #[test]
    fn a_corrupt_descriptor_ends_a_run_and_is_reported_at_its_frame() {
        let (_ring, mut rx) = frames_with_a_zeroed_descriptor(6, 3);
        let mut chunk = rx.read_chunk(8).unwrap();
        let run = chunk.next_run().unwrap().expect("frames 0 to 2");
        assert_eq!((run.len(), run.frame_len()), (3, 100));
        let got: Vec<Vec<u8>> = run.map(|f| f.to_vec()).collect();
        assert_eq!(got, (0..3).map(|i| frame(100, i)).collect::<Vec<_>>());
        let c = match chunk.next_run() {
            Err(c) => c,
            _ => panic!("frame 3 is corrupt"),
        };
        assert!(matches!(c, Corruption::Length { slot: 3, .. }));
        assert!(
            matches!(chunk.next_frame(), Err(same) if same == c),
            "sticky"
        );
        drop(chunk);
        assert_eq!((rx.stats().frames, rx.stats().bytes), (3, 300));
    }

    /// A chunk validates a run ahead of the frames it hands out: the frames
    /// not handed out stay queued and are not counted.
    #[test]
    fn frames_validated_but_not_handed_out_stay_queued() {
        let (mut tx, mut rx) = heap_channel(geometry(16, 2048));
        for i in 0..10 {
            tx.send(&frame(100, i)).unwrap();
        }
        let mut chunk = rx.read_chunk(32).unwrap();
        for i in 0..3 {
            assert_eq!(chunk.next_frame().unwrap().unwrap().to_vec(), frame(100, i));
        }
        assert_eq!(chunk.ready_slots(), 7);
        drop(chunk);
        assert_eq!((rx.stats().frames, rx.stats().bytes), (3, 300));
        let mut chunk = rx.read_chunk(32).unwrap();
        let run = chunk.next_run().unwrap().expect("frames 3 to 9");
        let got: Vec<Vec<u8>> = run.map(|f| f.to_vec()).collect();
        assert_eq!(got, (3..10).map(|i| frame(100, i)).collect::<Vec<_>>());
        assert!(chunk.next_run().unwrap().is_none());
        drop(chunk);
        assert_eq!((rx.stats().frames, rx.stats().bytes), (10, 1000));
    }

    /// Runs and single frames, mixed, against a model: every frame once, in
    /// order, intact; each run of one length, within the chunk's budget,
    /// and contiguous unless it is one frame that wraps.
    #[test]
    fn runs_and_frames_read_every_frame_in_order_across_the_wrap() {
        // 32 slots of 64 bytes; lengths of 1 and 3 slots, in streams of
        // changing length, so runs meet the wrap, the head and the budget
        // at every offset.
        let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(32, 64, 1024).unwrap());
        let len_of = |i: u32| match (i / 7) % 3 {
            0 => 40,
            1 => 64,
            _ => 150,
        };
        let (mut sent, mut got) = (0u32, 0u32);
        for round in 0..600u32 {
            if round < 500 {
                let want = 1 + round % 9;
                sent += send_numbered(&mut tx, sent..sent + want, len_of);
            }
            let budget = 1 + (round as usize * 5) % 11;
            let mut chunk = rx.read_chunk(budget).unwrap();
            let mut taken = 0;
            loop {
                if round % 3 == 0 {
                    let Some(f) = chunk.next_frame().unwrap() else {
                        break;
                    };
                    assert_eq!(f.to_vec(), frame(len_of(got), got as u8), "frame {got}");
                    got += 1;
                    taken += 1;
                    continue;
                }
                let Some(run) = chunk.next_run().unwrap() else {
                    break;
                };
                let (n, len) = (run.len(), run.frame_len());
                assert!(n >= 1);
                // Every third round reads 64- and 150-byte runs as arrays:
                // refused only for the 150-byte frame that wraps (a run of
                // its own); 40-byte runs are refused for their length.
                let as_arrays = round % 3 == 1;
                let read = |bytes: &[u8], got: &mut u32| {
                    assert_eq!(bytes, frame(len_of(*got), *got as u8), "frame {got}");
                    *got += 1;
                };
                let run = match (as_arrays, len) {
                    (true, 64) => run
                        .into_arrays::<64>()
                        .map(|a| a.for_each(|b| read(b, &mut got))),
                    (true, 150) => run
                        .into_arrays::<150>()
                        .map(|a| a.for_each(|b| read(b, &mut got))),
                    (true, _) => run.into_arrays::<64>().map(|_| panic!("{len} bytes as 64")),
                    _ => Err(run),
                };
                let Err(run) = run else {
                    taken += n;
                    continue;
                };
                let refused = as_arrays && len != 40;
                for f in run {
                    assert_eq!(f.len(), len);
                    assert!(!refused || (n == 1 && f.contiguous().is_none()));
                    assert!(n == 1 || f.contiguous().is_some(), "a run never wraps");
                    assert_eq!(f.to_vec(), frame(len_of(got), got as u8), "frame {got}");
                    got += 1;
                }
                taken += n;
            }
            assert!(taken <= budget);
            drop(chunk);
            assert_eq!(rx.stats().frames, u64::from(got));
        }
        assert_eq!(got, sent);
        assert!(sent > 1000, "the ring kept up: {sent} frames");
    }

    #[test]
    fn into_arrays_refuses_a_frame_that_wraps_whatever_its_first_part() {
        // 8 slots of 64 bytes: a 150-byte frame from slot 7 has 64 bytes
        // before the end and 86 after it.
        let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(8, 64, 150).unwrap());
        for i in 0..7 {
            tx.send(&frame(64, i)).unwrap();
        }
        let mut bufs = [[0u8; 64]; 7];
        assert_eq!(rx.recv_batch(&mut bufs, &mut [0; 7]).unwrap(), 7);
        tx.send(&frame(150, 7)).unwrap();
        let mut chunk = rx.read_chunk(1).unwrap();
        let run = chunk.next_run().unwrap().unwrap();
        let run = run.into_arrays::<64>().err().expect("64-byte first part");
        let run = run.into_arrays::<150>().err().expect("wrapped frame");
        let frames: Vec<Vec<u8>> = run.map(|f| f.to_vec()).collect();
        assert_eq!(frames, [frame(150, 7)]);
    }

    #[test]
    fn endpoints_and_chunks_can_move_to_another_thread() {
        fn is_send<T: Send>() {}
        is_send::<Producer<HeapRing>>();
        is_send::<Consumer<HeapRing>>();
        is_send::<WriteChunk<'static, HeapRing>>();
        is_send::<ReadChunk<'static, HeapRing>>();
    }

    /// Streams of one small frame size take `recv_batch`'s grouped path;
    /// every way out of it must behave like the frame-by-frame path.
    #[test]
    fn recv_batch_groups_equal_frames_across_the_wrap() {
        // 32 slots; each round sends 7 equal one-slot frames and a 3-slot
        // one, so groups start at every alignment and meet the wrap, the
        // published head and the end of `bufs` in every position.
        let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(32, 64, 1024).unwrap());
        let mut bufs = vec![[0u8; 200]; 6];
        let mut lens = [0usize; 6];
        let (mut sent, mut got) = (0u32, 0u32);
        for round in 0..200u32 {
            let frames: Vec<Vec<u8>> = (0..8)
                .map(|i| frame(if i == 7 { 150 } else { 40 }, (round * 8 + i) as u8))
                .collect();
            sent += tx.send_batch(frames.iter().map(|f| &f[..])).unwrap() as u32;
            loop {
                let n = rx.recv_batch(&mut bufs, &mut lens).unwrap();
                for (buf, &len) in bufs.iter().zip(&lens).take(n) {
                    let want = if got % 8 == 7 { 150 } else { 40 };
                    assert_eq!(&buf[..len], &frame(want, got as u8)[..], "frame {got}");
                    got += 1;
                }
                if n == 0 {
                    break;
                }
            }
        }
        assert_eq!((sent, got), (1600, 1600));
    }

    /// Streams of one multi-slot frame size take `recv_batch`'s
    /// like-the-last-frame path; it must stop at the published head, at the
    /// end of the data area and at a frame of another size.
    #[test]
    fn recv_batch_streams_equal_large_frames_to_the_head_and_across_the_wrap() {
        // 32 slots of 64 bytes; 150-byte frames take 3 slots, so they meet
        // the wrap at every offset. Every fifth frame is 149 bytes (a
        // different descriptor, same slots), and sends and receives come in
        // batches of changing sizes, so the published head falls anywhere.
        let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(32, 64, 1024).unwrap());
        let len_of = |i: u32| if i % 5 == 4 { 149 } else { 150 };
        let mut bufs = vec![vec![0u8; 150]; 7];
        let mut lens = [0usize; 7];
        let (mut sent, mut got) = (0u32, 0u32);
        // 300 rounds of sending and receiving, then receiving until empty.
        for round in 0.. {
            if round < 300 {
                let want = 1 + round % 6;
                sent += send_numbered(&mut tx, sent..sent + want, len_of);
            }
            let take = 1 + (round as usize * 3) % 7;
            let n = rx.recv_batch(&mut bufs[..take], &mut lens[..take]).unwrap();
            for (buf, &len) in bufs.iter().zip(&lens).take(n) {
                let expect = frame(len_of(got), got as u8);
                assert_eq!(&buf[..len], &expect[..], "frame {got}");
                got += 1;
            }
            if round >= 300 && n == 0 {
                break;
            }
        }
        assert_eq!(got, sent);
        assert!(sent > 500, "the ring kept up: {sent} frames");
    }

    #[test]
    fn recv_batch_group_stops_at_a_buffer_too_small() {
        let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(64, 256, 4096).unwrap());
        let frames: Vec<Vec<u8>> = (0..8).map(|i| frame(100, i)).collect();
        assert_eq!(tx.send_batch(frames.iter().map(|f| &f[..])), Ok(8));
        let mut bufs = vec![vec![0u8; 100]; 8];
        bufs[2] = vec![0u8; 99];
        let mut lens = [0usize; 8];
        assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(2));
        assert_eq!(
            rx.recv_batch(&mut bufs[2..], &mut lens),
            Err(RecvError::BufferTooSmall { needed: 100 })
        );
        // Frame 2 is still queued: five buffers take frames 2 to 6.
        assert_eq!(rx.recv_batch(&mut bufs[3..], &mut lens), Ok(5));
        for (buf, want) in bufs[3..].iter().zip(&frames[2..7]) {
            assert_eq!(buf, want);
        }
        assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(1));
        assert_eq!(bufs[0], frames[7]);
    }

    #[test]
    fn recv_batch_group_catches_a_corrupt_descriptor_inside_it() {
        let (ring, mut tx, mut rx) =
            corruptible_channel(Geometry::with_max_frame_len(64, 256, 4096).unwrap());
        let frames: Vec<Vec<u8>> = (0..12).map(|i| frame(100, i)).collect();
        assert_eq!(tx.send_batch(frames.iter().map(|f| &f[..])), Ok(12));
        // Frame 6, in the second group of four, now claims the MORE flag.
        set_desc(&ring, 6, 100, SLOT_FLAG_MORE);
        let mut bufs = vec![vec![0u8; 256]; 12];
        let mut lens = [0usize; 12];
        assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(6));
        assert!(matches!(
            rx.recv_batch(&mut bufs, &mut lens),
            Err(RecvError::Corrupt(Corruption::Length { slot: 6, .. }))
        ));
        assert_eq!(rx.stats().frames, 6);
    }

    #[test]
    fn send_batch_stops_at_a_bad_frame_after_the_first() {
        let (mut tx, mut rx) = heap_channel(geometry(128, 256));
        let (ok, empty, huge) = (frame(10, 0), Vec::new(), frame(9217, 1));
        assert_eq!(tx.send_batch([&ok[..], &empty[..], &ok[..]]), Ok(1));
        assert_eq!(tx.send_batch([&ok[..], &huge[..]]), Ok(1));
        assert_eq!(
            tx.send_batch([&huge[..], &ok[..]]),
            Err(SendError::Push(PushError::TooLarge {
                len: 9217,
                max: 9216
            }))
        );
        assert_eq!(
            tx.send_batch([&empty[..]]),
            Err(SendError::Push(PushError::Empty))
        );
        let mut bufs = vec![vec![0u8; 64]; 8];
        let mut lens = [0usize; 8];
        assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(2));
    }

    #[test]
    fn producer_detects_tail_corruption_and_stays_poisoned() {
        let ring = HeapRing::new(geometry(16, 2048));
        // SAFETY: this test's only producer of the ring.
        let mut tx = unsafe { Producer::attach(ring.clone()).unwrap() };
        for i in 0..16 {
            tx.send(&frame(10, i)).unwrap();
        }
        // Tail beyond head.
        ring.control().tail.index.store(17, Ordering::Release);
        let err = tx.send(b"x").unwrap_err();
        assert!(matches!(
            err,
            SendError::Corrupt(Corruption::Index {
                kind: IndexKind::Tail,
                ..
            })
        ));
        ring.control().tail.index.store(16, Ordering::Release);
        assert_eq!(tx.send(b"x"), Err(err), "poison is sticky");
        assert_eq!(tx.stats().corruptions, 1);
    }

    #[test]
    fn attach_refuses_corrupt_indices() {
        let ring = HeapRing::new(geometry(16, 2048));
        ring.control().head.index.store(100, Ordering::Relaxed);
        // SAFETY: the only endpoints of this ring.
        unsafe {
            assert!(Consumer::attach(ring.clone()).is_err());
            assert!(Producer::attach(ring.clone()).is_err());
        }
    }
}

#[cfg(all(test, not(loom)))]
mod keep_tests {
    use super::*;

    #[test]
    fn kept_frames_hold_their_slots_until_released() {
        let (mut tx, mut rx) = heap_channel(Geometry::new(16, 2048).unwrap());
        for i in 0..16u8 {
            tx.send(&[i; 10]).unwrap();
        }
        let mut first = None;
        {
            let mut chunk = rx.read_chunk(8).unwrap();
            while let Some(f) = chunk.next_frame().unwrap() {
                first.get_or_insert(f.index());
                assert_eq!(f.slots(), 1);
            }
            chunk.keep();
        }
        assert_eq!(first, Some(0));
        assert_eq!((rx.read_position(), rx.released_position()), (8, 0));
        // The producer sees no free slot: the kept ones are still ours.
        assert_eq!(tx.send(b"x"), Err(SendError::Push(PushError::Full)));
        // Reading goes on past the kept frames.
        let mut buf = [0u8; 16];
        assert_eq!(rx.recv(&mut buf), Ok(10));
        assert_eq!(buf[0], 8);
        // A normal release releases everything before it, kept frames too.
        assert_eq!(rx.released_position(), 9);
        {
            let chunk = rx.read_chunk(4).unwrap();
            chunk.keep();
        }
        let mut chunk = rx.read_chunk(4).unwrap();
        for _ in 0..4 {
            chunk.next_frame().unwrap().unwrap();
        }
        chunk.keep();
        assert_eq!((rx.read_position(), rx.released_position()), (13, 9));
        assert!(!rx.release_to(14), "beyond the read position");
        assert!(!rx.release_to(8), "before the last release");
        assert!(rx.release_to(11));
        let fill =
            |tx: &mut Producer<HeapRing>| (0..).take_while(|_| tx.send(b"y").is_ok()).count();
        assert_eq!(fill(&mut tx), 11);
        assert!(rx.release_to(13));
        assert_eq!(fill(&mut tx), 2);
    }
}

// SAFETY: the raw pointers in `Shape` point into `storage`, which is `Send`
// and `Sync` and lives as long as the endpoint; an endpoint is used by one
// thread at a time (`&mut self`).
unsafe impl<S: RingStorage> Send for Producer<S> {}
// SAFETY: as for `Producer`.
unsafe impl<S: RingStorage> Send for Consumer<S> {}
// SAFETY: as for `Producer`: the chunk's copy of the shape and its `Run`
// point into the storage of the endpoint it borrows mutably.
unsafe impl<S: RingStorage> Send for WriteChunk<'_, S> {}
// SAFETY: as for `WriteChunk`.
unsafe impl<S: RingStorage> Send for ReadChunk<'_, S> {}
