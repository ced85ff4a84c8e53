//! The rtrb peer: `rtrb::RingBuffer<[u8; N]>`, one element per frame of
//! exactly `N` bytes.
//!
//! Of the two natural ways to carry byte messages in rtrb (a `u8` ring with
//! a length prefix before each message, or fixed-size array elements) this
//! is the faster and simpler one for frames of one length: no framing to
//! parse, no message split across the wrap point, and every frame starts
//! at a multiple of `N`. Both sides use rtrb's chunk API, the same way the
//! vecring workloads use theirs: the producer writes up to a batch of
//! elements in place (`write_chunk_uninit`) and commits once; the consumer
//! takes up to a batch (`read_chunk`) and either copies each frame out
//! ([`RtrbMode::Copy`]) or reads it in place ([`RtrbMode::InPlace`]), then
//! commits once.

use crate::pipeline::{Rx, Tx};
use crate::touch;
use rtrb::chunks::ChunkError;
use rtrb::RingBuffer;
use vecring_core::test_support::pattern::fnv1a;

/// What the rtrb consumer does with each frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtrbMode {
    /// Copies it into a buffer (like vecring's `recv_batch`).
    Copy,
    /// Reads every byte in place (like vecring's `read_chunk`).
    InPlace,
}

/// rtrb producer of `N`-byte frames.
pub struct RtrbTx<const N: usize> {
    tx: rtrb::Producer<[u8; N]>,
    source: Vec<[u8; N]>,
    batch: usize,
}

/// rtrb consumer of `N`-byte frames.
pub struct RtrbRx<const N: usize> {
    rx: rtrb::Consumer<[u8; N]>,
    mode: RtrbMode,
    bufs: Vec<[u8; N]>,
    batch: usize,
    sum: u64,
}

/// An rtrb ring of `capacity` frames of `N` bytes, sending copies of
/// `source` (cycled) `batch` at a time.
///
/// # Panics
/// If `source` is empty or `batch` is 0.
pub fn rtrb_pair<const N: usize>(
    capacity: usize,
    source: &[[u8; N]],
    batch: usize,
    mode: RtrbMode,
) -> (RtrbTx<N>, RtrbRx<N>) {
    assert!(!source.is_empty() && batch > 0);
    let (tx, rx) = RingBuffer::new(capacity);
    let source = (0..batch).map(|i| source[i % source.len()]).collect();
    (
        RtrbTx { tx, source, batch },
        RtrbRx {
            rx,
            mode,
            bufs: vec![[0; N]; batch],
            batch,
            sum: 0,
        },
    )
}

impl<const N: usize> Tx for RtrbTx<N> {
    fn send(&mut self, max: usize) -> usize {
        let mut chunk = match self.tx.write_chunk_uninit(max) {
            Ok(chunk) => chunk,
            Err(ChunkError::TooFewSlots(0)) => return 0,
            Err(ChunkError::TooFewSlots(n)) => self.tx.write_chunk_uninit(n).expect("n slots"),
        };
        let (first, second) = chunk.as_mut_slices();
        let n = first.len() + second.len();
        for (slot, frame) in first.iter_mut().chain(second).zip(&self.source) {
            slot.write(*frame);
        }
        // SAFETY: the loop above wrote every one of the chunk's `n` slots
        // (`n <= batch == source.len()`).
        unsafe { chunk.commit_all() };
        n
    }

    fn batch(&self) -> usize {
        self.batch
    }
}

impl<const N: usize> Rx for RtrbRx<N> {
    fn recv(&mut self) -> usize {
        let chunk = match self.rx.read_chunk(self.batch) {
            Ok(chunk) => chunk,
            Err(ChunkError::TooFewSlots(0)) => return 0,
            Err(ChunkError::TooFewSlots(n)) => self.rx.read_chunk(n).expect("n slots"),
        };
        let (first, second) = chunk.as_slices();
        let n = first.len() + second.len();
        let frames = first.iter().chain(second);
        match self.mode {
            RtrbMode::Copy => {
                for (buf, frame) in self.bufs.iter_mut().zip(frames) {
                    buf.copy_from_slice(frame);
                }
            }
            RtrbMode::InPlace => {
                // Summed in a local, as the vecring consumer does.
                let mut sum = self.sum;
                for frame in frames {
                    sum = sum.wrapping_add(touch(frame));
                }
                self.sum = sum;
            }
        }
        chunk.commit_all();
        n
    }

    fn digest(&self) -> u64 {
        match self.mode {
            RtrbMode::Copy => fnv1a(&self.bufs[0]),
            RtrbMode::InPlace => self.sum,
        }
    }
}
