//! The consumer's hold-back: batch reads that leave a few ready frames
//! for a moment, so as not to read right behind a streaming producer.

use super::consumer::Consumer;
use super::storage::RingStorage;
use std::time::{Duration, Instant};

/// A consumer's hold-back: a few ready frames left unread for a moment, so
/// as not to read right behind a producer that is still streaming (off
/// unless set with [`Consumer::set_hold_back`] or
/// [`crate::Receiver::set_hold_back`]).
///
/// A consumer that keeps up with its producer reads each line just after
/// the producer wrote it, and the producer then writes its next lines
/// against the consumer's reads and prefetches, which makes small frames
/// much slower than when the consumer lags behind
/// (`docs/benchmarks/design-notes.md`, "The 64-byte modes and the
/// hold-back", has the measurements). Holding back puts the consumer behind
/// once; it then stays behind by itself, so a steady stream is rarely held
/// back at all.
///
/// A batch read ([`Consumer::read_chunk`], [`Consumer::recv_batch`]) of a
/// stream of one-slot frames (as the last frame read was; 64 bytes or
/// less in the default geometry) finds nothing while more than one but
/// fewer than [`below_slots`] slots are ready, until [`wait`] has passed
/// since it first held them back (it looks for newly published frames once
/// when it starts holding back, not meanwhile). One frame alone is never held
/// back, so a request/response exchange of single frames keeps its
/// latency; longer frames are never held back; [`Consumer::recv`] never
/// holds back.
///
/// [`below_slots`]: HoldBack::below_slots
/// [`wait`]: HoldBack::wait
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HoldBack {
    /// Fewer ready slots than this (and more than one) are held back.
    pub below_slots: u32,
    /// For at most this long from when they were first held back.
    pub wait: Duration,
}

impl HoldBack {
    /// Two batches of 32 one-slot frames (64 slots) for at most 250 ns: the
    /// setting chosen by measurement (`docs/benchmarks/design-notes.md`,
    /// "The 64-byte modes and the hold-back").
    pub const STREAMING: HoldBack = HoldBack {
        below_slots: 64,
        wait: Duration::from_nanos(250),
    };
}

impl<S: RingStorage> Consumer<S> {
    /// Sets (or, with `None`, turns off) the hold-back of the batch reads;
    /// see [`HoldBack`]. Off by default.
    ///
    /// ```
    /// use vecring_core::{heap_channel, Geometry, HoldBack};
    ///
    /// let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(256, 64, 1514).unwrap());
    /// rx.set_hold_back(Some(HoldBack::STREAMING));
    /// let (mut bufs, mut lens) = (vec![[0u8; 64]; 32], [0usize; 32]);
    ///
    /// // One frame alone is read at once.
    /// tx.send(&[7; 64]).unwrap();
    /// assert_eq!(rx.recv_batch(&mut bufs, &mut lens), Ok(1));
    ///
    /// // A few frames may be held back for up to 250 ns: poll again.
    /// for _ in 0..5 {
    ///     tx.send(&[8; 64]).unwrap();
    /// }
    /// let mut got = 0;
    /// while got == 0 {
    ///     got = rx.recv_batch(&mut bufs, &mut lens).unwrap();
    /// }
    /// assert_eq!(got, 5);
    /// ```
    pub fn set_hold_back(&mut self, hold: Option<HoldBack>) {
        (self.hold_below, self.hold_wait) = match hold {
            Some(h) => (u64::from(h.below_slots), h.wait),
            None => (0, Duration::ZERO),
        };
        self.held_since = None;
    }

    /// The hold-back in force, if any.
    pub fn hold_back(&self) -> Option<HoldBack> {
        (self.hold_below > 0).then_some(HoldBack {
            below_slots: self.hold_below as u32,
            wait: self.hold_wait,
        })
    }

    /// Whether a batch read now should find nothing (see [`HoldBack`]).
    #[inline(always)]
    pub(super) fn holding(&mut self) -> bool {
        self.hold_below > 0 && self.holding_slow()
    }

    #[inline(never)]
    fn holding_slow(&mut self) -> bool {
        let ready = self.cached_head.wrapping_sub(self.tail);
        // Frames of more than one slot (as far as the last one seen tells;
        // `NONE` before the first), one frame alone, or plenty: read now.
        // (Holding back 1514-byte frames cost the `vecring` tool's copying
        // receiver a tenth of its rate.)
        if self.seen.slots != 1 || ready <= 1 || ready >= self.hold_below {
            self.held_since = None;
            return false;
        }
        if self.held_since.is_none() {
            // The rest of an earlier look at the descriptors: look again,
            // once, before holding back (a consumer far behind must not
            // wait on its leftovers). Not while holding back: reading the
            // lines the producer is about to write again took half the
            // gain.
            if self.find_ready(self.hold_below).is_err() {
                // Poisoned: the next call reports it.
                return false;
            }
            if self.cached_head.wrapping_sub(self.tail) >= self.hold_below {
                return false;
            }
        }
        let now = Instant::now();
        let since = *self.held_since.get_or_insert(now);
        if now.duration_since(since) >= self.hold_wait {
            self.held_since = None;
            return false;
        }
        self.stats.held_back += 1;
        true
    }
}
