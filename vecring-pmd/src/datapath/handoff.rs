//! Hands a link end from the control path to the queue that polls it.
//!
//! A port closes its link when it is stopped or set down, and opens a new
//! one when it is started or set up again (see [`crate::port`]). The new
//! link's sender and receiver must reach the TX and RX queues, which an
//! lcore may be polling at that moment (`set link-up` is allowed while
//! forwarding). So the control path [`Handoff::put`]s the new end here and
//! the burst function, at the start of a burst, sees [`Handoff::pending`]
//! (one relaxed load per burst, not per frame) and [`Handoff::take`]s it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

/// One slot for a link end on its way to a queue.
pub struct Handoff<T> {
    /// Set by `put`, cleared by `take`: a hint that `slot` is full.
    ready: AtomicBool,
    /// The end, if one waits.
    slot: Mutex<Option<T>>,
}

impl<T> Default for Handoff<T> {
    fn default() -> Self {
        Handoff {
            ready: AtomicBool::new(false),
            slot: Mutex::new(None),
        }
    }
}

impl<T> std::fmt::Debug for Handoff<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handoff")
            .field("pending", &self.pending())
            .finish()
    }
}

impl<T> Handoff<T> {
    /// Leaves `v` for the queue, replacing (dropping) any end not taken yet.
    pub fn put(&self, v: T) {
        let old = {
            let mut g = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
            let old = g.replace(v);
            // Under the lock: a `take` that sees the flag finds the end.
            self.ready.store(true, Ordering::Relaxed);
            old
        };
        drop(old);
    }

    /// Whether an end may wait (a hint; [`Handoff::take`] decides).
    #[inline]
    pub fn pending(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }

    /// The waiting end, if any.
    pub fn take(&self) -> Option<T> {
        let mut g = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        self.ready.store(false, Ordering::Relaxed);
        g.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_take_replace() {
        let h = Handoff::default();
        assert!(!h.pending());
        assert_eq!(h.take(), None);
        h.put(1);
        h.put(2);
        assert!(h.pending());
        assert_eq!(h.take(), Some(2), "the newest end wins");
        assert!(!h.pending());
        assert_eq!(h.take(), None);
    }
}
