//! Reading frames in place: the ready frames a [`ReadChunk`] hands out,
//! validated a run at a time, and released together.

use super::consumer::Consumer;
use super::error::Corruption;
use super::frame::{Frame, FrameRun};
use super::shape::{SeenDesc, Shape};
use super::storage::{model_read, RingStorage};
use crate::abi::DESC_STAMP_MASK;
use crate::sync::{fence, Ordering};
use core::marker::PhantomData;
use core::ptr;

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
    /// The end of the ring's capacity from the consumer's last release (no
    /// frame lies at or past it); under a hold-back, the end of the frames
    /// found when the chunk was made (`pos` while held back).
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
        if let Some(c) = self.poisoned {
            return Err(c);
        }
        // Frames lie before the end of the ring's capacity; which of them
        // are published, their descriptors' stamps say, checked as each
        // run starts: nothing is looked at before. Under a hold-back,
        // which counts the ready slots first (see `HoldBack`), the frames
        // found then, or none while it holds them back.
        let end = if self.hold_below == 0 || !hold {
            self.capacity_end()
        } else {
            self.ready_for(max_frames as u64)?;
            if self.holding() {
                self.tail
            } else {
                self.cached_head
            }
        };
        Ok(ReadChunk::new(self, end, max_frames))
    }
}

impl<'c, S: RingStorage> ReadChunk<'c, S> {
    /// A chunk of `consumer`'s frames from its read position to `end`, at
    /// most `max_frames` of them ([`Consumer::read_chunk`]).
    #[inline(always)]
    pub(super) fn new(consumer: &'c mut Consumer<S>, end: u64, max_frames: usize) -> Self {
        ReadChunk {
            shape: consumer.shape,
            pos: consumer.tail,
            end,
            max_frames,
            frames_left: max_frames,
            bytes: 0,
            keep: false,
            seen: consumer.seen,
            run_left: 0,
            run_head: ptr::null(),
            run_head_len: 0,
            run_stride: 0,
            consumer,
        }
    }
}

impl<S: RingStorage> ReadChunk<'_, S> {
    /// The storage the chunk's frames live in (e.g. to tell which shared
    /// region, and so which link generation, they belong to).
    pub fn storage(&self) -> &S {
        &self.consumer.storage
    }

    /// Slots in this chunk not yet handed out: those of the frames
    /// validated already, and of the published frames after them (up to
    /// the chunk's frame budget), looked for now. The descriptors looked
    /// at are loaded again when their frames are handed out, and a corrupt
    /// one is reported only then: a reader that sizes its reads by this
    /// count and asks for no frame when it is 0 never learns of corruption
    /// at the read position. [`ready`](Self::ready) does both at once.
    pub fn ready_slots(&self) -> usize {
        let run_end = self.pos.wrapping_add(self.run_left * self.seen.slots);
        let mut seen = self.seen;
        let (end, _) = self
            .shape
            .scan(run_end, self.end, self.frames_left as u64, &mut seen);
        end.wrapping_sub(self.pos) as usize
    }

    /// [`ready_slots`](Self::ready_slots), the frames at the read position
    /// validated first (as handing the first out would), which
    /// [`next_frame`](Self::next_frame) then hands out without loading a
    /// descriptor again: frames of one length are read once; only those
    /// after the first run are looked at here and again when reached.
    ///
    /// # Errors
    /// The corruption of the descriptor at the read position, which
    /// poisons the consumer, as handing its frame out does (the driver
    /// sizes its bursts by this count). One later in the chunk is
    /// reported when the reader reaches its frame.
    #[inline]
    pub fn ready(&mut self) -> Result<usize, Corruption> {
        if self.run_left == 0 && !self.start_run()? {
            return Ok(0);
        }
        Ok(self.ready_slots())
    }

    /// The frame at `pos`, validated, without consuming it. Inside a run
    /// (see [`start_run`](Self::start_run)) that costs no load and no
    /// check: a chunk's frames are checked a run at a time.
    #[inline(always)]
    pub(super) fn peek(&mut self) -> Result<Option<(Frame<'_>, u64)>, Corruption> {
        if self.run_left == 0 && !self.start_run()? {
            return Ok(None);
        }
        // A line of the run's frames after this one: published, validated
        // with the run. (This frame's own line is not prefetched: its
        // address is known as early as the prefetch's would be. Nor is a
        // slot past the run: its frame may not be published yet.)
        self.shape
            .prefetch_ahead(self.pos, self.run_left * self.seen.slots);
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
    /// end of the ring's capacity and the end of the data area: one
    /// comparison each (a group of eight one-slot frames' descriptors at
    /// once), and the run is handed out without looking at a descriptor
    /// again. Each descriptor is loaded once; its stamp, checked with the
    /// rest of the word, says whether the frame is published. `Ok(false)`
    /// at the end of the chunk: its budget used, or a frame not published.
    ///
    /// Only the first frame is decoded (when its word is not `seen`'s
    /// with its lap's stamp); a frame not published and every kind of
    /// corruption go to [`peek_slow`], which is handed values, not the
    /// chunk: a chunk whose address never escapes keeps its fields in
    /// registers. Corruption is reported at the frame it is in, never
    /// earlier: a differing descriptor only ends a run.
    #[inline(always)]
    fn start_run(&mut self) -> Result<bool, Corruption> {
        // A copy: its fields stay in registers.
        let (shape, pos) = (self.shape, self.pos);
        let ready = self.end.wrapping_sub(pos);
        if self.frames_left == 0 || ready == 0 {
            // The end of the chunk, or of a chunk ended by corruption
            // (`peek_slow` is the one place that poisons the consumer
            // during a chunk, and it ends the chunk): reported again.
            return match self.consumer.poisoned {
                Some(c) => Err(c),
                None => Ok(false),
            };
        }
        let stamp = shape.stamp(pos);
        // Slots from `pos` both within the capacity and before the end of
        // the data area.
        let room = ready.min(u64::from(shape.slot_count) - (pos & shape.mask));
        // The common case: frames like the last validated one, in this
        // lap, counted from this one a group of descriptors at a time (no
        // frame of `NONE`'s slots fits).
        let like = self.seen;
        let fit = if like.slots == 1 {
            room
        } else {
            room / like.slots
        };
        let limit = fit.min(self.frames_left as u64);
        let (like_count, stop) = if limit > 0 {
            // SAFETY: the `limit` frames of `like.slots` slots from `pos`
            // lie before the end of the data area (`limit * slots <=
            // room`).
            unsafe { shape.count_like(pos, like.bits | stamp, like.slots, limit) }
        } else {
            (0, None)
        };
        let (seen, count, head, head_len) = if like_count > 0 {
            // Acquire: the Relaxed loads of `count_like` read the
            // producer's Release stores of these descriptors (`put_desc`,
            // from `Producer::send`, `Producer::send_batch` or
            // `WriteChunk::commit`), with their lap's stamp; this fence
            // makes the frames' bytes visible.
            fence(Ordering::Acquire);
            (like, like_count, shape.slot_ptr(pos), like.len)
        } else {
            // Another word, or a frame that wraps: the descriptor, read
            // once (by `count_like`, or here), checked, then used. Acquire
            // (a fence after `count_like`'s Relaxed load): pairs with the
            // producer's Release store of this descriptor (`put_desc`):
            // the frame's bytes are visible once its stamp is.
            let word = match stop {
                Some(word) => {
                    fence(Ordering::Acquire);
                    word
                }
                None => shape.desc(pos).0.load(Ordering::Acquire),
            };
            let seen = if word == like.bits | stamp && like.slots <= ready {
                like
            } else {
                match peek_slow(self.consumer, shape, pos, ready, word) {
                    Ok(Some(seen)) => {
                        self.seen = seen;
                        seen
                    }
                    Ok(None) => return Ok(false),
                    Err(c) => {
                        // End the chunk: this path is the only one that
                        // tests for poison.
                        self.end = pos;
                        return Err(c);
                    }
                }
            };
            let (head, head_len) = shape.span(pos, seen.len);
            let mut count = 1;
            if head_len == seen.len {
                // Slots after this frame both within the capacity and
                // before the end of the data area (this frame's lie
                // within both).
                let rest = room - seen.slots;
                let fit = if seen.slots == 1 {
                    rest
                } else {
                    rest / seen.slots
                };
                let limit = fit.min(self.frames_left as u64 - 1);
                if limit > 0 {
                    let next = pos.wrapping_add(seen.slots);
                    // SAFETY: frame `j` of the `limit` after this one
                    // starts `(j + 1) * slots` slots from `pos`, before the
                    // end of the descriptor array (`(limit + 1) * slots <=
                    // room`).
                    count += unsafe { shape.count_like(next, word, seen.slots, limit) }.0;
                    // Acquire: as for the first, for these frames.
                    fence(Ordering::Acquire);
                }
            }
            (seen, count, head, head_len)
        };
        let (len, slots) = (seen.len, seen.slots);
        // The run's frames and bytes are counted now (and what is left of
        // the run uncounted on drop): nothing per frame.
        self.frames_left -= count as usize;
        self.bytes += count * len as u64;
        self.run_left = count;
        self.run_head = head;
        self.run_head_len = head_len;
        self.run_stride = (slots as usize) << shape.slot_shift;
        Ok(true)
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
            c.read_to(self.pos);
            c.stats.frames += frames as u64;
            c.stats.bytes += self.bytes - self.run_left * self.seen.len as u64;
            if !self.keep {
                c.publish_release(self.pos);
            }
        }
    }
}

/// [`ReadChunk::start_run`] for a descriptor `word` at `pos` that is not
/// the last one validated, with `ready` slots to the end of the ring's
/// capacity: the frame there, if valid, or `None` if not published (yet).
/// A descriptor without its lap's stamp where frames were found published
/// before (`Consumer::find_ready`) was taken back: corruption, as is any
/// other invalid one with its stamp.
#[inline(never)]
fn peek_slow<S: RingStorage>(
    consumer: &mut Consumer<S>,
    shape: Shape,
    pos: u64,
    ready: u64,
    word: u64,
) -> Result<Option<SeenDesc>, Corruption> {
    if let Some(c) = consumer.poisoned {
        return Err(c);
    }
    if word & DESC_STAMP_MASK != shape.stamp(pos) && !consumer.found_before(pos) {
        return Ok(None);
    }
    match shape.diagnose(pos, word, ready) {
        Ok((len, slots)) => Ok(Some(SeenDesc {
            bits: word & !DESC_STAMP_MASK,
            len,
            slots,
        })),
        Err(c) => Err(consumer.poison(c)),
    }
}
