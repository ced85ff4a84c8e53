//! A hostile peer: every kind of corruption is detected, reported at its
//! frame, and sticks; scribbled descriptors are rewritten.

use super::{corruptible_channel, forge_desc, frame, geometry, set_desc, NewRing};
use crate::abi::{SlotDesc, DESC_STAMP_ONE, SLOT_FLAG_MORE};
use crate::geometry::Geometry;
use crate::ring::{Consumer, Corruption, IndexKind, Producer, RecvError, RingStorage, SendError};
use crate::sync::Ordering;

fn poisoned_consumer<S: RingStorage + Clone>(
    new: NewRing<S>,
    corrupt: impl FnOnce(&S),
) -> Corruption {
    let (ring, mut tx, mut rx) = corruptible_channel(new, geometry(16, 2048));
    tx.send(&frame(100, 0)).unwrap();
    tx.send(&frame(3000, 1)).unwrap();
    corrupt(&ring);
    let mut buf = [0u8; 9216];
    let mut first = None;
    for _ in 0..3 {
        match rx.recv(&mut buf) {
            Err(RecvError::Corrupt(c)) => {
                first.get_or_insert(c);
                assert_eq!(Some(c), first, "the error is sticky");
            }
            Ok(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(rx.stats().corruptions, 1);
    first.expect("corruption detected")
}

/// A chunk's `ready` reports a corrupt descriptor at the read position
/// and poisons the consumer: a reader that asks for frames only when it
/// counts some (the driver's burst) would otherwise stall on it forever,
/// unreported (`ready_slots` alone counts 0 there). One after valid frames
/// is theirs to reach.
pub(crate) fn a_chunk_ready_reports_a_corrupt_first_descriptor<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let (ring, mut tx, mut rx) = corruptible_channel(new, geometry(16, 2048));
    tx.send(&frame(100, 0)).unwrap();
    tx.send(&frame(100, 1)).unwrap();
    set_desc(&ring, 1, 0xffff, 0);
    let mut chunk = rx.read_chunk(8).unwrap();
    assert_eq!(chunk.ready(), Ok(1), "the valid frame before it");
    assert_eq!(chunk.next_frame().unwrap().unwrap().to_vec(), frame(100, 0));
    assert_eq!(chunk.ready_slots(), 0, "counting alone sees nothing");
    let c = chunk.ready().unwrap_err();
    assert!(
        matches!(
            c,
            Corruption::Length {
                slot: 1,
                len: 0xffff,
                ..
            }
        ),
        "{c:?}"
    );
    assert_eq!(chunk.ready(), Err(c), "sticky");
    assert!(chunk.next_frame().is_err());
    drop(chunk);
    assert_eq!(rx.stats().corruptions, 1);
    assert!(rx.read_chunk(8).is_err(), "the consumer is poisoned");
}

/// The producer rewrites every frame's descriptor, whoever changed it
/// while its slot was free.
pub(crate) fn descriptors_scribbled_on_while_free_are_rewritten<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let (ring, mut tx, mut rx) = corruptible_channel(new, geometry(16, 2048));
    let mut buf = [0u8; 200];
    for lap in 0..4u8 {
        // Every path that writes a descriptor: send, send_batch, and
        // the zero-copy pushes.
        for i in 0..16u8 {
            let f = frame(100, lap * 16 + i);
            match i % 4 {
                0 => tx.send(&f).unwrap(),
                1 => assert_eq!(tx.send_batch([&f[..]]), Ok(1)),
                2 => {
                    let mut chunk = tx.write_chunk(1).unwrap();
                    chunk
                        .push_with(100, |w| assert_eq!(w.append(&f), 100))
                        .unwrap();
                    chunk.commit();
                }
                _ => {
                    let mut chunk = tx.write_chunk(1).unwrap();
                    let run = chunk.push_run(100, 1, |_, w| assert_eq!(w.append(&f), 100));
                    assert_eq!(run, Ok(1));
                    chunk.commit();
                }
            }
            let n = rx.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], &f[..], "lap {lap} frame {i}");
        }
        // Free slots, scribbled on as a peer could: another valid
        // length, garbage, the right word.
        for slot in 0..16 {
            match lap {
                0 => set_desc(&ring, slot, 50, 0),
                1 => set_desc(&ring, slot, 0xffff, 0xffff),
                2 => set_desc(&ring, slot, 100, 0),
                _ => {}
            }
        }
    }
    assert_eq!(rx.stats().corruptions, 0);
}

pub(crate) fn consumer_detects_each_kind_of_corruption<S: RingStorage + Clone>(new: NewRing<S>) {
    let c = poisoned_consumer(new, |r| set_desc(r, 0, 0, 0));
    assert!(matches!(
        c,
        Corruption::Length {
            slot: 0,
            len: 0,
            ..
        }
    ));
    let c = poisoned_consumer(new, |r| set_desc(r, 0, 4000, 0));
    assert!(matches!(c, Corruption::Length { len: 4000, .. }));
    let c = poisoned_consumer(new, |r| set_desc(r, 0, 100, 0x80));
    assert!(matches!(c, Corruption::Flags { flags: 0x80, .. }));
    let c = poisoned_consumer(new, |r| set_desc(r, 1, 100, SLOT_FLAG_MORE));
    assert!(matches!(c, Corruption::Length { slot: 1, .. }));
    // A frame that is longer than a slot but not flagged, and one that
    // is flagged but fits a slot.
    let c = poisoned_consumer(new, |r| set_desc(r, 1, 3000, 0));
    assert!(matches!(
        c,
        Corruption::Length {
            slot: 1,
            len: 3000,
            flags: 0
        }
    ));
    // A frame longer than a jumbo frame.
    let c = poisoned_consumer(new, |r| set_desc(r, 1, 20_000, SLOT_FLAG_MORE));
    assert!(matches!(c, Corruption::FrameTooLong { slot: 1, max: 9216 }));
}

/// `recv` matches a descriptor against the one validated last, and its
/// stamp against the lap of the read position: a descriptor left from
/// the lap before, however like the last one, is not a frame.
pub(crate) fn recv_waits_for_this_laps_stamp_on_a_descriptor_like_the_last<
    S: RingStorage + Clone,
>(
    new: NewRing<S>,
) {
    let (ring, mut tx, mut rx) = corruptible_channel(new, geometry(16, 2048));
    let mut buf = [0u8; 9216];
    let mut bufs = vec![vec![0u8; 9216]; 4];
    let mut lens = [0usize; 4];
    for lap in 0..3u8 {
        for i in 0..16 {
            tx.send(&frame(100, lap + i)).unwrap();
            assert_eq!(rx.recv(&mut buf), Ok(100));
            assert_eq!(&buf[..100], &frame(100, lap + i)[..]);
        }
        // Every descriptor holds this lap's word for 100 bytes; the next
        // lap expects the next stamp.
        assert_eq!(rx.recv(&mut buf), Err(RecvError::Empty));
        assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(0));
        assert_eq!(rx.ready_slots(), Ok(0));
        assert!(rx.read_chunk(4).unwrap().next_frame().unwrap().is_none());
    }
    // The next slot's descriptor with the right length and flags and the
    // stamp of any other lap: not published.
    let next = rx.read_position();
    let here = SlotDesc::stamp(next, 4);
    for stamp in [
        0,
        here.wrapping_sub(DESC_STAMP_ONE),
        here.wrapping_add(DESC_STAMP_ONE),
    ] {
        ring.descs()[0]
            .0
            .store(SlotDesc::pack(100, 0) | stamp, Ordering::Release);
        assert_eq!(rx.recv(&mut buf), Err(RecvError::Empty));
        assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(0));
    }
    assert_eq!(rx.stats().corruptions, 0);
    tx.send(&frame(100, 9)).unwrap();
    assert_eq!(rx.recv(&mut buf), Ok(100));
}

/// The consumer learns what is published from the descriptors alone: a
/// producer's index that says more, less or nonsense changes nothing.
pub(crate) fn consumer_never_reads_the_producers_index<S: RingStorage + Clone>(new: NewRing<S>) {
    let (ring, mut tx, mut rx) = corruptible_channel(new, geometry(16, 2048));
    let mut buf = [0u8; 9216];
    tx.send(&frame(100, 0)).unwrap();
    tx.send(&frame(3000, 1)).unwrap();
    for head in [0, 1000, u64::MAX] {
        ring.control().head.index.store(head, Ordering::Release);
        assert_eq!(rx.ready_slots(), Ok(3));
    }
    assert_eq!(rx.recv(&mut buf), Ok(100));
    assert_eq!(rx.recv(&mut buf), Ok(3000));
    assert_eq!(&buf[..3000], &frame(3000, 1)[..]);
    assert_eq!(rx.recv(&mut buf), Err(RecvError::Empty));
    assert_eq!(rx.stats().corruptions, 0);
}

/// A published descriptor whose frame would reach past the slots the
/// consumer has not released (kept frames hold some) is truncated: the
/// producer cannot have written there.
pub(crate) fn a_frame_past_the_rings_capacity_is_truncated<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    for by_batch in [false, true] {
        let g = Geometry::with_max_frame_len(8, 64, 200).unwrap();
        let (ring, mut tx, mut rx) = corruptible_channel(new, g);
        for i in 0..5 {
            tx.send(&frame(64, i)).unwrap();
        }
        let mut chunk = rx.read_chunk(8).unwrap();
        while chunk.next_frame().unwrap().is_some() {}
        chunk.keep();
        // Slots 0..5 kept: 3 left from slot 5, and a 200-byte frame takes 4.
        forge_desc(&ring, 5, 200, SLOT_FLAG_MORE);
        let truncated = Corruption::Truncated { slot: 5 };
        let got = if by_batch {
            let mut bufs = vec![vec![0u8; 200]; 2];
            let mut lens = [0usize; 2];
            rx.recv_batch(&mut bufs, &mut lens)
        } else {
            rx.recv(&mut [0u8; 200])
        };
        assert_eq!(got, Err(RecvError::Corrupt(truncated)));
        assert_eq!(rx.corruption(), Some(truncated));
    }
}

/// The readers check each descriptor's stamp as they reach its frame: one
/// without it is not published yet, unless `ready_slots` found its frame
/// published before, when the peer took it back: truncation, reported at
/// that frame by each batch reader, after the frames before it.
pub(crate) fn a_frame_found_published_then_taken_back_is_truncated<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    for by_batch in [false, true] {
        let (ring, mut tx, mut rx) = corruptible_channel(new, geometry(16, 2048));
        for i in 0..3 {
            tx.send(&frame(64, i)).unwrap();
        }
        assert_eq!(rx.ready_slots(), Ok(3));
        // Frame 1's descriptor back to the lap before's stamp.
        let desc = &ring.descs()[1].0;
        let word = desc.load(Ordering::Relaxed);
        desc.store(word.wrapping_sub(DESC_STAMP_ONE), Ordering::Relaxed);
        let truncated = Corruption::Truncated { slot: 1 };
        if by_batch {
            let (mut bufs, mut lens) = (vec![[0u8; 64]; 4], [0usize; 4]);
            assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(1));
            assert_eq!(bufs[0][..], frame(64, 0)[..]);
            assert_eq!(
                rx.recv_batch(&mut bufs, &mut lens),
                Err(RecvError::Corrupt(truncated))
            );
        } else {
            let mut chunk = rx.read_chunk(4).unwrap();
            assert_eq!(chunk.next_frame().unwrap().unwrap().to_vec(), frame(64, 0));
            assert_eq!(chunk.next_frame().err(), Some(truncated));
        }
        assert_eq!(rx.corruption(), Some(truncated));
        assert_eq!((rx.stats().frames, rx.stats().corruptions), (1, 1));
    }
}

pub(crate) fn recv_batch_delivers_the_frames_before_a_corrupt_one_then_stops<
    S: RingStorage + Clone,
>(
    new: NewRing<S>,
) {
    let (ring, mut tx, mut rx) = corruptible_channel(new, geometry(128, 256));
    let frames = [frame(100, 0), frame(600, 1), frame(50, 2)];
    assert_eq!(tx.send_batch(frames.iter().map(|f| &f[..])), Ok(3));
    // The second frame (slots 1..4) now claims 20000 bytes.
    set_desc(&ring, 1, 20_000, SLOT_FLAG_MORE);
    let mut bufs = vec![vec![0u8; 9216]; 8];
    let mut lens = [0usize; 8];
    assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(1));
    assert_eq!(&bufs[0][..lens[0]], &frames[0][..]);
    let err = rx.recv_batch(&mut bufs, &mut lens).unwrap_err();
    assert!(matches!(
        err,
        RecvError::Corrupt(Corruption::FrameTooLong { slot: 1, .. })
    ));
    assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Err(err), "sticky");
    assert_eq!(rx.stats().corruptions, 1);
    assert_eq!(rx.stats().frames, 1);
}

/// A ring of 16 slots holding `count` 100-byte frames (`frame(100,
/// i)`), the descriptor of frame `corrupt` zeroed as a peer could.
fn frames_with_a_zeroed_descriptor<S: RingStorage + Clone>(
    new: NewRing<S>,
    count: u8,
    corrupt: usize,
) -> (S, Consumer<S>) {
    let (ring, mut tx, rx) = corruptible_channel(new, geometry(16, 2048));
    for i in 0..count {
        tx.send(&frame(100, i)).unwrap();
    }
    set_desc(&ring, corrupt, 0, 0);
    (ring, rx)
}

pub(crate) fn a_corrupt_frame_ends_the_chunk_and_stays_reported<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let (ring, mut rx) = frames_with_a_zeroed_descriptor(new, 3, 1);
    let mut chunk = rx.read_chunk(8).unwrap();
    assert!(matches!(chunk.next_frame(), Ok(Some(f)) if f.to_vec() == frame(100, 0)));
    let first = match chunk.next_frame() {
        Err(c) => c,
        _ => panic!("frame 1 is corrupt"),
    };
    assert!(matches!(first, Corruption::Length { slot: 1, .. }));
    // Even if the peer puts a valid descriptor back.
    set_desc(&ring, 1, 100, 0);
    for _ in 0..2 {
        assert!(
            matches!(chunk.next_frame(), Err(c) if c == first),
            "sticky in the chunk"
        );
    }
    drop(chunk);
    assert_eq!(rx.read_chunk(8).err(), Some(first), "and after it");
    assert_eq!((rx.stats().frames, rx.stats().corruptions), (1, 1));
}

/// Runs are frames of one descriptor: a corrupt descriptor ends the
/// run before it and is reported when it comes first, never earlier.
pub(crate) fn a_corrupt_descriptor_ends_a_run_and_is_reported_at_its_frame<
    S: RingStorage + Clone,
>(
    new: NewRing<S>,
) {
    let (_ring, mut rx) = frames_with_a_zeroed_descriptor(new, 6, 3);
    let mut chunk = rx.read_chunk(8).unwrap();
    let run = chunk.next_run().unwrap().expect("frames 0 to 2");
    assert_eq!((run.len(), run.frame_len()), (3, 100));
    let got: Vec<Vec<u8>> = run.map(|f| f.to_vec()).collect();
    assert_eq!(got, (0..3).map(|i| frame(100, i)).collect::<Vec<_>>());
    let c = match chunk.next_run() {
        Err(c) => c,
        _ => panic!("frame 3 is corrupt"),
    };
    assert!(matches!(c, Corruption::Length { slot: 3, .. }));
    assert!(
        matches!(chunk.next_frame(), Err(same) if same == c),
        "sticky"
    );
    drop(chunk);
    assert_eq!((rx.stats().frames, rx.stats().bytes), (3, 300));
}

pub(crate) fn recv_batch_group_catches_a_corrupt_descriptor_inside_it<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let (ring, mut tx, mut rx) =
        corruptible_channel(new, Geometry::with_max_frame_len(64, 256, 4096).unwrap());
    let frames: Vec<Vec<u8>> = (0..12).map(|i| frame(100, i)).collect();
    assert_eq!(tx.send_batch(frames.iter().map(|f| &f[..])), Ok(12));
    // Frame 6, in the second group of four, now claims the MORE flag.
    set_desc(&ring, 6, 100, SLOT_FLAG_MORE);
    let mut bufs = vec![vec![0u8; 256]; 12];
    let mut lens = [0usize; 12];
    assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(6));
    assert!(matches!(
        rx.recv_batch(&mut bufs, &mut lens),
        Err(RecvError::Corrupt(Corruption::Length { slot: 6, .. }))
    ));
    assert_eq!(rx.stats().frames, 6);
}

pub(crate) fn producer_detects_tail_corruption_and_stays_poisoned<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let ring = new(geometry(16, 2048));
    // SAFETY: this test's only producer of the ring.
    let mut tx = unsafe { Producer::attach(ring.clone()).unwrap() };
    for i in 0..16 {
        tx.send(&frame(10, i)).unwrap();
    }
    // Tail beyond head.
    ring.control().tail.index.store(17, Ordering::Release);
    let err = tx.send(b"x").unwrap_err();
    assert!(matches!(
        err,
        SendError::Corrupt(Corruption::Index {
            kind: IndexKind::Tail,
            ..
        })
    ));
    ring.control().tail.index.store(16, Ordering::Release);
    assert_eq!(tx.send(b"x"), Err(err), "poison is sticky");
    assert_eq!(tx.stats().corruptions, 1);
}

/// A producer refuses a ring whose indices are a ring apart or more; a
/// consumer reads no producer index, and finds nothing published.
pub(crate) fn producer_attach_refuses_corrupt_indices<S: RingStorage + Clone>(new: NewRing<S>) {
    let ring = new(geometry(16, 2048));
    ring.control().head.index.store(100, Ordering::Relaxed);
    // SAFETY: the only endpoints of this ring.
    unsafe {
        assert!(Producer::attach(ring.clone()).is_err());
        let mut rx = Consumer::attach(ring.clone()).unwrap();
        assert_eq!(rx.ready_slots(), Ok(0));
    }
}
