//! The two-thread harness shared by every ring workload.
//!
//! The calling thread is the producer. The consumer is a persistent thread
//! that receives until a goal count published by the producer is reached,
//! then reports it. A measurement ([`Link::run`]) therefore times one thing
//! for every candidate: from the first frame sent to the last frame received
//! by the other thread.
//!
//! Between measurements the consumer spins for a short while (criterion
//! calls back to back), then parks, so that an idle pipeline does not take
//! the consumer CPU from the one being measured (the A/B runner keeps two
//! alive at once).

use crossbeam_utils::CachePadded;
use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long an idle consumer spins before it parks.
const IDLE_SPIN: Duration = Duration::from_millis(5);

/// Something that moves frames and can be timed.
pub trait Link {
    /// Moves `frames` frames end to end and returns the time it took.
    fn run(&mut self, frames: u64) -> Duration;

    /// Stops the link (joining its consumer) and says what happened.
    fn finish(self: Box<Self>) -> Finished;
}

/// What a link reports when it stops.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Finished {
    /// The receiver's digest (see [`Rx::digest`]).
    pub digest: u64,
    /// Frames moved.
    pub frames: u64,
    /// Producer calls that found the ring full (the consumer was behind).
    pub full_polls: u64,
    /// Consumer calls that found the ring empty while frames were still
    /// due (the producer was behind).
    pub empty_polls: u64,
}

/// The sending half of a workload, driven by the producer thread.
pub trait Tx: Send {
    /// Sends up to `max` frames (`max` is at most the batch size) with one
    /// publication; returns how many were sent (0 when the ring is full).
    fn send(&mut self, max: usize) -> usize;

    /// Frames per call the workload is configured for.
    fn batch(&self) -> usize;
}

/// The receiving half of a workload, driven by the consumer thread.
pub trait Rx: Send + 'static {
    /// Receives up to one batch of frames with one release; returns how
    /// many (0 when the ring is empty). Frame lengths are checked in debug
    /// builds only; the smoke test checks contents.
    fn recv(&mut self) -> usize;

    /// A digest of what was received, for the smoke test: for copying
    /// receivers [`vecring_core::test_support::pattern::fnv1a`] of the last frame copied, for
    /// in-place receivers the wrapping sum of [`crate::touch`] over every
    /// frame.
    fn digest(&self) -> u64;
}

/// Producer → consumer: how many frames to expect in total, and stop.
struct Command {
    goal: AtomicU64,
    stop: AtomicBool,
}

/// Shared state of a pipeline; each direction on its own line.
struct Control {
    command: CachePadded<Command>,
    /// Written by the consumer when it reached the goal.
    done: CachePadded<AtomicU64>,
}

/// A producer (this thread) and a persistent consumer thread.
pub struct Pipeline<T: Tx, R: Rx> {
    tx: T,
    control: Arc<Control>,
    goal: u64,
    full_polls: u64,
    consumer: Option<JoinHandle<(R, u64)>>,
}

impl<T: Tx, R: Rx> Pipeline<T, R> {
    /// Starts the consumer thread for `rx`, pinned to `consumer_cpu` when
    /// given (the caller pins itself; see [`crate::pin_current_thread`]).
    ///
    /// # Panics
    /// If the consumer thread cannot be spawned or pinned.
    pub fn new(tx: T, rx: R, consumer_cpu: Option<usize>) -> Self {
        let control = Arc::new(Control {
            command: CachePadded::new(Command {
                goal: AtomicU64::new(0),
                stop: AtomicBool::new(false),
            }),
            done: CachePadded::new(AtomicU64::new(0)),
        });
        let shared = Arc::clone(&control);
        let consumer = std::thread::Builder::new()
            .name("bench-consumer".into())
            .spawn(move || {
                if let Some(cpu) = consumer_cpu {
                    crate::pin_current_thread(cpu).expect("pin the consumer thread");
                }
                consume(rx, &shared)
            })
            .expect("spawn the consumer thread");
        Pipeline {
            tx,
            control,
            goal: 0,
            full_polls: 0,
            consumer: Some(consumer),
        }
    }

    fn stop(&mut self) -> Option<(R, u64)> {
        let consumer = self.consumer.take()?;
        // Release: pairs with the consumer's Acquire load of `stop`.
        self.control.command.stop.store(true, Ordering::Release);
        consumer.thread().unpark();
        Some(consumer.join().expect("consumer thread panicked"))
    }
}

/// The consumer thread's loop: receive up to the goal, report, idle.
/// Returns the receiver and how many calls found the ring empty.
fn consume<R: Rx>(mut rx: R, control: &Control) -> (R, u64) {
    let mut count = 0u64;
    let mut empty_polls = 0u64;
    let mut idle_since = None;
    loop {
        // Acquire: pairs with the Release store of the goal in `run`.
        let goal = control.command.goal.load(Ordering::Acquire);
        if count < goal {
            while count < goal {
                let n = rx.recv() as u64;
                empty_polls += u64::from(n == 0);
                count += n;
            }
            // Release: pairs with the producer's Acquire load of `done`.
            control.done.store(count, Ordering::Release);
            idle_since = None;
        } else if control.command.stop.load(Ordering::Acquire) {
            return (rx, empty_polls);
        } else {
            let since = *idle_since.get_or_insert_with(Instant::now);
            if since.elapsed() < IDLE_SPIN {
                spin_loop();
            } else {
                // Woken by `run` (unpark) or the timeout, then re-checks.
                std::thread::park_timeout(Duration::from_millis(1));
            }
        }
    }
}

impl<T: Tx, R: Rx> Link for Pipeline<T, R> {
    fn run(&mut self, frames: u64) -> Duration {
        self.goal += frames;
        // Release: pairs with the consumer's Acquire load of the goal.
        self.control
            .command
            .goal
            .store(self.goal, Ordering::Release);
        if let Some(consumer) = &self.consumer {
            consumer.thread().unpark();
        }
        let batch = self.tx.batch() as u64;
        let start = Instant::now();
        let mut sent = 0u64;
        while sent < frames {
            let n = self.tx.send((frames - sent).min(batch) as usize) as u64;
            self.full_polls += u64::from(n == 0);
            sent += n;
        }
        // Acquire: pairs with the consumer's Release store of `done`.
        while self.control.done.load(Ordering::Acquire) < self.goal {
            spin_loop();
        }
        start.elapsed()
    }

    fn finish(mut self: Box<Self>) -> Finished {
        let (digest, empty_polls) = self
            .stop()
            .map_or((0, 0), |(rx, polls)| (rx.digest(), polls));
        Finished {
            digest,
            frames: self.goal,
            full_polls: self.full_polls,
            empty_polls,
        }
    }
}

impl<T: Tx, R: Rx> Drop for Pipeline<T, R> {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Producer and consumer on the calling thread, a batch each in turn: the
/// ring code's CPU cost without cross-core traffic.
pub struct SameThread<T: Tx, R: Rx> {
    tx: T,
    rx: R,
    frames: u64,
}

impl<T: Tx, R: Rx> SameThread<T, R> {
    /// Both halves of a workload, driven by the caller.
    pub fn new(tx: T, rx: R) -> Self {
        SameThread { tx, rx, frames: 0 }
    }
}

impl<T: Tx, R: Rx> Link for SameThread<T, R> {
    fn run(&mut self, frames: u64) -> Duration {
        let batch = self.tx.batch() as u64;
        let start = Instant::now();
        let (mut sent, mut received) = (0u64, 0u64);
        while received < frames {
            if sent < frames {
                sent += self.tx.send((frames - sent).min(batch) as usize) as u64;
            }
            received += self.rx.recv() as u64;
        }
        self.frames += frames;
        start.elapsed()
    }

    fn finish(self: Box<Self>) -> Finished {
        Finished {
            digest: self.rx.digest(),
            frames: self.frames,
            ..Finished::default()
        }
    }
}
