//! Counters and receive filter shared between the data path and the control
//! operations of one port.
//!
//! Each counter has exactly one writer: the lcore polling the queue it
//! belongs to. It adds with a relaxed load and store (no locked instruction
//! on the hot path, once per burst), and control operations read it with a
//! relaxed load. `stats_reset` and `xstats_reset` never write a counter: they
//! record a baseline that later reads subtract, so a reset cannot race with
//! the writer.

use crate::ffi;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};

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

/// Receive-side counters, written by the lcore polling RX queue 0.
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

/// Transmit-side counters, written by the lcore polling TX queue 0.
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
}

/// Receive filter modes, chosen by promiscuous/all-multicast settings.
pub mod filter {
    /// Deliver every frame.
    pub const PROMISCUOUS: u8 = 0;
    /// Deliver frames to our MAC, broadcast and every multicast group.
    pub const ALL_MULTICAST: u8 = 1;
    /// Deliver frames to our MAC and broadcast.
    pub const UNICAST: u8 = 2;
}

/// State of one port that both the data path and the control path see.
#[derive(Debug, Default)]
pub struct Shared {
    /// Receive counters.
    pub rx: RxCounters,
    /// Transmit counters.
    pub tx: TxCounters,
    /// One of the [`filter`] modes.
    pub filter: AtomicU8,
    /// The port's MAC in the low 48 bits (see [`mac_to_u64`]).
    pub mac: AtomicU64,
    /// `log2` of the ring's slot size, as last learnt from the link (the
    /// master decides the geometry; see [`Shared::learn_slot_size`]). TX uses
    /// it only to size its reservation, never for bounds.
    pub slot_shift: AtomicU32,
}

impl Shared {
    /// Records the ring's slot size (a power of two).
    pub fn learn_slot_size(&self, slot_size: u32) {
        debug_assert!(slot_size.is_power_of_two());
        self.slot_shift
            .store(slot_size.trailing_zeros(), Ordering::Relaxed);
    }

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
/// layout [`accept`] compares against.
pub fn mac_to_u64(mac: &[u8; 6]) -> u64 {
    let mut b = [0u8; 8];
    b[..6].copy_from_slice(mac);
    u64::from_le_bytes(b)
}

/// Whether a frame whose first bytes are `head` passes filter `mode` for a
/// port whose packed MAC is `mac`. Frames too short for a header are refused.
///
/// `head` must be memory the peer cannot write (the frame's copy in an
/// mbuf): the filter may read it more than once. For bytes in the ring,
/// use [`accept_shared`].
#[inline]
pub fn accept(mode: u8, mac: u64, head: &[u8]) -> bool {
    if mode == filter::PROMISCUOUS {
        return true;
    }
    let Some(dst) = head.get(..6) else {
        return false;
    };
    let mut b = [0u8; 6];
    b.copy_from_slice(dst);
    accept_dst(mode, mac, b)
}

/// [`accept`] for a frame still in shared memory, whose bytes the peer may
/// change at any time: the destination MAC is read exactly once, into a
/// local, and every comparison is made on that copy, so one decision never
/// sees two different addresses.
#[inline]
pub fn accept_shared(mode: u8, mac: u64, head: &[u8]) -> bool {
    if mode == filter::PROMISCUOUS {
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
    accept_dst(mode, mac, dst)
}

/// The filter decision for destination MAC `dst` (a local copy).
#[inline]
fn accept_dst(mode: u8, mac: u64, dst: [u8; 6]) -> bool {
    let dst = mac_to_u64(&dst);
    if dst == mac || dst == 0xffff_ffff_ffff {
        return true;
    }
    // Group bit: least significant bit of the first byte.
    mode == filter::ALL_MULTICAST && dst & 1 == 1
}

/// The counters `stats_get`/`xstats_get` report, read at one moment.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    /// [`RxCounters::packets`].
    pub rx_packets: u64,
    /// [`RxCounters::bytes`].
    pub rx_bytes: u64,
    /// [`RxCounters::too_large`].
    pub rx_too_large: u64,
    /// [`RxCounters::filtered`].
    pub rx_filtered: u64,
    /// [`RxCounters::scatter_nombuf`].
    pub rx_scatter_nombuf: u64,
    /// [`TxCounters::packets`].
    pub tx_packets: u64,
    /// [`TxCounters::bytes`].
    pub tx_bytes: u64,
    /// [`TxCounters::too_large`].
    pub tx_too_large: u64,
    /// [`TxCounters::ring_full`].
    pub tx_ring_full: u64,
    /// [`TxCounters::link_down`].
    pub tx_link_down: u64,
    /// Link generation (a state, never reset).
    pub link_generation: u64,
    /// Times the link came up.
    pub link_ups: u64,
    /// Times the link went down.
    pub link_downs: u64,
    /// Corruptions of the shared memory by the peer detected.
    pub peer_corruptions: u64,
    /// Peers the master refused (credentials, second slave, handshake).
    pub rejected_peers: u64,
    /// Regions of the link that departed peers still hold (a state, never
    /// reset).
    pub pinned_regions: u64,
    /// Frames sent but still unread when their generation ended (the peer
    /// left): counted in `opackets` and lost.
    pub tx_lost_on_link_down: u64,
}

impl Snapshot {
    /// Reads the data-path counters of `shared`; the link fields are left 0
    /// for the caller to fill.
    pub fn read(shared: &Shared) -> Self {
        Snapshot {
            rx_packets: shared.rx.packets.get(),
            rx_bytes: shared.rx.bytes.get(),
            rx_too_large: shared.rx.too_large.get(),
            rx_filtered: shared.rx.filtered.get(),
            rx_scatter_nombuf: shared.rx.scatter_nombuf.get(),
            tx_packets: shared.tx.packets.get(),
            tx_bytes: shared.tx.bytes.get(),
            tx_too_large: shared.tx.too_large.get(),
            tx_ring_full: shared.tx.ring_full.get(),
            tx_link_down: shared.tx.link_down.get(),
            ..Snapshot::default()
        }
    }

    /// `self - base` counter by counter, keeping `link_generation` as is.
    pub fn since(&self, base: &Snapshot) -> Snapshot {
        let d = |a: u64, b: u64| a.wrapping_sub(b);
        Snapshot {
            rx_packets: d(self.rx_packets, base.rx_packets),
            rx_bytes: d(self.rx_bytes, base.rx_bytes),
            rx_too_large: d(self.rx_too_large, base.rx_too_large),
            rx_filtered: d(self.rx_filtered, base.rx_filtered),
            rx_scatter_nombuf: d(self.rx_scatter_nombuf, base.rx_scatter_nombuf),
            tx_packets: d(self.tx_packets, base.tx_packets),
            tx_bytes: d(self.tx_bytes, base.tx_bytes),
            tx_too_large: d(self.tx_too_large, base.tx_too_large),
            tx_ring_full: d(self.tx_ring_full, base.tx_ring_full),
            tx_link_down: d(self.tx_link_down, base.tx_link_down),
            link_generation: self.link_generation,
            link_ups: d(self.link_ups, base.link_ups),
            link_downs: d(self.link_downs, base.link_downs),
            peer_corruptions: d(self.peer_corruptions, base.peer_corruptions),
            rejected_peers: d(self.rejected_peers, base.rejected_peers),
            pinned_regions: self.pinned_regions,
            tx_lost_on_link_down: d(self.tx_lost_on_link_down, base.tx_lost_on_link_down),
        }
    }

    /// Receive errors as ethdev's `ierrors` counts them: frames the driver
    /// took off the ring and dropped for a fault (filtered frames are not
    /// errors, as on a NIC).
    pub fn ierrors(&self) -> u64 {
        self.rx_too_large + self.rx_scatter_nombuf
    }

    /// Transmit errors as ethdev's `oerrors` counts them: frames the driver
    /// accepted from the application and dropped.
    pub fn oerrors(&self) -> u64 {
        self.tx_too_large
    }
}

/// One extended statistic: its name and how to read it from a [`Snapshot`].
pub type Xstat = (&'static str, fn(&Snapshot) -> u64);

/// The driver's extended statistics, in the order `xstats_get` reports them.
pub const XSTATS: &[Xstat] = &[
    ("rx_too_large_drops", |s| s.rx_too_large),
    ("rx_filtered_drops", |s| s.rx_filtered),
    ("rx_scatter_nombuf_drops", |s| s.rx_scatter_nombuf),
    ("tx_too_large_drops", |s| s.tx_too_large),
    ("tx_ring_full", |s| s.tx_ring_full),
    ("tx_link_down", |s| s.tx_link_down),
    ("tx_lost_on_link_down", |s| s.tx_lost_on_link_down),
    ("link_generation", |s| s.link_generation),
    ("link_up_count", |s| s.link_ups),
    ("link_down_count", |s| s.link_downs),
    ("peer_corruptions", |s| s.peer_corruptions),
    ("rejected_peers", |s| s.rejected_peers),
    ("pinned_regions", |s| s.pinned_regions),
];

/// Copies `name` into a DPDK xstat name buffer, truncated and NUL-terminated.
pub fn write_name(dst: &mut ffi::rte_eth_xstat_name, name: &str) {
    let n = name.len().min(ffi::XSTATS_NAME_SIZE - 1);
    for (d, s) in dst.name.iter_mut().zip(name.as_bytes()[..n].iter()) {
        *d = *s as std::ffi::c_char;
    }
    dst.name[n] = 0;
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
            let got = [&ours, &other, &bcast, &mcast].map(|f| accept(mode, mac, f));
            assert_eq!(got, want, "mode {mode}");
            let shared = [&ours, &other, &bcast, &mcast].map(|f| accept_shared(mode, mac, f));
            assert_eq!(shared, want, "mode {mode}, shared");
        }
        assert!(!accept(UNICAST, mac, &[0x02, 0x11]));
        assert!(!accept_shared(UNICAST, mac, &MAC[..5]));
        assert!(accept(PROMISCUOUS, mac, &[0x02]));
        assert!(accept_shared(PROMISCUOUS, mac, &[]));
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

    #[test]
    fn reset_is_a_baseline() {
        let s = Shared::default();
        s.rx.packets.add(5);
        s.tx.too_large.add(2);
        let mut base = Snapshot::read(&s);
        base.link_generation = 3;
        s.rx.packets.add(1);
        let mut now = Snapshot::read(&s);
        now.link_generation = 4;
        let d = now.since(&base);
        assert_eq!(d.rx_packets, 1);
        assert_eq!(d.tx_too_large, 0);
        assert_eq!(d.link_generation, 4, "generation is a state, not reset");
        assert_eq!(now.oerrors(), 2);
    }

    #[test]
    fn xstat_names_fit_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for (name, _) in XSTATS {
            assert!(name.len() < ffi::XSTATS_NAME_SIZE);
            assert!(seen.insert(*name), "{name} twice");
        }
        let mut n = ffi::rte_eth_xstat_name { name: [1; 64] };
        write_name(&mut n, "abc");
        assert_eq!(&n.name[..4], &[b'a' as _, b'b' as _, b'c' as _, 0]);
        write_name(&mut n, &"x".repeat(100));
        assert_eq!(n.name[63], 0);
    }
}
