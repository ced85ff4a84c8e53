//! Traffic modes: checked stress both ways (`stress`), send-only
//! (`txonly`) and receive-only ([`rxonly`]), on every queue pair of a
//! link at once, one thread per queue and direction, each with its own
//! endpoint of its queue; and the sending loops they and the benchmark
//! harness (`vecring-bench host-container`) share ([`send_for`],
//! [`send_paced`]). The harness uses what is public here: the frames, the
//! sending loops, [`on_each_queue`] and [`rxonly`] (its slave).
//!
//! Each mode reports per queue (when the link has more than one) and in
//! total; a link of one queue prints what it always printed.

pub mod frame;
mod interrupt;
mod rxonly;
mod send;
mod stress;
mod txonly;

pub use rxonly::rxonly;
pub use send::{send_for, send_paced, Burst};
pub(crate) use stress::stress;
pub(crate) use txonly::{txonly, TxonlyArgs};

use crate::cpus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Frames per batch (send) or chunk (receive).
const BATCH: usize = 32;

/// The first failure of a run over several queues: the threads of the other
/// queues see it and stop rather than wait for a peer that is gone.
#[derive(Default)]
pub struct Failure {
    set: AtomicBool,
    first: Mutex<Option<String>>,
}

impl Failure {
    /// Records `e` unless a failure was recorded first.
    pub fn record(&self, e: String) {
        let mut first = self.first.lock().unwrap_or_else(|p| p.into_inner());
        first.get_or_insert(e);
        // Relaxed: the flag only tells the other threads to stop; the
        // message is read under the lock.
        self.set.store(true, Ordering::Relaxed);
    }

    /// Whether a thread failed (the others should stop).
    pub fn is_set(&self) -> bool {
        self.set.load(Ordering::Relaxed)
    }

    /// The flag itself, for loops that poll an [`AtomicBool`].
    pub fn flag(&self) -> &AtomicBool {
        &self.set
    }

    /// The first failure, if any.
    pub fn take(&self) -> Option<String> {
        self.first.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// Runs `work` on every endpoint of `endpoints` (queue `q` at index `q`),
/// each in a thread of its own pinned to queue `q`'s CPU of `cpus`, and
/// returns their results in queue order. The first error is recorded in
/// `failure` (so the other threads can stop) and returned.
///
/// # Errors
/// The first failure of a thread (or a thread that panicked).
pub fn on_each_queue<E, T, F>(
    endpoints: &mut [E],
    cpus: &[usize],
    failure: &Failure,
    work: F,
) -> Result<Vec<T>, String>
where
    E: Send,
    T: Send,
    F: Fn(u16, &mut E) -> Result<T, String> + Sync,
{
    let work = &work;
    let results: Vec<Option<T>> = std::thread::scope(|s| {
        let threads: Vec<_> = (0u16..)
            .zip(endpoints.iter_mut())
            .map(|(q, endpoint)| {
                let cpu = cpus::for_queue(cpus, q);
                s.spawn(move || {
                    cpus::pin(cpu);
                    work(q, endpoint).map_err(|e| failure.record(e)).ok()
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| {
                t.join()
                    .map_err(|_| failure.record("a queue's thread panicked".into()))
                    .ok()
                    .flatten()
            })
            .collect()
    });
    match failure.take() {
        Some(e) => Err(e),
        None => Ok(results.into_iter().flatten().collect()),
    }
}
