//! `WriteChunk::push_small` against a model: bursts of small frames,
//! mixed with frames of several slots pushed one at a time, meet the wrap
//! and the end of the reservation at every offset, streamed or not; the
//! burst stops exactly where `push` would have to take over, and every
//! frame arrives intact and in order.

use super::batch::recv_expected;
use super::{channel, frame, rounds, NewRing};
use crate::geometry::Geometry;
use crate::ring::RingStorage;
use std::collections::VecDeque;

pub(crate) fn push_small_stops_where_push_must_take_over_and_loses_nothing<
    S: RingStorage + Clone,
>(
    new: NewRing<S>,
) {
    let (mut tx, mut rx) = channel(new, Geometry::with_max_frame_len(32, 64, 1024).unwrap());
    // One-slot lengths (1..=64, several of them in a row), lengths of
    // several slots, and an empty frame, which is never valid.
    let lens = [1usize, 17, 64, 64, 64, 40, 40, 65, 100, 64, 0, 300, 33];
    let mut expect = VecDeque::new();
    let (mut sent, mut got, mut refused) = (0u32, 0u32, 0u32);
    for round in 0..rounds(800) {
        let burst: Vec<Vec<u8>> = (0..1 + round % 23)
            .map(|i| {
                frame(
                    lens[(round * 5 + i) % lens.len()],
                    (sent as usize + i) as u8,
                )
            })
            .collect();
        let mut chunk = tx.write_chunk(1 + round % 37).unwrap();
        chunk.set_streaming(round % 3 != 0);
        let mut at = 0;
        while at < burst.len() {
            let n = chunk.push_small(burst[at..].iter().map(|f| &f[..]));
            at += n;
            let Some(next) = burst.get(at) else { break };
            // Stopped before the end of the burst: the chunk is full, or
            // the next frame is not of one slot.
            assert!(
                chunk.free_slots() == 0 || !(1..=64).contains(&next.len()),
                "round {round}: stopped at a {}-byte frame with {} slots free",
                next.len(),
                chunk.free_slots()
            );
            if chunk.push(next).is_err() {
                refused += 1;
                break;
            }
            at += 1;
        }
        assert_eq!(chunk.frames(), at);
        let bytes: usize = burst[..at].iter().map(Vec::len).sum();
        assert_eq!(chunk.bytes(), bytes as u64);
        assert_eq!(chunk.commit(), at);
        expect.extend(burst.into_iter().take(at));
        sent += at as u32;
        got += recv_expected(&mut rx, &mut expect, (round * 7) % 29);
    }
    got += recv_expected(&mut rx, &mut expect, usize::MAX);
    assert_eq!((got, expect.len()), (sent, 0));
    assert!(sent > rounds(2500) as u32, "{sent} frames");
    assert!(refused > 0, "no burst met a frame it could not take");
}
