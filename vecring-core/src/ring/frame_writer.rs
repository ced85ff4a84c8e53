//! [`FrameWriter`]: a frame's reserved slot(s), written in place by the
//! caller's closure (`WriteChunk::push_with`, `WriteChunk::push_run`).

use core::marker::PhantomData;
use core::ptr;

/// Writes one frame into its reserved slot(s); see
/// [`WriteChunk::push_with`](super::WriteChunk::push_with).
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
    pub(super) fn new(head: *mut u8, head_len: usize, wrap: *mut u8, len: usize) -> Self {
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
