//! The receive filter: which frames an RX queue delivers when promiscuous
//! mode is off. Control operations write the mode and the addresses
//! ([`FilterConfig`]); each RX burst reads them once, at its start, into a
//! [`Filter`] and decides every frame of the burst on that copy.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// Receive filter modes, chosen by promiscuous/all-multicast settings.
pub mod mode {
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
/// and read by the RX lcore once per burst ([`FilterConfig::load`]). Entries
/// are single atomics: a burst that races with an update sees every entry
/// either before or after it.
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

/// The port's receive filter as control operations set it: the mode and
/// every address the port answers to.
#[derive(Debug, Default)]
pub struct FilterConfig {
    /// One of the [`mode`]s.
    pub mode: AtomicU8,
    /// The port's unicast MACs: the primary at 0, `mac_addr_add`'s after.
    pub macs: AddrTable<MAX_MACS>,
    /// The multicast groups of `set_mc_addr_list`.
    pub mc_addrs: AddrTable<MAX_MC_ADDRS>,
}

impl FilterConfig {
    /// Sets the mode from ethdev's promiscuous/all-multicast flags.
    pub fn set_mode(&self, promiscuous: bool, all_multicast: bool) {
        let m = if promiscuous {
            mode::PROMISCUOUS
        } else if all_multicast {
            mode::ALL_MULTICAST
        } else {
            mode::UNICAST
        };
        self.mode.store(m, Ordering::Relaxed);
    }

    /// The filter now, for one RX burst (only the mode in promiscuous
    /// mode).
    #[inline]
    pub fn load(&self) -> Filter {
        let mut f = Filter {
            mode: self.mode.load(Ordering::Relaxed),
            len: 0,
            addrs: [NO_ADDR; MAX_MACS + MAX_MC_ADDRS],
        };
        if f.mode != mode::PROMISCUOUS {
            self.macs.load_into(&mut f.addrs, &mut f.len);
            self.mc_addrs.load_into(&mut f.addrs, &mut f.len);
        }
        f
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
        self.mode == mode::PROMISCUOUS
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
        self.mode == mode::ALL_MULTICAST && dst & 1 == 1
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
        use mode::*;
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
        let s = FilterConfig::default();
        s.set_mode(false, false);
        s.macs.set(0, Some(&MAC));
        let extra = [0x02, 0, 0, 0, 0, 7];
        let group = [0x01, 0x00, 0x5e, 0, 0, 1];
        let other_group = [0x01, 0x00, 0x5e, 0, 0, 2];
        let zero = frame([0; 6]);
        let f = s.load();
        assert!(!f.accept(&frame(extra)));
        assert!(!f.accept(&frame(group)));
        assert!(!f.accept(&zero), "empty entries match nothing");
        s.macs.set(3, Some(&extra));
        s.mc_addrs.replace(&[group]);
        let f = s.load();
        assert!(f.accept(&frame(MAC)));
        assert!(f.accept(&frame(extra)));
        assert!(f.accept_shared(&frame(extra)));
        assert!(f.accept(&frame(group)));
        assert!(!f.accept(&frame(other_group)));
        assert!(!f.accept(&zero));
        s.macs.set(3, None);
        s.mc_addrs.replace(&[]);
        let f = s.load();
        assert!(!f.accept(&frame(extra)));
        assert!(!f.accept(&frame(group)));
    }

    #[test]
    fn set_mode_maps_flags() {
        let s = FilterConfig::default();
        s.set_mode(true, false);
        assert_eq!(s.mode.load(Ordering::Relaxed), mode::PROMISCUOUS);
        s.set_mode(false, true);
        assert_eq!(s.mode.load(Ordering::Relaxed), mode::ALL_MULTICAST);
        s.set_mode(false, false);
        assert_eq!(s.mode.load(Ordering::Relaxed), mode::UNICAST);
    }
}
