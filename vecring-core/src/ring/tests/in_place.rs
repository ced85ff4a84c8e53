//! What frames read in place report about themselves: a [`Frame`]'s
//! index, slots and length, and the length and size hint of a
//! [`FrameRun`] and of its [`FrameArrays`], from the first frame to past
//! the last.
//!
//! [`Frame`]: crate::ring::Frame
//! [`FrameRun`]: crate::ring::FrameRun
//! [`FrameArrays`]: crate::ring::FrameArrays

use super::{channel, frame, NewRing};
use crate::geometry::Geometry;
use crate::ring::RingStorage;

pub(crate) fn frames_runs_and_arrays_report_their_place_and_size<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let (mut tx, mut rx) = channel(new, Geometry::with_max_frame_len(8, 64, 256).unwrap());
    // Indices 0..3 sent and read: the frames below start at index 3.
    for i in 0..3 {
        tx.send(&frame(64, i)).unwrap();
    }
    assert_eq!(rx.recv_batch(&mut [[0u8; 64]; 3], &mut [0; 3]), Ok(3));
    // Index 3 (two slots), then 5, 6 and 7.
    let sent = [frame(100, 3), frame(60, 5), frame(60, 6), frame(60, 7)];
    assert_eq!(tx.send_batch(sent.iter().map(|f| &f[..])), Ok(4));
    {
        let mut chunk = rx.read_chunk(8).unwrap();
        let f = chunk.next_frame().unwrap().expect("index 3");
        assert_eq!(
            (f.index(), f.slots(), f.len(), f.is_empty()),
            (3, 2, 100, false)
        );
        assert_eq!(f.to_vec(), sent[0]);
        let mut run = chunk.next_run().unwrap().expect("indices 5 to 7");
        assert_eq!((run.len(), run.frame_len(), run.is_empty()), (3, 60, false));
        assert_eq!(run.size_hint(), (3, Some(3)));
        let f = run.next().expect("index 5");
        assert_eq!(
            (f.index(), f.slots(), f.len(), f.is_empty()),
            (5, 1, 60, false)
        );
        assert_eq!(f.to_vec(), sent[1]);
        assert_eq!((run.len(), run.size_hint()), (2, (2, Some(2))));
        let mut arrays = run.into_arrays::<60>().ok().expect("contiguous");
        assert_eq!((arrays.len(), arrays.size_hint()), (2, (2, Some(2))));
        assert_eq!(arrays.next().map(|a| &a[..]), Some(&sent[2][..]));
        assert_eq!((arrays.len(), arrays.size_hint()), (1, (1, Some(1))));
        assert_eq!(arrays.next().map(|a| &a[..]), Some(&sent[3][..]));
        assert_eq!((arrays.len(), arrays.size_hint()), (0, (0, Some(0))));
        assert!(arrays.next().is_none());
    }
    // Indices 8 and 9: slots 0 and 1 of the next lap.
    let sent = [frame(40, 8), frame(40, 9)];
    assert_eq!(tx.send_batch(sent.iter().map(|f| &f[..])), Ok(2));
    let mut chunk = rx.read_chunk(8).unwrap();
    let mut run = chunk.next_run().unwrap().expect("indices 8 and 9");
    let places: Vec<(u64, u64)> = run.by_ref().map(|f| (f.index(), f.slots())).collect();
    assert_eq!(places, [(8, 1), (9, 1)]);
    assert_eq!(
        (run.len(), run.size_hint(), run.is_empty()),
        (0, (0, Some(0)), true)
    );
    assert!(run.next().is_none());
}
