//! Batches of one frame length: `send_batch`'s and `recv_batch`'s loops,
//! `push_run`, and runs read in place, against models, across the wrap.

use super::{channel, frame, geometry, rounds, NewRing};
use crate::geometry::Geometry;
use crate::ring::{Consumer, FrameWriter, Producer, PushError, RecvError, RingStorage};

/// `send_batch`'s loop for streams of one-slot frames of 32 to 64
/// bytes: it must stop exactly where the general loop would (a frame
/// of another length, no room before the end of the data area, no
/// free slot, the end of the frames) and lose nothing.
pub(crate) fn send_batch_streams_small_frames_and_stops_where_it_must<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let (mut tx, mut rx) = channel(new, Geometry::with_max_frame_len(32, 64, 1024).unwrap());
    let lens = [48usize, 48, 32, 64, 64, 20, 65, 130, 40];
    let mut expect = std::collections::VecDeque::new();
    let (mut sent, mut got) = (0u32, 0u32);
    for round in 0..rounds(500) {
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
    assert!(sent > rounds(2000) as u32, "{sent} frames");
}

/// Chunks written with non-temporal stores (`set_streaming`), alternating
/// with `send_batch`: frames of 1 to `STREAM_MAX_LEN` bytes, mixed with
/// longer ones written ordinarily, meet the wrap at every offset (a frame
/// that wraps is written ordinarily too), and each arrives intact and in
/// order.
pub(crate) fn streamed_bursts_arrive_intact_across_the_wrap<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let (mut tx, mut rx) = channel(new, Geometry::with_max_frame_len(32, 64, 1024).unwrap());
    let lens = [1usize, 17, 32, 47, 63, 64, 64, 64, 65, 100, 128, 129, 200];
    let mut expect = std::collections::VecDeque::new();
    let (mut sent, mut got) = (0u32, 0u32);
    for round in 0..rounds(600) {
        let burst: Vec<Vec<u8>> = (0..1 + round % 17)
            .map(|i| {
                frame(
                    lens[(round + i * 3) % lens.len()],
                    (sent as usize + i) as u8,
                )
            })
            .collect();
        let n = if round % 2 == 0 {
            let mut chunk = tx.write_chunk(usize::MAX).unwrap();
            chunk.set_streaming(true);
            let n = burst.iter().take_while(|f| chunk.push(f).is_ok()).count();
            assert_eq!(chunk.commit(), n);
            n
        } else {
            tx.send_batch(burst.iter().map(|f| &f[..])).unwrap()
        };
        expect.extend(burst.into_iter().take(n));
        sent += n as u32;
        got += recv_expected(&mut rx, &mut expect, (round * 5) % 19);
    }
    got += recv_expected(&mut rx, &mut expect, usize::MAX);
    assert_eq!((got, expect.len()), (sent, 0));
    assert!(sent > rounds(3000) as u32, "{sent} frames");
}

/// `push_run` against a model: runs of every length class and of up to
/// 13 frames meet the wrap at every offset (a frame straddling it is
/// written in two segments), stop at the reservation, and every frame
/// arrives intact.
pub(crate) fn push_run_writes_every_frame_across_the_wrap_and_stops_at_the_reservation<
    S: RingStorage + Clone,
>(
    new: NewRing<S>,
) {
    let (mut tx, mut rx) = channel(new, Geometry::with_max_frame_len(32, 64, 1024).unwrap());
    let lens = [1usize, 40, 64, 65, 150, 300];
    let (mut sent, mut got) = (0u32, 0u32);
    let mut expect = std::collections::VecDeque::new();
    for round in 0..rounds(400) {
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
    assert!(sent > rounds(500) as u32, "{sent} frames");
    assert_eq!(rx.stats().frames, u64::from(sent));
    assert_eq!(tx.stats().frames, u64::from(sent));
}

pub(crate) fn push_run_refuses_bad_lengths_without_calling_fill<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let (mut tx, _rx) = channel(new, Geometry::with_max_frame_len(32, 64, 1024).unwrap());
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

/// A chunk looks at no descriptor before its frames are read: frames
/// published after it was made, within its frame budget, are read too, and
/// its `ready_slots` counts them.
pub(crate) fn a_chunk_reads_frames_published_after_it_was_made<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let (mut tx, mut rx) = channel(new, geometry(16, 2048));
    tx.send(&frame(100, 0)).unwrap();
    let mut chunk = rx.read_chunk(3).unwrap();
    assert_eq!(chunk.next_frame().unwrap().unwrap().to_vec(), frame(100, 0));
    assert!(chunk.next_frame().unwrap().is_none());
    drop(chunk);
    let mut chunk = rx.read_chunk(3).unwrap();
    assert_eq!(chunk.ready_slots(), 0);
    assert_eq!(chunk.ready(), Ok(0));
    for i in 1..5 {
        tx.send(&frame(100, i)).unwrap();
    }
    assert_eq!(chunk.ready_slots(), 3, "up to the chunk's budget");
    assert_eq!(chunk.ready(), Ok(3), "the same, the first run validated");
    let got: Vec<Vec<u8>> =
        core::iter::from_fn(|| chunk.next_frame().unwrap().map(|f| f.to_vec())).collect();
    assert_eq!(got, (1..4).map(|i| frame(100, i)).collect::<Vec<_>>());
    drop(chunk);
    assert_eq!((rx.stats().frames, rx.stats().bytes), (4, 400));
}

/// A chunk validates a run ahead of the frames it hands out: the frames
/// not handed out stay queued and are not counted.
pub(crate) fn frames_validated_but_not_handed_out_stay_queued<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let (mut tx, mut rx) = channel(new, geometry(16, 2048));
    for i in 0..10 {
        tx.send(&frame(100, i)).unwrap();
    }
    let mut chunk = rx.read_chunk(32).unwrap();
    for i in 0..3 {
        assert_eq!(chunk.next_frame().unwrap().unwrap().to_vec(), frame(100, i));
    }
    assert_eq!(chunk.ready_slots(), 7);
    assert_eq!(chunk.ready(), Ok(7));
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
pub(crate) fn runs_and_frames_read_every_frame_in_order_across_the_wrap<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    // 32 slots of 64 bytes; lengths of 1 and 3 slots, in streams of
    // changing length, so runs meet the wrap, the head and the budget
    // at every offset.
    let (mut tx, mut rx) = channel(new, Geometry::with_max_frame_len(32, 64, 1024).unwrap());
    let len_of = |i: u32| match (i / 7) % 3 {
        0 => 40,
        1 => 64,
        _ => 150,
    };
    let (mut sent, mut got) = (0u32, 0u32);
    // Sending in the first five sixths of the rounds, then reading only.
    let total = rounds(600) as u32;
    for round in 0..total {
        if round < total / 6 * 5 {
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
    assert!(
        sent > rounds(1000) as u32,
        "the ring kept up: {sent} frames"
    );
}

pub(crate) fn into_arrays_refuses_a_frame_that_wraps_whatever_its_first_part<
    S: RingStorage + Clone,
>(
    new: NewRing<S>,
) {
    // 8 slots of 64 bytes: a 150-byte frame from slot 7 has 64 bytes
    // before the end and 86 after it.
    let (mut tx, mut rx) = channel(new, Geometry::with_max_frame_len(8, 64, 150).unwrap());
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

/// Streams of one small frame size take `recv_batch`'s grouped path;
/// every way out of it must behave like the frame-by-frame path.
pub(crate) fn recv_batch_groups_equal_frames_across_the_wrap<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    // 32 slots; each round sends 7 equal one-slot frames and a 3-slot
    // one, so groups start at every alignment and meet the wrap, the
    // published head and the end of `bufs` in every position.
    let (mut tx, mut rx) = channel(new, Geometry::with_max_frame_len(32, 64, 1024).unwrap());
    let mut bufs = vec![[0u8; 200]; 6];
    let mut lens = [0usize; 6];
    let (mut sent, mut got) = (0u32, 0u32);
    for round in 0..rounds(200) as u32 {
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
    let all = rounds(200) as u32 * 8;
    assert_eq!((sent, got), (all, all));
}

/// Streams of one multi-slot frame size take `recv_batch`'s
/// like-the-last-frame path; it must stop at the published head, at the
/// end of the data area and at a frame of another size.
pub(crate) fn recv_batch_streams_equal_large_frames_to_the_head_and_across_the_wrap<
    S: RingStorage + Clone,
>(
    new: NewRing<S>,
) {
    // 32 slots of 64 bytes; 150-byte frames take 3 slots, so they meet
    // the wrap at every offset. Every fifth frame is 149 bytes (a
    // different descriptor, same slots), and sends and receives come in
    // batches of changing sizes, so the published head falls anywhere.
    let (mut tx, mut rx) = channel(new, Geometry::with_max_frame_len(32, 64, 1024).unwrap());
    let len_of = |i: u32| if i % 5 == 4 { 149 } else { 150 };
    let mut bufs = vec![vec![0u8; 150]; 7];
    let mut lens = [0usize; 7];
    let (mut sent, mut got) = (0u32, 0u32);
    // 300 rounds of sending and receiving, then receiving until empty.
    let sending = rounds(300) as u32;
    for round in 0.. {
        if round < sending {
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
    assert!(sent > rounds(500) as u32, "the ring kept up: {sent} frames");
}

pub(crate) fn recv_batch_group_stops_at_a_buffer_too_small<S: RingStorage + Clone>(
    new: NewRing<S>,
) {
    let (mut tx, mut rx) = channel(new, Geometry::with_max_frame_len(64, 256, 4096).unwrap());
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

/// Sends frames `numbers` (frame `i` is `frame(len_of(i), i)`) with
/// one `send_batch`; returns how many went.
fn send_numbered<S: RingStorage>(
    tx: &mut Producer<S>,
    numbers: std::ops::Range<u32>,
    len_of: impl Fn(u32) -> usize,
) -> u32 {
    let frames: Vec<Vec<u8>> = numbers.map(|i| frame(len_of(i), i as u8)).collect();
    tx.send_batch(frames.iter().map(|f| &f[..])).unwrap() as u32
}

/// Receives up to `max` frames, each of which must be the next of
/// `expect`; returns how many.
pub(super) fn recv_expected<S: RingStorage>(
    rx: &mut Consumer<S>,
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
