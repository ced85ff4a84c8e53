//! The data path's counters: per queue, each with exactly one writer, the
//! lcore polling the queue it belongs to. It adds with a relaxed load and
//! store (no locked instruction on the hot path, once per burst), and
//! control operations read it with a relaxed load. `stats_reset` and
//! `xstats_reset` never write a counter: they record a baseline that later
//! reads subtract (see [`crate::port::snapshot`]), so a reset cannot race
//! with the writer.

use crate::sys::ffi;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering};
use vecring_core::MAX_QUEUES;

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
    /// Bursts that wrote frames with non-temporal stores (`super::stream`).
    pub streamed: Counter,
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
