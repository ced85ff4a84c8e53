//! The wait protocol, and the one place that names the parts of waiting.
//!
//! # Vocabulary
//!
//! An endpoint with nothing to do (a consumer without frames, a producer
//! without room) may *wait* until the other side moves instead of polling.
//! The words below mean one thing each, in every file that implements
//! waiting and in `docs/ARCHITECTURE.md`:
//!
//! - **wait**: the whole act, from announcing it to waking. A wait
//!   *sleeps* on a descriptor until it is woken; a **nap** is a sleep
//!   bounded by a short timer, for when a signal may not come.
//! - **wait line** ([`WaitLine`], in the region's ABI): a side's shared
//!   line saying whether it is present, armed and asleep (an odd
//!   sequence). Each ring has two, the consumer's and the producer's.
//! - **wait protocol** ([`WaitProtocol`], this module): one endpoint's
//!   private state in the protocol on the two wait lines: its sequence,
//!   whether it checks the other side's line after each index store, and
//!   the throttle on signals for nothing.
//! - **signal**: what the side that moved sends to a sleeping peer (one
//!   per sleep), through the ring storage's [`Bell`].
//! - **wait decision** ([`WaitDecision`]: `Ready`, `Nap`, `Sleep`): what
//!   a ring end's re-check tells a side about to wait (`ring::wait`:
//!   `Consumer::prepare_wait`, `Producer::prepare_wait`, and their
//!   `cancel_*` on waking).
//! - **doorbell** (`internal::doorbell::Doorbell`): a ring's socket pair
//!   that carries the signals between the two processes.
//! - **event set** (`internal::event_set::EventSet`): an epoll instance
//!   with a private eventfd, its **kick**; the building block of a wait
//!   set and of the DPDK driver's interrupt descriptor.
//! - **wait set** (`link::wait_set::WaitSet`): what a link endpoint
//!   sleeps on, one descriptor for its whole life: an event set holding
//!   the current doorbell end, the kick the control thread writes at every
//!   link change (the **poke**), and a timer for naps.
//! - **ring waiter** (`link::blocking::RingWaiter`): a ring end the link
//!   can wait on; a wait that ends without work says why in a
//!   **wait abort** (`WaitAbort`: its time passed, the link closed, or
//!   the ring corrupt).
//! - **blocking calls** (`link::blocking`): `Receiver::wait`,
//!   `recv_timeout`, `Sender::wait_space`, `send_timeout`, and the
//!   event-loop pair `prepare_wait` / `cancel_wait`.
//!
//! The same two names at every level: `prepare_wait` announces a wait
//! (a ring end's returns the [`WaitDecision`], a link end's a bool that
//! is true when the caller should sleep, as the C API's
//! `vecring_rx_prepare_wait` returns 1), `cancel_wait` ends it. A blocking
//! wait ends in `Ok(())` when there is work and in `Err(Timeout)` when its
//! time passed, like `recv_timeout`: no bool of the waiting calls means
//! "ready".
//!
//! In the ring, *publish* means one thing: the Release store that hands
//! slots to the other side. The producer publishes a frame by the Release
//! store of its first descriptor, stamped with its slot's lap
//! (`shape::put_desc`; the `head` store after a call or batch is a
//! hint the consumer's data path never reads); the consumer publishes
//! free slots by the Release store of `tail`. The link copying an
//! endpoint's frame and byte totals into its counters is *storing totals*
//! (`Endpoint::store_totals`), never publishing.
//!
//! # The protocol
//!
//! This module is one endpoint's side of it: its own [`WaitLine`]
//! (attached, armed, asleep) and its check of the other side's line after
//! each index store.
//!
//! A side about to sleep (the consumer for frames, the producer for space)
//! writes an odd sequence into its line, issues a full fence and then looks
//! at the other side's index once more (the consumer: at the descriptor of
//! its read position, whose stamp is the producer's publication; the
//! producer's "index store" below is then its descriptor stores, which all
//! come before its `head` store and the fence). The other side, after storing its
//! index, issues a full fence and then loads that line; seeing an odd
//! sequence it has not signalled yet, it rings the ring's doorbell. The two
//! fences are a Dekker pair: in their single total order one comes first,
//! so either the sleeper's re-check sees the new index or the other side's
//! load sees the odd sequence. No wakeup is lost.
//!
//! A side that never slept pays neither fence nor system call: after each
//! index store it loads the other side's line (a line written only on
//! arm/sleep/wake, so it stays in its cache) and branches. The fenced path
//! starts when that load first sees [`WAIT_ARMED`] and then stays on (the
//! `ack` word says so to the sleeper). Until a sleeper sees the ack it
//! cannot know that the other side's load came after its index store, so
//! it only naps (see [`WaitDecision::Nap`]).
//!
//! The other side may be hostile. Every value read from its line is used
//! for one decision (signal or not, sleep or nap) and nothing else: the
//! worst it can cause is one signal for nothing, or a signal not sent,
//! which the sleeper's own timeouts bound.
//!
//! A signal for nothing costs a `send()`. A side that writes a fresh odd
//! sequence after every store of ours, and never moves its own index (an
//! honest sleeper woken reads frames or uses the room it waited for),
//! would get one per store. After [`UNANSWERED_MAX`] fresh sequences in a
//! row during which its index stayed still, signals are spaced at least
//! [`THROTTLE_GAP`] apart and those held back are counted; the first
//! movement of its index ends that. The check runs only when a fresh
//! sequence is seen, on the fenced path: a side whose peer never sleeps
//! pays nothing for it.
//!
//! # A ring end's wait
//!
//! A ring end's wait: a consumer that found no frame, or a producer that
//! found no room, says so in its wait line, re-checks the other side's
//! index, and then sleeps until the ring's doorbell rings. The protocol,
//! and the words of waiting, are in this module.
//!
//! The ring does not sleep itself: it has no file descriptor. The caller
//! waits on whatever its storage's doorbell wakes (the link's
//! `WaitSet`), and calls the matching `cancel_*` when it wakes, found work
//! or gave up.
//!
//! # The ready word
//!
//! [`ReadyWord`] is the one word of shared memory that changes when a
//! consumer's next frame becomes ready, for waits that watch memory
//! instead of a descriptor: a CPU's monitor-and-wait instructions
//! (`UMONITOR`/`UMWAIT`, `MONITORX`/`MWAITX`), as DPDK's power management
//! uses them through a driver's `get_monitor_addr`.
//!
//! Such a wait arms a monitor on the word's cache line, checks the word
//! once more, and sleeps until the line is written (or a timeout, or an
//! interrupt). [`ReadyWord::ready`] says from the word's value whether a
//! frame may be ready (or the peer wrote something the next read will
//! judge): then do not sleep.

use super::storage::{Bell, RingStorage};
use crate::abi::{WaitLine, WAIT_ARMED, WAIT_PRESENT, WAIT_SEQ_MASK};
use crate::sync::{fence, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Fresh sleep sequences of the other side in a row, each seen while its
/// index had not moved since the one before, after which our signals are
/// throttled (see the module documentation). An honest sleeper's index
/// moves after nearly every wakeup; a producer waiting for room for a
/// large frame may wake a few times before it fits.
pub(super) const UNANSWERED_MAX: u32 = 64;
/// Least time between two signals while throttled: a side that asks for
/// signals and never answers them gets at most a thousand `send()`s a
/// second.
pub(super) const THROTTLE_GAP: Duration = Duration::from_millis(1);

/// What a side that found nothing to do should do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitDecision {
    /// The re-check found work (frames, or space): do not sleep.
    Ready,
    /// Sleep until the doorbell rings, *but wake by a short timer* as well:
    /// the other side has not acknowledged the wait protocol yet, so a
    /// store made before its acknowledgement may come without a signal.
    Nap,
    /// Sleep until the doorbell rings: every later store of the other side
    /// is followed by its check of our line.
    Sleep,
}

/// An endpoint's private state in the wait protocol.
#[derive(Debug, Default)]
pub(super) struct WaitProtocol {
    /// We check the other side's line behind a full fence after every index
    /// store of ours (and our line's `ack` says so).
    fenced: bool,
    /// Our sleep sequence: odd while about to sleep or asleep.
    seq: u32,
    /// The other side's odd sequence we signalled last: one signal per
    /// sleep, however many stores follow.
    signaled: u32,
    /// Doorbell signals sent.
    pub(super) signals: u64,
    /// The other side's odd sequence last looked at for an answer.
    counted: u32,
    /// The other side's index then.
    peer_index: u64,
    /// Fresh sequences in a row seen while its index stood still.
    unanswered: u32,
    /// When the last signal sent while throttled went.
    throttled_at: Option<Instant>,
    /// Signals held back by the throttle (one per store that would have
    /// signalled).
    pub(super) held_back: u64,
}

impl WaitProtocol {
    /// Takes over our line when attaching: present, awake, the sequence
    /// continued (a signal for an earlier endpoint's sequence must not be
    /// mistaken for one for ours) and the fenced path kept if an earlier
    /// endpoint of this ring acknowledged it (a sleeper trusts that ack).
    pub(super) fn attach(mine: &WaitLine) -> Self {
        // Relaxed: our own line, written by earlier endpoints of this
        // process; a value the peer scribbled there costs the peer at most
        // a missed or extra signal.
        let state = mine.state.load(Ordering::Relaxed);
        // Relaxed: as above; read only to decide whether to keep fencing.
        let fenced = mine.ack.load(Ordering::Relaxed) != 0;
        let seq = ((state & WAIT_SEQ_MASK) as u32).wrapping_add(1) & !1;
        let armed = state & WAIT_ARMED;
        // Release: pairs with the peer's Acquire load in `peer_present`,
        // so a peer that sees us present also sees the ring as we left it.
        mine.state
            .store(WAIT_PRESENT | armed | u64::from(seq), Ordering::Release);
        WaitProtocol {
            fenced,
            seq,
            ..WaitProtocol::default()
        }
    }

    /// Clears our line when the endpoint goes away: absent, not sleeping.
    /// Keeps `ack`, which a later endpoint of this ring continues.
    pub(super) fn detach(&self, mine: &WaitLine) {
        // Release: as in `attach`.
        mine.state
            .store(u64::from(self.seq & !1), Ordering::Release);
    }

    /// After each store of our index: signal the other side if it sleeps.
    /// One predicted branch on a field and one load of a line that changes
    /// only when the other side sleeps or wakes, until the protocol is on.
    /// `peer_index` is the index the other side moves (read only on the
    /// fenced path, for the throttle).
    #[inline(always)]
    pub(super) fn after_store<S: RingStorage>(
        &mut self,
        storage: &S,
        mine: &WaitLine,
        peer: &WaitLine,
        peer_index: &AtomicU64,
        bell: Bell,
    ) {
        // Relaxed: only a hint that the other side uses the protocol; the
        // fenced load in `signal` is the one that counts.
        if self.fenced || peer.state.load(Ordering::Relaxed) & WAIT_ARMED != 0 {
            self.signal(storage, mine, peer, peer_index, bell);
        }
    }

    /// The fenced check: out of line, so that the polling path stays small.
    #[cold]
    #[inline(never)]
    fn signal<S: RingStorage>(
        &mut self,
        storage: &S,
        mine: &WaitLine,
        peer: &WaitLine,
        peer_index: &AtomicU64,
        bell: Bell,
    ) {
        if !self.fenced {
            self.fenced = true;
            // Relaxed: the fence below orders it. A sleeper that sees the
            // ack learns only that every store of ours from now on is
            // followed by that fence; the fence pair, not the ack, makes
            // the index stores before it visible to the sleeper's re-check
            // (or makes us see the sleeper's odd sequence).
            mine.ack.store(1, Ordering::Relaxed);
        }
        // SeqCst fence: pairs with the fence in `prepare` (Dekker): either
        // the sleeper's re-check after its fence sees our index store, or
        // our load after this fence sees its odd sequence.
        fence(Ordering::SeqCst);
        // Relaxed: ordered by the fence above.
        let seq = peer.state.load(Ordering::Relaxed) as u32;
        if seq & 1 == 0 || seq == self.signaled {
            return;
        }
        if seq != self.counted {
            self.counted = seq;
            // Relaxed: a hint, compared with the value seen at the last
            // fresh sequence and used for nothing else; a stale view only
            // throttles or releases the throttle one sequence late.
            let index = peer_index.load(Ordering::Relaxed);
            if index == self.peer_index {
                self.unanswered = self.unanswered.saturating_add(1);
            } else {
                self.unanswered = 0;
                self.peer_index = index;
            }
        }
        if self.unanswered >= UNANSWERED_MAX && !self.throttle_passes() {
            // Not marked signalled: a later store past the gap signals
            // this sequence still.
            self.held_back += 1;
            return;
        }
        self.signaled = seq;
        self.signals += 1;
        storage.ring_doorbell(bell);
    }

    /// While throttled: whether a signal may go now (and notes it).
    #[cold]
    fn throttle_passes(&mut self) -> bool {
        let now = Instant::now();
        if self
            .throttled_at
            .is_some_and(|t| now.saturating_duration_since(t) < THROTTLE_GAP)
        {
            return false;
        }
        self.throttled_at = Some(now);
        true
    }

    /// Says we are about to sleep; the caller then re-checks the other
    /// side's index. Returns whether the other side acknowledged the
    /// protocol (sleep) or not yet (nap).
    pub(super) fn prepare(&mut self, mine: &WaitLine, peer: &WaitLine) -> bool {
        self.seq = self.seq.wrapping_add(1) | 1;
        // Relaxed: ordered before the re-check by the fence below.
        mine.state.store(
            WAIT_PRESENT | WAIT_ARMED | u64::from(self.seq),
            Ordering::Relaxed,
        );
        // SeqCst fence: pairs with the fence in `signal` (see there).
        fence(Ordering::SeqCst);
        // Relaxed: after the fence above. Seeing the ack means the other
        // side stored it before one of its fences; that fence and ours
        // order every index store it made before, and it fences after
        // every later one (see `signal`).
        peer.ack.load(Ordering::Relaxed) != 0
    }

    /// Says we are awake again (found work, woke, or gave up waiting): the
    /// other side stops signalling until our next sleep.
    pub(super) fn wake(&mut self, mine: &WaitLine) {
        if self.seq & 1 == 1 {
            self.seq = self.seq.wrapping_add(1);
            // Relaxed: a hint to the other side; a late view only costs one
            // signal for nothing.
            mine.state.store(
                WAIT_PRESENT | WAIT_ARMED | u64::from(self.seq),
                Ordering::Relaxed,
            );
        }
    }

    /// Whether we are between `prepare` and `wake`.
    pub(super) fn sleeping(&self) -> bool {
        self.seq & 1 == 1
    }
}

/// Whether the owner of `line` is attached (a consumer: someone reads
/// this ring now). A hint from the peer, used only for counting.
pub(super) fn present(line: &WaitLine) -> bool {
    // Acquire: pairs with the Release stores in `WaitProtocol::attach` and
    // `WaitProtocol::detach`.
    line.state.load(Ordering::Acquire) & WAIT_PRESENT != 0
}

/// Where a consumer's next frame shows up: the word, the bits of it
/// that tell, and how their value says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadyWord {
    /// The word: 8 bytes, aligned, in memory the producer writes. Valid
    /// as long as the consumer (its ring's memory) lives.
    pub addr: *const u64,
    /// The bits of the word that tell.
    pub mask: u64,
    /// The masked value compared with.
    pub value: u64,
    /// Whether a frame may be ready when the masked word equals
    /// [`value`](Self::value) (the next slot's descriptor carries the
    /// stamp of the reader's lap), or when it differs from it (an index
    /// moved on from the reader's position).
    pub ready_if_equal: bool,
}

impl ReadyWord {
    /// Whether `word`, read from [`addr`](Self::addr), says a frame may
    /// be ready.
    #[inline]
    pub fn ready(&self, word: u64) -> bool {
        (word & self.mask == self.value) == self.ready_if_equal
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::ring::heap_channel;
    use crate::Geometry;

    /// Reads the word as a monitoring wait would.
    fn load(w: &super::ReadyWord) -> u64 {
        // SAFETY: the word is an aligned u64 of the ring, alive while the
        // consumer is; a volatile read, as the CPU's monitor reads it.
        unsafe { w.addr.read_volatile() }
    }

    #[test]
    fn a_word_stays_right_lap_after_lap() {
        let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(8, 64, 64).unwrap());
        let mut buf = [0u8; 64];
        for i in 0..100u8 {
            let w = rx.ready_word();
            assert!(!w.ready(load(&w)), "frame {i}: empty");
            tx.send(&[i; 60]).unwrap();
            assert!(w.ready(load(&w)), "frame {i}: published");
            assert_eq!(rx.recv(&mut buf), Ok(60));
        }
    }

    #[test]
    fn the_word_says_ready_once_a_frame_is_published_and_empty_once_read() {
        let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(64, 64, 1514).unwrap());
        let w = rx.ready_word();
        assert!(!w.ready(load(&w)), "an empty ring");
        tx.send(&[1; 60]).unwrap();
        assert!(w.ready(load(&w)), "a frame was published");
        let mut buf = [0u8; 64];
        assert_eq!(rx.recv(&mut buf), Ok(60));
        // The old word's expectation is stale: ask again after a read.
        assert!(w.ready(load(&w)));
        let w = rx.ready_word();
        assert!(!w.ready(load(&w)), "everything read");
        for _ in 0..3 {
            tx.send(&[2; 60]).unwrap();
        }
        let w2 = rx.ready_word();
        assert!(w2.ready(load(&w2)));
        // One of three read: still ready.
        assert_eq!(rx.recv(&mut buf), Ok(60));
        let w3 = rx.ready_word();
        assert!(w3.ready(load(&w3)));
    }
}
