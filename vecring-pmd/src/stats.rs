//! Counters and receive filter shared between the data path and the control
//! operations of one port.
//!
//! Counters are per queue ([`PerQueue`]); the port's totals are their sums
//! ([`Snapshot::rx`](crate::snapshot::Snapshot::rx),
//! [`Snapshot::tx`](crate::snapshot::Snapshot::tx)). Each counter has
//! exactly one writer: the lcore polling the queue it belongs to. It adds
//! with a relaxed load and store (no locked instruction on the hot path,
//! once per burst), and control operations read it with a relaxed load.
//! `stats_reset` and `xstats_reset` never write a counter: they
//! record a baseline that later reads subtract, so a reset cannot race with
//! the writer.

use crate::ffi;
use crate::handoff::Handoff;
use crate::intr::QueueIntr;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::OnceLock;
use vecring_core::{Receiver, Sender};

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

/// Queue pairs a port may have: the most a link carries.
pub const MAX_QUEUES: usize = vecring_core::MAX_QUEUES as usize;
const _: () = assert!(
    MAX_QUEUES == ffi::QUEUE_STAT_CNTRS,
    "q_ipackets[] and friends cover every queue"
);

/// One entry per possible queue, each on cache lines of its own: every
/// queue's counters have a different writer (the lcore polling it), and
/// two lcores must not share a line.
pub type PerQueue<T> = [CachePadded<T>; MAX_QUEUES];

/// Receive filter modes, chosen by promiscuous/all-multicast settings.
pub mod filter {
    /// Deliver every frame.
    pub const PROMISCUOUS: u8 = 0;
    /// Deliver frames to our MAC, broadcast and every multicast group.
    pub const ALL_MULTICAST: u8 = 1;
    /// Deliver frames to our MAC and broadcast.
    pub const UNICAST: u8 = 2;
}

/// Unicast addresses a port answers to: its primary MAC (index 0) and those
/// `mac_addr_add` gave it, at the indexes of ethdev's `mac_addrs` array.
pub const MAX_MACS: usize = 8;
/// Multicast groups `set_mc_addr_list` may subscribe to.
pub const MAX_MC_ADDRS: usize = 16;
/// An empty [`AddrTable`] entry: no packed 48-bit MAC equals it.
const NO_ADDR: u64 = u64::MAX;

/// A table of packed MACs (see [`mac_to_u64`]) written by control operations
/// and read by the RX lcore once per burst ([`Filter::load`]). Entries are
/// single atomics: a burst that races with an update sees every entry either
/// before or after it.
#[derive(Debug)]
pub struct AddrTable<const N: usize>([AtomicU64; N]);

impl<const N: usize> Default for AddrTable<N> {
    fn default() -> Self {
        AddrTable(std::array::from_fn(|_| AtomicU64::new(NO_ADDR)))
    }
}

impl<const N: usize> AddrTable<N> {
    /// Sets entry `i` (`i < N`) to `mac`, or empties it.
    pub fn set(&self, i: usize, mac: Option<&[u8; 6]>) {
        self.0[i].store(mac.map_or(NO_ADDR, mac_to_u64), Ordering::Relaxed);
    }

    /// Replaces the whole table with `macs` (at most `N`), emptying the rest.
    pub fn replace(&self, macs: &[[u8; 6]]) {
        debug_assert!(macs.len() <= N);
        for i in 0..N {
            self.set(i, macs.get(i));
        }
    }

    /// Appends the non-empty entries to `out` from `*len`, advancing `len`.
    #[inline]
    fn load_into(&self, out: &mut [u64], len: &mut usize) {
        for a in &self.0 {
            let v = a.load(Ordering::Relaxed);
            if v != NO_ADDR {
                out[*len] = v;
                *len += 1;
            }
        }
    }
}

/// State of one port that both the data path and the control path see.
#[derive(Debug)]
pub struct Shared {
    /// Receive counters, indexed by RX queue.
    pub rx: PerQueue<RxCounters>,
    /// Transmit counters, indexed by TX queue.
    pub tx: PerQueue<TxCounters>,
    /// Whether the link has a session (a peer): stored by vecring's
    /// control thread on every change of the link's state (see
    /// `port::open_link`) and cleared when the port closes its
    /// link; read by a TX burst whose sender finds no ring, to tell a link
    /// that is down from a queue the session lacks. Relaxed: a hint for
    /// counting, ordered with nothing.
    pub link_up: AtomicBool,
    /// One of the [`filter`] modes.
    pub filter: AtomicU8,
    /// The port's unicast MACs: the primary at 0, `mac_addr_add`'s after.
    pub macs: AddrTable<MAX_MACS>,
    /// The multicast groups of `set_mc_addr_list`.
    pub mc_addrs: AddrTable<MAX_MC_ADDRS>,
    /// Indexed by TX queue: the queue's sending end of a reopened link, for
    /// the queue to take; `None` inside when the new link has no such queue.
    pub tx_next: [Handoff<Option<Sender>>; MAX_QUEUES],
    /// Indexed by RX queue: as `tx_next`, for receiving ends.
    pub rx_next: [Handoff<Option<Receiver>>; MAX_QUEUES],
    /// Indexed by RX queue: the descriptor an application sleeps on in Rx
    /// interrupt mode, made at the first start with `intr_conf.rxq`.
    pub rx_intr: [OnceLock<QueueIntr>; MAX_QUEUES],
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
        let mode = if promiscuous {
            filter::PROMISCUOUS
        } else if all_multicast {
            filter::ALL_MULTICAST
        } else {
            filter::UNICAST
        };
        self.filter.store(mode, Ordering::Relaxed);
    }
}

/// Packs a MAC address into the low 48 bits of a `u64` (byte 0 lowest), the
/// layout [`Filter`] compares against.
pub fn mac_to_u64(mac: &[u8; 6]) -> u64 {
    let mut b = [0u8; 8];
    b[..6].copy_from_slice(mac);
    u64::from_le_bytes(b)
}

/// The receive filter as one RX burst sees it: the mode and every address
/// the port answers to, read once at the start of the burst.
#[derive(Clone, Copy)]
pub struct Filter {
    mode: u8,
    /// `addrs[..len]`: unicast MACs, then multicast groups, packed.
    len: usize,
    addrs: [u64; MAX_MACS + MAX_MC_ADDRS],
}

impl Filter {
    /// The filter of `shared` now (only the mode in promiscuous mode).
    #[inline]
    pub fn load(shared: &Shared) -> Filter {
        let mut f = Filter {
            mode: shared.filter.load(Ordering::Relaxed),
            len: 0,
            addrs: [NO_ADDR; MAX_MACS + MAX_MC_ADDRS],
        };
        if f.mode != filter::PROMISCUOUS {
            shared.macs.load_into(&mut f.addrs, &mut f.len);
            shared.mc_addrs.load_into(&mut f.addrs, &mut f.len);
        }
        f
    }

    /// A filter in `mode` answering to the packed addresses `addrs`.
    #[cfg(test)]
    fn new(mode: u8, addrs: &[u64]) -> Filter {
        let mut f = Filter {
            mode,
            len: addrs.len(),
            addrs: [NO_ADDR; MAX_MACS + MAX_MC_ADDRS],
        };
        f.addrs[..addrs.len()].copy_from_slice(addrs);
        f
    }

    /// Whether every frame passes (no header needs reading).
    #[inline]
    pub fn promiscuous(&self) -> bool {
        self.mode == filter::PROMISCUOUS
    }

    /// Whether a frame whose first bytes are `head` passes. Frames too short
    /// for a header are refused.
    ///
    /// `head` must be memory the peer cannot write (the frame's copy in an
    /// mbuf): the filter may read it more than once. For bytes in the ring,
    /// use [`Filter::accept_shared`].
    #[inline]
    pub fn accept(&self, head: &[u8]) -> bool {
        if self.promiscuous() {
            return true;
        }
        let Some(dst) = head.get(..6) else {
            return false;
        };
        let mut b = [0u8; 6];
        b.copy_from_slice(dst);
        self.accept_dst(b)
    }

    /// [`Filter::accept`] for a frame still in shared memory, whose bytes
    /// the peer may change at any time: the destination MAC is read exactly
    /// once, into a local, and every comparison is made on that copy, so
    /// one decision never sees two different addresses.
    #[inline]
    pub fn accept_shared(&self, head: &[u8]) -> bool {
        if self.promiscuous() {
            return true;
        }
        if head.len() < 6 {
            return false;
        }
        // Volatile: the compiler may neither re-read the bytes for a later
        // comparison nor merge this read with another one.
        // SAFETY: `head` has at least 6 readable bytes (checked above), and
        // `[u8; 6]` needs no alignment.
        let dst = unsafe { std::ptr::read_volatile(head.as_ptr().cast::<[u8; 6]>()) };
        self.accept_dst(dst)
    }

    /// The filter decision for destination MAC `dst` (a local copy).
    #[inline]
    fn accept_dst(&self, dst: [u8; 6]) -> bool {
        let dst = mac_to_u64(&dst);
        if dst == 0xffff_ffff_ffff || self.addrs[..self.len].contains(&dst) {
            return true;
        }
        // Group bit: least significant bit of the first byte.
        self.mode == filter::ALL_MULTICAST && dst & 1 == 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAC: [u8; 6] = [0x02, 0x11, 0x22, 0x33, 0x44, 0x55];

    fn frame(dst: [u8; 6]) -> Vec<u8> {
        let mut f = dst.to_vec();
        f.extend_from_slice(&[0u8; 58]);
        f
    }

    #[test]
    fn filter_modes() {
        let mac = mac_to_u64(&MAC);
        let ours = frame(MAC);
        let other = frame([0x02, 0, 0, 0, 0, 9]);
        let bcast = frame([0xff; 6]);
        let mcast = frame([0x01, 0x00, 0x5e, 0, 0, 1]);
        use filter::*;
        for (mode, want) in [
            (PROMISCUOUS, [true, true, true, true]),
            (ALL_MULTICAST, [true, false, true, true]),
            (UNICAST, [true, false, true, false]),
        ] {
            let f = Filter::new(mode, &[mac]);
            let got = [&ours, &other, &bcast, &mcast].map(|x| f.accept(x));
            assert_eq!(got, want, "mode {mode}");
            let shared = [&ours, &other, &bcast, &mcast].map(|x| f.accept_shared(x));
            assert_eq!(shared, want, "mode {mode}, shared");
        }
        let f = Filter::new(UNICAST, &[mac]);
        assert!(!f.accept(&[0x02, 0x11]));
        assert!(!f.accept_shared(&MAC[..5]));
        let f = Filter::new(PROMISCUOUS, &[]);
        assert!(f.accept(&[0x02]));
        assert!(f.accept_shared(&[]));
    }

    #[test]
    fn extra_unicast_and_multicast_addresses() {
        let s = Shared::default();
        s.set_filter(false, false);
        s.macs.set(0, Some(&MAC));
        let extra = [0x02, 0, 0, 0, 0, 7];
        let group = [0x01, 0x00, 0x5e, 0, 0, 1];
        let other_group = [0x01, 0x00, 0x5e, 0, 0, 2];
        let zero = frame([0; 6]);
        let f = Filter::load(&s);
        assert!(!f.accept(&frame(extra)));
        assert!(!f.accept(&frame(group)));
        assert!(!f.accept(&zero), "empty entries match nothing");
        s.macs.set(3, Some(&extra));
        s.mc_addrs.replace(&[group]);
        let f = Filter::load(&s);
        assert!(f.accept(&frame(MAC)));
        assert!(f.accept(&frame(extra)));
        assert!(f.accept_shared(&frame(extra)));
        assert!(f.accept(&frame(group)));
        assert!(!f.accept(&frame(other_group)));
        assert!(!f.accept(&zero));
        s.macs.set(3, None);
        s.mc_addrs.replace(&[]);
        let f = Filter::load(&s);
        assert!(!f.accept(&frame(extra)));
        assert!(!f.accept(&frame(group)));
    }

    #[test]
    fn set_filter_maps_flags() {
        let s = Shared::default();
        s.set_filter(true, false);
        assert_eq!(s.filter.load(Ordering::Relaxed), filter::PROMISCUOUS);
        s.set_filter(false, true);
        assert_eq!(s.filter.load(Ordering::Relaxed), filter::ALL_MULTICAST);
        s.set_filter(false, false);
        assert_eq!(s.filter.load(Ordering::Relaxed), filter::UNICAST);
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
}
