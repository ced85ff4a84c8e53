//! Model checks of the ring's publication protocol with loom: stamped
//! descriptors one way, the consumer's index the other.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p vecring-core --test loom --release`.
//! Capacities are tiny so every interleaving is explored in seconds; the
//! preemption bound is 3 unless `LOOM_MAX_PREEMPTIONS` says otherwise.
//!
//! Under loom, `HeapRing` keeps one loom cell per slot and the ring records
//! every read and write of a slot's bytes in it (`RingStorage::slot_access`),
//! so loom reports a causality violation when the producer writes a slot the
//! consumer may still be reading, or the consumer reads a slot before the
//! producer's writes are visible to it. The frames' bytes are published by
//! the Release store of their descriptor's stamp (`put_desc`) and seen
//! through the consumer's Acquire loads of it, or Relaxed loads and an
//! Acquire fence (`Consumer::recv`, `Consumer::recv_batch`,
//! `ReadChunk::start_run`, `Consumer::find_ready`); the slots go back through the Release store and
//! Acquire load of `tail`. Descriptors are loom atomics, and every model of
//! more frames than slots runs the consumer into descriptors left from the
//! lap before, which it must not take. Each Acquire/Release
//! operation on the descriptors' stamps and on `tail`, weakened to `Relaxed`,
//! fails these models, and so do a hold-back that does not hold or that
//! holds back `recv` (`scripts/loom-weaken.sh` applies each of these and
//! runs the models it must fail; the suite runs it).
//!
//! Each model pairs one way of writing (`Write`) with one way of reading
//! (`Read`), so that every copy and in-place path of both sides runs against
//! the other side's half of the protocol.
#![cfg(loom)]

use std::time::Duration;
use vecring_core::{
    Consumer, Geometry, HeapRing, HoldBack, Producer, PushError, RecvError, SendError,
};

/// The preemption bound when `LOOM_MAX_PREEMPTIONS` is not set: each of
/// the four weakened orderings fails every model even at 2, and the whole
/// file runs in seconds at 3.
const PREEMPTIONS: usize = 3;

/// The bytes of frame `seq`, `len` long.
fn pattern(seq: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (seq as u8).wrapping_mul(17).wrapping_add(i as u8))
        .collect()
}

/// How the producer writes its frames.
#[derive(Clone, Copy, Debug)]
enum Write {
    /// `Producer::send`, one frame at a time.
    Send,
    /// `Producer::send_batch` with every frame not yet sent.
    SendBatch,
    /// `WriteChunk::push` into a chunk of the whole ring, then `commit`.
    Push,
    /// `WriteChunk::push_with`, each frame appended in place.
    PushWith,
    /// `WriteChunk::push_run` (frames of one length), each frame written
    /// in place through its segments.
    PushRun,
}

/// How the consumer reads its frames.
#[derive(Clone, Copy, Debug)]
enum Read {
    /// `Consumer::recv`, one frame at a time.
    Recv,
    /// `Consumer::recv_batch` into as many buffers as the ring has slots.
    RecvBatch,
    /// `ReadChunk::next_frame`, each frame copied out with `to_vec`.
    Frames,
    /// `ReadChunk::next_run`, as `&[u8; 64]` arrays when it can
    /// (`FrameRun::into_arrays`), otherwise frame by frame.
    Runs,
    /// `ReadChunk::keep` on chunks of up to two frames, read in place, then
    /// `Consumer::release_to` one frame at a time.
    Keep,
    /// `Consumer::recv_batch` with a hold-back of the whole ring and no
    /// wait: every batch read of a few one-slot frames looks for published
    /// frames once more before reading (the hold-back's own search).
    HeldBack,
    /// A hold-back of the whole ring that never expires (`wait:
    /// Duration::MAX`): `Consumer::recv_batch`, and when it held ready
    /// frames back (as it would for ever; `EndpointStats::held_back`
    /// counts it), `Consumer::recv`, which is never held back and must take
    /// one at once. `HELD_FOR_EVER` records that the hold-back held.
    HeldForEver,
}

/// Set by a [`Read::HeldForEver`] model when a batch read held frames
/// back (outside loom: it spans the model's executions).
static HELD_FOR_EVER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn builder() -> loom::model::Builder {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(PREEMPTIONS);
    }
    builder
}

/// Yields to the other thread: every wait loop must, or loom explores it
/// without end.
fn wait() {
    loom::thread::yield_now();
}

/// The producer writes `frames` in order, as `how` says, waiting (yielding)
/// while the ring is full.
fn write_all(tx: &mut Producer<HeapRing>, frames: &[Vec<u8>], how: Write) {
    let mut sent = 0;
    while sent < frames.len() {
        let before = sent;
        match how {
            Write::Send => match tx.send(&frames[sent]) {
                Ok(()) => sent += 1,
                Err(SendError::Push(PushError::Full)) => {}
                Err(e) => panic!("producer: {e}"),
            },
            Write::SendBatch => {
                let rest = frames[sent..].iter().map(|f| &f[..]);
                sent += tx.send_batch(rest).expect("producer");
            }
            Write::Push => {
                let mut chunk = tx.write_chunk(usize::MAX).expect("producer");
                while sent < frames.len() && chunk.push(&frames[sent]).is_ok() {
                    sent += 1;
                }
                chunk.commit();
            }
            Write::PushWith => {
                let mut chunk = tx.write_chunk(usize::MAX).expect("producer");
                while sent < frames.len() && chunk.fits(frames[sent].len()) {
                    let frame = &frames[sent];
                    chunk
                        .push_with(frame.len(), |w| assert_eq!(w.append(frame), frame.len()))
                        .expect("fits");
                    sent += 1;
                }
                chunk.commit();
            }
            Write::PushRun => {
                let len = frames[0].len();
                let mut chunk = tx.write_chunk(usize::MAX).expect("producer");
                let pushed = chunk.push_run(len, frames.len() - sent, |i, w| {
                    let mut bytes = &frames[sent + i][..];
                    for seg in w.segments_mut() {
                        let (now, later) = bytes.split_at(seg.len());
                        seg.copy_from_slice(now);
                        bytes = later;
                    }
                });
                match pushed {
                    Ok(n) => sent += n,
                    Err(PushError::Full) => {}
                    Err(e) => panic!("producer: {e}"),
                }
                chunk.commit();
            }
        }
        if sent == before {
            wait();
        }
    }
}

/// The consumer reads `count` frames, as `how` says, waiting (yielding)
/// while none is ready; returns them in the order read.
fn read_all(rx: &mut Consumer<HeapRing>, count: usize, how: Read) -> Vec<Vec<u8>> {
    let slots = rx.geometry().slot_count() as usize;
    let max = rx.geometry().max_frame_len() as usize;
    match how {
        Read::HeldBack => rx.set_hold_back(Some(HoldBack {
            below_slots: slots as u32,
            wait: Duration::ZERO,
        })),
        Read::HeldForEver => rx.set_hold_back(Some(HoldBack {
            below_slots: slots as u32,
            wait: Duration::MAX,
        })),
        _ => {}
    }
    let mut got: Vec<Vec<u8>> = Vec::new();
    while got.len() < count {
        let before = got.len();
        match how {
            Read::Recv => {
                let mut buf = vec![0; max];
                match rx.recv(&mut buf) {
                    Ok(n) => got.push(buf[..n].to_vec()),
                    Err(RecvError::Empty) => {}
                    Err(e) => panic!("consumer: {e}"),
                }
            }
            Read::RecvBatch | Read::HeldBack => {
                let (mut bufs, mut lens) = (vec![vec![0; max]; slots], vec![0; slots]);
                let n = rx.recv_batch(&mut bufs, &mut lens).expect("consumer");
                got.extend((0..n).map(|i| bufs[i][..lens[i]].to_vec()));
            }
            Read::HeldForEver => {
                let (mut bufs, mut lens) = (vec![vec![0; max]; slots], vec![0; slots]);
                let held = rx.stats().held_back;
                let n = rx.recv_batch(&mut bufs, &mut lens).expect("consumer");
                got.extend((0..n).map(|i| bufs[i][..lens[i]].to_vec()));
                if rx.stats().held_back > held {
                    assert_eq!(n, 0, "a batch read held back returns nothing");
                    HELD_FOR_EVER.store(true, std::sync::atomic::Ordering::Relaxed);
                    let mut buf = vec![0; max];
                    let n = rx.recv(&mut buf).expect("recv is never held back");
                    got.push(buf[..n].to_vec());
                }
            }
            Read::Frames => {
                let mut chunk = rx.read_chunk(slots).expect("consumer");
                while let Some(frame) = chunk.next_frame().expect("consumer") {
                    got.push(frame.to_vec());
                }
            }
            Read::Runs => {
                let mut chunk = rx.read_chunk(slots).expect("consumer");
                while let Some(run) = chunk.next_run().expect("consumer") {
                    match run.into_arrays::<64>() {
                        Ok(frames) => got.extend(frames.map(|f| f.to_vec())),
                        Err(run) => got.extend(run.map(|f| f.to_vec())),
                    }
                }
            }
            Read::Keep => {
                let mut chunk = rx.read_chunk(2).expect("consumer");
                let mut ends = Vec::new();
                while let Some(frame) = chunk.next_frame().expect("consumer") {
                    ends.push(frame.index() + frame.slots());
                    got.push(frame.segments().flatten().copied().collect());
                }
                chunk.keep();
                for end in ends {
                    assert!(rx.release_to(end), "kept frames release in order");
                }
            }
        }
        if got.len() == before {
            wait();
        }
    }
    got
}

/// A ring of `slots` 64-byte slots for frames of up to `max_frame`
/// bytes, and a producer thread writing frames of `lens` (each its
/// `pattern`) as `write` says: the consumer, the producer's thread (which
/// returns its endpoint) and the frames it writes.
fn start(
    slots: u32,
    max_frame: u32,
    lens: &'static [usize],
    write: Write,
) -> (
    Consumer<HeapRing>,
    loom::thread::JoinHandle<Producer<HeapRing>>,
    Vec<Vec<u8>>,
) {
    let ring = HeapRing::new(Geometry::with_max_frame_len(slots, 64, max_frame).unwrap());
    // SAFETY: the model's only producer and consumer of this ring.
    let (mut tx, rx) = unsafe {
        (
            Producer::attach(ring.clone()).unwrap(),
            Consumer::attach(ring).unwrap(),
        )
    };
    let frames: Vec<Vec<u8>> = lens
        .iter()
        .enumerate()
        .map(|(i, &n)| pattern(i, n))
        .collect();
    let expected = frames.clone();
    let producer = loom::thread::spawn(move || {
        write_all(&mut tx, &frames, write);
        tx
    });
    (rx, producer, expected)
}

/// The producer writes frames of `lens` bytes (as `write` says) through a
/// ring of `slots` slots of 64 bytes while the consumer reads them (as
/// `read` says): every frame arrives once, in order, intact, neither side
/// reports corruption, and the ring ends empty. Loom checks every access
/// to a slot's bytes against the ring's protocol (descriptor stamps, tail).
fn model(slots: u32, max_frame: u32, lens: &'static [usize], write: Write, read: Read) {
    builder().check(move || {
        let (mut rx, producer, expected) = start(slots, max_frame, lens, write);
        let got = read_all(&mut rx, lens.len(), read);
        let tx = producer.join().unwrap();
        assert_eq!(got, expected, "{write:?} -> {read:?}");
        assert_eq!(tx.corruption(), None);
        assert_eq!(rx.corruption(), None);
        assert_eq!(rx.ready_slots(), Ok(0));
    });
}

#[test]
fn single_slot_frames_through_two_slots() {
    model(2, 64, &[1, 64, 7], Write::Send, Read::Recv);
}

/// Frames like the last one read (the same descriptor word) take `recv`'s
/// fast path, which reads the slot without a chunk: one-slot frames
/// lapping a two-slot ring.
#[test]
fn recv_fast_path_for_frames_like_the_last() {
    model(2, 64, &[64; 5], Write::Send, Read::Recv);
}

/// `recv`'s fast path for two-slot frames; the ring holds two at a time.
#[test]
fn recv_fast_path_for_multi_slot_frames() {
    model(4, 128, &[100; 4], Write::Send, Read::Recv);
}

#[test]
fn multi_slot_frames_wrap_around() {
    model(4, 128, &[100, 30, 128], Write::Send, Read::Recv);
}

#[test]
fn send_batch_to_recv_batch() {
    model(
        4,
        128,
        &[64, 64, 64, 100, 40],
        Write::SendBatch,
        Read::RecvBatch,
    );
}

#[test]
fn equal_small_frames_in_groups() {
    // On the second lap, four frames like the last one read wait from slot
    // 0: `recv_batch` copies them as a group.
    model(4, 64, &[64; 8], Write::SendBatch, Read::RecvBatch);
}

#[test]
fn push_to_read_chunk_frames() {
    model(4, 128, &[100, 64, 128, 30], Write::Push, Read::Frames);
}

#[test]
fn push_with_to_runs() {
    // The third frame wraps (slots 3 and 0): a run of its own.
    model(4, 128, &[64, 100, 100, 64, 64], Write::PushWith, Read::Runs);
}

#[test]
fn push_run_to_runs_as_arrays() {
    model(4, 64, &[64; 6], Write::PushRun, Read::Runs);
}

#[test]
fn push_run_of_wrapping_frames_to_recv_batch() {
    // Three-slot frames in eight slots: the third wraps.
    model(8, 192, &[150; 4], Write::PushRun, Read::RecvBatch);
}

#[test]
fn kept_frames_hold_their_slots_until_released() {
    model(2, 64, &[64, 32, 64, 16], Write::SendBatch, Read::Keep);
}

#[test]
fn hold_back_reads_head_again_before_holding() {
    model(4, 64, &[64; 5], Write::Send, Read::HeldBack);
}

/// A hold-back that never expires holds a batch read back in some
/// interleaving (and so makes the hold-back's own look at `head` and the
/// reads after it run under the model), and never holds back `recv`.
#[test]
fn hold_back_holds_batches_and_never_recv() {
    model(4, 64, &[64; 5], Write::Send, Read::HeldForEver);
    assert!(
        HELD_FOR_EVER.load(std::sync::atomic::Ordering::Relaxed),
        "no interleaving held a batch read back"
    );
}

/// A batch is published first frame last: a consumer waiting at its read
/// position finds the whole batch when it finds its first frame, never a
/// part of it (`send_batch`, of any lengths, and a chunk of one length).
fn batch_seen_whole(lens: &'static [usize], write: Write) {
    builder().check(move || {
        let (mut rx, producer, expected) = start(8, 128, lens, write);
        let mut bufs = vec![vec![0u8; 128]; lens.len()];
        let mut got_lens = vec![0usize; lens.len()];
        let n = loop {
            match rx.recv_batch(&mut bufs, &mut got_lens).expect("consumer") {
                0 => wait(),
                n => break n,
            }
        };
        assert_eq!(n, lens.len(), "{write:?}: a part of the batch was seen");
        for (i, frame) in expected.iter().enumerate() {
            assert_eq!(&bufs[i][..got_lens[i]], &frame[..], "{write:?}: frame {i}");
        }
        producer.join().unwrap();
    });
}

#[test]
fn a_sent_batch_is_seen_whole() {
    batch_seen_whole(&[64, 64, 100], Write::SendBatch);
}

#[test]
fn a_committed_chunk_is_seen_whole() {
    batch_seen_whole(&[64, 64, 64], Write::Push);
}
