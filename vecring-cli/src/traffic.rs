//! Traffic modes: checked stress both ways, send-only and receive-only.

use crate::{pin, LinkArgs};
use std::io::BufRead;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vecring_core::{pattern, HoldBack, PushError, RecvError, SendError};

const BATCH: usize = 32;
/// Longest a stress run waits without any progress before failing.
const STALL: Duration = Duration::from_secs(20);

/// Sends `frames` self-checking frames of mixed sizes and receives as many
/// from the peer, verifying each.
pub fn stress(args: &LinkArgs, frames: u64) -> Result<(), String> {
    let link = args.open_up()?;
    let generation = link.wait_up(Duration::ZERO).map_err(|e| e.to_string())?;
    let mut tx = link.sender().map_err(|e| e.to_string())?;
    let mut rx = link.receiver().map_err(|e| e.to_string())?;
    if args.hold_back {
        rx.set_hold_back(Some(HoldBack::STREAMING));
    }
    let cpu = args.cpu;
    let sender = std::thread::spawn(move || -> Result<(u64, vecring_core::Sender), String> {
        pin(cpu);
        let mut seq = 0;
        let mut scratch = vec![0u8; 9216];
        let mut last_progress = Instant::now();
        while seq < frames {
            let mut chunk = match tx.write_chunk(BATCH * 5) {
                Ok(c) => c,
                Err(e) => return Err(format!("send failed after {seq} frames: {e}")),
            };
            while seq < frames && chunk.frames() < BATCH {
                let len = pattern::mixed_len(seq);
                pattern::fill(&mut scratch[..len], seq);
                match chunk.push(&scratch[..len]) {
                    Ok(()) => seq += 1,
                    Err(PushError::Full) => break,
                    Err(e) => return Err(e.to_string()),
                }
            }
            if chunk.commit() > 0 {
                last_progress = Instant::now();
            } else if last_progress.elapsed() > STALL {
                return Err(format!("peer stopped reading after {seq} frames"));
            } else {
                std::thread::yield_now();
            }
        }
        tx.flush_counters();
        Ok((seq, tx))
    });
    let mut expected = 0u64;
    let mut buf = vec![0u8; 9216];
    let mut last_progress = Instant::now();
    let received: Result<u64, String> = loop {
        if expected == frames {
            break Ok(expected);
        }
        let mut chunk = match rx.read_chunk(BATCH) {
            Ok(c) => c,
            Err(e) => break Err(format!("receive failed after {expected} frames: {e}")),
        };
        let mut got = 0;
        let verdict = loop {
            match chunk.next_frame() {
                Ok(Some(frame)) => {
                    let n = frame.copy_to(&mut buf);
                    match pattern::check(&buf[..n]) {
                        Ok(seq) if seq == expected && n == pattern::mixed_len(seq) => {}
                        Ok(seq) => {
                            break Err(format!(
                                "expected frame {expected}, got frame {seq} ({n} bytes)"
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
            break Err(e);
        }
        if got > 0 {
            last_progress = Instant::now();
        } else if last_progress.elapsed() > STALL {
            break Err(format!("peer stopped sending after {expected} frames"));
        } else {
            std::thread::yield_now();
        }
    };
    rx.flush_counters();
    let (sent, mut tx) = sender
        .join()
        .map_err(|_| "sender thread panicked".to_string())??;
    let received = received?;
    // Let the peer finish reading our frames before we go away.
    let deadline = Instant::now() + STALL;
    while tx.unread() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    println!(
        "vecring stress ({}): sent {sent} frames, received {received} frames, all intact and in order (generation {generation})",
        link.role()
    );
    Ok(())
}

/// Sends frames of `size` bytes in batches of 32 for `seconds`, then waits
/// up to `drain` seconds for the peer to read the ring, and reports frames
/// sent, taken by the peer, and still in the ring.
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
    let mut tx = link.sender().map_err(|e| e.to_string())?;
    pin(args.cpu);
    let stop = Instant::now() + Duration::from_secs_f64(seconds);
    let (sent, full) = send_for(&mut tx, size, stop, &AtomicBool::new(false))?;
    let secs = seconds.max(1e-9);
    let deadline = Instant::now() + Duration::from_secs_f64(drain);
    while tx.unread() > 0 && Instant::now() < deadline && link.state().is_up() {
        std::thread::sleep(Duration::from_millis(5));
    }
    let unread = tx.unread();
    println!(
        "txonly: sent {sent} frames of {size} bytes in {seconds:.1} s ({:.0} pps, {full} ring-full retries); taken by the peer {}; still in the ring {unread}",
        sent as f64 / secs,
        sent - unread
    );
    if unread > 0 {
        println!(
            "txonly: {unread} frames were not read by the peer within --drain {drain} s; they are lost when this side exits"
        );
    }
    Ok(())
}

/// Sends frames of `size` bytes until `stop` or `abort`; returns frames
/// sent and the number of times the ring was full.
pub fn send_for(
    tx: &mut vecring_core::Sender,
    size: usize,
    stop: Instant,
    abort: &AtomicBool,
) -> Result<(u64, u64), String> {
    let frame = vec![0x5au8; size];
    let (mut sent, mut full) = (0u64, 0u64);
    let mut n = 0u32;
    loop {
        n = n.wrapping_add(1);
        if n % 1024 == 0 && (Instant::now() >= stop || abort.load(Ordering::Relaxed)) {
            break;
        }
        let k = send_batch(tx, &frame, BATCH)?;
        if k == 0 {
            full += 1;
            std::hint::spin_loop();
        }
        sent += k as u64;
    }
    tx.flush_counters();
    Ok((sent, full))
}

/// Sends up to `n` copies of `frame` in one batch; returns how many the
/// ring took.
fn send_batch(tx: &mut vecring_core::Sender, frame: &[u8], n: usize) -> Result<usize, String> {
    match tx.send_batch(std::iter::repeat_n(frame, n)) {
        Ok(k) => Ok(k),
        Err(SendError::LinkDown) => Err("link went down".into()),
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

/// Offers frames of `size` bytes at a constant `rate` (frames per second)
/// for `duration`, each batch as soon as it falls due; a frame that finds
/// the ring full is dropped and counted, not retried, as a NIC would drop
/// it (the trial of an RFC 2544 throughput search).
pub fn send_paced(
    tx: &mut vecring_core::Sender,
    size: usize,
    rate: f64,
    duration: Duration,
) -> Result<Paced, String> {
    let frame = vec![0x5au8; size];
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
        send_batch(tx, &frame, n)?;
        offered += n as u64;
    }
    let kept_rate = start.elapsed().as_secs_f64() <= duration.as_secs_f64() * 1.02;
    tx.flush_counters();
    Ok(Paced { offered, kept_rate })
}

/// Set by the SIGINT handler of [`rxonly`].
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    // Async-signal-safe: one atomic store.
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Receives and counts frames until stdin closes or Ctrl-C. Each line read
/// on stdin is answered on stdout with `rx <frames> <bytes>`; every
/// `interval` seconds (0: never) and on link up/down a labelled report goes
/// to stderr, and a summary at the end.
pub fn rxonly(args: &LinkArgs, interval: f64) -> Result<(), String> {
    if !(interval.is_finite() && interval >= 0.0) {
        return Err(format!(
            "--interval {interval}: must be a non-negative number"
        ));
    }
    let link = args.open_up()?;
    let mut rx = link.receiver().map_err(|e| e.to_string())?;
    if args.hold_back {
        rx.set_hold_back(Some(HoldBack::STREAMING));
    }
    // SAFETY: installs a handler that only stores to an atomic.
    unsafe { libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t) };
    let frames = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let (f, b, d) = (Arc::clone(&frames), Arc::clone(&bytes), Arc::clone(&done));
    let cpu = args.cpu;
    let worker = std::thread::spawn(move || {
        pin(cpu);
        let mut buf = vec![0u8; 9216];
        let (mut nf, mut nb) = (0u64, 0u64);
        let mut idle = 0u32;
        while !d.load(Ordering::Relaxed) {
            let mut chunk = match rx.read_chunk(BATCH) {
                Ok(c) => c,
                Err(RecvError::LinkDown) => {
                    std::thread::sleep(Duration::from_millis(1));
                    continue;
                }
                Err(e) => return Err(e.to_string()),
            };
            let mut got = 0;
            while let Ok(Some(frame)) = chunk.next_frame() {
                nb += frame.copy_to(&mut buf) as u64;
                got += 1;
            }
            drop(chunk);
            if got == 0 {
                idle += 1;
                if idle % 64 == 0 {
                    // Relaxed: counters for a reader that only wants recent values.
                    f.store(nf, Ordering::Relaxed);
                    b.store(nb, Ordering::Relaxed);
                }
                std::hint::spin_loop();
            } else {
                nf += got;
                f.store(nf, Ordering::Relaxed);
                b.store(nb, Ordering::Relaxed);
            }
        }
        Ok(())
    });
    // Stdin: queries answered at once; its end ends the run.
    let stdin_closed = Arc::new(AtomicBool::new(false));
    {
        let (frames, bytes, closed) = (
            Arc::clone(&frames),
            Arc::clone(&bytes),
            Arc::clone(&stdin_closed),
        );
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                if line.is_err() {
                    break;
                }
                println!(
                    "rx {} {}",
                    frames.load(Ordering::Relaxed),
                    bytes.load(Ordering::Relaxed)
                );
            }
            closed.store(true, Ordering::Relaxed);
        });
    }
    let start = Instant::now();
    let every = (interval > 0.0).then(|| Duration::from_secs_f64(interval));
    let (mut last_at, mut last_f, mut last_b) = (start, 0u64, 0u64);
    let mut was_up = true;
    let why = loop {
        if stdin_closed.load(Ordering::Relaxed) {
            break "stdin closed";
        }
        if INTERRUPTED.load(Ordering::Relaxed) {
            break "interrupted";
        }
        std::thread::sleep(Duration::from_millis(20));
        let up = link.state().is_up();
        let (nf, nb) = (
            frames.load(Ordering::Relaxed),
            bytes.load(Ordering::Relaxed),
        );
        if up != was_up {
            eprintln!(
                "rxonly: link {}: frames {nf}, bytes {nb}",
                if up { "up" } else { "down" }
            );
            was_up = up;
        }
        if every.is_some_and(|e| last_at.elapsed() >= e) {
            let dt = last_at.elapsed().as_secs_f64();
            eprintln!(
                "rxonly: frames {nf} ({:.0} pps), bytes {nb} ({:.1} Mbit/s), link {}",
                (nf - last_f) as f64 / dt,
                (nb - last_b) as f64 * 8.0 / dt / 1e6,
                if up { "up" } else { "down" }
            );
            (last_at, last_f, last_b) = (Instant::now(), nf, nb);
        }
    };
    done.store(true, Ordering::Relaxed);
    let result = worker
        .join()
        .map_err(|_| "receiver thread panicked".to_string())?;
    let secs = start.elapsed().as_secs_f64().max(1e-9);
    let (nf, nb) = (
        frames.load(Ordering::Relaxed),
        bytes.load(Ordering::Relaxed),
    );
    eprintln!(
        "rxonly: summary ({why}): frames {nf}, bytes {nb} in {secs:.1} s ({:.0} pps average)",
        nf as f64 / secs
    );
    result
}
