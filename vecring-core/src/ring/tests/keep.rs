//! Frames kept in place after their chunk ends, and released later.

use super::{channel, NewRing};
use crate::geometry::Geometry;
use crate::ring::{Producer, PushError, RecvError, RingStorage, SendError};

pub(crate) fn kept_frames_hold_their_slots_until_released<S: RingStorage + Clone>(new: NewRing<S>) {
    let (mut tx, mut rx) = channel(new, Geometry::new(16, 2048).unwrap());
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
    let fill = |tx: &mut Producer<S>| (0..).take_while(|_| tx.send(b"y").is_ok()).count();
    assert_eq!(fill(&mut tx), 11);
    assert!(rx.release_to(13));
    assert_eq!(fill(&mut tx), 2);
}

/// A read that finds nothing releases nothing: frames kept before it
/// keep their slots.
pub(crate) fn reads_that_find_nothing_leave_kept_frames_kept<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let (mut tx, mut rx) = channel(new, Geometry::with_max_frame_len(4, 64, 128).unwrap());
    for i in 0..4u8 {
        tx.send(&[i; 10]).unwrap();
    }
    let mut chunk = rx.read_chunk(4).unwrap();
    while chunk.next_frame().unwrap().is_some() {}
    chunk.keep();
    assert_eq!((rx.read_position(), rx.released_position()), (4, 0));
    let (mut bufs, mut lens) = ([[0u8; 64]; 4], [0usize; 4]);
    assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(0));
    assert_eq!(rx.recv(&mut bufs[0]), Err(RecvError::Empty));
    assert!(rx.read_chunk(4).unwrap().next_frame().unwrap().is_none());
    assert_eq!((rx.read_position(), rx.released_position()), (4, 0));
    assert_eq!(tx.send(b"x"), Err(SendError::Push(PushError::Full)));
    assert_eq!(tx.unread_frames(), 4);
    assert!(rx.release_to(4));
    assert_eq!(tx.unread_frames(), 0);
    tx.send(b"x").unwrap();
}
