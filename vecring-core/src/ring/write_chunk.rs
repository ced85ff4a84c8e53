//! Writing frames in place: the slots a [`WriteChunk`] reserves, and the
//! [`FrameWriter`] of one frame.

use super::bytes::store_fence;
use super::descriptor::{put_desc, put_descs, Run, Shape};
use super::error::{Corruption, PushError};
use super::producer::Producer;
use super::storage::{model_write, RingStorage};
use crate::abi::SlotDesc;
use core::marker::PhantomData;
use core::ptr;

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
        Ok(WriteChunk {
            shape: self.shape,
            run: self.shape.run_from(self.head),
            reserved,
            used: 0,
            frames: 0,
            bytes: 0,
            stream: false,
            streamed: false,
            producer: self,
        })
    }
}

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
}

// SAFETY: as for `Producer`: the chunk's copy of the shape and its `Run`
// point into the storage of the endpoint it borrows mutably.
unsafe impl<S: RingStorage> Send for WriteChunk<'_, S> {}

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
    /// line when its receiver keeps up (eth_vecring's transmit path streams
    /// its bursts of small frames for this). The receiver reads the frames
    /// from memory instead of the sender's cache: it waits longer for a
    /// frame it is waiting for, and the rate is bounded by the memory's
    /// bandwidth (`docs/benchmarks/design-notes.md`, "The small-frame slow
    /// mode of the driver", has the measurements).
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
            if self.stream && len <= STREAM_MAX_LEN && self.used + slots <= self.run.to_end {
                // SAFETY: a valid length, the caller's memory, and slots of
                // our reservation before the end of the data area.
                unsafe { shape.stream_in_run(&self.run, self.used, frame) };
                self.streamed = true;
            } else {
                // SAFETY: a valid length, the caller's memory, and slots of
                // our reservation.
                unsafe { shape.write_in_run(&self.run, self.used, slots, frame) };
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
            if self.streamed {
                store_fence();
            }
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
