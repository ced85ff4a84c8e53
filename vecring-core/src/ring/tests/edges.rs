//! Boundaries: a frame of exactly one slot, the largest frame and one byte
//! more, exactly the free space, `ready` exactly covering a frame; and the
//! counts and counters the endpoints and chunks report.

use super::{channel, corruptible_channel, frame, set_desc, NewRing};
use crate::abi::{SlotDesc, SLOT_FLAG_MORE};
use crate::geometry::Geometry;
use crate::ring::shape::Shape;
use crate::ring::{
    Consumer, Corruption, EndpointStats, IndexKind, PushError, RecvError, RingStorage, SendError,
};
use crate::sync::Ordering;

/// The first frame waiting in `rx`, read by `recv` or by `recv_batch`.
fn first<S: RingStorage>(rx: &mut Consumer<S>, by_batch: bool) -> Result<Vec<u8>, RecvError> {
    let mut bufs = [vec![0u8; 9216]];
    let mut lens = [0usize];
    let len = if by_batch {
        rx.recv_batch(&mut bufs, &mut lens)?;
        lens[0]
    } else {
        rx.recv(&mut bufs[0])?
    };
    bufs[0].truncate(len);
    Ok(bufs[0].to_vec())
}

/// The descriptor word of `slot`, unpacked.
fn desc_of<S: RingStorage>(ring: &S, slot: usize) -> (u16, u16) {
    SlotDesc::unpack(ring.descs()[slot].0.load(Ordering::Relaxed))
}

/// A frame of exactly one slot's bytes is a one-slot frame: no MORE flag
/// in the descriptor a peer reads, whichever call wrote it, and a peer's
/// descriptor that flags one is refused.
pub(crate) fn a_frame_of_exactly_one_slot_carries_no_more_flag<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let g = Geometry::with_max_frame_len(16, 64, 256).unwrap();
    let (ring, mut tx, mut rx) = corruptible_channel(new, g);
    let (one, two) = (frame(64, 1), frame(65, 2));
    // Slots 0, 1..3, 3, 4..6, then a chunk: 6, 7..9, 9, 10..12.
    tx.send(&one).unwrap();
    tx.send(&two).unwrap();
    assert_eq!(tx.send_batch([&one[..], &two[..]]), Ok(2));
    let mut chunk = tx.write_chunk(16).unwrap();
    chunk.push(&one).unwrap();
    chunk
        .push_with(65, |w| assert_eq!(w.append(&two), 65))
        .unwrap();
    let run = chunk.push_run(64, 1, |_, w| assert_eq!(w.append(&one), 64));
    assert_eq!(run, Ok(1));
    let run = chunk.push_run(65, 1, |_, w| assert_eq!(w.append(&two), 65));
    assert_eq!(run, Ok(1));
    assert_eq!(chunk.commit(), 4);
    for (i, slot) in [0, 1, 3, 4, 6, 7, 9, 10].into_iter().enumerate() {
        let want = if i % 2 == 0 {
            (64, 0)
        } else {
            (65, SLOT_FLAG_MORE)
        };
        assert_eq!(desc_of(&ring, slot), want, "slot {slot}");
    }
    for i in 0..8 {
        let want = if i % 2 == 0 { &one } else { &two };
        assert_eq!(first(&mut rx, i % 4 == 3).as_ref(), Ok(want), "frame {i}");
    }
    // A peer's one-slot frame that claims more slots.
    for by_batch in [false, true] {
        let (ring, mut tx, mut rx) = corruptible_channel(new, g);
        tx.send(&one).unwrap();
        set_desc(&ring, 0, 64, SLOT_FLAG_MORE);
        assert_eq!(
            first(&mut rx, by_batch),
            Err(RecvError::Corrupt(Corruption::Length {
                slot: 0,
                len: 64,
                flags: SLOT_FLAG_MORE
            }))
        );
    }
}

/// The producer takes a frame of exactly the largest length, refuses one
/// byte more as too large, and reports a largest frame that does not fit
/// as `Full`, not as too large; a frame that takes exactly the free space
/// fits.
pub(crate) fn the_largest_frame_fits_and_one_byte_more_does_not<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let (mut tx, mut rx) = channel(new, Geometry::with_max_frame_len(8, 64, 200).unwrap());
    let too_large = PushError::TooLarge { len: 201, max: 200 };
    assert_eq!(tx.send(&frame(201, 0)), Err(SendError::Push(too_large)));
    assert_eq!(
        tx.send_batch([&frame(201, 0)[..]]),
        Err(SendError::Push(too_large))
    );
    tx.send(&frame(200, 1)).unwrap();
    // A chunk of 3 slots: too few for the largest frame (4).
    let mut chunk = tx.write_chunk(3).unwrap();
    assert_eq!(chunk.free_slots(), 3);
    assert!(chunk.fits(192) && !chunk.fits(193) && !chunk.fits(200) && !chunk.fits(201));
    assert_eq!(chunk.push(&frame(200, 2)), Err(PushError::Full));
    assert_eq!(
        chunk.push_with(200, |_| panic!("not called")),
        Err(PushError::Full)
    );
    assert_eq!(
        chunk.push_run(200, 1, |_, _| panic!("not called")),
        Err(PushError::Full)
    );
    assert_eq!(chunk.push(&frame(201, 2)), Err(too_large));
    assert_eq!(chunk.commit(), 0);
    // The 4 slots left take exactly one largest frame; then the ring is
    // full, for the largest frame as for the smallest.
    tx.send(&frame(200, 2)).unwrap();
    assert_eq!(
        tx.send(&frame(200, 3)),
        Err(SendError::Push(PushError::Full))
    );
    assert_eq!(tx.send(&[3]), Err(SendError::Push(PushError::Full)));
    assert_eq!(tx.send_batch([&frame(200, 3)[..]]), Ok(0));
    assert_eq!(first(&mut rx, false), Ok(frame(200, 1)));
    assert_eq!(first(&mut rx, true), Ok(frame(200, 2)));
    assert_eq!(first(&mut rx, false), Err(RecvError::Empty));
}

/// The consumer takes a peer's frame of the largest length, and reports
/// one byte more as too long.
pub(crate) fn a_peer_frame_of_the_largest_length_and_one_byte_more<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let g = Geometry::with_max_frame_len(8, 64, 200).unwrap();
    for by_batch in [false, true] {
        // Slots 0..4, all published: exactly the frame's.
        let (ring, mut tx, mut rx) = corruptible_channel(new, g);
        tx.send(&frame(200, 0)).unwrap();
        assert_eq!(desc_of(&ring, 0), (200, SLOT_FLAG_MORE));
        assert_eq!(first(&mut rx, by_batch), Ok(frame(200, 0)));
        // 201 bytes take 4 slots too, all published.
        let (ring, mut tx, mut rx) = corruptible_channel(new, g);
        tx.send(&frame(200, 0)).unwrap();
        set_desc(&ring, 0, 201, SLOT_FLAG_MORE);
        assert_eq!(rx.corruption(), None);
        let too_long = Corruption::FrameTooLong { slot: 0, max: 200 };
        assert_eq!(first(&mut rx, by_batch), Err(RecvError::Corrupt(too_long)));
        assert_eq!(rx.corruption(), Some(too_long));
    }
    // The same after a frame `recv_batch` delivers: slots 1..5.
    let (ring, mut tx, mut rx) = corruptible_channel(new, g);
    let frames = [frame(64, 0), frame(200, 1)];
    assert_eq!(tx.send_batch(frames.iter().map(|f| &f[..])), Ok(2));
    set_desc(&ring, 1, 201, SLOT_FLAG_MORE);
    let mut bufs = vec![vec![0u8; 200]; 2];
    let mut lens = [0usize; 2];
    assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(1));
    assert_eq!(&bufs[0][..lens[0]], &frames[0][..]);
    assert_eq!(
        rx.recv_batch(&mut bufs, &mut lens),
        Err(RecvError::Corrupt(Corruption::FrameTooLong {
            slot: 1,
            max: 200
        }))
    );
}

/// `Shape::diagnose` on its own: the consumer asks it again about a
/// descriptor that failed the fast check, and takes the frame if the
/// peer rewrote it valid in between (a race no single-threaded case
/// reaches), so a valid frame that `ready` exactly covers must pass.
pub(crate) fn diagnose_passes_a_valid_frame_that_ready_exactly_covers<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let ring = new(Geometry::with_max_frame_len(8, 64, 200).unwrap());
    let shape = Shape::of(&ring);
    // Index 9: slot 1 of lap 1 of 8 slots.
    let stamp = SlotDesc::stamp(9, 3);
    let largest = SlotDesc::pack(200, SLOT_FLAG_MORE) | stamp;
    assert_eq!(shape.diagnose(9, largest, 4), Ok((200, 4)));
    assert_eq!(
        shape.diagnose(9, largest, 3),
        Err(Corruption::Truncated { slot: 1 })
    );
    assert_eq!(
        shape.diagnose(9, SlotDesc::pack(64, 0) | stamp, 1),
        Ok((64, 1))
    );
    assert_eq!(
        shape.diagnose(9, SlotDesc::pack(64, 0) | stamp, 0),
        Err(Corruption::Truncated { slot: 1 })
    );
    assert_eq!(
        shape.diagnose(9, SlotDesc::pack(201, SLOT_FLAG_MORE) | stamp, 8),
        Err(Corruption::FrameTooLong { slot: 1, max: 200 })
    );
    // Another lap's stamp: not where it was published.
    for other in [0, SlotDesc::stamp(1, 3), SlotDesc::stamp(17, 3)] {
        assert_eq!(
            shape.diagnose(9, SlotDesc::pack(64, 0) | other, 8),
            Err(Corruption::Truncated { slot: 1 })
        );
    }
}

/// The producer's geometry, counters and corruption, and the consumer's
/// counters: frames and bytes of single sends, of a batch whose frames
/// stream at one length, and of the batches read.
pub(crate) fn producer_reports_its_geometry_counters_and_corruption<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let g = Geometry::with_max_frame_len(16, 128, 512).unwrap();
    assert_ne!(g, Geometry::default());
    let (ring, mut tx, mut rx) = corruptible_channel(new, g);
    assert_eq!((tx.geometry(), rx.geometry()), (g, g));
    assert_eq!(tx.corruption(), None);
    tx.send(&frame(100, 0)).unwrap();
    let stats = |frames, bytes| EndpointStats {
        frames,
        bytes,
        corruptions: 0,
        held_back: 0,
    };
    assert_eq!(tx.stats(), stats(1, 100));
    // A frame, three more of its length (the stream loop), then two others.
    let batch: Vec<Vec<u8>> = [100, 100, 100, 100, 300, 40]
        .iter()
        .enumerate()
        .map(|(i, &len)| frame(len, i as u8 + 1))
        .collect();
    assert_eq!(tx.send_batch(batch.iter().map(|f| &f[..])), Ok(6));
    assert_eq!(tx.stats(), stats(7, 840));
    let mut bufs = vec![vec![0u8; 512]; 8];
    let mut lens = [0usize; 8];
    assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(7));
    assert_eq!(rx.stats(), stats(7, 840));
    for (i, f) in batch.iter().enumerate() {
        assert_eq!(&bufs[i + 1][..lens[i + 1]], &f[..], "frame {}", i + 1);
    }
    // A tail beyond head, seen when the producer next reads it.
    ring.control().tail.index.store(100, Ordering::Release);
    let c = tx.write_chunk(usize::MAX).err().expect("corrupt tail");
    assert!(matches!(
        c,
        Corruption::Index {
            kind: IndexKind::Tail,
            new: 100,
            ..
        }
    ));
    assert_eq!(tx.corruption(), Some(c));
    assert_eq!(tx.send(b"x"), Err(SendError::Corrupt(c)));
    assert_eq!(tx.stats().corruptions, 1);
}

/// `unread_frames` counts from the consumer's tail when it is plausible,
/// even if the producer has not read it since, and from the view it
/// validated last when the tail moved back or past `head`.
pub(crate) fn unread_frames_counts_from_a_plausible_tail_only<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let g = Geometry::with_max_frame_len(8, 64, 256).unwrap();
    let (ring, mut tx, mut rx) = corruptible_channel(new, g);
    for i in 0..8 {
        tx.send(&frame(10, i)).unwrap();
    }
    assert_eq!(tx.unread_frames(), 8);
    for i in 0..3 {
        assert_eq!(first(&mut rx, false), Ok(frame(10, i)));
    }
    // The producer's view of the tail is still 0.
    assert_eq!(tx.unread_frames(), 5);
    // A full ring: this send reads the tail (3) again.
    tx.send(&frame(10, 8)).unwrap();
    assert_eq!(tx.unread_frames(), 6);
    // Behind the view: 8 slots from head, but moved back.
    ring.control().tail.index.store(1, Ordering::Release);
    assert_eq!(tx.unread_frames(), 6);
    // Past head.
    ring.control().tail.index.store(10, Ordering::Release);
    assert_eq!(tx.unread_frames(), 6);
}

/// `unread_frames` never counts more frames than the producer published
/// (itself and those it inherited), whatever lengths the consumer wrote
/// over its descriptors: a frame of four slots rewritten to one byte
/// reads as four frames in the walk.
pub(crate) fn unread_frames_never_exceeds_the_frames_published<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let g = Geometry::with_max_frame_len(16, 64, 256).unwrap();
    let (ring, mut tx, _rx) = corruptible_channel(new, g);
    for i in 0..3 {
        tx.send(&frame(200, i)).unwrap();
    }
    assert_eq!(tx.unread_frames(), 3);
    for slot in 0..12 {
        set_desc(&ring, slot, 1, 0);
    }
    assert_eq!(tx.published_frames(), 3);
    assert_eq!(tx.unread_frames(), 3);
    // Frames an earlier producer of the generation left count too.
    tx.inherit(2);
    assert_eq!(tx.published_frames(), 5);
    assert_eq!(tx.unread_frames(), 5);
    tx.inherit(0);
    assert_eq!(tx.unread_frames(), 3);
}

/// A chunk's count of frames and of free slots, a run that takes exactly
/// what is left after frames pushed before it, then every push refused as
/// `Full`; frames written in place land after the ones before them, and
/// the commit counts every frame and byte.
pub(crate) fn write_chunk_counts_frames_and_free_slots_to_the_last<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let (mut tx, mut rx) = channel(new, Geometry::with_max_frame_len(8, 64, 256).unwrap());
    let frames = [
        frame(64, 0),
        frame(100, 1),
        frame(128, 2),
        frame(64, 3),
        frame(64, 4),
    ];
    let mut chunk = tx.write_chunk(7).unwrap();
    assert_eq!((chunk.free_slots(), chunk.frames()), (7, 0));
    chunk.push(&frames[0]).unwrap();
    chunk.push(&frames[1]).unwrap();
    assert_eq!((chunk.free_slots(), chunk.frames()), (4, 2));
    assert!(chunk.fits(256) && !chunk.fits(257));
    chunk
        .push_with(128, |w| assert_eq!(w.append(&frames[2]), 128))
        .unwrap();
    assert_eq!((chunk.free_slots(), chunk.frames()), (2, 3));
    // Two of the ten asked for: the two slots left.
    let run = chunk.push_run(64, 10, |i, w| {
        assert_eq!(w.append(&frames[3 + i]), 64);
    });
    assert_eq!(run, Ok(2));
    assert_eq!((chunk.free_slots(), chunk.frames()), (0, 5));
    assert!(!chunk.fits(1));
    assert_eq!(chunk.push(&[1]), Err(PushError::Full));
    assert_eq!(
        chunk.push_with(1, |_| panic!("not called")),
        Err(PushError::Full)
    );
    assert_eq!(
        chunk.push_run(1, 4, |_, _| panic!("not called")),
        Err(PushError::Full)
    );
    assert_eq!(chunk.commit(), 5);
    let bytes = frames.iter().map(|f| f.len() as u64).sum();
    assert_eq!((tx.stats().frames, tx.stats().bytes), (5, bytes));
    for f in &frames {
        assert_eq!(first(&mut rx, false).as_ref(), Ok(f));
    }
    assert_eq!(first(&mut rx, false), Err(RecvError::Empty));
    assert_eq!((rx.stats().frames, rx.stats().bytes), (5, bytes));
}

/// A frame written in place in pieces, the piece in the middle across the
/// end of the data area, into exactly the free slots: the slots after it
/// hold frames not yet read, which must come out untouched.
pub(crate) fn appends_across_the_wrap_stop_at_the_frame_end<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let (mut tx, mut rx) = channel(new, Geometry::with_max_frame_len(8, 64, 256).unwrap());
    // Indices 0..10 sent and read: the next frames start at slot 2.
    for i in 0..10 {
        tx.send(&frame(64, i)).unwrap();
        assert_eq!(first(&mut rx, false), Ok(frame(64, i)));
    }
    // Slots 2..6 hold unread frames, slots 6, 7, 0 and 1 are free.
    let unread: Vec<Vec<u8>> = (0..4).map(|i| frame(64, 10 + i)).collect();
    assert_eq!(tx.send_batch(unread.iter().map(|f| &f[..])), Ok(4));
    // The frame's bytes, inside a larger buffer: a piece is a slice of it.
    let source = frame(512, 99);
    let whole = &source[..256];
    let mut chunk = tx.write_chunk(4).unwrap();
    chunk
        .push_with(256, |w| {
            assert_eq!((w.len(), w.is_empty()), (256, false));
            assert!(w.contiguous_mut().is_none(), "slots 6, 7 | 0, 1");
            // 100 bytes before the end, 28 + 100 across it, 28 after.
            assert_eq!(w.append(&source[..100]), 100);
            assert_eq!(w.append(&source[100..228]), 128);
            assert_eq!(w.append(&source[228..300]), 28, "only what is left");
            assert_eq!(w.append(&source[300..]), 0);
        })
        .unwrap();
    assert_eq!(chunk.commit(), 1);
    for f in &unread {
        assert_eq!(first(&mut rx, false).as_ref(), Ok(f));
    }
    assert_eq!(first(&mut rx, false).as_deref(), Ok(whole));
}

/// `recv_batch`'s groups of four equal one-slot frames, entered after
/// frames of other lengths: they end at the last buffer (one group in the
/// four or six buffers left, not two), and at the published head even
/// where the descriptors after it still hold the same word from the lap
/// before.
pub(crate) fn recv_batch_groups_end_at_the_last_buffer_and_at_the_head<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let (mut tx, mut rx) = channel(new, Geometry::with_max_frame_len(64, 64, 256).unwrap());
    let mut bufs = vec![vec![0u8; 64]; 64];
    let mut lens = [0usize; 64];
    // A lap of 40-byte frames: every descriptor holds their word.
    let lap: Vec<Vec<u8>> = (0..64).map(|i| frame(40, i)).collect();
    assert_eq!(tx.send_batch(lap.iter().map(|f| &f[..])), Ok(64));
    assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(64));
    // Slots 0..35: runs of 20-byte frames, each followed by 40-byte ones.
    let runs = [(20, 4), (40, 5), (20, 4), (40, 7), (20, 3), (40, 12)];
    let frames: Vec<Vec<u8>> = runs
        .iter()
        .flat_map(|&(len, n)| std::iter::repeat_n(len, n))
        .enumerate()
        .map(|(i, len)| frame(len, 100 + i as u8))
        .collect();
    assert_eq!(tx.send_batch(frames.iter().map(|f| &f[..])), Ok(35));
    let mut got = Vec::new();
    // Each call takes 5 frames one by one, then a group of 4: 9 buffers
    // end with that group, 11 leave 2 for the frame-by-frame path; 64
    // take two groups and 3 frames, up to the head.
    for (take, want) in [(9, 9), (11, 11), (64, 15)] {
        let n = rx.recv_batch(&mut bufs[..take], &mut lens).unwrap();
        got.extend((0..n).map(|i| bufs[i][..lens[i]].to_vec()));
        assert_eq!(n, want, "{take} buffers");
    }
    assert_eq!(got, frames);
    assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(0));
    let bytes = 64 * 40 + frames.iter().map(|f| f.len() as u64).sum::<u64>();
    assert_eq!((rx.stats().frames, rx.stats().bytes), (64 + 35, bytes));
}

/// `RingStorage::slot_at` maps every byte of the slot data to its slot,
/// the first and the last of each slot alike, and nothing else.
pub(crate) fn slot_at_maps_the_slot_data_only<S: RingStorage + Clone>(new: NewRing<S>) {
    let g = Geometry::new(128, 256).unwrap();
    let ring = new(g);
    let data = ring.data().cast_const();
    for slot in 0..128usize {
        for byte in [0, 1, 255] {
            let at = data.wrapping_add(slot * 256 + byte);
            assert_eq!(ring.slot_at(at), Some(slot), "slot {slot} byte {byte}");
        }
    }
    assert_eq!(ring.slot_at(data.wrapping_sub(1)), None);
    assert_eq!(ring.slot_at(data.wrapping_add(128 * 256)), None);
    assert_eq!(ring.slot_at(std::ptr::null()), None);
    assert_eq!(g.slot_of(128 + 5), 5);
}
