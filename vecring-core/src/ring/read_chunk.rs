//! Reading frames in place: the ready frames a [`ReadChunk`] hands out,
//! validated a run at a time, and released together.

use super::consumer::Consumer;
use super::descriptor::{SeenDesc, Shape};
use super::error::Corruption;
use super::frame::{Frame, FrameRun};
use super::storage::{model_read, RingStorage};
use crate::sync::Ordering;
use core::marker::PhantomData;
use core::ptr;

impl<S: RingStorage> Consumer<S> {
    /// Up to `max_frames` ready frames, to be read in place. Frames returned
    /// by [`ReadChunk::next_frame`] are released when the chunk is dropped
    /// (or [`released`](ReadChunk::release)). Empty while frames are held
    /// back ([`set_hold_back`](Self::set_hold_back)).
    ///
    /// # Errors
    /// [`Corruption`] if the peer corrupted the ring (now or before).
    #[inline]
    pub fn read_chunk(&mut self, max_frames: usize) -> Result<ReadChunk<'_, S>, Corruption> {
        self.chunk(max_frames, true)
    }

    /// A chunk of up to `max_frames` ready frames, empty while `hold` and
    /// frames are held back. `recv` asks with `hold` false: it is never
    /// held back (see [`HoldBack`](super::HoldBack)).
    #[inline]
    pub(super) fn chunk(
        &mut self,
        max_frames: usize,
        hold: bool,
    ) -> Result<ReadChunk<'_, S>, Corruption> {
        self.ready_slots()?;
        // Held back: an empty chunk.
        let end = if hold && self.holding() {
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
}

/// Ready frames obtained with [`Consumer::read_chunk`], read in place.
/// Frames handed out are released when the chunk is dropped.
pub struct ReadChunk<'c, S: RingStorage> {
    consumer: &'c mut Consumer<S>,
    /// The consumer's shape, copied once per chunk (see
    /// [`WriteChunk`]'s).
    ///
    /// [`WriteChunk`]: super::WriteChunk
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

// SAFETY: as for `WriteChunk`: the chunk's copy of the shape and its run's
// pointer point into the storage of the endpoint it borrows mutably.
unsafe impl<S: RingStorage> Send for ReadChunk<'_, S> {}

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
    pub(super) fn peek(&mut self) -> Result<Option<(Frame<'_>, u64)>, Corruption> {
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
            // produced `end` (`Consumer::refresh_head` or
            // `Consumer::attach`). The value is used only if it passes the
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
    pub(super) fn advance(&mut self, next: u64) {
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
    // chunk's end (`Consumer::refresh_head` or `Consumer::attach`); read
    // exactly once.
    let word = shape.desc(pos).0.load(Ordering::Relaxed);
    match shape.diagnose(pos, word, ready) {
        Ok((len, slots)) => Ok(Some(SeenDesc { word, len, slots })),
        Err(c) => Err(consumer.poison(c)),
    }
}
