//! `vecring rxonly`: receives and counts frames on every queue (a thread
//! each) until stdin closes or Ctrl-C, answering queries on stdin and
//! reporting on stderr, per queue and in total.

use super::{interrupt, Failure, BATCH};
use crate::open::Waited;
use crate::{cpus, queues_of, LinkArgs};
use std::io::BufRead;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vecring_core::{HoldBack, Link, LinkRecvError, LinkState, Receiver};

/// Frames and bytes one queue's thread has received so far.
#[derive(Default)]
struct Tally {
    frames: AtomicU64,
    bytes: AtomicU64,
}

impl Tally {
    /// Publishes the thread's counts.
    fn store(&self, frames: u64, bytes: u64) {
        // Relaxed: counters for readers that only want recent values.
        self.frames.store(frames, Ordering::Relaxed);
        self.bytes.store(bytes, Ordering::Relaxed);
    }
}

/// Every queue's (frames, bytes), read once each, and their sums: the
/// totals always agree with the per-queue figures printed beside them.
fn snapshot(tallies: &[Tally]) -> (Vec<(u64, u64)>, (u64, u64)) {
    let each: Vec<(u64, u64)> = tallies
        .iter()
        .map(|t| {
            (
                t.frames.load(Ordering::Relaxed),
                t.bytes.load(Ordering::Relaxed),
            )
        })
        .collect();
    let total = each
        .iter()
        .fold((0, 0), |(f, b), &(qf, qb)| (f + qf, b + qb));
    (each, total)
}

/// The answer to a line on stdin: `rx <frames> <bytes>` in total, then,
/// on a link of several queues, `<frames> <bytes>` of each queue in order.
fn answer(tallies: &[Tally]) -> String {
    let (each, (f, b)) = snapshot(tallies);
    let mut line = format!("rx {f} {b}");
    if each.len() > 1 {
        for (qf, qb) in each {
            line.push_str(&format!(" {qf} {qb}"));
        }
    }
    line
}

/// Receives and counts frames on every queue until stdin closes or
/// Ctrl-C. Each line read on stdin is answered on stdout (`rx <frames>
/// <bytes>`, then each queue's on a link of several); every `interval` seconds (0: never) and on link up/down a
/// labelled report goes to stderr, and a summary at the end.
///
/// # Errors
/// A bad option, a link that does not come up, or a queue whose receiving
/// failed.
pub fn rxonly(args: &LinkArgs, interval: f64, interrupt: bool) -> Result<(), String> {
    if !(interval.is_finite() && interval >= 0.0) {
        return Err(format!(
            "--interval {interval}: must be a non-negative number"
        ));
    }
    // Before the link opens: once its socket exists, Ctrl-C ends a wait
    // with a summary.
    interrupt::install();
    let link = args.open()?;
    let tallies: Arc<Vec<Tally>> = Arc::new(
        (0..vecring_core::MAX_QUEUES)
            .map(|_| Tally::default())
            .collect(),
    );
    // Stdin: queries answered at once; its end ends the run, the wait for
    // the peer too. The thread stays blocked on stdin until the process
    // exits.
    let queues_known = Arc::new(AtomicU64::new(1));
    let stdin_closed = Arc::new(AtomicBool::new(false));
    {
        let (tallies, closed, known) = (
            Arc::clone(&tallies),
            Arc::clone(&stdin_closed),
            Arc::clone(&queues_known),
        );
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                if line.is_err() {
                    break;
                }
                let n = known.load(Ordering::Relaxed) as usize;
                println!("{}", answer(&tallies[..n]));
            }
            closed.store(true, Ordering::Relaxed);
        });
    }
    let ended = || {
        if stdin_closed.load(Ordering::Relaxed) {
            Some("stdin closed")
        } else if interrupt::interrupted() {
            Some("interrupted")
        } else {
            None
        }
    };
    if let Waited::Stopped(why) = args.wait_for_peer(&link, &ended)? {
        eprintln!("rxonly: summary ({why}, before the peer came): frames 0, bytes 0 in 0.0 s");
        return Ok(());
    }
    let queues = queues_of(&link)?;
    queues_known.store(u64::from(queues), Ordering::Relaxed);
    let mut rxs = (0..queues)
        .map(|q| link.receiver_on(q))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    if args.hold_back {
        for rx in &mut rxs {
            rx.set_hold_back(Some(HoldBack::STREAMING));
        }
    }
    let tallies_used = &tallies[..usize::from(queues)];
    let done = AtomicBool::new(false);
    let failure = Failure::default();
    let (why, up) = std::thread::scope(|s| {
        for ((q, mut rx), tally) in (0u16..).zip(rxs).zip(tallies_used.iter()) {
            let (cpu, done, failure) = (cpus::for_queue(&args.cpu, q), &done, &failure);
            s.spawn(move || {
                cpus::pin(cpu);
                if let Err(e) = receive(&mut rx, tally, done, interrupt) {
                    failure.record(format!("queue {q}: {e}"));
                }
            });
        }
        let ended = watch(&link, tallies_used, interval, &stdin_closed, &failure);
        done.store(true, Ordering::Relaxed);
        ended
    });
    let secs = up.as_secs_f64();
    let (each, (nf, nb)) = snapshot(tallies_used);
    if each.len() > 1 {
        for (q, (qf, qb)) in each.iter().enumerate() {
            eprintln!("rxonly: queue {q}: frames {qf}, bytes {qb}");
        }
    }
    eprintln!(
        "rxonly: summary ({why}): frames {nf}, bytes {nb} in {secs:.1} s ({:.0} pps average)",
        nf as f64 / secs.max(1e-9)
    );
    failure.take().map_or(Ok(()), Err)
}

/// How long an `--interrupt` receiver sleeps at most before it looks at
/// `done` again.
const WAIT_SLICE: Duration = Duration::from_millis(100);

/// Receives on one queue until `done`, publishing its counts to `tally`.
/// Polling (the default): a link that is down is looked at again every
/// millisecond, an empty ring at once, the thread keeping its CPU. With
/// `interrupt`, an empty ring or a link down puts the thread to sleep until
/// the peer's doorbell (or a link change) wakes it.
fn receive(
    rx: &mut Receiver,
    tally: &Tally,
    done: &AtomicBool,
    interrupt: bool,
) -> Result<(), String> {
    let mut buf = vec![0u8; 9216];
    let (mut nf, mut nb) = (0u64, 0u64);
    let mut idle = 0u32;
    while !done.load(Ordering::Relaxed) {
        // Frames read now, or None while the link is down.
        let got = match rx.read_chunk(BATCH) {
            Ok(mut chunk) => {
                let mut got = 0;
                while let Ok(Some(frame)) = chunk.next_frame() {
                    nb += frame.copy_to(&mut buf) as u64;
                    got += 1;
                }
                Some(got)
            }
            Err(LinkRecvError::NoPeer) => None,
            Err(e) => return Err(e.to_string()),
        };
        let Some(got) = got else {
            if interrupt {
                wait_slice(rx)?;
            } else {
                std::thread::sleep(Duration::from_millis(1));
            }
            continue;
        };
        if got == 0 {
            idle = idle.wrapping_add(1);
            if idle % 64 == 0 || interrupt {
                tally.store(nf, nb);
            }
            if interrupt {
                wait_slice(rx)?;
            } else {
                std::hint::spin_loop();
            }
        } else {
            nf += got;
            tally.store(nf, nb);
        }
    }
    Ok(())
}

/// The generation being received: its id, when it came up, and the
/// totals then.
struct Generation {
    id: u64,
    at: Instant,
    frames: u64,
    bytes: u64,
}

impl Generation {
    /// The link's current generation, counted from the totals `frames`
    /// and `bytes`, up since now; None if the link is down.
    fn start(link: &Link, frames: u64, bytes: u64) -> Option<Generation> {
        match link.state() {
            LinkState::Up { generation } => Some(Generation {
                id: generation,
                at: Instant::now(),
                frames,
                bytes,
            }),
            LinkState::Down => None,
        }
    }

    /// Says what this generation received, now that it ended with the
    /// totals `frames` and `bytes`.
    fn report(&self, frames: u64, bytes: u64) {
        let secs = self.at.elapsed().as_secs_f64();
        let n = frames.saturating_sub(self.frames);
        eprintln!(
            "rxonly: generation {}: frames {n}, bytes {} in {secs:.1} s ({:.0} pps)",
            self.id,
            bytes.saturating_sub(self.bytes),
            n as f64 / secs.max(1e-9)
        );
    }
}

/// Reports on stderr until stdin closes, Ctrl-C, or a queue fails: link
/// up and down (with what each generation received), and every
/// `interval` seconds (0: never) the totals and their rates over the time
/// the link was up in it. Returns why it ended and how long the link was
/// up.
fn watch(
    link: &Link,
    tallies: &[Tally],
    interval: f64,
    stdin_closed: &AtomicBool,
    failure: &Failure,
) -> (&'static str, Duration) {
    let every = (interval > 0.0).then(|| Duration::from_secs_f64(interval));
    let (mut last_at, mut last_f, mut last_b) = (Instant::now(), 0u64, 0u64);
    // Time up in the generations that ended, and the current one.
    let mut up_before = Duration::ZERO;
    let mut current = Generation::start(link, 0, 0);
    // The totals when the last generation ended: nothing arrives while
    // the link is down, so the next generation counts from them (frames
    // that arrive before this loop sees the link up are the next one's).
    let mut base = (0u64, 0u64);
    let mut up_at_report = Duration::ZERO;
    let up_total = |before: Duration, current: &Option<Generation>| {
        before + current.as_ref().map_or(Duration::ZERO, |g| g.at.elapsed())
    };
    loop {
        let why = if stdin_closed.load(Ordering::Relaxed) {
            Some("stdin closed")
        } else if interrupt::interrupted() {
            Some("interrupted")
        } else if failure.is_set() {
            Some("receive failed")
        } else {
            None
        };
        if let Some(why) = why {
            return (why, up_total(up_before, &current));
        }
        std::thread::sleep(Duration::from_millis(20));
        let state = link.state();
        let up = state.is_up();
        let (_, (nf, nb)) = snapshot(tallies);
        match (current.take(), state) {
            (Some(g), LinkState::Up { generation }) if generation == g.id => current = Some(g),
            // Down, or down and up again between two looks.
            (Some(g), _) => {
                eprintln!("rxonly: link down: frames {nf}, bytes {nb}");
                g.report(nf, nb);
                up_before += g.at.elapsed();
                base = (nf, nb);
            }
            (None, LinkState::Down) => {}
            (None, LinkState::Up { .. }) => {
                eprintln!("rxonly: link up: frames {nf}, bytes {nb}");
                current = Generation::start(link, base.0, base.1);
            }
        }
        if every.is_some_and(|e| last_at.elapsed() >= e) {
            let up_now = up_total(up_before, &current);
            let dt = (up_now - up_at_report).as_secs_f64().max(1e-9);
            up_at_report = up_now;
            eprintln!(
                "rxonly: frames {nf} ({:.0} pps), bytes {nb} ({:.1} Mbit/s), link {}",
                nf.saturating_sub(last_f) as f64 / dt,
                nb.saturating_sub(last_b) as f64 * 8.0 / dt / 1e6,
                if up { "up" } else { "down" }
            );
            (last_at, last_f, last_b) = (Instant::now(), nf, nb);
        }
    }
}

/// Sleeps until a frame comes or [`WAIT_SLICE`] passes (which is no
/// error: the loop looks at its stop flag and reports, then waits again).
fn wait_slice(rx: &mut Receiver) -> Result<(), String> {
    match rx.wait(Some(WAIT_SLICE)) {
        Ok(()) | Err(LinkRecvError::Timeout) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}
