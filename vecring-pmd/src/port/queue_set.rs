//! The queues of one direction a port has set up ([`QueueSet`]): those
//! that hold an end of the link, and receive a new one when the link is
//! reopened.

use vecring_core::MAX_QUEUES;

/// A set of queue indexes below [`MAX_QUEUES`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct QueueSet(u32);

const _: () = assert!(MAX_QUEUES <= 32);

impl QueueSet {
    /// Adds queue `q` (below [`MAX_QUEUES`]).
    pub fn insert(&mut self, q: u16) {
        debug_assert!(q < MAX_QUEUES);
        self.0 |= 1 << q;
    }

    /// Removes queue `q` (a no-op for one never inserted).
    pub fn remove(&mut self, q: u16) {
        if q < MAX_QUEUES {
            self.0 &= !(1 << q);
        }
    }

    /// The queues in the set, in increasing order.
    pub fn iter(self) -> impl Iterator<Item = u16> {
        (0..MAX_QUEUES).filter(move |q| self.0 & (1 << q) != 0)
    }
}
