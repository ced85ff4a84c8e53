//! The ring's unit tests.

use super::*;
use crate::abi::{SlotDesc, SLOT_FLAG_MORE};
use crate::geometry::Geometry;
use crate::sync::Ordering;
use std::time::{Duration, Instant};

fn geometry(slot_count: u32, slot_size: u32) -> Geometry {
    Geometry::new(slot_count, slot_size).unwrap()
}

fn frame(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Frames the batch reads return now: `read_chunk`'s and then (for
/// what is left) `recv_batch`'s.
fn batch_reads(rx: &mut Consumer<HeapRing>) -> (usize, usize) {
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
fn send_64(tx: &mut Producer<HeapRing>, n: u8, seed: u8) {
    for i in 0..n {
        tx.send(&frame(64, seed.wrapping_add(i))).unwrap();
    }
}

#[test]
fn hold_back_is_off_by_default() {
    let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(256, 64, 1514).unwrap());
    assert_eq!(rx.hold_back(), None);
    send_64(&mut tx, 5, 0);
    assert_eq!(batch_reads(&mut rx), (5, 0));
}

#[test]
fn hold_back_holds_a_few_frames_until_the_wait_is_over() {
    let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(256, 64, 1514).unwrap());
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
    // Several, fewer than 64 slots: held back, by both batch reads,
    // while `recv` still takes one.
    send_64(&mut tx, 5, 10);
    let started = Instant::now();
    assert_eq!(batch_reads(&mut rx), (0, 0));
    let mut buf = [0u8; 64];
    assert_eq!(rx.recv(&mut buf), Ok(64));
    assert_eq!(buf[..], frame(64, 10)[..]);
    // The producer's index is not read again while holding back.
    send_64(&mut tx, 64, 20);
    assert_eq!(batch_reads(&mut rx), (0, 0));
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

#[test]
fn hold_back_leaves_frames_of_several_slots_alone() {
    let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(256, 64, 1514).unwrap());
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

#[test]
fn empty_ring_reports_empty() {
    let (_tx, mut rx) = heap_channel(geometry(16, 2048));
    let mut buf = [0u8; 64];
    assert_eq!(rx.recv(&mut buf), Err(RecvError::Empty));
    assert_eq!(rx.ready_slots(), Ok(0));
    let mut chunk = rx.read_chunk(8).unwrap();
    assert!(chunk.next_frame().unwrap().is_none());
}

#[test]
fn full_ring_refuses_then_recovers() {
    let (mut tx, mut rx) = heap_channel(geometry(16, 2048));
    for i in 0..16 {
        tx.send(&frame(100, i)).unwrap();
    }
    assert_eq!(
        tx.send(&frame(100, 99)),
        Err(SendError::Push(PushError::Full))
    );
    let mut buf = [0u8; 2048];
    assert_eq!(rx.recv(&mut buf), Ok(100));
    assert_eq!(&buf[..100], &frame(100, 0)[..]);
    tx.send(&frame(100, 16)).unwrap();
    for i in 1..=16 {
        assert_eq!(rx.recv(&mut buf), Ok(100));
        assert_eq!(&buf[..100], &frame(100, i)[..]);
    }
    assert_eq!(rx.recv(&mut buf), Err(RecvError::Empty));
}

#[test]
fn wraps_around_many_times() {
    let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(8, 64, 256).unwrap());
    let mut buf = [0u8; 256];
    for i in 0..10_000u32 {
        let len = 1 + (i as usize * 7) % 200;
        let f = frame(len, i as u8);
        tx.send(&f).unwrap();
        assert_eq!(rx.recv(&mut buf), Ok(len));
        assert_eq!(&buf[..len], &f[..]);
    }
    assert_eq!(tx.stats().frames, 10_000);
    assert_eq!(rx.stats().frames, 10_000);
}

#[test]
fn every_size_class_up_to_jumbo() {
    for slot_size in [64u32, 256, 2048, 16384] {
        let g = Geometry::new(
            1024.max(2 * 9216 / slot_size).next_power_of_two(),
            slot_size,
        )
        .unwrap();
        let (mut tx, mut rx) = heap_channel(g);
        let mut buf = vec![0u8; 9216];
        let lens = [
            1usize, 2, 63, 64, 65, 127, 128, 1500, 1514, 2047, 2048, 2049, 4096, 8999, 9000, 9215,
            9216,
        ];
        for (i, &len) in lens.iter().enumerate() {
            let f = frame(len, i as u8);
            tx.send(&f).unwrap();
            assert_eq!(rx.recv(&mut buf), Ok(len), "slot {slot_size} len {len}");
            assert_eq!(&buf[..len], &f[..], "slot {slot_size} len {len}");
        }
    }
}

#[test]
fn absurd_lengths_are_refused_without_overflow() {
    let (mut tx, _rx) = heap_channel(geometry(16, 2048));
    let mut chunk = tx.write_chunk(16).unwrap();
    assert!(!chunk.fits(usize::MAX));
    assert!(!chunk.fits(0), "an empty frame is never pushed");
    assert!(chunk.fits(9216) && !chunk.fits(9217));
    assert_eq!(
        chunk.push_with(usize::MAX, |_| panic!("not called")),
        Err(PushError::TooLarge {
            len: usize::MAX,
            max: 9216
        })
    );
    assert_eq!(chunk.commit(), 0);
}

#[test]
fn bad_lengths_are_refused() {
    let (mut tx, _rx) = heap_channel(geometry(16, 2048));
    assert_eq!(tx.send(&[]), Err(SendError::Push(PushError::Empty)));
    assert_eq!(
        tx.send(&[0; 9217]),
        Err(SendError::Push(PushError::TooLarge {
            len: 9217,
            max: 9216
        }))
    );
}

#[test]
fn small_buffer_leaves_frame_queued() {
    let (mut tx, mut rx) = heap_channel(geometry(16, 2048));
    tx.send(&frame(300, 1)).unwrap();
    let mut small = [0u8; 100];
    assert_eq!(
        rx.recv(&mut small),
        Err(RecvError::BufferTooSmall { needed: 300 })
    );
    let mut big = [0u8; 300];
    assert_eq!(rx.recv(&mut big), Ok(300));
}

#[test]
fn batch_larger_than_free_space_sends_what_fits() {
    let (mut tx, mut rx) = heap_channel(geometry(16, 2048));
    let frames: Vec<Vec<u8>> = (0..40).map(|i| frame(64, i)).collect();
    let sent = tx.send_batch(frames.iter().map(|f| f.as_slice())).unwrap();
    assert_eq!(sent, 16);
    // Jumbo frames take 5 slots each: after draining, 3 fit in 16.
    let mut bufs = vec![vec![0u8; 64]; 32];
    let mut lens = vec![0; 32];
    assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(16));
    for i in 0..16 {
        assert_eq!(bufs[i], frames[i]);
    }
    let jumbo: Vec<Vec<u8>> = (0..5).map(|i| frame(9000, i)).collect();
    assert_eq!(tx.send_batch(jumbo.iter().map(|f| f.as_slice())), Ok(3));
    let mut chunk = tx.write_chunk(100).unwrap();
    assert_eq!(chunk.free_slots(), 1);
    assert_eq!(chunk.push(&frame(4000, 0)), Err(PushError::Full));
    chunk.push(&frame(2000, 0)).unwrap();
    assert_eq!(chunk.commit(), 1);
}

#[test]
fn send_batch_refreshes_a_stale_view_before_reporting_full() {
    // 64 slots of 2048 bytes; a jumbo frame takes 5.
    let (mut tx, mut rx) = heap_channel(geometry(64, 2048));
    let small = frame(100, 0);
    // Leave 3 slots free in the producer's cached view ...
    assert_eq!(tx.send_batch((0..61).map(|_| &small[..])), Ok(61));
    // ... then free everything behind its back.
    let mut bufs = vec![vec![0u8; 100]; 64];
    let mut lens = vec![0; 64];
    assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(61));
    let jumbo = frame(9000, 1);
    assert_eq!(
        tx.send_batch([&jumbo[..]]),
        Ok(1),
        "stale view reported full"
    );
    assert_eq!(tx.send_batch((0..20).map(|_| &jumbo[..])), Ok(11));
}

#[test]
fn recv_batch_stops_at_a_frame_that_does_not_fit() {
    let (mut tx, mut rx) = heap_channel(geometry(16, 2048));
    tx.send(&frame(10, 0)).unwrap();
    tx.send(&frame(500, 1)).unwrap();
    let mut bufs = vec![vec![0u8; 100]; 4];
    let mut lens = [0usize; 4];
    assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(1));
    assert_eq!(
        rx.recv_batch(&mut bufs, &mut lens),
        Err(RecvError::BufferTooSmall { needed: 500 })
    );
}

#[test]
fn multi_slot_frames_are_contiguous_unless_they_wrap() {
    let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(64, 256, 4096).unwrap());
    let write = |tx: &mut Producer<HeapRing>| {
        let mut chunk = tx.write_chunk(64).unwrap();
        chunk
            .push_with(2500, |w| {
                assert_eq!(w.append(&[1u8; 1000]), 1000);
                assert_eq!(w.append(&[2u8; 1000]), 1000);
                assert_eq!(w.append(&[3u8; 1000]), 500);
            })
            .unwrap();
        assert_eq!(chunk.commit(), 1);
    };
    let check = |rx: &mut Consumer<HeapRing>, segments: &[usize]| {
        let mut chunk = rx.read_chunk(4).unwrap();
        let frame = chunk.next_frame().unwrap().unwrap();
        assert_eq!(frame.slots(), 10);
        let lens: Vec<usize> = frame.segments().map(|s| s.len()).collect();
        assert_eq!(lens, segments);
        assert_eq!(frame.contiguous().is_some(), segments.len() == 1);
        let bytes = frame.to_vec();
        assert!(bytes[..1000].iter().all(|&b| b == 1));
        assert!(bytes[1000..2000].iter().all(|&b| b == 2));
        assert!(bytes[2000..].iter().all(|&b| b == 3));
    };
    // Slots 0..10, 10..20, ..., 50..60: contiguous.
    for _ in 0..6 {
        write(&mut tx);
        check(&mut rx, &[2500]);
    }
    // Slots 60..64 then 0..6: 1024 bytes at the end, 1476 at the start.
    write(&mut tx);
    check(&mut rx, &[1024, 1476]);
    // The zero-copy writer sees the same two parts.
    let mut chunk = tx.write_chunk(64).unwrap();
    chunk
        .push_with(300, |w| {
            let lens: Vec<usize> = w.segments_mut().map(|s| s.len()).collect();
            assert_eq!(lens, [300]);
            assert_eq!(w.contiguous_mut().map(|s| s.len()), Some(300));
        })
        .unwrap();
    // Slots 6..8, then six frames of 8 slots up to slot 56.
    for _ in 0..6 {
        chunk.push(&[7u8; 2000]).unwrap();
    }
    chunk
        .push_with(3000, |w| {
            let lens: Vec<usize> = w.segments_mut().map(|s| s.len()).collect();
            assert_eq!(lens, [2048, 952], "slots 56..64, then 0..4");
            assert!(w.contiguous_mut().is_none());
        })
        .unwrap();
    assert_eq!(chunk.commit(), 8);
    assert_eq!(tx.unread_frames(), 8);
}

#[test]
fn uncommitted_chunk_publishes_nothing() {
    let (mut tx, mut rx) = heap_channel(geometry(16, 2048));
    {
        let mut chunk = tx.write_chunk(4).unwrap();
        chunk.push(b"lost").unwrap();
    }
    assert_eq!(rx.ready_slots(), Ok(0));
    tx.send(b"kept").unwrap();
    let mut buf = [0u8; 8];
    assert_eq!(rx.recv(&mut buf), Ok(4));
    assert_eq!(&buf[..4], b"kept");
}

fn poisoned_consumer(corrupt: impl FnOnce(&HeapRing)) -> Corruption {
    let (ring, mut tx, mut rx) = corruptible_channel(geometry(16, 2048));
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

/// A channel whose ring the test keeps, to corrupt it as a hostile peer
/// would.
fn corruptible_channel(geometry: Geometry) -> (HeapRing, Producer<HeapRing>, Consumer<HeapRing>) {
    let ring = HeapRing::new(geometry);
    // SAFETY: the ring is new; these are its only producer and consumer
    // (the test only corrupts it, as a peer would).
    let (tx, rx) = unsafe {
        (
            Producer::attach(ring.clone()).unwrap(),
            Consumer::attach(ring.clone()).unwrap(),
        )
    };
    (ring, tx, rx)
}

fn set_desc(ring: &HeapRing, slot: usize, len: u16, flags: u16) {
    ring.descs()[slot]
        .0
        .store(SlotDesc::pack(len, flags), Ordering::Relaxed);
}

/// The producer leaves a descriptor that already holds the right word
/// alone, and rewrites one that does not, whoever changed it.
#[test]
fn descriptors_scribbled_on_while_free_are_rewritten() {
    let (ring, mut tx, mut rx) = corruptible_channel(geometry(16, 2048));
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

#[test]
fn consumer_detects_each_kind_of_corruption() {
    let c = poisoned_consumer(|r| r.control().head.index.store(1000, Ordering::Release));
    assert!(matches!(
        c,
        Corruption::Index {
            kind: IndexKind::Head,
            ..
        }
    ));
    let c = poisoned_consumer(|r| set_desc(r, 0, 0, 0));
    assert!(matches!(
        c,
        Corruption::Length {
            slot: 0,
            len: 0,
            ..
        }
    ));
    let c = poisoned_consumer(|r| set_desc(r, 0, 4000, 0));
    assert!(matches!(c, Corruption::Length { len: 4000, .. }));
    let c = poisoned_consumer(|r| set_desc(r, 0, 100, 0x80));
    assert!(matches!(c, Corruption::Flags { flags: 0x80, .. }));
    let c = poisoned_consumer(|r| set_desc(r, 1, 100, SLOT_FLAG_MORE));
    assert!(matches!(c, Corruption::Length { slot: 1, .. }));
    // A frame that is longer than a slot but not flagged, and one that
    // is flagged but fits a slot.
    let c = poisoned_consumer(|r| set_desc(r, 1, 3000, 0));
    assert!(matches!(
        c,
        Corruption::Length {
            slot: 1,
            len: 3000,
            flags: 0
        }
    ));
    // A frame whose slots extend past the published head.
    let c = poisoned_consumer(|r| set_desc(r, 1, 9000, SLOT_FLAG_MORE));
    assert!(matches!(c, Corruption::Truncated { slot: 1 }));
    // A frame longer than a jumbo frame.
    let c = poisoned_consumer(|r| {
        set_desc(r, 1, 20_000, SLOT_FLAG_MORE);
        r.control().head.index.store(16, Ordering::Release);
    });
    assert!(matches!(c, Corruption::FrameTooLong { slot: 1, max: 9216 }));
}

#[test]
fn recv_reports_a_frame_like_the_last_one_cut_short_by_head() {
    // `recv` matches a descriptor against the one validated last; it
    // must still find the frame's slots all published.
    let (ring, mut tx, mut rx) = corruptible_channel(geometry(128, 256));
    let frames = [frame(600, 0), frame(600, 1)];
    let mut buf = [0u8; 9216];
    tx.send(&frames[0]).unwrap();
    assert_eq!(rx.recv(&mut buf), Ok(600));
    tx.send(&frames[1]).unwrap();
    // `head` one slot into the second frame (slots 3..6).
    ring.control().head.index.store(4, Ordering::Release);
    assert_eq!(
        rx.recv(&mut buf),
        Err(RecvError::Corrupt(Corruption::Truncated { slot: 3 }))
    );
}

#[test]
fn recv_batch_delivers_the_frames_before_a_corrupt_one_then_stops() {
    let (ring, mut tx, mut rx) = corruptible_channel(geometry(128, 256));
    let frames = [frame(100, 0), frame(600, 1), frame(50, 2)];
    assert_eq!(tx.send_batch(frames.iter().map(|f| &f[..])), Ok(3));
    // The second frame (slots 1..4) now claims 4000 bytes (16 slots).
    set_desc(&ring, 1, 4000, SLOT_FLAG_MORE);
    let mut bufs = vec![vec![0u8; 9216]; 8];
    let mut lens = [0usize; 8];
    assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(1));
    assert_eq!(&bufs[0][..lens[0]], &frames[0][..]);
    let err = rx.recv_batch(&mut bufs, &mut lens).unwrap_err();
    assert!(matches!(
        err,
        RecvError::Corrupt(Corruption::Truncated { slot: 1 })
    ));
    assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Err(err), "sticky");
    assert_eq!(rx.stats().corruptions, 1);
    assert_eq!(rx.stats().frames, 1);
}

/// A ring of 16 slots holding `count` 100-byte frames (`frame(100,
/// i)`), the descriptor of frame `corrupt` zeroed as a peer could.
fn frames_with_a_zeroed_descriptor(count: u8, corrupt: usize) -> (HeapRing, Consumer<HeapRing>) {
    let (ring, mut tx, rx) = corruptible_channel(geometry(16, 2048));
    for i in 0..count {
        tx.send(&frame(100, i)).unwrap();
    }
    set_desc(&ring, corrupt, 0, 0);
    (ring, rx)
}

#[test]
fn a_corrupt_frame_ends_the_chunk_and_stays_reported() {
    let (ring, mut rx) = frames_with_a_zeroed_descriptor(3, 1);
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

/// `send_batch`'s loop for streams of one-slot frames of 32 to 64
/// bytes: it must stop exactly where the general loop would (a frame
/// of another length, no room before the end of the data area, no
/// free slot, the end of the frames) and lose nothing.
#[test]
fn send_batch_streams_small_frames_and_stops_where_it_must() {
    let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(32, 64, 1024).unwrap());
    let lens = [48usize, 48, 32, 64, 64, 20, 65, 130, 40];
    let mut expect = std::collections::VecDeque::new();
    let (mut sent, mut got) = (0u32, 0u32);
    for round in 0..500usize {
        // Runs of 1 to 9 frames of one length, two or three runs a
        // batch, 1 to 40 frames in all.
        let mut frames = Vec::new();
        for r in 0..(2 + round % 2) {
            let len = lens[(round + r * 4) % lens.len()];
            for _ in 0..1 + (round * 3 + r) % 9 {
                frames.push(frame(len, (sent as usize + frames.len()) as u8));
            }
        }
        frames.truncate(1 + round % 40);
        let n = tx.send_batch(frames.iter().map(|f| &f[..])).unwrap();
        if n < frames.len() {
            // Stopped: the next frame really does not fit.
            let free = tx.write_chunk(usize::MAX).unwrap().free_slots();
            assert!(
                free < frames[n].len().div_ceil(64),
                "round {round}: stopped with {free} free"
            );
        }
        expect.extend(frames.drain(..n));
        sent += n as u32;
        // Read a part of what is there.
        got += recv_expected(&mut rx, &mut expect, (round * 7) % 23);
    }
    got += recv_expected(&mut rx, &mut expect, usize::MAX);
    assert_eq!((got, expect.len()), (sent, 0));
    assert!(sent > 2000, "{sent} frames");
}

/// `push_run` against a model: runs of every length class and of up to
/// 13 frames meet the wrap at every offset (a frame straddling it is
/// written in two segments), stop at the reservation, and every frame
/// arrives intact.
#[test]
fn push_run_writes_every_frame_across_the_wrap_and_stops_at_the_reservation() {
    let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(32, 64, 1024).unwrap());
    let lens = [1usize, 40, 64, 65, 150, 300];
    let (mut sent, mut got) = (0u32, 0u32);
    let mut expect = std::collections::VecDeque::new();
    for round in 0..400usize {
        let len = lens[round % lens.len()];
        // Up to 13 frames: one-slot frames' descriptors then go in a
        // group of eight, over descriptors of another length.
        let count = 1 + round % 13;
        let reserve = 1 + (round * 7) % 20;
        let mut chunk = tx.write_chunk(reserve).unwrap();
        let room = chunk.free_slots() as u64 / tx_slots(len);
        let mut calls = Vec::new();
        let pushed = chunk.push_run(len, count, |i, w| {
            calls.push(i);
            assert_eq!(w.len(), len);
            let f = frame(len, (sent as usize + i) as u8);
            assert_eq!(w.append(&f), len);
        });
        match pushed {
            Ok(n) => {
                assert_eq!(n as u64, room.min(count as u64), "round {round}");
                assert_eq!(calls, (0..n).collect::<Vec<_>>());
                for i in 0..n {
                    expect.push_back(frame(len, (sent as usize + i) as u8));
                }
                sent += n as u32;
                assert_eq!(chunk.commit(), n);
            }
            Err(e) => {
                assert_eq!((e, room), (PushError::Full, 0), "round {round}");
                assert!(calls.is_empty());
            }
        }
        // Drain most of the time, so the ring fills up now and then.
        if round % 5 != 4 {
            got += recv_expected(&mut rx, &mut expect, usize::MAX);
        }
    }
    got += recv_expected(&mut rx, &mut expect, usize::MAX);
    assert_eq!((got, expect.len()), (sent, 0));
    assert!(sent > 500, "{sent} frames");
    assert_eq!(rx.stats().frames, u64::from(sent));
    assert_eq!(tx.stats().frames, u64::from(sent));
}

/// Sends frames `numbers` (frame `i` is `frame(len_of(i), i)`) with
/// one `send_batch`; returns how many went.
fn send_numbered(
    tx: &mut Producer<HeapRing>,
    numbers: std::ops::Range<u32>,
    len_of: impl Fn(u32) -> usize,
) -> u32 {
    let frames: Vec<Vec<u8>> = numbers.map(|i| frame(len_of(i), i as u8)).collect();
    tx.send_batch(frames.iter().map(|f| &f[..])).unwrap() as u32
}

/// Receives up to `max` frames, each of which must be the next of
/// `expect`; returns how many.
fn recv_expected(
    rx: &mut Consumer<HeapRing>,
    expect: &mut std::collections::VecDeque<Vec<u8>>,
    max: usize,
) -> u32 {
    let mut buf = [0u8; 1024];
    let mut got = 0;
    while got < max {
        let Ok(len) = rx.recv(&mut buf) else { break };
        let want = expect.pop_front().expect("a frame was sent");
        assert_eq!(&buf[..len], &want[..], "frame {got} of this call");
        got += 1;
    }
    got as u32
}

/// Slots of a frame of `len` bytes in 64-byte slots.
fn tx_slots(len: usize) -> u64 {
    len.div_ceil(64) as u64
}

#[test]
fn push_run_refuses_bad_lengths_without_calling_fill() {
    let (mut tx, _rx) = heap_channel(Geometry::with_max_frame_len(32, 64, 1024).unwrap());
    let mut chunk = tx.write_chunk(32).unwrap();
    let never = |_: usize, _: &mut FrameWriter<'_>| panic!("fill called");
    assert_eq!(chunk.push_run(0, 4, never), Err(PushError::Empty));
    assert_eq!(
        chunk.push_run(1025, 4, never),
        Err(PushError::TooLarge {
            len: 1025,
            max: 1024
        })
    );
    assert_eq!(chunk.push_run(64, 0, never), Ok(0));
    assert_eq!(chunk.commit(), 0);
}

/// Runs are frames of one descriptor: a corrupt descriptor ends the
/// run before it and is reported when it comes first, never earlier.
#[test]
fn a_corrupt_descriptor_ends_a_run_and_is_reported_at_its_frame() {
    let (_ring, mut rx) = frames_with_a_zeroed_descriptor(6, 3);
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

/// A chunk validates a run ahead of the frames it hands out: the frames
/// not handed out stay queued and are not counted.
#[test]
fn frames_validated_but_not_handed_out_stay_queued() {
    let (mut tx, mut rx) = heap_channel(geometry(16, 2048));
    for i in 0..10 {
        tx.send(&frame(100, i)).unwrap();
    }
    let mut chunk = rx.read_chunk(32).unwrap();
    for i in 0..3 {
        assert_eq!(chunk.next_frame().unwrap().unwrap().to_vec(), frame(100, i));
    }
    assert_eq!(chunk.ready_slots(), 7);
    drop(chunk);
    assert_eq!((rx.stats().frames, rx.stats().bytes), (3, 300));
    let mut chunk = rx.read_chunk(32).unwrap();
    let run = chunk.next_run().unwrap().expect("frames 3 to 9");
    let got: Vec<Vec<u8>> = run.map(|f| f.to_vec()).collect();
    assert_eq!(got, (3..10).map(|i| frame(100, i)).collect::<Vec<_>>());
    assert!(chunk.next_run().unwrap().is_none());
    drop(chunk);
    assert_eq!((rx.stats().frames, rx.stats().bytes), (10, 1000));
}

/// Runs and single frames, mixed, against a model: every frame once, in
/// order, intact; each run of one length, within the chunk's budget,
/// and contiguous unless it is one frame that wraps.
#[test]
fn runs_and_frames_read_every_frame_in_order_across_the_wrap() {
    // 32 slots of 64 bytes; lengths of 1 and 3 slots, in streams of
    // changing length, so runs meet the wrap, the head and the budget
    // at every offset.
    let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(32, 64, 1024).unwrap());
    let len_of = |i: u32| match (i / 7) % 3 {
        0 => 40,
        1 => 64,
        _ => 150,
    };
    let (mut sent, mut got) = (0u32, 0u32);
    for round in 0..600u32 {
        if round < 500 {
            let want = 1 + round % 9;
            sent += send_numbered(&mut tx, sent..sent + want, len_of);
        }
        let budget = 1 + (round as usize * 5) % 11;
        let mut chunk = rx.read_chunk(budget).unwrap();
        let mut taken = 0;
        loop {
            if round % 3 == 0 {
                let Some(f) = chunk.next_frame().unwrap() else {
                    break;
                };
                assert_eq!(f.to_vec(), frame(len_of(got), got as u8), "frame {got}");
                got += 1;
                taken += 1;
                continue;
            }
            let Some(run) = chunk.next_run().unwrap() else {
                break;
            };
            let (n, len) = (run.len(), run.frame_len());
            assert!(n >= 1);
            // Every third round reads 64- and 150-byte runs as arrays:
            // refused only for the 150-byte frame that wraps (a run of
            // its own); 40-byte runs are refused for their length.
            let as_arrays = round % 3 == 1;
            let read = |bytes: &[u8], got: &mut u32| {
                assert_eq!(bytes, frame(len_of(*got), *got as u8), "frame {got}");
                *got += 1;
            };
            let run = match (as_arrays, len) {
                (true, 64) => run
                    .into_arrays::<64>()
                    .map(|a| a.for_each(|b| read(b, &mut got))),
                (true, 150) => run
                    .into_arrays::<150>()
                    .map(|a| a.for_each(|b| read(b, &mut got))),
                (true, _) => run.into_arrays::<64>().map(|_| panic!("{len} bytes as 64")),
                _ => Err(run),
            };
            let Err(run) = run else {
                taken += n;
                continue;
            };
            let refused = as_arrays && len != 40;
            for f in run {
                assert_eq!(f.len(), len);
                assert!(!refused || (n == 1 && f.contiguous().is_none()));
                assert!(n == 1 || f.contiguous().is_some(), "a run never wraps");
                assert_eq!(f.to_vec(), frame(len_of(got), got as u8), "frame {got}");
                got += 1;
            }
            taken += n;
        }
        assert!(taken <= budget);
        drop(chunk);
        assert_eq!(rx.stats().frames, u64::from(got));
    }
    assert_eq!(got, sent);
    assert!(sent > 1000, "the ring kept up: {sent} frames");
}

#[test]
fn into_arrays_refuses_a_frame_that_wraps_whatever_its_first_part() {
    // 8 slots of 64 bytes: a 150-byte frame from slot 7 has 64 bytes
    // before the end and 86 after it.
    let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(8, 64, 150).unwrap());
    for i in 0..7 {
        tx.send(&frame(64, i)).unwrap();
    }
    let mut bufs = [[0u8; 64]; 7];
    assert_eq!(rx.recv_batch(&mut bufs, &mut [0; 7]).unwrap(), 7);
    tx.send(&frame(150, 7)).unwrap();
    let mut chunk = rx.read_chunk(1).unwrap();
    let run = chunk.next_run().unwrap().unwrap();
    let run = run.into_arrays::<64>().err().expect("64-byte first part");
    let run = run.into_arrays::<150>().err().expect("wrapped frame");
    let frames: Vec<Vec<u8>> = run.map(|f| f.to_vec()).collect();
    assert_eq!(frames, [frame(150, 7)]);
}

#[test]
fn endpoints_and_chunks_can_move_to_another_thread() {
    fn is_send<T: Send>() {}
    is_send::<Producer<HeapRing>>();
    is_send::<Consumer<HeapRing>>();
    is_send::<WriteChunk<'static, HeapRing>>();
    is_send::<ReadChunk<'static, HeapRing>>();
}

/// Streams of one small frame size take `recv_batch`'s grouped path;
/// every way out of it must behave like the frame-by-frame path.
#[test]
fn recv_batch_groups_equal_frames_across_the_wrap() {
    // 32 slots; each round sends 7 equal one-slot frames and a 3-slot
    // one, so groups start at every alignment and meet the wrap, the
    // published head and the end of `bufs` in every position.
    let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(32, 64, 1024).unwrap());
    let mut bufs = vec![[0u8; 200]; 6];
    let mut lens = [0usize; 6];
    let (mut sent, mut got) = (0u32, 0u32);
    for round in 0..200u32 {
        let frames: Vec<Vec<u8>> = (0..8)
            .map(|i| frame(if i == 7 { 150 } else { 40 }, (round * 8 + i) as u8))
            .collect();
        sent += tx.send_batch(frames.iter().map(|f| &f[..])).unwrap() as u32;
        loop {
            let n = rx.recv_batch(&mut bufs, &mut lens).unwrap();
            for (buf, &len) in bufs.iter().zip(&lens).take(n) {
                let want = if got % 8 == 7 { 150 } else { 40 };
                assert_eq!(&buf[..len], &frame(want, got as u8)[..], "frame {got}");
                got += 1;
            }
            if n == 0 {
                break;
            }
        }
    }
    assert_eq!((sent, got), (1600, 1600));
}

/// Streams of one multi-slot frame size take `recv_batch`'s
/// like-the-last-frame path; it must stop at the published head, at the
/// end of the data area and at a frame of another size.
#[test]
fn recv_batch_streams_equal_large_frames_to_the_head_and_across_the_wrap() {
    // 32 slots of 64 bytes; 150-byte frames take 3 slots, so they meet
    // the wrap at every offset. Every fifth frame is 149 bytes (a
    // different descriptor, same slots), and sends and receives come in
    // batches of changing sizes, so the published head falls anywhere.
    let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(32, 64, 1024).unwrap());
    let len_of = |i: u32| if i % 5 == 4 { 149 } else { 150 };
    let mut bufs = vec![vec![0u8; 150]; 7];
    let mut lens = [0usize; 7];
    let (mut sent, mut got) = (0u32, 0u32);
    // 300 rounds of sending and receiving, then receiving until empty.
    for round in 0.. {
        if round < 300 {
            let want = 1 + round % 6;
            sent += send_numbered(&mut tx, sent..sent + want, len_of);
        }
        let take = 1 + (round as usize * 3) % 7;
        let n = rx.recv_batch(&mut bufs[..take], &mut lens[..take]).unwrap();
        for (buf, &len) in bufs.iter().zip(&lens).take(n) {
            let expect = frame(len_of(got), got as u8);
            assert_eq!(&buf[..len], &expect[..], "frame {got}");
            got += 1;
        }
        if round >= 300 && n == 0 {
            break;
        }
    }
    assert_eq!(got, sent);
    assert!(sent > 500, "the ring kept up: {sent} frames");
}

#[test]
fn recv_batch_group_stops_at_a_buffer_too_small() {
    let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(64, 256, 4096).unwrap());
    let frames: Vec<Vec<u8>> = (0..8).map(|i| frame(100, i)).collect();
    assert_eq!(tx.send_batch(frames.iter().map(|f| &f[..])), Ok(8));
    let mut bufs = vec![vec![0u8; 100]; 8];
    bufs[2] = vec![0u8; 99];
    let mut lens = [0usize; 8];
    assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(2));
    assert_eq!(
        rx.recv_batch(&mut bufs[2..], &mut lens),
        Err(RecvError::BufferTooSmall { needed: 100 })
    );
    // Frame 2 is still queued: five buffers take frames 2 to 6.
    assert_eq!(rx.recv_batch(&mut bufs[3..], &mut lens), Ok(5));
    for (buf, want) in bufs[3..].iter().zip(&frames[2..7]) {
        assert_eq!(buf, want);
    }
    assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(1));
    assert_eq!(bufs[0], frames[7]);
}

#[test]
fn recv_batch_group_catches_a_corrupt_descriptor_inside_it() {
    let (ring, mut tx, mut rx) =
        corruptible_channel(Geometry::with_max_frame_len(64, 256, 4096).unwrap());
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

#[test]
fn send_batch_stops_at_a_bad_frame_after_the_first() {
    let (mut tx, mut rx) = heap_channel(geometry(128, 256));
    let (ok, empty, huge) = (frame(10, 0), Vec::new(), frame(9217, 1));
    assert_eq!(tx.send_batch([&ok[..], &empty[..], &ok[..]]), Ok(1));
    assert_eq!(tx.send_batch([&ok[..], &huge[..]]), Ok(1));
    assert_eq!(
        tx.send_batch([&huge[..], &ok[..]]),
        Err(SendError::Push(PushError::TooLarge {
            len: 9217,
            max: 9216
        }))
    );
    assert_eq!(
        tx.send_batch([&empty[..]]),
        Err(SendError::Push(PushError::Empty))
    );
    let mut bufs = vec![vec![0u8; 64]; 8];
    let mut lens = [0usize; 8];
    assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(2));
}

#[test]
fn producer_detects_tail_corruption_and_stays_poisoned() {
    let ring = HeapRing::new(geometry(16, 2048));
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

#[test]
fn attach_refuses_corrupt_indices() {
    let ring = HeapRing::new(geometry(16, 2048));
    ring.control().head.index.store(100, Ordering::Relaxed);
    // SAFETY: the only endpoints of this ring.
    unsafe {
        assert!(Consumer::attach(ring.clone()).is_err());
        assert!(Producer::attach(ring.clone()).is_err());
    }
}

#[test]
fn kept_frames_hold_their_slots_until_released() {
    let (mut tx, mut rx) = heap_channel(Geometry::new(16, 2048).unwrap());
    for i in 0..16u8 {
        tx.send(&[i; 10]).unwrap();
    }
    let mut first = None;
    {
        let mut chunk = rx.read_chunk(8).unwrap();
        while let Some(f) = chunk.next_frame().unwrap() {
            first.get_or_insert(f.index());
            assert_eq!(f.slots(), 1);
        }
        chunk.keep();
    }
    assert_eq!(first, Some(0));
    assert_eq!((rx.read_position(), rx.released_position()), (8, 0));
    // The producer sees no free slot: the kept ones are still ours.
    assert_eq!(tx.send(b"x"), Err(SendError::Push(PushError::Full)));
    // Reading goes on past the kept frames.
    let mut buf = [0u8; 16];
    assert_eq!(rx.recv(&mut buf), Ok(10));
    assert_eq!(buf[0], 8);
    // A normal release releases everything before it, kept frames too.
    assert_eq!(rx.released_position(), 9);
    {
        let chunk = rx.read_chunk(4).unwrap();
        chunk.keep();
    }
    let mut chunk = rx.read_chunk(4).unwrap();
    for _ in 0..4 {
        chunk.next_frame().unwrap().unwrap();
    }
    chunk.keep();
    assert_eq!((rx.read_position(), rx.released_position()), (13, 9));
    assert!(!rx.release_to(14), "beyond the read position");
    assert!(!rx.release_to(8), "before the last release");
    assert!(rx.release_to(11));
    let fill = |tx: &mut Producer<HeapRing>| (0..).take_while(|_| tx.send(b"y").is_ok()).count();
    assert_eq!(fill(&mut tx), 11);
    assert!(rx.release_to(13));
    assert_eq!(fill(&mut tx), 2);
}
