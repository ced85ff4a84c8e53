//! The copying calls and the chunks: empty and full rings, the wrap,
//! every size class, lengths refused, frames that do not fit.

use super::{channel, frame, geometry, NewRing};
use crate::geometry::Geometry;
use crate::ring::{
    Consumer, Producer, PushError, ReadChunk, RecvError, RingStorage, SendError, WriteChunk,
};

pub(crate) fn empty_ring_reports_empty<S: RingStorage + Clone>(new: NewRing<S>) {
    let (_tx, mut rx) = channel(new, geometry(16, 2048));
    let mut buf = [0u8; 64];
    assert_eq!(rx.recv(&mut buf), Err(RecvError::Empty));
    assert_eq!(rx.ready_slots(), Ok(0));
    let mut chunk = rx.read_chunk(8).unwrap();
    assert!(chunk.next_frame().unwrap().is_none());
}

pub(crate) fn full_ring_refuses_then_recovers<S: RingStorage + Clone>(new: NewRing<S>) {
    let (mut tx, mut rx) = channel(new, geometry(16, 2048));
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

pub(crate) fn wraps_around_many_times<S: RingStorage + Clone>(new: NewRing<S>) {
    let (mut tx, mut rx) = channel(new, Geometry::with_max_frame_len(8, 64, 256).unwrap());
    let mut buf = [0u8; 256];
    // Under Miri, which runs a thousand times slower, 40 laps of the ring
    // (every length class and both wrap cases) instead of 1,250.
    let count = if cfg!(miri) { 320 } else { 10_000u32 };
    for i in 0..count {
        let len = 1 + (i as usize * 7) % 200;
        let f = frame(len, i as u8);
        tx.send(&f).unwrap();
        assert_eq!(rx.recv(&mut buf), Ok(len));
        assert_eq!(&buf[..len], &f[..]);
    }
    assert_eq!(tx.stats().frames, u64::from(count));
    assert_eq!(rx.stats().frames, u64::from(count));
}

pub(crate) fn every_size_class_up_to_jumbo<S: RingStorage + Clone>(new: NewRing<S>) {
    for slot_size in [64u32, 256, 2048, 16384] {
        let g = Geometry::new(
            1024.max(2 * 9216 / slot_size).next_power_of_two(),
            slot_size,
        )
        .unwrap();
        let (mut tx, mut rx) = channel(new, g);
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

pub(crate) fn absurd_lengths_are_refused_without_overflow<S: RingStorage + Clone>(new: NewRing<S>) {
    let (mut tx, _rx) = channel(new, geometry(16, 2048));
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

pub(crate) fn bad_lengths_are_refused<S: RingStorage + Clone>(new: NewRing<S>) {
    let (mut tx, _rx) = channel(new, geometry(16, 2048));
    assert_eq!(tx.send(&[]), Err(SendError::Push(PushError::Empty)));
    assert_eq!(
        tx.send(&[0; 9217]),
        Err(SendError::Push(PushError::TooLarge {
            len: 9217,
            max: 9216
        }))
    );
}

pub(crate) fn small_buffer_leaves_frame_queued<S: RingStorage + Clone>(new: NewRing<S>) {
    let (mut tx, mut rx) = channel(new, geometry(16, 2048));
    tx.send(&frame(300, 1)).unwrap();
    let mut small = [0u8; 100];
    assert_eq!(
        rx.recv(&mut small),
        Err(RecvError::BufferTooSmall { needed: 300 })
    );
    let mut big = [0u8; 300];
    assert_eq!(rx.recv(&mut big), Ok(300));
}

pub(crate) fn batch_larger_than_free_space_sends_what_fits<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let (mut tx, mut rx) = channel(new, geometry(16, 2048));
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

pub(crate) fn send_batch_refreshes_a_stale_view_before_reporting_full<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    // 64 slots of 2048 bytes; a jumbo frame takes 5.
    let (mut tx, mut rx) = channel(new, geometry(64, 2048));
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

pub(crate) fn recv_batch_stops_at_a_frame_that_does_not_fit<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let (mut tx, mut rx) = channel(new, geometry(16, 2048));
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

pub(crate) fn send_batch_stops_at_a_bad_frame_after_the_first<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let (mut tx, mut rx) = channel(new, geometry(128, 256));
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

pub(crate) fn multi_slot_frames_are_contiguous_unless_they_wrap<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let (mut tx, mut rx) = channel(new, Geometry::with_max_frame_len(64, 256, 4096).unwrap());
    let write = |tx: &mut Producer<S>| {
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
    let check = |rx: &mut Consumer<S>, segments: &[usize]| {
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

/// Pushed frames have no descriptor with their lap's stamp until
/// `commit` (none at all, or the lap before's stamp when the length
/// changed within the chunk): a chunk dropped without it publishes nothing
/// to any reader, on any lap; a committed one of mixed lengths publishes
/// every frame, in order.
pub(crate) fn uncommitted_chunk_publishes_nothing<S: RingStorage + Clone>(new: NewRing<S>) {
    let (mut tx, mut rx) = channel(new, geometry(16, 2048));
    let mut buf = [0u8; 8];
    let (mut bufs, mut lens) = (vec![[0u8; 8]; 4], [0usize; 4]);
    for lap in 0..40u8 {
        {
            let mut chunk = tx.write_chunk(6).unwrap();
            chunk.push(b"lost").unwrap();
            chunk
                .push_with(4, |w| assert_eq!(w.append(b"lost"), 4))
                .unwrap();
            let pushed = chunk.push_run(4, 2, |_, w| assert_eq!(w.append(b"lost"), 4));
            assert_eq!(pushed, Ok(2));
            // Other lengths: the frames before each change get their
            // descriptors, with the lap before's stamp.
            chunk.push(b"lost!").unwrap();
            chunk
                .push_with(4, |w| assert_eq!(w.append(b"lost"), 4))
                .unwrap();
        }
        assert_eq!(rx.ready_slots(), Ok(0));
        assert_eq!(rx.recv(&mut buf), Err(RecvError::Empty));
        assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(0));
        assert!(rx.read_chunk(4).unwrap().next_frame().unwrap().is_none());
        let sent: [&[u8]; 3] = [
            &[b'k', lap, 0, 0],
            &[b'm', lap, 0, 0, 0],
            &[b'n', lap, 0, 0],
        ];
        let mut chunk = tx.write_chunk(3).unwrap();
        for frame in sent {
            chunk.push(frame).unwrap();
        }
        assert_eq!(chunk.commit(), 3);
        for frame in sent {
            let n = rx.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], frame);
        }
    }
}

/// Needs no ring: the storage type is what is checked.
pub(crate) fn endpoints_and_chunks_can_move_to_another_thread<S: RingStorage + Clone + 'static>(
    _new: NewRing<S>,
) {
    fn is_send<T: Send>() {}
    is_send::<Producer<S>>();
    is_send::<Consumer<S>>();
    is_send::<WriteChunk<'static, S>>();
    is_send::<ReadChunk<'static, S>>();
}
