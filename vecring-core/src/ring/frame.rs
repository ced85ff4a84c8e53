//! Received frames read in place: one [`Frame`], a [`FrameRun`] of
//! frames of one length, and [`FrameArrays`], such a run as arrays.

use super::bytes::copy_bytes;
use super::shape::Shape;
use core::marker::PhantomData;
use core::ptr;

/// Frames of one length that follow one another in the ring, from
/// [`ReadChunk::next_run`]: an iterator of [`Frame`]s, each of them
/// validated already.
///
/// [`ReadChunk::next_run`]: super::ReadChunk::next_run
pub struct FrameRun<'c> {
    /// The first frame's first byte.
    pub(super) head: *const u8,
    /// The first frame's bytes before the end of the data area (`len`,
    /// unless the run is one frame that wraps).
    pub(super) head_len: usize,
    /// The start of the data area.
    pub(super) wrap: *const u8,
    /// Every frame's length.
    pub(super) len: usize,
    /// Bytes from one frame to the next.
    pub(super) stride: usize,
    /// Free-running index of the next frame's first slot.
    pub(super) first: u64,
    /// Every frame's slots.
    pub(super) slots: u64,
    /// Frames not yet iterated.
    pub(super) count: u64,
    pub(super) _chunk: PhantomData<&'c [u8]>,
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
    pub(super) head: *const u8,
    /// Bytes before the end of the data area (`len` unless wrapped).
    pub(super) head_len: usize,
    /// The start of the data area, where a wrapped frame continues.
    pub(super) wrap: *const u8,
    pub(super) len: usize,
    pub(super) first: u64,
    pub(super) slots: u64,
    pub(super) _chunk: PhantomData<&'c [u8]>,
}

impl<'c> Frame<'c> {
    /// A frame of `len` bytes in the `slots` slots from free-running
    /// `first`, all published and validated by the caller.
    #[inline(always)]
    pub(super) fn new(shape: &Shape, first: u64, len: usize, slots: u64) -> Self {
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
    pub(super) fn detach<'d>(self) -> Frame<'d> {
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
