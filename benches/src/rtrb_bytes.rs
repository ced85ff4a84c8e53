//! The rtrb byte-message peer: `rtrb::RingBuffer<u8>`, each message a
//! 2-byte little-endian length followed by its bytes, packed back to back.
//!
//! This is how rtrb carries messages of any length (an Ethernet link's
//! frames are 1 to 9216 bytes): the fixed-element peer ([`crate::rtrb_peer`])
//! can carry only frames of exactly one length. The length is inline and
//! the bytes unpadded, so a 1514-byte frame costs 1516 ring bytes (vecring:
//! 24 64-byte slots and a 4-byte descriptor); a message may be split across
//! the end of the buffer.
//!
//! Both sides use rtrb's chunk API as the fixed-element peer does: the
//! producer reserves room for up to a batch of messages
//! (`write_chunk_uninit`) and commits once; the consumer takes up to a
//! batch's worth of bytes (`read_chunk`), parses messages out of it, and
//! commits the bytes of the whole messages it took. A consumer that reads
//! in place puts a message split across the end together in a buffer
//! first, as a byte-message consumer must to hand it on as one slice.

use crate::pipeline::{Rx, Tx};
use crate::rtrb_peer::RtrbMode;
use crate::touch;
use rtrb::chunks::ChunkError;
use rtrb::RingBuffer;
use std::mem::MaybeUninit;
use vecring_core::test_support::pattern::fnv1a;

/// Bytes of the length before each message.
pub const PREFIX: usize = 2;

/// rtrb byte-message producer of `N`-byte frames.
pub struct RtrbBytesTx<const N: usize> {
    tx: rtrb::Producer<u8>,
    source: Vec<[u8; N]>,
    batch: usize,
}

/// rtrb byte-message consumer (expecting `N`-byte frames).
pub struct RtrbBytesRx<const N: usize> {
    rx: rtrb::Consumer<u8>,
    mode: RtrbMode,
    bufs: Vec<[u8; N]>,
    batch: usize,
    sum: u64,
}

/// An rtrb byte ring of `capacity` bytes, sending copies of `source`
/// (cycled) `batch` at a time. Unless `capacity` is a multiple of
/// `PREFIX + N`, messages are split across the end of the buffer.
///
/// # Panics
/// If `source` is empty, `batch` is 0, or `N` does not fit the prefix.
pub fn rtrb_bytes_pair<const N: usize>(
    capacity: usize,
    source: &[[u8; N]],
    batch: usize,
    mode: RtrbMode,
) -> (RtrbBytesTx<N>, RtrbBytesRx<N>) {
    assert!(!source.is_empty() && batch > 0 && N <= usize::from(u16::MAX));
    assert!(capacity >= batch * (PREFIX + N), "room for a batch");
    let (tx, rx) = RingBuffer::new(capacity);
    let source = (0..batch).map(|i| source[i % source.len()]).collect();
    (
        RtrbBytesTx { tx, source, batch },
        RtrbBytesRx {
            rx,
            mode,
            bufs: vec![[0; N]; batch],
            batch,
            sum: 0,
        },
    )
}

/// Copies `bytes` to offset `at` of the two slices of a chunk (taken as
/// one run of bytes, split across the end of the first); returns the
/// offset after them.
#[inline(always)]
fn put(
    first: &mut [MaybeUninit<u8>],
    second: &mut [MaybeUninit<u8>],
    at: usize,
    bytes: &[u8],
) -> usize {
    let end = at + bytes.len();
    let split = first.len();
    if end <= split {
        copy_into(&mut first[at..end], bytes);
    } else if at >= split {
        copy_into(&mut second[at - split..end - split], bytes);
    } else {
        let (head, tail) = bytes.split_at(split - at);
        copy_into(&mut first[at..], head);
        copy_into(&mut second[..tail.len()], tail);
    }
    end
}

/// Copies `bytes` into `dst` (of the same length).
#[inline(always)]
fn copy_into(dst: &mut [MaybeUninit<u8>], bytes: &[u8]) {
    assert_eq!(dst.len(), bytes.len());
    // SAFETY: both are `bytes.len()` long; `u8` and `MaybeUninit<u8>`
    // have the same layout; a chunk does not overlap the source.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst.as_mut_ptr().cast(), bytes.len()) };
}

impl<const N: usize> Tx for RtrbBytesTx<N> {
    fn send(&mut self, max: usize) -> usize {
        let need = PREFIX + N;
        let (mut chunk, n) = match self.tx.write_chunk_uninit(max * need) {
            Ok(chunk) => (chunk, max),
            Err(ChunkError::TooFewSlots(k)) if k >= need => {
                let n = k / need;
                (self.tx.write_chunk_uninit(n * need).expect("n messages"), n)
            }
            Err(ChunkError::TooFewSlots(_)) => return 0,
        };
        let (first, second) = chunk.as_mut_slices();
        let mut at = 0;
        for frame in &self.source[..n] {
            at = put(first, second, at, &(N as u16).to_le_bytes());
            at = put(first, second, at, frame);
        }
        // SAFETY: the loop above wrote all `n * need` bytes of the chunk.
        unsafe { chunk.commit_all() };
        n
    }

    fn batch(&self) -> usize {
        self.batch
    }
}

/// The message whose length is at `at` in `bytes`, if all of it lies there.
#[inline(always)]
fn whole_message(bytes: &[u8], at: usize) -> Option<&[u8]> {
    let prefix = bytes.get(at..at + PREFIX)?;
    let len = usize::from(u16::from_le_bytes([prefix[0], prefix[1]]));
    bytes.get(at + PREFIX..at + PREFIX + len)
}

/// Byte `i` of the two slices of a chunk.
#[inline(always)]
fn byte_at(first: &[u8], second: &[u8], i: usize) -> u8 {
    if i < first.len() {
        first[i]
    } else {
        second[i - first.len()]
    }
}

impl<const N: usize> Rx for RtrbBytesRx<N> {
    fn recv(&mut self) -> usize {
        let budget = self.batch * (PREFIX + N);
        let chunk = match self.rx.read_chunk(budget) {
            Ok(chunk) => chunk,
            Err(ChunkError::TooFewSlots(0)) => return 0,
            Err(ChunkError::TooFewSlots(k)) => self.rx.read_chunk(k).expect("k bytes"),
        };
        let (first, second) = chunk.as_slices();
        let total = first.len() + second.len();
        let (mut at, mut n, mut sum) = (0, 0, self.sum);
        while n < self.batch && at + PREFIX <= total {
            // The message's bytes: one slice (nearly always), or two
            // across the end.
            let (seg, off) = if at < first.len() {
                (first, at)
            } else {
                (second, at - first.len())
            };
            let (len, a, b): (usize, &[u8], &[u8]) = match whole_message(seg, off) {
                Some(bytes) => (bytes.len(), bytes, &[]),
                None => {
                    let len = usize::from(u16::from_le_bytes([
                        byte_at(first, second, at),
                        byte_at(first, second, at + 1),
                    ]));
                    let (start, split) = (at + PREFIX, first.len());
                    let end = (start + len).min(total);
                    if start >= split {
                        (len, &second[start - split..end - split], &[])
                    } else {
                        (len, &first[start..], &second[..end - split])
                    }
                }
            };
            debug_assert!(
                len == N && a.len() + b.len() == len,
                "message of {len} bytes"
            );
            match self.mode {
                RtrbMode::Copy => {
                    let buf = &mut self.bufs[n];
                    buf[..a.len()].copy_from_slice(a);
                    if !b.is_empty() {
                        buf[a.len()..len].copy_from_slice(b);
                    }
                }
                RtrbMode::InPlace if b.is_empty() => sum = sum.wrapping_add(touch(a)),
                // A message split across the end is not one slice: it is
                // put together in a buffer first (once a lap).
                RtrbMode::InPlace => {
                    let buf = &mut self.bufs[0];
                    buf[..a.len()].copy_from_slice(a);
                    buf[a.len()..len].copy_from_slice(b);
                    sum = sum.wrapping_add(touch(&buf[..len]));
                }
            }
            at += PREFIX + len;
            n += 1;
        }
        self.sum = sum;
        chunk.commit(at);
        n
    }

    fn digest(&self) -> u64 {
        match self.mode {
            RtrbMode::Copy => fnv1a(&self.bufs[0]),
            RtrbMode::InPlace => self.sum,
        }
    }
}
