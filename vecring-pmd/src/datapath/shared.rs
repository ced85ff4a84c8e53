//! The state of one port that both the data path and the control path
//! see ([`Shared`]): the queues' counters, the receive filter's mode and
//! addresses, the link's up flag, the ends of a reopened link on their way
//! to the queues, and the descriptors RX queues sleep on in Rx interrupt
//! mode.
//!
//! # Counters
//!
//! The data path's counters: per queue, each with exactly one writer, the
//! lcore polling the queue it belongs to. It adds with a relaxed load and
//! store (no locked instruction on the hot path, once per burst), and
//! control operations read it with a relaxed load. `stats_reset` and
//! `xstats_reset` never write a counter: they record a baseline that later
//! reads subtract (see [`crate::port::snapshot`]), so a reset cannot race
//! with the writer.
//!
//! A frame is counted once, by the ring, as it is published or handed
//! out: after each burst the queue stores its link end's totals in the
//! link's counters (`flush_counters`, so that `vecring stats` is current),
//! reads them (`Sender::totals`, `Receiver::totals`) and adds their
//! growth to its `packets` and
//! `bytes`, less on receive the frames the burst dropped, which have
//! counters of their own. The drops, the ring-full and link-down counts
//! and `held_back` are the driver's alone (`held_back` mirrors the
//! receiver's count the same way).
//!
//! # Hand-offs
//!
//! A link end goes from the control path to the queue that polls it.
//!
//! A port closes its link when it is stopped or set down, and opens a new
//! one when it is started or set up again (see [`crate::port`]). The new
//! link's sender and receiver must reach the TX and RX queues, which an
//! lcore may be polling at that moment (`set link-up` is allowed while
//! forwarding). So the control path [`Handoff::put`]s the new end here and
//! the burst function, at the start of a burst, sees [`Handoff::pending`]
//! (one relaxed load per burst, not per frame) and [`Handoff::take`]s it.

use super::filter_config::{mode, AddrTable, MAX_MACS, MAX_MC_ADDRS};
use crate::sys::ffi;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use vecring_core::{Receiver, Sender, MAX_QUEUES};

/// The descriptor an application sleeps on for one RX queue in Rx
/// interrupt mode (see [`crate::ethdev::intr`]), kept from the first start
/// with Rx interrupts until the port closes: the core's epoll set with a
/// kick, holding the current receiver's wait set.
pub type QueueIntr = vecring_core::internal::event_set::EventSet;

/// State of one port that both the data path and the control path see.
#[derive(Debug)]
pub struct Shared {
    /// Receive counters, indexed by RX queue.
    pub rx: PerQueue<RxCounters>,
    /// Transmit counters, indexed by TX queue.
    pub tx: PerQueue<TxCounters>,
    /// Whether the link has a session (a peer): stored by vecring's
    /// control thread on every change of the link's state (see
    /// `port::link::open_link`) and cleared when the port closes its
    /// link; read by a TX burst whose sender finds no ring, to tell a link
    /// that is down from a queue the session lacks. Relaxed: a hint for
    /// counting, ordered with nothing.
    pub link_up: AtomicBool,
    /// One of the receive filter's [`mode`]s.
    pub filter: AtomicU8,
    /// The port's unicast MACs: the primary at 0, `mac_addr_add`'s after.
    pub macs: AddrTable<MAX_MACS>,
    /// The multicast groups of `set_mc_addr_list`.
    pub mc_addrs: AddrTable<MAX_MC_ADDRS>,
    /// Indexed by TX queue: the queue's sending end of a reopened link, for
    /// the queue to take; `None` inside when the new link has no such queue.
    pub tx_next: [Handoff<Option<Sender>>; MAX_QUEUES as usize],
    /// Indexed by RX queue: as `tx_next`, for receiving ends.
    pub rx_next: [Handoff<Option<Receiver>>; MAX_QUEUES as usize],
    /// Indexed by RX queue: the descriptor an application sleeps on in Rx
    /// interrupt mode, made at the first start with `intr_conf.rxq`.
    pub rx_intr: [OnceLock<QueueIntr>; MAX_QUEUES as usize],
}

impl Default for Shared {
    fn default() -> Self {
        Shared {
            rx: std::array::from_fn(|_| CachePadded::default()),
            tx: std::array::from_fn(|_| CachePadded::default()),
            link_up: AtomicBool::new(false),
            filter: AtomicU8::default(),
            macs: AddrTable::default(),
            mc_addrs: AddrTable::default(),
            tx_next: std::array::from_fn(|_| Handoff::default()),
            rx_next: std::array::from_fn(|_| Handoff::default()),
            rx_intr: std::array::from_fn(|_| OnceLock::new()),
        }
    }
}

impl Shared {
    /// Sets the filter mode from ethdev's promiscuous/all-multicast flags.
    pub fn set_filter(&self, promiscuous: bool, all_multicast: bool) {
        let m = if promiscuous {
            mode::PROMISCUOUS
        } else if all_multicast {
            mode::ALL_MULTICAST
        } else {
            mode::UNICAST
        };
        self.filter.store(m, Ordering::Relaxed);
    }

    /// Wakes whoever sleeps on RX queue `q`'s descriptor (its next enable
    /// looks again).
    pub fn wake(&self, q: usize) {
        if let Some(i) = self.rx_intr.get(q).and_then(|i| i.get()) {
            i.kick();
        }
    }

    /// Wakes every sleeper of the port (port stop, link closed, close).
    pub fn wake_all(&self) {
        for q in 0..usize::from(MAX_QUEUES) {
            self.wake(q);
        }
    }
}

/// A counter with a single writer (see the module doc).
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds `n`. Only the counter's single writer may call this.
    #[inline]
    pub fn add(&self, n: u64) {
        // Relaxed load + store instead of `fetch_add`: there is one writer,
        // and readers only need some recent value.
        let v = self.0.load(Ordering::Relaxed);
        self.0.store(v.wrapping_add(n), Ordering::Relaxed);
    }

    /// The current value.
    #[inline]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Adds `n` to a `u64` owned by DPDK that has the same single writer as a
/// [`Counter`] (`rte_eth_dev_data::rx_mbuf_alloc_failed`).
///
/// # Safety
/// `p` must be valid, 8-byte aligned, and written by no other thread.
#[inline]
pub unsafe fn add_raw(p: *mut u64, n: u64) {
    // SAFETY: the caller guarantees validity and alignment; all accesses
    // from this crate are atomic, and ethdev only reads the value.
    let a = unsafe { AtomicU64::from_ptr(p) };
    a.store(a.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// Receive-side counters of one RX queue, written by the lcore polling it.
#[derive(Debug, Default)]
pub struct RxCounters {
    /// Frames delivered to the application.
    pub packets: Counter,
    /// Bytes delivered to the application.
    pub bytes: Counter,
    /// Frames dropped: larger than one mbuf with scatter disabled.
    pub too_large: Counter,
    /// Frames dropped by the MAC filter (promiscuous mode off).
    pub filtered: Counter,
    /// Frames dropped: no mbufs for the extra segments of a scattered frame.
    pub scatter_nombuf: Counter,
    /// Frames delivered as mbufs attached to their slots (`zero_copy=true`;
    /// the rest of a zero-copy queue's frames are copied: short, or
    /// wrapping around the ring's end).
    pub zero_copy: Counter,
    /// Bursts that returned nothing because the hold-back held ready
    /// frames back (`hold_back=true`; see [`vecring_core::HoldBack`]): to
    /// tell a queue whose frames wait from one with nothing to read.
    pub held_back: Counter,
}

/// Transmit-side counters of one TX queue, written by the lcore polling it.
#[derive(Debug, Default)]
pub struct TxCounters {
    /// Frames written to the ring.
    pub packets: Counter,
    /// Bytes written to the ring.
    pub bytes: Counter,
    /// Frames dropped (freed) because they exceed the link's largest frame
    /// or are empty.
    pub too_large: Counter,
    /// Frames left to the application because the ring was full (counted
    /// per offer: a retried mbuf counts again).
    pub ring_full: Counter,
    /// Frames left to the application because the link was down (per offer).
    pub link_down: Counter,
    /// Frames dropped (freed) because the peer does not read this queue:
    /// the link is up with fewer queue pairs than this queue's index, or
    /// the ring is full and the peer has no receiver on it. Taken and freed
    /// rather than left to the application, which would retry them forever.
    pub peer_queue_absent: Counter,
}

const _: () = assert!(
    MAX_QUEUES as usize == ffi::QUEUE_STAT_CNTRS,
    "q_ipackets[] and friends cover every queue"
);

/// One entry per possible queue (a port has at most the [`MAX_QUEUES`]
/// queue pairs a link carries), each on cache lines of its own: every
/// queue's counters have a different writer (the lcore polling it), and
/// two lcores must not share a line.
pub type PerQueue<T> = [CachePadded<T>; MAX_QUEUES as usize];

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
    fn set_filter_maps_flags() {
        let s = Shared::default();
        s.set_filter(true, false);
        assert_eq!(s.filter.load(Ordering::Relaxed), mode::PROMISCUOUS);
        s.set_filter(false, true);
        assert_eq!(s.filter.load(Ordering::Relaxed), mode::ALL_MULTICAST);
        s.set_filter(false, false);
        assert_eq!(s.filter.load(Ordering::Relaxed), mode::UNICAST);
    }

    /// Two queues' counters never share a cache line (each has its own
    /// writing lcore).
    #[test]
    fn queue_counters_on_lines_of_their_own() {
        let s = Shared::default();
        let a = std::ptr::addr_of!(s.tx[0]) as usize;
        let b = std::ptr::addr_of!(s.tx[1]) as usize;
        assert!(b - a >= 128 && a % 64 == 0);
        assert!(std::mem::size_of::<TxCounters>() <= b - a);
    }

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
