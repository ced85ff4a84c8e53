//! The consumer's hold-back.

use super::{channel, frame, NewRing};
use crate::geometry::Geometry;
use crate::ring::{Consumer, HoldBack, Producer, RingStorage};
use std::time::{Duration, Instant};

/// Frames the batch reads return now: `read_chunk`'s and then (for
/// what is left) `recv_batch`'s.
fn batch_reads<S: RingStorage>(rx: &mut Consumer<S>) -> (usize, usize) {
    let mut chunk = rx.read_chunk(usize::MAX).unwrap();
    let mut in_chunk = 0;
    while chunk.next_frame().unwrap().is_some() {
        in_chunk += 1;
    }
    drop(chunk);
    let mut bufs = vec![[0u8; 64]; 128];
    let mut lens = vec![0; 128];
    (in_chunk, rx.recv_batch(&mut bufs, &mut lens).unwrap())
}

/// Sends `n` 64-byte frames, seeded from `seed` on.
fn send_64<S: RingStorage>(tx: &mut Producer<S>, n: u8, seed: u8) {
    for i in 0..n {
        tx.send(&frame(64, seed.wrapping_add(i))).unwrap();
    }
}

pub(crate) fn hold_back_is_off_by_default<S: RingStorage + Clone>(new: NewRing<S>) {
    let (mut tx, mut rx) = channel(new, Geometry::with_max_frame_len(256, 64, 1514).unwrap());
    assert_eq!(rx.hold_back(), None);
    send_64(&mut tx, 5, 0);
    assert_eq!(batch_reads(&mut rx), (5, 0));
}

pub(crate) fn hold_back_holds_a_few_frames_until_the_wait_is_over<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let (mut tx, mut rx) = channel(new, Geometry::with_max_frame_len(256, 64, 1514).unwrap());
    // The wait is long enough that the checks made while holding back
    // all run within it even on a loaded machine (the test lasts as
    // long as the wait).
    let hold = HoldBack {
        below_slots: 64,
        wait: Duration::from_secs(3),
    };
    rx.set_hold_back(Some(hold));
    assert_eq!(rx.hold_back(), Some(hold));
    // Before any frame was seen, a few frames are read at once (the
    // consumer cannot tell one frame from several yet).
    send_64(&mut tx, 3, 0);
    assert_eq!(batch_reads(&mut rx), (3, 0));
    // One frame alone is never held back.
    tx.send(&frame(64, 3)).unwrap();
    assert_eq!(batch_reads(&mut rx), (1, 0));
    assert_eq!(rx.stats().held_back, 0, "nothing held back yet");
    // Several, fewer than 64 slots: held back, by both batch reads,
    // while `recv` still takes one.
    send_64(&mut tx, 5, 10);
    let started = Instant::now();
    assert_eq!(batch_reads(&mut rx), (0, 0));
    assert_eq!(rx.stats().held_back, 2, "each batch read held back counts");
    let mut buf = [0u8; 64];
    assert_eq!(rx.recv(&mut buf), Ok(64));
    assert_eq!(buf[..], frame(64, 10)[..]);
    // The producer's index is not read again while holding back.
    send_64(&mut tx, 64, 20);
    assert_eq!(batch_reads(&mut rx), (0, 0));
    assert_eq!(rx.stats().held_back, 4, "recv is not counted");
    // ... until the wait is over, and then only the frames it knew of.
    let (mut bufs, mut lens) = (vec![[0u8; 64]; 128], vec![0; 128]);
    let mut got = 0;
    while got == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "held back for ever"
        );
        got = rx.recv_batch(&mut bufs, &mut lens).unwrap();
    }
    assert!(started.elapsed() >= hold.wait);
    assert_eq!(got, 4);
    // 64 slots or more are read at once.
    assert_eq!(batch_reads(&mut rx), (64, 0));
    // What is left of an earlier look at the producer's index is not
    // held back when the producer has gone on since.
    send_64(&mut tx, 70, 0);
    let mut chunk = rx.read_chunk(66).unwrap();
    while chunk.next_frame().unwrap().is_some() {}
    drop(chunk);
    send_64(&mut tx, 64, 0);
    assert_eq!(batch_reads(&mut rx), (68, 0));
    // Turned off: nothing is held back.
    rx.set_hold_back(None);
    send_64(&mut tx, 5, 0);
    assert_eq!(batch_reads(&mut rx), (5, 0));
}

/// `recv` is never held back, whichever of its paths reads the frame:
/// here frames of a new length (a descriptor word the fast path has not
/// seen) go through the chunk path, which must not ask the hold-back.
pub(crate) fn hold_back_never_holds_recv<S: RingStorage + Clone>(new: NewRing<S>) {
    let (mut tx, mut rx) = channel(new, Geometry::with_max_frame_len(256, 64, 1514).unwrap());
    rx.set_hold_back(Some(HoldBack {
        below_slots: 64,
        wait: Duration::from_secs(60),
    }));
    // A one-slot frame read: the stream is one of one-slot frames.
    send_64(&mut tx, 1, 0);
    let mut buf = [0u8; 64];
    assert_eq!(rx.recv(&mut buf), Ok(64));
    // Five one-slot frames of another length: more than one and fewer
    // than 64 slots ready, so a batch read is held back.
    for i in 0..5u8 {
        tx.send(&frame(60, i)).unwrap();
    }
    assert_eq!(batch_reads(&mut rx), (0, 0));
    // `recv` reads each of them at once, the held-back ones included.
    for i in 0..5u8 {
        assert_eq!(rx.recv(&mut buf), Ok(60), "frame {i}");
        assert_eq!(buf[..60], frame(60, i)[..]);
    }
    assert_eq!(rx.recv(&mut buf), Err(crate::ring::RecvError::Empty));
}

pub(crate) fn hold_back_leaves_frames_of_several_slots_alone<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let (mut tx, mut rx) = channel(new, Geometry::with_max_frame_len(256, 64, 1514).unwrap());
    rx.set_hold_back(Some(HoldBack {
        below_slots: 64,
        wait: Duration::from_secs(60),
    }));
    let mut buf = vec![[0u8; 1514]; 4];
    let mut lens = [0; 4];
    for round in 0..3u8 {
        // Two 65-byte frames (four slots), then two of 1514 bytes (48
        // slots): read at once.
        tx.send(&frame(65, round)).unwrap();
        tx.send(&frame(65, round + 1)).unwrap();
        assert_eq!(rx.recv_batch(&mut buf, &mut lens), Ok(2));
        tx.send(&frame(1514, round)).unwrap();
        tx.send(&frame(1514, round + 1)).unwrap();
        assert_eq!(rx.recv_batch(&mut buf, &mut lens), Ok(2));
        assert_eq!(buf[1][..], frame(1514, round + 1)[..]);
    }
}
