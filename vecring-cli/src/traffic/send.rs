//! The sending loops of `txonly` and `vecring-bench host-container`: as
//! fast as the ring takes frames ([`send_for`]), and at a constant offered
//! rate ([`send_paced`]).
//! Every frame of a run is the same buffer (`frame.rs`): the loops measure
//! the link, not the making of frames.

use super::BATCH;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use vecring_core::LinkSendError;

/// What [`send_for`] sent until it stopped.
#[derive(Debug, Clone, Copy, Default)]
pub struct Burst {
    /// Frames the ring took.
    pub frames: u64,
    /// Times the ring was full when a batch was offered.
    pub full: u64,
    /// Whether it stopped because the link went down (the peer left), or
    /// came up again with another peer between two batches.
    pub down: bool,
}

/// Sends `frame` until `stop`, `abort`, or the generation it began in
/// ends (the link goes down, or a new peer replaced the old one between
/// two batches: its frames belong to the next generation's figures).
pub fn send_for(
    tx: &mut vecring_core::Sender,
    frame: &[u8],
    stop: Instant,
    abort: &AtomicBool,
) -> Result<Burst, String> {
    let mut b = Burst::default();
    let mut n = 0u32;
    let generation = tx.generation();
    loop {
        n = n.wrapping_add(1);
        if n % 1024 == 0 && (Instant::now() >= stop || abort.load(Ordering::Relaxed)) {
            break;
        }
        if generation.is_some() && tx.generation() != generation {
            b.down = true;
            break;
        }
        let k = match tx.send_batch(std::iter::repeat_n(frame, BATCH)) {
            Ok(k) => k,
            Err(LinkSendError::NoPeer) => {
                b.down = true;
                break;
            }
            Err(e) => return Err(e.to_string()),
        };
        if k == 0 {
            b.full += 1;
            std::hint::spin_loop();
        }
        b.frames += k as u64;
    }
    tx.flush_counters();
    Ok(b)
}

/// Sends up to `n` copies of `frame` in one batch; returns how many the
/// ring took.
fn send_batch(tx: &mut vecring_core::Sender, frame: &[u8], n: usize) -> Result<usize, String> {
    match tx.send_batch(std::iter::repeat_n(frame, n)) {
        Ok(k) => Ok(k),
        Err(LinkSendError::NoPeer) => Err("link went down".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// What [`send_paced`] offered and sent.
#[derive(Debug, Clone, Copy)]
pub struct Paced {
    /// Frames due at the rate asked for, all offered to the ring (those
    /// that found it full were dropped).
    pub offered: u64,
    /// Whether the sender kept the rate (finished within 2 % of the
    /// trial's length); a sender that cannot is no measure of the link.
    pub kept_rate: bool,
}

/// Offers `frame` at a constant `rate` (frames per second)
/// for `duration`, each batch as soon as it falls due; a frame that finds
/// the ring full is dropped and counted, not retried, as a NIC would drop
/// it (the trial of an RFC 2544 throughput search).
pub fn send_paced(
    tx: &mut vecring_core::Sender,
    frame: &[u8],
    rate: f64,
    duration: Duration,
) -> Result<Paced, String> {
    let total = (rate * duration.as_secs_f64()).ceil() as u64;
    let mut offered = 0u64;
    let start = Instant::now();
    while offered < total {
        let due = ((start.elapsed().as_secs_f64() * rate) as u64).min(total);
        if due == offered {
            std::hint::spin_loop();
            continue;
        }
        let n = (due - offered).min(BATCH as u64) as usize;
        send_batch(tx, frame, n)?;
        offered += n as u64;
    }
    let kept_rate = start.elapsed().as_secs_f64() <= duration.as_secs_f64() * 1.02;
    tx.flush_counters();
    Ok(Paced { offered, kept_rate })
}
