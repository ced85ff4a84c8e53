//! The copy loops: a frame into or out of its slots, the consumer's loops
//! over frames of one descriptor, and the producer's over frames of one
//! length, each choosing its kind of copy once per run, not per frame.

use super::bytes::four_hold;
use super::bytes::{copy_32_to_64, copy_as, copy_bytes, stream_lines, COPY_ANY, COPY_MEMCPY};
use super::frame::Frame;
use super::shape::{put_desc, put_descs, Lag, LenPlan};
use super::shape::{Run, SeenDesc, Shape};
use crate::abi::SlotDesc;
use crate::sync::{fence, Ordering};
use core::ptr;

/// Frames per group in [`Consumer::recv_batch`]'s fast path for streams of
/// one small frame size.
///
/// [`Consumer::recv_batch`]: super::Consumer::recv_batch
pub(super) const RUN: usize = 4;

impl Shape {
    /// Copies groups of [`RUN`] one-slot frames like `seen` from `off`
    /// slots into `run` to `bufs` (lengths to `lens`), one group per `RUN`
    /// buffers, while each group's descriptors all hold `seen`'s word with
    /// the stamp of the run's lap (loaded once each, a group at a time)
    /// and each buffer has room; returns how many frames it copied.
    ///
    /// # Safety
    /// `seen` is a validated one-slot frame of 32 to 64 bytes (the copy is
    /// four 16-byte moves), and the `bufs.len()` slots from `off` lie
    /// before the end of the data area and of the ring's capacity.
    #[inline(always)]
    pub(super) unsafe fn copy_groups<B: AsMut<[u8]>>(
        &self,
        run: &Run,
        off: u64,
        seen: &SeenDesc,
        bufs: &mut [B],
        lens: &mut [usize],
    ) -> usize {
        let (len, want, stride) = (seen.len, seen.bits | run.stamp, self.slot_size);
        let (mut src, mut desc) = self.cursors(run, off);
        let mut copied = 0;
        for (group, group_lens) in bufs.chunks_exact_mut(RUN).zip(lens.chunks_exact_mut(RUN)) {
            // SAFETY: the group's `RUN` descriptors are among the caller's.
            if !unsafe { four_hold(desc, want) } {
                break;
            }
            // Acquire: the loads of `four_hold` (Relaxed ones) read the
            // producer's Release stores of these descriptors (`put_desc`),
            // with their lap's stamp; this fence makes the frames' bytes
            // visible before they are copied.
            fence(Ordering::Acquire);
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

    /// Copies frames like `seen` from `off` slots into `run` to `bufs[i]`
    /// (lengths to `lens[i]`), one per buffer, while each lies wholly
    /// before `clear` slots into `run`, its descriptor holds `seen`'s word
    /// with the stamp of the run's lap and its buffer has room; returns
    /// how many it copied, and the descriptor word of the frame after them
    /// if it loaded it (then it differs, or that frame's buffer is too
    /// small): the caller checks that word, not another load. A stream of
    /// one frame size costs one descriptor load and comparison and one
    /// copy per frame.
    ///
    /// # Safety
    /// `seen` is [`SeenDesc::NONE`] or validated, and the slots from `off`
    /// to `clear` lie before the end of the data area (`clear <=
    /// run.to_end`) and of the ring's capacity.
    #[inline(always)]
    pub(super) unsafe fn copy_like_seen<B: AsMut<[u8]>>(
        &self,
        run: &Run,
        off: u64,
        clear: u64,
        seen: &SeenDesc,
        bufs: &mut [B],
        lens: &mut [usize],
    ) -> (usize, Option<u64>) {
        // The word of a frame like `seen` in the run's lap.
        let want = seen.bits | run.stamp;
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
                self.copy_counted_long(run, off, seen, want, bufs, lens)
            } else {
                self.copy_counted::<B, COPY_ANY>(run, off, seen, want, bufs, lens)
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
        want: u64,
        bufs: &mut [B],
        lens: &mut [usize],
    ) -> (usize, Option<u64>) {
        // SAFETY: the caller's contract.
        unsafe { self.copy_counted::<B, COPY_MEMCPY>(run, off, seen, want, bufs, lens) }
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
        want: u64,
        bufs: &mut [B],
        lens: &mut [usize],
    ) -> (usize, Option<u64>) {
        let len = seen.len;
        let stride = (seen.slots as usize) << self.slot_shift;
        let (mut src, mut desc) = self.cursors(run, off);
        let (mut copied, mut stop) = (0, None);
        for buf in bufs.iter_mut() {
            // Acquire: pairs with the producer's Release store of this
            // descriptor (`put_desc`): the frame's bytes are visible once
            // its stamp is. Read once, compared with the validated word.
            // SAFETY: the descriptor of a frame before `clear`, within the
            // array (the caller's contract).
            let word = unsafe { &*desc }.0.load(Ordering::Acquire);
            let dst = buf.as_mut();
            if word != want || dst.len() < len {
                stop = Some(word);
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
        (copied, stop)
    }

    /// Copies `frame` into the slots from free-running `index`, wrapping
    /// around the end of the data area if it must; no descriptor.
    ///
    /// # Safety
    /// `frame` must be 1 to `max_frame` bytes, must not overlap the slots
    /// written (it may lie in shared memory elsewhere, e.g. a received
    /// frame held in place), and the `slots_for(frame.len())` slots from
    /// `index` must be reserved for the caller, the producer.
    #[inline(always)]
    unsafe fn copy_frame(&self, index: u64, frame: &[u8]) {
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
    }

    /// Copies `frame`, of `slots` slots, `used` slots into `run`: at a
    /// fixed offset from `run.base` unless it wraps. No descriptor: a
    /// chunk's frames are described at [`WriteChunk::commit`].
    ///
    /// # Safety
    /// As for `copy_frame`, at free-running index `run.start + used`, and
    /// `slots` must be `slots_for(frame.len())`.
    ///
    /// [`WriteChunk::commit`]: super::WriteChunk::commit
    #[inline(always)]
    pub(super) unsafe fn copy_in_run(&self, run: &Run, used: u64, slots: u64, frame: &[u8]) {
        if used + slots <= run.to_end {
            // SAFETY: the frame's slots lie before the end of the data
            // area, `used` slots from `run.base`, and are the caller's;
            // `frame` does not overlap them (the caller's contract).
            unsafe {
                copy_bytes(
                    run.base.add((used as usize) << self.slot_shift),
                    frame.as_ptr(),
                    frame.len(),
                );
            }
        } else {
            // SAFETY: the caller's contract, at `run.start + used`.
            unsafe { self.copy_frame(run.start.wrapping_add(used), frame) };
        }
    }

    /// [`copy_in_run`](Self::copy_in_run), then the frame's descriptor
    /// with its lap's stamp, whose Release store publishes it.
    ///
    /// # Safety
    /// As for `copy_in_run`.
    #[inline(always)]
    pub(super) unsafe fn write_in_run(&self, run: &Run, used: u64, slots: u64, frame: &[u8]) {
        // SAFETY: the caller's contract.
        unsafe { self.copy_in_run(run, used, slots, frame) };
        if used < run.to_end {
            // A frame that starts before the end of the data area is in
            // the run's lap.
            // SAFETY: `used < run.to_end`.
            let desc = unsafe { Self::desc_in_run(run, used) };
            self.store_desc(desc, frame.len(), run.stamp);
        } else {
            self.write_desc(run.start.wrapping_add(used), frame.len(), Lag::NONE);
        }
    }

    /// [`copy_in_run`](Self::copy_in_run) for a frame whose slots end at
    /// or before `run.to_end`, with [`stream_lines`]' non-temporal stores:
    /// the caller fences ([`store_fence`](super::bytes::store_fence))
    /// before publishing it.
    ///
    /// # Safety
    /// As for `copy_in_run`, and the frame's slots end at or before
    /// `run.to_end`.
    #[inline(always)]
    pub(super) unsafe fn stream_in_run(&self, run: &Run, used: u64, frame: &[u8]) {
        // SAFETY: the frame's slots, the caller's, before the end of the
        // data area: 64-byte aligned like every slot (the data area is, and
        // slots are powers of two of at least 64 bytes), so they hold the
        // frame rounded up to whole lines; `frame` does not overlap them.
        unsafe {
            stream_lines(
                run.base.add((used as usize) << self.slot_shift),
                frame.as_ptr(),
                frame.len(),
            );
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
    pub(super) unsafe fn read_in_run(
        &self,
        run: &Run,
        used: u64,
        slots: u64,
        len: usize,
        dst: &mut [u8],
    ) {
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
}

/// Why [`stream_like`] stopped.
pub(super) enum StreamEnd<'f> {
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
/// Each frame's descriptor (`plan.word`, stamped for the run's lap) is
/// stored after its bytes, publishing it; one-slot frames' descriptors,
/// eight to a line, are stored together after the last frame's bytes, the
/// last first ([`put_descs`]), so that a consumer waiting on the first
/// reads their line once, whole.
///
/// # Safety
/// The `room` slots from `dst`/`desc` are free, the producer's, and end
/// before the end of the data area; `plan` is the plan of a valid length,
/// and `HOW` suits it (see [`copy_as`]); no frame overlaps the slots.
#[inline(always)]
pub(super) unsafe fn stream_like<'f, I: Iterator<Item = &'f [u8]>, const HOW: u8>(
    frames: &mut I,
    dst: &mut *mut u8,
    desc: &mut *const SlotDesc,
    plan: &LenPlan,
    room: u64,
) -> (u64, StreamEnd<'f>) {
    let (mut at, mut at_desc) = (*dst, *desc);
    let (mut k, mut left) = (0, room);
    let one_slot = plan.slots == 1;
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
                    if !one_slot {
                        put_desc(&*at_desc, plan.word);
                    }
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
    if one_slot {
        // SAFETY: the `k` descriptors of the frames written above, one
        // slot each from `desc`, among the caller's.
        unsafe { put_descs(*desc, k as usize, 1, plan.word) };
    }
    (*dst, *desc) = (at, at_desc);
    (k, end)
}
