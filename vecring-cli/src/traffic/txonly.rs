//! `vecring txonly`: sends frames of one size on every queue for a while,
//! waits for the peer to read them, and reports per queue and in total what
//! was sent, taken by the peer and left in the ring.

use super::{on_each_queue, send_for, Failure};
use crate::{queues_of, LinkArgs};
use std::time::{Duration, Instant};

/// What one queue sent.
struct Sent {
    frames: u64,
    /// Times the ring was full when a batch was offered.
    full: u64,
    /// Frames the peer had not read when this side stopped waiting.
    unread: u64,
}

/// Sends frames of `size` bytes in batches of 32 on every queue (a thread
/// each) for `seconds`, then waits up to `drain` seconds for the peer to
/// read the rings, and reports frames sent, taken by the peer, and still in
/// the rings.
///
/// # Errors
/// A bad option, a link that does not come up, or a queue whose sending
/// failed (the link went down).
pub fn txonly(args: &LinkArgs, size: usize, seconds: f64, drain: f64) -> Result<(), String> {
    let limits = vecring_core::abi::MIN_FRAME_LEN..=vecring_core::abi::MAX_FRAME_LEN;
    if !limits.contains(&size) {
        return Err(format!(
            "--size {size}: a frame is {} to {} bytes",
            limits.start(),
            limits.end()
        ));
    }
    if !(seconds.is_finite() && seconds >= 0.0 && drain.is_finite() && drain >= 0.0) {
        return Err("--seconds and --drain must be non-negative numbers".into());
    }
    args.check()?;
    let link = args.open_up()?;
    let queues = queues_of(&link)?;
    let mut txs = (0..queues)
        .map(|q| link.sender_on(q))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let stop = Instant::now() + Duration::from_secs_f64(seconds);
    let failure = Failure::default();
    let sent = on_each_queue(&mut txs, &args.cpu, &failure, |_, tx| {
        send_for(tx, size, stop, failure.flag())
    })?;
    let deadline = Instant::now() + Duration::from_secs_f64(drain);
    while txs.iter_mut().any(|tx| tx.unread() > 0)
        && Instant::now() < deadline
        && link.state().is_up()
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    let per_queue: Vec<Sent> = sent
        .iter()
        .zip(&mut txs)
        .map(|(&(frames, full), tx)| Sent {
            frames,
            full,
            unread: tx.unread(),
        })
        .collect();
    let secs = seconds.max(1e-9);
    if per_queue.len() > 1 {
        for (q, s) in per_queue.iter().enumerate() {
            println!(
                "txonly: queue {q}: sent {} frames ({:.0} pps, {} ring-full retries); taken by the peer {}; still in the ring {}",
                s.frames,
                s.frames as f64 / secs,
                s.full,
                s.frames.saturating_sub(s.unread),
                s.unread
            );
        }
    }
    let total = per_queue.iter().fold(
        Sent {
            frames: 0,
            full: 0,
            unread: 0,
        },
        |t, s| Sent {
            frames: t.frames + s.frames,
            full: t.full + s.full,
            unread: t.unread + s.unread,
        },
    );
    println!(
        "txonly: sent {} frames of {size} bytes in {seconds:.1} s ({:.0} pps, {} ring-full retries); taken by the peer {}; still in the ring {}",
        total.frames,
        total.frames as f64 / secs,
        total.full,
        total.frames.saturating_sub(total.unread),
        total.unread
    );
    if total.unread > 0 {
        println!(
            "txonly: {} frames were not read by the peer within --drain {drain} s; they are lost when this side exits",
            total.unread
        );
    }
    Ok(())
}
