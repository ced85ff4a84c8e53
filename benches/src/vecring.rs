//! vecring through its copying API (`send`/`send_batch`, `recv`/`recv_batch`)
//! and its zero-copy API (`write_chunk` + `push_run`, `read_chunk` +
//! `next_run`).

use crate::pipeline::{Rx, Tx};
use crate::touch;
use vecring_core::test_support::pattern::fnv1a;
use vecring_core::{Consumer, Producer, PushError, RecvError, RingStorage, SendError};

/// Copying producer: `send` for batch 1, `send_batch` otherwise, from an
/// array of `N`-byte frames (the rtrb peer's source).
pub struct CopyTx<S: RingStorage, const N: usize> {
    tx: Producer<S>,
    frames: Vec<[u8; N]>,
    batch: usize,
}

impl<S: RingStorage, const N: usize> CopyTx<S, N> {
    /// A producer sending `frames` (cycled), `batch` per call.
    ///
    /// # Panics
    /// If `frames` is empty.
    pub fn new(tx: Producer<S>, frames: Vec<[u8; N]>, batch: usize) -> Self {
        assert!(!frames.is_empty(), "no frames to send");
        CopyTx { tx, frames, batch }
    }
}

impl<S: RingStorage, const N: usize> Tx for CopyTx<S, N> {
    fn send(&mut self, max: usize) -> usize {
        if self.batch == 1 {
            match self.tx.send(&self.frames[0]) {
                Ok(()) => 1,
                Err(SendError::Push(PushError::Full)) => 0,
                Err(e) => panic!("send: {e}"),
            }
        } else {
            let batch = &self.frames[..max.min(self.frames.len())];
            self.tx
                .send_batch(batch.iter().map(|f| f.as_slice()))
                .expect("send_batch")
        }
    }

    fn batch(&self) -> usize {
        self.batch
    }
}

/// Copying consumer: `recv` for batch 1, `recv_batch` otherwise, into
/// `batch` contiguous buffers of `N` bytes (the same sink as the rtrb
/// peer's).
pub struct CopyRx<S: RingStorage, const N: usize> {
    rx: Consumer<S>,
    bufs: Vec<[u8; N]>,
    lens: Vec<usize>,
}

impl<S: RingStorage, const N: usize> CopyRx<S, N> {
    /// A consumer expecting frames of `N` bytes, `batch` per call.
    pub fn new(rx: Consumer<S>, batch: usize) -> Self {
        CopyRx {
            rx,
            bufs: vec![[0; N]; batch],
            lens: vec![0; batch],
        }
    }
}

impl<S: RingStorage + 'static, const N: usize> Rx for CopyRx<S, N> {
    fn recv(&mut self) -> usize {
        if self.bufs.len() == 1 {
            match self.rx.recv(&mut self.bufs[0]) {
                Ok(n) => {
                    debug_assert_eq!(n, N, "frame length");
                    1
                }
                Err(RecvError::Empty) => 0,
                Err(e) => panic!("recv: {e}"),
            }
        } else {
            let n = self
                .rx
                .recv_batch(&mut self.bufs, &mut self.lens)
                .expect("recv_batch");
            debug_assert!(self.lens[..n].iter().all(|&l| l == N), "frame length");
            n
        }
    }

    fn digest(&self) -> u64 {
        fnv1a(&self.bufs[0])
    }
}

/// Zero-copy producer: reserves slots for a batch, writes each frame in
/// place, commits once. A contiguous frame of the expected `N` bytes is
/// written as a `[u8; N]`, as the rtrb peer writes its elements; a wrapped
/// one through `FrameWriter::segments_mut`.
pub struct ZeroCopyTx<S: RingStorage, const N: usize> {
    tx: Producer<S>,
    frames: Vec<[u8; N]>,
    batch: usize,
    slots_per_frame: usize,
}

impl<S: RingStorage, const N: usize> ZeroCopyTx<S, N> {
    /// A producer writing `frames` (cycled) in place, `batch` per chunk.
    ///
    /// # Panics
    /// If `frames` is empty.
    pub fn new(tx: Producer<S>, frames: Vec<[u8; N]>, batch: usize) -> Self {
        assert!(!frames.is_empty(), "no frames to send");
        let slots_per_frame = tx.geometry().slots_for(N) as usize;
        ZeroCopyTx {
            tx,
            frames,
            batch,
            slots_per_frame,
        }
    }
}

impl<S: RingStorage, const N: usize> Tx for ZeroCopyTx<S, N> {
    fn send(&mut self, max: usize) -> usize {
        let max = max.min(self.frames.len());
        let mut chunk = self
            .tx
            .write_chunk(max * self.slots_per_frame)
            .expect("write_chunk");
        let frames = &self.frames[..max];
        let pushed = chunk.push_run(N, max, |i, w| {
            let frame = &frames[i];
            match w.contiguous_mut().map(<&mut [u8; N]>::try_from) {
                Some(Ok(dst)) => *dst = *frame,
                _ => {
                    let mut at = 0;
                    for seg in w.segments_mut() {
                        let end = at + seg.len();
                        seg.copy_from_slice(&frame[at..end]);
                        at = end;
                    }
                }
            }
        });
        match pushed {
            Ok(_) | Err(PushError::Full) => {}
            Err(e) => panic!("push_run: {e}"),
        }
        chunk.commit()
    }

    fn batch(&self) -> usize {
        self.batch
    }
}

/// Zero-copy consumer: reads up to a batch of frames in place (every byte,
/// with [`touch`]), releases them once. Runs of frames of the expected `N`
/// bytes are read as `[u8; N]` (`FrameRun::into_arrays`), as the rtrb peer
/// reads its elements; the frame that wraps, segment by segment.
pub struct ZeroCopyRx<S: RingStorage, const N: usize> {
    rx: Consumer<S>,
    batch: usize,
    sum: u64,
}

impl<S: RingStorage, const N: usize> ZeroCopyRx<S, N> {
    /// A consumer expecting frames of `N` bytes, `batch` per chunk.
    pub fn new(rx: Consumer<S>, batch: usize) -> Self {
        ZeroCopyRx { rx, batch, sum: 0 }
    }
}

impl<S: RingStorage + 'static, const N: usize> Rx for ZeroCopyRx<S, N> {
    fn recv(&mut self) -> usize {
        let mut chunk = self.rx.read_chunk(self.batch).expect("read_chunk");
        let (mut n, mut sum) = (0, self.sum);
        while let Some(run) = chunk.next_run().expect("next_run") {
            debug_assert_eq!(run.frame_len(), N, "frame length");
            n += run.len();
            match run.into_arrays::<N>() {
                Ok(frames) => {
                    for bytes in frames {
                        sum = sum.wrapping_add(touch(bytes));
                    }
                }
                // The frame that wraps around the end of the ring.
                Err(run) => {
                    for frame in run {
                        for seg in frame.segments() {
                            sum = sum.wrapping_add(touch(seg));
                        }
                    }
                }
            }
        }
        self.sum = sum;
        n
    }

    fn digest(&self) -> u64 {
        self.sum
    }
}
