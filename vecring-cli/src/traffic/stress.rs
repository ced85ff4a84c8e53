//! `vecring stress`: self-checking frames both ways on every queue (see
//! `vecring_core::test_support::pattern`), each queue's frames verified on arrival:
//! nothing lost, duplicated, reordered, altered, or delivered on another
//! queue.

use super::{Failure, BATCH};
use crate::{cpus, queues_of, LinkArgs};
use std::time::{Duration, Instant};
use vecring_core::{test_support::pattern, HoldBack, PushError, Receiver, Sender};

/// Longest a stress run waits without any progress before failing.
const STALL: Duration = Duration::from_secs(20);

/// Bits of a frame's sequence number below the queue number: frame `i` of
/// queue `q` is `q << QUEUE_SHIFT | i`, so a frame delivered on another
/// queue fails the receiver's check (queue 0's numbers are plain `i`).
const QUEUE_SHIFT: u32 = 48;

/// The sequence number of frame `i` on queue `queue`.
fn seq_of(queue: u16, i: u64) -> u64 {
    u64::from(queue) << QUEUE_SHIFT | i
}

/// A sequence number as `frame i` (queue 0) or `frame i of queue q`.
fn describe(seq: u64) -> String {
    match (seq >> QUEUE_SHIFT, seq & ((1 << QUEUE_SHIFT) - 1)) {
        (0, i) => format!("frame {i}"),
        (q, i) => format!("frame {i} of queue {q}"),
    }
}

/// Sends `frames` self-checking frames of mixed sizes on every queue and
/// receives as many from the peer on each, verifying every one.
///
/// # Errors
/// A bad option, a link that does not come up, `--frames` past what a
/// queue's numbering holds, or the first frame (of any queue) lost,
/// damaged or out of place, or a peer that stopped.
pub fn stress(args: &LinkArgs, frames: u64) -> Result<(), String> {
    if frames >= 1 << QUEUE_SHIFT {
        return Err(format!(
            "--frames {frames}: at most {} per queue",
            (1u64 << QUEUE_SHIFT) - 1
        ));
    }
    let link = args.open_up()?;
    let generation = link.wait_up(Duration::ZERO).map_err(|e| e.to_string())?;
    let queues = queues_of(&link)?;
    let mut pairs = Vec::with_capacity(queues.into());
    for q in 0..queues {
        let tx = link.sender_on(q).map_err(|e| e.to_string())?;
        let mut rx = link.receiver_on(q).map_err(|e| e.to_string())?;
        if args.hold_back {
            rx.set_hold_back(Some(HoldBack::STREAMING));
        }
        pairs.push((tx, rx));
    }
    let failure = Failure::default();
    // Each queue: a sending thread pinned to the queue's CPU, a receiving
    // thread unpinned (as a link of one queue always ran).
    let results: Vec<(u64, u64, Sender)> = std::thread::scope(|s| {
        let threads: Vec<_> = (0u16..)
            .zip(pairs)
            .map(|(q, (tx, rx))| {
                let cpu = cpus::for_queue(&args.cpu, q);
                let failure = &failure;
                let sender = s.spawn(move || {
                    cpus::pin(cpu);
                    send(tx, q, frames, failure)
                });
                let receiver = s.spawn(move || receive(rx, q, frames, failure));
                (sender, receiver)
            })
            .collect();
        threads
            .into_iter()
            .filter_map(|(sender, receiver)| {
                let sent = sender.join().unwrap_or(None);
                let received = receiver.join().unwrap_or(None);
                match (sent, received) {
                    (Some((sent, tx)), Some(received)) => Some((sent, received, tx)),
                    _ => {
                        failure.record("a queue's thread stopped early".into());
                        None
                    }
                }
            })
            .collect()
    });
    if let Some(e) = failure.take() {
        return Err(e);
    }
    // Let the peer finish reading our frames before we go away.
    let mut txs: Vec<Sender> = Vec::with_capacity(results.len());
    let (mut sent, mut received) = (0u64, 0u64);
    for (q, (s, r, tx)) in results.into_iter().enumerate() {
        if queues > 1 {
            println!(
                "vecring stress ({}): queue {q}: sent {s} frames, received {r} frames, all intact and in order",
                link.role()
            );
        }
        sent += s;
        received += r;
        txs.push(tx);
    }
    let deadline = Instant::now() + STALL;
    while txs.iter_mut().any(|tx| tx.unread() > 0) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    println!(
        "vecring stress ({}): sent {sent} frames, received {received} frames, all intact and in order (generation {generation})",
        link.role()
    );
    Ok(())
}

/// Sends queue `queue`'s `frames` frames; returns how many it sent and the
/// sender (to wait for the peer to read them), or `None` after recording
/// a failure (its own, or stopping for another queue's).
fn send(mut tx: Sender, queue: u16, frames: u64, failure: &Failure) -> Option<(u64, Sender)> {
    let mut i = 0;
    let mut scratch = vec![0u8; 9216];
    let mut last_progress = Instant::now();
    let fail = |e: String| {
        failure.record(format!("queue {queue}: {e}"));
        None
    };
    while i < frames {
        if failure.is_set() {
            return None;
        }
        let mut chunk = match tx.write_chunk(BATCH * 5) {
            Ok(c) => c,
            Err(e) => return fail(format!("send failed after {i} frames: {e}")),
        };
        while i < frames && chunk.frames() < BATCH {
            let seq = seq_of(queue, i);
            let len = pattern::mixed_len(seq);
            pattern::fill(&mut scratch[..len], seq);
            match chunk.push(&scratch[..len]) {
                Ok(()) => i += 1,
                Err(PushError::Full) => break,
                Err(e) => return fail(e.to_string()),
            }
        }
        if chunk.commit() > 0 {
            last_progress = Instant::now();
        } else if last_progress.elapsed() > STALL {
            return fail(format!("peer stopped reading after {i} frames"));
        } else {
            std::thread::yield_now();
        }
    }
    tx.flush_counters();
    Some((i, tx))
}

/// Receives queue `queue`'s `frames` frames from the peer, checking each:
/// its pattern, its length, and that it is the next one of this queue.
/// Returns how many it received, or `None` after recording a failure.
fn receive(mut rx: Receiver, queue: u16, frames: u64, failure: &Failure) -> Option<u64> {
    let mut expected = 0u64;
    let mut buf = vec![0u8; 9216];
    let mut last_progress = Instant::now();
    let fail = |e: String| {
        failure.record(format!("queue {queue}: {e}"));
        None
    };
    while expected < frames {
        if failure.is_set() {
            return None;
        }
        let mut chunk = match rx.read_chunk(BATCH) {
            Ok(c) => c,
            Err(e) => return fail(format!("receive failed after {expected} frames: {e}")),
        };
        let mut got = 0;
        let verdict = loop {
            match chunk.next_frame() {
                Ok(Some(frame)) => {
                    let n = frame.copy_to(&mut buf);
                    let want = seq_of(queue, expected);
                    match pattern::check(&buf[..n]) {
                        Ok(seq) if seq == want && n == pattern::mixed_len(seq) => {}
                        Ok(seq) => {
                            break Err(format!(
                                "expected {}, got {} ({n} bytes)",
                                describe(want),
                                describe(seq)
                            ))
                        }
                        Err(e) => break Err(e),
                    }
                    expected += 1;
                    got += 1;
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(e.to_string()),
            }
        };
        drop(chunk);
        if let Err(e) = verdict {
            return fail(e);
        }
        if got > 0 {
            last_progress = Instant::now();
        } else if last_progress.elapsed() > STALL {
            return fail(format!("peer stopped sending after {expected} frames"));
        } else {
            std::thread::yield_now();
        }
    }
    rx.flush_counters();
    Some(expected)
}
