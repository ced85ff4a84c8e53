//! Writing frames in place: the slots a [`WriteChunk`] reserves, and how
//! frames are pushed into them (one at a time, a run of one length, or a
//! burst of small frames), described and published at commit.

use super::bytes::{all_hold, DESC_GROUP};
use super::bytes::{copy_bytes, store_fence, stream_lines};
use super::error::{Corruption, PushError};
use super::frame_writer::FrameWriter;
use super::producer::Producer;
use super::shape::{put_desc, put_descs, Lag};
use super::shape::{Run, Shape};
use super::storage::{model_write, RingStorage};
use crate::abi::{SlotDesc, DESC_STAMP_ONE};
use crate::sync::Ordering;

/// The longest frame a streaming chunk writes with non-temporal stores
/// ([`WriteChunk::set_streaming`]). Longer frames reach the memory's
/// bandwidth first, and streaming them is slower than copying through the
/// cache (`docs/benchmarks/design-notes.md`, "The small-frame slow mode of
/// the driver", measures each length).
pub const STREAM_MAX_LEN: usize = 128;

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
    /// Whether frames of up to [`STREAM_MAX_LEN`] bytes are written with
    /// non-temporal stores ([`set_streaming`](WriteChunk::set_streaming)).
    stream: bool,
    /// Whether a frame was, so that `commit` fences first.
    streamed: bool,
    /// The frames pushed from this many slots into the run on (to `used`)
    /// have no descriptor yet: all of one length, their descriptors are
    /// stored once each, with their laps' stamps, at
    /// [`commit`](WriteChunk::commit). Those before have descriptors with
    /// the lap before's stamp (see `Lag`), written when the length
    /// changed, to which `commit` adds the lap.
    like_from: u64,
    /// Length and flags of the frames from `like_from` on (0, no valid
    /// word, before the first push).
    like_word: u64,
    /// Their slots each (at least one).
    like_slots: u64,
}

// SAFETY: as for `Producer`: the chunk's copy of the shape and its `Run`
// point into the storage of the endpoint it borrows mutably.
unsafe impl<S: RingStorage> Send for WriteChunk<'_, S> {}

impl<S: RingStorage> Producer<S> {
    /// Reserves up to `max_slots` free slots for writing frames in place.
    ///
    /// # Errors
    /// [`Corruption`] if the peer corrupted the ring (now or before).
    #[inline(always)]
    pub fn write_chunk(&mut self, max_slots: usize) -> Result<WriteChunk<'_, S>, Corruption> {
        let max = max_slots.min(self.shape.slot_count as usize) as u64;
        let free = self.free_slots(max)?;
        let reserved = free.min(max);
        Ok(WriteChunk::new(self, reserved))
    }
}

impl<'c, S: RingStorage> WriteChunk<'c, S> {
    /// A chunk of `reserved` free slots of `producer`'s from its write
    /// position ([`Producer::write_chunk`]).
    #[inline(always)]
    pub(super) fn new(producer: &'c mut Producer<S>, reserved: u64) -> Self {
        WriteChunk {
            shape: producer.shape,
            run: producer.shape.run_from(producer.head),
            reserved,
            used: 0,
            frames: 0,
            bytes: 0,
            stream: false,
            streamed: false,
            like_from: 0,
            like_word: 0,
            like_slots: 1,
            producer,
        }
    }
}

impl<S: RingStorage> WriteChunk<'_, S> {
    /// Slots still free in this chunk.
    pub fn free_slots(&self) -> usize {
        (self.reserved - self.used) as usize
    }

    /// Whether [`push`](Self::push) writes frames of up to
    /// [`STREAM_MAX_LEN`] bytes (whole lines) with non-temporal stores,
    /// which do not first take each line from the consumer's cache. Off by
    /// default.
    ///
    /// For bursts of small frames from a sender slower than the memory: the
    /// sender then does not wait for one transfer between the cores per
    /// line when its receiver keeps up. The receiver reads the frames from
    /// memory instead of the sender's cache: it waits longer for a frame
    /// it is waiting for, the rate is bounded by the memory's bandwidth,
    /// and `commit` waits for the stores to reach it before it publishes.
    /// A sender with other work between its batches does better taking
    /// the next batch's lines ahead ([`Producer::prefetch_next`]), as
    /// eth_vecring's transmit path does (`docs/benchmarks/design-notes.md`,
    /// "Where the sending core's time goes at 64 bytes", has both
    /// measured).
    #[inline]
    pub fn set_streaming(&mut self, on: bool) {
        self.stream = on;
    }

    /// Whether a frame of this chunk was written with non-temporal stores
    /// (see [`set_streaming`](Self::set_streaming)); `commit` then fences
    /// before publishing.
    pub fn streamed(&self) -> bool {
        self.streamed
    }

    /// Frames pushed so far.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// Bytes of the frames pushed so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
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
            self.like(SlotDesc::pack(len as u16, shape.flags_for(len)), slots);
            let shape = &self.shape;
            if self.stream && len <= STREAM_MAX_LEN && self.used + slots <= self.run.to_end {
                // SAFETY: a valid length, the caller's memory, and slots of
                // our reservation before the end of the data area.
                unsafe { shape.stream_in_run(&self.run, self.used, frame) };
                self.streamed = true;
            } else {
                // SAFETY: a valid length, the caller's memory, and slots of
                // our reservation.
                unsafe { shape.copy_in_run(&self.run, self.used, slots, frame) };
            }
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
        self.like(SlotDesc::pack(len as u16, self.shape.flags_for(len)), slots);
        let (shape, run, used) = (&self.shape, &self.run, self.used);
        // As `Shape::copy_in_run`: at a fixed offset from the run's base
        // unless the frame wraps.
        let (head, head_len) = if used + slots <= run.to_end {
            // SAFETY: the frame's slots lie before the end of the data area,
            // `used` slots into the run.
            (
                unsafe { run.base.add((used as usize) << shape.slot_shift) },
                len,
            )
        } else {
            shape.span(run.start.wrapping_add(used), len)
        };
        model_write(&self.producer.storage, run.start.wrapping_add(used), slots);
        let mut writer = FrameWriter::new(head, head_len, shape.data, len);
        fill(&mut writer);
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
        // Described at `commit`, with the frames of this length pushed
        // before.
        self.like(SlotDesc::pack(len as u16, shape.flags_for(len)), slots);
        let stride = (slots as usize) << shape.slot_shift;
        let mut done = 0;
        while done < n {
            let index = self.run.start.wrapping_add(self.used);
            let slot = shape.slot(index);
            let to_end = u64::from(shape.slot_count) - slot as u64;
            // The frames left that lie wholly before the end of the data
            // area.
            let k = (per_frame(to_end) as usize).min(n - done);
            let base = shape.slot_ptr(index);
            model_write(&self.producer.storage, index, k as u64 * slots);
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

    /// Copies `frames` in order, each into one slot, as [`push`](Self::push)
    /// would, until a frame that does not fit one slot (empty, or longer
    /// than a slot or the ring's largest frame) or the chunk has no slot
    /// left; returns how many it pushed. The frame it stopped at, if any,
    /// is taken from `frames` but not pushed: push it with `push` or
    /// [`push_with`](Self::push_with) to learn why.
    ///
    /// A burst of small frames costs less this way than a loop of `push`:
    /// the chunk's state stays in registers for the whole burst, where a
    /// loop of calls reloads it after every store into the ring.
    ///
    /// ```
    /// use vecring_core::{heap_channel, Geometry};
    ///
    /// let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(16, 128, 512).unwrap());
    /// let frames: [&[u8]; 4] = [b"one", b"two", &[7; 300], b"four"];
    /// let mut chunk = tx.write_chunk(8).unwrap();
    /// assert_eq!(chunk.push_small(frames), 2); // the third takes three slots
    /// chunk.push(frames[2]).unwrap();
    /// assert_eq!(chunk.push_small(frames[3..].iter().copied()), 1);
    /// assert_eq!(chunk.commit(), 4);
    /// let mut buf = [0; 1024];
    /// let len = rx.recv(&mut buf).unwrap();
    /// assert_eq!(&buf[..len], b"one");
    /// ```
    #[inline]
    pub fn push_small<'f, I>(&mut self, frames: I) -> usize
    where
        I: IntoIterator<Item = &'f [u8]>,
    {
        let (shape, run) = (self.shape, self.run);
        // The longest frame that fits one slot (and so has no flags).
        let one_slot = shape.slot_size.min(shape.max_frame);
        let (first, reserved) = (self.used, self.reserved);
        let (mut used, mut bytes, mut streamed) = (first, 0u64, false);
        let mut word_now = self.like_word;
        for frame in frames {
            let len = frame.len();
            if len.wrapping_sub(1) >= one_slot || used == reserved {
                break;
            }
            let word = SlotDesc::pack(len as u16, 0);
            if word != word_now {
                // Rare: the frames before have their descriptors now (see
                // `like`), which reads the chunk's own count.
                self.used = used;
                self.like(word, 1);
                word_now = word;
            }
            // A frame of one slot never wraps: it lies in the run before
            // the end of the data area, or after it from the array's start.
            let at = if used < run.to_end {
                run.base.wrapping_add((used as usize) << shape.slot_shift)
            } else {
                shape
                    .data
                    .wrapping_add(((used - run.to_end) as usize) << shape.slot_shift)
            };
            model_write(&self.producer.storage, run.start.wrapping_add(used), 1);
            if self.stream && len <= STREAM_MAX_LEN {
                // SAFETY: `at` is the first byte of a slot of our
                // reservation (`used < reserved`, at most the ring), 64-byte
                // aligned like every slot, which holds `len` rounded up to
                // whole lines (`len <= slot_size`, a multiple of 64); the
                // caller's frame cannot overlap it.
                unsafe { stream_lines(at, frame.as_ptr(), len) };
                streamed = true;
            } else {
                // SAFETY: as above, `len` bytes of the slot.
                unsafe { copy_bytes(at, frame.as_ptr(), len) };
            }
            used += 1;
            bytes += len as u64;
        }
        let pushed = (used - first) as usize;
        self.used = used;
        self.frames += pushed;
        self.bytes += bytes;
        self.streamed |= streamed;
        pushed
    }

    /// Makes `word` (length and flags) and `slots` those of the frames
    /// pushed from now on: when they change, the frames pushed since the
    /// last change get their descriptors now, with the lap before's stamp
    /// (unpublished until `commit`). A chunk of one length stores none
    /// before `commit`.
    #[inline(always)]
    fn like(&mut self, word: u64, slots: u64) {
        if word != self.like_word {
            if self.like_from == self.used {
                // None pushed since the last change (the chunk's first
                // push, say): nothing to describe.
                (self.like_word, self.like_slots) = (word, slots);
            } else {
                self.new_length(word, slots);
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn new_length(&mut self, word: u64, slots: u64) {
        self.describe(self.like_from, Lag::PENDING);
        (self.like_from, self.like_word, self.like_slots) = (self.used, word, slots);
    }

    /// Stores the descriptors of the frames pushed from `from` slots into
    /// the run to `used`, all of `like_word` and `like_slots`, each with
    /// its lap's stamp less `lag`: one store each, with no load, the
    /// frames that start before the end of the data area in the run's lap,
    /// the others in the next. The last first, `from`'s last of all (see
    /// [`put_descs`]).
    #[inline(always)]
    fn describe(&self, from: u64, lag: Lag) {
        let (shape, run) = (&self.shape, &self.run);
        let (to, step) = (self.used, self.like_slots);
        let before = to.min(run.to_end);
        // The frames before the end of the data area, and the first past it.
        let (count, past) = if from < before {
            let ahead = before - from;
            let count = if step == 1 {
                ahead
            } else {
                ahead.div_ceil(step)
            };
            (count, from + count * step)
        } else {
            (0, from)
        };
        if past < to {
            // Past the end of the data area: the next lap, from the start
            // of the array; the last first.
            let next = run.start.wrapping_add(run.to_end);
            let word = self.like_word | shape.stamp(next).wrapping_sub(lag.0);
            let mut at = past + (to - past - 1) / step * step;
            loop {
                // The slot `at - run.to_end` from the start: below
                // `slot_count`, as the reservation is at most the ring.
                put_desc(shape.desc(run.start.wrapping_add(at)), word);
                if at == past {
                    break;
                }
                at -= step;
            }
        }
        if count > 0 {
            let word = self.like_word | run.stamp.wrapping_sub(lag.0);
            // SAFETY: the `count` frames' first descriptors, from `from`
            // slots into the run to before `run.to_end`: within the array.
            unsafe {
                put_descs(
                    run.descs.add(from as usize),
                    count as usize,
                    step as usize,
                    word,
                )
            };
        }
    }

    /// Publishes every frame pushed: the frames pushed since the last
    /// change of length get their descriptors, with their laps' stamps,
    /// the last first, and those before have one lap added to theirs. In a
    /// chunk of one length the first frame is published last, so that a
    /// consumer waiting on it finds the chunk whole. Returns how many.
    #[inline(always)]
    pub fn commit(self) -> usize {
        if self.used > 0 {
            if self.streamed {
                // Non-temporal stores are weakly ordered: the fence orders
                // them before the descriptors' Release stores (`put_desc`)
                // that the consumer's Acquire loads pair with.
                store_fence();
            }
            // The frames since the last change of length first, so that
            // a chunk of one length publishes its first frame last.
            self.describe(self.like_from, Lag::NONE);
            if self.like_from > 0 {
                self.stamp_frames(self.run.start.wrapping_add(self.like_from));
            }
            let head = self.run.start.wrapping_add(self.used);
            self.producer.publish(head, self.frames, self.bytes);
        }
        self.frames
    }

    /// Adds one lap to the stamp of each frame's descriptor from the run's
    /// start to `head`: from the lap before's (written when the chunk's
    /// length changed, see `WriteChunk::like`) to its own, which publishes
    /// it. The frames are found by the
    /// lengths in those descriptors: our own words, but in shared memory,
    /// so each step is at least one slot and at most the slots left, and
    /// the walk ends at `head` whatever the peer wrote there.
    #[inline(never)]
    fn stamp_frames(&self, head: u64) {
        let shape = &self.shape;
        let mut at = self.run.start;
        // The last word seen and its frame's slots (at least one): a chunk
        // of one frame size works them out once.
        let (mut last, mut last_slots) = (!0u64, 1u64);
        let count = u64::from(shape.slot_count);
        while at != head {
            // One-slot frames like the last, a group at a time.
            if last_slots == 1
                && head.wrapping_sub(at) >= DESC_GROUP as u64
                && (at & shape.mask) + DESC_GROUP as u64 <= count
            {
                // SAFETY: the group's descriptors lie before the end of the
                // descriptor array (tested above); from the array's
                // pointer (see `Shape::run_from`).
                let group = unsafe { shape.descs.add(shape.slot(at)) };
                // SAFETY: as above.
                if unsafe { all_hold(group, last) } {
                    // SAFETY: as above.
                    unsafe { put_descs(group, DESC_GROUP, 1, last.wrapping_add(DESC_STAMP_ONE)) };
                    at = at.wrapping_add(DESC_GROUP as u64);
                    continue;
                }
            }
            let desc = shape.desc(at);
            // Relaxed: our own store in the push (the peer's scribbles
            // only garble what it reads).
            let word = desc.0.load(Ordering::Relaxed);
            if word != last {
                let (len, _) = SlotDesc::unpack(word);
                (last, last_slots) = (word, shape.slots_for(len as usize).max(1));
            }
            put_desc(desc, word.wrapping_add(DESC_STAMP_ONE));
            at = at.wrapping_add(last_slots.min(head.wrapping_sub(at)));
        }
    }
}
